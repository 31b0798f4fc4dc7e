"""The fast paths compute the same model as the papers' equations, one token at a time (``hf_bahdanau.reference``).

The model hoists work out of its decoder loop (target-embedding input projections, deep output and vocabulary
projection for all steps at once; no loop at all for Luong without input feeding or without attention), runs the
encoder's layers as one step loop for both directions (training) or torch's fused calls (inference), and takes each
weight's gradient once after a loop (``LoopLinear``). The reference does none of that: each sentence alone, one token
at a time, torch's own single-step RNN calls, the vocabulary projection per step. Every comparison is in float64: the
two sum in other orders.
"""

import pytest
import torch

from conftest import assert_float64_close, assert_float64_gradients_close, padded_batch, random_labels, tiny_model
from hf_bahdanau import PRESETS, reference
from hf_bahdanau.modeling.recurrent import RNN_TYPES

DECODERS = [
    dict(decoder_style="bahdanau", attention_type="additive"),
    dict(decoder_style="luong", attention_type="general", input_feeding=False),
    dict(decoder_style="luong", attention_type="dot", input_feeding=True),
    dict(decoder_style="luong", attention_type="general", input_feeding=True),
    dict(decoder_style="bahdanau", attention_type="scaled_dot"),
    dict(decoder_style="luong", attention_type="gaussian_kernel", input_feeding=True),
    dict(decoder_style="luong", attention_type="multihead", num_attention_heads=2, input_feeding=True),
    dict(decoder_style="bahdanau", attention_type="additive", attention_scope="local-p", local_window=2),
    dict(decoder_style="luong", attention_type="general", attention_scope="local-m", local_window=1),
    dict(decoder_style="luong", attention_type="dot", attention_scope="monotonic", monotonic_bias_init=0.0,
         input_feeding=True),
    dict(decoder_style="luong", attention_type="general", attention_scope="monotonic", monotonic_bias_init=0.0),
    dict(decoder_style="luong", attention_type="multihead", num_attention_heads=2, attention_scope="local-p",
         attention_mode="hard", input_feeding=True),
    dict(decoder_style="bahdanau", attention_type="additive", use_coverage=True, attention_scope="local-m"),
    dict(decoder_style="luong", attention_type="concat", use_coverage=True, input_feeding=False),
    dict(attention_type="none", context_mode="cho"),
    dict(attention_type="none", context_mode="sutskever"),
]


def assert_equals_the_reference(model, input_ids, mask, decoder_input_ids) -> None:
    """The model's logits equal ``reference.logits`` (float64 models)."""
    with torch.no_grad():
        fast = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits
        expected = reference.logits(model, input_ids, mask, decoder_input_ids)
    assert_float64_close(fast, expected)


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_fast_paths_equal_the_reference_decoder(decoder, rnn_type):
    """In float64: the hoisted products and torch's RNN calls sum in other orders than the reference's."""
    model = tiny_model(rnn_type=rnn_type, encoder_layers=2, decoder_layers=2, bridge="last", deep_output="maxout",
                       **decoder).double()
    input_ids, mask = padded_batch()
    assert_equals_the_reference(model, input_ids, mask, random_labels(3, 6))


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: "-".join(str(v) for v in d.values()))
def test_fast_path_gradients_equal_the_reference_decoder(decoder, rnn_type):
    """The loops take each weight's gradient once, after the loop (``LoopLinear``): every parameter's
    gradient equals the one backpropagated through the reference (float64)."""
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
    expected = gradients(reference.logits(model, input_ids, mask, decoder_input_ids))
    assert_float64_gradients_close(fast, expected)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("left_padded", [False, True])
def test_every_preset_equals_the_reference_on_a_padded_batch(preset, left_padded):
    model = tiny_model(preset).double()
    input_ids, mask = padded_batch()
    if left_padded:
        input_ids, mask = input_ids.flip(1), mask.flip(1)
    assert_equals_the_reference(model, input_ids, mask, random_labels(3, 5))


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
@pytest.mark.parametrize("autograd", [True, False], ids=["step-loop", "fused"])
def test_the_encoder_equals_each_sentence_alone(rnn_type, autograd):
    """The padded batch through the encoder (a step loop of both directions with autograd, torch's fused calls or
    packing without) against each sentence alone through torch's own layers: annotations and final states."""
    model = tiny_model(rnn_type=rnn_type, encoder_layers=2, decoder_layers=2, bridge="mean").double()
    input_ids, mask = padded_batch()
    with torch.set_grad_enabled(autograd):
        fast = model.model.encoder(input_ids=input_ids, attention_mask=mask)
    with torch.no_grad():
        expected = reference.encode(model, input_ids, mask)
    assert_float64_close(fast.last_hidden_state.detach(), expected.last_hidden_state)
    assert_float64_close(fast.final_hidden_state.detach(), expected.final_hidden_state)
    if rnn_type == "lstm":
        assert_float64_close(fast.final_cell_state.detach(), expected.final_cell_state)
