"""Where and how the decoder attends: local-m/local-p windows, monotonic attention, hard attention and coverage.

Golden values for tiny fixed inputs (worked out by hand in the comments), the parallel monotonic form against the
paper's recurrence (``reference.monotonic_expected_alignment``), the properties every scope keeps (weights sum to at
most 1, exactly 0 outside the window and on padding, no NaN on an all-padding row), the sweep of every score x
decoder style x scope x mode x coverage (refused combinations raise the error naming the fields; the others train,
step through the cache like teacher forcing and equal the reference decoder), and the coverage loss.
"""

import itertools
import math

import pytest
import torch
from torch.testing import assert_close

from conftest import VOCAB, assert_float64_close, padded_batch, random_labels, tiny_config, tiny_model
from hf_bahdanau import BahdanauConfig, reference
from hf_bahdanau.modeling.attention import ATTENTION_SCORES
from hf_bahdanau.modeling.attention_mode import ATTENTION_MODES, HardAttention
from hf_bahdanau.modeling.coverage import CoverageFeature, coverage_loss, coverage_penalty
from hf_bahdanau.modeling.scope import ATTENTION_SCOPES, LocalMonotonicScope, LocalPredictiveScope, MonotonicScope
from hf_bahdanau.modeling.state import AttentionState
from hf_bahdanau.modeling.transformers_private import cache_of

pytestmark = pytest.mark.usefixtures("one_thread")

EPS64 = torch.finfo(torch.float64).eps


def mask_of(*lengths: int, width: int = 6) -> torch.Tensor:
    return torch.arange(width)[None] < torch.tensor(lengths)[:, None]


# 1. golden values -----------------------------------------------------------------------------------------------


def test_local_m_window_and_gaussian_by_hand():
    """e = 0 everywhere, D = 2 (σ = 1). Length 6 at t = 3: the window is j = 1…5, softmax 1/5 each, times
    exp(−(j − 3)² / 2). Length 4 at t = 5: p_t clips to 3, the window is j = 1…3, 1/3 each."""
    scope = LocalMonotonicScope(window=2)
    scores = torch.zeros(2, 1, 6, dtype=torch.float64)
    weights = scope.align(scores, torch.zeros(2, 1, 4), mask_of(6, 4), AttentionState(step=3))
    assert_close(weights[0, 0], torch.tensor([0, 0.2 * math.exp(-2), 0.2 * math.exp(-0.5), 0.2,
                                              0.2 * math.exp(-0.5), 0.2 * math.exp(-2)], dtype=torch.float64))
    late = scope.align(scores[1:], torch.zeros(1, 1, 4), mask_of(4), AttentionState(step=5))
    assert_close(late[0, 0], torch.tensor([0, math.exp(-2) / 3, math.exp(-0.5) / 3, 1 / 3, 0, 0],
                                          dtype=torch.float64))


def test_local_p_predicts_the_centre_from_the_query_and_the_length():
    """W_p = 0 makes p_t = S · sigmoid(0) = S / 2: S = 5 gives p_t = 2.5, the window |j − 2.5| ≤ 2 is j = 1…4 (1/4
    each), times exp(−(j − 2.5)² / 2)."""
    scope = LocalPredictiveScope(window=2, query_size=3, attention_size=4).double()
    torch.nn.init.zeros_(scope.position_proj.weight)
    weights = scope.align(torch.zeros(1, 1, 6, dtype=torch.float64), torch.randn(1, 1, 3, dtype=torch.float64),
                          mask_of(5), AttentionState())
    expected = [0] + [0.25 * math.exp(-(j - 2.5) ** 2 / 2) for j in range(1, 5)] + [0]
    assert_close(weights[0, 0], torch.tensor(expected, dtype=torch.float64))


def test_monotonic_expected_alignment_by_hand():
    """p = ½ everywhere, α_0 = (1, 0, 0): α_1 = (½, ¼, ⅛); α_2 = (¼, ¼, 3/16) (q_2 = (½, ½, 3/8))."""
    scope = MonotonicScope(bias_init=0.0, noise_std=0.0).double().train()
    mask = mask_of(3, width=3)
    state = AttentionState(previous=scope.initial_previous(mask, torch.float64))
    weights = scope.align(torch.zeros(1, 2, 3, dtype=torch.float64), torch.zeros(1, 2, 4), mask, state)
    assert_close(weights[0], torch.tensor([[0.5, 0.25, 0.125], [0.25, 0.25, 0.1875]], dtype=torch.float64))


@pytest.mark.parametrize("regime", ["uniform", "near-one", "near-zero-long"])
def test_the_parallel_monotonic_form_equals_the_papers_recurrence(regime):
    """The cumulative-product form (with its clamps) against q_ij = (1 − p_{i,j−1}) q_{i,j−1} + α_{i−1,j}, including
    stopping probabilities of exactly 1 (a product of 0, clamped) and 200 positions of small p (a product near
    1e-9). The clamp replaces a factor 1 − p below 1e-10 by 1e-10, which moves each α_ij by at most 1e-10 per
    clamped factor before it: the tolerance is S · 1e-10."""
    generator = torch.Generator().manual_seed(0)
    steps, length = (4, 200) if regime == "near-zero-long" else (5, 9)
    probabilities = torch.rand(steps, length, generator=generator, dtype=torch.float64)
    if regime == "near-one":
        probabilities[:, 2] = 1.0
        probabilities[:, 5:] = 1 - 1e-12
    elif regime == "near-zero-long":
        probabilities = probabilities * 0.2
    scope = MonotonicScope(bias_init=0.0, noise_std=0.0).double().train()
    previous = scope.initial_previous(torch.ones(1, length, dtype=torch.bool), torch.float64)[0]
    parallel = []
    for row in probabilities:
        previous = scope.expected_step(row, previous)
        parallel.append(previous)
    expected = reference.monotonic_expected_alignment(probabilities)
    bound = length * MonotonicScope.SMALLEST_KEPT
    assert_close(torch.stack(parallel), expected, atol=bound, rtol=0)
    assert (torch.stack(parallel).sum(-1) <= 1 + bound).all()


def test_hard_monotonic_stops_at_the_first_position_from_the_previous_one():
    probabilities = torch.tensor([[0.2, 0.7, 0.9, 0.1]] * 4)
    previous = torch.tensor([[0, 0, 1.0, 0], [1.0, 0, 0, 0], [0, 0, 0, 1.0], [0, 0, 0, 0]])
    stops = MonotonicScope.hard_step(probabilities, previous)
    # from 2: 2 itself; from 0: the first p ≥ ½ is 1; from 3: none left; run out before: none ever
    assert stops.tolist() == [[0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_coverage_enters_the_additive_score_by_hand():
    """A = 2: U h_j + w_c c_j with U h = [[0.1, 0.2], [0.3, -0.1]], w_c = (1, −2), c = (0.5, 0): [[0.6, −0.8],
    [0.3, −0.1]]."""
    feature = CoverageFeature(2).double()
    with torch.no_grad():
        feature.coverage_proj.weight.copy_(torch.tensor([[1.0], [-2.0]]))
    keys = feature(torch.tensor([[[0.1, 0.2], [0.3, -0.1]]], dtype=torch.float64),
                   torch.tensor([[0.5, 0.0]], dtype=torch.float64))
    assert_close(keys, torch.tensor([[[0.6, -0.8], [0.3, -0.1]]], dtype=torch.float64))


def test_coverage_loss_and_penalty_by_hand():
    """α = [[½, ½], [0.9, 0.1]]: c_1 = 0, c_2 = (½, ½), Σ_j min = 0 + (½ + 0.1) = 0.6; with step 2 ignored, 0.
    Penalty β = 0.2 on totals (1.2, ½, padding): 0.2 (log 1 + log ½)."""
    weights = torch.tensor([[[0.5, 0.5], [0.9, 0.1]]], dtype=torch.float64)
    assert_close(coverage_loss(weights, torch.tensor([[True, True]])), torch.tensor(0.6, dtype=torch.float64))
    assert coverage_loss(weights, torch.tensor([[True, False]])) == 0
    penalty = coverage_penalty(torch.tensor([[1.2, 0.5, 0.0]]), torch.tensor([[True, True, False]]), 0.2)
    assert_close(penalty, torch.tensor([0.2 * math.log(0.5)]))


# 2. hard attention ---------------------------------------------------------------------------------------------


def test_hard_attention_is_the_argmax_at_inference_and_a_sample_in_training():
    weights = torch.tensor([[0.1, 0.2, 0.7, 0.0]])
    hard = HardAttention(temperature=1.0)
    assert hard.eval()(weights).tolist() == [[0, 0, 1, 0]]
    torch.manual_seed(0)
    draws = 20_000
    samples = hard.train()(weights.expand(draws, 4))
    assert ((samples == 0) | (samples == 1)).all() and (samples.sum(-1) == 1).all()
    frequencies = samples.mean(0)
    # each frequency is a binomial mean: within 5 standard deviations of its α_j; the empty position is never drawn
    bound = 5 * torch.sqrt(weights[0] * (1 - weights[0]) / draws)
    assert ((frequencies - weights[0]).abs() <= bound).all() and frequencies[3] == 0


def test_hard_attention_gradient_is_the_relaxed_softmax_gradient():
    """Straight-through: the forward value is the one-hot, the gradient that of y = softmax((log α + g) / τ) for the
    same Gumbel draw g; a row with nothing to attend stays zero, with zero gradient, no NaN."""
    weights = torch.tensor([[0.1, 0.2, 0.7, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    probe = torch.tensor([[1.0, -2.0, 0.5, 3.0]] * 2, dtype=torch.float64)
    hard = HardAttention(temperature=0.5).train()
    torch.manual_seed(3)
    out = hard(weights)
    (out * probe).sum().backward()
    torch.manual_seed(3)
    noise = -torch.empty_like(weights).exponential_().log()
    first = weights[0].detach().clone().requires_grad_()
    relaxed = torch.softmax((torch.log(first[:3]) + noise[0, :3]) / 0.5, dim=-1)
    (relaxed * probe[0, :3]).sum().backward()
    assert out[1].abs().sum() == 0 and out[0].sum() == 1
    assert_close(weights.grad[0, :3], first.grad[:3])
    assert weights.grad[0, 3] == 0 and (weights.grad[1] == 0).all() and torch.isfinite(weights.grad).all()


# 3. properties of every scope and mode -------------------------------------------------------------------------


SCOPES_AND_MODES = [(scope, mode) for scope in ATTENTION_SCOPES for mode in ATTENTION_MODES
                    if not (scope == "monotonic" and mode != "soft")]


@pytest.mark.parametrize("scope, mode", SCOPES_AND_MODES)
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_weights_sum_to_at_most_one_and_are_zero_outside_the_window_and_on_padding(scope, mode, training):
    model = tiny_model(attention_scope=scope, attention_mode=mode, local_window=1,
                       monotonic_bias_init=0.0).double().train(training)
    input_ids, mask = padded_batch(lengths=(7, 5, 2, 0))  # the last source is all padding
    out = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=random_labels(4, 6),
                output_attentions=True)
    weights = out.cross_attentions[0][:, 0]  # [B, T, S]
    assert torch.isfinite(out.logits).all() and torch.isfinite(weights).all()
    assert (weights.sum(-1) <= 1 + 7 * EPS64).all() and (weights[3] == 0).all()
    assert (weights[mask[:, None, :].expand_as(weights) == 0] == 0).all()
    if scope.startswith("local") and mode == "soft":  # at most 2D + 1 = 3 positions per step
        assert ((weights > 0).sum(-1) <= 3).all()
    if scope == "local-m":
        steps = torch.arange(6)[:, None]
        centres = torch.minimum(steps, (mask.sum(-1) - 1).clamp_min(0)[:, None, None])  # [B, T, 1]
        assert (weights[(torch.arange(7) - centres).abs() > 1] == 0).all()


# 4. every score x decoder style x scope x mode, plain and with coverage and copying ----------------------------


STYLES = [("bahdanau", False), ("luong", False), ("luong", True)]
# "extras": See et al.'s pointer-generator (copy_attention) with coverage where the score has the term for it
SWEEP = list(itertools.product(ATTENTION_SCORES, STYLES, ATTENTION_SCOPES, ATTENTION_MODES, ["plain", "extras"]))


def refusal(attention_type: str, scope: str, mode: str, extras: str = "plain") -> str | None:
    """The fields a refused combination's error names (the first the config checks), or None."""
    if scope == "monotonic" and attention_type == "multihead":
        return "attention_scope='monotonic'.*attention_type='multihead'"
    if mode == "hard_reinforce" and attention_type == "multihead":
        return "attention_mode='hard_reinforce'.*attention_type='multihead'"
    if mode == "hard_reinforce" and extras == "extras":  # extras: copy_attention
        return "attention_mode='hard_reinforce'.*copy_attention=True"
    if scope == "monotonic" and mode != "soft":
        return f"attention_mode='{mode}'.*attention_scope='monotonic'"
    return None


def assert_log_probs_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """float64 log-probabilities equal where finite (to the rounding of their size) and −∞ at the same entries (a
    pointer-generator's extended ids that a row's source does not hold)."""
    assert torch.equal(actual.isneginf(), expected.isneginf())
    finite = expected.isfinite()
    assert finite.any() and actual[finite].isfinite().all()
    assert_float64_close(actual[finite], expected[finite])


def copy_batch(input_ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor):
    """Two words beyond the vocabulary in row 0 and one in row 1: input_ids that read them as unk, copy_input_ids
    that number them VOCAB, VOCAB + 1 (``encode_with_copies``' encoding), labels that copy them."""
    input_ids, copy_ids = input_ids.clone(), input_ids.clone()
    input_ids[0, 1] = input_ids[0, 4] = input_ids[1, 0] = 3  # unk_token_id
    copy_ids[0, 1], copy_ids[0, 4], copy_ids[1, 0] = VOCAB, VOCAB + 1, VOCAB
    labels = labels.clone()
    labels[0, 0], labels[0, 2], labels[1, 1] = VOCAB + 1, VOCAB, VOCAB
    return input_ids, copy_ids, labels


@pytest.mark.parametrize("attention_type, style, scope, mode, extras", SWEEP)
def test_every_accepted_combination_trains_steps_like_teacher_forcing_and_equals_the_reference(
        attention_type, style, scope, mode, extras):
    coverage = extras == "extras" and attention_type in ("additive", "concat")
    overrides = dict(attention_type=attention_type, decoder_style=style[0], input_feeding=style[1],
                     attention_scope=scope, attention_mode=mode, use_coverage=coverage, local_window=2,
                     monotonic_bias_init=0.0, coverage_loss_weight=0.5 if coverage else 0.0,
                     copy_attention=extras == "extras")
    expected_error = refusal(attention_type, scope, mode, extras)
    if expected_error:
        with pytest.raises(ValueError, match=expected_error):
            tiny_config(**overrides)
        return
    model = tiny_model(**overrides).double().train()
    input_ids, mask = padded_batch()
    labels = random_labels(3, 5)
    labels[1, 3:] = -100
    decoder_input_ids = random_labels(3, 4, seed=2)
    copying = {}
    if model.config.copy_attention:
        input_ids, copy_ids, labels = copy_batch(input_ids, mask, labels)
        decoder_input_ids[0, 2] = VOCAB
        copying = dict(copy_input_ids=copy_ids)
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels, **copying)
    out.loss.backward()
    gradients = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is not None and torch.isfinite(g).all() for g in gradients.values()), \
        [name for name, g in gradients.items() if g is None or not torch.isfinite(g).all()]
    for name in ("scope.position_proj.weight", "scope.energy_bias", "coverage.coverage_proj.weight",
                 "generation_gate.weight"):
        if f"model.decoder.{name}" in gradients:  # what the option adds is trained
            assert gradients[f"model.decoder.{name}"].abs().sum() > 0, name

    model.eval()
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids, **copying)
        cache, steps = None, []
        for position in range(4):
            step = model(input_ids=input_ids, attention_mask=mask, past_key_values=cache, use_cache=True,
                         decoder_input_ids=decoder_input_ids[:, position:position + 1], **copying)
            cache = cache_of(step)
            steps.append(step.logits)
        expected = reference.logits(model, input_ids, mask, decoder_input_ids, copying.get("copy_input_ids"))
    assert_log_probs_close(torch.cat(steps, dim=1), full.logits)
    assert_log_probs_close(full.logits, expected)


# 5. the coverage loss in the model ------------------------------------------------------------------------------


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_the_coverage_loss_is_reported_and_added_to_the_loss(training):
    """coverage_loss = Σ over kept labels of Σ_j min(α_tj, c_tj) / their count, from the returned alignments by
    loops; loss = cross-entropy + λ coverage_loss."""
    model = tiny_model(use_coverage=True, coverage_loss_weight=0.7).double().train(training)
    plain = tiny_model(use_coverage=True).double().train(training)
    plain.load_state_dict(model.state_dict())
    input_ids, mask = padded_batch()
    labels = random_labels(3, 5)
    labels[2, 2:] = -100
    torch.manual_seed(0)
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels, output_attentions=True)
    torch.manual_seed(0)
    cross_entropy = plain(input_ids=input_ids, attention_mask=mask, labels=labels).loss
    weights = out.cross_attentions[0][:, 0].detach()
    total, count = 0.0, 0
    for row in range(3):
        covered = torch.zeros(weights.shape[-1], dtype=torch.float64)
        for step in range(5):
            if labels[row, step] != -100:
                total += float(torch.minimum(weights[row, step], covered).sum())
                count += 1
            covered += weights[row, step]
    assert_close(out.coverage_loss.detach(), torch.tensor(total / count, dtype=torch.float64))
    assert_close(out.loss, cross_entropy + 0.7 * out.coverage_loss)
    without_attentions = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    assert without_attentions.cross_attentions is None and without_attentions.coverage_loss is not None
    assert plain(input_ids=input_ids, attention_mask=mask, labels=labels).coverage_loss is None


# 6. the configuration refuses what has no meaning -------------------------------------------------------------


@pytest.mark.parametrize("overrides, message", [
    (dict(attention_type="none", attention_scope="local-p"), "attention_scope='local-p'.*attention_type='none'"),
    (dict(attention_type="none", coverage_loss_weight=1.0), "coverage_loss_weight=1.0.*attention_type='none'"),
    (dict(attention_scope="locl-p"), r"`attention_scope` must be one of \['global', 'local-m', 'local-p', "
                                     r"'monotonic'\], got 'locl-p'"),
    (dict(attention_mode="stochastic"), r"`attention_mode` must be one of \['soft', 'hard', 'hard_reinforce'\]"),
    (dict(local_window=0), "`local_window` must be a positive integer, got 0"),
    (dict(hard_attention_temperature=0.0), "`hard_attention_temperature` must be > 0, got 0.0"),
    (dict(monotonic_noise_std=-1.0), "`monotonic_noise_std` must be >= 0"),
    (dict(coverage_loss_weight=-0.1), "`coverage_loss_weight` must be >= 0"),
    (dict(attention_type="dot", use_coverage=True), "use_coverage=True.*attention_type='dot'"),
    (dict(attention_type="none", copy_attention=True), "copy_attention=True.*attention_type='none'"),
    (dict(copy_attention=True, unk_token_id=None), "copy_attention=True.*unk_token_id"),
])
def test_bad_attention_options_are_refused_by_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        BahdanauConfig(**overrides)


# 7. monotonic inference in linear time --------------------------------------------------------------------------


@pytest.mark.parametrize("bias", [-1.0, 0.0, 3.0], ids=["sparse-stops", "some-stops", "stops-everywhere"])
@pytest.mark.parametrize("decoder_style, input_feeding", STYLES)
def test_the_monotonic_scan_equals_the_full_hard_step(bias, decoder_style, input_feeding):
    """Without autograd, inference scores from the previous position on (``MonotonicScope.scan``); with autograd the
    full hard step scores every position. Same logits and alignments, left- and right-padded."""
    model = tiny_model("rnnsearch-monotonic", decoder_style=decoder_style, input_feeding=input_feeding,
                       monotonic_bias_init=bias).double()
    input_ids, mask = padded_batch(lengths=(7, 5, 2, 0))
    decoder_input_ids = random_labels(4, 9)
    for ids, attention_mask in ((input_ids, mask), (input_ids.flip(1), mask.flip(1))):
        with torch.no_grad():
            scanned = model(input_ids=ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                            output_attentions=True)
        full = model(input_ids=ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                     output_attentions=True)
        assert_float64_close(scanned.logits, full.logits.detach())
        assert torch.equal(scanned.cross_attentions[0], full.cross_attentions[0].detach())


@pytest.mark.parametrize("bias", [10.0, -10.0], ids=["stops-at-once", "never-stops"])
def test_the_monotonic_scan_scores_only_the_positions_it_passes(bias, monkeypatch):
    """With e ≡ 0, p = σ(bias). Stopping at once, every step stays at position 0 and scores one chunk of
    ``SCAN_CHUNK`` positions, whatever the length; never stopping, the first step passes every position once and the
    row has run out: ⌈S / chunk⌉ chunks in all, over 12 steps (global attention scores 12 · S)."""
    model = tiny_model("rnnsearch-monotonic", monotonic_bias_init=bias, monotonic_noise_std=0.0)
    with torch.no_grad():
        model.model.decoder.scope.energy_gain.zero_()
    scored = []
    score = type(model.model.decoder.attention).score
    monkeypatch.setattr(type(model.model.decoder.attention), "score",
                        lambda self, query, keys: scored.append(keys.shape[1]) or score(self, query, keys))
    chunk = MonotonicScope.SCAN_CHUNK
    for length in (20, 200):
        scored.clear()
        input_ids, mask = padded_batch(lengths=(length,))
        with torch.no_grad():
            out = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=12, min_new_tokens=12,
                                 output_attentions=True, return_dict_in_generate=True)
        alignments = torch.stack([step[0][0, 0, 0] for step in out.cross_attentions])  # [12, S]
        if bias > 0:
            assert scored == [chunk] * 12 and (alignments[:, 0] == 1).all() and alignments.sum() == 12
        else:
            assert scored == [chunk] * math.ceil(length / chunk) and alignments.sum() == 0
