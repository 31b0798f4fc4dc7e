"""The one Trainer of every task.

``TaskTrainer`` is transformers' ``Seq2SeqTrainer`` (which is ``Trainer`` unless ``--predict_with_generate`` asks
evaluation to call ``generate()``) with what every task needs:

- evaluation and prediction read the split's rows in order. ``--train_sampling_strategy group_by_length`` groups the
  evaluation batches by length too, so ``predict().predictions`` and what ``compute_metrics`` sees would come in
  another order than the split's rows, and whatever is read from the split beside them (each row's references, the
  words a copy model may copy, a predictions file meant to line up with the test file) would belong to other rows;
- the parts of a loss that a model reports beside ``loss`` (``coverage_loss``, ``doubly_stochastic_loss``,
  ``reinforce_loss``) are logged as ``loss`` is: their mean over the steps since the last log;
- evaluation leaves the model's generation config as it found it (transformers' writes every default into it after
  its first batch, ``max_length=20`` among them, which then clashes with ``max_new_tokens`` at every later
  ``generate()`` and would be saved with the model);
- ``split_columns``: columns of the split being evaluated that the model does not read (e.g. ``source_oovs``,
  ``references``) are kept in ``split_values`` for ``compute_metrics`` and the prediction lines;
- evaluation gathers as ``Trainer`` does (``accelerator.gather_for_metrics``), where ``Seq2SeqTrainer.evaluate`` and
  ``predict`` switch to ``accelerator.gather``: with it the last, partial batch's loss counts as a full batch's in
  ``eval_loss`` (the mean of the batch means, not of the rows) and, under DDP, the rows that pad the last shard stay
  in the predictions. ``gather_function`` is an attribute of Trainer, not of its documented API: the behaviour is
  tested (tests/test_task_trainer.py) on the lowest and the newest transformers CI runs;
- ``loss_reduction="sum"``: the training loss is summed over the batch's items instead of averaged (Sukhbaatar et al.
  2015's memory network trains so): the model's mean over Trainer's ``num_items_in_batch`` times that count, so its
  gradient is that many times the mean's; evaluation's loss stays the mean;
- ``lr_scheduler_factory``: (optimizer, optimizer steps in one epoch) -> the learning-rate schedule, instead of
  ``--lr_scheduler_type``'s (e.g. a step schedule by epochs, which transformers has not);
- ``max_tokens_per_batch``: training batches of at most that many padded tokens of ``input_ids`` + ``labels``
  (``TokenBatchSampler``, training/common/token_batching.py) instead of ``--per_device_train_batch_size`` rows;
  evaluation keeps its batches of ``--per_device_eval_batch_size`` rows, in the split's order. Trainer passes a batch
  sampler to its data loader only for its own ``BatchRebalanceSampler``, so ``get_train_dataloader`` builds this one
  and drops the columns the model does not read with Trainer's ``_remove_unused_columns`` (a private method, called
  by keyword); ``TokenBatchEpochs``, a callback, gives it each epoch's number, resumed runs under DDP included.
"""

import copy
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils.data import DataLoader
from transformers import Seq2SeqTrainer, TrainerCallback

from training.common.token_batching import TokenBatchSampler, row_lengths

__all__ = ["LOSS_REDUCTIONS", "TaskTrainer"]

logger = logging.getLogger(__name__)

LOSS_REDUCTIONS = ("mean", "sum")


class TokenBatchEpochs(TrainerCallback):
    """Gives the token batches each epoch's number as it begins. Trainer's own ``set_epoch`` reaches a batch sampler
    one wrapper deep; under DDP, resuming puts accelerate's ``SkipBatchSampler`` around its ``BatchSamplerShard``, and
    the resumed epoch would be drawn as epoch 0."""

    def __init__(self, batches: TokenBatchSampler) -> None:
        self.batches = batches

    def on_epoch_begin(self, args, state, control, **kwargs) -> None:
        self.batches.set_epoch(math.floor(state.epoch))  # whole at an epoch's start; a fraction when resuming in one


class TaskTrainer(Seq2SeqTrainer):
    """``Seq2SeqTrainer`` in split order, logging the loss's parts, keeping the generation config and the
    ``split_columns`` of the split being evaluated (``split_values[column]``, one value per row, or absent); the
    training loss summed over the batch with ``loss_reduction="sum"``, the schedule of ``lr_scheduler_factory``, the
    training batches of ``max_tokens_per_batch`` tokens (``train_batches``)."""

    LOGGED_LOSS_PARTS = ("coverage_loss", "doubly_stochastic_loss", "reinforce_loss")

    def __init__(self, *args: Any, split_columns: Sequence[str] = (), loss_reduction: str = "mean",
                 lr_scheduler_factory: Callable[[torch.optim.Optimizer, int], torch.optim.lr_scheduler.LRScheduler]
                 | None = None, max_tokens_per_batch: int | None = None, **kwargs: Any) -> None:
        if loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(f"`loss_reduction` must be one of {list(LOSS_REDUCTIONS)}, got {loss_reduction!r}.")
        super().__init__(*args, **kwargs)  # sets gather_function: accelerator.gather_for_metrics
        if loss_reduction == "sum" and not self.model_accepts_loss_kwargs:
            raise ValueError(f"`loss_reduction`='sum' needs a model whose loss is divided by Trainer's "
                             f"`num_items_in_batch` (`accepts_loss_kwargs`), which {type(self.model).__name__} is not.")
        self.loss_reduction = loss_reduction
        self.lr_scheduler_factory = lr_scheduler_factory
        self.update_steps_per_epoch: int | None = None
        self.split_columns = tuple(split_columns)
        self.split_values: dict[str, list] = {}
        self._loss_parts: dict[str, list[float]] = {part: [] for part in self.LOGGED_LOSS_PARTS}
        self.train_batches = None if max_tokens_per_batch is None else self._token_batches(max_tokens_per_batch)
        if self.train_batches is not None:
            self.add_callback(TokenBatchEpochs(self.train_batches))

    def _token_batches(self, max_tokens_per_batch: int) -> TokenBatchSampler | None:
        """The training set's batches by tokens (None without a training set); a ValueError for a sampling strategy
        they would replace, or a row that no batch can hold."""
        if self.args.train_sampling_strategy != "random":
            raise ValueError(f"`--max_tokens_per_batch` forms its own batches, rows of like lengths together and "
                             f"shuffled: leave out `--train_sampling_strategy "
                             f"{self.args.train_sampling_strategy}`.")
        if self.train_dataset is None:
            return None
        seed = self.args.seed if self.args.data_seed is None else self.args.data_seed
        batches = TokenBatchSampler(row_lengths(self.train_dataset, "input_ids"),
                                    row_lengths(self.train_dataset, "labels"), max_tokens_per_batch, seed=seed,
                                    num_processes=self.args.world_size)
        logger.info("Batches by tokens: %d training batches of at most %d tokens per epoch (instead of batches of "
                    "--per_device_train_batch_size rows)", len(batches), max_tokens_per_batch)
        return batches

    def get_train_dataloader(self) -> DataLoader:
        if self.train_batches is None:
            return super().get_train_dataloader()
        dataset = self._remove_unused_columns(self.train_dataset, description="Training")
        loader = DataLoader(dataset, batch_sampler=self.train_batches, collate_fn=self.data_collator,
                            num_workers=self.args.dataloader_num_workers, pin_memory=self.args.dataloader_pin_memory,
                            persistent_workers=self.args.dataloader_persistent_workers,
                            prefetch_factor=self.args.dataloader_prefetch_factor)
        return self.accelerator.prepare(loader)  # under DDP: batch k to process k mod P (a multiple of P batches)

    @property
    def gather_function(self):
        return self._gather_function

    @gather_function.setter
    def gather_function(self, function) -> None:
        if function != self.accelerator.gather:  # Seq2SeqTrainer's switch, at each evaluate() and predict()
            self._gather_function = function

    def evaluate(self, eval_dataset=None, *args, **kwargs):
        self._keep_split_columns(self.eval_dataset if eval_dataset is None else eval_dataset)
        with self._rows_in_order():
            return super().evaluate(eval_dataset, *args, **kwargs)

    def predict(self, test_dataset, *args, **kwargs):
        self._keep_split_columns(test_dataset)
        with self._rows_in_order():
            return super().predict(test_dataset, *args, **kwargs)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        generation_config = copy.deepcopy(getattr(self.model, "generation_config", None))
        try:
            # all of generate() in the precision of accelerate's wrapped forward (autocast under --bf16/--fp16): its
            # search steps after the first run the decoder directly, not through forward
            with self.accelerator.autocast():
                return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys,
                                               **gen_kwargs)
        finally:
            if generation_config is not None:
                self.model.generation_config = generation_config

    def compute_loss(self, model, inputs, return_outputs: bool = False, num_items_in_batch=None):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        if model.training:
            if self.loss_reduction == "sum":
                loss = loss * num_items_in_batch
            for part, values in self._loss_parts.items():
                value = outputs.get(part) if isinstance(outputs, dict) else getattr(outputs, part, None)
                if isinstance(value, torch.Tensor):
                    values.append(float(value.detach()))
        return (loss, outputs) if return_outputs else loss

    def set_initial_training_values(self, args, dataloader):
        values = super().set_initial_training_values(args, dataloader)
        self.update_steps_per_epoch = values[1]  # num_update_steps_per_epoch, for lr_scheduler_factory
        return values

    def create_scheduler(self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None):
        if self.lr_scheduler_factory is None:
            return super().create_scheduler(num_training_steps, optimizer)
        if self.lr_scheduler is None:  # kept across train() calls, as one passed in ``optimizers`` is
            self.lr_scheduler = self.lr_scheduler_factory(optimizer or self.optimizer, self.update_steps_per_epoch)
        return self.lr_scheduler

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:
            for part, values in self._loss_parts.items():
                if values:
                    logs[part] = round(sum(values) / len(values), 4)
                    values.clear()
        super().log(logs, start_time)

    def _keep_split_columns(self, dataset) -> None:
        columns = getattr(dataset, "column_names", None) or ()
        self.split_values = {name: dataset[name] for name in self.split_columns if name in columns}

    @contextmanager
    def _rows_in_order(self) -> Iterator[None]:
        strategy = self.args.train_sampling_strategy
        if strategy == "group_by_length":  # the only strategy that also reorders evaluation
            self.args.train_sampling_strategy = "random"  # evaluation: sequential (one process) or sharded in order
        try:
            yield
        finally:
            self.args.train_sampling_strategy = strategy
