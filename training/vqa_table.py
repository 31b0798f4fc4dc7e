#!/usr/bin/env python
"""The visual question answering table of docs/results.md: run_vqa.py per setting on easy-VQA, the same budget.

    python training/vqa_table.py --jobs 2                          # every run below (≤ 15 minutes of one core each)
    python training/vqa_table.py --settings parallel bag_of_words
    python training/vqa_table.py --table_only                      # the table from the runs already in --output_dir
    python training/vqa_table.py --jobs 2 --resume                 # after a stop: the runs that did not finish

Settings (training/configs/easy_vqa.json's model and training arguments: 1,500 steps of 64 questions, 15 minutes of
training at most, one thread):
    question_only    the question alone (its three levels' means): what the words say without the image
    image_only       the image alone (the mean of its regions)
    bag_of_words     both, no attention: the means of the question's features and of the image's regions (CNN with
                     bag of words, the easy-VQA author's kind of model)
    image_attention  the image attended, guided by the question's mean (attention on the image only)
    parallel         Lu et al.'s parallel co-attention at the word, phrase and question levels
    alternating      Lu et al.'s alternating co-attention at the three levels

Each run writes OUTPUT_DIR/SETTING/ (all_results.json, the model, the pictures); the table (accuracy overall and by
question type on the test set; how often the image attention's peak region lies on the shape, and how often a region
picked at random does) is printed and written to docs/vqa_results.json.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/vqa_table.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

from training.common.table_runs import (  # noqa: E402
    Cell, Column, add_runner_arguments, collect, markdown_table, one_script, predict_metrics, read_json, run_grid,
    trainer_progress, write_json,
)

CONFIG = REPO_ROOT / "training" / "configs" / "easy_vqa.json"
SETTINGS = {  # the order they run in, two at a time: the co-attention forms first
    "parallel": ["--coattention", "parallel"],
    "alternating": ["--coattention", "alternating"],
    "image_attention": ["--coattention", "context"],
    "bag_of_words": ["--coattention", "none"],
    "image_only": ["--coattention", "none", "--inputs", "context"],
    "question_only": ["--coattention", "none", "--inputs", "question"],
}
METRICS = ("accuracy", "accuracy_yes_no", "accuracy_color", "accuracy_shape")
LEVELS = ("word", "phrase", "question")  # the question levels, in the table's order


def cells(settings: list[str], output_dir: Path) -> list[Cell]:
    """One run_vqa.py run per setting, in OUTPUT_DIR/SETTING/."""
    return [one_script((setting,), output_dir / setting, "run_vqa.py",
                       [str(CONFIG), "--output_dir", str(output_dir / setting), "--disable_tqdm", "true",
                        *SETTINGS[setting]])
            for setting in settings]


def read_row(folder: Path) -> dict | None:
    """A finished run's accuracies %, shape_peak_overlap % per question level, steps and training minutes."""
    metrics = read_json(folder / "all_results.json")
    if not metrics:
        return None
    result = predict_metrics(metrics, METRICS)
    overlaps = predict_metrics(metrics, tuple(f"shape_peak_overlap_{level}" for level in LEVELS))
    if overlaps:
        result["shape_peak_overlap"] = {name.removeprefix("shape_peak_overlap_"): value
                                        for name, value in overlaps.items()}
    return {**result, **trainer_progress(folder)}


def table(output_dir: Path, settings: list[str]) -> dict:
    """{setting: {metric %, shape_peak_overlap % (per level), steps, train minutes}} of the finished runs."""
    return collect(cells(settings, output_dir), read_row)


def chance_on_shape(grid_size: tuple[int, int] = (8, 8)) -> float:
    """How often a region picked at random overlaps the shape, over easy-VQA's test questions (each counted as often
    as it is asked about, as the table's rate counts them): the mean share of the grid's regions that hold a shape
    pixel. 8 × 8: easy_vqa.json's CNN pools a 64 × 64 image by 4 then 2."""
    from training.data.easy_vqa_data import load_easy_vqa, shape_mask, shape_regions

    test = load_easy_vqa()["test"]
    shares = {}
    for image_id, image in zip(test["image_id"], test.select_columns(["image"])):
        if image_id not in shares:
            shares[image_id] = float(shape_regions(grid_size, shape_mask(image["image"])).mean())
    return float(np.mean([shares[image_id] for image_id in test["image_id"]]))


COLUMNS = (Column("accuracy %", "accuracy"), Column("yes/no %", "accuracy_yes_no"),
           Column("colour %", "accuracy_color"), Column("shape %", "accuracy_shape"),
           Column("attention peak on the shape % (word / phrase / question level)", "shape_peak_overlap",
                  blank_for=("image_only", "bag_of_words")),  # no attention: the rate measures nothing
           Column("steps", "steps", "{}"), Column("training minutes", "train_minutes", "{}"))


def markdown(results: dict) -> str:
    return markdown_table(results, ("model",), COLUMNS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_runner_arguments(parser, list(SETTINGS), REPO_ROOT / "outputs" / "vqa")
    parser.add_argument("--results_file", type=Path, default=REPO_ROOT / "docs" / "vqa_results.json")
    args = parser.parse_args(argv)
    grid = cells(args.settings, args.output_dir)
    if not args.table_only:
        run_grid(grid, args.jobs, args.resume)
    results = collect(grid, read_row)
    print(markdown(results))
    chance = chance_on_shape()
    print(f"A region picked at random overlaps the shape in {100 * chance:.1f}% of the test questions.")
    write_json(args.results_file, {**results, "random_region_on_shape": round(100 * chance, 1)})


if __name__ == "__main__":
    main()
