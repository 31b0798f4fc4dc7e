"""What the image tasks (image-to-text, VQA) share: the common part of their data arguments, a user's image dataset
read and checked, and the run's tokenizer and image processor, new or those of ``--model_name_or_path``.

    loaded = load_image_dataset(data_args, {data_args.text_column: Column("text_column", TEXT)})
    tokenizer, processor = load_tokenizer_and_processor(model_args.model_name_or_path, texts, "char",
                                                        num_channels=1, height=32)
"""

from dataclasses import dataclass, field

import datasets
from transformers import AutoImageProcessor, BaseImageProcessor, PreTrainedTokenizerFast

from hf_bahdanau import BahdanauImageProcessor
from training.common.arguments import ReportArguments
from training.common.data_files import Column, load_dataset_as_written
from training.common.tokenization import train_tokenizer

__all__ = ["ImageDataArguments", "check_positive", "first_rows", "load_image_dataset", "load_tokenizer_and_processor"]


@dataclass
class ImageDataArguments(ReportArguments):
    """Images and their texts: a Hub dataset or a local image folder, else the task's own data; how many rows of
    each split are used; what the card says (in English unless ``--language`` says otherwise). A task's data
    arguments derive from it and call ``super().__post_init__()``."""

    dataset_name: str | None = field(
        default=None, metadata={"help": "A Hub dataset or a local image folder (datasets' imagefolder) with the "
                                        "task's columns. Default: the task's own data."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Its configuration name."})
    image_column: str = field(default="image", metadata={"help": "Column with the images."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N evaluation rows."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})

    def __post_init__(self):
        self.language = self.language or ["en"]
        check_positive(self, "max_train_samples", "max_eval_samples", "max_predict_samples")
        super().__post_init__()


def check_positive(arguments, *names: str) -> None:
    """A ValueError naming the first of the fields ``names`` of ``arguments`` that is given (not None) and below 1."""
    for name in names:
        value = getattr(arguments, name)
        if value is not None and value < 1:
            raise ValueError(f"`--{name}` must be a positive number, got {value}.")


def load_image_dataset(data_args: ImageDataArguments, columns: dict[str, Column]) -> datasets.DatasetDict:
    """``--dataset_name``'s splits, its text ``columns`` read as written; a ValueError naming it when it has no train
    or no test split, or no ``--image_column``."""
    loaded = load_dataset_as_written(data_args.dataset_name, data_args.dataset_config_name, columns)
    for split in ("train", "test"):
        if split not in loaded:
            raise ValueError(f"--dataset_name {data_args.dataset_name}: no {split!r} split (its splits: "
                             f"{list(loaded)}).")
    if data_args.image_column not in loaded["train"].column_names:
        raise ValueError(f"--dataset_name {data_args.dataset_name}: no column {data_args.image_column!r} (its "
                         f"columns: {loaded['train'].column_names}); set --image_column.")
    return loaded


def first_rows(rows: datasets.Dataset, limit: int | None) -> datasets.Dataset:
    """The first ``limit`` rows of ``rows`` (all of them when ``limit`` is None)."""
    return rows if limit is None else rows.select(range(min(limit, len(rows))))


def load_tokenizer_and_processor(model_name_or_path: str | None, texts: list[str], kind: str, *, num_channels: int,
                                 height: int) -> tuple[PreTrainedTokenizerFast, BaseImageProcessor]:
    """The tokenizer and image processor of ``model_name_or_path``; for a new model, a ``kind`` tokenizer ("char",
    "word") trained on ``texts`` and a processor of ``num_channels`` channels resizing images to ``height``."""
    if model_name_or_path:
        return (PreTrainedTokenizerFast.from_pretrained(model_name_or_path),
                AutoImageProcessor.from_pretrained(model_name_or_path, trust_remote_code=True))
    return (train_tokenizer(texts, kind=kind),
            BahdanauImageProcessor(num_channels=num_channels, size={"height": height}))
