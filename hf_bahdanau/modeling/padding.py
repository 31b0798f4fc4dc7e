"""Attention masks: what a mask may hold, and how rows move between the caller's layout and the right-padded layout
the recurrent layers run on.

A mask row marks real tokens with 1 (``True``, ``1.0``) and padding with 0; its real tokens are one contiguous run:
right padding ``[1 1 1 0 0]``, left padding ``[0 0 1 1 1]`` (a habit from decoder-only models) or both
``[0 1 1 1 0]``. A row whose run starts at column s_b is rotated so that it starts at column 0,

    right[b, j] = caller[b, (j + s_b) mod S]        caller[b, i] = right[b, (i - s_b) mod S]

the model runs on the right-padded rows, and every output indexed by source position is rotated back. The rotation
moves values without arithmetic, so a left-padded batch gives exactly what the same batch right-padded gives.
"""

from typing import NamedTuple

import torch
from torch import Tensor

from .input_checks import exporting

__all__ = ["PaddingLayout", "check_attention_mask"]

SHOWN_VALUES = 12  # how much of a bad mask row an error message prints


class PaddingLayout(NamedTuple):
    """A checked mask [B, S]: ``mask`` bool in the caller's layout (True = real token); ``lengths`` [B] real tokens
    per row; ``starts`` [B] the first real column of each row, or None when every row starts at column 0 (right
    padding, or none); ``padded``: whether any row is shorter than S."""

    mask: Tensor
    lengths: Tensor
    starts: Tensor | None
    padded: bool

    @property
    def right_mask(self) -> Tensor:
        """The mask of the right-padded rows [B, S]."""
        if self.starts is None:
            return self.mask
        return torch.arange(self.mask.shape[1], device=self.mask.device) < self.lengths.unsqueeze(1)

    def to_right(self, values: Tensor, dim: int = 1) -> Tensor:
        """values [B, …, S (at ``dim``), …] in the caller's layout -> the right-padded layout."""
        return values if self.starts is None else rotate_rows(values, self.starts, dim)

    def to_caller(self, values: Tensor, dim: int = 1) -> Tensor:
        """values [B, …, S (at ``dim``), …] in the right-padded layout -> the caller's layout."""
        return values if self.starts is None else rotate_rows(values, -self.starts, dim)


def rotate_rows(values: Tensor, shifts: Tensor, dim: int) -> Tensor:
    """out[b, …, j, …] = values[b, …, (j + shifts[b]) mod S, …] along ``dim``; values [B, …], shifts [B]."""
    dim = dim % values.dim()
    length = values.shape[dim]
    positions = torch.arange(length, device=values.device)
    index = (positions + shifts.view(-1, 1)) % length  # [B, S]
    view = [index.shape[0]] + [1] * (values.dim() - 1)
    view[dim] = length
    return values.gather(dim, index.view(view).expand(values.shape))


def check_attention_mask(attention_mask: Tensor | None, shape: tuple[int, int], device: torch.device,
                         name: str = "attention_mask", nonempty: str | None = None) -> PaddingLayout:
    """The layout of ``attention_mask`` for ids of ``shape`` [B, S] on ``device`` (None: every token is real).

    Raises ValueError (TypeError for a non-tensor) naming ``name`` when the mask has another shape, holds values
    other than 0 and 1, or a row's real tokens are not one contiguous run; with ``nonempty`` (what a row is:
    "question", "passage"), when a row has no real token. While ``torch.export`` traces (``exporting``), the values
    are not read: the mask is taken as right-padded, possibly padded, as an exported graph's inputs are.
    """
    batch_size, length = shape
    if attention_mask is None:
        mask = torch.ones(shape, dtype=torch.bool, device=device)
        return PaddingLayout(mask, torch.full((batch_size,), length, device=device), None, False)
    if not isinstance(attention_mask, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(attention_mask).__name__}.")
    if tuple(attention_mask.shape) != tuple(shape):
        raise ValueError(f"`{name}` must have the shape of the ids it masks, {list(shape)}, got "
                         f"{list(attention_mask.shape)}.")
    mask = attention_mask if attention_mask.dtype == torch.bool else attention_mask != 0
    if exporting():
        return PaddingLayout(mask, mask.sum(dim=1), None, True)
    not_binary = (torch.zeros((), dtype=torch.bool, device=mask.device) if attention_mask.dtype == torch.bool
                  else (attention_mask != 1).logical_and_(mask).any())
    run_starts = mask.clone()
    run_starts[:, 1:] &= ~mask[:, :-1]  # a real token after padding (or at column 0) starts a run
    lengths = mask.sum(dim=1)
    starts = run_starts.to(torch.uint8).argmax(dim=1)  # 0 for a row without real tokens
    flags = torch.stack([not_binary, (run_starts.sum(dim=1) > 1).any(), (starts > 0).any(),
                         (lengths < length).any(), (lengths == 0).any()]).tolist()
    if flags[0]:
        row = int((attention_mask != 1).logical_and_(mask).any(dim=1).nonzero()[0])
        raise ValueError(f"`{name}` must hold 0 and 1 only (or False and True); row {row} is "
                         f"{_shown(attention_mask[row])}.")
    if flags[1]:
        row = int((run_starts.sum(dim=1) > 1).nonzero()[0])
        raise ValueError(
            f"`{name}` must mark each row's real tokens as one contiguous run of ones (right padding [1, 1, 0], left "
            f"padding [0, 1, 1], or both); row {row} has a gap: {_shown(attention_mask[row])}."
        )
    if nonempty is not None and flags[4]:
        row = int((lengths == 0).nonzero()[0])
        raise ValueError(f"Every {nonempty} needs at least one word: row {row} of `{name}` is all padding.")
    return PaddingLayout(mask, lengths, starts if flags[2] else None, flags[3])


def _shown(row: Tensor) -> str:
    values = row.tolist()
    shown = ", ".join(str(int(v) if float(v).is_integer() else v) for v in values[:SHOWN_VALUES])
    return f"[{shown}{', …' if len(values) > SHOWN_VALUES else ''}]"
