#!/usr/bin/env python
"""The visual question answering table of docs/results.md: run_vqa.py per setting on easy-VQA, the same budget.

    python training/vqa_table.py --jobs 2                          # every run below (≤ 15 minutes of one core each)
    python training/vqa_table.py --settings parallel none
    python training/vqa_table.py --table_only                      # the table from the runs already in --output_dir

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
import json
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/vqa_table.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

from training.table_runs import run_all, run_script  # noqa: E402

SCRIPT = REPO_ROOT / "training" / "run_vqa.py"
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


def run(setting: str, output_dir: Path) -> tuple[float, int]:
    """One training run in its own process (one thread); returns its wall-clock seconds and exit status."""
    folder = output_dir / setting
    return run_script(SCRIPT, [str(CONFIG), "--output_dir", str(folder), "--disable_tqdm", "true",
                               *SETTINGS[setting]], folder)


def table(output_dir: Path, settings: list[str]) -> dict:
    """{setting: {metric %, shape_peak_overlap % (best level), steps, train minutes}} of the finished runs."""
    results = {}
    for setting in settings:
        folder = output_dir / setting
        if not (folder / "all_results.json").is_file():
            continue
        metrics = json.loads((folder / "all_results.json").read_text())
        row = {name: round(metrics[f"predict_{name}"], 1) for name in METRICS if f"predict_{name}" in metrics}
        overlaps = {level: metrics[f"predict_shape_peak_overlap_{level}"] for level in LEVELS
                    if f"predict_shape_peak_overlap_{level}" in metrics}
        if overlaps:
            row["shape_peak_overlap"] = {level: round(value, 1) for level, value in overlaps.items()}
        state = folder / "trainer_state.json"
        if state.is_file():
            history = json.loads(state.read_text())
            row["steps"] = history["global_step"]
            row["train_minutes"] = max((entry.get("training_minutes", 0) for entry in history["log_history"]),
                                       default=None)
        results[setting] = row
    return results


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


def markdown(results: dict) -> str:
    lines = ["| model | accuracy % | yes/no % | colour % | shape % | attention peak on the shape % (word / phrase / "
             "question level) | steps | training minutes |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for setting, row in results.items():
        cells = [f"{row[name]:.1f}" if name in row else "–" for name in METRICS]
        overlap = " / ".join(f"{value:.1f}" for value in row["shape_peak_overlap"].values()) if (
            "shape_peak_overlap" in row and setting not in ("image_only", "bag_of_words")) else "–"
        lines.append(f"| {setting} | " + " | ".join(cells) + f" | {overlap} | {row.get('steps', '–')} | "
                     f"{row.get('train_minutes', '–')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--output_dir", type=Path, default=REPO_ROOT / "outputs" / "vqa")
    parser.add_argument("--jobs", type=int, default=2, help="Runs at a time (one thread each).")
    parser.add_argument("--table_only", action="store_true", help="Only read the finished runs.")
    parser.add_argument("--results_file", type=Path, default=REPO_ROOT / "docs" / "vqa_results.json")
    args = parser.parse_args(argv)
    if not args.table_only:
        run_all([(setting, args.output_dir) for setting in args.settings], run, args.jobs,
                lambda setting, output_dir: output_dir / setting)
    results = table(args.output_dir, args.settings)
    print(markdown(results))
    chance = chance_on_shape()
    print(f"A region picked at random overlaps the shape in {100 * chance:.1f}% of the test questions.")
    args.results_file.write_text(json.dumps({**results, "random_region_on_shape": round(100 * chance, 1)}, indent=1)
                                 + "\n")


if __name__ == "__main__":
    main()
