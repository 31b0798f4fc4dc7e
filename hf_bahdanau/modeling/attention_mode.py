"""Soft or hard attention (``attention_mode``; Xu et al. 2015's taxonomy), one registered class each.

    soft   c_t = Σ_j α_tj v_j, the expectation over positions
    hard   c_t = v_{j_t}, one position: j_t ~ α_t in training, argmax_j α_tj at inference

A mode maps the weights α [N, (H,) T, S] of a scope to the weights the context is pooled with. A mode trained by
REINFORCE also reports its policy terms (``policy``): log α_{t,j_t} and the entropy H(α_t) of each step, which the
decoder collects in its ``AttentionState`` and the model's loss reads (``reinforce``). A mode may also draw, once per
sequence when decoding starts, the sequences that attend by the expected context α instead (``draw_expected_rows``,
carried in ``AttentionState.expected_rows``): Xu et al.'s variance reduction for REINFORCE.
"""

from typing import Any

import torch
from torch import Tensor, nn

from .axes import ATTENTION_MODES

__all__ = ["ATTENTION_MODES", "AttentionMode", "HardAttention", "ReinforceHardAttention", "SoftAttention",
           "per_row"]


class AttentionMode(nn.Module):
    """weights α [N, ..., S] (each row sums to at most 1, 0 = not attendable) -> the weights that pool the context;
    ``expected_rows`` [N] bool, what this mode's ``draw_expected_rows`` drew for the sequence (None for a mode that
    draws none), marks the sequences that pool with α itself."""

    @classmethod
    def from_config(cls, config: Any) -> "AttentionMode":
        return cls()

    def draw_expected_rows(self, rows: int, device: torch.device) -> Tensor | None:
        """The sequences [rows] bool that pool with α itself (the expected context) instead of this mode's weights,
        drawn once per sequence when decoding starts; None when every sequence uses this mode (every mode but
        ``hard_reinforce`` in training with ``reinforce_expected_context_probability`` > 0)."""
        return None

    def policy(self, weights: Tensor, pooled: Tensor,
               expected_rows: Tensor | None = None) -> tuple[Tensor, Tensor] | None:
        """The REINFORCE terms of these steps from α [N, T, S] (or one step [N, S]), the weights this mode pooled
        with and its ``draw_expected_rows``: (log α_{t,j_t}, H(α_t)), each [N, T] (or [N]); None for a mode trained by
        backpropagation alone."""
        return None


def per_row(rows: Tensor, like: Tensor) -> Tensor:
    """A per-sequence flag [N] shaped to broadcast over ``like`` [N, ...]."""
    return rows.view(-1, *(1,) * (like.dim() - 1))


@ATTENTION_MODES.register("soft")
class SoftAttention(AttentionMode):
    """The context is the α-weighted average of the values."""

    def forward(self, weights: Tensor, expected_rows: Tensor | None = None) -> Tensor:
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

    def forward(self, weights: Tensor, expected_rows: Tensor | None = None) -> Tensor:
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
    and the entropy bonus −λ_e Σ_t H(α_t) (``reinforce.reinforce_loss``, from this mode's ``policy``).

    Xu et al.'s third variance reduction (§4.1: "with probability 0.5 for a given image, we set the sampled attention
    location s̃ to its expected value α"): in training, each sequence, with probability p =
    ``reinforce_expected_context_probability``, attends by α itself at every step (soft attention), drawn once per
    sequence (``draw_expected_rows``). Those sequences train α through the ordinary gradient of the context and add
    no score-function term (their attention is deterministic); their entropy bonus and their R in the baseline stay.
    With p = 0 no draw is made, and training is exactly REINFORCE on every sequence."""

    def __init__(self, temperature: float, expected_context_probability: float = 0.0) -> None:
        super().__init__(temperature)
        self.expected_context_probability = expected_context_probability

    @classmethod
    def from_config(cls, config: Any) -> "ReinforceHardAttention":
        return cls(config.hard_attention_temperature, config.reinforce_expected_context_probability)

    def draw_expected_rows(self, rows: int, device: torch.device) -> Tensor | None:
        """In training with p > 0: each sequence takes the expected context with probability p, u_n < p with
        u_n ~ U[0, 1) (p = 1: every sequence); else None."""
        if not self.training or self.expected_context_probability == 0:
            return None
        return torch.rand(rows, device=device) < self.expected_context_probability

    def forward(self, weights: Tensor, expected_rows: Tensor | None = None) -> Tensor:
        attendable = weights > 0
        if not self.training:
            return super().forward(weights)
        logits = torch.log(weights.detach().masked_fill(~attendable, 1.0))
        logits = (logits - torch.empty_like(logits).exponential_().log()).masked_fill(~attendable, -torch.inf)
        sampled = self.one_hot(self.choose(logits), weights) * attendable.any(-1, keepdim=True)
        if expected_rows is None:
            return sampled
        return torch.where(per_row(expected_rows, weights), weights, sampled)

    def policy(self, weights: Tensor, pooled: Tensor,
               expected_rows: Tensor | None = None) -> tuple[Tensor, Tensor] | None:
        """(log π_{t,j_t}, H(π_t) = −Σ_j π_tj log π_tj) of the distribution the position was drawn from, π_t = α_t /
        Σ_j α_tj (a local scope's Gaussian-weighted α sums to less than 1); log π_{t,j_t} is 0 for a row with no
        attendable position and for the ``expected_rows``, which drew no position."""
        if not self.training:
            return None
        total = weights.sum(-1, keepdim=True)
        policy = weights / total.masked_fill(total <= 0, 1.0)
        log_policy = torch.log(policy.masked_fill(policy <= 0, 1.0))  # log 1 = 0 off the attendable positions
        log_chosen = (pooled.detach() * log_policy).sum(-1)
        if expected_rows is not None:
            log_chosen = log_chosen.masked_fill(per_row(expected_rows, log_chosen), 0.0)
        return log_chosen, -(policy * log_policy).sum(-1)
