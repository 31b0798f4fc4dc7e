"""The model card's words that several families share: the architecture section's shape, label and answer words,
example inputs given as JSON, and the usage code of the question answerers and of transformers' task pipelines."""

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_EXAMPLE", "DISTRIBUTION", "WORD_VOCABULARY", "Architecture", "answerer_usage", "closed_answers",
           "dropout_lines", "generate_kwargs", "json_example", "label_names", "labelling_description",
           "task_pipeline_usage", "text_examples"]

DEFAULT_EXAMPLE = "An example input."  # the usage code's input when none is given
DISTRIBUTION = "The model knows only its training distribution; check it on your own data before relying on it."
# the closed vocabulary of a model reading words (the memory network, passage question answering)
WORD_VOCABULARY = "Closed vocabulary: words the tokenizer does not know become its unknown token."


@dataclass
class Architecture:
    """The card's architecture section: the preset and paper it matches (or what the model is, ``family``) and one
    bullet line per architectural choice."""

    preset: str | None
    paper: tuple[str, str, str] | None  # (authors and year, title, URL)
    lines: list[str]
    family: str | None = None  # what the model is when no preset can be, e.g. the memory network's "MemN2N"
    encoder_only: bool = False  # a preset's encoder without its decoder (the tagger's, the classifiers')

    @property
    def title(self) -> str:
        if self.family is not None:
            return f"{self.family} ({self.paper[0]})"
        if self.preset is None:
            return "a custom configuration"
        if self.encoder_only:
            return f"the encoder of the {self.preset} preset ({self.paper[0]})"
        return f"the {self.preset} preset ({self.paper[0]})"

    @property
    def summary_noun(self) -> str:
        """What the card's first sentence calls a model of a preset or a custom configuration."""
        return "An RNN encoder" if self.encoder_only else "An RNN encoder–decoder"


def dropout_lines(config: dict[str, Any]) -> list[str]:
    """The architecture's last line, the dropout, when the config has one."""
    return [f"**Dropout**: {config['dropout']}"] if config.get("dropout") else []


def label_names(config: dict[str, Any]) -> tuple[int, str]:
    """How many labels (or answers) ``id2label`` holds and their names in id order."""
    labels = config.get("id2label") or {}
    names = ", ".join(str(labels[key]) for key in sorted(labels, key=int)) if labels else "see config.json"
    return len(labels), names


def labelling_description(unit: str) -> Callable[[dict, dict], str]:
    """``CardWords.description`` of a classifier labelling ``unit`` ("each token", "the whole text")."""

    def description(config: dict[str, Any], processor: dict[str, Any]) -> str:
        count, names = label_names(config)
        return f"A classification head labels {unit} with one of {count} labels: {names}."

    return description


def closed_answers(config: dict[str, Any]) -> str:
    """The limitation of a model answering from ``id2label``."""
    return (f"Answers come from a closed answer vocabulary of {len(config.get('id2label') or {})} answers "
            "(`id2label`): a question whose answer is not among them still gets one of them.")


def generate_kwargs(generation: dict[str, Any]) -> str:
    """The usage code's generate() arguments from generation_config.json."""
    num_beams = generation.get("num_beams", 1)
    max_new_tokens = generation.get("max_new_tokens") or 64
    return f"num_beams={num_beams}, max_new_tokens={max_new_tokens}"


def json_example(example: str, fields: dict[str, Callable[[Any], bool]], what: str, form: str) -> dict[str, Any]:
    """One example input given as a JSON object with exactly ``fields`` (name -> check of its value); a ValueError
    naming ``example_inputs``, ``what`` model reads them and their ``form`` otherwise."""
    try:
        item = json.loads(example)
    except (TypeError, json.JSONDecodeError):
        item = None
    if not (isinstance(item, dict) and set(item) == set(fields) and all(check(item[name])
                                                                         for name, check in fields.items())):
        raise ValueError(f"`example_inputs` of {what} must be JSON objects {form}, got {example!r:.200}.")
    return item


def text_examples(default: str = DEFAULT_EXAMPLE, check: Callable[[str], Any] | None = None
                  ) -> Callable[[Path, list[str] | None], list[str]]:
    """``CardWords.examples`` of a family whose examples are texts: the given ones, else ``[default]``; ``check``
    refuses a bad first example before anything is written."""

    def examples(model_dir: Path, given: list[str] | None) -> list[str]:
        chosen = list(given or [default])
        if check is not None:
            check(chosen[0])
        return chosen

    return examples


def task_pipeline_usage(task: str) -> Callable[..., str]:
    """``CardWords.usage`` of a head that transformers' ``task`` pipeline runs (token or text classification)."""

    def usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
              remote: bool) -> str:
        trust = ", trust_remote_code=True" if remote else ""
        return textwrap.dedent(f"""\
            from transformers import pipeline

            model_id = {json.dumps(model_id)}
            classifier = pipeline({json.dumps(task)}, model=model_id{trust})
            print(classifier({json.dumps(examples)}))""")

    return usage


def answerer_usage(model_id: str, module: str, pipeline_class: str, question: str, remote: bool,
                   plugin_import: str = "") -> str:
    """A question-answering pipeline of a sequence classifier answering (``question``, indented code): the one its
    folder ships (remote code), or with the plugin ``modeling.<module>.<pipeline_class>`` (and ``plugin_import``)."""
    if remote:
        return textwrap.dedent(f"""\
            from transformers import pipeline

            model_id = {json.dumps(model_id)}
            answerer = pipeline(model=model_id, trust_remote_code=True)
""") + textwrap.dedent(question)
    return textwrap.dedent(f"""\
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from hf_bahdanau.modeling.{module} import {pipeline_class}
""") + plugin_import + textwrap.dedent(f"""
        model_id = {json.dumps(model_id)}
        model = AutoModelForSequenceClassification.from_pretrained(model_id)
        answerer = {pipeline_class}(model=model, tokenizer=AutoTokenizer.from_pretrained(model_id))
""") + textwrap.dedent(question)
