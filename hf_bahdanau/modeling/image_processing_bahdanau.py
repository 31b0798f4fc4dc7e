"""The image processor of the image-to-text model: images -> ``pixel_values`` [B, C, H, W] and ``pixel_mask`` [B, H, W].

transformers' conventions (``processor(images, return_tensors="pt")`` -> ``BatchFeature``, ``save_pretrained`` writes
``preprocessor_config.json``, ``AutoImageProcessor`` loads it), on PIL alone (``BaseImageProcessor`` with its own
``preprocess``, as remote-code processors are written, so no backend of transformers is needed): each image is converted to the model's
channels (``"L"`` or ``"RGB"``), resized to ``size["height"]`` keeping its aspect ratio (a strip of handwriting or a
word stays as long as it is; ``size["width"]`` fixes the width too), rescaled to [0, 1] and normalised,
(x − mean) / std. A batch of different widths is padded at the right and bottom with 0, and ``pixel_mask`` marks the
real pixels (1) as DETR's processor does; the model gives padded regions no attention.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np
from PIL import Image
from transformers.image_processing_base import BatchFeature
from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["BahdanauImageProcessor"]

# PIL modes of numbers with no fixed range, which the processor cannot scale to [0, 1]
UNSCALED_MODES = {"I": "32-bit integers", "F": "32-bit floats"}


def is_positive_int(value) -> bool:
    """An int ≥ 1 (numpy's too; not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and value > 0


def is_real(value) -> bool:
    """A finite int or float (numpy's too; not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)


def eight_bit(pixels: np.ndarray) -> np.ndarray:
    """16-bit pixel values (0–65535) as 8-bit ones (0–255), v / 257 rounded: 65535 = 255 · 257, so the 16-bit copy of
    an 8-bit image (v · 257, what a 16-bit PNG stores) reads back exactly."""
    return np.round(pixels.astype(np.float64) / 257).astype(np.uint8)


class BahdanauImageProcessor(BaseImageProcessor):
    """Images (PIL images, 16-bit ones too, or uint8 / uint16 arrays [H, W] / [H, W, C] of 0–255 / 0–65535) ->
    pixel_values and pixel_mask.

    Args:
        num_channels: 1 (grey, PIL mode "L") or 3 (RGB).
        do_resize, size: resize to ``{"height": h}`` (width scaled to keep the aspect ratio, at least 1 pixel) or
            ``{"height": h, "width": w}``; ``max_width``: a longer image is squeezed to it (None: no limit).
        do_rescale, rescale_factor: multiply by 1/255.
        do_normalize, image_mean, image_std: (x − mean) / std per channel.
    """

    model_input_names = ["pixel_values", "pixel_mask"]

    def __init__(self, num_channels: int = 1, do_resize: bool = True, size: dict[str, int] | None = None,
                 max_width: int | None = None, do_rescale: bool = True, rescale_factor: float = 1 / 255,
                 do_normalize: bool = True, image_mean: Sequence[float] | None = None,
                 image_std: Sequence[float] | None = None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(num_channels, bool) or num_channels not in (1, 3):
            raise ValueError(f"`num_channels` must be 1 (grey) or 3 (RGB), got {num_channels!r}.")
        for name, value in (("do_resize", do_resize), ("do_rescale", do_rescale), ("do_normalize", do_normalize)):
            if not isinstance(value, bool):
                raise TypeError(f"`{name}` must be True or False, got {value!r} ({type(value).__name__}).")
        if max_width is not None and not is_positive_int(max_width):
            raise ValueError(f"`max_width` must be a positive int (the widest image, in pixels) or None, got "
                             f"{max_width!r}.")
        if not is_real(rescale_factor) or rescale_factor <= 0:
            raise ValueError(f"`rescale_factor` must be a finite number > 0 (1/255 reads 8-bit pixels into [0, 1]), "
                             f"got {rescale_factor!r}.")
        size = {"height": 32} if size is None else dict(size)
        if not {"height"} <= set(size) <= {"height", "width"} or not all(map(is_positive_int, size.values())):
            raise ValueError(f"`size` must be {{'height': h}} or {{'height': h, 'width': w}} with positive ints, got "
                             f"{size!r}.")
        self.num_channels = num_channels
        self.do_resize, self.size, self.max_width = do_resize, size, max_width
        self.do_rescale, self.rescale_factor = do_rescale, rescale_factor
        self.do_normalize = do_normalize
        self.image_mean = [0.5] * num_channels if image_mean is None else list(image_mean)
        self.image_std = [0.5] * num_channels if image_std is None else list(image_std)
        if (len(self.image_mean) != num_channels or len(self.image_std) != num_channels
                or not all(map(is_real, self.image_mean + self.image_std)) or min(self.image_std) <= 0):
            raise ValueError(f"`image_mean` and `image_std` need one finite number per channel ({num_channels}), "
                             f"std > 0; got {self.image_mean} and {self.image_std}.")

    def __call__(self, images, return_tensors: str | None = None) -> BatchFeature:
        return self.preprocess(images, return_tensors=return_tensors)

    def preprocess(self, images, return_tensors: str | None = None) -> BatchFeature:
        """One image or a list of them -> ``BatchFeature`` with pixel_values [B, C, H, W] (float32) and pixel_mask
        [B, H, W] (1 = real pixel), as tensors of ``return_tensors`` ("pt", "np") or nested lists."""
        batch = images if isinstance(images, (list, tuple)) else [images]
        if not batch:
            raise ValueError("`images` is an empty list: pass at least one image.")
        arrays = [self.to_array(self.to_image(image, index)) for index, image in enumerate(batch)]
        height = max(array.shape[1] for array in arrays)
        width = max(array.shape[2] for array in arrays)
        pixels = np.zeros((len(arrays), self.num_channels, height, width), dtype=np.float32)
        mask = np.zeros((len(arrays), height, width), dtype=np.int64)
        for row, array in enumerate(arrays):
            pixels[row, :, :array.shape[1], :array.shape[2]] = array
            mask[row, :array.shape[1], :array.shape[2]] = 1
        return BatchFeature({"pixel_values": pixels, "pixel_mask": mask}, tensor_type=return_tensors)

    def to_image(self, image, index: int = 0) -> Image.Image:
        """A PIL image in the model's mode, resized; ValueError naming the image that cannot be one."""
        if hasattr(image, "detach"):  # a torch tensor
            image = image.detach().cpu().numpy()
        if isinstance(image, np.ndarray):
            if image.dtype == np.uint16:
                image = eight_bit(image)
            if image.dtype != np.uint8:
                raise ValueError(f"`images[{index}]` is an array of dtype {image.dtype}: pass uint8 (0–255) or uint16 "
                                 "(0–65535) pixel values, or a PIL image.")
            if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[-1] not in (1, 3, 4)):
                raise ValueError(f"`images[{index}]` must be [height, width] or [height, width, 1|3|4 channels], got "
                                 f"shape {list(image.shape)}.")
            image = Image.fromarray(image[..., 0] if image.ndim == 3 and image.shape[-1] == 1 else image)
        if not isinstance(image, Image.Image):
            raise ValueError(f"`images[{index}]` must be a PIL image or a uint8 or uint16 array, got "
                             f"{type(image).__name__}.")
        if 0 in image.size:
            raise ValueError(f"`images[{index}]` is empty (size {image.size}).")
        if image.mode.startswith("I;16"):  # a 16-bit PNG; PIL's own conversion clips every value above 255 to white
            image = Image.fromarray(eight_bit(np.asarray(image)))
        elif image.mode in UNSCALED_MODES:
            raise ValueError(f"`images[{index}]` is a PIL image of mode {image.mode!r} ({UNSCALED_MODES[image.mode]}), "
                             "whose black and white levels are unknown: convert it to mode 'L' or 'RGB' (8 bit) or "
                             "'I;16' (16 bit), or pass a uint8 or uint16 array.")
        image = image.convert("L" if self.num_channels == 1 else "RGB")
        if self.do_resize:
            height = self.size["height"]
            width = self.size.get("width") or max(1, round(image.width * height / image.height))
            if self.max_width is not None:
                width = min(width, self.max_width)
            if (width, height) != image.size:
                image = image.resize((width, height), Image.Resampling.BILINEAR)
        return image

    def to_array(self, image: Image.Image) -> np.ndarray:
        """[C, H, W] float32: rescaled and normalised as configured."""
        array = np.asarray(image, dtype=np.float32).reshape(image.height, image.width, self.num_channels)
        if self.do_rescale:
            array = array * self.rescale_factor
        if self.do_normalize:
            array = (array - np.asarray(self.image_mean, np.float32)) / np.asarray(self.image_std, np.float32)
        return array.transpose(2, 0, 1)
