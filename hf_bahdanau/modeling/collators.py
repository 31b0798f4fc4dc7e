"""Batching seq2seq examples whatever side the tokenizer pads on.

transformers' ``DataCollatorForSeq2Seq`` pads the labels on the tokenizer's ``padding_side``. With a left-padding
tokenizer (a decoder-only model's) the labels, and the decoder inputs shifted from them, become
``[-100, -100, y_1, …]`` and ``[start, pad, pad, y_1, …]``: the decoder reads padding before the target and the
batch trains on other sequences than its examples. Here the labels are always right-padded; the sources follow the
tokenizer's side (the encoder reads either, ``padding.check_attention_mask``).
"""

from dataclasses import dataclass

from transformers import DataCollatorForSeq2Seq
from transformers.utils import PaddingStrategy

__all__ = ["DataCollatorWithRightPaddedLabels"]


@dataclass
class DataCollatorWithRightPaddedLabels(DataCollatorForSeq2Seq):
    """``DataCollatorForSeq2Seq`` whose labels (and ``decoder_input_ids``) are right-padded with
    ``label_pad_token_id`` on either ``padding_side``; ``input_ids`` are padded on the tokenizer's side."""

    def __call__(self, features: list[dict], return_tensors: str | None = None) -> dict:
        label_name = "label" if "label" in features[0] else "labels"
        labels = [feature.get(label_name) for feature in features]
        if self.padding in (False, PaddingStrategy.DO_NOT_PAD) or any(label is None for label in labels):
            return super().__call__(features, return_tensors)
        # pad each label row on the right to the width the parent would pad to: it then has nothing left to pad
        width = max(len(label) for label in labels)
        if self.padding == PaddingStrategy.MAX_LENGTH and self.max_length is not None:
            width = self.max_length
        if self.pad_to_multiple_of is not None:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        padded = [{**feature, label_name: _as_list(label) + [self.label_pad_token_id] * (width - len(label))}
                  for feature, label in zip(features, labels)]
        return super().__call__(padded, return_tensors)


def _as_list(label) -> list[int]:
    return label.tolist() if hasattr(label, "tolist") else list(label)
