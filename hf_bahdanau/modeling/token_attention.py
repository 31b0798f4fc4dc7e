"""How a token of the tagger attends over its sentence (the ``token_attention_type`` field).

- ``"context_vector"``: one distribution over the sentence from a learned context vector (the word attention of
  Yang et al. 2016, *Hierarchical Attention Networks for Document Classification*, used for tagging as in the
  article *Explaining Attention Network in Encoder-Decoder setting using Recurrent Neural Networks*),
  α_j = softmax_j(v_aᵀ tanh(U_a h_j + b)) (``ContextVectorAttention``, d_a = ``classifier_attention_size``), and
  each annotation re-weighted by it: f_j = α_j h_j. A token the distribution leaves near 0 has features near 0, so
  its tag comes from the bias alone: on the bundled NER data this formulation stays at entity F1 ≈ 0.07 where the
  others reach 1.0.
- any score function of ``ATTENTION_SCORES`` (``"additive"``, the default, ``"dot"``, ``"general"``, …): token t
  attends with e_tj = score(h_t, h_j), c_t = Σ_j α_tj h_j, and f_t = [h_t; c_t].

Both map annotations [B, S, D] and a mask [B, S] bool to features [B, S, F] and weights [B, S, S] (row t: the
weights token t's label is computed with; zero rows for padded tokens).
"""

import torch
from torch import Tensor, nn

from .attention import build_attention
from .axes import TOKEN_ATTENTIONS, describe_token_attention, token_attention_types
from .pooling import ContextVectorAttention

__all__ = ["TOKEN_ATTENTIONS", "ContextVectorTokenAttention", "QueryTokenAttention", "build_token_attention",
           "describe_token_attention", "token_attention_types"]


@TOKEN_ATTENTIONS.register("context_vector")
class ContextVectorTokenAttention(nn.Module):
    """One learned context vector: α_j = softmax_j(v_aᵀ tanh(U_a h_j + b)), features f_j = α_j h_j [B, S, D]; every
    real token's row of the weights is the same α."""

    def __init__(self, config) -> None:
        super().__init__()
        self.output_size = config.encoder_output_size
        self.attention = ContextVectorAttention(config.encoder_output_size, config.classifier_attention_size)

    def forward(self, annotations: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        alpha = self.attention.weights(annotations, mask)  # [B, S]
        return alpha.unsqueeze(-1) * annotations, alpha.unsqueeze(1) * mask.unsqueeze(-1)


class QueryTokenAttention(nn.Module):
    """Each token attends over its sentence with a score of ``ATTENTION_SCORES``: e_tj = score(h_t, h_j),
    c_t = Σ_j α_tj h_j, features f_t = [h_t; c_t] [B, S, 2D]."""

    def __init__(self, config) -> None:
        super().__init__()
        size = config.encoder_output_size
        self.output_size = 2 * size
        self.attention = build_attention(config.token_attention_type, config, query_size=size, key_size=size)

    def forward(self, annotations: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        context, weights = self.attention(annotations, annotations, annotations, mask)
        return torch.cat([annotations, context], dim=-1), weights * mask.unsqueeze(-1)


def build_token_attention(config) -> nn.Module:
    """The token attention of ``config.token_attention_type``."""
    if config.token_attention_type in TOKEN_ATTENTIONS:
        return TOKEN_ATTENTIONS[config.token_attention_type](config)
    return QueryTokenAttention(config)
