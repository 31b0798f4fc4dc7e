"""The encoder: (bi)RNN annotations of padded batches, reversed sources, outputs as dataclass or tuple."""

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from conftest import PAD, assert_float64_close, padded_batch, random_labels, tiny_config, tiny_model
from hf_bahdanau import BahdanauForConditionalGeneration
from hf_bahdanau.modeling.recurrent import RNN_TYPES
from hf_bahdanau.modeling.recurrent import RecurrentStack, RecurrentState, reverse_within_lengths


def test_reverse_source_reverses_within_the_true_length():
    sequences = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    assert reverse_within_lengths(sequences, torch.tensor([3, 2])).tolist() == [[3, 2, 1, 0], [5, 4, 0, 0]]


def test_reversed_source_annotations_stay_in_source_order():
    """With reverse_source the RNN reads x_T … x_1, but annotation j still belongs to source token j."""
    torch.manual_seed(0)
    config = tiny_config(bidirectional=False, reverse_source=True, encoder_layers=1)
    # float64: the reversed run reads reordered copies of the embeddings, which kernels may sum in other orders
    reversed_model = BahdanauForConditionalGeneration(config).eval().double()
    plain_model = BahdanauForConditionalGeneration(tiny_config(bidirectional=False, encoder_layers=1)).eval().double()
    plain_model.load_state_dict(reversed_model.state_dict())
    input_ids, mask = padded_batch(lengths=(5, 3))
    flipped = torch.tensor([[*input_ids[0, :5].flip(0)], [*input_ids[1, :3].flip(0), PAD, PAD]])
    reversed_annotations = reversed_model.get_encoder()(input_ids, mask).last_hidden_state
    plain_annotations = plain_model.get_encoder()(flipped, mask).last_hidden_state
    assert_float64_close(reversed_annotations[0], plain_annotations[0].flip(0))
    assert_float64_close(reversed_annotations[1, :3], plain_annotations[1, :3].flip(0))
    assert (reversed_annotations[1, 3:] == 0).all()


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
def test_tuple_encoder_outputs_are_read_by_field(rnn_type):
    model = tiny_model(rnn_type=rnn_type, bridge="last").double()  # float64: two encoder runs, compared to rounding
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 4)
    encoded = model.get_encoder()(input_ids=input_ids, attention_mask=mask, output_hidden_states=True,
                                  return_dict=False)
    from_tuple = model(attention_mask=mask, decoder_input_ids=decoder_input_ids, encoder_outputs=encoded,
                       output_hidden_states=True)
    direct = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids)
    assert_float64_close(from_tuple.logits, direct.logits)
    assert len(from_tuple.encoder_hidden_states) == 1 + model.config.encoder_layers


def packed_reference(stack: RecurrentStack, inputs: torch.Tensor, lengths: torch.Tensor, state: RecurrentState):
    """The same layers run as torch documents it for padded batches: packed sequences, layer by layer."""
    layer_input = pack_padded_sequence(inputs, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
    finals, cells = [], []
    for index, layer in enumerate(stack.layers):
        layer_input, final = layer(layer_input, stack._layer_state(state, index))
        final, cell = final if isinstance(final, tuple) else (final, None)
        finals.append(final)
        cells.append(cell)
    outputs = pad_packed_sequence(layer_input, batch_first=True, total_length=inputs.shape[1])[0]
    return outputs, torch.cat(finals), None if cells[0] is None else torch.cat(cells)


@pytest.mark.parametrize("given_state", [True, False])
@pytest.mark.parametrize("mode", ["autograd", "no_grad", "exporting"])
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("rnn_type", RNN_TYPES)
def test_padded_run_equals_the_packed_one(rnn_type, bidirectional, mode, given_state, monkeypatch):
    """Outputs, final states (LSTM cells included) and every gradient equal packing's in float64, for
    rows of every length (an all-padding row runs one step, as packing would), from a given initial state or zeros.
    With autograd on every stack runs its step loop (both directions at once); without it GRU and RNN stacks
    make one call of torch's RNN function per direction and LSTM stacks pack; while torch.export traces, every
    GRU or RNN stack makes one call of torch's RNN function per direction and an LSTM stack one call per layer
    (``LSTMCell.exported_run``, whose padded steps hold its cell; a bidirectional one from zeros, else its step
    loop)."""
    autograd = mode == "autograd"
    if mode == "exporting":
        monkeypatch.setattr(torch.compiler, "is_exporting", lambda: True)
    torch.manual_seed(0)
    stack = RecurrentStack(rnn_type, 6, 5, num_layers=2, bidirectional=bidirectional).double()
    lengths = torch.tensor([4, 7, 1, 0, 7, 3])
    inputs = torch.randn(6, 7, 6, dtype=torch.double, requires_grad=True)
    rows = 2 * stack.num_directions
    state = RecurrentState(torch.randn(rows, 6, 5, dtype=torch.double),
                           torch.randn(rows, 6, 5, dtype=torch.double) if rnn_type == "lstm" else None)
    state = state if given_state else None

    with torch.set_grad_enabled(autograd):
        outputs, final = stack(inputs, state, lengths=lengths)
        expected_outputs, expected_hidden, expected_cell = packed_reference(stack, inputs, lengths, state)

    assert_float64_close(outputs[-1], expected_outputs)
    assert_float64_close(final.hidden, expected_hidden)
    if rnn_type == "lstm":
        assert_float64_close(final.cell, expected_cell)
    if not autograd:
        return
    weights = torch.randn_like(outputs[-1])

    def loss(outputs, hidden, cell):
        return (outputs * weights).sum() + hidden.square().sum() + (0 if cell is None else cell.square().sum())

    parameters = [inputs, *stack.parameters()]
    grads = torch.autograd.grad(loss(outputs[-1], final.hidden, final.cell), parameters)
    expected_grads = torch.autograd.grad(loss(expected_outputs, expected_hidden, expected_cell), parameters)
    # a gradient rounds relative to its terms, not to its sum: the size of the terms is the largest gradient entry
    scale = max(float(expected.abs().max()) for expected in expected_grads)
    for grad, expected in zip(grads, expected_grads):
        assert_float64_close(grad, expected, scale=scale)
