"""The visual question answering table of docs/results.md: the vqa task per setting on easy-VQA, the same budget.

    python -m training.tables vqa --jobs 2                     # every run below (≤ 15 minutes of one core each)
    python -m training.tables vqa --settings parallel bag_of_words
    python -m training.tables vqa --table_only                 # the table from the runs already in --output_dir
    python -m training.tables vqa --jobs 2 --resume            # after a stop: the runs that did not finish

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
import functools

import numpy as np

from training.common.table_runs import Column, Grid, Setting, Table, predict_metrics

LEVELS = ("word", "phrase", "question")  # the question levels, in the table's order
GRID = Grid(
    name="vqa", description=__doc__.split("\n")[0], task="vqa", config="training/configs/easy_vqa.json",
    settings={  # the order they run in, two at a time: the co-attention forms first
        "parallel": Setting(("--coattention", "parallel")),
        "alternating": Setting(("--coattention", "alternating")),
        "image_attention": Setting(("--coattention", "context")),
        "bag_of_words": Setting(("--coattention", "none")),
        "image_only": Setting(("--coattention", "none", "--inputs", "context")),
        "question_only": Setting(("--coattention", "none", "--inputs", "question")),
    },
    output_dir="outputs/vqa", results_file="docs/vqa_results.json", labels=("model",),
    metrics=("accuracy", "accuracy_yes_no", "accuracy_color", "accuracy_shape"),
    columns=(Column("accuracy %", "accuracy"), Column("yes/no %", "accuracy_yes_no"),
             Column("colour %", "accuracy_color"), Column("shape %", "accuracy_shape"),
             Column("attention peak on the shape % (word / phrase / question level)", "shape_peak_overlap",
                    blank_for=("image_only", "bag_of_words")),  # no attention: the rate measures nothing
             Column("steps", "steps", "{}"), Column("training minutes", "train_minutes", "{}")))


@functools.cache
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


class VQATable(Table):
    """The grid's rows with the attention's peak on the shape per question level, beside the rate of a region picked
    at random."""

    def metrics_row(self, metrics: dict) -> dict:
        """The accuracies %, and shape_peak_overlap % per question level."""
        row = super().metrics_row(metrics)
        overlaps = predict_metrics(metrics, tuple(f"shape_peak_overlap_{level}" for level in LEVELS))
        if overlaps:
            row["shape_peak_overlap"] = {name.removeprefix("shape_peak_overlap_"): value
                                         for name, value in overlaps.items()}
        return row

    def markdown(self, results: dict, args: argparse.Namespace) -> str:
        return (f"{super().markdown(results, args)}\nA region picked at random overlaps the shape in "
                f"{100 * chance_on_shape():.1f}% of the test questions.")

    def written(self, results: dict, args: argparse.Namespace) -> dict:
        return {**results, "random_region_on_shape": round(100 * chance_on_shape(), 1)}


TABLE = VQATable(GRID)
