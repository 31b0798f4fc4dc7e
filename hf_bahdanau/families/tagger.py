"""The tagger family: the recurrent encoder labelling each token (``BahdanauForTokenClassification``; its folders'
``architectures`` name it)."""

import re
from typing import Any

from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification

from hf_bahdanau.families import CardWords, Family, Head, Picture, register_family
from hf_bahdanau.families.recurrent import (RECURRENT_ENCODER, encoder_line, matching_preset, paper_of,
                                            recurrent_limitations, rnn_tags)
from hf_bahdanau.families.words import Architecture, dropout_lines, labelling_description, task_pipeline_usage
from hf_bahdanau.modeling.axes import describe_token_attention
from hf_bahdanau.modeling.configuration_bahdanau import BahdanauConfig
from hf_bahdanau.modeling.modeling_token_classification import BahdanauForTokenClassification

__all__ = ["TAGGER", "describe_tagger"]

TASK = "token-classification"
# run_ner.py's pictures (pictures.plot_token_attention)
TOKEN_ATTENTION = Picture(re.compile(r"attention_\d+\.png"), "Token attention", "Each token's attention over its "
                          "sentence: one row per token, one column per token it attends to, its predicted tag "
                          "written under it.", "token attention")


def describe_tagger(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """The encoder's line, the token attention's and the dropout."""
    preset = matching_preset(config)
    lines = [encoder_line(config), f"**Token attention**: {describe_token_attention(config['token_attention_type'])}",
             *dropout_lines(config)]
    return Architecture(preset, paper_of(preset), lines, encoder_only=True)


TAGGER = register_family(Family(
    name="tagger", task=TASK, config_class=BahdanauForTokenClassification.config_class, upgrades=(BahdanauConfig,),
    heads=(Head(AutoModelForTokenClassification, BahdanauForTokenClassification),),
    card=CardWords(task_words="Token Classification", pipeline_tag=TASK, architecture=describe_tagger, tags=rnn_tags(),
                   description=labelling_description("each token"), usage=task_pipeline_usage(TASK),
                   limitations=lambda config, processor: recurrent_limitations(config, recurrent=RECURRENT_ENCODER),
                   pictures=(TOKEN_ATTENTION,)),
    architectures=("BahdanauForTokenClassification",),  # what its folders saved so far name
    collator=DataCollatorForTokenClassification,
))
