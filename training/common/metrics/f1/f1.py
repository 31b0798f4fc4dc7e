"""F1 as an `evaluate` metric: the same inputs, options and output as the Hub's "f1" module
(scikit-learn's ``f1_score``; the "multilabel" configuration takes 0/1 label vectors)."""

import datasets
import evaluate
import numpy as np
from sklearn.metrics import f1_score

_DESCRIPTION = "F1 = 2 precision recall / (precision + recall), binary or averaged over classes."
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of int), references (list of int); lists of 0/1 lists with config_name="multilabel".
    labels (list of int): the classes to include (and their order for average=None).
    pos_label (int): the positive class for average="binary".
    average (str): "binary", "micro", "macro", "weighted", "samples" or None (one score per class).
    sample_weight (list of float).
Returns:
    f1 (0-1; a list per class with average=None).
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class F1(evaluate.Metric):
    def _info(self):
        label = datasets.Value("int32")
        features = datasets.Sequence(label) if self.config_name == "multilabel" else label
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": features, "references": features}),
        )

    def _compute(self, predictions, references, labels=None, pos_label=1, average="binary", sample_weight=None):
        score = f1_score(references, predictions, labels=labels, pos_label=pos_label, average=average,
                         sample_weight=sample_weight)
        return {"f1": float(score) if np.ndim(score) == 0 else np.asarray(score).tolist()}
