"""What the two bAbI question-answering tasks share: the memory-qa task (``training/tasks/memory_qa.py``: the memory
network and its LSTM baseline) and the passage-qa task (``training/tasks/passage_qa.py``: question-passage
co-attention over the story as one passage).

- ``BabiDataArguments``: where the questions come from (the Hub, Facebook's bAbI files, or our generator,
  ``training/data/babi.py``), of which task or tasks (several: one model trained on all their questions, the paper's
  joint training), how many, and the memory size (the most recent sentences a question reads);
- ``BabiModelArguments``: ``--architecture`` (each task's own ``architectures``, a registry of ``Architecture``) and
  memn2n's linear start. Both tasks read the same flags, so one command or .json file serves either:
  ``training/run_memory_qa.py`` runs ``--architecture coattention`` as the passage-qa task (``architecture_task``);
- ``read_questions``: the training, validation (held out of training) and test questions and the answers;
  ``build_tokenizer`` (one token per word and per answer), ``features`` (each architecture's rows), ``compute_metrics``
  (accuracy and error);
- ``BabiTask``: the driver's hooks for both (setup, prediction lines, attention statistics, card examples and usage,
  ``run_arguments.json``); a task adds its registry, its statistics and its pictures.
"""

import json
import logging
from argparse import ArgumentParser
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import datasets
import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import AutoModelForSequenceClassification, PreTrainedModel, PreTrainedTokenizerFast

from training.common.arguments import (
    ReportArguments, TaskModelArguments, check_new_config, json_to_flags, parse_config_overrides, read_json_arguments,
)
from training.common.driver import Report, Setup, Task
from training.common.metrics import in_percent
from training.common.steps import pipeline_usage
from training.data.babi import TASKS, BabiExample, generate_task, read_babi, task_file_name
from training.data.make_babi import SIZES, split_seed

__all__ = ["Architecture", "BabiDataArguments", "BabiModelArguments", "BabiQuestions", "BabiTask", "architecture_task",
           "babi_tasks", "build_tokenizer", "compute_metrics", "features", "from_hub_stories", "load_examples",
           "read_questions", "words_of"]

logger = logging.getLogger(__name__)

PAD, UNK = "[PAD]", "[UNK]"


class Architecture(NamedTuple):
    """One ``--architecture`` of a bAbI task. ``config_class`` and ``defaults``: a new model's config and the task's
    values for it (memn2n: the paper's); ``model_class``: the model; ``rows``: what the model reads of one question,
    (the kept sentences' token ids, the question's) -> the row's inputs; ``collator``: (tokenizer, memory size) -> the
    batches' collator."""

    config_class: type
    defaults: dict[str, Any]
    model_class: type[PreTrainedModel]
    rows: Callable[[list[list[int]], list[int]], dict[str, list]]
    collator: Callable[[PreTrainedTokenizerFast, int], Callable]


@dataclass
class BabiModelArguments(TaskModelArguments):
    """Which model, and the options the paper trains the memory network with. A task's subclass sets
    ``architectures`` (name -> ``Architecture``; the first is the default) and ``other_architectures`` (which task
    trains the others, for the error message)."""

    architectures: ClassVar[dict[str, Architecture]] = {}
    other_architectures: ClassVar[str] = ""

    architecture: str | None = field(
        default=None, metadata={"help": "memory-qa: memn2n (the memory network, the default) or lstm (the baseline "
                                        "without memory); passage-qa: coattention (question-passage co-attention)."})
    linear_start: bool = field(default=True, metadata={"help": "memn2n: start without the hops' softmax, until the "
                                                               "validation loss stops falling (the paper's LS)."})
    linear_start_max_epochs: float | None = field(
        default=None, metadata={"help": "End linear start by this epoch at the latest (default: half the epochs)."})
    linear_start_patience: int = field(
        default=1, metadata={"help": "End linear start after this many evaluations in a row whose validation loss "
                                     "is not below the best so far (1: the first one)."})

    def __post_init__(self):
        super().__post_init__()
        if self.linear_start_patience < 1:
            raise ValueError(f"`--linear_start_patience` must be a positive number of evaluations, got "
                             f"{self.linear_start_patience}.")
        self.architecture = self.architecture or next(iter(self.architectures))
        if self.architecture not in self.architectures:
            raise ValueError(f"`--architecture` must be one of {list(self.architectures)} ({self.other_architectures}"
                             f"), got {self.architecture!r}.")
        config_class = self.architectures[self.architecture].config_class
        parse_config_overrides(self.config_overrides, config_class)  # a bad field: exit 2
        if self.model_name_or_path is None:  # and a bad value
            check_new_config(self.new_config, self.config_overrides)

    def new_config(self, **data_fields):
        """A new model's config for --architecture: the task's defaults for it, --linear_start (where the config has
        it: memn2n), the data's fields (vocabulary, pad id, answers, ...), then --config_overrides."""
        config_class, defaults = self.architectures[self.architecture][:2]
        linear_start = ({"linear_start": self.linear_start} if "linear_start" in
                        {config_field.name for config_field in fields(config_class)} else {})
        return config_class(**{**defaults, **linear_start, **data_fields,
                               **parse_config_overrides(self.config_overrides, config_class)})


def architecture_task(argv: Sequence[str]) -> str:
    """The bAbI task that trains the ``--architecture`` of ``argv`` (a flag, or a key of the .json file of arguments
    that may come first; the last one given counts, as when parsing): "passage-qa" for coattention, else "memory-qa"
    (whose parsing also names a bad architecture, or a .json file it cannot read)."""
    flags = list(argv)
    if flags and flags[0].endswith(".json"):
        try:
            flags = json_to_flags(read_json_arguments(Path(flags[0]))) + flags[1:]
        except ValueError:
            return "memory-qa"
    parser = ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--architecture")
    return "passage-qa" if parser.parse_known_args(flags)[0].architecture == "coattention" else "memory-qa"


@dataclass
class BabiDataArguments(ReportArguments):
    """Where the stories come from, and what to report."""

    dataset_name: str | None = field(default=None, metadata={"help": "A Hub dataset in facebook/babi_qa's layout."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "e.g. en-qa1, en-10k-qa3."})
    train_file: str | None = field(default=None, metadata={"help": "Training stories, Facebook's bAbI text format."})
    test_file: str | None = field(default=None, metadata={"help": "Test stories, Facebook's bAbI text format."})
    babi_dir: str | None = field(default=None, metadata={"help": "A folder in Facebook's layout (en/, en-10k/)."})
    babi_task: list[str] = field(
        default_factory=lambda: ["1"],
        metadata={"help": f"The task of --babi_dir or of the generator, one of {list(TASKS)}; or several (e.g. 1 2 3) "
                          "or all: one model trained on all their training questions, tested on each."})
    babi_size: str = field(default="1k", metadata={"help": "1k or 10k training questions."})
    babi_seed: int = field(default=0, metadata={"help": "Seed of the generator (without files)."})
    validation_split_percentage: int = field(default=10, metadata={"help": "Training questions held out (of each "
                                                                           "task), in percent."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training questions "
                                                                          "of each task (before the validation ones "
                                                                          "are held out)."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test questions of "
                                                                            "each task."})
    memory_size: int = field(default=50, metadata={"help": "The most recent sentences a memory holds."})

    def __post_init__(self):
        self.language = self.language or ["en"]
        if self.babi_size not in ("1k", "10k"):
            raise ValueError(f"`--babi_size` must be '1k' or '10k', got {self.babi_size!r}.")
        if bool(self.train_file) != bool(self.test_file):
            raise ValueError("Give both `--train_file` and `--test_file` (Facebook's bAbI text files), or neither.")
        tasks = self.tasks  # each a task of the generator
        one_task_source = "`--dataset_name`" if self.dataset_name else "`--train_file`" if self.train_file else None
        if len(tasks) > 1 and one_task_source:
            raise ValueError(f"`--babi_task` {' '.join(map(str, self.babi_task))} names several tasks, and "
                             f"{one_task_source} gives one task's questions: train on several from `--babi_dir` "
                             "(each task's files) or from the generator.")
        if not 0 < self.validation_split_percentage < 100:
            raise ValueError(f"`--validation_split_percentage` must be in (0, 100), got "
                             f"{self.validation_split_percentage}.")
        for name in ("memory_size", "max_train_samples", "max_predict_samples"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"`--{name}` must be a positive number, got {getattr(self, name)}.")
        super().__post_init__()

    @property
    def tasks(self) -> list[int]:
        """The task numbers of --babi_task, in its order."""
        return babi_tasks(self.babi_task)


def babi_tasks(values: Sequence[str | int] | str | int) -> list[int]:
    """--babi_task's values (task numbers of ``TASKS``, or "all" alone: every one) -> the task numbers, in their
    order; a value that is none of them, or a task given twice, is a ValueError naming it."""
    values = [values] if isinstance(values, (str, int)) else list(values)
    if [str(value).lower() for value in values] == ["all"]:
        return list(TASKS)
    tasks = []
    for value in values:
        if str(value) not in {str(task) for task in TASKS}:
            raise ValueError(f"`--babi_task` must be one of {list(TASKS)} (one or several), or all, got {value!r}.")
        if int(value) in tasks:
            raise ValueError(f"`--babi_task` names task {value} twice.")
        tasks.append(int(value))
    return tasks


def load_examples(data_args: BabiDataArguments) -> tuple[list[BabiExample], list[BabiExample], str]:
    """(training questions, test questions, a line on where they come from) of the tasks of --babi_task, one task
    after the other, each task's cut to --max_train_samples and --max_predict_samples. A task with fewer than 2
    training questions (one is held out for validation) or no test question is a ValueError naming where they come
    from, before any training; so is a task's file missing from --babi_dir."""
    tasks, size, splits = data_args.tasks, data_args.babi_size, ("train", "test")
    layout = "en" if size == "1k" else "en-10k"
    several = len(tasks) > 1
    if data_args.dataset_name:
        (task,) = tasks  # several: refused by BabiDataArguments
        hub = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name)
        examples = {(task, split): from_hub_stories(hub[split], task) for split in splits}
        sources = {(task, split): f"`--dataset_name` {data_args.dataset_name} ({data_args.dataset_config_name}) "
                                  f"split {split!r}" for split in splits}
        description = f"{data_args.dataset_name} ({data_args.dataset_config_name})"
    elif data_args.train_file:
        (task,) = tasks
        files = {(task, "train"): data_args.train_file, (task, "test"): data_args.test_file}
        sources = {(task, split): f"`--{split}_file` {file}" for (task, split), file in files.items()}
        examples = {key: read_babi(file, task) for key, file in files.items()}
        description = f"bAbI files {Path(data_args.train_file).name}, {Path(data_args.test_file).name}"
    elif data_args.babi_dir:
        folder = Path(data_args.babi_dir) / layout
        files = {(task, split): folder / task_file_name(task, split) for task in tasks for split in splits}
        if missing := [file.name for file in files.values() if not file.is_file()]:
            raise ValueError(f"`--babi_dir` {data_args.babi_dir} lacks the files of `--babi_task` "
                             f"{' '.join(map(str, tasks))} in {layout}/: {missing}.")
        sources = {key: f"`--babi_dir` file {file}" for key, file in files.items()}
        examples = {key: read_babi(file, key[0]) for key, file in files.items()}
        description = f"bAbI task{'s' * several} {', '.join(map(str, tasks))} from {folder}"
    else:
        examples = {(task, split): [example for story in generate_task(task, SIZES[layout][split],
                                                                       split_seed(data_args.babi_seed, task, split))
                                    for example in story] for task in tasks for split in splits}
        sources = {(task, split): f"the generated task {task}'s {split} split" for task, split in examples}
        named = f"tasks {', '.join(map(str, tasks))}" if several else f"task {tasks[0]} ({TASKS[tasks[0]][0]})"
        description = (f"{named} of our bAbI-style generator (training/data/babi.py, seed {data_args.babi_seed}), "
                       f"{size} training questions{' each' * several}")
    limits = {"train": ("max_train_samples", 2, "training needs at least 2 (one is held out for validation)"),
              "test": ("max_predict_samples", 1, "testing needs at least 1")}
    for (task, split), questions in examples.items():
        limit, needed, need = limits[split]
        examples[task, split] = questions[:getattr(data_args, limit)]
        if len(examples[task, split]) < needed:
            cut = f" ({len(examples[task, split])} after `--{limit}`)" if len(examples[task, split]) < len(
                questions) else ""
            raise ValueError(f"{sources[task, split]} holds {len(questions)} question(s){cut}: {need}, each a line "
                             "'ID question<TAB>answer<TAB>supporting IDs' after the statements of its story.")
    return ([example for task in tasks for example in examples[task, "train"]],
            [example for task in tasks for example in examples[task, "test"]], description)


def from_hub_stories(rows: datasets.Dataset, task: int) -> list[BabiExample]:
    """facebook/babi_qa's rows (one story each: ``story`` with ``id``, ``type`` 0 statement / 1 question, ``text``,
    ``answer``, ``supporting_ids``) -> one example per question, as ``read_babi`` gives them."""
    examples = []
    for row in rows:
        story = row["story"]
        statements, index_of = [], {}
        for line_id, kind, text, answer, supports in zip(story["id"], story["type"], story["text"], story["answer"],
                                                         story["supporting_ids"]):
            if kind == 0:
                index_of[str(line_id)] = len(statements)
                statements.append(text)
            else:
                examples.append(BabiExample(task, list(statements), text, answer,
                                            sorted(index_of[str(support)] for support in supports)))
    return examples


@dataclass
class BabiQuestions:
    """The questions of a run: ``train``, ``validation`` (held out of the training questions), ``test``, and
    ``answers``, every answer seen in them, sorted (the labels)."""

    train: list[BabiExample]
    validation: list[BabiExample]
    test: list[BabiExample]
    answers: list[str]


def read_questions(data_args: BabiDataArguments) -> BabiQuestions:
    """``load_examples``'s questions with --validation_split_percentage of each task's training ones held out (drawn
    with --babi_seed); the card's data description from where they come from, unless --dataset_description says it.
    """
    questions, test, description = load_examples(data_args)
    data_args.dataset_description = data_args.dataset_description or description
    train, validation = [], []
    for task in data_args.tasks:
        task_questions = [example for example in questions if example.task == task]
        held_out = max(1, len(task_questions) * data_args.validation_split_percentage // 100)
        order = np.random.default_rng(data_args.babi_seed).permutation(len(task_questions))
        validation += [task_questions[index] for index in order[:held_out]]
        train += [task_questions[index] for index in order[held_out:]]
        if len(data_args.tasks) > 1:
            logger.info("Task %d: %d training, %d validation and %d test questions.", task,
                        len(task_questions) - held_out, held_out, sum(example.task == task for example in test))
    answers = sorted({example.answer for example in train + validation + test})
    unseen = sum(example.answer not in {seen.answer for seen in train} for example in test)
    if unseen:
        logger.warning("%d test answers never occur in training: the model can hardly give them.", unseen)
    return BabiQuestions(train, validation, test, answers)


def words_of(text: str) -> list[str]:
    """The words the tokenizer makes of a text (lower-cased, split at white space and punctuation)."""
    return [word for word, _ in pre_tokenizers.Whitespace().pre_tokenize_str(text.lower())]


def build_tokenizer(examples: list[BabiExample], answers: list[str]) -> PreTrainedTokenizerFast:
    """A word-level tokenizer of every word of the training stories and questions, and each answer as one token
    (a list answer "apple,milk" too), so that the answers are words of the vocabulary (the paper's W^T = C^K)."""
    vocabulary = sorted({word for example in examples for text in [*example.story, example.question]
                         for word in words_of(text)} | {answer.lower() for answer in answers})
    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate([PAD, UNK, *vocabulary])},
                                           unk_token=UNK))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token=PAD, unk_token=UNK)


def features(examples: list[BabiExample], tokenizer, answers: list[str],
             rows: Callable[[list[list[int]], list[int]], dict[str, list]], memory_size: int) -> datasets.Dataset:
    """One row per question: what ``rows`` (an ``Architecture``'s) makes of the token ids of the story's
    ``memory_size`` most recent sentences and of the question; ``labels``, the answer's index; ``supporting_facts``,
    indices into the kept sentences; and ``task``, the question's bAbI task."""
    label_of = {answer: index for index, answer in enumerate(answers)}
    columns: dict[str, list] = {}
    for example in examples:
        kept = example.story[-memory_size:]
        dropped = len(example.story) - len(kept)
        sentences = [tokenizer(sentence, add_special_tokens=False)["input_ids"] for sentence in kept]
        question = tokenizer(example.question, add_special_tokens=False)["input_ids"]
        row = {**rows(sentences, question), "labels": label_of[example.answer],
               "supporting_facts": [index - dropped for index in example.supporting_facts if index >= dropped],
               "task": example.task}
        for name, value in row.items():
            columns.setdefault(name, []).append(value)
    return datasets.Dataset.from_dict(columns)


def compute_metrics(prediction, row_tasks: Sequence[int] | None = None) -> dict[str, float]:
    """Accuracy and error (the paper's measure), in percent; given each row's task (a run on several tasks), each
    task's too, over its rows alone: ``accuracy_task_<n>``, ``error_task_<n>``."""
    correct = prediction.predictions.argmax(-1) == prediction.label_ids
    groups = {"": correct}
    if row_tasks is not None:
        row_tasks = np.asarray(row_tasks)
        groups |= {f"_task_{task}": correct[row_tasks == task] for task in np.unique(row_tasks)}
    accuracies = {suffix: float(rows.mean()) for suffix, rows in groups.items()}
    return in_percent({f"{name}{suffix}": value for suffix, accuracy in accuracies.items()
                       for name, value in (("accuracy", accuracy), ("error", 1 - accuracy))})


class BabiTask(Task):
    """What both bAbI tasks do: read the questions, build the tokenizer and the --architecture's model, rows and
    collator; answer each test question with its most likely answer (predictions.txt); after evaluation, the
    attention statistics of the test questions (``attention_statistics``) beside the accuracy, and the task's pictures
    (``save_pictures``); the card's examples are two test questions as the model's pipeline reads them
    (``pipeline_inputs``); ``run_arguments.json`` keeps the arguments. A run on several tasks reports the accuracy,
    error and attention statistics of each task beside the overall ones (``<name>_task_<n>``)."""

    data_arguments = BabiDataArguments
    model_arguments: ClassVar[type[BabiModelArguments]]
    metric = "eval_accuracy"
    split_columns = ("task",)

    def setup(self) -> Setup:
        model_args, data_args = self.model_args, self.data_args
        self.questions = read_questions(data_args)
        answers = self.questions.answers
        self.tokenizer = (PreTrainedTokenizerFast.from_pretrained(model_args.model_name_or_path)
                          if model_args.model_name_or_path else build_tokenizer(self.questions.train, answers))
        architecture = model_args.architectures[model_args.architecture]
        model = self.build_model()
        self.splits = {name: features(examples, self.tokenizer, answers, architecture.rows, data_args.memory_size)
                       for name, examples in (("train", self.questions.train), ("eval", self.questions.validation),
                                              ("predict", self.questions.test))}
        self.collator = architecture.collator(self.tokenizer, data_args.memory_size)
        self.attention_weights: list | None = None
        metrics = ((lambda prediction: compute_metrics(prediction, self.trainer.split_values["task"]))
                   if len(data_args.tasks) > 1 else compute_metrics)
        return Setup(model=model, processing_class=self.tokenizer, datasets=self.splits, data_collator=self.collator,
                     compute_metrics=metrics)

    def build_model(self) -> PreTrainedModel:
        """A new (or --model_name_or_path's) model of --architecture over the answers."""
        answers = self.questions.answers
        labels = dict(id2label=dict(enumerate(answers)),
                      label2id={answer: index for index, answer in enumerate(answers)})
        if self.model_args.model_name_or_path:
            return AutoModelForSequenceClassification.from_pretrained(self.model_args.model_name_or_path, **labels)
        config = self.model_args.new_config(vocab_size=len(self.tokenizer), pad_token_id=self.tokenizer.pad_token_id,
                                            **labels, **self.config_fields())
        return self.model_args.architectures[self.model_args.architecture].model_class(config)

    def config_fields(self) -> dict[str, Any]:
        """A new model's config fields that come from the data, besides the vocabulary, the pad id and the answers."""
        return {}

    def attention_statistics(self, dataset: datasets.Dataset) -> tuple[dict[str, float], list] | None:
        """Rates in percent of where the trained model's attention peaks on the questions of ``dataset`` (the test
        questions, or one task's) (e.g. on a supporting fact), and each question's weights for the pictures; None: the
        model has none."""
        return None

    def save_pictures(self, output_dir: Path) -> None:
        """The pictures of the test questions' attention (``self.attention_weights``, when the test ran)."""

    def pipeline_inputs(self, story: list[str], question: str) -> str | dict[str, Any]:
        """What the model's pipeline reads of a question: keyword arguments (a dict) or one text."""
        raise NotImplementedError

    def prediction_lines(self, output) -> list[str]:
        return [self.questions.answers[index] for index in output.predictions.argmax(-1)]

    def extra_metrics(self, split: str) -> dict[str, float]:
        test = self.splits["predict"]
        statistics = self.attention_statistics(test) if split == "predict" else None
        if statistics is None:
            return {}
        rates, self.attention_weights = statistics
        if len(self.data_args.tasks) > 1:
            row_tasks = np.array(test["task"])
            for task in self.data_args.tasks:
                task_rates = self.attention_statistics(test.select(np.flatnonzero(row_tasks == task)))[0]
                rates |= {f"{name}_task_{task}": value for name, value in task_rates.items()}
        return {f"predict_{name}": value for name, value in rates.items()}

    def report(self) -> Report:
        output_dir = Path(self.training_args.output_dir)
        self.save_pictures(output_dir)
        inputs = [self.pipeline_inputs(example.story[-self.data_args.memory_size:], example.question)
                  for example in self.questions.test[:2]]
        examples = [json.dumps(each) if isinstance(each, dict) else each for each in inputs]
        if isinstance(inputs[0], dict):  # the pipeline the folder ships, called with keywords
            return Report(examples, pipeline_usage(output_dir, f"(**{examples[0]})"))
        return Report(examples, pipeline_usage(output_dir, f"({json.dumps(examples[0])})", task=self.card_task))
