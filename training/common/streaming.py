"""``--streaming``: a training split larger than memory, read as it is trained on.

    rows = open_stream(data_args)                     # a datasets.IterableDataset of the columns the script reads
    head = first_rows(rows)                           # its first rows, in memory: train a tokenizer, learn lengths
    train_dataset = TrainingStream(rows.map(tokenize, batched=True), training_args, data_args.shuffle_buffer_size)

The training file (.tsv, .csv or .jsonl: one row at a time, each checked as ``data_files.read_file`` checks a whole
file) or the train split of ``--dataset_name`` (``datasets.load_dataset(..., streaming=True)``) is read line by line;
nothing but a shuffle buffer of ``--shuffle_buffer_size`` examples (and the first ``HEAD_ROWS`` rows, where a task
reads them) is held. The validation and test splits are read into memory (``data_files.load_raw_splits``): they are
small.

``TrainingStream`` gives Trainer an endless stream, pass after pass over the rows, pass k shuffled with the seed
``--data_seed`` (else ``--seed``) and k, so that

- Trainer's own epoch never ends before ``--max_steps`` (a stream has no length), every batch is full, and each row is
  trained on once per pass;
- resuming (``--resume_from_checkpoint``) lands on the right example: Trainer skips the batches the checkpoint has
  trained on (``accelerate.skip_first_batches``: they are read and tokenised again, not trained on), and the stream
  gives them in the same order;
- under DDP every process reads the same stream and trains on its own share of each global batch (accelerate's
  ``IterableDatasetShard``): ``dispatch_batches``, accelerate's default for a stream, is turned off, since it
  concatenates the processes' batches and padded batches differ in length.
"""

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path

import datasets
import torch
from transformers import TrainingArguments

from training.common.data_files import (
    TABLE_FORMATS, TEXT, Column, DataFileArguments, check_cells, check_present, json_line_records, load_named_dataset,
    table_rows,
)

__all__ = ["HEAD_ROWS", "STREAM_FORMATS", "TrainingStream", "first_rows", "open_stream"]

HEAD_ROWS = 10_000  # the rows of a stream that stand for it where a whole split was read (a new tokenizer, lengths)
STREAM_FORMATS = (".csv", ".tsv", ".jsonl")


def open_stream(data_args: DataFileArguments, cache_dir: str | None = None, token: str | None = None,
                trust_remote_code: bool = False) -> datasets.IterableDataset:
    """The training rows of ``--train_file`` or of ``--dataset_name``'s train split as a datasets.IterableDataset of
    the columns the script reads (``data_args.used_columns()``: the required ones, and the optional ones the first
    row has); each row is checked as it is read, and a bad one is a ValueError naming the file, the line (or the
    row) and the column."""
    columns = data_args.used_columns()
    if data_args.dataset_name is not None:
        source = f"`--dataset_name` {data_args.dataset_name}"
        rows = load_named_dataset(data_args.dataset_name, data_args.dataset_config_name, split="train",
                                  streaming=True, cache_dir=cache_dir, token=token,
                                  trust_remote_code=trust_remote_code)
        generate, kwargs = _dataset_rows, {"rows": rows, "source": source, "columns": columns}
    elif data_args.train_file is not None:
        path = Path(data_args.train_file)
        if path.suffix not in STREAM_FORMATS:
            raise ValueError(f"`--streaming` reads `--train_file` line by line: it must end in one of "
                             f"{list(STREAM_FORMATS)}, got {data_args.train_file!r} (write a .json list as .jsonl).")
        if not path.is_file():
            raise ValueError(f"`--train_file` {data_args.train_file!r} does not exist (or is not a file).")
        generate, kwargs = _file_rows, {"path": str(path), "columns": columns}
    else:
        raise ValueError("`--streaming` streams the training split: give `--train_file` or `--dataset_name`.")
    head = list(itertools.islice(generate(**kwargs), HEAD_ROWS))  # its errors now, and the columns' types
    features = datasets.Dataset.from_list(head).features
    return datasets.IterableDataset.from_generator(generate, features=features, gen_kwargs=kwargs)


def first_rows(rows: datasets.IterableDataset, count: int = HEAD_ROWS) -> datasets.Dataset:
    """The first ``count`` rows of a stream, in memory."""
    return datasets.Dataset.from_list(list(rows.take(count)), features=rows.features)


def _file_rows(path: str, columns: Mapping[str, Column]) -> Iterator[dict]:
    """The rows of a .tsv/.csv/.jsonl training file, one at a time, as ``data_files.read_file`` reads them."""
    file, source = Path(path), f"`--train_file` {path}"
    table, texts = file.suffix in TABLE_FORMATS, [name for name, column in columns.items() if column.kind is TEXT]
    with file.open(encoding="utf-8-sig", newline="") as handle:
        try:
            if table:
                rows = table_rows(handle, source, tsv=file.suffix == ".tsv")
                _, names = next(rows, (None, []))
                records = ((place, dict(zip(names, fields))) for place, fields in rows)
            else:
                records = json_line_records(handle, source, texts)
            yield from _checked(records, source, columns, table)
        except UnicodeDecodeError as error:
            raise ValueError(f"{source} is not UTF-8 text ({error}). Save the file as UTF-8.") from None


def _dataset_rows(rows: datasets.IterableDataset, source: str, columns: Mapping[str, Column]) -> Iterator[dict]:
    """The rows of a streamed dataset split, checked one at a time."""
    yield from _checked(((f"row {index}", row) for index, row in enumerate(rows)), source, columns, table=False)


def _checked(records: Iterator[tuple[str, dict]], source: str, columns: Mapping[str, Column],
             table: bool) -> Iterator[dict]:
    """{column: value} of the used columns of each (place, record), checked; the first record says which optional
    columns there are. No record at all is a ValueError naming ``source``."""
    kept = None
    for place, record in records:
        if kept is None:
            check_present(list(record), columns, "train", source)
            kept = [name for name, column in columns.items() if column.required or name in record]
        row = {name: record.get(name) for name in kept}
        check_cells({name: [value] for name, value in row.items()}, [place], columns, source, table)
        yield row
    if kept is None:
        raise ValueError(f"{source} has no rows.")


class TrainingStream(torch.utils.data.IterableDataset):
    """The examples of ``examples`` (a datasets.IterableDataset) pass after pass without end, each pass shuffled in a
    buffer of ``buffer_size`` examples with the run's data seed and the pass's number (``set_epoch``): the same order
    in every run with that seed, so a resumed run skips to the right example. Building it turns off accelerate's
    ``dispatch_batches`` in ``training_args`` (see the module's docstring)."""

    def __init__(self, examples: datasets.IterableDataset, training_args: TrainingArguments,
                 buffer_size: int) -> None:
        if buffer_size < 1:
            raise ValueError(f"`--shuffle_buffer_size` must be a positive number of examples, got {buffer_size}.")
        if training_args.dataloader_num_workers:  # each worker would read the whole stream: every row N times
            raise ValueError(f"`--streaming` reads the training rows in the training process: leave "
                             f"`--dataloader_num_workers` at 0, got {training_args.dataloader_num_workers}.")
        seed = training_args.data_seed if training_args.data_seed is not None else training_args.seed
        self.examples = examples.shuffle(seed=seed, buffer_size=buffer_size)
        training_args.accelerator_config.dispatch_batches = False

    def __iter__(self) -> Iterator[dict]:
        for index in itertools.count():
            self.examples.set_epoch(index)
            empty = True
            for example in self.examples:
                empty = False
                yield example
            if empty:
                raise ValueError("The training stream has no examples (`--max_train_samples` 0?).")
