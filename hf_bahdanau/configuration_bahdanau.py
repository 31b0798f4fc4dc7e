"""Configuration of the RNN encoder–attention–decoder family.

Every architectural choice is an independent field (cell, score function, decoder style,
bridge, deep output); each is validated once, in ``__post_init__``. The classic systems of
the seeds are named presets: plain data, never subclasses.
"""

import dataclasses
import functools
import os
import shutil
from pathlib import Path
from typing import Any

from huggingface_hub.dataclasses import strict
from huggingface_hub.errors import StrictDataclassFieldValidationError
from transformers import PreTrainedConfig
from transformers.dynamic_module_utils import get_relative_import_files

RNN_TYPES = ("gru", "lstm", "rnn")
ATTENTION_TYPES = (
    "none",
    "additive",
    "concat",
    "dot",
    "general",
    "scaled_dot",
    "location",
    "multihead",
    "gaussian_kernel",
)
SAME_SIZE_ATTENTION = ("dot", "scaled_dot", "gaussian_kernel")
DECODER_STYLES = ("bahdanau", "luong")
CONTEXT_MODES = ("cho", "sutskever")
BRIDGES = ("zero", "last", "tanh", "mean")
DEEP_OUTPUTS = ("none", "tanh", "maxout")
# the tagger: "sentence" = the seed's one distribution over the sentence; else e_tj = score(h_t, h_j)
TOKEN_ATTENTION_TYPES = ("sentence", *(name for name in ATTENTION_TYPES if name != "none"))

AUTO_MAP = {
    "AutoConfig": "configuration_bahdanau.BahdanauConfig",
    "AutoModel": "modeling_bahdanau.BahdanauModel",
    "AutoModelForSeq2SeqLM": "modeling_bahdanau.BahdanauForConditionalGeneration",
    "AutoModelForTokenClassification": "modeling_token_classification.BahdanauForTokenClassification",
    "AutoModelForSequenceClassification": "modeling_sequence_classification.BahdanauForSequenceClassification",
}

PIPELINE_TASK = "translation"
# config.json's ``custom_pipelines`` of a seq2seq model: pipeline(model=..., trust_remote_code=True) loads ours
CUSTOM_PIPELINES = {PIPELINE_TASK: {"impl": "pipeline_bahdanau.BahdanauTranslationPipeline",
                                    "pt": ["AutoModelForSeq2SeqLM"], "type": "text"}}

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


def copy_auto_map_code(config: Any, folder: str | os.PathLike) -> None:
    """Copy the module of every class named in ``config.auto_map`` and ``config.custom_pipelines`` (and what each
    imports) from this file's folder into ``folder``."""
    package, folder = Path(__file__).resolve().parent, Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    references = list((getattr(config, "auto_map", None) or {}).values())
    references += [task["impl"] for task in (getattr(config, "custom_pipelines", None) or {}).values()]
    modules = {reference.split("--")[-1].split(".")[0] for reference in references if isinstance(reference, str)}
    for source in (package / f"{module}.py" for module in sorted(modules)):
        if source.is_file():  # a remote-code cache holds only the modules fetched so far
            for path in (source, *map(Path, get_relative_import_files(source))):
                shutil.copyfile(path, folder / path.name)


def _require_choice(field: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"`{field}` must be one of {list(allowed)}, got {value!r}.")


def _require_positive(field: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"`{field}` must be a positive integer, got {value}.")


@strict
class BahdanauConfig(PreTrainedConfig):
    r"""Configuration of an RNN encoder–attention–decoder model.

    Sizes: the encoder RNN has ``encoder_hidden_size`` units per direction, so its annotations
    h_j have ``encoder_output_size = encoder_hidden_size * (2 if bidirectional else 1)``; the
    decoder state s_i has ``hidden_size``; the vector fed to the vocabulary projection has
    ``output_size`` (set it to ``embedding_size`` to tie the output and decoder embeddings).

    Axes (each validated here): ``rnn_type`` {gru, lstm, rnn}; ``attention_type`` {none,
    additive (alias concat), dot, general, scaled_dot, location, multihead, gaussian_kernel};
    ``decoder_style`` {bahdanau: attend with s_{i-1} then update; luong: update then attend};
    ``input_feeding`` (luong only); ``context_mode`` {cho, sutskever} for ``attention_type="none"``;
    ``bridge`` {zero, last, tanh, mean}; ``deep_output`` {none, tanh, maxout}.

    Tagging and classification heads (encoder only; they load a seq2seq checkpoint's encoder):
    ``token_attention_type`` {any score function above (default additive): token t attends e_tj = score(h_t,
    h_j); sentence: seed 000's one α_j = softmax_j(v_aᵀ tanh(U_a h_j + b)) re-weighting each h_j};
    ``classifier_attention_size``
    d_a of u_j = tanh(W h_j + b) (default: annotation size / 2); ``classifier_dropout`` (default ``dropout``);
    ``hierarchical`` (HAN: word-level encoder + attention per sentence, sentence-level encoder + attention);
    ``sentence_separator_token_id`` splits [batch, tokens] input into sentences in hierarchical mode.

    ``max_training_source_length``: the longest source seen in training, in tokens (set by the training scripts);
    decoding warns about longer inputs.

    Use ``BahdanauConfig.from_preset(name, **overrides)`` for the classic systems (``PRESETS``).
    """

    model_type = "bahdanau"
    keys_to_ignore_at_inference = ["past_key_values"]
    attribute_map = {"num_hidden_layers": "encoder_layers"}  # as BART: transformers' generic code reads this name

    vocab_size: int = 1000
    embedding_size: int = 256
    hidden_size: int = 256
    encoder_hidden_size: int | None = None
    encoder_layers: int = 1
    decoder_layers: int = 1
    rnn_type: str = "gru"
    bidirectional: bool = True
    reverse_source: bool = False
    dropout: float | int = 0.0
    attention_type: str = "additive"
    attention_size: int | None = None
    num_attention_heads: int = 1
    max_source_positions: int = 256
    gaussian_kernel_width: float | int = 1.0
    gaussian_kernel_learnable: bool = True
    decoder_style: str = "bahdanau"
    input_feeding: bool = False
    context_mode: str = "cho"
    bridge: str = "tanh"
    deep_output: str = "maxout"
    output_size: int | None = None
    init_std: float | int = 0.1
    tie_word_embeddings: bool = False
    use_cache: bool = True
    is_encoder_decoder: bool = True
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    decoder_start_token_id: int | None = 1
    token_attention_type: str = "additive"
    classifier_attention_size: int | None = None
    classifier_dropout: float | int | None = None
    hierarchical: bool = False
    sentence_separator_token_id: int | None = None
    max_training_source_length: int | None = None

    def __post_init__(self, **kwargs):
        if self.encoder_hidden_size is None:
            self.encoder_hidden_size = self.hidden_size // 2 if self.bidirectional else self.hidden_size
        if self.attention_size is None:
            self.attention_size = self.hidden_size
        if self.output_size is None:
            self.output_size = self.embedding_size
        if self.classifier_attention_size is None:
            self.classifier_attention_size = max(1, self.encoder_output_size // 2)
        if getattr(self, "auto_map", None) is None:
            self.auto_map = dict(AUTO_MAP)
        super().__post_init__(**kwargs)
        self.validate_architecture()

    @property
    def encoder_output_size(self) -> int:
        """Size of an annotation h_j = [->h_j; <-h_j]."""
        return self.encoder_hidden_size * (2 if self.bidirectional else 1)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "BahdanauConfig":
        """Config of a named classic system (see ``PRESETS``), with any field overridden."""
        _require_choice("preset", name, tuple(PRESETS))
        known = {config_field.name for config_field in dataclasses.fields(cls)} | {"num_labels", "output_attentions"}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"{unknown} {'is not a field' if len(unknown) == 1 else 'are not fields'} of "
                             f"{cls.__name__}; its fields are {sorted(known)}.")
        return cls(**{**PRESETS[name], **overrides})

    def save_pretrained(self, save_directory: str | os.PathLike, push_to_hub: bool = False, **kwargs: Any) -> None:
        """``PreTrainedConfig.save_pretrained``; when the code is saved too (``register_for_auto_class``), every
        class in ``auto_map`` gets its code into the folder, not only the model being saved, so each head
        (seq2seq, tagger, classifier) loads from any checkpoint with ``trust_remote_code=True``."""
        if self._auto_class is not None:
            copy_auto_map_code(self, save_directory)
        super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)

    def validate_architecture(self) -> None:
        """Check every field and combination; run at construction and again when a model is built from the config
        (a field may have been changed in between). Raises ValueError naming the field."""
        for field in ("vocab_size", "embedding_size", "hidden_size", "encoder_hidden_size", "encoder_layers",
                      "decoder_layers", "attention_size", "num_attention_heads", "max_source_positions",
                      "output_size", "classifier_attention_size"):
            _require_positive(field, getattr(self, field))
        _require_choice("rnn_type", self.rnn_type, RNN_TYPES)
        _require_choice("attention_type", self.attention_type, ATTENTION_TYPES)
        _require_choice("decoder_style", self.decoder_style, DECODER_STYLES)
        _require_choice("context_mode", self.context_mode, CONTEXT_MODES)
        _require_choice("bridge", self.bridge, BRIDGES)
        _require_choice("deep_output", self.deep_output, DEEP_OUTPUTS)
        _require_choice("token_attention_type", self.token_attention_type, TOKEN_ATTENTION_TYPES)
        if self.max_training_source_length is not None:
            _require_positive("max_training_source_length", self.max_training_source_length)
        if self.num_labels is not None and self.num_labels < 1:
            raise ValueError(f"`num_labels` must be a positive integer, got {self.num_labels}.")
        if self.init_std < 0:
            raise ValueError(f"`init_std` (the standard deviation of the embeddings' initialisation) must be >= 0, "
                             f"got {self.init_std}.")
        for field in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
            value = getattr(self, field)
            for token_id in value if isinstance(value, list) else [value]:
                if token_id is not None and not 0 <= token_id < self.vocab_size:
                    raise ValueError(f"`{field}` must be a token id in [0, vocab_size={self.vocab_size}) (or None), "
                                     f"got {value}.")
        for field in ("dropout", "classifier_dropout"):
            value = getattr(self, field)
            if value is not None and not 0 <= value < 1:
                raise ValueError(f"`{field}` must be in [0, 1), got {value}.")
        if self.sentence_separator_token_id is not None and not 0 <= self.sentence_separator_token_id < self.vocab_size:
            raise ValueError(
                f"`sentence_separator_token_id` must be a token id in [0, vocab_size={self.vocab_size}), "
                f"got {self.sentence_separator_token_id}."
            )
        if self.gaussian_kernel_width <= 0:
            raise ValueError(f"`gaussian_kernel_width` must be positive, got {self.gaussian_kernel_width}.")
        if self.attention_type in SAME_SIZE_ATTENTION and self.encoder_output_size != self.hidden_size:
            raise ValueError(
                f"`attention_type={self.attention_type!r}` compares the decoder state with the annotations, so "
                f"`hidden_size` ({self.hidden_size}) must equal the annotation size `encoder_hidden_size` x "
                f"directions ({self.encoder_output_size}); use 'general' or 'additive' for different sizes."
            )
        if self.attention_type == "multihead" and self.attention_size % self.num_attention_heads:
            raise ValueError(
                f"`attention_size` ({self.attention_size}) must be divisible by `num_attention_heads` "
                f"({self.num_attention_heads})."
            )
        if self.input_feeding and (self.decoder_style != "luong" or self.attention_type == "none"):
            raise ValueError(
                "`input_feeding=True` feeds Luong's attentional vector back into the decoder: it needs "
                "`decoder_style='luong'` and an `attention_type` other than 'none'."
            )
        if self.bridge == "last":
            if self.encoder_layers != self.decoder_layers:
                raise ValueError(
                    f"`bridge='last'` copies each encoder layer's final state into the same decoder layer: "
                    f"`encoder_layers` ({self.encoder_layers}) must equal `decoder_layers` ({self.decoder_layers}); "
                    "use bridge 'tanh', 'mean' or 'zero' otherwise."
                )
            if self.encoder_output_size != self.hidden_size:
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


def _builtin_errors(strict_setattr):
    """``@strict`` reports a value of the wrong type as huggingface_hub's ``StrictDataclassFieldValidationError``, which
    is neither a TypeError nor a ValueError: re-raise it as the error that caused it, with the same message naming the
    field, so a bad config value is caught like every other bad argument."""

    @functools.wraps(strict_setattr)
    def setattr_checked(self, name: str, value: Any) -> None:
        try:
            strict_setattr(self, name, value)
        except StrictDataclassFieldValidationError as error:
            raise type(error.__cause__)(str(error)) from error

    return setattr_checked


BahdanauConfig.__setattr__ = _builtin_errors(BahdanauConfig.__setattr__)

__all__ = ["BahdanauConfig", "CUSTOM_PIPELINES", "PIPELINE_TASK", "PRESETS"]
