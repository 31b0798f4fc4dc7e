"""Pointer ids, the data path and the generation option of pointer networks (``modeling_pointer``).

A pointer network's outputs are input positions. Its vocabulary of output ids is per example:

    0 = END      ends the output (it is also the decoder's start input and the padding of its inputs)
    j + 1        points at input position j (0-based)

so a model over n inputs scores n + 1 ids. ``DataCollatorForPointing`` batches rows {"input_features" [n][F] or
"input_ids" [n], "labels": pointer ids}; ``ForbidRepeatedPointers`` is the ``generate(forbid_repeats=True)`` option.
"""

from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import LogitsProcessor

END = 0

__all__ = ["END", "DataCollatorForPointing", "ForbidRepeatedPointers", "positions"]


def positions(pointer_ids: Sequence[int] | Tensor) -> list[int]:
    """Pointer ids (labels, or a row of ``generate()``'s output without its first column, the decoder start) -> the
    0-based input positions they point at, up to the first ``END``."""
    ids = pointer_ids.tolist() if isinstance(pointer_ids, Tensor) else [int(i) for i in pointer_ids]
    ids = ids[:ids.index(END)] if END in ids else ids
    return [i - 1 for i in ids]


class ForbidRepeatedPointers(LogitsProcessor):
    """Sets the score of every position a sequence has already pointed at to −∞ (``END`` stays allowed), so a
    search outputs each input at most once (a permutation for sorting, a simple vertex list for a hull).

    input_ids [N, L] pointer ids so far, scores [N, n + 1] -> scores."""

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        pointed = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, input_ids.clamp(max=scores.shape[1] - 1),
                                                                        True)
        pointed[:, END] = False
        return scores.masked_fill(pointed, float("-inf"))


class DataCollatorForPointing:
    """Rows {"input_features": [n][F] floats or "input_ids": [n] ints, "labels": pointer ids} -> a batch of
    ``input_features`` [B, S, F] (or ``input_ids`` [B, S], padded with ``pad_token_id``), ``attention_mask`` [B, S]
    and ``labels`` [B, T] padded with -100; right padding (pointer id j + 1 is column j)."""

    def __init__(self, pad_token_id: int = 0, return_tensors: str = "pt"):
        if return_tensors != "pt":
            raise ValueError(f"return_tensors must be 'pt', got {return_tensors!r}.")
        self.pad_token_id = pad_token_id

    def __call__(self, rows: Sequence[dict]) -> dict[str, Tensor]:
        if not rows:
            raise ValueError("DataCollatorForPointing got no rows.")
        key = "input_features" if "input_features" in rows[0] else "input_ids"
        inputs = [torch.as_tensor(row[key], dtype=torch.float32 if key == "input_features" else torch.long)
                  for row in rows]
        for index, row in enumerate(inputs):
            if len(row) == 0:
                raise ValueError(f"row {index} has no {key}: a pointer network needs at least one input.")
            if row.shape[1:] != inputs[0].shape[1:]:
                raise ValueError(f"row {index}'s {key} have {list(row.shape[1:])} features per input and row 0's "
                                 f"{list(inputs[0].shape[1:])}: every input of a batch needs the same number.")
        padding = 0.0 if key == "input_features" else self.pad_token_id
        batch = {key: torch.nn.utils.rnn.pad_sequence(inputs, batch_first=True, padding_value=padding),
                 "attention_mask": torch.nn.utils.rnn.pad_sequence(
                     [torch.ones(len(row), dtype=torch.long) for row in inputs], batch_first=True)}
        if "labels" in rows[0]:
            batch["labels"] = torch.nn.utils.rnn.pad_sequence(
                [torch.as_tensor(row["labels"], dtype=torch.long) for row in rows], batch_first=True,
                padding_value=-100)
        return batch
