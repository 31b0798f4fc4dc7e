"""End-to-end memory networks (Sukhbaatar et al. 2015, MemN2N): multi-hop attention over a memory of sentences.

    u^1 = enc(B q)                                             the question q (``input_ids`` [B, Q])
    for k = 1 … K:                                             over the memory x_1 … x_M (``memory_ids`` [B, M, W])
        m_i = enc(A^k x_i) + T_A^k(t_i),  c_i = enc(C^k x_i) + T_C^k(t_i)
        p^k_i = softmax_i(u^kᵀ m_i),  o^k = Σ_i p^k_i c_i,  u^{k+1} = u^k + o^k  (layer-wise: H u^k + o^k)
    â = softmax(W u^{K+1})                                     over the answers (``num_labels``)

``memory.py`` holds the sentence encodings enc (bag of words, position encoding), the weight tyings and the hop.
``BahdanauMemoryNetworkForSequenceClassification`` is registered with ``AutoModelForSequenceClassification``: the
answer is one class of a fixed answer vocabulary (``id2label``), read from a (memory, question) pair, as a text classifier reads
its text. Neither extractive question answering (``AutoModelForQuestionAnswering`` predicts a span of the context;
a bAbI answer such as "two" or "apple,milk" is often not a span) nor generation fits; transformers 5 has no
``question-answering`` pipeline, so ``pipeline_memory.py`` ships one with the model.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers import initialization as init
from transformers.modeling_outputs import ModelOutput, SequenceClassifierOutput
from transformers.utils import can_return_tuple

from .axes import SENTENCE_ENCODINGS, WEIGHT_TYINGS
from .configuration_memory import BahdanauMemoryNetworkConfig
from .input_checks import check_class_labels, check_token_ids
from .loss import token_cross_entropy
from .memory import attend_memory, memory_times
from .padding import check_attention_mask
from .pretrained_base import BahdanauBasePreTrainedModel
from .old_names import old_names

__all__ = ["BahdanauMemoryNetworkForSequenceClassification", "BahdanauMemoryNetworkModel",
           "BahdanauMemoryNetworkModelOutput", "BahdanauMemoryNetworkOutput", "BahdanauMemoryNetworkPreTrainedModel"]


@dataclass
class BahdanauMemoryNetworkModelOutput(ModelOutput):
    """last_hidden_state: u^{K+1} [B, d], what the answer is read from.
    hidden_states (``output_hidden_states``): (u^1, …, u^{K+1}), each [B, d].
    attentions (``output_attentions``): (p^1, …, p^K), each [B, M]: hop k's attention over the memory sentences,
    0 on empty memory slots."""

    last_hidden_state: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class BahdanauMemoryNetworkOutput(SequenceClassifierOutput):
    """``SequenceClassifierOutput``: loss (with labels, cross-entropy over the labels != -100, ``loss.per_target``),
    logits [B, num_labels] = W u^{K+1}; hidden_states and attentions as ``BahdanauMemoryNetworkModelOutput``'s (one
    [B, M] distribution over the memory sentences per hop)."""


class BahdanauMemoryNetworkPreTrainedModel(BahdanauBasePreTrainedModel):
    config_class = BahdanauMemoryNetworkConfig
    base_model_prefix = "memory_network"
    main_input_name = "input_ids"

    def _init_layer(self, module: nn.Module) -> None:
        """Every weight N(0, init_std²) (the paper: σ = 0.1): the word and time embeddings, H and W."""
        if isinstance(module, (nn.Embedding, nn.Linear)):
            init.normal_(module.weight, mean=0.0, std=self.config.init_std)


class BahdanauMemoryNetworkModel(BahdanauMemoryNetworkPreTrainedModel):
    """The question and the memory -> u^{K+1} [B, d] and each hop's attention (``BahdanauMemoryNetworkModelOutput``)."""

    def __init__(self, config: BahdanauMemoryNetworkConfig):
        super().__init__(config)
        self.sentence_encoding = SENTENCE_ENCODINGS[config.sentence_encoding]()
        self.tying = WEIGHT_TYINGS[config.weight_tying](config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.tying.word_tables[self.tying.question_table(self.config.num_hops)]

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.tying.word_tables[self.tying.question_table(self.config.num_hops)] = value

    def _encode(self, table: int, ids: Tensor, mask: Tensor) -> Tensor:
        """enc(E_table x): ids [..., W], mask [..., W] bool -> [..., d]."""
        return self.sentence_encoding(self.tying.word_tables[table](ids), mask)

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        memory_ids: Tensor | None = None,
        memory_attention_mask: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BahdanauMemoryNetworkModelOutput:
        """input_ids [B, Q] the question's word ids, attention_mask [B, Q]; memory_ids [B, M, W] the memory's
        sentences (oldest first), memory_attention_mask [B, M, W] (1 = a real word; a slot without words is no
        memory). Padding may be on either side of each sentence and between memories. A row without a memory reads
        nothing: every hop's attention is 0 and u^{K+1} is u^1 (H^K u^1 with layer-wise tying), the answer to the
        question alone, as a batch may hold such a row; the pipeline refuses a memory without a sentence."""
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        question_mask, memory_mask = self._check_inputs(input_ids, attention_mask, memory_ids, memory_attention_mask)
        real_memory = memory_mask.any(-1)  # [B, M]
        config, tying = self.config, self.tying
        times = None
        if tying.time_tables is not None:
            noise = config.random_noise if self.training else 0.0
            times = memory_times(real_memory, noise, config.memory_size)
        encoded = {}  # each table's memory encoding, computed once: with adjacent tying C^k is A^{k+1}

        def memory_vectors(table: int) -> Tensor:
            if table not in encoded:
                vectors = self._encode(table, memory_ids, memory_mask)
                if times is not None:
                    vectors = vectors + tying.time_tables[table](times)
                encoded[table] = vectors
            return encoded[table]

        query = self._encode(tying.question_table(config.num_hops), input_ids, question_mask)
        queries, weights = [query], []
        for hop in range(config.num_hops):
            key_table, value_table = tying.hop_tables(hop)
            read, hop_weights = attend_memory(query, memory_vectors(key_table), memory_vectors(value_table),
                                              real_memory, linear_start=config.linear_start)
            query = tying.next_query(query, read)
            queries.append(query)
            weights.append(hop_weights)
        return BahdanauMemoryNetworkModelOutput(
            last_hidden_state=query,
            hidden_states=tuple(queries) if output_hidden_states else None,
            attentions=tuple(weights) if output_attentions else None,
        )

    def _check_inputs(self, input_ids: Tensor | None, attention_mask: Tensor | None, memory_ids: Tensor | None,
                      memory_attention_mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """The question's and the memory's masks as bool [B, Q], [B, M, W]; ValueError naming a bad argument."""
        if input_ids is None or memory_ids is None:
            raise ValueError("A memory network needs `input_ids` [batch, question words] (the question) and "
                             "`memory_ids` [batch, sentences, words] (the memory).")
        check_token_ids("input_ids", input_ids, self.config.vocab_size, what="[batch, question words]")
        check_token_ids("memory_ids", memory_ids, self.config.vocab_size, dims=3,
                        what="[batch, sentences, words]")
        if memory_ids.shape[0] != input_ids.shape[0]:
            raise ValueError(f"`memory_ids` needs one memory per question: {input_ids.shape[0]} questions in "
                             f"`input_ids`, {memory_ids.shape[0]} memories.")
        question_mask = check_attention_mask(attention_mask, tuple(input_ids.shape), input_ids.device,
                                             nonempty="question").mask
        batch, sentences, words = memory_ids.shape
        if memory_attention_mask is not None and tuple(memory_attention_mask.shape) != (batch, sentences, words):
            raise ValueError(f"`memory_attention_mask` must have the shape of `memory_ids`, {[batch, sentences, words]}"
                             f", got {list(getattr(memory_attention_mask, 'shape', []))}.")
        flat_mask = None if memory_attention_mask is None else memory_attention_mask.reshape(batch * sentences, words)
        memory_mask = check_attention_mask(flat_mask, (batch * sentences, words), memory_ids.device,
                                           name="memory_attention_mask").mask.view(batch, sentences, words)
        if self.config.temporal_encoding:
            most = int(memory_mask.any(-1).sum(-1).max())
            if most > self.config.memory_size:
                raise ValueError(f"A memory holds at most `memory_size`={self.config.memory_size} sentences with "
                                 f"temporal encoding, got {most} in one row of `memory_ids`: keep the most recent "
                                 f"{self.config.memory_size} (as the paper does; the collator and the pipeline can).")
        return question_mask, memory_mask


class BahdanauMemoryNetworkForSequenceClassification(BahdanauMemoryNetworkPreTrainedModel):
    """A memory network answering from a fixed answer vocabulary: ``logits`` [B, num_labels] = W u^{K+1}, ``labels``
    [B] answer ids (-100 ignored). W is its own [num_labels, d] matrix, or, with adjacent tying and
    ``answer_token_ids``, the rows of those words in the last output embedding (W^T = C^K)."""

    accepts_loss_kwargs = True

    def __init__(self, config: BahdanauMemoryNetworkConfig):
        super().__init__(config)
        self.memory_network = BahdanauMemoryNetworkModel(config)
        tied = config.answer_token_ids is not None and self.memory_network.tying.answer_table() is not None
        self.answer = None if tied else nn.Linear(config.hidden_size, config.num_labels, bias=False)
        self.post_init()

    def answer_weight(self) -> Tensor:
        """W [num_labels, d]."""
        if self.answer is not None:
            return self.answer.weight
        table = self.memory_network.tying.word_tables[self.memory_network.tying.answer_table()].weight
        return table[torch.tensor(self.config.answer_token_ids, device=table.device)]

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        memory_ids: Tensor | None = None,
        memory_attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
        **kwargs,
    ) -> BahdanauMemoryNetworkOutput:
        """``BahdanauMemoryNetworkModel``'s inputs, and labels [B] answer ids in [0, num_labels) or -100 -> logits
        [B, num_labels], the loss with labels, each hop's attention with ``output_attentions``."""
        read = self.memory_network(input_ids, attention_mask, memory_ids, memory_attention_mask,
                                   output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        logits = read.last_hidden_state @ self.answer_weight().T
        loss = None
        if labels is not None:
            check_class_labels("labels", labels, self.config.num_labels, (logits.shape[0],))
            loss = token_cross_entropy(logits, labels, num_items_in_batch)
        return BahdanauMemoryNetworkOutput(loss=loss, logits=logits, hidden_states=read.hidden_states,
                                   attentions=read.attentions)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "MemoryNetworkForSequenceClassification": BahdanauMemoryNetworkForSequenceClassification,
    "MemoryNetworkModel": BahdanauMemoryNetworkModel,
    "MemoryNetworkModelOutput": BahdanauMemoryNetworkModelOutput,
    "MemoryNetworkOutput": BahdanauMemoryNetworkOutput,
    "MemoryNetworkPreTrainedModel": BahdanauMemoryNetworkPreTrainedModel,
})
