"""Attention with a learned context vector: one distribution over a sequence, no query.

    u_j = tanh(W h_j + b)          [B, S, A]
    e_j = u_wᵀ u_j                 [B, S]
    α = masked_softmax(e)          [B, S], exactly 0 on padding
    s = Σ_j α_j h_j                [B, D]

It is both the tagger's energy e_j = v_aᵀ tanh(U_a h_j) (with v_a = u_w, d_a = A) and the word- and
sentence-level attention of the hierarchical attention network (HAN, Yang et al. 2016), where u_w is the
learned "what is informative" context vector.
"""

import torch
from torch import Tensor, nn

from .attention import masked_softmax

__all__ = ["ContextVectorAttention"]


class ContextVectorAttention(nn.Module):
    """e_j = u_wᵀ tanh(W h_j + b); ``key_proj`` holds W [D -> A] and b, ``context_vector`` holds u_w [A -> 1].

    states [B, S, D], mask [B, S] bool (True = real) -> pooled [B, D], weights [B, S].
    A row that is all padding pools to zeros with all-zero weights (never NaN).
    """

    def __init__(self, input_size: int, attention_size: int) -> None:
        super().__init__()
        self.key_proj = nn.Linear(input_size, attention_size)
        self.context_vector = nn.Linear(attention_size, 1, bias=False)

    def energies(self, states: Tensor) -> Tensor:
        """e_j: states [B, S, D] -> [B, S]."""
        return self.context_vector(torch.tanh(self.key_proj(states))).squeeze(-1)

    def weights(self, states: Tensor, mask: Tensor) -> Tensor:
        """α = softmax over the real positions: [B, S]."""
        return masked_softmax(self.energies(states), mask)

    def forward(self, states: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        weights = self.weights(states, mask)
        return (weights.unsqueeze(1) @ states).squeeze(1), weights
