"""Attention-pooled text classification, flat or hierarchical (HAN: Yang et al. 2016, *Hierarchical Attention
Networks for Document Classification*).

Flat (``config.hierarchical=False``):
    h_j = BiRNN(x)_j,  α = softmax_j(u_wᵀ tanh(W h_j + b)),  v = Σ_j α_j h_j,  logits = W_o v + b_o

Hierarchical: a document is sentences of words, given as input_ids [B, N, W] or as [B, S] split at
``config.sentence_separator_token_id`` (one token or several; and at the end-of-sequence token) by
``split_sentences``:
    word level, per sentence i:  h_ij = BiRNN_w(x_i)_j,  α_ij = softmax_j(u_wᵀ tanh(W_w h_ij + b_w)),
                                 s_i = Σ_j α_ij h_ij
    sentence level:              h_i = BiRNN_s(s)_i,  β_i = softmax_i(u_sᵀ tanh(W_s h_i + b_s)),  v = Σ_i β_i h_i
    logits = W_o v + b_o

The pooling (``config.pooling_type``, ``pooling.py``) is Yang et al.'s context vector above, or Lin et al.'s
self-attentive pooling (r rows of weights; v and each s_i r·D long, and the penalty ‖A Aᵀ − I‖²_F added to the
loss: hierarchical, the sentence level's plus the mean of the document's sentences'), or Shen et al.'s
multi-dimensional pooling (one distribution per feature), at both levels.

The word-level BiRNN and embeddings are the seq2seq model's encoder (``model.encoder``); the
sentence-level BiRNN has the same shape over sentence vectors. ``problem_type`` (regression,
single-label, multi-label) and its loss follow transformers' sequence classification heads; the loss is normalised
like every head's (``loss.per_target``).
"""

import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import torch
from torch import Tensor, nn
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.utils import can_return_tuple

from .axes import POOLINGS
from .configuration_bahdanau import CLASSIFIER_PIPELINES, name_head_pipelines
from .configuration_encoder_only import BahdanauEncoderConfig
from .encoder import BahdanauEncoder
from .input_checks import check_class_labels, require_tensor
from .loss import per_item_loss, token_cross_entropy
from .loss_terms import HeadOutputs, add_loss_terms, build_loss_terms
from .modeling_encoder_only import (BahdanauEncoderModel, BahdanauEncoderPreTrainedModel, classifier_dropout,
                                    refuse_the_other_heads_fields)
from .padding import check_attention_mask
from .pooling import build_pooling

__all__ = ["BahdanauForSequenceClassification", "BahdanauSequenceClassifierOutput", "split_sentences"]


@dataclass
class BahdanauSequenceClassifierOutput(SequenceClassifierOutput):
    """The classifier's output: transformers' ``SequenceClassifierOutput`` fields, with these shapes.

    loss: scalar, with labels (``loss.per_target``; plus λ times ``self_attention_penalty``); logits [B, num_labels].
    hidden_states (``output_hidden_states``): flat, the encoder's (embeddings [B, S, E], each layer [B, S, D]);
    hierarchical, (word annotations [B, N, W, D], sentence annotations [B, N, D]).
    attentions (``output_attentions``): the pooling weights, by ``config.pooling_type``:
        context_vector     flat (α [B, S],); hierarchical (α [B, N, W] over the words of each sentence,
                           β [B, N] over the sentences)
        self_attentive     flat (A [B, r, S],); hierarchical (A [B, N, r, W], A [B, r, N])
        multi_dimensional  flat (α [B, S, D],); hierarchical (α [B, N, W, D], α [B, N, D])
    Padding, and empty sentences, get exactly 0.
    self_attention_penalty: with labels and ``pooling_type="self_attentive"``, Lin et al.'s P = ‖A Aᵀ − I‖²_F per
    text (hierarchical: the sentence level's plus the mean over the non-empty sentences of the word level's, so that
    its size does not grow with the number of sentences; a sentence of fewer than r words cannot reach 0), each
    label != -100
    counting its text's P, normalised like the loss (``loss.per_target``); before λ =
    ``config.self_attention_penalty_weight`` (``loss`` includes λ times it).
    encoder_attentions (``output_attentions`` and ``encoder_self_attention``): the encoder's self-attention over the
    annotations (``self_attention``; row j: what annotation j attended to): flat (α [B, 1, S, S],); hierarchical, the
    word level's (α [B, N, 1, W, W],), zero for empty sentences (the sentence-level encoder has none).
    embedding_attentions (``output_attentions`` and ``meta_embedding_sources``): how much each token's embedding takes
    from each of the K sources (``meta_embedding``): flat α [B, S, K]; hierarchical α [B, N, W, K]; 0 on padding.
    """

    self_attention_penalty: Tensor | None = None
    encoder_attentions: tuple[Tensor, ...] | None = None
    embedding_attentions: Tensor | None = None

    @property
    def word_attentions(self) -> Tensor | None:
        """Deprecated: ``attentions[0]``."""
        warnings.warn("`word_attentions` is deprecated: read `attentions[0]`.", FutureWarning, stacklevel=2)
        return None if self.attentions is None else self.attentions[0]

    @property
    def sentence_attentions(self) -> Tensor | None:
        """Deprecated: ``attentions[1]`` (hierarchical only; None for the flat classifier)."""
        warnings.warn("`sentence_attentions` is deprecated: read `attentions[1]` (hierarchical classifiers only).",
                      FutureWarning, stacklevel=2)
        return None if self.attentions is None or len(self.attentions) < 2 else self.attentions[1]


def split_sentences(
    input_ids: Tensor, attention_mask: Tensor, delimiter_ids: Tensor, pad_token_id: int = 0
) -> tuple[Tensor, Tensor]:
    """[B, S] token ids -> [B, N, W] sentences of words, and their mask.

    A delimiter (e.g. the separator "." or the end-of-sequence token) closes the sentence it follows and is
    not a word of it; empty sentences are dropped; N and W are the largest counts in the batch.
    """
    is_delimiter = torch.isin(input_ids, delimiter_ids)
    is_word = attention_mask.bool() & ~is_delimiter
    words_seen = is_word.long().cumsum(1)  # words up to and including each position
    words_before_sentence = torch.where(is_delimiter, words_seen, 0).cummax(1).values
    position = words_seen - words_before_sentence - 1  # index of a word within its sentence
    sentence = (is_word & (position == 0)).long().cumsum(1) - 1  # index of its (non-empty) sentence
    rows, columns = is_word.nonzero(as_tuple=True)
    sentence, position = sentence[rows, columns], position[rows, columns]
    num_sentences = int(sentence.max()) + 1 if len(rows) else 1
    num_words = int(position.max()) + 1 if len(rows) else 1
    batch_size = input_ids.shape[0]
    sentences = input_ids.new_full((batch_size, num_sentences, num_words), pad_token_id)
    sentences[rows, sentence, position] = input_ids[rows, columns]
    mask = attention_mask.new_zeros((batch_size, num_sentences, num_words))
    mask[rows, sentence, position] = 1
    return sentences, mask


def _sentence_level_encoder(config: BahdanauEncoderConfig, input_size: int) -> BahdanauEncoder:
    """The word-level encoder's RNN over sentence vectors of ``input_size`` (the pooled size; no embedding)."""
    sizes = SimpleNamespace(
        rnn_type=config.rnn_type, embedding_size=input_size,
        encoder_hidden_size=config.encoder_hidden_size, encoder_layers=config.encoder_layers,
        bidirectional=config.bidirectional, dropout=config.dropout, reverse_source=False,
        encoder_self_attention=None, meta_embedding_sources=None,  # the word level's options
    )
    return BahdanauEncoder(sizes, embed_tokens=None)


def sequence_classification_loss(
    logits: Tensor, labels: Tensor, config: BahdanauEncoderConfig, num_items_in_batch: int | Tensor | None = None
) -> Tensor:
    """Squared error (regression), cross-entropy (single-label) or BCE with logits (multi-label), inferring
    ``config.problem_type`` from num_labels and the labels' dtype when unset, as transformers does; summed over the
    labels != -100 and divided by num_items_in_batch or their count (``loss.per_target``): without num_items_in_batch,
    the mean of transformers' heads. logits [B, num_labels]; labels [B] class ids, [B, num_labels] 0/1 floats, or
    [B] / [B, num_labels] values; an item is a text (single-label) or a (text, label) pair. A label of -100 is
    ignored in every problem type (a regression target of exactly -100 too: Trainer does not count it either)."""
    require_tensor("labels", labels)
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    _check_labels(labels, logits.shape, config.problem_type)
    if config.problem_type == "single_label_classification":
        return token_cross_entropy(logits, labels.view(-1), num_items_in_batch)
    if config.problem_type == "regression":
        labels = labels.view(-1) if config.num_labels == 1 else labels.view(logits.shape)
        predictions = logits.squeeze(-1) if config.num_labels == 1 else logits
        item_losses = nn.functional.mse_loss(predictions, labels.to(logits.dtype), reduction="none")
    else:
        item_losses = nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype), reduction="none")
    return per_item_loss(item_losses, labels, num_items_in_batch)


def _check_labels(labels: Tensor, logits_shape: torch.Size, problem_type: str) -> None:
    batch_size, num_labels = logits_shape
    if problem_type == "single_label_classification":
        check_class_labels("labels", labels.view(-1) if labels.numel() == batch_size else labels, num_labels,
                           (batch_size,))
    elif problem_type == "multi_label_classification":
        if tuple(labels.shape) != (batch_size, num_labels):
            raise ValueError(f"`labels` of a multi-label classification must be [batch, num_labels] = "
                             f"{[batch_size, num_labels]} (0/1 per label), got {list(labels.shape)}.")
    elif labels.numel() != batch_size * num_labels:
        raise ValueError(f"`labels` of a regression must hold {num_labels} value(s) per text ([batch] or [batch, "
                         f"num_labels]), got shape {list(labels.shape)} for a batch of {batch_size}.")


class BahdanauForSequenceClassification(BahdanauEncoderPreTrainedModel):
    """A label (or labels, or a score) per text, from attention pooling over the encoder states: flat, or
    hierarchical over words and then sentences (``config.hierarchical``)."""

    accepts_loss_kwargs = True  # Trainer passes num_items_in_batch: the loss is exact under gradient accumulation

    def __init__(self, config: BahdanauEncoderConfig):
        super().__init__(config)
        config = self.config  # a BahdanauConfig given is upgraded (``modeling_encoder_only``)
        refuse_the_other_heads_fields(config, "BahdanauForSequenceClassification",
                                      f"the sequence classifier pools with `pooling_type`, one of {POOLINGS.allowed} "
                                      f"(here {config.pooling_type!r})")
        self.num_labels = config.num_labels
        size = config.encoder_output_size
        self.model = BahdanauEncoderModel(config)
        self.word_attention = build_pooling(config, size)
        pooled_size = self.word_attention.output_size
        if config.hierarchical:
            self.sentence_encoder = _sentence_level_encoder(config, pooled_size)
            self.sentence_attention = build_pooling(config, size)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(pooled_size, config.num_labels)
        self.loss_terms = build_loss_terms(config, self, ("self_attention_penalty",))  # loss = NLL + λ P
        name_head_pipelines(config, CLASSIFIER_PIPELINES)  # pipeline(model=folder, trust_remote_code=True)
        self.post_init()

    def split_sentences(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """[B, S] -> sentences [B, N, W] and their mask, split at the separator and end-of-sequence tokens.
        ``attention_mask`` [B, S] is checked as every head checks its mask (``padding.check_attention_mask``)."""
        if self.config.sentence_separator_token_id is None:
            raise ValueError(
                "`config.sentence_separator_token_id` is None: set it to split [batch, tokens] input_ids into "
                "sentences, or pass input_ids of shape [batch, sentences, words]."
            )
        delimiters = torch.tensor([token_id for field in ("sentence_separator_token_id", "eos_token_id")
                                   for token_id in _as_list(getattr(self.config, field))], device=input_ids.device)
        check_attention_mask(attention_mask, tuple(input_ids.shape), input_ids.device)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return split_sentences(input_ids, attention_mask, delimiters, self.config.pad_token_id or 0)

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
    ) -> BahdanauSequenceClassifierOutput:
        """Flat: input_ids / attention_mask [B, S] (or inputs_embeds [B, S, E]). Hierarchical: [B, N, W]
        (or inputs_embeds [B, N, W, E]), or [B, S] split into sentences. labels: [B] class ids
        (single-label), [B, num_labels] floats (multi-label) or [B] / [B, num_labels] values (regression), -100
        where ignored. logits [B, num_labels]; the loss: ``sequence_classification_loss``, plus λ times the
        ``self_attention_penalty`` with ``pooling_type="self_attentive"``."""
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        if self.config.hierarchical:
            document, weights, penalties, hidden_states, encoder_weights = self._encode_document(
                input_ids, attention_mask, inputs_embeds, output_hidden_states, output_attentions
            )
        else:
            encoded = self.model(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
                                 output_hidden_states=output_hidden_states, output_attentions=output_attentions)
            document, word_weights, penalties = self._pool_words(encoded.last_hidden_state, attention_mask)
            weights, hidden_states = (word_weights,), encoded.hidden_states
            encoder_weights = {"encoder_attentions": encoded.attentions,
                               "embedding_attentions": encoded.embedding_attentions}
        logits = self.classifier(self.dropout(document))
        loss, parts = None, {}
        if labels is not None:
            loss = sequence_classification_loss(logits, labels, self.config, num_items_in_batch)
            loss, parts = add_loss_terms(loss, self.loss_terms, HeadOutputs(labels=labels, penalties=penalties),
                                         num_items_in_batch)
        return BahdanauSequenceClassifierOutput(
            loss=loss,
            logits=logits,
            hidden_states=hidden_states,
            attentions=weights if output_attentions else None,
            **parts,
            **encoder_weights,
        )

    def _pool_words(self, annotations: Tensor, attention_mask: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
        """Word attention over annotations [B, S, D] in the caller's layout -> v [B, P], the weights (S in the caller's
        layout) and the pooling's penalty [B] (or None); pooled over the right-padded rows, so a left-padded batch
        sums in the same order as the right-padded one (``padding``)."""
        layout = check_attention_mask(attention_mask, annotations.shape[:2], annotations.device)
        pooled, weights = self.word_attention(layout.to_right(annotations), layout.right_mask)
        return pooled, layout.to_caller(weights, self.word_attention.sequence_dim), self.word_attention.penalty(
            weights, layout.right_mask)

    def _encode_document(
        self, input_ids: Tensor | None, attention_mask: Tensor | None, inputs_embeds: Tensor | None,
        output_hidden_states: bool, output_attentions: bool,
    ) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor | None, tuple[Tensor, Tensor] | None, dict]:
        """Words -> sentence vectors s_i -> document vector v [B, P]; the weights of both levels (context vector:
        α [B, N, W], β [B, N]); the penalty per document [B] (the sentence level's plus the mean of the non-empty
        sentences') or None; the hidden states; the word-level encoder's weights per sentence, 0 for empty ones
        (``encoder_attentions``: (α [B, N, 1, W, W],) or None; ``embedding_attentions``: α [B, N, W, K] or None)."""
        words = input_ids if inputs_embeds is None else inputs_embeds
        if words is None:
            raise ValueError("Pass `input_ids` or `inputs_embeds`.")
        sentence_dims = 3 if inputs_embeds is None else 4
        if words.dim() == sentence_dims - 1:
            if inputs_embeds is not None:
                raise ValueError("hierarchical `inputs_embeds` must be [batch, sentences, words, embedding_size].")
            words, attention_mask = self.split_sentences(input_ids, attention_mask)
        elif words.dim() != sentence_dims:
            raise ValueError(
                f"hierarchical input_ids must be [batch, tokens] or [batch, sentences, words], got shape "
                f"{tuple(words.shape)}."
            )
        batch_size, num_sentences, num_words = words.shape[:3]
        if attention_mask is None:
            attention_mask = torch.ones(words.shape[:3], dtype=torch.long, device=words.device)
        elif tuple(attention_mask.shape) != tuple(words.shape[:3]):
            raise ValueError(f"`attention_mask` must be [batch, sentences, words] = {list(words.shape[:3])} like the "
                             f"input, got {list(attention_mask.shape)}.")
        sentence_mask = attention_mask.bool().any(-1)  # [B, N]
        real = sentence_mask.flatten()  # only non-empty sentences go through the word-level encoder

        size, pooling = self.config.encoder_output_size, self.word_attention
        sentence_vectors = words.new_zeros((batch_size * num_sentences, pooling.output_size), dtype=self.dtype)
        word_weights = words.new_zeros((batch_size * num_sentences, *pooling.weight_shape(num_words)), dtype=self.dtype)
        word_penalties = words.new_zeros(batch_size * num_sentences, dtype=self.dtype)
        word_annotations = None
        encoder = self.model.encoder
        encoder_weights = {  # [B x N, …], filled at the non-empty sentences
            "encoder_attentions": None if not output_attentions or encoder.self_attention is None
            else words.new_zeros((batch_size * num_sentences, 1, num_words, num_words), dtype=self.dtype),
            "embedding_attentions": None if not output_attentions or encoder.meta_embedding is None
            else words.new_zeros((batch_size * num_sentences, num_words, len(encoder.meta_embedding.sources)),
                                 dtype=self.dtype)}
        if output_hidden_states:
            word_annotations = words.new_zeros((batch_size * num_sentences, num_words, size), dtype=self.dtype)
        if real.any():
            flat_words, flat_mask = words.flatten(0, 1)[real], attention_mask.flatten(0, 1)[real]
            encoded = self.model(
                input_ids=None if inputs_embeds is not None else flat_words,
                inputs_embeds=flat_words if inputs_embeds is not None else None,
                attention_mask=flat_mask, output_attentions=output_attentions,
            )
            # each filled in the model's dtype: under autocast the sentences' come 16-bit from the products
            if output_hidden_states:
                word_annotations[real] = encoded.last_hidden_state.to(self.dtype)
            for name, sentence_weights in encoder_weights.items():
                if sentence_weights is not None:
                    sentence_weights[real] = (encoded.attentions[0] if name == "encoder_attentions"
                                              else encoded[name]).to(self.dtype)
            vectors, weights, penalties = self._pool_words(encoded.last_hidden_state, flat_mask)
            sentence_vectors[real], word_weights[real] = vectors.to(self.dtype), weights.to(self.dtype)
            if penalties is not None:
                word_penalties[real] = penalties.to(self.dtype)
        # Empty sentences have no vector: the sentence-level RNN reads the others in their order, right-padded, and
        # β is 0 at the empty ones, so a document with an empty sentence equals the document without it.
        order = sentence_mask.to(torch.uint8).argsort(dim=1, descending=True, stable=True)  # [B, N]
        packed_mask = sentence_mask.gather(1, order)
        packed_vectors = sentence_vectors.view(batch_size, num_sentences, -1).gather(
            1, order.unsqueeze(-1).expand(-1, -1, pooling.output_size))
        packed_annotations = self.sentence_encoder(
            inputs_embeds=packed_vectors, attention_mask=packed_mask.long(), return_dict=True,
        ).last_hidden_state
        document, packed_weights = self.sentence_attention(packed_annotations, packed_mask)
        sentence_weights = _unpack(packed_weights, order, self.sentence_attention.sequence_dim)
        penalty = self.sentence_attention.penalty(packed_weights, packed_mask)
        if penalty is not None:
            penalty = penalty + word_penalties.view(batch_size, num_sentences).sum(1) / sentence_mask.sum(1).clamp(
                min=1)
        hidden_states = None
        if output_hidden_states:
            hidden_states = (word_annotations.view(batch_size, num_sentences, num_words, size),
                             _unpack(packed_annotations, order, 1))
        weights = (word_weights.view(batch_size, num_sentences, *word_weights.shape[1:]), sentence_weights)
        encoder_weights = {name: None if value is None else value.view(batch_size, num_sentences, *value.shape[1:])
                           for name, value in encoder_weights.items()}
        if encoder_weights["encoder_attentions"] is not None:
            encoder_weights["encoder_attentions"] = (encoder_weights["encoder_attentions"],)
        return document, weights, penalty, hidden_states, encoder_weights


def _as_list(token_ids: int | list[int] | None) -> list[int]:
    """A config's token id field (None, one id or a list) as a list."""
    return [] if token_ids is None else [token_ids] if isinstance(token_ids, int) else list(token_ids)


def _unpack(packed: Tensor, order: Tensor, dim: int) -> Tensor:
    """The inverse of gathering the sentences in ``order`` [B, N] (a permutation per row): packed [B, …, N (at
    ``dim``), …] -> the caller's sentence order."""
    view = [order.shape[0]] + [1] * (packed.dim() - 1)
    view[dim] = order.shape[1]
    return torch.zeros_like(packed).scatter_(dim, order.view(view).expand(packed.shape), packed)
