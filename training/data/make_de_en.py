"""German–English example sentences from the Ding dictionary, split by German sentence.

    apt-get install trans-de-en                 # /usr/share/trans/de-en (the Ding dictionary, GPL-2+)
    python -m training.data.make_de_en          # writes training/data/de-en/{train,validation,test}.jsonl

The dictionary is GPL-2+: the files are generated here from the installed package (or ``--source_file``, a file in
its format) and never committed. A line is ``German :: English``; both sides hold the same number of `` | ``-separated
parts (a headword, its inflections, example phrases and sentences), a part's variants are separated by ``; ``, and
annotations stand in braces ``{vt}``, brackets ``[coll.]`` and angle brackets ``<Aalmolch>``. Each aligned pair of
parts becomes a candidate: annotations are removed, a part's first variant is kept ("Wie war der Besuch?; Wie viele
Leute waren da?" -> "Wie war der Besuch?"), and the pair is kept where both sides
are sentences: at least two words, an upper-case letter or a digit first (after an opening quote), ``.``, ``!`` or
``?`` last (before a closing quote), and none of what marks a template or alternatives rather than one sentence:
``...``/``…`` (a gap), ``/`` ("gesendet / versendet") or parentheses (optional words: "(The) markets have…").
Then the shared cleaning (length, ratio) and deduplication of parallel_corpus.py; each German sentence keeps its first
translation. Lines: ``{"de": "Alle Rechte vorbehalten.", "en": "All rights reserved."}``; the split is by the
SHA-256 of the German sentence, so no sentence is in two splits.
"""

import argparse
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from training.data.parallel_corpus import (MAX_RATIO, MAX_WORDS, clean, deduplicate, normalise,
                                           split_by_hash, write_splits)

DEFAULT_SOURCE = Path("/usr/share/trans/de-en")
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "de-en"
LANGUAGES = ("de", "en")
ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>")  # {vt} [coll.] <Aalmolch>
SENTENCE_VARIANTS = re.compile(r"\s*;\s*")  # "Wie war der Besuch?; Wie viele Leute waren da?"
OPENING_QUOTES, CLOSING_QUOTES = "\"'„“‚‘»«", "\"'“”‘’«»"
NOT_ONE_SENTENCE = re.compile(r"\.\.\.|…|/|[()]")


def candidate_pairs(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(German, English) for every aligned pair of `` | ``-parts of the ``German :: English`` lines (``#`` lines are
    comments); a line whose sides have different numbers of parts is refused with its number."""
    for number, line in enumerate(lines, start=1):
        if line.startswith("#") or not line.strip():
            continue
        german, separator, english = line.rstrip("\n").partition(" :: ")
        german_parts, english_parts = german.split(" | "), english.split(" | ")
        if not separator or len(german_parts) != len(english_parts):
            raise ValueError(f"line {number} of the dictionary is not 'German :: English' with as many ' | ' parts "
                             f"on each side: {line!r}")
        yield from zip(german_parts, english_parts)


def sentence(part: str) -> str | None:
    """The part as one sentence (annotations removed, its first variant, normalised), or None if it is not one."""
    if not any(mark in part for mark in ".!?"):  # most parts (headwords, phrases): a quick no
        return None
    text = normalise(SENTENCE_VARIANTS.split(ANNOTATION.sub(" ", part))[0])
    core = text.lstrip(OPENING_QUOTES).rstrip(CLOSING_QUOTES)
    if (len(text.split()) < 2 or not (core[0].isupper() or core[0].isdigit()) or core[-1] not in ".!?"
            or NOT_ONE_SENTENCE.search(text)):
        return None
    return text


def sentence_pairs(lines: Iterable[str]) -> tuple[list[dict], Counter]:
    """{"de", "en"} rows for the parts that are sentences on both sides, and {"not_sentence": parts skipped}."""
    rows, skipped = [], Counter()
    for german, english in candidate_pairs(lines):
        de = sentence(german)
        en = sentence(english) if de else None
        if en is None:
            skipped["not_sentence"] += 1
        else:
            rows.append({"de": de, "en": en})
    return rows, skipped


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source_file", type=Path, default=DEFAULT_SOURCE, help="the Ding dictionary file")
    parser.add_argument("--output_dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--validation_size", type=int, default=1000)
    parser.add_argument("--test_size", type=int, default=1000)
    parser.add_argument("--max_words", type=int, default=MAX_WORDS, help="longest sentence kept, in words")
    parser.add_argument("--max_ratio", type=float, default=MAX_RATIO, help="largest ratio of the sides' word counts")
    args = parser.parse_args(argv)
    if not args.source_file.is_file():
        raise SystemExit(f"make_de_en.py reads the Ding dictionary, and {args.source_file} is not a file: "
                         "apt-get install trans-de-en (Debian, Ubuntu), or pass --source_file FILE.")
    with args.source_file.open(encoding="utf-8") as lines:
        rows, counts = sentence_pairs(lines)
    rows, rejected = clean(rows, LANGUAGES, args.max_words, args.max_ratio)
    rows, dropped = deduplicate(rows, "de", "en")
    splits = split_by_hash(rows, lambda row: row["de"], args.test_size, args.validation_size)
    return write_splits(splits, args.output_dir, LANGUAGES, counts + rejected + dropped)


if __name__ == "__main__":
    main()
