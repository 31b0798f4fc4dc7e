"""Pointer ids, the data path and the generation option of pointer networks (``modeling_pointer``).

A pointer network's outputs are input positions. Its vocabulary of output ids is per example:

    0 = END      ends the output (it is also the decoder's start input and the padding of its inputs)
    j + 1        points at input position j (0-based)

so a model over n inputs scores n + 1 ids. ``collators.DataCollatorForPointing`` batches rows {"input_features"
[n][F] or "input_ids" [n], "labels": pointer ids}; ``ForbidRepeatedPointers`` is the ``generate(forbid_repeats=True)``
option.
"""

from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import LogitsProcessor

from .collators import DataCollatorForPointing as _DataCollatorForPointing  # public in collators.py
from .old_names import old_names

END = 0

__all__ = ["END", "ForbidRepeatedPointers", "positions"]


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


__getattr__ = old_names(__name__, {"DataCollatorForPointing": _DataCollatorForPointing})
