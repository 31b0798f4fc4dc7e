"""Alignment pictures: the soft alignments α_ij of ``generate()`` as a labelled heat map (Bahdanau et al., figure 3),
and a tagger's attention over the words of a sentence drawn the same way.

    out = model.generate(**batch, output_attentions=True, return_dict_in_generate=True)   # greedy or beam
    weights = alignments_from_generate(out, index=0, eos_token_id=tokenizer.eos_token_id)  # [T, S] (alignments.py)
    plot_alignment(weights, source_tokens, target_tokens, path="alignment.png")
    plot_token_attention(outputs.attentions[0][b, 0], words, tags=predicted_tags, path="tagger.png")  # α [S, S]
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING

import numpy as np
import torch

from .common import _as_array, _heat_map_axes, _label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["plot_alignment", "plot_token_attention"]


def plot_alignment(
    weights: torch.Tensor | np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    path: str | PathLike | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    p_gen: torch.Tensor | np.ndarray | None = None,
) -> Figure:
    """Heat map of α [T, S]: source tokens along the top (x), output tokens down the side (y), white = 1, black = 0.

    Draws on ``ax`` if given (else on a new figure sized to the tokens) and saves to ``path`` if given.
    Whitespace tokens are labelled "␣". p_gen [T]: a pointer-generator's probability of generating each output
    token from the vocabulary (1 − p_gen: of copying it with α), drawn as a last column after a gap.
    """
    from matplotlib.figure import Figure

    weights = _as_array(weights)
    expected = (len(target_tokens), len(source_tokens))
    if weights.ndim != 2 or weights.shape != expected:
        raise ValueError(
            f"`weights` must have shape [len(target_tokens), len(source_tokens)] = {list(expected)}, got "
            f"{list(weights.shape)}."
        )
    if p_gen is not None:
        p_gen = _as_array(p_gen)
        if p_gen.shape != expected[:1]:
            raise ValueError(f"`p_gen` must have one value per target token ({expected[0]}), got shape "
                             f"{list(p_gen.shape)}.")
        gap = np.full((expected[0], 1), np.nan)  # drawn blank
        weights = np.concatenate([weights, gap, p_gen[:, None]], axis=1)
        source_tokens, expected = [*source_tokens, "", "p_gen"], (expected[0], expected[1] + 2)
    if ax is None:
        figure = Figure(figsize=(1.5 + 0.3 * expected[1], 1.2 + 0.3 * expected[0]), layout="constrained")
        ax = figure.add_subplot()
    figure = ax.get_figure()
    ax.imshow(weights, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="equal")
    ax.set_xticks(range(expected[1]), [_label(token) for token in source_tokens], rotation=90)
    ax.set_yticks(range(expected[0]), [_label(token) for token in target_tokens])
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    if title is not None:
        ax.set_title(title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def plot_token_attention(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    tags: Sequence[str] | None = None,
    path: str | PathLike | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """The tagger's attention over the words of a sentence.

    weights: α [S] (the context-vector tagger's one distribution: a single row) or [S, S] (row t = what token
    t attended to, e.g. ``outputs.attentions[0][b, 0]`` cut to the real tokens); tokens: the S words; tags: the
    predicted tag of each word, written under it. Drawn like ``plot_alignment``, saved to ``path`` if given.
    """
    weights = _as_array(weights)
    if weights.ndim not in (1, 2) or weights.shape[-1] != len(tokens) or (weights.ndim == 2 and
                                                                          weights.shape[0] != len(tokens)):
        raise ValueError(
            f"`weights` must have shape [len(tokens)] or [len(tokens), len(tokens)] with len(tokens) = {len(tokens)}, "
            f"got {list(weights.shape)}."
        )
    if tags is not None and len(tags) != len(tokens):
        raise ValueError(f"`tags` must have one tag per token ({len(tokens)}), got {len(tags)}.")
    columns = list(tokens) if tags is None else [f"{token} · {tag}" for token, tag in zip(tokens, tags)]
    rows = ["α"] if weights.ndim == 1 else list(tokens)
    return plot_alignment(weights.reshape(len(rows), len(tokens)), columns, rows, path=path,
                          ax=_heat_map_axes(columns, len(rows)) if ax is None else ax, title=title)
