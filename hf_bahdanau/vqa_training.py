"""Training a visual question answering model with ``Trainer``: batching images, questions and answers.

    collator = DataCollatorForVisualQuestionAnswering(image_processor, tokenizer, label2id=model.config.label2id)
    trainer = Trainer(model=model, args=TrainingArguments(..., remove_unused_columns=False), train_dataset=train,
                      data_collator=collator, ...)

A feature is a row ``{"image": PIL image or uint8 array, "question": str, "answer": str}`` (the column names are
fields). The images become ``pixel_values`` [B, C, H, W] and ``pixel_mask`` [B, H, W] (the image processor), the
questions ``input_ids`` and ``attention_mask`` [B, T] (the tokenizer's ids without special tokens, right-padded with
the pad id), the answers ``labels`` [B] (``label2id``; an answer outside it is a ValueError). With
``question_type_column`` and ``question_types`` (the type names, in id order) the rows' types become
``question_type_ids`` [B]: name ``TrainingArguments(label_names=["labels", "question_type_ids"])`` and
``compute_metrics`` receives them with the labels, for accuracy by question type. For a baseline that reads one input
(``config.inputs``), pass ``inputs="question"`` or ``inputs="context"``: the batch then holds only that input.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["DataCollatorForVisualQuestionAnswering"]


@dataclass
class DataCollatorForVisualQuestionAnswering:
    """Rows of images, questions (and answers) -> the model's inputs (and ``labels``, ``question_type_ids``)."""

    image_processor: Any
    tokenizer: Any
    label2id: dict[str, int] | None = None
    image_column: str = "image"
    question_column: str = "question"
    answer_column: str = "answer"
    question_type_column: str | None = None
    question_types: Sequence[str] | None = None
    inputs: str = "both"

    def __post_init__(self):
        if self.inputs not in ("both", "question", "context"):
            raise ValueError(f"`inputs` must be 'both', 'question' or 'context' (the model config's `inputs`), got "
                             f"{self.inputs!r}.")

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        if not features:
            raise ValueError("`features` is empty: a batch needs at least one question.")
        read = {"both": (self.image_column, self.question_column), "question": (self.question_column,),
                "context": (self.image_column,)}[self.inputs]
        for column in read:
            missing = [index for index, feature in enumerate(features) if column not in feature]
            if missing:
                raise ValueError(f"`features[{missing[0]}]` has no {column!r} column; its columns are "
                                 f"{sorted(features[missing[0]])}.")
        batch = {}
        if self.inputs != "question":
            batch.update(self.image_processor([feature[self.image_column] for feature in features],
                                              return_tensors="pt"))
        if self.inputs != "context":
            batch.update(self._questions(features))
        if self.label2id is not None and self.answer_column in features[0]:
            batch["labels"] = torch.tensor([self._lookup(self.label2id, feature, self.answer_column, "label2id")
                                            for feature in features])
        if self.question_type_column is not None and self.question_types is not None:
            type_ids = {name: index for index, name in enumerate(self.question_types)}
            batch["question_type_ids"] = torch.tensor(
                [self._lookup(type_ids, feature, self.question_type_column, "question_types") for feature in features])
        return batch

    def _questions(self, features: list[dict]) -> dict[str, torch.Tensor]:
        """input_ids and attention_mask [B, T] of the questions, right-padded."""
        questions = [self.tokenizer(feature[self.question_column], add_special_tokens=False)["input_ids"]
                     for feature in features]
        empty = [index for index, ids in enumerate(questions) if not ids]
        if empty:
            raise ValueError(f"`features[{empty[0]}]`'s question {features[empty[0]][self.question_column]!r} has no "
                             "token: every question needs at least one word.")
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(questions), max(map(len, questions))), pad, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        for row, ids in enumerate(questions):
            input_ids[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, :len(ids)] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    @staticmethod
    def _lookup(ids: dict[str, int], feature: dict, column: str, name: str) -> int:
        value = feature.get(column)
        if value not in ids:
            known = sorted(ids)
            raise ValueError(f"{column} {value!r} is not in `{name}` ({known[:20]}{' …' if len(known) > 20 else ''}): "
                             f"every row's {column} must be one of them.")
        return ids[value]
