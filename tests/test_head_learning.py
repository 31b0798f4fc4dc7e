"""Learning, end to end through the training scripts on the bundled generated data: the tagger reaches >= 97%
entity F1 (seqeval; measured 99.1%), and the HAN classifier >= 98% accuracy (measured 99.7%) on documents whose label
only the sentence structure reveals, where a bag of words and the flat attention model with the same budget stay near
chance (measured 53.3% and 55-62%). Each threshold sits about 2 points from what one run measured (2026-11, one
thread), on the side that fails a worse model."""

import json
from pathlib import Path

import pytest
from transformers import pipeline

from training import run_classification, run_ner
from training.bag_of_words_baseline import bag_of_words_scores

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


def results(folder: Path) -> dict:
    return json.loads((folder / "all_results.json").read_text())


def test_tagger_learns_the_bundled_ner_data(tmp_path):
    run_ner.main([str(REPO / "training/configs/ner_tagger.json"), "--output_dir", str(tmp_path),
                  "--num_train_epochs", "2", "--num_pictures", "1"])
    scores = results(tmp_path)
    assert scores["predict_f1"] >= 97, scores  # in percent; measured 99.1
    assert scores["predict_PER_f1"] >= 96 and scores["predict_LOC_f1"] >= 96, scores  # measured 98.7 and 99.2
    tag = pipeline("token-classification", model=str(tmp_path), aggregation_strategy="simple")
    # "Jordan" is a person before "flew", a country after "to": the context decides
    entities = [(entity["entity_group"], entity["word"]) for entity in tag("Jordan flew to Jordan on monday .")]
    assert entities == [("PER", "Jordan"), ("LOC", "Jordan")]
    assert (tmp_path / "attention_0.png").is_file() and (tmp_path / "README.md").is_file()


def test_han_learns_what_only_the_sentence_structure_reveals(tmp_path):
    assert bag_of_words_scores()["accuracy"] < 60  # measured 53.3%: word counts say nothing about the label
    budget = ["--num_train_epochs", "4", "--num_pictures", "1"]
    run_classification.main([str(REPO / "training/configs/han_classifier.json"), "--output_dir",
                             str(tmp_path / "han"), *budget])
    assert results(tmp_path / "han")["predict_accuracy"] >= 98, results(tmp_path / "han")  # measured 99.7
    assert (tmp_path / "han" / "attention_0.png").is_file()
    run_classification.main([str(REPO / "training/configs/han_classifier.json"), "--output_dir",
                             str(tmp_path / "flat"), "--hierarchical", "false", *budget])
    assert results(tmp_path / "flat")["predict_accuracy"] < 70, results(tmp_path / "flat")  # measured 55-62%
