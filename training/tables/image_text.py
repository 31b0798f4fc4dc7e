"""The image-to-text table of docs/results.md: the image-to-text task per generated task and attention, one budget.

    python -m training.tables image-text --jobs 2                 # every run below (12 minutes of one core each)
    python -m training.tables image-text --tasks digits --settings soft none
    python -m training.tables image-text --table_only             # the table from the runs already in --output_dir
    python -m training.tables image-text --jobs 2 --resume        # after a stop: the runs that did not finish
    python -m training.tables image-text --long_lengths outputs/image_text/digits/soft_positions   # how long it reads

Settings (training/configs/<task>_soft.json's training arguments, 12 minutes of training at most, one thread):
    none             no attention: the mean feature ā only starts the LSTM (Show and Tell, Vinyals et al. 2015)
    soft             soft attention, the β gate, h_0 and c_0 from ā (Show, Attend and Tell, Xu et al. 2015)
    hard             hard attention trained by the straight-through Gumbel-softmax
    hard_reinforce   hard attention trained by REINFORCE (Xu et al.'s: moving-average baseline, entropy bonus 0.01)
    hard_reinforce_xu  the same with Xu et al.'s §4.1 variance reduction in full: with probability 0.5 a training image
                     attends by the expected context, and a per-token baseline (the moving average of the reward per
                     token, times the text's length); no time cap below its steps (a step costs more than soft's)
    soft_positions   soft attention over annotations with a 2-D sinusoidal position encoding added

Each run writes OUTPUT_DIR/TASK/SETTING/ (all_results.json, the model, the pictures); the table (sequence accuracy
and character error rate on the test set and on the longer test set, steps trained) is printed and written to
docs/image_text_results.json.
"""

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from training.common.table_runs import Cell, Column, Grid, Setting, Table

TASKS = ("digits", "words")
GRID = Grid(
    name="image-text", description=__doc__.split("\n")[0], task="image-to-text",
    settings={
        "none": Setting(("--attention", "none")),
        "soft": Setting(("--attention", "soft")),
        "hard": Setting(("--attention", "hard")),
        "hard_reinforce": Setting(("--attention", "hard_reinforce")),
        "hard_reinforce_xu": Setting((
            "--attention", "hard_reinforce", "--max_train_minutes", "120", "--config_overrides",
            "doubly_stochastic_weight=0.0,reinforce_baseline=per_token,reinforce_expected_context_probability=0.5")),
        "soft_positions": Setting(("--attention", "soft", "--config_overrides", "region_position_encoding=true")),
    },
    output_dir="outputs/image_text", results_file="docs/image_text_results.json", labels=("task", "attention"),
    metrics=("sequence_accuracy", "cer", "long_sequence_accuracy", "long_cer"),
    columns=(Column("sequence accuracy %", "sequence_accuracy"), Column("CER %", "cer"),
             Column("longer: sequence accuracy %", "long_sequence_accuracy"), Column("longer: CER %", "long_cer"),
             Column("steps", "steps", "{}"), Column("training minutes", "train_minutes", "{}")))


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


class ImageTextTable(Table):
    """A run per generated task and setting, with the task's config (training/configs/<task>_soft.json)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
        parser.add_argument("--long_lengths", type=Path,
                            help="Only print how this trained run reads 200 longer inputs.")

    def cells(self, args: argparse.Namespace) -> list[Cell]:
        """One run per task and setting, in OUTPUT_DIR/TASK/SETTING/."""
        return [self.cell((task, setting), setting, args.output_dir / task / setting,
                          config=f"training/configs/{task}_soft.json")
                for task in args.tasks for setting in args.settings]

    def main(self, argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
        """The table, or with --long_lengths only how one trained run reads the longer inputs."""
        args = self.parser(prog).parse_args(argv)
        if args.long_lengths:
            print(json.dumps(long_lengths(args.long_lengths), indent=1))
            return {}
        return super().main(argv, prog)


TABLE = ImageTextTable(GRID)
