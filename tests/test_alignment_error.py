"""training.common.alignment_error: the argmax-in-span alignment error rate, against hand-built attention."""

from types import SimpleNamespace

import pytest
import torch

from training.common.alignment_error import alignment_error_rate
from training.common.tokenization import train_tokenizer

TOKENIZER = train_tokenizer(["ab 12-xyz"], kind="char")


class FixedAttention(torch.nn.Module):
    """Stands in for a model: returns the given α [T, S] of each example in turn, padded to the batch."""

    def __init__(self, alignments: list[torch.Tensor]):
        super().__init__()
        self.alignments = iter(alignments)
        self.config = SimpleNamespace(attention_type="additive")
        self.calls = []
        self.device = torch.device("cpu")

    def forward(self, input_ids, attention_mask, labels, output_attentions):
        assert output_attentions
        self.calls.append((input_ids.shape, labels.shape))
        weights = torch.zeros(input_ids.shape[0], 1, labels.shape[1], input_ids.shape[1])
        for row in range(input_ids.shape[0]):
            alignment = next(self.alignments)
            weights[row, 0, : alignment.shape[0], : alignment.shape[1]] = alignment
        return SimpleNamespace(cross_attentions=(weights,))


def one_hot(attended: list[int], source_length: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(attended), source_length).float() * 0.7 + 0.3 / source_length


SOURCES = ["ab 12", "12 xyz"]
TARGETS = ["12-ab", "xyz-12"]
SOURCE_SPANS = [{"word": [0, 2], "number": [3, 5]}, {"number": [0, 2], "word": [3, 6]}]
TARGET_SPANS = [{"number": [0, 2], "word": [3, 5]}, {"word": [0, 3], "number": [4, 6]}]
# Example 0: source a b ␣ 1 2 </s>; target 1 2 - a b </s>.  Field tokens: 1 -> "1" ok, 2 -> "a" error,
#   a -> "b" ok, b -> "</s>" error ("-" and </s> are outside every field and not counted): 2 errors / 4.
# Example 1: source 1 2 ␣ x y z </s>; target x y z - 1 2 </s>.  x -> "z" ok, y -> "␣" error, z -> "z" ok,
#   1 -> "2" ok, 2 -> "1" ok: 1 error / 5.
ATTENDED = [[3, 0, 2, 1, 5, 5], [5, 2, 5, 0, 1, 0, 6]]


@pytest.mark.parametrize("batch_size", [1, 2])
def test_error_rate_counts_field_tokens_whose_argmax_leaves_the_span(batch_size):
    alignments = [one_hot(attended, len(source) + 1) for attended, source in zip(ATTENDED, SOURCES)]
    model = FixedAttention(alignments)
    rate, counted = alignment_error_rate(model, TOKENIZER, SOURCES, TARGETS, SOURCE_SPANS, TARGET_SPANS,
                                         batch_size=batch_size)
    assert counted == 9
    assert rate == pytest.approx(3 / 9)
    assert len(model.calls) == 2 // batch_size


def test_perfect_alignment_gives_zero():
    attended = [[3, 4, 2, 0, 1, 5]]
    rate, counted = alignment_error_rate(FixedAttention([one_hot(attended[0], 6)]), TOKENIZER, SOURCES[:1],
                                         TARGETS[:1], SOURCE_SPANS[:1], TARGET_SPANS[:1])
    assert (rate, counted) == (0.0, 4)


def test_mismatched_lengths_and_empty_fields_raise():
    with pytest.raises(ValueError, match="same length"):
        alignment_error_rate(FixedAttention([]), TOKENIZER, SOURCES, TARGETS[:1], SOURCE_SPANS, TARGET_SPANS)
    with pytest.raises(ValueError, match="no target token lies inside"):
        alignment_error_rate(FixedAttention([one_hot([0] * 6, 6)]), TOKENIZER, SOURCES[:1], TARGETS[:1],
                             SOURCE_SPANS[:1], [{"word": [9, 12]}])
