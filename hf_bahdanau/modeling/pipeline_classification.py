"""transformers' ``text-classification`` and ``token-classification`` pipelines for the classifiers (flat and HAN) and
the tagger, named in their saved ``config.json`` (``custom_pipelines``), so that a folder loads as every other
family's does, offline too:

    classify = pipeline(model="path/or/repo", trust_remote_code=True)
    classify("Bob works at the bakery in Lyon . He likes it .")     # [{"label": "sports", "score": 0.93}]
    tag = pipeline(model="path/or/repo", trust_remote_code=True, aggregation_strategy="simple")

They are transformers' pipelines, whose outputs and options they keep, with an empty list refused by name (transformers'
text-classification pipeline ends it in an ``IndexError``) and unknown tokens (and texts longer than in training, where
the config records it) logged as warnings, as the translator does. ``pipeline("text-classification", model=...)`` and
``pipeline("token-classification", model=...)`` still give transformers' own: the tasks are saved under names of their
own (``CLASSIFIER_PIPELINES``, ``TAGGER_PIPELINES``), since a saved task named like transformers' would make those
calls ask for ``trust_remote_code``.
"""

from transformers import TextClassificationPipeline, TokenClassificationPipeline

from .pipeline_inputs import check_batch
from .source_warnings import warn_about_source

__all__ = ["BahdanauTextClassificationPipeline", "BahdanauTokenClassificationPipeline"]


class BahdanauTextClassificationPipeline(TextClassificationPipeline):
    """transformers' text-classification pipeline; an empty list is a ValueError naming ``inputs``, unknown tokens a
    warning."""

    def __call__(self, inputs, **kwargs):
        check_batch(inputs, "inputs", "a text")
        return super().__call__(inputs, **kwargs)

    def preprocess(self, inputs, **tokenizer_kwargs):
        model_inputs = super().preprocess(inputs, **tokenizer_kwargs)
        if isinstance(inputs, str):
            warn_about_source(inputs, model_inputs["input_ids"][0].tolist(), self.tokenizer, self.model.config)
        return model_inputs


class BahdanauTokenClassificationPipeline(TokenClassificationPipeline):
    """transformers' token-classification pipeline; an empty list is a ValueError naming ``inputs``, unknown tokens a
    warning (per chunk of a text read in chunks, ``stride``)."""

    def __call__(self, inputs, **kwargs):
        check_batch(inputs, "inputs", "a text")
        return super().__call__(inputs, **kwargs)

    def preprocess(self, sentence, offset_mapping=None, **preprocess_params):
        text = " ".join(sentence) if isinstance(sentence, list) else sentence  # is_split_into_words: its words
        for model_inputs in super().preprocess(sentence, offset_mapping, **preprocess_params):
            warn_about_source(text, model_inputs["input_ids"][0].tolist(), self.tokenizer, self.model.config)
            yield model_inputs
