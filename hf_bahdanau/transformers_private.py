"""The private transformers APIs hf_bahdanau relies on, in one place, checked against the installed transformers.

transformers may rename or reshape anything whose name starts with an underscore in any release. Each use below is
checked once, at import, against the parameters hf_bahdanau passes; where a check fails, the code that needs it
falls back to transformers' own public path (slower, never wrong) and says so once in a warning:

- ``FAST_SEARCH``: our greedy and beam search loops (``search.py``) call generate()'s helpers ``_prefill``,
  ``_update_model_kwargs_for_generation``, the beam bookkeeping of ``_beam_search`` and the generation config's
  ``_pad_token_tensor`` / ``_eos_token_tensor``, and replace ``_sample`` / ``_beam_search``. Without them generate()
  runs transformers' own loops.
- ``BEAM_PENALTIES``: ``_prepare_generation_config`` (generate()'s ``coverage_penalty`` and ``length_penalty_style``
  go into the generation config instead of the model kwargs, and are checked there). The penalties are scored in our
  beam search loop, so they also need ``FAST_SEARCH``. Without either, asking for them raises a clear error.
- ``SHARED_BEAM_MEMORY``: ``_expand_inputs_for_generation`` (one encoder memory per source in beam search). Without
  it every beam gets its own copy, as in transformers.
- ``CARD_UPLOAD``: ``PreTrainedModel._upload_modified_files`` (``push_to_hub`` ships the folder's model card).
  Without it ``push_to_hub`` uploads transformers' template card; ``training/hub_utils.push_output_dir`` still ships
  the real one.
- ``EMBEDDING_RESIZE``: ``_resize_token_embeddings`` / ``_get_resized_embeddings`` (``resize_token_embeddings`` of
  the seq2seq model resizes the target embedding too). Without them resizing raises a clear error.

The other underscored names are transformers' declared extension points for model classes (``_tied_weights_keys``,
``_no_split_modules``, ``_is_stateful``, ``_supports_default_dynamic_cache``) and custom pipelines
(``_sanitize_parameters``, ``_load_*``, ``_pipeline_calls_generate``, ``_default_generation_config``): a class
attribute that transformers stops reading changes nothing here. ``pyproject.toml`` bounds transformers to the
releases CI runs (``.ci/run``: the newest allowed and the oldest).
"""

import inspect
import logging
from collections.abc import Callable

from transformers import GenerationMixin, PreTrainedModel

__all__ = ["BEAM_PENALTIES", "CARD_UPLOAD", "EMBEDDING_RESIZE", "FAST_SEARCH", "SHARED_BEAM_MEMORY", "fall_back_once"]

logger = logging.getLogger(__name__)


def _accepts(owner: type, name: str, parameters: tuple[str, ...]) -> bool:
    """``owner.name`` exists and takes every one of ``parameters``."""
    function = getattr(owner, name, None)
    if not callable(function):
        return False
    try:
        accepted = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return set(parameters) <= set(accepted)


FAST_SEARCH = all(_accepts(GenerationMixin, name, parameters) for name, parameters in {
    "_sample": ("input_ids", "logits_processor", "stopping_criteria", "generation_config", "synced_gpus", "streamer"),
    "_beam_search": ("input_ids", "logits_processor", "stopping_criteria", "generation_config", "synced_gpus"),
    "_prefill": ("input_ids", "generation_config", "model_kwargs", "is_first_iteration"),
    "_update_model_kwargs_for_generation": ("outputs", "model_kwargs", "is_encoder_decoder"),
    "_get_running_beams_for_next_iteration": ("topk_log_probs", "topk_running_sequences",
                                              "topk_running_beam_indices", "next_token_hits_stopping_criteria",
                                              "num_beams"),
    "_update_finished_beams": ("sequences", "topk_running_sequences", "beam_scores", "topk_log_probs",
                               "beam_indices", "topk_running_beam_indices", "is_early_stop_heuristic_unsatisfied",
                               "is_sent_finished", "next_token_hits_stopping_criteria", "top_num_beam_mask",
                               "num_beams", "cur_len", "decoder_prompt_len", "length_penalty", "early_stopping"),
    "_check_early_stop_heuristic": ("is_early_stop_heuristic_unsatisfied", "running_beam_scores", "beam_scores",
                                    "is_sent_finished", "cur_len", "max_length", "decoder_prompt_len",
                                    "early_stopping", "length_penalty"),
    "_beam_search_has_unfinished_sequences": ("is_early_stop_heuristic_unsatisfied", "is_sent_finished",
                                              "next_token_hits_stopping_criteria", "early_stopping"),
}.items())
BEAM_PENALTIES = _accepts(GenerationMixin, "_prepare_generation_config", ("generation_config", "kwargs"))
SHARED_BEAM_MEMORY = _accepts(GenerationMixin, "_expand_inputs_for_generation",
                              ("expand_size", "is_encoder_decoder", "input_ids"))
CARD_UPLOAD = _accepts(PreTrainedModel, "_upload_modified_files", ("working_dir", "repo_id", "files_timestamps"))
EMBEDDING_RESIZE = (_accepts(PreTrainedModel, "_resize_token_embeddings",
                             ("new_num_tokens", "pad_to_multiple_of", "mean_resizing"))
                    and _accepts(PreTrainedModel, "_get_resized_embeddings",
                                 ("old_embeddings", "new_num_tokens", "mean_resizing")))

_WARNED: set[str] = set()


def fall_back_once(feature: str, fallback: Callable, *args, **kwargs):
    """``fallback(*args, **kwargs)``, after a one-time warning that ``feature`` is off with this transformers."""
    if feature not in _WARNED:
        _WARNED.add(feature)
        import transformers

        logger.warning("hf_bahdanau: %s is off with transformers %s (its private API changed); using transformers' "
                       "own path instead.", feature, transformers.__version__)
    return fallback(*args, **kwargs)
