"""Configuration of the image-to-text model (Xu et al. 2015, *Show, Attend and Tell*): a convolutional encoder over
image regions and the recurrent decoder of the seq2seq model attending over them.

``BahdanauImageToTextConfig`` is composed of two sub-configs, as transformers' ``VisionEncoderDecoderConfig`` is: its
``encoder`` (``BahdanauImageEncoderConfig``: our CNN or a vision backbone) and its ``decoder``
(``BahdanauImageDecoderConfig``, a ``BahdanauDecoderConfig``: style, score, scope, soft or hard attention, coverage,
bridge, deep output, vocabulary and special ids; ``get_text_config(decoder=True)``, which generate() reads, finds it
by that name). The decoder's defaults are the paper's model: an LSTM started from the mean annotation
(``bridge="mean_cell"``), the additive score, the gating scalar β on the context, a linear deep output. Loading a
config imports no model code.

The config is also built flat, ``BahdanauImageToTextConfig(cnn_channels=[…], hidden_size=…)``: each field goes to the
sub-config that declares it, and a config.json saved flat by hf_bahdanau 0.1.0 loads the same way (its text encoder's
and the classifiers' fields, saved at their defaults, are dropped). Reading ``config.hidden_size`` (any field of a
sub-config) reads the sub-config's, and setting it sets the sub-config's.
"""

import dataclasses
import functools
import logging
from typing import Any

from huggingface_hub.dataclasses import strict
from transformers import GenerationConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .configuration_bahdanau import (BahdanauConfig, BahdanauDecoderConfig, _builtin_errors, _require_labels,
                                     drop_classifier_fields)
from .configuration_image_encoder import (BahdanauImageEncoderConfig, ImageEncoderFields,  # noqa: F401
                                          backbone_feature_size, resolve_image_encoder, validate_image_encoder)
from .remote_code import SavesModelCode

logger = logging.getLogger(__name__)

__all__ = ["IMAGE_TO_TEXT_AUTO_MAP", "IMAGE_TO_TEXT_PIPELINES", "BahdanauImageDecoderConfig",
           "BahdanauImageToTextConfig", "ImageEncoderFields", "resolve_image_encoder", "validate_image_encoder"]

IMAGE_TO_TEXT_AUTO_MAP = {
    "AutoConfig": "configuration_image_to_text.BahdanauImageToTextConfig",
    "AutoModel": "modeling_image_to_text.BahdanauImageToTextModel",
    "AutoModelForImageTextToText": "modeling_image_to_text.BahdanauForImageToText",
}
# config.json's ``custom_pipelines``: pipeline(model=..., trust_remote_code=True) reads images into texts
IMAGE_TO_TEXT_PIPELINES = {"image-to-text": {"impl": "pipeline_image_to_text.BahdanauImageToTextPipeline",
                                             "pt": ["AutoModelForImageTextToText"], "type": "image"}}


# the fields of 0.1.0's flat config (a BahdanauConfig's) that the image model never read, at the values it saved them
TEXT_ENCODER_DEFAULTS = {"encoder_layers": 1, "bidirectional": False, "reverse_source": False,
                         "encoder_self_attention": None, "meta_embedding_sources": None, "char_embedding_size": 16,
                         "char_hidden_size": 32, "token_spelling_length": 16, "pretrained_embedding_size": None,
                         "max_training_source_length": None}
ANNOTATION_SIZE_NAMES = ("annotation_size", "encoder_hidden_size")  # what config.<name> reads from the encoder: D
# the keyword arguments transformers' PreTrainedConfig reads or keeps beside its fields (besides generation's)
PASSED_ON = {"auto_map", "custom_pipelines", "model_type", "name_or_path", "_name_or_path", "_commit_hash",
             "torch_dtype", "output_attentions", "attn_implementation", "experts_implementation",
             "_attn_implementation_internal", "_experts_implementation_internal", "per_layer_config", "num_labels"}


def _refuse_text_encoder_fields(changed: list[str]) -> None:
    """A ValueError naming ``changed`` ("`name=value`" each), fields of the text encoder set to another value than
    ``TEXT_ENCODER_DEFAULTS``' or ``copy_attention=True``, none of which an image-to-text model can have."""
    if changed:
        raise ValueError(f"{', '.join(changed)}: the image-to-text model has an image encoder and no source tokens to "
                         "copy; leave the text encoder's fields and `copy_attention` at their defaults.")


@strict
class BahdanauImageDecoderConfig(BahdanauDecoderConfig):
    r"""The image-to-text model's decoder (its config's ``decoder``): ``BahdanauDecoderConfig`` with the paper's
    defaults (Xu et al. 2015): an LSTM started from the mean annotation (``bridge="mean_cell"``), the gating scalar β on
    the context (``context_gate``), a linear deep output."""

    model_type = "bahdanau-image-decoder"

    rnn_type: str = "lstm"
    bridge: str = "mean_cell"
    deep_output: str = "none"
    context_gate: bool = True


BahdanauImageDecoderConfig.__setattr__ = _builtin_errors(BahdanauImageDecoderConfig.__setattr__)


@functools.cache
def _own_fields(config_class: type) -> frozenset[str]:
    """The fields ``config_class`` declares beyond transformers' ``PreTrainedConfig``."""
    inherited = {config_field.name for config_field in dataclasses.fields(PreTrainedConfig)}
    return frozenset(config_field.name for config_field in dataclasses.fields(config_class)) - inherited


@strict
class BahdanauImageToTextConfig(SavesModelCode, PreTrainedConfig):
    r"""Configuration of ``BahdanauForImageToText``: images [B, C, H, W] -> a grid of L = H'·W' region annotations a_i
    (the ``encoder``'s, size D) -> the recurrent decoder attending over them (the ``decoder``'s
    ``encoder_output_size`` is D, set from the encoder). Keyword arguments that are fields of a sub-config go to it.

    Args:
        encoder (`BahdanauImageEncoderConfig` or `dict`, *optional*):
            The image encoder's config; default ``BahdanauImageEncoderConfig()``.
        decoder (`BahdanauImageDecoderConfig` or `dict`, *optional*):
            The decoder's config; default ``BahdanauImageDecoderConfig()`` (the paper's decoder).
    """

    model_type = "bahdanau-image-to-text"
    default_auto_map = IMAGE_TO_TEXT_AUTO_MAP
    sub_configs_defaults = {"encoder": SubConfigSpec(BahdanauImageEncoderConfig),  # SubConfigSpec: 5.20 needs them
                            "decoder": SubConfigSpec(BahdanauImageDecoderConfig)}
    keys_to_ignore_at_inference = BahdanauConfig.keys_to_ignore_at_inference

    encoder: BahdanauImageEncoderConfig | dict | None = None
    decoder: BahdanauImageDecoderConfig | dict | None = None
    is_encoder_decoder: bool = True

    def __post_init__(self, **kwargs):
        routed = {name: kwargs.pop(name) for name in list(kwargs) if self.sub_config_name(name) or name in
                  (*TEXT_ENCODER_DEFAULTS, "encoder_hidden_size")}
        self.encoder = self._with_fields(self.encoder, BahdanauImageEncoderConfig, routed)
        annotation_size = self.encoder.annotation_size
        given = routed.pop("encoder_hidden_size", None)  # 0.1.0's name of D
        if given is not None and given != annotation_size:
            raise ValueError(f"`encoder_hidden_size` is the annotation size D, {annotation_size} for this encoder "
                             f"({'backbone_config' if self.encoder.backbone_config else 'cnn_channels[-1]'}); got "
                             f"{given}. Leave it None.")
        changed = [name for name in routed if routed[name] != TEXT_ENCODER_DEFAULTS.get(name, routed[name])]
        _refuse_text_encoder_fields([f"`{name}={routed[name]!r}`" for name in changed]
                                    + (["`copy_attention=True`"] if routed.get("copy_attention") else []))
        for name in TEXT_ENCODER_DEFAULTS:
            routed.pop(name, None)
        if not isinstance(self.decoder, PreTrainedConfig) and (self.decoder or {}).get("encoder_output_size") is None:
            routed.setdefault("encoder_output_size", annotation_size)  # D, unless given (then checked)
        self.decoder = self._with_fields(self.decoder, BahdanauImageDecoderConfig, routed)
        drop_classifier_fields(self, kwargs)
        unknown = sorted(set(kwargs) - PASSED_ON - set(GenerationConfig._get_default_generation_params()))
        if unknown:
            raise ValueError(f"{unknown} {'is not a field' if len(unknown) == 1 else 'are not fields'} of "
                             f"BahdanauImageToTextConfig or of its sub-configs: the image encoder's "
                             f"{sorted(_own_fields(BahdanauImageEncoderConfig))} and the decoder's "
                             f"{sorted(_own_fields(BahdanauDecoderConfig))}.")
        if getattr(self, "auto_map", None) is None:
            self.auto_map = dict(self.default_auto_map)
        if not getattr(self, "custom_pipelines", None):
            self.custom_pipelines = IMAGE_TO_TEXT_PIPELINES
        super().__post_init__(**kwargs)
        self.validate_architecture()

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> PreTrainedConfig:
        """transformers' ``from_dict``; a config.json saved flat by hf_bahdanau 0.1.0 (no ``decoder``) is read into
        the sub-configs, with a warning."""
        if "decoder" not in config_dict:
            logger.warning("This image-to-text config.json is flat (saved by hf_bahdanau 0.1.0): its fields are read "
                           "into the `encoder` and `decoder` sub-configs; save the model again to write the new form.")
        return super().from_dict(config_dict, **kwargs)

    @staticmethod
    def _with_fields(sub_config: PreTrainedConfig | dict | None, config_class: type,
                     fields: dict[str, Any]) -> PreTrainedConfig:
        """The sub-config of ``config_class`` from the one given (a config, a dict or None), with those of ``fields``
        it declares set (taken out of ``fields``)."""
        own = {name: fields.pop(name) for name in list(fields) if name in _own_fields(config_class)}
        if isinstance(sub_config, config_class) and not own:
            return sub_config
        given = sub_config.to_dict() if isinstance(sub_config, PreTrainedConfig) else dict(sub_config or {})
        given.pop("model_type", None)
        given.pop("transformers_version", None)
        return config_class(**{**given, **own})

    @classmethod
    def sub_config_name(cls, name: str) -> str | None:
        """The sub-config (``"decoder"`` or ``"encoder"``) that declares the field ``name`` (not one of this config's
        own), else None."""
        if name in _own_fields(cls):
            return None
        if name in _own_fields(BahdanauDecoderConfig):
            return "decoder"
        return "encoder" if name in _own_fields(BahdanauImageEncoderConfig) else None

    def __getattr__(self, name: str) -> Any:
        """A field of a sub-config, read from it (only called for a name this config does not hold). For the code
        written for the text encoder (the shared decoder's), the image encoder reads as a one-layer, one-direction
        encoder of size D: ``annotation_size`` and ``encoder_hidden_size`` are the encoder's D, and the other text
        encoder fields 0.1.0's flat config had read ``TEXT_ENCODER_DEFAULTS``."""
        if name in TEXT_ENCODER_DEFAULTS:
            return TEXT_ENCODER_DEFAULTS[name]
        key = type(self).sub_config_name(name) or ("encoder" if name in ANNOTATION_SIZE_NAMES else None)
        sub_config = self.__dict__.get(key) if key else None
        if not isinstance(sub_config, PreTrainedConfig):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(sub_config, "annotation_size" if name in ANNOTATION_SIZE_NAMES else name)

    def validate_architecture(self) -> None:
        """Each sub-config's checks, then what the composition needs: the decoder attends over annotations of the
        encoder's size D, and copies no source token (an image has none); ValueError naming the field."""
        self.encoder.validate_architecture()
        self.decoder.validate_architecture()
        if self.decoder.encoder_output_size != self.encoder.annotation_size:
            raise ValueError(f"`decoder.encoder_output_size` ({self.decoder.encoder_output_size}) must be the image "
                             f"encoder's annotation size D ({self.encoder.annotation_size}).")
        _require_labels(self)
        _refuse_text_encoder_fields(["`copy_attention=True`"] if self.decoder.copy_attention else [])
        if self.decoder.bridge == "last" and self.decoder.decoder_layers != 1:
            raise ValueError(f"`bridge='last'` copies the encoder's final state into the decoder's one layer: the "
                             f"image encoder has one, but `decoder_layers` is {self.decoder.decoder_layers}; use "
                             "bridge 'mean_cell', 'mean', 'tanh' or 'zero' otherwise.")


_strict_setattr = _builtin_errors(BahdanauImageToTextConfig.__setattr__)


def _setattr(self: BahdanauImageToTextConfig, name: str, value: Any) -> None:
    """Setting a field of a sub-config sets the sub-config's (checked by its class); the rest as ``@strict`` does."""
    key = type(self).sub_config_name(name)
    if key and isinstance(self.__dict__.get(key), PreTrainedConfig):
        setattr(self.__dict__[key], name, value)
    else:
        _strict_setattr(self, name, value)


BahdanauImageToTextConfig.__setattr__ = _setattr
