"""The classification task: an attention-pooled text classifier, flat or hierarchical (HAN), like transformers'
run_classification.py (``training/run_classification.py`` runs it too).

    python -m training classification training/configs/han_classifier.json   # the bundled data, under a minute
    python -m training classification training/configs/han_classifier.json --hierarchical false  # flat baseline
    python -m training classification training/configs/han_classifier.json \\
        --config_overrides embedding_size=32,hidden_size=64,pooling_type=self_attentive,self_attention_rows=4
    python -m training classification --train_file train.csv --validation_file dev.csv \\
        --text_column_name review --label_column_name stars --do_regression --do_train --do_eval \\
        --output_dir outputs/my-classifier

Data: --dataset_name (Hub) or .json/.jsonl/.csv files with a text column and a label column; without any, the
bundled generated data (training/data/han, see make_han.py). Labels: strings or ints give single-label
classification over the labels seen in the data; lists of labels give multi-label classification;
--do_regression reads a number. --hierarchical splits each text into sentences at --sentence_separator (tokens
of the tokenizer, one or several) for word- and sentence-level attention. The pooling is a config field
(``pooling_type``: context_vector, self_attentive with ``self_attention_rows`` and
``self_attention_penalty_weight``, multi_dimensional), set with --config_overrides. Metrics: accuracy and macro F1
(single-label), exact-match accuracy and micro F1 (multi-label) through `evaluate` (the bundled modules when offline),
MSE (regression).

The output folder gets the model (code included, loadable with trust_remote_code=True), the tokenizer,
all_results.json, the training curve, attention pictures of the first test documents (with the encoder's
self-attention and embedding mixture when the model has them), predictions.txt and the model card;
--push_to_hub uploads it all.
"""

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding

from hf_bahdanau import BahdanauForSequenceClassification
from hf_bahdanau.pictures import plot_classifier_texts
from training.common.arguments import ReportArguments
from training.common.data_files import LABEL, NUMBER, TEXT, Column, DataFileArguments
from training.common.driver import Report, Setup, Task
from training.common.encoder_heads import HeadModelArguments, load_head, load_splits, load_tokenizer, order_labels
from training.common.figures import save_encoder_pictures
from training.common.metrics import in_percent, load_metric
from training.common.steps import pipeline_usage

logger = logging.getLogger(__name__)

BUNDLED_DATA = Path(__file__).resolve().parents[1] / "data" / "han"
ATTENTION_PICTURE = "attention_{}.png"


@dataclass
class ClassificationDataArguments(ReportArguments, DataFileArguments):
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


class ClassificationTask(Task):
    """Train and evaluate an attention-pooled text classifier, flat or hierarchical (HAN)."""

    name = "classification"
    model_arguments = HeadModelArguments
    data_arguments = ClassificationDataArguments
    card_task = "text-classification"

    def setup(self) -> Setup:
        model_args, data_args = self.model_args, self.data_args
        self.splits = load_splits(data_args, model_args, self.training_args)
        if data_args.do_regression:
            self.labels, self.problem_type, to_name = None, "regression", None
        else:
            labels, self.problem_type, to_name = label_list(self.splits, data_args.label_column_name)
            self.labels = order_labels(model_args, labels)
        self.metric = "eval_mse" if self.problem_type == "regression" else "eval_accuracy"
        texts = self.splits["train"][data_args.text_column_name] if "train" in self.splits else None
        self.tokenizer = load_tokenizer(model_args, texts)
        head_fields = {"problem_type": self.problem_type, "hierarchical": data_args.hierarchical}
        if data_args.hierarchical:
            head_fields["sentence_separator_token_id"] = sentence_separator_ids(self.tokenizer,
                                                                                data_args.sentence_separator)
        model = load_head(AutoModelForSequenceClassification, BahdanauForSequenceClassification, model_args,
                          self.tokenizer, self.labels, **head_fields)
        tokenized = {name: tokenize_split(split, name, self.tokenizer, self.labels, self.problem_type, to_name,
                                          data_args, self.training_args.main_process_first)
                     for name, split in self.splits.items()}
        return Setup(model=model, processing_class=self.tokenizer, datasets=tokenized,
                     data_collator=DataCollatorWithPadding(self.tokenizer),
                     compute_metrics=metrics_function(self.problem_type))

    def prediction_lines(self, output) -> list[str]:
        return prediction_lines(output.predictions, self.problem_type, self.labels)

    def report(self) -> Report:
        output_dir, column = Path(self.training_args.output_dir), self.data_args.text_column_name
        pictured = self.splits.get("predict", self.splits.get("eval"))
        if pictured is not None and self.data_args.num_pictures:
            texts = pictured[column][: self.data_args.num_pictures]
            save_attention_pictures(self.trainer.model, self.tokenizer, texts, output_dir)
            save_encoder_pictures(self.trainer.model, self.tokenizer, texts, output_dir)
        examples = (pictured or self.splits["train"])[column][:2]
        return Report(examples, pipeline_usage(output_dir, f"({json.dumps(examples[0])})", task=self.card_task))


def sentence_separator_ids(tokenizer, separators: list[str]) -> int | list[int]:
    """The token id(s) of ``--sentence_separator``; a ValueError naming the flag for a token the tokenizer lacks."""
    ids = tokenizer.convert_tokens_to_ids(separators)
    unknown = [token for token, token_id in zip(separators, ids)
               if token_id is None or token_id == tokenizer.unk_token_id]
    if unknown:
        raise ValueError(f"`--sentence_separator` must be tokens of the tokenizer (e.g. '.'): {unknown} of "
                         f"{separators} are not.")
    return ids[0] if len(ids) == 1 else ids


TASK = ClassificationTask
