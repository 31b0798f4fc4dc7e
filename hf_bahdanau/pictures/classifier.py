"""A classifier's attention: the pooling weights of a ``BahdanauForSequenceClassification`` (any ``pooling_type``, flat
or HAN), one panel per text, and HAN's two levels over a document (Yang et al., 2016, figure 5).

    plot_classifier_texts(model, tokenizer, texts, true_labels=labels, path="attention.png")
    plot_classifier_attention(model.config, outputs.attentions, tokens, attention_mask=mask)  # from an output
    plot_document_attention(outputs.attentions[0][b], outputs.attentions[1][b], sentences)  # HAN, one document
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .common import _CHARACTER, _as_array, _check_token_count, _draw_rows, _ink, _rows_size

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure


__all__ = ["plot_classifier_attention", "plot_classifier_texts", "plot_document_attention"]


# HAN's document: sentences and words ---------------------------------------------------------------------------------


def plot_document_attention(
    word_weights: torch.Tensor | np.ndarray,
    sentence_weights: torch.Tensor | np.ndarray,
    sentences: Sequence[Sequence[str]],
    path: str | PathLike | None = None,
    title: str | None = None,
) -> Figure:
    """HAN's two levels of attention over a document, as in Yang et al. (2016), figure 5: one line per sentence,
    its weight β_i as a red bar on the left, each word shaded blue by its weight α_ij within the sentence.

    word_weights [N, W] and sentence_weights [N] (``attentions[0][b]`` and ``attentions[1][b]`` of a hierarchical
    ``BahdanauForSequenceClassification`` with ``output_attentions=True``); sentences: the N sentences' words
    (``sentences[i]`` has at most W words; the rest of row i is padding). Saved to ``path`` if given.
    """
    from matplotlib.figure import Figure

    word_weights, sentence_weights = _as_array(word_weights), _as_array(sentence_weights)
    _check_document(word_weights, sentence_weights, sentences)
    figure = Figure(figsize=_document_size(sentences), layout="constrained")
    _draw_document(figure, title, word_weights, sentence_weights, sentences)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def _check_document(word_weights: np.ndarray, sentence_weights: np.ndarray, sentences: Sequence[Sequence[str]],
                    names: tuple[str, str, str] = ("word_weights", "sentence_weights", "sentences")) -> None:
    if word_weights.ndim != 2 or sentence_weights.shape != (word_weights.shape[0],) or len(sentences) > len(
            sentence_weights) or any(len(words) > word_weights.shape[1] for words in sentences):
        raise ValueError(
            f"`{names[0]}` must be [N, W] and `{names[1]}` [N], with at most N {names[2]} of at most W words; "
            f"got {list(word_weights.shape)}, {list(sentence_weights.shape)} and {len(sentences)} {names[2]} of up "
            f"to {max((len(words) for words in sentences), default=0)} words."
        )


def _document_size(sentences: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(width, height) in inches of ``_draw_document``'s picture."""
    characters = max((sum(len(word) + 1 for word in words) for words in sentences), default=1)
    return 1.0 + characters * _CHARACTER, 0.6 + 0.32 * len(sentences)


def _draw_document(figure: Figure | SubFigure, title: str | None, word_weights: np.ndarray,
                   sentence_weights: np.ndarray, sentences: Sequence[Sequence[str]], note: str = "") -> None:
    """``plot_document_attention``'s picture on ``figure`` (checked arrays), titled ``title`` and ``note``."""
    from matplotlib import colormaps

    ax = figure.add_subplot()
    blues, reds = colormaps["Blues"], colormaps["Reds"]
    for row, words in enumerate(sentences):
        ax.text(0.0, -row, f"{sentence_weights[row]:.2f}", family="monospace", va="center", ha="left",
                color=_ink(sentence_weights[row]),
                bbox=dict(facecolor=reds(float(sentence_weights[row])), edgecolor="none", pad=1.5))
        column = 6
        for word, weight in zip(words, word_weights[row]):
            ax.text(column, -row, word, family="monospace", va="center", ha="left", color=_ink(weight),
                    bbox=dict(facecolor=blues(float(weight)), edgecolor="none", pad=1.5))
            column += len(word) + 1
    ax.set_xlim(-0.5, 6 + (_document_size(sentences)[0] - 1.0) / _CHARACTER)
    ax.set_ylim(-len(sentences) + 0.5, 0.5)
    ax.set_axis_off()
    heading = "\n".join(line for line in (title, note) if line)
    if heading:
        ax.set_title(heading)


# A classifier's pooling weights ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PoolingRows:
    """Where one text's weights of a ``pooling_type`` keep the tokens, and what lies along their other axis:
    ``size_field`` (a config field; None: the weights are one distribution [S]) rows named ``row_name``."""

    token_axis: int
    size_field: str | None = None
    size_symbol: str = ""
    row_name: str = "α"

    def layout(self, tokens: Any, size: Any) -> list:
        """One text's axes in order, given what to write for the token axis and for the other one: its shape
        ``layout(S, config.<size_field>)``, or its shape in words ``layout("S", "r=4")``."""
        if self.size_field is None:
            return [tokens]
        return [tokens, size] if self.token_axis == 0 else [size, tokens]

    def rows(self, weights: np.ndarray) -> np.ndarray:
        """One text's weights (checked) -> [R, S]: one row, the r rows of A, or the D features' distributions."""
        return np.moveaxis(weights, self.token_axis, -1).reshape(-1, weights.shape[self.token_axis])


# One entry per ``axes.POOLINGS`` name (a test keeps them in step): the weights of ``BahdanauSequenceClassifierOutput``.
_POOLING_ROWS = {
    "context_vector": _PoolingRows(token_axis=0),  # α [S]
    "self_attentive": _PoolingRows(token_axis=1, size_field="self_attention_rows", size_symbol="r",
                                   row_name="row"),  # A [r, S]
    "multi_dimensional": _PoolingRows(token_axis=0, size_field="encoder_output_size", size_symbol="D",
                                      row_name="feature"),  # α [S, D]
    "final_state": _PoolingRows(token_axis=0, row_name="read"),  # [S]: where the final states were read
}


def plot_classifier_attention(
    config: Any,
    attentions: Sequence[torch.Tensor | np.ndarray],
    tokens: Sequence[Sequence[str]] | Sequence[Sequence[Sequence[str]]],
    attention_mask: torch.Tensor | np.ndarray | None = None,
    titles: Sequence[str] | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """What a ``BahdanauForSequenceClassification`` attended to, one panel per text, chosen by ``config``:

    - flat, ``pooling_type="context_vector"``: α [S] as one row over the tokens;
    - flat, ``"self_attentive"``: the mean of A's r rows, then A [r, S] itself, labelled "row 1" … "row r";
    - flat, ``"multi_dimensional"``: the mean over the D features, then α [S, D] as a D × S map, the features
      ordered by the token they peak on (ties: by feature index), so that features reading one token lie together;
    - hierarchical (HAN): ``plot_document_attention``'s sentences, each word shaded by its weight in its sentence
      and each sentence by its weight (with several rows or features per level: their mean, said in the title).

    Flat panels draw each matrix in grey from black (0) to white (its largest weight), with the scale beside it.
    attentions: ``outputs.attentions`` (batch of B); tokens: flat, the B texts' real tokens (with
    ``attention_mask`` [B, S], the positions it marks; without, all S); hierarchical, the B texts' sentences
    (lists of words; sentences and words right-padded as ``model.split_sentences`` gives them). titles: one per text.
    """
    from matplotlib.figure import Figure

    panels = _classifier_panels(config, attentions, tokens, attention_mask)
    if titles is not None and len(titles) != len(panels):
        raise ValueError(f"`titles` must have one title per text ({len(panels)}), got {len(titles)}.")
    sizes = [size for size, _ in panels]
    figure = Figure(figsize=(max(width for width, _ in sizes), sum(height for _, height in sizes)),
                    layout="constrained")
    areas = [figure] if len(panels) == 1 else figure.subfigures(len(panels), 1,
                                                                height_ratios=[height for _, height in sizes])
    for area, (_, draw), title in zip(areas, panels, titles or [None] * len(panels)):
        draw(area, title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def plot_classifier_texts(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    true_labels: Sequence[str] | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """Classify ``texts`` (one padded batch) with a ``BahdanauForSequenceClassification`` and draw its attention with
    ``plot_classifier_attention``, each panel titled "predicted: <label>" (and "· true: <label>" from
    ``true_labels``). Regression: the value; multi-label: the labels whose logit is above 0."""
    if true_labels is not None and len(true_labels) != len(texts):
        raise ValueError(f"`true_labels` must have one label per text ({len(texts)}), got {len(true_labels)}.")
    encoding = tokenizer(list(texts), padding=True, return_tensors="pt").to(model.device)
    model.eval()
    with torch.no_grad():
        outputs = model(**encoding, output_attentions=True)
    ids, mask = encoding["input_ids"], encoding["attention_mask"]
    if model.config.hierarchical:
        sentences, word_mask = model.split_sentences(ids, mask)
        tokens = [[tokenizer.convert_ids_to_tokens(words[keep.bool()]) for words, keep in zip(text, text_mask)
                   if keep.any()] for text, text_mask in zip(sentences, word_mask)]
        mask = None
    else:
        tokens = [tokenizer.convert_ids_to_tokens(row[keep.bool()]) for row, keep in zip(ids, mask)]
    titles = [f"predicted: {_prediction(model.config, logits)}" for logits in outputs.logits]
    if true_labels is not None:
        titles = [f"{title} · true: {label}" for title, label in zip(titles, true_labels)]
    return plot_classifier_attention(model.config, outputs.attentions, tokens, mask, titles, path)


def _prediction(config: Any, logits: torch.Tensor) -> str:
    """One text's logits [num_labels] as words: the value (regression), the labels above 0 (multi-label), the label."""
    if config.problem_type == "regression" or config.num_labels == 1:
        return ", ".join(f"{value:.3g}" for value in logits.tolist())
    if config.problem_type == "multi_label_classification":
        return ", ".join(config.id2label[index] for index in (logits > 0).nonzero().flatten().tolist()) or "none"
    return config.id2label[int(logits.argmax())]


def _classifier_panels(config: Any, attentions: Sequence[torch.Tensor | np.ndarray], tokens: Sequence,
                       attention_mask: torch.Tensor | np.ndarray | None) -> list:
    """[((width, height), draw(figure, title))] per text, the weights checked against ``config``."""
    pooling = _POOLING_ROWS.get(config.pooling_type)
    if pooling is None:
        raise ValueError(f"`config.pooling_type` must be one of {sorted(_POOLING_ROWS)}, got {config.pooling_type!r}.")
    levels = 2 if config.hierarchical else 1
    if attentions is None:
        raise ValueError("`attentions` is None: call the model with output_attentions=True.")
    if len(attentions) != levels:
        raise ValueError(f"`attentions` of a {'hierarchical' if levels == 2 else 'flat'} classifier must hold {levels} "
                         f"tensor(s) (the output's `attentions`), got {len(attentions)}.")
    if not tokens:
        raise ValueError("`tokens` must hold the tokens of at least one text, got none.")
    if levels == 1:
        weights = _batch_weights(attentions[0], config, pooling, ["batch"], "S", "attentions[0]", len(tokens))
        mask = _flat_mask(attention_mask, weights.shape[1 + pooling.token_axis], tokens)
        panels = []
        for keep, text_tokens, text_weights in zip(mask, tokens, weights):
            rows = pooling.rows(text_weights)[:, keep]
            panels.append((_rows_size(rows, text_tokens, pooling.row_name),
                           partial(_draw_rows, rows=rows, tokens=text_tokens, row_name=pooling.row_name)))
        return panels
    if attention_mask is not None:
        raise ValueError("`attention_mask` is for flat classifiers: a hierarchical one's sentences and words are "
                         "right-padded (model.split_sentences), so give each text's sentences as `tokens`.")
    words = _batch_weights(attentions[0], config, pooling, ["batch", "N"], "W", "attentions[0]", len(tokens))
    sentences = _batch_weights(attentions[1], config, pooling, ["batch"], "N", "attentions[1]", len(tokens))
    if words.shape[1] != sentences.shape[1 + pooling.token_axis]:
        raise ValueError(f"`attentions[0]` and `attentions[1]` must cover the same N sentences, got "
                         f"{list(words.shape)} and {list(sentences.shape)}.")
    note = "" if pooling.size_field is None else (
        f"(the mean of the {getattr(config, pooling.size_field)} {pooling.row_name}s at each level)")
    panels = []
    for number, (text, word_weights, sentence_weights) in enumerate(zip(tokens, words, sentences)):
        word_means = np.stack([pooling.rows(sentence).mean(0) for sentence in word_weights])  # [N, W]
        sentence_means = pooling.rows(sentence_weights).mean(0)  # [N]
        _check_document(word_means, sentence_means, text, (f"attentions[0][{number}]", f"attentions[1][{number}]",
                                                           f"tokens[{number}] sentences"))
        panels.append((_document_size(text), partial(_draw_document, word_weights=word_means,
                                                     sentence_weights=sentence_means, sentences=text, note=note)))
    return panels


def _batch_weights(weights: torch.Tensor | np.ndarray, config: Any, pooling: _PoolingRows, leading: list[str],
                   tokens: str, name: str, batch_size: int) -> np.ndarray:
    """``weights`` as an array, checked to be [*leading, one text's shape] with leading[0] = batch_size texts."""
    weights = _as_array(weights)
    size = None if pooling.size_field is None else getattr(config, pooling.size_field)
    expected = len(leading) + len(pooling.layout(tokens, size))
    length = weights.shape[len(leading) + pooling.token_axis] if weights.ndim == expected else 0
    if weights.ndim != expected or weights.shape[0] != batch_size or (
            list(weights.shape[len(leading):]) != pooling.layout(length, size)):
        shape = ", ".join(leading + pooling.layout(tokens, f"{pooling.size_symbol}={size}"))
        raise ValueError(f"`{name}` of a {config.pooling_type} classifier must be [{shape}] with batch = "
                         f"{batch_size} (one per text of `tokens`), got {list(weights.shape)}.")
    return weights


def _flat_mask(attention_mask: torch.Tensor | np.ndarray | None, length: int,
               tokens: Sequence[Sequence[str]]) -> np.ndarray:
    """[B, S] bool: the positions drawn (all without a mask); each text's count must be its number of tokens."""
    mask = np.ones((len(tokens), length), dtype=bool) if attention_mask is None else _as_array(attention_mask) != 0
    if mask.shape != (len(tokens), length):
        raise ValueError(f"`attention_mask` must be [batch, S] = {[len(tokens), length]} like the weights, got "
                         f"{list(mask.shape)}.")
    for number, (keep, text_tokens) in enumerate(zip(mask, tokens)):
        _check_token_count(keep, text_tokens, f"tokens[{number}]", attention_mask is not None)
    return mask
