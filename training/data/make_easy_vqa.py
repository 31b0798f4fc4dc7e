"""easy-VQA (``training/data/easy_vqa_data.py``, read from the installed ``easy-vqa`` package) written as a folder in
Hugging Face's ``imagefolder`` layout: the layout a visual question answering data set of your own should have.

    python -m training.data.make_easy_vqa --output_dir DIR
    python -m training.data.make_easy_vqa --output_dir DIR --validation_images 800

Licence: the easy-VQA data is Victor Zhou's (MIT licence; https://github.com/vzhou842/easy-VQA), installed with
``pip install easy-vqa``. Nothing is committed: the folder takes 8.6 MB (26 MB on disk in 4 KB blocks): 5,000 PNGs
of about 430 bytes, 2.2 MB, and three metadata.jsonl files, 6.4 MB; it is written in 6 s.

What is written, for each split (``train``, ``validation``, ``test``)::

    DIR/README.md                    dataset card: provenance, licence, the three splits as `configs`
    DIR/<split>/<image_id>.png       the package's PNG files, byte for byte (RGB, 64×64)
    DIR/<split>/metadata.jsonl       one line per question: {"file_name": "17.png", "question": "is there a red
                                     shape?", "answer": "no", "question_type": "yes/no", "image_id": 17}

Several lines name the same image (an image has 2-21 questions); ``imagefolder`` gives one row per line, in the
file's order, so ``datasets.load_dataset("DIR")`` reads the columns image, question, answer, question_type,
image_id as ``load_easy_vqa`` gives them. Your own data needs only file_name, question and answer. Validation is
the questions about --validation_images training images chosen by a hash of their id; test is the package's test
set. A split folder is emptied of its PNGs before it is written.
"""

import argparse
import json
import shutil
import time
from collections import Counter
from pathlib import Path

import datasets

from training.data.easy_vqa_data import QUESTION_TYPES, load_easy_vqa

CARD = """---
license: mit
task_categories:
- visual-question-answering
configs:
- config_name: default
  data_files:
{splits}---

# easy-VQA

Victor Zhou's easy-VQA (MIT licence, https://github.com/vzhou842/easy-VQA, the `easy-vqa` package): 64×64 RGB images
of one shape (circle, rectangle, triangle) in one of 8 colours on a plain background, with generated questions
answered by one of 13 words. Validation holds the questions about training images set aside by a hash of their id;
test is the package's test set. Columns: image, question, answer, question_type (yes/no, color, shape), image_id.
Made by `training/data/make_easy_vqa.py` of hf_bahdanau.

Load with `datasets.load_dataset("<this folder>")`.
"""


def write_vqa_folder(splits: datasets.DatasetDict, output_dir: Path) -> dict[str, dict[str, int]]:
    """Each split's image files (copied, named <image_id> + their suffix) and its metadata.jsonl, one line per row;
    the card README.md. splits: columns image (files on disk), question, answer, question_type, image_id.
    Returns {split: {"questions", "images", question type: questions}}."""
    output_dir.mkdir(parents=True, exist_ok=True)
    data_files = "".join(f"  - split: {split}\n    path: {split}/**\n" for split in splits)
    (output_dir / "README.md").write_text(CARD.format(splits=data_files), encoding="utf-8")
    report = {}
    for split, dataset in splits.items():
        folder = output_dir / split
        folder.mkdir(exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()
        sources, lines = {}, []
        for row in dataset.cast_column("image", datasets.Image(decode=False)):
            source, image_id = row["image"]["path"], row["image_id"]
            if source is None or not Path(source).is_file():
                raise ValueError(f"`splits`: {split} image {image_id} must be a file on disk, got path {source!r}.")
            if sources.setdefault(image_id, source) != source:
                raise ValueError(f"`splits`: {split} image_id {image_id} names two files, {sources[image_id]} and "
                                 f"{source}.")
            lines.append(json.dumps({"file_name": f"{image_id}{Path(source).suffix}", "question": row["question"],
                                     "answer": row["answer"], "question_type": row["question_type"],
                                     "image_id": image_id}) + "\n")
        for image_id, source in sources.items():
            shutil.copyfile(source, folder / f"{image_id}{Path(source).suffix}")
        (folder / "metadata.jsonl").write_text("".join(lines), encoding="utf-8")
        types = Counter(dataset["question_type"])
        report[split] = {"questions": len(dataset), "images": len(sources), **{kind: types[kind]
                                                                               for kind in QUESTION_TYPES}}
    return report


def main(argv: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Write the folder; returns and prints write_vqa_folder's counts."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", type=Path, required=True)
    parser.add_argument("--validation_images", type=int, default=400,
                        help="training images whose questions make the validation split")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    report = write_vqa_folder(load_easy_vqa(args.validation_images), args.output_dir)
    print(f"{'split':<12}{'questions':>10}{'images':>8}" + "".join(f"{kind:>8}" for kind in QUESTION_TYPES))
    for split, counts in report.items():
        print(f"{split:<12}{counts['questions']:>10}{counts['images']:>8}"
              + "".join(f"{counts[kind]:>8}" for kind in QUESTION_TYPES))
    print(f"-> {args.output_dir} in {time.perf_counter() - start:.1f} s")
    return report


if __name__ == "__main__":
    main()
