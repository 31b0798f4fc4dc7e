"""training/common/metrics/g2p_error_rates: WER and PER against hand-computed cases, through the pure function and the
bundled `evaluate` module (loaded offline), which must agree.

WER = wrong words / words; PER = Σ d(prediction, closest reference) / Σ len(closest reference), the shortest of the
closest references on ties.
"""

import itertools

import pytest

from training.common.metrics import load_metric
from training.common.metrics.g2p_error_rates.g2p_error_rates import edit_distance, error_rates


@pytest.fixture(scope="module")
def metric():
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
        yield load_metric("g2p_error_rates")


# (predictions, references, options, wer, per)
CASES = {
    "identical": (["F AO1 R B UH2 SH"], [["F AO1 R B UH2 SH"]], {}, 0.0, 0.0),
    # AE -> AA: 1 wrong word of 1; 1 edit / 3 reference phonemes
    "substitution": (["K AA T"], [["K AE T"]], {}, 1.0, 1 / 3),
    # S inserted: 1 / 1; 1 edit / 3
    "insertion": (["K AE T S"], [["K AE T"]], {}, 1.0, 1 / 3),
    # AE deleted: 1 / 1; 1 edit / 3
    "deletion": (["K T"], [["K AE T"]], {}, 1.0, 1 / 3),
    # nothing predicted: 1 / 1; 3 insertions / 3
    "empty prediction": (["  "], [["K AE T"]], {}, 1.0, 3 / 3),
    # equals the second reference: 0 / 1; 0 edits / 6
    "matches the second reference": (["T AH0 M EY1 T OW2"], [["T AH0 M AA1 T OW2", "T AH0 M EY1 T OW2"]], {},
                                     0.0, 0.0),
    # d(K AE T S, D AO G) = 3 substitutions + 1 deletion = 4; d(K AE T S, K AE T S IH Z) = 2 insertions:
    # the closest is the second, of 6 phonemes: PER = 2 / 6 (not 4 / 3 from the first)
    "closest reference is the second and longer": (["K AE T S"], [["D AO G", "K AE T S IH Z"]], {}, 1.0, 2 / 6),
    # d(K AE T, K AE T S) = 1 = d(K AE T, K AE): the tie goes to the shorter, PER = 1 / 2 (not 1 / 4)
    "tie goes to the shorter reference": (["K AE T"], [["K AE T S", "K AE"]], {}, 1.0, 1 / 2),
    "tie goes to the shorter reference, either order": (["K AE T"], [["K AE", "K AE T S"]], {}, 1.0, 1 / 2),
    # the same phonemes once split on whitespace: 0 / 1; 0 / 3
    "whitespace ignored": ([" K  AE\tT "], [["K   AE T"]], {}, 0.0, 0.0),
    # AO1 -> AO0 and UH2 -> UH1: 1 / 1; 2 edits / 6
    "stress counted": (["F AO1 R B UH2 SH"], [["F AO0 R B UH1 SH"]], {}, 1.0, 2 / 6),
    "stress ignored": (["F AO1 R B UH2 SH"], [["F AO0 R B UH1 SH"]], {"ignore_stress": True}, 0.0, 0.0),
    # ignore_stress strips stress digits only: AO -> AA still counts, 1 / 1; 1 edit / 6
    "stress ignored, phoneme still wrong": (["F AA1 R B UH2 SH"], [["F AO0 R B UH1 SH"]], {"ignore_stress": True},
                                            1.0, 1 / 6),
    # word                 right?  edits  closest reference length
    # K AE T               yes     0      3
    # D AO G (2nd ref)     yes     0      3
    # B ER D Z             no      1      3   (Z inserted)
    # "" (empty)           no      3      3   (3 insertions)
    # M AY S IH Z IH       no      1      5   (vs M AY S IH Z: 1 deletion; vs M AW S: 1 sub + 3 = 4)
    # WER = 3 / 5; PER = (0 + 0 + 1 + 3 + 1) / (3 + 3 + 3 + 3 + 5) = 5 / 17
    "mixed batch": (["K AE T", "D AO G", "B ER D Z", "", "M AY S IH Z IH"],
                    [["K AE T"], ["D AA G", "D AO G"], ["B ER D"], ["F IH SH"], ["M AW S", "M AY S IH Z"]], {},
                    3 / 5, 5 / 17),
}


@pytest.mark.parametrize("case", CASES)
def test_error_rates_match_the_hand_computed_values_through_both_entry_points(metric, case):
    predictions, references, options, wer, per = CASES[case]
    expected = {"wer": pytest.approx(wer), "per": pytest.approx(per)}
    direct = error_rates(predictions, references, **options)
    assert direct == expected
    assert metric.compute(predictions=predictions, references=references, **options) == direct


# (a, b, distance), computed by hand
KNOWN_DISTANCES = [
    ("kitten", "sitting", 3),  # k -> s, e -> i, + g
    ("flaw", "lawn", 2),  # - f, + n
    ("intention", "execution", 5),  # - i, n -> e, t -> x, + c, n -> u
    ("saturday", "sunday", 3),  # - a, - t, r -> n
    ("", "abc", 3),  # 3 insertions
    ("abc", "abc", 0),
    ("", "", 0),
]


@pytest.mark.parametrize("a, b, distance", KNOWN_DISTANCES)
def test_edit_distance_of_known_pairs_in_both_directions(a, b, distance):
    assert edit_distance(list(a), list(b)) == distance
    assert edit_distance(list(b), list(a)) == distance


def test_edit_distance_is_symmetric_and_works_on_phoneme_tokens():
    words = ["F AO1 R", "F AO R B", "B UH2 SH", "", "SH UH2 B F"]
    for first, second in itertools.product(words, repeat=2):
        assert edit_distance(first.split(), second.split()) == edit_distance(second.split(), first.split())
    assert edit_distance("F AO1 R B UH2 SH".split(), "F AO1 R B UH1 SH".split()) == 1  # UH2 -> UH1


BAD_INPUTS = {
    "a word without references": (["K AE T"], [[]], r"`references\[0\]` is empty"),
    "a blank reference": (["K AE T", "D AO G"], [["K AE T"], ["D AO G", "  "]], r"`references\[1\]` holds a blank"),
    "more predictions than references": (["K AE T", "D AO G"], [["K AE T"]], "predictions.*references"),
    "more references than predictions": (["K AE T"], [["K AE T"], ["D AO G"]], "predictions.*references"),
    "no words": ([], [], "`predictions` and `references` are empty"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_a_value_error_naming_the_argument(metric, case):
    predictions, references, message = BAD_INPUTS[case]
    with pytest.raises(ValueError, match=message):
        error_rates(predictions, references)
    with pytest.raises(ValueError, match=message):
        metric.compute(predictions=predictions, references=references)
