"""Decoding state: what the encoder leaves for the decoder (the ``EncodedSource``), what the decoder carries between
steps, and the ``Cache`` that carries both through ``generate()``."""

from typing import Any, NamedTuple

import torch
from torch import Tensor
from transformers.cache_utils import Cache

from .input_checks import check_rows_per_source
from .old_names import OldAttribute, old_keywords, old_names
from .padding import rotate_rows
from .recurrent import RecurrentState

__all__ = ["AttentionState", "DecoderState", "EncodedSource", "RecurrentDecoderCache", "RecurrentLayerCache",
           "resolve_rows_per_source"]


def _rows(tensor: Tensor | None, index: Tensor) -> Tensor | None:
    """tensor [N, …] -> tensor[index] [len(index), …]; None stays None."""
    return None if tensor is None else tensor.index_select(0, index)


class EncodedSource(NamedTuple):
    """The encoded source: Bahdanau et al.'s annotations h_j of each source and what the decoder derives from them
    alone, computed once per source and read at every decoder step.

    annotations [B, S, D]: keys and values of the attention; mask [B, S] bool (True = real token);
    projected_keys: the attention's key projection (e.g. U_a h_j [B, S, A]), None without attention;
    summary [B, D]: Cho et al.'s fixed context C (the top encoder layer's final state), else None;
    rows_per_source: decoder rows b·k … b·k + k − 1 all read source b (the k beams of beam search share
    one copy of it), so the decoder runs B · rows_per_source rows;
    source_starts [B]: the annotations are right-padded, and source b's tokens start at column source_starts[b] of
    the caller's mask (None: they start at column 0; see ``padding``).
    """

    annotations: Tensor
    mask: Tensor
    projected_keys: Tensor | None = None
    summary: Tensor | None = None
    rows_per_source: int = 1
    source_starts: Tensor | None = None

    @property
    def batch_size(self) -> int:
        """Sources B (the decoder runs B · rows_per_source rows)."""
        return self.mask.shape[0]

    def index_select(self, index: Tensor) -> "EncodedSource":
        """The encoded sources ``index`` [N] (one row per source): a copy per decoder row."""
        return EncodedSource(_rows(self.annotations, index), _rows(self.mask, index), _rows(self.projected_keys, index),
                             _rows(self.summary, index), 1, _rows(self.source_starts, index))

    def to_caller_layout(self, weights: Tensor) -> Tensor:
        """Attention weights [B · rows_per_source, T, S] over the annotations -> over the caller's source columns."""
        if self.source_starts is None:
            return weights
        return rotate_rows(weights, -self.source_starts.repeat_interleave(self.rows_per_source), dim=-1)


class AttentionState(NamedTuple):
    """What the attention carries from one decoder step to the next (``scope``, ``coverage``).

    step: target tokens attended so far (local-m's p_t = t); previous: α_{t-1} [N, S], the alignment a monotonic
    scope continues from or a location-aware score convolves, else None; coverage: c_t = Σ_{t'<t} α_t' [N, S] when
    the score reads it (``use_coverage``) or a search scores it (GNMT's coverage penalty), else None; policy: in
    training with ``attention_mode="hard_reinforce"``, each attend call's (log α_{t,j_t}, H(α_t)) [N, T'], else ();
    expected_rows: [N] bool, the sequences that attend by the expected context α at every step, drawn once when
    decoding starts (``AttentionMode.draw_expected_rows``: hard_reinforce in training with
    ``reinforce_expected_context_probability`` > 0), else None.
    """

    step: int = 0
    previous: Tensor | None = None
    coverage: Tensor | None = None
    policy: tuple[tuple[Tensor, Tensor], ...] = ()
    expected_rows: Tensor | None = None

    def advance(self, weights: Tensor, previous: Tensor | None = None,
                policy: tuple[Tensor, Tensor] | None = None) -> "AttentionState":
        """The state after the steps of ``weights`` [N, T, S] (or one step [N, S]); ``previous``: the alignment α of
        the last of them that the next step reads (``RecurrentDecoder._next_previous``), or None; ``policy``: a
        REINFORCE-trained mode's (log α_{t,j_t}, H(α_t)) of these steps ([N, T] or [N]), appended to ``policy``."""
        steps = weights.shape[1] if weights.dim() == 3 else 1
        coverage = self.coverage
        if coverage is not None:
            coverage = coverage + (weights.sum(1) if weights.dim() == 3 else weights)
        terms = self.policy
        if policy is not None:
            terms = terms + (tuple(term.reshape(term.shape[0], -1) for term in policy),)
        return AttentionState(self.step + steps, previous, coverage, terms, self.expected_rows)

    def policy_terms(self) -> tuple[Tensor, Tensor] | None:
        """Every step's (log α_{t,j_t}, H(α_t)) [N, T] so far, or None when the mode reports none."""
        if not self.policy:
            return None
        log_probs, entropies = zip(*self.policy)
        return torch.cat(log_probs, dim=1), torch.cat(entropies, dim=1)

    def index_select(self, index: Tensor) -> "AttentionState":
        """Pick rows; the policy terms, which only training collects, are not carried."""
        return AttentionState(self.step, _rows(self.previous, index), _rows(self.coverage, index),
                              expected_rows=_rows(self.expected_rows, index))


class DecoderState(NamedTuple):
    """What changes from one decoder step to the next.

    rnn: per-layer state [layers, B, H] (and LSTM cells); input_feed [B, output_size]: Luong's
    attentional vector h̃_{t-1} when ``input_feeding``, else None; attention: the ``AttentionState`` of a
    decoder with attention, else None.
    """

    rnn: RecurrentState
    input_feed: Tensor | None = None
    attention: AttentionState | None = None

    def index_select(self, index: Tensor) -> "DecoderState":
        """Pick batch rows (beam search reordering, or k rows per source for its start)."""
        attention = None if self.attention is None else self.attention.index_select(index)
        return DecoderState(self.rnn.index_select(index), _rows(self.input_feed, index), attention)


class RecurrentLayerCache(NamedTuple):
    """Decoder layer l's entry in ``RecurrentDecoderCache.layers``: hidden [N, H] and, for an LSTM, cell [N, H]
    (views of the cache's state)."""

    hidden: Tensor
    cell: Tensor | None = None


class RecurrentDecoderCache(Cache):
    """The cache of the recurrent decoder (``cache``; ``past_key_values`` before transformers 5.24): the encoded
    source (``encoded``) plus the decoder state.

    It keeps the ``Cache`` protocol where it applies to a recurrent state: ``len(cache)`` is the number of decoder
    layers and ``cache.layers[l]`` holds layer l's state; ``get_seq_length()`` counts the decoder tokens consumed;
    beam search calls ``reorder_cache(beam_idx)``. Only the decoder state is reordered, because every beam of a
    source shares the same encoded source (``beam_idx`` never crosses sources). There are no key/value tensors to
    ``update``, ``crop`` or offload: an RNN state cannot be rolled back a token (the model is ``_is_stateful``).
    ``step_plan``: the decoder's ``StepPlan`` for this encoded source, which a search builds once for all its steps
    (``plan_search_steps``); ``output_layer_inputs``: what the head's output layer reads at every step besides the
    decoder's output, per source and shared by its rows like the encoded source, given when the cache is built: a
    pointer-generator's ``CopySource``, a pointer network's inputs [x_start; x_1 … x_S] [B, S + 1, E]; None for the
    softmax; ``rows_per_source``: the decoder rows k of each source (beam search), whether the encoded source is
    shared by them (``encoded.rows_per_source`` = k) or copied per row (``encoded.rows_per_source`` = 1).
    Their names before: ``memory`` and ``head_memory`` (still read, set and passed, with a FutureWarning).
    """

    is_compileable = False
    memory = OldAttribute("encoded")
    head_memory = OldAttribute("output_layer_inputs")

    @old_keywords({"memory": "encoded", "head_memory": "output_layer_inputs"})
    def __init__(self, encoded: EncodedSource, state: DecoderState, output_layer_inputs: Any = None,
                 rows_per_source: int = 1):
        super().__init__(layers=[])
        self.encoded = encoded
        self.state = state
        self.seen_tokens = 0
        self.step_plan = None
        self.output_layer_inputs = output_layer_inputs
        self.rows_per_source = rows_per_source

    @property
    def layers(self) -> list[RecurrentLayerCache]:
        """Each decoder layer's rows of the state, made on access (the state itself is stacked, [layers, N, H])."""
        hidden, cell = self.state.rnn
        return [RecurrentLayerCache(hidden[index], None if cell is None else cell[index])
                for index in range(hidden.shape[0])]

    @layers.setter
    def layers(self, layers: list) -> None:
        if layers:  # ``Cache.__init__`` sets an empty list; the layers are views of ``state``
            raise AttributeError("RecurrentDecoderCache.layers are views of its state: update the state instead.")

    def update_state(self, state: DecoderState, num_new_tokens: int) -> None:
        """Store the state after ``num_new_tokens`` more decoder tokens."""
        self.state = state
        self.seen_tokens += num_new_tokens

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Number of decoder tokens consumed so far."""
        return self.seen_tokens

    def reorder_cache(self, beam_idx: Tensor) -> None:
        self.state = self.state.index_select(beam_idx.to(self.state.rnn.hidden.device))


def resolve_rows_per_source(rows_per_source: int | None, cache: RecurrentDecoderCache | None) -> int:
    """The decoder rows k of each source: ``rows_per_source`` (checked), else the cache's, else 1. A cache's k
    cannot change: a different ``rows_per_source`` is a ValueError."""
    if rows_per_source is not None:
        check_rows_per_source(rows_per_source)
    if cache is None:
        return 1 if rows_per_source is None else rows_per_source
    if rows_per_source is not None and rows_per_source != cache.rows_per_source:
        raise ValueError(f"`rows_per_source` = {rows_per_source} does not match the `cache`, which holds "
                         f"{cache.rows_per_source} decoder rows per source.")
    return cache.rows_per_source


__getattr__ = old_names(__name__, {"EncoderMemory": EncodedSource})
