"""An exported folder on ONNX Runtime as the PyTorch seq2seq model is read by the code shipped with it: ``generate()``,
``config``, ``generation_config``, so ``decoding.translate`` and the translation pipeline run on it unchanged (the
package exports ``onnx_translation_pipeline``)::

    model = OnnxPipelineModel.from_pretrained("outputs/dates-onnx")   # quantized=True: the int8 graphs
    translate(model, AutoTokenizer.from_pretrained("outputs/dates-onnx"), ["3/14/15"], num_beams=5)
    translator = onnx_translation_pipeline("outputs/dates-onnx")
    translator(["3/14/15", "14 March 2015"], num_beams=5, return_alignments=True)

The search is the exported graphs' (greedy or beam search, ``runtime``), so ``generate()`` takes the parameters that
search has: ``num_beams``, ``max_new_tokens`` (or ``max_length``), ``min_new_tokens``, ``length_penalty``,
``early_stopping``, ``num_return_sequences``, GNMT's ``coverage_penalty`` and ``length_penalty_style``, and
``output_attentions`` / ``return_dict_in_generate``. Others (sampling, repetition penalties, …) are refused with a
ValueError naming them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer, GenerationConfig

from ..modeling.configuration_bahdanau import BahdanauConfig
from ..modeling.pipeline_bahdanau import BahdanauTranslationPipeline
from .runtime import OnnxSeq2Seq

__all__ = ["OnnxGenerateOutput", "OnnxPipelineModel", "onnx_translation_pipeline"]

SEARCH_PARAMETERS = ("num_beams", "max_new_tokens", "min_new_tokens", "length_penalty", "early_stopping",
                     "num_return_sequences", "coverage_penalty", "length_penalty_style")
# Taken and ignored: values the exported search already has (the special tokens), and a greedy default.
FIXED_PARAMETERS = ("pad_token_id", "eos_token_id", "decoder_start_token_id", "bos_token_id", "do_sample")


@dataclass
class OnnxGenerateOutput:
    """What ``generate(..., return_dict_in_generate=True)`` returns that ``decoding.decoded_rows`` reads.

    sequences [R, 1 + T] from the start token; with ``output_attentions``, cross_attentions: one ``(α_t,)`` per step,
    α_t [R, 1, 1, S] (zeros after a row's last token), and beam_indices [R, T]: the row of α_t that output row r
    generated step t with (r itself), -1 after its last token, so each row's alignment keeps the search's length."""

    sequences: torch.Tensor
    cross_attentions: tuple[tuple[torch.Tensor], ...] | None = None
    beam_indices: torch.Tensor | None = None

    @classmethod
    def from_alignments(cls, sequences: np.ndarray, alignments: list[np.ndarray]) -> OnnxGenerateOutput:
        """The output of the rows ``sequences`` whose tokens attended with ``alignments`` (per row α [T_r, S])."""
        rows, steps, source_length = len(alignments), sequences.shape[1] - 1, alignments[0].shape[-1]
        weights = torch.zeros(rows, steps, source_length)
        beam_indices = torch.full((rows, steps), -1)
        for row, alignment in enumerate(alignments):
            weights[row, :len(alignment)] = torch.from_numpy(alignment)
            beam_indices[row, :len(alignment)] = row
        return cls(torch.from_numpy(sequences), tuple((weights[:, step, None, None],) for step in range(steps)),
                   beam_indices)


class OnnxPipelineModel:
    """An exported folder on ONNX Runtime (``runtime``), with the PyTorch model's ``generate()``, ``config``,
    ``generation_config``, ``device``, ``eval()`` and ``to()``."""

    device = torch.device("cpu")

    def __init__(self, runtime: OnnxSeq2Seq) -> None:
        self.runtime = runtime
        manifest = runtime.manifest
        self.config = BahdanauConfig.from_dict(manifest["config"])
        self.generation_config = GenerationConfig(
            **{key: value for key, value in manifest["generation"].items() if value is not None},
            eos_token_id=manifest["eos_token_id"], pad_token_id=manifest["pad_token_id"],
            decoder_start_token_id=manifest["decoder_start_token_id"])

    @classmethod
    def from_pretrained(cls, folder: str | Path, quantized: bool = False,
                        threads: int | None = None) -> OnnxPipelineModel:
        """The model of a folder written by ``hf-bahdanau-export`` (``quantized``: its int8 graphs; ``threads``:
        ONNX Runtime's intra-op threads)."""
        return cls(OnnxSeq2Seq(folder, quantized=quantized, threads=threads))

    def can_generate(self) -> bool:
        return True

    def eval(self) -> OnnxPipelineModel:
        """As a PyTorch model's; the graphs have no training mode."""
        return self

    def to(self, device: str | torch.device) -> OnnxPipelineModel:
        if torch.device(device).type != "cpu":
            raise ValueError(f"`device` must be the CPU for ONNX Runtime decoding here, got {str(device)!r}.")
        return self

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                 generation_config: GenerationConfig | None = None, **parameters) -> torch.Tensor | OnnxGenerateOutput:
        """Greedy or beam search on a batch, as ``generate()``: sequences [R, 1 + T], or with
        ``return_dict_in_generate`` an ``OnnxGenerateOutput`` (with the alignments when ``output_attentions``).
        ``parameters`` (and ``generation_config``'s, under them) as ``generate()``'s."""
        if generation_config is not None:
            parameters = {**generation_config.to_diff_dict(), **parameters}
            parameters.pop("transformers_version", None)
        output_attentions = parameters.pop("output_attentions", False)
        return_dict_in_generate = parameters.pop("return_dict_in_generate", False)
        if parameters.get("do_sample"):
            raise ValueError("`do_sample=True`: the ONNX Runtime decoder runs greedy or beam search only.")
        if "max_length" in parameters and "max_new_tokens" not in parameters:
            max_length = parameters.pop("max_length")
            if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 2:
                raise ValueError(f"`max_length` must be an integer ≥ 2 (the start token and a new one), got "
                                 f"{max_length!r}.")
            parameters["max_new_tokens"] = max_length - 1  # the start token is the prompt
        parameters.pop("max_length", None)
        unsupported = sorted(set(parameters) - set(SEARCH_PARAMETERS) - set(FIXED_PARAMETERS))
        if unsupported:
            raise ValueError(f"The ONNX Runtime decoder does not take {', '.join(map(repr, unsupported))}; it takes "
                             f"{', '.join(SEARCH_PARAMETERS)}, output_attentions and return_dict_in_generate.")
        output = self.runtime.generate(input_ids.cpu().numpy(),
                                       None if attention_mask is None else attention_mask.cpu().numpy(),
                                       output_alignments=output_attentions,
                                       **{key: parameters[key] for key in SEARCH_PARAMETERS if key in parameters})
        if not return_dict_in_generate:
            return torch.from_numpy(output.sequences)
        if output.alignments is None:
            return OnnxGenerateOutput(torch.from_numpy(output.sequences))
        return OnnxGenerateOutput.from_alignments(output.sequences, output.alignments)


def onnx_translation_pipeline(folder: str | Path, quantized: bool = False, threads: int | None = None,
                              **pipeline_kwargs) -> BahdanauTranslationPipeline:
    """``BahdanauTranslationPipeline`` over the exported ``folder`` (its tokenizer and graphs; ``quantized``: the
    int8 ones; ``threads``: ONNX Runtime's intra-op threads). ``pipeline_kwargs``: the pipeline's own (generation
    parameters applied to every call, ``batch_size``)."""
    model = OnnxPipelineModel.from_pretrained(folder, quantized=quantized, threads=threads)
    return BahdanauTranslationPipeline(model=model, tokenizer=AutoTokenizer.from_pretrained(folder), **pipeline_kwargs)
