"""A memory network's attention over its memory sentences, one column per hop (Sukhbaatar et al., 2015, figure 2),
and the checks of hop weights and supporting facts that the explorer's memory page shares.

    plot_memory_hops(story, question, answered["hop_attentions"], answer=answered["answer"], path="hops.png")
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .common import _CHARACTER, _as_array, _ink

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = ["SUPPORTING", "check_hop_attentions", "check_supporting_facts", "plot_memory_hops"]

SUPPORTING = "*"  # how plot_memory_hops marks a supporting fact's row


def plot_memory_hops(
    memory: Sequence[str],
    question: str,
    hop_attentions: torch.Tensor | np.ndarray | Sequence[Sequence[float]],
    *,
    answer: str | None = None,
    expected: str | None = None,
    supporting_facts: Sequence[int] | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """An end-to-end memory network's attention over its memory, hop by hop, as in Sukhbaatar et al. (2015),
    figure 2: one row per memory sentence (oldest at the top, its text as the label), one column per hop, each cell
    shaded and labelled by p^k_i = softmax_i(u^kᵀ m_i).

    hop_attentions [K, n]: row k is hop k + 1's weights over the n sentences of ``memory`` (the pipeline's
    ``hop_attentions``, or ``torch.stack(outputs.attentions)[:, b]`` cut to the story's real sentences), each in
    [0, 1]. supporting_facts: 0-based indices of the sentences the answer follows from; their rows are labelled
    "* " in bold. The title gives the question, and ``answer`` (the model's) and ``expected`` when given. The figure
    grows with n and with the longest sentence; saved to ``path`` if given.
    """
    from matplotlib.figure import Figure

    weights = check_hop_attentions(memory, hop_attentions)
    marked = check_supporting_facts(supporting_facts, len(memory))
    hops, sentences = weights.shape
    width = 1.5 + _CHARACTER * max(len(sentence) for sentence in memory) + 0.6 * hops
    figure = Figure(figsize=(max(width, 4.0), 1.4 + 0.25 * sentences), layout="constrained")
    ax = figure.add_subplot()
    rows = weights.T  # [n, K]
    image = ax.imshow(rows, cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
    for (sentence, hop), weight in np.ndenumerate(rows):
        ax.text(hop, sentence, f"{weight:.2f}", ha="center", va="center", fontsize=7, color=_ink(weight))
    ax.set_xticks(range(hops), [f"hop {hop}" for hop in range(1, hops + 1)])
    ax.set_yticks(range(sentences), [f"{SUPPORTING} {sentence}" if index in marked else sentence
                                     for index, sentence in enumerate(memory)])
    for index in marked:
        ax.get_yticklabels()[index].set_fontweight("bold")
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    figure.colorbar(image, ax=ax, pad=0.01, fraction=0.05)
    title = f"Q: {question}"
    given = [f"{name}: {text}" for name, text in (("answer", answer), ("expected", expected)) if text is not None]
    if given:
        verdict = "" if answer is None or expected is None else (" ✓" if answer == expected else " ✗")
        title += "\n" + " · ".join(given) + verdict
    if marked:
        title += f"\n({SUPPORTING} = supporting fact)"
    ax.set_title(title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def check_hop_attentions(memory: Sequence[str], hop_attentions: Any, where: str = "") -> np.ndarray:
    """``hop_attentions`` as a checked [K, n] float64 array, n = len(memory) > 0, every weight in [0, 1];
    ValueError naming ``where`` + the argument otherwise."""
    if isinstance(memory, str) or not all(isinstance(sentence, str) for sentence in memory) or not memory:
        raise ValueError(f"`{where}memory` must be a non-empty list of sentences (strings), got {memory!r:.200}.")
    name = f"`{where}hop_attentions`"
    try:
        weights = _as_array(hop_attentions).astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be [hops, sentences] numbers, got {hop_attentions!r:.200}.") from None
    if weights.ndim != 2 or weights.shape[0] == 0 or weights.shape[1] != len(memory):
        raise ValueError(f"{name} must be [hops, len(memory)] = [K, {len(memory)}] with K ≥ 1 (one row of "
                         f"weights per hop), got {list(weights.shape)}.")
    if not np.isfinite(weights).all() or (weights < 0).any() or (weights > 1).any():
        raise ValueError(f"{name} must be weights in [0, 1] (each hop's softmax over the memory; a model "
                         f"in linear start has none), got values from {np.nanmin(weights):.4g} to "
                         f"{np.nanmax(weights):.4g}{' and NaN' if np.isnan(weights).any() else ''}.")
    return weights


def check_supporting_facts(supporting_facts: Sequence[int] | None, count: int, where: str = "") -> set[int]:
    """The 0-based rows of ``supporting_facts``, each an int in [0, count); ValueError naming ``where`` + the
    argument otherwise."""
    if supporting_facts is None:
        return set()
    if isinstance(supporting_facts, str) or not all(
            isinstance(index, (int, np.integer)) and not isinstance(index, bool) for index in supporting_facts):
        raise ValueError(f"`{where}supporting_facts` must be a list of sentence indices (ints), got "
                         f"{supporting_facts!r:.200}.")
    bad = [int(index) for index in supporting_facts if not 0 <= index < count]
    if bad:
        raise ValueError(f"`{where}supporting_facts` must be 0-based indices into `{where}memory`, in [0, {count}), "
                         f"got {bad}.")
    return {int(index) for index in supporting_facts}
