"""Checkpoint averaging: one model whose weights are the element-wise mean of several checkpoints of one run.

    average_checkpoints(last_checkpoints("outputs/g2p", 5), "outputs/g2p-avg5")   # the last 5 Trainer checkpoints
    hf-bahdanau-average outputs/g2p --last 5 --output_dir outputs/g2p-avg5
    hf-bahdanau-average outputs/g2p/checkpoint-800 outputs/g2p/checkpoint-1000 --output_dir outputs/g2p-avg2

θ̄ = (1/N) Σ_n θ_n for every floating-point tensor of the N checkpoints' ``model.safetensors`` (summed in float64,
stored in the tensor's own dtype); integer and boolean buffers must be equal in every checkpoint and are copied. The
output folder gets the averaged weights and the last folder's files that ``from_pretrained`` reads (``MODEL_FILES``:
config, generation config, processor, tokenizer, the model code a remote-code folder carries), not the Trainer's
optimizer, scheduler and state, nor a run's results, pictures or model card (they describe another model): it loads
with ``from_pretrained`` like any saved model, whatever its head.
"""

from __future__ import annotations

import argparse
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

__all__ = ["MODEL_FILES", "WEIGHTS_NAME", "average_checkpoints", "last_checkpoints", "main"]

WEIGHTS_NAME = "model.safetensors"
CHECKPOINT_PATTERN = re.compile(r"checkpoint-(\d+)")
# The files of a model folder that from_pretrained reads beside the weights: the configs, the tokenizer's files
# (tokenizers' JSON, BPE vocabulary and merges, sentencepiece models) and the code of a remote-code folder.
MODEL_FILES = re.compile(r"(generation_|preprocessor_|processor_)?config\.json|tokenizer.*|special_tokens_map\.json"
                         r"|added_tokens\.json|chat_template\..*|vocab\..*|merges\.txt|.*\.(model|spm|py)")


def last_checkpoints(run_dir: str | Path, n: int) -> list[Path]:
    """The ``n`` ``checkpoint-<step>`` folders of ``run_dir`` with the highest steps, in increasing step order
    (numerically: checkpoint-900 before checkpoint-1000). Fewer than ``n`` is a ValueError naming what there is."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"`n` must be a positive integer (how many checkpoints to average), got {n!r}.")
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"`run_dir` {str(run_dir)!r} is not a folder.")
    steps = {int(match[1]): path for path in run_dir.iterdir()
             if path.is_dir() and (match := CHECKPOINT_PATTERN.fullmatch(path.name))}
    if len(steps) < n:
        raise ValueError(f"`run_dir` {str(run_dir)!r} has {len(steps)} checkpoint-<step> folder(s) "
                         f"{[steps[step].name for step in sorted(steps)]}, fewer than the {n} asked for.")
    return [steps[step] for step in sorted(steps)[-n:]]


def _read_weights(folder: Path) -> tuple[dict[str, torch.Tensor], dict[str, str] | None]:
    """The tensors of ``folder``'s model.safetensors and the file's metadata."""
    path = folder / WEIGHTS_NAME
    if not path.is_file():
        sharded = (folder / f"{WEIGHTS_NAME}.index.json").is_file()
        raise ValueError(f"checkpoint {str(folder)!r} has no {WEIGHTS_NAME}" +
                         (" (its weights are sharded, which averaging does not read)." if sharded else
                          ": give folders written by save_pretrained or the Trainer (safetensors weights)."))
    with safe_open(path, framework="pt") as weights:
        return {name: weights.get_tensor(name) for name in weights.keys()}, weights.metadata()


def _check_same_tensors(reference: dict[str, torch.Tensor], first: Path, tensors: dict[str, torch.Tensor],
                        folder: Path) -> None:
    """A ValueError naming ``folder`` and the tensor where ``tensors`` differ from ``reference`` (the first
    checkpoint's) in names, shapes or dtypes."""
    unshared = sorted(reference.keys() ^ tensors.keys())
    if unshared:
        name = unshared[0]
        where, other = (first, folder) if name in reference else (folder, first)
        raise ValueError(f"checkpoint {str(folder)!r}: tensor {name!r} is in {str(where)!r} but not in "
                         f"{str(other)!r}; only checkpoints of one model can be averaged.")
    for name, tensor in tensors.items():
        expected = reference[name]
        if (tensor.shape, tensor.dtype) != (expected.shape, expected.dtype):
            raise ValueError(f"checkpoint {str(folder)!r}: tensor {name!r} is {tensor.dtype} "
                             f"{list(tensor.shape)}, but {expected.dtype} {list(expected.shape)} in {str(first)!r}; "
                             "only checkpoints of one model can be averaged.")


def average_checkpoints(folders: Sequence[str | Path], output_dir: str | Path) -> Path:
    """Write to ``output_dir`` the model whose floating-point tensors are the mean of ``folders``' (θ̄ = (1/N) Σ θ_n,
    summed in float64, stored in each tensor's dtype) and whose integer/boolean buffers are theirs (equal in every
    folder), with the last folder's other model files. Returns ``output_dir``.

    A ValueError names the folder (and tensor) when the list is empty, a folder has no model.safetensors, the
    checkpoints differ in tensor names, shapes or dtypes, or an integer buffer differs; or when ``output_dir`` is
    one of ``folders``."""
    folders = [Path(folder) for folder in folders]
    if not folders:
        raise ValueError("`folders` is empty: give at least one checkpoint folder to average.")
    output_dir = Path(output_dir)
    if any(output_dir.resolve() == folder.resolve() for folder in folders):
        raise ValueError(f"`output_dir` {str(output_dir)!r} is one of the checkpoints; write the average elsewhere.")
    first = folders[0]
    reference, metadata = _read_weights(first)
    sums = {name: tensor.double() for name, tensor in reference.items() if tensor.is_floating_point()}
    for folder in folders[1:]:
        tensors, _ = _read_weights(folder)
        _check_same_tensors(reference, first, tensors, folder)
        for name, tensor in tensors.items():
            if name in sums:
                sums[name] += tensor.double()
            elif not torch.equal(tensor, reference[name]):
                raise ValueError(f"checkpoint {str(folder)!r}: the {tensor.dtype} buffer {name!r} differs from the "
                                 f"one in {str(first)!r}; integer and boolean buffers cannot be averaged and must be "
                                 "equal.")
    averaged = {name: (sums[name] / len(folders)).to(tensor.dtype) if name in sums else tensor
                for name, tensor in reference.items()}
    output_dir.mkdir(parents=True, exist_ok=True)
    last = folders[-1]
    for path in sorted(last.iterdir()):
        if path.is_file() and MODEL_FILES.fullmatch(path.name):
            shutil.copy2(path, output_dir / path.name)
    save_file(averaged, output_dir / WEIGHTS_NAME, metadata=metadata or {"format": "pt"})
    return output_dir


def main(argv: list[str] | None = None) -> None:
    """``hf-bahdanau-average``: average the given checkpoint folders, or the last ``--last N`` of a run folder."""
    parser = argparse.ArgumentParser(prog="hf-bahdanau-average", description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path,
                        help="checkpoint folders to average, or with --last one run folder holding checkpoint-<step>")
    parser.add_argument("--last", type=int, default=None,
                        help="average the N highest-step checkpoint-<step> folders of the one run folder given")
    parser.add_argument("--output_dir", type=Path, required=True, help="where the averaged model folder is written")
    args = parser.parse_args(argv)
    folders = args.folders
    if args.last is not None and args.last < 1:
        parser.error(f"--last must be a positive number of checkpoints, got {args.last}.")
    if args.last is not None and len(folders) != 1:
        parser.error(f"--last {args.last} takes one run folder, got {len(folders)}: "
                     f"{[str(folder) for folder in folders]}.")
    try:
        if args.last is not None:
            folders = last_checkpoints(folders[0], args.last)
        output_dir = average_checkpoints(folders, args.output_dir)
    except ValueError as error:
        parser.error(str(error))
    print(f"Averaged {len(folders)} checkpoints ({', '.join(folder.name for folder in folders)}) into {output_dir}")
