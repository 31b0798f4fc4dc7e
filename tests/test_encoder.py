"""The encoder: packed (bi)RNN annotations, reversed sources, outputs as dataclass or tuple."""

import pytest
import torch

from conftest import PAD, padded_batch, random_labels, tiny_config, tiny_model
from hf_bahdanau import BahdanauForConditionalGeneration
from hf_bahdanau.configuration_bahdanau import RNN_TYPES
from hf_bahdanau.encoder import reverse_within_lengths


def test_reverse_source_reverses_within_the_true_length():
    sequences = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    assert reverse_within_lengths(sequences, torch.tensor([3, 2])).tolist() == [[3, 2, 1, 0], [5, 4, 0, 0]]


def test_reversed_source_annotations_stay_in_source_order():
    """With reverse_source the RNN reads x_T … x_1, but annotation j still belongs to source token j."""
    torch.manual_seed(0)
    config = tiny_config(bidirectional=False, reverse_source=True, encoder_layers=1)
    reversed_model = BahdanauForConditionalGeneration(config).eval()
    plain_model = BahdanauForConditionalGeneration(tiny_config(bidirectional=False, encoder_layers=1)).eval()
    plain_model.load_state_dict(reversed_model.state_dict())
    input_ids, mask = padded_batch(lengths=(5, 3))
    flipped = torch.tensor([[*input_ids[0, :5].flip(0)], [*input_ids[1, :3].flip(0), PAD, PAD]])
    reversed_annotations = reversed_model.get_encoder()(input_ids, mask).last_hidden_state
    plain_annotations = plain_model.get_encoder()(flipped, mask).last_hidden_state
    torch.testing.assert_close(reversed_annotations[0], plain_annotations[0].flip(0))
    torch.testing.assert_close(reversed_annotations[1, :3], plain_annotations[1, :3].flip(0))
    assert (reversed_annotations[1, 3:] == 0).all()


@pytest.mark.parametrize("rnn_type", RNN_TYPES)
def test_tuple_encoder_outputs_are_read_by_field(rnn_type):
    model = tiny_model(rnn_type=rnn_type, bridge="last")
    input_ids, mask = padded_batch()
    decoder_input_ids = random_labels(3, 4)
    encoded = model.get_encoder()(input_ids=input_ids, attention_mask=mask, output_hidden_states=True,
                                  return_dict=False)
    from_tuple = model(attention_mask=mask, decoder_input_ids=decoder_input_ids, encoder_outputs=encoded,
                       output_hidden_states=True)
    direct = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids)
    torch.testing.assert_close(from_tuple.logits, direct.logits)
    assert len(from_tuple.encoder_hidden_states) == 1 + model.config.encoder_layers
