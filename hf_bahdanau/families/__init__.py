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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_bahdanau.modeling.transformers_private import AUTO_MAPPING_REGISTER

from .words import text_examples

__all__ = ["CardWords", "FAMILIES", "Family", "Head", "Picture", "family_for_task", "family_of",
           "find_family", "register_family", "text_widget"]


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


def text_widget(examples: list) -> list[dict[str, Any]]:
    """The Hub widget of a card whose examples are texts: one ``{"text": example}`` each."""
    return [{"text": text} for text in examples]


@dataclass(frozen=True)
class CardWords:
    """What the model card says about a family. ``config`` is the folder's config.json and ``processor`` its image
    processor's preprocessor_config.json ({} when there is none), both as dicts; ``examples`` what ``examples``
    returned."""

    task_words: str  # how the task reads in words: "Translation"
    architecture: Callable[[dict, dict | None], Any]  # (config, trainer_state or None) -> cards.Architecture
    description: Callable[[dict, dict], str]  # (config, processor) -> what the model reads and answers
    usage: Callable[..., str]  # (model_id, examples, generation, config, remote: bool) -> Python code; with
    # remote=True "" when the folder needs no remote code (then the card has one usage block)
    limitations: Callable[[dict, dict], list[str]]  # (config, processor)
    pipeline_tag: str | None = None  # the Hub's pipeline tag, None when no Hub pipeline does the task
    tags: Sequence[str] | Callable[[dict, dict], Sequence[str]] = ()  # the family's own tags, or (config,
    # processor) -> them; the engine adds those every card has (cards.card.card_tags: the package, the matching
    # preset's name, the task, custom_code)
    examples: Callable[[Path, list[str] | None], list] = text_examples()  # (model_dir, example_inputs or None: the
    # previous card's or none) -> the examples the usage code runs, checked; a ValueError naming `example_inputs`
    widget: Callable[[list], list[dict[str, Any]]] = text_widget  # examples -> the Hub widget; its "src" files
    # are example inputs, not figures
    pipeline_usage: Callable[..., str] | None = None  # (model_id, examples, generation, config) -> code or ""
    results_note: Callable[[dict[str, dict[str, float]]], str] | None = None  # (metrics by split) -> a note or ""
    metric_names: Callable[[str], str | None] | None = None  # an all_results.json key (without its split prefix) ->
    # the words for one of the family's own metrics; None: the card engine's shared words (cards.card.METRIC_NAMES)
    summary: Callable[..., str] | None = None  # (architecture, task_words, trained) -> the first sentence, when not
    # the engine's "An RNN encoder–decoder, ..., built with hf_bahdanau"
    pictures: tuple[Picture, ...] = ()
    explorer_page: str | None = None  # the attention explorer a training run writes in the folder

    def own_tags(self, config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
        """``tags``, called with the folder's config and processor dicts when it is a function."""
        return list(self.tags(config, processor) if callable(self.tags) else self.tags)


@dataclass(frozen=True)
class Family:
    """A model family: its configs and heads, the task its saved folders are for, and its clients' words."""

    name: str  # "seq2seq", "pointer", "tagger", "classifier", "memory", "passage", "image-to-text", "vqa"
    task: str  # the card's and write_model_card's task: "translation", "token-classification", ...
    config_class: type
    heads: tuple[Head, ...]
    card: CardWords
    card_head: type | None = None  # the Auto class the card's usage code loads; None: the last head's
    image_processor: type | None = None
    collator: Callable[..., Any] | None = None  # (tokenizer or processor, **options) -> a Trainer data collator
    architectures: tuple[str, ...] = field(default=())  # config.json "architectures" that mark this family when
    # several families share a model type; () for a model type of its own (or the shared type's default family)
    text_to_text: bool = False  # its folders read text and write text: hf-bahdanau-translate, -export and -explore
    # and run_seq2seq.py serve them
    refusal: str | None = None  # what those commands say when refusing its folder, after "{name!r} "; None: the
    # head's name and Auto class
    upgrades: tuple[type, ...] = ()  # config classes its heads also load and upgrade to ``config_class`` (0.1.0's
    # "bahdanau" folders of the tagger and the classifiers, seq2seq checkpoints): their Auto mappings name its heads
    explorer: Any = None  # the page hf-bahdanau-explore builds of its folders (an hf_bahdanau.explorer.Explorer);
    # None: the command refuses its folders

    def __post_init__(self) -> None:
        if self.card_head is None:
            object.__setattr__(self, "card_head", self.heads[-1].auto_class)  # a frozen dataclass's own default

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
        for upgraded in family.upgrades if AUTO_MAPPING_REGISTER else ():  # transformers' register() refuses a
            # head whose config_class is another (a private hook: modeling/transformers_private.py)
            head.auto_class._model_mapping.register(key=upgraded, value=head.model_class, exist_ok=True)
    if family.image_processor is not None:
        AutoImageProcessor.register(family.config_class, slow_image_processor_class=family.image_processor,
                                    exist_ok=True)
        family.image_processor.register_for_auto_class()
    FAMILIES[family.name] = family
    return family


def family_for_task(task: str) -> Family:
    """The family whose folders are for ``task``; a ValueError naming the tasks there are."""
    by_task = {family.task: family for family in reversed(FAMILIES.values())}  # the first registered wins
    if task not in by_task:
        raise ValueError(f"`task` must be one of {[family.task for family in FAMILIES.values()]}, got {task!r}.")
    return by_task[task]


def find_family(config: Mapping[str, Any]) -> Family | None:
    """The family of a saved folder's config.json (or ``config.to_dict()``), None when it is no family's: the one
    whose ``architectures`` (or head classes) it names, else the one of its model type (the family that declares
    no ``architectures`` where several share it). Where none does, a config without ``architectures`` is for the
    head its config class names (``head_of(config)``: the tagger's or the classifier's, by the fields it sets; a
    ValueError when they do not tell)."""
    architectures = set(config.get("architectures") or ())
    of_type = [family for family in FAMILIES.values() if family.model_type == config.get("model_type")]
    if not architectures and len(of_type) > 1 and all(family.architectures for family in of_type):
        architectures = {of_type[0].config_class.head_of(config)}
    named = [family for family in FAMILIES.values()
             if architectures & {*family.architectures, *(head.model_class.__name__ for head in family.heads)}]
    if len(named) == 1:
        return named[0]
    return next((family for family in of_type if len(of_type) == 1 or not family.architectures), None)


def family_of(config: Mapping[str, Any]) -> Family:
    """``find_family``'s family; a ValueError naming the model types of the families when there is none."""
    family = find_family(config)
    if family is None:
        raise ValueError(f"config.json's `model_type` {config.get('model_type')!r} is no hf_bahdanau family's; the "
                         f"families are {sorted({family.model_type for family in FAMILIES.values()})}.")
    return family


# the families, registered in this order (write_model_card's tasks are listed in it)
from . import seq2seq, tagger, classifier, pointer, memory, image_to_text, vqa, passage  # noqa: E402, F401, I001
