#!/usr/bin/env python
"""The image-to-text table of docs/results.md: run_image_to_text.py per task and attention, the same budget, one table.

    python training/image_text_table.py --jobs 2                   # every run below (12 minutes of one core each)
    python training/image_text_table.py --tasks digits --settings soft none
    python training/image_text_table.py --table_only               # the table from the runs already in --output_dir
    python training/image_text_table.py --jobs 2 --resume          # after a stop: the runs that did not finish
    python training/image_text_table.py --long_lengths outputs/image_text/digits/soft_positions   # how long it reads

Settings (training/configs/<task>_soft.json's training arguments, 12 minutes of training at most, one thread):
    none             no attention: the mean feature ā only starts the LSTM (Show and Tell, Vinyals et al. 2015)
    soft             soft attention, the β gate, h_0 and c_0 from ā (Show, Attend and Tell, Xu et al. 2015)
    hard             hard attention trained by the straight-through Gumbel-softmax
    hard_reinforce   hard attention trained by REINFORCE (Xu et al.'s: moving-average baseline, entropy bonus 0.01)
    soft_positions   soft attention over annotations with a 2-D sinusoidal position encoding added

Each run writes OUTPUT_DIR/TASK/SETTING/ (all_results.json, the model, the pictures); the table (sequence accuracy
and character error rate on the test set and on the longer test set, steps trained) is printed and written to
docs/image_text_results.json.
"""

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python training/image_text_table.py` puts training/ first
    sys.path.insert(0, str(REPO_ROOT))

from training.common.table_runs import (  # noqa: E402
    Cell, Column, add_runner_arguments, collect, markdown_table, one_script, predict_metrics, read_json, run_grid,
    trainer_progress, write_json,
)

TASKS = ("digits", "words")
SETTINGS = {
    "none": ["--attention", "none"],
    "soft": ["--attention", "soft"],
    "hard": ["--attention", "hard"],
    "hard_reinforce": ["--attention", "hard_reinforce"],
    "soft_positions": ["--attention", "soft", "--config_overrides", "region_position_encoding=true"],
}
METRICS = ("sequence_accuracy", "cer", "long_sequence_accuracy", "long_cer")


def cells(tasks: list[str], settings: list[str], output_dir: Path) -> list[Cell]:
    """One run_image_to_text.py run per task and setting, in OUTPUT_DIR/TASK/SETTING/."""
    return [one_script((task, setting), output_dir / task / setting, "run_image_to_text.py",
                       [str(REPO_ROOT / "training" / "configs" / f"{task}_soft.json"), "--output_dir",
                        str(output_dir / task / setting), "--disable_tqdm", "true", *SETTINGS[setting]])
            for task in tasks for setting in settings]


def read_row(folder: Path) -> dict | None:
    """A finished run's metrics in %, steps and training minutes."""
    metrics = read_json(folder / "all_results.json")
    return {**predict_metrics(metrics, METRICS), **trainer_progress(folder)} if metrics else None


def table(output_dir: Path, tasks: list[str], settings: list[str]) -> dict:
    """{task: {setting: {metric %, steps, train minutes}}} of the finished runs."""
    return collect(cells(tasks, settings, output_dir), read_row)


COLUMNS = (Column("sequence accuracy %", "sequence_accuracy"), Column("CER %", "cer"),
           Column("longer: sequence accuracy %", "long_sequence_accuracy"), Column("longer: CER %", "long_cer"),
           Column("steps", "steps", "{}"), Column("training minutes", "train_minutes", "{}"))


def markdown(results: dict) -> str:
    return markdown_table(results, ("task", "attention"), COLUMNS)


def long_lengths(model_dir: Path, count: int = 200) -> dict:
    """How a trained model reads the generated task's longer test inputs (``test_long``, seed 0): counts of (reference
    length, predicted length), and how often the prediction is the start of the reference."""
    import hf_bahdanau  # noqa: F401  (registers the model type)
    import torch
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

    from training.data.make_babi import split_seed
    from training.data.make_image_text import GENERATORS

    arguments = json.loads((model_dir / "run_arguments.json").read_text())["data"]
    task = arguments["image_text_task"]
    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    processor, tokenizer = AutoImageProcessor.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    lengths, prefixes = Counter(), 0
    seed = split_seed(arguments["generation_seed"], task, "test_long")
    for image, text in GENERATORS[task]("test_long", count, seed):
        with torch.no_grad():
            generated = model.generate(**processor(image, return_tensors="pt"))
        read = tokenizer.decode(generated[0], skip_special_tokens=True)
        lengths[len(text), len(read)] += 1
        prefixes += text.startswith(read)
    return {"lengths": {f"{reference} -> {predicted}": number
                        for (reference, predicted), number in sorted(lengths.items())},
            "prefix_rate": prefixes / count}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    add_runner_arguments(parser, list(SETTINGS), REPO_ROOT / "outputs" / "image_text")
    parser.add_argument("--results_file", type=Path, default=REPO_ROOT / "docs" / "image_text_results.json")
    parser.add_argument("--long_lengths", type=Path, help="Only print how this trained run reads 200 longer inputs.")
    args = parser.parse_args(argv)
    if args.long_lengths:
        print(json.dumps(long_lengths(args.long_lengths), indent=1))
        return
    grid = cells(args.tasks, args.settings, args.output_dir)
    if not args.table_only:
        run_grid(grid, args.jobs, args.resume)
    results = collect(grid, read_row)
    print(markdown(results))
    write_json(args.results_file, results)


if __name__ == "__main__":
    main()
