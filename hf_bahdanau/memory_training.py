"""Training an end-to-end memory network with ``Trainer``: batching memories, and the paper's linear start.

    collator = DataCollatorForMemoryNetwork(pad_token_id=0, memory_size=model.config.memory_size)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=validation,
                      data_collator=collator, callbacks=[LinearStartCallback()])

A feature is ``{"input_ids": [question word ids], "memory_ids": [[word ids] per sentence, oldest first],
"labels": answer id}``. Linear start (Sukhbaatar et al. 2015, §4.2): training begins with the hops' softmax left out
(``config.linear_start=True``) and puts it back when the validation loss stops falling.

The question–passage co-attention classifier (``BahdanauForTextPairClassification``) reads the story as one text:
``DataCollatorForTextPairs(pad_token_id)`` batches features ``{"input_ids": question, "context_ids": passage,
"labels": answer id}``.
"""

import logging
from dataclasses import dataclass

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_callback import ExportableState

__all__ = ["DataCollatorForMemoryNetwork", "DataCollatorForTextPairs", "LinearStartCallback"]

logger = logging.getLogger(__name__)


@dataclass
class DataCollatorForMemoryNetwork:
    """Features -> ``input_ids``, ``attention_mask`` [B, Q]; ``memory_ids``, ``memory_attention_mask`` [B, M, W];
    ``labels`` [B] when the features have them. Everything right-padded with ``pad_token_id``; a memory longer than
    ``memory_size`` sentences keeps its most recent ones (the paper's memory of the 50 last sentences)."""

    pad_token_id: int = 0
    memory_size: int | None = None

    def __post_init__(self) -> None:
        if self.memory_size is not None and self.memory_size < 1:
            raise ValueError(f"`memory_size` must be a positive int or None, got {self.memory_size}.")

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
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
        questions = [list(feature["input_ids"]) for feature in features]
        batch, length = len(features), max(len(question) for question in questions)
        sentences = max(1, max(len(memory) for memory in memories))
        words = max([1] + [len(sentence) for memory in memories for sentence in memory])
        input_ids = torch.full((batch, length), self.pad_token_id, dtype=torch.long)
        memory_ids = torch.full((batch, sentences, words), self.pad_token_id, dtype=torch.long)
        attention_mask, memory_attention_mask = torch.zeros_like(input_ids), torch.zeros_like(memory_ids)
        for row, (question, memory) in enumerate(zip(questions, memories)):
            input_ids[row, :len(question)], attention_mask[row, :len(question)] = torch.tensor(question), 1
            for slot, sentence in enumerate(memory):
                memory_ids[row, slot, :len(sentence)] = torch.tensor(sentence, dtype=torch.long)
                memory_attention_mask[row, slot, :len(sentence)] = 1
        output = dict(input_ids=input_ids, attention_mask=attention_mask, memory_ids=memory_ids,
                      memory_attention_mask=memory_attention_mask)
        label_name = "labels" if "labels" in features[0] else "label" if "label" in features[0] else None
        if label_name is not None:
            output["labels"] = torch.tensor([feature[label_name] for feature in features], dtype=torch.long)
        return output


class LinearStartCallback(TrainerCallback, ExportableState):
    """Sukhbaatar et al.'s linear start: while ``model.config.linear_start`` is True the hops have no softmax; at the
    first evaluation whose ``eval_loss`` is not below the best so far (or after ``max_epochs`` epochs, if given), the
    softmax is put back for the rest of training. Evaluate at least once an epoch (``eval_strategy="epoch"``).
    trainer_state.json keeps the epoch it ended at (``stateful_callbacks``): the saved config says
    ``linear_start=False``, the model card says how long training ran without the softmax."""

    def __init__(self, max_epochs: float | None = None) -> None:
        self.max_epochs = max_epochs
        self.best_loss = float("inf")
        self.ended_at_epoch: float | None = None

    def _end(self, state: TrainerState, model, why: str) -> None:
        model.config.linear_start = False
        self.ended_at_epoch = state.epoch
        logger.info("Linear start ends at epoch %.2f (%s): the hops' softmax is back.", state.epoch or 0.0, why)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model=None,
                    metrics: dict[str, float] | None = None, **kwargs) -> None:
        if model is None or not model.config.linear_start or not metrics or "eval_loss" not in metrics:
            return
        if metrics["eval_loss"] >= self.best_loss:
            self._end(state, model, f"the validation loss {metrics['eval_loss']:.4f} did not fall below "
                                    f"{self.best_loss:.4f}")
        self.best_loss = min(self.best_loss, metrics["eval_loss"])

    def on_epoch_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model=None,
                     **kwargs) -> None:
        if (model is not None and model.config.linear_start and self.max_epochs is not None
                and state.epoch is not None and state.epoch >= self.max_epochs):
            self._end(state, model, f"{self.max_epochs} epochs")

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        state.stateful_callbacks[type(self).__name__] = self.state()

    def state(self) -> dict:
        return {"args": {"max_epochs": self.max_epochs}, "attributes": {"ended_at_epoch": self.ended_at_epoch}}


@dataclass
class DataCollatorForTextPairs:
    """input_ids (the question) and context_ids (the passage), each right-padded with ``pad_token_id`` [B, T], [B, N],
    with attention_mask and context_attention_mask; labels [B]."""

    pad_token_id: int

    def __call__(self, rows: list[dict]) -> dict[str, torch.Tensor]:
        batch = {}
        for ids, mask in (("input_ids", "attention_mask"), ("context_ids", "context_attention_mask")):
            width = max(len(row[ids]) for row in rows)
            batch[ids] = torch.tensor([row[ids] + [self.pad_token_id] * (width - len(row[ids])) for row in rows])
            batch[mask] = torch.tensor([[1] * len(row[ids]) + [0] * (width - len(row[ids])) for row in rows])
        if "labels" in rows[0]:
            batch["labels"] = torch.tensor([row["labels"] for row in rows])
        return batch
