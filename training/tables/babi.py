"""The bAbI table of docs/results.md: the memory-qa task on each of our generator's 20 tasks, per setting, one table.

    python -m training.tables babi --jobs 2                      # every run below (11 tasks of the first six settings
                                                                 # took about 2 hours of one core each)
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
    memn2n-paper-1k  the paper's training (training/configs/babi_memn2n_paper.json: SGD on the summed loss, lr 0.01
                     halved every 25 epochs, 100 epochs), the best of 3 restarts by validation error (the paper: 10)
    joint-1k     memn2n-1k trained once on all 20 tasks together (--babi_task all), a row per task read from the
                 run's per-task test errors (predict_error_task_N)

Each run writes OUTPUT_DIR/SETTING/taskN/ (a joint setting: OUTPUT_DIR/SETTING/) (all_results.json, the model, the
pictures); the table (test error per task, the mean and the tasks failed with error > 5% over the tasks each column
has, and how often the 3-hop model's hops peak on a supporting fact) is printed and written to docs/babi_results.json
with the paper's figures beside ours. The paper's per-task figures here are those of the 11 tasks of the first table;
its columns show "–" for the 9 others (not copied yet), and their summaries are over those 11 tasks.
"""

import argparse
from pathlib import Path

from training.common.table_runs import MISSING, Cell, Column, Grid, Setting, Table, markdown_table, read_json
from training.data.babi import TASKS as GENERATED_TASKS

TASKS = tuple(GENERATED_TASKS)
RESTARTS = 3  # memn2n-paper-1k's restarts per task (the paper: 10)
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
        "memn2n-paper-1k": Setting(("--num_restarts", str(RESTARTS), "--metric_for_best_model", "error",
                                    "--greater_is_better", "false"), config="training/configs/babi_memn2n_paper.json"),
        "joint-1k": Setting(("--babi_task", "all")),
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
PAPER_ALL_TASKS = {"PE LS RN 1k": "13.9 (11 of 20 failed)", "PE LS RN 10k": "6.6 (4 of 20 failed)",
                   "1 hop PE LS joint 1k": "25.8 (17 of 20 failed)", "LSTM 1k": "51.3 (20 of 20 failed)"}
FAILED = 5.0  # % test error above which a task counts as failed (the paper's rule)


def failed_mean(errors: list[float]) -> str:
    """The mean error % and how many of the tasks failed (error > FAILED), "–" for no task."""
    if not errors:
        return MISSING
    return f"{sum(errors) / len(errors):.1f} ({sum(error > FAILED for error in errors)} of {len(errors)} failed)"


def errors_markdown(results: dict, tasks: list[int]) -> str:
    """Test error % per task (rows): our settings, then the paper's; the last row, per column, the mean over the tasks
    it has and how many of them failed."""
    paper = {f"paper {name}": values for name, values in PAPER.items()}
    errors = {**{setting: {task: row["error"] for task, row in runs.items()} for setting, runs in results.items()},
              **paper}
    by_task = {task: {column: values[task] for column, values in errors.items() if task in values} for task in tasks}
    by_task["mean (failed > 5%)"] = {column: failed_mean([values[task] for task in tasks if task in values])
                                     for column, values in errors.items()}
    columns = (*(Column(setting, setting) for setting in results), *(Column(name, name, "{:g}") for name in paper))
    return markdown_table(by_task, ("task",), columns)


def joint(setting: Setting) -> bool:
    """Whether the setting trains one model on several tasks at once: it names its own --babi_task."""
    return "--babi_task" in setting.arguments


def task_row(metrics: dict, suffix: str) -> dict:
    """The test error % and hop statistics of all_results.json's ``metrics`` named ``predict_<name><suffix>``
    (``suffix``: "" for a run's own, "_task_N" for task N of a joint run)."""
    names = [key.removeprefix("predict_").removesuffix(suffix) for key in metrics
             if key.startswith("predict_") and key.endswith(suffix)]
    return {name: round(metrics[f"predict_{name}{suffix}"], 1) for name in names
            if name == "error" or "on_support" in name or name == "supports_covered"}


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
        before the pictures and the card); a joint setting (one naming its own --babi_task): one run, in
        OUTPUT_DIR/SETTING/, whose row is a row per task."""
        cells = []
        for setting in args.settings:
            if joint(self.grid.settings[setting]):
                cells.append(self.cell((setting,), setting, args.output_dir / setting))
            else:
                cells.extend(self.cell((setting, task), setting, args.output_dir / setting / f"task{task}",
                                       "--babi_task", str(task)) for task in args.tasks)
        return cells

    def read_row(self, folder: Path) -> dict | None:
        """A finished run's error %, hop statistics, wall-clock and training seconds; a joint run's (its metrics per
        task, ``predict_error_task_N``, …): ``{task: row}``, each with the run's seconds."""
        metrics = read_json(folder / "all_results.json")
        if not metrics:
            return None
        timing = {"seconds": read_json(folder / "wall_seconds.json").get("seconds"),
                  "train_seconds": round(metrics["train_runtime"])}
        tasks = sorted(int(key.removeprefix("predict_error_task_")) for key in metrics
                       if key.startswith("predict_error_task_"))
        if tasks:
            return {task: {**task_row(metrics, f"_task_{task}"), **timing} for task in tasks}
        return {**task_row(metrics, ""), **timing}

    def markdown(self, results: dict, args: argparse.Namespace) -> str:
        """The test errors' table, then the hops' (where a setting has hops)."""
        hops = hop_markdown(results, args.tasks)
        return errors_markdown(results, args.tasks) + (f"\n\n{hops}" if hops else "")

    def written(self, results: dict, args: argparse.Namespace) -> dict:
        return {"ours": results, "paper": PAPER, "paper_all_20_tasks": PAPER_ALL_TASKS}


TABLE = BabiTable(GRID)
