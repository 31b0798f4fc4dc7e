"""Configuration of the image encoder (``image_encoder.py``): our CNN or a transformers vision backbone, which makes
an image [B, C, H, W] a grid of L = H'·W' region annotations a_i of size D.

``BahdanauImageEncoderConfig`` is a sub-config (model type ``"bahdanau-image-encoder"``): the image-to-text config
holds one as its ``encoder`` (``configuration_image_to_text``), beside its decoder's. Its fields are
``ImageEncoderFields``, declared once, also for the visual question answering config. Loading it imports no model code.
"""

import dataclasses
from typing import Any

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PreTrainedConfig

from .configuration_bahdanau import _builtin_errors, _require_positive

__all__ = ["BahdanauImageEncoderConfig", "ImageEncoderFields", "backbone_feature_size", "resolve_image_encoder",
           "validate_image_encoder"]


def backbone_feature_size(backbone_config: dict) -> int:
    """The channels of a vision backbone's last feature map, read from its config: ``hidden_sizes[-1]`` (ResNet,
    ConvNeXt, RegNet …) or ``hidden_size``."""
    sizes = backbone_config.get("hidden_sizes")
    if sizes:
        return int(sizes[-1])
    if isinstance(backbone_config.get("hidden_size"), int):
        return backbone_config["hidden_size"]
    raise ValueError(f"Cannot read the feature size of the `backbone_config` of model_type "
                     f"{backbone_config.get('model_type')!r} (no `hidden_sizes` or `hidden_size`): use a convolutional "
                     "backbone such as ResNet or ConvNeXt.")


def resolve_image_encoder(config: Any) -> int | None:
    """Read ``config.backbone``'s config into ``backbone_config`` (when only the name is given) and return the
    annotation size D of the image encoder the config describes (None while its fields are unusable: validation says
    why)."""
    if config.backbone is not None and config.backbone_config is None:
        config.backbone_config = AutoConfig.from_pretrained(config.backbone).to_dict()
    if config.backbone_config is not None:
        return backbone_feature_size(config.backbone_config)
    return config.cnn_channels[-1] if config.cnn_channels else None


def validate_image_encoder(config: Any, annotation_size: int) -> None:
    """The image encoder's fields of ``config`` (``num_channels``, ``cnn_channels``, ``cnn_pool_sizes``,
    ``backbone_config``, ``region_position_encoding``); ValueError naming the field."""
    _require_positive("num_channels", config.num_channels)
    if config.backbone_config is None:
        bad = [(index, size) for index, size in enumerate(config.cnn_channels) if size < 1]  # ints: @strict checks
        if not config.cnn_channels or bad:
            raise ValueError(f"`cnn_channels` must be one positive int per convolution block (at least one), got "
                             f"{config.cnn_channels!r}" + (f": entry {bad[0][0]} is {bad[0][1]!r}." if bad else "."))
        pools = config.cnn_pool_sizes
        bad = [(index, pool) for index, pool in enumerate(pools) if len(pool) != 2 or min(pool) < 1]
        if len(pools) != len(config.cnn_channels) or bad:
            raise ValueError(f"`cnn_pool_sizes` must be one [height, width] pair of positive ints per block of "
                             f"`cnn_channels` ({len(config.cnn_channels)}), got {pools!r}"
                             + (f": entry {bad[0][0]} is {bad[0][1]!r}." if bad else "."))
    else:
        if "model_type" not in config.backbone_config:
            raise ValueError("`backbone_config` must be a vision model's config dict with its `model_type` (e.g. "
                             "`ResNetConfig(...).to_dict()`).")
        channels = config.backbone_config.get("num_channels", config.num_channels)
        if channels != config.num_channels:
            raise ValueError(f"`backbone_config` reads {channels} channels, but `num_channels` is "
                             f"{config.num_channels}: set them equal.")
    if config.region_position_encoding and annotation_size % 4:
        raise ValueError(f"`region_position_encoding=True` splits the annotation size D={annotation_size} into sin "
                         "and cos halves for rows and columns: D must be a multiple of 4.")


@dataclasses.dataclass(kw_only=True, repr=False, eq=False)
class ImageEncoderFields:
    r"""The fields of the image encoder (``image_encoder.py``: our CNN or a transformers vision backbone), which makes
    an image [B, C, H, W] a grid of region annotations a_i of size D; declared once for ``BahdanauImageEncoderConfig``
    and the visual question answering config (``resolve_image_encoder``, ``validate_image_encoder``).

    Args:
        num_channels (`int`, *optional*, defaults to 1):
            C, the channels of ``pixel_values`` (1 grey, 3 RGB).
        cnn_channels (`list[int]`, *optional*, defaults to `[32, 64, 128]`):
            The output channels of each 3×3 convolution block of our own CNN; the last is D.
        cnn_pool_sizes (`list[list[int]]`, *optional*, defaults to `[[2, 2], [2, 2], [2, 2]]`):
            Each block's max pooling (height, width) (ceil mode): the grid is H' = ⌈H / Π p_h⌉, W' = ⌈W / Π p_w⌉.
        backbone_config (`dict`, *optional*):
            A transformers vision model's config (``to_dict()``, with ``model_type``, e.g. ``ResNetConfig(...)``'s) to
            use as the encoder instead of our CNN; its last feature map is the grid, D its channels.
        backbone (`str`, *optional*):
            A Hub name or local folder of a vision checkpoint: its config becomes ``backbone_config`` and, while
            ``use_pretrained_backbone`` is True, a new model loads its weights (then sets the field False: the weights
            are the model's own from then on, saved with it).
        use_pretrained_backbone (`bool`, *optional*, defaults to `True`):
            Whether a new model loads ``backbone``'s weights.
        region_position_encoding (`bool`, *optional*, defaults to `False`):
            Add a 2-D sinusoidal encoding of each region's row and column to its annotation, so the decoder can attend
            by position (D a multiple of 4). The paper's annotations carry none.
    """

    num_channels: int = 1
    cnn_channels: list[int] = dataclasses.field(default_factory=lambda: [32, 64, 128])
    cnn_pool_sizes: list[list[int]] = dataclasses.field(default_factory=lambda: [[2, 2], [2, 2], [2, 2]])
    backbone_config: dict | None = None
    backbone: str | None = None
    use_pretrained_backbone: bool = True
    region_position_encoding: bool = False


@strict
class BahdanauImageEncoderConfig(ImageEncoderFields, PreTrainedConfig):
    r"""Configuration of the image encoder, a sub-config (the image-to-text config's ``encoder``): images
    [B, C, H, W] -> region annotations [B, L, D], D = ``annotation_size``. Its fields are ``ImageEncoderFields``',
    validated at construction and again when a model is built (a ``ValueError`` naming the field)."""

    model_type = "bahdanau-image-encoder"

    def __post_init__(self, **kwargs):
        resolve_image_encoder(self)
        super().__post_init__(**kwargs)
        self.validate_architecture()

    @property
    def annotation_size(self) -> int:
        """D, the size of a region annotation: the backbone's feature channels or ``cnn_channels[-1]``."""
        return resolve_image_encoder(self)

    def validate_architecture(self) -> None:
        """``validate_image_encoder``; ValueError naming the field."""
        validate_image_encoder(self, self.annotation_size)


BahdanauImageEncoderConfig.__setattr__ = _builtin_errors(BahdanauImageEncoderConfig.__setattr__)
