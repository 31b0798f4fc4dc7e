#!/usr/bin/env python
"""The image-to-text table of docs/results.md: run_image_to_text.py per task and attention, the same budget, one table.

    python training/image_text_table.py --jobs 2                   # every run below (12 minutes of one core each)
    python training/image_text_table.py --tasks digits --settings soft none
    python training/image_text_table.py --table_only               # the table from the runs already in --output_dir
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

from training.table_runs import run_all, run_script  # noqa: E402

SCRIPT = REPO_ROOT / "training" / "run_image_to_text.py"
TASKS = ("digits", "words")
SETTINGS = {
    "none": ["--attention", "none"],
    "soft": ["--attention", "soft"],
    "hard": ["--attention", "hard"],
    "hard_reinforce": ["--attention", "hard_reinforce"],
    "soft_positions": ["--attention", "soft", "--config_overrides", "region_position_encoding=true"],
}
METRICS = ("sequence_accuracy", "cer", "long_sequence_accuracy", "long_cer")


def run(task: str, setting: str, output_dir: Path) -> tuple[float, int]:
    """One training run in its own process (one thread); returns its wall-clock seconds and exit status."""
    folder = output_dir / task / setting
    config = REPO_ROOT / "training" / "configs" / f"{task}_soft.json"
    return run_script(SCRIPT, [str(config), "--output_dir", str(folder), "--disable_tqdm", "true",
                               *SETTINGS[setting]], folder)


def table(output_dir: Path, tasks: list[str], settings: list[str]) -> dict:
    """{task: {setting: {metric %, steps, train minutes}}} of the finished runs."""
    results = {}
    for task in tasks:
        for setting in settings:
            folder = output_dir / task / setting
            if not (folder / "all_results.json").is_file():
                continue
            metrics = json.loads((folder / "all_results.json").read_text())
            row = {name: round(metrics[f"predict_{name}"], 1) for name in METRICS if f"predict_{name}" in metrics}
            state = folder / "trainer_state.json"
            if state.is_file():
                history = json.loads(state.read_text())
                row["steps"] = history["global_step"]
                row["train_minutes"] = max((entry.get("training_minutes", 0) for entry in history["log_history"]),
                                           default=None)
            results.setdefault(task, {})[setting] = row
    return results


def markdown(results: dict) -> str:
    lines = ["| task | attention | sequence accuracy % | CER % | longer: sequence accuracy % | longer: CER % | steps "
             "| training minutes |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for task, rows in results.items():
        for setting, row in rows.items():
            cells = [f"{row[name]:.1f}" if name in row else "–" for name in METRICS]
            lines.append(f"| {task} | {setting} | " + " | ".join(cells) +
                         f" | {row.get('steps', '–')} | {row.get('train_minutes', '–')} |")
    return "\n".join(lines)


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
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--output_dir", type=Path, default=REPO_ROOT / "outputs" / "image_text")
    parser.add_argument("--jobs", type=int, default=2, help="Runs at once (one thread each).")
    parser.add_argument("--table_only", action="store_true", help="Do not train: tabulate the finished runs.")
    parser.add_argument("--results_file", type=Path, default=REPO_ROOT / "docs" / "image_text_results.json")
    parser.add_argument("--long_lengths", type=Path, help="Only print how this trained run reads 200 longer inputs.")
    args = parser.parse_args(argv)
    if args.long_lengths:
        print(json.dumps(long_lengths(args.long_lengths), indent=1))
        return
    if not args.table_only:
        run_all([(task, setting) for task in args.tasks for setting in args.settings],
                lambda task, setting: run(task, setting, args.output_dir), args.jobs,
                lambda task, setting: args.output_dir / task / setting)
    results = table(args.output_dir, args.tasks, args.settings)
    print(markdown(results))
    args.results_file.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
