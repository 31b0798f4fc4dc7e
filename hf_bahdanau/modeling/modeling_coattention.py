"""Co-attention models (Lu et al. 2016, *Hierarchical Question-Image Co-Attention for Visual Question Answering*): a
question and a context attend to each other at every level of the question, and an answer is chosen from a fixed
answer vocabulary.

    Q^l = the question's features at level l (``question_levels.py``: words, phrases, the LSTM's states) [B, T, d]
    V   = the context's features [B, N, d]: for an image, v_n = tanh(W_i a_n + b_i) over its region annotations a_n
          (``image_encoder.py``)
    q̂^l, v̂^l, a^{q,l}, a^{v,l} = CoAttention_l(Q^l, V)                       (``co_attention.py``, one per level)
    h^1 = tanh(W_1 (q̂^1 + v̂^1)),   h^l = tanh(W_l [q̂^l + v̂^l; h^{l−1}]),   logits = W_h h^L

``BahdanauCoAttentionModel`` holds everything but the context encoder; ``BahdanauVisualQuestionAnsweringModel`` reads
images, and ``BahdanauForVisualQuestionAnswering`` adds the answer layer and the loss. The question may be padded on either side;
its weights come back in the caller's layout, 0 on padding, as do the padded regions' weights.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers import AutoModel, PreTrainedConfig
from transformers import initialization as init
from transformers.utils import ModelOutput, can_return_tuple

from .co_attention import CoAttentionOutput, build_coattention, masked_mean, summarise
from .configuration_coattention import BahdanauCoAttentionConfig, BahdanauVisualQuestionAnsweringConfig
from .image_encoder import ImageEncoder
from .input_checks import check_class_labels, check_embeddings, check_one_source, check_token_ids
from .loss import token_cross_entropy
from .padding import PaddingLayout, check_attention_mask
from .pretrained_base import BahdanauBasePreTrainedModel
from .question_levels import QuestionLevels
from .old_names import old_names

__all__ = ["BahdanauForVisualQuestionAnswering", "BahdanauCoAttentionAnswerOutput", "BahdanauCoAttentionForAnswering",
           "BahdanauCoAttentionModel", "BahdanauCoAttentionModelOutput", "BahdanauCoAttentionPreTrainedModel",
           "BahdanauVisualQuestionAnsweringModel", "BahdanauVisualQuestionAnsweringOutput"]


@dataclass
class BahdanauCoAttentionModelOutput(ModelOutput):
    """last_hidden_state: h^L [B, answer_hidden_size], what the answer is read from.
    hidden_states (``output_hidden_states``): each level's question features Q^l [B, T, d], then the context's V
    [B, N, d].
    question_attentions (``output_attentions``): a^{q,l} [B, T] per level, in the caller's padding layout.
    context_attentions (``output_attentions``): a^{v,l} [B, N] per level (for an image: its own grid's regions first,
    row-major, as ``grid_size`` says).
    affinities (``output_attentions`` and ``coattention="parallel"``): C^l [B, T, N] per level.
    grid_size: [B, 2], each image's own grid of regions (rows, columns); None for a text context.
    Padding gets exactly 0 everywhere; a level whose input is not read (``inputs`` a baseline) has no weights."""

    last_hidden_state: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    question_attentions: tuple[Tensor, ...] | None = None
    context_attentions: tuple[Tensor, ...] | None = None
    affinities: tuple[Tensor, ...] | None = None
    grid_size: Tensor | None = None


@dataclass
class BahdanauCoAttentionAnswerOutput(ModelOutput):
    """An answering head's output: loss (with labels: cross-entropy over the labels != -100, ``loss.per_target``),
    logits [B, num_labels]; the other fields as ``BahdanauCoAttentionModelOutput``'s."""

    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    question_attentions: tuple[Tensor, ...] | None = None
    context_attentions: tuple[Tensor, ...] | None = None
    affinities: tuple[Tensor, ...] | None = None
    grid_size: Tensor | None = None


@dataclass
class BahdanauVisualQuestionAnsweringOutput(BahdanauCoAttentionAnswerOutput):
    """``BahdanauCoAttentionAnswerOutput`` of an image: ``context_attentions`` over its regions, ``grid_size`` its
    grid."""


class BahdanauCoAttentionPreTrainedModel(BahdanauBasePreTrainedModel):
    config_class = BahdanauCoAttentionConfig
    base_model_prefix = "coattention"
    main_input_name = "input_ids"

    @property
    def coattention_config(self) -> BahdanauCoAttentionConfig:
        """The fields of the question, the co-attention and the answer: ``config.get_text_config()``, the config
        itself (a passage's, ``BahdanauTextCoAttentionConfig``) or a composed config's ``text_config`` (VQA's)."""
        return self.config.get_text_config()

    def _init_layer(self, module: nn.Module) -> None:
        """Embeddings N(0, init_std²); linear maps and n-gram convolutions Xavier-uniform; the LSTM's input weights
        Xavier-uniform and recurrent weights orthogonal; biases 0. The modules of ours with ``init_parameters()``
        initialise themselves (``BahdanauBasePreTrainedModel._init_weights``): the image CNN's convolutions
        Kaiming-normal (``image_encoder.ReluConvolution``)."""
        if isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.coattention_config.init_std)
        elif isinstance(module, (nn.Linear, nn.Conv1d)):
            init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.LSTM):
            for name, parameter in module.named_parameters():
                if name.startswith("weight_hh"):
                    init.orthogonal_(parameter)
                elif name.startswith("weight_ih"):
                    init.xavier_uniform_(parameter)
                else:
                    init.zeros_(parameter)


class BahdanauCoAttentionForAnswering(BahdanauCoAttentionPreTrainedModel):
    """A co-attention model (``body_class``, at ``self.coattention``) and the answer layer: logits [B, num_labels] =
    W_h h^L; labels [B] answer ids (``id2label``), -100 ignored."""

    body_class: type = None  # the BahdanauCoAttentionModel subclass that reads this head's context
    output_class: type = BahdanauCoAttentionAnswerOutput
    accepts_loss_kwargs = True

    def __init__(self, config: BahdanauCoAttentionConfig):
        super().__init__(config)
        self.coattention = self.body_class(config)
        self.answer = nn.Linear(self.coattention_config.answer_hidden_size, config.num_labels)
        self.post_init()

    def answer_from(self, read: BahdanauCoAttentionModelOutput, labels: Tensor | None,
                    num_items_in_batch: int | Tensor | None) -> BahdanauCoAttentionAnswerOutput:
        """The logits of the body's h^L, the loss with labels, and the body's attentions."""
        logits = self.answer(read.last_hidden_state)
        loss = None
        if labels is not None:
            check_class_labels("labels", labels, self.config.num_labels, (logits.shape[0],))
            loss = token_cross_entropy(logits, labels, num_items_in_batch)
        return self.output_class(
            loss=loss, logits=logits, hidden_states=read.hidden_states, question_attentions=read.question_attentions,
            context_attentions=read.context_attentions, affinities=read.affinities, grid_size=read.grid_size)


class BahdanauCoAttentionModel(BahdanauCoAttentionPreTrainedModel):
    """The question's levels, the co-attention at each and the answer MLP, over a context a subclass encodes
    (``encode_context``)."""

    def __init__(self, config: PreTrainedConfig):
        super().__init__(config)
        fields = self.coattention_config
        size = fields.hidden_size
        self.embeddings = nn.Embedding(fields.vocab_size, size)
        self.levels = QuestionLevels(size, fields.question_levels, fields.phrase_windows)
        self.coattentions = nn.ModuleList(build_coattention(fields.coattention, size, fields.attention_size)
                                          for _ in fields.question_levels)
        answer_size = fields.answer_hidden_size
        self.answer_layers = nn.ModuleList(nn.Linear(size if index == 0 else size + answer_size, answer_size)
                                           for index in range(len(fields.question_levels)))
        self.dropout = nn.Dropout(fields.dropout)

    def get_input_embeddings(self) -> nn.Module:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.embeddings = value

    def co_attend(self, question: Tensor | None, layout: PaddingLayout | None, context: Tensor | None,
                  context_mask: Tensor | None, output_attentions: bool, output_hidden_states: bool,
                  grid_size: Tensor | None = None) -> BahdanauCoAttentionModelOutput:
        """question: word embeddings [B, T, d] in the caller's layout ``layout`` (None for ``inputs="context"``);
        context V [B, N, d] with mask [B, N] bool (None for ``inputs="question"``) ->
        ``BahdanauCoAttentionModelOutput``."""
        if question is not None:
            words = layout.to_right(question) * layout.right_mask.unsqueeze(-1)
            question_levels = self.levels(self.dropout(words), layout.lengths)
        else:
            question_levels = [None] * len(self.coattention_config.question_levels)
        if context is not None:
            context = context * context_mask.unsqueeze(-1)
        answer, readings = None, []
        for features, coattention, layer in zip(question_levels, self.coattentions, self.answer_layers):
            reading = self._read_level(coattention, features, layout, self.dropout(context) if context is not None
                                       else None, context_mask)
            readings.append(reading)
            joint = self.dropout(reading.question_summary + reading.context_summary)
            answer = torch.tanh(layer(joint if answer is None else torch.cat([joint, answer], dim=-1)))
            answer = self.dropout(answer)

        def gathered(field: str, to_caller: bool = False) -> tuple[Tensor, ...] | None:
            values = [getattr(reading, field) for reading in readings]
            if not output_attentions or values[0] is None:
                return None
            return tuple(layout.to_caller(value) for value in values) if to_caller else tuple(values)

        hidden_states = None
        if output_hidden_states:
            hidden_states = tuple(layout.to_caller(features) for features in question_levels if features is not None)
            hidden_states += (context,) if context is not None else ()
        return BahdanauCoAttentionModelOutput(
            last_hidden_state=answer,
            hidden_states=hidden_states,
            question_attentions=gathered("question_weights", to_caller=True),
            context_attentions=gathered("context_weights"),
            affinities=gathered("affinity", to_caller=True),
            grid_size=grid_size,
        )

    def _read_level(self, coattention: nn.Module, question: Tensor | None, layout: PaddingLayout | None,
                    context: Tensor | None, context_mask: Tensor | None) -> CoAttentionOutput:
        """One level's q̂, v̂ and weights: co-attention over both inputs, or the mean of the one input a baseline reads
        (the other's summary 0, its weights None)."""
        if question is not None and context is not None:
            return coattention(question, layout.right_mask, context, context_mask)
        features, mask = (question, layout.right_mask) if question is not None else (context, context_mask)
        weights = masked_mean(mask, features.dtype)
        summary, nothing = summarise(weights, features), torch.zeros_like(features[:, 0])
        if question is not None:
            return CoAttentionOutput(summary, nothing, weights, None)
        return CoAttentionOutput(nothing, summary, None, weights)

    def embed_question(self, input_ids: Tensor | None, attention_mask: Tensor | None,
                       inputs_embeds: Tensor | None) -> tuple[Tensor | None, PaddingLayout | None]:
        """The question's word embeddings [B, T, d] and padding layout, checked; (None, None) when the config reads
        no question (``inputs="context"``)."""
        fields = self.coattention_config
        if fields.inputs == "context":
            if input_ids is not None or inputs_embeds is not None or attention_mask is not None:
                raise ValueError("This model reads no question (`inputs='context'`, a context-only baseline): leave "
                                 "`input_ids`, `inputs_embeds` and `attention_mask` out.")
            return None, None
        given = check_one_source("input_ids", input_ids, "inputs_embeds", inputs_embeds)
        if input_ids is not None:
            check_token_ids("input_ids", input_ids, fields.vocab_size, what="[batch, question words]")
        else:
            check_embeddings("inputs_embeds", inputs_embeds, fields.hidden_size)
        layout = check_attention_mask(attention_mask, tuple(given.shape[:2]), given.device, nonempty="question")
        return (self.embeddings(input_ids) if input_ids is not None else inputs_embeds), layout


class BahdanauVisualQuestionAnsweringModel(BahdanauCoAttentionModel):
    """A question [B, T] and an image [B, C, H, W] -> h^L and both attentions (``BahdanauCoAttentionModelOutput``).
    The image is Show, Attend and Tell's encoder's grid of regions a_n [B, N, D], made question-sized, v_n = tanh(W_i a_n +
    b_i)."""

    config_class = BahdanauVisualQuestionAnsweringConfig

    def __init__(self, config: BahdanauVisualQuestionAnsweringConfig):
        super().__init__(config)
        reads_image = config.text_config.inputs != "question"
        self.image_encoder = ImageEncoder(config.vision_config) if reads_image else None
        self.region_projection = (nn.Linear(config.vision_config.annotation_size, config.text_config.hidden_size)
                                  if reads_image else None)
        self.post_init()

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        pixel_values: Tensor | None = None,
        pixel_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BahdanauCoAttentionModelOutput:
        """input_ids [B, T] the question's word ids (or inputs_embeds [B, T, d]), attention_mask [B, T] (padding on
        either side); pixel_values [B, C, H, W] and pixel_mask [B, H, W] (the image processor's output)."""
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        question, layout = self.embed_question(input_ids, attention_mask, inputs_embeds)
        context = context_mask = grid_size = None
        if self.image_encoder is not None:
            if pixel_values is None:
                raise ValueError("Pass `pixel_values` [batch, channels, height, width] (the image processor's output) "
                                 "with the question.")
            image = self.image_encoder(pixel_values, pixel_mask)
            context = torch.tanh(self.region_projection(image.last_hidden_state))
            context_mask, grid_size = image.attention_mask.bool(), image.grid_size
            if question is not None and context.shape[0] != question.shape[0]:
                raise ValueError(f"One image per question: {question.shape[0]} questions, {context.shape[0]} images "
                                 "in `pixel_values`.")
        elif pixel_values is not None or pixel_mask is not None:
            raise ValueError("This model reads no image (`inputs='question'`, a question-only baseline): leave "
                             "`pixel_values` and `pixel_mask` out.")
        return self.co_attend(question, layout, context, context_mask, output_attentions, output_hidden_states,
                              grid_size)


class BahdanauForVisualQuestionAnswering(BahdanauCoAttentionForAnswering):
    """``BahdanauVisualQuestionAnsweringModel`` and the answer layer (``BahdanauCoAttentionForAnswering``)."""

    config_class = BahdanauVisualQuestionAnsweringConfig
    body_class = BahdanauVisualQuestionAnsweringModel
    output_class = BahdanauVisualQuestionAnsweringOutput

    def __init__(self, config: BahdanauVisualQuestionAnsweringConfig):
        super().__init__(config)
        if config.vision_config.backbone is not None and config.vision_config.use_pretrained_backbone:
            self.load_backbone_weights(config.vision_config.backbone)

    def load_backbone_weights(self, name_or_path: str) -> None:
        """Load a vision checkpoint's weights (a Hub name or a local folder) into the backbone image encoder; the
        config's ``vision_config.use_pretrained_backbone`` becomes False (the weights are the model's own from then
        on)."""
        encoder = self.coattention.image_encoder
        if encoder is None or not hasattr(encoder.regions, "backbone"):
            raise ValueError("This model has no backbone image encoder: set `backbone_config` (or `backbone`) to use "
                             "a vision checkpoint.")
        encoder.regions.backbone.load_state_dict(AutoModel.from_pretrained(name_or_path).state_dict())
        self.config.vision_config.use_pretrained_backbone = False

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        pixel_values: Tensor | None = None,
        pixel_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
        **kwargs,
    ) -> BahdanauVisualQuestionAnsweringOutput:
        """``BahdanauVisualQuestionAnsweringModel``'s inputs, and labels [B] answer ids in [0, num_labels) or -100 ->
        logits [B, num_labels], the loss with labels, both attentions with ``output_attentions``."""
        read = self.coattention(input_ids, attention_mask, pixel_values, pixel_mask, inputs_embeds,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        return self.answer_from(read, labels, num_items_in_batch)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "CoAttentionAnswerOutput": BahdanauCoAttentionAnswerOutput,
    "CoAttentionForAnswering": BahdanauCoAttentionForAnswering,
    "CoAttentionModel": BahdanauCoAttentionModel,
    "CoAttentionModelOutput": BahdanauCoAttentionModelOutput,
    "CoAttentionPreTrainedModel": BahdanauCoAttentionPreTrainedModel,
    "VisualQuestionAnsweringModel": BahdanauVisualQuestionAnsweringModel,
    "VisualQuestionAnsweringOutput": BahdanauVisualQuestionAnsweringOutput,
})
