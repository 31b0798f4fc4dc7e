"""What run_ner.py and run_classification.py share: model and tokenizer arguments, data loading, a new or loaded
head with the labels of the data, and the end of a run (training curve, model card, Hub push).

A head starts from ``--model_name_or_path`` (a saved tagger/classifier, or a seq2seq checkpoint whose source
embedding and encoder it reuses) or is new (``--preset`` + ``--config_overrides``); a new tokenizer is trained
on the training texts (word-level by default) unless ``--tokenizer_name`` or the model folder has one.
"""

import json
import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import transformers
from transformers import AutoConfig, AutoTokenizer, HfArgumentParser, TrainingArguments

from hf_bahdanau import PRESETS, BahdanauConfig
from model_cards import write_model_card
from training.figures import TRAINING_CURVE, plot_training_curve
from training.hub_utils import push_output_dir
from training.run_seq2seq import FILE_FORMATS, SPLITS, json_to_flags, parse_config_overrides, read_file, select_split
from training.tokenization import TOKENIZER_KINDS, train_tokenizer

logger = logging.getLogger(__name__)

__all__ = [
    "HeadModelArguments", "check_data_files", "finish_run", "load_head", "load_splits", "load_tokenizer",
    "order_labels", "parse_arguments", "setup_logging",
]


@dataclass
class DataFileArguments:
    """Where the data comes from: a Hub dataset or local files (the scripts' data arguments extend this)."""

    dataset_name: str | None = field(default=None, metadata={"help": "A dataset on the Hub (needs network)."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Its configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: .json, .jsonl, .csv or .tsv."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data (--do_eval)."})
    test_file: str | None = field(default=None, metadata={"help": "Test data (--do_predict)."})


@dataclass
class HeadModelArguments:
    """Which model and tokenizer: a saved one (`model_name_or_path`) or a new one (`preset` + overrides)."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved tagger/classifier, or a seq2seq checkpoint whose embedding and "
                                        "encoder are reused (folder or Hub id). Default: a new --preset model."})
    preset: str = field(
        default="rnnsearch", metadata={"help": f"Encoder settings of a new model: a BahdanauConfig preset "
                                               f"{sorted(PRESETS)} (its decoder fields are unused)."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "Config fields of a new model, e.g. 'hidden_size=128,embedding_size=64,"
                                        "token_attention_type=general,dropout=0.2'."})
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "A saved tokenizer (folder or Hub id). Default: the model's, or for a new "
                                        "model one trained on the training data."})
    tokenizer_type: str = field(
        default="word", metadata={"help": f"Kind of tokenizer to train when none is given: {list(TOKENIZER_KINDS)}."})
    tokenizer_vocab_size: int | None = field(
        default=None, metadata={"help": "Vocabulary size of a trained tokenizer (default: every word seen)."})
    lowercase: bool = field(default=False, metadata={"help": "Lower-case text in a trained tokenizer."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where downloaded models and datasets are stored."})
    model_revision: str = field(default="main", metadata={"help": "Hub revision (branch, tag or commit)."})
    token: str | None = field(default=None, metadata={"help": "Hub token for private models and datasets."})
    trust_remote_code: bool = field(default=False, metadata={"help": "Allow code from model/dataset repositories."})

    def __post_init__(self):
        if self.preset not in PRESETS:
            raise ValueError(f"`--preset` must be one of {sorted(PRESETS)}, got {self.preset!r}.")
        if self.config_overrides is not None and self.model_name_or_path is not None:
            raise ValueError("`--config_overrides` configures a new model: use it without `--model_name_or_path`.")
        if self.tokenizer_type not in TOKENIZER_KINDS:
            raise ValueError(f"`--tokenizer_type` must be one of {list(TOKENIZER_KINDS)}, got {self.tokenizer_type!r}.")


def parse_arguments(dataclass_types: tuple, argv: list[str]) -> tuple:
    """Flags, or a .json file of arguments followed by flags that override it."""
    if argv and argv[0].endswith(".json"):
        argv = json_to_flags(json.loads(Path(argv[0]).read_text())) + argv[1:]
    return HfArgumentParser(dataclass_types).parse_args_into_dataclasses(args=argv)


def check_data_files(data_args) -> None:
    """Every given --*_file has a supported suffix."""
    for name in SPLITS.values():
        path = getattr(data_args, name)
        if path is not None and Path(path).suffix not in FILE_FORMATS:
            raise ValueError(f"`--{name}` must end in one of {list(FILE_FORMATS)}, got {path!r}.")


def setup_logging(training_args: TrainingArguments) -> None:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log_level = training_args.get_process_log_level()
    for module_logger in (logger, logging.getLogger("__main__")):
        module_logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()


def load_splits(data_args, model_args: HeadModelArguments, training_args: TrainingArguments,
                columns: Iterable[str]) -> dict[str, datasets.Dataset]:
    """The train / eval / predict splits the run needs (``--do_*``), limited by ``--max_*_samples``, from the Hub
    (``--dataset_name``) or local files; each must have ``columns``."""
    if data_args.dataset_name is not None:
        raw = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name,
                                    cache_dir=model_args.cache_dir, token=model_args.token,
                                    trust_remote_code=model_args.trust_remote_code)
    else:
        raw = datasets.DatasetDict({split: read_file(getattr(data_args, argument), model_args.cache_dir)
                                    for split, argument in SPLITS.items() if getattr(data_args, argument)})
    wanted = {"train": ("train", training_args.do_train, data_args.max_train_samples, "--do_train"),
              "eval": ("validation", training_args.do_eval, data_args.max_eval_samples, "--do_eval"),
              "predict": ("test", training_args.do_predict, data_args.max_predict_samples, "--do_predict")}
    splits = {name: select_split(raw, split, limit, flag)
              for name, (split, requested, limit, flag) in wanted.items() if requested}
    for name, dataset in splits.items():
        missing = [column for column in columns if column not in dataset.column_names]
        if missing:
            raise ValueError(f"The {name} data has no column(s) {missing} (check --text_column_name / "
                             f"--label_column_name); its columns are {dataset.column_names}.")
    return splits


def load_tokenizer(model_args: HeadModelArguments, texts: Iterable[str] | None):
    """The named or the model's tokenizer, else one trained on ``texts`` (the training texts)."""
    name = model_args.tokenizer_name or model_args.model_name_or_path
    if name is not None:
        return AutoTokenizer.from_pretrained(name, cache_dir=model_args.cache_dir, revision=model_args.model_revision,
                                             token=model_args.token, trust_remote_code=model_args.trust_remote_code)
    if texts is None:
        raise ValueError("Training a tokenizer needs training data (--do_train), or give `--tokenizer_name`.")
    tokenizer = train_tokenizer(texts, kind=model_args.tokenizer_type, vocab_size=model_args.tokenizer_vocab_size,
                                lowercase=model_args.lowercase)
    logger.info("Trained a %s tokenizer with %d tokens on the training data", model_args.tokenizer_type,
                len(tokenizer))
    return tokenizer


def order_labels(model_args: HeadModelArguments, labels: list[str]) -> list[str]:
    """``labels`` in the order of ``--model_name_or_path``'s own label ids when it was trained on the same labels
    (so its classifier rows keep their meaning), else as given."""
    if model_args.model_name_or_path is None:
        return labels
    config = AutoConfig.from_pretrained(model_args.model_name_or_path, cache_dir=model_args.cache_dir,
                                        revision=model_args.model_revision, token=model_args.token,
                                        trust_remote_code=model_args.trust_remote_code)
    if set(config.label2id) == set(labels):
        return sorted(labels, key=config.label2id.get)
    return labels


def load_head(auto_class, head_class, model_args: HeadModelArguments, tokenizer, labels: list[str] | None,
              **config_fields):
    """A ``head_class`` model for ``labels`` (None: a regression with one output): loaded from
    ``--model_name_or_path`` (a seq2seq checkpoint gives its encoder) or new from ``--preset``; ``config_fields``
    are head settings (problem_type, hierarchical, …) applied in both cases."""
    if labels is None:
        label_fields = {"num_labels": 1}
    else:
        label_fields = {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
                        "label2id": {label: index for index, label in enumerate(labels)}}
    if model_args.model_name_or_path is not None:
        model = auto_class.from_pretrained(
            model_args.model_name_or_path, cache_dir=model_args.cache_dir, revision=model_args.model_revision,
            token=model_args.token, trust_remote_code=model_args.trust_remote_code, **label_fields, **config_fields)
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(len(tokenizer))
        return model
    config = BahdanauConfig.from_preset(model_args.preset, **{
        "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, **parse_config_overrides(model_args.config_overrides),
        **label_fields, **config_fields})
    model = head_class(config)
    logger.info("New %s (%s encoder): %s parameters", head_class.__name__, model_args.preset,
                f"{model.num_parameters():,}")
    return model


def finish_run(trainer, training_args: TrainingArguments, data_args, *, task: str, metric: str,
               example_inputs: list[str]) -> None:
    """After training and evaluation: training curve, model card (with the PNGs of the folder), Hub push."""
    output_dir = Path(training_args.output_dir)
    plot_training_curve(trainer.state.log_history, output_dir / TRAINING_CURVE, metric=metric)
    dataset_name = data_args.dataset_name or Path(data_args.train_file).parent.name
    write_model_card(output_dir, task=task, dataset_name=dataset_name, dataset_description=data_args.dataset_description,
                     training_args=training_args.to_dict(), language=data_args.language,
                     example_inputs=example_inputs)
    if training_args.push_to_hub:
        push_output_dir(output_dir, training_args.hub_model_id or output_dir.name, token=training_args.hub_token,
                        private=training_args.hub_private_repo, revision=training_args.hub_revision)
