"""seqeval as an `evaluate` metric: the same inputs, options and output as the Hub's "seqeval" module.

Entity-level precision, recall and F1 (CoNLL evaluation: an entity counts when its type and its span are both
right) per entity type and overall, and token accuracy; the scoring is seqeval's.
"""

import importlib

import datasets
import evaluate
from seqeval.metrics import accuracy_score
from seqeval.metrics import classification_report

_DESCRIPTION = "Entity-level precision, recall and F1 of IOB/BIO-tagged sequences (seqeval), and token accuracy."
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of list of str), references (list of list of str): tags such as "B-PER", "I-PER", "O".
    suffix (bool): tags are "PER-B" rather than "B-PER".
    scheme (str): "IOB1", "IOB2", "IOE1", "IOE2", "IOBES" or "BILOU" for strict mode; None = CoNLL default.
    mode (str): "strict" with a scheme; None = default (lenient) matching.
    sample_weight (list of float), zero_division ("warn", 0 or 1).
Returns:
    for every entity type: {"precision", "recall", "f1", "number"}; overall_precision, overall_recall,
    overall_f1, overall_accuracy (all 0-1).
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Seqeval(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Sequence(datasets.Value("string", id="label"), id="sequence"),
                "references": datasets.Sequence(datasets.Value("string", id="label"), id="sequence"),
            }),
        )

    def _compute(self, predictions, references, suffix=False, scheme=None, mode=None, sample_weight=None,
                 zero_division="warn"):
        if scheme is not None:
            scheme = getattr(importlib.import_module("seqeval.scheme"), scheme)
        report = classification_report(y_true=references, y_pred=predictions, suffix=suffix, output_dict=True,
                                       scheme=scheme, mode=mode, sample_weight=sample_weight,
                                       zero_division=zero_division)
        report.pop("macro avg")
        report.pop("weighted avg")
        overall = report.pop("micro avg")
        scores = {entity: {"precision": float(values["precision"]), "recall": float(values["recall"]),
                           "f1": float(values["f1-score"]), "number": int(values["support"])}
                  for entity, values in report.items()}
        scores["overall_precision"] = float(overall["precision"])
        scores["overall_recall"] = float(overall["recall"])
        scores["overall_f1"] = float(overall["f1-score"])
        scores["overall_accuracy"] = float(accuracy_score(y_true=references, y_pred=predictions))
        return scores
