"""The one training driver: every task trains, evaluates, writes its card and pictures and pushes through ``train``.

    python -m training <task> [CONFIG.json] [--flag value ...]      # e.g. python -m training classification ...

A task is one file, ``training/tasks/<task>.py``, that defines ``TASK``, a ``Task`` subclass with what is specific to
it: its argument dataclasses (on ``TaskModelArguments`` and ``ReportArguments``), ``setup()`` (read or generate the
splits, the tokenizer, the model, the collator, the metrics) and, where it has them, the prediction lines, extra
metrics and the report (pictures, explorer page, the card's examples). The driver does the rest, identically for all:

    parse (flags, or a .json file of them) -> logging, seed, threads -> task.setup() -> TaskTrainer (code files with
    every checkpoint push, the training clock, --max_train_minutes) -> train, evaluate, predict (results files,
    predictions file) -> the processors and run_arguments.json -> task.report() -> training curve, model card, Hub
    push, the last line saying how to use it.
"""

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from transformers import PreTrainedModel, Seq2SeqTrainingArguments, TrainerCallback, set_seed
from transformers.trainer_utils import PredictionOutput

from training.common.arguments import ReportArguments, TaskModelArguments, bad_arguments_exit, parse_arguments
from training.common.steps import finish_run, setup_logging, train_and_evaluate, trainer_callbacks
from training.common.trainer import TaskTrainer
from training.common.training_clock import TrainingBudgetCallback

__all__ = ["Report", "Setup", "Task", "train"]

logger = logging.getLogger(__name__)


@dataclass
class Setup:
    """What a task's ``setup()`` gives the driver. ``datasets``: the tokenized splits by the driver's names, "train",
    "eval" (``--do_eval``) and "predict" (``--do_predict``), each present only when used. ``processors``: those saved
    with every checkpoint push beside ``processing_class`` (e.g. an image processor). ``generate_kwargs`` go to
    evaluation's ``generate()``."""

    model: PreTrainedModel
    processing_class: Any
    datasets: dict[str, Any]
    data_collator: Any = None
    compute_metrics: Any = None
    processors: tuple = ()
    callbacks: list[TrainerCallback] = field(default_factory=list)
    generate_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    """What a task's ``report()`` gives the model card and the last line: ``example_inputs`` (the card's widget and
    usage examples) and ``usage``, how to use the model (one runnable line)."""

    example_inputs: list[str]
    usage: str


class Task:
    """One training task. Subclasses set the class attributes and implement ``setup``; the other methods are hooks
    with defaults. The parsed arguments are ``self.model_args``, ``self.data_args``, ``self.training_args``, and after
    ``setup`` the Trainer is ``self.trainer``.

    ``name``: the task's name on the command line. ``card_task``: the model card's task (a pipeline tag).
    ``metric``: the evaluation metric drawn on the training curve. ``generates``: evaluation may call ``generate()``
    (``--predict_with_generate``). ``split_columns``: columns of the evaluated split kept for the metrics
    (``trainer.split_values``). ``predictions_file``: where the test predictions' lines go."""

    name: ClassVar[str]
    model_arguments: ClassVar[type[TaskModelArguments]]
    data_arguments: ClassVar[type[ReportArguments]]
    card_task: ClassVar[str]
    metric: ClassVar[str | None] = None
    generates: ClassVar[bool] = False
    split_columns: ClassVar[tuple[str, ...]] = ()
    predictions_file: ClassVar[str] = "predictions.txt"

    def __init__(self, model_args: TaskModelArguments, data_args: ReportArguments,
                 training_args: Seq2SeqTrainingArguments) -> None:
        self.model_args, self.data_args, self.training_args = model_args, data_args, training_args
        self.trainer: TaskTrainer | None = None

    @classmethod
    def description(cls) -> str:
        """The first line of the task's docstring (``--help``)."""
        return (cls.__doc__ or cls.name).strip().splitlines()[0]

    def setup(self) -> Setup:
        """Read or generate the splits, build or load the tokenizer and the model; a ValueError is a bad argument."""
        raise NotImplementedError

    def prediction_lines(self, output: PredictionOutput) -> list[str] | None:
        """The lines of the predictions file, one per test row (None: no file)."""
        return None

    def extra_metrics(self, split: str) -> dict[str, float]:
        """Metrics added to ``split``'s ("eval", "predict") results beside the Trainer's, e.g. attention statistics."""
        return {}

    def report(self) -> Report:
        """In the main process after evaluation: pictures and explorer pages in ``output_dir`` (the card shows the
        folder's pictures), and the card's examples and usage line."""
        raise NotImplementedError


def save_run(output_dir: str, processors: tuple, model_args: TaskModelArguments, data_args: ReportArguments) -> None:
    """In ``output_dir``, beside what Trainer saved: the ``processors`` it does not save (an image processor) and
    ``run_arguments.json``, the run's model and data arguments (``{"model": {...}, "data": {...}}``, which the results
    tables read)."""
    for processor in processors:
        processor.save_pretrained(output_dir)
    arguments = {"model": asdict(model_args), "data": asdict(data_args)}
    (Path(output_dir) / "run_arguments.json").write_text(json.dumps(arguments, indent=1))


def train(task_class: type[Task], argv: Sequence[str], prog: str | None = None) -> None:
    """Run ``task_class`` with the command-line arguments ``argv`` (a .json file of arguments may come first);
    ``prog``: the command in usage and error lines (default: the script's name)."""
    model_args, data_args, training_args = parse_arguments(
        (task_class.model_arguments, task_class.data_arguments, Seq2SeqTrainingArguments), list(argv),
        description=task_class.description(), prog=prog)
    setup_logging(training_args)
    set_seed(training_args.seed)
    if model_args.torch_num_threads is not None:
        torch.set_num_threads(model_args.torch_num_threads)
    task = task_class(model_args, data_args, training_args)
    with bad_arguments_exit(prog):  # a ValueError of the data or the model built from the arguments: exit 2
        if training_args.predict_with_generate and not task.generates:
            raise ValueError(f"`--predict_with_generate` evaluates with generate(), which the {task.name} task's "
                             f"models do not have: leave it out.")
        setup = task.setup()
        budget = [TrainingBudgetCallback(model_args.max_train_minutes)] if model_args.max_train_minutes else []
        task.trainer = TaskTrainer(
            model=setup.model, args=training_args, train_dataset=setup.datasets.get("train"),
            eval_dataset=setup.datasets.get("eval"), processing_class=setup.processing_class,
            data_collator=setup.data_collator, compute_metrics=setup.compute_metrics,
            callbacks=trainer_callbacks(*setup.processors) + budget + setup.callbacks,
            split_columns=task.split_columns)
    train_and_evaluate(task.trainer, training_args, setup.datasets, prediction_lines=task.prediction_lines,
                       predictions_file=task.predictions_file, extra_metrics=task.extra_metrics,
                       **setup.generate_kwargs)
    if not task.trainer.is_world_process_zero():
        return
    save_run(training_args.output_dir, setup.processors, model_args, data_args)
    report = task.report()
    finish_run(task.trainer, training_args, data_args, task=task.card_task, metric=task.metric,
               example_inputs=report.example_inputs, usage=report.usage)
