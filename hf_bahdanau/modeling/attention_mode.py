"""Soft or hard attention (``attention_mode``; Xu et al. 2015's taxonomy), one registered class each.

    soft   c_t = Σ_j α_tj v_j, the expectation over positions
    hard   c_t = v_{j_t}, one position: j_t ~ α_t in training, argmax_j α_tj at inference

A mode maps the weights α [N, (H,) T, S] of a scope to the weights the context is pooled with. A mode trained by
REINFORCE also reports its policy terms (``policy``): log α_{t,j_t} and the entropy H(α_t) of each step, which the
decoder collects in its ``AttentionState`` and the model's loss reads (``reinforce``).
"""

from typing import Any

import torch
from torch import Tensor, nn

from .axes import ATTENTION_MODES

__all__ = ["ATTENTION_MODES", "AttentionMode", "HardAttention", "ReinforceHardAttention", "SoftAttention"]


class AttentionMode(nn.Module):
    """weights α [..., S] (each row sums to at most 1, 0 = not attendable) -> the weights that pool the context."""

    @classmethod
    def from_config(cls, config: Any) -> "AttentionMode":
        return cls()

    def policy(self, weights: Tensor, pooled: Tensor) -> tuple[Tensor, Tensor] | None:
        """The REINFORCE terms of these steps from α [N, T, S] (or one step [N, S]) and the weights this mode pooled
        with: (log α_{t,j_t}, H(α_t)), each [N, T] (or [N]); None for a mode trained by backpropagation alone."""
        return None


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
        one_hot = self.one_hot(self.choose(logits), weights) * attendable.any(-1, keepdim=True)
        if not self.training:
            return one_hot
        relaxed = torch.softmax((logits / self.temperature).masked_fill(~attendable, lowest), dim=-1) * attendable
        return one_hot + (relaxed - relaxed.detach())  # exactly the one-hot forward, the relaxed gradient

    @classmethod
    def from_config(cls, config: Any) -> "HardAttention":
        return cls(config.hard_attention_temperature)

    @staticmethod
    def choose(logits: Tensor) -> Tensor:
        """The chosen position of each row [...]: the argmax of log α (+ Gumbel noise in training: a draw from α)."""
        return logits.argmax(-1)

    @staticmethod
    def one_hot(positions: Tensor, weights: Tensor) -> Tensor:
        # = one_hot(positions, S), which torch.export would trace at the example's S only
        columns = torch.arange(weights.shape[-1], device=positions.device)
        return (columns == positions.unsqueeze(-1)).to(weights.dtype)


@ATTENTION_MODES.register("hard_reinforce")
class ReinforceHardAttention(HardAttention):
    """The positions of ``HardAttention`` (a draw j_t ~ α_t in training, the argmax at inference), trained as Xu et al.
    (2015) train hard attention: no gradient flows through the one-hot weights; the loss adds the score-function term
    −(R − b) Σ_t log α_{t,j_t} with the reward R = log p(y | j, x) of the sampled positions, a moving-average baseline b
    and the entropy bonus −λ_e Σ_t H(α_t) (``reinforce.reinforce_loss``, from this mode's ``policy``)."""

    def forward(self, weights: Tensor) -> Tensor:
        attendable = weights > 0
        if not self.training:
            return super().forward(weights)
        logits = torch.log(weights.detach().masked_fill(~attendable, 1.0))
        logits = (logits - torch.empty_like(logits).exponential_().log()).masked_fill(~attendable, -torch.inf)
        return self.one_hot(self.choose(logits), weights) * attendable.any(-1, keepdim=True)

    def policy(self, weights: Tensor, pooled: Tensor) -> tuple[Tensor, Tensor] | None:
        """(log π_{t,j_t}, H(π_t) = −Σ_j π_tj log π_tj) of the distribution the position was drawn from, π_t = α_t /
        Σ_j α_tj (a local scope's Gaussian-weighted α sums to less than 1); 0 for a row with no attendable position."""
        if not self.training:
            return None
        total = weights.sum(-1, keepdim=True)
        policy = weights / total.masked_fill(total <= 0, 1.0)
        log_policy = torch.log(policy.masked_fill(policy <= 0, 1.0))  # log 1 = 0 off the attendable positions
        return (pooled.detach() * log_policy).sum(-1), -(policy * log_policy).sum(-1)
