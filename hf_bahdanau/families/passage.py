"""The passage question answering family: co-attention between a question and a passage, answering from a closed
answer vocabulary (Lu et al., 2016, over two texts; ``BahdanauForTextPairClassification``, model type
``bahdanau-text-coattention``)."""

import json
import re
from typing import Any

from transformers import AutoModel, AutoModelForSequenceClassification

from hf_bahdanau.families import CardWords, Family, Head, register_family
from hf_bahdanau.families.coattention import CO_ATTENTION_PAPER, coattention_lines
from hf_bahdanau.families.recurrent import ALIGNMENTS
from hf_bahdanau.families.words import (DISTRIBUTION, WORD_VOCABULARY, Architecture, answerer_usage, closed_answers,
                                        dropout_lines, json_example, label_names, text_examples)
from hf_bahdanau.modeling.collators import DataCollatorForTextPairs
from hf_bahdanau.modeling.configuration_text_coattention import CONTEXT_ENCODERS, BahdanauTextCoAttentionConfig
from hf_bahdanau.modeling.modeling_text_coattention import (BahdanauForTextPairClassification,
                                                            BahdanauTextCoAttentionModel)

__all__ = ["PASSAGE", "PASSAGE_EXAMPLE", "describe_text_coattention", "passage_example"]

TASK = "passage-question-answering"
PASSAGE_EXAMPLE = json.dumps({"context": "Mary moved to the bathroom. John went to the hallway.",
                              "question": "Where is Mary?"})
LEVEL_ON_SUPPORT = re.compile(r"(\w+)_peak_on_support")


def describe_text_coattention(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauTextCoAttentionConfig`` dict (Lu et al., 2016, over two
    texts): the passage encoder (words embedded by the question's table E), then ``coattention_lines``."""
    if config["inputs"] == "question":
        passage = "none: this baseline reads the question alone (v̂ = 0)"
    else:
        passage = "its words embedded by the question's table E; " + CONTEXT_ENCODERS[config["context_encoder"]]
        if config["context_encoder"] == "bilstm":
            passage += f" ({config['context_hidden_size']} units per direction)"
    lines = [f"**Passage**: {passage}", *coattention_lines(config, "passage"), *dropout_lines(config)]
    return Architecture(None, CO_ATTENTION_PAPER, lines, family="a question–passage co-attention classifier")


def metric_names(name: str) -> str | None:
    """The words of the passage attention's statistics per question level (run_memory_qa.py): "word_peak_on_support"."""
    if match := LEVEL_ON_SUPPORT.fullmatch(name):
        return f"The passage attention at the {match.group(1)} level peaks in a supporting fact"
    return None


def passage_example(example: str) -> dict[str, str]:
    """One example input of a passage question answerer: a JSON object {"context": text, "question": text}."""
    return json_example(example, dict.fromkeys(("context", "question"), lambda text: isinstance(text, str)
                                               and bool(text.strip())),
                        "a passage question answerer", '{"context": text, "question": text}')


def description(config: dict[str, Any], processor: dict[str, Any]) -> str:
    count, names = label_names(config)
    return (f"It reads a passage and a question about it, and picks the answer from a closed vocabulary of "
            f"{count} answers: {names}. At each level of the question ({', '.join(config['question_levels'])})"
            " the question and the passage attend to each other (co-attention); `output_attentions=True` returns "
            "both texts' weights per level (`question_attentions`, `context_attentions`), the pipeline's "
            "`return_attentions=True` the words and their weights.")


def usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
          remote: bool) -> str:
    """The passage-question-answering pipeline answering the first example's question with its attentions: the one
    its folder ships (remote code), or with the plugin that pipeline's class."""
    item = passage_example(examples[0])
    question = f"""\
        answered = answerer(context={json.dumps(item["context"], ensure_ascii=False)},
                            question={json.dumps(item["question"], ensure_ascii=False)}, return_attentions=True)
        print(answered["answer"], answered["score"])  # answered["attentions"]: per level, both texts' weights"""
    return answerer_usage(model_id, "pipeline_text_pair", "BahdanauPassageQuestionAnsweringPipeline", question, remote)


def limitations(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    return [closed_answers(config), WORD_VOCABULARY,
            "The co-attention weights are learned without being shown the supporting facts: they often, not always, "
            "peak on them.", DISTRIBUTION]


PASSAGE = register_family(Family(
    name="passage", task=TASK, config_class=BahdanauTextCoAttentionConfig,
    heads=(Head(AutoModel, BahdanauTextCoAttentionModel),
           Head(AutoModelForSequenceClassification, BahdanauForTextPairClassification)),
    card=CardWords(task_words="Passage Question Answering", architecture=describe_text_coattention,
                   tags=("co-attention", "attention"), description=description, usage=usage,
                   limitations=limitations, examples=text_examples(PASSAGE_EXAMPLE, passage_example),
                   metric_names=metric_names, pictures=(ALIGNMENTS,)),
    collator=DataCollatorForTextPairs,
))
