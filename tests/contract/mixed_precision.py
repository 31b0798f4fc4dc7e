"""Mixed precision checks the contract runs for every head (``contract.ContractTests`` inherits them).

Under ``torch.autocast`` (``AUTOCASTS``: bfloat16 on the CPU; float16 and bfloat16 on a GPU, conftest.DEVICES) a
float32 model's loss is a finite float32 and its gradients are finite; its attention distributions are computed in
float32 (they sum to 1 within float32's rounding, padding exactly 0: ``hf_bahdanau.modeling.precision``); its logits
are the float32 model's within what the 16-bit products' rounding allows (``logits_tolerance``); and greedy
generate() picks the float32 model's tokens but at near-ties within the rounding.
"""

import pytest
import torch

from conftest import DEVICES, softmax_sum_tolerance
from contract.testers import Over, Tester

DTYPES = {"cpu": (torch.bfloat16,), "cuda": (torch.float16, torch.bfloat16)}  # Trainer's --fp16 needs a GPU
AUTOCASTS = [(device, dtype) for device in DEVICES for dtype in DTYPES[device]]

PRODUCTS = 4
"""The products' worth of rounding ``logits_tolerance`` allows."""


def unit_roundoff(dtype: torch.dtype) -> float:
    """u, the largest relative rounding of a value to ``dtype``: half its epsilon, 2⁻⁸ for bfloat16's 8 significant
    bits, 2⁻¹¹ for float16's 11."""
    return torch.finfo(dtype).eps / 2


def logits_tolerance(dtype: torch.dtype, logits: torch.Tensor) -> float:
    """|autocast − float32| allowed for logits as large as ``logits`` (their largest finite |entry|). Under autocast
    each product rounds its two factors and its result to ``dtype``: 3u of the size of its terms. A logit ends a chain
    of at least four products (the encoder's, the attention's, the decoder's or the pooling's, the output layer's),
    whose errors the tanh and sigmoid between them (slopes ≤ 1) pass on without growing: we allow ``PRODUCTS`` = 4
    products' worth, 12u of the largest |logit| (bfloat16: 4.7%). Measured on the contract's batch in bfloat16: 2u
    for the seq2seq presets, 5.6u for image-to-text (weights redrawn from N(0, 1), logits up to 110)."""
    return 3 * PRODUCTS * unit_roundoff(dtype) * float(logits.detach().abs()[torch.isfinite(logits)].max())


def in_float32(tester: Tester, device: str) -> tuple[torch.nn.Module, dict]:
    """The tester's model and right-padded batch in float32 on ``device``."""
    batch = {key: (value.float() if value.is_floating_point() else value).to(device)
             for key, value in tester.batch(False).items()}
    return tester.model().float().to(device), batch


def axis(over: Over) -> int:
    """The weights' dimension of the last masked input dimension: a distribution's own."""
    dim = max(over.masks)
    return dim + over.masks[dim].dim() - 2


def sums(over: Over) -> torch.Tensor:
    return over.values.float().sum(axis(over))


def is_distribution(over: Over) -> bool:
    """Every row sums to 1 within float32's rounding of a softmax, or to 0 (a row with no real position)."""
    total, length = sums(over), over.values.shape[axis(over)]
    return bool((((total - 1).abs() <= softmax_sum_tolerance(length)) | (total == 0)).all())


def under_autocast(test):
    """``test`` run under each of ``AUTOCASTS`` and marked ``devices`` (``pytest -m devices`` runs it on a GPU too)."""
    each = pytest.mark.parametrize("device, dtype", AUTOCASTS, ids=lambda value: str(value).replace("torch.", ""))
    return pytest.mark.devices(each(test))


class MixedPrecisionContract:
    """What every head does under autocast; ``tester`` is a fixture giving the head's ``Tester``."""

    @under_autocast
    def test_autocast_gives_a_finite_float32_loss_and_finite_gradients(self, tester: Tester, device, dtype):
        model, batch = in_float32(tester, device)
        model.train()  # as trained: hard attention samples, dropout drops
        labels = tester.labels(batch).to(device)
        with torch.autocast(device, dtype=dtype):
            loss = model(**batch, labels=labels).loss
        assert loss.dtype == torch.float32 and torch.isfinite(loss), loss
        loss.backward()  # outside autocast, as Trainer does
        missing = [name for name, parameter in model.named_parameters() if parameter.grad is None]
        assert set(missing) <= tester.no_gradient, missing
        for name, parameter in model.named_parameters():
            if parameter.grad is not None:
                assert parameter.grad.dtype == torch.float32 and torch.isfinite(parameter.grad).all(), name

    @under_autocast
    def test_autocast_computes_attention_distributions_in_float32(self, tester: Tester, device, dtype):
        """Each weight output that is a distribution in float32 (summing to 1; not the co-attention's affinities, not
        local attention's Gaussian-scaled weights) is float32 under autocast and sums to 1 within float32's rounding,
        not bfloat16's; every weight output is exactly 0 on padding."""
        model, batch = in_float32(tester, device)
        with torch.no_grad():
            expected = tester.weights(model, model(**batch, output_attentions=True), batch)
            with torch.autocast(device, dtype=dtype):
                got = tester.weights(model, model(**batch, output_attentions=True), batch)
        if not expected:
            pytest.skip(f"{tester.name} returns no attention weights")
        distributions = [name for name, over in expected.items() if is_distribution(over)]
        for name, over in got.items():
            padding = over.padding().to(device)
            assert torch.equal(over.values[padding], torch.zeros_like(over.values[padding])), name
            if name in distributions:
                assert over.values.dtype == torch.float32, (name, over.values.dtype)
                assert is_distribution(over), (name, sums(over))

    @under_autocast
    def test_autocast_logits_are_float32_within_the_rounding_of_16_bit_products(self, tester: Tester, device,
                                                                                  dtype):
        """The logits within ``logits_tolerance`` of the float32 model's (−∞ at the same places), the loss within
        twice that (a cross-entropy moves by at most 2 max_v |Δz_v|)."""
        if not tester.continuous:
            pytest.skip(f"{tester.name} picks positions (hard attention): at a near-tie 16-bit scores pick another")
        model, batch = in_float32(tester, device)
        labels = tester.labels(batch).to(device)
        with torch.no_grad():
            expected = model(**batch, labels=labels)
            with torch.autocast(device, dtype=dtype):
                got = model(**batch, labels=labels)
        tolerance = logits_tolerance(dtype, expected.logits)
        finite = torch.isfinite(expected.logits)
        assert torch.equal(torch.isfinite(got.logits), finite)
        torch.testing.assert_close(got.logits.float()[finite], expected.logits[finite], atol=tolerance, rtol=0)
        torch.testing.assert_close(got.loss, expected.loss, atol=2 * tolerance, rtol=0)

    @under_autocast
    def test_autocast_greedy_generate_picks_the_float32_tokens(self, tester: Tester, device, dtype):
        """Greedy generate() under autocast: while a row's tokens so far are the float32 model's, its step scores are
        within ``logits_tolerance`` of float32's, and it picks the float32 model's token unless float32's margin (best
        − runner-up) is within twice their difference: a near-tie the rounding can flip, after which the row may part
        from float32's."""
        if tester.generate is None:
            pytest.skip(f"{tester.name} does not generate")
        model, batch = in_float32(tester, device)
        source = {key: value for key, value in batch.items() if not key.startswith("decoder_")}
        greedy = {**tester.generate, "num_beams": 1, "output_scores": True, "return_dict_in_generate": True}
        with torch.no_grad():
            expected = model.generate(**source, **greedy)
            with torch.autocast(device, dtype=dtype):
                got = model.generate(**source, **greedy)
        tolerance = logits_tolerance(dtype, torch.stack(expected.scores))
        start = expected.sequences.shape[1] - len(expected.scores)
        for row in range(len(expected.sequences)):
            for step, (want, have) in enumerate(zip(expected.scores, got.scores)):
                want, have = want[row].float(), have[row].float()
                finite = torch.isfinite(want)
                assert torch.equal(torch.isfinite(have), finite), (row, step)
                deviation = float((have - want)[finite].abs().max())
                assert deviation <= tolerance, (row, step, deviation, tolerance)
                if got.sequences[row, start + step] != expected.sequences[row, start + step]:
                    best = want.topk(2).values
                    assert best[0] - best[1] <= 2 * deviation, (row, step)
                    break
