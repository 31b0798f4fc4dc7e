"""Co-attention (Lu et al. 2016, *Hierarchical Question-Image Co-Attention for Visual Question Answering*): a question
and a context (an image's regions, or a second text) attend to each other at once.

Each form reads the question's features Q [B, T, d] with their mask [B, T] and the context's V [B, N, d] with theirs
[B, N] (True = real), and returns the summaries q̂ = Σ_t a^q_t q_t and v̂ = Σ_n a^v_n v_n [B, d] with the weights a^q
[B, T] and a^v [B, N], exactly 0 on padding (``CO_ATTENTIONS`` in ``axes.py``; a row-vector reading of the paper's
column equations, k = ``attention_size``):

    parallel     C = tanh(Q W_b Vᵀ) [B, T, N], 0 where either side is padding
                 H^v = tanh(V W_v + Cᵀ Q W_q) [B, N, k],   H^q = tanh(Q W_q + C V W_v) [B, T, k]
                 a^v = softmax_n(H^v w_v),   a^q = softmax_t(H^q w_q)
    alternating  A(X; g) = Σ_i softmax_i(w_xᵀ tanh(W_x x_i + W_g g)) x_i, each step with its own weights:
                 ŝ = A(Q; 0),   v̂ = A(V; ŝ),   q̂ = A(Q; v̂)
    context      q̄ = mean_t q_t,   v̂ = A(V; q̄),   q̂ = q̄
    none         q̂ = mean_t q_t,   v̂ = mean_n v_n

The means are returned as their uniform weights, so every form's summaries are its weights times its features.
"""

from typing import NamedTuple

import torch
from torch import Tensor, nn

from .attention import masked_softmax
from .axes import CO_ATTENTIONS

__all__ = ["CO_ATTENTIONS", "CoAttention", "CoAttentionOutput", "GuidedAttention", "build_coattention", "masked_mean"]


class CoAttentionOutput(NamedTuple):
    """q̂ [B, d], v̂ [B, d], a^q [B, T], a^v [B, N]; ``affinity`` C [B, T, N] for the parallel form, else None."""

    question_summary: Tensor
    context_summary: Tensor
    question_weights: Tensor
    context_weights: Tensor
    affinity: Tensor | None = None


def summarise(weights: Tensor, features: Tensor) -> Tensor:
    """Σ_i a_i x_i: weights [B, L], features [B, L, d] -> [B, d]."""
    return torch.bmm(weights.unsqueeze(1), features).squeeze(1)


def masked_mean(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """The uniform weights of a mean over the real positions: mask [B, L] bool -> [B, L], 1/L_b on real, 0 on padding."""
    weights = mask.to(dtype)
    return weights / weights.sum(-1, keepdim=True).clamp(min=1)


class GuidedAttention(nn.Module):
    """A(X; g) = Σ_i softmax_i(w_xᵀ tanh(W_x x_i + W_g g)) x_i: X [B, L, d], mask [B, L], g [B, d] or None (the paper's
    g = 0) -> (summary [B, d], weights [B, L])."""

    def __init__(self, hidden_size: int, attention_size: int, guided: bool = True) -> None:
        super().__init__()
        self.features = nn.Linear(hidden_size, attention_size, bias=False)  # W_x
        self.guide = nn.Linear(hidden_size, attention_size, bias=False) if guided else None  # W_g
        self.score = nn.Linear(attention_size, 1, bias=False)  # w_x

    def forward(self, features: Tensor, mask: Tensor, guide: Tensor | None = None) -> tuple[Tensor, Tensor]:
        hidden = self.features(features)
        if self.guide is not None and guide is not None:
            hidden = hidden + self.guide(guide).unsqueeze(1)
        weights = masked_softmax(self.score(torch.tanh(hidden)).squeeze(-1), mask)
        return summarise(weights, features), weights


class CoAttention(nn.Module):
    """One form of ``CO_ATTENTIONS``: (Q [B, T, d], question mask [B, T], V [B, N, d], context mask [B, N]) ->
    ``CoAttentionOutput``."""

    def __init__(self, hidden_size: int, attention_size: int) -> None:
        super().__init__()


@CO_ATTENTIONS.register("parallel")
class ParallelCoAttention(CoAttention):
    """C = tanh(Q W_b Vᵀ); H^v = tanh(V W_v + Cᵀ Q W_q), H^q = tanh(Q W_q + C V W_v); a = softmax(H w)."""

    def __init__(self, hidden_size: int, attention_size: int) -> None:
        super().__init__(hidden_size, attention_size)
        self.affinity = nn.Linear(hidden_size, hidden_size, bias=False)  # W_b
        self.question = nn.Linear(hidden_size, attention_size, bias=False)  # W_q
        self.context = nn.Linear(hidden_size, attention_size, bias=False)  # W_v
        self.question_score = nn.Linear(attention_size, 1, bias=False)  # w_q
        self.context_score = nn.Linear(attention_size, 1, bias=False)  # w_v

    def forward(self, question: Tensor, question_mask: Tensor, context: Tensor, context_mask: Tensor
                ) -> CoAttentionOutput:
        both_real = question_mask.unsqueeze(2) & context_mask.unsqueeze(1)  # [B, T, N]
        affinity = torch.tanh(torch.bmm(self.affinity(question), context.transpose(1, 2))) * both_real
        question_projection, context_projection = self.question(question), self.context(context)
        context_hidden = torch.tanh(context_projection + torch.bmm(affinity.transpose(1, 2), question_projection))
        question_hidden = torch.tanh(question_projection + torch.bmm(affinity, context_projection))
        question_weights = masked_softmax(self.question_score(question_hidden).squeeze(-1), question_mask)
        context_weights = masked_softmax(self.context_score(context_hidden).squeeze(-1), context_mask)
        return CoAttentionOutput(summarise(question_weights, question), summarise(context_weights, context),
                                 question_weights, context_weights, affinity)


@CO_ATTENTIONS.register("alternating")
class AlternatingCoAttention(CoAttention):
    """ŝ = A(Q; 0), v̂ = A(V; ŝ), q̂ = A(Q; v̂), each A with its own weights."""

    def __init__(self, hidden_size: int, attention_size: int) -> None:
        super().__init__(hidden_size, attention_size)
        self.question_alone = GuidedAttention(hidden_size, attention_size, guided=False)
        self.context_by_question = GuidedAttention(hidden_size, attention_size)
        self.question_by_context = GuidedAttention(hidden_size, attention_size)

    def forward(self, question: Tensor, question_mask: Tensor, context: Tensor, context_mask: Tensor
                ) -> CoAttentionOutput:
        question_alone, _ = self.question_alone(question, question_mask)
        context_summary, context_weights = self.context_by_question(context, context_mask, question_alone)
        question_summary, question_weights = self.question_by_context(question, question_mask, context_summary)
        return CoAttentionOutput(question_summary, context_summary, question_weights, context_weights)


@CO_ATTENTIONS.register("context")
class ContextAttention(CoAttention):
    """q̄ = mean_t q_t, v̂ = A(V; q̄), q̂ = q̄."""

    def __init__(self, hidden_size: int, attention_size: int) -> None:
        super().__init__(hidden_size, attention_size)
        self.context_by_question = GuidedAttention(hidden_size, attention_size)

    def forward(self, question: Tensor, question_mask: Tensor, context: Tensor, context_mask: Tensor
                ) -> CoAttentionOutput:
        question_weights = masked_mean(question_mask, question.dtype)
        question_summary = summarise(question_weights, question)
        context_summary, context_weights = self.context_by_question(context, context_mask, question_summary)
        return CoAttentionOutput(question_summary, context_summary, question_weights, context_weights)


@CO_ATTENTIONS.register("none")
class MeanPooling(CoAttention):
    """q̂ = mean_t q_t, v̂ = mean_n v_n: no parameters."""

    def forward(self, question: Tensor, question_mask: Tensor, context: Tensor, context_mask: Tensor
                ) -> CoAttentionOutput:
        question_weights = masked_mean(question_mask, question.dtype)
        context_weights = masked_mean(context_mask, context.dtype)
        return CoAttentionOutput(summarise(question_weights, question), summarise(context_weights, context),
                                 question_weights, context_weights)


def build_coattention(name: str, hidden_size: int, attention_size: int) -> CoAttention:
    """The form ``name`` of ``CO_ATTENTIONS``."""
    return CO_ATTENTIONS[name](hidden_size, attention_size)
