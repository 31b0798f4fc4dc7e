"""The training scripts' data: a Hub dataset (``--dataset_name``) or local files (``--train_file`` …), with an error
that names the argument and the file when a file cannot be used.

    raw = load_raw_splits(data_args, cache_dir)
    splits = requested_splits(raw, data_args, training_args)  # {"train": …, "eval": …, "predict": …} as asked
"""

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import datasets

__all__ = ["FILE_FORMATS", "SPLITS", "DataFileArguments", "load_raw_splits", "read_file", "requested_splits",
           "select_split"]

FILE_FORMATS = (".csv", ".tsv", ".json", ".jsonl")
SPLITS = {"train": "train_file", "validation": "validation_file", "test": "test_file"}


@dataclass
class DataFileArguments:
    """Where the data comes from (a Hub dataset or local files), how much of it is used, and how it is described in the
    model card; each script's data arguments extend this."""

    dataset_name: str | None = field(default=None, metadata={"help": "A dataset on the Hub (needs network)."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Its configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: .csv, .tsv, .json or .jsonl."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data (--do_eval)."})
    test_file: str | None = field(default=None, metadata={"help": "Test data (--do_predict)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N evaluation rows."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenisation."})
    language: list[str] | None = field(default=None, metadata={"help": "Languages of the data, for the model card."})
    dataset_description: str | None = field(default=None, metadata={"help": "One line on the data for the card."})

    def check_files(self) -> None:
        """Every given ``--*_file`` has a supported suffix (``read_file`` checks the rest)."""
        for argument in SPLITS.values():
            path = getattr(self, argument)
            if path is not None and Path(path).suffix not in FILE_FORMATS:
                raise ValueError(f"`--{argument}` must end in one of {list(FILE_FORMATS)}, got {path!r}.")


def read_file(path: str, argument: str, cache_dir: str | None = None) -> datasets.Dataset:
    """The rows of a .csv/.tsv file (datasets' csv builder) or of a .json (a list of records, or JSON lines) or .jsonl
    file (Python's json, which keeps strings as strings: pyarrow's JSON reader turns "2015-03-03" into a date).

    A file that is missing, not UTF-8, cannot be parsed or has no rows raises ValueError naming ``--argument`` and
    the file.
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"`--{argument}` {path!r} does not exist (or is not a file).")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"`--{argument}` {path} is not UTF-8 text: byte {error.object[error.start]:#04x} at offset {error.start} "
            f"cannot be decoded ({error.reason}). Save the file as UTF-8."
        ) from None
    if file.suffix in (".csv", ".tsv"):
        delimiter = "\t" if file.suffix == ".tsv" else ","
        lines = sum(1 for row in csv.reader(text.splitlines(), delimiter=delimiter) if row)  # the header is one
        rows = None if not lines else datasets.Dataset.from_list([])
        if lines > 1:
            rows = datasets.load_dataset("csv", data_files={"rows": path}, cache_dir=cache_dir,
                                         delimiter=delimiter)["rows"]
    else:
        rows = datasets.Dataset.from_list(_json_records(text, path, argument)) if text.strip() else None
    if rows is None or len(rows) == 0:
        raise ValueError(f"`--{argument}` {path} has no rows" + (" (only a header)." if rows is not None else "."))
    return rows


def _json_records(text: str, path: str, argument: str) -> list[dict]:
    try:
        if text.lstrip().startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise ValueError(f"`--{argument}` {path} is not valid JSON or JSON lines: {error}.") from None


def load_raw_splits(data_args: DataFileArguments, cache_dir: str | None = None, token: str | None = None,
                    trust_remote_code: bool = False) -> datasets.DatasetDict:
    """The Hub dataset ``--dataset_name``, else one split per given ``--*_file``."""
    if data_args.dataset_name is not None:
        return datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, cache_dir=cache_dir,
                                     token=token, trust_remote_code=trust_remote_code)
    return datasets.DatasetDict({split: read_file(getattr(data_args, argument), argument, cache_dir)
                                 for split, argument in SPLITS.items() if getattr(data_args, argument)})


def select_split(raw: datasets.DatasetDict, split: str, limit: int | None, flag: str) -> datasets.Dataset:
    """Split ``split`` (needed by ``flag``), its first ``limit`` rows when given."""
    if split not in raw:
        raise ValueError(f"{flag} needs a {split} split: give `--{SPLITS[split]}` (or a dataset that has one).")
    return raw[split] if limit is None else raw[split].select(range(min(limit, len(raw[split]))))


def requested_splits(raw: datasets.DatasetDict, data_args: DataFileArguments,
                     training_args) -> dict[str, datasets.Dataset]:
    """The splits the run asks for: "train" (``--do_train``), "eval" (``--do_eval``, the validation split) and
    "predict" (``--do_predict``, the test split), each limited by its ``--max_*_samples``."""
    wanted = {"train": ("train", training_args.do_train, data_args.max_train_samples, "--do_train"),
              "eval": ("validation", training_args.do_eval, data_args.max_eval_samples, "--do_eval"),
              "predict": ("test", training_args.do_predict, data_args.max_predict_samples, "--do_predict")}
    return {name: select_split(raw, split, limit, flag)
            for name, (split, requested, limit, flag) in wanted.items() if requested}
