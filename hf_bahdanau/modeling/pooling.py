"""Attention pooling: annotations h_j [B, S, D] and their mask -> one vector per sequence, with no query (the
``pooling_type`` axis, ``axes.POOLINGS``). Every pooling maps states [B, S, D] and a mask [B, S] bool (True = real)
to pooled [B, output_size] and its weights, exactly 0 on padding; a row that is all padding pools to zeros with
all-zero weights (never NaN).

- ``"context_vector"`` (``ContextVectorAttention``; Yang et al. 2016):
      u_j = tanh(W h_j + b),  α_j = softmax_j(u_wᵀ u_j),  s = Σ_j α_j h_j                weights α [B, S]
  It is also the tagger's energy e_j = v_aᵀ tanh(U_a h_j) (with v_a = u_w) and HAN's word and sentence attention,
  where u_w is the learned "what is informative" context vector.
- ``"self_attentive"`` (``SelfAttentivePooling``; Lin et al. 2017, *A Structured Self-attentive Sentence Embedding*):
      A = softmax(W_s2 tanh(W_s1 Hᵀ))  (each of the r rows over the tokens),  M = A H [r, D],
      s = [M_1; …; M_r] [r·D],  penalty P = ‖A Aᵀ − I‖²_F                                weights A [B, r, S]
- ``"multi_dimensional"`` (``MultiDimensionalPooling``; Shen et al. 2018, *DiSAN*, multi-dimensional source2token
  attention):
      f(h_j) = W_2 tanh(W_1 h_j + b_1),  α_jd = softmax_j(f(h_j)_d),  s_d = Σ_j α_jd h_jd      weights α [B, S, D]
- ``"final_state"`` (``FinalStatePooling``; no attention, the baseline the attention papers compare with):
      s = [→h_n; ←h_1] (bidirectional) or h_n, for a text of n tokens                   weights [B, S]: where it read
"""

from typing import Any

import torch
from torch import Tensor, nn

from .attention import masked_softmax
from .axes import POOLINGS

__all__ = ["POOLINGS", "ContextVectorAttention", "FinalStatePooling", "MultiDimensionalPooling", "Pooling",
           "SelfAttentivePooling", "build_pooling"]


class Pooling(nn.Module):
    """states [B, S, D], mask [B, S] bool -> pooled [B, output_size], weights (S at ``sequence_dim``).

    ``token_weights`` reduces the weights to one distribution over the tokens (for pictures); ``penalty`` is the
    per-text term the classifier adds to its loss, None for a pooling without one."""

    sequence_dim = 1  # where the weights keep the token axis

    def __init__(self, output_size: int) -> None:
        super().__init__()
        self.output_size = output_size

    @classmethod
    def from_config(cls, config: Any, input_size: int) -> "Pooling":
        return cls(input_size, config.classifier_attention_size)

    def weight_shape(self, length: int) -> tuple[int, ...]:
        """The weights' shape after the batch axis, for sequences of ``length`` tokens."""
        return (length,)

    def token_weights(self, weights: Tensor) -> Tensor:
        """[..., S]: a distribution over the tokens (the weights themselves, or their mean over rows or features)."""
        return weights

    def penalty(self, weights: Tensor, mask: Tensor) -> Tensor | None:
        """A per-text penalty [B] for the loss; None: this pooling has none."""
        return None


@POOLINGS.register("context_vector")
class ContextVectorAttention(Pooling):
    """e_j = u_wᵀ tanh(W h_j + b); ``key_proj`` holds W [D -> A] and b, ``context_vector`` holds u_w [A -> 1].

    states [B, S, D], mask [B, S] bool (True = real) -> pooled [B, D], weights [B, S].
    """

    def __init__(self, input_size: int, attention_size: int) -> None:
        super().__init__(input_size)
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


@POOLINGS.register("self_attentive")
class SelfAttentivePooling(Pooling):
    """Lin et al. 2017: A = softmax(W_s2 tanh(W_s1 Hᵀ)) [B, r, S], M = A H [B, r, D], pooled = M's rows side by side
    [B, r·D]. ``first`` holds W_s1 [D -> d_a], ``second`` W_s2 [d_a -> r] (no biases, as in the paper: one on W_s2
    would cancel in the softmax). The penalty ``‖A Aᵀ − I‖²_F`` pushes the r rows apart and each towards one token."""

    sequence_dim = 2

    def __init__(self, input_size: int, attention_size: int, rows: int) -> None:
        super().__init__(rows * input_size)
        self.rows = rows
        self.first = nn.Linear(input_size, attention_size, bias=False)
        self.second = nn.Linear(attention_size, rows, bias=False)

    @classmethod
    def from_config(cls, config: Any, input_size: int) -> "SelfAttentivePooling":
        return cls(input_size, config.classifier_attention_size, config.self_attention_rows)

    def weight_shape(self, length: int) -> tuple[int, ...]:
        return (self.rows, length)

    def weights(self, states: Tensor, mask: Tensor) -> Tensor:
        """A [B, r, S]: each row a softmax over the real positions."""
        return masked_softmax(self.second(torch.tanh(self.first(states))).transpose(1, 2), mask)

    def forward(self, states: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        weights = self.weights(states, mask)
        return (weights @ states).flatten(1), weights

    def token_weights(self, weights: Tensor) -> Tensor:
        return weights.mean(-2)

    def penalty(self, weights: Tensor, mask: Tensor) -> Tensor:
        """P = ‖A Aᵀ − I‖²_F per text: weights A [B, r, S], mask [B, S] -> [B]; 0 for a text without tokens (A = 0).
        Padding columns of A are 0, so P is that of the real tokens alone."""
        gram = weights @ weights.transpose(1, 2)
        identity = torch.eye(self.rows, dtype=gram.dtype, device=gram.device)
        return (gram - identity).square().sum((1, 2)) * mask.any(-1)


@POOLINGS.register("multi_dimensional")
class MultiDimensionalPooling(Pooling):
    """Shen et al. 2018: f(h_j) = W_2 tanh(W_1 h_j + b_1) [B, S, D], α_jd = softmax_j(f(h_j)_d) [B, S, D],
    pooled s_d = Σ_j α_jd h_jd [B, D]. ``hidden`` holds W_1 [D -> d_a] and b_1, ``output`` W_2 [d_a -> D]; the
    paper's output bias b_2 is left out: it adds the same value to every token's score of a feature, which the
    softmax over tokens cancels."""

    def __init__(self, input_size: int, attention_size: int) -> None:
        super().__init__(input_size)
        self.hidden = nn.Linear(input_size, attention_size)
        self.output = nn.Linear(attention_size, input_size, bias=False)

    def weight_shape(self, length: int) -> tuple[int, ...]:
        return (length, self.output_size)

    def weights(self, states: Tensor, mask: Tensor) -> Tensor:
        """α [B, S, D]: for each feature d a softmax over the real positions."""
        scores = self.output(torch.tanh(self.hidden(states)))
        return masked_softmax(scores.transpose(1, 2), mask).transpose(1, 2)

    def forward(self, states: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        weights = self.weights(states, mask)
        return (weights * states).sum(1), weights

    def token_weights(self, weights: Tensor) -> Tensor:
        return weights.mean(-1)


@POOLINGS.register("final_state")
class FinalStatePooling(Pooling):
    """No attention: the RNN's final states, s = [→h_n; ←h_1] (the forward half of the last real annotation, the
    backward half of the first) when bidirectional, else h_n.

    states [B, S, D] right-padded, mask [B, S] bool -> pooled [B, D], weights [B, S]: the share of s read at each
    token (1 at the last token; bidirectional, ½ at the first and ½ at the last, 1 for a one-token text).
    """

    def __init__(self, input_size: int, bidirectional: bool) -> None:
        super().__init__(input_size)
        self.bidirectional = bidirectional

    @classmethod
    def from_config(cls, config: Any, input_size: int) -> "FinalStatePooling":
        return cls(input_size, config.bidirectional)

    def forward(self, states: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        positions = torch.arange(states.shape[1], device=states.device)
        last = (positions == mask.sum(1, keepdim=True) - 1).to(states.dtype)  # [B, S], 0 for an empty text
        if not self.bidirectional:
            return (last.unsqueeze(1) @ states).squeeze(1), last
        first = (positions == 0) & mask
        half = states.shape[-1] // 2
        forward = (last.unsqueeze(1) @ states[..., :half]).squeeze(1)
        backward = (first.to(states.dtype).unsqueeze(1) @ states[..., half:]).squeeze(1)
        return torch.cat([forward, backward], dim=-1), (last + first) / 2


def build_pooling(config: Any, input_size: int) -> Pooling:
    """The pooling registered as ``config.pooling_type``, over annotations of size ``input_size``."""
    POOLINGS.check(config.pooling_type)
    return POOLINGS[config.pooling_type].from_config(config, input_size)
