"""sacreBLEU (Post, 2018) as an `evaluate` metric: the same inputs and outputs as the Hub's "sacrebleu" module."""

import datasets
import evaluate
import sacrebleu

_DESCRIPTION = "Corpus BLEU computed by the sacrebleu library, with its standard tokenisation (13a by default)."
_CITATION = """@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}"""
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the system outputs.
    references (list of list of str, or list of str): one or more references per prediction.
    smooth_method, smooth_value, force, lowercase, tokenize, use_effective_order: as in sacrebleu.corpus_bleu.
Returns:
    score (BLEU, 0-100), counts, totals, precisions, bp, sys_len, ref_len.
"""


def references_by_stream(references: list) -> list[list[str]]:
    """sacrebleu wants one list per reference stream; every prediction needs the same number of references."""
    references = [[reference] if isinstance(reference, str) else reference for reference in references]
    counts = {len(reference) for reference in references}
    if len(counts) != 1:
        raise ValueError(f"`references` must give every prediction the same number of references, got {counts}.")
    return [list(stream) for stream in zip(*references)]


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Sacrebleu(evaluate.Metric):
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
            homepage="https://github.com/mjpost/sacreBLEU",
            codebase_urls=["https://github.com/mjpost/sacreBLEU"],
        )

    def _compute(self, predictions, references, smooth_method="exp", smooth_value=None, force=False,
                 lowercase=False, tokenize=None, use_effective_order=False):
        bleu = sacrebleu.corpus_bleu(
            predictions, references_by_stream(references), smooth_method=smooth_method, smooth_value=smooth_value,
            force=force, lowercase=lowercase, use_effective_order=use_effective_order,
            **({} if tokenize is None else {"tokenize": tokenize}),
        )
        return {"score": bleu.score, "counts": bleu.counts, "totals": bleu.totals, "precisions": bleu.precisions,
                "bp": bleu.bp, "sys_len": bleu.sys_len, "ref_len": bleu.ref_len}
