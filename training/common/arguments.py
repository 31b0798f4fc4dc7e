"""Command-line arguments of the training scripts: ``HfArgumentParser`` dataclasses from flags, or from a .json file of
arguments followed by flags that override it, checked before any data or model is loaded.

    model_args, data_args, training_args = parse_arguments((ModelArguments, DataArguments, TrainingArguments), argv,
                                                           description=__doc__)
"""

import ast
import json
import logging
import os
import warnings
from argparse import ArgumentParser
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TypeVar

import torch
from transformers import (
    AutoTokenizer, HfArgumentParser, PreTrainedTokenizerBase, Seq2SeqTrainingArguments, TrainingArguments,
)

from hf_bahdanau import BahdanauConfig
from hf_bahdanau.cards import check_license
from hf_bahdanau.cli import MAX_NEW_TOKENS, check_new_tokens, usage_errors
from hf_bahdanau.locations import check_model_location
from training.common.tokenization import train_tokenizer

__all__ = ["RENAMED_FLAGS", "ReportArguments", "TaskModelArguments", "TextModelArguments", "bad_arguments_exit",
           "check_counts", "check_new_config", "exit_on_bad_argument", "json_to_flags", "parse_arguments",
           "parse_config_overrides", "rename_old_flags"]

logger = logging.getLogger(__name__)

Parsed = TypeVar("Parsed")

JSON_ARGUMENTS = ("A .json file of arguments may come first (its keys are the flags' names, e.g. "
                  "training/configs/dates_rnnsearch.json); flags after it override its values. Generation lengths "
                  f"(--max_new_tokens, --generation_max_length) are at most {MAX_NEW_TOKENS:,} tokens.")


# Old flag -> the flag every script now has; the old ones (flags, or keys of a .json file of arguments) still work,
# with a FutureWarning naming the new one.
RENAMED_FLAGS = {"--num_attention_pictures": "--num_pictures", "--num_alignment_pictures": "--num_pictures",
                 "--max_plots": "--num_pictures"}


@dataclass
class ReportArguments:
    """The arguments of every task's report: how many examples get attention pictures, and what the model card says
    about the data. A task's data arguments derive from it (listed first, ``class DataArguments(ReportArguments,
    DataFileArguments)``) and call ``super().__post_init__()`` from their own ``__post_init__``."""

    num_pictures: int = field(
        default=4, metadata={"help": "Attention pictures of the first N test (else validation) examples (and of the "
                                     "encoder's self-attention and embedding mixture where a model has them); 0: "
                                     "none. Was --num_attention_pictures, --num_alignment_pictures, --max_plots."})
    language: list[str] | None = field(default=None, metadata={"help": "Languages of the data, for the model card."})
    dataset_description: str | None = field(default=None, metadata={"help": "One line on the data for the card."})
    license: str | None = field(default=None, metadata={"help": "The model card's license, a Hub license id "
                                                              "(default: apache-2.0; your data's may oblige another)."})

    def __post_init__(self):
        check_counts(self, "num_pictures")


@dataclass
class TaskModelArguments:
    """The model arguments every task has: a saved model to start from or a new one's config fields, and the training
    budget. A task's model arguments derive from it."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved model (folder or Hub id) to train further. Default: a new model."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "Config fields of a new model, e.g. 'hidden_size=128,dropout=0.2'."})
    max_train_minutes: float | None = field(
        default=None, metadata={"help": "Stop training after this many minutes (evaluations not counted)."})
    torch_num_threads: int | None = field(default=None, metadata={"help": "torch.set_num_threads before training."})
    num_restarts: int = field(
        default=1, metadata={"help": "Train N times, with seeds --seed, --seed+1, ..., each in OUTPUT_DIR/restart-K/ "
                                     "(kept: its own model, results, pictures and card), and make OUTPUT_DIR a copy "
                                     "of the best by validation: --metric_for_best_model (default eval_loss) and "
                                     "--greater_is_better, as transformers reads them. restarts.json lists each "
                                     "restart's seed and metric and the chosen one; --push_to_hub pushes only it. "
                                     "Needs --do_train and --do_eval; --max_train_minutes is each restart's."})

    def __post_init__(self):
        if self.max_train_minutes is not None and not self.max_train_minutes > 0:
            raise ValueError(f"`--max_train_minutes` must be a positive number of minutes, got "
                             f"{self.max_train_minutes}.")
        if self.torch_num_threads is not None and self.torch_num_threads < 1:
            raise ValueError(f"`--torch_num_threads` must be a positive integer, got {self.torch_num_threads}.")
        if self.num_restarts < 1:
            raise ValueError(f"`--num_restarts` must be a positive number of runs (1: one run), got "
                             f"{self.num_restarts}.")


@dataclass
class TextModelArguments(TaskModelArguments):
    """The model arguments of the tasks that read text with a tokenizer of their own (seq2seq, tagging,
    classification): a saved tokenizer, how a new one reads, word vectors, and how the Hub is read. Each task adds
    its tokenizer's kind and size, ``tokenizer_type`` and ``tokenizer_vocab_size`` (their defaults differ)."""

    tokenizer_name: str | None = field(
        default=None, metadata={"help": "A saved tokenizer (folder or Hub id). Default: the model's, or for a new "
                                        "model one trained on the training data."})
    lowercase: bool = field(default=False, metadata={"help": "Lower-case text in a trained tokenizer."})
    pretrained_vectors: str | None = field(
        default=None, metadata={"help": "A GloVe/word2vec/fastText text file of word vectors for a meta-embedding with "
                                        "the 'pretrained' source (config_overrides 'meta_embedding_sources=[word,"
                                        "chars,pretrained],pretrained_embedding_size=300')."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where downloaded models and datasets are stored."})
    model_revision: str = field(default="main", metadata={"help": "Hub revision (branch, tag or commit)."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private models and datasets."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow code from model/dataset repositories."})

    def load_tokenizer(self, texts: Iterable[str] | None, missing_texts: str) -> PreTrainedTokenizerBase:
        """The tokenizer of ``--tokenizer_name``, else ``--model_name_or_path``'s, else one of
        ``--tokenizer_type`` trained on ``texts`` (the training texts; None: a ValueError saying ``missing_texts``,
        what to give instead)."""
        name = self.tokenizer_name or self.model_name_or_path
        if name is not None:
            return AutoTokenizer.from_pretrained(name, cache_dir=self.cache_dir, revision=self.model_revision,
                                                 token=self.token, trust_remote_code=self.trust_remote_code)
        if texts is None:
            raise ValueError(f"Training a tokenizer needs training data: {missing_texts}.")
        tokenizer = train_tokenizer(texts, kind=self.tokenizer_type, vocab_size=self.tokenizer_vocab_size,
                                    lowercase=self.lowercase)
        logger.info("Trained a %s tokenizer with %d tokens on the training data", self.tokenizer_type, len(tokenizer))
        return tokenizer


def rename_old_flags(argv: list[str]) -> list[str]:
    """``argv`` with each old flag of ``RENAMED_FLAGS`` (``--max_plots 2``, ``--max_plots=2``, or with dashes as
    HfArgumentParser also reads them, ``--max-plots 2``) replaced by its new name, with a FutureWarning naming both
    (shown once per process, as Python shows warnings)."""
    renamed = []
    for argument in argv:
        written, equals, value = argument.partition("=")
        flag = "--" + written[2:].replace("-", "_") if written.startswith("--") else written
        if flag in RENAMED_FLAGS:
            warnings.warn(f"`{flag}` is deprecated and will be removed: use `{RENAMED_FLAGS[flag]}` (in a .json file "
                          f"of arguments, the key {RENAMED_FLAGS[flag][2:]!r}).", FutureWarning, stacklevel=2)
            argument = RENAMED_FLAGS[flag] + equals + value
        renamed.append(argument)
    return renamed


def has_accelerator() -> bool:
    accelerator = getattr(torch, "accelerator", None)
    return accelerator.is_available() if accelerator is not None else torch.cuda.is_available()


def json_to_flags(arguments: dict) -> list[str]:
    flags = []
    for key, value in arguments.items():
        values = value if isinstance(value, list) else [value]
        flags += [f"--{key}", *(json.dumps(v) if isinstance(v, dict) else str(v) for v in values)]
    return flags


def parse_arguments(dataclass_types: tuple, argv: list[str], description: str | None = None,
                    prog: str | None = None) -> tuple:
    """The dataclasses of ``dataclass_types`` (the last one a ``TrainingArguments``) from ``argv``; ``prog``: the
    command's name in usage and error lines (default: the script's file name).

    Without an accelerator, ``--dataloader_pin_memory false`` is implied (pinning needs one, and torch warns at every
    data loader), and under torchrun ``--use_cpu true`` too (transformers runs DDP on CPU, over gloo, only with it;
    without it every process would train alone). The old names of ``RENAMED_FLAGS`` (flags or keys of the .json
    file) are read as the new ones, with a FutureWarning. Then the training arguments, the model's location and the
    card's licence are checked. A bad argument (a ValueError of these checks or of a dataclass's ``__post_init__``)
    ends the process as argparse ends it for an unknown flag: ``PROG: error: MESSAGE`` on stderr, exit status 2, no
    traceback.
    """
    parser = HfArgumentParser(dataclass_types, description=description, epilog=JSON_ARGUMENTS, prog=prog)
    return exit_on_bad_argument(parser, lambda: _parse(parser, argv))


def exit_on_bad_argument(parser: ArgumentParser, parse: Callable[[], Parsed]) -> Parsed:
    """What ``parse()`` returns (the arguments, parsed and checked); a ValueError from it, a bad argument, ends the
    process as argparse ends it for an unknown flag: ``PROG: error: MESSAGE`` on stderr, exit status 2, no traceback."""
    with bad_arguments_exit(parser.prog):
        return parse()


@contextmanager
def bad_arguments_exit(prog: str | None = None) -> Iterator[None]:
    """A script's setup, run inside it, ends as argparse ends for an unknown flag on a ValueError (a column, file,
    split, task or value of the user's arguments that the data or the model refuses): ``PROG: error: MESSAGE`` on
    stderr, exit status 2, no traceback (logged at debug level, ``--log_level debug``). Any other exception, a bug,
    keeps its traceback. ``prog``: argparse's default, the script's file name.

        args = parse_arguments(...)
        with bad_arguments_exit():  # reading the data, training the tokenizer, building the model and the Trainer
            ...
        trainer.train()
    """
    with usage_errors(prog or ArgumentParser().prog):  # argparse's own default name
        try:
            yield
        except ValueError:
            logger.debug("Where the bad argument was found:", exc_info=True)
            raise


def _parse(parser: HfArgumentParser, argv: list[str]) -> tuple:
    if argv and argv[0].endswith(".json"):
        argv = json_to_flags(read_json_arguments(Path(argv[0]))) + argv[1:]
    if any(issubclass(dataclass_type, ReportArguments) for dataclass_type in parser.dataclass_types):
        argv = rename_old_flags(argv)
    if not has_accelerator():
        if "--dataloader_pin_memory" not in argv:
            argv = [*argv, "--dataloader_pin_memory", "false"]
        if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "--use_cpu" not in argv:
            argv = [*argv, "--use_cpu", "true"]
    parsed = parser.parse_args_into_dataclasses(args=argv)
    check_training_arguments(parsed[-1])
    for arguments in parsed:
        name = getattr(arguments, "model_name_or_path", None)
        if name is not None:
            check_model_location(name, "--model_name_or_path")
        if getattr(arguments, "license", None) is not None:  # the card is written after training: check it now
            check_license(arguments.license)
    return parsed


def read_json_arguments(path: Path) -> dict:
    """The arguments of a .json file of arguments: a JSON object of flag names and values."""
    try:
        arguments = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"The .json file of arguments {str(path)!r} cannot be read: {error}.") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"The .json file of arguments {str(path)!r} must hold a JSON object of flags and values, got "
                         f"{type(arguments).__name__}.")
    return arguments


def check_counts(arguments, *names: str) -> None:
    """A ValueError naming the first of the fields ``names`` of ``arguments`` (how many pictures or examples to write)
    that is below 0; 0 means none."""
    for name in names:
        if getattr(arguments, name) < 0:
            raise ValueError(f"`--{name}` must be 0 (none) or a positive number, got {getattr(arguments, name)}.")


def check_training_arguments(training_args: TrainingArguments) -> None:
    """What ``TrainingArguments`` accepts but cannot mean: a ``--max_steps`` of 0 or below -1 (transformers then
    silently trains ``--num_train_epochs`` epochs), a ``--generation_max_length`` above ``MAX_NEW_TOKENS`` (beam
    search would allocate tables of that length), ``--fp16`` on the CPU (accelerate has no float16 autocast there:
    Trainer silently trains in float32)."""
    if training_args.fp16 and (training_args.use_cpu or not has_accelerator()):
        raise ValueError("`--fp16` needs a GPU: on the CPU transformers' Trainer ignores it and trains in float32. For "
                         "mixed precision on the CPU use `--bf16 true --use_cpu true`.")
    if training_args.max_steps == 0 or training_args.max_steps < -1:
        raise ValueError(f"`--max_steps` must be a positive number of steps, or -1 (the default: train "
                         f"--num_train_epochs epochs), got {training_args.max_steps}.")
    if isinstance(training_args, Seq2SeqTrainingArguments):
        check_new_tokens(training_args.generation_max_length, "--generation_max_length")


def parse_config_overrides(overrides: str | None, config_class: type = BahdanauConfig) -> dict:
    """'hidden_size=256,attention_type=general,bidirectional=false' -> {"hidden_size": 256, ...}; a list in brackets,
    'meta_embedding_sources=[word,chars]' -> ["word", "chars"], nested ones too ('cnn_pool_sizes=[[2,2],[2,1]]');
    the fields are ``config_class``'s and its sub-configs' (a composed config routes those given flat)."""
    allowed = {config_field.name for part in (config_class, *config_class.sub_configs.values())
               for config_field in fields(part)}
    parsed = {}
    for item in filter(None, _top_level_items(overrides or "")):
        key, separator, text = item.partition("=")
        key = key.strip()
        if not separator or key not in allowed:
            raise ValueError(f"`--config_overrides` takes 'field=value,...' with {config_class.__name__} fields "
                             f"{sorted(allowed)}, got {item!r}.")
        text = text.strip()
        literal = {"true": "True", "false": "False", "none": "None", "null": "None"}.get(text.lower(), text)
        parsed[key] = _literal(literal, text)
        if text.startswith("[") and text.endswith("]") and not isinstance(parsed[key], list):
            parsed[key] = [_literal(part.strip(), part.strip()) for part in text[1:-1].split(",") if part.strip()]
    return parsed


def check_new_config(build: Callable[[], object], overrides: str | None,
                     argument: str = "--config_overrides") -> None:
    """Build a new model's config once while the arguments are parsed (``build()``, the data's fields such as the
    vocabulary left at their defaults; cheap, no weights), so that a value the config refuses (``hidden_size=-3``,
    ``attention_type=bogus``) ends there, before any data is read: a ValueError naming ``argument`` and its value
    ``overrides`` (when given) with the config's own message, its TypeError for a value of the wrong type included."""
    try:
        build()
    except (ValueError, TypeError) as error:
        raise ValueError(f"`{argument}` {overrides!r}: {error}" if overrides else str(error)) from None


def _top_level_items(text: str) -> list[str]:
    """'a=1,b=[1,[2,3]],c=x' -> ['a=1', 'b=[1,[2,3]]', 'c=x']: the commas outside brackets split."""
    items, depth, start = [], 0, 0
    for index, character in enumerate(text):
        depth += {"[": 1, "]": -1}.get(character, 0)
        if character == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    return items + [text[start:]]


def _literal(literal: str, text: str):
    """The Python value ``literal`` spells, else the text as it is."""
    try:
        return ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return text
