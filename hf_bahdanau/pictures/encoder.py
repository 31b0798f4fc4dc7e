"""The encoder's own weights over one text, for any model class: its self-attention (``encoder_self_attention``) and
the mixture of a meta-embedding's sources (``meta_embedding_sources``).

    figures = plot_encoder_text(model, tokenizer, text)  # {"encoder_self_attention": ..., "embedding_mixture": ...}
    plot_encoder_self_attention(outputs.encoder_attentions[0][b, 0], tokens, attention_mask=mask[b])  # α [S, S]
    plot_embedding_mixture(outputs.embedding_attentions[b], tokens, config.meta_embedding_sources, mask[b])  # [S, K]
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .alignment import plot_alignment
from .common import _as_array, _check_token_count, _heat_map_axes, _ink

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["VALUES_UP_TO", "plot_embedding_mixture", "plot_encoder_self_attention", "plot_encoder_text"]

VALUES_UP_TO = 30  # plot_embedding_mixture writes the weights in the cells of texts of at most this many tokens


def plot_encoder_self_attention(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    attention_mask: torch.Tensor | np.ndarray | None = None,
    path: str | PathLike | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """The encoder's self-attention over one text (``encoder_self_attention``): α [S, S] with α_jk =
    softmax_k(score(h_j, h_k)), row j = what token j attended to (``outputs.encoder_attentions[0][b, 0]``), drawn like
    ``plot_alignment`` with the tokens along the top and down the side. attention_mask [S] (1 = real token): only the
    real rows and columns are drawn, so a left- and a right-padded text give the same picture; tokens: the real
    tokens (all S without a mask)."""
    weights = _as_array(weights)
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
        raise ValueError(f"`weights` must be one text's self-attention α [S, S], got {list(weights.shape)}.")
    keep = _text_mask(attention_mask, weights.shape[0], tokens)
    return plot_alignment(weights[keep][:, keep], tokens, tokens, path=path,
                          ax=_heat_map_axes(tokens, len(tokens)) if ax is None else ax, title=title)


def plot_embedding_mixture(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    sources: Sequence[str],
    attention_mask: torch.Tensor | np.ndarray | None = None,
    path: str | PathLike | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """How much each token's embedding takes from each source of a meta-embedding (``meta_embedding_sources``):
    α [S, K], x̃_i = Σ_j α_ij (P_j w_ij + b_j) (``outputs.embedding_attentions[b]``, real rows sum to 1), drawn as a
    K x S heat map, the sources (``config.meta_embedding_sources``, in that order) down the side and the tokens along
    the top, each weight written in its cell when there are at most ``VALUES_UP_TO`` tokens. attention_mask [S] and
    tokens as ``plot_encoder_self_attention``'s."""
    weights = _as_array(weights)
    if weights.ndim != 2 or weights.shape[1] != len(sources):
        raise ValueError(f"`weights` must be one text's mixing weights α [S, K] with K = len(sources) = "
                         f"{len(sources)}, got {list(weights.shape)}.")
    rows = weights[_text_mask(attention_mask, weights.shape[0], tokens)].T  # [K, S_real]
    ax = _heat_map_axes(tokens, len(sources)) if ax is None else ax
    figure = plot_alignment(rows, tokens, sources, ax=ax, title=title)
    if len(tokens) <= VALUES_UP_TO:
        for (source, token), weight in np.ndenumerate(rows):
            ax.text(token, source, f"{weight:.2f}", ha="center", va="center", fontsize=6,
                    color=_ink(1.0 - weight))  # white on black (0), black on white (1)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def _text_mask(attention_mask: torch.Tensor | np.ndarray | None, length: int, tokens: Sequence[str]) -> np.ndarray:
    """[S] bool: one text's positions drawn (all without a mask), one per token of ``tokens``."""
    keep = np.ones(length, dtype=bool) if attention_mask is None else _as_array(attention_mask) != 0
    if keep.shape != (length,):
        raise ValueError(f"`attention_mask` must be one text's mask [S] = [{length}] like the weights, got "
                         f"{list(keep.shape)}.")
    _check_token_count(keep, tokens, "tokens", attention_mask is not None)
    return keep


def plot_encoder_text(model: Any, tokenizer: Any, text: str | Sequence[str],
                      **tokenizer_options: Any) -> dict[str, Figure]:
    """The encoder's weights over ``text`` for each option ``model`` (any model class with a token encoder) has on:
    "encoder_self_attention" (``plot_encoder_self_attention``) and "embedding_mixture" (``plot_embedding_mixture``);
    {} with neither. The text goes through ``tokenizer(text, **tokenizer_options)`` (e.g. is_split_into_words=True)
    and ``model.model.encoder``. A hierarchical classifier's encoder reads each sentence alone: its sentences are
    drawn one after another and the self-attention is block-diagonal (0 across sentences)."""
    config = model.config
    if config.encoder_self_attention is None and config.meta_embedding_sources is None:
        return {}
    encoding = tokenizer(text, return_tensors="pt", **tokenizer_options).to(model.device)
    ids, mask = encoding["input_ids"], encoding["attention_mask"]
    hierarchical = getattr(config, "hierarchical", False)  # a field of the classifiers' config alone
    if hierarchical:  # the text's non-empty sentences as a batch [N, W], as the classifier encodes them
        sentences, word_mask = model.split_sentences(ids, mask)
        real = word_mask[0].bool().any(-1)
        ids, mask = sentences[0][real], word_mask[0][real]
    model.eval()
    with torch.no_grad():
        encoded = model.model.encoder(input_ids=ids, attention_mask=mask, output_attentions=True, return_dict=True)
    keep = mask.bool()
    tokens = [token for row, row_keep in zip(ids, keep) for token in tokenizer.convert_ids_to_tokens(row[row_keep])]
    figures = {}
    if encoded.attentions is not None:
        blocks = [weights[0][row_keep][:, row_keep] for weights, row_keep in zip(encoded.attentions[0], keep)]
        figures["encoder_self_attention"] = plot_encoder_self_attention(
            torch.block_diag(*blocks), tokens, title=f"self-attention ({config.encoder_self_attention})"
            + ("\nwithin each sentence" if hierarchical else ""))
    if encoded.embedding_attentions is not None:
        figures["embedding_mixture"] = plot_embedding_mixture(
            encoded.embedding_attentions[keep], tokens, config.meta_embedding_sources,
            title="embedding mixture")
    return figures
