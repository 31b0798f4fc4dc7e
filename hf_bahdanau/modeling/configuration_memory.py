"""Configuration of the end-to-end memory network (Sukhbaatar et al. 2015, *End-To-End Memory Networks*, MemN2N).

Each of the paper's options is a field: the hops K, the sentence representation (``SENTENCE_ENCODINGS``: bag of words
or position encoding), temporal encoding with random noise, the weight tying (``WEIGHT_TYINGS``: adjacent or
layer-wise) and linear start. The axes are declared in ``axes.py``, so loading a config imports no model code.
"""


from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .axes import SENTENCE_ENCODINGS, WEIGHT_TYINGS
from .configuration_bahdanau import _builtin_errors, _require_labels, _require_positive, _require_real
from .remote_code import SavesModelCode
from .old_names import old_names

__all__ = ["MEMORY_AUTO_MAP", "MEMORY_PIPELINES", "BahdanauMemoryNetworkConfig"]

MEMORY_AUTO_MAP = {
    "AutoConfig": "configuration_memory.BahdanauMemoryNetworkConfig",
    "AutoModel": "modeling_memory_network.BahdanauMemoryNetworkModel",
    "AutoModelForSequenceClassification": "modeling_memory_network.BahdanauMemoryNetworkForSequenceClassification",
}
# config.json's ``custom_pipelines``: pipeline(model=..., trust_remote_code=True) answers questions about a memory
MEMORY_PIPELINES = {"memory-question-answering": {"impl": "pipeline_memory.BahdanauMemoryQuestionAnsweringPipeline",
                                                  "pt": ["AutoModelForSequenceClassification"], "type": "text"}}


@strict
class BahdanauMemoryNetworkConfig(SavesModelCode, PreTrainedConfig):
    r"""Configuration of an end-to-end memory network: a question u and a memory of sentences x_1 … x_n, read over K
    hops of attention, p_i = softmax_i(uᵀ m_i), o = Σ_i p_i c_i, and an answer â = softmax(W u^{K+1}) from an answer
    vocabulary of ``num_labels`` answers (``id2label``).

    Args:
        vocab_size (`int`, *optional*, defaults to 1000):
            Number of word ids of the memory sentences and the question.
        hidden_size (`int`, *optional*, defaults to 20):
            d, the size of every embedding and of u (the paper's bAbI models: 20).
        num_hops (`int`, *optional*, defaults to 3):
            K, the hops of attention over the memory.
        sentence_encoding (`str`, *optional*, defaults to `"position_encoding"`):
            How a sentence of word embeddings becomes one vector (memory sentences and question alike), a name of
            ``axes.SENTENCE_ENCODINGS``: ``"bag_of_words"`` or ``"position_encoding"`` (PE).
        temporal_encoding (`bool`, *optional*, defaults to `True`):
            TE: add T_A(t_i) to m_i and T_C(t_i) to c_i, where t_i counts the sentences after x_i (0 for the most
            recent); at most ``memory_size`` sentences then.
        memory_size (`int`, *optional*, defaults to 50):
            The rows of T_A and T_C: the most sentences a memory holds with temporal encoding (the paper keeps the 50
            most recent).
        random_noise (`float`, *optional*, defaults to 0.0):
            RN, in [0, 1): in training, the time indices of a memory of n sentences are spread as if up to ⌈n ×
            random_noise⌉ empty memories had been inserted at random (the paper: 0.1); needs temporal encoding.
        weight_tying (`str`, *optional*, defaults to `"adjacent"`):
            A name of ``axes.WEIGHT_TYINGS``: ``"adjacent"`` (A^{k+1} = C^k, B = A^1, W^T = C^K with
            ``answer_token_ids``) or ``"layer_wise"`` (A and C shared by all hops, u^{k+1} = H u^k + o^k).
        linear_start (`bool`, *optional*, defaults to `False`):
            LS: the hops' softmax is left out (p_i = uᵀ m_i on the real sentences), as the paper does for the first
            epochs; ``hf_bahdanau.memory_training.LinearStartCallback`` puts it back during training.
        answer_token_ids (`list[int]`, *optional*):
            The word id of each answer (label id order): the answers are words of the vocabulary, so with adjacent
            tying the answer map is the last output embedding, W^T = C^K. None: W is its own [num_labels, d] matrix.
        init_std (`float`, *optional*, defaults to 0.1):
            Every weight is drawn from N(0, init_std²) (the paper: 0.1).
        pad_token_id (`int`, *optional*, defaults to 0):
            The padding word id (padding is read from the masks; this id is what collators fill with).
    """

    model_type = "bahdanau-memory"
    default_auto_map = MEMORY_AUTO_MAP
    keys_to_ignore_at_inference = ["hidden_states", "attentions"]

    vocab_size: int = 1000
    hidden_size: int = 20
    num_hops: int = 3
    sentence_encoding: str = "position_encoding"
    temporal_encoding: bool = True
    memory_size: int = 50
    random_noise: float | int = 0.0
    weight_tying: str = "adjacent"
    linear_start: bool = False
    answer_token_ids: list[int] | None = None
    init_std: float | int = 0.1
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        if getattr(self, "auto_map", None) is None:
            self.auto_map = dict(self.default_auto_map)
        if not getattr(self, "custom_pipelines", None):
            self.custom_pipelines = MEMORY_PIPELINES
        super().__post_init__(**kwargs)
        self.validate_architecture()

    def validate_architecture(self) -> None:
        """Check every field; ValueError naming the field, the value and what is allowed."""
        for field in ("vocab_size", "hidden_size", "num_hops", "memory_size"):
            _require_positive(field, getattr(self, field))
        SENTENCE_ENCODINGS.check(self.sentence_encoding)
        WEIGHT_TYINGS.check(self.weight_tying)
        _require_real("init_std", self.init_std)
        _require_real("random_noise", self.random_noise)
        if not 0 <= self.random_noise < 1:
            raise ValueError(f"`random_noise` must be in [0, 1), got {self.random_noise}.")
        if self.random_noise and not self.temporal_encoding:
            raise ValueError(f"`random_noise={self.random_noise}` jitters the time indices of temporal encoding: set "
                             "`temporal_encoding=True`, or `random_noise=0`.")
        _require_labels(self)
        if self.answer_token_ids is not None:
            if len(self.answer_token_ids) != self.num_labels:
                raise ValueError(f"`answer_token_ids` needs one word id per answer ({self.num_labels} labels), got "
                                 f"{len(self.answer_token_ids)}.")
            bad = [index for index in self.answer_token_ids if not 0 <= index < self.vocab_size]
            if bad:
                raise ValueError(f"`answer_token_ids` must be word ids in [0, {self.vocab_size}), got {bad}.")


BahdanauMemoryNetworkConfig.__setattr__ = _builtin_errors(BahdanauMemoryNetworkConfig.__setattr__)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "MemoryNetworkConfig": BahdanauMemoryNetworkConfig,
})
