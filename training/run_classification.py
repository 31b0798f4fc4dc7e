#!/usr/bin/env python
"""Train and evaluate an attention-pooled text classifier, flat or hierarchical (HAN), like transformers'
run_classification.py.

    python training/run_classification.py training/configs/han_classifier.json   # the bundled data, under a minute
    python training/run_classification.py training/configs/han_classifier.json --hierarchical false  # flat baseline
    python training/run_classification.py training/configs/han_classifier.json \\
        --config_overrides embedding_size=32,hidden_size=64,pooling_type=self_attentive,self_attention_rows=4
    python training/run_classification.py --train_file train.csv --validation_file dev.csv \\
        --text_column_name review --label_column_name stars --do_regression --do_train --do_eval \\
        --output_dir outputs/my-classifier

Data: --dataset_name (Hub) or .json/.jsonl/.csv files with a text column and a label column; without any, the
bundled generated data (training/data/han, see make_han.py). Labels: strings or ints give single-label
classification over the labels seen in the data; lists of labels give multi-label classification;
--do_regression reads a number. --hierarchical splits each text into sentences at --sentence_separator (tokens
of the tokenizer, one or several) for word- and sentence-level attention. The pooling is a config field (``pooling_type``:
context_vector, self_attentive with ``self_attention_rows`` and ``self_attention_penalty_weight``, multi_dimensional),
set with --config_overrides. Metrics: accuracy and macro F1 (single-label),
exact-match accuracy and micro F1 (multi-label) through `evaluate` (the bundled modules when offline), MSE
(regression).

The output folder gets the model (code included, loadable with trust_remote_code=True), the tokenizer,
all_results.json, the training curve, attention pictures of the first test documents (with the encoder's
self-attention and embedding mixture when the model has them), predictions.txt and the model card;
--push_to_hub uploads it all.
"""

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/run_classification.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

import datasets  # noqa: E402
import numpy as np  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForSequenceClassification,
    DataCollatorWithPadding,
    TrainingArguments,
    set_seed,
)

from hf_bahdanau import BahdanauForSequenceClassification  # noqa: E402
from hf_bahdanau.pictures import plot_classifier_texts  # noqa: E402
from training.common.arguments import PictureArguments, bad_arguments_exit, parse_arguments  # noqa: E402
from training.common.data_files import LABEL, NUMBER, TEXT, Column, DataFileArguments  # noqa: E402
from training.common.encoder_heads import HeadModelArguments, load_head, load_splits, load_tokenizer, order_labels  # noqa: E402
from training.common.figures import save_encoder_pictures  # noqa: E402
from training.common.steps import (  # noqa: E402
    finish_run, pipeline_usage, setup_logging, train_and_evaluate, trainer_callbacks,
)
from training.common.split_order import InOrderTrainer  # noqa: E402
from training.common.metrics import in_percent, load_metric  # noqa: E402

logger = logging.getLogger(__name__)

BUNDLED_DATA = REPO_ROOT / "training" / "data" / "han"
ATTENTION_PICTURE = "attention_{}.png"


@dataclass
class ClassificationDataArguments(PictureArguments, DataFileArguments):
    """Which data, which columns, which model structure, and what to report."""

    text_column_name: str = field(default="text", metadata={"help": "Column with the text."})
    label_column_name: str = field(default="label", metadata={"help": "Column with the label(s) or the value."})
    do_regression: bool = field(default=False, metadata={"help": "The label is a number: regression with MSE."})
    hierarchical: bool = field(
        default=True, metadata={"help": "HAN: word-level attention per sentence, sentence-level attention over the "
                                        "sentences (false: one attention over all words)."})
    sentence_separator: list[str] = field(
        default_factory=lambda: ["."], metadata={"help": "The token(s) that end a sentence (for --hierarchical), "
                                                         "e.g. --sentence_separator . ? !"})
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Longest text in tokens; longer ones are truncated and counted in a warning. "
                                        "Default: no limit."})

    def __post_init__(self):
        if self.dataset_name is None and not (self.train_file or self.validation_file or self.test_file):
            self.train_file, self.validation_file, self.test_file = (
                str(BUNDLED_DATA / f"{split}.jsonl") for split in ("train", "validation", "test"))
            self.dataset_description = self.dataset_description or "generated documents whose label is the topic " \
                                                                   "that wins most sentences"
        self.check_files()
        if self.max_seq_length is not None and self.max_seq_length < 2:
            raise ValueError(f"`--max_seq_length` must be at least 2, got {self.max_seq_length}.")
        super().__post_init__()

    def used_columns(self) -> dict[str, Column]:
        return {self.text_column_name: Column("text_column_name", TEXT),
                self.label_column_name: Column("label_column_name", NUMBER if self.do_regression else LABEL)}


def label_list(splits: dict[str, datasets.Dataset], column: str) -> tuple[list[str], str, Callable]:
    """(label names, problem type, raw label -> name): ClassLabel names, else every label seen (as text), sorted;
    a column of label lists is multi-label."""
    feature = next(iter(splits.values())).features[column]
    class_label = feature if isinstance(feature, datasets.ClassLabel) else getattr(feature, "feature", None)
    multi_label = class_label is not feature and hasattr(feature, "feature")
    if not isinstance(class_label, datasets.ClassLabel):
        values = [value for dataset in splits.values() for value in dataset[column]]
        multi_label = bool(values) and isinstance(values[0], list)
        names = {str(label) for value in values for label in (value if multi_label else [value])}
        return sorted(names), _problem(multi_label), str
    return list(class_label.names), _problem(multi_label), class_label.int2str


def _problem(multi_label: bool) -> str:
    return "multi_label_classification" if multi_label else "single_label_classification"


def tokenize_split(dataset: datasets.Dataset, name: str, tokenizer, labels: list[str] | None, problem_type: str,
                   to_name: Callable, data_args: ClassificationDataArguments, main_process_first) -> datasets.Dataset:
    """input_ids / attention_mask / labels (class id, 0/1 vector or value)."""
    label_to_id = None if labels is None else {label: index for index, label in enumerate(labels)}

    def label_ids(value):
        if problem_type == "regression":
            return float(value)
        if problem_type == "single_label_classification":
            return label_to_id[to_name(value)]
        present = {label_to_id[to_name(label)] for label in value}
        return [float(index in present) for index in range(len(labels))]

    def tokenize(batch):
        texts = batch[data_args.text_column_name]
        encoding = tokenizer(texts, truncation=data_args.max_seq_length is not None,
                             max_length=data_args.max_seq_length)
        truncated = [False] * len(texts)
        if data_args.max_seq_length is not None:
            truncated = [len(ids) > data_args.max_seq_length for ids in tokenizer(texts)["input_ids"]]
        return {**encoding, "labels": [label_ids(value) for value in batch[data_args.label_column_name]],
                "truncated": truncated}

    with main_process_first(desc=f"{name} dataset tokenisation"):
        tokenized = dataset.map(tokenize, batched=True, remove_columns=dataset.column_names,
                                num_proc=data_args.preprocessing_num_workers, desc=f"Tokenising {name}")
    if sum(tokenized["truncated"]):
        logger.warning("%d of %d %s texts were truncated to --max_seq_length=%s tokens.", sum(tokenized["truncated"]),
                       len(tokenized), name, data_args.max_seq_length)
    return tokenized.remove_columns("truncated")


def metrics_function(problem_type: str):
    """compute_metrics: accuracy and F1 (macro; micro for multi-label) in percent, or a regression's mean squared
    error."""
    if problem_type == "regression":
        return lambda prediction: {"mse": float(np.mean((prediction.predictions.squeeze(-1)
                                                         - prediction.label_ids) ** 2))}
    multi_label = problem_type == "multi_label_classification"
    config_name = "multilabel" if multi_label else None
    accuracy, f1 = load_metric("accuracy", config_name=config_name), load_metric("f1", config_name=config_name)

    def compute_metrics(prediction) -> dict[str, float]:
        logits, references = prediction.predictions, prediction.label_ids
        predicted = (logits > 0).astype(int) if multi_label else logits.argmax(-1)
        references = references.astype(int)
        return in_percent({"accuracy": accuracy.compute(predictions=predicted, references=references)["accuracy"],
                           "f1": f1.compute(predictions=predicted, references=references,
                                            average="micro" if multi_label else "macro")["f1"]})

    return compute_metrics


def save_attention_pictures(model, tokenizer, texts: list[str], output_dir: Path) -> None:
    """One picture per text, ``output_dir/attention_<n>.png``: what the pooling attended to, as
    ``hf_bahdanau.pictures.plot_classifier_texts`` draws it for the model's ``pooling_type`` (flat or HAN), titled
    with the predicted label."""
    for number, text in enumerate(texts):
        plot_classifier_texts(model, tokenizer, [text], path=output_dir / ATTENTION_PICTURE.format(number))


def prediction_lines(logits: np.ndarray, problem_type: str, labels: list[str] | None) -> list[str]:
    """One line per text: the value (regression), the labels above 0.5 (multi-label), or the label."""
    if problem_type == "regression":
        return [f"{value:.6g}" for value in logits[:, 0]]
    if problem_type == "multi_label_classification":
        return [" ".join(labels[index] for index in np.flatnonzero(row > 0)) for row in logits]
    return [labels[index] for index in logits.argmax(-1)]


def main(argv: list[str] | None = None) -> None:
    model_args, data_args, training_args = parse_arguments(
        (HeadModelArguments, ClassificationDataArguments, TrainingArguments), sys.argv[1:] if argv is None else argv,
        description=__doc__.split("\n")[0])
    setup_logging(training_args)
    set_seed(training_args.seed)

    with bad_arguments_exit():  # a ValueError of the data or the model built from the arguments: exit 2
        splits = load_splits(data_args, model_args, training_args)
        if data_args.do_regression:
            labels, problem_type, to_name = None, "regression", None
        else:
            labels, problem_type, to_name = label_list(splits, data_args.label_column_name)
            labels = order_labels(model_args, labels)
        texts = splits["train"][data_args.text_column_name] if "train" in splits else None
        tokenizer = load_tokenizer(model_args, texts)
        head_fields = {"problem_type": problem_type, "hierarchical": data_args.hierarchical}
        if data_args.hierarchical:
            separators = tokenizer.convert_tokens_to_ids(data_args.sentence_separator)
            unknown = [token for token, token_id in zip(data_args.sentence_separator, separators)
                       if token_id is None or token_id == tokenizer.unk_token_id]
            if unknown:
                raise ValueError(f"`--sentence_separator` must be tokens of the tokenizer (e.g. '.'): {unknown} of "
                                 f"{data_args.sentence_separator} are not.")
            head_fields["sentence_separator_token_id"] = separators[0] if len(separators) == 1 else separators
        model = load_head(AutoModelForSequenceClassification, BahdanauForSequenceClassification, model_args, tokenizer,
                          labels, **head_fields)
        tokenized = {name: tokenize_split(split, name, tokenizer, labels, problem_type, to_name, data_args,
                                          training_args.main_process_first) for name, split in splits.items()}

        trainer = InOrderTrainer(
            model=model,
            args=training_args,
            train_dataset=tokenized.get("train"),
            eval_dataset=tokenized.get("eval"),
            processing_class=tokenizer,
            data_collator=DataCollatorWithPadding(tokenizer),
            compute_metrics=metrics_function(problem_type),
            callbacks=trainer_callbacks(),
        )
    output_dir = Path(training_args.output_dir)
    train_and_evaluate(trainer, training_args, tokenized,
                       prediction_lines=lambda output: prediction_lines(output.predictions, problem_type, labels))

    if not trainer.is_world_process_zero():
        return
    pictured = splits.get("predict", splits.get("eval"))
    if pictured is not None and data_args.num_pictures:
        texts = pictured[data_args.text_column_name][: data_args.num_pictures]
        save_attention_pictures(trainer.model, tokenizer, texts, output_dir)
        save_encoder_pictures(trainer.model, tokenizer, texts, output_dir)
    examples = (pictured or splits["train"])[data_args.text_column_name][:2]
    finish_run(trainer, training_args, data_args, task="text-classification",
               metric="eval_mse" if problem_type == "regression" else "eval_accuracy", example_inputs=examples,
               usage=pipeline_usage(output_dir, f"({json.dumps(examples[0])})", task="text-classification"))


if __name__ == "__main__":
    main()
