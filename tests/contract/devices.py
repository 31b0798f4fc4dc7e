"""Device checks the contract runs for every head (``contract.ContractTests``), and the tools they use.

``DEVICES`` (conftest) lists the devices a test runs on: "cpu" always, "cuda" when torch sees one; a device test is
marked ``devices`` (``pytest -m devices`` runs exactly those, on a GPU machine too).

``FactoriesOnMeta(roots)``: while it is active (a context manager), a tensor factory (``torch.zeros``, ``torch.arange``,
``torch.tensor`` …) called without ``device=`` from a file under ``roots`` makes its tensor on the meta device: a
model and inputs on the CPU then meet a meta tensor and the operation raises, so code that would leave a tensor on the
default device (the CPU) while its inputs are on a GPU fails on a machine without one. Only calls from ``roots``
(hf_bahdanau's files) are moved: transformers' own generate() makes some tensors on the default device and moves them
to the inputs' device (``_beam_search``'s ``top_num_beam_mask``), which is right on a GPU but cannot be copied out of
meta; a global ``torch.device("meta")`` would fail there.

``HostSyncs``: counts the calls that bring a tensor's value to the host (on a GPU: wait for the device), by the file
and function that made them: ``.item()``, ``.tolist()``, ``bool``/``int``/``float`` of a tensor, ``.numpy()``,
``.cpu()``, ``nonzero``, indexing with a boolean mask. ``syncs_per_step`` counts those of one step of generate().
"""

import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

import hf_bahdanau

LIBRARY = Path(hf_bahdanau.__file__).parent
TORCH = Path(torch.__file__).parent
HERE = Path(__file__)

# the public factories that make a tensor on the default device when given no `device=`
FACTORIES = frozenset({
    torch.arange, torch.as_tensor, torch.asarray, torch.empty, torch.eye, torch.full, torch.linspace, torch.ones,
    torch.rand, torch.randint, torch.randn, torch.randperm, torch.scalar_tensor, torch.tensor, torch.zeros,
})
SYNCS = frozenset({"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "numpy", "cpu", "nonzero"})


def caller(depth: int = 2) -> tuple[str, str]:
    """The file and function of the first frame above ``depth`` that is neither torch's nor this file's: who called
    the torch function a mode is handling."""
    frame = sys._getframe(depth)
    while frame is not None and (frame.f_code.co_filename.startswith(str(TORCH)) or
                                 frame.f_code.co_filename == str(HERE)):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_code.co_qualname) if frame is not None else ("<C>", "")


def under(path: str, roots: Iterable[Path]) -> bool:
    return any(Path(path).is_relative_to(root) for root in roots)


class FactoriesOnMeta(TorchFunctionMode):
    """The meta device as the default device of the factory calls made from files under ``roots`` (by default,
    hf_bahdanau's package); ``made``: the (file, function) of each call it moved."""

    def __init__(self, roots: Iterable[Path] = (LIBRARY,)):
        super().__init__()
        self.roots, self.made = tuple(roots), []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            where = caller()
            if under(where[0], self.roots):
                self.made.append(where)
                kwargs["device"] = "meta"
        return func(*args, **kwargs)


def boolean_index(index) -> bool:
    indices = index if isinstance(index, tuple) else (index,)
    return any(isinstance(item, torch.Tensor) and item.dtype == torch.bool for item in indices)


class HostSyncs(TorchFunctionMode):
    """Counts host round trips (``SYNCS``, and ``__getitem__`` with a boolean mask) by where they were
    made: ``counts`` {(file, function): calls}; ``of(roots)`` the calls made from files under ``roots``."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in SYNCS or (name == "__getitem__" and boolean_index(args[1])):
            self.counts[caller()] += 1
        return func(*args, **(kwargs or {}))

    def of(self, roots: Iterable[Path] = (LIBRARY,)) -> Counter:
        roots = tuple(roots)
        return Counter({where: count for where, count in self.counts.items() if under(where[0], roots)})


def place(where: tuple[str, str]) -> str:
    """"package/path/file.py:Qualified.function" for a (file, function) of hf_bahdanau or an installed package."""
    path, function = Path(where[0]), where[1]
    roots = sorted({LIBRARY.parent, *(Path(entry) for entry in sys.path if entry)}, key=lambda root: -len(root.parts))
    root = next((root for root in roots if path.is_relative_to(root)), None)  # the innermost: site-packages
    return f"{path.relative_to(root).as_posix() if root else path.as_posix()}:{function}"


# The host round trips a decoding step may make, each one per step: whether to stop (transformers' loops decide it
# in their stopping check, ours in theirs), and the monotonic attention's scan, which runs until every row stopped.
STOP_DECISIONS = frozenset({
    "transformers/generation/utils.py:StopCheck.__call__",  # transformers' greedy and sampling loop (_sample)
    "transformers/generation/utils.py:GenerationMixin._beam_search",
    "hf_bahdanau/modeling/search.py:FastSearchMixin._greedy_search",
    "hf_bahdanau/modeling/beam_hypotheses.py:has_unfinished",  # FastSearchMixin._beam_search's
})
STEP_SYNCS = STOP_DECISIONS | {"hf_bahdanau/modeling/scope.py:MonotonicScope.scan"}

# generate()'s searches the device checks run: the fast loops (greedy, beam) and transformers' own (sampling, and
# greedy or beam with the alignments of every step)
SEARCHES = {
    "greedy": dict(num_beams=1),
    "beam": dict(num_beams=2),
    "sampling": dict(num_beams=1, do_sample=True),
    "greedy+alignments": dict(num_beams=1, output_attentions=True, return_dict_in_generate=True),
    "beam+alignments": dict(num_beams=2, output_attentions=True, return_dict_in_generate=True),
}


def syncs_per_step(model, source: dict, arguments: dict, steps: tuple[int, int] = (2, 5)) -> dict[str, float]:
    """The host round trips one decoding step of ``model.generate(**source, **arguments)`` makes, by ``place``: the
    calls of a run of ``steps[1]`` new tokens less those of ``steps[0]``, per step (no end token: each runs to
    length)."""
    counts = []
    for new_tokens in steps:
        with torch.no_grad(), HostSyncs() as syncs:
            output = model.generate(**source, **{**arguments, "max_new_tokens": new_tokens, "eos_token_id": None})
        sequences = output if isinstance(output, torch.Tensor) else output.sequences
        counts.append((sequences.shape[1], syncs.counts))
    (short, fewer), (long, more) = counts
    assert long - short == steps[1] - steps[0], "a run stopped before its length"
    return {place(where): (count - fewer[where]) / (long - short) for where, count in more.items()
            if count != fewer[where]}


def tensors(value) -> list[torch.Tensor]:
    """Every tensor in an output: in its fields, tuples and lists, however nested."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):  # a ModelOutput too
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in tensors(item)]
    return []
