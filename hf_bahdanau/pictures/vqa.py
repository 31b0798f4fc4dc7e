"""A co-attention (VQA) model's weights over the question's words and the image's regions, one row per question level
(Lu et al., 2016, figure 4).

    plot_vqa_example(model, processor, tokenizer, image, "what color is the shape?", path="coattention.png")
    plot_coattention(image, tokens, question_weights, image_weights, grid=(8, 8), levels=["word", "phrase"])
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .common import _draw_rows, _positive_pair, _rows_size
from .image import _draw_overlay, _grey, attention_maps, check_image, cnn_stride

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = ["plot_coattention", "plot_vqa_example"]

_IMAGE_PANEL = 1.6  # inches: the width of plot_coattention's image panels


def plot_coattention(
    image: Any,
    question_tokens: Sequence[str],
    question_weights: torch.Tensor | np.ndarray | Sequence[Sequence[float]],
    image_weights: torch.Tensor | np.ndarray | Sequence,
    grid: tuple[int, int],
    levels: Sequence[str] | None = None,
    answer: str | None = None,
    title: str | None = None,
    stride: tuple[int, int] | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """Lu et al.'s (2016) picture of co-attention (their figure 4): the image, then one row per question level l, the
    question's words shaded by a^{q,l} (``_draw_rows``: one row labelled α, grey from black at 0 to white at the
    level's largest weight, with its scale) beside the image in grey under a^{v,l} (``attention_maps``: region (r, c)'s
    weight spread over its block of pixels, drawn as ``plot_image_attention`` draws a token's).

    image: [H, W] or [H, W, 3], uint8 or float in [0, 1], or a PIL image (``check_image``): the image as the model read
    it (``processor.to_image``), without the batch's padding. question_weights [K, T]: a^{q,l} over the T =
    len(question_tokens) tokens, one row per level; image_weights [K, H'·W'] or [K, H', W'] (the pipeline's nested
    lists): a^{v,l} over the image's own grid (H', W') = ``grid``, row-major; each row of both a distribution
    (weights ≥ 0 summing to 1 within n·ε₃₂, the roundings of a float32 softmax over n weights). levels: the K names
    (default "level 1" …); stride (sh, sw): the pixels per region (``region_stride``); the heading is ``title``, then
    "answer: ``answer``". Saved to ``path`` if given. Each level's axes are labelled "question · <level>" and
    "image · <level>" (``Axes.get_label``).
    """
    from matplotlib.figure import Figure

    image = check_image(image)
    grid = _positive_pair(grid, "grid", "(H', W'): the image's own grid of regions, rows and columns")
    if isinstance(question_tokens, str) or not question_tokens or not all(
            isinstance(token, str) for token in question_tokens):
        raise ValueError(f"`question_tokens` must be a non-empty list of strings, got {question_tokens!r:.200}.")
    question = _level_distributions(question_weights, "question_weights", [len(question_tokens)],
                                    f"len(question_tokens) = {len(question_tokens)} tokens")
    regions = _level_distributions(image_weights, "image_weights", [grid[0] * grid[1], grid],
                                   f"the grid's H'·W' = {grid[0]}·{grid[1]} regions, or [K, {grid[0]}, {grid[1]}]")
    if len(regions) != len(question):
        raise ValueError(f"`question_weights` and `image_weights` must have one row per level each, got "
                         f"{len(question)} and {len(regions)}.")
    levels = [f"level {number}" for number in range(1, len(question) + 1)] if levels is None else list(levels)
    if len(levels) != len(question) or not all(isinstance(level, str) for level in levels):
        raise ValueError(f"`levels` must name each of the {len(question)} levels of the weights, got {levels!r:.200}.")
    height, width = image.shape[:2]
    maps = attention_maps(regions, grid, (height, width), stride)
    panel_height = _IMAGE_PANEL * height / width + 0.35
    words_width, words_height = _rows_size(question[:1], question_tokens, "α")
    row_height = max(words_height, panel_height)
    heading = "\n".join(line for line in (title, None if answer is None else f"answer: {answer}") if line)
    heading_height = 0.3 * (heading.count("\n") + 1) if heading else 0.0
    figure = Figure(figsize=(words_width + 2 * _IMAGE_PANEL, len(levels) * row_height + heading_height),
                    layout="constrained")
    left, right = figure.subfigures(1, 2, width_ratios=[_IMAGE_PANEL, words_width + _IMAGE_PANEL])
    ax = left.add_subplot()
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.set_title("image")
    ax.set_axis_off()
    grey = _grey(image)
    areas = right.subfigures(len(levels), 2, squeeze=False, width_ratios=[words_width, _IMAGE_PANEL])
    for (words, picture), level, weights, heat in zip(areas, levels, question, maps):
        _draw_rows(words, level, weights[None], question_tokens, "α")
        words.axes[0].set_label(f"question · {level}")
        ax = picture.add_subplot(label=f"image · {level}")
        _draw_overlay(ax, grey, heat, level)
    if heading:
        figure.suptitle(heading)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def _level_distributions(weights: Any, name: str, shapes: list, allowed: str) -> np.ndarray:
    """``weights`` [K, *shape] for one of ``shapes`` (an int n or a pair), K ≥ 1, as a checked float64 array [K, n]:
    each row finite, ≥ 0 and summing to 1 within n·ε₃₂; ValueError naming ``name``, saying ``allowed``, otherwise."""
    try:
        array = (weights.detach().to("cpu", torch.float64).numpy() if isinstance(weights, torch.Tensor)
                 else np.asarray(weights, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be numbers [levels, ...] over {allowed}, got {weights!r:.200}.") from None
    shape = list(array.shape[1:])
    if array.ndim < 2 or len(array) == 0 or not any(shape == ([size] if isinstance(size, int) else list(size))
                                                    for size in shapes):
        raise ValueError(f"`{name}` must be [K, n], one row per level (K ≥ 1) over {allowed}; got "
                         f"{list(array.shape)}.")
    array = array.reshape(len(array), -1)
    count = array.shape[1]
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"`{name}` must be finite and ≥ 0 (each level's distribution), got values from "
                         f"{np.nanmin(array):.4g} to {np.nanmax(array):.4g}"
                         f"{' and NaN or inf' if not np.isfinite(array).all() else ''}.")
    sums = array.sum(1)
    off = np.abs(sums - 1.0) > count * np.finfo(np.float32).eps
    if off.any():
        raise ValueError(f"`{name}` must hold one distribution per level (weights summing to 1, within "
                         f"{count}·ε₃₂), but level {int(off.argmax())}'s sum to {sums[off.argmax()]:.6g}.")
    return array


def plot_vqa_example(
    model: Any,
    processor: Any,
    tokenizer: Any,
    image: Any,
    question: str,
    *,
    expected: str | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """Answer ``question`` about ``image`` with a ``BahdanauForVisualQuestionAnswering`` that reads both inputs and
    draw both of its attentions with ``plot_coattention``: the image as the model reads it
    (``processor.to_image``: resized), the question's tokens as the shipped pipeline reads them
    (``tokenizer(question, add_special_tokens=False)``), one row per ``config.text_config.question_levels``, titled
    with the question, and the answer with its probability (and ``expected``, marked ✓ or ✗). image: a PIL image, a
    uint8 array or a path; our CNN's regions are drawn at its stride (the product of ``cnn_pool_sizes``), a backbone's at
    ⌈H / H'⌉ × ⌈W / W'⌉."""
    from PIL import Image

    config = model.config
    if config.text_config.inputs != "both":
        raise ValueError(f"`model` reads one input (`config.text_config.inputs={config.text_config.inputs!r}`, a "
                         "baseline): it has no attention across question and image to draw.")
    picture = processor.to_image(Image.open(image) if isinstance(image, (str, PathLike)) else image)
    encoding = tokenizer(question, add_special_tokens=False, return_tensors="pt")
    if encoding["input_ids"].shape[1] == 0:
        raise ValueError(f"`question` {question!r} has no token the tokenizer knows how to write.")
    model.eval()
    with torch.no_grad():
        outputs = model(**encoding.to(model.device), **processor(picture, return_tensors="pt").to(model.device),
                        output_attentions=True)
    rows, columns = outputs.grid_size[0].tolist()
    score, index = outputs.logits[0].float().softmax(-1).max(-1)
    label = config.id2label[int(index)]
    answer = f"{label} (p = {float(score):.2f})"
    if expected is not None:
        answer += f" · expected: {expected} {'✓' if label == expected else '✗'}"
    return plot_coattention(
        np.asarray(picture), tokenizer.convert_ids_to_tokens(encoding["input_ids"][0].tolist()),
        torch.stack(outputs.question_attentions)[:, 0], torch.stack(outputs.context_attentions)[:, 0, :rows * columns],
        (rows, columns), levels=config.text_config.question_levels, answer=answer, title=f"Q: {question}",
        stride=cnn_stride(config.vision_config), path=path)
