"""Names the tests import from the benchmark scripts: benchmarks/ is a folder of scripts run as files, not a package,
so each is loaded from its path rather than by putting benchmarks/ on ``sys.path``."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def from_benchmark(path: str, *names: str) -> tuple:
    """``from <script> import <names>`` for the script ``benchmarks/<path>`` (e.g. "peers/peer_harness.py"): the
    values of ``names``, in order. The script is executed once and kept in ``sys.modules`` under its file's stem, the
    name ``python benchmarks/<path>`` gives it when another script imports it."""
    file, name = BENCHMARKS / path, Path(path).stem
    if getattr(sys.modules.get(name), "__file__", None) != str(file):
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it, as an import does: its dataclasses look their module up
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return tuple(getattr(sys.modules[name], name_) for name_ in names)
