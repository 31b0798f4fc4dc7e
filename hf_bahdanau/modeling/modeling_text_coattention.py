"""Co-attention over two texts (Lu et al. 2016's question–context co-attention, with a passage for the image): a
question and a passage attend to each other at every level of the question, and an answer is chosen from a fixed
answer vocabulary (bAbI's stories and questions, ``training/run_memory_qa.py --architecture coattention``).

    q^w_t = E x_t,  c_n = E p_n                                  (one embedding table E for both texts)
    V = the passage's features [B, N, d] (``context_encoder``):
        bilstm      v_n = tanh(W_c [→h_n; ←h_n] + b_c), a one-layer BiLSTM over c_1 … c_N
        embeddings  v_n = c_n
    q̂^l, v̂^l, a^{q,l}, a^{v,l} = CoAttention_l(Q^l, V),   h^l, logits = W_h h^L   (``modeling_coattention.py``)

Either text may be padded on either side; both texts' weights come back in the caller's layout, 0 on padding.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers.utils import can_return_tuple

from .configuration_text_coattention import BahdanauTextCoAttentionConfig
from .input_checks import check_token_ids
from .modeling_coattention import (BahdanauCoAttentionAnswerOutput, BahdanauCoAttentionForAnswering,
                                   BahdanauCoAttentionModel, BahdanauCoAttentionModelOutput)
from .padding import check_attention_mask
from .recurrent import RecurrentStack
from .old_names import old_names

__all__ = ["BahdanauForTextPairClassification", "BiLSTMContextEncoder", "BahdanauTextCoAttentionModel",
           "BahdanauTextPairClassifierOutput"]


@dataclass
class BahdanauTextPairClassifierOutput(BahdanauCoAttentionAnswerOutput):
    """``BahdanauCoAttentionAnswerOutput`` of a passage: context_attentions (a^{v,l} [B, N] per level) over its words,
    ``grid_size`` None."""


class BiLSTMContextEncoder(nn.Module):
    """v_n = tanh(W_c [→h_n; ←h_n] + b_c): words [B, N, d] right-padded, lengths [B] -> V [B, N, d], 0 on padding."""

    def __init__(self, hidden_size: int, context_hidden_size: int) -> None:
        super().__init__()
        self.recurrent = RecurrentStack("lstm", hidden_size, context_hidden_size, num_layers=1, bidirectional=True)
        self.projection = nn.Linear(2 * context_hidden_size, hidden_size)  # W_c, b_c

    def forward(self, words: Tensor, lengths: Tensor) -> Tensor:
        outputs, _ = self.recurrent(words, lengths=lengths)
        mask = torch.arange(words.shape[1], device=words.device) < lengths.unsqueeze(1)
        return torch.tanh(self.projection(outputs[-1])) * mask.unsqueeze(-1)


class BahdanauTextCoAttentionModel(BahdanauCoAttentionModel):
    """A question [B, T] and a passage [B, N] of the same vocabulary -> h^L and both attentions
    (``BahdanauCoAttentionModelOutput``, ``grid_size`` None)."""

    config_class = BahdanauTextCoAttentionConfig

    def __init__(self, config: BahdanauTextCoAttentionConfig):
        super().__init__(config)
        reads_passage_in_order = config.inputs != "question" and config.context_encoder == "bilstm"
        self.context_encoder = (BiLSTMContextEncoder(config.hidden_size, config.context_hidden_size)
                                if reads_passage_in_order else None)
        self.post_init()

    def encode_context(self, context_ids: Tensor | None, context_attention_mask: Tensor | None,
                       batch_size: int | None) -> tuple[Tensor | None, Tensor | None]:
        """The passage's features V [B, N, d] in the caller's layout and its mask [B, N] bool, checked; (None, None)
        when the config reads no context (``inputs="question"``). batch_size: the questions' B (None: no question)."""
        if self.config.inputs == "question":
            if context_ids is not None:
                raise ValueError("This model reads no passage (`inputs='question'`, a question-only baseline): leave "
                                 "`context_ids` out.")
            return None, None
        if context_ids is None:
            raise ValueError("`context_ids` is required: the passage's word ids [batch, passage words] that the "
                             "question is asked about.")
        check_token_ids("context_ids", context_ids, self.config.vocab_size, what="[batch, passage words]")
        if batch_size is not None and context_ids.shape[0] != batch_size:
            raise ValueError(f"One passage per question: {batch_size} questions, {context_ids.shape[0]} rows of "
                             "`context_ids`.")
        layout = check_attention_mask(context_attention_mask, tuple(context_ids.shape), context_ids.device,
                                      name="context_attention_mask", nonempty="passage")
        words = self.embeddings(context_ids)
        if self.context_encoder is None:
            return words, layout.mask
        right = layout.to_right(words) * layout.right_mask.unsqueeze(-1)
        return layout.to_caller(self.context_encoder(self.dropout(right), layout.lengths)), layout.mask

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        context_ids: Tensor | None = None,
        context_attention_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BahdanauCoAttentionModelOutput:
        """input_ids [B, T] the question's word ids (or inputs_embeds [B, T, d]), attention_mask [B, T]; context_ids
        [B, N] the passage's, context_attention_mask [B, N]; either text padded on either side."""
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        question, layout = self.embed_question(input_ids, attention_mask, inputs_embeds)
        context, context_mask = self.encode_context(context_ids, context_attention_mask,
                                                    None if question is None else question.shape[0])
        return self.co_attend(question, layout, context, context_mask, output_attentions, output_hidden_states)


class BahdanauForTextPairClassification(BahdanauCoAttentionForAnswering):
    """``BahdanauTextCoAttentionModel`` and the answer layer (``BahdanauCoAttentionForAnswering``)."""

    config_class = BahdanauTextCoAttentionConfig
    body_class = BahdanauTextCoAttentionModel
    output_class = BahdanauTextPairClassifierOutput

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        context_ids: Tensor | None = None,
        context_attention_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
        **kwargs,
    ) -> BahdanauTextPairClassifierOutput:
        """``BahdanauTextCoAttentionModel``'s inputs, and labels [B] answer ids in [0, num_labels) or -100 -> logits
        [B, num_labels], the loss with labels, both texts' attentions with ``output_attentions``."""
        read = self.coattention(input_ids, attention_mask, context_ids, context_attention_mask, inputs_embeds,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        return self.answer_from(read, labels, num_items_in_batch)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "TextCoAttentionModel": BahdanauTextCoAttentionModel,
    "TextPairClassifierOutput": BahdanauTextPairClassifierOutput,
})
