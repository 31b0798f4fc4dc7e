"""``python -m training.tables TABLE [--settings ...] [--jobs N] [--resume] [--table_only] [--flag ...]``: run a results
table's grid, then write its results JSON, markdown table and figure. TABLE: a table of this folder or a grid's .json
file of one's own.

    python -m training.tables vqa --jobs 2 --resume
    python -m training.tables translation --corpus de_en --settings rnnsearch transformer
    python -m training.tables my_grid.json --jobs 2
    python -m training.tables babi --help          # the table's flags and settings

The results tables, one file each: ``training/tables/<table>.json`` (a grid of settings as data,
``training.common.table_runs.Grid``) or ``training/tables/<table>.py`` (a table that needs code: it defines ``TABLE``, a
``training.common.table_runs.Table``). A table's name is its file's name with dashes (``image_text.py``:
``image-text``); adding a file adds a table, with nothing else to edit.

    load_table("vqa")                       # -> the Table
    load_table("path/to/my_grid.json")      # a grid of one's own, anywhere
    table_names()                           # -> ["babi", "image-text", ...], every file here
"""

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from hf_bahdanau.cli import usage_errors
from training.common.table_runs import Grid, Table

__all__ = ["load_table", "main", "table_names"]

USAGE = "usage: python -m training.tables TABLE [--flag value ...]"

FOLDER = Path(__file__).parent


def table_names() -> list[str]:
    """The names of the tables, one per .json or .py file of this package, sorted."""
    return sorted(path.stem.replace("_", "-") for path in FOLDER.iterdir()
                  if path.suffix in (".json", ".py") and not path.stem.startswith("_"))


def load_table(name: str) -> Table:
    """The table ``name`` (dashes or underscores), or the grid of a .json file's path; a ValueError naming the known
    tables for any other name."""
    if name.endswith(".json"):
        if not Path(name).is_file():
            raise ValueError(f"The grid file {name!r} does not exist.")
        return Table(Grid.from_json(Path(name)))
    if name.replace("_", "-") not in table_names():
        raise ValueError(f"The table must be one of {table_names()} or a grid's .json file, got {name!r}.")
    module = name.replace("-", "_")
    if (FOLDER / f"{module}.json").is_file():
        return Table(Grid.from_json(FOLDER / f"{module}.json"))
    table = getattr(importlib.import_module(f"{__name__}.{module}"), "TABLE", None)
    if not isinstance(table, Table):
        raise ValueError(f"training/tables/{module}.py must define TABLE, a training.common.table_runs.Table, "
                         f"got {table!r}.")
    return table


def main(argv: Sequence[str] | None = None) -> None:
    """Run the table named by ``argv[0]`` with the rest of ``argv`` (default: the command line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{USAGE}\n\ntables: {', '.join(table_names())}, or a grid's .json file\n\n"
              "`python -m training.tables TABLE --help` lists a table's flags.")
        return
    with usage_errors("python -m training.tables"):
        table = load_table(argv[0])
    table.main(argv[1:], prog=f"python -m training.tables {argv[0]}")
