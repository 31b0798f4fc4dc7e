"""Batched translation of texts with the alignment of every output: what the CLI and the training scripts print and plot.

    results = translate(model, tokenizer, ["le 3 mars 2015"], num_beams=5, output_alignments=True)
    results[0].translation, results[0].alignment  # "2015-03-03", α [T, S] over results[0].source_tokens
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from .alignments import alignments_from_generate
from .copying import decode_with_copies, encode_with_copies, tokens_with_copies
from .source_warnings import warn_about_source

__all__ = ["DecodedRow", "Translation", "check_texts", "decoded_rows", "first_eos", "translate", "warn_about_source"]

MODEL_INTERFACE = ("config", "generation_config", "generate", "eval", "device")  # what translate() reads of a model


@dataclass
class Translation:
    """One decoded sentence. ``alignment`` is α [len(target_tokens), len(source_tokens)] (None when not asked for):
    row t is the attention that produced ``target_tokens[t]``, over the source tokens (EOS included, padding not).
    ``p_gen`` [len(target_tokens)]: with the alignment of a ``copy_attention`` model, the probability that each
    output token was generated from the vocabulary rather than copied."""

    source: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    alignment: torch.Tensor | None = None
    p_gen: torch.Tensor | None = None


def check_texts(texts: Sequence[str], name: str = "texts") -> list[str]:
    """The texts to decode, as a list: a sequence of strings, none empty or blank (a single string is refused, it
    would be read as a sequence of characters). Raises ValueError/TypeError naming ``name`` and the bad entry."""
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"`{name}` must be a list of strings, got {type(texts).__name__}"
                        f"{' (wrap a single text in a list)' if isinstance(texts, str) else ''}.")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"`{name}[{index}]` must be a string, got {type(text).__name__}.")
        if not text.strip():
            raise ValueError(f"`{name}[{index}]` is {'empty' if not text else 'blank'} ({text!r}): there is nothing to "
                             "translate; remove it or give a text.")
    return list(texts)


class DecodedRow(NamedTuple):
    """One output row of generate(): its tokens after the decoder start, up to and including the first EOS, and the
    alignment that produced them, α [len(output_ids), S] over every (padded) source column, or None."""

    output_ids: list[int]
    alignment: torch.Tensor | None


def first_eos(eos_token_id: int | list[int] | None) -> int | None:
    """The end-of-sequence id the tokenizer appends: the first of several stop tokens."""
    return eos_token_id[0] if isinstance(eos_token_id, list) else eos_token_id


def decoded_rows(generated, eos_token_id: int | None) -> list[DecodedRow]:
    """Every output row of ``generate(..., return_dict_in_generate=True)``, with its alignment when generate() was
    asked for the attentions (``output_attentions=True``)."""
    with_alignments = getattr(generated, "cross_attentions", None) is not None
    rows = []
    for index, sequence in enumerate(generated.sequences):
        ids = sequence[1:].tolist()
        ids = ids[: ids.index(eos_token_id) + 1] if eos_token_id in ids else ids
        alignment = alignments_from_generate(generated, index, eos_token_id) if with_alignments else None
        rows.append(DecodedRow(ids, alignment))
    return rows


@torch.no_grad()
def translate(
    model,
    tokenizer,
    texts: Sequence[str],
    *,
    num_beams: int = 1,
    max_new_tokens: int | None = None,
    batch_size: int = 32,
    output_alignments: bool = False,
) -> list[Translation]:
    """Decode ``texts`` in batches of ``batch_size`` with greedy (``num_beams=1``) or beam search.

    max_new_tokens: None keeps ``model.generation_config``'s limit. output_alignments needs a model with attention.
    An empty or blank text is refused (ValueError naming it); a text with tokens unknown to the tokenizer, or longer
    than every training source, is decoded with a logged warning (``warn_about_source``).
    ``model``: a seq2seq model, or anything with its ``MODEL_INTERFACE`` (an ONNX export presents it as
    ``hf_bahdanau.onnx.pipeline.OnnxPipelineModel``); an object without it is a TypeError naming what it lacks.
    """
    missing = [name for name in MODEL_INTERFACE if not hasattr(model, name)]
    if missing:
        raise TypeError(f"`model` must be a seq2seq model (e.g. BahdanauForConditionalGeneration); "
                        f"{type(model).__name__} has no {', '.join(missing)}. An exported folder's runtime "
                        "(OnnxSeq2Seq) decodes texts with its own translate(texts, ...), or goes here as "
                        "hf_bahdanau.onnx.pipeline.OnnxPipelineModel(runtime).")
    texts = check_texts(texts)
    if num_beams < 1:
        raise ValueError(f"`num_beams` must be a positive integer, got {num_beams}.")
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive integer, got {batch_size}.")
    if output_alignments and model.config.attention_type == "none":
        raise ValueError("`output_alignments=True` needs a model with attention; this one has attention_type='none'.")
    model.eval()
    eos_token_id = first_eos(model.generation_config.eos_token_id)
    vocab_size, copying = model.config.vocab_size, model.config.copy_attention
    results = []
    for start in range(0, len(texts), batch_size):
        batch_texts = list(texts[start:start + batch_size])
        if copying:  # source words the vocabulary lacks get ids ≥ vocab_size (``copying``)
            encoded = encode_with_copies(tokenizer, batch_texts, vocab_size=vocab_size, return_tensors="pt")
            batch = {key: value.to(model.device) for key, value in encoded.model_inputs().items()}
            oovs = encoded.source_oovs
        else:
            batch = tokenizer(batch_texts, padding=True, return_tensors="pt").to(model.device)
            oovs = [[] for _ in batch_texts]
        for text, ids, mask in zip(batch_texts, batch["input_ids"], batch["attention_mask"]):
            warn_about_source(text, ids[mask.bool()].tolist(), tokenizer, model.config)
        limits = {} if max_new_tokens is None else {"max_new_tokens": max_new_tokens}
        out = model.generate(**batch, num_beams=num_beams, output_attentions=output_alignments,
                             return_dict_in_generate=True, **limits)
        p_gen = None
        if copying and output_alignments:  # teacher-forced on the outputs: the same steps as the search took
            p_gen = model(**batch, decoder_input_ids=out.sequences[:, :-1], output_attentions=True).p_gen
        for row, (text, decoded) in enumerate(zip(batch_texts, decoded_rows(out, eos_token_id))):
            source_positions = batch["attention_mask"][row].bool()
            source_ids = batch["copy_input_ids" if copying else "input_ids"][row][source_positions].tolist()
            row_oovs = oovs[row]
            results.append(Translation(
                source=text,
                translation=(decode_with_copies(tokenizer, [decoded.output_ids], [row_oovs], vocab_size)[0] if copying
                             else tokenizer.decode(decoded.output_ids, skip_special_tokens=True)),
                source_tokens=tokens_with_copies(tokenizer, source_ids, row_oovs, vocab_size),
                target_tokens=tokens_with_copies(tokenizer, decoded.output_ids, row_oovs, vocab_size),
                alignment=None if decoded.alignment is None else decoded.alignment[:, source_positions].cpu(),
                p_gen=None if p_gen is None else p_gen[row, :len(decoded.output_ids)].cpu(),
            ))
    return results
