"""Filling a meta-embedding's data from the tokenizer: the spellings of the ``"chars"`` source, and the fixed vectors of
the ``"pretrained"`` source read from a GloVe / word2vec / fastText text file.

    model = BahdanauForSequenceClassification(BahdanauConfig(..., meta_embedding_sources=["word", "chars", "pretrained"],
                                                              pretrained_embedding_size=300))
    prepare_meta_embedding(model, tokenizer, vectors_file="glove.6B.300d.txt")
"""

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

__all__ = ["prepare_meta_embedding", "read_word_vectors"]

logger = logging.getLogger(__name__)


def read_word_vectors(path: str | Path, tokens: Sequence[str | None]) -> tuple[Tensor, int]:
    """The vectors of ``tokens`` in a text file of lines ``word v_1 … v_P`` (GloVe; word2vec's and fastText's .vec
    files, whose first line ``count P`` is skipped), as a float32 tensor [len(tokens), P] (row i: ``tokens[i]``'s
    vector, else its lower-cased form's, else 0) and how many tokens were found. A word may hold spaces: the last P
    fields of a line are its vector. A token None (``convert_ids_to_tokens`` of an id the tokenizer lacks) has no
    vector. Only the vectors of ``tokens`` are kept, so the file may be large."""
    if isinstance(tokens, str):
        raise TypeError("`tokens` must be a sequence of strings (row i: tokens[i]'s vector), got one string.")
    for index, token in enumerate(tokens):
        if token is not None and not isinstance(token, str):
            raise TypeError(f"`tokens[{index}]` must be a string (or None: no vector), got {token!r} "
                            f"({type(token).__name__}).")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"`path` must be a text file of word vectors, got {str(path)!r}, which is not a file.")
    wanted = {text for token in tokens if token for text in (token, token.lower())}
    kept: dict[str, list[float]] = {}
    size = None
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").rstrip(" ").split(" ")
            if number == 1 and len(fields) == 2 and all(field.isdigit() for field in fields):
                continue  # word2vec / fastText header: count and size
            if size is None:
                size = _vector_size(fields, path, number)
            if len(fields) < size + 1:
                raise ValueError(f"`path` {str(path)!r} line {number}: expected a word and {size} numbers, got "
                                 f"{len(fields)} fields.")
            word = " ".join(fields[:-size])
            if word not in wanted:
                continue
            try:
                kept[word] = [float(field) for field in fields[-size:]]
            except ValueError:
                raise ValueError(f"`path` {str(path)!r} line {number}: the last {size} fields must be numbers.") from None
            if not all(map(math.isfinite, kept[word])):
                raise ValueError(f"`path` {str(path)!r} line {number}: the vector of {word!r} is not finite.")
    if size is None:
        raise ValueError(f"`path` {str(path)!r} holds no vectors.")
    vectors, found = torch.zeros(len(tokens), size), 0
    for row, token in enumerate(tokens):
        vector = kept.get(token, kept.get(token.lower())) if token else None
        if vector is not None:
            vectors[row], found = torch.tensor(vector), found + 1
    return vectors, found


def _vector_size(fields: list[str], path: Path, number: int) -> int:
    """P of the first vector line: the numbers at its end."""
    size = 0
    for field in reversed(fields[1:]):
        try:
            float(field)
        except ValueError:
            break
        size += 1
    if size == 0:
        raise ValueError(f"`path` {str(path)!r} line {number}: expected a word and its vector's numbers.")
    return size


def prepare_meta_embedding(model, tokenizer, vectors_file: str | Path | None = None) -> None:
    """Fill what ``model``'s meta-embedding (``config.meta_embedding_sources``) reads from outside: the spellings of
    the tokenizer's tokens for ``"chars"``, and the vectors of ``vectors_file`` for ``"pretrained"`` (needed for a new
    model; a loaded one keeps its own unless a file is given). Nothing to do without a meta-embedding."""
    sources = model.config.meta_embedding_sources or []
    if vectors_file is not None and "pretrained" not in sources:
        raise ValueError(f"`vectors_file` is given, but `meta_embedding_sources` is "
                         f"{model.config.meta_embedding_sources!r}, without 'pretrained'.")
    tokens = [token or "" for token in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))]
    if "chars" in sources:
        model.set_token_spellings(tokens)
    if vectors_file is not None:
        vectors, found = read_word_vectors(vectors_file, tokens)
        if vectors.shape[1] != model.config.pretrained_embedding_size:
            raise ValueError(f"`vectors_file` holds vectors of size {vectors.shape[1]}, but the model's "
                             f"`pretrained_embedding_size` is {model.config.pretrained_embedding_size}.")
        model.set_pretrained_vectors(vectors)
        logger.info("Pretrained vectors for %d of %d tokens from %s", found, len(tokens), vectors_file)
