"""English–Spanish Bible verses (World English Bible, Reina-Valera 1909), split by whole chapters.

    apt-get install sword-text-web sword-text-sparv    # SWORD modules engWEB2015eb and spaRV1909eb (public domain)
    pip install -e ".[mt]"                             # pysword, which reads them
    python -m training.data.make_bible                 # writes training/data/bible-es-en/{train,validation,test}.jsonl

Verses are paired by (book, chapter, verse) where both modules have that verse (the English module's deuterocanonical
books, and verses one versification numbers and the other does not, are left out). pysword's raw verse text is OSIS
XML; ``osis_to_text`` keeps the words and drops the markup: footnotes (``<note>…</note>``) and the speaker labels of
the Song of Songs are removed with their content, canonical psalm titles are kept (Reina-Valera has them in verse 1
too), and where a removed note or quotation end sat between two words a space is put back ("God<note>…</note>created"
-> "God created"). Empty verses are skipped; then the shared cleaning and deduplication of parallel_corpus.py (an
English verse keeps its first translation). Lines::

    {"en": "For God so loved the world, …", "es": "Porque de tal manera amó Dios al mundo, …",
     "book": "John", "chapter": 3, "verse": 16, "reference": "John 3:16"}

with OSIS book names ("Gen", "1Sam", "John"). Validation and test hold whole chapters (by the SHA-256 of
"book chapter"), so a test verse's neighbours are not in training: chapters are added until each holds at least its
size in verses.
"""

import argparse
import functools
import html
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from training.data.parallel_corpus import (MAX_RATIO, MAX_WORDS, clean, deduplicate, normalise,
                                           split_by_hash, write_splits)

DEFAULT_SWORD_PATH = Path("/usr/share/sword")
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "bible-es-en"
LANGUAGES = ("en", "es")
MODULES = {"en": "engWEB2015eb", "es": "spaRV1909eb"}
INSTALL = "apt-get install sword-text-web sword-text-sparv, and pip install pysword (pip install -e \".[mt]\")"
REMOVED = re.compile(r"<(note|speaker)\b[^>]*>.*?</\1>", re.DOTALL)  # footnotes, speaker labels: with their text
INLINE = re.compile(r"</?(?:w|name|seg|divineName)\b[^>]*>|<q\b[^>]*>")  # inside a line: no space
CLITIC = re.compile(r"<transChange\b[^>]*>(?=(?:le|les|la|las|lo|los|se|me|te|nos|os)</transChange>)")
MAY_BE_SPACE = re.compile(r"</q>|</?transChange\b[^>]*>")  # the text often has no space at these tags: a mark
MARK = "\x00"
MARKS = re.compile(f"{MARK}+")
NO_SPACE_AFTER, NO_SPACE_BEFORE = "“‘(¿¡", ",.;:!?)”’"

Verse = tuple[str, int, int, str, str]  # (book, chapter, verse, English OSIS text, Spanish OSIS text)


def _attach_clitic(match: re.Match) -> str:
    """An added pronoun right after a word belongs to it ("Júrame" + "lo" -> "Júramelo"): the tag goes, no mark."""
    return "" if match.string[match.start() - 1:match.start()].isalnum() else match.group()


def _space_for_mark(match: re.Match) -> str:
    """A space where removed markup stood between two words ("God<note>…</note>created" -> "God created")."""
    before, after = match.string[match.start() - 1:match.start()], match.string[match.end():match.end() + 1]
    between_words = (before and after and not before.isspace() and not after.isspace()
                     and before not in NO_SPACE_AFTER and after not in NO_SPACE_BEFORE)
    return " " if between_words else ""


def osis_to_text(osis: str) -> str:
    """The verse's words without its OSIS markup (see the module docstring), normalised."""
    text = CLITIC.sub(_attach_clitic, INLINE.sub("", REMOVED.sub(MARK, osis)))
    text = MAY_BE_SPACE.sub(MARK, text)
    text = html.unescape(re.sub(r"<[^>]*>", " ", text))  # other tags (lines, paragraphs, titles) end a line
    return normalise(MARKS.sub(_space_for_mark, text))


def verse_rows(verses: Iterable[Verse]) -> tuple[list[dict], Counter]:
    """Rows {"en", "es", "book", "chapter", "verse", "reference"} of the verses whose two texts are not empty after
    ``osis_to_text``, and {"empty_verse": verses skipped}."""
    rows, skipped = [], Counter()
    for book, chapter, verse, english, spanish in verses:
        en, es = osis_to_text(english), osis_to_text(spanish)
        if not en or not es:
            skipped["empty_verse"] += 1
            continue
        rows.append({"en": en, "es": es, "book": book, "chapter": chapter, "verse": verse,
                     "reference": f"{book} {chapter}:{verse}"})
    return rows, skipped


def chapter_verses(bible, book: str, chapter: int) -> list[str]:
    """The raw OSIS text of every verse of one chapter, in order."""
    return list(bible.get_iter(books=[book], chapters=[chapter], clean=False))


def read_bibles(sword_path: Path, english_module: str, spanish_module: str) -> Iterator[Verse]:
    """(book, chapter, verse, English, Spanish) for every verse both SWORD modules number, in the English order."""
    try:
        from pysword.modules import SwordModules
    except ModuleNotFoundError:
        raise SystemExit(f"make_bible.py reads the SWORD modules with pysword: {INSTALL}.") from None
    modules = SwordModules(str(sword_path))
    found = modules.parse_modules() if (sword_path / "mods.d").is_dir() else {}
    missing = [name for name in (english_module, spanish_module) if name not in found]
    if missing:
        raise SystemExit(f"SWORD module(s) {missing} not found under {sword_path} (found: {sorted(found)}): "
                         f"{INSTALL}; or pass --sword_path, --english_module, --spanish_module.")
    bibles = [modules.get_bible_from_module(name) for name in (english_module, spanish_module)]
    for bible in bibles:  # pysword 0.2.8 inflates a whole book's block for every verse (minutes); once is enough
        if hasattr(bible, "_decompressed_text"):  # a private method: without it, only slower
            bible._decompressed_text = functools.lru_cache(maxsize=1)(bible._decompressed_text)
    structures = [{book.osis_name: book for testament in bible.get_structure().get_books().values()
                   for book in testament} for bible in bibles]
    for name, english_book in structures[0].items():
        spanish_book = structures[1].get(name)
        if spanish_book is None:
            continue
        for chapter, (english_length, spanish_length) in enumerate(
                zip(english_book.chapter_lengths, spanish_book.chapter_lengths), start=1):
            english, spanish = (chapter_verses(bible, name, chapter) for bible in bibles)
            for verse in range(1, min(english_length, spanish_length) + 1):
                yield name, chapter, verse, english[verse - 1], spanish[verse - 1]


def make_splits(verses: Iterable[Verse], test_size: int, validation_size: int, max_words: int = MAX_WORDS,
                max_ratio: float = MAX_RATIO) -> tuple[dict[str, list[dict]], Counter]:
    """The rows of ``verse_rows``, cleaned, deduplicated (by English verse) and split by whole chapters; and the
    counts of what was dropped."""
    rows, counts = verse_rows(verses)
    rows, rejected = clean(rows, LANGUAGES, max_words, max_ratio)
    rows, dropped = deduplicate(rows, "en", "es")
    splits = split_by_hash(rows, lambda row: f"{row['book']} {row['chapter']}", test_size, validation_size)
    return splits, counts + rejected + dropped


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sword_path", type=Path, default=DEFAULT_SWORD_PATH, help="folder holding mods.d/")
    parser.add_argument("--english_module", default=MODULES["en"])
    parser.add_argument("--spanish_module", default=MODULES["es"])
    parser.add_argument("--output_dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--validation_size", type=int, default=1500, help="verses, in whole chapters (at least)")
    parser.add_argument("--test_size", type=int, default=1500, help="verses, in whole chapters (at least)")
    parser.add_argument("--max_words", type=int, default=MAX_WORDS, help="longest verse kept, in words")
    parser.add_argument("--max_ratio", type=float, default=MAX_RATIO, help="largest ratio of the sides' word counts")
    args = parser.parse_args(argv)
    verses = read_bibles(args.sword_path, args.english_module, args.spanish_module)
    splits, counts = make_splits(verses, args.test_size, args.validation_size, args.max_words, args.max_ratio)
    return write_splits(splits, args.output_dir, LANGUAGES, counts)


if __name__ == "__main__":
    main()
