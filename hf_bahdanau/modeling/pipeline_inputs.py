"""What every pipeline checks in its inputs before transformers' ``Pipeline`` sees them: a list holds at least one
input, and an image is one the model can read.

transformers' pipelines end an empty list in an ``IndexError`` and hand a path to PIL as it is (``""`` is a
``FileNotFoundError: ''``); here each is a ``ValueError`` naming the argument. A reader of text refuses an image with
nothing in it (every pixel of one colour: a blank page, a 1 × 1 image) rather than read whatever the model makes of
nothing (a question about an image may ask for its colour, so the VQA pipeline reads it). An image far larger or
smaller than the processor's ``size["height"]`` (the height of the training images, which the training scripts set) is
logged as a warning, as the translator warns about unknown tokens (``source_warnings``).
"""

import logging
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

__all__ = ["SCALE_WARNING", "check_batch", "read_image"]

logger = logging.getLogger(__name__)
SCALE_WARNING = 4  # an image resized by more than this factor (up or down) is far from the training images


def check_batch(inputs: Any, name: str, what: str) -> list:
    """The inputs of one pipeline call as a list: a list or tuple as it is (ValueError if empty), anything else as one
    input. ``what`` says what one input is, for the message."""
    if not isinstance(inputs, (list, tuple)):
        return [inputs]
    if not inputs:
        raise ValueError(f"`{name}` is an empty list: pass {what}, or a list of at least one.")
    return list(inputs)


def read_image(image: Any, name: str, image_processor, *, refuse_blank: bool) -> Any:
    """``image`` (a PIL image, a uint8 array or tensor, a path or URL) opened and checked: ValueError naming ``name``
    for a path that is not a file, an image without pixels or, with ``refuse_blank``, one whose pixels all have one
    colour; a warning when its height is more than ``SCALE_WARNING`` times the processor's ``size["height"]`` or less
    than 1 / ``SCALE_WARNING`` of it. Other types are left to the image processor, which names them."""
    if isinstance(image, str):
        if "://" in image:
            image = image_processor.fetch_images(image)
        elif not image.strip() or not Path(image).is_file():
            raise ValueError(f"`{name}` {image!r:.200} is not an image file: pass the path of one, a URL, a PIL image "
                             "or a uint8 array.")
        else:
            image = Image.open(image)
    if isinstance(image, Image.Image):
        width, height = image.size
    elif hasattr(image, "shape") and len(image.shape) >= 2:  # a numpy array or a torch tensor [H, W(, C)]
        height, width = image.shape[:2]
    else:
        return image
    if not width or not height:
        raise ValueError(f"`{name}` has no pixels ({width} × {height}).")
    pixels = np.asarray(image.detach().cpu() if hasattr(image, "detach") else image)
    if refuse_blank and (pixels == pixels[0, 0]).all():
        raise ValueError(f"`{name}` is blank: its {width} × {height} pixels all have the value "
                         f"{pixels[0, 0].tolist()}, so there is nothing in it to read.")
    trained = (getattr(image_processor, "size", None) or {}).get("height")
    if getattr(image_processor, "do_resize", False) and trained and not (
            trained / SCALE_WARNING <= height <= trained * SCALE_WARNING):
        logger.warning("`%s`: an image %d pixels high is resized to the training images' height, %d pixels (%.3g×); "
                       "the output is unreliable.", name, height, trained, trained / height)
    return image
