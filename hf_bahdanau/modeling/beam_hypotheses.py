"""The running and finished hypotheses of beam search, kept as transformers' ``_beam_search`` keeps them.

Our beam search loop (``search``) calls these instead of transformers' private helpers, so that a transformers release
that renames or reshapes them changes nothing here; the arithmetic is transformers' own, operation for operation,
so the sequences and scores stay bit-identical to its loop (``tests/test_search.py`` compares them).

Per source b there are k running beams and k finished slots, as static tensors:

    running_sequences [B, k, L], running_scores [B, k]      log P of each running beam
    sequences [B, k, L], scores [B, k], finished [B, k]     the best finished hypotheses, s = log P / |Y|^α
    beam_indices [B, k, L - prompt]                         which decoder row each token came from

At each step the best K = 2k continuations [B, K] of each source are split: those that hit a stopping criterion
(EOS, maximum length) compete for the finished slots, the best k of the others run on. A "−10⁹" term removes a
candidate from a choice, as in transformers.
"""

import torch
from torch import Tensor

__all__ = ["early_stop_unsatisfied", "gather_beams", "has_unfinished", "next_running_beams", "update_finished"]

EXCLUDED = -1.0e9  # added to a candidate's score to keep it out of a top-k (transformers' value)


def gather_beams(tensor: Tensor, beam_indices: Tensor) -> Tensor:
    """tensor [B, beams, …], beam_indices [B, n] -> tensor [B, n, …] (``take_along_dim`` is ~6× slower here)."""
    index = beam_indices.view(*beam_indices.shape, *(1,) * (tensor.dim() - 2))
    return tensor.gather(1, index.expand(*beam_indices.shape, *tensor.shape[2:]))


def next_running_beams(topk_log_probs: Tensor, topk_sequences: Tensor, topk_beam_indices: Tensor,
                       hits_stopping_criteria: Tensor, num_beams: int) -> tuple[Tensor, Tensor, Tensor]:
    """The k best candidates [B, K] that did not just stop: their sequences [B, k, L], log P [B, k] and beam
    indices [B, k, …]."""
    running_log_probs = topk_log_probs + hits_stopping_criteria.to(torch.float32) * EXCLUDED
    best = torch.topk(running_log_probs, k=num_beams)[1]
    return (gather_beams(topk_sequences, best), gather_beams(running_log_probs, best),
            gather_beams(topk_beam_indices, best))


def update_finished(sequences: Tensor, scores: Tensor, beam_indices: Tensor, finished: Tensor,
                    topk_sequences: Tensor, topk_scores: Tensor, topk_beam_indices: Tensor,
                    hits_stopping_criteria: Tensor, early_stop_open: Tensor, num_beams: int, length: int,
                    length_penalty: float, early_stopping: bool | str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The k best of the finished hypotheses and the candidates that just finished.

    A candidate [B, K] competes when it is among the source's best k and hit a stopping criterion, its source may
    still improve (``early_stop_open`` [B, 1]) and, with ``early_stopping=True``, not every slot is full yet. Its score
    is topk_scores / length^α, length = its generated tokens (EOS included).
    """
    just_finished = hits_stopping_criteria & (torch.arange(topk_scores.shape[1], device=topk_scores.device)
                                              < num_beams)[None, :]
    candidate_scores = topk_scores / (length ** length_penalty)
    full = torch.all(finished, dim=-1, keepdim=True) & (early_stopping is True)
    candidate_scores += full.to(torch.float32) * EXCLUDED
    candidate_scores += (~early_stop_open).to(torch.float32) * EXCLUDED
    candidate_scores += (~just_finished) * EXCLUDED
    merged_scores = torch.cat((scores, candidate_scores), dim=1)
    best = torch.topk(merged_scores, k=num_beams)[1]
    return (gather_beams(torch.cat((sequences, topk_sequences), dim=1), best), gather_beams(merged_scores, best),
            gather_beams(torch.cat((beam_indices, topk_beam_indices), dim=1), best),
            gather_beams(torch.cat((finished, just_finished), dim=1), best))


def early_stop_unsatisfied(open_sources: Tensor, running_scores: Tensor, scores: Tensor, finished: Tensor,
                           generated: int, max_generated: int, length_penalty: float,
                           early_stopping: bool | str) -> Tensor:
    """[B, 1]: sources whose best running beam (running_scores [B, k], best first) may still beat their worst
    finished hypothesis. Its best score is assumed at the current generated length, or at the longest allowed
    (``max_generated``) with ``early_stopping="never"`` and α > 0, where longer hypotheses score higher."""
    length = max_generated if early_stopping == "never" and length_penalty > 0.0 else generated
    best_possible = running_scores[:, :1] / (length ** length_penalty)
    worst_finished = torch.where(finished, torch.min(scores, dim=1, keepdim=True)[0], EXCLUDED)
    return open_sources & torch.any(best_possible > worst_finished, dim=-1, keepdim=True)


def has_unfinished(open_sources: Tensor, finished: Tensor, hits_stopping_criteria: Tensor,
                   early_stopping: bool | str) -> bool:
    """Whether another step is needed: some source may still improve, some slot is open (``early_stopping=True``),
    and some running candidate did not hit a stopping criterion."""
    improvable = torch.any(open_sources)
    slot_open = ~(torch.all(finished) & (early_stopping is True))
    can_continue = ~torch.all(hits_stopping_criteria)
    return bool(improvable & slot_open & can_continue)
