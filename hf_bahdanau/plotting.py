"""Alignment pictures: the soft alignments α_ij of ``generate()`` as a labelled heat map (Bahdanau et al., figure 3).

    out = model.generate(**batch, output_attentions=True, return_dict_in_generate=True)   # greedy or beam
    weights = alignments_from_generate(out, index=0, eos_token_id=tokenizer.eos_token_id)  # [T, S] (alignments.py)
    plot_alignment(weights, source_tokens, target_tokens, path="alignment.png")

A classifier's pooling weights (any ``pooling_type``, flat or HAN), one panel per text:

    plot_classifier_texts(model, tokenizer, texts, true_labels=labels, path="attention.png")
    plot_classifier_attention(model.config, outputs.attentions, tokens, attention_mask=mask)  # from an output

The encoder's own weights over one text, for any model class (``encoder_self_attention``, ``meta_embedding_sources``):

    figures = plot_encoder_text(model, tokenizer, text)  # {"encoder_self_attention": ..., "embedding_mixture": ...}
    plot_encoder_self_attention(outputs.encoder_attentions[0][b, 0], tokens, attention_mask=mask[b])  # α [S, S]
    plot_embedding_mixture(outputs.embedding_attentions[b], tokens, config.meta_embedding_sources, mask[b])  # [S, K]

A memory network's attention over its memory sentences, one column per hop:

    plot_memory_hops(story, question, answered["hop_attentions"], answer=answered["answer"], path="hops.png")

An image-to-text model's attention over the image's regions, one panel per output token (Xu et al., 2015):

    plot_image_attention(image, tokens, weights, grid=(3, 15), path="tokens.png")  # weights α [T, 45]
    maps = attention_maps(weights, grid=(3, 15), image_size=image.shape[:2])  # α over the pixels [T, H, W]

A co-attention (VQA) model's weights over the question's words and the image's regions, one row per question level:

    plot_vqa_example(model, processor, tokenizer, image, "what color is the shape?", path="coattention.png")
    plot_coattention(image, tokens, question_weights, image_weights, grid=(8, 8), levels=["word", "phrase"])

matplotlib is optional: it is imported inside the plotting functions (``pip install matplotlib``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

__all__ = ["attention_maps", "plot_alignment", "plot_classifier_attention", "plot_classifier_texts", "plot_coattention",
           "plot_document_attention", "plot_embedding_mixture", "plot_encoder_self_attention", "plot_encoder_text",
           "plot_image_attention", "plot_memory_hops", "plot_token_attention", "plot_vqa_example"]

BLANK = "␣"  # how a whitespace token is labelled


def _label(token: str) -> str:
    return BLANK if token.isspace() else token


def plot_alignment(
    weights: torch.Tensor | np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    path: str | PathLike | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    p_gen: torch.Tensor | np.ndarray | None = None,
) -> Figure:
    """Heat map of α [T, S]: source tokens along the top (x), output tokens down the side (y), white = 1, black = 0.

    Draws on ``ax`` if given (else on a new figure sized to the tokens) and saves to ``path`` if given.
    Whitespace tokens are labelled "␣". p_gen [T]: a pointer-generator's probability of generating each output
    token from the vocabulary (1 − p_gen: of copying it with α), drawn as a last column after a gap.
    """
    from matplotlib.figure import Figure

    weights = _as_array(weights)
    expected = (len(target_tokens), len(source_tokens))
    if weights.ndim != 2 or weights.shape != expected:
        raise ValueError(
            f"`weights` must have shape [len(target_tokens), len(source_tokens)] = {list(expected)}, got "
            f"{list(weights.shape)}."
        )
    if p_gen is not None:
        p_gen = _as_array(p_gen)
        if p_gen.shape != expected[:1]:
            raise ValueError(f"`p_gen` must have one value per target token ({expected[0]}), got shape "
                             f"{list(p_gen.shape)}.")
        gap = np.full((expected[0], 1), np.nan)  # drawn blank
        weights = np.concatenate([weights, gap, p_gen[:, None]], axis=1)
        source_tokens, expected = [*source_tokens, "", "p_gen"], (expected[0], expected[1] + 2)
    if ax is None:
        figure = Figure(figsize=(1.5 + 0.3 * expected[1], 1.2 + 0.3 * expected[0]), layout="constrained")
        ax = figure.add_subplot()
    figure = ax.get_figure()
    ax.imshow(weights, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="equal")
    ax.set_xticks(range(expected[1]), [_label(token) for token in source_tokens], rotation=90)
    ax.set_yticks(range(expected[0]), [_label(token) for token in target_tokens])
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    if title is not None:
        ax.set_title(title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def _as_array(weights: torch.Tensor | np.ndarray) -> np.ndarray:
    return np.asarray(weights.detach().cpu().float() if isinstance(weights, torch.Tensor) else weights)


def plot_token_attention(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    tags: Sequence[str] | None = None,
    path: str | PathLike | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """The tagger's attention over the words of a sentence.

    weights: α [S] (the context-vector tagger's one distribution: a single row) or [S, S] (row t = what token
    t attended to, e.g. ``outputs.attentions[0][b, 0]`` cut to the real tokens); tokens: the S words; tags: the
    predicted tag of each word, written under it. Drawn like ``plot_alignment``, saved to ``path`` if given.
    """
    weights = _as_array(weights)
    if weights.ndim not in (1, 2) or weights.shape[-1] != len(tokens) or (weights.ndim == 2 and
                                                                          weights.shape[0] != len(tokens)):
        raise ValueError(
            f"`weights` must have shape [len(tokens)] or [len(tokens), len(tokens)] with len(tokens) = {len(tokens)}, "
            f"got {list(weights.shape)}."
        )
    if tags is not None and len(tags) != len(tokens):
        raise ValueError(f"`tags` must have one tag per token ({len(tokens)}), got {len(tags)}.")
    columns = list(tokens) if tags is None else [f"{token} · {tag}" for token, tag in zip(tokens, tags)]
    rows = ["α"] if weights.ndim == 1 else list(tokens)
    return plot_alignment(weights.reshape(len(rows), len(tokens)), columns, rows, path=path,
                          ax=_heat_map_axes(columns, len(rows)) if ax is None else ax, title=title)


def _heat_map_axes(columns: Sequence[str], row_count: int) -> Axes:
    """The axes of a new figure sized for ``plot_alignment``'s heat map of ``row_count`` rows under the rotated labels
    of ``columns``, with room for long labels (``plot_alignment``'s own figure has none)."""
    from matplotlib.figure import Figure

    label_height = 0.1 * max((len(column) for column in columns), default=0)
    figure = Figure(figsize=(1.5 + _TOKEN * len(columns), 1.2 + _TOKEN * row_count + label_height),
                    layout="constrained")
    return figure.add_subplot()


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


_CHARACTER = 0.11  # inches per character of the monospaced text


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


def _ink(weight: float) -> str:
    """Text colour on a shade of ``weight`` in [0, 1]: white where the shade is dark."""
    return "white" if weight > 0.6 else "black"


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

_TOKEN = 0.3  # inches per token column and per labelled row
_FEATURE = 0.05  # inches per feature row of a multi-dimensional pooling


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


def _check_token_count(keep: np.ndarray, tokens: Sequence[str], name: str, masked: bool) -> None:
    """``tokens`` (called ``name``) must have one token per position that ``keep`` [S] marks."""
    if keep.sum() != len(tokens):
        raise ValueError(f"`{name}` must have one token per real position ({int(keep.sum())}"
                         f"{' in attention_mask' if masked else ''}), got {len(tokens)}.")


def _map_heights(count: int, row_name: str) -> list[float]:
    """Heights in inches of ``_draw_rows``'s heat maps: one row; or the mean row, then the ``count`` rows."""
    if count == 1:
        return [_TOKEN]
    return [_TOKEN, max(count * (_FEATURE if row_name == "feature" else _TOKEN), 3 * _TOKEN)]


def _rows_size(rows: np.ndarray, tokens: Sequence[str], row_name: str) -> tuple[float, float]:
    """(width, height) in inches of ``_draw_rows``'s picture: the title, the tokens rotated on top, the maps."""
    label_height = 0.1 * max((len(_label(token)) for token in tokens), default=0)
    return 2.5 + _TOKEN * rows.shape[1], 0.8 + label_height + sum(_map_heights(len(rows), row_name))


def _draw_rows(figure: Figure | SubFigure, title: str | None, rows: np.ndarray, tokens: Sequence[str],
               row_name: str) -> None:
    """rows [R, S] over the tokens: a single row labelled α (or "read", where the final states were read); else their
    mean (one row) above them, labelled
    "row 1" … "row R", or, for features, ordered by the token each peaks on."""
    if row_name == "feature":
        rows = rows[np.argsort(rows.argmax(1), kind="stable")]
    labels = [row_name] if row_name in ("α", "read") else [f"row {number}" for number in range(1, len(rows) + 1)]
    maps = [(rows, labels)] if len(rows) == 1 else [(rows.mean(0, keepdims=True), ["mean"]), (rows, labels)]
    heights = _map_heights(len(rows), row_name)
    axes = figure.subplots(len(maps), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (matrix, labels), height in zip(axes, maps, heights):
        image = ax.imshow(matrix, cmap="gray", vmin=0.0, vmax=max(float(matrix.max()), np.finfo(np.float32).tiny),
                          interpolation="nearest", aspect="auto")
        figure.colorbar(image, ax=ax, aspect=max(1.5, height / 0.1), pad=0.01)
        if row_name == "feature" and len(matrix) > 1:
            ax.set_yticks([])
            ax.set_ylabel(f"{len(matrix)} features,\nby peak token")
        else:
            ax.set_yticks(range(len(labels)), labels)
        ax.set_xticks(range(len(tokens)), [_label(token) for token in tokens] if ax is axes[0] else [],
                      rotation=90)
        ax.tick_params(length=0, labeltop=ax is axes[0], labelbottom=False, top=False, bottom=False)
    if title is not None:
        figure.suptitle(title)


# The encoder's weights over one text --------------------------------------------------------------------------------

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
    if config.hierarchical:  # the text's non-empty sentences as a batch [N, W], as the classifier encodes them
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
            + ("\nwithin each sentence" if config.hierarchical else ""))
    if encoded.embedding_attentions is not None:
        figures["embedding_mixture"] = plot_embedding_mixture(
            encoded.embedding_attentions[keep], tokens, config.meta_embedding_sources,
            title="embedding mixture")
    return figures


# A memory network's hops ---------------------------------------------------------------------------------------------

SUPPORTING = "*"  # how plot_memory_hops marks a supporting fact's row


def plot_memory_hops(
    memory: Sequence[str],
    question: str,
    hop_attentions: torch.Tensor | np.ndarray | Sequence[Sequence[float]],
    *,
    answer: str | None = None,
    expected: str | None = None,
    supporting_facts: Sequence[int] | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """An end-to-end memory network's attention over its memory, hop by hop, as in Sukhbaatar et al. (2015),
    figure 2: one row per memory sentence (oldest at the top, its text as the label), one column per hop, each cell
    shaded and labelled by p^k_i = softmax_i(u^kᵀ m_i).

    hop_attentions [K, n]: row k is hop k + 1's weights over the n sentences of ``memory`` (the pipeline's
    ``hop_attentions``, or ``torch.stack(outputs.attentions)[:, b]`` cut to the story's real sentences), each in
    [0, 1]. supporting_facts: 0-based indices of the sentences the answer follows from; their rows are labelled
    "* " in bold. The title gives the question, and ``answer`` (the model's) and ``expected`` when given. The figure
    grows with n and with the longest sentence; saved to ``path`` if given.
    """
    from matplotlib.figure import Figure

    weights = check_hop_attentions(memory, hop_attentions)
    marked = check_supporting_facts(supporting_facts, len(memory))
    hops, sentences = weights.shape
    width = 1.5 + _CHARACTER * max(len(sentence) for sentence in memory) + 0.6 * hops
    figure = Figure(figsize=(max(width, 4.0), 1.4 + 0.25 * sentences), layout="constrained")
    ax = figure.add_subplot()
    rows = weights.T  # [n, K]
    image = ax.imshow(rows, cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
    for (sentence, hop), weight in np.ndenumerate(rows):
        ax.text(hop, sentence, f"{weight:.2f}", ha="center", va="center", fontsize=7, color=_ink(weight))
    ax.set_xticks(range(hops), [f"hop {hop}" for hop in range(1, hops + 1)])
    ax.set_yticks(range(sentences), [f"{SUPPORTING} {sentence}" if index in marked else sentence
                                     for index, sentence in enumerate(memory)])
    for index in marked:
        ax.get_yticklabels()[index].set_fontweight("bold")
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    figure.colorbar(image, ax=ax, pad=0.01, fraction=0.05)
    title = f"Q: {question}"
    given = [f"{name}: {text}" for name, text in (("answer", answer), ("expected", expected)) if text is not None]
    if given:
        verdict = "" if answer is None or expected is None else (" ✓" if answer == expected else " ✗")
        title += "\n" + " · ".join(given) + verdict
    if marked:
        title += f"\n({SUPPORTING} = supporting fact)"
    ax.set_title(title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def check_hop_attentions(memory: Sequence[str], hop_attentions: Any, where: str = "") -> np.ndarray:
    """``hop_attentions`` as a checked [K, n] float64 array, n = len(memory) > 0, every weight in [0, 1];
    ValueError naming ``where`` + the argument otherwise."""
    if isinstance(memory, str) or not all(isinstance(sentence, str) for sentence in memory) or not memory:
        raise ValueError(f"`{where}memory` must be a non-empty list of sentences (strings), got {memory!r:.200}.")
    name = f"`{where}hop_attentions`"
    try:
        weights = _as_array(hop_attentions).astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be [hops, sentences] numbers, got {hop_attentions!r:.200}.") from None
    if weights.ndim != 2 or weights.shape[0] == 0 or weights.shape[1] != len(memory):
        raise ValueError(f"{name} must be [hops, len(memory)] = [K, {len(memory)}] with K ≥ 1 (one row of "
                         f"weights per hop), got {list(weights.shape)}.")
    if not np.isfinite(weights).all() or (weights < 0).any() or (weights > 1).any():
        raise ValueError(f"{name} must be weights in [0, 1] (each hop's softmax over the memory; a model "
                         f"in linear start has none), got values from {np.nanmin(weights):.4g} to "
                         f"{np.nanmax(weights):.4g}{' and NaN' if np.isnan(weights).any() else ''}.")
    return weights


def check_supporting_facts(supporting_facts: Sequence[int] | None, count: int, where: str = "") -> set[int]:
    """The 0-based rows of ``supporting_facts``, each an int in [0, count); ValueError naming ``where`` + the
    argument otherwise."""
    if supporting_facts is None:
        return set()
    if isinstance(supporting_facts, str) or not all(
            isinstance(index, (int, np.integer)) and not isinstance(index, bool) for index in supporting_facts):
        raise ValueError(f"`{where}supporting_facts` must be a list of sentence indices (ints), got "
                         f"{supporting_facts!r:.200}.")
    bad = [int(index) for index in supporting_facts if not 0 <= index < count]
    if bad:
        raise ValueError(f"`{where}supporting_facts` must be 0-based indices into `{where}memory`, in [0, {count}), "
                         f"got {bad}.")
    return {int(index) for index in supporting_facts}


# An image-to-text model's attention over image regions ---------------------------------------------------------------

OVERLAY_OPACITY = 0.8  # plot_image_attention's (and the explorer's) overlay at a token's largest weight; 0 at weight 0


def check_image(image: Any, where: str = "") -> np.ndarray:
    """``image`` as a checked uint8 array [H, W] (grey) or [H, W, 3] (RGB), H, W ≥ 1: from a PIL image (modes other
    than L and RGB are converted to RGB), a uint8 array, or a float array in [0, 1] (rounded to 8 bits); ValueError
    naming ``where`` + "image" otherwise."""
    name = f"`{where}image`"
    if hasattr(image, "convert") and getattr(image, "mode", None) not in ("L", "RGB"):  # PIL: P, RGBA, I;16, ...
        image = image.convert("RGB")
    try:
        array = np.asarray(image)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array [H, W] or [H, W, 3], or a PIL image, got {image!r:.200}.") from None
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] != 3) or 0 in array.shape:
        raise ValueError(f"{name} must be [H, W] (grey) or [H, W, 3] (RGB) with H, W ≥ 1, got {list(array.shape)}.")
    if array.dtype == np.uint8:
        return array
    if not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"{name} must be uint8 (0 to 255) or float (0 to 1), got dtype {array.dtype}.")
    if not np.isfinite(array).all() or array.min() < 0 or array.max() > 1:
        raise ValueError(f"{name} must hold floats in [0, 1] (or be uint8), got values from {np.nanmin(array):.4g} "
                         f"to {np.nanmax(array):.4g}{' and NaN or inf' if not np.isfinite(array).all() else ''}.")
    return np.round(array * 255).astype(np.uint8)


def _positive_pair(value: Any, name: str, meaning: str) -> tuple[int, int]:
    """``value`` as two positive ints; ValueError naming ``name`` and saying what it is (``meaning``) otherwise."""
    try:
        pair = tuple(value)
    except TypeError:
        pair = ()
    if len(pair) != 2 or not all(isinstance(number, (int, np.integer)) and not isinstance(number, bool)
                                 and number > 0 for number in pair):
        raise ValueError(f"`{name}` must be two positive ints {meaning}, got {value!r:.200}.")
    return int(pair[0]), int(pair[1])


def check_image_attention(weights: Any, grid: Any, tokens: Sequence[str] | None = None,
                          where: str = "") -> tuple[np.ndarray, tuple[int, int]]:
    """(weights, grid) checked: weights α [T, L] as float64, each α_ti finite and ≥ 0, over the L = H'·W' regions of
    ``grid`` (H', W') flattened row-major (region i is row i // W', column i % W'), with T = len(tokens) when given;
    ValueError naming ``where`` + the argument otherwise."""
    grid = _positive_pair(grid, f"{where}grid", "(H', W'): the encoder's feature map, rows and columns of regions")
    name = f"`{where}weights`"
    try:
        array = (weights.detach().to("cpu", torch.float64).numpy() if isinstance(weights, torch.Tensor)
                 else np.asarray(weights, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be [T, L] numbers (tokens x regions), got {weights!r:.200}.") from None
    regions = grid[0] * grid[1]
    if array.ndim != 2 or array.shape[1] != regions:
        raise ValueError(f"{name} must be [T, L] with L = H'·W' = {grid[0]}·{grid[1]} = {regions} regions of "
                         f"`{where}grid`, got {list(array.shape)}.")
    if tokens is not None and len(tokens) != len(array):
        raise ValueError(f"`{where}tokens` must have one token per row of {name} ({len(array)}), got {len(tokens)}.")
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"{name} must be finite and ≥ 0 (each token's distribution over the regions), got values "
                         f"from {np.nanmin(array):.4g} to {np.nanmax(array):.4g}"
                         f"{' and NaN or inf' if not np.isfinite(array).all() else ''}.")
    return array, grid


def region_stride(grid: tuple[int, int], image_size: Any, stride: Any = None,
                  where: str = "") -> tuple[int, int]:
    """(sh, sw): the pixels of image rows and columns each region covers; region (r, c) covers rows [r·sh, (r+1)·sh)
    and columns [c·sw, (c+1)·sw). Without ``stride`` (the encoder's total downsampling), sh = ⌈H / H'⌉ and
    sw = ⌈W / W'⌉ for image_size (H, W) and grid (H', W'). The grid must cover the image: H'·sh ≥ H, W'·sw ≥ W."""
    height, width = _positive_pair(image_size, f"{where}image_size", "(H, W): the image's own height and width")
    if stride is None:
        return -(-height // grid[0]), -(-width // grid[1])
    rows, columns = _positive_pair(stride, f"{where}stride", "(sh, sw): the pixels per region, down and across")
    if grid[0] * rows < height or grid[1] * columns < width:
        raise ValueError(f"`{where}stride` {(rows, columns)} leaves pixels of the image ({height} x {width}) outside "
                         f"the grid {grid}: H'·sh = {grid[0] * rows} and W'·sw = {grid[1] * columns} must be at least "
                         "H and W.")
    return rows, columns


def attention_maps(weights: torch.Tensor | np.ndarray, grid: tuple[int, int], image_size: tuple[int, int],
                   stride: tuple[int, int] | None = None) -> np.ndarray:
    """Each token's attention over the regions as a map over the image's pixels: [T, L] -> [T, H, W] float64,

        map[t, y, x] = α_t,i / (sh·sw),  i = (y // sh)·W' + x // sw,

    each region's weight spread evenly over its sh x sw block of pixels (``region_stride``), not smoothed; blocks
    that reach beyond the image (H, W) = image_size are cropped, so a block wholly inside keeps its mass α_t,i and
    a map sums to Σ_i α_t,i when every block lies inside. weights: α [T, L] over the grid (H', W') flattened
    row-major (``check_image_attention``)."""
    weights, grid = check_image_attention(weights, grid)
    rows, columns = region_stride(grid, image_size, stride)
    height, width = image_size
    region_rows, region_columns = np.arange(height) // rows, np.arange(width) // columns
    return weights.reshape(-1, *grid)[:, region_rows[:, None], region_columns[None, :]] / (rows * columns)


def _grey(image: np.ndarray) -> np.ndarray:
    """A checked image [H, W] or [H, W, 3] in grey [H, W], 0 to 255: RGB as luma 0.299 R + 0.587 G + 0.114 B."""
    return image if image.ndim == 2 else image @ np.array([0.299, 0.587, 0.114])


def _draw_overlay(ax: Axes, grey: np.ndarray, heat: np.ndarray, title: str) -> None:
    """The image in grey [H, W] under ``heat`` [H, W] (``attention_maps``) as an "inferno" overlay whose opacity grows
    from 0 at weight 0 to ``OVERLAY_OPACITY`` at the map's largest weight, titled ``title``."""
    ax.imshow(grey, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    top = max(float(heat.max()), np.finfo(np.float64).tiny)
    ax.imshow(heat, cmap="inferno", vmin=0.0, vmax=top, alpha=OVERLAY_OPACITY * heat / top, interpolation="nearest")
    ax.set_title(title)
    ax.set_axis_off()


def plot_image_attention(
    image: Any,
    tokens: Sequence[str],
    weights: torch.Tensor | np.ndarray,
    grid: tuple[int, int],
    stride: tuple[int, int] | None = None,
    title: str | None = None,
    columns: int = 4,
    path: str | PathLike | None = None,
) -> Figure:
    """Show, Attend and Tell's picture (Xu et al., 2015, figures 2 and 3): the image, then one panel per output token,
    titled with the token: the image in grey under the token's attention ``attention_maps`` (each region's weight over
    its block of pixels, drawn as blocks, not smoothed) as an "inferno" heat overlay whose opacity grows from 0 at
    weight 0 to ``OVERLAY_OPACITY`` at the token's largest weight (each panel scaled to its own largest weight).

    image: [H, W] or [H, W, 3], uint8 or float in [0, 1], or a PIL image (``check_image``): the image's own extent,
    without the batch's padding; weights α [T, L] over the grid (H', W') flattened row-major, T = len(tokens);
    stride (sh, sw): the pixels per region (default ⌈H / H'⌉, ⌈W / W'⌉; ``region_stride``). ``columns`` panels a
    row; saved to ``path`` if given.
    """
    from matplotlib.figure import Figure

    image = check_image(image)
    weights, grid = check_image_attention(weights, grid, tokens)
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"`columns` must be a positive int (panels per row), got {columns!r}.")
    height, width = image.shape[:2]
    maps = attention_maps(weights, grid, (height, width), stride)
    panels = len(tokens) + 1
    across, down = min(columns, panels), -(-panels // columns)
    panel_width = 2.0 * max(1.0, min(2.0, (width / height) ** 0.5))  # wide strips get wider panels, up to 4 inches
    figure = Figure(figsize=(across * panel_width, down * (panel_width * height / width + 0.35) + 0.4 * bool(title)),
                    layout="constrained")
    ax = figure.add_subplot(down, across, 1)
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.set_title("image")
    ax.set_axis_off()
    grey = _grey(image)
    for panel, (token, heat) in enumerate(zip(tokens, maps), 2):
        _draw_overlay(figure.add_subplot(down, across, panel), grey, heat, _label(token))
    if title is not None:
        figure.suptitle(title)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


# A co-attention model's two attentions: over the question's words and over the image's regions ----------------------

_IMAGE_PANEL = 1.6  # inches: the width of plot_coattention's image panels


def plot_coattention(
    image: Any,
    question_tokens: Sequence[str],
    question_weights: torch.Tensor | np.ndarray | Sequence[Sequence[float]],
    image_weights: torch.Tensor | np.ndarray | Sequence,
    grid: tuple[int, int],
    levels: Sequence[str] | None = None,
    answer: str | None = None,
    title: str | None = None,
    stride: tuple[int, int] | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """Lu et al.'s (2016) picture of co-attention (their figure 4): the image, then one row per question level l, the
    question's words shaded by a^{q,l} (``_draw_rows``: one row labelled α, grey from black at 0 to white at the
    level's largest weight, with its scale) beside the image in grey under a^{v,l} (``attention_maps``: region (r, c)'s
    weight spread over its block of pixels, drawn as ``plot_image_attention`` draws a token's).

    image: [H, W] or [H, W, 3], uint8 or float in [0, 1], or a PIL image (``check_image``): the image as the model read
    it (``processor.to_image``), without the batch's padding. question_weights [K, T]: a^{q,l} over the T =
    len(question_tokens) tokens, one row per level; image_weights [K, H'·W'] or [K, H', W'] (the pipeline's nested
    lists): a^{v,l} over the image's own grid (H', W') = ``grid``, row-major; each row of both a distribution
    (weights ≥ 0 summing to 1 within n·ε₃₂, the roundings of a float32 softmax over n weights). levels: the K names
    (default "level 1" …); stride (sh, sw): the pixels per region (``region_stride``); the heading is ``title``, then
    "answer: ``answer``". Saved to ``path`` if given. Each level's axes are labelled "question · <level>" and
    "image · <level>" (``Axes.get_label``).
    """
    from matplotlib.figure import Figure

    image = check_image(image)
    grid = _positive_pair(grid, "grid", "(H', W'): the image's own grid of regions, rows and columns")
    if isinstance(question_tokens, str) or not question_tokens or not all(
            isinstance(token, str) for token in question_tokens):
        raise ValueError(f"`question_tokens` must be a non-empty list of strings, got {question_tokens!r:.200}.")
    question = _level_distributions(question_weights, "question_weights", [len(question_tokens)],
                                    f"len(question_tokens) = {len(question_tokens)} tokens")
    regions = _level_distributions(image_weights, "image_weights", [grid[0] * grid[1], grid],
                                   f"the grid's H'·W' = {grid[0]}·{grid[1]} regions, or [K, {grid[0]}, {grid[1]}]")
    if len(regions) != len(question):
        raise ValueError(f"`question_weights` and `image_weights` must have one row per level each, got "
                         f"{len(question)} and {len(regions)}.")
    levels = [f"level {number}" for number in range(1, len(question) + 1)] if levels is None else list(levels)
    if len(levels) != len(question) or not all(isinstance(level, str) for level in levels):
        raise ValueError(f"`levels` must name each of the {len(question)} levels of the weights, got {levels!r:.200}.")
    height, width = image.shape[:2]
    maps = attention_maps(regions, grid, (height, width), stride)
    panel_height = _IMAGE_PANEL * height / width + 0.35
    words_width, words_height = _rows_size(question[:1], question_tokens, "α")
    row_height = max(words_height, panel_height)
    heading = "\n".join(line for line in (title, None if answer is None else f"answer: {answer}") if line)
    heading_height = 0.3 * (heading.count("\n") + 1) if heading else 0.0
    figure = Figure(figsize=(words_width + 2 * _IMAGE_PANEL, len(levels) * row_height + heading_height),
                    layout="constrained")
    left, right = figure.subfigures(1, 2, width_ratios=[_IMAGE_PANEL, words_width + _IMAGE_PANEL])
    ax = left.add_subplot()
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.set_title("image")
    ax.set_axis_off()
    grey = _grey(image)
    areas = right.subfigures(len(levels), 2, squeeze=False, width_ratios=[words_width, _IMAGE_PANEL])
    for (words, picture), level, weights, heat in zip(areas, levels, question, maps):
        _draw_rows(words, level, weights[None], question_tokens, "α")
        words.axes[0].set_label(f"question · {level}")
        ax = picture.add_subplot(label=f"image · {level}")
        _draw_overlay(ax, grey, heat, level)
    if heading:
        figure.suptitle(heading)
    if path is not None:
        figure.savefig(path, dpi=150)
    return figure


def _level_distributions(weights: Any, name: str, shapes: list, allowed: str) -> np.ndarray:
    """``weights`` [K, *shape] for one of ``shapes`` (an int n or a pair), K ≥ 1, as a checked float64 array [K, n]:
    each row finite, ≥ 0 and summing to 1 within n·ε₃₂; ValueError naming ``name``, saying ``allowed``, otherwise."""
    try:
        array = (weights.detach().to("cpu", torch.float64).numpy() if isinstance(weights, torch.Tensor)
                 else np.asarray(weights, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be numbers [levels, ...] over {allowed}, got {weights!r:.200}.") from None
    shape = list(array.shape[1:])
    if array.ndim < 2 or len(array) == 0 or not any(shape == ([size] if isinstance(size, int) else list(size))
                                                    for size in shapes):
        raise ValueError(f"`{name}` must be [K, n], one row per level (K ≥ 1) over {allowed}; got "
                         f"{list(array.shape)}.")
    array = array.reshape(len(array), -1)
    count = array.shape[1]
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"`{name}` must be finite and ≥ 0 (each level's distribution), got values from "
                         f"{np.nanmin(array):.4g} to {np.nanmax(array):.4g}"
                         f"{' and NaN or inf' if not np.isfinite(array).all() else ''}.")
    sums = array.sum(1)
    off = np.abs(sums - 1.0) > count * np.finfo(np.float32).eps
    if off.any():
        raise ValueError(f"`{name}` must hold one distribution per level (weights summing to 1, within "
                         f"{count}·ε₃₂), but level {int(off.argmax())}'s sum to {sums[off.argmax()]:.6g}.")
    return array


def plot_vqa_example(
    model: Any,
    processor: Any,
    tokenizer: Any,
    image: Any,
    question: str,
    *,
    expected: str | None = None,
    path: str | PathLike | None = None,
) -> Figure:
    """Answer ``question`` about ``image`` with a ``BahdanauForVisualQuestionAnswering`` that reads both inputs and
    draw both of its attentions with ``plot_coattention``: the image as the model reads it
    (``processor.to_image``: resized), the question's tokens as the shipped pipeline reads them
    (``tokenizer(question, add_special_tokens=False)``), one row per ``config.question_levels``, titled with the
    question, and the answer with its probability (and ``expected``, marked ✓ or ✗). image: a PIL image, a uint8
    array or a path; our CNN's regions are drawn at its stride (the product of ``cnn_pool_sizes``), a backbone's at
    ⌈H / H'⌉ × ⌈W / W'⌉."""
    from PIL import Image

    config = model.config
    if config.inputs != "both":
        raise ValueError(f"`model` reads one input (`config.inputs={config.inputs!r}`, a baseline): it has no "
                         "attention across question and image to draw.")
    picture = processor.to_image(Image.open(image) if isinstance(image, (str, PathLike)) else image)
    encoding = tokenizer(question, add_special_tokens=False, return_tensors="pt")
    if encoding["input_ids"].shape[1] == 0:
        raise ValueError(f"`question` {question!r} has no token the tokenizer knows how to write.")
    model.eval()
    with torch.no_grad():
        outputs = model(**encoding.to(model.device), **processor(picture, return_tensors="pt").to(model.device),
                        output_attentions=True)
    rows, columns = outputs.grid_size[0].tolist()
    score, index = outputs.logits[0].float().softmax(-1).max(-1)
    label = config.id2label[int(index)]
    answer = f"{label} (p = {float(score):.2f})"
    if expected is not None:
        answer += f" · expected: {expected} {'✓' if label == expected else '✗'}"
    stride = (None if config.backbone_config is not None
              else tuple(int(np.prod(sizes)) for sizes in zip(*config.cnn_pool_sizes)))
    return plot_coattention(
        np.asarray(picture), tokenizer.convert_ids_to_tokens(encoding["input_ids"][0].tolist()),
        torch.stack(outputs.question_attentions)[:, 0], torch.stack(outputs.context_attentions)[:, 0, :rows * columns],
        (rows, columns), levels=config.question_levels, answer=answer, title=f"Q: {question}", stride=stride,
        path=path)
