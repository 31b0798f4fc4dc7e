#!/usr/bin/env python
"""Train and evaluate a pointer network (Vinyals et al. 2015) on sorting or the planar convex hull, like
transformers' example scripts.

    python training/run_pointer.py training/configs/pointer_sorting.json        # sort 5–10 numbers
    python training/run_pointer.py training/configs/pointer_convex_hull.json    # convex hulls of 5–10 points
    python training/run_pointer.py --task convex_hull --train_file train.jsonl --validation_file dev.jsonl \\
        --test_file test.jsonl --do_train --do_eval --do_predict --output_dir outputs/my-hull

Data: generated on the fly (``training/data/pointer_tasks.py``: numbers or points uniform in [0, 1), exact labels), or
.json/.jsonl files (or a Hub dataset) with rows {"input_features": [[...], ...], "labels": [pointer ids]}, pointer
id j + 1 = input j, 0 = end. ``--test_n 5,10,20`` evaluates one generated test set per n.
Metrics: sorting, exact match of the output order; convex hull, Vinyals et al.'s table 1: accuracy (the predicted
polygon is the true hull) and area coverage (predicted area over the hull's, over the simple polygons), with the
fraction of outputs that are not simple polygons. Decoding: greedy or beam search (``--num_beams``), with
``--forbid_repeats`` (each input at most once).

The output folder gets the model (code included, loadable with AutoModel and trust_remote_code=True),
all_results.json, the training curve, pictures of the pointing attention of the first test examples and the model
card; --push_to_hub uploads it all.
"""

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/run_pointer.py` puts training/ first, not the repository
    sys.path.insert(0, str(REPO_ROOT))

import datasets  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModel, Trainer, TrainingArguments, set_seed  # noqa: E402

from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig  # noqa: E402
from hf_bahdanau.pictures import plot_alignment  # noqa: E402
from hf_bahdanau.modeling.collators import DataCollatorForPointing  # noqa: E402
from hf_bahdanau.modeling.pointing import positions  # noqa: E402
from training.common.arguments import (  # noqa: E402
    ReportArguments, bad_arguments_exit, check_new_config, parse_arguments, parse_config_overrides,
)
from training.common.data_files import POINTERS, POINTS, Column, DataFileArguments, load_raw_splits  # noqa: E402
from training.common.metrics import in_percent  # noqa: E402
from training.data.pointer_tasks import MIN_N, hull_metrics, make_dataset, pointer_ids, sequence_accuracy  # noqa: E402
from training.common.steps import finish_run, record, setup_logging, trainer_callbacks  # noqa: E402

logger = logging.getLogger(__name__)

FEATURES = {"sorting": 1, "convex_hull": 2}
POINTING_PICTURE = "alignment_pointing_{}.png"


@dataclass
class PointerModelArguments:
    """The model: a saved pointer network, or a new one of these sizes."""

    model_name_or_path: str | None = field(default=None, metadata={"help": "A saved pointer network to go on from."})
    rnn_type: str = field(default="lstm", metadata={"help": "gru, lstm or rnn (Vinyals et al.: LSTM)."})
    hidden_size: int = field(default=128, metadata={"help": "Decoder state size (and encoder, unidirectional)."})
    embedding_size: int = field(default=64, metadata={"help": "Size of the embedded input vectors."})
    attention_type: str = field(default="additive", metadata={"help": "The pointer's score (Vinyals et al.: additive)."})
    bidirectional: bool = field(default=False, metadata={"help": "A bidirectional encoder."})
    config_overrides: str | None = field(default=None, metadata={"help": "More config fields: 'field=value,...'."})
    torch_num_threads: int | None = field(default=None, metadata={"help": "torch.set_num_threads before training."})

    def __post_init__(self):
        parse_config_overrides(self.config_overrides, BahdanauPointerConfig)  # a bad field ends here, exit 2
        if self.model_name_or_path is None:  # and a bad value (of the flags or the overrides)
            check_new_config(lambda: new_config(self, min(FEATURES.values())), self.config_overrides)


@dataclass
class PointerDataArguments(ReportArguments, DataFileArguments):
    """The task, the generated data (when no files are given) and the decoding."""

    task: str = field(default="sorting", metadata={"help": "sorting or convex_hull."})
    train_n: str = field(default="5-10", metadata={"help": "Inputs per training example: 'n' or 'low-high'."})
    eval_n: str = field(default="10", metadata={"help": "Inputs per validation example: 'n' or 'low-high'."})
    test_n: str = field(default="5,10", metadata={"help": "Comma-separated n, one generated test set each."})
    train_size: int = field(default=100_000, metadata={"help": "Generated training examples."})
    eval_size: int = field(default=1000, metadata={"help": "Generated validation examples."})
    test_size: int = field(default=1000, metadata={"help": "Generated test examples per n."})
    task_seed: int = field(default=0, metadata={"help": "Seed of the generated data (validation +1, tests +2, …)."})
    num_beams: int = field(default=1, metadata={"help": "Beam size of the evaluation's generate()."})
    forbid_repeats: bool = field(default=True, metadata={"help": "Never point at an input twice when decoding."})

    def __post_init__(self):
        if self.task not in FEATURES:
            raise ValueError(f"`--task` must be one of {sorted(FEATURES)}, got {self.task!r}.")
        for name in ("train_n", "eval_n"):
            parse_n(getattr(self, name), name, self.task)
        for n in self.test_n.split(","):
            parse_n(n, "test_n", self.task)
        for name in ("train_size", "eval_size", "test_size", "num_beams"):
            if getattr(self, name) < 1:
                raise ValueError(f"`--{name}` must be a positive integer, got {getattr(self, name)}.")
        super().__post_init__()
        self.check_files()

    def used_columns(self) -> dict[str, Column]:
        return {"input_features": Column(None, POINTS), "labels": Column(None, POINTERS)}


def parse_n(text: str, name: str, task: str) -> int | tuple[int, int]:
    """'10' -> 10, '5-50' -> (5, 50), checked against the task's smallest n."""
    try:
        values = [int(part) for part in text.strip().split("-")]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or min(values) < MIN_N[task] or values[0] > values[-1]:
        raise ValueError(f"`--{name}` must be 'n' or 'low-high' with {MIN_N[task]} <= low <= high for {task}, got "
                         f"{text!r}.")
    return values[0] if len(values) == 1 else tuple(values)


def load_splits(data_args: PointerDataArguments) -> dict[str, datasets.Dataset]:
    """{"train", "validation", "test_n{n}" …}: the given files or Hub dataset, else generated data."""
    if data_args.dataset_name or data_args.train_file or data_args.validation_file or data_args.test_file:
        return dict(load_raw_splits(data_args))
    task = data_args.task
    splits = {"train": make_dataset(task, parse_n(data_args.train_n, "train_n", task), data_args.train_size,
                                    data_args.task_seed),
              "validation": make_dataset(task, parse_n(data_args.eval_n, "eval_n", task), data_args.eval_size,
                                         data_args.task_seed + 1)}
    for offset, n in enumerate(data_args.test_n.split(","), start=2):
        splits[f"test_n{int(n)}"] = make_dataset(task, int(n), data_args.test_size, data_args.task_seed + offset)
    return {split: datasets.Dataset.from_list(rows) for split, rows in splits.items()}


def load_model(model_args: PointerModelArguments, task: str) -> BahdanauForPointerNetwork:
    if model_args.model_name_or_path:
        return AutoModel.from_pretrained(model_args.model_name_or_path)
    return BahdanauForPointerNetwork(new_config(model_args, FEATURES[task]))


def new_config(model_args: PointerModelArguments, input_feature_size: int) -> BahdanauPointerConfig:
    """A new pointer network's config over inputs of ``input_feature_size`` numbers: the flags, then
    --config_overrides."""
    return BahdanauPointerConfig(**{
        "input_feature_size": input_feature_size, "rnn_type": model_args.rnn_type,
        "hidden_size": model_args.hidden_size, "embedding_size": model_args.embedding_size,
        "attention_type": model_args.attention_type, "bidirectional": model_args.bidirectional,
        "bridge": "last" if model_args.rnn_type != "gru" else "tanh",
        **parse_config_overrides(model_args.config_overrides, BahdanauPointerConfig)})


@torch.no_grad()
def predict(model: BahdanauForPointerNetwork, rows: datasets.Dataset, data_args: PointerDataArguments,
            batch_size: int) -> list[list[int]]:
    """Pointer ids (up to END) generated for every row, in order."""
    model.eval()
    collate, predictions = DataCollatorForPointing(), []
    for start in range(0, len(rows), batch_size):
        batch = collate([{"input_features": row["input_features"]} for row in rows.select(
            range(start, min(start + batch_size, len(rows))))])
        generated = model.generate(**batch, num_beams=data_args.num_beams, forbid_repeats=data_args.forbid_repeats)
        predictions += [pointer_ids(positions(row[1:])) for row in generated]
    return predictions


def task_metrics(task: str, predictions: list[list[int]], rows: datasets.Dataset) -> dict[str, float]:
    """Sorting's exact match; the convex hull's accuracy, area coverage and share of outputs that are not simple
    polygons (``invalid_fraction``); all in percent."""
    if task == "sorting":
        return in_percent({"exact_match": sequence_accuracy(predictions, rows["labels"])})
    scores = hull_metrics(predictions, rows["input_features"])
    return in_percent({"accuracy": scores["accuracy"], "area_coverage": scores["area_coverage"] or 0.0,
                       "invalid_fraction": scores["invalid_fraction"]})


def plot_pointing(model: BahdanauForPointerNetwork, rows: datasets.Dataset, output_dir: Path, count: int,
                  data_args: PointerDataArguments) -> None:
    """The attention over [end; inputs] at each output step of the first ``count`` rows (``alignment_pointing_*``)."""
    for index in range(min(count, len(rows))):
        batch = DataCollatorForPointing()([{"input_features": rows[index]["input_features"]}])
        with torch.no_grad():
            generated = model.generate(**batch, num_beams=data_args.num_beams, forbid_repeats=data_args.forbid_repeats)
            weights = model(**batch, decoder_input_ids=generated[:, :-1], output_attentions=True).cross_attentions
        inputs = ["end"] + [",".join(f"{value:.2f}" for value in point) for point in rows[index]["input_features"]]
        outputs = [inputs[pointer] for pointer in generated[0, 1:].tolist()]
        plot_alignment(weights[0][0, 0], inputs, outputs, path=output_dir / POINTING_PICTURE.format(index),
                       title=f"{data_args.task}: pointing attention")


def main(argv: list[str] | None = None) -> None:
    model_args, data_args, training_args = parse_arguments(
        (PointerModelArguments, PointerDataArguments, TrainingArguments), sys.argv[1:] if argv is None else argv,
        description=__doc__)
    setup_logging(training_args)
    if model_args.torch_num_threads:
        torch.set_num_threads(model_args.torch_num_threads)
    set_seed(training_args.seed)
    with bad_arguments_exit():  # a ValueError of the data or the model built from the arguments: exit 2
        splits = load_splits(data_args)
        model = load_model(model_args, data_args.task)
        trainer = Trainer(model=model, args=training_args, train_dataset=splits.get("train"),
                          data_collator=DataCollatorForPointing(), callbacks=trainer_callbacks())
    output_dir = Path(training_args.output_dir)
    if training_args.do_train:
        result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model()
        record(trainer, "train", {**result.metrics, "train_samples": len(splits["train"])})
        trainer.save_state()
    evaluated = {"eval": ["validation"] if training_args.do_eval else [],
                 "predict": [split for split in splits if split.startswith("test")] if training_args.do_predict
                 else []}
    for prefix, names in evaluated.items():
        metrics = {}
        for name in names:
            predictions = predict(model, splits[name], data_args, training_args.per_device_eval_batch_size)
            tag = name.removeprefix("test").strip("_") if name.startswith("test") else ""  # "n10" of "test_n10"
            for metric, value in task_metrics(data_args.task, predictions, splits[name]).items():
                metrics[f"{prefix}_{tag + '_' if tag else ''}{metric}"] = value
        if names:
            record(trainer, prefix, metrics)
    test_rows = next((splits[split] for split in splits if split.startswith("test")), None)
    if training_args.do_train and test_rows is not None and trainer.is_world_process_zero():
        plot_pointing(model, test_rows, output_dir, data_args.num_pictures, data_args)
    example = json.dumps(test_rows[0]["input_features"] if test_rows is not None
                         else [[0.5] * FEATURES[data_args.task]])
    finish_run(trainer, training_args, data_args, task="pointer-network",
               metric=None, example_inputs=[example],
               usage=f"import hf_bahdanau, torch, transformers; transformers.AutoModel.from_pretrained("
                     f"{json.dumps(str(output_dir))}).generate(input_features=torch.tensor([{example}]), "
                     "forbid_repeats=True)")


if __name__ == "__main__":
    main()
