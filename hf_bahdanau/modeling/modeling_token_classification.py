"""Encode–attend–classify tagger (as in the article *Explaining Attention Network in Encoder-Decoder setting
using Recurrent Neural Networks*): embeddings -> (Bi)RNN annotations h_j -> attention -> a label
per token: logits_t = W_o f_t + b_o (dropout before), with the features f_t of ``token_attention``. Padding gets
exactly zero weight.
"""

from dataclasses import dataclass

from torch import Tensor, nn
from transformers.modeling_outputs import TokenClassifierOutput
from transformers.utils import can_return_tuple

from .configuration_bahdanau import TAGGER_PIPELINES, name_head_pipelines
from .configuration_encoder_only import BahdanauEncoderConfig
from .input_checks import check_class_labels
from .loss import token_cross_entropy
from .modeling_encoder_only import (BahdanauEncoderModel, BahdanauEncoderPreTrainedModel, classifier_dropout,
                                    refuse_the_other_heads_fields)
from .padding import check_attention_mask
from .token_attention import build_token_attention, token_attention_types

__all__ = ["BahdanauForTokenClassification", "BahdanauTokenClassifierOutput"]


@dataclass
class BahdanauTokenClassifierOutput(TokenClassifierOutput):
    """The tagger's output: transformers' ``TokenClassifierOutput`` fields, with these shapes.

    loss: scalar, with labels (``loss.per_target``); logits [B, S, num_labels].
    hidden_states (``output_hidden_states``): the encoder's (embeddings [B, S, E], each layer [B, S, D]).
    attentions (``output_attentions``): (weights [B, 1, S, S],); row t is what token t attended to (with the context-vector
    attention, every real token's row is its one distribution). Padding gets exactly 0.
    encoder_attentions (``output_attentions`` and ``encoder_self_attention``): (α [B, 1, S, S],), the encoder's
    self-attention over the annotations (row j: what annotation j attended to; ``self_attention``).
    embedding_attentions (``output_attentions`` and ``meta_embedding_sources``): α [B, S, K], how much each token's
    embedding takes from each of the K sources (``meta_embedding``); 0 on padding.
    """

    encoder_attentions: tuple[Tensor, ...] | None = None
    embedding_attentions: Tensor | None = None


class BahdanauForTokenClassification(BahdanauEncoderPreTrainedModel):
    """A label per token (NER, POS): ``labels`` [B, S] with -100 where ignored; returns a
    ``BahdanauTokenClassifierOutput``."""

    accepts_loss_kwargs = True  # Trainer passes num_items_in_batch: the loss is exact under gradient accumulation

    def __init__(self, config: BahdanauEncoderConfig):
        super().__init__(config)
        config = self.config  # a BahdanauConfig given is upgraded (``modeling_encoder_only``)
        refuse_the_other_heads_fields(config, "BahdanauForTokenClassification",
                                      f"the tagger's attention is chosen by `token_attention_type`, one of "
                                      f"{token_attention_types()} (here {config.token_attention_type!r})")
        self.num_labels = config.num_labels
        self.model = BahdanauEncoderModel(config)
        self.token_attention = build_token_attention(config)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(self.token_attention.output_size, config.num_labels)
        name_head_pipelines(config, TAGGER_PIPELINES)  # pipeline(model=folder, trust_remote_code=True)
        self.post_init()

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
    ) -> BahdanauTokenClassifierOutput:
        """input_ids / attention_mask / labels [B, S]; logits [B, S, num_labels]. The loss is the summed
        cross-entropy over labels != -100 divided by ``num_items_in_batch`` (Trainer) or by their count."""
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        encoded = self.model(
            input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
            output_hidden_states=output_hidden_states, output_attentions=output_attentions,
        )
        annotations = encoded.last_hidden_state
        if labels is not None:
            check_class_labels("labels", labels, self.num_labels, annotations.shape[:2])
        # Token t attends by source position (the location score): the rows run right-padded (``padding``).
        layout = check_attention_mask(attention_mask, annotations.shape[:2], annotations.device)
        features, weights = self.token_attention(layout.to_right(annotations), layout.right_mask)
        logits = layout.to_caller(self.classifier(self.dropout(features)))
        weights = layout.to_caller(layout.to_caller(weights, dim=1), dim=2)
        loss = None
        if labels is not None:
            loss = token_cross_entropy(logits, labels, num_items_in_batch)
        return BahdanauTokenClassifierOutput(
            loss=loss,
            logits=logits,
            hidden_states=encoded.hidden_states,
            attentions=(weights.unsqueeze(1),) if output_attentions else None,
            encoder_attentions=encoded.attentions,
            embedding_attentions=encoded.embedding_attentions,
        )
