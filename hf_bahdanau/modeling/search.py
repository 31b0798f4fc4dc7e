"""Greedy and beam search for ``generate()``: transformers' algorithms, step for step, at a fraction of the cost.

Greedy (``_greedy_search``; transformers' ``_sample``, which runs greedy search and sampling, hands it greedy decoding).
transformers runs the model's full ``forward`` at every step — two output
dataclasses and the model-kwargs bookkeeping, a third of a batch-1 step — then copies the logits and takes
``argmax`` over [B, V], which alone costs as much as the decoder's gates at batch 64. Here each step is the decoder
and the output layer on the cache (``_next_token_logits``) and ``row_argmax``.

Beam search (``_beam_search`` without sampling). transformers copies the logits [B·k, V], takes their log-softmax,
adds every beam's running score to all V entries and runs one ``topk`` over [B, k·V]: four passes over the step's
largest tensor, each into a fresh allocation, which cost more than the decoder step itself. The same 2k best
continuations of a source come from

    log p(y | beam) = log_softmax(logits)               in place, one pass over [B·k, V]
    best 2k of each beam row = ``row_topk``             block maxima, then only the rows' best blocks
    best 2k of a source = topk over its k × 2k candidates + running beam scores

(adding a beam's running score keeps the order within its row, so every continuation in the source's best 2k is
among the best 2k of its own beam). Finished hypotheses, length penalty and early stopping are kept as transformers
keeps them (``beam_hypotheses``), with transformers' stopping criteria and logits processors; the returned outputs
are the same. Both loops call no private transformers helper: they are reached through generate()'s dispatch to
``_sample`` and ``_beam_search`` (``transformers_private`` lists it). Sampling, and greedy search with per-step
attentions or hidden states or without a cache, keep transformers' loops.

GNMT's scoring of finished hypotheses (Wu et al. 2016, §7; ``BeamPenalties``), asked for with generate()'s (or the
generation config's) ``coverage_penalty`` β and ``length_penalty_style="gnmt"``:

    s(Y, X) = log P(Y|X) / lp(Y) + cp(X; Y)
    lp(Y) = ((5 + |Y|) / 6)^α  ("gnmt")  or  |Y|^α  ("transformers", the default)      α = ``length_penalty``
    cp(X; Y) = β Σ_j log(min(Σ_t α_tj, 1))  over the real source positions j              (``coverage_penalty``)

The attention totals Σ_t α_tj of every running beam are the cache's ``AttentionState.coverage``. With both off the
scores are transformers' own, bit for bit.
"""

import copy
import math
import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
from torch import Tensor
from transformers.generation import GenerationConfig, GenerationMode, LogitsProcessorList, StoppingCriteriaList
from transformers.generation.utils import GenerateBeamEncoderDecoderOutput, GenerateEncoderDecoderOutput

from .beam_hypotheses import early_stop_unsatisfied, gather_beams, has_unfinished, next_running_beams, update_finished
from .block_select import row_argmax, row_topk
from .coverage import coverage_penalty
from .state import RecurrentDecoderCache
from .transformers_private import CACHE_NAME, cache_of

__all__ = ["BeamPenalties", "FastSearchMixin", "LENGTH_PENALTY_STYLES", "check_beam_penalties", "check_length_penalty",
           "check_search_arguments", "special_token_tensors"]

LENGTH_PENALTY_STYLES = ("transformers", "gnmt")
BEAM_PENALTY_OPTIONS = ("coverage_penalty", "length_penalty_style")
# The counts generate()'s search loops read, with the least each allows and what it counts (GenerationConfig.validate
# lets 0, a negative or a float through for most of them: the loops then fail inside torch or return nothing).
SEARCH_COUNTS = {
    "num_beams": (1, "the beams of beam search; 1 = greedy search or sampling"),
    "num_return_sequences": (1, "the sequences returned per input, at most num_beams"),
    "max_new_tokens": (1, "the most tokens generated"),
    "max_length": (1, "the longest output, the start token included"),
    "min_new_tokens": (0, "the fewest tokens generated before EOS"),
    "min_length": (0, "the shortest output, the start token included"),
}
# The token ids our loops read, with what a list of them means where one is allowed.
SEARCH_TOKEN_IDS = {"eos_token_id": "or a list of them (generation stops at any)", "pad_token_id": None,
                    "decoder_start_token_id": "or a list of them (one per input)"}


class BeamPenalties(NamedTuple):
    """s(Y, X) = log P(Y|X) / lp(Y) + cp(X; Y) of a finished hypothesis Y (see the module docstring): coverage β,
    alpha α, gnmt: GNMT's lp instead of transformers' |Y|^α. |Y| counts the generated tokens, EOS included, as
    transformers' beam search does for its own penalty (``beam_hypotheses.update_finished``)."""

    coverage: float
    alpha: float
    gnmt: bool

    @classmethod
    def of(cls, config: GenerationConfig) -> "BeamPenalties | None":
        """The penalties ``config`` asks for (values checked by ``check_beam_penalties``); None: transformers'
        own scores."""
        beta = getattr(config, "coverage_penalty", None) or 0.0
        gnmt = getattr(config, "length_penalty_style", None) == "gnmt"
        return cls(float(beta), config.length_penalty, gnmt) if beta or gnmt else None

    def describe(self) -> str:
        """The options as they were asked for, for error messages."""
        options = [f"`coverage_penalty={self.coverage}`"] * bool(self.coverage)
        return " and ".join(options + ["`length_penalty_style='gnmt'`"] * self.gnmt)

    def length_penalty(self, length: int) -> float:
        """lp(Y) for |Y| = length."""
        return ((5 + length) / 6) ** self.alpha if self.gnmt else length ** self.alpha

    def finished_scores(self, log_probs: Tensor, length: int, cache: RecurrentDecoderCache | None,
                        rows: Tensor) -> Tensor:
        """s(Y, X) [B, K] of candidates of one length: log_probs [B, K] their log P(Y|X); rows [B, K] the decoder
        row each extends. cp reads that row's attention totals (the cache's coverage [N, S], which includes the step
        that scored the candidate's last token) and its source's mask (``EncodedSource.mask`` row
        row // rows_per_source)."""
        scores = log_probs / self.length_penalty(length)
        if not self.coverage:
            return scores
        rows = rows.flatten().to(torch.int64)
        totals = cache.state.attention.coverage.index_select(0, rows)
        mask = cache.encoded.mask.index_select(0, rows // cache.encoded.rows_per_source)
        totals = totals.to(torch.promote_types(totals.dtype, scores.dtype))
        return scores + coverage_penalty(totals, mask, self.coverage).view_as(scores).to(scores.dtype)

    def best_running_scores(self, running_scores: Tensor, cur_len: int, max_length: int, prompt_length: int,
                            early_stopping: bool | str) -> Tensor:
        """The best s(Y, X) [B, k] the running beams (log P [B, k]) could still reach, for the early-stopping
        heuristic: cp ≤ 0, so log P / lp at the length transformers' heuristic assumes for its own penalty (the
        maximum length with ``early_stopping="never"`` and α > 0, where lp grows with |Y|; else the current one)."""
        longest = early_stopping == "never" and self.alpha > 0
        return running_scores / self.length_penalty((max_length if longest else cur_len) - prompt_length)


def special_token_tensors(config: GenerationConfig, device: torch.device) -> tuple[Tensor | None, Tensor | None]:
    """The EOS ids [n] (None without) and the pad id [] the search loops fill finished rows with, as generate()
    resolves them: without a pad id, the first EOS id."""
    eos = config.eos_token_id
    eos = None if eos is None else torch.as_tensor(eos, dtype=torch.long, device=device).reshape(-1)
    pad = config.pad_token_id
    if pad is None:
        return eos, None if eos is None else eos[0]
    return eos, torch.as_tensor(pad, dtype=torch.long, device=device)


def check_length_penalty(alpha: float) -> None:
    """A ``ValueError`` naming ``length_penalty`` unless it is a finite number or None (generate()'s default; NaN or
    ∞ would score every hypothesis NaN)."""
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha)):
        raise ValueError(f"`length_penalty` must be a finite number (the exponent α of the length penalty), got "
                         f"{alpha!r}.")


def check_search_arguments(config: GenerationConfig, kwargs: Mapping[str, Any], vocab_size: int | None) -> None:
    """The generation arguments the search loops read, as generate() was given them: ``kwargs`` over ``config`` (the
    call's generation config, else the model's). Each of ``SEARCH_COUNTS`` an int at least its least,
    ``length_penalty`` finite, and (given a ``vocab_size``) the token ids of ``SEARCH_TOKEN_IDS`` in [0, vocab_size).
    A ``TypeError`` (not an int) or ``ValueError`` names the argument, its value and what is allowed."""
    arguments = {name: kwargs.get(name, getattr(config, name, None))
                 for name in (*SEARCH_COUNTS, *SEARCH_TOKEN_IDS, "length_penalty")}
    for name, (least, meaning) in SEARCH_COUNTS.items():
        value = arguments.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"`{name}` must be an int ≥ {least} ({meaning}), got {value!r} "
                            f"({type(value).__name__}).")
        if value < least:
            raise ValueError(f"`{name}` must be an int ≥ {least} ({meaning}), got {value}.")
    check_length_penalty(arguments.get("length_penalty"))
    for name, several in SEARCH_TOKEN_IDS.items() if vocab_size is not None else ():
        value = arguments.get(name)
        ids = value.tolist() if isinstance(value, Tensor) else value
        for token in ids if several and isinstance(ids, (list, tuple)) else () if ids is None else (ids,):
            if isinstance(token, bool) or not isinstance(token, numbers.Integral) or not 0 <= token < vocab_size:
                raise ValueError(f"`{name}` must be a token id in [0, {vocab_size}) (the model's vocabulary)"
                                 f"{' ' + several if several else ''}, got {value!r}.")


def check_beam_penalties(config: GenerationConfig, attention_type: str) -> None:
    """A ``ValueError`` naming the argument where ``config``'s ``coverage_penalty`` or ``length_penalty_style`` is
    not allowed: a value out of range, coverage without attention, either without beam search, coverage without
    the cache that holds the attention totals."""
    beta = getattr(config, "coverage_penalty", None)
    if beta is not None and (isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta)
                             or beta < 0):
        raise ValueError(f"`coverage_penalty` must be a finite number ≥ 0 (GNMT's β; 0 turns it off), got {beta!r}.")
    style = getattr(config, "length_penalty_style", None)
    if style is not None and style not in LENGTH_PENALTY_STYLES:
        raise ValueError(f"`length_penalty_style` must be one of {LENGTH_PENALTY_STYLES}, got {style!r}.")
    check_length_penalty(config.length_penalty)
    penalties = BeamPenalties.of(config)
    if penalties is None:
        return
    if penalties.coverage and attention_type == "none":
        raise ValueError(f"`coverage_penalty={beta}` scores the attention weights, and this model has no attention "
                         "(attention_type='none'): leave coverage_penalty at 0.")
    mode = config.get_generation_mode()
    if mode != GenerationMode.BEAM_SEARCH:
        raise ValueError(f"{penalties.describe()}: for beam search only (num_beams > 1, do_sample=False), and this "
                         f"call runs {mode.value} (num_beams={config.num_beams or 1}, do_sample={bool(config.do_sample)}).")
    if penalties.coverage and config.use_cache is False:
        raise ValueError(f"`coverage_penalty={beta}` reads the attention totals from the decoder's cache: it needs "
                         "use_cache=True.")


class FastSearchMixin:
    """Greedy and beam search for an encoder–decoder model whose ``_next_token_logits(tokens, cache)`` advances its
    cache by ``tokens`` [N, 1] and returns the next-token logits [N, V]. Mix in before ``GenerationMixin``."""

    def generate(self, inputs: Tensor | None = None, generation_config: GenerationConfig | None = None, **kwargs):
        """``GenerationMixin.generate``, which also takes GNMT's ``coverage_penalty`` and ``length_penalty_style``
        (keyword arguments, or fields of ``generation_config`` / ``model.generation_config``). With either, the
        call's generation options and the penalties go into one copy of the generation config, checked
        (``check_beam_penalties``) before decoding starts. Penalties that only ``model.generation_config`` holds
        apply to beam search: a greedy or sampling call leaves them out. The arguments the loops read are checked
        first (``check_search_arguments``)."""
        requested = {name: kwargs.pop(name) for name in BEAM_PENALTY_OPTIONS if name in kwargs}
        model_defaults = generation_config is None
        chosen = self.generation_config if model_defaults else generation_config
        check_search_arguments(chosen, kwargs, self.config.vocab_size)
        if requested or any(getattr(chosen, name, None) is not None for name in BEAM_PENALTY_OPTIONS):
            generation_config = copy.deepcopy(chosen)
            for name, value in requested.items():
                setattr(generation_config, name, value)
            kwargs = generation_config.update(**kwargs)  # returns what is not a generation option: model inputs
            if (model_defaults and not requested
                    and generation_config.get_generation_mode() != GenerationMode.BEAM_SEARCH):
                for name in BEAM_PENALTY_OPTIONS:  # the model's own (tuned) penalties are for its beam searches
                    setattr(generation_config, name, None)
            check_beam_penalties(generation_config, self.config.attention_type)
        return super().generate(inputs, generation_config, **kwargs)

    def _sample(
        self,
        input_ids: torch.LongTensor,
        logits_processor: LogitsProcessorList,
        stopping_criteria: StoppingCriteriaList,
        generation_config: GenerationConfig,
        synced_gpus: bool = False,
        streamer=None,
        **model_kwargs,
    ):
        """transformers' entry point for greedy search and sampling: greedy search without per-step attentions or
        hidden states runs ``_greedy_search``; the rest keeps transformers' loop."""
        config = generation_config
        if (config.do_sample or synced_gpus or config.output_attentions or config.output_hidden_states
                or not model_kwargs.get("use_cache")):
            return super()._sample(input_ids=input_ids, logits_processor=logits_processor,
                                   stopping_criteria=stopping_criteria, generation_config=generation_config,
                                   synced_gpus=synced_gpus, streamer=streamer, **model_kwargs)
        return self._greedy_search(input_ids, logits_processor, stopping_criteria, generation_config, streamer,
                                   **model_kwargs)

    def _greedy_search(
        self,
        input_ids: torch.LongTensor,
        logits_processor: LogitsProcessorList,
        stopping_criteria: StoppingCriteriaList,
        generation_config: GenerationConfig,
        streamer=None,
        **model_kwargs,
    ):
        """Greedy search: transformers' ``_sample`` loop without sampling (EOS padding, stopping criteria, processors,
        streamer, scores and logits) over ``_next_token_logits`` and ``row_argmax``."""
        config = generation_config
        return_dict = config.return_dict_in_generate
        scores = () if return_dict and config.output_scores else None
        raw_logits = () if return_dict and config.output_logits else None
        _, pad_token_id = special_token_tensors(config, input_ids.device)
        has_eos_stopping_criteria = any(hasattr(criterion, "eos_token_id") for criterion in stopping_criteria)
        unfinished_sequences = torch.ones(input_ids.shape[0], dtype=torch.long, device=input_ids.device)

        outputs = self(**self.prepare_inputs_for_generation(input_ids, **model_kwargs), return_dict=True)  # prefill
        cache = cache_of(outputs)
        logits = outputs.logits[:, -1].to(copy=True, dtype=torch.float32, device=input_ids.device)
        del outputs
        while True:
            next_token_scores = logits_processor(input_ids, logits)
            if scores is not None:
                scores += (next_token_scores,)
            if raw_logits is not None:
                raw_logits += (logits,)
            next_tokens = row_argmax(next_token_scores)
            if has_eos_stopping_criteria:  # finished rows get padding
                next_tokens = next_tokens * unfinished_sequences + pad_token_id * (1 - unfinished_sequences)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            unfinished_sequences = unfinished_sequences & ~stopping_criteria(input_ids, scores)
            if streamer is not None:
                streamer.put(next_tokens.cpu())
            if unfinished_sequences.max() == 0:
                break
            logits = self._next_token_logits(next_tokens[:, None], cache).to(device=input_ids.device,
                                                                              dtype=torch.float32)
        if streamer is not None:
            streamer.end()
        if not return_dict:
            return input_ids
        return GenerateEncoderDecoderOutput(sequences=input_ids, scores=scores, logits=raw_logits,
                                            **{CACHE_NAME: cache})

    def _beam_search(
        self,
        input_ids: torch.LongTensor,
        logits_processor: LogitsProcessorList,
        stopping_criteria: StoppingCriteriaList,
        generation_config: GenerationConfig,
        synced_gpus: bool = False,
        **model_kwargs,
    ):
        """Beam search: transformers' ``_beam_search``, with each step's best continuations from
        ``_best_continuations`` instead of a top-k over [B, k·V], and finished hypotheses scored with
        ``BeamPenalties`` where the generation config asks for them."""
        check_length_penalty(generation_config.length_penalty)
        penalties = BeamPenalties.of(generation_config)
        if generation_config.do_sample or generation_config.low_memory or synced_gpus:
            if penalties is not None:
                raise ValueError(f"{penalties.describe()}: scored by hf_bahdanau's beam search loop, which does not "
                                 "run with do_sample, low_memory or synced_gpus.")
            return super()._beam_search(input_ids=input_ids, logits_processor=logits_processor,
                                        stopping_criteria=stopping_criteria, generation_config=generation_config,
                                        synced_gpus=synced_gpus, **model_kwargs)
        config = generation_config
        return_dict = config.return_dict_in_generate
        num_beams, early_stopping, length_penalty = config.num_beams, config.early_stopping, config.length_penalty
        # With penalties the scores are s(Y, X) from ``penalties``: the bookkeeping divides them by L^0 = 1.
        scored_length_penalty = length_penalty if penalties is None else 0.0
        eos_token_id, pad_token_id = special_token_tensors(config, input_ids.device)
        flat_size, prompt_length = input_ids.shape[:2]
        batch_size = flat_size // num_beams
        device = input_ids.device
        # 2k candidates per source (more with several EOS ids): at least k of them are still running.
        beams_to_keep = max(2, 1 + (0 if eos_token_id is None else eos_token_id.shape[0])) * num_beams

        scores = () if return_dict and config.output_scores else None
        raw_logits = () if return_dict and config.output_logits else None
        decoder_attentions = () if return_dict and config.output_attentions else None
        cross_attentions = () if return_dict and config.output_attentions else None
        decoder_hidden_states = () if return_dict and config.output_hidden_states else None

        # Running and finished hypotheses, as in transformers: static [B, k, max_length] tensors.
        fill_value = pad_token_id or eos_token_id[0] if eos_token_id is not None else -1
        running_sequences = torch.full((batch_size, num_beams, config.max_length), fill_value, dtype=torch.int64,
                                       device=device)
        running_sequences[:, :, :prompt_length] = input_ids.view(batch_size, num_beams, prompt_length)
        sequences = running_sequences.clone()
        running_beam_scores = torch.zeros(batch_size, num_beams, device=device)
        running_beam_scores[:, 1:] = -1e9  # the k beams start identical: only the first one expands
        beam_scores = torch.full((batch_size, num_beams), -1e9, device=device)
        is_sent_finished = torch.zeros(batch_size, num_beams, dtype=torch.bool, device=device)
        open_sources = torch.ones(batch_size, 1, dtype=torch.bool, device=device)
        running_beam_indices = torch.full((batch_size, num_beams, config.max_length - prompt_length), -1,
                                          dtype=torch.int32, device=device)
        beam_indices = running_beam_indices.clone()

        cur_len = prompt_length
        flat_running_sequences = input_ids
        # Per-step attentions or hidden states, or no cache: every step through forward, as in transformers.
        outputs = self(**self.prepare_inputs_for_generation(input_ids, **model_kwargs), return_dict=True)  # prefill
        cache = cache_of(outputs)
        direct = cache is not None and not (config.output_attentions or config.output_hidden_states)
        logits = outputs.logits[:, -1, :]
        while True:
            logits = logits.to(device=device, dtype=torch.float32, memory_format=torch.contiguous_format)
            if raw_logits is not None:
                raw_logits += (logits.clone(),)
            log_probs = logits_processor(flat_running_sequences, torch.log_softmax(logits, dim=-1, out=logits))
            if scores is not None:
                scores += (log_probs.clone(),)
            if decoder_attentions is not None:
                decoder_attentions += (outputs.decoder_attentions,)
                cross_attentions += (outputs.cross_attentions,)
            if decoder_hidden_states is not None:
                decoder_hidden_states += (outputs.decoder_hidden_states,)
            outputs = None

            topk_log_probs, topk_running_sequences, topk_running_beam_indices = self._best_continuations(
                log_probs, running_beam_scores, running_sequences, running_beam_indices, beams_to_keep,
                cur_len, prompt_length)
            hits_stopping_criteria = stopping_criteria(
                topk_running_sequences[:, :, :cur_len + 1].reshape(batch_size * beams_to_keep, cur_len + 1), scores,
            ).view(batch_size, beams_to_keep)
            running_sequences, running_beam_scores, running_beam_indices = next_running_beams(
                topk_log_probs, topk_running_sequences, topk_running_beam_indices, hits_stopping_criteria, num_beams)
            if penalties is not None:  # the candidates' rows of the cache, before it is reordered
                topk_log_probs = penalties.finished_scores(topk_log_probs, cur_len + 1 - prompt_length, cache,
                                                           topk_running_beam_indices[..., cur_len - prompt_length])
            sequences, beam_scores, beam_indices, is_sent_finished = update_finished(
                sequences, beam_scores, beam_indices, is_sent_finished, topk_running_sequences, topk_log_probs,
                topk_running_beam_indices, hits_stopping_criteria, open_sources, num_beams,
                cur_len + 1 - prompt_length, scored_length_penalty, early_stopping)

            if cache is not None:
                cache.reorder_cache(running_beam_indices[..., cur_len - prompt_length].reshape(flat_size))
            cur_len += 1
            best_running_scores = running_beam_scores if penalties is None else penalties.best_running_scores(
                running_beam_scores, cur_len, config.max_length, prompt_length, early_stopping)
            open_sources = early_stop_unsatisfied(
                open_sources, best_running_scores, beam_scores, is_sent_finished, cur_len - prompt_length,
                config.max_length - prompt_length, scored_length_penalty, early_stopping)
            if not has_unfinished(open_sources, is_sent_finished, hits_stopping_criteria, early_stopping):
                break
            flat_running_sequences = running_sequences[:, :, :cur_len].reshape(flat_size, cur_len)
            if direct:
                logits = self._next_token_logits(flat_running_sequences[:, -1:], cache)
            else:
                model_inputs = self.prepare_inputs_for_generation(
                    flat_running_sequences, next_sequence_length=1 if cache is not None else None,
                    **{**model_kwargs, "cache": cache})
                outputs = self(**model_inputs, return_dict=True)
                cache = cache_of(outputs)
                logits = outputs.logits[:, -1, :]

        # The best num_return_sequences finished hypotheses per source, cropped to the longest of them.
        returned = config.num_return_sequences
        sequences = sequences[:, :returned].reshape(batch_size * returned, -1)
        beam_scores = beam_scores[:, :returned].reshape(batch_size * returned)
        beam_indices = beam_indices[:, :returned].reshape(batch_size * returned, -1)
        generated_length = (beam_indices + 1).bool().sum(dim=1).max()
        sequences = sequences[:, :prompt_length + generated_length]
        if not return_dict:
            return sequences
        encoder_outputs = model_kwargs["encoder_outputs"]
        return GenerateBeamEncoderDecoderOutput(
            sequences=sequences,
            sequences_scores=beam_scores if config.output_scores else None,
            scores=scores,
            logits=raw_logits,
            beam_indices=beam_indices[:, :generated_length],
            encoder_attentions=encoder_outputs.get("attentions") if config.output_attentions else None,
            encoder_hidden_states=encoder_outputs.get("hidden_states") if config.output_hidden_states else None,
            decoder_attentions=decoder_attentions,
            cross_attentions=cross_attentions,
            decoder_hidden_states=decoder_hidden_states,
            **{CACHE_NAME: cache},
        )

    def _best_continuations(
        self,
        log_probs: Tensor,
        running_beam_scores: Tensor,
        running_sequences: Tensor,
        running_beam_indices: Tensor,
        beams_to_keep: int,
        cur_len: int,
        prompt_length: int,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The best ``beams_to_keep`` continuations of each source, extended by their token.

        log_probs [B·k, V] (after the logits processors), running_beam_scores [B, k], running_sequences
        [B, k, max_length], running_beam_indices [B, k, max_length - prompt_length] -> their accumulated
        log-probabilities [B, K], sequences [B, K, max_length] and beam indices [B, K, …], K = beams_to_keep.
        """
        batch_size, num_beams = running_beam_scores.shape
        vocab_size = log_probs.shape[1]
        row_best, row_tokens = row_topk(log_probs, min(beams_to_keep, vocab_size))  # [B·k, K]
        per_source = row_best.shape[1] * num_beams
        candidates = (row_best.view(batch_size, num_beams, -1) + running_beam_scores.unsqueeze(2)).view(batch_size, per_source)
        topk_log_probs, picked = candidates.topk(beams_to_keep)  # [B, K]
        beam = torch.div(picked, row_best.shape[1], rounding_mode="floor")
        tokens = row_tokens.view(batch_size, per_source).gather(1, picked)
        topk_running_sequences = gather_beams(running_sequences, beam)
        topk_running_sequences[:, :, cur_len] = tokens
        topk_running_beam_indices = gather_beams(running_beam_indices, beam)
        batch_offset = torch.arange(batch_size, device=beam.device).unsqueeze(1) * num_beams
        topk_running_beam_indices[:, :, cur_len - prompt_length] = (beam + batch_offset).to(torch.int32)
        return topk_log_probs, topk_running_sequences, topk_running_beam_indices
