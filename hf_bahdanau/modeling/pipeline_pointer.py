"""A ``pointing`` pipeline for the pointer network: a sequence of inputs in, the input positions it points at out.

transformers has no task whose answer is positions of the input; this pipeline is saved with every pointer network
(``custom_pipelines`` in ``config.json``, this file next to the weights), so

    point = pipeline(model="path/or/repo", trust_remote_code=True)
    point([[0.3], [0.1], [0.7]])                             # one input of 3 numbers: {"positions": [1, 0, 2]}
    point([[[0.2, 0.5], [0.9, 0.1]], …], num_beams=4)        # a list of inputs: one record each

An input is what the model reads, one item per position: a list of ``config.input_feature_size`` numbers per position
(``input_features``), or a token id per position for a model that reads ``input_ids``. ``generate()`` options
(``num_beams``, ``forbid_repeats``, ``max_new_tokens``) are passed through; ``positions`` are 0-based, up to the end.
"""

import torch
from transformers import Pipeline

from .pipeline_inputs import check_batch
from .pointing import positions
from .old_names import old_names

__all__ = ["BahdanauPointingPipeline"]


class BahdanauPointingPipeline(Pipeline):
    """One input (a list of positions) -> ``{"positions": [...]}``; a list of inputs -> one record each."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = False

    def _sanitize_parameters(self, **generate_kwargs):
        return {}, generate_kwargs, {}

    def __call__(self, inputs: list, **kwargs):
        """One input -> one record; a list of inputs -> a list of records."""
        item_depth = 1 if self.model.config.input_feature_size is None else 2  # ids [n] or features [n][F]
        if _depth(inputs) == item_depth:
            return super().__call__([_check_item(inputs, "inputs", self.model.config)], **kwargs)[0]
        batch = check_batch(inputs, "inputs", "a list of positions")
        return super().__call__([_check_item(item, f"inputs[{index}]", self.model.config)
                                 for index, item in enumerate(batch)], **kwargs)

    def preprocess(self, item: list) -> dict:
        key = "input_ids" if self.model.config.input_feature_size is None else "input_features"
        values = torch.tensor([item], dtype=torch.long if key == "input_ids" else torch.float32)
        return {key: values, "attention_mask": torch.ones(1, len(item), dtype=torch.long)}

    def _forward(self, model_inputs: dict, **generate_kwargs) -> dict:
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs: dict) -> dict:
        return {"positions": positions(model_outputs["output_ids"][0, 1:])}


def _depth(value) -> int:
    """How deeply lists (or tuples) nest at the start of ``value``: 0 for a number, 1 for [1, 2], 2 for [[1], [2]]."""
    depth = 0
    while isinstance(value, (list, tuple)) and value:
        value, depth = value[0], depth + 1
    return depth + isinstance(value, (list, tuple))


def _check_item(item, name: str, config) -> list:
    """One input: a non-empty list of token ids, or of ``config.input_feature_size`` numbers per position."""
    features = config.input_feature_size
    one = "a token id" if features is None else f"a list of {features} numbers (`config.input_feature_size`)"
    if not isinstance(item, (list, tuple)) or not item:
        raise ValueError(f"`{name}` must be a non-empty list with {one} per position, got {item!r:.200}.")
    for position, value in enumerate(item):
        if features is None:
            good = isinstance(value, int) and not isinstance(value, bool)
        else:
            good = (isinstance(value, (list, tuple)) and len(value) == features
                    and all(isinstance(number, (int, float)) and not isinstance(number, bool) for number in value))
        if not good:
            raise ValueError(f"`{name}[{position}]` must be {one}, got {value!r:.200}.")
    return list(item)


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "PointingPipeline": BahdanauPointingPipeline,
})
