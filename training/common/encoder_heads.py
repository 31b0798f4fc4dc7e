"""What the tagging and classification tasks (training/tasks/tagging.py, classification.py) share: model and tokenizer
arguments, data loading, and a new or loaded head with the labels of the data.

A head starts from ``--model_name_or_path`` (a saved tagger/classifier, or a seq2seq checkpoint whose source
embedding and encoder it reuses) or is new (``--preset`` + ``--config_overrides``); a new tokenizer is trained
on the training texts (word-level by default) unless ``--tokenizer_name`` or the model folder has one.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import datasets
from transformers import AutoConfig, TrainingArguments

from hf_bahdanau import PRESETS, BahdanauEncoderConfig
from hf_bahdanau.word_vectors import prepare_meta_embedding
from training.common.arguments import TextModelArguments, check_new_config, parse_config_overrides
from training.common.data_files import load_raw_splits, requested_splits
from training.common.tokenization import TOKENIZER_KINDS

logger = logging.getLogger(__name__)

__all__ = ["HeadModelArguments", "load_head", "load_splits", "load_tokenizer", "order_labels"]


@dataclass
class HeadModelArguments(TextModelArguments):
    """Which model and tokenizer: a saved one (`model_name_or_path`) or a new one (`preset` + overrides)."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved tagger/classifier, or a seq2seq checkpoint whose embedding and "
                                        "encoder are reused (folder or Hub id). Default: a new --preset model."})
    preset: str = field(
        default="rnnsearch", metadata={"help": f"Encoder settings of a new model: the encoder of a preset "
                                               f"{sorted(PRESETS)} (BahdanauEncoderConfig.from_preset)."})
    config_overrides: str | None = field(
        default=None, metadata={"help": "Config fields of a new model, e.g. 'hidden_size=128,embedding_size=64,"
                                        "dropout=0.2' and the head's attention: the tagger's token_attention_type="
                                        "general, the classifier's pooling_type=self_attentive."})
    tokenizer_type: str = field(
        default="word", metadata={"help": f"Kind of tokenizer to train when none is given: {list(TOKENIZER_KINDS)}."})
    tokenizer_vocab_size: int | None = field(
        default=None, metadata={"help": "Vocabulary size of a trained tokenizer (default: every word seen)."})

    def __post_init__(self):
        super().__post_init__()
        if self.preset not in PRESETS:
            raise ValueError(f"`--preset` must be one of {sorted(PRESETS)}, got {self.preset!r}.")
        if self.config_overrides is not None and self.model_name_or_path is not None:
            raise ValueError("`--config_overrides` configures a new model: use it without `--model_name_or_path`.")
        parse_config_overrides(self.config_overrides, BahdanauEncoderConfig)  # a bad field ends here, exit 2
        if self.model_name_or_path is None:  # and a bad value
            check_new_config(lambda: new_config(self), self.config_overrides)
        if self.tokenizer_type not in TOKENIZER_KINDS:
            raise ValueError(f"`--tokenizer_type` must be one of {list(TOKENIZER_KINDS)}, got {self.tokenizer_type!r}.")


def load_splits(data_args, model_args: HeadModelArguments,
                training_args: TrainingArguments) -> dict[str, datasets.Dataset]:
    """The train / eval / predict splits the run needs (``--do_*``), limited by ``--max_*_samples``, from the Hub
    (``--dataset_name``) or local files, their used columns checked (``load_raw_splits``)."""
    raw = load_raw_splits(data_args, model_args.cache_dir, model_args.token, model_args.trust_remote_code)
    return requested_splits(raw, data_args, training_args)


def load_tokenizer(model_args: HeadModelArguments, texts: Iterable[str] | None):
    """The named or the model's tokenizer, else one trained on ``texts`` (the training texts)."""
    return model_args.load_tokenizer(texts, "--do_train, or give `--tokenizer_name`")


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


def new_config(model_args: HeadModelArguments, tokenizer_fields: dict | None = None,
               **head_fields) -> BahdanauEncoderConfig:
    """A new model's config (encoder-only: the tagger and the classifiers have no decoder): --preset's encoder,
    the tokenizer's fields (vocabulary, special ids), --config_overrides, then the head's fields (labels, problem
    type, …)."""
    return BahdanauEncoderConfig.from_preset(model_args.preset, **{
        **(tokenizer_fields or {}), **parse_config_overrides(model_args.config_overrides, BahdanauEncoderConfig),
        **head_fields})


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
        prepare_meta_embedding(model, tokenizer, model_args.pretrained_vectors)
        return model
    config = new_config(model_args, {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                                     "eos_token_id": tokenizer.eos_token_id},
                        **label_fields, **config_fields)
    model = head_class(config)
    prepare_meta_embedding(model, tokenizer, model_args.pretrained_vectors)
    logger.info("New %s (%s encoder): %s parameters", head_class.__name__, model_args.preset,
                f"{model.num_parameters():,}")
    return model
