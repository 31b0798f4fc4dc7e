"""Chorowski et al. (2015)'s location-aware score, ``attention_type="location_aware"``:

    e_tj = β wᵀ tanh(W q_t + V h_j + b + U f_tj),   f_t = F ∗ α_{t−1},   α_0 uniform over the real positions.

The score by hand; the model against ``reference`` (one sentence, one token at a time, the convolution as a sum over
the filter's offsets) in float64, logits and every parameter's gradient; the previous alignment carried through the
cache (stepping = teacher forcing) and reordered by beam search (beam scores = teacher-forced log-probs, one beam =
greedy); the fields refused by name.
"""

import math

import pytest
import torch
from torch import nn
from transformers import GenerationMixin

from conftest import (VOCAB, assert_float64_close, assert_float64_gradients_close, padded_batch, random_labels,
                      tiny_config, tiny_model)
from test_generation import NUM_BEAMS, beam_generate, decisive_model, float32_search_error, generated, \
    teacher_forced_beam_scores
from hf_bahdanau import BahdanauPointerConfig, reference
from hf_bahdanau.modeling.attention import LocationAwareAttention
from hf_bahdanau.modeling.axes import token_attention_types
from hf_bahdanau.modeling.state import AttentionState
from hf_bahdanau.modeling.transformers_private import cache_of

LOCATION = dict(attention_type="location_aware", location_filters=3, location_kernel_size=5, location_sharpening=2.0)

DECODERS = [
    dict(decoder_style="bahdanau"),
    dict(decoder_style="luong", input_feeding=False),
    dict(decoder_style="luong", input_feeding=True, rnn_type="lstm"),
    dict(decoder_style="bahdanau", attention_scope="local-m", local_window=2),
    dict(decoder_style="luong", attention_scope="monotonic", monotonic_bias_init=0.0),
    dict(decoder_style="bahdanau", attention_mode="hard"),
    dict(decoder_style="bahdanau", use_coverage=True),
]


def left_padded(input_ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The same sentences with their padding moved to the left."""
    shifts = (mask.shape[1] - mask.sum(-1)).tolist()
    return (torch.stack([row.roll(shift) for row, shift in zip(input_ids, shifts)]),
            torch.stack([row.roll(shift) for row, shift in zip(mask, shifts)]))


# 1. the score --------------------------------------------------------------------------------------------------


def test_the_score_by_hand():
    """One query, three positions, k = 1 filter of width r = 3: F = [1, 2, 3], W = 0.5, V = 2, b = −1, U = 0.5,
    w = 1.5, β = 2; q = 1, h = [0.1, 0.2, 0.3], α_{t−1} = [0.2, 0.8, 0]. Then f = [2·0.2 + 3·0.8, 1·0.2 + 2·0.8,
    1·0.8] = [2.8, 1.8, 0.8], and W q + V h_j + b + U f_j = [1.1, 0.8, 0.5], so e = 2 · 1.5 · tanh([1.1, 0.8, 0.5])."""
    attention = LocationAwareAttention(1, 1, 1, filters=1, kernel_size=3, sharpening=2.0).double()
    with torch.no_grad():
        attention.query_proj.weight.fill_(0.5)
        attention.key_proj.weight.fill_(2.0)
        attention.key_proj.bias.fill_(-1.0)
        attention.location_conv.weight.copy_(torch.tensor([[[1.0, 2.0, 3.0]]]))
        attention.location_proj.weight.fill_(0.5)
        attention.energy_proj.weight.fill_(1.5)
    keys = torch.tensor([[[0.1], [0.2], [0.3]]], dtype=torch.float64)
    previous = torch.tensor([[0.2, 0.8, 0.0]], dtype=torch.float64)
    scores = attention.score(torch.ones(1, 1, dtype=torch.float64),
                             attention.step_keys(attention.project_keys(keys), previous))
    expected = torch.tensor([[3 * math.tanh(1.1), 3 * math.tanh(0.8), 3 * math.tanh(0.5)]], dtype=torch.float64)
    assert_float64_close(scores, expected)


def test_the_first_alignment_is_uniform_over_the_real_positions():
    attention = LocationAwareAttention(4, 4, 3, filters=2, kernel_size=3, sharpening=1.0)
    mask = torch.tensor([[True, True, True, False], [True] * 4, [False] * 4])
    expected = torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0], [0.25] * 4, [0.0] * 4])
    assert torch.equal(attention.initial_alignment(mask, torch.float32), expected)
    model = tiny_model(**LOCATION)
    input_ids, mask = padded_batch()
    encoded = model.get_encoder()(input_ids=input_ids, attention_mask=mask)
    state = model.model.decoder.initial_attention_state(model.model.decoder.prepare_memory(encoded, mask))
    assert torch.equal(state.previous, mask / mask.sum(-1, keepdim=True))


# 2. the model equals the equations -----------------------------------------------------------------------------


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_logits_and_gradients_equal_the_reference(decoder):
    """Logits on a right- and a left-padded batch, and the gradient of every parameter (the filters F and U
    included), against ``reference.logits`` in float64."""
    model = tiny_model(**LOCATION, **decoder).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 6)
    with torch.no_grad():
        expected = reference.logits(model, input_ids, mask, decoder_input_ids)
        for inputs, inputs_mask in ((input_ids, mask), left_padded(input_ids, mask)):
            assert_float64_close(model(input_ids=inputs, attention_mask=inputs_mask,
                                       decoder_input_ids=decoder_input_ids).logits, expected)

    probe = torch.randn(3, 6, VOCAB, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

    def gradients(logits: torch.Tensor) -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        (logits * probe).sum().backward()
        return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

    fast = gradients(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits)
    assert_float64_gradients_close(fast, gradients(reference.logits(model, input_ids, mask, decoder_input_ids)))
    one_hot = decoder.get("attention_scope") == "monotonic" or decoder.get("attention_mode") == "hard"
    if not one_hot:  # the location term is trained (eval's hard and monotonic weights are one-hot: no gradient)
        for name in ("location_conv.weight", "location_proj.weight", "key_proj.bias"):
            assert fast[f"model.decoder.attention.{name}"].abs().sum() > 0, name


def test_the_previous_alignment_changes_the_weights():
    """Without the location term (U = 0) the weights are another model's: the term is read at every step."""
    model = tiny_model(**LOCATION).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 4)
    with torch.no_grad():
        weights = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids,
                        output_attentions=True).cross_attentions[0]
        model.model.decoder.attention.location_proj.weight.zero_()
        without = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids,
                        output_attentions=True).cross_attentions[0]
    assert (weights - without).abs().max() > 1e-3


# 3. the cache carries α_{t−1} ------------------------------------------------------------------------------------


@pytest.mark.parametrize("decoder", DECODERS[:3], ids=lambda d: "-".join(str(v) for v in d.values()))
def test_cache_stepping_equals_teacher_forcing_and_carries_the_last_alignment(decoder):
    model = tiny_model(**LOCATION, **decoder).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 5)
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids,
                     output_attentions=True, use_cache=False)
        cache, logits = None, []
        for chunk in (slice(0, 2), slice(2, 3), slice(3, 5)):
            step = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids[:, chunk],
                         cache=cache, use_cache=True)
            cache = cache_of(step)
            logits.append(step.logits)
    assert_float64_close(torch.cat(logits, dim=1), full.logits)
    assert_float64_close(cache.state.attention.previous, full.cross_attentions[0][:, 0, -1], scale=1.0)


def test_beam_search_reorders_the_previous_alignment():
    """Beam scores equal the teacher-forced log-probs of the returned beams (a stale α_{t−1} in a reordered beam
    would score another hypothesis), and one beam equals greedy."""
    model = decisive_model(None, **LOCATION).double()
    input_ids, mask = padded_batch((7, 5, 2, 6))
    out = beam_generate(model, input_ids, mask)
    expected, _ = teacher_forced_beam_scores(model, input_ids, mask, out.sequences, 1.0)
    error = float32_search_error(model, input_ids, mask, out.sequences, 1.0)
    assert ((out.sequences_scores.double() - expected).abs() <= error).all()
    assert out.sequences.shape[0] == 4 * NUM_BEAMS
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=6)
        one_beam = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=6, num_beams=1,
                                  custom_generate=GenerationMixin._beam_search)
    assert [generated(row) for row in one_beam] == [generated(row) for row in greedy]


def test_without_reordering_the_beam_scores_differ(monkeypatch):
    """The check above sees a previous alignment that is not reordered with its beam."""
    model = decisive_model(None, **LOCATION).double()
    input_ids, mask = padded_batch((7, 5, 2, 6))
    real_index_select = AttentionState.index_select

    def keep_previous(self, index):  # everything reordered but α_{t−1} (when the rows keep their number)
        moved = real_index_select(self, index)
        return moved._replace(previous=self.previous) if self.previous.shape == moved.previous.shape else moved

    monkeypatch.setattr(AttentionState, "index_select", keep_previous)
    out = beam_generate(model, input_ids, mask)
    monkeypatch.undo()
    expected, _ = teacher_forced_beam_scores(model, input_ids, mask, out.sequences, 1.0)
    assert (out.sequences_scores.double() - expected).abs().max() > 1e-3


# 4. bad values -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, message", [
    (dict(location_filters=0), r"`location_filters` must be a positive integer, got 0"),
    (dict(location_kernel_size=4), r"`location_kernel_size` must be odd .* got 4"),
    (dict(location_kernel_size=-3), r"`location_kernel_size` must be a positive integer, got -3"),
    (dict(location_sharpening=0.0), r"`location_sharpening` must be > 0, got 0.0"),
    (dict(location_sharpening=float("nan")), r"`location_sharpening` must be a finite number > 0, got nan"),
])
def test_bad_location_fields_are_refused_by_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**{**LOCATION, **overrides})


def test_location_fields_without_the_location_aware_score_are_refused():
    with pytest.raises(ValueError, match=r"`location_kernel_size=3`: only `attention_type='location_aware'` reads "
                                         r"it, but `attention_type` is 'additive'"):
        tiny_config(location_kernel_size=3)


def test_the_score_refuses_bad_sizes_by_name():
    with pytest.raises(ValueError, match=r"filters \(location_filters\) must be a positive integer, got 0"):
        LocationAwareAttention(4, 4, 3, filters=0, kernel_size=3, sharpening=1.0)
    with pytest.raises(ValueError, match=r"kernel_size \(location_kernel_size\) must be an odd positive integer.*"
                                         r"got 2"):
        LocationAwareAttention(4, 4, 3, filters=1, kernel_size=2, sharpening=1.0)
    with pytest.raises(ValueError, match=r"sharpening \(location_sharpening\) must be > 0, got -1"):
        LocationAwareAttention(4, 4, 3, filters=1, kernel_size=3, sharpening=-1)
    with pytest.raises(ValueError, match=r"reads the previous step's alignment α_\{t−1\}, got None"):
        LocationAwareAttention(4, 4, 3, filters=1, kernel_size=3, sharpening=1.0).step_keys(torch.zeros(1, 2, 3), None)


def test_heads_that_score_without_a_previous_alignment_refuse_it():
    """The tagger's tokens attend all at once and a pointer network scores all its steps at once: neither has an
    α_{t−1} to convolve."""
    assert "location_aware" not in token_attention_types()
    with pytest.raises(ValueError, match=r"`token_attention_type` must be one of .*got 'location_aware'"):
        tiny_config(token_attention_type="location_aware")
    with pytest.raises(ValueError, match=r"pointer network .* `attention_type='location_aware'` reads each step's "
                                         r"previous alignment"):
        BahdanauPointerConfig(input_feature_size=2, attention_type="location_aware")


def test_the_parameters_are_the_documented_ones():
    attention = tiny_model(**LOCATION).model.decoder.attention
    shapes = {name: tuple(parameter.shape) for name, parameter in attention.named_parameters()}
    # A = attention_size 10, k = 3 filters of width r = 5, queries s [16], annotations h [16]
    assert shapes == {"query_proj.weight": (10, 16), "key_proj.weight": (10, 16), "key_proj.bias": (10,),
                      "energy_proj.weight": (1, 10), "location_conv.weight": (3, 1, 5),
                      "location_proj.weight": (10, 3)}
    assert isinstance(attention.location_conv, nn.Conv1d) and attention.location_conv.padding == (2,)
