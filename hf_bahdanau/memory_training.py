"""Training an end-to-end memory network with ``Trainer``: the paper's linear start.

    from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork

    collator = DataCollatorForMemoryNetwork(pad_token_id=0, memory_size=model.config.memory_size)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=validation,
                      data_collator=collator, callbacks=[LinearStartCallback()])

A feature is ``{"input_ids": [question word ids], "memory_ids": [[word ids] per sentence, oldest first],
"labels": answer id}``. Linear start (Sukhbaatar et al. 2015, §4.2): training begins with the hops' softmax left out
(``config.linear_start=True``) and puts it back when the validation loss stops falling.

The collators, ``DataCollatorForMemoryNetwork`` and the passage QA model's ``DataCollatorForTextPairs``, are in
``hf_bahdanau.modeling.collators`` (their old names here still import, with a FutureWarning).
"""

import logging

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_callback import ExportableState

from .modeling import collators
from .modeling.old_names import old_names

__all__ = ["LinearStartCallback"]

logger = logging.getLogger(__name__)


class LinearStartCallback(TrainerCallback, ExportableState):
    """Sukhbaatar et al.'s linear start: while ``model.config.linear_start`` is True the hops have no softmax; once
    ``patience`` evaluations in a row have an ``eval_loss`` not below the best so far (or after ``max_epochs`` epochs,
    if given), the softmax is put back for the rest of training. Evaluate at least once an epoch (``eval_strategy="epoch"``).
    trainer_state.json keeps the epoch it ended at (``stateful_callbacks``): the saved config says
    ``linear_start=False``, the model card says how long training ran without the softmax."""

    def __init__(self, max_epochs: float | None = None, patience: int = 1) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"`patience` must be a positive int (evaluations without a fall), got {patience!r}.")
        self.max_epochs = max_epochs
        self.patience = patience
        self.best_loss = float("inf")
        self.without_fall = 0  # evaluations in a row whose loss was not below the best
        self.ended_at_epoch: float | None = None

    def _end(self, state: TrainerState, model, why: str) -> None:
        model.config.linear_start = False
        self.ended_at_epoch = state.epoch
        logger.info("Linear start ends at epoch %.2f (%s): the hops' softmax is back.", state.epoch or 0.0, why)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model=None,
                    metrics: dict[str, float] | None = None, **kwargs) -> None:
        if model is None or not model.config.linear_start or not metrics or "eval_loss" not in metrics:
            return
        self.without_fall = self.without_fall + 1 if metrics["eval_loss"] >= self.best_loss else 0
        if self.without_fall >= self.patience:
            self._end(state, model, f"the validation loss {metrics['eval_loss']:.4f} did not fall below "
                                    f"{self.best_loss:.4f}" + (f" for {self.patience} evaluations"
                                                               if self.patience > 1 else ""))
        self.best_loss = min(self.best_loss, metrics["eval_loss"])

    def on_epoch_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model=None,
                     **kwargs) -> None:
        if (model is not None and model.config.linear_start and self.max_epochs is not None
                and state.epoch is not None and state.epoch >= self.max_epochs):
            self._end(state, model, f"{self.max_epochs} epochs")

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs) -> None:
        state.stateful_callbacks[type(self).__name__] = self.state()

    def state(self) -> dict:
        return {"args": {"max_epochs": self.max_epochs, "patience": self.patience},
                "attributes": {"ended_at_epoch": self.ended_at_epoch}}


__getattr__ = old_names(__name__, {"DataCollatorForMemoryNetwork": collators.DataCollatorForMemoryNetwork,
                                   "DataCollatorForTextPairs": collators.DataCollatorForTextPairs})
