"""Accuracy as an `evaluate` metric: the same inputs, options and output as the Hub's "accuracy" module
(scikit-learn's ``accuracy_score``; the "multilabel" configuration compares whole label vectors)."""

import datasets
import evaluate
from sklearn.metrics import accuracy_score

_DESCRIPTION = "The fraction of predictions equal to their reference (for multi-label: all labels equal)."
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of int), references (list of int); lists of 0/1 lists with config_name="multilabel".
    normalize (bool): False returns the number of correct predictions instead of the fraction.
    sample_weight (list of float).
Returns:
    accuracy (0-1, or a count with normalize=False).
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Accuracy(evaluate.Metric):
    def _info(self):
        label = datasets.Value("int32")
        features = datasets.Sequence(label) if self.config_name == "multilabel" else label
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": features, "references": features}),
        )

    def _compute(self, predictions, references, normalize=True, sample_weight=None):
        return {"accuracy": float(accuracy_score(references, predictions, normalize=normalize,
                                                 sample_weight=sample_weight))}
