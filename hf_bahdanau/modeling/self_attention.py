"""Intra-attention over the encoder's annotations (the ``encoder_self_attention`` field; Cheng et al. 2016's
intra-attention, here over the finished RNN): each annotation attends over the annotations of its own sentence,

    e_jk  = score(h_j, h_k)              a score of ``ATTENTION_SCORES`` that reads no previous alignment
    α_jk  = softmax_k(e_jk)              over the sentence's real tokens k; 0 on padding
    c_j   = Σ_k α_jk h_k                 (a multi-head score mixes its heads' contexts with its own W^O)
    h'_j  = tanh(W_s [h_j; c_j])         W_s [D, 2D], no bias; h'_j = 0 on padding

and h'_j replaces h_j for whatever reads the annotations (the decoder's attention, the bridges' mean, the taggers'
and classifiers' attention). Every h_j has read the whole source (the RNN ran over all of it), so attending to later
positions leaks nothing: the layer is sound for an encoder. It is not offered for the decoder, whose state s_i may
read only y_<i, and whose states do not exist ahead of the step that makes them. The encoder's final states (what
the bridges ``last`` and ``tanh`` read) are the RNN's, unchanged.
"""

import torch
from torch import Tensor, nn

from .attention import build_attention

__all__ = ["EncoderSelfAttention"]


class EncoderSelfAttention(nn.Module):
    """h'_j = tanh(W_s [h_j; c_j]), c_j = Σ_k α_jk h_k with α_j = softmax_k(score(h_j, h_k)) over the real tokens.

    The score is ``build_attention(config.encoder_self_attention, config, D, D)`` (D = ``encoder_output_size``), as the
    tagger's token attention builds it; ``output`` is W_s.
    """

    def __init__(self, config) -> None:
        super().__init__()
        size = config.encoder_output_size
        self.attention = build_attention(config.encoder_self_attention, config, query_size=size, key_size=size)
        self.output = nn.Linear(2 * size, size, bias=False)

    def forward(self, annotations: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """annotations [B, S, D] right-padded (the location score scores by position), mask [B, S] bool (True = real
        token) -> (h' [B, S, D], 0 on padding; α [B, S, S], row j what h_j attended to, rows and columns of padding
        exactly 0)."""
        context, weights = self.attention(annotations, annotations, annotations, mask)
        real = mask.unsqueeze(-1)
        attended = torch.tanh(self.output(torch.cat([annotations, context], dim=-1)))
        return attended.masked_fill(~real, 0.0), weights.masked_fill(~real, 0.0)
