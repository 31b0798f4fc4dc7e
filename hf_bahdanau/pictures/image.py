"""An image-to-text model's attention over the image's regions, one panel per output token (Xu et al., 2015), and
the checks and maps over pixels that the explorer's image page and the co-attention pictures share.

    plot_image_attention(image, tokens, weights, grid=(3, 15), path="tokens.png")  # weights α [T, 45]
    maps = attention_maps(weights, grid=(3, 15), image_size=image.shape[:2])  # α over the pixels [T, H, W]
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .common import _label, _positive_pair

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["OVERLAY_OPACITY", "attention_maps", "check_image", "check_image_attention", "cnn_stride",
           "plot_image_attention", "region_stride"]


OVERLAY_OPACITY = 0.8  # plot_image_attention's (and the explorer's) overlay at a token's largest weight; 0 at weight 0


def check_image(image: Any, where: str = "") -> np.ndarray:
    """``image`` as a checked uint8 array [H, W] (grey) or [H, W, 3] (RGB), H, W ≥ 1: from a PIL image (modes other
    than L and RGB are converted to RGB), a uint8 array, or a float array in [0, 1] (rounded to 8 bits); ValueError
    naming ``where`` + "image" otherwise."""
    name = f"`{where}image`"
    if hasattr(image, "convert") and getattr(image, "mode", None) not in ("L", "RGB"):  # PIL: P, RGBA, I;16, ...
        image = image.convert("RGB")
    try:
        array = np.asarray(image)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array [H, W] or [H, W, 3], or a PIL image, got {image!r:.200}.") from None
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] != 3) or 0 in array.shape:
        raise ValueError(f"{name} must be [H, W] (grey) or [H, W, 3] (RGB) with H, W ≥ 1, got {list(array.shape)}.")
    if array.dtype == np.uint8:
        return array
    if not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"{name} must be uint8 (0 to 255) or float (0 to 1), got dtype {array.dtype}.")
    if not np.isfinite(array).all() or array.min() < 0 or array.max() > 1:
        raise ValueError(f"{name} must hold floats in [0, 1] (or be uint8), got values from {np.nanmin(array):.4g} "
                         f"to {np.nanmax(array):.4g}{' and NaN or inf' if not np.isfinite(array).all() else ''}.")
    return np.round(array * 255).astype(np.uint8)


def check_image_attention(weights: Any, grid: Any, tokens: Sequence[str] | None = None,
                          where: str = "") -> tuple[np.ndarray, tuple[int, int]]:
    """(weights, grid) checked: weights α [T, L] as float64, each α_ti finite and ≥ 0, over the L = H'·W' regions of
    ``grid`` (H', W') flattened row-major (region i is row i // W', column i % W'), with T = len(tokens) when given;
    ValueError naming ``where`` + the argument otherwise."""
    grid = _positive_pair(grid, f"{where}grid", "(H', W'): the encoder's feature map, rows and columns of regions")
    name = f"`{where}weights`"
    try:
        array = (weights.detach().to("cpu", torch.float64).numpy() if isinstance(weights, torch.Tensor)
                 else np.asarray(weights, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be [T, L] numbers (tokens x regions), got {weights!r:.200}.") from None
    regions = grid[0] * grid[1]
    if array.ndim != 2 or array.shape[1] != regions:
        raise ValueError(f"{name} must be [T, L] with L = H'·W' = {grid[0]}·{grid[1]} = {regions} regions of "
                         f"`{where}grid`, got {list(array.shape)}.")
    if tokens is not None and len(tokens) != len(array):
        raise ValueError(f"`{where}tokens` must have one token per row of {name} ({len(array)}), got {len(tokens)}.")
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"{name} must be finite and ≥ 0 (each token's distribution over the regions), got values "
                         f"from {np.nanmin(array):.4g} to {np.nanmax(array):.4g}"
                         f"{' and NaN or inf' if not np.isfinite(array).all() else ''}.")
    return array, grid


def cnn_stride(config: Any) -> tuple[int, int] | None:
    """(sh, sw): the pixels per region of our CNN image encoder, the product of its ``cnn_pool_sizes`` down and across;
    None for a backbone's regions (``region_stride`` then spreads the grid over the image)."""
    if config.backbone_config is not None:
        return None
    return tuple(int(np.prod(sizes)) for sizes in zip(*config.cnn_pool_sizes))


def region_stride(grid: tuple[int, int], image_size: Any, stride: Any = None,
                  where: str = "") -> tuple[int, int]:
    """(sh, sw): the pixels of image rows and columns each region covers; region (r, c) covers rows [r·sh, (r+1)·sh)
    and columns [c·sw, (c+1)·sw). Without ``stride`` (the encoder's total downsampling), sh = ⌈H / H'⌉ and
    sw = ⌈W / W'⌉ for image_size (H, W) and grid (H', W'). The grid must cover the image: H'·sh ≥ H, W'·sw ≥ W."""
    height, width = _positive_pair(image_size, f"{where}image_size", "(H, W): the image's own height and width")
    if stride is None:
        return -(-height // grid[0]), -(-width // grid[1])
    rows, columns = _positive_pair(stride, f"{where}stride", "(sh, sw): the pixels per region, down and across")
    if grid[0] * rows < height or grid[1] * columns < width:
        raise ValueError(f"`{where}stride` {(rows, columns)} leaves pixels of the image ({height} x {width}) outside "
                         f"the grid {grid}: H'·sh = {grid[0] * rows} and W'·sw = {grid[1] * columns} must be at least "
                         "H and W.")
    return rows, columns


def attention_maps(weights: torch.Tensor | np.ndarray, grid: tuple[int, int], image_size: tuple[int, int],
                   stride: tuple[int, int] | None = None) -> np.ndarray:
    """Each token's attention over the regions as a map over the image's pixels: [T, L] -> [T, H, W] float64,

        map[t, y, x] = α_t,i / (sh·sw),  i = (y // sh)·W' + x // sw,

    each region's weight spread evenly over its sh x sw block of pixels (``region_stride``), not smoothed; blocks
    that reach beyond the image (H, W) = image_size are cropped, so a block wholly inside keeps its mass α_t,i and
    a map sums to Σ_i α_t,i when every block lies inside. weights: α [T, L] over the grid (H', W') flattened
    row-major (``check_image_attention``)."""
    weights, grid = check_image_attention(weights, grid)
    rows, columns = region_stride(grid, image_size, stride)
    height, width = image_size
    region_rows, region_columns = np.arange(height) // rows, np.arange(width) // columns
    return weights.reshape(-1, *grid)[:, region_rows[:, None], region_columns[None, :]] / (rows * columns)


def _grey(image: np.ndarray) -> np.ndarray:
    """A checked image [H, W] or [H, W, 3] in grey [H, W], 0 to 255: RGB as luma 0.299 R + 0.587 G + 0.114 B."""
    return image if image.ndim == 2 else image @ np.array([0.299, 0.587, 0.114])


def _draw_overlay(ax: Axes, grey: np.ndarray, heat: np.ndarray, title: str) -> None:
    """The image in grey [H, W] under ``heat`` [H, W] (``attention_maps``) as an "inferno" overlay whose opacity grows
    from 0 at weight 0 to ``OVERLAY_OPACITY`` at the map's largest weight, titled ``title``."""
    ax.imshow(grey, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    top = max(float(heat.max()), np.finfo(np.float64).tiny)
    ax.imshow(heat, cmap="inferno", vmin=0.0, vmax=top, alpha=OVERLAY_OPACITY * heat / top, interpolation="nearest")
    ax.set_title(title)
    ax.set_axis_off()


def plot_image_attention(
    image: Any,
    tokens: Sequence[str],
    weights: torch.Tensor | np.ndarray,
    grid: tuple[int, int],
    stride: tuple[int, int] | None = None,
    title: str | None = None,
    columns: int = 4,
    path: str | PathLike | None = None,
) -> Figure:
    """Show, Attend and Tell's picture (Xu et al., 2015, figures 2 and 3): the image, then one panel per output token,
    titled with the token: the image in grey under the token's attention ``attention_maps`` (each region's weight over
    its block of pixels, drawn as blocks, not smoothed) as an "inferno" heat overlay whose opacity grows from 0 at
    weight 0 to ``OVERLAY_OPACITY`` at the token's largest weight (each panel scaled to its own largest weight).

    image: [H, W] or [H, W, 3], uint8 or float in [0, 1], or a PIL image (``check_image``): the image's own extent,
    without the batch's padding; weights α [T, L] over the grid (H', W') flattened row-major, T = len(tokens);
    stride (sh, sw): the pixels per region (default ⌈H / H'⌉, ⌈W / W'⌉; ``region_stride``). ``columns`` panels a
    row; saved to ``path`` if given.
    """
    from matplotlib.figure import Figure

    image = check_image(image)
    weights, grid = check_image_attention(weights, grid, tokens)
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"`columns` must be a positive int (panels per row), got {columns!r}.")
    height, width = image.shape[:2]
    maps = attention_maps(weights, grid, (height, width), stride)
    panels = len(tokens) + 1
    across, down = min(columns, panels), -(-panels // columns)
    panel_width = 2.0 * max(1.0, min(2.0, (width / height) ** 0.5))  # wide strips get wider panels, up to 4 inches
    figure = Figure(figsize=(across * panel_width, down * (panel_width * height / width + 0.35) + 0.4 * bool(title)),
                    layout="constrained")
    ax = figure.add_subplot(down, across, 1)
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.set_title("image")
    ax.set_axis_off()
    grey = _grey(image)
    for panel, (token, heat) in enumerate(zip(tokens, maps), 2):
        _draw_overlay(figure.add_subplot(down, across, panel), grey, heat, _label(token))
    if title is not None:
        figure.suptitle(title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure
