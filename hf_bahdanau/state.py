"""Decoding state: what the encoder leaves for the decoder, what the decoder carries between steps,
and the ``Cache`` that carries both through ``generate()``."""

from typing import NamedTuple

from torch import Tensor
from transformers.cache_utils import Cache

from .recurrent import RecurrentState


class EncoderMemory(NamedTuple):
    """Computed once per source and reused at every decoder step.

    annotations [B, S, D]: keys and values of the attention; mask [B, S] bool (True = real token);
    projected_keys: the attention's key projection (e.g. U_a h_j [B, S, A]), None without attention;
    summary [B, D]: Cho et al.'s fixed context C (the top encoder layer's final state), else None;
    rows_per_source: decoder rows b·k … b·k + k − 1 all read source b (the k beams of beam search share
    one copy of its memory), so the decoder runs B · rows_per_source rows.
    """

    annotations: Tensor
    mask: Tensor
    projected_keys: Tensor | None = None
    summary: Tensor | None = None
    rows_per_source: int = 1


class DecoderState(NamedTuple):
    """What changes from one decoder step to the next.

    rnn: per-layer state [layers, B, H] (and LSTM cells); input_feed [B, output_size]: Luong's
    attentional vector h̃_{t-1} when ``input_feeding``, else None.
    """

    rnn: RecurrentState
    input_feed: Tensor | None = None

    def index_select(self, index: Tensor) -> "DecoderState":
        """Pick batch rows (beam search reordering, or k rows per source for its start)."""
        feed = None if self.input_feed is None else self.input_feed.index_select(0, index)
        return DecoderState(self.rnn.index_select(index), feed)


class RecurrentDecoderCache(Cache):
    """``past_key_values`` of the recurrent decoder: the encoder memory plus the decoder state.

    Beam search calls ``reorder_cache(beam_idx)``; only the decoder state is reordered, because
    every beam of a source shares the same encoder memory (``beam_idx`` never crosses sources).
    ``step_plan``: the decoder's ``StepPlan`` for this memory, kept by the search loop after its first step.
    """

    is_compileable = False

    def __init__(self, memory: EncoderMemory, state: DecoderState):
        super().__init__(layers=[])
        self.memory = memory
        self.state = state
        self.seen_tokens = 0
        self.step_plan = None

    def update_state(self, state: DecoderState, num_new_tokens: int) -> None:
        """Store the state after ``num_new_tokens`` more decoder tokens."""
        self.state = state
        self.seen_tokens += num_new_tokens

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Number of decoder tokens consumed so far."""
        return self.seen_tokens

    def reorder_cache(self, beam_idx: Tensor) -> None:
        self.state = self.state.index_select(beam_idx.to(self.state.rnn.hidden.device))
