"""Images to text (Xu et al. 2015, *Show, Attend and Tell*): the recurrent decoder of the seq2seq model attending over
the regions of an image instead of the tokens of a sentence.

    a_i = the CNN's feature vector of region i, i = 1 … L = H'·W'           (``image_encoder``)
    h_0, c_0 = tanh(W_s ā), tanh(W_c ā), ā = mean_i a_i                    (``bridge="mean_cell"``)
    e_ti = f_att(a_i, h_{t−1}), α_t = softmax(e_t), ẑ_t = β_t Σ_i α_ti a_i   (soft; hard: ẑ_t = β_t a_{j_t}, j_t ~ α_t)
    β_t = σ(f_β(h_{t−1}))                                                   (``context_gate``)
    h_t = LSTM(h_{t−1}, [E y_{t−1}; ẑ_t]),  p(y_t) = softmax(L_o (L_r [h_t; ẑ_t; E y_{t−1}]))

Everything after the encoder is ``BahdanauModel``'s decoder: every decoder style, score, scope, mode (soft, hard by
straight-through or by REINFORCE), coverage, bridge and deep output of ``BahdanauConfig``, and ``generate()`` (greedy,
beam search, sampling, per-step alignments over the L regions). The loss adds Xu et al.'s doubly stochastic
regulariser λ Σ_i (1 − Σ_t α_ti)² with ``doubly_stochastic_weight`` λ.
"""

import torch
from torch import Tensor, nn
from transformers import AutoModel
from transformers.utils import can_return_tuple

from .configuration_image_to_text import BahdanauImageToTextConfig
from .image_encoder import ImageEncoder, BahdanauImageEncoderOutput
from .modeling_bahdanau import (BahdanauForConditionalGeneration, BahdanauModel, BahdanauSeq2SeqLMOutput,
                                BahdanauSeq2SeqModelOutput)
from .old_names import old_keywords
from .state import RecurrentDecoderCache, resolve_rows_per_source
from .transformers_private import cache_argument

__all__ = ["BahdanauForImageToText", "BahdanauImageToTextModel"]


class BahdanauImageToTextModel(BahdanauModel):
    """Image encoder + recurrent decoder: the pre-output vectors t [B, T, output_size] (``BahdanauSeq2SeqModelOutput``;
    its ``encoder_last_hidden_state`` holds the region annotations [B, L, D], ``cross_attentions`` α [B, 1, T, L])."""

    config_class = BahdanauImageToTextConfig
    main_input_name = "pixel_values"
    _no_split_modules = ["ImageEncoder", "RecurrentDecoder"]

    def build_encoder(self, config: BahdanauImageToTextConfig) -> nn.Module:
        return ImageEncoder(config.encoder)

    def get_input_embeddings(self) -> nn.Embedding:
        """The target embeddings (an image has no input tokens)."""
        return self.decoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.decoder.embed_tokens = value

    @can_return_tuple
    @old_keywords({"head_memory": "output_layer_inputs"})
    def forward(
        self,
        pixel_values: Tensor | None = None,
        pixel_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        encoder_outputs: BahdanauImageEncoderOutput | None = None,
        past_key_values: RecurrentDecoderCache | None = None,
        decoder_inputs_embeds: Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: RecurrentDecoderCache | None = None,
        rows_per_source: int | None = None,
        output_layer_inputs: None = None,
    ) -> BahdanauSeq2SeqModelOutput:
        """pixel_values [B, C, H, W] and pixel_mask [B, H, W] (1 = real pixel; the image processor's outputs), or
        ``encoder_outputs`` (a ``BahdanauImageEncoderOutput``); decoder_input_ids [B, T] (or decoder_inputs_embeds),
        right-padded. ``cache``/``rows_per_source`` as ``BahdanauModel.forward``."""
        cache = cache_argument(cache, past_key_values)
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        use_cache = self.config.use_cache if use_cache is None else use_cache
        self.check_decoder_inputs(decoder_input_ids, decoder_inputs_embeds)

        def encode() -> tuple[BahdanauImageEncoderOutput, Tensor]:
            outputs = (self.encoder(pixel_values, pixel_mask, output_hidden_states=output_hidden_states)
                       if encoder_outputs is None else self.check_image_outputs(encoder_outputs))
            return outputs, outputs.attention_mask

        return self.decode(encode, decoder_input_ids, decoder_inputs_embeds, decoder_attention_mask, cache, use_cache,
                           output_attentions, output_hidden_states, rows_per_source, output_layer_inputs)

    @staticmethod
    def check_decoder_inputs(decoder_input_ids: Tensor | None, decoder_inputs_embeds: Tensor | None) -> None:
        """ValueError unless one of the decoder's inputs is given."""
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            raise ValueError("Pass `decoder_input_ids` or `decoder_inputs_embeds` (or `labels` to the image-to-text "
                             "head, which shifts them right).")

    def check_image_outputs(self, encoder_outputs: BahdanauImageEncoderOutput) -> BahdanauImageEncoderOutput:
        """``encoder_outputs`` given by the caller (generate() passes the encoder's own): a
        ``BahdanauImageEncoderOutput`` whose annotations [B, L, D] match its region mask [B, L]."""
        annotations = getattr(encoder_outputs, "last_hidden_state", None)
        mask = getattr(encoder_outputs, "attention_mask", None)
        size = self.config.encoder.annotation_size
        if not isinstance(annotations, Tensor) or not isinstance(mask, Tensor):
            raise TypeError(f"`encoder_outputs` must be a BahdanauImageEncoderOutput (the model's encoder's output) "
                            f"with the annotations [batch, regions, {size}] and their `attention_mask` [batch, regions].")
        if annotations.dim() != 3 or annotations.shape[-1] != size or tuple(mask.shape) != tuple(annotations.shape[:2]):
            raise ValueError(f"`encoder_outputs` must hold annotations [batch, regions, {size}] and an `attention_mask` "
                             f"[batch, regions], got {list(annotations.shape)} and {list(mask.shape)}.")
        return encoder_outputs


class BahdanauForImageToText(BahdanauForConditionalGeneration):
    """p(y_t | y_<t, image) = softmax(W_o t_t): the image-to-text head (``AutoModelForImageTextToText``), trained with
    ``labels`` (-100 ignored) and decoded with ``generate(pixel_values, pixel_mask=…)``."""

    config_class = BahdanauImageToTextConfig
    main_input_name = "pixel_values"
    seq2seq_model_class = BahdanauImageToTextModel

    def __init__(self, config: BahdanauImageToTextConfig):
        super().__init__(config)
        if config.encoder.backbone is not None and config.encoder.use_pretrained_backbone:
            self.load_backbone_weights(config.encoder.backbone)

    def load_backbone_weights(self, name_or_path: str) -> None:
        """Load a vision checkpoint's weights (a Hub name or a local folder) into the backbone encoder; the encoder
        config's ``use_pretrained_backbone`` becomes False (the weights are the model's own from then on)."""
        regions = self.model.encoder.regions
        if not hasattr(regions, "backbone"):
            raise ValueError("This model's encoder is the CNN of `cnn_channels`, not a backbone: set "
                             "`backbone_config` (or `backbone`) to use a vision checkpoint.")
        pretrained = AutoModel.from_pretrained(name_or_path)
        regions.backbone.load_state_dict(pretrained.state_dict())
        self.config.encoder.use_pretrained_backbone = False

    def prepare_inputs_for_generation(self, input_ids: Tensor, **model_kwargs) -> dict:
        """The step's inputs: the pixels are read once, by the encoder before the first step."""
        inputs = super().prepare_inputs_for_generation(input_ids, **model_kwargs)
        inputs.pop("pixel_values", None)
        return inputs

    @can_return_tuple
    def forward(
        self,
        pixel_values: Tensor | None = None,
        pixel_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        encoder_outputs: BahdanauImageEncoderOutput | None = None,
        past_key_values: RecurrentDecoderCache | None = None,
        decoder_inputs_embeds: Tensor | None = None,
        labels: Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
        logits_to_keep: int | Tensor = 0,
        cache: RecurrentDecoderCache | None = None,
        rows_per_source: int | None = None,
    ) -> BahdanauSeq2SeqLMOutput:
        """labels [B, T]: target ids, -100 where ignored; the loss is their summed cross-entropy, plus λ times the
        doubly stochastic regulariser (``doubly_stochastic_weight``), the coverage loss and REINFORCE's terms when
        configured, divided by ``num_items_in_batch`` or by the labels' count (``BahdanauForConditionalGeneration``'s
        rule; its ``forward`` documents ``logits_to_keep``, ``cache`` and ``rows_per_source``)."""
        cache = cache_argument(cache, past_key_values)
        rows_per_source = resolve_rows_per_source(rows_per_source, cache)
        if labels is not None:
            use_cache = False
            decoder_input_ids = self._decoder_inputs_from_labels(labels, decoder_input_ids, decoder_inputs_embeds,
                                                                 self.config.decoder.vocab_size)
            self._check_label_rows(labels, rows_per_source, cache, pixel_values=pixel_values,
                                   encoder_outputs=encoder_outputs)
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        use_cache = self.config.use_cache if use_cache is None else use_cache
        self.model.check_decoder_inputs(decoder_input_ids, decoder_inputs_embeds)
        if cache is None:  # the encoder's own output goes to the decoder as it is; a caller's is checked once
            encoder_outputs = (self.model.encoder(pixel_values, pixel_mask, output_hidden_states=output_hidden_states)
                               if encoder_outputs is None else self.model.check_image_outputs(encoder_outputs))
        outputs = self.model.decode(
            lambda: (encoder_outputs, encoder_outputs.attention_mask), decoder_input_ids, decoder_inputs_embeds,
            decoder_attention_mask, cache, use_cache, output_attentions or self._reads_attention(labels),
            output_hidden_states, rows_per_source, None)
        region_mask = None if encoder_outputs is None else encoder_outputs.attention_mask
        return self._lm_output(outputs, labels, region_mask, None, rows_per_source, num_items_in_batch,
                               logits_to_keep, output_attentions)

