"""Log the parts of a model's loss that its output reports beside ``loss`` (``BahdanauSeq2SeqLMOutput.coverage_loss``),
as Trainer logs ``loss``: the mean over the training steps since the last log."""

from typing import Any

import torch

__all__ = ["LossPartsLogging"]


class LossPartsLogging:
    """Trainer mixin (before ``Trainer`` in the bases): each training step's ``coverage_loss`` (and
    ``doubly_stochastic_loss``, ``reinforce_loss``) is kept, and every log that reports ``loss`` also reports their
    mean under the same name."""

    LOGGED_PARTS = ("coverage_loss", "doubly_stochastic_loss", "reinforce_loss")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loss_parts: dict[str, list[float]] = {part: [] for part in self.LOGGED_PARTS}

    def compute_loss(self, model, inputs, return_outputs: bool = False, num_items_in_batch=None):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        if model.training:
            for part, values in self._loss_parts.items():
                value = outputs.get(part) if isinstance(outputs, dict) else getattr(outputs, part, None)
                if isinstance(value, torch.Tensor):
                    values.append(float(value.detach()))
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:
            for part, values in self._loss_parts.items():
                if values:
                    logs[part] = round(sum(values) / len(values), 4)
                    values.clear()
        super().log(logs, start_time)
