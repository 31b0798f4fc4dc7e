"""Attention masks: every model class gives a left-padded (or both-sides-padded) batch exactly what it gives the same
batch right-padded, with every output indexed by source position moved back to the caller's layout; masks with a
gap or values other than 0 and 1 are refused; float and bool masks equal long ones.

The rows of a left-padded batch are rotated to right padding before the model runs (``hf_bahdanau.modeling.padding``): the
model then computes on the very same tensors as for the right-padded batch, through the same kernels, so outputs are
equal to the bit (``torch.equal``), on any CPU.
"""

import pytest
import torch

from conftest import EOS, PAD, VOCAB, tiny_encoder_config, tiny_model
from hf_bahdanau import BahdanauForSequenceClassification, BahdanauForTokenClassification, PRESETS
from hf_bahdanau.modeling.token_attention import token_attention_types
from hf_bahdanau.modeling.padding import check_attention_mask, rotate_rows

pytestmark = pytest.mark.usefixtures("one_thread")

LENGTHS = (6, 4, 1, 5)
WIDTH = 7
PRESET_NAMES = sorted(PRESETS)


def right_padded(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (len(LENGTHS), WIDTH), generator=generator)
    mask = (torch.arange(WIDTH) < torch.tensor(LENGTHS)[:, None]).long()
    return ids.masked_fill(mask == 0, PAD), mask


def shifted(tensor: torch.Tensor, starts: list[int], dim: int = 1) -> torch.Tensor:
    """Each row b moved right by starts[b] along ``dim`` (what the caller's layout holds at column starts[b] + j)."""
    return rotate_rows(tensor, -torch.tensor(starts), dim)


LEFT = [WIDTH - length for length in LENGTHS]  # every row flush right
BOTH = [1, 2, 3, 0]  # padding on both sides of rows 0-2 (row 3 right-padded)


@pytest.fixture(params=["left", "both"])
def starts(request):
    return LEFT if request.param == "left" else BOTH


def test_the_layouts_used_here_are_what_they_claim(starts):
    ids, mask = right_padded()
    moved = shifted(mask, starts)
    for row, (length, start) in enumerate(zip(LENGTHS, starts)):
        assert moved[row].tolist() == [0] * start + [1] * length + [0] * (WIDTH - start - length)
    layout = check_attention_mask(moved, moved.shape, moved.device)
    assert layout.starts.tolist() == starts and layout.lengths.tolist() == list(LENGTHS)
    assert torch.equal(layout.to_right(shifted(ids, starts)), ids)
    assert torch.equal(layout.to_caller(ids), shifted(ids, starts))


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_seq2seq_forward_equals_right_padding(preset, starts):
    model = tiny_model(preset)
    ids, mask = right_padded()
    targets = torch.randint(3, VOCAB, (len(LENGTHS), 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        right = model(input_ids=ids, attention_mask=mask, decoder_input_ids=targets, output_attentions=True,
                      output_hidden_states=True)
        other = model(input_ids=shifted(ids, starts), attention_mask=shifted(mask, starts), decoder_input_ids=targets,
                      output_attentions=True, output_hidden_states=True)
    assert torch.equal(other.logits, right.logits)
    assert torch.equal(other.encoder_last_hidden_state, shifted(right.encoder_last_hidden_state, starts))
    for other_layer, right_layer in zip(other.encoder_hidden_states, right.encoder_hidden_states, strict=True):
        assert torch.equal(other_layer * shifted(mask, starts)[..., None],
                           shifted(right_layer * mask[..., None], starts))
    for other_layer, right_layer in zip(other.decoder_hidden_states, right.decoder_hidden_states, strict=True):
        assert torch.equal(other_layer, right_layer)
    if PRESETS[preset]["attention_type"] != "none":
        assert torch.equal(other.cross_attentions[0], shifted(right.cross_attentions[0], starts, dim=-1))


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-location", "sutskever"])
@pytest.mark.parametrize("num_beams", [1, 3])
def test_generate_equals_right_padding(preset, num_beams, starts):
    model = tiny_model(preset)
    with torch.no_grad():
        for parameter in model.parameters():  # peaked, source-dependent outputs
            parameter.mul_(6)
    ids, mask = right_padded()
    options = dict(max_new_tokens=5, num_beams=num_beams, return_dict_in_generate=True, output_scores=True,
                   output_attentions=PRESETS[preset]["attention_type"] != "none")
    with torch.no_grad():
        right = model.generate(input_ids=ids, attention_mask=mask, **options)
        other = model.generate(input_ids=shifted(ids, starts), attention_mask=shifted(mask, starts), **options)
    assert torch.equal(other.sequences, right.sequences)
    if num_beams > 1:
        assert torch.equal(other.sequences_scores, right.sequences_scores)
    rows_starts = [start for start in starts for _ in range(num_beams)]
    for other_step, right_step in zip(other.cross_attentions or (), right.cross_attentions or (), strict=True):
        assert torch.equal(other_step[0], shifted(right_step[0], rows_starts, dim=-1))


@pytest.mark.parametrize("token_attention_type", token_attention_types())
def test_the_tagger_equals_right_padding(token_attention_type, starts):
    torch.manual_seed(0)
    config = tiny_encoder_config(token_attention_type=token_attention_type, num_labels=5)
    model = BahdanauForTokenClassification(config).eval()
    ids, mask = right_padded()
    with torch.no_grad():
        right = model(input_ids=ids, attention_mask=mask, output_attentions=True)
        other = model(input_ids=shifted(ids, starts), attention_mask=shifted(mask, starts), output_attentions=True)
    real = shifted(mask, starts).bool()
    assert torch.equal(other.logits[real], right.logits[mask.bool()])
    moved_weights = shifted(shifted(right.attentions[0][:, 0], starts, dim=1), starts, dim=2)
    assert torch.equal(other.attentions[0][:, 0], moved_weights)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_the_classifiers_equal_right_padding(hierarchical, starts):
    torch.manual_seed(0)
    model = BahdanauForSequenceClassification(
        tiny_encoder_config(num_labels=3, hierarchical=hierarchical, sentence_separator_token_id=5)).eval()
    ids, mask = right_padded()
    ids[0, 2] = ids[3, 1] = 5  # two documents of several sentences
    with torch.no_grad():
        right = model(input_ids=ids, attention_mask=mask, output_attentions=True)
        other = model(input_ids=shifted(ids, starts), attention_mask=shifted(mask, starts), output_attentions=True)
    assert torch.equal(other.logits, right.logits)
    if hierarchical:
        assert torch.equal(other.attentions[0], right.attentions[0])
        assert torch.equal(other.attentions[1], right.attentions[1])
    else:
        assert torch.equal(other.attentions[0], shifted(right.attentions[0], starts))


def test_hierarchical_words_padded_on_the_left_equal_right_padding():
    torch.manual_seed(0)
    model = BahdanauForSequenceClassification(tiny_encoder_config(num_labels=3, hierarchical=True)).eval()
    words = torch.tensor([[[11, 12, 13, PAD], [14, 15, PAD, PAD]], [[16, PAD, PAD, PAD], [PAD, PAD, PAD, PAD]]])
    mask = (words != PAD).long()
    moved_words, moved_mask = (torch.roll(tensor, shifts=1, dims=-1) for tensor in (words, mask))  # [PAD, w, w, w]
    with torch.no_grad():
        right = model(input_ids=words, attention_mask=mask, output_attentions=True)
        other = model(input_ids=moved_words, attention_mask=moved_mask, output_attentions=True)
    assert torch.equal(other.logits, right.logits)
    assert torch.equal(other.attentions[0], torch.roll(right.attentions[0], shifts=1, dims=-1))


# the HAN: an empty sentence anywhere is as if it were not there ---------------------------------------------------


def test_an_empty_sentence_in_the_middle_of_a_document_changes_nothing():
    torch.manual_seed(0)
    model = BahdanauForSequenceClassification(tiny_encoder_config(num_labels=3, hierarchical=True)).double().eval()
    words = torch.tensor([[[11, 12, 13], [14, 15, PAD], [16, 17, 18]]])
    with_gap = torch.tensor([[[11, 12, 13], [PAD, PAD, PAD], [14, 15, PAD], [PAD, PAD, PAD], [16, 17, 18]]])
    with torch.no_grad():
        without = model(input_ids=words, attention_mask=(words != PAD).long(), output_attentions=True)
        gap = model(input_ids=with_gap, attention_mask=(with_gap != PAD).long(), output_attentions=True)
    # float64, different sentence counts (3 and 5 positions): the same sums, give or take reordered zero terms
    torch.testing.assert_close(gap.logits, without.logits, atol=1e-12, rtol=0)
    assert gap.attentions[1][0, [1, 3]].tolist() == [0.0, 0.0]
    torch.testing.assert_close(gap.attentions[1][0, [0, 2, 4]], without.attentions[1][0], atol=1e-12,
                               rtol=0)
    # the same document as one [batch, tokens] row split at a separator, with an empty sentence (". ."): equal too
    model.config.sentence_separator_token_id = 5
    flat = torch.tensor([[11, 12, 13, 5, 5, 14, 15, 5, 16, 17, 18, EOS]])
    with torch.no_grad():
        split = model(input_ids=flat, attention_mask=torch.ones_like(flat))
    torch.testing.assert_close(split.logits, without.logits, atol=1e-12, rtol=0)


# what a mask may hold -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [
    [[1, 1, 0, 1, 1]], [[0, 1, 0, 1, 0]], [[1, 0, 0, 0, 1]],
], ids=["gap", "two runs", "ends"])
def test_a_mask_with_a_gap_is_refused(mask):
    model = tiny_model()
    ids = torch.randint(3, VOCAB, (1, 5))
    with pytest.raises(ValueError, match="`attention_mask` must mark each row's real tokens as one contiguous run"):
        model(input_ids=ids, attention_mask=torch.tensor(mask), decoder_input_ids=ids[:, :2])


@pytest.mark.parametrize("value", [2, 0.5, -1])
def test_a_mask_value_other_than_0_and_1_is_refused(value):
    model = tiny_model()
    ids = torch.randint(3, VOCAB, (1, 4))
    mask = torch.tensor([[1, value, 1, 0]])
    with pytest.raises(ValueError, match=r"`attention_mask` must hold 0 and 1 only .* row 0 is \[1, "):
        model(input_ids=ids, attention_mask=mask, decoder_input_ids=ids[:, :2])


def test_a_row_without_a_token_is_refused_where_every_row_needs_one():
    """``nonempty``: what a row is, for the heads whose every question (passage) must hold a word."""
    mask = torch.tensor([[1, 1, 0], [0, 0, 0], [0, 0, 0]])
    assert check_attention_mask(mask, (3, 3), mask.device).lengths.tolist() == [2, 0, 0]
    with pytest.raises(ValueError) as caught:
        check_attention_mask(mask, (3, 3), mask.device, name="context_attention_mask", nonempty="passage")
    assert str(caught.value) == ("Every passage needs at least one word: row 1 of `context_attention_mask` is all "
                                 "padding.")
    assert check_attention_mask(None, (3, 3), mask.device, nonempty="question").lengths.tolist() == [3, 3, 3]


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.float16, torch.int32, torch.uint8])
def test_bool_and_float_masks_equal_a_long_mask(dtype, starts):
    model = tiny_model("luong-general")
    ids, mask = right_padded()
    mask = shifted(mask, starts)
    ids = shifted(ids, starts)
    targets = torch.randint(3, VOCAB, (len(LENGTHS), 3))
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, decoder_input_ids=targets).logits
        got = model(input_ids=ids, attention_mask=mask.to(dtype), decoder_input_ids=targets).logits
    assert torch.equal(got, expected)


def test_a_decoder_mask_must_be_right_padding():
    model = tiny_model()
    ids = torch.randint(3, VOCAB, (2, 4))
    model(input_ids=ids, decoder_input_ids=ids, decoder_attention_mask=torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]))
    with pytest.raises(ValueError, match="`decoder_attention_mask` must be right padding"):
        model(input_ids=ids, decoder_input_ids=ids, decoder_attention_mask=torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]]))
