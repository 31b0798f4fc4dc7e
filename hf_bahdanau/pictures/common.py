"""What the picture modules share: token labels, arrays out of tensors, the sizes of a heat map's cells, and rows of
weights over tokens drawn as grey heat maps with their scale (a classifier's pooling, a co-attention's question).

matplotlib is optional: it is imported inside the drawing functions (``pip install matplotlib``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

BLANK = "␣"  # how a whitespace token is labelled
_TOKEN = 0.3  # inches per token column and per labelled row
_FEATURE = 0.05  # inches per feature row of a multi-dimensional pooling
_CHARACTER = 0.11  # inches per character of the monospaced text


def _label(token: str) -> str:
    return BLANK if token.isspace() else token


def _as_array(weights: torch.Tensor | np.ndarray) -> np.ndarray:
    return np.asarray(weights.detach().cpu().float() if isinstance(weights, torch.Tensor) else weights)


def _ink(weight: float) -> str:
    """Text colour on a shade of ``weight`` in [0, 1]: white where the shade is dark."""
    return "white" if weight > 0.6 else "black"


def _heat_map_axes(columns: Sequence[str], row_count: int) -> Axes:
    """The axes of a new figure sized for ``plot_alignment``'s heat map of ``row_count`` rows under the rotated labels
    of ``columns``, with room for long labels (``plot_alignment``'s own figure has none)."""
    from matplotlib.figure import Figure

    label_height = 0.1 * max((len(column) for column in columns), default=0)
    figure = Figure(figsize=(1.5 + _TOKEN * len(columns), 1.2 + _TOKEN * row_count + label_height),
                    layout="constrained")
    return figure.add_subplot()


def _check_token_count(keep: np.ndarray, tokens: Sequence[str], name: str, masked: bool) -> None:
    """``tokens`` (called ``name``) must have one token per position that ``keep`` [S] marks."""
    if keep.sum() != len(tokens):
        raise ValueError(f"`{name}` must have one token per real position ({int(keep.sum())}"
                         f"{' in attention_mask' if masked else ''}), got {len(tokens)}.")


def _map_heights(count: int, row_name: str) -> list[float]:
    """Heights in inches of ``_draw_rows``'s heat maps: one row; or the mean row, then the ``count`` rows."""
    if count == 1:
        return [_TOKEN]
    return [_TOKEN, max(count * (_FEATURE if row_name == "feature" else _TOKEN), 3 * _TOKEN)]


def _rows_size(rows: np.ndarray, tokens: Sequence[str], row_name: str) -> tuple[float, float]:
    """(width, height) in inches of ``_draw_rows``'s picture: the title, the tokens rotated on top, the maps."""
    label_height = 0.1 * max((len(_label(token)) for token in tokens), default=0)
    return 2.5 + _TOKEN * rows.shape[1], 0.8 + label_height + sum(_map_heights(len(rows), row_name))


def _draw_rows(figure: Figure | SubFigure, title: str | None, rows: np.ndarray, tokens: Sequence[str],
               row_name: str) -> None:
    """rows [R, S] over the tokens: a single row labelled α (or "read", where the final states were read); else their
    mean (one row) above them, labelled
    "row 1" … "row R", or, for features, ordered by the token each peaks on."""
    if row_name == "feature":
        rows = rows[np.argsort(rows.argmax(1), kind="stable")]
    labels = [row_name] if row_name in ("α", "read") else [f"row {number}" for number in range(1, len(rows) + 1)]
    maps = [(rows, labels)] if len(rows) == 1 else [(rows.mean(0, keepdims=True), ["mean"]), (rows, labels)]
    heights = _map_heights(len(rows), row_name)
    axes = figure.subplots(len(maps), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (matrix, labels), height in zip(axes, maps, heights):
        image = ax.imshow(matrix, cmap="gray", vmin=0.0, vmax=max(float(matrix.max()), np.finfo(np.float32).tiny),
                          interpolation="nearest", aspect="auto")
        figure.colorbar(image, ax=ax, aspect=max(1.5, height / 0.1), pad=0.01)
        if row_name == "feature" and len(matrix) > 1:
            ax.set_yticks([])
            ax.set_ylabel(f"{len(matrix)} features,\nby peak token")
        else:
            ax.set_yticks(range(len(labels)), labels)
        ax.set_xticks(range(len(tokens)), [_label(token) for token in tokens] if ax is axes[0] else [],
                      rotation=90)
        ax.tick_params(length=0, labeltop=ax is axes[0], labelbottom=False, top=False, bottom=False)
    if title is not None:
        figure.suptitle(title)


def _positive_pair(value: Any, name: str, meaning: str) -> tuple[int, int]:
    """``value`` as two positive ints; ValueError naming ``name`` and saying what it is (``meaning``) otherwise."""
    try:
        pair = tuple(value)
    except TypeError:
        pair = ()
    if len(pair) != 2 or not all(isinstance(number, (int, np.integer)) and not isinstance(number, bool)
                                 and number > 0 for number in pair):
        raise ValueError(f"`{name}` must be two positive ints {meaning}, got {value!r:.200}.")
    return int(pair[0]), int(pair[1])
