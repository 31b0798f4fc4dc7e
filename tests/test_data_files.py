"""training/common/data_files.py: every data row of a file is read, exactly as written, or the error names the argument, the
file, the line (or JSON record) and the column; the four training scripts share it."""

import json
import logging
from functools import partial

import datasets
import pytest

from training.common.data_files import TEXT, Column, load_raw_splits, read_file
from training.tasks.classification import ClassificationDataArguments
from training.tasks.tagging import NerDataArguments
from training.tasks.pointer import PointerDataArguments
from training.tasks.seq2seq import DataTrainingArguments

COLUMNS = {"source": Column("source_column", TEXT), "target": Column("target_column", TEXT)}
# CMUdict-like rows that datasets' csv reader turned into missing values, booleans and numbers, or merged (the quotes)
# (and a backslash, a line separator inside a text, spaces around one)
TRICKY_SOURCES = ["nan", "null", "NA", "None", "N/A", "n/a", "true", "false", "007", '"quote', '"unquote', "a\\tb",
                  "x\u2028y", " padded "]
TRICKY_TSV = "source\ttarget\tflag\n" + "".join(f"{word}\tT {index}\t{'true' if index % 2 else 'false'}\n"
                                                for index, word in enumerate(TRICKY_SOURCES))


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def test_a_tsv_is_read_exactly_as_written_row_for_row(tmp_path):
    rows = read_file(write(tmp_path, "train.tsv", TRICKY_TSV), "train_file", COLUMNS)
    assert len(rows) == len(TRICKY_SOURCES)
    assert rows["source"] == TRICKY_SOURCES
    assert rows["target"] == [f"T {index}" for index in range(len(TRICKY_SOURCES))]
    assert rows["flag"] == ["false", "true"] * (len(TRICKY_SOURCES) // 2)  # text, not booleans
    assert {feature.dtype for feature in rows.features.values()} == {"string"}


def test_crlf_line_ends_a_byte_order_mark_and_blank_lines_are_not_data(tmp_path):
    text = "\ufeffsource\ttarget\r\nNA\t007\r\n\r\n\"x\t\"y\"\r\n"
    rows = read_file(write(tmp_path, "train.tsv", text), "train_file", COLUMNS)
    assert rows.to_list() == [{"source": "NA", "target": "007"}, {"source": '"x', "target": '"y"'}]


def test_a_csv_keeps_csv_quoting_and_its_values_as_text(tmp_path):
    text = 'source,target\n"one, two","say ""hi"""\nnan,007\n"two\nlines",true\n'
    rows = read_file(write(tmp_path, "train.csv", text), "train_file", COLUMNS)
    assert rows.to_list() == [{"source": "one, two", "target": 'say "hi"'}, {"source": "nan", "target": "007"},
                              {"source": "two\nlines", "target": "true"}]


BAD_TABLES = {
    "an extra tab": ("source\ttarget\nok\tfine\nJ\tR\tJ AH0 N IY0 AO2 R\n", "train.tsv",
                     "line 3 has 3 field(s) but the header (line 1) has 2: ['source', 'target']; after column 'target' "
                     "come ['J AH0 N IY0 AO2 R']"),
    "a missing field": ("source\ttarget\nok\tfine\n\nalone\n", "train.tsv",
                        "line 4 has 1 field(s) but the header (line 1) has 2: ['source', 'target']; no field for "
                        "column(s) ['target']"),
    "a duplicate header": ("source\ttarget\tsource\na\tb\tc\n", "train.tsv",
                           "line 1: column 'source' appears more than once in the header"),
    "an empty header name": ("source,,target\na,b,c\n", "train.csv", "line 1: field 2 of the header"),
    "an empty cell": ("source,target\na,b\nc,\n", "train.csv",
                      "line 3, column 'target' (`--target_column`): the cell is empty"),
    "an unclosed csv quote": ('source,target\na,b\n"c,d\ne,f\n', "train.csv", "line 3: unexpected end of data"),
    "a missing column": ("source\tgold\na\tb\n", "train.tsv",
                         "`--target_column` 'target' is not a column of the train data; its columns are ['source', "
                         "'gold']"),
}


BAD_JSON = {
    "a null in JSON lines": ('{"source": "a", "target": "b"}\n\n{"source": "c", "target": null}\n', "train.jsonl",
                             "line 3, column 'target' (`--target_column`): the cell is missing (null, or no such key)"),
    "a missing key in a JSON list": ('[{"source": "a", "target": "b"}, {"source": "c"}]', "train.json",
                                     "record index 1, column 'target' (`--target_column`): the cell is missing "
                                     "(null, or no such key)"),
    "a boolean for a text": ('{"source": true, "target": "b"}\n', "train.jsonl",
                             "line 1, column 'source' (`--source_column`): the cell holds the bool True; it must be a "
                             "non-empty string"),
    "a line that is not an object": ('{"source": "a", "target": "b"}\n["c", "d"]\n', "train.jsonl",
                                     "line 2 is the list ['c', 'd'], not a JSON object"),
    "broken JSON lines": ('{"source": "a", "target": "b"}\n{"source": "c",\n', "train.jsonl",
                          "line 2 is not valid JSON"),
}


@pytest.mark.parametrize("text, name, message", [*BAD_TABLES.values(), *BAD_JSON.values()],
                         ids=[*BAD_TABLES.keys(), *BAD_JSON.keys()])
def test_a_row_or_cell_the_script_cannot_use_is_an_error_naming_file_line_and_column(tmp_path, text, name, message):
    path = write(tmp_path, name, text)
    with pytest.raises(ValueError) as error:
        read_file(path, "train_file", COLUMNS)
    assert str(error.value).startswith(f"`--train_file` {path} ") or f"(`--train_file` {path})" in str(error.value)
    assert message in str(error.value)


@pytest.mark.parametrize("name, text", [
    ("train.jsonl", '{"source": 2.50, "target": "two", "n": 1.50}\n{"source": "x", "target": -0, "n": 2}\n'),
    ("train.json", '[{"source": 2.50, "target": "two", "n": 1.50}, {"source": "x", "target": -0, "n": 2}]'),
])
def test_a_number_in_a_text_column_is_its_json_text_and_other_columns_keep_their_numbers(tmp_path, name, text):
    """A text column mixing numbers and words used to be refused (or fail in pyarrow); its numbers are read as
    written."""
    dataset = read_file(write(tmp_path, name, text), "train_file", COLUMNS)
    assert dataset["source"] == ["2.50", "x"] and dataset["target"] == ["two", "-0"]
    assert dataset["n"] == [1.5, 2.0]


def test_json_lines_keep_their_types_and_rows_whose_keys_differ(tmp_path):
    text = '{"source": "a", "target": "2015-03-03", "n": 1}\n{"source": "b\u2028c", "target": "NA", "note": "x"}\n'
    rows = read_file(write(tmp_path, "train.jsonl", text), "train_file", COLUMNS)
    assert rows.to_list() == [{"source": "a", "target": "2015-03-03", "n": 1, "note": None},
                              {"source": "b\u2028c", "target": "NA", "n": None, "note": "x"}]


SCRIPT_COLUMNS = {  # each script's data arguments, a file it cannot use, and the error
    "seq2seq references": (DataTrainingArguments, "test.tsv", "source\ttarget\treferences\na\tb\tb\n",
                           "line 2, column 'references': the cell holds the str 'b' (a .csv/.tsv cell is text"),
    "ner words in a csv": (NerDataArguments, "test.csv", "tokens,ner_tags\nEU rejects,B-ORG O\n",
                           "line 2, column 'tokens' (`--text_column_name`): the cell holds the str 'EU rejects'"),
    "ner null tag": (NerDataArguments, "test.jsonl", '{"tokens": ["EU"], "ner_tags": [null]}\n',
                     "line 1, column 'ner_tags' (`--label_column_name`): the cell holds the list [None]"),
    "classification label": (ClassificationDataArguments, "test.tsv", "text\tlabel\ngood film\t\n",
                             "line 2, column 'label' (`--label_column_name`): the cell is empty"),
    "regression NaN": (partial(ClassificationDataArguments, do_regression=True), "test.csv",
                       "text,label\ngood film,4.5\nbad film,nan\n",
                       "line 3, column 'label' (`--label_column_name`): the cell holds the str 'nan' (a .csv/.tsv "
                       "cell is text: give lists, dicts and numbers in a .json/.jsonl file); it must be a finite "
                       "number"),
    "pointer labels": (PointerDataArguments, "test.jsonl",
                       '{"input_features": [[0.5], [0.1]], "labels": [2, 1, 0]}\n'
                       '{"input_features": [[0.5], [0.1]], "labels": [2.0, 1, 0]}\n',
                       "line 2, column 'labels': the cell holds the list [2.0, 1, 0]; it must be a list of integer"),
}


@pytest.mark.parametrize("arguments, name, text, message", SCRIPT_COLUMNS.values(), ids=SCRIPT_COLUMNS.keys())
def test_each_script_names_the_columns_it_reads_and_their_kind(tmp_path, arguments, name, text, message):
    data_args = arguments(test_file=write(tmp_path, name, text))
    with pytest.raises(ValueError) as error:
        load_raw_splits(data_args)
    assert message in str(error.value) and f"`--test_file` {tmp_path / name} " in str(error.value)


def test_labels_stay_text_and_the_rows_read_per_split_are_logged(tmp_path, caplog):
    data_args = ClassificationDataArguments(train_file=write(tmp_path, "train.csv", "text,label\na,4.5\nb,007\n"),
                                            test_file=write(tmp_path, "test.tsv", TRICKY_TSV.replace("source", "text")
                                                            .replace("target", "label")))
    with caplog.at_level(logging.INFO, logger="training.common.data_files"):
        raw = load_raw_splits(data_args)
    assert raw["train"]["label"] == ["4.5", "007"]
    assert {record.levelname for record in caplog.records} == {"INFO"}
    assert [record.getMessage() for record in caplog.records] == [
        f"Read 2 train rows from `--train_file` {tmp_path / 'train.csv'}",
        f"Read {len(TRICKY_SOURCES)} test rows from `--test_file` {tmp_path / 'test.tsv'}"]


def test_a_hub_dataset_must_have_the_columns_and_its_rows_read_are_logged(monkeypatch, caplog):
    hub = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"input_features": [[[0.5]]], "labels": [[1, 0]]}),
                                "test": datasets.Dataset.from_dict({"input_features": [[[0.5]]]})})
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: hub)
    with pytest.raises(ValueError, match="^'labels' is not a column of the test data; its columns are "
                                         "\\['input_features'\\] \\(`--dataset_name` someone/points\\)"):
        load_raw_splits(PointerDataArguments(dataset_name="someone/points"))
    hub["test"] = hub["train"]
    with caplog.at_level(logging.INFO, logger="training.common.data_files"):
        assert load_raw_splits(PointerDataArguments(dataset_name="someone/points")) is hub
    assert [record.getMessage() for record in caplog.records] == [
        f"Read 1 {split} rows from `--dataset_name` someone/points" for split in ("train", "test")]


def test_run_seq2seq_trains_and_predicts_every_row_of_a_tsv_of_tricky_words(tmp_path, one_thread, caplog):
    """The words that used to become missing values (a TypeError in tokenizer training) or merged rows (3 of 5
    predictions) give one prediction per test row."""
    from training.run_seq2seq import main

    path = write(tmp_path, "words.tsv", TRICKY_TSV)
    output_dir = tmp_path / "model"
    main(["--preset", "rnnsearch", "--config_overrides", "embedding_size=8,hidden_size=16,attention_size=8",
          "--tokenizer_type", "char", "--train_file", path, "--test_file", path, "--do_train", "--do_predict",
          "--predict_with_generate", "--max_steps", "2", "--per_device_train_batch_size", "8",
          "--per_device_eval_batch_size", "8", "--max_new_tokens", "4", "--save_strategy", "no", "--report_to", "none",
          "--output_dir", str(output_dir), "--num_pictures", "0", "--log_level", "info"])
    results = json.loads((output_dir / "all_results.json").read_text())
    assert results["predict_samples"] == len(TRICKY_SOURCES)
    assert (output_dir / "generated_predictions.txt").read_text().count("\n") == len(TRICKY_SOURCES)
    assert [record.getMessage() for record in caplog.records if record.name == "training.common.data_files"] == [
        f"Read {len(TRICKY_SOURCES)} {split} rows from `--{split}_file` {path}" for split in ("train", "test")]


def test_a_hub_dataset_s_text_columns_are_cast_to_strings_and_a_missing_text_is_named(monkeypatch):
    """load_dataset_as_written on a dataset that is not a local image folder: numbers in a text column become their
    text, a missing one is named by split, row and column."""
    from training.common.data_files import load_dataset_as_written

    hub = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"question": ["how many?", "how many?"],
                                                                     "answer": [2, 7], "score": [1, 2]})})
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: hub)
    columns = {"question": Column("question_column", TEXT), "answer": Column("answer_column", TEXT)}
    loaded = load_dataset_as_written("someone/vqa", None, columns)
    assert list(loaded["train"]["answer"]) == ["2", "7"] and list(loaded["train"]["score"]) == [1, 2]
    hub["train"] = datasets.Dataset.from_dict({"question": ["how many?", None], "answer": ["2", "7"]})
    with pytest.raises(ValueError) as error:
        load_dataset_as_written("someone/vqa", None, columns)
    assert str(error.value) == ("`--dataset_name` someone/vqa split 'train' row 1, column 'question' "
                                "(`--question_column`): the cell is missing (null, or no such key); it must be a "
                                "non-empty string.")
