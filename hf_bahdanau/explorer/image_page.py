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
from argparse import Namespace
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path

import numpy as np

from ..pictures import OVERLAY_OPACITY, check_image, check_image_attention, cnn_stride, region_stride
from .shell import (WEIGHT_DECIMALS, Explorer, check_page_size, html_page, is_exact_match, judged_records, page_data,
                    read_model_metrics, read_rows, summarise_model, summary_line)

__all__ = ["IMAGE_EXPLORER", "IMAGE_SUMMARY_FIELDS", "image_text_page", "png_data_uri", "write_image_text_page"]

# the config fields of an image-to-text model that ``shell.summarise_model(model, IMAGE_SUMMARY_FIELDS)`` shows on top
IMAGE_SUMMARY_FIELDS = ("model_type", "backbone", "cnn_channels", "cnn_pool_sizes", "region_position_encoding",
                        "rnn_type", "hidden_size", "decoder_layers", "attention_type", "decoder_style",
                        "doubly_stochastic_weight")
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
    model_summary: a key/value table at the top (``shell.summarise_model(model, fields)``).
    metrics: a table of metric x split at the top, "eval_accuracy" in row "accuracy", column "eval"
        (``shell.read_model_metrics``).
    page_size: how many images the page draws at a time.
    """
    check_page_size(page_size)
    records, page_metrics = judged_records(examples, "examples", _example_record, "a 'reference'", "images")
    data = page_data("image_text", ("examples", records), page_metrics, title=title, model_summary=model_summary,
                     metrics=metrics, page_size=page_size,
                     has_references=all(record["correct"] is not None for record in records),
                     overlay_opacity=OVERLAY_OPACITY)  # at a token's largest weight, as in the figures
    return html_page(data, help=HELP, noun="images", wrong="predictions")


def write_image_text_page(path: str | PathLike, examples: Sequence[Mapping], **options) -> Path:
    """Write ``image_text_page(examples, **options)`` to ``path`` (its folder is created) and return the path."""
    path = Path(path)
    page = image_text_page(examples, **options)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def read_images(args: Namespace) -> list[dict]:
    """The images of ``args.input``, a JSON-lines file with one object a line: "image" (a path, relative to the
    file's folder or absolute) and optionally "reference" (the right text); other keys are ignored (``read_rows``).
    A ValueError names a line whose image is not a file."""
    images = []
    for where, row in read_rows(args, ("image",), ("reference",)):
        path = args.input.parent / str(row["image"])
        if not path.is_file():
            raise ValueError(f"{where}: the image {str(row['image'])!r} is not a file (read from {args.input.parent}).")
        images.append({**row, "image": path})
    return images


def explore_images(args: Namespace, images: list[dict]) -> tuple[str, str]:
    """Read ``images`` with the image-to-text model ``args.model`` through its pipeline
    (``BahdanauImageToTextPipeline`` with ``return_attentions=True``: the text, its tokens and each token's weights
    over the image's grid) and build their page, each image as the model read it (``processor.to_image``); the
    summary line counts them and, with references, the accuracy."""
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

    from ..modeling.pipeline_image_to_text import BahdanauImageToTextPipeline

    options = dict(revision=args.revision, trust_remote_code=args.trust_remote_code)
    reader = BahdanauImageToTextPipeline(model=AutoModelForImageTextToText.from_pretrained(args.model, **options),
                                         tokenizer=AutoTokenizer.from_pretrained(args.model, **options),
                                         image_processor=AutoImageProcessor.from_pretrained(args.model, **options))
    generation = dict(num_beams=args.num_beams, return_attentions=True)
    if args.max_new_tokens is not None:
        generation["max_new_tokens"] = args.max_new_tokens
    read = reader([str(image["image"]) for image in images], **generation)  # one at a time: sizes differ
    stride = cnn_stride(reader.model.config.encoder)
    examples = [dict(image=np.asarray(reader.image_processor.to_image(Image.open(image["image"]))),
                     prediction=record["generated_text"], tokens=record["attention"]["tokens"],
                     weights=record["attention"]["weights"], grid=record["attention"]["grid"], stride=stride,
                     **({"reference": image["reference"]} if "reference" in image else {}))
                for image, record in zip(images, read)]
    page = image_text_page(examples, title=args.title,
                           model_summary=summarise_model(reader.model, IMAGE_SUMMARY_FIELDS),
                           metrics=read_model_metrics(args.model, args.revision), page_size=args.page_size)
    return page, summary_line("image", [None if example.get("reference") is None
                                        else is_exact_match(example["prediction"], [example["reference"]])
                                        for example in examples])


IMAGE_EXPLORER = Explorer(read=read_images, explore=explore_images)
