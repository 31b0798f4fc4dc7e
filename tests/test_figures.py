"""training.common.figures: the training curve follows trainer.state.log_history; alignment pictures per sentence."""

import numpy as np
import pytest

from conftest import tiny_model
from training.common.figures import plot_training_curve, save_alignment_pictures
from training.common.tokenization import train_tokenizer

LOG_HISTORY = [
    {"loss": 2.5, "step": 10, "epoch": 0.1}, {"loss": 1.0, "step": 20, "epoch": 0.2},
    {"eval_loss": 0.9, "eval_exact_match": 40.0, "step": 20, "epoch": 0.2},
    {"loss": 0.5, "step": 30, "epoch": 0.3}, {"loss": 0.2, "step": 40, "epoch": 0.4},
    {"eval_loss": 0.3, "eval_exact_match": 95.0, "step": 40, "epoch": 0.4},
    {"train_runtime": 12.0, "train_loss": 1.05, "step": 40, "epoch": 0.4},
]


def test_training_curve_plots_the_logged_losses_and_metric(tmp_path):
    figure = plot_training_curve(LOG_HISTORY, tmp_path / "curve.png", metric="eval_exact_match")
    left, right = figure.axes
    train, evaluation = left.get_lines()
    np.testing.assert_array_equal(train.get_xydata(), [[10, 2.5], [20, 1.0], [30, 0.5], [40, 0.2]])
    np.testing.assert_array_equal(evaluation.get_xydata(), [[20, 0.9], [40, 0.3]])
    np.testing.assert_array_equal(right.get_lines()[0].get_xydata(), [[20, 40.0], [40, 95.0]])
    assert [text.get_text() for text in left.get_legend().get_texts()] == [
        "training loss", "evaluation loss", "eval_exact_match"]
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"


def test_training_curve_without_evaluation_and_without_losses(tmp_path):
    figure = plot_training_curve(LOG_HISTORY[:2], tmp_path / "curve.png", metric="eval_exact_match")
    assert len(figure.axes) == 1 and len(figure.axes[0].get_lines()) == 1
    with pytest.raises(ValueError, match="no training loss"):
        plot_training_curve(LOG_HISTORY[2:3], tmp_path / "none.png")


def test_one_alignment_picture_per_sentence_labelled_with_its_tokens(tmp_path):
    sources = ["le 3 mars 2015", "3/14/15"]
    tokenizer = train_tokenizer(sources + ["2015-03-03"], kind="char")
    model = tiny_model("rnnsearch", vocab_size=len(tokenizer))
    model.generation_config.max_new_tokens = 5
    paths = save_alignment_pictures(model, tokenizer, sources, tmp_path, num_beams=2)
    assert paths == [tmp_path / "alignment_0.png", tmp_path / "alignment_1.png"]
    assert all(path.read_bytes()[:4] == b"\x89PNG" for path in paths)
