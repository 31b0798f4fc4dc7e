"""Configuration of the RNN encoder–attention–decoder family.

Every architectural choice is an independent field (cell, score function, decoder style, bridge, deep output); the
values each accepts are the names its axis declares in ``axes.py`` (``RNN_TYPES``, ``ATTENTION_SCORES``,
``DECODER_STYLES``, ``CONTEXT_MODES``, ``BRIDGES``, ``DEEP_OUTPUTS``, ``TOKEN_ATTENTIONS``), and each is validated in
``validate_architecture``. The declarations are plain data, so loading a config imports no model code. The classic
systems of the papers are named presets: plain data, never subclasses.

The encoder's fields (``EncoderFields``) are declared once here, for ``BahdanauConfig`` and for the encoder-only
``BahdanauEncoderConfig`` (``configuration_encoder_only``); the tagger's and classifiers' (``ClassifierFields``) too,
for ``BahdanauEncoderConfig`` alone: a seq2seq config has none (``drop_classifier_fields``).
"""

import dataclasses
import functools
import logging
import math
import typing
from collections.abc import Callable, Iterable
from typing import Any

from huggingface_hub.dataclasses import strict
from huggingface_hub.errors import StrictDataclassFieldValidationError
from transformers import PreTrainedConfig

from .axes import (ATTENTION_SCORES, AXES, FIELDS_READ, POOLINGS, RNN_TYPES, TOKEN_ATTENTION_LEGACY_NAMES, all_at_once_scores, axes_table,
                   token_attention_types, EMBEDDING_SOURCES)
from .remote_code import SavesModelCode

logger = logging.getLogger(__name__)

AUTO_MAP = {
    "AutoConfig": "configuration_bahdanau.BahdanauConfig",
    "AutoModel": "modeling_bahdanau.BahdanauModel",
    "AutoModelForSeq2SeqLM": "modeling_bahdanau.BahdanauForConditionalGeneration",
    "AutoModelForTokenClassification": "modeling_token_classification.BahdanauForTokenClassification",
    "AutoModelForSequenceClassification": "modeling_sequence_classification.BahdanauForSequenceClassification",
}
POINTER_AUTO_MAP = {
    "AutoConfig": "configuration_bahdanau.BahdanauPointerConfig",
    "AutoModel": "modeling_pointer.BahdanauForPointerNetwork",
}
# The heads whose 0.1.0 config.json said model type "bahdanau": they now read BahdanauEncoderConfig
ENCODER_ONLY_HEADS = ("BahdanauForTokenClassification", "BahdanauForSequenceClassification")

PIPELINE_TASK = "translation"
# config.json's ``custom_pipelines`` of a seq2seq model: pipeline(model=..., trust_remote_code=True) loads ours
CUSTOM_PIPELINES = {PIPELINE_TASK: {"impl": "pipeline_bahdanau.BahdanauTranslationPipeline",
                                    "pt": ["AutoModelForSeq2SeqLM"], "type": "text"}}
# ... of the tagger and the classifiers: transformers' pipelines, under task names that are not transformers' (a saved
# "token-classification" would make pipeline("token-classification", model=...) ask for trust_remote_code)
TAGGER_PIPELINES = {"bahdanau-token-classification": {
    "impl": "pipeline_classification.BahdanauTokenClassificationPipeline", "pt": ["AutoModelForTokenClassification"],
    "type": "text"}}
CLASSIFIER_PIPELINES = {"bahdanau-text-classification": {
    "impl": "pipeline_classification.BahdanauTextClassificationPipeline",
    "pt": ["AutoModelForSequenceClassification"], "type": "text"}}
POINTER_PIPELINES = {"pointing": {"impl": "pipeline_pointer.BahdanauPointingPipeline", "pt": ["AutoModel"]}}
HEAD_PIPELINES = (CUSTOM_PIPELINES, TAGGER_PIPELINES, CLASSIFIER_PIPELINES, POINTER_PIPELINES)


def name_head_pipelines(config: Any, pipelines: dict | None) -> None:
    """Set ``config.custom_pipelines`` to a head's (None: remove it), unless it names pipelines of the user's own: a
    config read from another head's checkpoint names that head's, which is replaced."""
    current = getattr(config, "custom_pipelines", None)
    if current and current not in HEAD_PIPELINES:
        return
    if pipelines is not None:
        config.custom_pipelines = pipelines
    elif current:
        del config.custom_pipelines

PRESETS: dict[str, dict[str, Any]] = {
    # Cho et al. 2014: GRU encoder summary C fed to every decoder step and to the maxout output.
    "rnnencdec": dict(
        rnn_type="gru", bidirectional=False, attention_type="none", context_mode="cho",
        bridge="tanh", deep_output="maxout",
    ),
    # Sutskever et al. 2014: deep LSTMs, reversed source, encoder state only initialises the decoder.
    "sutskever": dict(
        rnn_type="lstm", encoder_layers=4, decoder_layers=4, bidirectional=False,
        reverse_source=True, attention_type="none", context_mode="sutskever",
        bridge="last", deep_output="none",
    ),
    # Bahdanau et al. 2014 (RNNsearch): BiGRU annotations, additive score, s_0 = tanh(W_s <-h_1), maxout.
    "rnnsearch": dict(
        rnn_type="gru", bidirectional=True, attention_type="additive", decoder_style="bahdanau",
        bridge="tanh", deep_output="maxout",
    ),
    # Luong et al. 2015: stacked LSTMs, global attention after the update, h~ = tanh(W_c[c; h]), input feeding.
    "luong-dot": dict(
        rnn_type="lstm", encoder_layers=4, decoder_layers=4, bidirectional=False,
        attention_type="dot", decoder_style="luong", input_feeding=True, bridge="last", deep_output="tanh",
    ),
}
PRESETS["luong-general"] = {**PRESETS["luong-dot"], "attention_type": "general"}
PRESETS["luong-concat"] = {**PRESETS["luong-dot"], "attention_type": "concat"}
PRESETS["luong-location"] = {**PRESETS["luong-dot"], "attention_type": "location"}
# Luong et al. 2015's best single system: local-p attention (D = 10) with the general score and input feeding.
PRESETS["luong-local-p"] = {**PRESETS["luong-general"], "attention_scope": "local-p"}
# Raffel et al. 2017 on RNNsearch: monotonic additive attention, hard and left to right at inference (TF-Addons'
# BahdanauMonotonicAttention), for nearly monotone tasks: G2P, transliteration, normalisation.
PRESETS["rnnsearch-monotonic"] = {**PRESETS["rnnsearch"], "attention_scope": "monotonic"}
# Chorowski et al. 2015 on RNNsearch: the additive score also reads the previous alignment through 10 filters of width
# 201 (location-aware attention), which keeps long inputs aligned (ESPnet's AttLoc).
PRESETS["rnnsearch-location"] = {**PRESETS["rnnsearch"], "attention_type": "location_aware"}


def _require_choice(field: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"`{field}` must be one of {list(allowed)}, got {value!r}.")


def _require_positive(field: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"`{field}` must be a positive integer, got {value}.")


# REINFORCE's baselines, name -> what it is (``reinforce.sequence_baselines`` computes them), declared without torch.
REINFORCE_BASELINES = {
    "sequence": "one moving average b of the rewards R_n, the same for every sequence (Xu et al. 2015)",
    "per_token": "a moving average r̄ of the per-token rewards R_n / T_n; sequence n's baseline is T_n · r̄",
}


# What a float field allows, beyond being a finite number: its range, written as the error message says it.
RANGES: dict[str, Callable[[float], bool]] = {
    "in [0, 1)": lambda value: 0 <= value < 1,
    "in [0, 1]": lambda value: 0 <= value <= 1,
    ">= 0": lambda value: value >= 0,
    "> 0": lambda value: value > 0,
}
FLOAT_RANGES = {
    "dropout": "in [0, 1)",
    "classifier_dropout": "in [0, 1)",
    "gaussian_kernel_width": "> 0",
    "monotonic_noise_std": ">= 0",
    "hard_attention_temperature": "> 0",
    "location_sharpening": "> 0",
    "coverage_loss_weight": ">= 0",
    "doubly_stochastic_weight": ">= 0",
    "reinforce_baseline_decay": "in [0, 1)",
    "reinforce_entropy_weight": ">= 0",
    "reinforce_expected_context_probability": "in [0, 1]",
    "self_attention_penalty_weight": ">= 0",
    "init_std": ">= 0",
}  # a float field not named here (monotonic_bias_init) may be any finite number


def float_fields(config_class: type) -> list[str]:
    """The fields of a config dataclass whose annotation _admits a float."""
    return [config_field.name for config_field in dataclasses.fields(config_class)
            if config_field.type is float or float in typing.get_args(config_field.type)]


def _require_real(field: str, value: float | None) -> None:
    """A float field is None (where it may be), a finite number, and in its ``FLOAT_RANGES`` range."""
    if value is None:
        return
    allowed = FLOAT_RANGES.get(field)
    if not math.isfinite(value):
        raise ValueError(f"`{field}` must be a finite number{'' if allowed is None else ' ' + allowed}, got {value}.")
    if allowed is not None and not RANGES[allowed](value):
        raise ValueError(f"`{field}` must be {allowed}, got {value}.")


def _fields_set(config: Any, fields: Iterable[str]) -> list[str]:
    """`name=value` for each of ``fields`` that ``config`` sets to a value other than its class's default."""
    defaults = {config_field.name: config_field.default for config_field in dataclasses.fields(type(config))}
    return [f"`{field}={getattr(config, field)!r}`" for field in fields if getattr(config, field) != defaults[field]]


def _refuse_fields_not_read(config: Any) -> None:
    """One rule for every ``axes.FIELDS_READ`` declaration whose choice the config has: a field only other values of
    the choice read, set to a value other than its default, is a ValueError in the declaration's words."""
    names = {config_field.name for config_field in dataclasses.fields(type(config))}
    for declaration in FIELDS_READ:
        value = getattr(config, declaration.choice, None)
        if declaration.choice not in names or declaration.reads(value):
            continue
        changed = _fields_set(config, [field for field in declaration.fields if field in names])
        if changed:
            raise ValueError(declaration.refusal.format(fields=", ".join(changed), value=value))


def _require_token_ids(config: Any, fields: tuple[str, ...]) -> None:
    """Each token id field (None, one id or a list) holds ids in [0, vocab_size)."""
    for field in fields:
        value = getattr(config, field)
        for token_id in value if isinstance(value, list) else [value]:
            if token_id is not None and not 0 <= token_id < config.vocab_size:
                raise ValueError(f"`{field}` must be a token id in [0, vocab_size={config.vocab_size}) (or None), "
                                 f"got {value}.")


@dataclasses.dataclass(kw_only=True, repr=False, eq=False)
class CommonFields:
    r"""The fields both sides of the model read: the vocabulary, the sizes, the recurrent cell, the attention scores'
    parameters and the special ids; declared once for every config (``EncoderFields``' configs and the decoder's,
    ``BahdanauDecoderConfig``).

    Args:
        vocab_size (`int`, *optional*, defaults to 1000):
            Size of the vocabulary; the seq2seq model's source and target share it (each side has its own
            embedding matrix).
        embedding_size (`int`, *optional*, defaults to 256):
            Size of the token embeddings E (the seq2seq model's source and target).
        hidden_size (`int`, *optional*, defaults to 256):
            The model's width: the decoder state s_i (every decoder layer); the default of ``attention_size``
            (and of the encoder's ``encoder_hidden_size``, so of the annotation size).
        rnn_type (`str`, *optional*, defaults to `"gru"`):
            The recurrent cell of encoder and decoder: a name in ``axes.RNN_TYPES`` (gru, lstm, rnn).
        dropout (`float`, *optional*, defaults to 0.0):
            Dropout on embeddings, between RNN layers and before the output projection, in [0, 1).
        attention_size (`int`, *optional*):
            Size A of the additive score's hidden layer and of the multi-head projections. Default: ``hidden_size``.
        num_attention_heads (`int`, *optional*, defaults to 1):
            Heads of ``attention_type="multihead"``; must divide ``attention_size``.
        max_source_positions (`int`, *optional*, defaults to 256):
            Longest source ``attention_type="location"`` can score (one weight row per position).
        gaussian_kernel_width (`float`, *optional*, defaults to 1.0):
            Width w > 0 of ``attention_type="gaussian_kernel"``, e_ij = -½ (w ‖q_i - h_j‖)².
        gaussian_kernel_learnable (`bool`, *optional*, defaults to `True`):
            Whether w is learned (parametric Nadaraya–Watson pooling) or fixed.
        init_std (`float`, *optional*, defaults to 0.1):
            Standard deviation (≥ 0) of the normal initialisation of the embeddings.
        pad_token_id (`int`, *optional*, defaults to 0):
            Padding token, in [0, vocab_size) or None.
        eos_token_id (`int` or `list[int]`, *optional*, defaults to 2):
            End-of-sequence token(s), each in [0, vocab_size); the hierarchical classifier also ends a sentence at it.
    """

    vocab_size: int = 1000
    embedding_size: int = 256
    hidden_size: int = 256
    rnn_type: str = "gru"
    dropout: float | int = 0.0
    attention_size: int | None = None
    num_attention_heads: int = 1
    max_source_positions: int = 256
    gaussian_kernel_width: float | int = 1.0
    gaussian_kernel_learnable: bool = True
    init_std: float | int = 0.1
    pad_token_id: int | None = 0
    eos_token_id: int | list[int] | None = 2

    def _fill_common_defaults(self) -> None:
        """``attention_size`` left None is ``hidden_size``."""
        if self.attention_size is None:
            self.attention_size = self.hidden_size

    def _validate_common(self, score_fields: tuple[str, ...]) -> None:
        """The sizes, every float field of the config (finite, in its ``FLOAT_RANGES`` range) and the cell;
        ``score_fields``: the fields naming the attention scores the model builds (their multi-head score splits
        ``attention_size``). Raises ValueError naming the field."""
        for field in ("vocab_size", "embedding_size", "hidden_size", "attention_size", "num_attention_heads",
                      "max_source_positions"):
            _require_positive(field, getattr(self, field))
        for field in float_fields(type(self)):
            _require_real(field, getattr(self, field))
        RNN_TYPES.check(self.rnn_type)
        if "multihead" in [getattr(self, field) for field in score_fields] and \
                self.attention_size % self.num_attention_heads:
            raise ValueError(
                f"`attention_size` ({self.attention_size}) must be divisible by `num_attention_heads` "
                f"({self.num_attention_heads})."
            )


@dataclasses.dataclass(kw_only=True, repr=False, eq=False)
class EncoderFields(CommonFields):
    r"""The fields of the encoder (embeddings -> (Bi)RNN annotations h_j [-> self-attention]) besides those both sides
    read (``CommonFields``), declared once for every config whose model has this encoder: ``BahdanauConfig``
    (the seq2seq model) and ``BahdanauEncoderConfig`` (the tagger and the classifiers).

    Args:
        encoder_hidden_size (`int`, *optional*):
            Units per direction of the encoder RNN; the annotations h_j have ``encoder_output_size`` =
            ``encoder_hidden_size`` × directions. Default: ``hidden_size // 2`` if bidirectional, else ``hidden_size``.
        encoder_layers (`int`, *optional*, defaults to 1):
            Stacked encoder RNN layers (dropout between them).
        bidirectional (`bool`, *optional*, defaults to `True`):
            Whether the encoder reads the source in both directions, h_j = [→h_j; ←h_j] (Bahdanau et al.).
        reverse_source (`bool`, *optional*, defaults to `False`):
            Whether the encoder reads each source reversed within its length (Sutskever et al.).
        encoder_self_attention (`str`, *optional*):
            Intra-attention over the encoder's annotations after its RNN (``self_attention.py``): each annotation
            attends over its sentence's real tokens with this score, c_j = Σ_k α_jk h_k, and becomes
            h'_j = tanh(W_s [h_j; c_j]) (same size). A score of ``axes.all_at_once_scores()`` (every
            ``attention_type`` that reads no previous alignment); None (the default): off. An encoder option only:
            the decoder is causal and never attends over its own states. Hierarchical classifiers: the word level.
        meta_embedding_sources (`list[str]`, *optional*):
            Several embeddings of each source token mixed by attention, x̃_i = Σ_j α_ij (P_j w_ij + b_j) (Kiela et
            al. 2018's dynamic meta-embeddings), for the encoder of every model class: distinct names in
            ``axes.EMBEDDING_SOURCES`` (``"word"``, ``"chars"``, ``"pretrained"``); None: the word table alone.
            ``output_attentions`` returns α as ``embedding_attentions``.
        char_embedding_size (`int`, *optional*, defaults to 16):
            Size of the byte embeddings read by the ``"chars"`` source.
        char_hidden_size (`int`, *optional*, defaults to 32):
            Units per direction of the ``"chars"`` source's BiRNN (its vector is twice as long).
        token_spelling_length (`int`, *optional*, defaults to 16):
            Width of the ``"chars"`` source's spelling table: the longest token's UTF-8 bytes + 2;
            ``set_token_spellings`` widens it to the tokenizer's longest token.
        pretrained_embedding_size (`int`, *optional*):
            P, the size of the vectors of the ``"pretrained"`` source (``set_pretrained_vectors``); needed with it.
        max_training_source_length (`int`, *optional*):
            The longest source seen in training, in tokens (set by the training scripts); decoding warns about
            longer inputs.
    """

    encoder_hidden_size: int | None = None
    encoder_layers: int = 1
    bidirectional: bool = True
    reverse_source: bool = False
    encoder_self_attention: str | None = None
    meta_embedding_sources: list[str] | None = None
    char_embedding_size: int = 16
    char_hidden_size: int = 32
    token_spelling_length: int = 16
    pretrained_embedding_size: int | None = None
    max_training_source_length: int | None = None

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "EncoderFields":
        """Config of a named classic system (see ``PRESETS``), with any field overridden; a config without a decoder
        (``BahdanauEncoderConfig``) takes the preset's fields it has, its encoder's."""
        _require_choice("preset", name, tuple(PRESETS))
        known = {config_field.name for config_field in dataclasses.fields(cls)} | {"num_labels", "output_attentions"}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"{unknown} {'is not a field' if len(unknown) == 1 else 'are not fields'} of "
                             f"{cls.__name__}; its fields are {sorted(known)}.")
        preset = {field: value for field, value in PRESETS[name].items() if field in known}
        return cls(**{**preset, **overrides})

    @property
    def encoder_output_size(self) -> int:
        """Size of an annotation h_j = [->h_j; <-h_j]."""
        return self.encoder_hidden_size * (2 if self.bidirectional else 1)

    def _fill_encoder_defaults(self) -> None:
        """The sizes left None take their documented defaults."""
        if self.encoder_hidden_size is None:
            self.encoder_hidden_size = self.hidden_size // 2 if self.bidirectional else self.hidden_size
        self._fill_common_defaults()

    def _validate_encoder(self, score_fields: tuple[str, ...]) -> None:
        """The encoder's fields; ``score_fields``: the fields naming the attention scores the model builds (their
        multi-head score splits ``attention_size``). Raises ValueError naming the field."""
        self._validate_common(score_fields)
        for field in ("encoder_hidden_size", "encoder_layers"):
            _require_positive(field, getattr(self, field))
        _require_choice("encoder_self_attention", self.encoder_self_attention, (None, *all_at_once_scores()))
        if self.max_training_source_length is not None:
            _require_positive("max_training_source_length", self.max_training_source_length)
        self._validate_meta_embedding()

    def _validate_meta_embedding(self) -> None:
        """The meta-embedding's sources and the fields each reads."""
        sources = self.meta_embedding_sources
        if sources is not None:
            if not sources or len(set(sources)) != len(sources):
                raise ValueError(f"`meta_embedding_sources` must be distinct names of {EMBEDDING_SOURCES.allowed} (at "
                                 f"least one), or None for the word table alone, got {sources!r}.")
            for name in sources:
                if name not in EMBEDDING_SOURCES.allowed:
                    raise ValueError(f"`meta_embedding_sources` must hold names of {EMBEDDING_SOURCES.allowed}, got "
                                     f"{name!r} in {sources!r}.")
        for field in ("char_embedding_size", "char_hidden_size", "token_spelling_length"):
            _require_positive(field, getattr(self, field))
        if self.token_spelling_length < 2:
            raise ValueError(f"`token_spelling_length` must be at least 2 (a spelling has a begin and an end mark), "
                             f"got {self.token_spelling_length}.")
        reads_pretrained = sources is not None and "pretrained" in sources
        if reads_pretrained and self.pretrained_embedding_size is None:
            raise ValueError("`meta_embedding_sources` holds 'pretrained': set `pretrained_embedding_size` to the "
                             "size of your vectors.")
        if self.pretrained_embedding_size is not None:
            _require_positive("pretrained_embedding_size", self.pretrained_embedding_size)
            if not reads_pretrained:
                raise ValueError(f"`pretrained_embedding_size={self.pretrained_embedding_size}`: only the 'pretrained' "
                                 f"source reads it, but `meta_embedding_sources` is {sources!r}; add 'pretrained' or "
                                 "leave it None.")


@dataclasses.dataclass(kw_only=True, repr=False, eq=False)
class ClassifierFields:
    r"""The fields of the tagger's token attention and of the sequence classifier's pooling (flat or hierarchical),
    declared once.

    Args:
        token_attention_type (`str`, *optional*, defaults to `"additive"`):
            The tagger's attention: ``"context_vector"`` (Yang et al. 2016's word attention: one distribution over
            the sentence re-weighting each annotation) or any ``attention_type`` score (each token attends over its
            sentence);
            ``axes.token_attention_types()`` lists them. ``"sentence"``, its former name, still loads.
        classifier_attention_size (`int`, *optional*):
            Size d_a of the context-vector attention u_j = tanh(W h_j + b) of the tagger and the classifiers.
            Default: half the annotation size.
        classifier_dropout (`float`, *optional*):
            Dropout before the tagger's and classifiers' output layer, in [0, 1). Default: ``dropout``.
        hierarchical (`bool`, *optional*, defaults to `False`):
            The classifier as a hierarchical attention network (words, then sentences; Yang et al., 2016).
        pooling_type (`str`, *optional*, defaults to `"context_vector"`):
            How the sequence classifier pools annotations into one vector (at both levels when hierarchical), a name
            in ``axes.POOLINGS``: ``"context_vector"`` (Yang et al. 2016), ``"self_attentive"`` (Lin et al. 2017: r
            distributions, the pooled vector r·D long) or ``"multi_dimensional"`` (Shen et al. 2018: one
            distribution per feature). The hidden layers' size is ``classifier_attention_size``.
        self_attention_rows (`int`, *optional*, defaults to 4):
            r, the rows of ``pooling_type="self_attentive"``'s A [r, S] (Lin et al. use 30).
        self_attention_penalty_weight (`float`, *optional*, defaults to 1.0):
            λ ≥ 0 of ``pooling_type="self_attentive"``'s penalty ‖A Aᵀ − I‖²_F per text, added to the training loss
            and reported as the output's ``self_attention_penalty``.
        sentence_separator_token_id (`int` or `list[int]`, *optional*):
            The token(s) that end a sentence when hierarchical mode splits [batch, tokens] input into sentences (e.g.
            ".", "?" and "!"), each in [0, vocab_size).
    """

    token_attention_type: str = "additive"
    classifier_attention_size: int | None = None
    classifier_dropout: float | int | None = None
    hierarchical: bool = False
    pooling_type: str = "context_vector"
    self_attention_rows: int = 4
    self_attention_penalty_weight: float | int = 1.0
    sentence_separator_token_id: int | list[int] | None = None

    def _fill_classifier_defaults(self) -> None:
        """The legacy token attention name is renamed (with a log line); ``classifier_attention_size`` defaults to
        half the annotation size."""
        if self.token_attention_type in TOKEN_ATTENTION_LEGACY_NAMES:
            logger.warning("token_attention_type=%r is now called %r.", self.token_attention_type,
                           TOKEN_ATTENTION_LEGACY_NAMES[self.token_attention_type])
            self.token_attention_type = TOKEN_ATTENTION_LEGACY_NAMES[self.token_attention_type]
        if self.classifier_attention_size is None:
            self.classifier_attention_size = self.default_attention_size(self.encoder_output_size)

    @staticmethod
    def default_attention_size(encoder_output_size: int) -> int:
        """d_a's default: half the annotation size (at least 1)."""
        return max(1, encoder_output_size // 2)

    def _validate_classifier(self) -> None:
        """The tagger's and the classifier's fields; ValueError naming the field."""
        _require_positive("classifier_attention_size", self.classifier_attention_size)
        _require_choice("token_attention_type", self.token_attention_type, tuple(token_attention_types()))
        POOLINGS.check(self.pooling_type)
        _require_positive("self_attention_rows", self.self_attention_rows)
        _require_labels(self)


def drop_classifier_fields(config: EncoderFields, given: dict[str, Any]) -> None:
    """Remove from ``given`` (the keyword arguments a config without ``ClassifierFields`` does not declare) the
    tagger's and classifiers' fields, which hf_bahdanau 0.1.0 saved in every config.json: each at its default
    (``classifier_attention_size``'s: None or half the annotation size of ``config``); another value is a ValueError
    naming it, since only ``BahdanauEncoderConfig`` reads it."""
    defaults = {config_field.name: config_field.default for config_field in dataclasses.fields(ClassifierFields)}
    derived = {"classifier_attention_size": ClassifierFields.default_attention_size(config.encoder_output_size)}
    changed = [f"`{name}={given[name]!r}`" for name in defaults
               if name in given and given[name] not in (defaults[name], derived.get(name, defaults[name]))]
    if changed:
        raise ValueError(f"{', '.join(changed)}: {type(config).__name__} (model type {config.model_type!r}) has no "
                         "field of the tagger or the classifiers, which read BahdanauEncoderConfig (model type "
                         "'bahdanau-encoder'): build their config with it, or load a saved one with "
                         "BahdanauEncoderConfig.from_pretrained.")
    for name in defaults:
        given.pop(name, None)


@dataclasses.dataclass(kw_only=True, repr=False, eq=False)
class DecoderFields:
    r"""The fields of the recurrent decoder (its cell's layers, the attention over the annotations, the bridge, the
    output layer, generation's ids), declared once for ``BahdanauConfig`` and the decoder's own config
    (``BahdanauDecoderConfig``, the image-to-text config's ``decoder``). The decoder also reads ``CommonFields`` and
    ``encoder_output_size``, the annotation size D.

    Args:
        decoder_layers (`int`, *optional*, defaults to 1):
            Stacked decoder RNN layers; may differ from ``encoder_layers`` except with ``bridge="last"``.
        attention_type (`str`, *optional*, defaults to `"additive"`):
            The score function: a name in ``axes.ATTENTION_SCORES`` (additive, concat, dot, general, scaled_dot,
            location, multihead, gaussian_kernel, location_aware, …), or ``"none"`` for a decoder without attention
            (``context_mode``).
        location_filters (`int`, *optional*, defaults to 10):
            k, the filters F of ``attention_type="location_aware"`` convolved over the previous alignment,
            f_i = F ∗ α_{i-1} (Chorowski et al. 2015: 10).
        location_kernel_size (`int`, *optional*, defaults to 201):
            r, the odd width of those filters, centred on each source position (Chorowski et al. 2015: 201; ESPnet's
            ``aconv_filts`` = (r − 1) / 2).
        location_sharpening (`float`, *optional*, defaults to 1.0):
            β > 0 of the location-aware score's α_i = softmax(β e_i) (ESPnet's ``scaling``, 2.0 there).
        location_smoothing (`bool`, *optional*, defaults to `False`):
            Chorowski et al. (2015)'s smoothing of the location-aware score: α_ij = σ(β e_ij) / Σ_k σ(β e_ik) over the
            positions the scope normalises (the logistic sigmoid in place of the softmax's exponential: flatter,
            wider alignments). With the global and local scopes; not with ``"monotonic"``, which takes no softmax.
        attention_scope (`str`, *optional*, defaults to `"global"`):
            Where the decoder may attend, a name in ``axes.ATTENTION_SCOPES``: ``"global"`` (every position),
            ``"local-m"`` / ``"local-p"`` (Luong's window around p_i = i or a predicted p_i), ``"monotonic"`` (Raffel
            et al.: left to right, hard at inference). Works with every score except ``"multihead"`` for monotonic.
        local_window (`int`, *optional*, defaults to 10):
            Half-width D of the local scopes' window [p_i − D, p_i + D]; the Gaussian's σ is D / 2.
        monotonic_bias_init (`float`, *optional*, defaults to -4.0):
            Initial value of the monotonic scope's learned energy bias r (Raffel et al.: −4, so training starts from
            low stopping probabilities).
        monotonic_noise_std (`float`, *optional*, defaults to 1.0):
            Standard deviation (≥ 0) of the Gaussian noise added to the monotonic energies in training (Raffel et
            al.: 1), which pushes the stopping probabilities towards 0 or 1.
        attention_mode (`str`, *optional*, defaults to `"soft"`):
            A name in ``axes.ATTENTION_MODES``: ``"soft"`` (the context is the expectation Σ_j α_ij h_j) or
            ``"hard"`` (one position: sampled in training, the argmax at inference; trained by the straight-through
            Gumbel-softmax) or ``"hard_reinforce"`` (the same positions, trained by Xu et al.'s REINFORCE,
            ``reinforce``). Not with ``"monotonic"``, which is already hard at inference.
        hard_attention_temperature (`float`, *optional*, defaults to 1.0):
            Temperature τ > 0 of the straight-through Gumbel-softmax that trains ``"hard"`` attention.
        reinforce_baseline_decay (`float`, *optional*, defaults to 0.9):
            With ``"hard_reinforce"``: the moving-average baseline's b ← decay · b + (1 − decay) · mean R, in [0, 1)
            (Xu et al.: 0.9).
        reinforce_baseline (`str`, *optional*, defaults to `"sequence"`):
            With ``"hard_reinforce"``: a name in ``REINFORCE_BASELINES``. ``"sequence"``: one b for every sequence,
            b ← decay · b + (1 − decay) · mean_n R_n (Xu et al.). ``"per_token"``: r̄ ← decay · r̄ + (1 − decay) ·
            mean_n R_n / T_n and sequence n's baseline is T_n · r̄ (T_n its kept target tokens), since the summed
            log-likelihood R_n falls with the text's length.
        reinforce_entropy_weight (`float`, *optional*, defaults to 0.0):
            With ``"hard_reinforce"``: λ_e ≥ 0 of the entropy bonus −λ_e Σ_i H(α_i) added to the loss (Xu et al.'s
            entropy term, which keeps the sampled positions varied).
        reinforce_expected_context_probability (`float`, *optional*, defaults to 0.0):
            With ``"hard_reinforce"``, in training: the probability p in [0, 1] that a sequence attends by the expected
            context Σ_j α_ij h_j (soft attention) at every step instead of the sampled positions, drawn once per
            sequence (Xu et al. §4.1: "with probability 0.5 for a given image"; their 0.5). Those sequences train α
            by backpropagation and add no score-function term; evaluation and ``generate()`` take the argmax as
            before. 0 trains every sequence by REINFORCE.
        context_gate (`bool`, *optional*, defaults to `False`):
            Xu et al.'s gating scalar: the context is β_i c_i with β_i = σ(w_βᵀ q_i + b_β), q_i the attention's query
            (s_{i-1} in Bahdanau style); needs attention.
        doubly_stochastic_weight (`float`, *optional*, defaults to 0.0):
            λ ≥ 0 of Xu et al.'s doubly stochastic regulariser λ Σ_j (1 − Σ_i α_ij)² over the real source positions
            (image regions) j, per target token, added to the training loss and reported as the output's
            ``doubly_stochastic_loss``; needs attention.
        use_coverage (`bool`, *optional*, defaults to `False`):
            Add the coverage c_ij = Σ_{i'<i} α_i'j to the additive score, e = vᵀ tanh(W q + U h_j + w_c c_ij)
            (Tu et al. 2016; See et al. 2017); needs ``attention_type`` "additive", "concat" or "location_aware".
        coverage_loss_weight (`float`, *optional*, defaults to 0.0):
            λ ≥ 0 of See et al.'s coverage loss λ Σ_j min(α_ij, c_ij) per target token, added to the training loss
            and reported as the output's ``coverage_loss``; needs attention.
        copy_attention (`bool`, *optional*, defaults to `False`):
            See et al.'s pointer-generator output: P(w) = p_gen P_vocab(w) + (1 − p_gen) Σ_{j: x_j = w} α_ij with
            p_gen = σ(w_cᵀ c_i + w_sᵀ s_i + w_xᵀ E y_{i-1} + b), so the model can copy source tokens, also ones the
            vocabulary lacks (``copying``: ``copy_input_ids``, ids from ``vocab_size`` up); needs attention.
        decoder_style (`str`, *optional*, defaults to `"bahdanau"`):
            A name in ``axes.DECODER_STYLES``: ``"bahdanau"`` attends with s_{i-1}, then updates; ``"luong"``
            updates, then attends with h_t.
        input_feeding (`bool`, *optional*, defaults to `False`):
            Luong's input feeding (h̃_{t-1} fed to the next step); needs ``decoder_style="luong"`` and attention.
        context_mode (`str`, *optional*, defaults to `"cho"`):
            Without attention, a name in ``axes.CONTEXT_MODES``: ``"cho"`` (the summary C at every step and at
            the output) or ``"sutskever"`` (the encoder only initialises the decoder).
        bridge (`str`, *optional*, defaults to `"tanh"`):
            The decoder's initial state, a name in ``axes.BRIDGES`` (zero, last, tanh, mean).
        deep_output (`str`, *optional*, defaults to `"maxout"`):
            The layer before the vocabulary projection, a name in ``axes.DEEP_OUTPUTS`` (none, tanh, maxout).
        output_size (`int`, *optional*):
            Size of the pre-output vectors t_i the vocabulary projection reads. Default: ``embedding_size``.
        tie_word_embeddings (`bool`, *optional*, defaults to `False`):
            Share the decoder embedding with the output projection; needs ``output_size == embedding_size``.
        use_cache (`bool`, *optional*, defaults to `True`):
            Whether ``forward`` returns the decoding state (its ``cache``; ``past_key_values`` before transformers
            5.24).
        is_encoder_decoder (`bool`, *optional*, defaults to `True`):
            transformers' flag for generate(); leave it True.
        bos_token_id (`int`, *optional*, defaults to 1):
            Beginning-of-sequence token, in [0, vocab_size) or None.
        unk_token_id (`int`, *optional*, defaults to 3):
            The unknown token, in [0, vocab_size) or None; with ``copy_attention`` a copied word the vocabulary lacks
            is read back by the decoder as this token (See et al.).
        decoder_start_token_id (`int`, *optional*, defaults to 1):
            The decoder's first input token, in [0, vocab_size).
    """

    decoder_layers: int = 1
    attention_type: str = "additive"
    location_filters: int = 10
    location_kernel_size: int = 201
    location_sharpening: float | int = 1.0
    location_smoothing: bool = False
    attention_scope: str = "global"
    local_window: int = 10
    monotonic_bias_init: float | int = -4.0
    monotonic_noise_std: float | int = 1.0
    attention_mode: str = "soft"
    hard_attention_temperature: float | int = 1.0
    reinforce_baseline_decay: float | int = 0.9
    reinforce_baseline: str = "sequence"
    reinforce_entropy_weight: float | int = 0.0
    reinforce_expected_context_probability: float | int = 0.0
    context_gate: bool = False
    doubly_stochastic_weight: float | int = 0.0
    use_coverage: bool = False
    coverage_loss_weight: float | int = 0.0
    copy_attention: bool = False
    decoder_style: str = "bahdanau"
    input_feeding: bool = False
    context_mode: str = "cho"
    bridge: str = "tanh"
    deep_output: str = "maxout"
    output_size: int | None = None
    tie_word_embeddings: bool = False
    use_cache: bool = True
    is_encoder_decoder: bool = True
    bos_token_id: int | None = 1
    unk_token_id: int | None = 3
    decoder_start_token_id: int | None = 1

    def _fill_decoder_defaults(self) -> None:
        """``output_size`` left None is ``embedding_size``."""
        if self.output_size is None:
            self.output_size = self.embedding_size

    def _validate_decoder(self) -> None:
        """The decoder's fields and the combinations they refuse (with ``CommonFields`` and the annotation size);
        ValueError naming the field."""
        for field in ("decoder_layers", "output_size", "local_window", "location_filters", "location_kernel_size"):
            _require_positive(field, getattr(self, field))
        for registry in AXES:
            registry.check(getattr(self, registry.field))
        _require_choice("reinforce_baseline", self.reinforce_baseline, tuple(REINFORCE_BASELINES))
        _require_token_ids(self, ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id",
                                  "unk_token_id"))
        same_size = self.attention_type in ATTENTION_SCORES.flags["same_size_required"]
        if same_size and self.encoder_output_size != self.hidden_size:
            raise ValueError(
                f"`attention_type={self.attention_type!r}` compares the decoder state with the annotations, so "
                f"`hidden_size` ({self.hidden_size}) must equal the annotation size `encoder_hidden_size` x "
                f"directions ({self.encoder_output_size}); use 'general' or 'additive' for different sizes."
            )
        _refuse_fields_not_read(self)
        self._validate_attention_options()
        if self.input_feeding and (self.decoder_style != "luong" or self.attention_type == "none"):
            raise ValueError(
                "`input_feeding=True` feeds Luong's attentional vector back into the decoder: it needs "
                "`decoder_style='luong'` and an `attention_type` other than 'none'."
            )
        if self.bridge == "last" and self.encoder_output_size != self.hidden_size:
            raise ValueError(
                f"`bridge='last'` copies the encoder's final states (size {self.encoder_output_size} = "
                f"`encoder_hidden_size` x directions) into the decoder: they must match `hidden_size` "
                f"({self.hidden_size}); use bridge 'tanh' or 'mean' to project them."
            )
        if self.tie_word_embeddings and self.output_size != self.embedding_size:
            raise ValueError(
                f"`tie_word_embeddings=True` shares the decoder embedding with the output projection: "
                f"`output_size` ({self.output_size}) must equal `embedding_size` ({self.embedding_size})."
            )

    def _validate_attention_options(self) -> None:
        """The scope, mode and coverage fields, and the combinations they refuse."""
        if self.location_kernel_size % 2 == 0:
            raise ValueError(f"`location_kernel_size` must be odd (the location filters are centred on each source "
                             f"position), got {self.location_kernel_size}.")
        if self.location_smoothing and self.attention_scope == "monotonic":
            raise ValueError("`location_smoothing=True` puts the logistic sigmoid in place of the softmax's "
                             "exponential, but `attention_scope='monotonic'` takes no softmax (its stopping "
                             "probabilities are sigmoids already); use the 'global', 'local-m' or 'local-p' scope.")
        if self.attention_scope == "monotonic" and self.attention_type == "multihead":
            raise ValueError("`attention_scope='monotonic'` stops at one source position per step, but "
                             "`attention_type='multihead'` scores each head on its own; use one head's score (e.g. "
                             "'scaled_dot' or 'general') or another scope.")
        if self.attention_mode == "hard_reinforce" and self.attention_type == "multihead":
            raise ValueError("`attention_mode='hard_reinforce'` scores the one position each step samples, but "
                             "`attention_type='multihead'` samples one per head and pools their average; use "
                             "`attention_mode='hard'` (straight-through) with it, or a one-head score.")
        if self.attention_mode == "hard_reinforce" and self.copy_attention:
            raise ValueError("`attention_mode='hard_reinforce'` rewards the sampled positions with log p(y), but with "
                             "`copy_attention=True` a word copied from any other position then has probability 0 "
                             "(log p = −∞); use `attention_mode='hard'` (straight-through) or soft attention with it.")
        if self.attention_scope == "monotonic" and self.attention_mode != "soft":
            raise ValueError(f"`attention_mode={self.attention_mode!r}` with `attention_scope='monotonic'`: monotonic "
                             "attention is already hard at inference and trains on its expected alignment; use "
                             "`attention_mode='soft'` (hard works with the global and local scopes).")
        if self.use_coverage and self.attention_type not in ("additive", "concat", "location_aware"):
            raise ValueError(f"`use_coverage=True` adds w_c c_ij inside the additive score's tanh, but "
                             f"`attention_type={self.attention_type!r}` has no such term; use 'additive', 'concat' or "
                             "'location_aware' (GNMT's coverage penalty in generate() works with every score).")
        if self.copy_attention and self.unk_token_id is None:
            raise ValueError("`copy_attention=True` feeds a copied word the vocabulary lacks back to the decoder as "
                             "the unknown token: set `unk_token_id` (the tokenizer's unk id).")


@strict
class BahdanauConfig(EncoderFields, DecoderFields, SavesModelCode, PreTrainedConfig):
    r"""Configuration of an RNN encoder–attention–decoder model (the seq2seq model): the encoder's fields
    (``EncoderFields``) and the decoder's (``DecoderFields``). The tagger and the classifiers read
    ``BahdanauEncoderConfig`` (``configuration_encoder_only``), with their own fields (``ClassifierFields``) and
    without the decoder's; a ``BahdanauConfig`` given to them (a folder saved by hf_bahdanau 0.1.0, a seq2seq
    checkpoint) is upgraded to one. A config.json saved by 0.1.0 carries their fields at their defaults: they
    are dropped on load (``drop_classifier_fields``; another value is a ValueError), and a tagger's or a
    classifier's loads as their ``BahdanauEncoderConfig`` (``from_dict``).

    Use ``BahdanauConfig.from_preset(name, **overrides)`` for the classic systems (``PRESETS``). Every field is
    checked by ``validate_architecture`` (a ``ValueError`` naming it; a float must be finite), at construction and
    again when a model is built. Fields that pick one of several implementations accept the names their axis declares;
    ``axes_table()`` lists them with their meaning.
    """

    model_type = "bahdanau"
    default_auto_map = AUTO_MAP
    # the cache's names from transformers 5.24 / before; the scalar losses Trainer must not gather as predictions
    keys_to_ignore_at_inference = ["cache", "past_key_values", "coverage_loss", "self_attention_penalty",
                                   "doubly_stochastic_loss", "reinforce_loss"]
    attribute_map = {"num_hidden_layers": "encoder_layers"}  # as BART: transformers' generic code reads this name

    def __post_init__(self, **kwargs):
        self._fill_encoder_defaults()
        drop_classifier_fields(self, kwargs)
        self._fill_decoder_defaults()
        if getattr(self, "auto_map", None) is None:
            self.auto_map = dict(self.default_auto_map)
        super().__post_init__(**kwargs)
        self.validate_architecture()

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> PreTrainedConfig:
        """transformers' ``from_dict``; the config.json of a tagger or a classifier saved by hf_bahdanau 0.1.0 (model
        type "bahdanau", its ``architectures`` naming their head) is read by ``BahdanauEncoderConfig``, upgraded."""
        if set(config_dict.get("architectures") or ()) & set(ENCODER_ONLY_HEADS):
            from .configuration_encoder_only import BahdanauEncoderConfig  # only then: it imports this module
            return BahdanauEncoderConfig.from_dict(config_dict, **kwargs)
        return super().from_dict(config_dict, **kwargs)

    def validate_architecture(self) -> None:
        """Check every field and combination; run at construction and again when a model is built from the config
        (a field may have been changed in between). Raises ValueError naming the field."""
        self._validate_encoder(score_fields=("attention_type", "encoder_self_attention"))
        self._validate_decoder()
        _require_labels(self)
        if self.bridge == "last" and self.encoder_layers != self.decoder_layers:
            raise ValueError(
                f"`bridge='last'` copies each encoder layer's final state into the same decoder layer: "
                f"`encoder_layers` ({self.encoder_layers}) must equal `decoder_layers` ({self.decoder_layers}); "
                "use bridge 'tanh', 'mean' or 'zero' otherwise."
            )


# How a config's error message names the values of a field's annotation ("an int or None").
TYPE_WORDS = {int: ("an int", "ints"), float: ("a number", "numbers"), bool: ("True or False", "bools"),
              str: ("a string", "strings"), dict: ("a dict", "dicts"), type(None): ("None", "Nones")}


def _describe_type(annotation: Any, plural: bool = False) -> str:
    """The values an annotation admits, in words: ``int | None`` -> "an int or None", ``list[int]`` -> "a list of
    ints" (``plural``: "lists of ints"); a number field (``float | int``) is "a number"."""
    if isinstance(annotation, str):  # transformers' own fields are annotated as text
        return f"of type {annotation}"
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is list:
        return f"{'lists' if plural else 'a list'} of {_describe_type(arguments[0], plural=True)}"
    if arguments and typing.get_origin(annotation) is not dict:  # a union
        words = [_describe_type(option, plural) for option in arguments if not (option is int and float in arguments)]
        return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
    annotation = typing.get_origin(annotation) or annotation
    return TYPE_WORDS[annotation][plural] if annotation in TYPE_WORDS else f"of type {annotation.__name__}"


def _admits(annotation: Any, value: Any) -> bool:
    """Whether ``value`` is of a (non-text) annotation's type, as ``@strict`` reads it: a bool is not an int."""
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is list:
        return isinstance(value, list) and all(_admits(arguments[0], item) for item in value)
    if arguments and typing.get_origin(annotation) is not dict:  # a union
        return any(_admits(option, value) for option in arguments)
    if annotation in (int, float):
        return isinstance(value, (int, float) if annotation is float else int) and not isinstance(value, bool)
    return isinstance(value, typing.get_origin(annotation) or annotation)


def _first_bad_entry(annotation: Any, value: Any) -> str:
    """``": entry i is x (type)"`` for the first entry of a list ``value`` that a list annotation does not admit;
    "" for none."""
    options = typing.get_args(annotation) if typing.get_origin(annotation) is not list else (annotation,)
    for option in options:
        if typing.get_origin(option) is list and isinstance(value, list):
            for index, item in enumerate(value):
                if not _admits(typing.get_args(option)[0], item):
                    return f": entry {index} is {item!r} ({type(item).__name__})"
    return ""


def _require_num_labels(value: Any) -> None:
    """``num_labels``, the labels (answers) of a classifier head: a positive int; TypeError or ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"`num_labels` must be a positive integer (the labels of the classifier head), got {value!r} "
                        f"({type(value).__name__}).")
    if value < 1:
        raise ValueError(f"`num_labels` must be a positive integer (the labels of the classifier head), got {value}.")


def _require_labels(config: Any) -> None:
    """A config's ``id2label`` names at least one label (a classifier head with none has logits [batch, 0])."""
    if config.id2label is not None and not config.id2label:
        raise ValueError(f"`id2label` must name at least one label (the classifier head's outputs), got "
                         f"{config.id2label!r}.")


def _builtin_errors(strict_setattr):
    """``@strict`` reports a value of the wrong type as huggingface_hub's ``StrictDataclassFieldValidationError``, which
    is neither a TypeError nor a ValueError: re-raise it as the error that caused it, with the package's message naming
    the field, what it allows (from its annotation) and the value, so a bad config value is caught and read like every
    other bad argument. ``num_labels`` (a property of transformers' config, which no annotation checks) must be a
    positive int."""

    @functools.wraps(strict_setattr)
    def setattr_checked(self, name: str, value: Any) -> None:
        if name == "num_labels":
            _require_num_labels(value)
        try:
            strict_setattr(self, name, value)
        except StrictDataclassFieldValidationError as error:
            if not isinstance(error.__cause__, TypeError):
                raise type(error.__cause__)(str(error)) from error
            annotation = {config_field.name: config_field.type for config_field in dataclasses.fields(self)}[name]
            raise TypeError(f"`{name}` must be {_describe_type(annotation)}, got {value!r} "
                            f"({type(value).__name__}){_first_bad_entry(annotation, value)}.") from error

    return setattr_checked


BahdanauConfig.__setattr__ = _builtin_errors(BahdanauConfig.__setattr__)


@strict
class BahdanauDecoderConfig(CommonFields, DecoderFields, PreTrainedConfig):
    r"""Configuration of the recurrent decoder alone, a sub-config: the image-to-text config's ``decoder``
    (``configuration_image_to_text``), beside its image encoder's. Its fields are the decoder's (``DecoderFields``),
    those both sides read (``CommonFields``: vocabulary, sizes, cell, the scores' parameters, special ids) and the size
    of the annotations it attends over; validated as ``BahdanauConfig`` validates them.

    Args:
        encoder_output_size (`int`, *optional*):
            D, the size of the annotations the decoder attends over (its encoder's output). Default: ``hidden_size``.
    """

    model_type = "bahdanau-decoder"
    attribute_map = {"num_hidden_layers": "decoder_layers"}  # transformers' generic code reads this name

    encoder_output_size: int | None = None

    def __post_init__(self, **kwargs):
        if self.encoder_output_size is None:
            self.encoder_output_size = self.hidden_size
        self._fill_common_defaults()
        self._fill_decoder_defaults()
        super().__post_init__(**kwargs)
        self.validate_architecture()

    def validate_architecture(self) -> None:
        """``CommonFields``', the annotation size's and ``DecoderFields``' checks; ValueError naming the field."""
        self._validate_common(score_fields=("attention_type",))
        _require_positive("encoder_output_size", self.encoder_output_size)
        self._validate_decoder()


BahdanauDecoderConfig.__setattr__ = _builtin_errors(BahdanauDecoderConfig.__setattr__)


@strict
class BahdanauPointerConfig(BahdanauConfig):
    r"""Configuration of a pointer network (``modeling_pointer.BahdanauForPointerNetwork``; Vinyals et al. 2015): the
    fields of ``BahdanauConfig``, read the same way, plus ``input_feature_size``. The decoder's attention over the
    inputs is the output distribution, so it is Luong style (it points with the state that has read the previous
    output) and global soft attention without coverage or copying; any score.

    Args:
        input_feature_size (`int`, *optional*):
            F of ``input_features`` [batch, inputs, F] (e.g. 2 for points in the plane), embedded by a linear map;
            None: the inputs are token ids (``input_ids``, ``vocab_size`` of them).
        vocab_size (`int`, *optional*, defaults to 1):
            The input vocabulary of a model that reads ``input_ids``; unused with ``input_feature_size``.
        decoder_style (`str`, *optional*, defaults to `"luong"`):
            Must be ``"luong"``.
        input_feeding (`bool`, *optional*, defaults to `False`):
            Feed h̃_{i-1} = tanh(W_c [c_{i-1}; d_{i-1}]) (``deep_output``) to the next step beside the input pointed
            at; without it h̃ is not read by the pointer and its weights get no gradient.
    """

    model_type = "bahdanau-pointer"
    default_auto_map = POINTER_AUTO_MAP

    input_feature_size: int | None = None
    vocab_size: int = 1
    decoder_style: str = "luong"
    deep_output: str = "tanh"
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = 0
    unk_token_id: int | None = None
    decoder_start_token_id: int | None = 0

    def validate_architecture(self) -> None:
        """``BahdanauConfig.validate_architecture`` and what a pointer needs; ValueError naming the field."""
        super().validate_architecture()
        if self.input_feature_size is not None:
            _require_positive("input_feature_size", self.input_feature_size)
        if self.meta_embedding_sources is not None:
            raise ValueError(f"`meta_embedding_sources={self.meta_embedding_sources!r}`: a pointer network's decoder "
                             "reads back the embedded input it pointed at, one embedding per input, so it has no "
                             "meta-embedding; leave it None (the seq2seq model, the tagger and the classifiers have one).")
        if self.decoder_style != "luong" or self.attention_type == "none":
            raise ValueError(f"A pointer network points with its decoder's attention after the decoder has read the "
                             f"input it pointed at last: it needs `decoder_style='luong'` and an `attention_type` "
                             f"other than 'none', got {self.decoder_style!r} and {self.attention_type!r}.")
        changed = _fields_set(self, ("attention_scope", "attention_mode", "use_coverage", "coverage_loss_weight",
                                     "copy_attention"))
        if changed:
            raise ValueError(f"A pointer network's output distribution is the softmax of its attention scores over "
                             f"all inputs: {', '.join(changed)} cannot be used with it (leave the default).")
        if self.attention_type in ATTENTION_SCORES.flags["reads_previous_alignment"]:
            raise ValueError(f"A pointer network scores all its steps at once from the decoder states, but "
                             f"`attention_type={self.attention_type!r}` reads each step's previous alignment; use "
                             f"another score (e.g. 'additive').")


BahdanauPointerConfig.__setattr__ = _builtin_errors(BahdanauPointerConfig.__setattr__)

__all__ = ["AXES", "BahdanauConfig", "BahdanauDecoderConfig", "BahdanauPointerConfig", "CLASSIFIER_PIPELINES",
           "CUSTOM_PIPELINES", "ClassifierFields", "CommonFields", "DecoderFields", "EncoderFields",
           "drop_classifier_fields",
           "HEAD_PIPELINES", "PIPELINE_TASK", "POINTER_PIPELINES", "PRESETS", "REINFORCE_BASELINES",
           "TAGGER_PIPELINES", "axes_table",
           "name_head_pipelines"]
