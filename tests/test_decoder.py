"""The fast paths compute the same model as a plain step-by-step decoder.

The model hoists work out of its decoder loop (target-embedding input projections, deep output
and vocabulary projection for all steps at once; no loop at all for Luong without input feeding
or without attention). The reference below does none of that: one token at a time, the
concatenated input through torch's own single-step RNN call, the vocabulary projection per step.
"""

import pytest
import torch

from conftest import assert_float64_close, assert_float64_gradients_close, padded_batch, random_labels, tiny_model
from hf_bahdanau.configuration_bahdanau import RNN_TYPES


def step_by_step_logits(model, input_ids, attention_mask, decoder_input_ids):
    decoder, config = model.model.decoder, model.config
    mask = attention_mask.bool()
    encoded = model.model.encoder(input_ids, attention_mask)
    annotations = encoded.last_hidden_state
    initial = decoder.bridge(encoded, mask)
    layer_states = [
        initial.hidden[l:l + 1] if initial.cell is None else (initial.hidden[l:l + 1], initial.cell[l:l + 1])
        for l in range(config.decoder_layers)
    ]
    summary = encoded.final_hidden_state[:, -1]
    feed = annotations.new_zeros(annotations.shape[0], config.output_size)
    top = initial.hidden[-1]
    logits = []
    for step in range(decoder_input_ids.shape[1]):
        embedded = decoder.embed_tokens(decoder_input_ids[:, step])
        if config.attention_type == "none":
            rnn_input = torch.cat([embedded, summary], -1) if config.context_mode == "cho" else embedded
        elif config.decoder_style == "bahdanau":
            context, _ = decoder.attention(top, annotations, annotations, mask)
            rnn_input = torch.cat([embedded, context], -1)
        else:
            rnn_input = torch.cat([embedded, feed], -1) if config.input_feeding else embedded
        for l, layer in enumerate(decoder.rnn.layers):
            output, layer_states[l] = layer(rnn_input[:, None], layer_states[l])
            rnn_input = output[:, 0]
        top = rnn_input
        if config.attention_type == "none":
            features = torch.cat([top, summary, embedded], -1) if config.context_mode == "cho" else top
        elif config.decoder_style == "bahdanau":
            features = torch.cat([top, context, embedded], -1)
        else:
            context, _ = decoder.attention(top, annotations, annotations, mask)
            features = torch.cat([context, top], -1)
        feed = decoder.readout(features)
        logits.append(model.lm_head(feed))
    return torch.stack(logits, dim=1)


DECODERS = [
    dict(decoder_style="bahdanau", attention_type="additive"),
    dict(decoder_style="luong", attention_type="general", input_feeding=False),
    dict(decoder_style="luong", attention_type="dot", input_feeding=True),
    dict(decoder_style="luong", attention_type="general", input_feeding=True),
    dict(decoder_style="bahdanau", attention_type="scaled_dot"),
    dict(decoder_style="luong", attention_type="gaussian_kernel", input_feeding=True),
    dict(decoder_style="luong", attention_type="multihead", num_attention_heads=2, input_feeding=True),
    dict(attention_type="none", context_mode="cho"),
    dict(attention_type="none", context_mode="sutskever"),
]


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_fast_paths_equal_the_step_by_step_computation(decoder, rnn_type):
    """In float64: the hoisted products and torch's RNN calls sum in other orders than the reference's."""
    model = tiny_model(rnn_type=rnn_type, encoder_layers=2, decoder_layers=2, bridge="last", deep_output="maxout",
                       **decoder).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 6)
    with torch.no_grad():
        fast = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits
        reference = step_by_step_logits(model, input_ids, mask, decoder_input_ids)
    assert_float64_close(fast, reference)


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_fast_path_gradients_equal_the_step_by_step_computation(decoder, rnn_type):
    """The loops take each weight's gradient once, after the loop (``LoopLinear``): every parameter's
    gradient equals the one backpropagated through the plain step-by-step decoder (float64)."""
    model = tiny_model(rnn_type=rnn_type, encoder_layers=2, decoder_layers=2, bridge="last", deep_output="maxout",
                       **decoder).double()
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 6)
    probe = torch.randn(3, 6, model.config.vocab_size, generator=torch.Generator().manual_seed(0),
                        dtype=torch.float64)

    def gradients(logits: torch.Tensor) -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        (logits * probe).sum().backward()
        return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

    fast = gradients(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits)
    reference = gradients(step_by_step_logits(model, input_ids, mask, decoder_input_ids))
    assert_float64_gradients_close(fast, reference)
