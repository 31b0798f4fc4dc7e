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

With ``--num_restarts`` N, all of that N times (seeds --seed, --seed+1, ...) into OUTPUT_DIR/restart-K/, then the
best run by validation copied to OUTPUT_DIR, where it reports again, writes its card and alone is pushed
(``train_restarts``).
"""

import json
import logging
import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import torch
from transformers import PreTrainedModel, Seq2SeqTrainingArguments, TrainerCallback, TrainingArguments, set_seed
from transformers.trainer_utils import PredictionOutput

from training.common.arguments import ReportArguments, TaskModelArguments, bad_arguments_exit, parse_arguments
from training.common.steps import finish_run, setup_logging, train_and_evaluate, trainer_callbacks
from training.common.trainer import TaskTrainer
from training.common.training_clock import TrainingBudgetCallback

__all__ = ["Report", "Setup", "Task", "train"]

logger = logging.getLogger(__name__)

RESTART_FOLDER = "restart-{}"  # --num_restarts: each run's folder in --output_dir
RESTARTS_FILE = "restarts.json"


@dataclass
class Setup:
    """What a task's ``setup()`` gives the driver. ``datasets``: the tokenized splits by the driver's names, "train",
    "eval" (``--do_eval``) and "predict" (``--do_predict``), each present only when used. ``processors``: those saved
    with every checkpoint push beside ``processing_class`` (e.g. an image processor). ``generate_kwargs`` go to
    evaluation's ``generate()``. ``loss_reduction`` and ``lr_scheduler``: ``TaskTrainer``'s (the training loss summed
    over each batch instead of averaged; the learning-rate schedule built from the optimizer and the optimizer steps in
    one epoch, instead of ``--lr_scheduler_type``'s). ``max_tokens_per_batch``: training batches by tokens instead of
    ``--per_device_train_batch_size`` rows (``TaskTrainer``'s)."""

    model: PreTrainedModel
    processing_class: Any
    datasets: dict[str, Any]
    data_collator: Any = None
    compute_metrics: Any = None
    processors: tuple = ()
    callbacks: list[TrainerCallback] = field(default_factory=list)
    generate_kwargs: dict[str, Any] = field(default_factory=dict)
    loss_reduction: str = "mean"
    lr_scheduler: Callable[[torch.optim.Optimizer, int], torch.optim.lr_scheduler.LRScheduler] | None = None
    max_tokens_per_batch: int | None = None


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

    def training_choices(self) -> dict[str, Any]:
        """How this run trains where ``TrainingArguments`` do not say it, or say something it replaces (e.g. its own
        learning-rate schedule): the card lists these among the hyperparameters, over TrainingArguments' own."""
        return {}

    def report(self) -> Report:
        """In the main process after evaluation: pictures and explorer pages in ``output_dir`` (the card shows the
        folder's pictures), and the card's examples and usage line. With ``--num_restarts`` it runs once per restart
        and again for the chosen one, each time into ``self.training_args.output_dir``."""
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
    ``prog``: the command in usage and error lines (default: the script's name). With ``--num_restarts`` N > 1,
    ``train_restarts``."""
    model_args, data_args, training_args = parse_arguments(
        (task_class.model_arguments, task_class.data_arguments, Seq2SeqTrainingArguments), list(argv),
        description=task_class.description(), prog=prog)
    setup_logging(training_args)
    if model_args.torch_num_threads is not None:
        torch.set_num_threads(model_args.torch_num_threads)
    if model_args.num_restarts == 1:
        run_task(task_class, model_args, data_args, training_args, prog)
        return
    with bad_arguments_exit(prog):
        check_restarts(model_args.num_restarts, training_args)
    train_restarts(task_class, model_args, data_args, training_args, prog)


def run_task(task_class: type[Task], model_args: TaskModelArguments, data_args: ReportArguments,
             training_args: Seq2SeqTrainingArguments, prog: str | None) -> Task | None:
    """One run: seed, ``task.setup()``, the Trainer, training and evaluation, then in the main process
    ``run_arguments.json`` and ``finish`` (pictures, card, push) in ``training_args.output_dir``. Returns the task
    (its Trainer holds the trained model) in the main process, None in the others."""
    set_seed(training_args.seed)
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
            split_columns=task.split_columns, loss_reduction=setup.loss_reduction,
            lr_scheduler_factory=setup.lr_scheduler, max_tokens_per_batch=setup.max_tokens_per_batch)
    train_and_evaluate(task.trainer, training_args, setup.datasets, prediction_lines=task.prediction_lines,
                       predictions_file=task.predictions_file, extra_metrics=task.extra_metrics,
                       **setup.generate_kwargs)
    if not task.trainer.is_world_process_zero():
        return None
    save_run(training_args.output_dir, setup.processors, model_args, data_args)
    finish(task, data_args)
    return task


def finish(task: Task, data_args: ReportArguments) -> None:
    """The task's report (pictures, examples, usage) and the end of the run (training curve, card, push, last line)
    in the task's ``training_args.output_dir``."""
    report = task.report()
    finish_run(task.trainer, task.training_args, data_args, task=task.card_task, metric=task.metric,
               example_inputs=report.example_inputs, usage=report.usage, training_choices=task.training_choices())


def check_restarts(num_restarts: int, training_args: TrainingArguments) -> None:
    """A ValueError naming the flag that ``--num_restarts`` N > 1 cannot go with: restarts are trained
    (``--do_train``), compared by their validation metric (``--do_eval``), and each starts anew (no
    ``--resume_from_checkpoint``)."""
    for flag, needed in (("--do_train", training_args.do_train), ("--do_eval", training_args.do_eval)):
        if not needed:
            raise ValueError(f"`--num_restarts` {num_restarts} trains {num_restarts} times and keeps the best by "
                             f"validation: it needs `{flag}`.")
    if training_args.resume_from_checkpoint is not None:
        raise ValueError(f"`--resume_from_checkpoint` resumes one run, and `--num_restarts` {num_restarts} starts "
                         f"{num_restarts} new ones: leave one of them out.")


def restart_metric(training_args: TrainingArguments) -> tuple[str, bool]:
    """The key of the validation results that chooses between restarts, and whether greater is better: transformers'
    ``--metric_for_best_model`` (default "loss"; "eval_" prefixed when missing) and ``--greater_is_better`` (default:
    true unless the metric's name ends with "loss")."""
    metric = training_args.metric_for_best_model or "loss"
    metric = metric if metric.startswith("eval_") else f"eval_{metric}"
    greater_is_better = training_args.greater_is_better
    return metric, not metric.endswith("loss") if greater_is_better is None else greater_is_better


def validation_metric(run_dir: Path, metric: str) -> float:
    """``metric`` of a run's validation results (its ``eval_results.json``); a ValueError naming
    ``--metric_for_best_model`` when they lack it."""
    path = run_dir / "eval_results.json"
    results = json.loads(path.read_text()) if path.is_file() else {}
    if metric not in results:
        raise ValueError(f"`--metric_for_best_model` {metric!r} chooses between restarts by a validation metric, and "
                         f"the validation results in {path} are {sorted(results) or 'missing'}.")
    return results[metric]


def best_restart(values: Sequence[float], greater_is_better: bool) -> int:
    """The index of the best of ``values``, the first of equal ones; a NaN (a run that diverged) is the worst."""
    def rank(value: float) -> tuple[bool, float]:
        return not math.isnan(value), 0.0 if math.isnan(value) else value if greater_is_better else -value

    return max(range(len(values)), key=lambda k: rank(values[k]))


def train_restarts(task_class: type[Task], model_args: TaskModelArguments, data_args: ReportArguments,
                   training_args: Seq2SeqTrainingArguments, prog: str | None) -> None:
    """``--num_restarts`` N runs (``run_task``), the k-th with seed ``--seed`` + k into ``OUTPUT_DIR/restart-k/``
    (kept, each a whole run: model, results, pictures, card; none pushed). Then, in the main process, the best by
    ``restart_metric`` is copied to ``OUTPUT_DIR`` (its checkpoints left out), ``restarts.json`` written there (each
    restart's folder, seed and metric, and the chosen one), and it reports and ends there, with ``--push_to_hub``."""
    metric, greater_is_better = restart_metric(training_args)
    output_dir = Path(training_args.output_dir)
    restarts, best = [], None
    for k in range(model_args.num_restarts):
        folder, seed = RESTART_FOLDER.format(k), training_args.seed + k
        logger.info("Restart %d of %d: seed %d, in %s", k + 1, model_args.num_restarts, seed, output_dir / folder)
        restart_args = replace(training_args, seed=seed, output_dir=str(output_dir / folder), push_to_hub=False)
        task = run_task(task_class, model_args, data_args, restart_args, prog)
        if task is None:  # not the main process
            continue
        with bad_arguments_exit(prog):
            restarts.append({"folder": folder, "seed": seed, metric: validation_metric(output_dir / folder, metric)})
        if best_restart([entry[metric] for entry in restarts], greater_is_better) == k:
            best = task  # only the best so far stays in memory
    if best is None:
        return
    chosen = best_restart([entry[metric] for entry in restarts], greater_is_better)
    shutil.copytree(output_dir / restarts[chosen]["folder"], output_dir, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("checkpoint-*"))
    summary = {"metric_for_best_model": metric, "greater_is_better": greater_is_better, "chosen": chosen,
               "restarts": restarts}
    (output_dir / RESTARTS_FILE).write_text(json.dumps(summary, indent=1))
    logger.info("Restart %d of %d is the best by %s (%s): copied to %s", chosen + 1, len(restarts), metric,
                restarts[chosen][metric], output_dir)
    best.training_args = replace(best.training_args, output_dir=str(output_dir),
                                 push_to_hub=training_args.push_to_hub)
    finish(best, data_args)
