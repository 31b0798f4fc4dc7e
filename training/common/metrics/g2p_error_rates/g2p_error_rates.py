"""Grapheme-to-phoneme word and phoneme error rates as an `evaluate` metric.

A pronunciation is a string of phonemes separated by whitespace ("F AO1 R B UH2 SH"); a word may have several
accepted pronunciations. Over N words with prediction p_i and references R_i:

    WER = |{i : p_i ∉ R_i}| / N
    PER = Σ_i d(p_i, r*_i) / Σ_i |r*_i|,    r*_i = argmin_{r ∈ R_i} d(p_i, r)

d is the Levenshtein distance over phoneme tokens (substitution, insertion and deletion each cost 1) and |r| the
number of phonemes of r. When several references are equally close, r*_i is the shortest of them (the larger,
more conservative PER). This is the multi-reference convention of G2P papers, e.g. Yao & Zweig (2015),
"Sequence-to-sequence neural net models for grapheme-to-phoneme conversion", which report WER and PER on CMUdict.
Both rates are fractions in [0, 1] (PER may exceed 1 when predictions are much longer than their references).

``edit_distance`` and ``error_rates`` are plain functions that need neither `evaluate` nor `datasets`.
"""

from collections.abc import Hashable, Sequence

import datasets
import evaluate

_DESCRIPTION = "Word error rate (WER) and phoneme error rate (PER) of predicted pronunciations, several references."
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): one predicted pronunciation per word, phonemes separated by whitespace.
    references (list of list of str): every accepted pronunciation of that word (at least one, none blank).
    ignore_stress (bool): strip the stress digits 0/1/2 ending each phoneme ("AO1" -> "AO") on both sides.
Returns:
    wer: fraction of words whose prediction equals none of their references.
    per: Σ min_r edit_distance(prediction, r) / Σ len(closest r), the closest reference being the shortest on ties.
"""
_CITATION = """
@inproceedings{yao2015sequence,
  title={Sequence-to-sequence neural net models for grapheme-to-phoneme conversion},
  author={Yao, Kaisheng and Zweig, Geoffrey},
  booktitle={Interspeech},
  year={2015}
}
"""

STRESS_DIGITS = "012"


def edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Levenshtein distance between two token sequences: the fewest substitutions, insertions and deletions (each
    costing 1) turning ``a`` into ``b``. Dynamic programming over one row, O(len(a)·len(b)) time."""
    if len(a) < len(b):
        a, b = b, a
    row = list(range(len(b) + 1))
    for i, token_a in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, token_b in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (token_a != token_b))
    return row[-1]


def phonemes(pronunciation: str, ignore_stress: bool = False) -> tuple[str, ...]:
    """The phoneme tokens of a whitespace-separated pronunciation, without stress digits if ``ignore_stress``."""
    tokens = pronunciation.split()
    if ignore_stress:
        return tuple(token.rstrip(STRESS_DIGITS) for token in tokens)
    return tuple(tokens)


def _check_inputs(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"`predictions` and `references` must have the same length (one entry per word), got "
                         f"{len(predictions)} predictions and {len(references)} references.")
    if not predictions:
        raise ValueError("`predictions` and `references` are empty: there are no words to score.")
    for index, word_references in enumerate(references):
        if isinstance(word_references, str):
            raise ValueError(f"`references[{index}]` must be a list of pronunciations, got the string "
                             f"{word_references!r}.")
        if not word_references:
            raise ValueError(f"`references[{index}]` is empty: every word needs at least one reference pronunciation.")
        if any(not reference.strip() for reference in word_references):
            raise ValueError(f"`references[{index}]` holds a blank pronunciation: {list(word_references)!r}.")


def error_rates(predictions: Sequence[str], references: Sequence[Sequence[str]],
                ignore_stress: bool = False) -> dict[str, float]:
    """``{"wer": |{i : p_i ∉ R_i}| / N, "per": Σ_i d(p_i, r*_i) / Σ_i |r*_i|}`` with r*_i the reference closest to
    p_i in edit distance d (the shortest of the closest on ties); see the module docstring."""
    _check_inputs(predictions, references)
    wrong_words = errors = reference_phonemes = 0
    for prediction, word_references in zip(predictions, references):
        predicted = phonemes(prediction, ignore_stress)
        candidates = [phonemes(reference, ignore_stress) for reference in word_references]
        if predicted in candidates:
            reference_phonemes += len(predicted)
            continue
        wrong_words += 1
        distance, length = min((edit_distance(predicted, reference), len(reference)) for reference in candidates)
        errors += distance
        reference_phonemes += length
    return {"wer": wrong_words / len(predictions), "per": errors / reference_phonemes}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class G2PErrorRates(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": datasets.Sequence(datasets.Value("string")),
            }),
        )

    def _compute(self, predictions, references, ignore_stress=False):
        return error_rates(predictions, references, ignore_stress=ignore_stress)
