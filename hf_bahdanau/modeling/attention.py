"""Attention score functions for RNN encoder-decoders.

Every mechanism turns a decoder query and the encoder's keys into weights over
source positions, then pools the values with them:

    e_tj = score(q_t, k_j)                      one class per score function
    alpha_tj = softmax_j(e_tj) over real tokens  (``masked_softmax``)
    c_t = sum_j alpha_tj v_j                     context

All mechanisms share one call signature, so a decoder never branches on the
score type. Work that depends only on the source (e.g. ``U_a k_j``) is done by
``project_keys`` once per source; the caller keeps the result in its decoding
state and passes it back as ``projected_keys`` at every step.

Shapes: B = batch, T = decoder steps, S = source length, H = heads,
Dq / Dk / Dv = query / key / value sizes, A = attention size.

A decoder that attends once per step in a Python loop uses ``stepwise``: the
same attention, but every step reads the memory through ``LoopLinear``, so the
gradients of the keys and values are taken once after the loop.

Every mechanism is registered in ``ATTENTION_SCORES`` under its ``attention_type`` name: a new score
function is its name and one-line description in ``axes.py``, one subclass (``_score``) and one
``@ATTENTION_SCORES.register`` line.
A subclass gets the same weights on every path (batched, step loop, beam search): they all read ``_score``.
"""

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from transformers import initialization as init

from .axes import ATTENTION_SCORES
from .input_checks import exporting
from .loop_linear import LoopLinear
from .precision import float32_at_least, softmax_dtype

__all__ = [
    "ATTENTION_SCORES",
    "AdditiveAttention",
    "AttentionMechanism",
    "ConcatAttention",
    "DotAttention",
    "GaussianKernelAttention",
    "GeneralAttention",
    "LocationAttention",
    "LocationAwareAttention",
    "MultiHeadAttention",
    "ProductAttention",
    "ScaledDotAttention",
    "broadcast_like",
    "build_attention",
    "masked_softmax",
]


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """alpha_j = exp(e_j) / sum_{k real} exp(e_k) for real tokens j, and exactly 0 for padding.

    scores [B, ..., S] (e.g. [B, S], [B, T, S] or [B, H, T, S]); mask bool, True = real token: [B, S], or [B, T, S]
    for a mask per step (a local window), broadcast over the axes between -> weights, same shape as scores, computed
    in float32 at least (``precision.softmax_dtype``: float32 under autocast, else the scores' dtype).
    A row that is all padding gets all-zero weights, never NaN.
    """
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True = real token), got dtype {mask.dtype}")
    padding = ~broadcast_like(mask, scores)
    computed = float32_at_least(scores)  # a bfloat16 softmax would sum to 1 only within S · 2⁻⁸ (``precision``)
    # The finite minimum (not -inf) keeps an all-padding row at a uniform softmax
    # instead of NaN; the second fill then zeroes it like every other padded entry.
    weights = torch.softmax(computed.masked_fill(padding, torch.finfo(computed.dtype).min), dim=-1)
    return weights.masked_fill(padding, 0.0).to(softmax_dtype(scores))


def broadcast_like(mask: Tensor, scores: Tensor) -> Tensor:
    """A mask (or any tensor) [B, S] or [B, T, S] viewed to broadcast against scores [B, ..., S] or [B, ..., T, S]
    (e.g. heads between)."""
    return mask[(slice(None),) + (None,) * (scores.dim() - mask.dim())] if scores.dim() > mask.dim() else mask


def _as_steps(query: Tensor) -> Tensor:
    """[B, Dq] -> [B, 1, Dq]; [B, T, Dq] unchanged."""
    if query.dim() not in (2, 3):
        raise ValueError(
            f"query must be [batch, query_size] or [batch, steps, query_size], got shape {tuple(query.shape)}"
        )
    return query.unsqueeze(1) if query.dim() == 2 else query


def _like_query(output: Tensor, query: Tensor) -> Tensor:
    """Drop the step axis (second to last) again when the query was [B, Dq]."""
    return output.squeeze(-2) if query.dim() == 2 else output


def _dot(query: Tensor, keys: Tensor) -> Tensor:
    """q_t^T k_j for all pairs: query [..., T, D], keys [..., S, D] -> [..., T, S]."""
    return query @ keys.transpose(-1, -2)


def _same_size(mechanism: str, query_size: int, key_size: int) -> int:
    """Check the constraint of mechanisms that compare q and k directly (same_size_required)."""
    if query_size != key_size:
        raise ValueError(
            f"{mechanism} compares query and key directly, so query_size must equal key_size; "
            f"got query_size={query_size}, key_size={key_size} (use 'general' or 'additive' for different sizes)"
        )
    return query_size


class AttentionMechanism(nn.Module):
    """Common interface: score, softmax over real tokens, weighted sum of values.

    Subclasses implement ``_score`` for a [B, T, Dq] query; this class handles [B, Dq] queries by running them as
    T = 1, and every path (``forward``, ``stepwise``) scores through ``_score``.
    """

    same_size_required: bool = False  # query_size must equal key_size; set on registering, from axes.py
    reads_previous_alignment: bool = False  # e_tj reads α_{t−1} (``step_keys``); set on registering, from axes.py
    position_free: bool = True  # e_tj reads q_t and k_j only: scoring a subset of the keys scores those positions

    def project_keys(self, keys: Tensor) -> Tensor:
        """Source-only work, done once per source: keys [B, S, Dk] -> projected keys.

        The default is no work: the keys themselves.
        """
        return keys

    def initial_alignment(self, mask: Tensor, dtype: torch.dtype) -> Tensor | None:
        """α_0 [N, S] that step 0's ``step_keys`` reads, for sources with ``mask`` [N, S]; None for a score that reads
        no previous alignment."""
        return None

    def step_keys(self, projected_keys: Tensor, previous: Tensor | None) -> Tensor:
        """The keys one step scores, from ``project_keys``' [N, S, …] and the previous step's alignment α_{t−1}
        [N, S] (or None): the projected keys themselves, unless the score reads α_{t−1}."""
        return projected_keys

    def score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        """e_tj: query [B, Dq] or [B, T, Dq], projected keys from ``project_keys`` -> [B, S] or [B, T, S] (per head,
        [B, H, S] or [B, H, T, S])."""
        return _like_query(self._score(_as_steps(query), projected_keys), query)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Tensor,
        projected_keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """c_t = sum_j alpha_tj v_j with alpha_t = masked_softmax(e_t).

        query [B, Dq] or [B, T, Dq]; keys [B, S, Dk]; values [B, S, Dv];
        mask [B, S] bool, True = real token; projected_keys = project_keys(keys),
        computed here when None.
        Returns context [B, Dv] or [B, T, Dv] and weights [B, S] or [B, T, S].
        """
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        context, weights = self._attend(_as_steps(query), projected_keys, values, mask)
        return _like_query(context, query), _like_query(weights, query)

    def stepwise(self, values: Tensor, mask: Tensor, projected_keys: Tensor) -> Callable[[Tensor], tuple[Tensor, Tensor]]:
        """``forward`` for a loop that attends with one query per step over the same memory.

        values [B, S, Dv]; mask [B, S]; projected_keys = project_keys(keys). Returns
        query [B, Dq] -> (context [B, Dv], weights [B, S]), from ``step_functions``.
        """
        score, pool = self.step_functions(values, projected_keys)
        return lambda query: pool(masked_softmax(score(query), mask))

    def step_functions(self, values: Tensor, projected_keys: Tensor) -> tuple[Callable[[Tensor], Tensor],
                                                                            Callable[[Tensor], tuple[Tensor, Tensor]]]:
        """The two halves of a loop's attention step, for a loop that normalises the scores its own way (a scope):
        score: query [B, Dq] -> e [B, S] (per head: [B, H, S]); pool: weights like e -> (context [B, Dv], weights
        [B, S]). The values (and, for scores that are products q·k, the keys) are read through ``LoopLinear``: their
        gradients are one batched product after the loop, Σ_t α_tᵀ g_t, instead of an outer product and a sum at
        every step.
        """
        pool = LoopLinear(values.transpose(1, 2))  # α_t [B, S] -> Σ_j α_tj v_j [B, Dv]
        return self._step_score(projected_keys), lambda weights: (pool(weights), weights)

    def _step_score(self, projected_keys: Tensor) -> Callable[[Tensor], Tensor]:
        """For ``stepwise``: query [B, Dq] -> scores [B, S], through ``_score``."""
        return lambda query: self.score(query, projected_keys)

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        """query [B, T, Dq] -> scores [B, T, S]."""
        raise NotImplementedError

    def pool(self, weights: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """c_t = Σ_j α_tj v_j: weights [B, T, S] (as ``_score`` gives them), values [B, S, Dv] -> context [B, T, Dv]
        and the weights to report [B, T, S]."""
        return weights @ values, weights

    def _attend(self, query: Tensor, projected_keys: Tensor, values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """query [B, T, Dq], values [B, S, Dv] -> context [B, T, Dv], weights [B, T, S]."""
        return self.pool(masked_softmax(self._score(query, projected_keys), mask), values)

    @classmethod
    def from_config(cls, config: Any, query_size: int, key_size: int) -> "AttentionMechanism":
        """Build from a model config; mechanisms without hyper-parameters need only the sizes."""
        return cls(query_size, key_size)


@ATTENTION_SCORES.register("additive")
class AdditiveAttention(AttentionMechanism):
    """Bahdanau (Luong's "concat") score: e_j = v_a^T tanh(W_a q + U_a k_j).

    W_a = ``query_proj`` [Dq -> A], U_a = ``key_proj`` [Dk -> A], v_a = ``energy_proj`` [A -> 1].
    project_keys: keys [B, S, Dk] -> U_a k [B, S, A], once per source.

    Without autograd a hidden layer tanh(W_a q + U_a k) [B, T, S, A] larger than ``HIDDEN_BLOCK_ENTRIES`` is made
    that many entries at a time in one reused buffer, so it stays in cache and never exists whole (beam search: T = the k beams of a source).
    """

    HIDDEN_BLOCK_ENTRIES = 2**19  # 2 MB of float32, about the L2 caches of two cores

    def __init__(self, query_size: int, key_size: int, attention_size: int, key_bias: bool = False) -> None:
        super().__init__()
        self.query_proj = nn.Linear(query_size, attention_size, bias=False)
        self.key_proj = nn.Linear(key_size, attention_size, bias=key_bias)
        self.energy_proj = nn.Linear(attention_size, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        # [B, T, 1, A] + [B, 1, S, A] -> [B, T, S, A] -> [B, T, S]
        query = self.query_proj(query)
        needs_grad = torch.is_grad_enabled() and (query.requires_grad or projected_keys.requires_grad)
        # (a graph traced by torch.export computes the whole layer: its batch size is not known)
        if not needs_grad and not exporting() and self._block_rows(query, projected_keys) < query.shape[0]:
            return self._score_in_blocks(query, projected_keys)
        hidden = (query.unsqueeze(2) + projected_keys.unsqueeze(1)).tanh_()
        return self.energy_proj(hidden).squeeze(-1)

    def _score_in_blocks(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        """``_score`` without autograd, a block of sources at a time: W_a q [B, T, A], U_a k [B, S, A] -> [B, T, S]."""
        (sources, steps, size), length = query.shape, projected_keys.shape[1]
        rows = self._block_rows(query, projected_keys)
        energy = self.energy_proj.weight.t().to(query.dtype)  # v_a [A, 1]; 16-bit under autocast, which out= escapes
        scores = query.new_empty(sources, steps, length)
        hidden = query.new_empty(rows, steps, length, size)
        for start in range(0, sources, rows):
            block = slice(start, start + rows)
            rows_hidden = hidden[:scores[block].shape[0]]
            torch.add(query[block].unsqueeze(2), projected_keys[block].unsqueeze(1), out=rows_hidden).tanh_()
            torch.matmul(rows_hidden, energy, out=scores[block].unsqueeze(-1))
        return scores

    def _block_rows(self, query: Tensor, projected_keys: Tensor) -> int:
        """Sources per block of the hidden layer: [rows, T, S, A] holds at most ``HIDDEN_BLOCK_ENTRIES``."""
        return max(1, self.HIDDEN_BLOCK_ENTRIES // (query.shape[1] * projected_keys.shape[1] * query.shape[2]))

    @classmethod
    def from_config(cls, config: Any, query_size: int, key_size: int) -> "AdditiveAttention":
        return cls(query_size, key_size, config.attention_size)


@ATTENTION_SCORES.register("concat")
class ConcatAttention(AdditiveAttention):
    """Luong's "concat" score, which is Bahdanau's additive score: e_j = v_a^T tanh(W_a [q; k_j])."""


@ATTENTION_SCORES.register("location_aware")
class LocationAwareAttention(AdditiveAttention):
    """Chorowski et al. (2015)'s location-aware score: e_tj = β wᵀ tanh(W q_t + V h_j + b + U f_tj), f_t = F ∗ α_{t−1}.

    F = ``location_conv``: k filters of odd width r over the source positions, zero-padded so that f_t [N, S, k] has
    S positions, (F ∗ α)_j = Σ_o F_o α_{j+o−(r−1)/2}, no bias; U = ``location_proj`` [k -> A], no bias;
    W = ``query_proj``, V and b = ``key_proj`` (project_keys: V h_j + b [N, S, A], once per source);
    w = ``energy_proj``; β = ``sharpening``, softmax(β e) sharper for β > 1. The layout is ESPnet's ``AttLoc`` (its
    ``scaling`` is β, its ``aconv_chans`` k, its kernel 2 ``aconv_filts`` + 1 = r), and so is α_0: uniform over the
    real positions (``initial_alignment``).

    ``smoothing`` (Chorowski et al. §2.3): the score is log σ(β e_tj), so the softmax over it that every scope but
    the monotonic one takes is α_tj = σ(β e_tj) / Σ_k σ(β e_tk) over the positions it normalises (all real ones, or a
    local window), exactly 0 on padding. The log form stays finite where σ(β e_tj) rounds to 0 (β e_tj < −88 in
    float32) and the ratio of sigmoids would be 0 / 0.

    ``step_keys`` adds U f_tj to the projected keys, so a decoder scores step t with ``score(q_t, step_keys(keys,
    α_{t−1}))``. Without a decoding state (``forward``, ``stepwise``) every query attends as the first step does, from
    α_0; ``score`` reads the keys it is given.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int, filters: int, kernel_size: int,
                 sharpening: float, smoothing: bool = False) -> None:
        super().__init__(query_size, key_size, attention_size, key_bias=True)
        if filters < 1:
            raise ValueError(f"filters (location_filters) must be a positive integer, got {filters}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size (location_kernel_size) must be an odd positive integer (the filters are "
                             f"centred on each position), got {kernel_size}")
        if sharpening <= 0:
            raise ValueError(f"sharpening (location_sharpening) must be > 0, got {sharpening}")
        self.sharpening = float(sharpening)
        self.smoothing = smoothing
        self.location_conv = nn.Conv1d(1, filters, kernel_size, padding=kernel_size // 2, bias=False)
        self.location_proj = nn.Linear(filters, attention_size, bias=False)

    def initial_alignment(self, mask: Tensor, dtype: torch.dtype) -> Tensor:
        """α_0j = 1 / L over the L real positions, 0 on padding (and for a source of no tokens)."""
        real = mask.to(dtype)
        return real / real.sum(-1, keepdim=True).clamp(min=1)

    def step_keys(self, projected_keys: Tensor, previous: Tensor | None) -> Tensor:
        """V h_j + b [N, S, A], α_{t−1} [N, S] -> V h_j + b + U f_tj [N, S, A]."""
        if previous is None:
            raise ValueError("the location-aware score reads the previous step's alignment α_{t−1}, got None")
        features = self.location_conv(previous.to(projected_keys.dtype).unsqueeze(1))  # f_t [N, k, S]
        return projected_keys + self.location_proj(features.transpose(1, 2))

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        """β e_tj [B, T, S], or log σ(β e_tj) with ``smoothing``."""
        scores = super()._score(query, projected_keys)
        scores = scores if self.sharpening == 1.0 else scores * self.sharpening
        return nn.functional.logsigmoid(scores) if self.smoothing else scores

    def _first_step_keys(self, projected_keys: Tensor, mask: Tensor) -> Tensor:
        """V h_j + b + U (F ∗ α_0)_j [N, S, A] for sources with ``mask`` [N, S]."""
        return self.step_keys(projected_keys, self.initial_alignment(mask, projected_keys.dtype))

    def _attend(self, query: Tensor, projected_keys: Tensor, values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        return super()._attend(query, self._first_step_keys(projected_keys, mask), values, mask)

    def stepwise(self, values: Tensor, mask: Tensor,
                 projected_keys: Tensor) -> Callable[[Tensor], tuple[Tensor, Tensor]]:
        return super().stepwise(values, mask, self._first_step_keys(projected_keys, mask))

    @classmethod
    def from_config(cls, config: Any, query_size: int, key_size: int) -> "LocationAwareAttention":
        return cls(query_size, key_size, config.attention_size, config.location_filters, config.location_kernel_size,
                   config.location_sharpening, config.location_smoothing)


class ProductAttention(AttentionMechanism):
    """Scores that are scaled products with the (projected) keys: e_j = s q^T k'_j, with k' = project_keys(k) and
    s = ``scale``.

    query [B, T, Dq], projected keys [B, S, Dq] -> scores [B, T, S]. In ``stepwise`` loops the keys are read
    through ``LoopLinear`` (their gradient is one product after the loop), unless a subclass scores with its own
    ``_score``: then the loop goes through it, like every other path.
    """

    scale: float = 1.0

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        scores = _dot(query, projected_keys)
        return scores if self.scale == 1.0 else scores * self.scale

    def _step_score(self, projected_keys: Tensor) -> Callable[[Tensor], Tensor]:
        if type(self)._score is not ProductAttention._score:
            return super()._step_score(projected_keys)
        product = LoopLinear(projected_keys)  # q [B, Dq] -> K' q [B, S]
        return product if self.scale == 1.0 else lambda query: product(query) * self.scale


@ATTENTION_SCORES.register("dot")
class DotAttention(ProductAttention):
    """Luong's dot score: e_j = q^T k_j.  Needs query_size == key_size.

    query [B, T, D], keys [B, S, D] -> scores [B, T, S]
    """

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__()
        self.size = _same_size(type(self).__name__, query_size, key_size)


@ATTENTION_SCORES.register("scaled_dot")
class ScaledDotAttention(DotAttention):
    """Scaled dot score (Vaswani et al.): e_j = q^T k_j / sqrt(d).  Needs query_size == key_size = d."""

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__(query_size, key_size)
        self.scale = 1 / math.sqrt(self.size)


@ATTENTION_SCORES.register("general")
class GeneralAttention(ProductAttention):
    """Luong's general score: e_j = q^T W_a k_j.

    W_a = ``key_proj`` [Dk -> Dq]; project_keys: keys [B, S, Dk] -> W_a k [B, S, Dq], once per source.
    """

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__()
        self.key_proj = nn.Linear(key_size, query_size, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)


@ATTENTION_SCORES.register("location")
class LocationAttention(AttentionMechanism):
    """Luong's location score: e_t = W_a q_t, one score per source position; keys are not used.

    W_a = ``position_proj`` [Dq -> max_source_positions]; the first S scores are kept.
    query [B, T, Dq] -> scores [B, T, S], S <= max_source_positions.
    """

    position_free = False

    def __init__(self, query_size: int, max_source_positions: int) -> None:
        super().__init__()
        self.max_source_positions = max_source_positions
        self.position_proj = nn.Linear(query_size, max_source_positions, bias=False)

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        source_length = projected_keys.shape[1]
        if exporting():  # S has no bound in the trace: padded by S, the scores are at least S long for any S
            # (the exported folder's runtime refuses sources longer than max_source_positions, as below)
            return nn.functional.pad(self.position_proj(query), (0, source_length))[..., :source_length]
        if source_length > self.max_source_positions:
            raise ValueError(
                f"location attention scores at most max_source_positions={self.max_source_positions} "
                f"source positions, got a source of length {source_length}"
            )
        return self.position_proj(query)[..., :source_length]

    @classmethod
    def from_config(cls, config: Any, query_size: int, key_size: int) -> "LocationAttention":
        return cls(query_size, config.max_source_positions)


@ATTENTION_SCORES.register("multihead")
class MultiHeadAttention(AttentionMechanism):
    """Multi-head scaled dot attention, with the parameters and results of nn.MultiheadAttention.

    head_h = softmax(Q_h K_h^T / sqrt(d)) V_h with Q_h = q W_h^Q + b, K_h = k W_h^K + b,
    V_h = v W_h^V + b, d = A / H; context = concat_h(head_h) W^O + b^O.
    ``q_proj`` [Dq -> A], ``k_proj`` [Dk -> A], ``v_proj`` [Dv -> A], ``out_proj`` [A -> Dv].
    project_keys: keys [B, S, Dk] -> K [B, H, S, d], once per source.
    score: query [B, T, Dq] -> per-head scores [B, H, T, S]; forward returns the
    weights averaged over heads, [B, T, S].
    """

    def __init__(self, query_size: int, key_size: int, value_size: int, num_heads: int, attention_size: int) -> None:
        super().__init__()
        if num_heads < 1 or attention_size % num_heads != 0:
            raise ValueError(
                f"num_heads must be a positive divisor of attention_size; "
                f"got num_heads={num_heads}, attention_size={attention_size}"
            )
        self.num_heads = num_heads
        self.head_size = attention_size // num_heads
        self.q_proj = nn.Linear(query_size, attention_size)
        self.k_proj = nn.Linear(key_size, attention_size)
        self.v_proj = nn.Linear(value_size, attention_size)
        self.out_proj = nn.Linear(attention_size, value_size)

    def _split_heads(self, x: Tensor) -> Tensor:
        """[B, L, A] -> [B, H, L, d]"""
        return x.unflatten(-1, (self.num_heads, self.head_size)).transpose(1, 2)

    def project_keys(self, keys: Tensor) -> Tensor:
        return self._split_heads(self.k_proj(keys))

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        return _dot(self._split_heads(self.q_proj(query)), projected_keys) / math.sqrt(self.head_size)

    def step_functions(self, values: Tensor, projected_keys: Tensor) -> tuple[Callable[[Tensor], Tensor],
                                                                            Callable[[Tensor], tuple[Tensor, Tensor]]]:
        """Per-head weights [B, H, S] pool the raw values (``pool``), one step at a time."""

        def pool(weights: Tensor) -> tuple[Tensor, Tensor]:
            context, mean_weights = self.pool(weights.unsqueeze(-2), values)
            return context.squeeze(-2), mean_weights.squeeze(-2)

        return lambda query: self.score(query, projected_keys), pool

    def pool(self, weights: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Per-head weights [B, H, T, S], values [B, S, Dv] -> context [B, T, Dv], weights averaged over heads."""
        # sum_j alpha_hj (W_h^V v_j + b_h) = W_h^V (sum_j alpha_hj v_j) + b_h sum_j alpha_hj:
        # pooling the raw values first avoids projecting all S values at every decoder step.
        pooled = weights @ values.unsqueeze(1)  # [B, H, T, Dv]
        value_weight = self.v_proj.weight.unflatten(0, (self.num_heads, self.head_size))  # [H, d, Dv]
        value_bias = self.v_proj.bias.view(self.num_heads, 1, self.head_size)  # [H, 1, d]
        heads = pooled @ value_weight.transpose(-1, -2) + weights.sum(-1, keepdim=True) * value_bias  # [B, H, T, d]
        context = self.out_proj(heads.transpose(1, 2).flatten(-2))  # [B, T, A] -> [B, T, Dv]
        return context, weights.mean(dim=1)

    @classmethod
    def from_config(cls, config: Any, query_size: int, key_size: int) -> "MultiHeadAttention":
        return cls(query_size, key_size, key_size, config.num_attention_heads, config.attention_size)


@ATTENTION_SCORES.register("gaussian_kernel")
class GaussianKernelAttention(AttentionMechanism):
    """Nadaraya-Watson pooling with a Gaussian kernel: e_j = -1/2 (w ||q - k_j||)^2.

    w (config ``gaussian_kernel_width``) scales the distance: a larger w gives a narrower
    kernel. It is a learned parameter when ``learnable`` (parametric pooling), else a
    fixed buffer (non-parametric pooling). Needs query_size == key_size.
    query [B, T, D], keys [B, S, D] -> scores [B, T, S]
    """

    def __init__(self, query_size: int, key_size: int, width: float, learnable: bool) -> None:
        super().__init__()
        _same_size(type(self).__name__, query_size, key_size)
        if width <= 0:
            raise ValueError(f"width (gaussian_kernel_width) must be > 0, got {width}")
        width_tensor = torch.tensor(float(width))
        self.initial_width = float(width)
        if learnable:
            self.width = nn.Parameter(width_tensor)
        else:
            self.register_buffer("width", width_tensor)

    def _score(self, query: Tensor, projected_keys: Tensor) -> Tensor:
        # ||q - k||^2 = ||q||^2 - 2 q.k + ||k||^2: one batched matmul for all T x S pairs.
        squared_distance = (
            query.square().sum(-1, keepdim=True)  # [B, T, 1]
            - 2 * _dot(query, projected_keys)  # [B, T, S]
            + projected_keys.square().sum(-1).unsqueeze(1)  # [B, 1, S]
        ).clamp_min(0)  # rounding can make it slightly negative
        return -0.5 * self.width.square() * squared_distance

    def init_parameters(self) -> None:
        """w = ``gaussian_kernel_width`` (the model's ``_init_weights`` calls it)."""
        init.constant_(self.width, self.initial_width)

    @classmethod
    def from_config(cls, config: Any, query_size: int, key_size: int) -> "GaussianKernelAttention":
        return cls(query_size, key_size, config.gaussian_kernel_width, config.gaussian_kernel_learnable)


def build_attention(attention_type: str, config: Any, query_size: int, key_size: int) -> AttentionMechanism:
    """The mechanism registered as ``attention_type``, sized for queries [.., Dq] and keys [.., Dk]."""
    if attention_type not in ATTENTION_SCORES:
        raise ValueError(f"attention_type must be one of {list(ATTENTION_SCORES)}, got {attention_type!r}")
    return ATTENTION_SCORES[attention_type].from_config(config, query_size, key_size)
