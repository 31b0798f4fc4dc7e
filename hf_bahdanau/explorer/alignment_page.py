"""The explorer's page for a seq2seq model (``Family.explorer`` of the seq2seq family): each prediction with its source.
Hovering over an output token shades the source tokens by the weights α_tj that produced it and prints the weights;
clicking pins it. Each sentence has its heat map (an HTML table, the weight in each cell's title) and, for a
``copy_attention`` model, a bar of p_gen under each output token. With references, each prediction is marked right or
wrong (``is_exact_match``), the wrong ones come first and a filter shows only them; the header adds the exact match of
the page's sentences.

    results = translate(model, tokenizer, texts, output_alignments=True)         # translation.py
    Path("page.html").write_text(explorer_page(results, references=references, title="my model"))
"""

from __future__ import annotations

import sys
from argparse import Namespace
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch

from .shell import (WEIGHT_DECIMALS, Explorer, _format_value, check_all_or_none, check_page_size, html_page,
                    is_exact_match, json_row, page_data, plural, read_model_metrics, read_text_lines, summarise_model,
                    summary_line)

if TYPE_CHECKING:
    from ..modeling.translation import Translation

__all__ = ["ALIGNMENT_EXPLORER", "Examples", "SUMMARY_FIELDS", "explorer_page", "read_examples", "read_references"]

SUMMARY_FIELDS = ("model_type", "rnn_type", "bidirectional", "encoder_layers", "encoder_hidden_size",
                  "decoder_layers", "hidden_size", "embedding_size", "attention_type", "attention_scope",
                  "decoder_style", "copy_attention")
ALIGNMENTS_HELP = """Hover over an output token to shade the source tokens it attended to by their weight α (printed
under each token); click it to pin the selection, click again to unpin."""


def _weights(name: str, values: torch.Tensor, shape: tuple[int, ...], what: str) -> list:
    """``values`` (a tensor or array of ``shape``, described as ``what``; finite) as nested lists rounded to
    ``WEIGHT_DECIMALS``."""
    tensor = torch.as_tensor(values).detach().to("cpu", torch.float64)
    if tuple(tensor.shape) != shape:
        raise ValueError(f"`{name}` must have shape {what} = {list(shape)}, got {list(tensor.shape)}.")
    if not torch.isfinite(tensor).all():
        raise ValueError(f"`{name}` holds NaN or infinite values; weights must be finite (α in [0, 1]).")
    return torch.round(tensor, decimals=WEIGHT_DECIMALS).tolist()


def _check_references(references: Sequence[Sequence[str]], count: int) -> list[list[str]]:
    """``references`` as lists: ``count`` non-empty sequences of strings, or ValueError naming the bad one."""
    if isinstance(references, str) or len(references) != count:
        raise ValueError(f"`references` must hold one list of reference strings per translation ({count}), got "
                         f"{'a string' if isinstance(references, str) else len(references)}.")
    for index, alternatives in enumerate(references):
        if isinstance(alternatives, str) or not alternatives or not all(isinstance(text, str)
                                                                         for text in alternatives):
            raise ValueError(f"`references[{index}]` must be a non-empty list of strings (the right answers), got "
                             f"{alternatives!r}.")
    return [list(alternatives) for alternatives in references]


def _sentence_record(index: int, translation: Translation, references: list[str] | None) -> dict:
    """What the page's script reads of one sentence."""
    name = f"translations[{index}]"
    if translation.alignment is None:
        raise ValueError(f"`{name}` has no alignment: decode with translate(..., output_alignments=True).")
    shape = (len(translation.target_tokens), len(translation.source_tokens))
    return dict(
        number=index + 1,
        source=translation.source,
        prediction=translation.translation,
        source_tokens=list(translation.source_tokens),
        target_tokens=list(translation.target_tokens),
        alignment=_weights(f"{name}.alignment", translation.alignment, shape,
                           "[len(target_tokens), len(source_tokens)]"),
        p_gen=(None if translation.p_gen is None
               else _weights(f"{name}.p_gen", translation.p_gen, shape[:1], "[len(target_tokens)]")),
        references=references,
        correct=None if references is None else is_exact_match(translation.translation, references),
    )


def explorer_page(
    translations: Sequence[Translation],
    *,
    references: Sequence[Sequence[str]] | None = None,
    title: str = "Alignments",
    model_summary: Mapping[str, object] | None = None,
    metrics: Mapping[str, object] | None = None,
    decoding: str | None = None,
    page_size: int = 50,
) -> str:
    """The HTML of a self-contained page (inline CSS and script, no network) exploring ``translations``.

    translations: from ``translate(..., output_alignments=True)``: each alignment is α [len(target_tokens),
        len(source_tokens)], each p_gen (or None) [len(target_tokens)]; weights are kept to ``WEIGHT_DECIMALS``.
    references: the right answers (alternatives) of each translation; then each is marked right or wrong
        (``is_exact_match``), the wrong ones come first, and the page's exact match is shown.
    model_summary: a key/value table at the top (``summarise_model``).
    metrics: a table of metric x split at the top, "eval_bleu" in row "bleu", column "eval" (``read_model_metrics``).
    decoding: how the outputs were decoded, e.g. "beam search, 5 beams".
    page_size: how many sentences the page draws at a time.
    """
    if isinstance(translations, str) or not isinstance(translations, Sequence) or not translations:
        raise ValueError(f"`translations` must be a non-empty list of Translation, got {translations!r:.80}.")
    check_page_size(page_size)
    reference_lists = None if references is None else _check_references(references, len(translations))
    sentences = [_sentence_record(index, translation, None if reference_lists is None else reference_lists[index])
                 for index, translation in enumerate(translations)]
    sentences.sort(key=lambda sentence: sentence["correct"] is not False)  # stable: the wrong ones first, in order
    page_metrics = [("sentences", _format_value(len(sentences)))]
    if reference_lists is not None:
        right = sum(sentence["correct"] for sentence in sentences)
        page_metrics += [("exact match", f"{100 * right / len(sentences):.1f} % ({right:,} / {len(sentences):,})"),
                         ("wrong", _format_value(len(sentences) - right))]
    if decoding is not None:
        page_metrics.append(("decoding", decoding))
    data = page_data("alignments", ("sentences", sentences), page_metrics, title=title, model_summary=model_summary,
                     metrics=metrics, page_size=page_size, has_references=reference_lists is not None)
    return html_page(data, help=ALIGNMENTS_HELP, noun="sentences", wrong="predictions")


class Examples(NamedTuple):
    """The sentences to decode and, when given, the right answers (alternatives) of each."""

    sources: list[str]
    references: list[list[str]] | None


def _jsonl_row(line: str, where: str) -> tuple[str, list[str] | None]:
    """(source, references or None) of one ``.jsonl`` row; ``where`` names it in errors."""
    row = json_row(line, where)
    if not isinstance(row, dict) or not isinstance(row.get("source"), str):
        raise ValueError(f'{where} must be an object with a "source" string, got {line.strip():.80}.')
    if not row["source"].strip():
        raise ValueError(f'{where} has an empty "source": there is nothing to translate.')
    if "references" in row:
        references = row["references"]
        if not isinstance(references, list) or not references or not all(isinstance(text, str)
                                                                          for text in references):
            raise ValueError(f'{where}: "references" must be a non-empty list of strings, got {references!r:.80}.')
        return row["source"], references
    if "target" in row:
        if not isinstance(row["target"], str):
            raise ValueError(f'{where}: "target" must be a string, got {row["target"]!r:.80}.')
        return row["source"], [row["target"]]
    return row["source"], None


def read_examples(path: str | Path) -> Examples:
    """The sentences of ``path``: a text file with one sentence a line, or a ``.jsonl`` file whose rows have a
    "source" and optionally "references" (a list of strings) or "target" (a string), every row or none. Blank lines
    at the end are dropped; any other blank line, bad row or unreadable file raises ValueError naming its line."""
    path = Path(path)
    lines = read_text_lines(path, "--input", "give a sentence to translate on every line")
    if path.suffix != ".jsonl":
        return Examples(lines, None)
    rows = [_jsonl_row(line, f"line {number} of --input {path}") for number, line in enumerate(lines, 1)]
    answered = [references is not None for _, references in rows]
    check_all_or_none(answered, path, '"references" or "target"')
    return Examples([source for source, _ in rows], [references for _, references in rows] if any(answered) else None)


def read_references(path: str | Path, count: int) -> list[list[str]]:
    """The right answers of ``count`` sentences from ``path``: one line per sentence, alternatives separated by a
    tab. A blank line or another number of lines raises ValueError."""
    path = Path(path)
    lines = read_text_lines(path, "--references", "give the right answers of the sentence on every line")
    if len(lines) != count:
        raise ValueError(f"--references {path} has {plural(len(lines), 'line')} but --input has "
                         f"{plural(count, 'sentence')}: give one line per sentence (alternatives separated by a tab).")
    return [[alternative for alternative in line.split("\t") if alternative.strip()] for line in lines]


def read_inputs(args: Namespace) -> Examples:
    """The sentences of ``args.input`` (``read_examples``) with the right answers of ``args.references``
    (``read_references``) when given; ValueError when both give them."""
    examples = read_examples(args.input)
    if args.references is None:
        return examples
    if examples.references is not None:
        raise ValueError(f"--input {args.input} already gives references: drop --references {args.references}.")
    return Examples(examples.sources, read_references(args.references, len(examples.sources)))


def explore_translations(args: Namespace, examples: Examples) -> tuple[str, str]:
    """Decode ``examples`` with the seq2seq model ``args.model`` (greedy or ``args.num_beams``, in batches of
    ``args.batch_size``, a progress bar on stderr) and build their page; a model without attention is refused."""
    from tqdm import tqdm

    from ..cli import load_text_model
    from ..modeling.translation import translate

    model, tokenizer = load_text_model(args.model, args.prog, revision=args.revision,
                                       trust_remote_code=args.trust_remote_code)
    if model.config.attention_type == "none":
        raise SystemExit(f"{args.prog}: error: {args.model!r} has no attention (attention_type='none'): there are no "
                         "alignments to explore; hf-bahdanau-translate decodes it.")
    decoding = "greedy" if args.num_beams == 1 else f"beam search, {args.num_beams} beams"
    results = []
    with tqdm(total=len(examples.sources), desc=f"{args.prog}: decoding ({decoding})", unit=" sentences",
              file=sys.stderr, mininterval=0) as progress:  # a batch takes long enough to be shown
        for start in range(0, len(examples.sources), args.batch_size):  # translate()'s own batches, one at a time
            batch = examples.sources[start:start + args.batch_size]
            results += translate(model, tokenizer, batch, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens,
                                 batch_size=args.batch_size, output_alignments=True)
            progress.update(len(batch))
    page = explorer_page(results, references=examples.references, title=args.title,
                         model_summary=summarise_model(model, SUMMARY_FIELDS),
                         metrics=read_model_metrics(args.model, args.revision), decoding=decoding,
                         page_size=args.page_size)
    correct = [None if references is None else is_exact_match(result.translation, references)
               for result, references in zip(results, examples.references or [None] * len(results))]
    return page, summary_line("sentence", correct, "exact match")


ALIGNMENT_EXPLORER = Explorer(read=read_inputs, explore=explore_translations)
