"""Configuration of the image-to-text model (Xu et al. 2015, *Show, Attend and Tell*): a convolutional encoder over image
regions and the recurrent decoder of ``BahdanauConfig`` attending over them.

The decoder's fields are ``BahdanauConfig``'s, read the same way (style, score, scope, soft or hard attention, coverage,
bridge, deep output); the text encoder's fields are replaced by the image encoder's. The defaults are the paper's
model: an LSTM decoder started from the mean annotation (``bridge="mean_cell"``), the additive score, the gating scalar
β on the context, a linear deep output. Loading a config imports no model code.
"""

from huggingface_hub.dataclasses import strict

from .configuration_bahdanau import BahdanauConfig, _builtin_errors, _fields_set
from .configuration_image_encoder import (ImageEncoderFields, backbone_feature_size, resolve_image_encoder,  # noqa: F401
                                          validate_image_encoder)  # (their import path before the image encoder's config)

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
