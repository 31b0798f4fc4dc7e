"""`evaluate` metrics that also work offline.

    from training.common.metrics import load_metric
    bleu = load_metric("sacrebleu")          # evaluate.EvaluationModule
    bleu.compute(predictions=["2015-03-03"], references=[["2015-03-03"]])["score"]

The modules return what their Hub namesakes return (accuracy, F1, seqeval's scores as fractions; sacreBLEU and chrF
out of 100); the training scripts report every rate in percent, through ``in_percent``.

``load_metric(name)`` prefers the Hub module ``evaluate.load(name)`` when the Hub is allowed
(``HF_HUB_OFFLINE`` / ``HF_EVALUATE_OFFLINE`` unset) and reachable, and otherwise loads the local
module ``training/common/metrics/<name>/<name>.py``: an ``evaluate.Metric`` with the same inputs and outputs
whose scoring is done by the same library (sacrebleu, seqeval, scikit-learn).

Each module is a file that ``evaluate`` loads alone (it copies the one file into its cache, as the Hub's are), so the
modules import nothing from each other or from this package: what two of them share (sacreBLEU's reference streams,
the input features of ``MetricInfo``) is written in each on purpose, the one repetition left in ``training/``.
"""

import logging
from collections.abc import Mapping
from pathlib import Path

import evaluate
from huggingface_hub import constants

logger = logging.getLogger(__name__)

METRICS_DIR = Path(__file__).resolve().parent
LOCAL_METRICS = tuple(sorted(path.name for path in METRICS_DIR.iterdir() if (path / f"{path.name}.py").is_file()))


def in_percent(scores: Mapping[str, float]) -> dict[str, float]:
    """``scores``, fractions (an accuracy of 0.991, an error rate of 0.05), in percent (99.1, 5.0): the one unit of
    every rate the training scripts report, as BLEU and chrF come."""
    return {name: 100 * float(value) for name, value in scores.items()}


def _offline() -> bool:
    return constants.HF_HUB_OFFLINE or evaluate.config.HF_EVALUATE_OFFLINE


def load_metric(name: str, **kwargs) -> evaluate.EvaluationModule:
    """``evaluate.load(name, **kwargs)`` from the Hub when online, else the bundled module of the same name."""
    if name not in LOCAL_METRICS:
        raise ValueError(f"`name` must be one of the bundled metrics {list(LOCAL_METRICS)}, got {name!r}.")
    if not _offline():
        try:
            return evaluate.load(name, **kwargs)
        except (OSError, ConnectionError) as error:  # FileNotFoundError when the Hub cannot be reached
            logger.info("metric %r not loadable from the Hub (%s); using the bundled module", name, error)
    return evaluate.load(str(METRICS_DIR / name / f"{name}.py"), **kwargs)
