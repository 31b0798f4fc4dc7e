"""Configuration of the models without a decoder: the tagger (``BahdanauForTokenClassification``), the flat and
hierarchical classifiers (``BahdanauForSequenceClassification``) and their base ``BahdanauEncoderModel``.

``BahdanauEncoderConfig`` holds what these models read and nothing else: the encoder's fields (``EncoderFields``,
declared once with ``BahdanauConfig``) and the token attention's and pooling's (``ClassifierFields``); no decoder
field, ``is_encoder_decoder`` False, model type ``"bahdanau-encoder"``.

Folders saved by hf_bahdanau 0.1.0 name ``model_type="bahdanau"`` (``BahdanauConfig``, with the decoder's fields) for
these heads too. They still load, as do seq2seq checkpoints whose encoder a head starts from: ``from_dict`` (so
``from_pretrained``) and the heads, given a ``BahdanauConfig``, upgrade it (``upgrade_bahdanau_config``: the
decoder's fields dropped, with one log line naming those that were set). Saving the model again writes the new
config. ``BahdanauConfig`` has none of the fields of the tagger and the classifiers (``ClassifierFields``).
"""

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .configuration_bahdanau import (
    ENCODER_ONLY_HEADS, HEAD_PIPELINES, BahdanauConfig, ClassifierFields, EncoderFields,
    _builtin_errors, _refuse_fields_not_read, _require_token_ids,
)
from .remote_code import SavesModelCode

logger = logging.getLogger(__name__)

__all__ = ["ENCODER_AUTO_MAP", "FIELDS_OF_ONE_HEAD", "BahdanauEncoderConfig", "upgrade_bahdanau_config"]

ENCODER_AUTO_MAP = {
    "AutoConfig": "configuration_encoder_only.BahdanauEncoderConfig",
    "AutoModelForTokenClassification": "modeling_token_classification.BahdanauForTokenClassification",
    "AutoModelForSequenceClassification": "modeling_sequence_classification.BahdanauForSequenceClassification",
}
# The fields only one of the heads reads (each head refuses the other's set): they tell which head a config is for.
TAGGER_HEAD, CLASSIFIER_HEAD = ENCODER_ONLY_HEADS
FIELDS_OF_ONE_HEAD = {
    TAGGER_HEAD: ("token_attention_type",),
    CLASSIFIER_HEAD: ("hierarchical", "pooling_type", "self_attention_rows",
                                          "self_attention_penalty_weight", "sentence_separator_token_id"),
}
# config.json keys of a BahdanauConfig that an encoder-only config takes from the folder, not from the old dict
_REWRITTEN = ("model_type", "auto_map", "is_encoder_decoder", "transformers_version")


@strict
class BahdanauEncoderConfig(EncoderFields, ClassifierFields, SavesModelCode, PreTrainedConfig):
    r"""Configuration of the tagger and the classifiers: the encoder's fields (``EncoderFields``) and those of the
    token attention and the pooling (``ClassifierFields``), validated as ``BahdanauConfig`` validates them (a
    ``ValueError`` naming the field, at construction and again when a model is built). A ``BahdanauConfig`` (or its
    dict, model type ``"bahdanau"``) is upgraded on load: ``upgrade_bahdanau_config``.
    """

    model_type = "bahdanau-encoder"
    default_auto_map = ENCODER_AUTO_MAP
    keys_to_ignore_at_inference = ["self_attention_penalty"]  # a scalar loss Trainer must not gather as predictions
    attribute_map = {"num_hidden_layers": "encoder_layers"}  # as BART: transformers' generic code reads this name

    def __post_init__(self, **kwargs):
        self._fill_encoder_defaults()
        self._fill_classifier_defaults()
        if getattr(self, "auto_map", None) is None:
            self.auto_map = dict(self.default_auto_map)
        super().__post_init__(**kwargs)
        self.validate_architecture()

    def validate_architecture(self) -> None:
        """Check every field; run at construction and again when a model is built from the config. Raises ValueError
        naming the field."""
        self._validate_encoder(score_fields=("encoder_self_attention", "token_attention_type"))
        self._validate_classifier()
        _refuse_fields_not_read(self)
        _require_token_ids(self, ("pad_token_id", "eos_token_id", "sentence_separator_token_id"))

    @classmethod
    def head_of(cls, config: Mapping[str, Any]) -> str:
        """The head (class name) that a config.json of this type saved without ``architectures`` is for: the one
        whose ``FIELDS_OF_ONE_HEAD`` it sets to a value other than their default. A ValueError naming those fields
        when it sets none, or fields of both heads."""
        defaults = {config_field.name: config_field.default for config_field in dataclasses.fields(cls)}
        set_by_head = {head: [f"`{name}={config[name]!r}`" for name in fields
                              if name in config and config[name] != defaults[name]]
                       for head, fields in FIELDS_OF_ONE_HEAD.items()}
        heads = [head for head, fields in set_by_head.items() if fields]
        if len(heads) == 1:
            return heads[0]
        own = "; ".join(f"{head}: {list(fields)}" for head, fields in FIELDS_OF_ONE_HEAD.items())
        sets = " and ".join(f"{', '.join(set_by_head[head])} ({head}'s)" for head in heads) or "none of them"
        raise ValueError(f"A {cls.model_type!r} config without `architectures` is for the head whose own fields it "
                         f"sets ({own}), but it sets {sets}: set `architectures` to the head's class name (saving the "
                         "model does).")

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> PreTrainedConfig:
        """transformers' ``from_dict``, after ``upgrade_bahdanau_config`` for the dict of a ``BahdanauConfig``."""
        if config_dict.get("model_type") == BahdanauConfig.model_type:
            config_dict = _upgraded_dict(config_dict)
        return super().from_dict(config_dict, **kwargs)


BahdanauEncoderConfig.__setattr__ = _builtin_errors(BahdanauEncoderConfig.__setattr__)


def _upgraded_dict(config_dict: dict[str, Any]) -> dict[str, Any]:
    """A ``BahdanauConfig``'s dict without the fields an encoder-only model does not read (one log line names those
    set to a value other than their default), nor its auto_map or a head's pipelines (the new model's are written)."""
    kept = {config_field.name for config_field in dataclasses.fields(BahdanauEncoderConfig)}
    dropped = [config_field.name for config_field in dataclasses.fields(BahdanauConfig)
               if config_field.name not in kept and config_field.name not in _REWRITTEN]
    upgraded = {key: value for key, value in config_dict.items() if key not in dropped and key not in _REWRITTEN}
    if upgraded.get("custom_pipelines") in HEAD_PIPELINES:
        del upgraded["custom_pipelines"]
    # the defaults, derived ones included (output_size = embedding_size), of a BahdanauConfig with this encoder
    encoder = {config_field.name for config_field in dataclasses.fields(EncoderFields)}
    defaults = BahdanauConfig(**{name: value for name, value in config_dict.items() if name in encoder})
    changed = [f"{name}={config_dict[name]!r}" for name in dropped
               if name in config_dict and config_dict[name] != getattr(defaults, name)]
    logger.warning("Upgraded a 'bahdanau' config (hf_bahdanau 0.1.0, or a seq2seq model's) to BahdanauEncoderConfig "
                   "('bahdanau-encoder'), which the tagger and the classifiers read: dropped %d decoder fields they "
                   "never read%s. Save the model again to store the new config.", len(dropped),
                   f" (set: {', '.join(changed)})" if changed else "")
    return upgraded


def upgrade_bahdanau_config(config: PreTrainedConfig) -> PreTrainedConfig:
    """The config an encoder-only model reads: ``config`` itself, or a ``BahdanauConfig`` (by model type: a remote
    code module may hold another copy of the class) as a new ``BahdanauEncoderConfig`` with its encoder's and
    classifier's fields (the decoder's dropped, with a log line), once it passes its own checks (a field may have
    been changed since it was built: a ValueError naming it). The given config is left as it was."""
    if config.model_type != BahdanauConfig.model_type:
        return config
    config.validate_architecture()
    return BahdanauEncoderConfig.from_dict(config.to_dict())
