"""The seq2seq model: every accepted combination trains, labels build the decoder inputs as HF's do, padding is exact
for every score and decoder style (every head's contract, the -100 loss and each example alone included, is
tests/contract/'s)."""

import itertools

import pytest
import torch

from conftest import EOS, padded_batch, random_labels, tiny_config, tiny_model
from hf_bahdanau.modeling.attention import ATTENTION_SCORES
from hf_bahdanau.modeling.bridge import BRIDGES
from hf_bahdanau.modeling.readout import DEEP_OUTPUTS
from hf_bahdanau.modeling.recurrent import RNN_TYPES

ATTENTION_TYPES = ATTENTION_SCORES.allowed  # every score, and "none"

STYLES = [("bahdanau", False), ("luong", False), ("luong", True)]
COMBINATIONS = list(itertools.product(RNN_TYPES, ATTENTION_TYPES, STYLES, BRIDGES, DEEP_OUTPUTS))


def all_pairs(combinations: list[tuple]) -> set[tuple]:
    """A subset of ``combinations`` in which every two values of any two axes meet at least once (greedy)."""
    def pairs(combination: tuple) -> set[tuple]:
        return {(i, combination[i], j, combination[j]) for i, j in itertools.combinations(range(len(combination)), 2)}

    uncovered, chosen = set().union(*map(pairs, combinations)), set()
    while uncovered:
        best = max(combinations, key=lambda combination: len(pairs(combination) & uncovered))
        chosen.add(best)
        uncovered -= pairs(best)
    return chosen


FAST_COMBINATIONS = all_pairs(COMBINATIONS)  # the fast tier; the whole product is slow


@pytest.mark.parametrize("rnn_type, attention_type, style, bridge, deep_output", [
    pytest.param(*combination, marks=() if combination in FAST_COMBINATIONS else pytest.mark.slow)
    for combination in COMBINATIONS])
def test_every_accepted_combination_trains(rnn_type, attention_type, style, bridge, deep_output):
    decoder_style, input_feeding = style
    overrides = dict(rnn_type=rnn_type, attention_type=attention_type, decoder_style=decoder_style,
                     input_feeding=input_feeding, bridge=bridge, deep_output=deep_output)
    refused = input_feeding and attention_type == "none"
    if refused:
        with pytest.raises(ValueError, match="input_feeding"):
            tiny_config(**overrides)
        return
    model = tiny_model(**overrides).train()
    input_ids, mask = padded_batch()
    labels = random_labels(3, 5)
    labels[1, 3:] = -100
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
    assert out.logits is None  # training with labels: the loss is fused with the vocabulary projection
    assert torch.isfinite(out.loss)
    out.loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters() if p.requires_grad}
    assert all(g is not None and torch.isfinite(g).all() for g in grads.values()), \
        [n for n, g in grads.items() if g is None or not torch.isfinite(g).all()]
    assert grads["model.encoder.embed_tokens.weight"].abs().sum() > 0  # the source reaches the loss


def test_labels_build_shifted_decoder_inputs():
    model = tiny_model()
    labels = torch.tensor([[5, 6, EOS, -100]])
    assert model.prepare_decoder_input_ids_from_labels(labels).tolist() == [[1, 5, 6, EOS]]
    input_ids, mask = padded_batch(lengths=(4,))
    with_labels = model(input_ids=input_ids, attention_mask=mask, labels=labels).logits
    explicit = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=torch.tensor([[1, 5, 6, EOS]])).logits
    torch.testing.assert_close(with_labels, explicit)


@pytest.mark.parametrize("attention_type", [a for a in ATTENTION_TYPES if a != "none"])
@pytest.mark.parametrize("decoder_style, input_feeding", STYLES)
def test_padding_gets_zero_weight_and_batching_does_not_change_logits(attention_type, decoder_style, input_feeding):
    model = tiny_model(attention_type=attention_type, decoder_style=decoder_style, input_feeding=input_feeding,
                       bridge="mean")
    input_ids, mask = padded_batch(lengths=(7, 5, 2))
    decoder_input_ids = random_labels(3, 4)
    batched = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids,
                    output_attentions=True)
    weights = batched.cross_attentions[0][:, 0]  # [B, T, S]
    assert (weights.masked_select(mask[:, None, :].expand_as(weights) == 0) == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4))
    for row, length in enumerate((7, 5, 2)):
        alone = model(input_ids=input_ids[row:row + 1, :length], decoder_input_ids=decoder_input_ids[row:row + 1])
        torch.testing.assert_close(batched.logits[row:row + 1], alone.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("attention_type", [a for a in ATTENTION_TYPES if a != "none"])
def test_an_all_padding_row_gives_no_nan(attention_type, dtype):
    model = tiny_model(attention_type=attention_type, bridge="mean").to(dtype)
    input_ids, mask = padded_batch(lengths=(4, 4))
    mask[1] = 0
    out = model(input_ids=input_ids, attention_mask=mask, labels=random_labels(2, 3), output_attentions=True)
    assert torch.isfinite(out.logits).all() and torch.isfinite(out.loss)
    assert (out.cross_attentions[0][1] == 0).all()


def test_encoder_hidden_states_and_return_dict_false():
    model = tiny_model("luong-general")
    input_ids, mask = padded_batch()
    labels = random_labels(3, 4)
    out = model(input_ids=input_ids, attention_mask=mask, labels=labels, output_hidden_states=True)
    assert len(out.encoder_hidden_states) == 1 + model.config.encoder_layers
    assert out.encoder_hidden_states[0].shape == (3, 7, model.config.embedding_size)
    assert len(out.decoder_hidden_states) == 1 + model.config.decoder_layers
    assert out.decoder_hidden_states[-1].shape == (3, 4, model.config.hidden_size)
    as_tuple = model(input_ids=input_ids, attention_mask=mask, labels=labels, return_dict=False)
    assert isinstance(as_tuple, tuple)
    torch.testing.assert_close(as_tuple[0], out.loss)
    torch.testing.assert_close(as_tuple[1], out.logits)


def test_dropout_is_active_only_in_training():
    model = tiny_model(dropout=0.5)
    input_ids, mask = padded_batch()
    labels = random_labels(3, 4)
    evaluation = [model(input_ids=input_ids, attention_mask=mask, labels=labels).loss for _ in range(2)]
    assert evaluation[0] == evaluation[1]
    model.train()
    training = [model(input_ids=input_ids, attention_mask=mask, labels=labels).loss for _ in range(2)]
    assert training[0] != training[1]


def test_tied_embeddings_share_storage():
    model = tiny_model(tie_word_embeddings=True)
    assert model.lm_head.weight.data_ptr() == model.model.decoder.embed_tokens.weight.data_ptr()
    untied = tiny_model()
    assert untied.lm_head.weight.data_ptr() != untied.model.decoder.embed_tokens.weight.data_ptr()


def test_without_decoder_inputs_the_source_is_shifted_right_as_bart_does():
    model = tiny_model()
    input_ids, mask = padded_batch()
    shifted = model.prepare_decoder_input_ids_from_labels(input_ids)
    implicit = model(input_ids=input_ids, attention_mask=mask).logits
    torch.testing.assert_close(implicit, model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=shifted).logits,
                               atol=0, rtol=0)
    with pytest.raises(ValueError, match="decoder_input_ids"):
        model(inputs_embeds=torch.zeros(3, 7, model.config.embedding_size), attention_mask=mask)


def test_location_attention_refuses_sources_longer_than_its_positions():
    model = tiny_model(attention_type="location", max_source_positions=5)
    input_ids, mask = padded_batch(lengths=(7,))
    with pytest.raises(ValueError, match="max_source_positions"):
        model(input_ids=input_ids, attention_mask=mask, labels=random_labels(1, 2))
