"""Modules the tests import from their files rather than by putting a folder on ``sys.path``: the benchmark scripts
(benchmarks/ is a folder of scripts run as files, not a package) and modules a test writes."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def import_file(path: Path, name: str) -> ModuleType:
    """The module at ``path`` (a .py file, or a folder with ``__init__.py``: a package, whose submodules then import by
    name through it), executed and kept in ``sys.modules`` under ``name``, as an import keeps it."""
    package = path.is_dir()
    spec = importlib.util.spec_from_file_location(name, path / "__init__.py" if package else path,
                                                  submodule_search_locations=[str(path)] if package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it, as an import does: its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def from_benchmark(path: str, *names: str) -> tuple:
    """``from <script> import <names>`` for the script ``benchmarks/<path>`` (e.g. "peers/peer_harness.py"): the
    values of ``names``, in order. The script runs once, kept in ``sys.modules`` under its file's stem, the name
    ``python benchmarks/<path>`` gives it when another script imports it."""
    file, name = BENCHMARKS / path, Path(path).stem
    module = sys.modules.get(name)
    if getattr(module, "__file__", None) != str(file):
        module = import_file(file, name)
    return tuple(getattr(module, value) for value in names)
