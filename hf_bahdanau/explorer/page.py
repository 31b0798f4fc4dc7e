"""``hf-bahdanau-explore``: one self-contained HTML page to explore what a model attended to, sentence by sentence.

    hf-bahdanau-explore outputs/dates-rnnsearch --input training/data/dates/test.jsonl --output dates.html --num_beams 5

The page shows each prediction with its source. Hovering over an output token shades the source tokens by the
weights α_tj that produced it and prints the weights; clicking pins it. Each sentence has its heat map (an HTML table,
the weight in each cell's title) and, for a ``copy_attention`` model, a bar of p_gen under each output token. With
references, each prediction is marked right or wrong (``is_exact_match``), the wrong ones come first and a filter
shows only them. At the top: the model's config summary, its metrics (the folder's ``all_results.json``) and the
exact match of the page's sentences. The sentences are embedded once as JSON and drawn by the page's own script one
page at a time (``page_size``), so thousands of sentences stay quick; the page needs no server and no network.

From Python, without the command line:

    results = translate(model, tokenizer, texts, output_alignments=True)         # decoding.py
    Path("page.html").write_text(explorer_page(results, references=references, title="my model"))
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch
from tqdm import tqdm

from ..cli import blank_entries, check_model_arguments, load_text_model, read_lines
from ..modeling.decoding import Translation, translate

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["Examples", "explorer_page", "is_exact_match", "main", "read_examples", "read_model_metrics",
           "read_references", "summarise_model"]

PROG = "hf-bahdanau-explore"
WEIGHT_DECIMALS = 4  # the page's data keep α and p_gen to this many decimals; it shows two (four in tooltips)
SPLITS = ("train", "eval", "validation", "test", "predict")  # metric prefixes of the training scripts
METRIC_COLUMN = "metric"  # the metrics table's first column: the metric's name
RUN_COLUMN = "whole run"  # the metrics table's column of keys without a split prefix: the epochs, parameters, FLOs
SUMMARY_FIELDS = ("model_type", "rnn_type", "bidirectional", "encoder_layers", "encoder_hidden_size",
                  "decoder_layers", "hidden_size", "embedding_size", "attention_type", "attention_scope",
                  "decoder_style", "copy_attention")
BODY = """<header>
<h1 id="title"></h1>
<div class="panels">
<section><h2>Model</h2><table id="model-summary"></table></section>
<section><h2>Model metrics</h2><table id="model-metrics"></table></section>
<section><h2>These {noun}</h2><table id="page-metrics"></table></section>
</div>
<p class="help">{help}</p>
</header>
<nav>
<label id="only-wrong-filter"><input type="checkbox" id="only-wrong"> only wrong {wrong}</label>
<span id="counts"></span>
<button type="button" id="previous-page">◀ previous</button>
<span id="page-indicator"></span>
<button type="button" id="next-page">next ▶</button>
<span id="showing"></span>
</nav>
<main id="sentences"></main>"""
ALIGNMENTS_HELP = """Hover over an output token to shade the source tokens it attended to by their weight α (printed
under each token); click it to pin the selection, click again to unpin."""


def _normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


def is_exact_match(prediction: str, references: Sequence[str]) -> bool:
    """Whether ``prediction`` equals one of ``references`` once every run of whitespace in them is one space and the
    ends are trimmed (case and punctuation count)."""
    return _normalise_whitespace(prediction) in {_normalise_whitespace(reference) for reference in references}


def _format_value(value: object) -> str:
    """How the page shows a config or metric value: JSON's words for booleans and None, thousands separators for
    integers, four significant digits for floats."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return value if isinstance(value, str) else json.dumps(value)


def _metrics_table(metrics: Mapping[str, object]) -> dict[str, list]:
    """``metrics`` as a table of metric x split, every column headed: "metric", then the splits; "eval_bleu" and
    "predict_bleu" share the row "bleu"; a key without a split prefix ("epoch", "num_parameters", "total_flos") goes
    in the last column, headed RUN_COLUMN."""
    by_name: dict[str, dict[str, str]] = {}
    for key, value in metrics.items():
        split, _, name = key.partition("_")
        if split not in SPLITS or not name:
            split, name = RUN_COLUMN, key
        by_name.setdefault(name, {})[split] = _format_value(value)
    found = {split for values in by_name.values() for split in values}
    columns = [split for split in (*SPLITS, RUN_COLUMN) if split in found]
    return dict(columns=[METRIC_COLUMN, *columns] if columns else [],
                rows=[[name, *(values.get(split, "") for split in columns)] for name, values in by_name.items()])


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
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"`page_size` must be a positive integer, got {page_size!r}.")
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
    data = dict(
        kind="alignments",
        title=title,
        model_summary=[(key, _format_value(value)) for key, value in (model_summary or {}).items()],
        model_metrics=_metrics_table(metrics or {}),
        page_metrics=page_metrics,
        has_references=reference_lists is not None,
        page_size=page_size,
        sentences=sentences,
    )
    return html_page(data, help=ALIGNMENTS_HELP, noun="sentences", wrong="predictions")


def html_page(data: Mapping[str, object], *, help: str, noun: str, wrong: str) -> str:
    """The self-contained page of ``data`` (the JSON ``explore.js`` reads; ``data["kind"]`` picks how it draws each
    item: "alignments", "memory" or "image_text"), with the ``help`` line (HTML) under the header, the page's metrics headed
    "These ``noun``" and the filter "only wrong ``wrong``"."""
    # "<" as its JSON escape: no text ("</script>", "<!--") can end or change the script element it sits in
    embedded = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    assets = resources.files(__package__)
    title = str(data["title"])
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>\n{assets.joinpath('explore.css').read_text()}</style>\n"
            f"</head>\n<body>\n{BODY.format(help=help, noun=noun, wrong=wrong)}\n"
            f'<script type="application/json" id="explorer-data">{embedded}</script>\n'
            f"<script>\n{assets.joinpath('explore.js').read_text()}</script>\n</body>\n</html>\n")


def summarise_model(model: PreTrainedModel, fields: Sequence[str] = SUMMARY_FIELDS) -> dict[str, object]:
    """The config ``fields`` that describe the architecture (those the config has) and the number of parameters."""
    config = model.config.to_dict()
    summary = {field: config[field] for field in fields if field in config}
    summary["parameters"] = model.num_parameters()
    return summary


def read_model_metrics(model: str, revision: str | None = None) -> dict[str, object] | None:
    """The metrics the training script wrote to the model folder's ``all_results.json`` (a local folder, or a Hub
    repository at ``revision``), or None when it has none."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        path = folder / "all_results.json"
        return json.loads(path.read_text()) if path.is_file() else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return json.loads(Path(hf_hub_download(model, "all_results.json", revision=revision)).read_text())
    except EntryNotFoundError:  # not in the repository, or offline and not in the cache
        return None


class Examples(NamedTuple):
    """The sentences to decode and, when given, the right answers (alternatives) of each."""

    sources: list[str]
    references: list[list[str]] | None


def _read_text_lines(path: Path, argument: str, needed: str) -> list[str]:
    """The lines of the UTF-8 text file ``path`` given as ``argument`` (blank lines at the end dropped); an unreadable
    or empty file, or a blank line, raises ValueError that names it and says what is ``needed`` there."""
    try:
        with open(path, encoding="utf-8") as stream:
            lines = read_lines(stream)
    except FileNotFoundError:
        raise ValueError(f"{argument} {path}: no such file.") from None
    except IsADirectoryError:
        raise ValueError(f"{argument} {path} is a folder; give a text file.") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{argument} {path} is not UTF-8 text ({error.reason} at byte {error.start}).") from None
    if not lines:
        raise ValueError(f"{argument} {path} is empty: {needed}.")
    blank = blank_entries(lines, "line", f"{argument} {path}")
    if blank:
        raise ValueError(f"{blank}: {needed}.")
    return lines


def _jsonl_row(line: str, where: str) -> tuple[str, list[str] | None]:
    """(source, references or None) of one ``.jsonl`` row; ``where`` names it in errors."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where} is not JSON: {error}.") from None
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
    lines = _read_text_lines(path, "--input", "give a sentence to translate on every line")
    if path.suffix != ".jsonl":
        return Examples(lines, None)
    rows = [_jsonl_row(line, f"line {number} of --input {path}") for number, line in enumerate(lines, 1)]
    with_references = [number for number, (_, references) in enumerate(rows, 1) if references is not None]
    if with_references and len(with_references) < len(rows):
        missing = next(number for number, (_, references) in enumerate(rows, 1) if references is None)
        raise ValueError(f'line {missing} of --input {path} has no "references" or "target", but line '
                         f"{with_references[0]} has: give every row its right answers, or none.")
    return Examples([source for source, _ in rows], [references for _, references in rows] if with_references else None)


def read_references(path: str | Path, count: int) -> list[list[str]]:
    """The right answers of ``count`` sentences from ``path``: one line per sentence, alternatives separated by a
    tab. A blank line or another number of lines raises ValueError."""
    path = Path(path)
    lines = _read_text_lines(path, "--references", "give the right answers of the sentence on every line")
    if len(lines) != count:
        raise ValueError(f"--references {path} has {_count(len(lines), 'line')} but --input has "
                         f"{_count(count, 'sentence')}: give one line per sentence (alternatives separated by a tab).")
    return [[alternative for alternative in line.split("\t") if alternative.strip()] for line in lines]


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a saved model folder (with its tokenizer) or a Hub model id")
    parser.add_argument("--input", type=Path, required=True,
                        help="one sentence a line, or a .jsonl file of {\"source\": ..., \"references\": [...]} rows "
                             "(or \"target\": ...)")
    parser.add_argument("--references", type=Path, default=None,
                        help="the right answers: one line per input line, alternatives separated by a tab")
    parser.add_argument("--output", type=Path, required=True, help="the HTML page to write")
    parser.add_argument("--num_beams", type=int, default=1, help="1 = greedy (default), more = beam search")
    parser.add_argument("--max_new_tokens", type=int, default=None, help="default: the model's generation config")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--page_size", type=int, default=50, help="sentences the page shows at a time")
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--trust_remote_code", action="store_true",
                        help="allow code from the model folder (not needed for hf_bahdanau models)")
    args = parser.parse_args(argv)
    if args.page_size < 1:
        parser.error(f"--page_size must be a positive integer, got {args.page_size}.")
    if args.output.is_dir():
        parser.error(f"--output {args.output} is a folder; give the path of the page to write, e.g. page.html.")
    check_model_arguments(parser, args)
    try:
        args.sources, args.reference_lists = read_examples(args.input)
        if args.references is not None:
            if args.reference_lists is not None:
                parser.error(f"--input {args.input} already gives references: drop --references {args.references}.")
            args.reference_lists = read_references(args.references, len(args.sources))
    except ValueError as error:
        parser.error(str(error))
    return args


def _model_name(model: str, revision: str | None) -> str:
    """The folder's name for a local model, else the Hub id (and revision)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve().name
    return model if revision is None else f"{model}@{revision}"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"{PROG}: loading {args.model}", file=sys.stderr)
    model, tokenizer = load_text_model(args.model, PROG, revision=args.revision,
                                       trust_remote_code=args.trust_remote_code)
    if model.config.attention_type == "none":
        raise SystemExit(f"{PROG}: error: {args.model!r} has no attention (attention_type='none'): there are no "
                         "alignments to explore; hf-bahdanau-translate decodes it.")
    decoding = "greedy" if args.num_beams == 1 else f"beam search, {args.num_beams} beams"
    results = []
    with tqdm(total=len(args.sources), desc=f"{PROG}: decoding ({decoding})", unit=" sentences", file=sys.stderr,
              mininterval=0) as progress:  # a batch takes long enough to be shown
        for start in range(0, len(args.sources), args.batch_size):  # translate()'s own batches, one at a time
            batch = args.sources[start:start + args.batch_size]
            results += translate(model, tokenizer, batch, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens,
                                 batch_size=args.batch_size, output_alignments=True)
            progress.update(len(batch))
    page = explorer_page(results, references=args.reference_lists, title=_model_name(args.model, args.revision),
                         model_summary=summarise_model(model), metrics=read_model_metrics(args.model, args.revision),
                         decoding=decoding, page_size=args.page_size)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page, encoding="utf-8")
    summary = f"{len(results):,} sentences"
    if args.reference_lists is not None:
        right = sum(is_exact_match(result.translation, references)
                    for result, references in zip(results, args.reference_lists))
        summary += f", exact match {100 * right / len(results):.1f} % ({len(results) - right:,} wrong)"
    print(f"{args.output}: {summary}")


if __name__ == "__main__":
    main()


def judged_first(items: list[dict], argument: str, reference: str, item: str) -> tuple[list[dict], list[tuple[str, str]]]:
    """Items with "correct" (True / False, None without a reference), judged all or none (ValueError naming
    ``argument``[i] and its ``reference``, e.g. "an 'expected' answer"), in order with the wrong ones first; and the
    page's metrics: the count of ``item`` (e.g. "questions") and, when judged, the accuracy and the wrong count."""
    judged = [entry["correct"] is not None for entry in items]
    if any(judged) and not all(judged):
        raise ValueError(f"`{argument}[{judged.index(not judged[0])}]` {'lacks' if judged[0] else 'has'} {reference} "
                         f"but `{argument}[0]` {'has one' if judged[0] else 'does not'}: give every {item[:-1]} its "
                         f"{reference.split(' ', 1)[1]}, or none.")
    ordered = sorted(items, key=lambda entry: entry["correct"] is not False)  # stable: the wrong ones first, in order
    metrics = [(item, _format_value(len(items)))]
    if all(judged):
        right = sum(entry["correct"] for entry in items)
        metrics += [("accuracy", f"{100 * right / len(items):.1f} % ({right:,} / {len(items):,})"),
                    ("wrong", _format_value(len(items) - right))]
    return ordered, metrics
