"""The example images of the cards of models that read images (image-to-text, VQA): files of the model's folder
that its usage code reads, or, for a folder saved without them, the user's own image."""

import json
from pathlib import Path

__all__ = ["EXAMPLE_IMAGES", "OWN_IMAGE", "example_paths", "folder_images"]

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
