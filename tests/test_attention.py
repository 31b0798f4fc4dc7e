"""Tests for hf_bahdanau.modeling.attention.

Properties and equivalences are swept over every registered mechanism; golden values
come from a NumPy reference and one case computed by hand; scaled_dot and multihead are
checked against PyTorch's own implementations.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from conftest import assert_float64_close, softmax_sum_tolerance
from hf_bahdanau.modeling.attention import (
    ATTENTION_SCORES,
    AdditiveAttention,
    AttentionMechanism,
    LocationAttention,
    MultiHeadAttention,
    build_attention,
    masked_softmax,
)

BATCH, STEPS, SOURCE_LENGTH = 3, 2, 6
QUERY_SIZE = 4
OTHER_KEY_SIZE = 5  # key size of mechanisms that allow key_size != query_size
LENGTHS = torch.tensor([6, 4, 0])  # a full row, a padded row, an all-padding row
MASK = torch.arange(SOURCE_LENGTH) < LENGTHS[:, None]  # [B, S], True = real token
REAL_ROWS = LENGTHS > 0
NAMES = sorted(ATTENTION_SCORES)


def make_config(**overrides: object) -> SimpleNamespace:
    fields = dict(
        attention_size=6,
        num_attention_heads=2,
        max_source_positions=8,
        gaussian_kernel_width=0.7,
        gaussian_kernel_learnable=True,
        location_filters=2,
        location_kernel_size=3,
        location_sharpening=1.5,
        location_smoothing=False,
    )
    return SimpleNamespace(**{**fields, **overrides})


def build(name: str, dtype: torch.dtype = torch.float32, **config_overrides: object):
    """A seeded mechanism and inputs query [B, T, Dq], keys [B, S, Dk], values [B, S, Dk]."""
    key_size = QUERY_SIZE if ATTENTION_SCORES[name].same_size_required else OTHER_KEY_SIZE
    torch.manual_seed(0)
    mechanism = build_attention(name, make_config(**config_overrides), QUERY_SIZE, key_size).to(dtype)
    query = torch.randn(BATCH, STEPS, QUERY_SIZE, dtype=dtype)
    keys = torch.randn(BATCH, SOURCE_LENGTH, key_size, dtype=dtype)
    values = torch.randn(BATCH, SOURCE_LENGTH, key_size, dtype=dtype)
    return mechanism, query, keys, values


# ---------------------------------------------------------------- properties, every mechanism


@pytest.mark.parametrize("name", NAMES)
def test_output_shapes_for_one_step_and_many_steps(name):
    mechanism, query, keys, values = build(name)
    value_size = values.shape[-1]

    context, weights = mechanism(query, keys, values, MASK)
    assert context.shape == (BATCH, STEPS, value_size)
    assert weights.shape == (BATCH, STEPS, SOURCE_LENGTH)

    context, weights = mechanism(query[:, 0], keys, values, MASK)
    assert context.shape == (BATCH, value_size)
    assert weights.shape == (BATCH, SOURCE_LENGTH)


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_a_distribution_over_real_tokens(name):
    mechanism, query, keys, values = build(name)
    _, weights = mechanism(query, keys, values, MASK)

    assert_close(weights[REAL_ROWS].sum(-1), torch.ones(int(REAL_ROWS.sum()), STEPS),
                 atol=softmax_sum_tolerance(SOURCE_LENGTH), rtol=0)
    assert (weights >= 0).all()
    padding = ~MASK[:, None, :].expand_as(weights)
    assert (weights[padding] == 0).all()  # exactly zero, not just small


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_all_padding_row_gives_zero_weights_and_no_nan(name, dtype):
    mechanism, query, keys, values = build(name, dtype)
    context, weights = mechanism(query, keys, values, MASK)

    assert torch.isfinite(context).all()
    assert torch.isfinite(weights).all()
    assert (weights[~REAL_ROWS] == 0).all()
    # The softmax runs in float32; bfloat16 weights are then each rounded to within ε/2 of themselves, and their sum
    # rounds up to SOURCE_LENGTH times (ε/2 each, partial sums ≤ 1): (SOURCE_LENGTH + 1) ε/2 more.
    tolerance = softmax_sum_tolerance(SOURCE_LENGTH)
    if dtype == torch.bfloat16:
        tolerance += (SOURCE_LENGTH + 1) * torch.finfo(torch.bfloat16).eps / 2
    assert_close(weights[REAL_ROWS].sum(-1).float(), torch.ones(int(REAL_ROWS.sum()), STEPS), atol=tolerance, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_padded_content_is_ignored(name):
    mechanism, query, keys, values = build(name, torch.float64)  # float64: other inputs, kernels may round apart
    expected = mechanism(query, keys, values, MASK)

    padding = ~MASK[:, :, None]
    garbage_keys = keys.masked_fill(padding, 1e4)
    garbage_values = values.masked_fill(padding, -1e4)
    actual = mechanism(query, garbage_keys, garbage_values, MASK)

    assert_float64_close(actual[0][REAL_ROWS], expected[0][REAL_ROWS])
    assert_float64_close(actual[1], expected[1], scale=1.0)  # weights: at most 1


@pytest.mark.parametrize("name", NAMES)
def test_many_steps_equal_one_step_at_a_time(name):
    mechanism, query, keys, values = build(name, torch.float64)  # float64: other shapes, other kernels
    context, weights = mechanism(query, keys, values, MASK)
    scores = mechanism.score(query, mechanism.project_keys(keys))

    for step in range(STEPS):
        step_context, step_weights = mechanism(query[:, step], keys, values, MASK)
        assert_float64_close(context[:, step], step_context)
        assert_float64_close(weights[:, step], step_weights, scale=1.0)  # weights: at most 1
        step_scores = mechanism.score(query[:, step], mechanism.project_keys(keys))
        assert_float64_close(scores[..., step, :], step_scores)


@pytest.mark.parametrize("name", NAMES)
def test_projected_keys_are_used_not_recomputed(name, monkeypatch):
    mechanism, query, keys, values = build(name, torch.float64)  # float64: one step and all steps round apart
    context, weights = mechanism(query, keys, values, MASK)
    projected_keys = mechanism.project_keys(keys)

    def fail(_keys):
        raise AssertionError("project_keys was called although projected_keys was given")

    monkeypatch.setattr(mechanism, "project_keys", fail)
    # The scores must come from projected_keys alone: the keys argument is then irrelevant.
    other_keys = torch.randn_like(keys)
    for step in range(STEPS):
        step_context, step_weights = mechanism(query[:, step], other_keys, values, MASK, projected_keys=projected_keys)
        assert_float64_close(step_context, context[:, step])
        assert_float64_close(step_weights, weights[:, step], scale=1.0)  # weights: at most 1


@pytest.mark.parametrize("name", NAMES)
def test_gradients_flow_and_are_finite(name):
    mechanism, query, keys, values = build(name)
    for tensor in (query, keys, values):
        tensor.requires_grad_()
    context, weights = mechanism(query, keys, values, MASK)
    (context.square().sum() + (weights * torch.randn_like(weights)).sum()).backward()

    inputs = [query, values] if isinstance(mechanism, LocationAttention) else [query, keys, values]
    for tensor in inputs + list(mechanism.parameters()):
        assert tensor.grad is not None
        assert torch.isfinite(tensor.grad).all()
        assert tensor.grad.abs().sum() > 0


# ---------------------------------------------------------------- masked_softmax


def test_masked_softmax_broadcasts_the_mask_over_steps_and_survives_huge_scores():
    for dtype in (torch.float32, torch.float64):
        scores = torch.tensor([[[1e30, 0.0, 5.0], [-1e30, 2.0, 2.0]]], dtype=dtype)  # [B=1, T=2, S=3]
        mask = torch.tensor([[False, True, True]])
        weights = masked_softmax(scores, mask)
        expected = torch.tensor([[[0.0, 1 / (1 + math.exp(5.0)), 1 / (1 + math.exp(-5.0))], [0.0, 0.5, 0.5]]],
                                dtype=dtype)
        # two real entries: each weight within (2 + 3) ε of exact (``softmax_sum_tolerance``'s per-weight bound),
        # the expected values within ε/2 (rounded to dtype)
        assert_close(weights, expected, atol=6 * torch.finfo(dtype).eps, rtol=0)


# ---------------------------------------------------------------- golden values


def reference_attention(scores: np.ndarray, values: np.ndarray, mask: np.ndarray):
    """Softmax over the real tokens of each row, zero elsewhere; context = weights @ values."""
    weights = np.zeros_like(scores)
    for row, real in enumerate(mask):
        if real.any():
            real_scores = scores[row][:, real]
            exp = np.exp(real_scores - real_scores.max(-1, keepdims=True))
            weights[row][:, real] = exp / exp.sum(-1, keepdims=True)
    return weights @ values, weights


def weight(linear: nn.Linear) -> np.ndarray:
    return linear.weight.detach().numpy()


def additive_scores(mechanism, q, k):
    hidden = np.tanh((q @ weight(mechanism.query_proj).T)[:, :, None, :] + (k @ weight(mechanism.key_proj).T)[:, None])
    return (hidden @ weight(mechanism.energy_proj).T)[..., 0]


def dot_scores(mechanism, q, k):
    return np.einsum("btd,bsd->bts", q, k)


def scaled_dot_scores(mechanism, q, k):
    return dot_scores(mechanism, q, k) / np.sqrt(q.shape[-1])


def general_scores(mechanism, q, k):
    return np.einsum("btd,de,bse->bts", q, weight(mechanism.key_proj), k)


def location_scores(mechanism, q, k):
    return (q @ weight(mechanism.position_proj).T)[..., : k.shape[1]]


def gaussian_kernel_scores(mechanism, q, k):
    w = mechanism.width.item()
    return -0.5 * np.sum((w * (q[:, :, None, :] - k[:, None, :, :])) ** 2, axis=-1)


@pytest.mark.parametrize(
    "name, reference_scores, config_overrides",
    [
        ("additive", additive_scores, {}),
        ("dot", dot_scores, {}),
        ("general", general_scores, {}),
        ("scaled_dot", scaled_dot_scores, {}),
        ("location", location_scores, {}),
        ("gaussian_kernel", gaussian_kernel_scores, {"gaussian_kernel_learnable": True}),
        ("gaussian_kernel", gaussian_kernel_scores, {"gaussian_kernel_learnable": False}),
    ],
)
def test_matches_numpy_reference(name, reference_scores, config_overrides):
    mechanism, query, keys, values = build(name, torch.float64, **config_overrides)
    q, k, v = query.numpy(), keys.numpy(), values.numpy()
    expected_context, expected_weights = reference_attention(reference_scores(mechanism, q, k), v, MASK.numpy())

    with torch.no_grad():
        context, weights = mechanism(query, keys, values, MASK)
    assert_float64_close(weights, torch.from_numpy(expected_weights), scale=1.0)  # weights: at most 1
    assert_float64_close(context, torch.from_numpy(expected_context))


def test_additive_by_hand():
    # W_a = U_a = I, v_a = [1, -1]; q = [ln 3, 0] and tanh(ln 3) = 0.8, so
    #   e_1 = v_a . tanh([ln 3, 0] + [0, 0])      = 0.8
    #   e_2 = v_a . tanh([ln 3, 0] + [-ln 3, ln 3]) = -0.8
    #   alpha = softmax([0.8, -0.8]) = [1, e^-1.6] / (1 + e^-1.6) = [0.83201839, 0.16798161]
    #   c = 0.83201839 * [1, 0] + 0.16798161 * [0, 2] = [0.83201839, 0.33596323]
    # The third key is padding: its huge values must not matter. In float64, against the exact values.
    mechanism = AdditiveAttention(query_size=2, key_size=2, attention_size=2).double()
    with torch.no_grad():
        mechanism.query_proj.weight.copy_(torch.eye(2))
        mechanism.key_proj.weight.copy_(torch.eye(2))
        mechanism.energy_proj.weight.copy_(torch.tensor([[1.0, -1.0]]))
    ln3 = math.log(3)
    query = torch.tensor([[ln3, 0.0]], dtype=torch.float64)
    keys = torch.tensor([[[0.0, 0.0], [-ln3, ln3], [50.0, 50.0]]], dtype=torch.float64)
    values = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [100.0, 100.0]]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])

    with torch.no_grad():
        context, weights = mechanism(query, keys, values, mask)
        scores = mechanism.score(query, mechanism.project_keys(keys))

    alpha = 1 / (1 + math.exp(-1.6))
    assert_float64_close(scores[:, :2], torch.tensor([[0.8, -0.8]], dtype=torch.float64))
    assert_float64_close(weights, torch.tensor([[alpha, 1 - alpha, 0.0]], dtype=torch.float64))
    assert_float64_close(context, torch.tensor([[alpha, 2 * (1 - alpha)]], dtype=torch.float64))


@pytest.mark.parametrize("block_rows", [1, 2, 5, 7])
@pytest.mark.parametrize("steps", [1, 3])
def test_additive_scores_in_blocks_equal_the_whole_hidden_layer(monkeypatch, block_rows, steps):
    """Without autograd the [B, T, S, A] hidden layer is made a block of sources at a time (2 rows of 5: blocks of
    2, 2 and a tail of 1); the scores equal the whole layer's, which autograd uses."""
    torch.manual_seed(0)
    mechanism = AdditiveAttention(query_size=4, key_size=3, attention_size=6).double()  # blocks: other product shapes
    query, keys = torch.randn(5, steps, 4, dtype=torch.float64), torch.randn(5, 7, 3, dtype=torch.float64)
    monkeypatch.setattr(AdditiveAttention, "HIDDEN_BLOCK_ENTRIES", block_rows * steps * 7 * 6)
    projected_keys = mechanism.project_keys(keys)
    whole = mechanism.score(query, projected_keys)
    assert whole.requires_grad  # autograd on: the whole layer
    with torch.no_grad():
        in_blocks = mechanism.score(query, projected_keys)
    assert in_blocks.shape == (5, steps, 7)
    assert_float64_close(in_blocks, whole.detach())


# ---------------------------------------------------------------- equal to PyTorch's implementations


def test_scaled_dot_matches_torch_scaled_dot_product_attention():
    mechanism, query, keys, values = build("scaled_dot", torch.float64)  # float64: two implementations round apart
    rows = REAL_ROWS  # PyTorch leaves an all-padding row undefined
    context, _ = mechanism(query[rows], keys[rows], values[rows], MASK[rows])
    expected = F.scaled_dot_product_attention(query[rows], keys[rows], values[rows], attn_mask=MASK[rows][:, None, :])
    assert_float64_close(context, expected)


def test_multihead_matches_torch_multihead_attention():
    embed_size, num_heads, key_size = 6, 2, 5
    torch.manual_seed(0)
    # float64: two implementations that round apart
    reference = nn.MultiheadAttention(embed_size, num_heads, kdim=key_size, vdim=embed_size, batch_first=True).double()
    with torch.no_grad():
        for parameter in reference.parameters():  # non-zero biases, unlike PyTorch's default init
            parameter.uniform_(-0.5, 0.5)
    ours = MultiHeadAttention(embed_size, key_size, embed_size, num_heads, attention_size=embed_size).double()
    q_bias, k_bias, v_bias = reference.in_proj_bias.chunk(3)
    with torch.no_grad():
        ours.q_proj.weight.copy_(reference.q_proj_weight)
        ours.k_proj.weight.copy_(reference.k_proj_weight)
        ours.v_proj.weight.copy_(reference.v_proj_weight)
        ours.q_proj.bias.copy_(q_bias)
        ours.k_proj.bias.copy_(k_bias)
        ours.v_proj.bias.copy_(v_bias)
        ours.out_proj.load_state_dict(reference.out_proj.state_dict())

    rows = REAL_ROWS  # PyTorch returns NaN for an all-padding row
    mask = MASK[rows]
    query = torch.randn(int(rows.sum()), STEPS, embed_size, dtype=torch.float64)
    keys = torch.randn(int(rows.sum()), SOURCE_LENGTH, key_size, dtype=torch.float64)
    values = torch.randn(int(rows.sum()), SOURCE_LENGTH, embed_size, dtype=torch.float64)

    context, weights = ours(query, keys, values, mask)
    expected_context, expected_weights = reference(
        query, keys, values, key_padding_mask=~mask, need_weights=True, average_attn_weights=True
    )
    assert_float64_close(context, expected_context)
    assert_float64_close(weights, expected_weights, scale=1.0)  # weights: at most 1


# ---------------------------------------------------------------- registry and parameters


EXPECTED_STATE = {
    "additive": {"query_proj.weight", "key_proj.weight", "energy_proj.weight"},
    "concat": {"query_proj.weight", "key_proj.weight", "energy_proj.weight"},
    "dot": set(),
    "scaled_dot": set(),
    "general": {"key_proj.weight"},
    "location": {"position_proj.weight"},
    "multihead": {
        f"{proj}.{kind}" for proj in ("q_proj", "k_proj", "v_proj", "out_proj") for kind in ("weight", "bias")
    },
    "gaussian_kernel": {"width"},
}


def test_every_built_in_score_is_registered():
    assert set(EXPECTED_STATE) <= set(ATTENTION_SCORES)


@pytest.mark.parametrize("name", sorted(EXPECTED_STATE))
def test_registry_builds_the_documented_parameters(name):
    mechanism, *_ = build(name)
    assert isinstance(mechanism, AttentionMechanism)
    assert set(mechanism.state_dict()) == EXPECTED_STATE[name]


def test_concat_is_the_additive_score():
    assert issubclass(ATTENTION_SCORES["concat"], AdditiveAttention)
    assert ATTENTION_SCORES["concat"]._score is AdditiveAttention._score


def test_same_size_required_flags():
    same_size = {name for name in EXPECTED_STATE if ATTENTION_SCORES[name].same_size_required}
    assert same_size == {"dot", "scaled_dot", "gaussian_kernel"}


@pytest.mark.parametrize("learnable", [True, False])
def test_gaussian_kernel_width_is_parameter_only_when_learnable(learnable):
    mechanism, *_ = build("gaussian_kernel", gaussian_kernel_learnable=learnable)
    assert ("width" in dict(mechanism.named_parameters())) is learnable
    assert mechanism.state_dict()["width"].item() == pytest.approx(0.7)


# ---------------------------------------------------------------- bad input


def test_unknown_attention_type_lists_the_allowed_names():
    with pytest.raises(ValueError, match=r"attention_type.*'additive'.*bahdanau"):
        build_attention("bahdanau", make_config(), QUERY_SIZE, QUERY_SIZE)


@pytest.mark.parametrize("name", ["dot", "scaled_dot", "gaussian_kernel"])
def test_same_size_mechanisms_reject_different_sizes(name):
    with pytest.raises(ValueError, match="query_size.*key_size"):
        build_attention(name, make_config(), QUERY_SIZE, OTHER_KEY_SIZE)


def test_multihead_rejects_heads_that_do_not_divide_attention_size():
    with pytest.raises(ValueError, match="num_heads.*attention_size"):
        build_attention("multihead", make_config(num_attention_heads=4), QUERY_SIZE, OTHER_KEY_SIZE)


def test_location_rejects_source_longer_than_max_source_positions():
    mechanism = build_attention("location", make_config(max_source_positions=5), QUERY_SIZE, OTHER_KEY_SIZE)
    _, query, keys, values = build("location")
    with pytest.raises(ValueError, match="max_source_positions"):
        mechanism(query, keys, values, MASK)


def test_gaussian_kernel_rejects_non_positive_width():
    with pytest.raises(ValueError, match="width"):
        build_attention("gaussian_kernel", make_config(gaussian_kernel_width=0.0), QUERY_SIZE, QUERY_SIZE)


def test_non_bool_mask_is_rejected():
    mechanism, query, keys, values = build("dot")
    with pytest.raises(ValueError, match="mask"):
        mechanism(query, keys, values, MASK.long())


def test_query_of_wrong_rank_is_rejected():
    mechanism, query, keys, values = build("dot")
    with pytest.raises(ValueError, match="query"):
        mechanism(query[None], keys, values, MASK)
