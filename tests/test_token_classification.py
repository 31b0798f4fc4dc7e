"""The tagger: the context-vector energy against hand-computed values, shapes and masks for every attention, padding
invariance, return_dict and its config's fields, loading a seq2seq checkpoint's encoder. What every head does
(gradients, the -100 loss, save/load, remote code) is tests/contract/'s."""

import json
import logging
import math

import pytest
import torch
from torch.testing import assert_close
from transformers import AutoConfig, AutoModelForTokenClassification
from transformers.modeling_outputs import TokenClassifierOutput

from conftest import (
    VOCAB, assert_float64_close, padded_batch, softmax_sum_tolerance, tiny_config, tiny_encoder_config, tiny_model,
)
from hf_bahdanau import BahdanauEncoderConfig, BahdanauForTokenClassification
from hf_bahdanau.modeling.configuration_bahdanau import CUSTOM_PIPELINES, TAGGER_PIPELINES
from hf_bahdanau.modeling.modeling_token_classification import BahdanauTokenClassifierOutput
from hf_bahdanau.modeling.token_attention import ContextVectorTokenAttention, QueryTokenAttention, token_attention_types
from hf_bahdanau.modeling.pooling import ContextVectorAttention

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
LENGTHS = (7, 5, 2)

pytestmark = pytest.mark.usefixtures("one_thread")


def tagger(token_attention_type: str = "context_vector", seed: int = 0, **overrides) -> BahdanauForTokenClassification:
    torch.manual_seed(seed)
    config = tiny_encoder_config(token_attention_type=token_attention_type, num_labels=len(LABELS),
                                 id2label=dict(enumerate(LABELS)),
                                 label2id={label: i for i, label in enumerate(LABELS)}, **overrides)
    return BahdanauForTokenClassification(config).eval()


# 1. the context vector's energy e_j = v_aᵀ tanh(U_a h_j + b), by hand ---------------------------------------------


def fixed_context_attention() -> ContextVectorAttention:
    """U_a = [[1, 0], [0, 1], [1, 1]], b = [0, 0.5, 0], v_a = [1, -1, 0.5]; float64, to compare with the values
    computed by hand (Python floats) to float64 rounding."""
    attention = ContextVectorAttention(input_size=2, attention_size=3).double()
    with torch.no_grad():
        attention.key_proj.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        attention.key_proj.bias.copy_(torch.tensor([0.0, 0.5, 0.0]))
        attention.context_vector.weight.copy_(torch.tensor([[1.0, -1.0, 0.5]]))
    return attention


STATES = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [-1.0, 1.0]]


def as_tensor(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def hand_energy(h: list[float]) -> float:
    u = [math.tanh(h[0]), math.tanh(h[1] + 0.5), math.tanh(h[0] + h[1])]
    return u[0] - u[1] + 0.5 * u[2]


def test_context_vector_energy_golden_values():
    attention = fixed_context_attention()
    states = as_tensor([STATES])
    expected = [hand_energy(h) for h in STATES]
    # e = [-tanh .5, tanh 1 - tanh .5 + tanh(1)/2, -tanh 2.5 + tanh(2)/2, -tanh(-1) - tanh 1.5 + 0]
    assert_float64_close(attention.energies(states), as_tensor([expected]))
    assert expected[0] == pytest.approx(-0.46211716, abs=1e-7)  # the 8 digits printed
    mask = torch.tensor([[True, True, True, False]])
    pooled, weights = attention(states, mask)
    exps = [math.exp(e) for e in expected[:3]]
    alpha = [e / sum(exps) for e in exps] + [0.0]
    assert_float64_close(weights, as_tensor([alpha]), scale=1.0)  # weights: at most 1
    assert weights[0, 3].item() == 0.0  # padding: exactly zero
    assert_float64_close(pooled, as_tensor([[sum(a * h[k] for a, h in zip(alpha, STATES)) for k in range(2)]]))


def test_seed_attention_reweights_each_annotation():
    config = tiny_encoder_config(encoder_hidden_size=1, num_labels=3)  # annotations of size 2 (two directions)
    seed = ContextVectorTokenAttention(config).double()
    seed.attention = fixed_context_attention()
    states = as_tensor([STATES, STATES])
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    features, weights = seed(states, mask)
    for row, length in enumerate((4, 2)):
        exps = [math.exp(hand_energy(h)) for h in STATES[:length]]
        alpha = as_tensor([e / sum(exps) for e in exps] + [0.0] * (4 - length))
        assert_float64_close(features[row], alpha[:, None] * as_tensor(STATES))  # f_j = α_j h_j
        assert_float64_close(weights[row, :length], alpha.expand(length, 4), scale=1.0)  # one α for every token
        assert torch.equal(weights[row, length:], torch.zeros(4 - length, 4))  # padded tokens attend nowhere


def test_query_attention_is_the_score_function_over_the_sentence():
    config = tiny_encoder_config(token_attention_type="dot", encoder_hidden_size=1, num_labels=3)
    query = QueryTokenAttention(config).double()  # float64: the module and the products below round apart
    states = as_tensor([STATES])
    mask = torch.tensor([[True, True, True, False]])
    features, weights = query(states, mask)
    # e_tj = h_t · h_j over the three real tokens
    h = as_tensor(STATES)
    alpha = torch.softmax(h[:3] @ h[:3].T, dim=-1)
    assert_float64_close(weights[0, :3, :3], alpha, scale=1.0)  # weights: at most 1
    assert torch.equal(weights[0, :, 3], torch.zeros(4)) and torch.equal(weights[0, 3], torch.zeros(4))
    assert_float64_close(features[0, :3], torch.cat([h[:3], alpha @ h[:3]], dim=-1))


# 2. shapes and masks, every attention -----------------------------------------------------------------


@pytest.mark.parametrize("token_attention_type", token_attention_types())
def test_shapes_and_masks(token_attention_type):
    model = tagger(token_attention_type)
    input_ids, attention_mask = padded_batch(LENGTHS + (0,))  # the last row is all padding
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True,
                    output_hidden_states=True)
    batch, length = input_ids.shape
    assert out.logits.shape == (batch, length, len(LABELS))
    assert out.hidden_states[-1].shape == (batch, length, model.config.encoder_output_size)
    (weights,) = out.attentions
    assert weights.shape == (batch, 1, length, length)
    assert torch.isfinite(out.logits).all() and torch.isfinite(weights).all()
    real = attention_mask.bool()
    pair_is_real = real[:, None, :, None] & real[:, None, None, :]
    assert torch.equal(weights[~pair_is_real], torch.zeros(int((~pair_is_real).sum())))  # exactly 0
    row_sums = weights.sum(-1)[:, 0]
    # softmax weights over at most max(LENGTHS) tokens; multihead averages its heads' (≤ one more ε per head)
    tolerance = softmax_sum_tolerance(max(LENGTHS)) + model.config.num_attention_heads * torch.finfo(torch.float32).eps
    assert_close(row_sums[real], torch.ones(int(real.sum())), atol=tolerance, rtol=0)
    assert torch.equal(weights[-1], torch.zeros(1, length, length))  # an empty row: zeros, not NaN


@pytest.mark.parametrize("token_attention_type", ["context_vector", "additive", "general"])
def test_padded_batch_equals_each_sentence_alone(token_attention_type):
    model = tagger(token_attention_type).double()  # float64: a padded batch and one sentence alone round alike
    input_ids, attention_mask = padded_batch(LENGTHS)
    with torch.no_grad():
        batched = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
        for row, length in enumerate(LENGTHS):
            alone = model(input_ids=input_ids[row:row + 1, :length], output_attentions=True)
            assert_float64_close(batched.logits[row, :length], alone.logits[0])
            assert_float64_close(batched.attentions[0][row, 0, :length, :length], alone.attentions[0][0, 0],
                                 scale=1.0)  # weights: at most 1


# 3. return_dict and the config -------------------------------------------------------------------------


def test_return_dict_false_and_config_validation(caplog):
    model = tagger()
    input_ids, attention_mask = padded_batch(LENGTHS)
    labels = torch.zeros_like(input_ids)
    with torch.no_grad():
        as_dict = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        as_tuple = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, return_dict=False)
    assert type(as_dict) is BahdanauTokenClassifierOutput and isinstance(as_dict, TokenClassifierOutput)
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 2
    # the same computation on the same weights and inputs: the same kernels give the same bits
    assert torch.equal(as_tuple[0], as_dict.loss) and torch.equal(as_tuple[1], as_dict.logits)
    with pytest.raises(ValueError, match="token_attention_type.*'context_vector'.*'additive'"):
        BahdanauEncoderConfig(token_attention_type="none")
    with caplog.at_level(logging.WARNING):  # the old name of the context-vector attention still loads
        assert BahdanauEncoderConfig(token_attention_type="sentence").token_attention_type == "context_vector"
    assert "token_attention_type='sentence' is now called 'context_vector'" in caplog.text
    with pytest.raises(ValueError, match="classifier_attention_size"):
        BahdanauEncoderConfig(classifier_attention_size=0)
    with pytest.raises(ValueError, match="classifier_dropout"):
        BahdanauEncoderConfig(classifier_dropout=1.0)
    assert BahdanauEncoderConfig(hidden_size=64).classifier_attention_size == 32  # d_a = h / 2


# 4. the seq2seq checkpoint -----------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general"])
def test_loads_the_encoder_of_a_seq2seq_checkpoint(preset, tmp_path):
    seq2seq = tiny_model(preset)
    seq2seq.save_pretrained(tmp_path)
    model, info = AutoModelForTokenClassification.from_pretrained(
        tmp_path, num_labels=len(LABELS), output_loading_info=True
    )
    assert type(model) is BahdanauForTokenClassification
    head = {name for name in model.state_dict() if not name.startswith("model.")}
    assert info["missing_keys"] == head  # only the head is new
    assert all(key.startswith(("model.decoder.", "lm_head.")) for key in info["unexpected_keys"])
    encoder, seq2seq_encoder = model.model.encoder.state_dict(), seq2seq.model.encoder.state_dict()
    assert encoder.keys() == seq2seq_encoder.keys() and len(encoder) > 2
    assert all(torch.equal(encoder[key], seq2seq_encoder[key]) for key in encoder)
    input_ids, attention_mask = padded_batch(LENGTHS)
    # The same function, in float64: the loaded weights lie at other memory alignments, which kernels (oneDNN's LSTM)
    # may round apart by an ulp.
    with torch.no_grad():
        annotations = model.double().model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        expected = seq2seq.double().get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    assert_float64_close(annotations, expected)
    # the seq2seq checkpoint's translation pipeline is not inherited: the head names its own
    assert json.loads((tmp_path / "config.json").read_text())["custom_pipelines"] == CUSTOM_PIPELINES
    model.save_pretrained(tmp_path / "tagger")
    assert json.loads((tmp_path / "tagger" / "config.json").read_text())["custom_pipelines"] == TAGGER_PIPELINES


def test_resize_token_embeddings_resizes_only_the_source_embedding():
    model = tagger()
    before = model.get_input_embeddings().weight.detach().clone()
    model.resize_token_embeddings(VOCAB + 5)
    assert model.config.vocab_size == VOCAB + 5
    assert model.model.encoder.embed_tokens.weight.shape == (VOCAB + 5, 12)
    assert torch.equal(model.model.encoder.embed_tokens.weight[:VOCAB], before)
    assert not hasattr(model.model, "embed_tokens")
    with torch.no_grad():
        assert model(input_ids=torch.tensor([[VOCAB + 4, 5]])).logits.shape == (1, 2, len(LABELS))


# 5. the picture ----------------------------------------------------------------------------------------


def test_plot_token_attention_draws_the_weights(tmp_path):
    from hf_bahdanau.pictures import plot_token_attention

    tokens, tags = ["Maria", "flew", "to", "Jordan"], ["B-PER", "O", "O", "B-LOC"]
    alpha = torch.tensor([0.1, 0.2, 0.3, 0.4])
    figure = plot_token_attention(alpha, tokens, tags, path=tmp_path / "seed.png")
    ax = figure.axes[0]
    assert_close(torch.as_tensor(ax.images[0].get_array()).float(), alpha[None])  # one row: the context vector's α
    assert [label.get_text() for label in ax.get_xticklabels()] == [f"{t} · {g}" for t, g in zip(tokens, tags)]
    assert (tmp_path / "seed.png").stat().st_size > 1000
    matrix = torch.softmax(torch.arange(16.0).view(4, 4), -1)
    ax = plot_token_attention(matrix, tokens).axes[0]
    assert_close(torch.as_tensor(ax.images[0].get_array()).float(), matrix)
    assert [label.get_text() for label in ax.get_yticklabels()] == tokens
    with pytest.raises(ValueError, match="len\\(tokens\\)"):
        plot_token_attention(matrix[:3], tokens)
    with pytest.raises(ValueError, match="one tag per token"):
        plot_token_attention(alpha, tokens, tags[:2])


# 6. the classifier's fields --------------------------------------------------------------------------------


@pytest.mark.parametrize("pooling", [dict(pooling_type="multi_dimensional"),
                                     dict(pooling_type="self_attentive", self_attention_rows=2)],
                         ids=lambda pooling: pooling["pooling_type"])
def test_a_pooling_is_refused_by_name_the_tagger_attends_with_token_attention_type(pooling):
    """The tagger reads ``token_attention_type``, never ``pooling_type`` (nor the self-attentive fields, which the
    config allows only with that pooling): a pooling set for it would be silently ignored."""
    config = tiny_encoder_config(num_labels=len(LABELS), **pooling)
    with pytest.raises(ValueError, match=rf"`pooling_type='{pooling['pooling_type']}'` is read by the sequence "
                                         r"classifier only: the tagger's attention is chosen by "
                                         r"`token_attention_type`, one of \['context_vector', 'additive', .*'general'"
                                         r".*\] \(here 'additive'\); leave `pooling_type` at its default "
                                         r"'context_vector'\."):
        BahdanauForTokenClassification(config)


@pytest.mark.parametrize("head_name, other_name, field, value", [
    ("BahdanauForTokenClassification", "BahdanauForSequenceClassification", "pooling_type", "self_attentive"),
    ("BahdanauForSequenceClassification", "BahdanauForTokenClassification", "token_attention_type", "general"),
])
def test_configs_saved_by_the_other_models_build_each_head_unless_they_set_the_other_heads_field(
        tmp_path, head_name, other_name, field, value):
    """A seq2seq model's config and the other head's with its default attention build each head; a checkpoint of the
    other head whose own attention field is set is refused on loading."""
    import hf_bahdanau

    head, other = getattr(hf_bahdanau, head_name), getattr(hf_bahdanau, other_name)
    hf_bahdanau.BahdanauForConditionalGeneration(tiny_config()).save_pretrained(tmp_path / "seq2seq")
    other(tiny_encoder_config(num_labels=3)).save_pretrained(tmp_path / "other")
    for folder in ("seq2seq", "other"):
        model = head(AutoConfig.from_pretrained(tmp_path / folder, num_labels=2))
        assert model.config.pooling_type == "context_vector" and model.config.token_attention_type == "additive"
    other(tiny_encoder_config(num_labels=3, **{field: value})).save_pretrained(tmp_path / "set")
    with pytest.raises(ValueError, match=rf"`{field}='{value}'` is read by the (tagger|sequence classifier) only"):
        head.from_pretrained(tmp_path / "set")


@pytest.mark.parametrize("head", ["tagger", "classifier"])
def test_the_dropout_before_the_classifier_is_classifier_dropout_or_else_dropout(head):
    from hf_bahdanau import BahdanauForSequenceClassification

    head_class = BahdanauForTokenClassification if head == "tagger" else BahdanauForSequenceClassification
    assert head_class(tiny_encoder_config(num_labels=3, dropout=0.3)).dropout.p == 0.3
    assert head_class(tiny_encoder_config(num_labels=3, dropout=0.3, classifier_dropout=0.1)).dropout.p == 0.1


def test_the_tagger_reads_its_output_flags_from_its_config():
    """Both defaults from the config (``output_flags``), the caller's flags over them."""
    torch.manual_seed(0)
    model = BahdanauForTokenClassification(tiny_encoder_config(num_labels=3, output_attentions=True,
                                                               output_hidden_states=True)).eval()
    input_ids, mask = padded_batch()
    out = model(input_ids=input_ids, attention_mask=mask)
    assert out.attentions[0].shape == (3, 1, 7, 7) and out.hidden_states[-1].shape == (3, 7, 16)
    out = model(input_ids=input_ids, attention_mask=mask, output_attentions=False, output_hidden_states=False)
    assert (out.attentions, out.hidden_states) == (None, None)


@pytest.mark.parametrize("field, value, shown", [("hierarchical", True, "False"),
                                                 ("sentence_separator_token_id", 5, "None")])
def test_every_field_only_the_classifier_reads_is_refused_by_the_tagger(field, value, shown):
    """Each of ``FIELDS_OF_ONE_HEAD``'s classifier fields, not only the pooling: a HAN config built as a tagger would
    tag each token, its sentences ignored."""
    config = tiny_encoder_config(num_labels=3, **{field: value})
    with pytest.raises(ValueError) as caught:
        BahdanauForTokenClassification(config)
    assert str(caught.value) == (
        f"`{field}={value!r}` is read by the sequence classifier only: the tagger's attention is chosen by "
        f"`token_attention_type`, one of {token_attention_types()} (here 'additive'); leave `{field}` at its default "
        f"{shown}.")
