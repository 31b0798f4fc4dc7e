"""The steps of every run around a task's own data and model (``training.common.driver`` takes them; the scripts that
are not tasks use them too): logging, training and evaluating, and the end of a run (training curve, model card, Hub
push, and one line that says where the model is and how to use it).

    setup_logging(training_args)
    ...
    trainer = Trainer(..., callbacks=trainer_callbacks())   # checkpoint pushes carry the code; training minutes logged
    train_and_evaluate(trainer, training_args, {"train": …, "eval": …, "predict": …},
                       prediction_lines=lambda output: [...])   # the lines of predictions.txt
    finish_run(trainer, training_args, data_args, task="translation", metric="eval_exact_match", usage="...",
               example_inputs=[...])
"""

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import datasets
import transformers
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import PredictionOutput, has_length
from transformers.utils import PushToHubMixin

from hf_bahdanau.cards import write_model_card
from training.common.figures import TRAINING_CURVE, plot_training_curve
from training.common.hub_utils import CodeFilesCallback, push_output_dir
from training.common.training_clock import TrainingClockCallback

__all__ = ["finish_run", "pipeline_usage", "setup_logging", "train_and_evaluate", "trainer_callbacks"]

logger = logging.getLogger(__name__)


def setup_logging(training_args: TrainingArguments) -> None:
    """Logs to stdout at the process's level (only the main process logs below warnings), as transformers'
    examples do."""
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = training_args.get_process_log_level()
    for script_logger in (logger, logging.getLogger("__main__"), logging.getLogger("training")):
        script_logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()


def trainer_callbacks(*processors: PushToHubMixin) -> list[TrainerCallback]:
    """The callbacks every script's Trainer gets: ``CodeFilesCallback`` (each checkpoint push to the Hub,
    ``--push_to_hub``, carries the model code and the ``processors`` that are not the Trainer's ``processing_class``,
    e.g. an image processor, so it loads with ``trust_remote_code``) and ``TrainingClockCallback``
    (``training_minutes`` in each log entry). A script appends its own (a training budget, a linear start)."""
    return [CodeFilesCallback(processors), TrainingClockCallback()]


def train_and_evaluate(trainer: Trainer, training_args: TrainingArguments, datasets_by_split: dict, *,
                       prediction_lines: Callable[[PredictionOutput], list[str]] | None = None,
                       predictions_file: str = "predictions.txt",
                       extra_metrics: Callable[[str], dict[str, float]] | None = None, **generate_kwargs) -> None:
    """With ``--do_train``: train (resuming from ``--resume_from_checkpoint``), save the model and tokenizer, record
    the metrics and the trainer state. Then each of "eval" (the trainer's eval dataset) and "predict" in
    ``datasets_by_split``: evaluate (``generate_kwargs`` go to generate()), add ``extra_metrics(split)`` (computed in
    every process: under DDP a ``trainer.predict`` in it is a collective), write the lines
    ``prediction_lines(output)`` (None: none) of the test predictions to ``predictions_file``, and record the metrics
    (``{split}_results.json``, ``all_results.json``)."""
    output_dir = Path(training_args.output_dir)
    if training_args.do_train:
        result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model()
        train = datasets_by_split["train"]  # a stream (--streaming) has no length
        record(trainer, "train", {**result.metrics, **({"train_samples": len(train)} if has_length(train) else {})})
        trainer.save_state()
    for split in ("eval", "predict"):
        if split not in datasets_by_split:
            continue
        dataset = datasets_by_split[split]
        if split == "eval":
            output = PredictionOutput(None, None, trainer.evaluate(metric_key_prefix="eval", **generate_kwargs))
        else:
            output = trainer.predict(dataset, metric_key_prefix=split, **generate_kwargs)
        output.metrics[f"{split}_samples"] = len(dataset)
        if extra_metrics is not None:  # in every process: it may evaluate through the Trainer, which all must join
            output.metrics.update(extra_metrics(split))
        if trainer.is_world_process_zero():
            lines = prediction_lines(output) if output.predictions is not None and prediction_lines else None
            if lines is not None:
                lines = lines[:len(dataset)]  # DDP pads the last shard with repeated rows
                (output_dir / predictions_file).write_text("".join(line + "\n" for line in lines))
        record(trainer, split, output.metrics)


def record(trainer: Trainer, split: str, metrics: dict[str, float]) -> None:
    """Log ``metrics`` and write them to ``{split}_results.json`` (and ``all_results.json``)."""
    trainer.log_metrics(split, metrics)
    trainer.save_metrics(split, metrics)


def pipeline_usage(output_dir: Path, call: str, task: str | None = None) -> str:
    """The last line's Python for a model used through its pipeline (``task``'s, else the one the folder ships),
    called with ``call`` ("(...)"): it runs as printed from where the script ran (``output_dir`` and any file
    ``call`` names are paths from there, as the user gave them)."""
    named = f"{json.dumps(task)}, " if task else ""
    return (f"import hf_bahdanau, transformers; transformers.pipeline({named}model={json.dumps(str(output_dir))}, "
            f"trust_remote_code=True){call}")


def finish_run(trainer: Trainer, training_args: TrainingArguments, data_args, *, task: str, metric: str | None,
               example_inputs: list[str], usage: str, training_choices: dict | None = None) -> None:
    """After training and evaluation, in the main process: the training curve (``metric``, e.g. "eval_f1", on a second
    axis), the model card (with the folder's pictures; its hyperparameters are the training arguments with the task's
    ``training_choices`` over them), the Hub push, and a last line naming the folder and ``usage``, how to use the
    model."""
    output_dir = Path(training_args.output_dir)
    if training_args.do_train:
        if any("loss" in entry for entry in trainer.state.log_history):
            plot_training_curve(trainer.state.log_history, output_dir / TRAINING_CURVE, metric=metric)
        else:
            logger.warning("No training curve: no loss was logged (training ran fewer than --logging_steps steps).")
        files = [Path(path).name for path in (getattr(data_args, split_file, None)
                                              for split_file in ("train_file", "validation_file", "test_file")) if path]
        description = data_args.dataset_description or (f"Local files: {', '.join(files)}." if files else None)
        write_model_card(output_dir, task=task, dataset_name=getattr(data_args, "dataset_name", None),
                         dataset_description=description,
                         training_args={**training_args.to_dict(), **(training_choices or {})},
                         language=data_args.language, license=data_args.license,
                         example_inputs=example_inputs)
    if training_args.push_to_hub:  # the finished folder, real card included (instead of trainer.push_to_hub)
        push_output_dir(output_dir, training_args.hub_model_id or output_dir.name, token=training_args.hub_token,
                        private=training_args.hub_private_repo, revision=training_args.hub_revision)
    if training_args.do_train:
        print(f"The model is saved in {output_dir} (model card: {output_dir / 'README.md'}); use it with: {usage}")
