"""``hf-bahdanau-translate``: decode sentences with a saved model folder or Hub id, optionally saving alignment pictures.

    hf-bahdanau-translate outputs/dates-rnnsearch "le 3 mars 2015" "3/14/15" --num_beams 5
    cat sentences.txt | hf-bahdanau-translate outputs/dates-rnnsearch --alignments_dir pictures
    hf-bahdanau-translate g2p-seed0 --num_beams 5 --ensemble g2p-seed1 g2p-lstm -- "ensemble"

Prints one line per input: the translation, and with ``--alignments_dir`` a tab and the path of its heat map. An
empty or blank input (an argument, or a line before the last non-blank one) is an error that names it; inputs with tokens unknown to the tokenizer, or
longer than every training source, are decoded with a warning on stderr. Loading goes through the Auto classes,
which the package registered when this module was imported. With ``--ensemble`` the model and the folders after it
decode together as one ``BahdanauEnsembleForConditionalGeneration`` (the mean of their probabilities at each step),
with the model's tokenizer and generation config.

``hf-bahdanau-export`` (``export_main``) writes the ONNX folder that ``--backend onnxruntime`` reads.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .ensemble import BahdanauEnsembleForConditionalGeneration
from .families import find_family
from .locations import check_model_location
from .modeling.translation import translate
from .modeling.modeling_bahdanau import BahdanauForConditionalGeneration
from .modeling.search import check_search_arguments
from .onnx.runtime import MANIFEST

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

    from .onnx.pipeline import OnnxPipelineModel


# The most tokens a command or training script generates per input: beam search keeps tables of [batch, beams, length]
# sized by it before the first step (10**9 ran out of memory), and these models write sentences, not books.
MAX_NEW_TOKENS = 10_000


def check_new_tokens(value: int | None, argument: str) -> None:
    """A ValueError naming ``argument`` (``--max_new_tokens``, ``--generation_max_length``) when ``value``, a number
    of tokens to generate, is above ``MAX_NEW_TOKENS``; None (the generation config's) passes."""
    if value is not None and value > MAX_NEW_TOKENS:
        raise ValueError(f"`{argument}` must be at most {MAX_NEW_TOKENS:,} tokens (beam search allocates tables that "
                         f"grow with it before it starts), got {value:,}.")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hf-bahdanau-translate", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a saved model folder (with its tokenizer) or a Hub model id")
    parser.add_argument("sentences", nargs="*", help="sentences to translate; none: read one per line from stdin")
    parser.add_argument("--num_beams", type=int, default=1, help="1 = greedy (default), more = beam search")
    parser.add_argument("--max_new_tokens", type=int, default=None,
                        help=f"at most {MAX_NEW_TOKENS:,}; default: the model's generation config")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--alignments_dir", type=Path, default=None,
                        help="save each sentence's alignment heat map here as alignment_<n>.png and print its path")
    parser.add_argument("--backend", choices=("pytorch", "onnxruntime"), default="pytorch",
                        help="onnxruntime: `model` is a folder written by hf-bahdanau-export (the `onnx` extra)")
    parser.add_argument("--int8", action="store_true",
                        help="with --backend onnxruntime: decode the int8 graphs that hf-bahdanau-export --int8 wrote")
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--trust_remote_code", action="store_true",
                        help="allow code from the model folder (not needed for hf_bahdanau models)")
    parser.add_argument("--ensemble", nargs="+", default=[], metavar="FOLDER",
                        help="more PyTorch model folders (or Hub ids) decoded together with `model` as one ensemble: "
                             "each step takes the mean of their probabilities; the tokenizer and generation settings "
                             "are `model`'s, and the members must share its vocabulary and special token ids. No "
                             "alignments, no ONNX. End the list with `--` or another option before sentences.")
    args = parser.parse_intermixed_args(argv)  # options may come before, between or after the sentences
    if args.sentences:
        blank = blank_entries(args.sentences, "argument", "the input")
    else:
        args.sentences = read_lines(sys.stdin)
        blank = blank_entries(args.sentences, "line", "the input")
    if blank:
        parser.error(f"{blank}: there is nothing to translate.")
    options = [text for text in args.sentences if text.startswith("--") and text[2:].split("=")[0] in vars(args)]
    if options:
        parser.error(f"{options[0]!r} is an option of this command, not a sentence: everything after `--` is read as "
                     "sentences, so give options before it (MODEL --num_beams 5 --ensemble B C -- SENTENCE).")
    check_model_arguments(parser, args)
    if args.int8 and args.backend != "onnxruntime":
        parser.error("--int8 selects the int8 graphs of an ONNX export: add --backend onnxruntime (PyTorch models "
                     "decode in their own precision).")
    if args.backend == "pytorch" and is_onnx_export(args.model):
        parser.error(f"{args.model!r} is a folder written by hf-bahdanau-export: add --backend onnxruntime to decode "
                     "it with ONNX Runtime.")
    if args.ensemble:
        check_ensemble_arguments(parser, args)
    return args


def check_ensemble_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with a usage error where ``--ensemble`` cannot run: with ``--backend onnxruntime`` or
    ``--alignments_dir``, or with a folder that is an ONNX export or cannot exist."""
    for option, value in (("--backend onnxruntime", args.backend == "onnxruntime"),
                          ("--alignments_dir", args.alignments_dir is not None)):
        if value:
            parser.error(f"--ensemble decodes PyTorch models without alignments (each member attends on its own): "
                         f"it does not run with {option}.")
    for folder in args.ensemble:
        if is_onnx_export(folder):
            parser.error(f"--ensemble {folder!r} is a folder written by hf-bahdanau-export: an ensemble's members "
                         "are PyTorch model folders (the folder it was exported from).")
        try:
            check_model_location(folder, "--ensemble")
        except ValueError as error:
            parser.error(str(error))


def blank_entries(texts: Sequence[str], what: str, where: str) -> str | None:
    """The error for the empty or blank ``texts``, numbered from 1 as ``what``s of ``where``: "line 2, 5 of the input
    are empty"; None when every text has something in it."""
    blank = [number for number, text in enumerate(texts, 1) if not text.strip()]
    if not blank:
        return None
    shown = ", ".join(map(str, blank[:10])) + (" …" if len(blank) > 10 else "")
    return f"{what} {shown} of {where} {'is' if len(blank) == 1 else 'are'} empty"


def read_lines(stream: Iterable[str]) -> list[str]:
    """The lines of a text stream without their line breaks; blank lines at the end of a file are dropped."""
    lines = [line.rstrip("\r\n") for line in stream]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def check_model_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with a usage error (``parser.error``) for a ``model`` that cannot exist, a ``--batch_size`` below 1, a
    ``--num_beams`` / ``--max_new_tokens`` that generate() would refuse (``check_search_arguments``'s rule and
    message) or a ``--max_new_tokens`` above ``MAX_NEW_TOKENS``."""
    from transformers import GenerationConfig

    try:
        check_model_location(args.model, "model")
        check_search_arguments(GenerationConfig(), {"num_beams": args.num_beams,
                                                    "max_new_tokens": args.max_new_tokens}, None)
        check_new_tokens(args.max_new_tokens, "--max_new_tokens")
    except ValueError as error:
        parser.error(str(error))
    if args.batch_size < 1:
        parser.error(f"--batch_size must be a positive integer, got {args.batch_size}.")


def load_text_model(name: str, prog: str, *, revision: str | None = None, trust_remote_code: bool = False,
                    with_tokenizer: bool = True, argument: str = "model",
                    ) -> tuple[PreTrainedModel, PreTrainedTokenizerBase | None]:
    """(model, tokenizer) of a saved text-to-text model folder or Hub id, through the Auto classes, without
    transformers' progress bars (tokenizer None without ``with_tokenizer``). A folder that holds no seq2seq model
    (``check_seq2seq``), an ONNX export, or a name that cannot be loaded exits with one error line that starts with
    ``prog`` and names ``argument``; a name found neither here nor on the Hub ends as argparse ends a bad argument
    (exit status 2)."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

    if is_onnx_export(name):
        raise SystemExit(f"{prog}: error: {name!r} is an ONNX export (it has {MANIFEST}): {prog} reads the "
                         "PyTorch model folder it was exported from.")
    hide_loading_bars()
    options = dict(revision=revision, trust_remote_code=trust_remote_code)
    try:
        check_seq2seq(AutoConfig.from_pretrained(name, **options), name, prog)
        tokenizer = AutoTokenizer.from_pretrained(name, **options) if with_tokenizer else None
        model = AutoModelForSeq2SeqLM.from_pretrained(name, **options)
    except OSError as error:  # not a local folder, and not on the Hub or in its cache
        reason = str(error).strip().splitlines()[0]
        usage_error(prog, f"cannot load `{argument}` {name!r}: no such local folder, and from the Hub: {reason}")
    return model, tokenizer


def check_seq2seq(config: PreTrainedConfig, name: str, prog: str) -> None:
    """Exit with one error line starting with ``prog`` unless ``config`` (of the folder or Hub id ``name``) is of an
    hf_bahdanau family that reads and writes text (``Family.text_to_text``): ``AutoModelForSeq2SeqLM`` would load a
    tagger's or a classifier's folder with a randomly initialised decoder, and a pointer network outputs positions,
    not text (its ``Family.refusal`` says so)."""
    family = find_family(config.to_dict())
    if family is not None and family.text_to_text:
        return
    if family is not None and family.refusal:
        raise SystemExit(f"{prog}: error: {name!r} {family.refusal}")
    seq2seq = BahdanauForConditionalGeneration.__name__
    if family is None:
        what = f"a {config.model_type!r} model, not an hf_bahdanau one"
    else:
        held = (config.architectures or [f"{family.name} model"])[0]  # None where saved without a model
        auto_class = next((auto for auto, reference in (config.auto_map or {}).items()
                           if reference.rpartition(".")[2] == held), None)
        what = f"a {held}" + (f" (load it with {auto_class})" if auto_class else "") + ", not a seq2seq model"
    raise SystemExit(f"{prog}: error: {name!r} holds {what}: {prog} reads folders of hf_bahdanau's {seq2seq} (text "
                     "in, text out) only.")


def is_onnx_export(name: str) -> bool:
    """Whether ``name`` is a local folder written by hf-bahdanau-export (its ``MANIFEST``, no ``config.json``)."""
    folder = Path(name).expanduser()
    return (folder / MANIFEST).is_file() and not (folder / "config.json").is_file()


def hide_loading_bars() -> None:
    """Turn transformers' progress bars off for this process ("Loading weights" at every call); the Hub's download
    bars stay as they were (a Hub model may take minutes to download)."""
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
    from transformers.utils.logging import disable_progress_bar

    hub_bars_disabled = are_progress_bars_disabled()
    disable_progress_bar()  # transformers' switch turns the Hub's bars off too
    if not hub_bars_disabled:
        enable_progress_bars()


def load_onnx_model(folder: str, quantized: bool = False) -> tuple[OnnxPipelineModel, PreTrainedTokenizerBase]:
    """(model, tokenizer) of a folder written by hf-bahdanau-export, the model with the PyTorch one's interface
    (``OnnxPipelineModel``; ``quantized``: its int8 graphs); a missing onnxruntime, a folder that is not an export
    (or has no int8 graphs) or one without its tokenizer exits with one error line."""
    from transformers import AutoTokenizer

    try:
        from .onnx.pipeline import OnnxPipelineModel

        model = OnnxPipelineModel.from_pretrained(folder, quantized=quantized)
    except ImportError as error:
        raise SystemExit(f"hf-bahdanau-translate: error: --backend onnxruntime needs onnxruntime "
                         f"(pip install \"hf_bahdanau[onnx]\"): {error}") from None
    except ValueError as error:
        raise SystemExit(f"hf-bahdanau-translate: error: {error}") from None
    try:
        return model, AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as error:
        reason = " ".join(str(error).split())  # one line
        raise SystemExit(f"hf-bahdanau-translate: error: cannot load the tokenizer of {folder!r} (export the model "
                         f"with its tokenizer): {reason}") from None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.backend == "onnxruntime":
        model, tokenizer = load_onnx_model(args.model, quantized=args.int8)
    else:
        model, tokenizer = load_text_model(args.model, "hf-bahdanau-translate", revision=args.revision,
                                           trust_remote_code=args.trust_remote_code)
    if args.ensemble:
        model = load_ensemble(model, args)
    with usage_errors("hf-bahdanau-translate"):  # e.g. --alignments_dir for a model without attention
        results = translate(model, tokenizer, args.sentences, num_beams=args.num_beams,
                            max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                            output_alignments=args.alignments_dir is not None)
    if args.alignments_dir is None:
        for result in results:
            print(result.translation)
        return
    from .pictures import plot_alignment

    args.alignments_dir.mkdir(parents=True, exist_ok=True)
    for number, result in enumerate(results):
        path = args.alignments_dir / f"alignment_{number}.png"
        plot_alignment(result.alignment, result.source_tokens, result.target_tokens, path=path,
                       title=f"{result.source} → {result.translation}", p_gen=result.p_gen)
        print(f"{result.translation}\t{path}")


@contextlib.contextmanager
def usage_errors(prog: str) -> Iterator[None]:
    """End the command as argparse ends it on a bad argument when the library refuses one the parser could not
    check (it needs the loaded model): a ``ValueError`` (its message names the argument) becomes "PROG: error:
    MESSAGE" on stderr and exit status 2, without a traceback."""
    try:
        yield
    except ValueError as error:
        usage_error(prog, str(error))


def usage_error(prog: str, message: str) -> NoReturn:
    """End the command as argparse ends it on a bad argument: "PROG: error: MESSAGE" on stderr, exit status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2) from None


def load_ensemble(model: PreTrainedModel, args: argparse.Namespace) -> BahdanauEnsembleForConditionalGeneration:
    """``model`` and the ``--ensemble`` folders' models as one ensemble; members that do not share the vocabulary or
    special tokens exit with one error line naming the folder."""
    members = [model] + [load_text_model(folder, "hf-bahdanau-translate", revision=args.revision,
                                         trust_remote_code=args.trust_remote_code, with_tokenizer=False,
                                         argument="--ensemble")[0] for folder in args.ensemble]
    try:
        return BahdanauEnsembleForConditionalGeneration(members)
    except ValueError as error:
        names = ", ".join(f"member {index} is {name!r}" for index, name in enumerate([args.model, *args.ensemble]))
        raise SystemExit(f"hf-bahdanau-translate: error: {error} ({names})") from None


def export_main(argv: list[str] | None = None) -> None:
    """``hf-bahdanau-export``: ``export_onnx`` (and ``quantize_onnx``) of a saved seq2seq model."""
    from .onnx.export import OPSET, export_onnx, quantize_onnx

    parser = argparse.ArgumentParser(
        prog="hf-bahdanau-export",
        description="Export a saved seq2seq model to ONNX: encoder.onnx, decoder_step.onnx and greedy.onnx, with "
                    "onnx_config.json, the tokenizer and the ONNX Runtime decoder, for "
                    "hf-bahdanau-translate OUTPUT_DIR --backend onnxruntime.")
    parser.add_argument("model", help="a saved seq2seq model folder (with its tokenizer) or a Hub model id")
    parser.add_argument("output_dir", type=Path, help="the folder to write the ONNX graphs, tokenizer and runtime to")
    parser.add_argument("--opset", type=int, default=OPSET, help=f"ONNX opset (≥ {OPSET}, default {OPSET})")
    parser.add_argument("--int8", action="store_true", help="also write int8 graphs (dynamic quantisation)")
    args = parser.parse_args(argv)
    model, tokenizer = load_text_model(args.model, "hf-bahdanau-export")
    try:
        export_onnx(model, args.output_dir, tokenizer=tokenizer, opset=args.opset)
        if args.int8:
            quantize_onnx(args.output_dir)
    except ValueError as error:
        parser.error(str(error))
    print(f"Exported to {args.output_dir}: hf-bahdanau-translate {args.output_dir} --backend onnxruntime \"...\"")


if __name__ == "__main__":
    main()
