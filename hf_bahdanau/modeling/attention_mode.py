"""Soft or hard attention (``attention_mode``; Xu et al. 2015's taxonomy), one registered class each.

    soft   c_t = Σ_j α_tj v_j, the expectation over positions
    hard   c_t = v_{j_t}, one position: j_t ~ α_t in training, argmax_j α_tj at inference

A mode maps the weights α [N, (H,) T, S] of a scope to the weights the context is pooled with.
"""

from typing import Any

import torch
from torch import Tensor, nn

from .axes import ATTENTION_MODES

__all__ = ["ATTENTION_MODES", "AttentionMode", "HardAttention", "SoftAttention"]


class AttentionMode(nn.Module):
    """weights α [..., S] (each row sums to at most 1, 0 = not attendable) -> the weights that pool the context."""

    @classmethod
    def from_config(cls, config: Any) -> "AttentionMode":
        return cls()


@ATTENTION_MODES.register("soft")
class SoftAttention(AttentionMode):
    """The context is the α-weighted average of the values."""

    def forward(self, weights: Tensor) -> Tensor:
        return weights


@ATTENTION_MODES.register("hard")
class HardAttention(AttentionMode):
    """One position per step, j_t ~ α_t (training) or argmax_j α_tj (eval): the weights are its one-hot.

    Training uses the straight-through Gumbel-softmax estimator (Jang et al. 2017): the forward pass samples
    j_t = argmax_j (log α_tj + g_j), g_j ~ Gumbel(0, 1), which is a draw from α_t / Σ_j α_tj; the backward pass
    takes the gradient of y_t = softmax_j((log α_tj + g_j) / τ), τ = ``hard_attention_temperature``. We chose it
    over REINFORCE with a baseline (Xu et al.'s estimator) because it trains on the same cross-entropy with no
    baseline network and no reward variance to tune; a lower τ makes y_t closer to the one-hot and its gradient
    noisier. Rows with no attendable position stay all zero.
    """

    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, weights: Tensor) -> Tensor:
        attendable, lowest = weights > 0, torch.finfo(weights.dtype).min
        logits = torch.log(weights.masked_fill(~attendable, 1.0))  # no log 0: its gradient would be NaN
        if self.training:
            logits = logits - torch.empty_like(weights).exponential_().log()  # + Gumbel(0, 1) noise
        logits = logits.masked_fill(~attendable, lowest)
        one_hot = nn.functional.one_hot(logits.argmax(-1), weights.shape[-1]).to(weights.dtype)
        one_hot = one_hot * attendable.any(-1, keepdim=True)
        if not self.training:
            return one_hot
        relaxed = torch.softmax((logits / self.temperature).masked_fill(~attendable, lowest), dim=-1) * attendable
        return one_hot + (relaxed - relaxed.detach())  # exactly the one-hot forward, the relaxed gradient

    @classmethod
    def from_config(cls, config: Any) -> "HardAttention":
        return cls(config.hard_attention_temperature)
