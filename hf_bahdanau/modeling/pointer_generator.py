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
    def of(cls, ids: Tensor, vocab_size: int, input_ids: Tensor | None = None, unk_token_id: int | None = None,
           attention_mask: Tensor | None = None) -> "CopySource":
        """The source of ``copy_input_ids`` ids [B, S] (non-negative), checked before a [.., V + n] tensor is made:
        each row numbers its words beyond the vocabulary V, V + 1, … in the order they first occur (as
        ``copying.encode_with_copies`` does). With ``input_ids`` [B, S] and ``unk_token_id``, the columns that
        ``attention_mask`` marks (default all) agree with them: an id < V is the input id, an id ≥ V reads the
        unknown token. Raises ValueError naming ``copy_input_ids``, the position, the value and what is allowed."""
        extended = ids - vocab_size  # ≥ 0: the row's i-th word beyond the vocabulary
        earlier = extended.clamp_min(-1).cummax(dim=1).values.roll(1, dims=1)  # the largest i left of a column
        earlier[:, 0] = -1  # none
        out_of_order = extended > earlier + 1
        differs = torch.zeros_like(out_of_order)
        if input_ids is not None and input_ids is not ids:
            if unk_token_id is None:
                raise ValueError("`unk_token_id` is needed to check `copy_input_ids` against `input_ids`.")
            differs = torch.where(extended < 0, ids != input_ids, input_ids != unk_token_id)
            if attention_mask is not None:
                differs &= attention_mask != 0
        bad_order, bad_input, highest = torch.stack([out_of_order.any(), differs.any(), ids.max().long()]).tolist()
        if bad_order:
            row, column = out_of_order.nonzero()[0].tolist()
            raise ValueError(
                f"`copy_input_ids[{row}, {column}]` = {int(ids[row, column])} is not an id of the extended "
                f"vocabulary: each row numbers the words it holds beyond the vocabulary (size {vocab_size}) "
                f"{vocab_size}, {vocab_size + 1}, … in the order they first occur (copying.encode_with_copies), so "
                f"this position may hold at most {vocab_size + int(earlier[row, column]) + 1}.")
        if bad_input:
            row, column = differs.nonzero()[0].tolist()
            copy_id, input_id = int(ids[row, column]), int(input_ids[row, column])
            rule = (f"below the vocabulary size ({vocab_size}) the two must be equal" if copy_id < vocab_size else
                    f"an id ≥ the vocabulary size ({vocab_size}) is a word the vocabulary lacks, whose input id is "
                    f"the unknown token ({unk_token_id})")
            raise ValueError(f"`copy_input_ids[{row}, {column}]` = {copy_id} does not match "
                             f"`input_ids[{row}, {column}]` = {input_id}: {rule}.")
        return cls(ids, max(vocab_size, highest + 1))

    def per_row(self, rows_per_source: int) -> Tensor:
        """The ids of each decoder row [B·k, S], k = ``rows_per_source`` consecutive rows per source."""
        return self.ids.repeat_interleave(rows_per_source, dim=0)


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
