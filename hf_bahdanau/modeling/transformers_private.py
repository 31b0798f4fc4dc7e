"""Where transformers releases differ for hf_bahdanau, and the private transformers APIs it still relies on.

A saved model folder runs this code on whatever transformers its user has installed, so it must work on releases
newer than any it was tested with, or say clearly that it does not.

The cache's name. transformers 5.24 renamed generation's ``past_key_values`` to ``cache`` (model inputs, output
fields, ``generate()``'s keyword): ``CACHE_NAME`` is the name the installed transformers' output classes use,
``cache_of`` reads it from an output, and every ``forward`` here takes both names (``cache_argument``).

Private hooks, each tested on the releases in ``TESTED_TRANSFORMERS`` (``.ci/run`` runs the lowest allowed and the
newest the package index serves). Every one we call, we call with keyword arguments only, and its flag below checks
that it still takes each of them by name (``_accepts``): a parameter reordered upstream cannot bind the wrong value,
and a renamed one turns the flag off. ``probe_generation`` also runs tiny generate() calls and checks what each
generation hook is for, not only a signature:

- ``GenerationMixin._sample`` and ``_beam_search`` (``SEARCH_LOOPS``): generate() dispatches greedy search /
  sampling and beam search to them, and ``search.FastSearchMixin`` overrides both with its own loops (which call no
  private transformers helper), handing sampling and the other cases back to them. Not dispatched any more:
  transformers' loops run, slower, with the same results; taking other parameters: the load fails
  (``check_release``).
- ``GenerationMixin._expand_inputs_for_generation`` (``SHARED_BEAM_MEMORY``): overridden so that the beams of a
  source share one encoder memory. Without it every beam gets its own copy, as in transformers.
- ``GenerationMixin._supports_default_dynamic_cache``: returns False so that generate() builds no key/value cache.
- ``PreTrainedModel._upload_modified_files`` (``CARD_UPLOAD``): ``push_to_hub`` ships the folder's model card.
  Without it ``push_to_hub`` uploads transformers' template card; ``training/common/hub_utils.push_output_dir`` still
  ships the real one.
- ``PreTrainedModel._resize_token_embeddings`` / ``_get_resized_embeddings`` (``EMBEDDING_RESIZE``):
  ``resize_token_embeddings`` of the seq2seq model resizes the target embedding too. Without them resizing raises
  a clear error.
- ``Pipeline._prepare_generate_kwargs`` (``PIPELINE_GENERATE_KWARGS``): the translation and image-to-text
  pipelines put transformers' generation defaults for pipelines (e.g. ``max_new_tokens``) under the caller's
  arguments, as transformers' own pipelines do. Without it they pass the caller's arguments as they are.
- ``_LazyAutoMapping.register`` of an Auto class's ``_model_mapping`` (``AUTO_MAPPING_REGISTER``): maps the
  configs of folders saved before a family got its own config (a 0.1.0 tagger's ``BahdanauConfig``) to that
  family's heads, which upgrade them on load (``hf_bahdanau.families``); the public ``register`` refuses a head
  whose ``config_class`` is another. Without it such folders load through the head class
  (``BahdanauForTokenClassification.from_pretrained``), not through the Auto class.
- ``GenerationConfig._from_model_config`` (an attribute): ``save_pretrained`` clears it so that GNMT's beam
  options saved in generation_config.json are read back (transformers reads only its own fields from a file
  marked as made from the model config). Without it the options are lost on loading, which
  ``tests/test_beam_penalties.py`` checks.

The other underscored names are transformers' declared class attributes for models (``_tied_weights_keys``,
``_no_split_modules``, ``_is_stateful``) and custom pipelines (``_sanitize_parameters``, ``_load_*``,
``_pipeline_calls_generate``, ``_default_generation_config``).

Outside the tested releases, loading the model code runs ``probe_generation`` once (``check_release``): where it
fails, the load fails with one line naming the tested releases and the fix.
"""

import inspect
import logging
from collections.abc import Callable
from dataclasses import fields
from typing import NamedTuple

import torch
import transformers
from packaging.version import Version
from transformers import AutoModel, GenerationMixin, Pipeline, PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput

__all__ = ["AUTO_MAPPING_REGISTER", "CACHE_NAME", "CARD_UPLOAD", "EMBEDDING_RESIZE", "PIPELINE_GENERATE_KWARGS", "SEARCH_LOOPS",
           "SHARED_BEAM_MEMORY", "TESTED_TRANSFORMERS", "Finding", "cache_argument", "cache_of", "check_release",
           "fall_back_once", "probe_generation"]

logger = logging.getLogger(__name__)

TESTED_TRANSFORMERS = ("5.20.2", "5.24.0")  # the lowest and the newest release CI passed on
CACHE_NAME = "cache" if "cache" in {field.name for field in fields(Seq2SeqLMOutput)} else "past_key_values"


def cache_argument(cache, past_key_values):
    """The decoder cache a ``forward`` was given under either name (``cache``, transformers ≥ 5.24's, or
    ``past_key_values``, older releases'), None without one."""
    if past_key_values is None:
        return cache
    if cache is not None and cache is not past_key_values:
        raise ValueError("Pass the decoding cache once, as `cache` (or its older name `past_key_values`), not two "
                         "different caches under both names.")
    return past_key_values


def cache_of(outputs):
    """The cache a model output carries (under the installed transformers' name), None without one."""
    return getattr(outputs, CACHE_NAME, None)


def _accepts(owner: type, name: str, parameters: tuple[str, ...], more_keywords: bool = False) -> bool:
    """``owner.name`` exists and takes every one of ``parameters`` by keyword (we call it with them so), and with
    ``more_keywords`` any other keyword too (``**kwargs``: we pass more)."""
    function = getattr(owner, name, None)
    if not callable(function):
        return False
    try:
        accepted = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    by_keyword = {key for key, parameter in accepted.items()
                  if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)}
    any_keyword = any(parameter.kind == parameter.VAR_KEYWORD for parameter in accepted.values())
    return set(parameters) <= by_keyword and (any_keyword or not more_keywords)


_LOOP_PARAMETERS = ("input_ids", "logits_processor", "stopping_criteria", "generation_config", "synced_gpus")
SEARCH_LOOPS = (_accepts(GenerationMixin, "_sample", (*_LOOP_PARAMETERS, "streamer"), more_keywords=True)
                and _accepts(GenerationMixin, "_beam_search", _LOOP_PARAMETERS, more_keywords=True))
SHARED_BEAM_MEMORY = _accepts(GenerationMixin, "_expand_inputs_for_generation",
                              ("expand_size", "is_encoder_decoder", "input_ids"), more_keywords=True)
CARD_UPLOAD = _accepts(PreTrainedModel, "_upload_modified_files", ("working_dir", "repo_id", "files_timestamps"))
EMBEDDING_RESIZE = (_accepts(PreTrainedModel, "_resize_token_embeddings",
                             ("new_num_tokens", "pad_to_multiple_of", "mean_resizing"))
                    and _accepts(PreTrainedModel, "_get_resized_embeddings",
                                 ("old_embeddings", "new_num_tokens", "mean_resizing")))
PIPELINE_GENERATE_KWARGS = _accepts(Pipeline, "_prepare_generate_kwargs", ("generate_kwargs",), more_keywords=True)
AUTO_MAPPING_REGISTER = _accepts(type(AutoModel._model_mapping), "register", ("key", "value", "exist_ok"))

_WARNED: set[str] = set()


def fall_back_once(feature: str, fallback: Callable, *args, **kwargs):
    """``fallback(*args, **kwargs)``, after a one-time warning that ``feature`` is off with this transformers."""
    if feature not in _WARNED:
        _WARNED.add(feature)
        logger.warning("hf_bahdanau: %s is off with transformers %s (its private API changed); using transformers' "
                       "own path instead.", feature, transformers.__version__)
    return fallback(*args, **kwargs)


def _teacher_forced_log_probs(model, input_ids: torch.Tensor, sequences: torch.Tensor) -> torch.Tensor:
    """log p(y_t | y_<t, x) [N, T - 1] of ``sequences`` [N, T] (start token first) under ``model``."""
    logits = model(input_ids=input_ids, decoder_input_ids=sequences[:, :-1]).logits
    return torch.log_softmax(logits.float(), -1).gather(-1, sequences[:, 1:, None])[..., 0]


class Finding(NamedTuple):
    """A behaviour ``probe_generation`` checked: ``problem`` is None where it holds; ``broken`` False where only a
    fast path is lost (transformers' own loop ran instead, with the same results)."""

    behaviour: str
    problem: str | None
    broken: bool


def probe_generation(model) -> list[Finding]:
    """Tiny generate() calls on ``model``, a small ``BahdanauForConditionalGeneration`` in eval mode (vocabulary
    ≥ 8, EOS id 2):

    - ``greedy``: each token is the arg-max of the teacher-forced logits, decoded by our loop (``_sample``
      dispatch);
    - ``beam``: beam search (3 beams, 2 returned) scores each hypothesis with its teacher-forced log-probability
      over its length, decoded by our loop (``_beam_search`` dispatch) with one encoder memory per source
      (``_expand_inputs_for_generation``);
    - ``sampling``: sampling with alignments (transformers' own loop over our ``forward``) returns one
      [1, 1, 1, S] alignment per token;
    - ``penalties``: GNMT's length penalty is scored by our beam search (``_beam_search`` dispatch: without it the
      penalty would be ignored).
    """
    reached: set[str] = set()
    # Methods our loops call through the instance (generate() looks its loops up on the class): reaching one shows
    # that generate() dispatched to our loop.
    spied = ("_greedy_search", "_best_continuations", "_expand_inputs_for_generation")
    for name in spied:
        setattr(model, name, _recording(getattr(model, name), name, reached))
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(3, model.config.vocab_size, (2, 5), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 3:] = 0
    eos = model.config.eos_token_id

    def greedy() -> str | None:
        sequences = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=4, do_sample=False,
                                   num_beams=1)
        logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=sequences[:, :-1]).logits
        generated = sequences[:, 1:]
        decided = torch.cumsum(generated == eos, 1) - (generated == eos).long() == 0  # up to the first EOS
        if torch.equal(logits.argmax(-1)[decided], generated[decided]):
            return None
        return "greedy tokens differ from the arg-max of the model's logits"

    def beam() -> str | None:
        out = model.generate(input_ids[:1], attention_mask=attention_mask[:1], max_new_tokens=4, num_beams=3,
                             num_return_sequences=2, do_sample=False, length_penalty=1.0, output_scores=True,
                             return_dict_in_generate=True)
        lengths = (out.beam_indices >= 0).sum(1)
        log_probs = _teacher_forced_log_probs(model, input_ids[:1].expand(2, -1), out.sequences)
        counted = torch.arange(log_probs.shape[1])[None] < lengths[:, None]
        expected = log_probs.masked_fill(~counted, 0).sum(1) / lengths
        if torch.allclose(out.sequences_scores, expected, atol=1e-4):
            return None
        return f"beam scores {out.sequences_scores.tolist()} are not log P / length {expected.tolist()}"

    def sampling() -> str | None:
        out = model.generate(input_ids[:1], attention_mask=attention_mask[:1], max_new_tokens=3, min_new_tokens=3,
                             do_sample=True, output_attentions=True, return_dict_in_generate=True)
        steps = out.sequences.shape[1] - 1
        shapes = {tuple(step[0].shape) for step in out.cross_attentions}
        if len(out.cross_attentions) == steps and shapes == {(1, 1, 1, input_ids.shape[1])}:
            return None
        return f"{len(out.cross_attentions)} alignments of shapes {shapes} for {steps} sampled tokens"

    def penalties() -> str | None:
        model.generate(input_ids[:1], attention_mask=attention_mask[:1], max_new_tokens=3, num_beams=2,
                       length_penalty_style="gnmt")
        return None

    findings = []
    with torch.no_grad():
        for behaviour, run, speed_hooks, needed_hooks in (
            ("greedy", greedy, ("_greedy_search",), ()),
            ("beam", beam, ("_best_continuations", "_expand_inputs_for_generation"), ()),
            ("sampling", sampling, (), ()),
            ("penalties", penalties, (), ("_best_continuations",)),
        ):
            reached.clear()
            try:
                problem = run()
            except Exception as error:  # whatever fails is the behaviour's problem, reported in one line
                problem = f"{type(error).__name__}: {error}"
            missing = [hook for hook in (*needed_hooks, *speed_hooks) if hook not in reached]
            if problem is not None or any(hook in needed_hooks for hook in missing):
                problem = problem or f"generate() no longer reaches {', '.join(missing)}"
                findings.append(Finding(behaviour, problem, True))
            else:
                findings.append(Finding(behaviour, missing and f"generate() no longer reaches {', '.join(missing)}"
                                        or None, False))
    for name in spied:
        delattr(model, name)
    return findings


def _recording(method: Callable, name: str, reached: set[str]) -> Callable:
    """``method``, adding ``name`` to ``reached`` when called."""
    def recorded(*args, **kwargs):
        reached.add(name)
        return method(*args, **kwargs)
    return recorded


def check_release(model_class: type, config_class: type, release: str = transformers.__version__) -> None:
    """Outside ``TESTED_TRANSFORMERS``, run ``probe_generation`` on a tiny model once: a broken behaviour (or search
    loops that take other parameters, ``SEARCH_LOOPS``) is a ``RuntimeError`` of one line naming the tested releases
    and the fix; a lost fast path, a warning. ``release``: the installed transformers'."""
    installed = Version(release)
    lowest, newest = map(Version, TESTED_TRANSFORMERS)
    if lowest <= installed <= Version(f"{newest.major}.{newest.minor}.99"):  # patch releases of the newest too
        return
    rng_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        config = config_class(vocab_size=16, embedding_size=8, hidden_size=8, encoder_hidden_size=4,
                              attention_size=8, output_size=8)
        findings = probe_generation(model_class(config).eval())
    finally:
        torch.random.set_rng_state(rng_state)
    if not SEARCH_LOOPS:  # our loops hand cases back to transformers' by these parameters' names
        findings.insert(0, Finding("greedy and beam", "GenerationMixin._sample or _beam_search no longer takes "
                                   f"{', '.join(_LOOP_PARAMETERS)} by name", True))
    for finding in findings:
        if finding.broken:
            raise RuntimeError(
                f"hf_bahdanau's model code is tested with transformers {lowest} to {newest}, and with the installed "
                f"transformers {installed} its {finding.behaviour} decoding fails ({finding.problem}): install a "
                f"tested release (pip install 'transformers>={lowest},<={newest}'), or update hf_bahdanau "
                "(pip install -U hf_bahdanau) and save the model again.")
    slower = [f"{finding.behaviour}: {finding.problem}" for finding in findings if finding.problem]
    if slower:
        logger.warning("hf_bahdanau: transformers %s is newer than the releases tested (%s to %s); decoding works, "
                       "more slowly (%s).", installed, lowest, newest, "; ".join(slower))
