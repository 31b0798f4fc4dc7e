"""Configuration of the image-to-text model (Xu et al. 2015, *Show, Attend and Tell*): a convolutional encoder over image
regions and the recurrent decoder of ``BahdanauConfig`` attending over them.

The decoder's fields are ``BahdanauConfig``'s, read the same way (style, score, scope, soft or hard attention, coverage,
bridge, deep output); the text encoder's fields are replaced by the image encoder's. The defaults are the paper's
model: an LSTM decoder started from the mean annotation (``bridge="mean_cell"``), the additive score, the gating scalar
β on the context, a linear deep output. Loading a config imports no model code.
"""

import dataclasses

from huggingface_hub.dataclasses import strict
from transformers import AutoConfig

from .configuration_bahdanau import BahdanauConfig, _builtin_errors, _fields_set, _require_positive

__all__ = ["IMAGE_TO_TEXT_AUTO_MAP", "IMAGE_TO_TEXT_PIPELINES", "BahdanauImageToTextConfig", "ImageEncoderFields",
           "resolve_image_encoder", "validate_image_encoder"]

IMAGE_TO_TEXT_AUTO_MAP = {
    "AutoConfig": "configuration_image_to_text.BahdanauImageToTextConfig",
    "AutoModel": "modeling_image_to_text.BahdanauImageToTextModel",
    "AutoModelForImageTextToText": "modeling_image_to_text.BahdanauForImageToText",
}
# config.json's ``custom_pipelines``: pipeline(model=..., trust_remote_code=True) reads images into texts
IMAGE_TO_TEXT_PIPELINES = {"image-to-text": {"impl": "pipeline_image_to_text.BahdanauImageToTextPipeline",
                                             "pt": ["AutoModelForImageTextToText"], "type": "image"}}


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


def resolve_image_encoder(config) -> int | None:
    """Read ``config.backbone``'s config into ``backbone_config`` (when only the name is given) and return the
    annotation size D of the image encoder the config describes (None while its fields are unusable: validation says
    why)."""
    if config.backbone is not None and config.backbone_config is None:
        config.backbone_config = AutoConfig.from_pretrained(config.backbone).to_dict()
    if config.backbone_config is not None:
        return backbone_feature_size(config.backbone_config)
    return config.cnn_channels[-1] if config.cnn_channels else None


def validate_image_encoder(config, annotation_size: int) -> None:
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
    an image [B, C, H, W] a grid of region annotations a_i of size D; declared once for the image-to-text and the
    visual question answering configs (``resolve_image_encoder``, ``validate_image_encoder``).

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
class BahdanauImageToTextConfig(ImageEncoderFields, BahdanauConfig):
    r"""Configuration of ``BahdanauForImageToText``: images [B, C, H, W] -> a grid of L = H'·W' region annotations a_i
    (``image_encoder``) -> the recurrent decoder attending over them. Every ``BahdanauConfig`` decoder field applies; the
    fields of the text encoder (``encoder_layers``, ``bidirectional``, ``reverse_source``, ``encoder_self_attention``,
    ``meta_embedding_sources``) and ``copy_attention`` do not, and ``encoder_hidden_size`` is the annotation size D.
    The image encoder's fields are ``ImageEncoderFields``'.
    """

    model_type = "bahdanau-image-to-text"
    default_auto_map = IMAGE_TO_TEXT_AUTO_MAP

    rnn_type: str = "lstm"
    bidirectional: bool = False
    bridge: str = "mean_cell"
    deep_output: str = "none"
    context_gate: bool = True

    def __post_init__(self, **kwargs):
        annotation_size = resolve_image_encoder(self)
        if self.encoder_hidden_size is None:
            self.encoder_hidden_size = annotation_size
        elif annotation_size is not None and self.encoder_hidden_size != annotation_size:
            raise ValueError(f"`encoder_hidden_size` is the annotation size D, {annotation_size} for this encoder "
                             f"({'backbone_config' if self.backbone_config else 'cnn_channels[-1]'}); got "
                             f"{self.encoder_hidden_size}. Leave it None.")
        if not getattr(self, "custom_pipelines", None):
            self.custom_pipelines = IMAGE_TO_TEXT_PIPELINES
        super().__post_init__(**kwargs)

    def validate_architecture(self) -> None:
        """The image encoder's fields (first: they set ``encoder_hidden_size``, so a bad one is named, not that) and
        ``BahdanauConfig.validate_architecture``; ValueError naming the field."""
        validate_image_encoder(self, self.encoder_output_size)
        super().validate_architecture()
        text_only = _fields_set(self, ("encoder_layers", "bidirectional", "reverse_source", "encoder_self_attention",
                                       "meta_embedding_sources", "copy_attention"))
        if text_only:
            raise ValueError(f"{', '.join(text_only)}: the image-to-text model has an image encoder and no source "
                             "tokens to copy; leave the text encoder's fields and `copy_attention` at their defaults.")


BahdanauImageToTextConfig.__setattr__ = _builtin_errors(BahdanauImageToTextConfig.__setattr__)
