"""Checks of what a model is given: token ids, label ids, embeddings and their shapes.

Every public forward checks its own arguments once, before any tensor operation could fail inside torch with a
message that names none of them. A bad argument raises ``ValueError`` (``TypeError`` for a wrong type) that names
it, the bad value or shape, and what is allowed. Each check reads its tensor's range in one reduction and one
host sync; masks are checked by ``padding.check_attention_mask``. While ``torch.export`` traces a model (the ONNX
export), the checks of tensor values step aside (``exporting``): a graph cannot branch on the values it will be
given. Types and shapes are still checked, and every eager call is checked in full.
"""

import torch
from torch import Tensor

__all__ = ["check_class_labels", "check_embeddings", "check_one_source", "check_rows_per_source", "check_token_ids",
           "exporting", "require_tensor"]

IGNORE_INDEX = -100


def exporting() -> bool:
    """Whether ``torch.export`` is tracing this call (``torch.onnx.export(..., dynamo=True)`` does): the value checks
    step aside then. False on a torch without ``torch.compiler.is_exporting``, which cannot trace these models
    that way."""
    is_exporting = getattr(torch.compiler, "is_exporting", None)
    return is_exporting is not None and is_exporting()


def require_tensor(name: str, value) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}.")
    return value


def check_token_ids(name: str, ids: Tensor, vocab_size: int, *, dims: int = 2, ignore_index: int | None = None,
                    what: str = "[batch, tokens]", values: bool = True) -> None:
    """ids: an integer tensor of ``dims`` dimensions, none of them empty, every value in [0, vocab_size) or
    ``ignore_index``. ``values`` False: the dtype and shape only, for the ids a search picked and feeds back through
    a cache (checking their range would bring them to the host at every decoding step)."""
    require_tensor(name, ids)
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"`{name}` must be an integer tensor of token ids, got dtype {ids.dtype}.")
    _check_shape(name, ids, dims, what)
    if exporting() or not values:
        return
    lowest, highest = torch.aminmax(ids if ignore_index is None else ids.masked_fill(ids == ignore_index, 0))
    lowest, highest = torch.stack([lowest, highest]).tolist()
    if lowest < 0 or highest >= vocab_size:
        bad = lowest if lowest < 0 else highest
        allowed = f"[0, {vocab_size})" + ("" if ignore_index is None else f" or {ignore_index} (ignored)")
        raise ValueError(f"`{name}` must hold ids in {allowed}, got {bad}.")


def check_class_labels(name: str, labels: Tensor, num_labels: int, shape: tuple[int, ...]) -> None:
    """Class ids of ``shape`` in [0, num_labels), or -100 (ignored)."""
    require_tensor(name, labels)
    if tuple(labels.shape) != tuple(shape):
        raise ValueError(f"`{name}` must have shape {list(shape)}, got {list(labels.shape)}.")
    check_token_ids(name, labels, num_labels, dims=len(shape), ignore_index=IGNORE_INDEX, what=str(list(shape)))


def check_embeddings(name: str, embeddings: Tensor, width: int, *, dims: int = 3,
                     what: str = "[batch, tokens, embedding_size]") -> None:
    """A floating-point tensor of ``dims`` dimensions, none empty, whose last dimension is ``width``."""
    require_tensor(name, embeddings)
    if not embeddings.dtype.is_floating_point:
        raise TypeError(f"`{name}` must be a floating-point tensor, got dtype {embeddings.dtype}.")
    _check_shape(name, embeddings, dims, what)
    if embeddings.shape[-1] != width:
        raise ValueError(f"`{name}` must be {what} with a last dimension of {width}, got shape "
                         f"{list(embeddings.shape)}.")


def check_one_source(ids_name: str, ids: Tensor | None, embeds_name: str, embeds: Tensor | None) -> Tensor:
    """Exactly one of ids and embeddings is given; returns it."""
    if (ids is None) == (embeds is None):
        given = "both" if ids is not None else "neither"
        raise ValueError(f"Pass exactly one of `{ids_name}` and `{embeds_name}`; got {given}.")
    return ids if ids is not None else embeds


def check_rows_per_source(rows_per_source: int) -> None:
    """k decoder rows per source: a positive int (a bool is not one)."""
    if isinstance(rows_per_source, bool) or not isinstance(rows_per_source, int) or rows_per_source < 1:
        raise ValueError(f"`rows_per_source` must be a positive int (the decoder rows of each source, e.g. the beams "
                         f"of beam search), got {rows_per_source!r}.")


def _check_shape(name: str, tensor: Tensor, dims: int, what: str) -> None:
    if tensor.dim() != dims:
        raise ValueError(f"`{name}` must be {what} ({dims} dimensions), got shape {list(tensor.shape)}.")
    if 0 in tensor.shape:
        raise ValueError(f"`{name}` must have at least one row and one token, got shape {list(tensor.shape)}.")
