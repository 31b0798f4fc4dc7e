"""Train and evaluate a pointer network (Vinyals et al. 2015) on sorting or the planar convex hull, like
transformers' example scripts.

    python -m training pointer training/configs/pointer_sorting.json        # sort 5–10 numbers
    python -m training pointer training/configs/pointer_convex_hull.json    # convex hulls of 5–10 points
    python -m training pointer --task convex_hull --train_file train.jsonl --validation_file dev.jsonl \\
        --test_file test.jsonl --do_train --do_eval --do_predict --output_dir outputs/my-hull

(``python training/run_pointer.py ...`` runs the same.) Data: generated on the fly (``training/data/pointer_tasks.py``,
where each problem is described once: numbers or points uniform in [0, 1), exact labels), or .json/.jsonl files (or a
Hub dataset) with rows {"input_features": [[...], ...], "labels": [pointer ids]}, pointer id j + 1 = input j, 0 = end.
``--test_n 5,10,20`` evaluates one generated test set per n. Metrics (the problem's ``scores``, generated outputs):
sorting, exact match of the output order; convex hull, Vinyals et al.'s table 1: accuracy (the predicted polygon is
the true hull) and area coverage (predicted area over the hull's, over the simple polygons), with the fraction of
outputs that are not simple polygons; beside them, the Trainer's teacher-forced loss. Decoding: greedy or beam search
(``--num_beams``), with ``--forbid_repeats`` (each input at most once).

The output folder gets the model (code included, loadable with AutoModel and trust_remote_code=True),
all_results.json, the training curve, pictures of the pointing attention of the first test examples and the model
card; --push_to_hub uploads it all.
"""

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import torch
from transformers import AutoModel

from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig
from hf_bahdanau.modeling.collators import DataCollatorForPointing
from hf_bahdanau.modeling.pointing import positions
from hf_bahdanau.pictures import plot_alignment
from training.common.arguments import ReportArguments, TaskModelArguments, check_new_config, parse_config_overrides
from training.common.data_files import POINTERS, POINTS, Column, DataFileArguments, load_raw_splits, requested_splits
from training.common.driver import Report, Setup, Task
from training.common.metrics import in_percent
from training.data.pointer_tasks import PROBLEMS, make_dataset, pointer_ids

logger = logging.getLogger(__name__)

POINTING_PICTURE = "alignment_pointing_{}.png"


@dataclass
class PointerModelArguments(TaskModelArguments):
    """The model: a saved pointer network, or a new one of these sizes."""

    rnn_type: str = field(default="lstm", metadata={"help": "gru, lstm or rnn (Vinyals et al.: LSTM)."})
    hidden_size: int = field(default=128, metadata={"help": "Decoder state size (and encoder, unidirectional)."})
    embedding_size: int = field(default=64, metadata={"help": "Size of the embedded input vectors."})
    attention_type: str = field(default="additive",
                                metadata={"help": "The pointer's score (Vinyals et al.: additive)."})
    bidirectional: bool = field(default=False, metadata={"help": "A bidirectional encoder."})

    def __post_init__(self):
        super().__post_init__()
        parse_config_overrides(self.config_overrides, BahdanauPointerConfig)  # a bad field ends here, exit 2
        if self.model_name_or_path is None:  # and a bad value (of the flags or the overrides)
            smallest = min(problem.feature_size for problem in PROBLEMS.values())
            check_new_config(lambda: new_config(self, smallest), self.config_overrides)


@dataclass
class PointerDataArguments(ReportArguments, DataFileArguments):
    """The task, the generated data (when no files are given) and the decoding."""

    task: str = field(default="sorting", metadata={"help": f"The problem: one of {sorted(PROBLEMS)}."})
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
        if self.task not in PROBLEMS:
            raise ValueError(f"`--task` must be one of {sorted(PROBLEMS)}, got {self.task!r}.")
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
    """'10' -> 10, '5-50' -> (5, 50), checked against the problem's smallest n."""
    try:
        values = [int(part) for part in text.strip().split("-")]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or min(values) < PROBLEMS[task].min_n or values[0] > values[-1]:
        raise ValueError(f"`--{name}` must be 'n' or 'low-high' with {PROBLEMS[task].min_n} <= low <= high for "
                         f"{task}, got {text!r}.")
    return values[0] if len(values) == 1 else tuple(values)


def load_splits(data_args: PointerDataArguments, training_args) -> tuple[dict[str, datasets.Dataset],
                                                                          dict[str, datasets.Dataset]]:
    """The run's splits, "train" (``--do_train``), "eval" (``--do_eval``) and "predict" (``--do_predict``, every test
    set one after the other), and the test sets by name ("n10" per generated ``--test_n``; "" for a test file): the
    given files or Hub dataset, else generated data (validation seeded ``--task_seed`` + 1, the tests + 2, + 3, …)."""
    if data_args.dataset_name or data_args.train_file or data_args.validation_file or data_args.test_file:
        splits = requested_splits(load_raw_splits(data_args), data_args, training_args)
        return splits, {"": splits["predict"]} if "predict" in splits else {}
    task, seed = data_args.task, data_args.task_seed

    def generated(n: int | tuple[int, int], size: int, offset: int) -> datasets.Dataset:
        return datasets.Dataset.from_list(make_dataset(task, n, size, seed + offset))

    splits, tests = {}, {}
    if training_args.do_train:
        splits["train"] = generated(parse_n(data_args.train_n, "train_n", task), data_args.train_size, 0)
    if training_args.do_eval:
        splits["eval"] = generated(parse_n(data_args.eval_n, "eval_n", task), data_args.eval_size, 1)
    if training_args.do_predict:
        tests = {f"n{int(n)}": generated(int(n), data_args.test_size, offset)
                 for offset, n in enumerate(data_args.test_n.split(","), start=2)}
        splits["predict"] = datasets.concatenate_datasets(list(tests.values()))
    return splits, tests


def load_model(model_args: PointerModelArguments, task: str) -> BahdanauForPointerNetwork:
    if model_args.model_name_or_path:
        return AutoModel.from_pretrained(model_args.model_name_or_path)
    return BahdanauForPointerNetwork(new_config(model_args, PROBLEMS[task].feature_size))


def new_config(model_args: PointerModelArguments, input_feature_size: int) -> BahdanauPointerConfig:
    """A new pointer network's config over inputs of ``input_feature_size`` numbers: the flags, then
    --config_overrides."""
    return BahdanauPointerConfig(**{
        "input_feature_size": input_feature_size, "rnn_type": model_args.rnn_type,
        "hidden_size": model_args.hidden_size, "embedding_size": model_args.embedding_size,
        "attention_type": model_args.attention_type, "bidirectional": model_args.bidirectional,
        "bridge": "last" if model_args.rnn_type != "gru" else "tanh",
        **parse_config_overrides(model_args.config_overrides, BahdanauPointerConfig)})


def on_device(model: BahdanauForPointerNetwork, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``batch`` on the model's device (the Trainer moved the model to the accelerator)."""
    return {name: tensor.to(model.device) for name, tensor in batch.items()}


@torch.no_grad()
def predict(model: BahdanauForPointerNetwork, rows: datasets.Dataset, data_args: PointerDataArguments,
            batch_size: int) -> list[list[int]]:
    """Pointer ids (up to END) generated for every row, in order."""
    model.eval()
    collate, predictions = DataCollatorForPointing(), []
    for start in range(0, len(rows), batch_size):
        batch = on_device(model, collate([{"input_features": row["input_features"]} for row in rows.select(
            range(start, min(start + batch_size, len(rows))))]))
        generated = model.generate(**batch, num_beams=data_args.num_beams, forbid_repeats=data_args.forbid_repeats)
        predictions += [pointer_ids(positions(row[1:])) for row in generated]
    return predictions


def plot_pointing(model: BahdanauForPointerNetwork, rows: datasets.Dataset, output_dir: Path, count: int,
                  data_args: PointerDataArguments) -> None:
    """The attention over [end; inputs] at each output step of the first ``count`` rows (``alignment_pointing_*``)."""
    for index in range(min(count, len(rows))):
        batch = on_device(model, DataCollatorForPointing()([{"input_features": rows[index]["input_features"]}]))
        with torch.no_grad():
            generated = model.generate(**batch, num_beams=data_args.num_beams, forbid_repeats=data_args.forbid_repeats)
            weights = model(**batch, decoder_input_ids=generated[:, :-1], output_attentions=True).cross_attentions
        inputs = ["end"] + [",".join(f"{value:.2f}" for value in point) for point in rows[index]["input_features"]]
        outputs = [inputs[pointer] for pointer in generated[0, 1:].tolist()]
        plot_alignment(weights[0][0, 0], inputs, outputs, path=output_dir / POINTING_PICTURE.format(index),
                       title=f"{data_args.task}: pointing attention")


class PointerTask(Task):
    """Train and evaluate a pointer network (Vinyals et al. 2015) on sorting or the planar convex hull."""

    name = "pointer"
    model_arguments = PointerModelArguments
    data_arguments = PointerDataArguments
    card_task = "pointer-network"

    def setup(self) -> Setup:
        self.problem = PROBLEMS[self.data_args.task]
        self.splits, self.test_sets = load_splits(self.data_args, self.training_args)
        self.training_args.prediction_loss_only = True  # the Trainer's evaluation gives the loss; extra_metrics scores
        return Setup(model=load_model(self.model_args, self.problem.name), processing_class=None,
                     datasets=self.splits, data_collator=DataCollatorForPointing())

    def extra_metrics(self, split: str) -> dict[str, float]:
        """The problem's scores of generated outputs (``--num_beams``, ``--forbid_repeats``), in percent: on the
        validation set ("eval_accuracy"), on each test set ("predict_n10_accuracy"; "predict_accuracy" for a file)."""
        sets = {"": self.splits["eval"]} if split == "eval" else self.test_sets
        metrics = {}
        for tag, rows in sets.items():
            predictions = predict(self.trainer.model, rows, self.data_args,
                                  self.training_args.per_device_eval_batch_size)
            scores = self.problem.scores(predictions, rows["labels"], rows["input_features"])
            metrics.update({f"{split}_{tag + '_' if tag else ''}{name}": value
                            for name, value in in_percent(scores).items()})
        return metrics

    def report(self) -> Report:
        output_dir = Path(self.training_args.output_dir)
        test_rows = next(iter(self.test_sets.values()), None)
        if self.training_args.do_train and test_rows is not None:
            plot_pointing(self.trainer.model, test_rows, output_dir, self.data_args.num_pictures, self.data_args)
        example = json.dumps(test_rows[0]["input_features"] if test_rows is not None
                             else [[0.5] * self.problem.feature_size])
        return Report([example], f"import hf_bahdanau, torch, transformers; transformers.AutoModel.from_pretrained("
                                 f"{json.dumps(str(output_dir))}).generate(input_features=torch.tensor([{example}]), "
                                 "forbid_repeats=True)")


TASK = PointerTask
