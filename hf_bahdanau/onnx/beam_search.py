"""Beam search in numpy over a decoder step function: transformers' ``generate()`` algorithm, step for step, for
the ONNX Runtime decoder (``runtime``), which runs without torch. (Greedy search runs inside ONNX Runtime:
``onnx_greedy``.)

A step function reads the tokens of the N decoder rows and their state and returns each row's most likely next
tokens, largest first (the lower id first on ties, as ``argmax`` and ONNX's TopK):

    step(tokens [N] int64, state, top_k) -> (log p [N, K] float32, their tokens [N, K] int64, the next state,
                                             α_t [N, S] or None),  K = min(top_k, V)

and ``reorder(state, rows [N])`` picks the state's rows. The search never needs the whole [N, V]: a source's best
2k continuations are among the best 2k of each of its rows. It is transformers' ``_beam_search``: the best
(1 + number of EOS ids, at least 2) · k continuations of each source, the k best of those that do not end go on,
the ones among the first k that end join the finished hypotheses scored log P / |Y|^length_penalty, and
transformers' early-stopping heuristic decides when to stop. The -1e9 sentinels and float32 arithmetic are
transformers' own, so the same log-probabilities give the same tokens.
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["SearchOutput", "beam_search", "generated_length"]

Step = Callable[[np.ndarray, Any, int], tuple[np.ndarray, np.ndarray, Any, np.ndarray | None]]
Reorder = Callable[[Any, np.ndarray], Any]
CoveragePenalty = Callable[[Any, np.ndarray], np.ndarray]  # (state, decoder rows [B, n]) -> cp [B, n] float32
NEG = np.float32(-1.0e9)  # transformers' sentinel for "not a candidate"


class SearchOutput(NamedTuple):
    """sequences [R, 1 + T] int64 (the start token first; rows that ended early are padded);
    scores: beam search's sequence scores [R] (log P / |Y|^length_penalty), greedy search's log-probabilities of
    the chosen tokens [R, T] (0 after a row's EOS); alignments: per row α [T, S] of the tokens it generated,
    following its beam (None unless asked for). R = sources · num_return_sequences, consecutive rows per source."""

    sequences: np.ndarray
    scores: np.ndarray
    alignments: list[np.ndarray] | None


def _best_tokens(step: Step, tokens: np.ndarray, state: Any, count: int, new_tokens: int, min_new_tokens: int,
                 eos_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray | None]:
    """``step`` for the ``count`` best tokens of each row, under transformers' ``MinNewTokensLengthLogitsProcessor``:
    no EOS before ``min_new_tokens`` new tokens (then the best count + |EOS ids| are fetched, EOS gets -inf and the
    others move up, in order)."""
    if new_tokens >= min_new_tokens:
        return step(tokens, state, count)
    log_probs, ids, state, alpha = step(tokens, state, count + len(eos_ids))
    log_probs = np.where(np.isin(ids, eos_ids), -np.inf, log_probs).astype(np.float32)
    order = np.argsort(-log_probs, axis=-1, kind="stable")[:, :count]
    return np.take_along_axis(log_probs, order, -1), np.take_along_axis(ids, order, -1), state, alpha


def generated_length(sequence: np.ndarray, eos_ids: Sequence[int]) -> int:
    """Tokens a row generated, its EOS included (the start token excluded)."""
    ends = np.flatnonzero(np.isin(sequence[1:], eos_ids))
    return int(ends[0]) + 1 if ends.size else len(sequence) - 1


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of each row [B, n], largest first (``torch.topk``): a partition in O(n),
    then a sort of the k."""
    if k < values.shape[-1]:
        candidates = np.argpartition(-values, k - 1, axis=-1)[:, :k]
    else:
        candidates = np.broadcast_to(np.arange(values.shape[-1]), values.shape)
    order = np.argsort(-np.take_along_axis(values, candidates, axis=-1), axis=-1, kind="stable")
    return np.take_along_axis(candidates, order, axis=-1)


def _gather(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """values [B, n, …] at indices [B, m] along axis 1 -> [B, m, …] (transformers' ``_gather_beams``)."""
    return np.take_along_axis(values, indices.reshape(indices.shape + (1,) * (values.ndim - 2)), axis=1)


def beam_search(step: Step, reorder: Reorder, state: Any, batch_size: int, num_beams: int, start_id: int,
                eos_ids: Sequence[int], pad_id: int, max_new_tokens: int, min_new_tokens: int = 0,
                length_penalty: float = 1.0, early_stopping: bool | str = False, num_return_sequences: int = 1,
                output_alignments: bool = False, length_penalty_style: str = "transformers",
                coverage_penalty: CoveragePenalty | None = None) -> SearchOutput:
    """Beam search over ``batch_size`` sources whose state has ``num_beams`` consecutive rows each (row b · k + i
    is beam i of source b). Returns the ``num_return_sequences`` best finished hypotheses of each source.

    GNMT's scores (Wu et al. 2016, §7; hf_bahdanau's generate() the same way, ``search.BeamPenalties``): with
    ``length_penalty_style="gnmt"`` a finished hypothesis scores log P / ((5 + |Y|) / 6)^α instead of log P / |Y|^α;
    ``coverage_penalty(state, rows)`` adds cp [B, n] for candidates that extend the decoder rows [B, n], read from
    the state after the step that scored them."""
    k, eos_ids = num_beams, np.asarray(eos_ids, dtype=np.int64)

    def divisor(length: int) -> np.float32:
        """lp(Y) for |Y| = length new tokens."""
        return np.float32(((5 + length) / 6) ** length_penalty if length_penalty_style == "gnmt"
                          else length ** length_penalty)

    keep = max(2, 1 + len(eos_ids)) * k
    first_k = np.arange(keep) < k
    max_length = 1 + max_new_tokens  # the start token is the prompt
    fill = pad_id or int(eos_ids[0])  # transformers fills with the pad id, or the EOS id when the pad id is 0
    running_sequences = np.full((batch_size, k, max_length), fill, dtype=np.int64)
    running_sequences[:, :, 0] = start_id
    sequences = running_sequences.copy()
    running_scores = np.zeros((batch_size, k), dtype=np.float32)
    running_scores[:, 1:] = NEG
    scores = np.full((batch_size, k), NEG, dtype=np.float32)
    finished = np.zeros((batch_size, k), dtype=bool)
    may_improve = np.ones((batch_size, 1), dtype=bool)
    running_rows = np.full((batch_size, k, max_new_tokens), -1, dtype=np.int64)
    rows = running_rows.copy()
    source_offsets = np.arange(batch_size)[:, None] * k
    weights = []
    cur_len = 1
    while True:
        log_probs, ids, state, alpha = _best_tokens(step, running_sequences[:, :, cur_len - 1].reshape(-1), state,
                                                    keep, cur_len - 1, min_new_tokens, eos_ids)
        if output_alignments:
            weights.append(alpha)
        width = log_probs.shape[-1]  # the best `keep` tokens of each row (all of them when V < keep)
        accumulated = (log_probs.reshape(batch_size, k, width) + running_scores[:, :, None]).reshape(batch_size, -1)
        top = _top(accumulated, keep)
        top_scores = np.take_along_axis(accumulated, top, axis=1)
        top_beams, top_ids = top // width, np.take_along_axis(ids.reshape(batch_size, -1), top, axis=1)
        top_sequences = _gather(running_sequences, top_beams)
        top_sequences[:, :, cur_len] = top_ids
        top_rows = _gather(running_rows, top_beams)
        top_rows[:, :, cur_len - 1] = top_beams + source_offsets
        ends = np.isin(top_ids, eos_ids) | (cur_len + 1 >= max_length)

        continuing = top_scores + ends.astype(np.float32) * NEG
        best = _top(continuing, k)
        running_sequences, running_scores = _gather(top_sequences, best), _gather(continuing, best)
        running_rows = _gather(top_rows, best)

        just_finished = ends & first_k[None, :]
        candidate_scores = top_scores / divisor(cur_len)  # |Y| = cur_len new tokens
        if coverage_penalty is not None:
            candidate_scores = candidate_scores + coverage_penalty(state, top_beams + source_offsets)
        candidate_scores = candidate_scores + (finished.all(-1, keepdims=True) & (early_stopping is True)) * NEG
        candidate_scores = candidate_scores + (~may_improve).astype(np.float32) * NEG
        candidate_scores = candidate_scores + (~just_finished).astype(np.float32) * NEG
        merged_scores = np.concatenate([scores, candidate_scores], axis=1)
        kept = _top(merged_scores, k)
        sequences = _gather(np.concatenate([sequences, top_sequences], axis=1), kept)
        scores = _gather(merged_scores, kept)
        rows = _gather(np.concatenate([rows, top_rows], axis=1), kept)
        finished = _gather(np.concatenate([finished, just_finished], axis=1), kept)

        state = reorder(state, running_rows[:, :, cur_len - 1].reshape(-1))
        cur_len += 1
        longest = max_length - 1 if early_stopping == "never" and length_penalty > 0 else cur_len - 1
        best_running = running_scores[:, :1] / divisor(longest)
        worst_finished = np.where(finished, scores.min(-1, keepdims=True), NEG)
        may_improve &= (best_running > worst_finished).any(-1, keepdims=True)
        if not (may_improve.any() and not (finished.all() and early_stopping is True) and not ends.all()):
            break

    sequences = sequences[:, :num_return_sequences].reshape(batch_size * num_return_sequences, -1)
    scores = scores[:, :num_return_sequences].reshape(-1)
    rows = rows[:, :num_return_sequences].reshape(batch_size * num_return_sequences, -1)
    generated = int((rows >= 0).sum(-1).max())
    sequences = sequences[:, :1 + generated]
    alignments = None
    if output_alignments:
        alignments = [np.stack([weights[t][row_of_step] for t, row_of_step in enumerate(hypothesis[hypothesis >= 0])])
                      for hypothesis in rows[:, :generated]]
    return SearchOutput(sequences, scores, alignments)
