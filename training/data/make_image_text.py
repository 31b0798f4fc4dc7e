"""Two offline image-to-text tasks in Hugging Face's ``imagefolder`` layout: strips of handwritten digits
(``training/data/digit_strips.py``) and printed words (``training/data/rendered_words.py``).

    python -m training.data.make_image_text --output_dir DIR                     # both tasks, the default counts
    python -m training.data.make_image_text --output_dir DIR --tasks digits --train_count 2000 --seed 1

Licences and provenance are in those modules' docstrings and in each task's dataset card: digits from scikit-learn's
bundled ``load_digits`` (the UCI "Optical Recognition of Handwritten Digits" data, CC BY 4.0), words of the CMU
Pronouncing Dictionary (CMU's BSD-2-Clause-style licence) in the DejaVu and Liberation fonts (Debian packages
fonts-dejavu-core and fonts-liberation). Nothing is committed: the default counts take 58 MB (220 MB on disk in
4 KB blocks; digits 9.5 MB, words 49 MB) and are written in 90 s on 2 busy cores (60 s of CPU).

What is written, for each task (``digits``, ``words``) and split (``train``, ``validation``, ``test``,
``test_long``)::

    DIR/<task>/README.md                      dataset card: provenance, licence, the four splits as `configs`
    DIR/<task>/<split>/000000.png ...         greyscale (mode "L"), 0 = background, bright ink
    DIR/<task>/<split>/metadata.jsonl         {"file_name": "000000.png", "text": "40719"} one line per image

    digits: 20 px high; train 20,000 strips, validation 500, test 1,000 of 3-6 digits; test_long 1,000 of 7-8
            digits. train, validation and test strips use disjoint source images; test_long uses test's.
    words:  32 px high; train 30,000 renderings, validation 500, test 1,000 of 2-8-letter words; test_long 1,000 of
            9-12-letter words. No word is in two splits.

Read a task with ``datasets.load_dataset("DIR/digits")``: the card's ``configs`` give the four splits. Beware
``load_dataset("imagefolder", data_dir="DIR/digits")`` alone: datasets takes a folder named ``test_long`` for a part
of ``test`` and merges the two; pass ``data_files=DATA_FILES`` with it. A split folder is emptied of its PNGs before
it is written. Each split has a seed of its own, derived from --seed, the task and the split (``split_seed``).
"""

import argparse
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from PIL import Image

from training.data.digit_strips import digit_strips
from training.data.make_babi import split_seed
from training.data.rendered_words import rendered_words

SPLITS = ("train", "validation", "test", "test_long")
DATA_FILES = {split: f"{split}/**" for split in SPLITS}  # for load_dataset("imagefolder", data_dir=..., data_files=)
DIGIT_SPLITS = {"train": ("train", (3, 6)), "validation": ("validation", (3, 6)), "test": ("test", (3, 6)),
                "test_long": ("test", (7, 8))}  # split -> (source images, (shortest, longest) digits)


def digit_examples(split: str, count: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """``digit_strips`` of the split's source images and lengths (``DIGIT_SPLITS``)."""
    source, lengths = DIGIT_SPLITS[split]
    return digit_strips(source, count, lengths, seed)


GENERATORS: dict[str, Callable[[str, int, int], list[tuple[np.ndarray, str]]]] = {  # (split, count, seed) -> pairs
    "digits": digit_examples,
    "words": rendered_words,
}
COUNTS = {"digits": {"train": 20_000, "validation": 500, "test": 1_000, "test_long": 1_000},
          "words": {"train": 30_000, "validation": 500, "test": 1_000, "test_long": 1_000}}
CARDS = {
    "digits": ("cc-by-4.0", "Handwritten digit strips",
               "Strips of 3-6 handwritten digits (7-8 in `test_long`), 20 px high, bright ink on black; the text is "
               "the digit string. The digits are the 1,797 8x8 images of scikit-learn's `load_digits`, the test set "
               "of the UCI \"Optical Recognition of Handwritten Digits\" data (E. Alpaydin, C. Kaynak, 1998; CC BY "
               "4.0), upscaled 2x; train, validation and test strips use disjoint source images (70/10/20%). Made "
               "by `training/data/make_image_text.py` of hf_bahdanau (`training/data/digit_strips.py`)."),
    "words": ("bsd-2-clause", "Rendered words",
              "Words of the CMU Pronouncing Dictionary (letters a-z; CMU's BSD-2-Clause-style licence), 2-8 letters "
              "(9-12 in `test_long`), rendered 32 px high, light ink on black, in DejaVu Sans, Serif, Sans Mono and "
              "Liberation Sans, Serif, Mono (Debian fonts-dejavu-core, fonts-liberation) at 16-24 px, with random "
              "offsets, ink levels and Gaussian noise; the text is the word. No word is in two splits. Made by "
              "`training/data/make_image_text.py` of hf_bahdanau (`training/data/rendered_words.py`)."),
}


def write_card(folder: Path, task: str) -> None:
    """The task's README.md: its licence and its four splits as datasets' `configs`, then what it holds."""
    licence, title, description = CARDS[task]
    splits = "".join(f"  - split: {split}\n    path: {DATA_FILES[split]}\n" for split in SPLITS)
    (folder / "README.md").write_text(
        f"---\nlicense: {licence}\ntask_categories:\n- image-to-text\nconfigs:\n- config_name: default\n"
        f"  data_files:\n{splits}---\n\n# {title}\n\n{description}\n\n"
        f"Load with `datasets.load_dataset(\"<this folder>\")`.\n", encoding="utf-8")


def write_imagefolder(folder: Path, examples: Iterable[tuple[np.ndarray, str]]) -> dict[str, float]:
    """PNGs 000000.png, … (mode "L") and metadata.jsonl lines {"file_name", "text"} in `folder` (its old PNGs
    removed); returns {examples, mean_width, max_width, megabytes}."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    lines, widths = [], []
    for index, (image, text) in enumerate(examples):
        if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 2:
            raise ValueError(f"`examples`: image {index} must be a uint8 array [H, W], got "
                             f"{getattr(image, 'dtype', type(image).__name__)} {getattr(image, 'shape', '')}.")
        if not isinstance(text, str):
            raise ValueError(f"`examples`: text {index} must be a str, got {text!r}.")
        name = f"{index:06d}.png"
        Image.fromarray(image).save(folder / name)
        lines.append(json.dumps({"file_name": name, "text": text}) + "\n")  # non-ASCII escaped: \uXXXX
        widths.append(image.shape[1])
    (folder / "metadata.jsonl").write_text("".join(lines), encoding="utf-8")
    size = sum(path.stat().st_size for path in folder.iterdir())
    return {"examples": len(widths), "mean_width": float(np.mean(widths)) if widths else 0.0,
            "max_width": max(widths, default=0), "megabytes": size / 1e6}


def main(argv: list[str] | None = None) -> dict[str, dict]:
    """Write the tasks; returns and prints {"task/split": write_imagefolder's numbers}."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", type=Path, required=True)
    parser.add_argument("--tasks", nargs="+", choices=sorted(GENERATORS), default=sorted(GENERATORS))
    parser.add_argument("--seed", type=int, default=0)
    for split in SPLITS:
        parser.add_argument(f"--{split}_count", type=int, default=None,
                            help=f"{split} examples of every task (default: digits "
                                 f"{COUNTS['digits'][split]}, words {COUNTS['words'][split]})")
    args = parser.parse_args(argv)
    for split in SPLITS:
        if (count := getattr(args, f"{split}_count")) is not None and count < 0:
            raise ValueError(f"`--{split}_count` must be >= 0, got {count}.")
    start, report = time.perf_counter(), {}
    print(f"{'task/split':<20}{'examples':>9}{'mean W':>8}{'max W':>7}{'MB':>8}{'seconds':>9}")
    for task in args.tasks:
        folder = args.output_dir / task
        folder.mkdir(parents=True, exist_ok=True)
        write_card(folder, task)
        for split in SPLITS:
            began = time.perf_counter()
            count = getattr(args, f"{split}_count")
            count = COUNTS[task][split] if count is None else count
            examples = GENERATORS[task](split, count, split_seed(args.seed, task, split))
            numbers = report[f"{task}/{split}"] = write_imagefolder(folder / split, examples)
            print(f"{task + '/' + split:<20}{numbers['examples']:>9}{numbers['mean_width']:>8.1f}"
                  f"{numbers['max_width']:>7}{numbers['megabytes']:>8.1f}{time.perf_counter() - began:>9.1f}")
    print(f"-> {args.output_dir} in {time.perf_counter() - start:.1f} s")
    return report


if __name__ == "__main__":
    main()
