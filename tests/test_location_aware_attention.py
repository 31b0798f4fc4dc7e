"""Chorowski et al. (2015)'s location-aware score, ``attention_type="location_aware"``:

    e_tj = β wᵀ tanh(W q_t + V h_j + b + U f_tj),   f_t = F ∗ α_{t−1},   α_0 uniform over the real positions.

The score by hand; the model against ``reference`` (one sentence, one token at a time, the convolution as a sum over
the filter's offsets) in float64, logits and every parameter's gradient; the previous alignment carried through the
cache (stepping = teacher forcing) and reordered by beam search (beam scores = teacher-forced log-probs, one beam =
greedy); the fields refused by name. Smoothing (``location_smoothing``, α_tj = σ(β e_tj) / Σ_k σ(β e_tk)): by hand,
against the reference with every scope it combines with, in the cache, in the ONNX export, and saved with the config.
"""

import json
import math

import pytest
import torch
from torch import nn
from transformers import GenerationMixin

from conftest import (assert_float64_close, assert_logits_and_gradients_equal_the_reference, left_padded,
                      logits_in_cached_chunks, padded_batch, random_labels, softmax_sum_tolerance, tiny_config,
                      tiny_encoder_config, tiny_model)
from test_generation import NUM_BEAMS, beam_generate, decisive_model, float32_search_error, generated, \
    teacher_forced_beam_scores
from hf_bahdanau import BahdanauConfig, BahdanauPointerConfig
from hf_bahdanau.modeling.attention import LocationAwareAttention, masked_softmax
from hf_bahdanau.modeling.axes import token_attention_types
from hf_bahdanau.modeling.state import AttentionState

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
# every decoder above but the monotonic scope's, which takes no softmax to smooth (refused)
SMOOTHED = [dict(**decoder, location_smoothing=True) for decoder in DECODERS
            if decoder.get("attention_scope") != "monotonic"]
SMOOTHED.insert(3, dict(decoder_style="luong", attention_scope="local-p", local_window=2, location_smoothing=True))


# 1. the score --------------------------------------------------------------------------------------------------


def scores_by_hand(smoothing: bool = False, padding: int = 0) -> torch.Tensor:
    """One query, three positions, k = 1 filter of width r = 3: F = [1, 2, 3], W = 0.5, V = 2, b = −1, U = 0.5,
    w = 1.5, β = 2; q = 1, h = [0.1, 0.2, 0.3], α_{t−1} = [0.2, 0.8, 0]; ``padding`` more positions h = 5, α = 0.
    The scores [1, 3 + padding] in float64."""
    attention = LocationAwareAttention(1, 1, 1, filters=1, kernel_size=3, sharpening=2.0, smoothing=smoothing).double()
    with torch.no_grad():
        attention.query_proj.weight.fill_(0.5)
        attention.key_proj.weight.fill_(2.0)
        attention.key_proj.bias.fill_(-1.0)
        attention.location_conv.weight.copy_(torch.tensor([[[1.0, 2.0, 3.0]]]))
        attention.location_proj.weight.fill_(0.5)
        attention.energy_proj.weight.fill_(1.5)
    keys = torch.tensor([[[0.1], [0.2], [0.3]] + [[5.0]] * padding], dtype=torch.float64)
    previous = torch.tensor([[0.2, 0.8, 0.0] + [0.0] * padding], dtype=torch.float64)
    return attention.score(torch.ones(1, 1, dtype=torch.float64),
                           attention.step_keys(attention.project_keys(keys), previous))


def test_the_score_by_hand():
    """``scores_by_hand``: f = [2·0.2 + 3·0.8, 1·0.2 + 2·0.8, 1·0.8] = [2.8, 1.8, 0.8], and W q + V h_j + b + U f_j
    = [1.1, 0.8, 0.5], so e = 2 · 1.5 · tanh([1.1, 0.8, 0.5])."""
    expected = torch.tensor([[3 * math.tanh(1.1), 3 * math.tanh(0.8), 3 * math.tanh(0.5)]], dtype=torch.float64)
    assert_float64_close(scores_by_hand(), expected)


def test_the_first_alignment_is_uniform_over_the_real_positions():
    attention = LocationAwareAttention(4, 4, 3, filters=2, kernel_size=3, sharpening=1.0)
    mask = torch.tensor([[True, True, True, False], [True] * 4, [False] * 4])
    expected = torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0], [0.25] * 4, [0.0] * 4])
    assert torch.equal(attention.initial_alignment(mask, torch.float32), expected)
    model = tiny_model(**LOCATION)
    input_ids, mask = padded_batch()
    encoded = model.get_encoder()(input_ids=input_ids, attention_mask=mask)
    decoder = model.model.decoder
    state = decoder.initial_attention_state(decoder.prepare_encoded_source(encoded, mask))
    assert torch.equal(state.previous, mask / mask.sum(-1, keepdim=True))


# 2. the model equals the equations -----------------------------------------------------------------------------


@pytest.mark.parametrize("decoder", DECODERS + SMOOTHED, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_logits_and_gradients_equal_the_reference(decoder):
    """Logits on a right- and a left-padded batch, and the gradient of every parameter (the filters F and U
    included), against ``reference.logits`` in float64."""
    model = tiny_model(**LOCATION, **decoder).double()
    input_ids, mask = padded_batch()
    fast = assert_logits_and_gradients_equal_the_reference(model, input_ids, mask, random_labels(3, 6))
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


@pytest.mark.parametrize("decoder", DECODERS[:3] + SMOOTHED[:1],
                         ids=lambda d: "-".join(str(v) for v in d.values()))
def test_cache_stepping_equals_teacher_forcing_and_carries_the_last_alignment(decoder):
    model = tiny_model(**LOCATION, **decoder).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 5)
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids,
                     output_attentions=True, use_cache=False)
    stepped, cache = logits_in_cached_chunks(model, input_ids, mask, decoder_input_ids)
    assert_float64_close(stepped, full.logits)
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
        tiny_encoder_config(token_attention_type="location_aware")
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


# 5. smoothing: α_tj = σ(β e_tj) / Σ_k σ(β e_tk) ----------------------------------------------------------------


def test_smoothing_by_hand_is_sigmoids_over_their_sum_and_zero_on_padding():
    """``scores_by_hand`` with a padded fourth position, normalised as the global scope does (``masked_softmax``):
    α_j = σ(β e_j) / Σ_{k<3} σ(β e_k) with β e = 3 tanh([1.1, 0.8, 0.5]) ≈ [2.40, 1.99, 1.39], so α ≈ [0.355, 0.335,
    0.310] where the softmax gives [0.495, 0.329, 0.176] (smoothing flattens), and exactly 0 on the padding."""
    energies = [3 * math.tanh(1.1), 3 * math.tanh(0.8), 3 * math.tanh(0.5)]
    sigmoids = [1 / (1 + math.exp(-e)) for e in energies]
    expected = torch.tensor([[*(s / sum(sigmoids) for s in sigmoids), 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, False]])
    weights = masked_softmax(scores_by_hand(smoothing=True, padding=1), mask)
    assert_float64_close(weights, expected, scale=1.0)
    assert weights[0, 3] == 0.0
    softmax = masked_softmax(scores_by_hand(padding=1), mask)
    assert weights.max() < softmax.max() - 0.1


def test_smoothing_stays_finite_where_the_sigmoids_underflow():
    """β e_j = −300 tanh(h_j), h = [0.5, 0.6, 0.7]: about −139, −161, −181, where σ rounds to 0 in float32 and σ / Σσ
    would be 0 / 0. The weights equal the float64 ratio; the scores carry a float32 rounding of about |β e| ε per
    operation, and α_j = exp(differences of scores), so a relative tolerance of 8 · 300 ε."""
    attention = LocationAwareAttention(1, 1, 1, filters=1, kernel_size=1, sharpening=1.0, smoothing=True)
    with torch.no_grad():
        attention.query_proj.weight.zero_()
        attention.key_proj.weight.fill_(1.0)
        attention.key_proj.bias.zero_()
        attention.location_proj.weight.zero_()
        attention.energy_proj.weight.fill_(-300.0)
    keys = torch.tensor([[[0.5], [0.6], [0.7]]])
    energies = -300 * torch.tanh(keys[0, :, 0].double())
    assert (torch.sigmoid(energies.float()) == 0).all()  # the premise: float32 σ underflows
    expected = torch.sigmoid(energies) / torch.sigmoid(energies).sum()
    scores = attention.score(torch.zeros(1, 1), attention.step_keys(attention.project_keys(keys), torch.zeros(1, 3)))
    weights = masked_softmax(scores, torch.ones(1, 3, dtype=torch.bool))
    torch.testing.assert_close(weights[0].double(), expected, rtol=8 * 300 * torch.finfo(torch.float32).eps, atol=0)


def test_smoothed_weights_of_the_model_are_zero_on_padding_and_sum_to_one():
    """Global scope, right- and left-padded: padding exactly 0, each step's weights sum to 1 within the rounding of
    a sum of S float32 terms (``softmax_sum_tolerance``)."""
    model = tiny_model(**LOCATION, location_smoothing=True)
    input_ids, mask = padded_batch()
    for inputs, inputs_mask in ((input_ids, mask), left_padded(input_ids, mask)):
        with torch.no_grad():
            weights = model(input_ids=inputs, attention_mask=inputs_mask, decoder_input_ids=random_labels(3, 4),
                            output_attentions=True).cross_attentions[0][:, 0]  # [B, T, S]
        padding = ~inputs_mask.bool()[:, None].expand_as(weights)
        assert (weights[padding] == 0).all()
        sums = weights.sum(-1).double()
        assert ((sums - 1).abs() <= softmax_sum_tolerance(mask.shape[1])).all(), sums


@pytest.mark.parametrize("overrides, message", [
    (dict(location_smoothing=True),
     r"`location_smoothing=True`: only `attention_type='location_aware'` reads it, but `attention_type` is "
     r"'additive'"),
    (dict(**LOCATION, location_smoothing=True, attention_scope="monotonic"),
     r"`location_smoothing=True` puts the logistic sigmoid .* but `attention_scope='monotonic'` takes no softmax"),
])
def test_smoothing_where_there_is_no_softmax_to_smooth_is_refused_by_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**overrides)


def test_a_pointer_network_refuses_smoothing():
    with pytest.raises(ValueError, match=r"`location_smoothing=True`: only `attention_type='location_aware'`"):
        BahdanauPointerConfig(input_feature_size=2, location_smoothing=True)


def test_smoothing_is_saved_and_a_config_saved_before_it_loads_without_it(tmp_path):
    """save → load keeps the field and the loaded model's logits; a config.json without the key (saved before the
    field) loads with the default, False."""
    model = tiny_model(**LOCATION, location_smoothing=True)
    model.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path).eval()
    assert loaded.config.location_smoothing is True and loaded.model.decoder.attention.smoothing is True
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 4)
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits,
                           model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits)
    saved = json.loads((tmp_path / "config.json").read_text())
    del saved["location_smoothing"]
    (tmp_path / "config.json").write_text(json.dumps(saved))
    assert BahdanauConfig.from_pretrained(tmp_path).location_smoothing is False


def test_the_onnx_export_smooths_as_pytorch(tmp_path):
    """The exported graphs decode to generate()'s tokens (greedy and beam search) with its smoothed alignments
    (float32 weights ≤ 1 through two runtimes' kernels: 1e-5, as ``tests/test_onnx.py``), which differ from the
    softmax's of the same weights."""
    pytest.importorskip("onnx", reason="the onnx extra")
    pytest.importorskip("onnxruntime", reason="the onnx extra")
    from hf_bahdanau.onnx.export import export_onnx
    from hf_bahdanau.onnx.runtime import OnnxSeq2Seq

    model = decisive_model(None, **LOCATION, location_smoothing=True)
    runtime = OnnxSeq2Seq(export_onnx(model, tmp_path), threads=1)
    input_ids, mask = padded_batch((11, 6, 3), seed=8)

    def generated(**options):
        with torch.no_grad():
            return model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=6, do_sample=False,
                                  output_attentions=True, return_dict_in_generate=True, **options)

    for num_beams in (1, 3):
        output = runtime.generate(input_ids.numpy(), mask.numpy(), max_new_tokens=6, num_beams=num_beams)
        assert torch.equal(torch.as_tensor(output.sequences), generated(num_beams=num_beams).sequences)
    one = runtime.generate(input_ids[:1].numpy(), mask[:1].numpy(), max_new_tokens=6, output_alignments=True)
    expected = generated()  # the first source's weights at each step: [T, S]
    smoothed = torch.stack([step[0][0, 0, 0] for step in expected.cross_attentions])
    torch.testing.assert_close(torch.as_tensor(one.alignments[0]), smoothed, rtol=0, atol=1e-5)
    model.model.decoder.attention.smoothing = False
    softmax = torch.stack([step[0][0, 0, 0] for step in generated().cross_attentions])
    assert (softmax - smoothed).abs().max() > 1e-2
