"""Coverage: how much attention each source position has received so far (Tu et al. 2016; See et al. 2017;
Wu et al. 2016).

    c_tj = Σ_{t'<t} α_t'j                                   the coverage vector (``AttentionState.coverage``)
    e_tj = v_aᵀ tanh(W_a q_t + U_a h_j + w_c c_tj)          the additive score reads it (``CoverageFeature``)
    covloss = Σ_t Σ_j min(α_tj, c_tj)                       See et al.'s loss on attending twice (``coverage_loss``)
    cp(X; Y) = β Σ_j log(min(Σ_t α_tj, 1))                  GNMT's penalty on source left unread (``coverage_penalty``)

Shapes: N decoder rows, T steps, S source positions, A the additive score's size.
"""

import torch
from torch import Tensor, nn

__all__ = ["CoverageFeature", "coverage_loss", "coverage_penalty"]


class CoverageFeature(nn.Module):
    """The coverage term of the additive score: U_a h_j + w_c c_tj, w_c = ``coverage_proj`` [1 -> A].

    It is added to the projected keys, so every additive score (and its blocked inference path) reads it unchanged.
    """

    def __init__(self, attention_size: int) -> None:
        super().__init__()
        self.coverage_proj = nn.Linear(1, attention_size, bias=False)

    def forward(self, projected_keys: Tensor, coverage: Tensor) -> Tensor:
        """U_a h [N, S, A], c_t [N, S] -> U_a h_j + w_c c_tj [N, S, A]."""
        return projected_keys + self.coverage_proj(coverage.unsqueeze(-1).to(projected_keys.dtype))


def coverage_loss(weights: Tensor, target_mask: Tensor) -> Tensor:
    """Σ over the kept steps of Σ_j min(α_tj, c_tj), c_0 = 0: weights α [N, T, S] from the first target token,
    target_mask [N, T] bool (the steps whose label is kept) -> a scalar sum (the caller divides it like the
    cross-entropy)."""
    coverage = torch.cumsum(weights, dim=1) - weights  # Σ_{t'<t} α_t'
    return (torch.minimum(weights, coverage).sum(-1) * target_mask).sum()


def coverage_penalty(totals: Tensor, mask: Tensor, beta: float) -> Tensor:
    """β Σ_j log(min(Σ_t α_tj, 1)) over the real positions j: totals [N, S], mask [N, S] bool -> [N] (≤ 0).

    A position no step attended (possible with hard, local and monotonic attention) counts as log(1e-10) ≈ −23
    instead of −∞, so hypotheses stay comparable.
    """
    covered = torch.log(totals.clamp(min=1e-10, max=1.0))
    return beta * (covered * mask).sum(-1)


def doubly_stochastic_loss(weights: Tensor, target_mask: Tensor, source_mask: Tensor) -> Tensor:
    """Xu et al.'s doubly stochastic regulariser Σ_j (1 − Σ_t α_tj)² over the real source positions j (image regions),
    summed over the kept steps t: weights α [N, T, S], target_mask [N, T] bool, source_mask [N, S] bool -> a scalar sum
    over the rows (the caller divides it like the cross-entropy)."""
    totals = (weights * target_mask.unsqueeze(-1)).sum(1)
    return ((1 - totals) ** 2 * source_mask).sum()
