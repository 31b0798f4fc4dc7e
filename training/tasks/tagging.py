"""Train and evaluate an attention tagger (an encode–attend–classify NER model with one attention over the
sentence), like transformers' run_ner.py.

    python -m training tagging training/configs/ner_tagger.json        # the bundled data, about a minute
    python -m training tagging training/configs/ner_tagger.json --config_overrides "token_attention_type=general"
    python -m training tagging --model_name_or_path outputs/dates-rnnsearch ...  # reuse a seq2seq encoder
    python -m training tagging --train_file train.json --validation_file dev.json --text_column_name words \\
        --label_column_name tags --do_train --do_eval --output_dir outputs/my-tagger

(``python training/run_ner.py ...`` runs the same.) Data: --dataset_name (Hub, e.g. conll2003) or .json/.jsonl files
with a column of word lists and a column of tag lists (strings, or class ids with a ClassLabel feature); without any,
the bundled generated data (training/data/ner, see make_ner.py). The label list is read from the data. Words are
tokenized with ``is_split_into_words``; the first token of a word carries its tag (all tokens with
--label_all_tokens, B- turned into I- after the first), special tokens get -100. Metrics: seqeval's entity-level
precision, recall, F1 and token accuracy, through `evaluate` (the bundled module when offline).

The output folder gets the model (code included, loadable with trust_remote_code=True), the tokenizer,
all_results.json, the training curve, attention pictures of the first test sentences (with the encoder's
self-attention and embedding mixture when the model has them), predictions.txt and the model card;
--push_to_hub uploads it all.
"""

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification

from hf_bahdanau import BahdanauForTokenClassification
from hf_bahdanau.pictures import plot_token_attention
from training.common.arguments import ReportArguments
from training.common.data_files import TAGS, TEXTS, Column, DataFileArguments
from training.common.driver import Report, Setup, Task
from training.common.encoder_heads import HeadModelArguments, load_head, load_splits, load_tokenizer, order_labels
from training.common.figures import save_encoder_pictures
from training.common.metrics import in_percent, load_metric
from training.common.steps import pipeline_usage

logger = logging.getLogger(__name__)

BUNDLED_DATA = Path(__file__).resolve().parents[1] / "data" / "ner"
ATTENTION_PICTURE = "attention_{}.png"


@dataclass
class NerDataArguments(ReportArguments, DataFileArguments):
    """Which data, which columns, and what to report."""

    text_column_name: str = field(default="tokens", metadata={"help": "Column with the list of words."})
    label_column_name: str = field(default="ner_tags", metadata={"help": "Column with the list of tags."})
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Longest input in tokens; longer ones are truncated (their tail words "
                                        "untagged) and counted in a warning. Default: no limit."})
    label_all_tokens: bool = field(
        default=False, metadata={"help": "Tag every token of a word (subword tokenizers), not only the first."})
    return_entity_level_metrics: bool = field(
        default=False, metadata={"help": "Report precision/recall/F1 per entity type too."})

    def __post_init__(self):
        if self.dataset_name is None and not (self.train_file or self.validation_file or self.test_file):
            self.train_file, self.validation_file, self.test_file = (
                str(BUNDLED_DATA / f"{split}.jsonl") for split in ("train", "validation", "test"))
            self.dataset_description = self.dataset_description or "generated English-like NER sentences " \
                                                                   "(PER/LOC/ORG/MISC, context-dependent types)"
        self.check_files()
        if self.max_seq_length is not None and self.max_seq_length < 2:
            raise ValueError(f"`--max_seq_length` must be at least 2, got {self.max_seq_length}.")
        super().__post_init__()

    def used_columns(self) -> dict[str, Column]:
        return {self.text_column_name: Column("text_column_name", TEXTS),
                self.label_column_name: Column("label_column_name", TAGS)}


def label_list(splits: dict[str, datasets.Dataset], column: str) -> list[str]:
    """Tag names: the ClassLabel names of the data, else every tag seen in any split, sorted."""
    feature = next(iter(splits.values())).features[column]
    if isinstance(getattr(feature, "feature", None), datasets.ClassLabel):
        return list(feature.feature.names)
    return sorted({tag for dataset in splits.values() for tags in dataset[column] for tag in tags})


def tokenize_and_align(dataset: datasets.Dataset, name: str, tokenizer, labels: list[str],
                       data_args: NerDataArguments, main_process_first) -> datasets.Dataset:
    """input_ids / attention_mask / labels (tag ids on the first token of each word, -100 elsewhere)."""
    label_to_id = {label: index for index, label in enumerate(labels)}
    inside = [label_to_id.get("I-" + label[2:], index) if label.startswith("B-") else index
              for index, label in enumerate(labels)]  # the tag of a word's later tokens with --label_all_tokens

    def tokenize(batch):
        encoding = tokenizer(batch[data_args.text_column_name], is_split_into_words=True,
                             truncation=data_args.max_seq_length is not None, max_length=data_args.max_seq_length)
        all_labels, truncated = [], []
        for row, tags in enumerate(batch[data_args.label_column_name]):
            tag_ids = [tag if isinstance(tag, int) else label_to_id[tag] for tag in tags]
            word_ids, previous, aligned = encoding.word_ids(row), None, []
            for word in word_ids:
                if word is None:
                    aligned.append(-100)
                elif word != previous:
                    aligned.append(tag_ids[word])
                else:
                    aligned.append(inside[tag_ids[word]] if data_args.label_all_tokens else -100)
                previous = word
            all_labels.append(aligned)
            truncated.append(len({word for word in word_ids if word is not None}) < len(tags))
        return {**encoding, "labels": all_labels, "truncated": truncated}

    with main_process_first(desc=f"{name} dataset tokenisation"):
        tokenized = dataset.map(tokenize, batched=True, remove_columns=dataset.column_names,
                                num_proc=data_args.preprocessing_num_workers, desc=f"Tokenising {name}")
    if sum(tokenized["truncated"]):
        logger.warning("%d of %d %s sentences were truncated to --max_seq_length=%s tokens: their last words are "
                       "not tagged.", sum(tokenized["truncated"]), len(tokenized), name, data_args.max_seq_length)
    return tokenized.remove_columns("truncated")


def tag_sequences(predictions: np.ndarray, label_ids: np.ndarray, labels: list[str]) -> tuple[list, list]:
    """Predicted and reference tag names at the positions that carry a label (label id != -100)."""
    predicted, reference = [], []
    for prediction_row, label_row in zip(predictions, label_ids):
        kept = label_row != -100
        predicted.append([labels[index] for index in prediction_row[kept]])
        reference.append([labels[index] for index in label_row[kept]])
    return predicted, reference


def metrics_function(labels: list[str], entity_level: bool):
    """compute_metrics: seqeval's overall precision, recall, F1 and accuracy (with ``entity_level``, each entity
    type's too; its ``number``, a count, as it is), in percent."""
    seqeval = load_metric("seqeval")

    def compute_metrics(eval_prediction) -> dict[str, float]:
        predicted, reference = tag_sequences(eval_prediction.predictions.argmax(-1), eval_prediction.label_ids, labels)
        scores = seqeval.compute(predictions=predicted, references=reference, zero_division=0)
        rates = {name: scores[f"overall_{name}"] for name in ("precision", "recall", "f1", "accuracy")}
        entities = {entity: values for entity, values in scores.items() if isinstance(values, dict)}
        if entity_level:
            rates.update({f"{entity}_{name}": value for entity, values in entities.items()
                          for name, value in values.items() if name != "number"})
        counts = {f"{entity}_number": values["number"] for entity, values in entities.items()} if entity_level else {}
        return {**in_percent(rates), **counts}

    return compute_metrics


def save_attention_pictures(model, tokenizer, sentences: list[list[str]], output_dir: Path) -> None:
    """One picture per sentence: the attention over its words and the predicted tags."""
    model.eval()
    for number, words in enumerate(sentences):
        encoding = tokenizer(words, is_split_into_words=True, return_tensors="pt").to(model.device)
        with torch.no_grad():
            outputs = model(**encoding, output_attentions=True)
        tokens = tokenizer.convert_ids_to_tokens(encoding["input_ids"][0])
        tags = [model.config.id2label[int(index)] for index in outputs.logits[0].argmax(-1)]
        weights = outputs.attentions[0][0, 0]  # [S, S]
        if model.config.token_attention_type == "context_vector":
            weights = weights[0]  # the context-vector attention's one distribution over the sentence
        plot_token_attention(weights, tokens, tags, path=output_dir / ATTENTION_PICTURE.format(number),
                             title=" ".join(words))


class TaggingTask(Task):
    """Train and evaluate an attention tagger (an encode–attend–classify NER model with one attention over the
    sentence)."""

    name = "tagging"
    model_arguments = HeadModelArguments
    data_arguments = NerDataArguments
    card_task = "token-classification"
    metric = "eval_f1"

    def setup(self) -> Setup:
        model_args, data_args = self.model_args, self.data_args
        self.splits = load_splits(data_args, model_args, self.training_args)
        self.labels = order_labels(model_args, label_list(self.splits, data_args.label_column_name))
        train_words = self.splits["train"][data_args.text_column_name] if "train" in self.splits else None
        self.tokenizer = load_tokenizer(model_args,
                                        None if train_words is None else (" ".join(words) for words in train_words))
        model = load_head(AutoModelForTokenClassification, BahdanauForTokenClassification, model_args, self.tokenizer,
                          self.labels)
        tokenized = {name: tokenize_and_align(split, name, self.tokenizer, self.labels, data_args,
                                              self.training_args.main_process_first)
                     for name, split in self.splits.items()}
        return Setup(model=model, processing_class=self.tokenizer, datasets=tokenized,
                     data_collator=DataCollatorForTokenClassification(self.tokenizer),
                     compute_metrics=metrics_function(self.labels, data_args.return_entity_level_metrics))

    def prediction_lines(self, output) -> list[str]:
        """One line per sentence: the predicted tags of its words."""
        predicted, _ = tag_sequences(output.predictions.argmax(-1), output.label_ids, self.labels)
        return [" ".join(tags) for tags in predicted]

    def report(self) -> Report:
        output_dir, column = Path(self.training_args.output_dir), self.data_args.text_column_name
        pictured = self.splits.get("predict", self.splits.get("eval"))
        if pictured is not None and self.data_args.num_pictures:
            sentences = pictured[column][: self.data_args.num_pictures]
            save_attention_pictures(self.trainer.model, self.tokenizer, sentences, output_dir)
            save_encoder_pictures(self.trainer.model, self.tokenizer, sentences, output_dir, is_split_into_words=True)
        examples = [" ".join(words) for words in (pictured or self.splits["train"])[column][:2]]
        return Report(examples, pipeline_usage(output_dir, f"({json.dumps(examples[0])})", task=self.card_task))


TASK = TaggingTask
