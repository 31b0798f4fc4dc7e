"""The results tables' one runner (``training/*_table.py``). A table declares, as data, its grid of runs (a ``Cell``
per setting: its place in the results, its folder, the training/ scripts it runs and their arguments), the row it reads
from a finished run's folder, its markdown columns (``Column``) and its figure's panels (``Panel``); this module runs
the grid ``--jobs`` at a time, each script in its own process with one thread, ``--resume`` skipping the steps that
finished, and reads the finished runs back into one results dict, the markdown table and the figure.

    python training/vqa_table.py --jobs 2 --resume      # every table script: --settings --output_dir --jobs --resume
                                                        # --table_only
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TRAINING = REPO_ROOT / "training"
MISSING = "–"  # a markdown cell the row has no value for


@dataclass(frozen=True)
class Step:
    """One process of a run: ``python training/<script> *arguments``, logged to ``folder/run.log``; finished when
    ``folder/wall_seconds.json`` says exit status 0."""

    script: str
    arguments: tuple[str, ...]
    folder: Path


@dataclass(frozen=True)
class Cell:
    """One run of a table's grid: ``key``, its place in the results (``(setting,)``, ``(setting, task)``, …); the
    ``folder`` its rows are read from; its ``steps``, run in order."""

    key: tuple
    folder: Path
    steps: tuple[Step, ...]

    @property
    def name(self) -> str:
        return " ".join(map(str, self.key))


def one_script(key: tuple, folder: Path, script: str, arguments: list[str]) -> Cell:
    """A cell of one step, logged in its own folder: the tables that train one model per setting."""
    return Cell(key, folder, (Step(script, tuple(arguments), folder),))


def run_script(script: Path, arguments: list[str], folder: Path) -> tuple[float, int]:
    """``python script *arguments`` with its output in ``folder/run.log``; returns its wall-clock seconds and exit
    status, also written to ``folder/wall_seconds.json`` (removed while the run goes on: it marks a finished run)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wall_seconds.json").unlink(missing_ok=True)
    with open(folder / "run.log", "w") as log:
        status = subprocess.run([sys.executable, str(script), *arguments], stdout=log, stderr=subprocess.STDOUT,
                                cwd=REPO_ROOT,
                                env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}).returncode
    seconds = time.perf_counter() - started
    (folder / "wall_seconds.json").write_text(json.dumps({"seconds": seconds, "exit_status": status}))
    return seconds, status


def finished(step: Step) -> bool:
    return read_json(step.folder / "wall_seconds.json").get("exit_status") == 0


def run_cell(cell: Cell, resume: bool = False) -> int:
    """Run the cell's steps in order; returns the first non-zero exit status (0 when all succeed). ``resume``: the
    steps that finished before are not run again, up to the first one that did not; every step after it runs."""
    for step in cell.steps:
        log = step.folder / "run.log"
        if resume and finished(step):
            print(f"{cell.name} {step.script}: finished before (log: {log})", flush=True)
            continue
        resume = False  # this step runs, so the ones after it must as well
        seconds, status = run_script(TRAINING / step.script, list(step.arguments), step.folder)
        print(f"{cell.name} {step.script}: {seconds / 60:.1f} min, exit status {status} (log: {log})", flush=True)
        if status:
            return status
    return 0


def run_grid(cells: list[Cell], jobs: int, resume: bool = False) -> list[int]:
    """``run_cell`` for every cell, ``jobs`` at a time; returns their exit statuses."""
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda cell: run_cell(cell, resume), cells))


def read_json(path: Path) -> dict:
    """The file's JSON, ``{}`` where there is no file."""
    return json.loads(path.read_text()) if path.is_file() else {}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)  # a new docs folder, e.g. for another budget
    path.write_text(json.dumps(data, indent=1) + "\n")


def collect(cells: list[Cell], read_row: Callable[[Path], dict | None]) -> dict:
    """The finished cells' rows, nested by key: ``{setting: row}`` for keys ``(setting,)``, ``{setting: {task: row}}``
    for ``(setting, task)``; ``read_row(folder)`` is None for a run that did not finish."""
    results = {}
    for cell in cells:
        row = read_row(cell.folder)
        if row is None:
            continue
        level = results
        for part in cell.key[:-1]:
            level = level.setdefault(part, {})
        level[cell.key[-1]] = row
    return results


def predict_metrics(metrics: dict, names: tuple[str, ...], digits: int = 1) -> dict:
    """``{name: predict_<name>}`` of all_results.json, rounded, for the names it holds."""
    return {name: round(metrics[f"predict_{name}"], digits) for name in names if f"predict_{name}" in metrics}


def trainer_progress(folder: Path) -> dict:
    """The steps trained and the training minutes (the clock's last reading) of the run's trainer_state.json; ``{}``
    where there is none."""
    history = read_json(folder / "trainer_state.json")
    if not history:
        return {}
    return {"steps": history["global_step"],
            "train_minutes": max((entry.get("training_minutes", 0) for entry in history["log_history"]), default=None)}


@dataclass(frozen=True)
class Column:
    """A markdown column: its ``header``, the row's ``field`` it shows, written with ``form`` (a text value as it is;
    a dict's values joined by " / "); "–" where the row has none, or for the settings of ``blank_for``."""

    header: str
    field: str
    form: str = "{:.1f}"
    blank_for: tuple[str, ...] = ()

    def cell(self, setting, row: dict) -> str:
        value = row.get(self.field)
        if value is None or setting in self.blank_for:
            return MISSING
        if isinstance(value, str):
            return value
        values = value.values() if isinstance(value, dict) else [value]
        return " / ".join(self.form.format(part) for part in values)


def rows_of(results: dict, depth: int) -> Iterator[tuple[tuple, dict]]:
    """(key, row) of ``results`` nested ``depth`` deep, in order."""
    for name, value in results.items():
        if depth == 1:
            yield (name,), value
        else:
            yield from (((name, *key), row) for key, row in rows_of(value, depth - 1))


def markdown_table(results: dict, labels: tuple[str, ...], columns: tuple[Column, ...]) -> str:
    """``| label … | column … |``, a line per row of ``results`` nested ``len(labels)`` deep (``{task: {setting:
    row}}`` for labels ``("task", "attention")``): the key, then the columns' cells."""
    headers = [*labels, *(column.header for column in columns)]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(["---"] * len(headers)) + " |"]
    for key, row in rows_of(results, len(labels)):
        cells = [*map(str, key), *(column.cell(key[-1], row) for column in columns)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Panel:
    """One plot of a table's figure: each row's ``field`` (``[[x, y], …]``) as a line, for the ``settings`` (None:
    every row); ``title`` may name the table as ``{name}``."""

    field: str
    xlabel: str
    ylabel: str
    title: str
    settings: tuple[str, ...] | None = None


def plot_panels(results: dict, panels: tuple[Panel, ...], path: Path, name: str,
                order: list[str]) -> "matplotlib.figure.Figure":  # noqa: F821
    """The panels side by side, written to ``path``; a setting keeps its colour (its place in ``order``) in all."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5.5 * len(panels), 4), layout="constrained")
    for ax, panel in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels):
        for setting in results if panel.settings is None else panel.settings:
            if results.get(setting, {}).get(panel.field):
                x, y = zip(*results[setting][panel.field])
                ax.plot(x, y, "o-", label=setting, markersize=3, color=f"C{order.index(setting)}")
        ax.grid(alpha=0.3)
        if ax.get_lines():
            ax.legend()
        ax.set(xlabel=panel.xlabel, ylabel=panel.ylabel, title=panel.title.format(name=name))
    figure.savefig(path, dpi=120)
    return figure


def positive_jobs(text: str) -> int:
    jobs = int(text)
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be a positive number of runs at a time, got {jobs}")
    return jobs


def add_runner_arguments(parser: argparse.ArgumentParser, settings: list[str], output_dir: Path, jobs: int = 2,
                         default_settings: list[str] | None = None) -> None:
    """The flags every table script takes: --settings, --output_dir, --jobs, --resume, --table_only."""
    parser.add_argument("--settings", nargs="+", default=default_settings or settings, choices=settings)
    parser.add_argument("--output_dir", type=Path, default=output_dir)
    parser.add_argument("--jobs", type=positive_jobs, default=jobs,
                        help="Runs at a time, each script in its own process.")
    parser.add_argument("--resume", action="store_true",
                        help="Go on with runs that stopped: their steps that finished (exit status 0 in the step "
                             "folder's wall_seconds.json) are not run again.")
    parser.add_argument("--table_only", action="store_true", help="Do not train: tabulate the finished runs.")
