"""The length-robustness experiment at a tiny size: both models train, every length bin is scored, the JSON and
the PNG are written."""

import json

import pytest

from training.length_robustness import ExperimentArguments, LEXICON, length_bins, main, make_pairs


@pytest.mark.parametrize("reverse", [False, True])
def test_pairs_are_renamed_sources(reverse):
    pairs = make_pairs(50, (5, 60), seed=3, reverse=reverse)
    assert {len(source.split()) for source, _ in pairs} <= set(range(5, 61))
    assert len({len(source.split()) for source, _ in pairs}) > 20  # a wide spread of lengths
    for source, target in pairs:
        symbols = source.split()[::-1] if reverse else source.split()
        assert target.split() == [LEXICON[symbol] for symbol in symbols]
    assert make_pairs(50, (5, 60), seed=3, reverse=reverse) == pairs  # deterministic


def test_length_bins_cover_the_range():
    assert length_bins(ExperimentArguments(min_length=5, max_length=60, bin_width=10)) == [
        (5, 14), (15, 24), (25, 34), (35, 44), (45, 54), (55, 60)]


@pytest.mark.slow
def test_tiny_experiment_writes_numbers_and_picture(tmp_path):
    results = main(["--output_dir", str(tmp_path), "--max_steps", "3", "--train_examples", "64",
                    "--test_examples_per_bin", "4", "--min_length", "5", "--max_length", "20", "--bin_width", "5",
                    "--hidden_size", "16", "--embedding_size", "8", "--per_device_train_batch_size", "16",
                    "--presets", "rnnsearch", "rnnencdec", "rnnsearch:attention_scope=local-p,local_window=3"])
    saved = json.loads((tmp_path / "length_robustness.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert (tmp_path / "length_robustness.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(saved["models"]) == ["rnnsearch", "rnnencdec", "rnnsearch:attention_scope=local-p,local_window=3"]
    for model in saved["models"].values():
        bins = [tuple(map(int, name.split("-"))) for name in model["by_length"]]
        assert bins == [(5, 9), (10, 14), (15, 19), (20, 20)]  # ascending and contiguous
        for scores in model["by_length"].values():
            assert scores["examples"] == 4
            assert 0 <= scores["exact_match"] <= 100 and 0 <= scores["bleu"] <= 100
        assert model["parameters"] > 0 and model["train_seconds"] > 0
