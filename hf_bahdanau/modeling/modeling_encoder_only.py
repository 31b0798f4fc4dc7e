"""The encoder half of the seq2seq model, as the base of the tagging and classification heads.

``BahdanauEncoderModel`` keeps the seq2seq model's weight names (``encoder.embed_tokens``,
``encoder.rnn``), and the heads keep it under ``model`` like ``BahdanauForConditionalGeneration`` does,
so a head loads a seq2seq checkpoint's source embedding and encoder (``model.encoder.*``) as they are;
only the head's own weights are new.
"""

from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.utils import can_return_tuple

from .configuration_bahdanau import name_head_pipelines
from .configuration_encoder_only import FIELDS_OF_ONE_HEAD, BahdanauEncoderConfig, upgrade_bahdanau_config
from .encoder import BahdanauEncoder, BahdanauEncoderOutput, token_embedding
from .modeling_bahdanau import BahdanauPreTrainedModel

__all__ = ["BahdanauEncoderModel", "BahdanauEncoderPreTrainedModel", "classifier_dropout",
           "refuse_the_other_heads_fields"]

HEAD_WORDS = {"BahdanauForTokenClassification": "the tagger",
              "BahdanauForSequenceClassification": "the sequence classifier"}  # FIELDS_OF_ONE_HEAD's heads in words


def classifier_dropout(config: BahdanauEncoderConfig) -> nn.Dropout:
    """The dropout of the tagger's and the classifier's features before their classifier: ``classifier_dropout``, or
    ``dropout`` when None (transformers' heads' rule)."""
    return nn.Dropout(config.dropout if config.classifier_dropout is None else config.classifier_dropout)


def refuse_the_other_heads_fields(config: BahdanauEncoderConfig, head: str, attention_choice: str) -> None:
    """ValueError naming the first field that only the other head reads (``FIELDS_OF_ONE_HEAD``) and ``config`` sets
    to a value other than its default: ``head`` (a key of ``FIELDS_OF_ONE_HEAD``) would silently ignore it.
    ``attention_choice``: how ``head`` chooses its attention, said in the message."""
    for other, fields in FIELDS_OF_ONE_HEAD.items():
        for name in fields if other != head else ():
            value, default = getattr(config, name), getattr(BahdanauEncoderConfig, name)
            if value != default:
                raise ValueError(f"`{name}={value!r}` is read by {HEAD_WORDS[other]} only: {attention_choice}; leave "
                                 f"`{name}` at its default {default!r}.")


class BahdanauEncoderPreTrainedModel(BahdanauPreTrainedModel):
    """Models without a decoder: weight initialisation as the seq2seq models; resizing touches the source
    embedding only. They read a ``BahdanauEncoderConfig``; a ``BahdanauConfig`` (a folder saved by hf_bahdanau 0.1.0,
    a seq2seq checkpoint, a config built for the seq2seq model) is upgraded to one (``upgrade_bahdanau_config``, with
    a log line), and ``self.config`` is that new config."""

    config_class = BahdanauEncoderConfig
    _no_split_modules = ["BahdanauEncoder"]

    def __init__(self, config: BahdanauEncoderConfig, *inputs, **kwargs):
        super().__init__(upgrade_bahdanau_config(config), *inputs, **kwargs)
        # The encoder alone names no pipeline; the tagger and the classifier then name their own
        # (``name_head_pipelines``).
        name_head_pipelines(self.config, None)

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        return PreTrainedModel._resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of, mean_resizing)


class BahdanauEncoderModel(BahdanauEncoderPreTrainedModel):
    """Embeddings -> (Bi)RNN [-> self-attention]: annotations h_j [B, S, encoder_output_size], 0 on padding."""

    def __init__(self, config: BahdanauEncoderConfig):
        super().__init__(config)
        self.encoder = BahdanauEncoder(self.config, token_embedding(self.config))
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens = value

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
    ) -> BahdanauEncoderOutput:
        """input_ids [B, S] (or inputs_embeds [B, S, E]); attention_mask [B, S], 1 = real token. ``attentions``: the
        encoder's self-attention (with ``encoder_self_attention`` and ``output_attentions``)."""
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        return self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
