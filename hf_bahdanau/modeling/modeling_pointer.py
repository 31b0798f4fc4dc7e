"""Pointer networks (Vinyals, Fortunato & Jaitly 2015): the output distribution is the attention over the inputs.

    x_j = W_x P_j + b  (``input_features`` P [B, S, F])  or  E P_j  (``input_ids``)      the embedded inputs
    e_0 = learned end annotation;  e_j = h_j, the encoder's annotation of input j − 1     attended: [B, S + 1, D]
    d_i = f(d_{i-1}, x_{C_{i-1}})          the decoder reads the input it pointed at last (x_{C_0}: a learned start)
    u_ij = score(d_i, e_j)                 the decoder's attention score (``attention_type``), after its update
    p(C_i = j | C_<i, P) = softmax_j(u_ij) over the end and the real inputs: ``logits`` = log p [B, T, S + 1]

Output ids are pointer ids (``pointing``): 0 ends the output, j + 1 points at input position j. The encoder, the
decoder (Luong style) and its attention are the seq2seq model's (``BahdanauModel``); the annotations get the end
annotation in front before the decoder reads them. Inputs must be right-padded, so pointer id j + 1 is column j.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers import LogitsProcessorList
from transformers import initialization as init
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import can_return_tuple

from .configuration_bahdanau import POINTER_PIPELINES, BahdanauPointerConfig, name_head_pipelines
from .encoder import BahdanauEncoderOutput
from .input_checks import check_embeddings, check_one_source, check_token_ids
from .loss import token_cross_entropy
from .modeling_bahdanau import BahdanauModel, BahdanauPreTrainedModel, RecurrentGenerationMixin
from .output_layers import OUTPUT_LAYERS
from .padding import check_attention_mask
from .pointing import END, ForbidRepeatedPointers
from .search import check_search_arguments
from .state import RecurrentDecoderCache, resolve_rows_per_source
from .transformers_private import CACHE_NAME, cache_argument, cache_of
from .old_names import OldAttribute, old_names

__all__ = ["BahdanauForPointerNetwork", "BahdanauPointerOutput", "BahdanauPointerNetworkEncoderOutput"]


@dataclass
class BahdanauPointerNetworkEncoderOutput(BahdanauEncoderOutput):
    """``BahdanauEncoderOutput`` of the inputs, plus what the decoder reads back when it points:
    inputs_embeds [B, S, E], the embedded inputs x_j; attention_mask [B, S] (1 = real input)."""

    inputs_embeds: Tensor | None = None
    attention_mask: Tensor | None = None


@dataclass
class BahdanauPointerOutput(Seq2SeqLMOutput):
    r"""``Seq2SeqLMOutput`` of ``BahdanauForPointerNetwork``.

    logits [B, T, S + 1]: log p(C_i = j) over pointer ids (0: the end, j + 1: input position j).
    cross_attentions (with ``output_attentions``): (α [B, 1, T, S + 1],), the decoder's attention over [end; inputs],
    whose probabilities ``logits`` is the log of.
    decoder_hidden_states (with ``output_hidden_states``): the embedded decoder inputs, then each layer's d_i.
    encoder_attentions (with ``output_attentions`` and ``encoder_self_attention``): (α [B, 1, S, S],), the encoder's
    self-attention over the inputs' annotations (``self_attention``).
    """


class BahdanauForPointerNetwork(BahdanauPreTrainedModel, RecurrentGenerationMixin):
    """A pointer network: ``labels`` [B, T] are pointer ids (-100 ignored), ``logits`` [B, T, S + 1] the log of the
    pointing distribution, and ``generate()`` (greedy, beam, sampling) returns pointer ids, starting with the
    decoder start 0; ``generate(forbid_repeats=True)`` points at each input at most once."""

    config_class = BahdanauPointerConfig
    main_input_name = "input_features"
    accepts_loss_kwargs = True

    def __init__(self, config: BahdanauPointerConfig):
        super().__init__(config)
        self.model = BahdanauModel(config)
        self.model.decoder.embed_tokens = None  # the decoder reads the inputs it points at, not tokens
        features = config.input_feature_size
        self.feature_projection = None if features is None else nn.Linear(features, config.embedding_size)
        if features is not None:
            self.model.encoder.embed_tokens = None
        self.start_input = nn.Parameter(torch.empty(config.embedding_size))
        self.end_annotation = nn.Parameter(torch.empty(config.encoder_output_size))
        self.output_layer = OUTPUT_LAYERS["pointing"](config)  # log p over [end; inputs] (``output_layers``)
        name_head_pipelines(config, POINTER_PIPELINES)  # pipeline(model=folder, trust_remote_code=True)
        self.post_init()
        self.generation_config.update(decoder_start_token_id=END, eos_token_id=END, pad_token_id=END,
                                      bos_token_id=None)

    def init_parameters(self) -> None:
        """The start input and the end annotation N(0, init_std²) (``BahdanauPreTrainedModel._init_weights`` calls
        it; the submodules are initialised before)."""
        init.normal_(self.start_input, std=self.config.init_std)
        init.normal_(self.end_annotation, std=self.config.init_std)

    def get_input_embeddings(self) -> nn.Module:
        return self.model.encoder.embed_tokens if self.feature_projection is None else self.feature_projection

    def get_encoder(self) -> nn.Module:
        return self.model.encoder

    def encode(self, input_features: Tensor | None = None, input_ids: Tensor | None = None,
               attention_mask: Tensor | None = None, output_hidden_states: bool = False,
               output_attentions: bool = False) -> BahdanauPointerNetworkEncoderOutput:
        """input_features [B, S, F] (``config.input_feature_size``) or input_ids [B, S]; attention_mask [B, S] right
        padding -> the annotations, the embedded inputs and the mask (``BahdanauPointerNetworkEncoderOutput``); its
        ``attentions``: the encoder's self-attention (``output_attentions`` with ``encoder_self_attention``)."""
        if self.feature_projection is None:
            if input_features is not None:
                raise ValueError("This pointer network reads token ids (`config.input_feature_size` is None): pass "
                                 "`input_ids` [batch, inputs], not `input_features`.")
            check_one_source("input_ids", input_ids, "input_features", None)
            check_token_ids("input_ids", input_ids, self.config.vocab_size, what="[batch, inputs]")
            embedded = self.model.encoder.embed_tokens(input_ids)
        else:
            if input_ids is not None:
                raise ValueError(f"This pointer network reads `input_features` [batch, inputs, "
                                 f"{self.config.input_feature_size}] (`config.input_feature_size`), not `input_ids`.")
            check_one_source("input_features", input_features, "input_ids", None)
            check_embeddings("input_features", input_features, self.config.input_feature_size,
                             what="[batch, inputs, input_feature_size]")
            if not torch.isfinite(input_features).all():
                raise ValueError("`input_features` must be finite, got NaN or infinite values.")
            embedded = self.feature_projection(input_features.to(self.feature_projection.weight.dtype))
        layout = check_attention_mask(attention_mask, embedded.shape[:2], embedded.device)
        if layout.starts is not None:
            raise ValueError("A pointer network reads right-padded inputs (pointer id j + 1 is column j of "
                             "`attention_mask`): put each row's padding after its inputs.")
        if not layout.lengths.all():
            raise ValueError("Every row of `attention_mask` needs at least one real input to point at.")
        encoded = self.model.encoder(inputs_embeds=embedded, attention_mask=attention_mask,
                                     output_hidden_states=output_hidden_states, output_attentions=output_attentions)
        return BahdanauPointerNetworkEncoderOutput(**encoded, inputs_embeds=embedded, attention_mask=layout.right_mask)

    def pointer_annotations(self, encoder_outputs: BahdanauPointerNetworkEncoderOutput
                            ) -> tuple[BahdanauEncoderOutput, Tensor]:
        """The annotations the decoder attends over, [e_0; h_1 … h_S] [B, S + 1, D], as encoder outputs, and their
        mask [B, S + 1]."""
        annotations, mask = encoder_outputs.last_hidden_state, encoder_outputs.attention_mask
        end = self.end_annotation.to(annotations.dtype).expand(annotations.shape[0], 1, -1)
        pointed = BahdanauEncoderOutput(torch.cat([end, annotations], dim=1), encoder_outputs.final_hidden_state,
                                        encoder_outputs.final_cell_state)
        return pointed, torch.cat([mask.new_ones(mask.shape[0], 1), mask], dim=1)

    pointer_memory = OldAttribute("pointer_annotations")  # its name before

    def pointer_inputs(self, encoder_outputs: BahdanauPointerNetworkEncoderOutput) -> Tensor:
        """What the decoder reads for each pointer id: [x_start; x_1 … x_S] [B, S + 1, E]."""
        embedded = encoder_outputs.inputs_embeds
        start = self.start_input.to(embedded.dtype).expand(embedded.shape[0], 1, -1)
        return torch.cat([start, embedded], dim=1)

    def pointer_log_probs(self, states: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
        """log p(C_i = j) over [end; inputs] from the decoder states [N, T, H] (``output_layers.PointingOutput``)."""
        return self.output_layer.logits(self.model.decoder.attention, states, keys, mask)

    def resize_token_embeddings(self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None,
                                mean_resizing: bool = True) -> nn.Module:
        """Refused: a pointer network's outputs are input positions, not a vocabulary (its size follows each input);
        a token-id pointer network keeps the input embedding it was built with (``config.vocab_size``)."""
        raise NotImplementedError("resize_token_embeddings does not apply to a pointer network: its outputs are "
                                  "input positions, so there is no output vocabulary to resize; build a new model "
                                  "with another `vocab_size` to read more input token ids.")

    @can_return_tuple
    def forward(
        self,
        input_features: Tensor | None = None,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        encoder_outputs: BahdanauPointerNetworkEncoderOutput | None = None,
        past_key_values: RecurrentDecoderCache | None = None,
        cache: RecurrentDecoderCache | None = None,
        labels: Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
        rows_per_source: int | None = None,
    ) -> BahdanauPointerOutput:
        """input_features [B, S, F] or input_ids [B, S] (or ``encoder_outputs`` from ``encode``), attention_mask
        [B, S] (right padding); labels [B, T] pointer ids (-100 ignored): the decoder reads them shifted right
        behind the start id 0 unless ``decoder_input_ids`` [B, T] (or [B·k, T]) are given. The loss is the summed
        cross-entropy over the labels divided by ``num_items_in_batch`` (Trainer's count) or their count.
        logits [B, T, S + 1]: log p over pointer ids; cross_attentions (with ``output_attentions``): its
        probabilities (α [B, 1, T, S + 1], the attention over [end; inputs]). ``cache``: the decoding cache
        (``past_key_values`` before transformers 5.24; either name is accepted). ``rows_per_source`` k (default 1, or
        the cache's): ``decoder_input_ids`` has k consecutive rows per input row (generate()'s beams)."""
        cache = cache_argument(cache, past_key_values)
        rows_per_source = resolve_rows_per_source(rows_per_source, cache)
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        if encoder_outputs is None:
            if cache is None:
                encoder_outputs = self.encode(input_features, input_ids, attention_mask, output_hidden_states,
                                              output_attentions)
        elif not isinstance(encoder_outputs, BahdanauPointerNetworkEncoderOutput):
            raise TypeError("`encoder_outputs` of a pointer network must be a BahdanauPointerNetworkEncoderOutput "
                            f"(from `model.encode(...)`), got {type(encoder_outputs).__name__}.")
        if cache is not None:
            inputs, mask = cache.output_layer_inputs, cache.encoded.mask
        else:
            inputs = self.pointer_inputs(encoder_outputs)
            pointed, mask = self.pointer_annotations(encoder_outputs)
        if labels is not None:
            use_cache = False
            self.output_layer.check_labels(labels, mask)
            if decoder_input_ids is None:
                decoder_input_ids = labels.new_full(labels.shape, END)
                decoder_input_ids[:, 1:] = labels[:, :-1].clamp(min=END)
            elif tuple(decoder_input_ids.shape) != tuple(labels.shape):
                raise ValueError(f"`labels` must have the shape of `decoder_input_ids` {list(decoder_input_ids.shape)} "
                                 f"([batch, steps]), got {list(labels.shape)}.")
        if decoder_input_ids is None:
            raise ValueError("Pass `decoder_input_ids` (pointer ids read so far, starting with 0) or `labels`.")
        outputs = self.model(
            encoder_outputs=None if cache is not None else pointed,
            attention_mask=None if cache is not None else mask,
            decoder_inputs_embeds=self.output_layer.decoder_inputs(decoder_input_ids, inputs, mask, rows_per_source,
                                                                   values=cache is None),
            cache=cache, use_cache=use_cache, output_attentions=output_attentions,
            output_hidden_states=True, return_dict=True, rows_per_source=rows_per_source,
            output_layer_inputs=inputs,
        )
        cache = cache_of(outputs)
        if cache is not None:
            keys = cache.encoded.projected_keys
        else:
            keys = self.model.decoder.attention.project_keys(pointed.last_hidden_state)
        logits = self.pointer_log_probs(outputs.decoder_hidden_states[-1], keys, mask)
        loss = None if labels is None else token_cross_entropy(logits, labels, num_items_in_batch)
        return BahdanauPointerOutput(
            loss=loss,
            logits=logits,
            decoder_hidden_states=outputs.decoder_hidden_states if output_hidden_states else None,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=None if encoder_outputs is None else encoder_outputs.last_hidden_state,
            encoder_hidden_states=None if encoder_outputs is None else encoder_outputs.hidden_states,
            encoder_attentions=None if encoder_outputs is None or not output_attentions else encoder_outputs.attentions,
            **{CACHE_NAME: cache},
        )

    @torch.no_grad()
    def generate(self, input_features: Tensor | None = None, generation_config=None, *,
                 input_ids: Tensor | None = None, attention_mask: Tensor | None = None, forbid_repeats: bool = False,
                 logits_processor: LogitsProcessorList | None = None, **kwargs):
        """``GenerationMixin.generate`` over pointer ids: [B, 1 + steps] (or its output object), the first column
        the decoder start 0, then positions + 1, ending with 0 (``pointing.positions`` reads a row).
        ``forbid_repeats``: never point at an input twice (``ForbidRepeatedPointers``). Without ``max_new_tokens``
        or ``max_length`` the output may point at every input once and end: S + 1 new ids."""
        if not isinstance(forbid_repeats, bool):
            raise ValueError(f"forbid_repeats must be True or False, got {forbid_repeats!r}.")
        config = generation_config or self.generation_config
        check_search_arguments(config, kwargs, None)  # its ids are positions: no vocabulary to check them against
        encoder_outputs = kwargs.pop("encoder_outputs", None)
        if encoder_outputs is None:
            encoder_outputs = self.encode(input_features, input_ids, attention_mask,
                                          output_attentions=kwargs.get("output_attentions", config.output_attentions))
        elif input_features is not None or input_ids is not None:
            raise ValueError("Pass the inputs or their `encoder_outputs`, not both.")
        if forbid_repeats:
            logits_processor = LogitsProcessorList([*(logits_processor or []), ForbidRepeatedPointers()])
        if "max_new_tokens" not in kwargs and "max_length" not in kwargs and config.max_new_tokens is None:
            kwargs["max_new_tokens"] = encoder_outputs.inputs_embeds.shape[1] + 1
        return super().generate(generation_config=generation_config, encoder_outputs=encoder_outputs,
                                attention_mask=encoder_outputs.attention_mask.long(),
                                logits_processor=logits_processor, **kwargs)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "PointerNetworkEncoderOutput": BahdanauPointerNetworkEncoderOutput,
})
