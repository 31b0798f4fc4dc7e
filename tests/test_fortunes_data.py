"""training/data/make_fortunes.py on a hand-made fortunes folder (no Debian package needed): the texts exactly as
written, what is dropped and why, the split by SHA-256 of the text alone, and bad arguments refused by name."""

import json
from pathlib import Path

import pytest

from conftest import exits_as_argparse_does
from training.data.make_fortunes import main, read_texts, split_of

SPLITS = ("train", "validation", "test")
# SHA-256 of each text's UTF-8 bytes mod 100 (80 / 10 / 10: < 80 train, < 90 validation, else test), computed with
# `int(hashlib.sha256(text.encode()).hexdigest(), 16) % 100` outside the module:
BUCKETS = {"A cat.\n\t-- me": 38, "Dogs bark.": 75, "Bees buzz.": 81, "Fish swim.": 99, "E = mc^2": 20,
           "Atoms.\n\n  Mostly empty.": 46, "Café au lait.": 53, "Lasers.": 77, "Percent:\n%%\n 50%": 29}
ANIMALS = (b"A cat.\n\t-- me\n%\nDogs bark.\n%\n   \n%\nCaf\xe9 au lait.\n%\nDogs bark.\n%\nBees buzz.\n%\n"
           b"Shared wisdom.\n%\nFish swim.\n")  # a blank text, a Latin-1 byte, a repeat; no "%" after the last text
SCIENCE = ("E = mc^2\n%\nAtoms.\n\n  Mostly empty.\n%\nShared wisdom.\n%\nCafé au lait.\n%\n%\nLasers.\n%\n"
           "Percent:\n%%\n 50%\n%\n").encode()  # an empty text between two "%" lines; "%%" is not a separator
EXPECTED = {"animals": ["A cat.\n\t-- me", "Dogs bark.", "Bees buzz.", "Fish swim."],
            "science": ["E = mc^2", "Atoms.\n\n  Mostly empty.", "Café au lait.", "Lasers.", "Percent:\n%%\n 50%"]}


def fortunes_folder(folder: Path, extra: dict[str, bytes] | None = None) -> Path:
    folder.mkdir()
    for name, data in {"animals": ANIMALS, "science": SCIENCE, "tiny": b"Lonely text.\n%\n",
                       "animals.dat": b"\x00\x00\x00\x02 strfile index", **(extra or {})}.items():
        (folder / name).write_bytes(data)
    (folder / "animals.u8").symlink_to("animals")  # Debian's UTF-8 links: the same file again, skipped
    (folder / "off").mkdir()
    (folder / "off" / "rude").write_bytes(b"Not read.\n%\n")  # subfolders are not read
    return folder


def written(output: Path) -> dict[str, list[dict]]:
    return {split: [json.loads(line) for line in (output / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]
            for split in SPLITS}


def test_read_texts_keeps_each_text_as_written_between_percent_lines():
    assert read_texts(b"one\n%\ntwo\n  indented\n%\n\n%\n") == (["one", "two\n  indented"], 0)
    assert read_texts(b"last without a separator") == (["last without a separator"], 0)
    assert read_texts(b"50%\n %\n%%\n% \n%\nnext\n") == (["50%\n %\n%%\n% ", "next"], 0)  # only "%" alone splits
    assert read_texts(b"caf\xc3\xa9\n%\ncaf\xe9\n%\n") == (["café"], 1)  # the Latin-1 text is dropped and counted


def test_split_of_reads_the_hash_of_the_text_alone():
    bounds = {"train": range(0, 80), "validation": range(80, 90), "test": range(90, 100)}
    for text, bucket in BUCKETS.items():
        assert bucket in bounds[split_of(text)]
    assert split_of("Bees buzz.", validation_percent=1, test_percent=1) == "train"  # bucket 81 < 98
    assert split_of("Dogs bark.", validation_percent=30, test_percent=10) == "validation"  # 60 <= 75 < 90


def test_exact_records_and_what_was_dropped(tmp_path):
    output = tmp_path / "out"
    report = main(["--fortunes_dir", str(fortunes_folder(tmp_path / "fortunes")), "--output_dir", str(output),
                   "--min_texts", "2"])
    rows = written(output)
    split = {text: "train" if bucket < 80 else "validation" if bucket < 90 else "test"
             for text, bucket in BUCKETS.items()}
    expected = {name: sorted(({"text": text, "label": label} for label, texts in EXPECTED.items() for text in texts
                              if split[text] == name), key=lambda row: row["text"]) for name in SPLITS}
    assert {name: sorted(rows[name], key=lambda row: row["text"]) for name in SPLITS} == expected
    assert [len(rows[name]) for name in SPLITS] == [7, 1, 1]
    assert report["counts"] == {"animals": {"train": 2, "validation": 1, "test": 1},
                                "science": {"train": 5, "validation": 0, "test": 0}}
    assert report["dropped"] == {"not UTF-8": {"animals": 1}, "repeated in its file": {"animals": 1},
                                 "in several categories": {"animals": 1, "science": 1},
                                 "in a category below --min_texts": {"tiny": 1}}


def test_the_split_is_stable_and_does_not_depend_on_the_other_texts(tmp_path):
    first, again, more = (tmp_path / name for name in ("first", "again", "more"))
    main(["--fortunes_dir", str(fortunes_folder(tmp_path / "a")), "--output_dir", str(first), "--min_texts", "2"])
    main(["--fortunes_dir", str(tmp_path / "a"), "--output_dir", str(again), "--min_texts", "2"])
    assert all((first / f"{name}.jsonl").read_bytes() == (again / f"{name}.jsonl").read_bytes() for name in SPLITS)
    extra = {"zoo": b"Ducks quack.\n%\nHorses neigh.\n%\nComets.\n", "science": SCIENCE + b"Ions.\n%\nGold.\n"}
    main(["--fortunes_dir", str(fortunes_folder(tmp_path / "b", extra)), "--output_dir", str(more),
          "--min_texts", "2"])
    split_before = {row["text"]: name for name, rows in written(first).items() for row in rows}
    split_after = {row["text"]: name for name, rows in written(more).items() for row in rows}
    assert len(split_after) == len(split_before) + 5
    assert {text: split_after[text] for text in split_before} == split_before


@pytest.mark.parametrize("arguments, message", [
    (["--min_texts", "0"], "`--min_texts` must be at least 1, got 0"),
    (["--min_texts", "5"], "`--min_texts` 5 keeps 1 category of"),  # animals has 4 texts left, science 5
    (["--validation_percent", "0"], "`--validation_percent` must be between 1 and 98, got 0"),
    (["--test_percent", "99"], "`--test_percent` must be between 1 and 98, got 99"),
    (["--validation_percent", "50", "--test_percent", "50"], "must leave a training share, got 50 \\+ 50"),
])
def test_bad_arguments_are_refused_by_name(tmp_path, arguments, message):
    folder = fortunes_folder(tmp_path / "fortunes")
    with pytest.raises(ValueError, match=message):
        main(["--fortunes_dir", str(folder), "--output_dir", str(tmp_path / "out"), *arguments])
    assert not (tmp_path / "out").exists()


def test_a_missing_or_empty_fortunes_dir_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="`--fortunes_dir` must be a folder .* apt-get install fortunes"):
        main(["--fortunes_dir", str(tmp_path / "absent"), "--output_dir", str(tmp_path / "out")])
    (tmp_path / "only-indexes").mkdir()
    (tmp_path / "only-indexes" / "art.dat").write_bytes(b"\x00")
    with pytest.raises(ValueError, match="`--fortunes_dir` .*only-indexes' holds no fortune files"):
        main(["--fortunes_dir", str(tmp_path / "only-indexes"), "--output_dir", str(tmp_path / "out")])


def test_the_bag_of_words_baseline_reads_any_data_dir(tmp_path, capsys):
    """The baseline on a folder of its own, in percent: a word that names the label gives accuracy and macro-F1
    100; a test document of the wrong class costs its share (accuracy 3/4; macro-F1 of the two classes' F1 2/3 and
    4/5)."""
    from training.bag_of_words_baseline import bag_of_words_scores, main as baseline_main

    def write(split: str, rows: list[tuple[str, str]]) -> None:
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps({"text": text, "label": label}) + "\n"
                                                         for text, label in rows))

    write("train", [("cats purr", "cat"), ("a cat sat", "cat"), ("dogs bark", "dog"), ("a dog ran", "dog")] * 5)
    write("test", [("purr purr", "cat"), ("bark", "dog"), ("bark bark", "dog"), ("ran ran", "dog")])
    assert bag_of_words_scores(tmp_path) == {"accuracy": 100.0, "macro_f1": 100.0}
    write("test", [("purr purr", "cat"), ("bark", "dog"), ("bark bark", "dog"), ("purr", "dog")])
    scores = bag_of_words_scores(tmp_path)
    assert scores["accuracy"] == 75 and abs(scores["macro_f1"] - 100 * (2 / 3 + 4 / 5) / 2) < 1e-10
    (tmp_path / "test.jsonl").unlink()
    with pytest.raises(ValueError, match=r"`data_dir` .* has no test.jsonl"):
        bag_of_words_scores(tmp_path)
    error = exits_as_argparse_does(lambda: baseline_main(["--data_dir", str(tmp_path)]), "data_dir", capsys)
    assert f"error: `data_dir` {str(tmp_path)!r} has no test.jsonl: give a folder with train.jsonl and " in error
