"""The card's words of the families that read images (image to text, VQA): how the image processor sizes an image,
the image encoder's line, and the example images of the folder that the usage code reads (or, for a folder saved
without them, the user's own image)."""

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["EXAMPLE_IMAGES", "OWN_IMAGE", "example_paths", "folder_images", "image_encoder_words", "image_size_words",
           "in_folder"]

EXAMPLE_IMAGES = "example_*.png"  # an image-to-text (or VQA) folder's example images when none are named
OWN_IMAGE = "image.png"  # what the usage code reads when the folder has no example images


def example_paths(examples: list[str]) -> str:
    """The usage code's lines that name the model's folder and the paths of its example images ``examples``, or of
    the user's own image when the folder has none."""
    download = "folder = model_id if os.path.isdir(model_id) else snapshot_download(model_id)"
    if not examples:
        return (f"{download}\nimages = [{json.dumps(OWN_IMAGE)}]  # your image: the model was saved without example "
                "images\n")
    return (f"{download}  # with the example images\n"
            f"images = [os.path.join(folder, name) for name in {json.dumps(examples)}]\n")


def folder_images(model_dir: Path, card: str) -> list[str]:
    """The names of ``model_dir``'s EXAMPLE_IMAGES, sorted; ValueError naming ``example_inputs`` when it has none
    (``card``: the kind of card, for the message)."""
    images = sorted(path.name for path in model_dir.glob(EXAMPLE_IMAGES))
    if not images:
        raise ValueError(f"`example_inputs`: {card} card runs its usage code on images in `model_dir` ({model_dir}); "
                         f"none were given and it holds no {EXAMPLE_IMAGES} (`[]`: a card without examples).")
    return images


def in_folder(model_dir: Path, name: str) -> bool:
    """Whether ``name`` is a file of ``model_dir`` named relative to it (the usage code opens it there, or in the
    repository's download): not absolute, no "..", and there."""
    path = Path(name)
    return not (path.is_absolute() or ".." in path.parts) and (model_dir / path).is_file()


def image_size_words(processor: dict[str, Any]) -> str:
    """How the image processor (preprocessor_config.json) sizes an image, in words."""
    size = processor.get("size") or {}
    if not processor or not processor.get("do_resize", True) or "height" not in size:
        return "at its own size"
    if "width" in size:
        return f"resized to {size['height']} × {size['width']} pixels"
    longest = f", at most {processor['max_width']} wide" if processor.get("max_width") else ""
    return f"resized to {size['height']} pixels high, keeping its aspect ratio{longest}"


def image_encoder_words(config: dict[str, Any], annotation_size: int, summary: str) -> str:
    """Show, Attend and Tell's image encoder in words (an image-to-text or VQA config dict): our CNN's blocks and the
    grid they leave, or the backbone and where its weights came from; the D-sized annotations, ``summary`` (what the
    model makes of them) and the region position encoding."""
    channels = config["num_channels"]
    pixels = f"{channels} input channel{'s' if channels > 1 else ''} ({'grey' if channels == 1 else 'RGB'})"
    if config.get("backbone_config") is None:
        pools = config["cnn_pool_sizes"]
        blocks = len(config["cnn_channels"])
        encoder = (f"our CNN over {pixels}: {blocks} block{'s' if blocks > 1 else ''} a^l = maxpool_{{p_l}}(ReLU(W_l ∗ "
                   "a^{l−1} + b_l)) of 3×3 convolutions with " + " → ".join(map(str, config["cnn_channels"]))
                   + " channels and max pooling p_l = " + ", ".join(f"{height}×{width}" for height, width in pools)
                   + f" (ceil mode); an H × W image leaves a grid of H' = ⌈H / {math.prod(pool[0] for pool in pools)}⌉"
                   f" × W' = ⌈W / {math.prod(pool[1] for pool in pools)}⌉ regions")
    else:
        backbone = config.get("backbone")
        weights = f"weights initialised from `{backbone}`" if backbone else "weights initialised at random"
        encoder = (f"a transformers `{config['backbone_config']['model_type']}` vision backbone, {weights}, over "
                   f"{pixels}; its last feature map is the grid of H' × W' regions")
    encoder += f", each an annotation a_i of D = {annotation_size} features, read row by row; {summary}"
    if config.get("region_position_encoding"):
        encoder += "; a 2-D sinusoidal encoding of each region's row and column is added to its annotation"
    else:
        encoder += "; the annotations carry no encoding of their position (as in the paper)"
    return encoder
