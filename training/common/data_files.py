"""The training scripts' data: a Hub dataset (``--dataset_name``) or local files (``--train_file`` …), read exactly
as written, with an error that names the argument, the file, the line and the column when a row cannot be used.

    raw = load_raw_splits(data_args, cache_dir)  # checks the columns of data_args.used_columns()
    splits = requested_splits(raw, data_args, training_args)  # {"train": …, "eval": …, "predict": …} as asked

.tsv: tab-separated, no quoting (a double quote is text); .csv: comma-separated with CSV's quoting. Every cell is a
string exactly as written (no NA, boolean or number conversion), every row has the header's fields, and blank
lines are skipped. .json (a list of records) and .jsonl (one record a line) keep JSON's types, except that a number
in a text column is its JSON text (``2.50`` stays "2.50").

An image folder (``--dataset_name DIR``, datasets' imagefolder) has its metadata.csv / metadata.jsonl read the same
way (``load_dataset_as_written``).
"""

import csv
import io
import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import datasets
import pyarrow
from datasets.exceptions import DatasetGenerationError
from datasets.fingerprint import Hasher
from datasets.packaged_modules.imagefolder.imagefolder import ImageFolder

logger = logging.getLogger(__name__)

__all__ = ["FILE_FORMATS", "LABEL", "NUMBER", "POINTERS", "POINTS", "SPANS", "SPLITS", "TAGS", "TEXT", "TEXTS",
           "Column", "ColumnKind", "DataFileArguments", "check_cells", "check_present", "hold_out_validation",
           "json_line_records", "load_dataset_as_written", "load_named_dataset", "load_raw_splits", "read_file",
           "requested_splits", "select_split", "table_rows"]

FILE_FORMATS = (".csv", ".tsv", ".json", ".jsonl")
TABLE_FORMATS = (".csv", ".tsv")
SPLITS = {"train": "train_file", "validation": "validation_file", "test": "test_file"}


class ColumnKind(NamedTuple):
    """What a column's cells must hold: ``description`` (for error messages) and ``accepts(value)``."""

    description: str
    accepts: Callable[[Any], bool]


class Column(NamedTuple):
    """A column a script reads: the ``--argument`` that names it (None: a fixed name), what its cells must hold, and
    whether every split must have it (an optional column is checked in the splits that have it)."""

    argument: str | None
    kind: ColumnKind
    required: bool = True


def _is_text(value) -> bool:
    return isinstance(value, str) and value != ""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_number(value) -> bool:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return False
    return _is_real(value)


def _list_of(accepts: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(accepts(item) for item in value)


def _is_label(value) -> bool:
    return _is_text(value) or _is_int(value)


TEXT = ColumnKind("a non-empty string", _is_text)
TEXTS = ColumnKind("a list of non-empty strings", _list_of(_is_text))
NUMBER = ColumnKind("a finite number (or a string of one)", _is_number)
LABEL = ColumnKind("a label (a non-empty string or an integer) or a list of labels",
                   lambda value: _is_label(value) or _list_of(_is_label)(value))
TAGS = ColumnKind("a list of tags (non-empty strings or integers)", _list_of(_is_label))
SPANS = ColumnKind("a dict of {field: [start, end]}", lambda value: isinstance(value, dict))
POINTS = ColumnKind("a list of points, each a list of finite numbers", _list_of(_list_of(_is_real)))
POINTERS = ColumnKind("a list of integer pointer ids", _list_of(_is_int))


@dataclass
class DataFileArguments:
    """Where the data comes from (a Hub dataset or local files) and how much of it is used; the data arguments of each
    task that reads files extend this (after ``ReportArguments``, which describes the data in the card) and say which
    columns they read (``used_columns``)."""

    dataset_name: str | None = field(default=None, metadata={"help": "A dataset on the Hub (needs network)."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Its configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "Training data: .csv, .tsv, .json or .jsonl."})
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data (--do_eval)."})
    test_file: str | None = field(default=None, metadata={"help": "Test data (--do_predict)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N evaluation rows."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenisation."})
    streaming: bool = field(
        default=False, metadata={"help": "Read the training split as it is trained on, not into memory (a corpus "
                                         "larger than memory; needs --max_steps; training/common/streaming.py)."})
    shuffle_buffer_size: int = field(
        default=10_000, metadata={"help": "--streaming: training examples are shuffled within a buffer of this many."})

    # whether the task trains on a stream with --streaming (training/common/streaming.py); the others refuse it
    streams: ClassVar[bool] = False

    def check_files(self) -> None:
        """Every given ``--*_file`` has a supported suffix (``read_file`` checks the rest)."""
        for argument in SPLITS.values():
            path = getattr(self, argument)
            if path is not None and Path(path).suffix not in FILE_FORMATS:
                raise ValueError(f"`--{argument}` must end in one of {list(FILE_FORMATS)}, got {path!r}.")

    def used_columns(self) -> dict[str, Column]:
        """{column name: Column} of the columns the script reads (each script's arguments say)."""
        raise NotImplementedError(f"{type(self).__name__} must say which columns its script reads.")


def read_file(path: str, argument: str, columns: Mapping[str, Column]) -> datasets.Dataset:
    """The rows of a .csv/.tsv/.json/.jsonl file, one per data row of the file, cells as written; ``columns``
    ({name: Column}) are the columns the script reads: each required one must exist and every cell of theirs must be
    of their kind.

    A file that is missing, not UTF-8, cannot be parsed, has no rows, a header with an empty or repeated name, a row
    with more or fewer fields than the header, or a missing, empty or mistyped cell in a read column raises
    ValueError naming ``--argument``, the file, the line (or JSON record) and the column.
    """
    split = next(split for split in SPLITS if SPLITS[split] == argument)
    return _read_rows(Path(path), argument, f"`--{argument}` {path}", split, columns)


def _read_rows(file: Path, argument: str, source: str, split: str, columns: Mapping[str, Column]) -> datasets.Dataset:
    """``read_file``'s rows of ``file`` (of ``split``), its errors beginning with ``source``."""
    text, table = _read_text(file, argument), file.suffix in TABLE_FORMATS
    texts = [name for name, column in columns.items() if column.kind is TEXT]
    cells, places = _table_cells(text, source, tsv=file.suffix == ".tsv") if table else _json_cells(text, source, texts)
    if not places:
        raise ValueError(f"{source} has no rows" + (" (only a header)." if cells else "."))
    check_present(list(cells), columns, split, source)
    check_cells(cells, places, columns, source, table)
    try:
        return datasets.Dataset.from_dict(cells)
    except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError) as error:
        raise ValueError(f"{source}: its records do not form one table ({error}); give each key one type.") from None


def _read_text(file: Path, argument: str) -> str:
    if not file.is_file():
        raise ValueError(f"`--{argument}` {str(file)!r} does not exist (or is not a file).")
    data = file.read_bytes()
    try:
        return data.decode("utf-8-sig")  # a leading byte order mark (Excel's "UTF-8") is not part of the header
    except UnicodeDecodeError as error:
        raise ValueError(
            f"`--{argument}` {file} is not UTF-8 text: byte {error.object[error.start]:#04x} at offset {error.start} "
            f"cannot be decoded ({error.reason}). Save the file as UTF-8."
        ) from None


def _table_cells(text: str, source: str, tsv: bool) -> tuple[dict[str, list[str]], list[str]]:
    """({column: its cells}, "line N" of each row) of a .tsv (no quoting) or a .csv (CSV quoting); the first
    non-blank line is the header."""
    rows = table_rows(io.StringIO(text, newline=""), source, tsv)
    header = next(rows, None)
    if header is None:
        return {}, []
    cells, places = {name: [] for name in header[1]}, []
    for place, fields in rows:
        for values, value in zip(cells.values(), fields):
            values.append(value)
        places.append(place)
    return cells, places


def table_rows(lines: Iterable[str], source: str, tsv: bool) -> Iterator[tuple[str, list[str]]]:
    """("line N", fields) of each non-blank row of a .tsv (no quoting) or .csv (CSV quoting) read from ``lines`` (an
    open file or a StringIO, newline=""), the header first; a row whose fields do not match the header's is a
    ValueError naming ``source`` and the line."""
    reader = csv.reader(lines, delimiter="\t" if tsv else ",", strict=True,
                        quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL)
    names, header_line, line = None, 0, 1  # line: where the next row starts
    try:
        for fields in reader:
            if not fields:  # a blank line
                pass
            elif names is None:
                names, header_line = _header(fields, f"{source} line {line}"), line
                yield f"line {line}", names
            elif len(fields) != len(names):
                raise ValueError(_shape_error(fields, names, f"{source} line {line}", header_line, tsv))
            else:
                yield f"line {line}", fields
            line = reader.line_num + 1
    except csv.Error as error:
        raise ValueError(f"{source} line {line}: {error}" + ("." if tsv else " (CSV quoting: a field that starts "
                         "with a double quote must end with one, and a double quote inside it is written twice).")
                         ) from None


def _header(fields: list[str], where: str) -> list[str]:
    for index, name in enumerate(fields):
        if not name:
            raise ValueError(f"{where}: field {index + 1} of the header {fields} is empty; every column needs a name.")
        if name in fields[:index]:
            raise ValueError(f"{where}: column {name!r} appears more than once in the header {fields}; column names "
                             f"must be unique.")
    return fields


def _shape_error(fields: list[str], names: list[str], where: str, header_line: int, tsv: bool) -> str:
    counts = f"{where} has {len(fields)} field(s) but the header (line {header_line}) has {len(names)}: {names}"
    if len(fields) < len(names):
        return f"{counts}; no field for column(s) {names[len(fields):]}."
    return (f"{counts}; after column {names[-1]!r} come {fields[len(names):]}" +
            (" (in a .tsv every tab separates fields: a text cannot hold one)." if tsv else "."))


def _json_cells(text: str, source: str, texts: Sequence[str] = ()) -> tuple[dict[str, list], list[str]]:
    """({key: its value in each record, None where a record lacks it}, "line N" or "record index N" of each record)
    of a .json list of records or of JSON lines; the keys in order of first appearance. A number under a key of
    ``texts`` is its JSON text as written (``2.50`` -> "2.50")."""
    if not text.strip():
        return {}, []
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{source} is not valid JSON: {error}.") from None
        places = [f"record index {index}" for index in range(len(records))]
        for record, place in zip(records, places):
            _check_record(record, source, place)
        written = None  # the records again, their numbers as text: parsed only if a text holds a number
        for index, record in enumerate(records):
            for key in texts:
                if _is_real(record.get(key)):
                    written = written or json.loads(text, parse_int=str, parse_float=str)
                    record[key] = written[index][key]
    else:  # not splitlines(): U+2028 may be in a string
        read = list(json_line_records(text.split("\n"), source, texts))
        places, records = [place for place, _ in read], [record for _, record in read]
    keys = dict.fromkeys(key for record in records for key in record)
    return {key: [record.get(key) for record in records] for key in keys}, places


def json_line_records(lines: Iterable[str], source: str, texts: Sequence[str] = ()) -> Iterator[tuple[str, dict]]:
    """("line N", record) of each non-blank line of JSON lines (an open file, or a text's lines); a number under a key
    of ``texts`` is its JSON text as written (``2.50`` -> "2.50"). A line that is not a JSON object is a ValueError
    naming ``source`` and the line."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{source} line {number} is not valid JSON: {error}.") from None
            _check_record(record, source, f"line {number}")
            if any(_is_real(record.get(key)) for key in texts):
                written = json.loads(line, parse_int=str, parse_float=str)
                record.update({key: written[key] for key in texts if _is_real(record.get(key))})
            yield f"line {number}", record


def _check_record(record, source: str, place: str) -> None:
    if not isinstance(record, dict):
        raise ValueError(f"{source} {place} is {_shown(record)}, not a JSON object (one row: {{column: value}}).")


def check_present(names: list[str], columns: Mapping[str, Column], split: str, source: str) -> None:
    """A ValueError naming the first required column of ``columns`` that is not among ``names`` (``split``'s columns,
    read from ``source``)."""
    for name, column in columns.items():
        if column.required and name not in names:
            subject = f"`--{column.argument}` {name!r}" if column.argument else repr(name)
            raise ValueError(f"{subject} is not a column of the {split} data; its columns are {names} ({source}).")


def check_cells(cells: Mapping[str, Sequence], places: Sequence[str], columns: Mapping[str, Column], source: str,
                 table: bool) -> None:
    """A ValueError naming the first cell of ``cells`` ({column: its cells}, at ``places``) not of its column's kind;
    ``table``: the cells come from a .csv/.tsv (the message says that such a cell is text)."""
    for name, column in columns.items():
        for place, value in zip(places, cells.get(name, ())):
            if not column.kind.accepts(value):
                raise ValueError(_cell_error(value, name, column, f"{source} {place}", table))


def _cell_error(value, name: str, column: Column, where: str, table: bool) -> str:
    if value is None:
        problem = "is missing (null, or no such key)"
    elif value == "":
        problem = "is empty"
    else:
        problem = f"holds {_shown(value)}"
        if table:
            problem += " (a .csv/.tsv cell is text: give lists, dicts and numbers in a .json/.jsonl file)"
    named = f"column {name!r}" + (f" (`--{column.argument}`)" if column.argument else "")
    return f"{where}, {named}: the cell {problem}; it must be {column.kind.description}."


def _shown(value) -> str:
    text = repr(value)
    return f"the {type(value).__name__} " + (text if len(text) <= 60 else text[:57] + "...")


def load_raw_splits(data_args: DataFileArguments, cache_dir: str | None = None, token: str | None = None,
                    trust_remote_code: bool = False) -> datasets.DatasetDict:
    """The Hub dataset ``--dataset_name``, else one split per given ``--*_file``; every split has the required
    columns of ``data_args.used_columns()``, and the number of rows read per split is logged. With ``--streaming``
    the train split is left out (``streaming.open_stream`` reads it as it is trained on) and the others are read
    into memory (a Hub dataset's through its stream: nothing else is downloaded)."""
    columns = data_args.used_columns()
    if data_args.streaming and not data_args.streams:
        raise ValueError("`--streaming` trains the seq2seq task on a stream; this task reads its data into memory: "
                         "leave `--streaming` out.")
    if data_args.dataset_name is not None and data_args.streaming:
        streams = load_named_dataset(data_args.dataset_name, data_args.dataset_config_name, cache_dir=cache_dir,
                                     token=token, trust_remote_code=trust_remote_code, streaming=True)
        raw = datasets.DatasetDict({split: datasets.Dataset.from_list(list(rows), features=rows.features)
                                    for split, rows in streams.items() if split != "train"})
        sources = {split: f"`--dataset_name` {data_args.dataset_name}" for split in raw}
        for split, dataset in raw.items():
            check_present(dataset.column_names, columns, split, sources[split])
    elif data_args.dataset_name is not None:
        raw = load_named_dataset(data_args.dataset_name, data_args.dataset_config_name, cache_dir=cache_dir,
                                 token=token, trust_remote_code=trust_remote_code)
        sources = {split: f"`--dataset_name` {data_args.dataset_name}" for split in raw}
        for split, dataset in raw.items():
            check_present(dataset.column_names, columns, split, sources[split])
    else:
        sources = {split: f"`--{argument}` {getattr(data_args, argument)}" for split, argument in SPLITS.items()
                   if getattr(data_args, argument) and not (data_args.streaming and split == "train")}
        raw = datasets.DatasetDict({split: read_file(getattr(data_args, SPLITS[split]), SPLITS[split], columns)
                                    for split in sources})
    for split, dataset in raw.items():  # shown at --log_level info (setup_logging), as transformers' examples log
        logger.info("Read %d %s rows from %s", len(dataset), split, sources[split])
    return raw


class _ImageFolderAsWritten(ImageFolder):
    """datasets' imagefolder, its metadata.csv / metadata.jsonl read by ``read_file``'s rules (``columns``: the
    script's, required in every split); a metadata.parquet is datasets' own."""

    columns: Mapping[str, Column] = {}

    def _read_metadata(self, metadata_file: str, metadata_ext: str = ""):
        if metadata_ext not in (".csv", ".jsonl"):
            yield from super()._read_metadata(metadata_file, metadata_ext)
            return
        split = next(split for split, files in self.config.data_files.items() if metadata_file in files)
        source = f"`--dataset_name` {metadata_file} ({split} split)"
        yield _read_rows(Path(metadata_file), "dataset_name", source, split, self.columns).data.table


def load_named_dataset(name: str, config_name: str | None,
                       **kwargs) -> datasets.DatasetDict | datasets.IterableDatasetDict | datasets.IterableDataset:
    """``datasets.load_dataset(name, config_name, **kwargs)``; a name found nowhere (neither a local folder or file
    nor a Hub dataset) or a dataset datasets refuses (e.g. 'Instruction "train" corresponds to no data!', a split
    without rows) is a ValueError naming ``--dataset_name``."""
    try:
        return datasets.load_dataset(name, config_name, **kwargs)
    except FileNotFoundError as error:  # datasets' DatasetNotFoundError and DataFilesNotFoundError among them
        raise ValueError(f"`--dataset_name` {name!r} is neither a local dataset folder nor a Hub dataset: {error}") \
            from None
    except ValueError as error:
        raise ValueError(f"`--dataset_name` {name!r} cannot be read: {error}") from None


def load_dataset_as_written(name: str, config_name: str | None, columns: Mapping[str, Column]) -> datasets.DatasetDict:
    """``--dataset_name``'s splits. A local image folder (datasets' imagefolder) has its metadata.csv / metadata.jsonl
    read as ``read_file`` reads files: every .csv cell is text as written (``007``, ``2.50``, ``NA`` stay so), a JSON
    number in a text column its JSON text, and a missing column or a cell not of its kind in ``columns`` is a
    ValueError naming the file, split, line and column. Any other dataset is ``datasets.load_dataset``'s with its
    text columns cast to strings (its numbers by their value: ``7``), every cell checked by row."""
    builder = datasets.load_dataset_builder(name, config_name) if Path(name).is_dir() else None
    if isinstance(builder, ImageFolder):
        read = [(column_name, column.argument, column.kind.description, column.required)
                for column_name, column in columns.items()]  # a cached reading is of the same columns
        builder = _ImageFolderAsWritten(dataset_name=builder.dataset_name, config_name=builder.config.name,
                                        data_files=builder.config.data_files, base_path=builder.base_path,
                                        hash=Hasher.hash([builder.hash, read]))
        builder.columns = columns
        try:
            builder.download_and_prepare()
        except DatasetGenerationError as error:  # raised while the rows were read: the reader's own ValueError
            if not isinstance(error.__cause__, ValueError):
                raise
            raise error.__cause__ from None
        return builder.as_dataset()
    loaded = load_named_dataset(name, config_name)
    for split, rows in loaded.items():
        source = f"`--dataset_name` {name} split {split!r}"
        check_present(rows.column_names, columns, split, source)
        for column_name, column in columns.items():
            if column.kind is TEXT and column_name in rows.column_names and rows.features[column_name] != \
                    datasets.Value("string"):
                logger.info("%s: column %r holds %s, read as text", source, column_name, rows.features[column_name])
                loaded[split] = rows = rows.cast_column(column_name, datasets.Value("string"))
        check_cells({column_name: rows[column_name] for column_name in columns if column_name in rows.column_names},
                     [f"row {index}" for index in range(len(rows))], columns, source, table=False)
    return loaded


def hold_out_validation(train: datasets.Dataset, most: int, source: str) -> tuple[datasets.Dataset, datasets.Dataset]:
    """(train, validation) for data without a validation split: a tenth of ``train`` (at least 1 row, at most
    ``most``) held out, seed 0. Fewer than 2 rows is a ValueError naming ``source``."""
    if len(train) < 2:
        raise ValueError(f"{source}: the train split has {len(train)} row(s); without a validation split it needs at "
                         "least 2 (one is held out for validation).")
    held_out = train.train_test_split(test_size=max(1, min(most, len(train) // 10)), seed=0)
    return held_out["train"], held_out["test"]


def select_split(raw: datasets.DatasetDict, split: str, limit: int | None, flag: str) -> datasets.Dataset:
    """Split ``split`` (needed by ``flag``), its first ``limit`` rows when given (a stream's too)."""
    if split not in raw:
        raise ValueError(f"{flag} needs a {split} split: give `--{SPLITS[split]}` (or a dataset that has one).")
    if limit is None:
        return raw[split]
    if isinstance(raw[split], datasets.IterableDataset):
        return raw[split].take(limit)
    return raw[split].select(range(min(limit, len(raw[split]))))


def requested_splits(raw: datasets.DatasetDict, data_args: DataFileArguments,
                     training_args) -> dict[str, datasets.Dataset]:
    """The splits the run asks for: "train" (``--do_train``), "eval" (``--do_eval``, the validation split) and
    "predict" (``--do_predict``, the test split), each limited by its ``--max_*_samples``. ``--streaming`` trains
    on a stream, which has no length: it needs ``--do_train`` and ``--max_steps``."""
    if data_args.streaming and not (training_args.do_train and training_args.max_steps > 0):
        raise ValueError(f"`--streaming` reads the training split as it is trained on, and a stream has no length: "
                         f"it needs `--do_train` and `--max_steps` > 0 (got --do_train {training_args.do_train}, "
                         f"--max_steps {training_args.max_steps}).")
    wanted = {"train": ("train", training_args.do_train, data_args.max_train_samples, "--do_train"),
              "eval": ("validation", training_args.do_eval, data_args.max_eval_samples, "--do_eval"),
              "predict": ("test", training_args.do_predict, data_args.max_predict_samples, "--do_predict")}
    return {name: select_split(raw, split, limit, flag)
            for name, (split, requested, limit, flag) in wanted.items() if requested}
