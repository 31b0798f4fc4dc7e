"""The classifier family: the recurrent encoder pooled into one label per text, flat or hierarchical (HAN: words
into sentences into the text) (``BahdanauForSequenceClassification``; its folders' ``architectures`` name it)."""

import re
from typing import Any

from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding

from hf_bahdanau.families import CardWords, Family, Head, Picture, register_family
from hf_bahdanau.families.recurrent import (RECURRENT_ENCODER, encoder_line, matching_preset, paper_of,
                                            recurrent_limitations, rnn_tags)
from hf_bahdanau.families.words import Architecture, dropout_lines, labelling_description, task_pipeline_usage
from hf_bahdanau.modeling.axes import POOLINGS
from hf_bahdanau.modeling.configuration_bahdanau import BahdanauConfig
from hf_bahdanau.modeling.modeling_sequence_classification import BahdanauForSequenceClassification

__all__ = ["CLASSIFIER", "describe_classifier"]

TASK = "text-classification"
# run_classification.py's pictures (pictures.plot_classifier_texts)
POOLING_ATTENTION = Picture(re.compile(r"attention_\d+\.png"), "What the pooling attended to", "One test text "
                            "per picture, titled with its predicted (and true) label: the pooling's weights over its "
                            "tokens (a HAN's: each word's weight in its sentence and each sentence's in the text).",
                            "pooling attention")


def describe_classifier(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """The encoder's line (a HAN's word level), the pooling's (both levels of a HAN) and the dropout."""
    pooling_type = config.get("pooling_type", "context_vector")  # configs saved before the field: the default
    pooling = POOLINGS.describe(pooling_type)
    if pooling_type == "self_attentive":
        pooling += (f"; r = {config['self_attention_rows']} rows, penalty weight "
                    f"{config['self_attention_penalty_weight']}")
    if config.get("hierarchical"):
        pooling = ("word-level attention pooling per sentence, then a sentence-level encoder and attention pooling "
                   f"(hierarchical attention network, Yang et al., 2016); each pooling: {pooling}")
    preset = matching_preset(config)
    lines = [encoder_line(config, word_level=True), f"**Pooling**: {pooling}", *dropout_lines(config)]
    return Architecture(preset, paper_of(preset), lines, encoder_only=True)


CLASSIFIER = register_family(Family(
    name="classifier", task=TASK, config_class=BahdanauForSequenceClassification.config_class,
    upgrades=(BahdanauConfig,),
    heads=(Head(AutoModelForSequenceClassification, BahdanauForSequenceClassification),),
    card=CardWords(task_words="Text Classification", pipeline_tag=TASK, architecture=describe_classifier,
                   tags=rnn_tags(), description=labelling_description("the whole text"),
                   usage=task_pipeline_usage(TASK), pictures=(POOLING_ATTENTION,),
                   limitations=lambda config, processor: recurrent_limitations(config, recurrent=RECURRENT_ENCODER)),
    architectures=("BahdanauForSequenceClassification",),  # what its folders saved so far name
    collator=DataCollatorWithPadding,
))
