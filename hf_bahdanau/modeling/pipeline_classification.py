"""transformers' ``text-classification`` and ``token-classification`` pipelines for the classifiers (flat and HAN) and
the tagger, named in their saved ``config.json`` (``custom_pipelines``), so that a folder loads as every other
family's does, offline too:

    classify = pipeline(model="path/or/repo", trust_remote_code=True)
    classify("Bob works at the bakery in Lyon . He likes it .")     # [{"label": "sports", "score": 0.93}]
    tag = pipeline(model="path/or/repo", trust_remote_code=True, aggregation_strategy="simple")

They are transformers' pipelines, whose outputs and options they keep, with an empty list refused by name (transformers'
text-classification pipeline ends it in an ``IndexError``). ``pipeline("text-classification", model=...)`` and
``pipeline("token-classification", model=...)`` still give transformers' own: the tasks are saved under names of their
own (``CLASSIFIER_PIPELINES``, ``TAGGER_PIPELINES``), since a saved task named like transformers' would make those
calls ask for ``trust_remote_code``.
"""

from transformers import TextClassificationPipeline, TokenClassificationPipeline

from .pipeline_inputs import check_batch

__all__ = ["BahdanauTextClassificationPipeline", "BahdanauTokenClassificationPipeline"]


class BahdanauTextClassificationPipeline(TextClassificationPipeline):
    """transformers' text-classification pipeline; an empty list is a ValueError naming ``inputs``."""

    def __call__(self, inputs, **kwargs):
        check_batch(inputs, "inputs", "a text")
        return super().__call__(inputs, **kwargs)


class BahdanauTokenClassificationPipeline(TokenClassificationPipeline):
    """transformers' token-classification pipeline; an empty list is a ValueError naming ``inputs``."""

    def __call__(self, inputs, **kwargs):
        check_batch(inputs, "inputs", "a text")
        return super().__call__(inputs, **kwargs)
