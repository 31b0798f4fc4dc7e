"""Training time in the log: every entry of ``trainer_state.json``'s ``log_history`` gets ``training_minutes``, the
wall-clock minutes since training began minus the time spent evaluating, so a metric can be plotted against the
training budget it cost (``docs/results.md``'s G2P curve)."""

import time

from transformers import TrainerCallback

__all__ = ["TrainingBudgetCallback", "TrainingClockCallback"]


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


class TrainingBudgetCallback(TrainerCallback):
    """Stops training after ``minutes`` of training time (wall clock minus evaluations), so that runs compared at the
    same budget get the same minutes whatever their speed per step."""

    def __init__(self, minutes: float) -> None:
        if minutes <= 0:
            raise ValueError(f"`minutes` must be > 0, got {minutes}.")
        self.minutes = minutes
        self.clock = TrainingClockCallback()

    def on_train_begin(self, args, state, control, **kwargs):
        self.clock.on_train_begin(args, state, control)

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.clock.evaluating_seconds += (logs or {}).get("eval_runtime", 0.0)

    def on_step_end(self, args, state, control, **kwargs):
        spent = time.perf_counter() - self.clock.started - self.clock.evaluating_seconds
        if spent > self.minutes * 60:
            control.should_training_stop = True
