"""The results tables' one runner: ``python -m training.tables TABLE [--settings ...] [--jobs N] [--resume]``.

A table is a grid of named settings, as data (``Grid``): each setting a training task run through the driver
(``python -m training TASK CONFIG.json --flag value ...``, ``Setting``), one ``Cell`` per run with its folder and its
steps; the row read from a finished run's folder; its markdown columns (``Column``) and its figure's panels
(``Panel``). ``Table.main`` runs the grid ``--jobs`` at a time, each step in its own process with one thread,
``--resume`` skipping the steps that finished, and reads the finished runs back into the results JSON, the markdown
table and the figure. A table that needs code (another axis of runs, a row read its own way) is a ``Table`` subclass
overriding the hooks; a table of settings alone is a JSON file (``Grid.from_json``).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

__all__ = ["MISSING", "Cell", "Column", "Grid", "Panel", "Setting", "Step", "Table", "collect", "markdown_table",
           "plot_panels", "predict_metrics", "read_json", "run_grid", "trainer_progress", "validation_curve",
           "write_json"]

REPO_ROOT = Path(__file__).resolve().parents[2]
MISSING = "–"  # a markdown cell the row has no value for
CLOCKS = {"steps": "step", "minutes": "training_minutes"}  # a curve's x: trainer_state.json's key


@dataclass(frozen=True)
class Step:
    """One process of a run: ``python -m *module *arguments`` (``module``: ``("training", TASK)`` for a training task,
    ``("training.tune_beam_penalties",)`` for a module), logged to ``folder/run.log``; finished when
    ``folder/wall_seconds.json`` says exit status 0."""

    module: tuple[str, ...]
    arguments: tuple[str, ...]
    folder: Path

    @property
    def name(self) -> str:
        return " ".join(self.module)


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


def run_script(python_arguments: list[str], folder: Path) -> tuple[float, int]:
    """``python *python_arguments`` with its output in ``folder/run.log``; returns its wall-clock seconds and exit
    status, also written to ``folder/wall_seconds.json`` (removed while the run goes on: it marks a finished run)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wall_seconds.json").unlink(missing_ok=True)
    with open(folder / "run.log", "w") as log:
        status = subprocess.run([sys.executable, *python_arguments], stdout=log, stderr=subprocess.STDOUT,
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
            print(f"{cell.name} {step.name}: finished before (log: {log})", flush=True)
            continue
        resume = False  # this step runs, so the ones after it must as well
        seconds, status = run_script(["-m", *step.module, *step.arguments], step.folder)
        print(f"{cell.name} {step.name}: {seconds / 60:.1f} min, exit status {status} (log: {log})", flush=True)
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


def predict_metrics(metrics: dict, names: Sequence[str], digits: int = 1) -> dict:
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


def validation_curve(history: dict, metrics: dict, metric: str, clock: str) -> list[list[float]]:
    """[x, validation ``metric``] of the evaluations during training (trainer_state.json's ``history``), and of the one
    after it (all_results.json's ``eval_<metric>``, which trainer_state.json does not hold) when steps were trained
    after the last of them; x is the ``clock``: ``training_minutes`` or ``step``."""
    log, name = history["log_history"], f"eval_{metric}"
    points = [(entry[clock], entry[name]) for entry in log if name in entry and clock in entry]
    evaluated_steps = [entry["step"] for entry in log if name in entry]
    if name in metrics and (not evaluated_steps or evaluated_steps[-1] < history["global_step"]):
        end = history["global_step"] if clock == "step" else max(entry.get(clock, 0.0) for entry in log)
        points.append((end, metrics[name]))
    return [[round(x, 1), round(value, 2)] for x, value in points]


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
    every row); ``title`` may name the table as ``{name}``. A field ``validation_<metric>_by_steps`` (or
    ``_by_minutes``) is the run's ``eval_<metric>`` by training steps (minutes), read by ``Table.read_row``."""

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


@dataclass(frozen=True)
class Setting:
    """A named setting of a grid: the run's ``arguments`` after the grid's, and its ``task`` and ``config`` where they
    are not the grid's."""

    arguments: tuple[str, ...] = ()
    task: str | None = None
    config: str | None = None


@dataclass(frozen=True)
class Grid:
    """A table's settings as data. Each setting runs ``python -m training TASK CONFIG --output_dir FOLDER
    --disable_tqdm true *arguments *setting.arguments`` (``task``, ``config``: the grid's unless the setting has its
    own; ``config`` relative to the repository) in ``output_dir``/SETTING. The row of a finished run: its test
    ``metrics`` (``predict_<name>`` of all_results.json, rounded to 0.1), steps, training minutes, and the
    curves the ``panels`` draw; the markdown: ``labels`` (the key's names) and ``columns`` (default: a column per
    metric, then steps and training minutes); ``jobs``: runs at a time by default; ``default_settings``: those
    run without ``--settings`` (None: all). Paths are relative to the repository."""

    name: str
    description: str
    settings: dict[str, Setting]
    task: str | None = None
    config: str | None = None
    arguments: tuple[str, ...] = ()
    output_dir: str | None = None
    results_file: str | None = None
    metrics: tuple[str, ...] = ()
    labels: tuple[str, ...] = ("setting",)
    columns: tuple[Column, ...] = ()
    panels: tuple[Panel, ...] = ()
    jobs: int = 2
    default_settings: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.settings:
            raise ValueError(f"The grid {self.name!r} must name at least one setting, got {self.settings!r}.")
        for name, setting in self.settings.items():
            if (setting.task or self.task) is None:
                raise ValueError(f"The grid {self.name!r}'s setting {name!r} has no task: give the grid or the "
                                 "setting a `task` (a name of `python -m training --help`).")
        unknown = sorted(set(self.default_settings or ()) - set(self.settings))
        if unknown:
            raise ValueError(f"The grid {self.name!r}'s default_settings must be among {list(self.settings)}, got "
                             f"{unknown}.")
        if self.jobs < 1:
            raise ValueError(f"The grid {self.name!r}'s jobs must be a positive number of runs, got {self.jobs}.")

    @classmethod
    def from_json(cls, path: Path) -> "Grid":
        """The grid a JSON file declares: its keys are the fields (``settings``: ``{name: {"arguments": […], "task":
        …, "config": …}}``; ``columns``, ``panels``: lists of their fields); the grid's name is the file's."""
        data = json.loads(path.read_text())
        known = {field.name for field in fields(cls)} - {"name"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: the keys of a grid must be among {sorted(known)}, got {unknown}.")
        try:
            parts = {"settings": {name: Setting(**{**setting, "arguments": tuple(setting.get("arguments", ()))})
                                  for name, setting in data.get("settings", {}).items()},
                     "columns": tuple(Column(**column) for column in data.get("columns", ())),
                     "panels": tuple(Panel(**{**panel, "settings": panel.get("settings") and tuple(panel["settings"])})
                                     for panel in data.get("panels", ()))}
        except TypeError as error:  # a setting, column or panel key that is not one of its fields
            raise ValueError(f"{path}: {error}") from None
        tuples = {key: tuple(data[key]) for key in ("arguments", "metrics", "labels", "default_settings")
                  if data.get(key) is not None}
        return cls(name=path.stem.replace("_", "-"), **{"description": path.stem, **data, **tuples, **parts})


def positive_jobs(text: str) -> int:
    jobs = int(text)
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be a positive number of runs at a time, got {jobs}")
    return jobs


class Table:
    """A results table: its ``grid`` and the hooks ``main`` calls, with defaults for a grid of settings alone (a run
    per setting in OUTPUT_DIR/SETTING, its row read as ``Grid`` says, one markdown table, the results JSON, the
    figure of the grid's panels). A table that needs code subclasses it (``training/tables/<table>.py``); a bad
    value of a hook's flags is a ValueError, which ``main`` turns into a usage error."""

    results_flag: ClassVar[bool] = True  # --results_file names the results JSON (else: ``results_path``)

    def __init__(self, grid: Grid) -> None:
        self.grid = grid

    def parser(self, prog: str | None = None) -> argparse.ArgumentParser:
        """The flags every table takes (--settings, --output_dir, --jobs, --resume, --table_only, --results_file
        where the grid names one) and the table's own (``add_arguments``)."""
        grid = self.grid
        parser = argparse.ArgumentParser(prog=prog, description=grid.description)
        self.add_arguments(parser)
        parser.add_argument("--settings", nargs="+", choices=list(grid.settings),
                            default=list(grid.default_settings or grid.settings))
        parser.add_argument("--output_dir", type=Path,
                            default=REPO_ROOT / (grid.output_dir or f"outputs/tables/{grid.name}"))
        parser.add_argument("--jobs", type=positive_jobs, default=grid.jobs,
                            help="Runs at a time, each step in its own process.")
        parser.add_argument("--resume", action="store_true",
                            help="Go on with runs that stopped: their steps that finished (exit status 0 in the step "
                                 "folder's wall_seconds.json) are not run again.")
        parser.add_argument("--table_only", action="store_true", help="Do not train: tabulate the finished runs.")
        if self.results_flag:
            parser.add_argument("--results_file", type=Path,
                                default=grid.results_file and REPO_ROOT / grid.results_file,
                                help="Where the results JSON goes (the figure: the same name, .png); default: the "
                                     "grid's results_file, else OUTPUT_DIR/results.json.")
        return parser

    def main(self, argv: Sequence[str] | None = None, prog: str | None = None) -> dict:
        """Parse ``argv``, run the grid (not with --table_only), print the markdown and write the results JSON and
        the figure; returns the results."""
        parser = self.parser(prog)
        args = parser.parse_args(argv)
        try:
            self.check(args)
            cells = self.cells(args)
            if not args.table_only:
                self.run(cells, args)
            results = self.table_rows(collect(cells, self.read_row), args)
        except ValueError as error:
            parser.error(str(error))
        print(self.markdown(results, args))
        write_json(self.results_path(args), self.written(results, args))
        if self.grid.panels:
            plot_panels(results, self.grid.panels, self.figure_path(args), self.title(args), list(self.grid.settings))
        return results

    def results(self, argv: Sequence[str]) -> dict:
        """The finished runs' rows for the flags ``argv``, nothing run, printed or written."""
        args = self.parser().parse_args(argv)
        return collect(self.cells(args), self.read_row)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The table's own flags."""

    def check(self, args: argparse.Namespace) -> None:
        """A ValueError for flags that do not go together."""

    def cell(self, key: tuple, setting: str, folder: Path, *arguments: str, config: str | None = None) -> Cell:
        """The run at ``key`` of ``setting``'s training task in ``folder``: ``arguments`` between the grid's and the
        setting's; ``config``: the run's config where it is not the setting's (or the grid's)."""
        grid, chosen = self.grid, self.grid.settings[setting]
        config = config or chosen.config or grid.config
        return Cell(key, folder, (Step(("training", chosen.task or grid.task), (
            *([str(REPO_ROOT / config)] if config else []), "--output_dir", str(folder), "--disable_tqdm", "true",
            *grid.arguments, *arguments, *chosen.arguments), folder),))

    def cells(self, args: argparse.Namespace) -> list[Cell]:
        """The runs of the chosen settings: one each, in OUTPUT_DIR/SETTING."""
        return [self.cell((setting,), setting, args.output_dir / setting) for setting in args.settings]

    def run(self, cells: list[Cell], args: argparse.Namespace) -> None:
        run_grid(cells, args.jobs, args.resume)

    def read_row(self, folder: Path) -> dict | None:
        """A finished run's test metrics, steps, training minutes and the panels' curves; None where the run has no
        all_results.json."""
        metrics = read_json(folder / "all_results.json")
        if not metrics:
            return None
        row = {**self.metrics_row(metrics), **trainer_progress(folder)}
        history = read_json(folder / "trainer_state.json")
        for panel in self.grid.panels:
            metric, _, clock = panel.field.removeprefix("validation_").rpartition("_by_")
            if history and panel.field.startswith("validation_") and clock in CLOCKS:
                row[panel.field] = validation_curve(history, metrics, metric, CLOCKS[clock])
        return row

    def metrics_row(self, metrics: dict) -> dict:
        """The row's values read from a finished run's all_results.json ``metrics``: the grid's test metrics."""
        return predict_metrics(metrics, self.grid.metrics)

    def table_rows(self, results: dict, args: argparse.Namespace) -> dict:
        """The table's rows from the finished runs' (``{}`` where none finished), e.g. with rows of earlier runs."""
        return results

    def markdown(self, results: dict, args: argparse.Namespace) -> str:
        grid = self.grid
        columns = grid.columns or (*(Column(metric, metric) for metric in grid.metrics), Column("steps", "steps", "{}"),
                                   Column("training minutes", "train_minutes", "{}"))
        return markdown_table(results, grid.labels, columns)

    def results_path(self, args: argparse.Namespace) -> Path:
        return args.results_file or args.output_dir / "results.json"

    def figure_path(self, args: argparse.Namespace) -> Path:
        return self.results_path(args).with_suffix(".png")

    def written(self, results: dict, args: argparse.Namespace) -> dict:
        """What the results JSON holds."""
        return results

    def title(self, args: argparse.Namespace) -> str:
        """The table's name in the figure's titles."""
        return self.grid.name
