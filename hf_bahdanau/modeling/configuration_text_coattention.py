"""Configuration of the text-pair co-attention model: Lu et al.'s (2016) question–context co-attention with a passage
of text as the context (bAbI's stories), answering from a fixed answer vocabulary. Loading a config imports no model
code.
"""

from huggingface_hub.dataclasses import strict

from .configuration_bahdanau import _builtin_errors, _require_positive
from .configuration_coattention import BahdanauCoAttentionConfig
from .old_names import old_names

__all__ = ["CONTEXT_ENCODERS", "TEXT_COATTENTION_AUTO_MAP", "TEXT_COATTENTION_PIPELINES",
           "BahdanauTextCoAttentionConfig"]

TEXT_COATTENTION_AUTO_MAP = {
    "AutoConfig": "configuration_text_coattention.BahdanauTextCoAttentionConfig",
    "AutoModel": "modeling_text_coattention.BahdanauTextCoAttentionModel",
    "AutoModelForSequenceClassification": "modeling_text_coattention.BahdanauForTextPairClassification",
}
# config.json's ``custom_pipelines``: pipeline(model=..., trust_remote_code=True) answers a question about a passage
TEXT_COATTENTION_PIPELINES = {"passage-question-answering": {
    "impl": "pipeline_text_pair.BahdanauPassageQuestionAnsweringPipeline", "pt": ["AutoModelForSequenceClassification"],
    "type": "text"}}
# How the passage's words become its features V [B, N, d] (both over the word embeddings the question shares)
CONTEXT_ENCODERS = {
    "bilstm": "v_n = tanh(W_c [→h_n; ←h_n] + b_c), a one-layer BiLSTM over the passage's word embeddings, "
              "projected to d",
    "embeddings": "v_n = E c_n, the passage's word embeddings themselves (no order seen)",
}


@strict
class BahdanauTextCoAttentionConfig(BahdanauCoAttentionConfig):
    r"""Configuration of ``BahdanauForTextPairClassification``: a question [B, T] and a passage [B, N] (both word ids
    of one vocabulary, one embedding table E) -> an answer of ``num_labels`` (``id2label``). The passage's words are
    the context the question co-attends with (``BahdanauCoAttentionConfig``), read by ``context_encoder``:

        bilstm      v_n = tanh(W_c [→h_n; ←h_n] + b_c),  →h, ←h: an LSTM each way over E c_1 … E c_N (the passage's
                    real words only, so padding on either side gives the same v_n)
        embeddings  v_n = E c_n

    Args (besides ``BahdanauCoAttentionConfig``'s):
        context_encoder (`str`, *optional*, defaults to `"bilstm"`):
            One of ``CONTEXT_ENCODERS``: ``"bilstm"`` (the words in their passage) or ``"embeddings"`` (a bag of
            words).
        context_hidden_size (`int`, *optional*, defaults to 64):
            The BiLSTM's units per direction (``context_encoder="bilstm"``).
    """

    model_type = "bahdanau-text-coattention"
    default_auto_map = TEXT_COATTENTION_AUTO_MAP

    context_encoder: str = "bilstm"
    context_hidden_size: int = 64

    def __post_init__(self, **kwargs):
        if not getattr(self, "custom_pipelines", None):
            self.custom_pipelines = TEXT_COATTENTION_PIPELINES
        super().__post_init__(**kwargs)

    def validate_architecture(self) -> None:
        super().validate_architecture()
        if self.context_encoder not in CONTEXT_ENCODERS:
            raise ValueError(f"`context_encoder` must be one of {list(CONTEXT_ENCODERS)}, got "
                             f"{self.context_encoder!r}.")
        _require_positive("context_hidden_size", self.context_hidden_size)


BahdanauTextCoAttentionConfig.__setattr__ = _builtin_errors(BahdanauTextCoAttentionConfig.__setattr__)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "TextCoAttentionConfig": BahdanauTextCoAttentionConfig,
})
