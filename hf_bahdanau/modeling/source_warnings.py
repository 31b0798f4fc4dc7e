"""Warnings about inputs a model will likely answer confidently and wrongly. Needs neither torch nor transformers:
the PyTorch decoding (``decoding``) and the ONNX Runtime decoder (``hf_bahdanau.onnx.runtime``) share it."""

import logging
from collections.abc import Sequence

__all__ = ["warn_about_source"]

logger = logging.getLogger(__name__)
SHOWN_CHARACTERS = 40  # how much of an input a warning quotes


def warn_about_source(text: str, input_ids: Sequence[int], tokenizer, config) -> None:
    """Log a warning when the model is likely to answer ``text`` (tokenised as ``input_ids``) confidently and wrongly:
    some of its tokens are unknown to the tokenizer (``<unk>``; not for a ``copy_attention`` model), or it is longer
    than every source seen in training (``config.max_training_source_length``, stored by the training script)."""
    shown = text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "…"
    unknown_id = tokenizer.unk_token_id
    unknown = 0 if unknown_id is None else sum(token == unknown_id for token in input_ids)
    if unknown and not getattr(config, "copy_attention", False):  # a pointer-generator can copy them
        logger.warning("%r: %d of its %d tokens are unknown to the tokenizer (%s); the output is unreliable.", shown,
                       unknown, len(input_ids), tokenizer.unk_token)
    longest = getattr(config, "max_training_source_length", None)
    if longest is not None and len(input_ids) > longest:
        logger.warning("%r: %d tokens, longer than every source seen in training (at most %d tokens); the output is "
                       "unreliable.", shown, len(input_ids), longest)
