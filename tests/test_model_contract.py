"""The transformers model contract, as transformers' own common tests (``ModelTesterMixin``, ``GenerationTesterMixin``)
expect it of every in-tree model, checked with values: per-layer hidden states with their graph, embeddings instead
of ids, the base model's own decoder inputs, ``prepare_inputs_for_generation``'s keyword contract, the ``Cache``
protocol of the recurrent state.

Which of transformers' common tests do not apply to a recurrent encoder–decoder, and why, is in
``tests/TRANSFORMERS_COMMON_TESTS.md``.
"""

import pytest
import torch

from conftest import (
    BOS, VOCAB, assert_float64_close, padded_batch, product_tolerance, random_labels, tiny_config, tiny_encoder_config,
    tiny_model,
)
from hf_bahdanau import (
    PRESETS,
    BahdanauForSequenceClassification,
    BahdanauForTokenClassification,
    BahdanauModel,
)
from hf_bahdanau.modeling.modeling_bahdanau import shift_tokens_right
from hf_bahdanau.modeling.transformers_private import cache_of

pytestmark = pytest.mark.usefixtures("one_thread")

PRESET_NAMES = sorted(PRESETS)


def decoder_ids(rows: int = 3, steps: int = 4) -> torch.Tensor:
    ids = torch.randint(3, VOCAB, (rows, steps), generator=torch.Generator().manual_seed(2))
    ids[:, 0] = BOS
    return ids


# output_hidden_states -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_hidden_states_are_the_embeddings_and_every_layer(preset):
    model = tiny_model(preset)
    config = model.config
    input_ids, mask = padded_batch()
    targets = decoder_ids()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets, output_hidden_states=True)
    encoder, decoder = out.encoder_hidden_states, out.decoder_hidden_states
    assert [tuple(state.shape) for state in encoder] == (
        [(3, 7, config.embedding_size)] + [(3, 7, config.encoder_output_size)] * config.encoder_layers)
    assert [tuple(state.shape) for state in decoder] == (
        [(3, 4, config.embedding_size)] + [(3, 4, config.hidden_size)] * config.decoder_layers)
    assert torch.equal(encoder[-1], out.encoder_last_hidden_state)
    embedded_source = model.model.encoder.embed_tokens(input_ids)
    assert torch.equal(encoder[0], embedded_source)
    assert torch.equal(decoder[0], model.model.decoder.embed_tokens(targets))
    for layer, cached in enumerate(cache_of(out).layers):  # each layer's last step is the cached state
        assert torch.equal(decoder[layer + 1][:, -1], cached.hidden)


def test_hidden_states_follow_the_config_and_keep_their_graph():
    model = tiny_model("luong-general").train()
    model.config.output_hidden_states = True
    input_ids, mask = padded_batch()
    out = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_ids())
    assert out.encoder_hidden_states is not None and out.decoder_hidden_states is not None
    kept = [out.encoder_hidden_states[0], out.decoder_hidden_states[0]]  # the embeddings, as transformers checks
    for state in kept:
        state.retain_grad()
    out.logits.sum().backward()
    for state in kept:
        assert state.grad is not None and state.grad.abs().sum() > 0


def test_the_tagger_and_classifier_return_the_encoder_layers():
    config = tiny_encoder_config(num_labels=3, encoder_layers=2)
    input_ids, mask = padded_batch()
    for model in (BahdanauForTokenClassification(config), BahdanauForSequenceClassification(config)):
        out = model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True)
        assert len(out.hidden_states) == 1 + config.encoder_layers


# inputs_embeds ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-general", "rnnencdec"])
def test_embeddings_instead_of_ids_give_the_same_outputs(preset):
    model = tiny_model(preset)
    input_ids, mask = padded_batch()
    targets = decoder_ids()
    with torch.no_grad():
        from_ids = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets)
        from_embeddings = model(inputs_embeds=model.model.encoder.embed_tokens(input_ids), attention_mask=mask,
                                decoder_inputs_embeds=model.model.decoder.embed_tokens(targets))
        generated_from_ids = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=4)
        generated_from_embeddings = model.generate(inputs_embeds=model.model.encoder.embed_tokens(input_ids),
                                                   attention_mask=mask, max_new_tokens=4)
    assert torch.equal(from_embeddings.logits, from_ids.logits)
    assert torch.equal(generated_from_embeddings, generated_from_ids)


def test_labels_with_decoder_embeddings_give_the_loss_of_ids():
    model = tiny_model()
    input_ids, mask = padded_batch()
    labels = random_labels(3, 4)
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    with torch.no_grad():
        expected = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        got = model(input_ids=input_ids, attention_mask=mask, labels=labels,
                    decoder_inputs_embeds=model.model.decoder.embed_tokens(decoder_input_ids)).loss
    assert torch.equal(got, expected)


def test_the_encoder_heads_take_embeddings():
    input_ids, mask = padded_batch()
    for head in (BahdanauForTokenClassification, BahdanauForSequenceClassification):
        torch.manual_seed(0)
        model = head(tiny_encoder_config(num_labels=3)).eval()
        with torch.no_grad():
            from_ids = model(input_ids=input_ids, attention_mask=mask).logits
            from_embeddings = model(inputs_embeds=model.get_input_embeddings()(input_ids), attention_mask=mask).logits
        assert torch.equal(from_embeddings, from_ids)


# the base model's decoder inputs ---------------------------------------------------------------------------------


def test_the_base_model_shifts_input_ids_when_given_no_decoder_inputs():
    torch.manual_seed(0)
    model = BahdanauModel(tiny_config()).eval()
    input_ids, mask = padded_batch()
    shifted = shift_tokens_right(input_ids, model.config.pad_token_id, model.config.decoder_start_token_id)
    with torch.no_grad():
        implicit = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        explicit = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=shifted).last_hidden_state
    assert implicit.shape == (3, 7, model.config.output_size)
    assert torch.equal(implicit, explicit)
    with pytest.raises(ValueError, match="`decoder_input_ids` or `decoder_inputs_embeds`"):
        model(inputs_embeds=torch.zeros(3, 7, model.config.embedding_size))


# generate() plumbing ---------------------------------------------------------------------------------------------------


def test_prepare_inputs_for_generation_takes_keywords_and_passes_the_rest_on():
    model = tiny_model()
    sequence = torch.tensor([[BOS, 5, 6], [BOS, 7, 8]])
    inputs = model.prepare_inputs_for_generation(input_ids=sequence, next_sequence_length=1, past_key_values=None,
                                                 attention_mask=torch.ones(2, 4), foo="bar", labels=sequence)
    assert inputs["decoder_input_ids"].tolist() == [[6], [8]]
    assert inputs["foo"] == "bar" and inputs["attention_mask"].shape == (2, 4)
    assert "labels" not in inputs and "input_ids" not in inputs


def test_a_mistyped_generate_argument_is_refused():
    model = tiny_model()
    input_ids, mask = padded_batch()
    with pytest.raises(ValueError, match="atention_mask"):
        model.generate(input_ids=input_ids, atention_mask=mask, max_new_tokens=2)


def test_assisted_decoding_is_refused_clearly():
    model = tiny_model()
    input_ids, mask = padded_batch()
    with pytest.raises(ValueError, match="stateful"):
        model.generate(input_ids=input_ids[:1], attention_mask=mask[:1], assistant_model=tiny_model(),
                       max_new_tokens=2)


def test_logits_to_keep_computes_the_last_positions_only():
    model = tiny_model()
    input_ids, mask = padded_batch()
    targets = decoder_ids()
    with torch.no_grad():
        every = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets)
        last = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets, logits_to_keep=1).logits
    assert last.shape == (3, 1, VOCAB)
    # the same rows of W_o t + b, from a product of another shape (another summation order)
    pre_output = model.model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets).last_hidden_state
    tolerance = product_tolerance(pre_output.detach(), model.lm_head.weight.detach().t())
    torch.testing.assert_close(last, every.logits[:, -1:], atol=tolerance, rtol=torch.finfo(torch.float32).eps)


# the cache ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["luong-general", "rnnsearch"])
def test_the_cache_keeps_the_cache_protocol(preset):
    """len(cache) = decoder layers, each layer's state by index, the tokens seen, and ``reorder_cache`` within the
    rows of each source (beam search's use): stepping on equals a cache built for the reordered rows. In float64: a
    row computed at another batch position may round differently (generic kernels block the rows)."""
    model = tiny_model(preset).double()
    input_ids, mask = padded_batch()
    targets = decoder_ids(rows=6)  # 2 rows per source, as 2 beams
    order = torch.tensor([1, 0, 2, 2, 5, 4])  # rows move within their source's pair only
    with torch.no_grad():
        cache = cache_of(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets[:, :3],
                               rows_per_source=2))
        assert len(cache) == model.config.decoder_layers
        assert cache.get_seq_length() == 3
        hidden, cell = cache.state.rnn
        for layer in range(len(cache)):
            assert torch.equal(cache.layers[layer].hidden, hidden[layer])
            assert (cache.layers[layer].cell is None) == (cell is None)
        cache.reorder_cache(order)
        assert torch.equal(cache.layers[0].hidden, hidden[0][order])
        stepped = model(decoder_input_ids=targets[order, 3:], past_key_values=cache)
        rebuilt = cache_of(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=targets[order, :3],
                                 rows_per_source=2))
        expected = model(decoder_input_ids=targets[order, 3:], past_key_values=rebuilt)
    assert cache.get_seq_length() == 4
    assert_float64_close(stepped.logits, expected.logits)


def test_num_hidden_layers_reads_the_encoder_depth():
    config = tiny_config(encoder_layers=3, decoder_layers=2, bridge="tanh")
    assert config.num_hidden_layers == 3
