"""Every family's data collator: rows of a dataset -> one batch of the model's inputs (and labels), for ``Trainer``.

| family | collator | a row |
|---|---|---|
| seq2seq | ``DataCollatorWithRightPaddedLabels`` | tokenizer output with ``labels`` |
| seq2seq, ``copy_attention=True`` | ``DataCollatorForCopying`` | ``copying.encode_with_copies``' features |
| pointer network | ``DataCollatorForPointing`` | ``input_features`` [n][F] or ``input_ids`` [n], pointer ``labels`` |
| image-to-text | ``DataCollatorForImageToText`` | ``{"image", "text"}`` |
| memory network | ``DataCollatorForMemoryNetwork`` | ``{"input_ids", "memory_ids", "labels"}`` |
| passage QA | ``DataCollatorForTextPairs`` | ``{"input_ids", "context_ids", "labels"}`` |
| VQA | ``DataCollatorForVisualQuestionAnswering`` | ``{"image", "question", "answer"}`` |

(The tagger and the classifiers batch with transformers' ``DataCollatorForTokenClassification`` and
``DataCollatorWithPadding``.) Each family's descriptor names its collator (``hf_bahdanau.families``, ``Family.collator``).

Labels of sequences are right-padded whatever the tokenizer's ``padding_side``. transformers' ``DataCollatorForSeq2Seq``
pads them on the tokenizer's side: with a left-padding tokenizer (a decoder-only model's) the labels, and the decoder
inputs shifted from them, become ``[-100, -100, y_1, …]`` and ``[start, pad, pad, y_1, …]``, so the decoder reads
padding before the target and the batch trains on other sequences than its examples. Sources follow the tokenizer's
side (the encoder reads either, ``padding.check_attention_mask``).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from transformers import DataCollatorForSeq2Seq
from transformers.utils import PaddingStrategy

__all__ = ["DataCollatorForCopying", "DataCollatorForImageToText", "DataCollatorForMemoryNetwork",
           "DataCollatorForPointing", "DataCollatorForTextPairs", "DataCollatorForVisualQuestionAnswering",
           "DataCollatorWithRightPaddedLabels"]


def _right_padded(rows: Sequence[Sequence[int]], padding: int) -> tuple[Tensor, Tensor]:
    """Rows of ids -> ids [B, T] right-padded with ``padding`` and their mask [B, T] (1 under each row's own ids);
    T = the longest row."""
    ids = torch.full((len(rows), max(map(len, rows))), padding, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, values in enumerate(rows):
        ids[row, :len(values)] = torch.as_tensor(values, dtype=torch.long)
        mask[row, :len(values)] = 1
    return ids, mask


# seq2seq ---------------------------------------------------------------------------------------------------------


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


@dataclass
class DataCollatorForCopying(DataCollatorWithRightPaddedLabels):
    """``DataCollatorWithRightPaddedLabels`` for ``copying.encode_with_copies``' features: ``copy_input_ids`` are
    padded like ``input_ids`` (the padding columns are never attended), the labels on the right, and ``source_oovs``
    are dropped (the Trainer removes them first: they are no argument of the model)."""

    def __call__(self, features: list[dict], return_tensors: str | None = None) -> dict:
        copy_ids = [feature["copy_input_ids"] for feature in features]
        rest = [{key: value for key, value in feature.items() if key not in ("copy_input_ids", "source_oovs")}
                for feature in features]
        batch = super().__call__(rest, return_tensors)
        if batch.get("labels", ()) is None:  # features without labels
            del batch["labels"]
        width = batch["input_ids"].shape[1]
        padded = torch.full((len(copy_ids), width), self.tokenizer.pad_token_id, dtype=torch.long)
        for row, ids in enumerate(copy_ids):
            ids = torch.as_tensor(ids, dtype=torch.long)
            if self.tokenizer.padding_side == "left":
                padded[row, width - len(ids):] = ids
            else:
                padded[row, :len(ids)] = ids
        batch["copy_input_ids"] = padded
        return batch


# pointer network -------------------------------------------------------------------------------------------------


class DataCollatorForPointing:
    """Rows {"input_features": [n][F] floats or "input_ids": [n] ints, "labels": pointer ids (``pointing.py``)} -> a
    batch of ``input_features`` [B, S, F] (or ``input_ids`` [B, S], padded with ``pad_token_id``), ``attention_mask``
    [B, S] and ``labels`` [B, T] padded with -100; right padding (pointer id j + 1 is column j)."""

    def __init__(self, pad_token_id: int = 0, return_tensors: str = "pt"):
        if return_tensors != "pt":
            raise ValueError(f"return_tensors must be 'pt', got {return_tensors!r}.")
        self.pad_token_id = pad_token_id

    def __call__(self, rows: Sequence[dict]) -> dict[str, Tensor]:
        if not rows:
            raise ValueError("DataCollatorForPointing got no rows.")
        key = "input_features" if "input_features" in rows[0] else "input_ids"
        inputs = [torch.as_tensor(row[key], dtype=torch.float32 if key == "input_features" else torch.long)
                  for row in rows]
        for index, row in enumerate(inputs):
            if len(row) == 0:
                raise ValueError(f"row {index} has no {key}: a pointer network needs at least one input.")
            if row.shape[1:] != inputs[0].shape[1:]:
                raise ValueError(f"row {index}'s {key} have {list(row.shape[1:])} features per input and row 0's "
                                 f"{list(inputs[0].shape[1:])}: every input of a batch needs the same number.")
        padding = 0.0 if key == "input_features" else self.pad_token_id
        batch = {key: torch.nn.utils.rnn.pad_sequence(inputs, batch_first=True, padding_value=padding),
                 "attention_mask": torch.nn.utils.rnn.pad_sequence(
                     [torch.ones(len(row), dtype=torch.long) for row in inputs], batch_first=True)}
        if "labels" in rows[0]:
            batch["labels"] = torch.nn.utils.rnn.pad_sequence(
                [torch.as_tensor(row["labels"], dtype=torch.long) for row in rows], batch_first=True,
                padding_value=-100)
        return batch


# image-to-text ---------------------------------------------------------------------------------------------------


@dataclass
class DataCollatorForImageToText:
    """Rows ``{"image": PIL image or uint8 array, "text": str}`` (the column names are fields) -> ``pixel_values``
    [B, C, H, W] and ``pixel_mask`` [B, H, W] (the image processor) and, when the rows have texts, ``labels`` [B, T]
    (the tokenizer's ids, ``</s>`` appended by it, right-padded with -100). Keep the image column in the dataset:
    ``TrainingArguments(remove_unused_columns=False)``."""

    image_processor: Any
    tokenizer: Any = None
    image_column: str = "image"
    text_column: str = "text"

    def __call__(self, features: list[dict]) -> dict[str, Tensor]:
        if not features:
            raise ValueError("`features` is empty: a batch needs at least one image.")
        missing = [index for index, feature in enumerate(features) if self.image_column not in feature]
        if missing:
            raise ValueError(f"`features[{missing[0]}]` has no {self.image_column!r} column (the image_column); its "
                             f"columns are {sorted(features[missing[0]])}.")
        batch = dict(self.image_processor([feature[self.image_column] for feature in features], return_tensors="pt"))
        if self.tokenizer is None or self.text_column not in features[0]:
            return batch
        batch["labels"], _ = _right_padded([self.tokenizer(feature[self.text_column])["input_ids"]
                                            for feature in features], -100)
        return batch


# memory network and passage QA -----------------------------------------------------------------------------------


@dataclass
class DataCollatorForMemoryNetwork:
    """Features ``{"input_ids": [question word ids], "memory_ids": [[word ids] per sentence, oldest first],
    "labels": answer id}`` -> ``input_ids``, ``attention_mask`` [B, Q]; ``memory_ids``, ``memory_attention_mask``
    [B, M, W]; ``labels`` [B] when the features have them. Everything right-padded with ``pad_token_id``; a memory
    longer than ``memory_size`` sentences keeps its most recent ones (the paper's memory of the 50 last sentences)."""

    pad_token_id: int = 0
    memory_size: int | None = None

    def __post_init__(self) -> None:
        if self.memory_size is not None and self.memory_size < 1:
            raise ValueError(f"`memory_size` must be a positive int or None, got {self.memory_size}.")

    def __call__(self, features: list[dict]) -> dict[str, Tensor]:
        if not features:
            raise ValueError("`features` is empty: a batch needs at least one question.")
        for index, feature in enumerate(features):
            missing = {"input_ids", "memory_ids"} - feature.keys()
            if missing:
                raise ValueError(f"Feature {index} lacks {sorted(missing)}; each needs 'input_ids' (the question) and "
                                 "'memory_ids' (one list of word ids per sentence).")
        memories = [list(feature["memory_ids"]) for feature in features]
        if self.memory_size is not None:
            memories = [memory[-self.memory_size:] for memory in memories]
        input_ids, attention_mask = _right_padded([list(feature["input_ids"]) for feature in features],
                                                  self.pad_token_id)
        sentences = max(1, max(len(memory) for memory in memories))
        words = max([1] + [len(sentence) for memory in memories for sentence in memory])
        memory_ids = torch.full((len(features), sentences, words), self.pad_token_id, dtype=torch.long)
        memory_attention_mask = torch.zeros_like(memory_ids)
        for row, memory in enumerate(memories):
            for slot, sentence in enumerate(memory):
                memory_ids[row, slot, :len(sentence)] = torch.tensor(sentence, dtype=torch.long)
                memory_attention_mask[row, slot, :len(sentence)] = 1
        output = dict(input_ids=input_ids, attention_mask=attention_mask, memory_ids=memory_ids,
                      memory_attention_mask=memory_attention_mask)
        label_name = "labels" if "labels" in features[0] else "label" if "label" in features[0] else None
        if label_name is not None:
            output["labels"] = torch.tensor([feature[label_name] for feature in features], dtype=torch.long)
        return output


@dataclass
class DataCollatorForTextPairs:
    """Features ``{"input_ids": question, "context_ids": passage, "labels": answer id}`` -> input_ids and
    context_ids, each right-padded with ``pad_token_id`` [B, T], [B, N], with attention_mask and
    context_attention_mask; labels [B]."""

    pad_token_id: int

    def __call__(self, rows: list[dict]) -> dict[str, Tensor]:
        batch = {}
        for ids, mask in (("input_ids", "attention_mask"), ("context_ids", "context_attention_mask")):
            batch[ids], batch[mask] = _right_padded([row[ids] for row in rows], self.pad_token_id)
        if "labels" in rows[0]:
            batch["labels"] = torch.tensor([row["labels"] for row in rows])
        return batch


# visual question answering ---------------------------------------------------------------------------------------


@dataclass
class DataCollatorForVisualQuestionAnswering:
    """Rows ``{"image": PIL image or uint8 array, "question": str, "answer": str}`` (the column names are fields) ->
    ``pixel_values`` [B, C, H, W] and ``pixel_mask`` [B, H, W] (the image processor), ``input_ids`` and
    ``attention_mask`` [B, T] (the questions' ids without special tokens, right-padded with the pad id), ``labels``
    [B] (``label2id``; an answer outside it is a ValueError). With ``question_type_column`` and ``question_types``
    (the type names, in id order) the rows' types become ``question_type_ids`` [B]: name
    ``TrainingArguments(label_names=["labels", "question_type_ids"])`` and ``compute_metrics`` receives them with the
    labels, for accuracy by question type. For a baseline that reads one input (``config.text_config.inputs``),
    pass ``inputs="question"`` or ``inputs="context"``: the batch then holds only that input."""

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
            raise ValueError(f"`inputs` must be 'both', 'question' or 'context' (the model config's "
                             f"`text_config.inputs`), got {self.inputs!r}.")

    def __call__(self, features: list[dict]) -> dict[str, Tensor]:
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

    def _questions(self, features: list[dict]) -> dict[str, Tensor]:
        """input_ids and attention_mask [B, T] of the questions, right-padded."""
        questions = [self.tokenizer(feature[self.question_column], add_special_tokens=False)["input_ids"]
                     for feature in features]
        empty = [index for index, ids in enumerate(questions) if not ids]
        if empty:
            raise ValueError(f"`features[{empty[0]}]`'s question {features[empty[0]][self.question_column]!r} has no "
                             "token: every question needs at least one word.")
        input_ids, attention_mask = _right_padded(questions, self.tokenizer.pad_token_id or 0)
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    @staticmethod
    def _lookup(ids: dict[str, int], feature: dict, column: str, name: str) -> int:
        value = feature.get(column)
        if value not in ids:
            known = sorted(ids)
            raise ValueError(f"{column} {value!r} is not in `{name}` ({known[:20]}{' …' if len(known) > 20 else ''}): "
                             f"every row's {column} must be one of them.")
        return ids[value]
