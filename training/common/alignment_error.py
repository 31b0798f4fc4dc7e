"""Alignment error rate (AER) of a model's soft alignments against ground-truth field spans.

Setting: each example states fields (e.g. year, month, day) at known character spans of the source
(``source_spans[field] = [start, end]``) and writes them at known spans of the target (``target_spans``).

Definition used here: run the model teacher-forced on the reference target and take, for every target
token whose characters lie inside a field's target span, the source token j* = argmax_j α_tj that it attends
to most. The token is an alignment error when the characters of source token j* do not overlap that field's
source span (EOS and other special tokens cover no characters, so attending to them is an error).

    AER = (number of erroneous field tokens) / (number of field tokens)

Target tokens outside every field (the "-" of "YYYY-MM-DD", EOS) are not counted. This is a hit rate of the
hard (argmax) alignment against span-level gold links, not Och & Ney's AER over sure/possible word links.
"""

from collections.abc import Sequence

import torch


def _field_of(offset: tuple[int, int], target_spans: dict[str, Sequence[int]]) -> str | None:
    """The field whose target span contains the characters [start, end) of a target token, if any."""
    start, end = offset
    if start == end:
        return None
    for field, (field_start, field_end) in target_spans.items():
        if field_start <= start and end <= field_end:
            return field
    return None


def _overlaps(offset: tuple[int, int], span: Sequence[int]) -> bool:
    start, end = offset
    return start < end and start < span[1] and span[0] < end


@torch.no_grad()
def alignment_error_rate(
    model,
    tokenizer,
    sources: Sequence[str],
    targets: Sequence[str],
    source_spans: Sequence[dict[str, Sequence[int]]],
    target_spans: Sequence[dict[str, Sequence[int]]],
    batch_size: int = 64,
) -> tuple[float, int]:
    """AER over the examples (see the module docstring) and the number of field tokens it counts."""
    if not len(sources) == len(targets) == len(source_spans) == len(target_spans):
        raise ValueError("`sources`, `targets`, `source_spans` and `target_spans` must have the same length.")
    model.eval()
    errors = counted = 0
    for start in range(0, len(sources), batch_size):
        stop = start + batch_size
        encoded = tokenizer(list(sources[start:stop]), padding=True, return_offsets_mapping=True,
                            return_tensors="pt")
        labelled = tokenizer(text_target=list(targets[start:stop]), padding=True, padding_side="right",
                             return_offsets_mapping=True, return_tensors="pt")  # the decoder reads targets from t = 0
        labels = labelled["input_ids"].masked_fill(labelled["attention_mask"] == 0, -100)
        out = model(input_ids=encoded["input_ids"].to(model.device),
                    attention_mask=encoded["attention_mask"].to(model.device),
                    labels=labels.to(model.device), output_attentions=True)
        attended = out.cross_attentions[-1][:, 0].argmax(-1).cpu()  # [B, T]: j* per target token
        for row, (gold_source, gold_target) in enumerate(zip(source_spans[start:stop], target_spans[start:stop])):
            for t, offset in enumerate(labelled["offset_mapping"][row].tolist()):
                field = _field_of(tuple(offset), gold_target) if labelled["attention_mask"][row, t] else None
                if field is None:
                    continue
                counted += 1
                errors += not _overlaps(tuple(encoded["offset_mapping"][row, attended[row, t]].tolist()),
                                        gold_source[field])
    if counted == 0:
        raise ValueError("no target token lies inside a field's target span: check `target_spans`.")
    return errors / counted, counted
