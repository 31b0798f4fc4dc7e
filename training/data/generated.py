"""What the generated data sets' builders share: splits of distinct rows, their .jsonl lines, and the builders'
command-line arguments.

    splits = distinct_splits({"train": 100, "test": 10}, lambda split: example(rng))
    path.write_text("".join(jsonl_lines(rows)), encoding="utf-8")
"""

import argparse
import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

__all__ = ["build_splits", "builder_arguments", "distinct_splits", "jsonl_lines"]


def distinct_splits(sizes: Mapping[str, int], draw: Callable[[str], dict],
                    key: str = "source") -> dict[str, list[dict]]:
    """``sizes[split]`` rows per split, in order, each ``draw(split)``; a row whose ``key`` was drawn before, in this
    split or an earlier one, is drawn again (so no test source is a training source)."""
    seen: set[str] = set()
    splits = {}
    for split, size in sizes.items():
        rows = []
        while len(rows) < size:
            row = draw(split)
            if row[key] not in seen:
                seen.add(row[key])
                rows.append(row)
        splits[split] = rows
    return splits


def jsonl_lines(rows: Iterable[dict]) -> Iterator[str]:
    """One JSON line per row, non-ASCII characters as they are."""
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def builder_arguments(description: str, output_dir: Path) -> argparse.ArgumentParser:
    """A builder's parser with the flags every builder has: ``--output_dir`` (default ``output_dir``, the bundled
    folder) and ``--seed`` (default 0)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--output_dir", type=Path, default=output_dir)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def build_splits(description: str, output_dir: Path, sizes: Mapping[str, int],
                 generate: Callable[[int, random.Random], list[dict]]) -> tuple[Path, dict[str, list[dict]]]:
    """A builder's run: its arguments (``builder_arguments``), each split's ``generate(size, rng)`` rows in the order of
    ``sizes`` from one ``random.Random(--seed)``, written to ``<split>.jsonl`` in ``--output_dir``; returns the folder
    and the rows."""
    args = builder_arguments(description, output_dir).parse_args()
    rng = random.Random(args.seed)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    splits = {split: generate(size, rng) for split, size in sizes.items()}
    for split, rows in splits.items():
        (args.output_dir / f"{split}.jsonl").write_text("".join(jsonl_lines(rows)), encoding="utf-8")
    return args.output_dir, splits
