"""Decoding state: what the encoder leaves for the decoder, what the decoder carries between steps,
and the ``Cache`` that carries both through ``generate()``."""

from typing import NamedTuple

from torch import Tensor
from transformers.cache_utils import Cache

from .padding import rotate_rows
from .recurrent import RecurrentState


def _rows(tensor: Tensor | None, index: Tensor) -> Tensor | None:
    """tensor [N, …] -> tensor[index] [len(index), …]; None stays None."""
    return None if tensor is None else tensor.index_select(0, index)


class EncoderMemory(NamedTuple):
    """Computed once per source and reused at every decoder step.

    annotations [B, S, D]: keys and values of the attention; mask [B, S] bool (True = real token);
    projected_keys: the attention's key projection (e.g. U_a h_j [B, S, A]), None without attention;
    summary [B, D]: Cho et al.'s fixed context C (the top encoder layer's final state), else None;
    rows_per_source: decoder rows b·k … b·k + k − 1 all read source b (the k beams of beam search share
    one copy of its memory), so the decoder runs B · rows_per_source rows;
    source_starts [B]: the memory is right-padded, and source b's tokens start at column source_starts[b] of the
    caller's mask (None: they start at column 0; see ``padding``).
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

    def index_select(self, index: Tensor) -> "EncoderMemory":
        """The memory of sources ``index`` [N] (one row per source): a copy per decoder row."""
        return EncoderMemory(_rows(self.annotations, index), _rows(self.mask, index), _rows(self.projected_keys, index),
                             _rows(self.summary, index), 1, _rows(self.source_starts, index))

    def to_caller_layout(self, weights: Tensor) -> Tensor:
        """Attention weights [B · rows_per_source, T, S] over the memory -> over the caller's source columns."""
        if self.source_starts is None:
            return weights
        return rotate_rows(weights, -self.source_starts.repeat_interleave(self.rows_per_source), dim=-1)


class AttentionState(NamedTuple):
    """What the attention carries from one decoder step to the next (``scope``, ``coverage``).

    step: target tokens attended so far (local-m's p_t = t); previous: α_{t-1} [N, S], the alignment a monotonic
    scope continues from, else None; coverage: c_t = Σ_{t'<t} α_t' [N, S] when the score reads it
    (``use_coverage``) or a search scores it (GNMT's coverage penalty), else None.
    """

    step: int = 0
    previous: Tensor | None = None
    coverage: Tensor | None = None

    def advance(self, weights: Tensor, previous: Tensor | None = None) -> "AttentionState":
        """The state after the steps of ``weights`` [N, T, S] (or one step [N, S]); ``previous``: the monotonic
        alignment of the last of them."""
        steps = weights.shape[1] if weights.dim() == 3 else 1
        coverage = self.coverage
        if coverage is not None:
            coverage = coverage + (weights.sum(1) if weights.dim() == 3 else weights)
        return AttentionState(self.step + steps, previous, coverage)

    def index_select(self, index: Tensor) -> "AttentionState":
        return AttentionState(self.step, _rows(self.previous, index), _rows(self.coverage, index))


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
    """The cache of the recurrent decoder (``cache``; ``past_key_values`` before transformers 5.24): the encoder
    memory plus the decoder state.

    It keeps the ``Cache`` protocol where it applies to a recurrent state: ``len(cache)`` is the number of decoder
    layers and ``cache.layers[l]`` holds layer l's state; ``get_seq_length()`` counts the decoder tokens consumed;
    beam search calls ``reorder_cache(beam_idx)``. Only the decoder state is reordered, because every beam of a
    source shares the same encoder memory (``beam_idx`` never crosses sources). There are no key/value tensors to
    ``update``, ``crop`` or offload: an RNN state cannot be rolled back a token (the model is ``_is_stateful``).
    ``step_plan``: the decoder's ``StepPlan`` for this memory, kept by the search loop after its first step;
    ``copy_source``: the ``pointer_generator.CopySource`` a ``copy_attention`` model copies from (per source, shared by
    its rows like the memory), else None; ``pointer_inputs``: a pointer network's [x_start; x_1 … x_S] [B, S + 1, E],
    what it reads for each pointer id (``modeling_pointer``), else None.
    """

    is_compileable = False

    def __init__(self, memory: EncoderMemory, state: DecoderState):
        super().__init__(layers=[])
        self.memory = memory
        self.state = state
        self.seen_tokens = 0
        self.step_plan = None
        self.copy_source = None
        self.pointer_inputs = None

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
