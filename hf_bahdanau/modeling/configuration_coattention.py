"""Configuration of the co-attention models (Lu et al. 2016, *Hierarchical Question-Image Co-Attention for Visual
Question Answering*): a question read at up to three levels (``question_levels.py``), a context (an image's regions
here; a second text in the text-pair head), the two attending to each other at every level (``co_attention.py``), and
an answer chosen from a fixed answer vocabulary (``id2label``). Loading a config imports no model code.
"""

import dataclasses
import functools
import logging
from typing import Any

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from .axes import CO_ATTENTIONS, QUESTION_LEVELS
from .configuration_bahdanau import _builtin_errors, _require_labels, _require_positive, _require_real
from .configuration_image_encoder import BahdanauImageEncoderConfig, ImageEncoderFields
from .remote_code import SavesModelCode
from .old_names import old_names

logger = logging.getLogger(__name__)

__all__ = ["CO_ATTENTION_INPUTS", "SUB_CONFIG_OF", "VQA_AUTO_MAP", "VQA_PIPELINES", "VQA_SUB_CONFIG_FIELDS",
           "BahdanauCoAttentionConfig", "BahdanauVisualQuestionAnsweringConfig"]

VQA_AUTO_MAP = {
    "AutoConfig": "configuration_coattention.BahdanauVisualQuestionAnsweringConfig",
    "AutoModel": "modeling_coattention.BahdanauVisualQuestionAnsweringModel",
    "AutoModelForVisualQuestionAnswering": "modeling_coattention.BahdanauForVisualQuestionAnswering",
}
# config.json's ``custom_pipelines``: transformers 5 removed its visual-question-answering pipeline; ours is saved
VQA_PIPELINES = {"visual-question-answering": {"impl": "pipeline_vqa.BahdanauVisualQuestionAnsweringPipeline",
                                               "pt": ["AutoModelForVisualQuestionAnswering"], "type": "multimodal"}}
# What the answer reads: both inputs, or one of them alone (the baselines of the paper's tables)
CO_ATTENTION_INPUTS = ("both", "question", "context")


@strict
class BahdanauCoAttentionConfig(SavesModelCode, PreTrainedConfig):
    r"""The fields every co-attention model shares: the question's words, the levels, the form of co-attention and the
    answer. A subclass adds its context encoder (the passage's, ``BahdanauTextCoAttentionConfig``); the VQA config
    holds one as its ``text_config`` (model type ``"bahdanau-coattention"``), beside its image encoder's.

    At each level l of ``question_levels`` the question's features Q^l [B, T, d] and the context's V [B, N, d]
    co-attend into q̂^l, v̂^l, and the answer reads them level by level (Lu et al.'s recursive MLP):

        h^1 = tanh(W_1 (q̂^1 + v̂^1)),   h^l = tanh(W_l [q̂^l + v̂^l; h^{l−1}]),   p = softmax(W_h h^L)

    Args:
        vocab_size (`int`, *optional*, defaults to 1000):
            Word ids of the question.
        hidden_size (`int`, *optional*, defaults to 128):
            d: the word embeddings, every level's features and the context's (the paper: 512).
        attention_size (`int`, *optional*, defaults to 128):
            k, the size of the co-attention's hidden layers H^q, H^v.
        coattention (`str`, *optional*, defaults to `"parallel"`):
            A name of ``axes.CO_ATTENTIONS``: ``"parallel"``, ``"alternating"``, ``"context"`` (the context attended,
            guided by the question's mean) or ``"none"`` (means of both).
        question_levels (`list[str]`, *optional*, defaults to `["word", "phrase", "question"]`):
            The levels co-attended, in the order of ``QUESTION_LEVELS``: words, n-gram phrases, the LSTM's states.
        phrase_windows (`list[int]`, *optional*, defaults to `[1, 2, 3]`):
            The n-gram sizes of the phrase level's convolutions (max over them at each word).
        inputs (`str`, *optional*, defaults to `"both"`):
            ``"both"``; or a baseline reading one input: ``"question"`` (v̂ = 0, no context passed) or ``"context"``
            (q̂ = 0, no question passed), with ``coattention="none"``.
        answer_hidden_size (`int`, *optional*, defaults to 256):
            The size of h^l (the paper: 1024).
        dropout (`float`, *optional*, defaults to 0.1):
            Dropout on the features entering the co-attention and on each h^l.
        init_std (`float`, *optional*, defaults to 0.1):
            The word embeddings are drawn from N(0, init_std²); linear maps are Xavier-uniform, the LSTM's recurrent
            weights orthogonal.
        pad_token_id (`int`, *optional*, defaults to 0):
            The padding word id (padding is read from the masks; this id is what collators fill with).
    """

    model_type = "bahdanau-coattention"
    keys_to_ignore_at_inference = ["hidden_states", "question_attentions", "context_attentions", "affinities",
                                   "grid_size"]

    vocab_size: int = 1000
    hidden_size: int = 128
    attention_size: int = 128
    coattention: str = "parallel"
    question_levels: list[str] = dataclasses.field(default_factory=lambda: list(QUESTION_LEVELS))
    phrase_windows: list[int] = dataclasses.field(default_factory=lambda: [1, 2, 3])
    inputs: str = "both"
    answer_hidden_size: int = 256
    dropout: float | int = 0.1
    init_std: float | int = 0.1
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        if getattr(self, "auto_map", None) is None and getattr(self, "default_auto_map", None):
            self.auto_map = dict(self.default_auto_map)
        super().__post_init__(**kwargs)
        self.validate_architecture()

    def validate_architecture(self) -> None:
        """Check every field; ValueError naming the field, the value and what is allowed."""
        for field in ("vocab_size", "hidden_size", "attention_size", "answer_hidden_size"):
            _require_positive(field, getattr(self, field))
        CO_ATTENTIONS.check(self.coattention)
        for field in ("dropout", "init_std"):
            _require_real(field, getattr(self, field))
        levels = self.question_levels
        if not levels or any(level not in QUESTION_LEVELS for level in levels) or levels != sorted(
                set(levels), key=QUESTION_LEVELS.index):
            raise ValueError(f"`question_levels` must be one or more of {list(QUESTION_LEVELS)}, each once, in that "
                             f"order; got {levels!r}.")
        bad = [(index, size) for index, size in enumerate(self.phrase_windows) if size < 1]
        if not self.phrase_windows or bad:
            raise ValueError(f"`phrase_windows` must be one or more positive n-gram sizes, got {self.phrase_windows!r}"
                             + (f": entry {bad[0][0]} is {bad[0][1]!r}." if bad else "."))
        if self.inputs not in CO_ATTENTION_INPUTS:
            raise ValueError(f"`inputs` must be one of {list(CO_ATTENTION_INPUTS)}, got {self.inputs!r}.")
        if self.inputs != "both" and self.coattention != "none":
            raise ValueError(f"`inputs={self.inputs!r}` reads one input, so nothing attends across two: set "
                             f"`coattention='none'` (got {self.coattention!r}).")
        _require_labels(self)


# The fields of the VQA config's sub-configs, by sub-config: where a field given flat goes (the tokenizer's bos and eos
# ids, which the model does not read, go with the question's pad id, where Trainer aligns them)
VQA_SUB_CONFIG_FIELDS = {
    "vision_config": tuple(config_field.name for config_field in dataclasses.fields(ImageEncoderFields)),
    "text_config": tuple(config_field.name for config_field in dataclasses.fields(BahdanauCoAttentionConfig)
                         if config_field.name not in {base.name for base in dataclasses.fields(PreTrainedConfig)})
    + ("bos_token_id", "eos_token_id"),
}
SUB_CONFIG_OF = {name: key for key, names in VQA_SUB_CONFIG_FIELDS.items() for name in names}  # field -> sub-config


@strict
class BahdanauVisualQuestionAnsweringConfig(SavesModelCode, PreTrainedConfig):
    r"""Configuration of ``BahdanauForVisualQuestionAnswering``: a question [B, T] and an image [B, C, H, W] -> an
    answer of ``num_labels`` (``id2label``). A composed config, as transformers' vision–language ones: the image is
    Show, Attend and Tell's grid of N region annotations a_n of size D (``vision_config``, ``image_encoder.py``), made
    question-sized, v_n = tanh(W_i a_n + b_i) [B, N, d]; the question, the co-attention and the answer MLP are
    ``text_config``'s; the answers (``id2label``) are this config's own.

    Built flat (``BahdanauVisualQuestionAnsweringConfig(hidden_size=…, cnn_channels=…)``, or a flat config.json saved
    by hf_bahdanau 0.1.0), each field goes to the sub-config that declares it (``VQA_SUB_CONFIG_FIELDS``), over the
    values of a sub-config given with it; a field neither declares is a ValueError naming it. Reading or setting a
    sub-config's field on this config (``config.inputs``) reads or sets the sub-config's, as the image-to-text
    config does.

    Args:
        vision_config (`BahdanauImageEncoderConfig` or `dict`, *optional*):
            The image encoder (``ImageEncoderFields``); default: its defaults with ``num_channels=3`` (RGB).
        text_config (`BahdanauCoAttentionConfig` or `dict`, *optional*):
            The question's words and levels, the co-attention, the answer MLP, and the tokenizer's special ids
            (``bos_token_id``, ``eos_token_id``, which Trainer aligns on ``get_text_config()``).
    """

    model_type = "bahdanau-vqa"
    default_auto_map = VQA_AUTO_MAP
    sub_configs_defaults = {
        "vision_config": SubConfigSpec(config_class=BahdanauImageEncoderConfig, init_kwargs={"num_channels": 3}),
        "text_config": SubConfigSpec(config_class=BahdanauCoAttentionConfig),
    }
    keys_to_ignore_at_inference = BahdanauCoAttentionConfig.keys_to_ignore_at_inference

    vision_config: BahdanauImageEncoderConfig | dict | None = None
    text_config: BahdanauCoAttentionConfig | dict | None = None

    def __post_init__(self, **kwargs):
        for key, names in VQA_SUB_CONFIG_FIELDS.items():
            flat = {name: kwargs.pop(name) for name in names if name in kwargs}
            if flat:
                given = getattr(self, key)
                given = given.to_dict() if isinstance(given, PreTrainedConfig) else given
                setattr(self, key, {**(self.sub_configs_defaults[key].init_kwargs if given is None else given), **flat})
        if getattr(self, "auto_map", None) is None:
            self.auto_map = dict(self.default_auto_map)
        if not getattr(self, "custom_pipelines", None):
            self.custom_pipelines = VQA_PIPELINES
        super().__post_init__(**kwargs)
        unknown = sorted(name for name in vars(self) if not name.startswith("_") and name not in _OWN_ATTRIBUTES)
        if unknown:
            raise ValueError(f"{', '.join(f'`{name}`' for name in unknown)}: not a field of "
                             f"BahdanauVisualQuestionAnsweringConfig nor of its sub-configs; their fields are "
                             f"{ {key: list(names) for key, names in VQA_SUB_CONFIG_FIELDS.items()} }.")
        self.validate_architecture()

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> PreTrainedConfig:
        """transformers' ``from_dict``; a flat dict (a config.json saved by hf_bahdanau 0.1.0) is routed to the
        sub-configs, with one log line, and so are sub-configs' fields among ``kwargs``
        (``from_pretrained(folder, inputs="question")``)."""
        flat = [name for name in config_dict if name in SUB_CONFIG_OF]
        if flat:
            logger.warning("Upgraded a flat 'bahdanau-vqa' config (hf_bahdanau 0.1.0) to its sub-configs "
                           "`vision_config` and `text_config` (%d fields moved). Save the model again to store the "
                           "new config.", len(flat))
        overrides = {name: kwargs.pop(name) for name in list(kwargs) if name in SUB_CONFIG_OF}
        return super().from_dict({**config_dict, **overrides}, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """A sub-config's field, read from it (only called for a name this config does not hold)."""
        sub_config = self.__dict__.get(SUB_CONFIG_OF.get(name))
        if not isinstance(sub_config, PreTrainedConfig):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(sub_config, name)

    def validate_architecture(self) -> None:
        """Check both sub-configs (a field may have been changed since they were built) and the answers; ValueError
        naming the field."""
        self.vision_config.validate_architecture()
        self.text_config.validate_architecture()
        _require_labels(self)


BahdanauCoAttentionConfig.__setattr__ = _builtin_errors(BahdanauCoAttentionConfig.__setattr__)


def _to_sub_configs(setattr_checked):
    """Setting a field of a VQA sub-config on the VQA config (``config.inputs = …``) sets the sub-config's (checked
    by its class), not a new attribute no model reads; the rest as ``setattr_checked``."""

    @functools.wraps(setattr_checked)
    def setattr_composed(self, name: str, value: Any) -> None:
        sub_config = self.__dict__.get(SUB_CONFIG_OF.get(name))
        if isinstance(sub_config, PreTrainedConfig):
            setattr(sub_config, name, value)
        else:
            setattr_checked(self, name, value)

    return setattr_composed


BahdanauVisualQuestionAnsweringConfig.__setattr__ = _to_sub_configs(
    _builtin_errors(BahdanauVisualQuestionAnsweringConfig.__setattr__))
# what a VQA config holds besides its dataclass fields: what transformers and ``SavesModelCode`` write (and a loaded
# config.json's model type)
_OWN_ATTRIBUTES = {config_field.name for config_field in dataclasses.fields(BahdanauVisualQuestionAnsweringConfig)} | {
    "auto_map", "custom_pipelines", "model_type"}


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "CoAttentionConfig": BahdanauCoAttentionConfig,
    "VisualQuestionAnsweringConfig": BahdanauVisualQuestionAnsweringConfig,
})
