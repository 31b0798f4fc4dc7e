"""transformers models of the RNN encoder–attention–decoder family."""

import shutil
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from transformers import GenerationConfig, GenerationMixin
from transformers import initialization as init
from transformers.modeling_outputs import Seq2SeqLMOutput, Seq2SeqModelOutput
from transformers.utils import can_return_tuple

from .configuration_bahdanau import CUSTOM_PIPELINES, BahdanauConfig, name_head_pipelines
from .decoder import DecoderOutput, StepPlan, build_decoder
from .encoder import BahdanauEncoder, BahdanauEncoderOutput, token_embedding
from .input_checks import check_embeddings, check_token_ids
from .loss import per_target, token_cross_entropy
from .meta_embedding import CharacterSource, PretrainedSource, spell_tokens
from .loss_terms import HeadOutputs, add_loss_terms, build_loss_terms
from .old_names import old_keywords
from .output_layers import seq2seq_output_layer
from .pretrained_base import BahdanauBasePreTrainedModel
from .recurrent import RNN_TYPES
from .reinforce import MovingAverageBaseline
from .search import BEAM_PENALTY_OPTIONS, FastSearchMixin
from .state import EncodedSource, RecurrentDecoderCache, resolve_rows_per_source
from .transformers_private import (CACHE_NAME, EMBEDDING_RESIZE, SHARED_BEAM_MEMORY, cache_argument, cache_of,
                                   check_release, fall_back_once)


def shift_tokens_right(labels: Tensor, pad_token_id: int, decoder_start_token_id: int) -> Tensor:
    """Decoder inputs from labels: [start, y_1, …, y_{T-1}], with -100 replaced by the pad id; ValueError naming the
    config field that is None (the config allows it for a model that is given its decoder inputs)."""
    for field, value in (("decoder_start_token_id", decoder_start_token_id), ("pad_token_id", pad_token_id)):
        if value is None:
            raise ValueError(f"`config.{field}` is None, so the decoder's inputs cannot be made by shifting the "
                             "target ids right ([decoder_start_token_id, y_1, …], -100 read as pad_token_id): set it, "
                             "or pass `decoder_input_ids`.")
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == -100, pad_token_id)


def check_decoder_rows(name: str, tensor: Tensor, sources: int, rows_per_source: int, of: str) -> None:
    """``tensor`` [rows, …], the caller's argument ``name``, holds ``rows_per_source`` k rows for each of the
    ``sources`` sources (``of``: what they are, e.g. "of `input_ids` [3, 5]")."""
    if tensor.shape[0] != sources * rows_per_source:
        rows = "one row" if rows_per_source == 1 else f"`rows_per_source` = {rows_per_source} rows"
        raise ValueError(f"`{name}` {list(tensor.shape)} must have {rows} for each of the {sources} sources {of} "
                         f"({sources * rows_per_source} rows), got {tensor.shape[0]}.")


@dataclass
class BahdanauSeq2SeqModelOutput(Seq2SeqModelOutput):
    r"""``Seq2SeqModelOutput`` of ``BahdanauModel``.

    last_hidden_state [B, T, output_size]: the pre-output vectors t_i that the LM head projects onto the vocabulary
    (the deep output's; Luong's attentional vectors h̃_t), not a decoder state. The decoder RNN's states are in
    ``decoder_hidden_states`` (with ``output_hidden_states``: the embedded inputs, then each layer bottom to top).
    cross_attentions: (α [B, 1, T, S],) over the caller's source columns (with ``output_attentions``).
    encoder_attentions: with ``encoder_self_attention`` and ``output_attentions``, (α [B, 1, S, S],), the encoder's
    self-attention (row j: what annotation j attended to; ``self_attention``).
    embedding_attentions: with ``meta_embedding_sources`` and ``output_attentions``, α [B, S, K]: how much each source
    token's embedding takes from each of the K sources (``meta_embedding``; 0 on padding).
    p_gen_logits [B, T]: with ``copy_attention``, g_t of the pointer-generator's p_gen = σ(g_t).
    attention_policy: in training with ``attention_mode="hard_reinforce"``, (log α_{t,j_t}, H(α_t)), each [B, T]: the
    log-probability of each step's sampled position and the entropy of its distribution (``reinforce``).
    """

    embedding_attentions: Tensor | None = None
    p_gen_logits: Tensor | None = None
    attention_policy: tuple[Tensor, Tensor] | None = None


@dataclass
class BahdanauSeq2SeqLMOutput(Seq2SeqLMOutput):
    r"""``Seq2SeqLMOutput`` of ``BahdanauForConditionalGeneration``.

    coverage_loss: with ``labels`` and ``config.coverage_loss_weight`` λ > 0, See et al.'s Σ_t Σ_j min(α_tj, c_tj)
    per target token (before λ; ``loss`` includes λ times it), for logging beside the cross-entropy.
    doubly_stochastic_loss: with ``labels`` and ``config.doubly_stochastic_weight`` λ > 0, Xu et al.'s Σ_j (1 − Σ_t
    α_tj)² over the real source positions, per target token (before λ; ``loss`` includes λ times it).
    reinforce_loss: in training with ``attention_mode="hard_reinforce"``, the score-function and entropy terms
    −(R − b) Σ_t log α_{t,j_t} − λ_e Σ_t H(α_t) per target token (``reinforce``; ``loss`` includes it).
    encoder_attentions: with ``encoder_self_attention`` and ``output_attentions``, (α [B, 1, S, S],) as
    ``BahdanauSeq2SeqModelOutput``'s.
    embedding_attentions: with ``meta_embedding_sources`` and ``output_attentions``, α [B, S, K] as
    ``BahdanauSeq2SeqModelOutput``'s.
    p_gen [B, T]: with ``copy_attention`` and ``output_attentions``, the probability of generating from the
    vocabulary at each step (1 − p_gen: of copying with ``cross_attentions``' weights).
    logits: with ``copy_attention``, log P(w) of the pointer-generator's mixture over the extended vocabulary
    [B, T, V + n] (``pointer_generator``).
    """

    coverage_loss: Tensor | None = None
    doubly_stochastic_loss: Tensor | None = None
    reinforce_loss: Tensor | None = None
    embedding_attentions: Tensor | None = None
    p_gen: Tensor | None = None


class BahdanauPreTrainedModel(BahdanauBasePreTrainedModel):
    config_class = BahdanauConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False
    _no_split_modules = ["BahdanauEncoder", "RecurrentDecoder"]
    _is_stateful = True  # the decoder state cannot be rolled back a token: generate() refuses assisted decoding

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the decoder state is recurrent: RecurrentDecoderCache, not key/value tensors

    def _init_layer(self, module: nn.Module) -> None:
        """torch's layers: embeddings N(0, init_std²); linear maps Xavier-uniform; RNN input weights Xavier-uniform,
        recurrent weights orthogonal (Bahdanau et al., appendix B); their biases 0. The modules of ours with an
        ``init_parameters()`` method (the context gate, the Gaussian kernel's width, the monotonic scope's energy,
        REINFORCE's baseline, the image encoder's convolutions, the pointer network's start and end vectors)
        initialise themselves (``BahdanauBasePreTrainedModel._init_weights``)."""
        if isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.config.init_std)
        elif isinstance(module, nn.Linear):
            init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, (nn.GRU, nn.LSTM, nn.RNN)):
            for name, param in module.named_parameters():
                if name.startswith("weight_hh"):
                    init.orthogonal_(param)
                elif name.startswith("weight_ih"):
                    init.xavier_uniform_(param)
                else:
                    init.zeros_(param)

    def _upload_modified_files(self, working_dir, repo_id, files_timestamps, **kwargs):
        """``push_to_hub``'s upload step. A model loaded from a folder with a model card (``README.md``, e.g. from
        ``python -m hf_bahdanau.cards``) ships that card and its ``*.png`` pictures instead of transformers' template."""
        source = Path(self.name_or_path)
        if self.name_or_path and (source / "README.md").is_file():
            for path in (source / "README.md", *source.glob("*.png")):
                shutil.copyfile(path, Path(working_dir) / path.name)
        return super()._upload_modified_files(working_dir=working_dir, repo_id=repo_id,
                                              files_timestamps=files_timestamps, **kwargs)

    def set_token_spellings(self, tokens: Any) -> None:
        """Spell the vocabulary for the ``"chars"`` meta-embedding source: token id i is spelled ``tokens[i]``, a
        sequence of strings or a tokenizer (its ``convert_ids_to_tokens``). A token None (what ``convert_ids_to_tokens``
        gives for an id the tokenizer lacks) has no text and is spelled empty. Widens ``config.token_spelling_length``
        to the longest spelling; the spellings are saved with the model."""
        sources = [module for module in self.modules() if isinstance(module, CharacterSource)]
        if not sources:
            raise ValueError(f"This model spells no tokens: `meta_embedding_sources` is "
                             f"{self.config.meta_embedding_sources!r}, without 'chars'.")
        if isinstance(tokens, str) or not (isinstance(tokens, Sequence) or hasattr(tokens, "convert_ids_to_tokens")):
            raise TypeError(f"`tokens` must be a sequence of strings (token id i spelled tokens[i]) or a tokenizer, "
                            f"got {type(tokens).__name__}.")
        if not isinstance(tokens, Sequence):
            tokens = tokens.convert_ids_to_tokens(list(range(len(tokens))))
        for token_id, token in enumerate(tokens):
            if token is not None and not isinstance(token, str):
                raise TypeError(f"`tokens[{token_id}]`, the spelling of token id {token_id}, must be a string (or "
                                f"None: no text), got {token!r} ({type(token).__name__}).")
        tokens = [token or "" for token in tokens]
        vocab_size = self.get_input_embeddings().num_embeddings  # after resize_token_embeddings too
        if len(tokens) > vocab_size:
            raise ValueError(f"`tokens` holds {len(tokens)} tokens, but the model's vocabulary has {vocab_size}: "
                             "resize the embeddings first (`resize_token_embeddings`).")
        spellings = spell_tokens(tokens)
        width = max(spellings.shape[1], self.config.token_spelling_length)
        table = spellings.new_zeros(vocab_size, width)
        table[:len(tokens), :spellings.shape[1]] = spellings
        self.config.token_spelling_length = width
        for source in sources:
            source.set_spellings(table)

    def set_pretrained_vectors(self, vectors: Any) -> None:
        """The ``"pretrained"`` meta-embedding source's fixed vectors [n ≤ vocab_size, pretrained_embedding_size], a
        tensor or a numpy array of real numbers, row i for token id i (``hf_bahdanau.word_vectors.read_word_vectors``
        reads a GloVe/fastText text file); the rows after n are 0. Saved with the model, never trained."""
        sources = [module for module in self.modules() if isinstance(module, PretrainedSource)]
        if not sources:
            raise ValueError(f"This model reads no pretrained vectors: `meta_embedding_sources` is "
                             f"{self.config.meta_embedding_sources!r}, without 'pretrained'.")
        if isinstance(vectors, np.ndarray):
            if vectors.dtype.kind not in "fiu":
                raise TypeError(f"`vectors` must hold real numbers, got a numpy array of dtype {vectors.dtype}.")
            vectors = torch.from_numpy(vectors.astype(np.float64))  # any byte order and strides
        if not isinstance(vectors, Tensor):
            raise TypeError(f"`vectors` must be a torch tensor or a numpy array [n, pretrained_embedding_size], got "
                            f"{type(vectors).__name__}.")
        if vectors.dtype == torch.bool or vectors.is_complex():
            raise TypeError(f"`vectors` must hold real numbers, got dtype {vectors.dtype}.")
        table = sources[0].vectors.new_zeros(self.get_input_embeddings().num_embeddings, sources[0].vectors.shape[1])
        if vectors.dim() != 2 or vectors.shape[1] != table.shape[1] or len(vectors) > len(table):
            raise ValueError(f"`vectors` must be [n ≤ vocab_size={len(table)}, pretrained_embedding_size="
                             f"{table.shape[1]}], got {list(vectors.shape)}.")
        if not torch.isfinite(vectors).all():
            raise ValueError("`vectors` must be finite numbers; it holds inf or nan.")
        table[:len(vectors)] = vectors
        for source in sources:
            source.set_vectors(table)

    def resize_token_embeddings(self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None,
                                mean_resizing: bool = True) -> nn.Embedding:
        """transformers' ``resize_token_embeddings``, which reaches the target embedding through the private
        ``_resize_token_embeddings`` below: refused clearly where transformers changed it (``transformers_private``),
        instead of resizing the source embedding alone."""
        if not EMBEDDING_RESIZE:
            import transformers

            raise NotImplementedError(f"resize_token_embeddings of hf_bahdanau models needs transformers' "
                                      f"_resize_token_embeddings and _get_resized_embeddings, which transformers "
                                      f"{transformers.__version__} changed.")
        return super().resize_token_embeddings(new_num_tokens=new_num_tokens, pad_to_multiple_of=pad_to_multiple_of,
                                               mean_resizing=mean_resizing)

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        """Source and target embeddings are separate matrices over one vocabulary: resize both."""
        encoder_embeddings = super()._resize_token_embeddings(
            new_num_tokens=new_num_tokens, pad_to_multiple_of=pad_to_multiple_of, mean_resizing=mean_resizing)
        decoder = self.get_decoder()
        decoder.embed_tokens = self._get_resized_embeddings(
            old_embeddings=decoder.embed_tokens, new_num_tokens=encoder_embeddings.weight.shape[0],
            mean_resizing=mean_resizing)
        return encoder_embeddings


class BahdanauModel(BahdanauPreTrainedModel):
    """Encoder + decoder: the pre-output vectors t [B, T, output_size] (``BahdanauSeq2SeqModelOutput``)."""

    def __init__(self, config: BahdanauConfig):
        super().__init__(config)
        self.encoder = self.build_encoder(config)
        self.decoder = build_decoder(config, token_embedding(config))
        self.post_init()

    def build_encoder(self, config: BahdanauConfig) -> nn.Module:
        """The encoder whose outputs the decoder attends over: here the RNN over source tokens."""
        return BahdanauEncoder(config, token_embedding(config))

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens = value

    def get_decoder(self) -> nn.Module:
        return self.decoder

    def step_plan(self, cache: RecurrentDecoderCache) -> StepPlan | None:
        """The decoder's step setup for the cache's encoded source, built once and kept in the cache for the steps of a
        search; None under autograd, where each forward builds its own (its gradients are gathered per loop)."""
        if torch.is_grad_enabled():
            return None
        if cache.step_plan is None:
            cache.step_plan = self.decoder.plan_steps(cache.encoded)
        return cache.step_plan

    @can_return_tuple
    @old_keywords({"head_memory": "output_layer_inputs"})
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        encoder_outputs: BahdanauEncoderOutput | tuple | None = None,
        past_key_values: RecurrentDecoderCache | None = None,
        inputs_embeds: Tensor | None = None,
        decoder_inputs_embeds: Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: RecurrentDecoderCache | None = None,
        rows_per_source: int | None = None,
        output_layer_inputs: Any = None,
    ) -> BahdanauSeq2SeqModelOutput:
        """input_ids/attention_mask [B, S] (or inputs_embeds [B, S, E], or encoder_outputs); decoder_input_ids [B, T]
        (or decoder_inputs_embeds [B, T, E]; neither: input_ids shifted right, as BART does), right-padded: the
        decoder is causal, so ``decoder_attention_mask`` is accepted and not needed. ``rows_per_source`` k (default 1,
        or the cache's): the decoder runs [B·k, T], k consecutive rows per source, which share its encoded source
        (generate()'s beams).
        With a ``cache`` (``past_key_values`` before transformers 5.24: either name) only the new decoder tokens are
        read and the source is not re-encoded; a new cache keeps ``output_layer_inputs``, what the head's output layer
        reads per source at every step (``RecurrentDecoderCache``; ``head_memory`` before, still accepted with a
        FutureWarning).

        Returns ``BahdanauSeq2SeqModelOutput``: its ``last_hidden_state`` is the pre-output t, not a decoder state;
        its cache field is ``cache`` (``past_key_values`` before transformers 5.24)."""
        cache = cache_argument(cache, past_key_values)
        output_attentions, output_hidden_states = self.output_flags(output_attentions, output_hidden_states)
        use_cache = self.config.use_cache if use_cache is None else use_cache
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            if input_ids is None:
                raise ValueError("Pass `decoder_input_ids` or `decoder_inputs_embeds` (or `input_ids`, shifted right "
                                 "as the decoder's inputs; or `labels` to the LM head).")
            check_token_ids("input_ids", input_ids, self.config.vocab_size)
            decoder_input_ids = shift_tokens_right(input_ids, self.config.pad_token_id,
                                                   self.config.decoder_start_token_id)

        def encode() -> tuple[BahdanauEncoderOutput, Tensor | None]:
            if encoder_outputs is None:
                return self.encoder(
                    input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
                    output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                ), attention_mask
            return self._check_encoder_outputs(encoder_outputs, attention_mask), attention_mask

        return self.decode(encode, decoder_input_ids, decoder_inputs_embeds, decoder_attention_mask, cache, use_cache,
                           output_attentions, output_hidden_states, rows_per_source, output_layer_inputs)

    def decode(self, encode: Callable[[], tuple[BahdanauEncoderOutput, Tensor | None]],
               decoder_input_ids: Tensor | None, decoder_inputs_embeds: Tensor | None,
               decoder_attention_mask: Tensor | None, cache: RecurrentDecoderCache | None, use_cache: bool,
               output_attentions: bool, output_hidden_states: bool, rows_per_source: int | None,
               output_layer_inputs: Any) -> BahdanauSeq2SeqModelOutput:
        """``forward`` after its arguments are read: the decoder on its inputs, from the ``cache`` or from the encoded
        source of ``encode()`` -> (encoder outputs, their mask [B, S] or None), which runs only without a cache (every
        model with this decoder shares it: the image-to-text model encodes pixels)."""
        # through a cache, the ids are the search's picks: no host round trip per step to check their range
        self.decoder.check_inputs(decoder_input_ids, decoder_inputs_embeds, decoder_attention_mask,
                                  values=cache is None)
        rows_per_source = resolve_rows_per_source(rows_per_source, cache)
        encoder_outputs = None
        if cache is None:
            encoder_outputs, attention_mask = encode()
            encoded = self.decoder.prepare_encoded_source(encoder_outputs, attention_mask)
            state = self.decoder.initial_state(encoder_outputs, encoded, keep_coverage=use_cache)
            sources = encoded.batch_size
            if rows_per_source > 1:
                encoded, state = self.decoder.serve_rows(encoded, state, rows_per_source)
        else:
            encoded, state = cache.encoded, cache.state
            sources = encoded.batch_size * encoded.rows_per_source // rows_per_source
        decoder_inputs = ("decoder_input_ids", decoder_input_ids) if decoder_inputs_embeds is None else (
            "decoder_inputs_embeds", decoder_inputs_embeds)
        check_decoder_rows(*decoder_inputs, sources, rows_per_source,
                           "of the `cache`" if cache is not None else "in the batch")

        plan = None if cache is None else self.step_plan(cache)
        decoded: DecoderOutput = self.decoder(decoder_input_ids, encoded, state, plan,
                                              inputs_embeds=decoder_inputs_embeds,
                                              output_hidden_states=output_hidden_states)
        if use_cache:
            if cache is None:
                cache = RecurrentDecoderCache(encoded, decoded.state, output_layer_inputs, rows_per_source)
            cache.update_state(decoded.state, decoded.pre_output.shape[1])

        weights = decoded.attention_weights
        return BahdanauSeq2SeqModelOutput(
            last_hidden_state=decoded.pre_output,
            decoder_hidden_states=decoded.hidden_states,
            cross_attentions=((encoded.to_caller_layout(weights).unsqueeze(1),)
                              if output_attentions and weights is not None else None),
            encoder_last_hidden_state=None if encoder_outputs is None else encoder_outputs.last_hidden_state,
            encoder_hidden_states=None if encoder_outputs is None else encoder_outputs.hidden_states,
            encoder_attentions=None if encoder_outputs is None or not output_attentions else encoder_outputs.attentions,
            embedding_attentions=(None if encoder_outputs is None or not output_attentions
                                  else encoder_outputs.get("embedding_attentions")),
            p_gen_logits=decoded.generation_gate,
            attention_policy=None if decoded.state.attention is None else decoded.state.attention.policy_terms(),
            **{CACHE_NAME: cache if use_cache else None},
        )

    def _check_encoder_outputs(self, encoder_outputs: BahdanauEncoderOutput | tuple,
                               attention_mask: Tensor | None) -> BahdanauEncoderOutput:
        """``encoder_outputs`` given by the caller (generate() passes the encoder's own): as ``BahdanauEncoderOutput``,
        its annotations [B, S, encoder_output_size] matching ``attention_mask`` [B, S]."""
        if isinstance(encoder_outputs, tuple):
            has_cell = RNN_TYPES[self.config.rnn_type].has_memory_cell
            encoder_outputs = BahdanauEncoderOutput.from_tuple(encoder_outputs, has_cell)
        annotations = getattr(encoder_outputs, "last_hidden_state", None)
        if not isinstance(annotations, Tensor):
            raise TypeError("`encoder_outputs` must be a BahdanauEncoderOutput (or its tuple) whose first field holds "
                            f"the annotations [batch, source, {self.config.encoder_output_size}].")
        check_embeddings("encoder_outputs", annotations, self.config.encoder_output_size,
                         what="[batch, source, encoder_output_size] annotations")
        if attention_mask is not None and tuple(attention_mask.shape) != tuple(annotations.shape[:2]):
            raise ValueError(f"`encoder_outputs` has annotations of shape {list(annotations.shape)}, which do not match "
                             f"`attention_mask` of shape {list(attention_mask.shape)} ([batch, source]).")
        final = encoder_outputs.final_hidden_state
        expected = [annotations.shape[0], self.config.encoder_layers, self.config.encoder_output_size]
        if final is not None and list(final.shape) != expected:
            raise ValueError(f"`encoder_outputs.final_hidden_state` must be {expected} ([batch, encoder_layers, "
                             f"encoder_output_size]), got {list(final.shape)}.")
        return encoder_outputs

    def search_step(self, tokens: Tensor, cache: RecurrentDecoderCache) -> DecoderOutput:
        """One step of a search: the decoder on tokens [N, 1] from the cache's state; advances ``cache``. The same
        computation as ``forward(decoder_input_ids=tokens, cache=cache)``, without its output objects."""
        decoded = self.decoder(tokens, cache.encoded, cache.state, self.step_plan(cache))
        cache.update_state(decoded.state, tokens.shape[1])
        return decoded


class RecurrentGenerationMixin(GenerationMixin):
    """What ``generate()`` needs of every recurrent encoder–decoder head here: the step's inputs read from the cache,
    and beams that share their source's encoder outputs and what the head's ``output_layer`` reads per source."""

    def prepare_inputs_for_generation(
        self,
        input_ids: Tensor,
        next_sequence_length: int | None = None,
        past_key_values: RecurrentDecoderCache | None = None,
        is_first_iteration: bool | None = None,
        cache: RecurrentDecoderCache | None = None,
        **model_kwargs,
    ) -> dict:
        """One generate() step: ``input_ids`` is the decoder's sequence so far [N, L], of which the new tokens are
        read; the cache (``cache``, or ``past_key_values`` before transformers 5.24), the encoder outputs and every
        other keyword argument go to ``forward`` unchanged.

        The generic version also builds position ids and 4-D masks and inspects ``forward``'s signature at
        every step, which costs more than a decoder step at batch size 1.
        """
        if next_sequence_length is not None:
            input_ids = input_ids[:, -next_sequence_length:]
        model_kwargs.pop("labels", None)
        return dict(model_kwargs, decoder_input_ids=input_ids, cache=cache_argument(cache, past_key_values))

    def _expand_inputs_for_generation(self, expand_size: int = 1, is_encoder_decoder: bool = False,
                                      input_ids: Tensor | None = None, **model_kwargs) -> tuple[Tensor, dict]:
        """Beam search (and several returned sequences) run k decoder rows per source. transformers copies the
        encoder outputs and the source mask k times; here the k rows share one copy, and ``rows_per_source=k`` tells
        ``forward`` so (``BahdanauModel.forward``); so do the output layer's per-source inputs (``per_source_inputs``,
        e.g. the pointer-generator's ``copy_input_ids``).
        No returned field changes: generate() returns the encoder's per-layer states, which it never copied."""
        expand = super()._expand_inputs_for_generation
        if expand_size == 1:
            return expand(expand_size=expand_size, is_encoder_decoder=is_encoder_decoder, input_ids=input_ids,
                          **model_kwargs)
        if not SHARED_BEAM_MEMORY:
            return fall_back_once("the beams of a source sharing its encoded source", expand,
                                  expand_size=expand_size, is_encoder_decoder=is_encoder_decoder, input_ids=input_ids,
                                  **model_kwargs)
        shared = {key: model_kwargs.pop(key)
                  for key in ("encoder_outputs", "attention_mask", *self.output_layer.per_source_inputs)
                  if key in model_kwargs}
        input_ids, model_kwargs = expand(expand_size=expand_size, is_encoder_decoder=False, input_ids=input_ids,
                                         **model_kwargs)
        return input_ids, {**model_kwargs, **shared, "rows_per_source": expand_size}


class BahdanauForConditionalGeneration(BahdanauPreTrainedModel, FastSearchMixin, RecurrentGenerationMixin):
    """p(y_i | y_<i, x) = softmax(W_o t_i): the seq2seq LM head, trained with ``labels`` (-100 ignored)
    and decoded with ``generate()``."""

    _tied_weights_keys = {"lm_head.weight": "model.decoder.embed_tokens.weight"}
    accepts_loss_kwargs = True  # Trainer passes num_items_in_batch: the loss is exact under gradient accumulation

    seq2seq_model_class = BahdanauModel  # the encoder–decoder under the head
    loss_term_names = ("coverage_loss", "doubly_stochastic_loss", "reinforce_loss")  # those its config may turn on

    def __init__(self, config: BahdanauConfig):
        super().__init__(config)
        self.model = self.seq2seq_model_class(config)
        self.output_dropout = nn.Dropout(config.dropout)
        self.lm_head = nn.Linear(config.output_size, config.vocab_size)
        self.output_layer = seq2seq_output_layer(config)  # softmax, or the pointer-generator (``output_layers``)
        # b of REINFORCE's score-function term, with attention_mode="hard_reinforce" (``reinforce``)
        self.reinforce_baseline = (MovingAverageBaseline(config.reinforce_baseline_decay)
                                   if config.attention_mode == "hard_reinforce" else None)
        self.loss_terms = build_loss_terms(config, self, self.loss_term_names)  # loss = NLL + Σ_k λ_k term_k
        name_head_pipelines(config, CUSTOM_PIPELINES)  # pipeline(model=folder, trust_remote_code=True)
        self.post_init()

    def save_pretrained(self, save_directory, *args, **kwargs):
        """``PreTrainedModel.save_pretrained``, keeping GNMT's options in generation_config.json: a generation config
        made from the model config is saved marked ``_from_model_config``, and transformers then reads back only
        its own fields, so ``coverage_penalty`` and ``length_penalty_style`` would be lost on loading."""
        if any(getattr(self.generation_config, name, None) is not None for name in BEAM_PENALTY_OPTIONS):
            self.generation_config._from_model_config = False
        return super().save_pretrained(save_directory, *args, **kwargs)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def prepare_decoder_input_ids_from_labels(self, labels: Tensor) -> Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def generate(self, inputs: Tensor | None = None, generation_config: GenerationConfig | None = None, **kwargs):
        """``GenerationMixin.generate``, with what the output layer's steps read (``generate_inputs``): with
        ``copy_attention`` the model copies from the source ids (``inputs`` or ``input_ids``) unless
        ``copy_input_ids`` gives them in the extended vocabulary (``copying``)."""
        self.output_layer.generate_inputs(inputs, kwargs)
        return super().generate(inputs, generation_config, **kwargs)

    def _next_token_logits(self, tokens: Tensor, cache: RecurrentDecoderCache) -> Tensor:
        """tokens [N, 1] -> logits [N, V] of the token after them; advances ``cache``. The logits of
        ``forward(decoder_input_ids=tokens, cache=cache)``, without its output objects (greedy and
        beam search call this at every step; at batch size 1 the objects cost a third of a step)."""
        decoded = self.model.search_step(self.output_layer.read_back(tokens), cache)
        return self.decoded_logits(decoded, cache.encoded, cache.output_layer_inputs, cache.rows_per_source)[:, -1]

    def decoded_logits(self, decoded: DecoderOutput, encoded: EncodedSource, output_layer_inputs: Any,
                       rows_per_source: int) -> Tensor:
        """The head's logits of decoder steps that read ``encoded``: ``output_head`` on their pre-outputs (after the
        output dropout), attention weights (read back to the caller's source columns) and gate logits ->
        [N, T, V] (softmax) or [N, T, V + n] (pointer-generator). The search steps and the ONNX step graph
        (``hf_bahdanau.onnx``) compute their logits here."""
        weights = (encoded.to_caller_layout(decoded.attention_weights) if self.output_layer.reads_attention
                   else None)
        return self.output_head(self.output_dropout(decoded.pre_output), weights, decoded.generation_gate,
                                output_layer_inputs, rows_per_source)

    def output_head(self, pre_output: Tensor, weights: Tensor | None, gate_logits: Tensor | None, source: Any,
                    rows_per_source: int) -> Tensor:
        """The output layer, for ``forward`` and for each search step: pre-outputs t [N, T, output_size] ->
        ``self.output_layer``'s logits from W_o t + b [N, T, V], the attention weights α [N, T, S] (over the caller's
        source columns), the gate logits g [N, T] and its ``source`` (the cache's ``output_layer_inputs``): W_o t + b
        itself (softmax), or log P(w) over the extended vocabulary [N, T, V + n] (pointer-generator).
        N = B · rows_per_source."""
        return self.output_layer.logits(self.lm_head(pre_output), weights, gate_logits, source, rows_per_source)

    @can_return_tuple
    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        encoder_outputs: BahdanauEncoderOutput | tuple | None = None,
        past_key_values: RecurrentDecoderCache | None = None,
        inputs_embeds: Tensor | None = None,
        decoder_inputs_embeds: Tensor | None = None,
        labels: Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | Tensor | None = None,
        logits_to_keep: int | Tensor = 0,
        copy_input_ids: Tensor | None = None,
        cache: RecurrentDecoderCache | None = None,
        rows_per_source: int | None = None,
    ) -> BahdanauSeq2SeqLMOutput:
        """labels [B, T]: target ids, -100 where ignored (the decoder inputs are the labels shifted right unless given,
        with the labels' shape); the loss is their summed cross-entropy (plus λ times the coverage loss, when
        ``coverage_loss_weight`` λ > 0) divided by ``num_items_in_batch`` (given by Trainer across
        gradient-accumulation steps) or by their count. In training mode with labels the loss is
        fused with the vocabulary projection and ``logits`` is None (``model.eval()``, or calling without labels,
        gives the logits). ``logits_to_keep``: k > 0 computes the logits of the last k positions only (generate()
        asks for 1), a tensor those positions; ``return_dict`` is read by ``can_return_tuple``.

        With ``copy_attention``: ``copy_input_ids`` [B, S] are the source ids in the extended vocabulary (default:
        ``input_ids``; ``copying.encode_with_copies`` makes them); labels and decoder inputs may hold their ids ≥
        vocab_size (decoder inputs read them as ``unk_token_id``), and ``logits`` is log P(w) of the mixture.
        ``cache``: the decoding cache (``past_key_values`` before transformers 5.24; either name is accepted).
        ``rows_per_source`` k (default 1, or the cache's): the decoder inputs and labels have k consecutive rows per
        source [B·k, T] (generate()'s beams share each source's encoded source)."""
        cache = cache_argument(cache, past_key_values)
        rows_per_source = resolve_rows_per_source(rows_per_source, cache)
        source = self.output_layer.source(copy_input_ids, input_ids, attention_mask, cache)
        vocabulary = self.output_layer.vocabulary(source)
        if labels is not None:
            use_cache = False
            decoder_input_ids = self._decoder_inputs_from_labels(labels, decoder_input_ids, decoder_inputs_embeds,
                                                                 vocabulary)
            self._check_label_rows(labels, rows_per_source, cache, input_ids=input_ids, inputs_embeds=inputs_embeds,
                                   encoder_outputs=encoder_outputs)
            self.output_layer.check_labels(labels, source, rows_per_source)
        if decoder_input_ids is not None:
            decoder_input_ids = self.output_layer.decoder_inputs(decoder_input_ids, vocabulary, values=cache is None)
        output_attentions = self.config.output_attentions if output_attentions is None else output_attentions
        outputs = self.model(
            input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask, encoder_outputs=encoder_outputs,
            cache=cache, inputs_embeds=inputs_embeds, decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache, output_attentions=output_attentions or self._reads_attention(labels),
            output_hidden_states=output_hidden_states, return_dict=True, rows_per_source=rows_per_source,
            output_layer_inputs=source,
        )
        return self._lm_output(outputs, labels, attention_mask, source, rows_per_source, num_items_in_batch,
                               logits_to_keep, output_attentions)

    def _decoder_inputs_from_labels(self, labels: Tensor, decoder_input_ids: Tensor | None,
                                    decoder_inputs_embeds: Tensor | None, vocabulary: int) -> Tensor | None:
        """Checks ``labels`` [B, T] (ids in [0, vocabulary) or -100, the decoder inputs' shape); returns the decoder
        inputs: the given ones, else the labels shifted right."""
        check_token_ids("labels", labels, vocabulary, ignore_index=-100, what="[batch, target tokens] (-100 = ignored)")
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        decoder_shape = (decoder_input_ids if decoder_inputs_embeds is None else decoder_inputs_embeds).shape[:2]
        if tuple(labels.shape) != tuple(decoder_shape):
            raise ValueError(f"`labels` must have the decoder inputs' shape {list(decoder_shape)} ([batch, target "
                             f"tokens]), got {list(labels.shape)}.")
        return decoder_input_ids

    def _check_label_rows(self, labels: Tensor, rows_per_source: int, cache: RecurrentDecoderCache | None,
                          **sources: Any) -> None:
        """``labels`` hold k = ``rows_per_source`` rows for each source of the first of ``sources`` given (the
        caller's source arguments by name: a batch-first tensor or encoder output, or None). With a ``cache`` the
        model checks the rows against the cache's sources."""
        given = [(name, source) for name, source in sources.items() if source is not None]
        if cache is None and given:
            name, source = given[0]
            batch = source if isinstance(source, Tensor) else source[0]
            check_decoder_rows("labels", labels, batch.shape[0], rows_per_source, f"of `{name}` {list(batch.shape)}")

    def _reads_attention(self, labels: Tensor | None) -> bool:
        """Whether the head reads the attention weights besides returning them: the output layer's probabilities
        (the pointer-generator's mixture), and with labels the losses on the weights (coverage, doubly stochastic)."""
        weighted = any(term.reads_attention for term in self.loss_terms)
        return self.output_layer.reads_attention or (labels is not None and weighted)

    def _lm_output(self, outputs: BahdanauSeq2SeqModelOutput, labels: Tensor | None, source_mask: Tensor | None,
                   source: Any, rows_per_source: int, num_items_in_batch: int | Tensor | None,
                   logits_to_keep: int | Tensor, output_attentions: bool) -> "BahdanauSeq2SeqLMOutput":
        """The output layer and the loss on the decoder's outputs: logits, the NLL (``output_layer``), and the terms of
        ``loss_terms`` that the config turns on (coverage, doubly stochastic, REINFORCE; each per target token, like
        the NLL, and in the output under its name). ``source_mask`` [B, S]: the real source positions (None: all)."""
        weights = None if outputs.cross_attentions is None else outputs.cross_attentions[0][:, 0]
        gate = outputs.p_gen_logits
        pre_output = self.output_dropout(outputs.last_hidden_state)
        policy = outputs.attention_policy
        training = labels is not None and self.training and torch.is_grad_enabled()
        if training and policy is None:
            # Training needs only the loss: fused with the projection, no [B, T, V] logits (logits is None).
            total = self.output_layer.fused_loss(pre_output, self.lm_head, labels.to(pre_output.device), weights, gate,
                                                 source, rows_per_source)
            logits, loss = None, per_target(total, labels, num_items_in_batch)
        else:
            kept = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
            logits = self.output_head(pre_output[:, kept], None if weights is None else weights[:, kept],
                                      None if gate is None else gate[:, kept], source, rows_per_source)
            loss = None if labels is None else token_cross_entropy(logits, labels[:, kept], num_items_in_batch)
        parts = {}
        if labels is not None:
            real = (None if source_mask is None or weights is None
                    else source_mask.to(weights.device).repeat_interleave(rows_per_source, dim=0))
            loss, parts = add_loss_terms(loss, self.loss_terms, HeadOutputs(
                labels=labels, target_mask=labels.to(pre_output.device) != -100, weights=weights, source_mask=real,
                logits=logits, policy=policy if training else None), num_items_in_batch)
        return BahdanauSeq2SeqLMOutput(
            loss=loss,
            **parts,
            **self.output_layer.outputs(gate, output_attentions),
            logits=logits,
            decoder_hidden_states=outputs.decoder_hidden_states,
            cross_attentions=outputs.cross_attentions if output_attentions else None,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions if output_attentions else None,
            embedding_attentions=outputs.embedding_attentions if output_attentions else None,
            **{CACHE_NAME: cache_of(outputs)},
        )


check_release(BahdanauForConditionalGeneration, BahdanauConfig)

__all__ = ["BahdanauForConditionalGeneration", "BahdanauModel", "BahdanauPreTrainedModel", "BahdanauSeq2SeqLMOutput",
           "BahdanauSeq2SeqModelOutput", "RecurrentGenerationMixin", "shift_tokens_right"]
