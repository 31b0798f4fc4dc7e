"""Shared steps of the parallel-corpus scripts (make_de_en.py, make_bible.py): normalise, clean, deduplicate,
split by a stable hash, write jsonl.

A row is a dict with one text column per language code ({"de": …, "en": …}) and optional extra columns. The split
is by SHA-256 of a group key (a sentence, or a Bible chapter), never Python's ``hash()``: the same input gives the
same split on every machine and Python version. Groups are taken in ascending order of their hash: test first, whole
groups until it holds at least ``test_size`` rows, then validation the same way, the rest is train. Every split's rows
are written in that order (group hash, then input order), so the first N rows of a split are a random sample of its
groups.
"""

import hashlib
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

SPLITS = ("train", "validation", "test")
MAX_WORDS, MAX_RATIO = 100, 3.0


def normalise(text: str) -> str:
    """Unicode NFC, runs of whitespace as one space, no leading or trailing space; nothing else changes."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def clean(rows: Iterable[dict], languages: tuple[str, str], max_words: int = MAX_WORDS,
          max_ratio: float = MAX_RATIO) -> tuple[list[dict], Counter]:
    """The rows whose two texts (normalised in place) are non-empty, at most ``max_words`` words each, and whose word
    counts differ by at most a factor ``max_ratio`` (longer / shorter); returns them and {reason: rows rejected}."""
    if max_words < 1:
        raise ValueError(f"max_words must be a positive number of words, got {max_words}.")
    if max_ratio < 1:
        raise ValueError(f"max_ratio (longer side's words / shorter side's) must be at least 1, got {max_ratio}.")
    kept, rejected = [], Counter()
    for row in rows:
        for language in languages:
            row[language] = normalise(row[language])
        lengths = [len(row[language].split()) for language in languages]
        if min(lengths) == 0:
            rejected["empty_side"] += 1
        elif max(lengths) > max_words:
            rejected["too_long"] += 1
        elif max(lengths) > max_ratio * min(lengths):
            rejected["length_ratio"] += 1
        else:
            kept.append(row)
    return kept, rejected


def deduplicate(rows: Iterable[dict], source: str, target: str) -> tuple[list[dict], Counter]:
    """The first row of each ``source`` text: an exact repeat of a kept pair is counted as ``duplicate_pair``, another
    translation of a kept source as ``other_translation``; both are dropped."""
    first: dict[str, str] = {}
    kept, dropped = [], Counter()
    for row in rows:
        if row[source] in first:
            dropped["duplicate_pair" if first[row[source]] == row[target] else "other_translation"] += 1
        else:
            first[row[source]] = row[target]
            kept.append(row)
    return kept, dropped


def stable_hash(key: str) -> str:
    """SHA-256 of the key's UTF-8 bytes, as 64 hex digits (the same on every machine and Python version)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def split_by_hash(rows: list[dict], group: Callable[[dict], str], test_size: int,
                  validation_size: int) -> dict[str, list[dict]]:
    """{"train", "validation", "test"}: whole groups (``group(row)`` is the key hashed) in ascending hash order, test
    until it holds at least ``test_size`` rows, then validation until ``validation_size``, the rest train."""
    for name, size in (("test_size", test_size), ("validation_size", validation_size)):
        if size < 1:
            raise ValueError(f"{name} must be a positive number of rows, got {size}.")
    if test_size + validation_size >= len(rows):
        raise ValueError(f"test_size + validation_size ({test_size} + {validation_size}) must leave training rows out "
                         f"of {len(rows)}.")
    hashes = {key: stable_hash(key) for key in map(group, rows)}
    ordered = sorted(range(len(rows)), key=lambda index: (hashes[group(rows[index])], index))
    splits: dict[str, list[dict]] = {split: [] for split in SPLITS}
    targets = iter((("test", test_size), ("validation", validation_size), ("train", len(rows))))
    split, size = next(targets)
    previous = None
    for index in ordered:
        key = group(rows[index])
        if key != previous and len(splits[split]) >= size:  # a group is never cut between two splits
            split, size = next(targets)
        splits[split].append(rows[index])
        previous = key
    return splits


def write_splits(splits: dict[str, list[dict]], output_dir: Path, languages: tuple[str, str],
                 counts: Counter | None = None) -> dict:
    """Writes ``{split}.jsonl`` (UTF-8, one JSON object a line) under ``output_dir``, prints and returns the stats:
    rows per split, mean words per language per split, and ``counts`` (rows dropped, by reason)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    stats: dict = {}
    for split, rows in splits.items():
        (output_dir / f"{split}.jsonl").write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        stats[f"{split}_rows"] = len(rows)
        for language in languages:
            words = sum(len(row[language].split()) for row in rows)
            stats[f"{split}_mean_words_{language}"] = round(words / max(len(rows), 1), 2)
    stats.update(sorted((counts or Counter()).items()))
    print(json.dumps(stats))
    return stats
