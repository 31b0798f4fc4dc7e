"""Shared helpers: tiny configs and padded batches."""

import functools
import inspect
import os
import re
from types import SimpleNamespace

import pytest
import torch

import hf_bahdanau  # noqa: F401  (registers the Auto classes)
from hf_bahdanau import BahdanauConfig, BahdanauEncoderConfig, BahdanauForConditionalGeneration

pytest.register_assert_rewrite("contract")  # the contract suite's checks (tests/contract/) live outside test modules

# A test that starts a process, runs a training script's main() or exports an ONNX graph (seconds each)
HEAVY = re.compile(r"\brun_child\(|\brun_script\(|\bsubprocess\.|[._]main\(\[|\brun_\w+\(\[|\bexport_onnx\(")
TESTS = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def _heavy(function, depth: int = 2) -> bool:
    """``function``'s code does one of ``HEAVY``'s, itself or through a function of the tests it calls (``depth``
    calls deep)."""
    try:
        if HEAVY.search(inspect.getsource(function)):
            return True
    except (OSError, TypeError):  # no source: a builtin or a generated function
        return False
    code, names = getattr(function, "__code__", None), getattr(function, "__globals__", {})
    called = [names.get(name) for name in (code.co_names if code else ())]
    return depth > 0 and any(_heavy(callee, depth - 1) for callee in called if inspect.isfunction(callee)
                             and (inspect.getsourcefile(callee) or "").startswith(TESTS))


def pytest_collection_modifyitems(config, items):
    """The tiers: ``-m "not slow"`` is the fast one. Slow are the tests marked so (those that train) and every test
    that starts a process, runs a training script or exports an ONNX graph (``HEAVY``), itself, through a helper of
    the tests or through a fixture."""
    for item in items:
        if item.get_closest_marker("slow") or not isinstance(item, pytest.Function):
            continue
        fixtures = [definition.func for definitions in item._fixtureinfo.name2fixturedefs.values()
                    for definition in definitions]
        if any(_heavy(function) for function in (item.function, *fixtures)):
            item.add_marker(pytest.mark.slow)

VOCAB = 40
PAD, BOS, EOS = 0, 1, 2

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
"""The devices a test marked ``devices`` runs on: ``pytest -m devices`` runs exactly those (on a GPU machine too)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "devices: parametrised over conftest.DEVICES (cpu, and cuda when present)")

if os.environ.get("PYTEST_XDIST_WORKER"):  # pytest -n N: N processes share the cores, one thread each
    torch.set_num_threads(1)


def exits_as_argparse_does(action, argument: str, capsys) -> str:
    """``action()`` (a training script's ``main``) ends as argparse ends on a bad flag: exit status 2 and one
    ``PROG: error: MESSAGE`` line naming ``argument`` on stderr, no traceback; returns that line."""
    with pytest.raises(SystemExit) as caught:
        action()
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert ": error: " in error and argument in error and "Traceback" not in error, error
    return error


def product_tolerance(left: torch.Tensor, right: torch.Tensor) -> float:
    """The largest difference between two evaluations of ``left @ right`` that sum in different orders (other
    kernels, other blockings): each is within γ_n Σ_k |l_k r_k| of the exact product, γ_n ≈ n ε (Higham, *Accuracy
    and Stability of Numerical Algorithms*, §3.1), n = the inner size, ε = the dtype's machine epsilon."""
    inner = left.shape[-1]
    return 2 * inner * torch.finfo(left.dtype).eps * float((left.abs() @ right.abs()).max())


# Scopes, modes and coverage on decoders the presets do not pair them with: "name": (preset, overrides).
VARIANTS = {
    "rnnsearch+coverage": ("rnnsearch", dict(use_coverage=True, coverage_loss_weight=0.5)),
    "rnnsearch+coverage+hard": ("rnnsearch", dict(use_coverage=True, attention_mode="hard")),
    "luong-general+hard": ("luong-general", dict(attention_mode="hard")),
    "luong-dot+local-m": ("luong-dot", dict(attention_scope="local-m", local_window=2)),
    "rnnsearch+copy": ("rnnsearch", dict(copy_attention=True)),
    "luong-general+copy+local-p": ("luong-local-p", dict(copy_attention=True, input_feeding=True)),
}


def tiny_config(preset: str | None = None, **overrides) -> BahdanauConfig:
    """A small model: vocab 40, embedding 12, decoder 16, encoder 2 x 8 (bidirectional). ``preset``: a preset or a
    ``VARIANTS`` name."""
    preset, variant = VARIANTS.get(preset, (preset, {}))
    overrides = {**variant, **overrides}
    sizes = dict(vocab_size=VOCAB, embedding_size=12, hidden_size=16, attention_size=10, output_size=12,
                 max_source_positions=32)
    if preset in (None, "rnnsearch", "rnnencdec"):
        sizes.update(encoder_layers=1, decoder_layers=1)
    else:
        sizes.update(encoder_layers=2, decoder_layers=2)
    sizes.update(overrides)
    if preset is None:
        return BahdanauConfig(**sizes)
    return BahdanauConfig.from_preset(preset, **sizes)


def tiny_encoder_config(preset: str | None = None, **overrides) -> BahdanauEncoderConfig:
    """``tiny_config``'s encoder, for the tagger and the classifiers: vocab 40, embedding 12, encoder 2 x 8
    (bidirectional), attention 10. ``preset``: a preset (its encoder's fields)."""
    sizes = dict(vocab_size=VOCAB, embedding_size=12, hidden_size=16, attention_size=10, max_source_positions=32,
                 encoder_layers=1 if preset in (None, "rnnsearch", "rnnencdec") else 2)
    sizes.update(overrides)
    if preset is None:
        return BahdanauEncoderConfig(**sizes)
    return BahdanauEncoderConfig.from_preset(preset, **sizes)


def tiny_model(preset: str | None = None, seed: int = 0, **overrides) -> BahdanauForConditionalGeneration:
    torch.manual_seed(seed)
    return BahdanauForConditionalGeneration(tiny_config(preset, **overrides)).eval()


def padded_batch(lengths=(7, 5, 2), seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids [B, max(lengths)] of real tokens 3..VOCAB-1 followed by padding, and the attention mask."""
    generator = torch.Generator().manual_seed(seed)
    source_length = max(lengths)
    input_ids = torch.randint(3, VOCAB, (len(lengths), source_length), generator=generator)
    mask = (torch.arange(source_length)[None] < torch.tensor(lengths)[:, None]).long()
    return input_ids.masked_fill(mask == 0, PAD), mask


def random_labels(batch_size: int, target_length: int, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (batch_size, target_length), generator=generator)


def sampled_training_forward(shared: dict, **hard) -> SimpleNamespace:
    """One float64 training forward of a hard_reinforce model (λ_e = 0.2, ``shared`` and ``hard`` config fields) on
    ``padded_batch()`` with labels [3, 5] whose row 1 keeps 2 tokens, under torch seed 4, beside its soft twin (the
    same weights, ``shared`` fields): ``model``, ``out``, ``alphas`` [N, T, S] (the soft twin's α, which the
    positions were drawn from when α_t reads h_t alone), ``positions`` [N, T], ``labels``, ``kept``, ``mask``."""
    model = tiny_model(attention_mode="hard_reinforce", reinforce_entropy_weight=0.2, **hard, **shared).double().train()
    soft = tiny_model(**shared).double()
    soft.load_state_dict(model.state_dict(), strict=False)
    input_ids, mask = padded_batch()
    labels = random_labels(3, 5)
    labels[1, 2:] = -100
    torch.manual_seed(4)
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels, output_attentions=True)
    with torch.no_grad():
        alphas = soft(input_ids=input_ids, attention_mask=mask, labels=labels,
                      output_attentions=True).cross_attentions[0][:, 0]
    return SimpleNamespace(model=model, out=out, alphas=alphas, positions=out.cross_attentions[0][:, 0].argmax(-1),
                           labels=labels, kept=labels != -100, mask=mask)


@pytest.fixture
def batch():
    return padded_batch()


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models: intra-op thread hand-offs cost more than the arithmetic (about 10x slower with 2 threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# Tolerances for comparing floats that two code paths computed (added for the per-CPU kernel differences) -------

FLOAT64_PATHS_RTOL = 1e-10
"""Two float64 evaluations of one function by different code paths (batched or step loop, fused or plain, another
kernel or blocking) differ by rounding only. Each product of these tiny models (inner sizes n ≤ 64) is within
2 n ε Σ|l_k r_k| ≈ 3e-14 of the size of its terms (ε = 2.2e-16, ``product_tolerance``); this tolerance leaves what
follows (at most a dozen recurrent steps, gates, softmaxes, a deep output) an amplification of 3000, a dozen steps of
nearly 2 each. A real fault differs far more: float32 anywhere in a path by ≥ 6e-8, a padding leak or a wrong or stale
state by 1e-3 and more."""


def float64_tolerance(*references: torch.Tensor) -> float:
    """``FLOAT64_PATHS_RTOL`` times the size of the values (the largest |entry| of ``references``)."""
    return FLOAT64_PATHS_RTOL * max(float(reference.detach().abs().max()) for reference in references)


def assert_float64_close(actual: torch.Tensor, expected: torch.Tensor, scale: float | None = None, msg=None) -> None:
    """actual = expected up to float64 rounding (``FLOAT64_PATHS_RTOL`` of ``scale``, by default the largest |entry|
    of either side): for equivalences of code paths, run in float64 so that the arithmetic decides, not the CPU."""
    assert actual.dtype == expected.dtype == torch.float64, (actual.dtype, expected.dtype)
    atol = FLOAT64_PATHS_RTOL * scale if scale is not None else float64_tolerance(actual, expected)
    torch.testing.assert_close(actual, expected, atol=atol, rtol=0, msg=msg)


def softmax_sum_tolerance(length: int, dtype: torch.dtype = torch.float32) -> float:
    """|Σ_j α_j − 1| for softmax weights over ``length`` entries computed in ``dtype``: each exp(e_j − max) is within
    one ulp (ε) of itself, their sum within (length + 1) ε, so each α_j within (length + 3) ε of α_j; adding up the
    α_j adds (length − 1) ε: under (2 length + 2) ε. Padded entries are exactly 0 and do not count."""
    return (2 * length + 2) * torch.finfo(dtype).eps


def assert_float64_gradients_close(actual: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    """``assert_float64_close`` for every parameter's gradient, by name. A gradient sums upstream gradients times
    inputs and rounds relative to those terms, not to the sum, which can nearly or wholly cancel (through a softmax,
    whose score gradients sum to 0: an attention's query weights, its key bias); the parameters of one component
    (``model.decoder.attention``, ``model.encoder.rnn``, ``lm_head`` …) share those upstream gradients, so the size of
    the terms is taken as the largest gradient entry of the parameter's component."""
    assert actual.keys() == expected.keys()

    def component(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:3]) if parts[0] == "model" else parts[0]

    scale: dict[str, float] = {}
    for name, grad in expected.items():
        scale[component(name)] = max(scale.get(component(name), 0.0), float(grad.abs().max()))
    for name, grad in expected.items():
        assert_float64_close(actual[name], grad, scale=scale[component(name)], msg=name)


def cross_entropy_tolerance(logits: torch.Tensor, labels: torch.Tensor, dtype: torch.dtype = torch.float32) -> float:
    """A bound on |Σ_n CE(z_n, y_n) computed in ``dtype`` − exact| for logits z [..., V] given exactly or in a wider
    dtype (labels -100 dropped): rounding z to ``dtype`` (ε/2 |z_j|) moves a row's logsumexp − z_y by ≤ ε max_j |z_j|;
    the cross-entropy's own rounding (z − max, exps, a sum of V terms, log, − z_y) is within
    ε (V + 2 |z_y| + 2 max_j |z_j| + |CE_n|); adding up the N rows adds N ε Σ_n CE_n."""
    eps = torch.finfo(dtype).eps
    keep = labels != -100
    z, y = logits.detach()[keep].double(), labels[keep]
    terms = torch.nn.functional.cross_entropy(z, y, reduction="none")
    largest, chosen = z.abs().max(-1).values, z.gather(-1, y[:, None])[:, 0].abs()
    return float((eps * (z.shape[-1] + 2 * chosen + 3 * largest + terms)).sum() + len(terms) * eps * terms.sum())


def left_padded(input_ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The same sentences with their padding moved to the left."""
    shifts = (mask.shape[1] - mask.sum(-1)).tolist()
    return (torch.stack([row.roll(shift) for row, shift in zip(input_ids, shifts)]),
            torch.stack([row.roll(shift) for row, shift in zip(mask, shifts)]))


def assert_logits_and_gradients_equal_the_reference(model, input_ids: torch.Tensor, mask: torch.Tensor,
                                                    decoder_input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """A float64 model's logits on the right-padded batch and on it left-padded, and the gradient of every parameter
    (of the logits against a fixed random probe), equal ``reference.logits``'; returns the model's gradients."""
    from hf_bahdanau import reference

    with torch.no_grad():
        expected = reference.logits(model, input_ids, mask, decoder_input_ids)
        for inputs, inputs_mask in ((input_ids, mask), left_padded(input_ids, mask)):
            assert_float64_close(model(input_ids=inputs, attention_mask=inputs_mask,
                                       decoder_input_ids=decoder_input_ids).logits, expected)
    probe = torch.randn(expected.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

    def gradients(logits: torch.Tensor) -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        (logits * probe).sum().backward()
        return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

    fast = gradients(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits)
    assert_float64_gradients_close(fast, gradients(reference.logits(model, input_ids, mask, decoder_input_ids)))
    return fast


def logits_in_cached_chunks(model, input_ids: torch.Tensor, mask: torch.Tensor, decoder_input_ids: torch.Tensor):
    """The logits of ``decoder_input_ids`` [B, 5] fed to the model in chunks of 2, 1 and 2 tokens through its cache
    (as generate() steps), and the last cache."""
    from hf_bahdanau.modeling.transformers_private import cache_of

    cache, logits = None, []
    with torch.no_grad():
        for chunk in (slice(0, 2), slice(2, 3), slice(3, 5)):
            step = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids[:, chunk],
                         cache=cache, use_cache=True)
            cache = cache_of(step)
            logits.append(step.logits)
    return torch.cat(logits, dim=1), cache
