"""Copying words the vocabulary lacks (``copy_attention=True``): source ids in an extended vocabulary, and back.

A source token the tokenizer maps to its unknown token gets an id of its own example instead, V, V + 1, … in the
order the words first occur (V = the model's ``vocab_size``): ``copy_input_ids``. A target word the vocabulary
lacks gets the id of the same word in its source, so the model learns to copy it; the model reads an id ≥ V it
emitted as the unknown token, and ``decode_with_copies`` turns it back into the source's word.

    encoded = encode_with_copies(tokenizer, ["meeting with Ngozi Adeyemi on 3 March 2015"], return_tensors="pt")
    generated = model.generate(**encoded.model_inputs(), max_new_tokens=32)
    decode_with_copies(tokenizer, generated, encoded.source_oovs)   # ["Ngozi Adeyemi | 2015-03-03"]

Training: map ``encode_with_copies`` over the dataset (``targets`` gives ``labels``) and batch with
``collators.DataCollatorForCopying``. A word is found from the tokenizer's character offsets, so a fast tokenizer is
needed.
"""

from collections.abc import Sequence

import torch
from transformers import BatchEncoding

from .collators import DataCollatorForCopying as _DataCollatorForCopying  # public in collators.py
from .old_names import old_names

__all__ = ["CopyEncoding", "decode_with_copies", "encode_with_copies", "tokens_with_copies"]


class CopyEncoding(BatchEncoding):
    """``encode_with_copies``' result: input_ids, attention_mask, copy_input_ids (and labels) per example, or padded
    tensors; ``source_oovs``: each example's words beyond the vocabulary, the word with id V + i at index i."""

    @property
    def source_oovs(self) -> list[list[str]]:
        return self["source_oovs"]

    def model_inputs(self) -> dict:
        """What the model's ``forward`` / ``generate()`` read (everything but ``source_oovs``)."""
        return {key: value for key, value in self.items() if key != "source_oovs"}


def _unknown_words(tokenizer, texts: list[str], encoded: BatchEncoding) -> list[list[str | None]]:
    """Per text, per token: where it is the unknown token, the piece of the text under it as the tokenizer's
    pre-tokenizer writes it (with the mark of a piece glued to the previous one, or of one after a space, so that
    decoding a copy gives back the text's own spacing: "D'Souza", not "D' Souza"), else None. Where no piece covers
    exactly the token's characters, the characters themselves."""
    unknown = tokenizer.unk_token_id
    pre_tokenizer = tokenizer.backend_tokenizer.pre_tokenizer
    words = []
    for text, ids, offsets in zip(texts, encoded["input_ids"], encoded["offset_mapping"]):
        pieces = {} if pre_tokenizer is None else {span: piece for piece, span in pre_tokenizer.pre_tokenize_str(text)}
        words.append([pieces.get((start, end), text[start:end]) if token == unknown else None
                      for token, (start, end) in zip(ids, offsets)])
    return words


def encode_with_copies(tokenizer, sources: Sequence[str], targets: Sequence[str] | None = None,
                       vocab_size: int | None = None, return_tensors: str | None = None,
                       **tokenizer_kwargs) -> CopyEncoding:
    """Tokenise ``sources`` (and ``targets`` as ``labels``) with ids beyond the vocabulary for the source words it
    lacks. vocab_size: the model's (default ``len(tokenizer)``); ``return_tensors="pt"`` pads like
    ``DataCollatorForCopying``; other keyword arguments go to the tokenizer (e.g. ``truncation``, ``max_length``)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("`tokenizer` must be a fast tokenizer (PreTrainedTokenizerFast): copying reads the words "
                         "behind unknown tokens from its character offsets.")
    if return_tensors not in (None, "pt"):
        raise ValueError(f"`return_tensors` must be None or 'pt', got {return_tensors!r}.")
    vocab_size = len(tokenizer) if vocab_size is None else vocab_size
    sources = list(sources)
    encoded = tokenizer(sources, return_offsets_mapping=True, **tokenizer_kwargs)
    features = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"],
                "copy_input_ids": [], "source_oovs": []}
    for ids, words in zip(encoded["input_ids"], _unknown_words(tokenizer, sources, encoded)):
        oovs = list(dict.fromkeys(word for word in words if word is not None))
        features["source_oovs"].append(oovs)
        features["copy_input_ids"].append([token if word is None else vocab_size + oovs.index(word)
                                           for token, word in zip(ids, words)])
    if targets is not None:
        targets = list(targets)
        encoded_targets = tokenizer(text_target=targets, return_offsets_mapping=True, **tokenizer_kwargs)
        features["labels"] = [
            [token if word not in oovs else vocab_size + oovs.index(word) for token, word in zip(ids, words)]
            for ids, words, oovs in zip(encoded_targets["input_ids"],
                                        _unknown_words(tokenizer, targets, encoded_targets), features["source_oovs"])
        ]
    if return_tensors is None:
        return CopyEncoding(features)
    rows = [{key: features[key][row] for key in features} for row in range(len(sources))]
    return CopyEncoding({**_DataCollatorForCopying(tokenizer)(rows), "source_oovs": features["source_oovs"]})


def decode_with_copies(tokenizer, sequences: torch.Tensor | Sequence[Sequence[int]],
                       source_oovs: Sequence[Sequence[str]], vocab_size: int | None = None,
                       skip_special_tokens: bool = True) -> list[str]:
    """``tokenizer.batch_decode`` where an id V + i is the i-th word of its row's ``source_oovs`` (V = vocab_size,
    default ``len(tokenizer)``). sequences [N, T]: N = k rows per source (``num_return_sequences``) are matched to
    ``source_oovs`` by k = N / len(source_oovs)."""
    vocab_size = len(tokenizer) if vocab_size is None else vocab_size
    sequences = [[int(token) for token in row] for row in sequences]
    if not source_oovs or len(sequences) % len(source_oovs):
        raise ValueError(f"`sequences` must have k rows per entry of `source_oovs` ({len(source_oovs)}), got "
                         f"{len(sequences)} rows.")
    per_source = len(sequences) // len(source_oovs)
    special = set(tokenizer.all_special_ids) if skip_special_tokens else set()
    return [tokenizer.convert_tokens_to_string(tokens_with_copies(
        tokenizer, [token for token in ids if token not in special], source_oovs[row // per_source], vocab_size,
        name=f"sequences[{row}]")) for row, ids in enumerate(sequences)]


def tokens_with_copies(tokenizer, ids: Sequence[int], source_oovs: Sequence[str], vocab_size: int | None = None,
                       name: str = "ids") -> list[str]:
    """``tokenizer.convert_ids_to_tokens(ids)``, where an id V + i is the source's word ``source_oovs[i]``."""
    vocab_size = len(tokenizer) if vocab_size is None else vocab_size
    tokens = []
    for token in ids:
        if token >= vocab_size and token - vocab_size >= len(source_oovs):
            raise ValueError(f"`{name}` holds id {token}, beyond the vocabulary ({vocab_size}) and its source's "
                             f"{len(source_oovs)} copied words.")
        tokens.append(source_oovs[token - vocab_size] if token >= vocab_size else tokenizer.convert_ids_to_tokens(token))
    return tokens


__getattr__ = old_names(__name__, {"DataCollatorForCopying": _DataCollatorForCopying})
