"""Where the decoder may attend: the scope of its attention, one registered class each (``attention_scope``).

A scope turns the scores e_tj of any score function into the weights α_tj:

    global     α_t = softmax_j(e_tj) over every real source token                        (Bahdanau; Luong §3.1)
    local-m    α_tj = softmax_{j in window}(e_tj) · exp(−(j − p_t)² / 2σ²),  p_t = t       (Luong et al. 2015, §3.2)
    local-p    the same with p_t = S · sigmoid(v_pᵀ tanh(W_p q_t)), S the source's length
    monotonic  p_tj = sigmoid(g e_tj + r + noise); in training the expected alignment
               α_tj = p_tj Σ_{k≤j} α_{t−1,k} Π_{l=k}^{j−1} (1 − p_tl); at inference attend at the first j at or after
               the previous position with p_tj ≥ ½                                      (Raffel et al. 2017)

The window of the local scopes is the positions j (0 … S − 1) with |j − p_t| ≤ D, D = ``local_window``, σ = D / 2;
positions outside it and padding get exactly 0, and the weights of a step sum to at most 1. Shapes: N decoder rows,
T steps, S source positions, H heads (``multihead`` scores [N, H, T, S]), Dq the query size.
"""

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from transformers import initialization as init

from .attention import broadcast_like, masked_softmax
from .axes import ATTENTION_SCOPES
from .precision import float32_at_least, softmax_dtype
from .state import AttentionState

__all__ = ["ATTENTION_SCOPES", "AttentionScope", "GlobalScope", "LocalMonotonicScope", "LocalPredictiveScope",
           "MonotonicScope"]


class AttentionScope(nn.Module):
    """scores e [N, T, S] (or [N, H, T, S]) -> weights α of the same shape, for T steps from ``state``.

    ``is_recurrent``: α_t depends on α_{t−1}, which the decoding state carries (``AttentionState.previous``).
    """

    is_recurrent: bool = False

    def initial_previous(self, mask: Tensor, dtype: torch.dtype) -> Tensor | None:
        """α_0 of a recurrent scope [N, S] for sources with ``mask`` [N, S]; None for the others."""
        return None

    def align(self, scores: Tensor, query: Tensor, mask: Tensor, state: AttentionState) -> Tensor:
        """scores [N, (H,) T, S], queries [N, T, Dq], mask [N, S] (True = real token), the state before step 0 of
        the T -> α, the shape of scores."""
        raise NotImplementedError

    @classmethod
    def from_config(cls, config: Any, query_size: int) -> "AttentionScope":
        return cls()


@ATTENTION_SCOPES.register("global")
class GlobalScope(AttentionScope):
    """α_t = softmax_j(e_tj) over every real source token."""

    def align(self, scores: Tensor, query: Tensor, mask: Tensor, state: AttentionState) -> Tensor:
        return masked_softmax(scores, mask)


class LocalScope(AttentionScope):
    """Luong's local attention around a centre p_t [N, T] (``centres``): softmax over the window |j − p_t| ≤ D, times
    the Gaussian exp(−(j − p_t)² / 2σ²), σ = D / 2."""

    def __init__(self, window: int) -> None:
        super().__init__()
        self.window = window

    def centres(self, query: Tensor, lengths: Tensor, state: AttentionState) -> Tensor:
        """p_t [N, T] from queries [N, T, Dq] and the sources' lengths [N]."""
        raise NotImplementedError

    def align(self, scores: Tensor, query: Tensor, mask: Tensor, state: AttentionState) -> Tensor:
        computed = float32_at_least(scores)  # positions too: bfloat16 counts exactly only up to 256 (``precision``)
        centres = self.centres(query, mask.sum(-1), state).to(computed.dtype)  # [N, T]
        positions = torch.arange(mask.shape[-1], device=scores.device, dtype=computed.dtype)
        distance = positions - centres.unsqueeze(-1)  # j − p_t [N, T, S]
        window = (distance.abs() <= self.window) & mask.unsqueeze(1)
        sigma = self.window / 2
        gaussian = torch.exp(-distance.square() / (2 * sigma**2))
        return (masked_softmax(computed, window) * broadcast_like(gaussian, computed)).to(softmax_dtype(scores))

    @classmethod
    def from_config(cls, config: Any, query_size: int) -> "LocalScope":
        return cls(config.local_window)


@ATTENTION_SCOPES.register("local-m")
class LocalMonotonicScope(LocalScope):
    """local-m: p_t = t, the target position (0 for the first token), clipped to the last source position."""

    def centres(self, query: Tensor, lengths: Tensor, state: AttentionState) -> Tensor:
        steps = state.step + torch.arange(query.shape[1], device=query.device)  # t [T]
        last = (lengths - 1).clamp_min(0).unsqueeze(-1)  # [N, 1]
        return torch.minimum(steps.unsqueeze(0), last)


@ATTENTION_SCOPES.register("local-p")
class LocalPredictiveScope(LocalScope):
    """local-p: p_t = S · sigmoid(v_pᵀ tanh(W_p q_t)), predicted from the query; W_p = ``position_proj``
    [Dq -> A], v_p = ``position_energy`` [A -> 1]."""

    def __init__(self, window: int, query_size: int, attention_size: int) -> None:
        super().__init__(window)
        self.position_proj = nn.Linear(query_size, attention_size, bias=False)
        self.position_energy = nn.Linear(attention_size, 1, bias=False)

    def centres(self, query: Tensor, lengths: Tensor, state: AttentionState) -> Tensor:
        fraction = torch.sigmoid(self.position_energy(torch.tanh(self.position_proj(query)))).squeeze(-1)  # [N, T]
        return lengths.unsqueeze(-1) * fraction

    @classmethod
    def from_config(cls, config: Any, query_size: int) -> "LocalPredictiveScope":
        return cls(config.local_window, query_size, config.attention_size)


@ATTENTION_SCOPES.register("monotonic")
class MonotonicScope(AttentionScope):
    """Raffel et al. (2017): the decoder stops at the source positions left to right and never goes back.

    p_tj = sigmoid(g e_tj + r + ε), ε ~ N(0, noise_std²) in training only; g = ``energy_gain`` (init 1) and
    r = ``energy_bias`` (init ``monotonic_bias_init``, −4 in the paper) are learned scalars; p = 0 on padding.

    Training: the expected alignment, in the paper's parallel form (eq. 13)
        α_t = p_t · cumprod(1 − p_t) · cumsum(α_{t−1} / cumprod(1 − p_t)),   cumprod exclusive,
    with the products taken as sums of logs and the divisor clamped at 1e-10 (a product of many 1 − p underflows).
    Inference (eval mode): hard, α_t = one-hot of the first j ≥ the previous position with p_tj ≥ ½, or all zero
    (and zero ever after) when no position is left. α_0 is the one-hot of position 0 in both.
    """

    is_recurrent = True
    SMALLEST_KEPT = 1e-10  # clamp of the cumulative products' divisor
    SCAN_CHUNK = 8  # positions scored at a time by ``scan``

    def __init__(self, bias_init: float, noise_std: float) -> None:
        super().__init__()
        self.bias_init = bias_init
        self.noise_std = noise_std
        self.energy_gain = nn.Parameter(torch.tensor(1.0))
        self.energy_bias = nn.Parameter(torch.tensor(float(bias_init)))

    def init_parameters(self) -> None:
        """g = 1, r = ``bias_init`` (the model's ``_init_weights`` calls it)."""
        init.constant_(self.energy_gain, 1.0)
        init.constant_(self.energy_bias, self.bias_init)

    def initial_previous(self, mask: Tensor, dtype: torch.dtype) -> Tensor:
        previous = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
        previous[:, :1] = mask[:, :1]
        return previous

    def stopping_probabilities(self, scores: Tensor, mask: Tensor) -> Tensor:
        """p_tj = sigmoid(g e_tj + r (+ noise in training)) [N, T, S], 0 on padding."""
        energy = self.energy_gain * scores + self.energy_bias
        if self.training and self.noise_std > 0:
            energy = energy + self.noise_std * torch.randn_like(energy)
        return torch.sigmoid(energy).masked_fill(~mask.unsqueeze(1), 0.0)

    def align(self, scores: Tensor, query: Tensor, mask: Tensor, state: AttentionState) -> Tensor:
        computed = float32_at_least(scores)  # the sigmoids and their running products (``precision``)
        probabilities = self.stopping_probabilities(computed, mask)
        step = self.expected_step if self.training else self.hard_step
        previous, weights = state.previous.to(computed.dtype), []
        for step_probabilities in probabilities.unbind(1):
            previous = step(step_probabilities, previous)
            weights.append(previous)
        return torch.stack(weights, dim=1).to(softmax_dtype(scores))

    def expected_step(self, probabilities: Tensor, previous: Tensor) -> Tensor:
        """α_t [N, S] from p_t [N, S] and α_{t−1} [N, S] (the parallel form above)."""
        log_keep = torch.log(torch.clamp(1 - probabilities, min=self.SMALLEST_KEPT))
        kept = torch.exp(torch.cumsum(log_keep, dim=-1) - log_keep)  # Π_{l<j} (1 − p_tl)
        return probabilities * kept * torch.cumsum(previous / kept.clamp(min=self.SMALLEST_KEPT), dim=-1)

    @staticmethod
    def hard_step(probabilities: Tensor, previous: Tensor) -> Tensor:
        """The one-hot α_t [N, S] of the first j ≥ the position of α_{t−1} with p_tj ≥ ½ (zero if none)."""
        length = previous.shape[-1]
        positions = torch.arange(length, device=previous.device)
        start = torch.where(previous.any(-1), previous.argmax(-1), length)  # [N]; S = no position left
        stops = (probabilities >= 0.5) & (positions >= start.unsqueeze(-1))
        first = stops.to(torch.uint8).argmax(-1)  # argmax returns the first of equal maxima
        # one_hot(first, S) as a comparison, which torch.export traces for every S
        return (positions == first.unsqueeze(-1)).to(previous.dtype) * stops.any(-1, keepdim=True)

    def scan(self, score_positions: Callable[[Tensor], Tensor], previous: Tensor, lengths: Tensor) -> Tensor:
        """``hard_step`` in linear time, for inference: the position [N] each row stops at (−1: none left), scoring
        only the positions from the previous one on, ``SCAN_CHUNK`` at a time, until every row has stopped or run
        out. score_positions: positions [N, C] -> e [N, C]; previous: α_{t−1} [N, S]; lengths [N]."""
        start = torch.where(previous.any(-1), previous.argmax(-1), lengths)  # a row that ran out starts at its end
        stopped = torch.full_like(lengths, -1)
        offsets = torch.arange(self.SCAN_CHUNK, device=lengths.device)
        while True:
            positions = start.unsqueeze(-1) + offsets  # [N, C]
            inside = positions < lengths.unsqueeze(-1)
            if not inside.any():
                return stopped
            energy = self.energy_gain * score_positions(positions.clamp(max=previous.shape[-1] - 1)) + self.energy_bias
            stops = (torch.sigmoid(energy) >= 0.5) & inside
            found = stops.any(-1)
            first = positions.gather(1, stops.to(torch.uint8).argmax(-1, keepdim=True)).squeeze(-1)
            stopped = torch.where(found, first, stopped)
            if found.all():  # the usual case: every row stops within its first chunk
                return stopped
            start = torch.where(found, lengths, start + self.SCAN_CHUNK)

    @classmethod
    def from_config(cls, config: Any, query_size: int) -> "MonotonicScope":
        return cls(config.monotonic_bias_init, config.monotonic_noise_std)
