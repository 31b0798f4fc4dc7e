"""A ``translation`` pipeline for the seq2seq head: texts in, generated texts (and optionally alignments) out.

transformers 5 removed its ``translation`` and ``text2text-generation`` pipelines. This one is saved with every
seq2seq model as a custom pipeline (``custom_pipelines`` in ``config.json``, this file next to the weights), so

    translator = pipeline(model="path/or/repo", trust_remote_code=True)
    translator(["3. März 2015", "le 3 mars 2015"], num_beams=4, max_new_tokens=16, batch_size=2)
    # [{"translation_text": "2015-03-03"}, {"translation_text": "2015-03-03"}]
    translator("3. März 2015", return_alignments=True)
    # [{"translation_text": …, "alignment": {"source_tokens": […], "target_tokens": […], "weights": [[…]]}}]

Keyword arguments that ``generate()`` knows (``num_beams``, ``max_new_tokens``, ``num_return_sequences``, …) are
passed to it, at construction or per call. ``return_alignments=True`` adds the soft alignment α [T, S] of every
output (one row per generated token, EOS included; one column per real source token). An empty or blank input is
refused with a ValueError; unknown tokens and inputs longer than every training source are logged as warnings.
"""

import torch
from transformers import GenerationConfig, Pipeline

from .copying import decode_with_copies, encode_with_copies, tokens_with_copies
from .translation import check_texts, decoded_rows, first_eos, warn_about_source
from .pipeline_inputs import check_batch
from .transformers_private import PIPELINE_GENERATE_KWARGS


class BahdanauTranslationPipeline(Pipeline):
    """Source texts -> ``[{"translation_text": …}]`` per text (``num_return_sequences`` records each)."""

    _pipeline_calls_generate = True
    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True
    _default_generation_config = GenerationConfig(max_new_tokens=128)

    def _sanitize_parameters(self, return_alignments: bool | None = None, clean_up_tokenization_spaces=None,
                             **generate_kwargs):
        postprocess = {}
        if return_alignments is not None:
            postprocess["return_alignments"] = return_alignments
        if clean_up_tokenization_spaces is not None:
            postprocess["clean_up_tokenization_spaces"] = clean_up_tokenization_spaces
        forward = dict(generate_kwargs)
        if return_alignments:
            forward["return_alignments"] = True
        return {}, forward, postprocess

    def __call__(self, inputs: str | list[str], **kwargs):
        """One text -> a list of records; a list of texts -> one record per text (a list of records per text when
        ``num_return_sequences`` > 1)."""
        if not isinstance(inputs, (str, list)):
            raise TypeError(f"`inputs` must be a string or a list of strings, got {type(inputs).__name__}.")
        check_texts(check_batch(inputs, "inputs", "a text"), name="inputs")
        result = super().__call__(inputs, **kwargs)
        if isinstance(inputs, list) and all(len(records) == 1 for records in result):
            return [records[0] for records in result]
        return result

    def preprocess(self, text: str) -> dict:
        """The model inputs of one text; with ``copy_attention`` also ``copy_input_ids`` and the words they copy,
        ``source_oovs``."""
        config = self.model.config
        if not config.copy_attention:
            encoded = self.tokenizer(text, return_tensors="pt")
            inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
        else:
            encoded = encode_with_copies(self.tokenizer, [text], vocab_size=config.vocab_size, return_tensors="pt")
            inputs = dict(encoded.model_inputs(), source_oovs=encoded.source_oovs[0])
        warn_about_source(text, inputs["input_ids"][0].tolist(), self.tokenizer, config)
        return inputs

    def _forward(self, model_inputs: dict[str, torch.Tensor], return_alignments: bool = False, **generate_kwargs):
        """generate() on a batch; outputs reshaped to [batch, num_return_sequences, …] so the pipeline can split them
        per input."""
        overrides = dict(output_attentions=True, return_dict_in_generate=True) if return_alignments else {}
        if PIPELINE_GENERATE_KWARGS:  # transformers' defaults under the caller's arguments
            generate_kwargs = self._prepare_generate_kwargs(generate_kwargs=generate_kwargs, **overrides)
        else:  # a transformers without that private helper (or with another signature): the arguments as they are
            generate_kwargs = {**generate_kwargs, **overrides}
        source_oovs = model_inputs.pop("source_oovs", None)
        generated = self.model.generate(**model_inputs, **generate_kwargs)
        sequences = generated.sequences if return_alignments else generated
        eos_token_id = first_eos(self.model.generation_config.eos_token_id)
        rows = [row.alignment for row in decoded_rows(generated, eos_token_id)] if return_alignments else None
        batch = model_inputs["input_ids"].shape[0]
        outputs = dict(model_inputs, output_ids=sequences.reshape(batch, -1, sequences.shape[-1]),
                       source_oovs=source_oovs)
        if return_alignments and self.model.config.copy_attention:  # teacher-forced on the outputs: the same steps
            p_gen = self.model(**model_inputs, decoder_input_ids=sequences[:, :-1], output_attentions=True).p_gen
            outputs["p_gen"] = p_gen.reshape(batch, -1, p_gen.shape[-1])
        if return_alignments:
            lengths = torch.tensor([len(row) for row in rows], device=rows[0].device)  # beside the weights
            weights = rows[0].new_zeros(len(rows), max(map(len, rows)), rows[0].shape[-1])
            for index, row in enumerate(rows):
                weights[index, :len(row)] = row
            outputs.update(alignments=weights.reshape(batch, -1, *weights.shape[1:]),
                           alignment_lengths=lengths.reshape(batch, -1))
        return outputs

    def postprocess(self, model_outputs, return_alignments: bool = False, clean_up_tokenization_spaces: bool = False):
        records = []
        real_source = model_outputs["attention_mask"][0].bool()
        oovs, vocab_size = model_outputs.get("source_oovs") or [], self.model.config.vocab_size
        source_ids = model_outputs["copy_input_ids" if "copy_input_ids" in model_outputs else "input_ids"][0]
        source_tokens = tokens_with_copies(self.tokenizer, source_ids[real_source].tolist(), oovs, vocab_size)
        for index, output_ids in enumerate(model_outputs["output_ids"][0]):
            if "copy_input_ids" in model_outputs:
                text = decode_with_copies(self.tokenizer, [output_ids], [oovs], vocab_size)[0]
            else:
                text = self.tokenizer.decode(output_ids, skip_special_tokens=True,
                                             clean_up_tokenization_spaces=clean_up_tokenization_spaces)
            record = {"translation_text": text}
            if return_alignments:
                length = int(model_outputs["alignment_lengths"][0, index])
                weights = model_outputs["alignments"][0, index, :length][:, real_source]
                record["alignment"] = {
                    "source_tokens": source_tokens,
                    "target_tokens": tokens_with_copies(self.tokenizer, output_ids[1:1 + length].tolist(), oovs,
                                                        vocab_size),
                    "weights": weights.tolist(),
                }
                if "p_gen" in model_outputs:
                    record["alignment"]["p_gen"] = model_outputs["p_gen"][0, index, :length].tolist()
            records.append(record)
        return records
