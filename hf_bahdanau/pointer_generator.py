"""See et al. (2017)'s pointer-generator output (``copy_attention=True``): the attention weights are also a
distribution over the source tokens, mixed with the vocabulary softmax.

    p_gen = σ(g_t),  g_t = w_cᵀ c_t + w_sᵀ s_t + w_xᵀ E y_{t-1} + b        (the decoder's ``generation_gate``)
    P(w) = (p_gen P_vocab(w) + (1 − p_gen) Σ_{j: x_j = w} α_tj) / Z_t      w in the extended vocabulary [0, V + n)
    Z_t = p_gen + (1 − p_gen) Σ_j α_tj

Z_t = 1 where the weights sum to 1, as in See et al. (global and hard attention); Luong's local windows (whose
Gaussian lowers the sum) and monotonic attention (which may attend nowhere) need it for P to be a distribution.

x_j are the source's ``copy_input_ids``: the input ids, except that a source word the vocabulary lacks has an id
V, V + 1, … of its own example (``copying.encode_with_copies`` numbers them), so the model can output it: P_vocab
is 0 there and only copying reaches it. Everything is computed in log space, in float32 at least: log P(w) is −∞ only
for an extended id its source does not hold. The training loss floors the copy term Σ α at the smallest normal float
(tiny, log ≈ −87 in float32), so a target no attention weight reaches (outside a local window, off a hard
attention's position) has a finite loss and finite gradients.
"""

from typing import NamedTuple

import torch
from torch import Tensor, nn

__all__ = ["CopySource", "copy_loss_terms", "copy_probabilities", "mixture_log_probs"]


class CopySource(NamedTuple):
    """The source ids the output layer copies from: ids [B, S] in the caller's layout (padding columns are never
    attended, so their ids do not matter) and ``width`` = V + n, the extended vocabulary of the batch."""

    ids: Tensor
    width: int

    @classmethod
    def of(cls, ids: Tensor, vocab_size: int) -> "CopySource":
        return cls(ids, max(vocab_size, int(ids.max()) + 1))

    def per_row(self, rows: int) -> Tensor:
        """The ids of each of ``rows`` decoder rows [rows, S]: k = rows / B consecutive rows per source."""
        return self.ids.repeat_interleave(rows // self.ids.shape[0], dim=0)


def copy_probabilities(weights: Tensor, copy_ids: Tensor, width: int) -> Tensor:
    """Σ_{j: x_j = w} α_tj: weights [N, T, S], copy_ids [N, S] -> [N, T, width]."""
    index = copy_ids.unsqueeze(1).expand(-1, weights.shape[1], -1)
    return weights.new_zeros(*weights.shape[:2], width).scatter_add_(-1, index, weights)


def _floored_log(probabilities: Tensor) -> Tensor:
    return probabilities.clamp_min(torch.finfo(probabilities.dtype).tiny).log()


def _log(probabilities: Tensor) -> Tensor:
    """log p, −∞ at 0, with a zero gradient there (not 0 · ∞ = NaN)."""
    positive = probabilities > 0
    return torch.where(positive, probabilities, 1).log().masked_fill(~positive, -torch.inf)


def mixture_log_probs(logits: Tensor, gate: Tensor, weights: Tensor, copy_ids: Tensor, width: int) -> Tensor:
    """log P(w): logits [N, T, V] of the vocabulary projection, gate g [N, T], weights α [N, T, S], copy_ids [N, S]
    -> [N, T, width], in float32 at least."""
    dtype = torch.promote_types(logits.dtype, torch.float32)
    gate, weights = gate.to(dtype).unsqueeze(-1), weights.to(dtype)
    copied = nn.functional.logsigmoid(-gate) + _log(copy_probabilities(weights, copy_ids, width))
    generated = nn.functional.logsigmoid(gate) + torch.log_softmax(logits.to(dtype), dim=-1)
    vocabulary = logits.shape[-1]
    mixed = torch.cat([torch.logaddexp(generated, copied[..., :vocabulary]), copied[..., vocabulary:]], dim=-1)
    return mixed - _log_normalizer(gate.squeeze(-1), weights).unsqueeze(-1)


def _log_normalizer(gate: Tensor, weights: Tensor) -> Tensor:
    """log Z = log(p_gen + (1 − p_gen) Σ_j α_tj) [N, T]."""
    return torch.logaddexp(nn.functional.logsigmoid(gate), nn.functional.logsigmoid(-gate) + _log(weights.sum(-1)))


def copy_loss_terms(gate: Tensor, weights: Tensor, copy_ids: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """The terms of log P(y) = logaddexp(a + log P_vocab(y), b) that do not need the vocabulary projection
    (``loss.linear_cross_entropy`` adds log P_vocab(y)): a = log p_gen − log Z, b = log((1 − p_gen) Σ_{j: x_j = y}
    α_tj) − log Z. gate [N, T], weights [N, T, S], copy_ids [N, S], labels [N, T] -> (a, b) [N, T] each."""
    dtype = torch.promote_types(weights.dtype, torch.float32)
    gate, weights = gate.to(dtype), weights.to(dtype)
    copied = (weights * (copy_ids.unsqueeze(1) == labels.unsqueeze(-1))).sum(-1)
    log_z = _log_normalizer(gate, weights)
    return nn.functional.logsigmoid(gate) - log_z, nn.functional.logsigmoid(-gate) + _floored_log(copied) - log_z
