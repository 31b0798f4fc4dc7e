"""Evaluation and prediction in the order of the split's rows.

transformers' ``--train_sampling_strategy group_by_length`` groups the evaluation and prediction batches by length
too, so ``predict().predictions`` and what ``compute_metrics`` sees come in another order than the split's rows:
whatever is read from the split beside them (each row's references for WER and PER, the words a copy model may copy,
a predictions file meant to line up with the test file) would belong to other rows. Training keeps its length
grouping; evaluation and prediction read the rows in order.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from transformers import Trainer

__all__ = ["InOrderTrainer", "SplitOrderEvaluation"]


class SplitOrderEvaluation:
    """Trainer mixin (before ``Trainer`` in the bases): ``evaluate`` and ``predict`` read the rows in order, whatever
    ``train_sampling_strategy`` is."""

    def evaluate(self, *args, **kwargs):
        with self._rows_in_order():
            return super().evaluate(*args, **kwargs)

    def predict(self, *args, **kwargs):
        with self._rows_in_order():
            return super().predict(*args, **kwargs)

    @contextmanager
    def _rows_in_order(self) -> Iterator[None]:
        strategy = self.args.train_sampling_strategy
        if strategy == "group_by_length":  # the only strategy that also reorders evaluation
            self.args.train_sampling_strategy = "random"  # evaluation: sequential (one process) or sharded in order
        try:
            yield
        finally:
            self.args.train_sampling_strategy = strategy


class InOrderTrainer(SplitOrderEvaluation, Trainer):
    """``Trainer`` whose evaluation and prediction read the rows in order."""
