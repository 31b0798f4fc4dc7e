"""An ``image-to-text`` pipeline for the image-to-text head: images in, generated texts (and attention maps) out.

transformers 5 sends the task name ``image-to-text`` to ``image-text-to-text``, a pipeline for chat models that
expects a processor with a chat template and a text prompt; an RNN captioner has neither. This pipeline is saved with
every image-to-text model as a custom pipeline (``custom_pipelines`` in ``config.json``, this file next to the
weights), so

    reader = pipeline(model="path/or/repo", trust_remote_code=True)
    reader(["strip.png", image], num_beams=4, max_new_tokens=12)
    # [{"generated_text": "40719"}, {"generated_text": "3312"}]
    reader(image, return_attentions=True)
    # [{"generated_text": …, "attention": {"tokens": […], "grid": [H', W'], "weights": [[…]]}}]

An image is a PIL image, a uint8 array or a path (or URL) that PIL opens; a blank one (every pixel of one colour) is
refused, and one far from the training images' height is read with a warning (``pipeline_inputs.read_image``).
``generate()`` options are passed through.
``return_attentions=True`` adds, per generated token (EOS included), its attention over the image's own H' × W'
regions, row-major (``hf_bahdanau.pictures.plot_image_attention`` draws it over the image).
"""

import numpy as np
import torch
from PIL import Image
from transformers import GenerationConfig, Pipeline

from .translation import decoded_rows, first_eos
from .pipeline_inputs import check_batch, read_image
from .transformers_private import PIPELINE_GENERATE_KWARGS

__all__ = ["BahdanauImageToTextPipeline"]


class BahdanauImageToTextPipeline(Pipeline):
    """Images -> ``[{"generated_text": …}]`` per image (``num_return_sequences`` records each)."""

    _pipeline_calls_generate = True
    _load_processor = False
    _load_image_processor = True
    _load_feature_extractor = False
    _load_tokenizer = True
    _default_generation_config = GenerationConfig(max_new_tokens=64)

    def _sanitize_parameters(self, return_attentions: bool | None = None, **generate_kwargs):
        postprocess = {} if return_attentions is None else {"return_attentions": return_attentions}
        forward = dict(generate_kwargs, return_attentions=True) if return_attentions else dict(generate_kwargs)
        return {}, forward, postprocess

    def __call__(self, images, **kwargs):
        """One image -> a list of records; a list of images -> one record per image (a list of records per image when
        ``num_return_sequences`` > 1)."""
        if isinstance(images, (list, tuple)):
            images = [read_image(image, f"images[{index}]", self.image_processor, refuse_blank=True)
                      for index, image in enumerate(check_batch(images, "images", "an image"))]
        else:
            images = read_image(images, "images", self.image_processor, refuse_blank=True)
        result = super().__call__(images, **kwargs)
        if isinstance(images, (list, tuple)) and all(len(records) == 1 for records in result):
            return [records[0] for records in result]
        return result

    def preprocess(self, image) -> dict:
        if isinstance(image, str):  # from a generator or a dataset, which __call__ does not read
            image = read_image(image, "images", self.image_processor, refuse_blank=True)
        elif not isinstance(image, (Image.Image, np.ndarray, torch.Tensor)):
            raise ValueError(f"An image must be a PIL image, a uint8 array or a path, got {type(image).__name__}.")
        return dict(self.image_processor(image, return_tensors="pt"))

    def _forward(self, model_inputs: dict[str, torch.Tensor], return_attentions: bool = False, **generate_kwargs):
        overrides = dict(output_attentions=True, return_dict_in_generate=True) if return_attentions else {}
        if PIPELINE_GENERATE_KWARGS:  # transformers' defaults under the caller's arguments
            generate_kwargs = self._prepare_generate_kwargs(generate_kwargs=generate_kwargs, **overrides)
        else:
            generate_kwargs = {**generate_kwargs, **overrides}
        generated = self.model.generate(**model_inputs, **generate_kwargs)
        sequences = generated.sequences if return_attentions else generated
        outputs = {"output_ids": sequences.reshape(1, -1, sequences.shape[-1])}
        if return_attentions:
            eos_token_id = first_eos(self.model.generation_config.eos_token_id)
            real = model_inputs["pixel_mask"][0].bool()
            height, width = self.model.model.encoder.grid_size(int(real.any(1).sum()), int(real.any(0).sum()))
            outputs["attentions"] = [row.alignment[:, :height * width] for row in decoded_rows(generated, eos_token_id)]
            outputs["grid"] = [height, width]
        return outputs

    def postprocess(self, model_outputs, return_attentions: bool = False):
        records = []
        for index, output_ids in enumerate(model_outputs["output_ids"][0]):
            record = {"generated_text": self.tokenizer.decode(output_ids, skip_special_tokens=True)}
            if return_attentions:
                weights = model_outputs["attentions"][index]
                record["attention"] = {
                    "tokens": self.tokenizer.convert_ids_to_tokens(output_ids[1:1 + len(weights)].tolist()),
                    "grid": model_outputs["grid"],
                    "weights": weights.tolist(),
                }
            records.append(record)
        return records
