"""Training an image-to-text model with ``Trainer``/``Seq2SeqTrainer``: batching images and their texts.

    collator = DataCollatorForImageToText(image_processor, tokenizer)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train, data_collator=collator, ...)

A feature is a row ``{"image": PIL image or uint8 array, "text": str}`` (the column names are fields): the images are
read by the image processor in each batch (``pixel_values`` [B, C, H, W], ``pixel_mask`` [B, H, W]), and the texts
become ``labels`` [B, T] (the tokenizer's ids, ``</s>`` appended by it, right-padded with -100). Keep the image column
in the dataset: ``TrainingArguments(remove_unused_columns=False)``.
"""

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["DataCollatorForImageToText"]


@dataclass
class DataCollatorForImageToText:
    """Rows of images (and texts) -> ``pixel_values``, ``pixel_mask`` and, when the rows have texts, ``labels``."""

    image_processor: Any
    tokenizer: Any = None
    image_column: str = "image"
    text_column: str = "text"

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        if not features:
            raise ValueError("`features` is empty: a batch needs at least one image.")
        missing = [index for index, feature in enumerate(features) if self.image_column not in feature]
        if missing:
            raise ValueError(f"`features[{missing[0]}]` has no {self.image_column!r} column (the image_column); its "
                             f"columns are {sorted(features[missing[0]])}.")
        batch = dict(self.image_processor([feature[self.image_column] for feature in features], return_tensors="pt"))
        if self.tokenizer is None or self.text_column not in features[0]:
            return batch
        ids = [self.tokenizer(feature[self.text_column])["input_ids"] for feature in features]
        labels = torch.full((len(ids), max(map(len, ids))), -100, dtype=torch.long)
        for row, row_ids in enumerate(ids):
            labels[row, :len(row_ids)] = torch.tensor(row_ids, dtype=torch.long)
        batch["labels"] = labels
        return batch
