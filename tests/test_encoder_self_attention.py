"""The encoder's self-attention, ``encoder_self_attention`` (``modeling/self_attention.py``):

    e_jk = score(h_j, h_k),  α_jk = softmax_k(e_jk) over the real tokens,  c_j = Σ_k α_jk h_k,
    h'_j = tanh(W_s [h_j; c_j]).

The layer by hand; the layer, the encoder and the seq2seq logits (and every parameter's gradient) against
``reference`` (one sentence, one annotation at a time) in float64 for every score it accepts; padding (exactly 0
weight, exactly 0 annotations, left padding = right padding bit for bit); cache stepping = teacher forcing;
generate() returning ``encoder_attentions``; the tagger, the flat and HAN classifiers and the pointer network;
save/load; the model card's words; bad values refused by name.
"""

import math
import re

import pytest
import torch

from conftest import (assert_float64_close, assert_logits_and_gradients_equal_the_reference, left_padded,
                      logits_in_cached_chunks, padded_batch, random_labels, tiny_config, tiny_encoder_config,
                      tiny_model)
from hf_bahdanau import (BahdanauForConditionalGeneration, BahdanauForPointerNetwork, BahdanauForSequenceClassification,
                         BahdanauForTokenClassification, BahdanauPointerConfig, reference)
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.modeling.axes import ATTENTION_SCORES, all_at_once_scores
from hf_bahdanau.modeling.self_attention import EncoderSelfAttention
from test_sequence_classification import SEP, documents

pytestmark = pytest.mark.usefixtures("one_thread")

SCORES = all_at_once_scores()
EXTRA = dict(num_attention_heads=2)  # multi-head: two heads of attention_size 10


def float64_model(score: str = "general", **overrides) -> BahdanauForConditionalGeneration:
    return tiny_model(encoder_self_attention=score, **{**EXTRA, **overrides}).double()


def test_the_scores_are_those_that_read_no_previous_alignment():
    assert SCORES == [name for name in ATTENTION_SCORES.declared if name != "location_aware"]
    assert "location_aware" in ATTENTION_SCORES.declared


# 1. the layer --------------------------------------------------------------------------------------------------


def test_the_layer_by_hand():
    """D = 1, dot score, W_s = [0.5, -1]; one sentence h = [1, 2] and one padded position. Row 0: e = [1, 2],
    α = [1, e] / (1 + e), c_0 = (1 + 2e) / (1 + e); row 1: e = [2, 4], α = [1, e²] / (1 + e²),
    c_1 = (1 + 2e²) / (1 + e²); h'_j = tanh(0.5 h_j − c_j); the padded row and column are 0."""
    config = tiny_config(encoder_hidden_size=1, bidirectional=False, encoder_self_attention="dot")
    layer = EncoderSelfAttention(config).double()
    with torch.no_grad():
        layer.output.weight.copy_(torch.tensor([[0.5, -1.0]]))
    annotations = torch.tensor([[[1.0], [2.0], [0.0]]], dtype=torch.float64)
    attended, weights = layer(annotations, torch.tensor([[True, True, False]]))
    e = math.e
    c = [(1 + 2 * e) / (1 + e), (1 + 2 * e**2) / (1 + e**2)]
    expected_weights = torch.tensor([[[1 / (1 + e), e / (1 + e), 0.0], [1 / (1 + e**2), e**2 / (1 + e**2), 0.0],
                                      [0.0, 0.0, 0.0]]], dtype=torch.float64)
    expected = torch.tensor([[[math.tanh(0.5 - c[0])], [math.tanh(1.0 - c[1])], [0.0]]], dtype=torch.float64)
    assert_float64_close(weights, expected_weights, scale=1.0)
    assert_float64_close(attended, expected, scale=1.0)


@pytest.mark.parametrize("score", SCORES)
def test_the_layer_equals_the_reference_and_leaves_padding_at_zero(score):
    model = float64_model(score)
    layer = model.model.encoder.self_attention
    generator = torch.Generator().manual_seed(3)
    lengths = (6, 4, 1)
    mask = torch.arange(6)[None] < torch.tensor(lengths)[:, None]
    annotations = torch.randn(3, 6, 16, generator=generator, dtype=torch.float64) * mask[..., None]
    with torch.no_grad():
        attended, weights = layer(annotations, mask)
        for row, length in enumerate(lengths):
            expected, expected_weights = reference.encoder_self_attention(layer, annotations[row, :length])
            assert_float64_close(attended[row, :length], expected)
            assert_float64_close(weights[row, :length, :length], expected_weights, scale=1.0)
    padding = ~mask
    assert (attended[padding] == 0).all()
    assert (weights[padding] == 0).all() and (weights.transpose(1, 2)[padding] == 0).all()  # rows and columns
    assert_float64_close(weights.sum(-1), mask.double(), scale=1.0)


# 2. the encoder and the seq2seq model ----------------------------------------------------------------------------


ENCODERS = [dict(), dict(rnn_type="lstm", encoder_layers=2, reverse_source=True)]


@pytest.mark.parametrize("encoder", ENCODERS, ids=["gru", "lstm-2-reversed"])
def test_the_encoder_equals_the_reference_and_left_padding_equals_right_padding(encoder):
    """Annotations and final states against ``reference.encode``; the final states are the RNN's (the bridges read
    them unchanged); a left-padded batch gives the right-padded batch's numbers, moved."""
    model = float64_model("additive", **encoder)
    input_ids, mask = padded_batch()
    encoder_module = model.get_encoder()
    with torch.no_grad():
        right = encoder_module(input_ids=input_ids, attention_mask=mask, output_attentions=True)
        expected = reference.encode(model, input_ids, mask)
        without = float64_model("additive", **encoder)
        without.model.encoder.self_attention = None
        plain = without.get_encoder()(input_ids=input_ids, attention_mask=mask)
        left_ids, left_mask = left_padded(input_ids, mask)
        left = encoder_module(input_ids=left_ids, attention_mask=left_mask, output_attentions=True)
    assert_float64_close(right.last_hidden_state, expected.last_hidden_state)
    assert_float64_close(right.final_hidden_state, expected.final_hidden_state)
    assert torch.equal(right.final_hidden_state, plain.final_hidden_state)
    assert not torch.allclose(right.last_hidden_state, plain.last_hidden_state)
    assert (right.last_hidden_state[mask == 0] == 0).all()
    shifts = (mask.shape[1] - mask.sum(-1)).tolist()
    for row, shift in enumerate(shifts):
        assert torch.equal(left.last_hidden_state[row].roll(-shift, 0), right.last_hidden_state[row])
        assert torch.equal(left.attentions[0][row, 0].roll((-shift, -shift), (0, 1)), right.attentions[0][row, 0])


@pytest.mark.parametrize("score", ["additive", "location", "multihead"])
def test_logits_and_gradients_equal_the_reference(score):
    """Every parameter's gradient, the RNN's and W_s's included, against the reference's: the gradient reaches the
    RNN through the new layer."""
    model = float64_model(score)
    input_ids, mask = padded_batch()
    fast = assert_logits_and_gradients_equal_the_reference(model, input_ids, mask, random_labels(3, 5))
    for name in ("model.encoder.self_attention.output.weight", "model.encoder.rnn.layers.0.weight_ih_l0",
                 "model.encoder.embed_tokens.weight"):
        assert fast[name].abs().sum() > 0, name


@pytest.mark.parametrize("overrides", [dict(), dict(decoder_style="luong", input_feeding=True, bridge="mean")],
                         ids=["bahdanau", "luong-input-feeding-mean-bridge"])
def test_cache_stepping_equals_teacher_forcing(overrides):
    model = float64_model("general", **overrides)
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 5)
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids, use_cache=False)
    assert_float64_close(logits_in_cached_chunks(model, input_ids, mask, decoder_input_ids)[0], full.logits)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_generate_returns_the_encoder_attentions(num_beams):
    model = float64_model("scaled_dot")
    input_ids, mask = padded_batch()
    with torch.no_grad():
        forward = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=input_ids[:, :2],
                        output_attentions=True)
        out = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=4, num_beams=num_beams,
                             output_attentions=True, return_dict_in_generate=True)
        plain = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=input_ids[:, :2])
    (weights,) = forward.encoder_attentions
    assert weights.shape == (3, 1, 7, 7)
    assert torch.equal(out.encoder_attentions[0], weights)
    assert plain.encoder_attentions is None
    assert_float64_close(weights.sum(-1)[:, 0], mask.double(), scale=1.0)
    assert out.sequences.shape[0] == 3 and len(out.cross_attentions) == out.sequences.shape[1] - 1


@pytest.mark.parametrize("score", ["general", "location", "multihead"])
def test_the_onnx_export_decodes_like_generate(score, tmp_path):
    """The encoder graph traces the layer: ONNX Runtime returns generate()'s tokens, greedy and with beam search (on
    right padding, the only padding the runtime reads)."""
    pytest.importorskip("onnxruntime", reason="the onnx extra: pip install -e \".[onnx]\"")
    from test_onnx import assert_onnx_decodes_like_generate
    from test_onnx_search import decisive_model

    assert_onnx_decodes_like_generate(decisive_model("rnnsearch", seed=3, eos_bias=1.0, encoder_self_attention=score,
                                                     num_attention_heads=2), tmp_path)


# 3. the other heads ----------------------------------------------------------------------------------------------


def test_the_tagger_returns_the_encoder_attentions_beside_its_own():
    torch.manual_seed(0)
    model = BahdanauForTokenClassification(tiny_encoder_config(num_labels=3, encoder_self_attention="dot",
                                                               hidden_size=16)).double().eval()
    input_ids, mask = padded_batch()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, output_attentions=True)
    (weights,) = out.encoder_attentions
    assert weights.shape == (3, 1, 7, 7) and out.attentions[0].shape == (3, 1, 7, 7)
    assert not torch.equal(weights, out.attentions[0])  # the tagger's own attention stays in `attentions`
    encoder = model.model.encoder
    for row, length in enumerate(mask.sum(-1).tolist()):  # the RNN over the sentence alone, then the reference
        annotations, _ = encoder.rnn.layers[0](encoder.embed_tokens(input_ids[row:row + 1, :length]))
        _, expected = reference.encoder_self_attention(encoder.self_attention, annotations[0])
        assert_float64_close(weights[row, 0, :length, :length], expected, scale=1.0)
        assert (weights[row, 0, length:] == 0).all() and (weights[row, 0, :, length:] == 0).all()
    assert model(input_ids=input_ids, attention_mask=mask).encoder_attentions is None


@pytest.mark.parametrize("hierarchical", [False, True], ids=["flat", "han"])
def test_the_classifier_equals_the_reference_and_returns_the_encoder_attentions(hierarchical):
    torch.manual_seed(0)
    config = tiny_encoder_config(num_labels=3, hierarchical=hierarchical, sentence_separator_token_id=SEP,
                                 encoder_self_attention="general")
    model = BahdanauForSequenceClassification(config).double().eval()
    input_ids, mask = documents() if hierarchical else padded_batch()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, output_attentions=True)
    (weights,) = out.encoder_attentions
    if hierarchical:
        sentences, sentence_mask = model.split_sentences(input_ids, mask)
        assert weights.shape == (*sentences.shape[:2], 1, sentences.shape[2], sentences.shape[2])
        texts = [[words[keep.bool()] for words, keep in zip(row, row_mask) if keep.any()]
                 for row, row_mask in zip(sentences, sentence_mask)]
        empty = ~sentence_mask.bool().any(-1)
        assert (weights[empty] == 0).all()
    else:
        assert weights.shape == (3, 1, 7, 7)
        texts = [[ids[keep.bool()]] for ids, keep in zip(input_ids, mask)]
    for row, text in enumerate(texts):
        with torch.no_grad():
            logits, _, _ = reference.sequence_classifier(model, text)
        assert_float64_close(out.logits[row], logits)


def test_the_pointer_network_self_attends_over_its_inputs():
    torch.manual_seed(0)
    config = BahdanauPointerConfig(input_feature_size=2, embedding_size=8, hidden_size=12, attention_size=6,
                                   encoder_self_attention="dot")
    model = BahdanauForPointerNetwork(config).double().eval()
    features = torch.rand(2, 4, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    decoder_input_ids = torch.tensor([[0, 2, 1], [0, 1, 3]])
    with torch.no_grad():
        out = model(input_features=features, attention_mask=mask, decoder_input_ids=decoder_input_ids,
                    output_attentions=True)
        expected = reference.pointer_network(model, mask, decoder_input_ids, input_features=features)
        generated = model.generate(features, attention_mask=mask, output_attentions=True,
                                   return_dict_in_generate=True)
    assert_float64_close(out.logits, expected)
    assert out.encoder_attentions[0].shape == (2, 1, 4, 4)
    assert torch.equal(generated.encoder_attentions[0], out.encoder_attentions[0])


# 4. saving, the card, bad values -----------------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path):
    model = float64_model("multihead")
    model.save_pretrained(tmp_path)
    loaded = BahdanauForConditionalGeneration.from_pretrained(tmp_path, dtype=torch.float64).eval()
    assert loaded.config.encoder_self_attention == "multihead"
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 4)
    with torch.no_grad():  # the same weights and inputs through the same kernels: the same bits
        assert torch.equal(loaded(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits,
                           model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits)


def test_the_model_card_names_the_self_attention():
    config = tiny_config(encoder_self_attention="dot").to_dict()
    encoder = describe(config).lines[0]
    assert f"self-attention over the annotations: each h_j attends over its sentence with the " \
           f"{ATTENTION_SCORES.describe('dot')}" in encoder
    assert "h'_j = tanh(W_s [h_j; c_j])" in encoder
    config["hierarchical"] = True
    assert "(the word level)" in describe(config, task="text-classification").lines[0]
    del config["encoder_self_attention"]  # a config saved before the field: off
    assert "self-attention" not in describe(config).lines[0]


@pytest.mark.parametrize("value", ["location_aware", "nope", "none"])
def test_bad_values_are_refused_by_name(value):
    allowed = ", ".join(["None", *(repr(name) for name in SCORES)])
    with pytest.raises(ValueError, match=re.escape(f"`encoder_self_attention` must be one of [{allowed}], got "
                                                   f"{value!r}.")):
        tiny_config(encoder_self_attention=value)


def test_multihead_needs_a_divisible_attention_size():
    with pytest.raises(ValueError, match=r"`attention_size` \(10\) must be divisible by `num_attention_heads` \(3\)"):
        tiny_config(encoder_self_attention="multihead", num_attention_heads=3)
