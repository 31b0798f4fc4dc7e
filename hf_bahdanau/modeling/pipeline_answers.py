"""What the answering pipelines (memory, passage, VQA: one label out of ``config.id2label`` per question) share: their
options, checked once, and their answer, the k likeliest labels."""

from typing import Any

from torch import Tensor

__all__ = ["answer_parameters", "answer_record"]


def answer_parameters(top_k: Any = None, return_attentions: Any = None) -> dict[str, Any]:
    """An answering pipeline's postprocess parameters, those given: ``top_k`` (a positive int: the k likeliest
    answers) and ``return_attentions`` (True or False); ValueError naming the one that is neither."""
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"`top_k` must be a positive int, got {top_k!r}.")
    if return_attentions is not None and not isinstance(return_attentions, bool):
        raise ValueError(f"`return_attentions` must be True or False, got {return_attentions!r}.")
    given = {"top_k": top_k, "return_attentions": return_attentions}
    return {name: value for name, value in given.items() if value is not None}


def answer_record(logits: Tensor, id2label: dict[int, str], top_k: int) -> dict[str, Any]:
    """logits [num_labels] -> ``{"answer", "score"}`` (p = softmax(logits), in float32) of the likeliest label, or with
    ``top_k`` > 1 ``{"answers": [{"answer", "score"}, …]}``, the k likeliest (at most num_labels) first."""
    probabilities = logits.float().softmax(-1)
    scores, ids = probabilities.topk(min(top_k, len(probabilities)))
    answers = [{"answer": id2label[int(index)], "score": float(score)} for score, index in zip(scores, ids)]
    return {"answers": answers} if top_k > 1 else dict(answers[0])
