"""The explorer's page shell, shared by every family's page: the self-contained HTML around the page's data (style,
script, the header's model summary, model metrics and page metrics, paging and the "only wrong" filter), the
right/wrong judgement, and ``Explorer``, what a family declares so that ``hf-bahdanau-explore`` can build its page.

A family's page module (``alignment_page``, ``memory_page``, ``image_page``) turns its items into records and calls
``page_data`` and ``html_page``; ``explore.js`` draws the items by ``data["kind"]``.
"""

from __future__ import annotations

import html
import json
from argparse import Namespace
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["Explorer", "check_all_or_none", "check_page_size", "html_page", "is_exact_match", "json_row",
           "judged_first", "judged_records", "page_data", "plural", "read_model_metrics", "read_rows",
           "read_text_lines", "summarise_model", "summary_line"]

WEIGHT_DECIMALS = 4  # the page's data keep weights to this many decimals; it shows two (four in tooltips)
SPLITS = ("train", "eval", "validation", "test", "predict")  # metric prefixes of the training scripts
METRIC_COLUMN = "metric"  # the metrics table's first column: the metric's name
RUN_COLUMN = "whole run"  # the metrics table's column of keys without a split prefix: the epochs, parameters, FLOs
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


@dataclass(frozen=True)
class Explorer:
    """A family's page for ``hf-bahdanau-explore`` (``Family.explorer``): the command reads the folder's config, finds
    its family and calls these two, so the command has no branch on a family.

    read(args) -> the items to explore from ``args.input`` (and ``args.references``); a ValueError naming the bad
        file or line (the command ends it as a usage error, before loading the model).
    explore(args, items) -> (the page's HTML, the summary line printed after the page's path): loads ``args.model``,
        runs it on the items and builds the page (``args``: the command's options, ``title`` the model's name).
    """

    read: Callable[[Namespace], Any]
    explore: Callable[[Namespace, Any], tuple[str, str]]


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


def check_page_size(page_size: Any) -> None:
    """``page_size`` (how many items the page draws at a time) must be a positive int; ValueError otherwise."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"`page_size` must be a positive integer, got {page_size!r}.")


def page_data(kind: str, items: tuple[str, list[dict]], page_metrics: list[tuple[str, str]], *, title: str,
              model_summary: Mapping[str, object] | None, metrics: Mapping[str, object] | None, page_size: int,
              has_references: bool, **extra: Any) -> dict[str, Any]:
    """The JSON ``explore.js`` reads: ``kind`` (how it draws each item), the header's tables (``model_summary`` as
    key/value rows, ``metrics`` as metric x split, ``page_metrics``), the paging, ``extra`` values, and the items
    under their name (``items`` = ("sentences", records))."""
    name, records = items
    return dict(
        kind=kind,
        title=title,
        model_summary=[(key, _format_value(value)) for key, value in (model_summary or {}).items()],
        model_metrics=_metrics_table(metrics or {}),
        page_metrics=page_metrics,
        has_references=has_references,
        page_size=page_size,
        **extra,
        **{name: records},
    )


def html_page(data: Mapping[str, object], *, help: str, noun: str, wrong: str) -> str:
    """The self-contained page of ``data`` (``page_data``; ``data["kind"]`` picks how ``explore.js`` draws each item:
    "alignments", "memory" or "image_text"), with the ``help`` line (HTML) under the header, the page's metrics
    headed "These ``noun``" and the filter "only wrong ``wrong``"."""
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


def judged_first(items: list[dict], argument: str, reference: str,
                 item: str) -> tuple[list[dict], list[tuple[str, str]]]:
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


def judged_records(items: Any, argument: str, record: Callable[[int, Mapping], dict], reference: str,
                   noun: str) -> tuple[list[dict], list[tuple[str, str]]]:
    """``items``, a non-empty list of dicts, one per ``noun`` minus its "s" (ValueError naming ``argument``
    otherwise), each made a record by ``record(index, item)``, then ``judged_first``: wrong ones first, the page's
    metrics."""
    if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence) or not items:
        raise ValueError(f"`{argument}` must be a non-empty list of dicts, one per {noun[:-1]}, got {items!r:.80}.")
    return judged_first([record(index, item) for index, item in enumerate(items)], argument, reference, noun)


def summarise_model(model: PreTrainedModel, fields: Sequence[str]) -> dict[str, object]:
    """The config ``fields`` that describe the architecture (those the config or one of its sub-configs has, as the
    image-to-text config's encoder and decoder) and the number of parameters."""
    config = model.config.to_dict()
    for name in type(model.config).sub_configs:
        config = {**config.pop(name), **config}
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


def read_text_lines(path: Path, argument: str, needed: str) -> list[str]:
    """The lines of the UTF-8 text file ``path`` given as ``argument`` (blank lines at the end dropped); an unreadable
    or empty file, or a blank line, raises ValueError that names it and says what is ``needed`` there."""
    from ..cli import blank_entries, read_lines

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


def json_row(line: str, where: str) -> Any:
    """One line of a JSON-lines file, parsed; a ValueError naming ``where`` ("line 2 of --input rows.jsonl") when it is
    not JSON."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where} is not JSON: {error}.") from None


def read_rows(args: Namespace, required: tuple[str, ...], optional: tuple[str, ...]) -> list[tuple[str, dict]]:
    """The rows of ``args.input``, a JSON-lines file of objects with the ``required`` keys, as (where, row): ``where``
    names the line for errors ("line 2 of --input rows.jsonl"), ``row`` keeps the ``required`` and ``optional`` keys
    (the first optional one holds the right answer). A ValueError names a bad line, or ``args.references`` (the rows
    hold their right answers)."""
    if args.references is not None:
        raise ValueError(f"--references {args.references} is for sentences; give the right answers in the rows of "
                         f'--input {args.input} ("{optional[0]}").')
    keys = " and ".join(f'"{key}"' for key in required)
    lines = read_text_lines(args.input, "--input", f"give an object with {keys} on every line")
    rows = []
    for number, line in enumerate(lines, 1):
        where = f"line {number} of --input {args.input}"
        row = json_row(line, where)
        if not isinstance(row, dict) or not set(required) <= row.keys():
            raise ValueError(f"{where} must be an object with {keys}, got {line.strip():.80}.")
        rows.append((where, {key: row[key] for key in (*required, *optional) if key in row}))
    check_all_or_none([row.get(optional[0]) is not None for _, row in rows], args.input, f'"{optional[0]}"')
    return rows


def check_all_or_none(answered: Sequence[bool], path: Path, what: str) -> None:
    """The rows of ``--input path`` must all give their right answers (``what``: the key, e.g. '"expected"') or none
    give them: a ValueError names the first row without and the first with."""
    if any(answered) and not all(answered):
        raise ValueError(f"line {answered.index(False) + 1} of --input {path} has no {what}, but line "
                         f"{answered.index(True) + 1} has: give every row its right answers, or none.")


def plural(number: int, noun: str) -> str:
    """``number`` ``noun``s in words: "1 line", "2,000 sentences"."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def summary_line(noun: str, correct: Sequence[bool | None], measure: str = "accuracy") -> str:
    """What the command prints after the page's path: the count of ``noun``s and, when the items were judged
    (``correct`` not None), the share right as ``measure`` and the wrong count: "3 sentences, exact match 66.7 % (1
    wrong)"."""
    line = plural(len(correct), noun)
    judged = [right for right in correct if right is not None]
    if judged:
        line += f", {measure} {100 * sum(judged) / len(judged):.1f} % ({len(judged) - sum(judged):,} wrong)"
    return line
