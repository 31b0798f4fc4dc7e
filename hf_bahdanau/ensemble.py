"""Ensembles of seq2seq models at decoding: several independently trained models decode as one.

    ensemble = BahdanauEnsembleForConditionalGeneration.from_pretrained(["g2p-seed0", "g2p-seed1", "g2p-lstm"])
    out = ensemble.generate(**tokenizer(words, padding=True, return_tensors="pt"), num_beams=5)

Each step scores the next token with the mean of the M members' probabilities,

    p(y_t | y_<t, x) = (1/M) Σ_m p_m(y_t | y_<t, x),      logits = log p  [N, V]

and every member keeps its own encoder outputs and decoder state: the cache (``EnsembleCache``) holds one
``RecurrentDecoderCache`` per member, and beam search reorders them together. ``generate()`` is transformers' (through
the members' ``FastSearchMixin`` loops, which keep transformers' beam search, length penalty and stopping criteria),
so greedy search, beam search (several returned sequences, GNMT's ``length_penalty_style="gnmt"``) and sampling
(softmax(log p / τ) with a temperature τ) all work. Not supported, each refused by a ValueError: GNMT's
``coverage_penalty`` (each member has its own attention, so there is no one coverage to score), alignments and hidden
states (``output_attentions`` / ``output_hidden_states``: decode one member for those), and copy-attention members
(their extended vocabularies are per model).

Members are ``BahdanauForConditionalGeneration`` models over one vocabulary: the same ``vocab_size`` and special
token ids (pad, bos, eos, decoder start), in the config and in the generation config. They may differ in everything
else (cell, attention, sizes). ``config`` and ``generation_config`` are copies of the first member's, so decoding
defaults (``max_new_tokens``, ``num_beams``, penalties) are the first member's; a ``coverage_penalty`` there is
dropped with a warning. ``hf_bahdanau.modeling.translation.translate(ensemble, tokenizer, texts)`` decodes texts with
an ensemble as with one model (without ``output_alignments``); ``hf-bahdanau-translate MODEL --ensemble FOLDER …``
does it from the command line.
"""

import copy
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers import AutoModelForSeq2SeqLM, GenerationConfig, PreTrainedModel
from transformers.cache_utils import Cache
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import ModelOutput

from .modeling.configuration_bahdanau import BahdanauConfig
from .modeling.modeling_bahdanau import BahdanauForConditionalGeneration, RecurrentGenerationMixin
from .modeling.output_layers import OUTPUT_LAYERS
from .modeling.search import FastSearchMixin
from .modeling.transformers_private import CACHE_NAME, cache_argument, cache_of
from .modeling.old_names import old_names

__all__ = ["EnsembleCache", "BahdanauEnsembleEncoderOutput", "BahdanauEnsembleForConditionalGeneration",
           "mean_log_probs"]

logger = logging.getLogger(__name__)

SHARED_FIELDS = ("vocab_size", "pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
UNSUPPORTED_OUTPUTS = ("output_attentions", "output_hidden_states")


def mean_log_probs(logits: Sequence[Tensor]) -> Tensor:
    """log((1/M) Σ_m softmax(logits_m)) [..., V] of M members' logits [..., V], in float32 or wider: logsumexp over
    the members of their log-softmax, minus log M. With one member, its log-softmax."""
    log_probs = [torch.log_softmax(member.to(torch.promote_types(member.dtype, torch.float32)), dim=-1)
                 for member in logits]
    return torch.logsumexp(torch.stack(log_probs), dim=0) - math.log(len(log_probs))


class EnsembleCache(Cache):
    """The decoding cache of an ensemble: ``members``, each member's ``RecurrentDecoderCache`` in member order.
    ``reorder_cache(beam_idx)`` reorders every one (beam search keeps one row order for all members)."""

    is_compileable = False

    def __init__(self, members: Sequence[Cache]):
        super().__init__(layers=[])
        self.members = tuple(members)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Decoder tokens consumed so far (every member has consumed the same ones)."""
        return self.members[0].get_seq_length(layer_idx)

    def reorder_cache(self, beam_idx: Tensor) -> None:
        for member in self.members:
            member.reorder_cache(beam_idx)


@dataclass
class BahdanauEnsembleEncoderOutput(ModelOutput):
    """``members``: each member's encoder output (``BahdanauEncoderOutput``), in member order."""

    members: tuple | None = None


class EnsembleEncoder(nn.Module):
    """Runs every member's own encoder on the same source (generate() calls it once, before decoding)."""

    def __init__(self, members: Sequence[BahdanauForConditionalGeneration]):
        super().__init__()
        self.encoders = tuple(member.get_encoder() for member in members)  # a tuple: not submodules of this one

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, output_attentions: bool | None = None,
                output_hidden_states: bool | None = None, return_dict: bool = True) -> BahdanauEnsembleEncoderOutput:
        """input_ids [B, S], attention_mask [B, S] -> each member's encoder output."""
        return BahdanauEnsembleEncoderOutput(members=tuple(
            encoder(input_ids=input_ids, attention_mask=attention_mask, output_attentions=output_attentions,
                    output_hidden_states=output_hidden_states, return_dict=True)
            for encoder in self.encoders))


class BahdanauEnsembleForConditionalGeneration(PreTrainedModel, FastSearchMixin, RecurrentGenerationMixin):
    """M seq2seq models decoding together: p(y_t | y_<t, x) = (1/M) Σ_m p_m(y_t | y_<t, x) (module docstring).

    ``members``: the loaded models (``BahdanauForConditionalGeneration``, one vocabulary and set of special token
    ids), kept as given (not copied, not put in eval mode). ``config`` / ``generation_config``: copies of the first
    member's.
    """

    config_class = BahdanauConfig
    main_input_name = "input_ids"
    _is_stateful = True  # recurrent decoder states: generate() refuses assisted decoding

    def __init__(self, models: Sequence[BahdanauForConditionalGeneration]):
        models = list(models) if isinstance(models, Sequence) else models
        if not isinstance(models, list) or not models:
            raise ValueError(f"`models` must be a non-empty list of hf_bahdanau seq2seq models, got {models!r}.")
        check_members(models)
        super().__init__(copy.deepcopy(models[0].config))
        self.members = nn.ModuleList(models)
        self.output_layer = OUTPUT_LAYERS["softmax"](self.config)  # over the shared vocabulary: no member copies
        self.generation_config = copy.deepcopy(models[0].generation_config)
        if getattr(self.generation_config, "coverage_penalty", None):
            logger.warning("The first member's generation config asks for coverage_penalty=%s, which an ensemble "
                           "cannot score (each member has its own attention): the ensemble decodes without it.",
                           self.generation_config.coverage_penalty)
            self.generation_config.coverage_penalty = None

    @classmethod
    def from_pretrained(cls, names: Sequence[str], **kwargs) -> "BahdanauEnsembleForConditionalGeneration":
        """The ensemble of the models saved in ``names`` (folders or Hub ids), each loaded with
        ``AutoModelForSeq2SeqLM.from_pretrained(name, **kwargs)``."""
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or not names:
            raise ValueError(f"`names` must be a non-empty list of model folders or Hub ids (one per member), got "
                             f"{names!r}{' (wrap a single name in a list)' if isinstance(names, str) else ''}.")
        return cls([AutoModelForSeq2SeqLM.from_pretrained(name, **kwargs) for name in names])

    def save_pretrained(self, *args, **kwargs):
        raise NotImplementedError("An ensemble is not saved as one folder: save each of its `members` (and load them "
                                  "again with BahdanauEnsembleForConditionalGeneration.from_pretrained([...])).")

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the members' caches are recurrent states (EnsembleCache), not key/value tensors

    def get_encoder(self) -> EnsembleEncoder:
        return EnsembleEncoder(self.members)

    def generate(self, inputs: Tensor | None = None, generation_config: GenerationConfig | None = None, **kwargs):
        """``GenerationMixin.generate`` over the mean of the members' probabilities (``FastSearchMixin.generate``:
        GNMT's ``length_penalty_style`` too). ``coverage_penalty``, ``output_attentions`` and
        ``output_hidden_states`` are refused (ValueError)."""
        chosen = self.generation_config if generation_config is None else generation_config
        beta = kwargs.get("coverage_penalty", getattr(chosen, "coverage_penalty", None))
        if beta:
            raise ValueError(f"`coverage_penalty={beta}`: GNMT's coverage penalty scores one model's attention, and "
                             "each member of an ensemble has its own; leave it at 0 (length_penalty_style='gnmt' "
                             "works).")
        for name in UNSUPPORTED_OUTPUTS:
            if kwargs.get(name, getattr(chosen, name, False)):
                raise ValueError(f"`{name}=True`: each member of an ensemble has its own attention and states; decode "
                                 "one member (ensemble.members[m].generate) for them.")
        return super().generate(inputs, generation_config, **kwargs)

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        encoder_outputs: BahdanauEnsembleEncoderOutput | None = None,
        past_key_values: EnsembleCache | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | Tensor = 0,
        cache: EnsembleCache | None = None,
        rows_per_source: int | None = None,
    ) -> Seq2SeqLMOutput:
        """Each member's ``forward`` on the same arguments (its own encoder outputs and cache) -> logits = log of the
        mean of their probabilities [N, T, V] (``mean_log_probs``), and an ``EnsembleCache`` (``cache``;
        ``past_key_values`` before transformers 5.24) with ``use_cache``. input_ids/attention_mask [B, S];
        decoder_input_ids [B·k, T], ``rows_per_source`` k as the members' ``forward``."""
        cache = cache_argument(cache, past_key_values)
        member_caches = cache.members if cache is not None else (None,) * len(self.members)
        member_encodings = encoder_outputs.members if encoder_outputs is not None else (None,) * len(self.members)
        outputs = [member(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                          encoder_outputs=encoding, cache=member_cache, use_cache=use_cache,
                          logits_to_keep=logits_to_keep, rows_per_source=rows_per_source, return_dict=True)
                   for member, encoding, member_cache in zip(self.members, member_encodings, member_caches)]
        caches = [cache_of(output) for output in outputs]
        if cache is None and caches[0] is not None:
            cache = EnsembleCache(caches)
        return Seq2SeqLMOutput(logits=mean_log_probs([output.logits for output in outputs]), **{CACHE_NAME: cache})

    def _next_token_logits(self, tokens: Tensor, cache: EnsembleCache) -> Tensor:
        """tokens [N, 1] -> log of the mean of the members' next-token probabilities [N, V]; advances every member's
        cache (the search loops' step, ``FastSearchMixin``)."""
        return mean_log_probs([member._next_token_logits(tokens, member_cache)
                               for member, member_cache in zip(self.members, cache.members)])


def check_members(models: Sequence) -> None:
    """A ValueError naming the member and the field unless every model is an hf_bahdanau text seq2seq model without
    copy attention, on the first one's device, with its ``vocab_size`` and special token ids (``SHARED_FIELDS``, in
    the config and in the generation config)."""
    first = models[0]
    for index, model in enumerate(models):
        if not isinstance(model, BahdanauForConditionalGeneration) or model.main_input_name != "input_ids":
            raise ValueError(f"Ensemble member {index} must be an hf_bahdanau text seq2seq model "
                             f"(BahdanauForConditionalGeneration), got {type(model).__name__}.")
        if model.config.copy_attention:
            raise ValueError(f"Ensemble member {index} has copy_attention=True: an ensemble decodes over the shared "
                             "vocabulary, and a pointer-generator's extended vocabulary is its own; decode it alone.")
        if model.device != first.device:
            raise ValueError(f"Ensemble member {index} is on {model.device}, member 0 on {first.device}: put every "
                             "member on one device.")
        for field in SHARED_FIELDS:
            for where, own, reference in (("config", model.config, first.config),
                                          ("generation config", model.generation_config, first.generation_config)):
                value, expected = getattr(own, field, None), getattr(reference, field, None)
                if value != expected:
                    raise ValueError(f"Ensemble member {index} has {field}={value!r} in its {where}, member 0 has "
                                     f"{expected!r}: the members of an ensemble must share one vocabulary and its "
                                     "special token ids.")


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "EnsembleEncoderOutput": BahdanauEnsembleEncoderOutput,
    "EnsembleForConditionalGeneration": BahdanauEnsembleForConditionalGeneration,
})
