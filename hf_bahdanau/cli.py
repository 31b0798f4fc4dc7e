"""``hf-bahdanau-translate``: decode sentences with a saved model folder or Hub id, optionally saving alignment pictures.

    hf-bahdanau-translate outputs/dates "le 3 mars 2015" "3/14/15" --num_beams 5
    cat sentences.txt | hf-bahdanau-translate outputs/dates --alignments_dir pictures

Prints one line per input: the translation, and with ``--alignments_dir`` a tab and the path of its heat map.
Loading goes through the Auto classes, which the package registered when this module was imported.
"""

import argparse
import sys
from pathlib import Path

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from .decoding import translate
from .plotting import plot_alignment


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hf-bahdanau-translate", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a saved model folder (with its tokenizer) or a Hub model id")
    parser.add_argument("sentences", nargs="*", help="sentences to translate; none: read one per line from stdin")
    parser.add_argument("--num_beams", type=int, default=1, help="1 = greedy (default), more = beam search")
    parser.add_argument("--max_new_tokens", type=int, default=None, help="default: the model's generation config")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--alignments_dir", type=Path, default=None,
                        help="save each sentence's alignment heat map here as alignment_<n>.png and print its path")
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--trust_remote_code", action="store_true",
                        help="allow code from the model folder (not needed for hf_bahdanau models)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sentences = args.sentences or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    options = dict(revision=args.revision, trust_remote_code=args.trust_remote_code)
    tokenizer = AutoTokenizer.from_pretrained(args.model, **options)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model, **options)
    results = translate(model, tokenizer, sentences, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens,
                        batch_size=args.batch_size, output_alignments=args.alignments_dir is not None)
    if args.alignments_dir is not None:
        args.alignments_dir.mkdir(parents=True, exist_ok=True)
    for number, result in enumerate(results):
        if args.alignments_dir is None:
            print(result.translation)
            continue
        path = args.alignments_dir / f"alignment_{number}.png"
        plot_alignment(result.alignment, result.source_tokens, result.target_tokens, path=path,
                       title=f"{result.source} → {result.translation}")
        print(f"{result.translation}\t{path}")


if __name__ == "__main__":
    main()
