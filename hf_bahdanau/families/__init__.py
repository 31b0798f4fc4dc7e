"""One descriptor per model family: everything the clients of ``modeling/`` need to know about a family.

A family is one ``Family`` (here, in ``<family>.py``) plus its model files in ``modeling/``. The Auto registration
(``hf_bahdanau/__init__.py``), the model card (``cards/``), the pictures, the explorer and the training scripts'
collators read ``FAMILIES``; none of them branches on a family's or a task's name.

    from hf_bahdanau.families import family_of, family_for_task
    family_of(json.load(open("outputs/dates/config.json"))).card.task_words    # "Translation"

A family added at run time (``register_family``) gets the same: Auto loading, save/load with its code, the pipeline
its config names, a model card and the contract tests (tests/contract/).
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CardWords", "FAMILIES", "Family", "Head", "Picture", "family_for_task", "family_of", "register_family"]


@dataclass(frozen=True)
class Head:
    """One model class of a family and the transformers Auto class that loads it."""

    auto_class: type  # e.g. transformers.AutoModelForSeq2SeqLM
    model_class: type


@dataclass(frozen=True)
class Picture:
    """A kind of picture a training run saves in the model folder, as the card shows it."""

    files: re.Pattern  # the file names of this kind (matched against each file in the folder)
    heading: str
    caption: str
    alt: str  # the alt text's noun ("alignment" -> "alignment 1")


@dataclass(frozen=True)
class CardWords:
    """What the model card says about a family; each callable reads the folder's config.json (and the image
    processor's preprocessor_config.json, {} when there is none) as dicts."""

    task_words: str  # how the task reads in words: "Translation"
    pipeline_tag: str | None  # the Hub's pipeline tag, None when no Hub pipeline does the task
    tags: Callable[[dict, dict], list[str]]
    description: Callable[[dict, dict], str]  # what the model reads and answers
    usage: Callable[..., str]  # (model_id, examples, generation, remote=bool) -> Python code
    limitations: Callable[[dict, dict], list[str]]
    default_examples: Callable[..., list[str]]  # (model_dir, example_inputs) -> the examples the usage code runs
    pictures: tuple[Picture, ...] = ()
    explorer_page: str | None = None  # the attention explorer a training run writes in the folder


@dataclass(frozen=True)
class Family:
    """A model family: its configs and heads, the task its saved folders are for, and its clients' words."""

    name: str  # "seq2seq", "pointer", "tagger", "classifier", "memory", "passage", "image-to-text", "vqa"
    task: str  # the card's and write_model_card's task: "translation", "token-classification", ...
    config_class: type
    heads: tuple[Head, ...]
    card_head: type  # the Auto class the card's usage code loads
    card: CardWords
    image_processor: type | None = None
    collator: Callable[..., Any] | None = None  # (tokenizer or processor, **options) -> a Trainer data collator
    architectures: tuple[str, ...] = field(default=())  # config.json "architectures" that mark this family when
    # several families share a model type; () for a model type of its own

    @property
    def model_type(self) -> str:
        return self.config_class.model_type


FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add ``family`` and register its config, heads and image processor with the Auto classes, each marked for
    ``register_for_auto_class`` so ``save_pretrained`` writes its code next to the weights."""
    from transformers import AutoConfig, AutoImageProcessor

    AutoConfig.register(family.model_type, family.config_class, exist_ok=True)
    family.config_class.register_for_auto_class()
    for head in family.heads:
        head.auto_class.register(family.config_class, head.model_class, exist_ok=True)
        head.model_class.register_for_auto_class(head.auto_class.__name__)
    if family.image_processor is not None:
        AutoImageProcessor.register(family.config_class, slow_image_processor_class=family.image_processor,
                                    exist_ok=True)
        family.image_processor.register_for_auto_class()
    FAMILIES[family.name] = family
    return family


def family_for_task(task: str) -> Family:
    """The family whose folders are for ``task``; a ValueError naming the tasks there are."""
    for family in FAMILIES.values():
        if family.task == task:
            return family
    raise ValueError(f"`task` must be one of {[family.task for family in FAMILIES.values()]}, got {task!r}.")


def family_of(config: Mapping[str, Any]) -> Family:
    """The family of a saved folder's config.json: its model type, and its architectures where families share one."""
    model_type = config.get("model_type")
    candidates = [family for family in FAMILIES.values() if family.model_type == model_type]
    architectures = set(config.get("architectures") or ())
    for family in candidates:
        if architectures & set(family.architectures):
            return family
    shared_type_default = [family for family in candidates if not family.architectures]
    if shared_type_default:
        return shared_type_default[0]
    raise ValueError(f"config.json's `model_type` {model_type!r} is no hf_bahdanau family's; the families are "
                     f"{sorted({family.model_type for family in FAMILIES.values()})}.")
