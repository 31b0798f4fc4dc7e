"""Training time in the log: every entry of ``trainer_state.json``'s ``log_history`` gets ``training_minutes``, the
wall-clock minutes since training began minus the time spent evaluating, so a metric can be plotted against the
training budget it cost (``docs/results.md``'s G2P curve)."""

import time

from transformers import TrainerCallback

__all__ = ["TrainingClockCallback"]


class TrainingClockCallback(TrainerCallback):
    """Adds ``training_minutes`` to each log entry; evaluations (their ``eval_runtime``) do not count."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.evaluating_seconds = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        self.started, self.evaluating_seconds = time.perf_counter(), 0.0

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.started is None or not state.log_history:
            return
        self.evaluating_seconds += (logs or {}).get("eval_runtime", 0.0)
        minutes = (time.perf_counter() - self.started - self.evaluating_seconds) / 60
        state.log_history[-1]["training_minutes"] = round(minutes, 3)
