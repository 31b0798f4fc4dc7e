"""The translation pipeline on ONNX Runtime: ``BahdanauTranslationPipeline`` over a folder written by
``hf-bahdanau-export``, with the PyTorch pipeline's inputs, options and outputs (the package exports
``onnx_translation_pipeline``)::

    translator = onnx_translation_pipeline("outputs/dates-onnx")          # quantized=True: the int8 graphs
    translator(["3/14/15", "14 March 2015"], num_beams=5, return_alignments=True)

``OnnxPipelineModel`` is what the pipeline reads of a model (config, generation config, device) around an
``OnnxSeq2Seq``; the search is the exported graphs' (greedy or beam search, ``runtime``), so the pipeline takes
the parameters that search has: ``num_beams``, ``max_new_tokens`` (or ``max_length``), ``min_new_tokens``,
``length_penalty``, ``early_stopping``, ``num_return_sequences``, GNMT's ``coverage_penalty`` and
``length_penalty_style``. Others (sampling, repetition penalties, …) are refused with a ValueError naming them.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoTokenizer, GenerationConfig

from ..modeling.configuration_bahdanau import BahdanauConfig
from .runtime import OnnxSeq2Seq
from ..modeling.pipeline_bahdanau import BahdanauTranslationPipeline

__all__ = ["OnnxPipelineModel", "onnx_translation_pipeline"]

SEARCH_PARAMETERS = ("num_beams", "max_new_tokens", "min_new_tokens", "length_penalty", "early_stopping",
                     "num_return_sequences", "coverage_penalty", "length_penalty_style")
# What the pipeline passes whatever the backend: its own switches, and values the exported search already has.
PIPELINE_PARAMETERS = ("output_attentions", "return_dict_in_generate", "pad_token_id", "eos_token_id",
                       "decoder_start_token_id", "bos_token_id", "do_sample")


class OnnxPipelineModel:
    """An exported folder on ONNX Runtime, as ``BahdanauTranslationPipeline`` reads a model."""

    backend = "onnxruntime"  # what the pipeline recognises it by
    device = torch.device("cpu")

    def __init__(self, runtime: OnnxSeq2Seq) -> None:
        self.runtime = runtime
        manifest = runtime.manifest
        self.config = BahdanauConfig.from_dict(manifest["config"])
        self.generation_config = GenerationConfig(
            **{key: value for key, value in manifest["generation"].items() if value is not None},
            eos_token_id=manifest["eos_token_id"], pad_token_id=manifest["pad_token_id"],
            decoder_start_token_id=manifest["decoder_start_token_id"])

    def can_generate(self) -> bool:
        return True

    def to(self, device: str | torch.device) -> OnnxPipelineModel:
        if torch.device(device).type != "cpu":
            raise ValueError(f"`device` must be the CPU for ONNX Runtime decoding here, got {str(device)!r}.")
        return self

    def search(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, return_alignments: bool = False,
               generation_config: GenerationConfig | None = None,
               **parameters) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """Greedy or beam search on a batch: sequences [R, 1 + T] and, with ``return_alignments``, each row's
        α [T_r, S]. ``parameters`` (and ``generation_config``'s, under them) as ``generate()``'s."""
        if generation_config is not None:
            parameters = {**generation_config.to_diff_dict(), **parameters}
            parameters.pop("transformers_version", None)
        if parameters.get("do_sample"):
            raise ValueError("`do_sample=True`: the ONNX Runtime decoder runs greedy or beam search only.")
        if "max_length" in parameters and "max_new_tokens" not in parameters:
            max_length = parameters.pop("max_length")
            if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 2:
                raise ValueError(f"`max_length` must be an integer ≥ 2 (the start token and a new one), got "
                                 f"{max_length!r}.")
            parameters["max_new_tokens"] = max_length - 1  # the start token is the prompt
        parameters.pop("max_length", None)
        unsupported = sorted(set(parameters) - set(SEARCH_PARAMETERS) - set(PIPELINE_PARAMETERS))
        if unsupported:
            raise ValueError(f"The ONNX Runtime decoder does not take {', '.join(map(repr, unsupported))}; it takes "
                             f"{', '.join(SEARCH_PARAMETERS)}.")
        output = self.runtime.generate(input_ids.cpu().numpy(), attention_mask.cpu().numpy(),
                                       output_alignments=return_alignments,
                                       **{key: parameters[key] for key in SEARCH_PARAMETERS if key in parameters})
        alignments = None if output.alignments is None else [torch.from_numpy(row) for row in output.alignments]
        return torch.from_numpy(output.sequences), alignments


def onnx_translation_pipeline(folder: str | Path, quantized: bool = False, threads: int | None = None,
                              **pipeline_kwargs) -> BahdanauTranslationPipeline:
    """``BahdanauTranslationPipeline`` over the exported ``folder`` (its tokenizer and graphs; ``quantized``: the
    int8 ones; ``threads``: ONNX Runtime's intra-op threads). ``pipeline_kwargs``: the pipeline's own (generation
    parameters applied to every call, ``batch_size``)."""
    runtime = OnnxSeq2Seq(folder, quantized=quantized, threads=threads)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return BahdanauTranslationPipeline(model=OnnxPipelineModel(runtime), tokenizer=tokenizer, **pipeline_kwargs)
