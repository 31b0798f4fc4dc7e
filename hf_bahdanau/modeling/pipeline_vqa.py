"""A ``visual-question-answering`` pipeline for the co-attention answerer: an image and a question in, the answer and
both attentions out.

transformers 5 removed its visual-question-answering pipeline; this one is saved with every co-attention VQA model
(``custom_pipelines`` in ``config.json``, this file next to the weights), so

    vqa = pipeline(model="path/or/repo", trust_remote_code=True)
    vqa(image="shape.png", question="what color is the shape?")
    # {"answer": "teal", "score": 0.98}
    vqa([{"image": image, "question": "is there a circle?"}, …], top_k=3)
    # [{"answers": [{"answer": "no", "score": 0.97}, …]}, …]

An image is a PIL image, a uint8 array or a path (or URL) that PIL opens; one far from the training images' height, or
a question with unknown words, is read with a warning.
``return_attentions=True`` adds the question's tokens, each level's weights over them (``question_attentions``, one
list per level of ``levels``) and over the image's own grid of regions (``image_attentions``: one list per level,
``grid_size`` = [rows, columns] nested lists); ``hf_bahdanau.pictures.plot_coattention`` draws them.
"""

import numpy as np
import torch
from PIL import Image
from transformers import Pipeline

from .pipeline_answers import answer_parameters, answer_record
from .pipeline_inputs import check_batch, read_image
from .source_warnings import warn_about_source
from .old_names import old_names

__all__ = ["BahdanauVisualQuestionAnsweringPipeline"]


class BahdanauVisualQuestionAnsweringPipeline(Pipeline):
    """``{"image": …, "question": text}`` (or ``image=``, ``question=``) -> ``{"answer", "score"}``; ``top_k`` > 1:
    ``{"answers": [{"answer", "score"}, …]}``, likeliest first; a list of inputs -> one record each."""

    _load_processor = False
    _load_image_processor = True
    _load_feature_extractor = False
    _load_tokenizer = True

    def _sanitize_parameters(self, top_k: int | None = None, return_attentions: bool | None = None, **kwargs):
        return {}, {}, answer_parameters(top_k, return_attentions)

    def __call__(self, inputs: dict | list[dict] | None = None, *, image=None, question: str | None = None, **kwargs):
        """One question (a dict, or ``image=`` and ``question=``) -> one record; a list of dicts -> a record each."""
        if inputs is None:
            inputs = {"image": image, "question": question}
        elif image is not None or question is not None:
            raise ValueError("Pass the inputs either as a dict (or a list of dicts) or as `image=` and `question=`, "
                             "not both.")
        for item in check_batch(inputs, "inputs", "a dict with an 'image' and a 'question'"):
            _check_item(item)
        return super().__call__(inputs, **kwargs)

    def preprocess(self, item: dict) -> dict:
        image = read_image(item["image"], "image", self.image_processor, refuse_blank=False)
        question = self.tokenizer(item["question"], add_special_tokens=False)["input_ids"]
        if not question:
            raise ValueError(f"`question` {item['question']!r} has no token the tokenizer knows how to write.")
        warn_about_source(item["question"], question, self.tokenizer, self.model.config)
        return {**dict(self.image_processor(image, return_tensors="pt")), "input_ids": torch.tensor([question]),
                "attention_mask": torch.ones(1, len(question), dtype=torch.long)}

    def _forward(self, model_inputs: dict) -> dict:
        reads = self.model.config.text_config.inputs  # a baseline reading one input is not given the other
        unread = {"question": ("pixel_values", "pixel_mask"), "context": ("input_ids", "attention_mask")}.get(reads, ())
        outputs = self.model(**{key: value for key, value in model_inputs.items() if key not in unread},
                             output_attentions=True)
        return {"logits": outputs.logits, "input_ids": model_inputs["input_ids"], "grid_size": outputs.grid_size,
                "question_attentions": outputs.question_attentions, "image_attentions": outputs.context_attentions}

    def postprocess(self, model_outputs: dict, top_k: int = 1, return_attentions: bool = False) -> dict:
        record = answer_record(model_outputs["logits"][0], self.model.config.id2label, top_k)
        if return_attentions:
            record["levels"] = list(self.model.config.text_config.question_levels)
            record["question_tokens"] = self.tokenizer.convert_ids_to_tokens(model_outputs["input_ids"][0].tolist())
            if model_outputs["question_attentions"] is not None:
                record["question_attentions"] = [weights[0].tolist() for weights in model_outputs["question_attentions"]]
            if model_outputs["image_attentions"] is not None:
                rows, columns = model_outputs["grid_size"][0].tolist()
                record["grid_size"] = [rows, columns]
                record["image_attentions"] = [weights[0, :rows * columns].reshape(rows, columns).tolist()
                                              for weights in model_outputs["image_attentions"]]
        return record


def _check_item(item) -> None:
    """A dict with ``image`` (a PIL image, an array or a path) and ``question`` (a non-blank string)."""
    if not isinstance(item, dict) or set(item) != {"image", "question"}:
        raise ValueError(f"Each input must be a dict with the keys 'image' and 'question', got {item!r:.200}.")
    image, question = item["image"], item["question"]
    if not isinstance(image, (str, Image.Image, np.ndarray, torch.Tensor)):
        raise ValueError(f"`image` must be a PIL image, a uint8 array or a path, got {type(image).__name__}.")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"`question` must be a non-blank string, got {question!r:.200}.")


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "VisualQuestionAnsweringPipeline": BahdanauVisualQuestionAnsweringPipeline,
})
