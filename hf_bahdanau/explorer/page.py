"""``hf-bahdanau-explore``: one self-contained HTML page to explore what a model attended to, example by example.

    hf-bahdanau-explore outputs/dates-rnnsearch --input training/data/dates/test.jsonl --output dates.html --num_beams 5

The command reads the folder's config.json, finds its family (``hf_bahdanau.families``) and builds the page that
family declares (``Family.explorer``, an ``Explorer``: how it reads ``--input``, how it runs the model and builds the
page); a family without one is refused, naming the families that have one. A seq2seq model's page
(``alignment_page``) shows each prediction with its source, its alignment and, with references, right or wrong. Every
page has the model's config summary and metrics (the folder's ``all_results.json``) at the top and is drawn by its own
script, a page of examples at a time (``page_size``), with no server and no network.

From Python, without the command line:

    results = translate(model, tokenizer, texts, output_alignments=True)         # translation.py
    Path("page.html").write_text(explorer_page(results, references=references, title="my model"))
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cli import check_model_arguments, hide_loading_bars, is_onnx_export, load_text_model
from . import shell
from .alignment_page import SUMMARY_FIELDS, Examples, explorer_page, read_examples, read_references
from .shell import Explorer, is_exact_match, read_model_metrics

__all__ = ["Examples", "explorer_for", "explorer_page", "is_exact_match", "main", "read_examples",
           "read_model_metrics", "read_references", "summarise_model"]

if TYPE_CHECKING:
    from transformers import PreTrainedModel

PROG = "hf-bahdanau-explore"


def explorer_for(config: Mapping[str, Any], name: str) -> Explorer:
    """The page of the family of ``config`` (a folder's config.json as a dict; ``name``: the folder or Hub id, for
    errors): ``Family.explorer``. A ValueError names the model and the families with a page when its family has none
    or it is no hf_bahdanau family's."""
    from ..families import FAMILIES, find_family

    family = find_family(config)
    if family is not None and family.explorer is not None:
        return family.explorer
    held = (f"a {family.name} model, which has no explorer page" if family is not None
            else f"a {config.get('model_type')!r} model, not an hf_bahdanau one")
    with_pages = [other.name for other in FAMILIES.values() if other.explorer is not None]
    raise ValueError(f"{name!r} holds {held}; {PROG} explores the models of the families with one: "
                     f"{', '.join(with_pages)}.")


def parse_args(argv: list[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command's parser and arguments, with the usage errors that need no model (``check_model_arguments``)."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a saved model folder (with its tokenizer) or a Hub model id")
    parser.add_argument("--input", type=Path, required=True,
                        help="what the model reads, as its family's page takes it; seq2seq: one sentence a line, or "
                             "a .jsonl file of {\"source\": ..., \"references\": [...]} rows (or \"target\": ...)")
    parser.add_argument("--references", type=Path, default=None,
                        help="the right answers: one line per input line, alternatives separated by a tab")
    parser.add_argument("--output", type=Path, required=True, help="the HTML page to write")
    parser.add_argument("--num_beams", type=int, default=1, help="1 = greedy (default), more = beam search")
    parser.add_argument("--max_new_tokens", type=int, default=None, help="default: the model's generation config")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--page_size", type=int, default=50, help="examples the page shows at a time")
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--trust_remote_code", action="store_true",
                        help="allow code from the model folder (not needed for hf_bahdanau models)")
    args = parser.parse_args(argv)
    if args.page_size < 1:
        parser.error(f"--page_size must be a positive integer, got {args.page_size}.")
    if args.output.is_dir():
        parser.error(f"--output {args.output} is a folder; give the path of the page to write, e.g. page.html.")
    check_model_arguments(parser, args)
    return parser, args


def summarise_model(model: PreTrainedModel, fields: Sequence[str] = SUMMARY_FIELDS) -> dict[str, object]:
    """``shell.summarise_model`` with a seq2seq model's fields by default, as this module gave it before the pages
    moved to their own modules."""
    return shell.summarise_model(model, fields)


def read_config(args: argparse.Namespace) -> dict[str, Any]:
    """``args.model``'s config.json as a dict. A name without one ends the command as the text commands end it
    (``load_text_model``: an ONNX export, a name that cannot be loaded)."""
    from transformers import PretrainedConfig

    hide_loading_bars()
    if is_onnx_export(args.model):  # its manifest would read as a config of no model type
        load_text_model(args.model, PROG, with_tokenizer=False)
    try:
        return PretrainedConfig.get_config_dict(args.model, revision=args.revision)[0]
    except OSError:
        load_text_model(args.model, PROG, revision=args.revision, trust_remote_code=args.trust_remote_code,
                        with_tokenizer=False)
        raise  # load_text_model found a model where the config could not be read: say what failed


def _model_name(model: str, revision: str | None) -> str:
    """The folder's name for a local model, else the Hub id (and revision)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve().name
    return model if revision is None else f"{model}@{revision}"


def main(argv: list[str] | None = None) -> None:
    parser, args = parse_args(argv)
    print(f"{PROG}: loading {args.model}", file=sys.stderr)
    try:
        explorer = explorer_for(read_config(args), args.model)
    except ValueError as error:
        raise SystemExit(f"{PROG}: error: {error}") from None
    args.prog, args.title = PROG, _model_name(args.model, args.revision)
    try:
        examples = explorer.read(args)
        page, summary = explorer.explore(args, examples)
    except ValueError as error:  # a bad file or line of the input, or an input the model refuses
        parser.error(str(error))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page, encoding="utf-8")
    print(f"{args.output}: {summary}")


if __name__ == "__main__":
    main()
