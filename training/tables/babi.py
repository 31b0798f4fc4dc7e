"""The bAbI table of docs/results.md: the memory-qa task on each task of our generator, per setting, one table.

    python -m training.tables babi --jobs 2                      # every run below (about 2 hours of one core each)
    python -m training.tables babi --settings memn2n-1k --tasks 1 2 3
    python -m training.tables babi --table_only                  # the table from the runs already in --output_dir
    python -m training.tables babi --jobs 2 --resume             # after a stop: the runs that did not finish

Settings (each with training/configs/babi_memn2n.json's training arguments unless said):
    memn2n-1k    MemN2N, 3 hops, PE LS RN, adjacent tying (the paper's "PE LS RN"), 1k training questions
    memn2n-10k   the same, 10k training questions, 15 epochs
    1hop-1k      one hop, otherwise memn2n-1k
    lstm-1k      the LSTM without memory (--architecture lstm), 1k training questions
    coattention-parallel-1k     question-passage co-attention (the passage-qa task: Lu et al.'s parallel
                                form at the word, phrase and question levels, the story through a BiLSTM), 40
                                epochs (task 1: 138 s of training on one core beside one other run)
    coattention-alternating-1k  the same with the alternating form

Each run writes OUTPUT_DIR/SETTING/taskN/ (all_results.json, the model, the pictures); the table (test error per task,
mean, tasks failed with error > 5%, and how often the 3-hop model's hops peak on a supporting fact) is printed and
written to docs/babi_results.json with the paper's figures beside ours.
"""

import argparse
from pathlib import Path

from training.common.table_runs import MISSING, Cell, Column, Grid, Setting, Table, markdown_table, read_json

TASKS = (1, 2, 3, 6, 7, 8, 11, 12, 13, 15, 16)
COATTENTION = ("--architecture", "coattention", "--learning_rate", "0.003", "--num_train_epochs", "40")
GRID = Grid(
    name="babi", description=__doc__.split("\n")[0], task="memory-qa", config="training/configs/babi_memn2n.json",
    arguments=("--num_pictures", "2"),
    settings={
        "memn2n-1k": Setting(),
        "memn2n-10k": Setting(("--babi_size", "10k", "--num_train_epochs", "15")),
        "1hop-1k": Setting(("--config_overrides", "num_hops=1")),
        "lstm-1k": Setting(("--architecture", "lstm", "--learning_rate", "0.003")),
        "coattention-parallel-1k": Setting(COATTENTION, task="passage-qa"),
        "coattention-alternating-1k": Setting((*COATTENTION, "--config_overrides", "coattention=alternating"),
                                              task="passage-qa"),
    },
    output_dir="outputs/babi", results_file="docs/babi_results.json")

# Sukhbaatar et al. 2015, table 1 (test error %, per-task training); LSTM: Weston et al. 2015's baseline as the
# paper quotes it. Their tasks are Facebook's bAbI v1.2, ours our own generator's: comparable in spirit only.
PAPER = {
    "PE LS RN 1k": {1: 0.0, 2: 8.3, 3: 40.3, 6: 7.6, 7: 17.3, 8: 10.0, 11: 0.9, 12: 0.2, 13: 0.4, 15: 0.0, 16: 1.3},
    "PE LS RN 10k": {1: 0.0, 2: 0.3, 3: 9.3, 6: 0.0, 7: 3.7, 8: 0.8, 11: 0.0, 12: 0.0, 13: 0.0, 15: 0.0, 16: 0.4},
    "1 hop PE LS joint 1k": {1: 0.8, 2: 62.0, 3: 76.9, 6: 7.2, 7: 15.9, 8: 13.2, 11: 8.4, 12: 0.4, 13: 6.3, 15: 46.4,
                             16: 47.4},
    "LSTM 1k": {1: 50, 2: 80, 3: 80, 6: 52, 7: 51, 8: 55, 11: 38, 12: 26, 13: 6, 15: 79, 16: 77},
}
PAPER_ALL_TASKS = {"PE LS RN 1k": "13.9 (11 failed)", "PE LS RN 10k": "6.6 (4 failed)",
                   "1 hop PE LS joint 1k": "25.8 (17 failed)", "LSTM 1k": "51.3 (20 failed)"}
FAILED = 5.0  # % test error above which a task counts as failed (the paper's rule)


def failed_mean(errors: list[float]) -> str:
    """The mean error % and how many tasks failed (error > FAILED), "–" for no task."""
    return f"{sum(errors) / len(errors):.1f} ({sum(error > FAILED for error in errors)} failed)" if errors else MISSING


def errors_markdown(results: dict, tasks: list[int]) -> str:
    """Test error % per task (rows): our settings, then the paper's; the last row their means and failed tasks."""
    paper = {f"paper {name}": errors for name, errors in PAPER.items()}
    by_task = {task: {**{setting: runs[task]["error"] for setting, runs in results.items() if task in runs},
                      **{name: errors[task] for name, errors in paper.items()}} for task in tasks}
    by_task["mean (failed > 5%)"] = {
        **{setting: failed_mean([runs[task]["error"] for task in tasks if task in runs])
           for setting, runs in results.items()},
        **{name: failed_mean([errors[task] for task in tasks]) for name, errors in paper.items()}}
    columns = (*(Column(setting, setting) for setting in results), *(Column(name, name, "{:g}") for name in paper))
    return markdown_table(by_task, ("task",), columns)


def hops_found(row: dict) -> str:
    """"hop 1 / 2 / 3 on a supporting fact; all found" of one run, in %."""
    return " / ".join(f"{row[f'hop_{hop}_on_support']:.0f}" for hop in (1, 2, 3)) + f"; {row['supports_covered']:.0f}"


def hop_markdown(results: dict, tasks: list[int]) -> str:
    """Per task and multi-hop setting: how often each hop's strongest sentence is a supporting fact, and how often the
    hops' strongest sentences include all of them, in %."""
    settings = [setting for setting in results if any("hop_2_on_support" in row for row in results[setting].values())]
    if not settings:  # no multi-hop memory network among the settings (e.g. only the co-attention ones)
        return ""
    by_task = {task: {setting: hops_found(results[setting][task]) for setting in settings if task in results[setting]}
               for task in tasks}
    columns = tuple(Column(f"{setting}: hop 1 / 2 / 3 on a supporting fact; all found", setting)
                    for setting in settings)
    return markdown_table(by_task, ("task",), columns)


class BabiTable(Table):
    """A run per setting and bAbI task; the table by task, beside the paper's figures, and the hops' table."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tasks", nargs="+", type=int, default=list(TASKS), choices=TASKS)

    def cells(self, args: argparse.Namespace) -> list[Cell]:
        """One run per setting and task, in OUTPUT_DIR/SETTING/taskN/ (the table reads all_results.json, written
        before the pictures and the card)."""
        return [self.cell((setting, task), setting, args.output_dir / setting / f"task{task}", "--babi_task", str(task))
                for setting in args.settings for task in args.tasks]

    def read_row(self, folder: Path) -> dict | None:
        """A finished run's error %, hop statistics, wall-clock and training seconds."""
        metrics = read_json(folder / "all_results.json")
        if not metrics:
            return None
        result = {"error": round(metrics["predict_error"], 1),
                  "seconds": read_json(folder / "wall_seconds.json").get("seconds")}
        result.update({key.removeprefix("predict_"): round(value, 1) for key, value in metrics.items()
                       if "on_support" in key or "supports_covered" in key})
        result["train_seconds"] = round(metrics["train_runtime"])
        return result

    def markdown(self, results: dict, args: argparse.Namespace) -> str:
        """The test errors' table, then the hops' (where a setting has hops)."""
        hops = hop_markdown(results, args.tasks)
        return errors_markdown(results, args.tasks) + (f"\n\n{hops}" if hops else "")

    def written(self, results: dict, args: argparse.Namespace) -> dict:
        return {"ours": results, "paper": PAPER, "paper_all_20_tasks": PAPER_ALL_TASKS}


TABLE = BabiTable(GRID)
