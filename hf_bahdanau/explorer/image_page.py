"""The alignment explorer's page for an image-to-text model (Show, Attend and Tell): one self-contained HTML page of its
images, each with the predicted text, the reference and right/wrong; hovering over an output token draws its attention
over the image's regions on the image (``plot_image_attention``'s overlay, drawn by the page's script from the weights),
clicking pins it. Wrong predictions come first, are counted and can be shown alone, as on ``explorer_page``'s page
(same style, script and paging).

    example = {"image": pixels, "prediction": "3141", "tokens": ["3", "1", "4", "1", "</s>"], "weights": alphas,
               "grid": (3, 15), "stride": (8, 8), "reference": "3141"}     # pixels uint8 [H, W]; alphas [5, 45]
    write_image_text_page("images.html", [example], title="digit strips")
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path

import numpy as np

from ..pictures import OVERLAY_OPACITY, check_image, check_image_attention, region_stride
from .page import WEIGHT_DECIMALS, _format_value, _metrics_table, html_page, is_exact_match, judged_first

__all__ = ["image_text_page", "png_data_uri", "write_image_text_page"]

RECORD_KEYS = {"image", "prediction", "tokens", "weights", "grid"}  # and optionally "reference", "stride"
HELP = """Hover over an output token to draw its attention α over the image's regions (the encoder's grid, each region
a block of pixels): the image turns grey and each region is shaded orange by its weight, transparent at 0, strongest at
the token's largest weight. Click a token to pin it, click again to unpin."""


def png_data_uri(image: np.ndarray) -> str:
    """A ``data:`` URI of ``image`` (uint8 [H, W] grey or [H, W, 3] RGB) as a PNG: 8 bits a sample, no interlace,
    every row with filter 0 (none), one zlib-compressed IDAT chunk."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    height, width = image.shape[:2]
    colour_type = 0 if image.ndim == 2 else 2  # grey or RGB
    rows = np.concatenate([np.zeros((height, 1), np.uint8), image.reshape(height, -1)], axis=1)  # filter byte 0
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _example_record(index: int, example: Mapping) -> dict:
    """What the page's script reads of one image, checked; ``examples[index]`` names it in errors."""
    where = f"examples[{index}]."
    if not isinstance(example, Mapping) or not RECORD_KEYS <= example.keys() or (
            example.keys() - RECORD_KEYS - {"reference", "stride"}):
        raise ValueError(f"`examples[{index}]` must be a dict with the keys {sorted(RECORD_KEYS)} and optionally "
                         f"'reference' and 'stride', got {example!r:.200}.")
    for key in ("prediction", "reference"):
        if key in example and not isinstance(example[key], str) and not (key == "reference" and
                                                                          example[key] is None):
            raise ValueError(f"`{where}{key}` must be a string, got {example[key]!r:.200}.")
    tokens = example["tokens"]
    if isinstance(tokens, str) or not isinstance(tokens, Sequence) or not all(isinstance(token, str)
                                                                              for token in tokens):
        raise ValueError(f"`{where}tokens` must be a list of strings (the output tokens), got {tokens!r:.200}.")
    image = check_image(example["image"], where)
    weights, grid = check_image_attention(example["weights"], example["grid"], tokens, where)
    stride = region_stride(grid, image.shape[:2], example.get("stride"), where)
    reference = example.get("reference")
    return dict(
        number=index + 1,
        image=png_data_uri(image),
        height=image.shape[0],
        width=image.shape[1],
        grid=list(grid),
        stride=list(stride),
        prediction=example["prediction"],
        reference=reference,
        correct=None if reference is None else is_exact_match(example["prediction"], [reference]),
        tokens=list(tokens),
        weights=weights.round(WEIGHT_DECIMALS).tolist(),
    )


def image_text_page(
    examples: Sequence[Mapping],
    *,
    title: str = "Image to text",
    model_summary: Mapping[str, object] | None = None,
    metrics: Mapping[str, object] | None = None,
    page_size: int = 50,
) -> str:
    """The HTML of a self-contained page (inline CSS, script and images, no network) exploring an image-to-text
    model's predictions and where it looked for each output token.

    examples: one dict per image: "image" ([H, W] or [H, W, 3], uint8 or float in [0, 1], or a PIL image: the image's
        own extent, without a batch's padding; embedded as a PNG), "prediction" (the model's text), "tokens" (its T
        output tokens), "weights" α [T, L] (each token's weights over the L = H'·W' regions, flattened row-major),
        "grid" (H', W'), and optionally "stride" (sh, sw: the pixels per region; default ⌈H / H'⌉, ⌈W / W'⌉) and
        "reference" (the right text: every example or none; then each prediction is marked right or wrong,
        ``is_exact_match``, the wrong ones come first and the page's accuracy is shown). Weights are kept to
        ``WEIGHT_DECIMALS``.
    model_summary: a key/value table at the top (``page.summarise_model(model, fields)``).
    metrics: a table of metric x split at the top, "eval_accuracy" in row "accuracy", column "eval"
        (``page.read_model_metrics``).
    page_size: how many images the page draws at a time.
    """
    if isinstance(examples, (str, Mapping)) or not isinstance(examples, Sequence) or not examples:
        raise ValueError(f"`examples` must be a non-empty list of dicts, one per image, got {examples!r:.80}.")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"`page_size` must be a positive integer, got {page_size!r}.")
    records = [_example_record(index, example) for index, example in enumerate(examples)]
    records, page_metrics = judged_first(records, "examples", "a 'reference'", "images")
    data = dict(
        kind="image_text",
        title=title,
        model_summary=[(key, _format_value(value)) for key, value in (model_summary or {}).items()],
        model_metrics=_metrics_table(metrics or {}),
        page_metrics=page_metrics,
        has_references=all(record["correct"] is not None for record in records),
        page_size=page_size,
        overlay_opacity=OVERLAY_OPACITY,  # the overlay's opacity at a token's largest weight, as in the figures
        examples=records,
    )
    return html_page(data, help=HELP, noun="images", wrong="predictions")


def write_image_text_page(path: str | PathLike, examples: Sequence[Mapping], **options) -> Path:
    """Write ``image_text_page(examples, **options)`` to ``path`` (its folder is created) and return the path."""
    path = Path(path)
    page = image_text_page(examples, **options)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
