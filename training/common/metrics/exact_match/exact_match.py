"""Exact match as an `evaluate` metric: the same inputs, options and output as the Hub's "exact_match" module."""

import re
import string

import datasets
import evaluate
import numpy as np

_DESCRIPTION = "The fraction of predictions identical to their reference, after the optional normalisations."
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str), references (list of str).
    regexes_to_ignore (list of str): removed from both sides before comparing.
    ignore_case, ignore_punctuation, ignore_numbers (bool): normalisations applied before comparing.
Returns:
    exact_match (0-1).
"""


def normalise(texts: np.ndarray, regexes_to_ignore, ignore_case: bool, ignore_punctuation: bool,
              ignore_numbers: bool) -> np.ndarray:
    for pattern in regexes_to_ignore or ():
        texts = np.array([re.sub(pattern, "", text) for text in texts])
    if ignore_case:
        texts = np.char.lower(texts)
    for characters, ignored in ((string.punctuation, ignore_punctuation), (string.digits, ignore_numbers)):
        if ignored:
            texts = np.char.translate(texts, str.maketrans("", "", characters))
    return texts


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string", id="sequence"),
                "references": datasets.Value("string", id="sequence"),
            }),
        )

    def _compute(self, predictions, references, regexes_to_ignore=None, ignore_case=False,
                 ignore_punctuation=False, ignore_numbers=False):
        options = (regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers)
        predictions = normalise(np.asarray(predictions, dtype=str), *options)
        references = normalise(np.asarray(references, dtype=str), *options)
        return {"exact_match": float(np.mean(predictions == references))}
