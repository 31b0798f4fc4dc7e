"""The coverage experiment: its data, its dropped/repeated counts by hand, and a tiny run end to end."""

import json

import pytest

from training.coverage_demo import SYMBOLS, dropped_and_repeated, main, make_pairs
from training.length_robustness import LEXICON


def test_pairs_repeat_four_symbols_and_rename_them():
    pairs = make_pairs(30, (25, 40), seed=1)
    assert len(SYMBOLS) == 4 and make_pairs(30, (25, 40), seed=1) == pairs
    for source, target in pairs:
        assert 25 <= len(source.split()) <= 40 and set(source.split()) <= set(SYMBOLS)
        assert target.split() == [LEXICON[symbol] for symbol in source.split()]


def test_dropped_and_repeated_by_hand():
    assert dropped_and_repeated("A C D".split(), "A B C D".split()) == (1, 0)  # B left out
    assert dropped_and_repeated("A B B C".split(), "A B C".split()) == (0, 1)  # B read twice
    assert dropped_and_repeated("A B B B".split(), "A A B C".split()) == (1, 1)  # an A left out; C replaced by B B
    assert dropped_and_repeated("A X C".split(), "A B C".split()) == (0, 0)  # a substitution is neither
    assert dropped_and_repeated([], "A B".split()) == (2, 0)


@pytest.mark.slow
def test_tiny_run_scores_every_model_and_penalty(tmp_path):
    results = main(["--output_dir", str(tmp_path), "--max_steps", "2", "--train_examples", "32", "--test_examples",
                    "6", "--min_length", "4", "--max_length", "8", "--hidden_size", "16", "--embedding_size", "8",
                    "--per_device_train_batch_size", "16", "--num_beams", "2"])
    saved = json.loads((tmp_path / "coverage.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert list(saved["models"]) == ["rnnsearch", "rnnsearch:use_coverage=true,coverage_loss_weight=1.0"]
    for model in saved["models"].values():
        assert list(model["decoding"]) == [f"beam 2, coverage_penalty {beta}" for beta in (0.0, 0.05, 0.2)]
        for scores in model["decoding"].values():
            assert scores["reference_symbols"] >= 6 * 4 and 0 <= scores["exact_match"] <= 100  # %
            assert scores["dropped"] >= 0 and scores["repeated"] >= 0
