"""training.common.metrics: the bundled evaluate modules give the scoring library's numbers, offline."""

import pytest
import sacrebleu

from training.common.metrics import load_metric

PREDICTIONS = ["2015-03-03", "1998-06-14", "the cat sat on the mat"]
REFERENCES = ["2015-03-03", "1998-06-04", "the cat is on the mat"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)


def test_sacrebleu_equals_the_library_with_one_or_several_references():
    metric = load_metric("sacrebleu")
    expected = sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES])
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES)
    assert result["score"] == pytest.approx(expected.score) and 0 < result["score"] < 100
    assert (result["counts"], result["sys_len"], result["ref_len"]) == (expected.counts, expected.sys_len,
                                                                       expected.ref_len)
    second = ["2015-03-03", "1998-06-14", "a cat sat on the mat"]
    both = metric.compute(predictions=PREDICTIONS, references=[list(pair) for pair in zip(REFERENCES, second)])
    assert both["score"] == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES, second]).score)
    with pytest.raises(ValueError, match="same number of references"):
        metric.compute(predictions=PREDICTIONS[:2], references=[["a"], ["b", "c"]])


def test_chrf_equals_the_library():
    result = load_metric("chrf").compute(predictions=PREDICTIONS, references=[[r] for r in REFERENCES])
    assert result["score"] == pytest.approx(sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES]).score)
    assert (result["char_order"], result["word_order"], result["beta"]) == (6, 0, 2)
    plus = load_metric("chrf").compute(predictions=PREDICTIONS, references=REFERENCES, word_order=2)
    assert plus["score"] == pytest.approx(sacrebleu.CHRF(word_order=2).corpus_score(PREDICTIONS, [REFERENCES]).score)


def test_exact_match_counts_identical_strings_and_normalises_on_request():
    metric = load_metric("exact_match")
    assert metric.compute(predictions=PREDICTIONS, references=REFERENCES)["exact_match"] == pytest.approx(1 / 3)
    assert metric.compute(predictions=["A-1", "b"], references=["a 1", "b"])["exact_match"] == 0.5
    assert metric.compute(predictions=["A-1", "b"], references=["a1", "b"], ignore_case=True,
                          ignore_punctuation=True)["exact_match"] == 1.0
    assert metric.compute(predictions=["x 12"], references=["x 9"], ignore_numbers=True)["exact_match"] == 1.0
    assert metric.compute(predictions=["x (a)"], references=["x"], regexes_to_ignore=[r" \(.*\)"])["exact_match"] == 1


def test_unknown_metric_names_are_rejected():
    with pytest.raises(ValueError, match="`name` must be one of the bundled metrics"):
        load_metric("rouge-x")
