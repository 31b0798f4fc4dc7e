"""A ``passage-question-answering`` pipeline for the text-pair co-attention model: a passage and a question in, an
answer of the model's answer vocabulary out, and on request both texts' co-attention weights at every level.

transformers 5's question-answering pipeline extracts a span; this model picks its answer from ``id2label``, so this
pipeline is saved with the model (``custom_pipelines`` in ``config.json``, this file next to the weights):

    answerer = pipeline(model="path/or/repo", trust_remote_code=True)
    answerer(context="Mary moved to the bathroom. John went to the hallway.", question="Where is Mary?")
    # {"answer": "bathroom", "score": 0.98}

``top_k`` > 1 returns ``{"answers": [{"answer", "score"}, …]}``, likeliest first. ``return_attentions=True`` adds
``question_words`` and ``context_words`` (the tokens read, without special tokens) and ``attentions``: one record
per question level (``{"level", "question", "context"}``, each a weight per word of that text, each summing to 1).
Unknown words in either text are logged as warnings.
"""

import torch
from transformers import Pipeline

from .pipeline_answers import answer_parameters, answer_record
from .pipeline_inputs import check_batch
from .source_warnings import warn_about_source
from .old_names import old_names

__all__ = ["BahdanauPassageQuestionAnsweringPipeline"]


class BahdanauPassageQuestionAnsweringPipeline(Pipeline):
    """``{"context": text, "question": text}`` (or ``context=``, ``question=``) -> ``{"answer", "score"}``; ``top_k``
    > 1: ``{"answers": [{"answer", "score"}, …]}``; ``return_attentions=True`` adds the words and weights."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def _sanitize_parameters(self, top_k: int | None = None, return_attentions: bool | None = None, **kwargs):
        return {}, {}, answer_parameters(top_k, return_attentions)

    def __call__(self, inputs: dict | list[dict] | None = None, *, context: str | None = None,
                 question: str | None = None, **kwargs):
        """One question (a dict, or ``context=`` and ``question=``) -> one record; a list of dicts -> a record each."""
        if inputs is None:
            inputs = {"context": context, "question": question}
        for item in check_batch(inputs, "inputs", "a dict with 'context' and 'question'"):
            _check_item(item)
        return super().__call__(inputs, **kwargs)

    def preprocess(self, item: dict) -> dict:
        batch = {}
        for name, prefix in (("question", "input_ids"), ("context", "context_ids")):
            ids = self.tokenizer(item[name], add_special_tokens=False)["input_ids"]
            if not ids:
                raise ValueError(f"`{name}` {item[name]!r:.200} has no token the tokenizer knows how to write.")
            warn_about_source(item[name], ids, self.tokenizer, self.model.config)
            batch[prefix] = torch.tensor([ids])
        batch["attention_mask"] = torch.ones_like(batch["input_ids"])
        batch["context_attention_mask"] = torch.ones_like(batch["context_ids"])
        return batch

    def _forward(self, model_inputs: dict) -> dict:
        outputs = self.model(**model_inputs, output_attentions=True)
        return {"logits": outputs.logits, "question_attentions": outputs.question_attentions,
                "context_attentions": outputs.context_attentions, "input_ids": model_inputs["input_ids"],
                "context_ids": model_inputs["context_ids"]}

    def postprocess(self, model_outputs: dict, top_k: int = 1, return_attentions: bool = False):
        record = answer_record(model_outputs["logits"][0], self.model.config.id2label, top_k)
        if return_attentions:
            levels = self.model.config.question_levels
            question_weights = model_outputs["question_attentions"] or [None] * len(levels)
            context_weights = model_outputs["context_attentions"] or [None] * len(levels)
            record["question_words"] = self.tokenizer.convert_ids_to_tokens(model_outputs["input_ids"][0].tolist())
            record["context_words"] = self.tokenizer.convert_ids_to_tokens(model_outputs["context_ids"][0].tolist())
            record["attentions"] = [
                {"level": level, "question": None if question is None else question[0].tolist(),
                 "context": None if context is None else context[0].tolist()}
                for level, question, context in zip(levels, question_weights, context_weights)]
        return record


def _check_item(item) -> None:
    """A dict with ``context`` and ``question``, both non-blank strings."""
    if not isinstance(item, dict) or set(item) != {"context", "question"}:
        raise ValueError(f"Each input must be a dict with the keys 'context' (the passage) and 'question', got "
                         f"{item!r:.200}.")
    for name in ("context", "question"):
        if not isinstance(item[name], str) or not item[name].strip():
            raise ValueError(f"`{name}` must be a non-blank string, got {item[name]!r:.200}.")


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "PassageQuestionAnsweringPipeline": BahdanauPassageQuestionAnsweringPipeline,
})
