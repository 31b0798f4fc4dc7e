"""Real short texts for the classifiers: Debian's fortune cookies, labelled by the category file they come from.

    apt-get install fortunes fortunes-min           # the files, in /usr/share/games/fortunes
    python -m training.data.make_fortunes           # writes training/data/fortunes/{train,validation,test}.jsonl
    python -m training.data.make_fortunes --fortunes_dir DIR --output_dir OUT --min_texts 100
    python -m training classification training/configs/fortunes_flat.json   # or fortunes_han.json

Licence: the fortune files are distributed under the BSD licence of fortune-mod (University of California, see
/usr/share/doc/fortunes/copyright); the files written here are generated at run time and never committed. Each line
is one text and its category (the name of its file)::

    {"text": "A fool and his money are soon partying.\\n\\t\\t-- Anonymous", "label": "miscellaneous"}

What is read, exactly:

- Category files: every file directly in the folder whose name has no dot (strfile's ``.dat`` indexes and Debian's
  ``.u8`` links are skipped; subfolders, e.g. ``off/`` with the offensive files, are not read).
- Texts: the lines between lines that hold exactly ``%``, joined with newlines, kept as written (indentation, tabs,
  line breaks, attributions): only the ``%`` lines and the newline ending each text's last line are removed. A text
  with no character other than white space is dropped.
- Encoding: a file is read as bytes and each text decoded as strict UTF-8. A text that is not valid UTF-8 is dropped
  and counted in the report (no encoding is guessed; Debian's fortunes 1:1.99.1-7.3 are all valid UTF-8).
- Duplicates: a text written more than once in one category is kept once; a text found in two or more categories
  is dropped from all of them (its label is ambiguous).
- Categories with fewer than ``--min_texts`` texts left (default 100) are left out.

Split: by the SHA-256 of the text's UTF-8 bytes, read as a number modulo 100: below ``100 - validation_percent -
test_percent`` train, then validation, then test (80 / 10 / 10 by default). A text's split depends on the text
alone: the same file always gives the same split, and adding or removing other texts moves none. Each file lists
its rows in the order of that hash (categories mixed, so that ``--max_eval_samples N`` keeps a sample of all).

Learnability (Debian 1:1.99.1-7.3, defaults): 32 categories, 14,533 texts (11,654 / 1,397 / 1,482). The categories
are the files' own, unmerged: a bag of words (``training/bag_of_words_baseline.py``) gets 45.3% test accuracy and
44.7% macro-F1 where the majority class (``people``) is 9.8% of test, so they are learnable as they are; the flat
attention classifier of ``fortunes_flat.json`` gets 54.2% and 53.8%, the HAN of ``fortunes_han.json`` 49.9% and 46.8%.
"""

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

DEFAULT_FORTUNES_DIR = Path("/usr/share/games/fortunes")
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "fortunes"
SPLITS = ("train", "validation", "test")
SEPARATOR = b"%"  # a line holding only this ends a text
MIN_TEXTS, VALIDATION_PERCENT, TEST_PERCENT = 100, 10, 10


def read_texts(data: bytes) -> tuple[list[str], int]:
    """A fortune file's bytes -> (its non-blank texts in file order, how many were not valid UTF-8)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":  # the newline ending the file's last line
        lines.pop()
    entries, current = [], []
    for line in [*lines, SEPARATOR]:
        if line == SEPARATOR:
            entries.append(b"\n".join(current))
            current = []
        else:
            current.append(line)
    texts, not_utf8 = [], 0
    for entry in entries:
        try:
            text = entry.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8 += 1
            continue
        if text.strip():
            texts.append(text)
    return texts, not_utf8


def split_of(text: str, validation_percent: int = VALIDATION_PERCENT, test_percent: int = TEST_PERCENT) -> str:
    """"train", "validation" or "test", from SHA-256(text) mod 100 alone."""
    bucket = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big") % 100
    if bucket < 100 - validation_percent - test_percent:
        return "train"
    return "validation" if bucket < 100 - test_percent else "test"


def category_files(fortunes_dir: Path) -> list[Path]:
    """The category files of a fortunes folder: files directly in it whose names have no dot, sorted by name."""
    if not fortunes_dir.is_dir():
        raise ValueError(f"`--fortunes_dir` must be a folder of fortune files, got {str(fortunes_dir)!r}, which is not "
                         "a folder: apt-get install fortunes fortunes-min (they go to /usr/share/games/fortunes), or "
                         "give the folder that holds them.")
    files = sorted(path for path in fortunes_dir.iterdir() if path.is_file() and "." not in path.name)
    if not files:
        raise ValueError(f"`--fortunes_dir` {str(fortunes_dir)!r} holds no fortune files (files whose names have no "
                         "dot, texts separated by lines holding only '%').")
    return files


def collect(fortunes_dir: Path, min_texts: int) -> tuple[dict[str, list[str]], dict[str, Counter]]:
    """({category: its texts, each once, in file order} for the categories kept, {what was dropped: per category})."""
    texts, dropped = {}, {"not UTF-8": Counter(), "repeated in its file": Counter(), "in several categories": Counter(),
                          "in a category below --min_texts": Counter()}
    for path in category_files(fortunes_dir):
        category_texts, dropped["not UTF-8"][path.name] = read_texts(path.read_bytes())
        texts[path.name] = list(dict.fromkeys(category_texts))
        dropped["repeated in its file"][path.name] = len(category_texts) - len(texts[path.name])
    categories_of = Counter(text for category_texts in texts.values() for text in category_texts)
    for category, category_texts in texts.items():
        texts[category] = [text for text in category_texts if categories_of[text] == 1]
        dropped["in several categories"][category] = len(category_texts) - len(texts[category])
    for category in [category for category, category_texts in texts.items() if len(category_texts) < min_texts]:
        dropped["in a category below --min_texts"][category] = len(texts.pop(category))
    if len(texts) < 2:
        raise ValueError(f"`--min_texts` {min_texts} keeps {len(texts)} categor{'y' if len(texts) == 1 else 'ies'} of "
                         f"{str(fortunes_dir)!r}: a classifier needs at least 2; give a smaller --min_texts.")
    return texts, dropped


def check_arguments(args: argparse.Namespace) -> None:
    if args.min_texts < 1:
        raise ValueError(f"`--min_texts` must be at least 1, got {args.min_texts}.")
    for name in ("validation_percent", "test_percent"):
        if not 1 <= getattr(args, name) <= 98:
            raise ValueError(f"`--{name}` must be between 1 and 98, got {getattr(args, name)}.")
    if args.validation_percent + args.test_percent >= 100:
        raise ValueError(f"`--validation_percent` + `--test_percent` must leave a training share, got "
                         f"{args.validation_percent} + {args.test_percent} >= 100.")


def main(argv: list[str] | None = None) -> dict[str, dict]:
    """Write the three files; returns and prints {category: {split: texts}} and what was dropped."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fortunes_dir", type=Path, default=DEFAULT_FORTUNES_DIR)
    parser.add_argument("--output_dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--min_texts", type=int, default=MIN_TEXTS, help="keep categories with at least this many")
    parser.add_argument("--validation_percent", type=int, default=VALIDATION_PERCENT)
    parser.add_argument("--test_percent", type=int, default=TEST_PERCENT)
    args = parser.parse_args(argv)
    check_arguments(args)
    texts, dropped = collect(args.fortunes_dir, args.min_texts)
    rows = {split: [] for split in SPLITS}
    for category, category_texts in texts.items():
        for text in category_texts:
            rows[split_of(text, args.validation_percent, args.test_percent)].append({"text": text, "label": category})
    args.output_dir.mkdir(parents=True, exist_ok=True)
    counts = {category: dict.fromkeys(SPLITS, 0) for category in texts}
    for split, split_rows in rows.items():
        split_rows.sort(key=lambda row: hashlib.sha256(row["text"].encode("utf-8")).digest())
        (args.output_dir / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in split_rows),
                                                        encoding="utf-8")
        for row in split_rows:
            counts[row["label"]][split] += 1
    print(f"{'category':<16}" + "".join(f"{split:>11}" for split in SPLITS))
    for category, category_counts in counts.items():
        print(f"{category:<16}" + "".join(f"{category_counts[split]:>11}" for split in SPLITS))
    print(f"{'all':<16}" + "".join(f"{len(rows[split]):>11}" for split in SPLITS) + f"  -> {args.output_dir}")
    for reason, per_category in dropped.items():
        if sum(per_category.values()):
            print(f"dropped, {reason}: {sum(per_category.values())} "
                  f"({', '.join(f'{name} {count}' for name, count in per_category.items() if count)})")
    return {"counts": counts, "dropped": {reason: {name: count for name, count in per_category.items() if count}
                                          for reason, per_category in dropped.items()}}


if __name__ == "__main__":
    main()
