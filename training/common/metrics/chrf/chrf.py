"""chrF / chrF++ (Popović, 2015/2017) as an `evaluate` metric: the same inputs and outputs as the Hub's "chrf"."""

import datasets
import evaluate
import sacrebleu

_DESCRIPTION = "Character n-gram F-score (chrF; chrF++ with word_order=2) computed by the sacrebleu library."
_CITATION = """@inproceedings{popovic-2015-chrf,
    title = "chr{F}: character n-gram {F}-score for automatic {MT} evaluation",
    author = "Popovi{\\'c}, Maja",
    booktitle = "Proceedings of the Tenth Workshop on Statistical Machine Translation",
    year = "2015",
    pages = "392--395",
}"""
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the system outputs.
    references (list of list of str, or list of str): one or more references per prediction.
    char_order (6), word_order (0; 2 = chrF++), beta (2), lowercase, whitespace, eps_smoothing: as in sacrebleu.CHRF.
Returns:
    score (0-100), char_order, word_order, beta.
"""


def references_by_stream(references: list) -> list[list[str]]:
    """sacrebleu wants one list per reference stream; every prediction needs the same number of references."""
    references = [[reference] if isinstance(reference, str) else reference for reference in references]
    counts = {len(reference) for reference in references}
    if len(counts) != 1:
        raise ValueError(f"`references` must give every prediction the same number of references, got {counts}.")
    return [list(stream) for stream in zip(*references)]


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Chrf(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({
                    "predictions": datasets.Value("string", id="sequence"),
                    "references": datasets.Sequence(datasets.Value("string", id="sequence"), id="references"),
                }),
                datasets.Features({
                    "predictions": datasets.Value("string", id="sequence"),
                    "references": datasets.Value("string", id="sequence"),
                }),
            ],
            homepage="https://github.com/mjpost/sacreBLEU#chrf--chrf",
            codebase_urls=["https://github.com/mjpost/sacreBLEU"],
        )

    def _compute(self, predictions, references, char_order=6, word_order=0, beta=2, lowercase=False,
                 whitespace=False, eps_smoothing=False):
        chrf = sacrebleu.CHRF(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase,
                              whitespace=whitespace, eps_smoothing=eps_smoothing)
        score = chrf.corpus_score(predictions, references_by_stream(references))
        return {"score": score.score, "char_order": score.char_order, "word_order": score.word_order,
                "beta": score.beta}
