"""Fresh Python processes for tests: run a script from a directory outside the repository, offline, with its own
HF home, optionally isolated (``python -I``) and with hf_bahdanau made unimportable, as on a machine without it."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SUBPROCESS_TIMEOUT = 180

# The package is installed editable: drop its meta-path finder and path-hook entry, then prove it is gone.
HIDE_PACKAGE = """
import importlib.util
import sys

def _mentions_package(finder):
    names = (getattr(finder, "__module__", ""), type(finder).__module__, getattr(finder, "__name__", ""))
    return any("hf_bahdanau" in str(name) for name in names)

sys.meta_path[:] = [finder for finder in sys.meta_path if not _mentions_package(finder)]
# sys.path: the one way to hide an installed package from a child process (its path entries would find it again)
sys.path[:] = [entry for entry in sys.path if "hf_bahdanau" not in entry and "__editable__" not in entry]
sys.path_importer_cache.clear()
assert importlib.util.find_spec("hf_bahdanau") is None, "hf_bahdanau is still importable"
"""


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Environment of a child process: its own HF home and dynamic-module cache, no network."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_HOME=str(tmp_path / "hf_home"), HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_OFFLINE="1",
               OMP_NUM_THREADS="1", **extra)
    return env


def run_script(script: str, tmp_path: Path, *args: str, isolated: bool = False, hide_package: bool = False,
               name: str = "child", **env: str) -> str:
    """Run ``script`` in a fresh interpreter from ``tmp_path/name``; return its stdout (it must exit 0)."""
    workdir = tmp_path / name
    workdir.mkdir(exist_ok=True)
    code = (HIDE_PACKAGE if hide_package else "") + textwrap.dedent(script)
    (workdir / "child.py").write_text(code)
    command = [sys.executable, *(["-I"] if isolated else []), "child.py", *args]
    result = subprocess.run(command, cwd=workdir, env=child_env(tmp_path, **env), capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=SUBPROCESS_TIMEOUT)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def run_child(script: str, tmp_path: Path, *args: str, **options) -> dict:
    """``run_script`` for a script that prints JSON last; returns it parsed."""
    return json.loads(run_script(script, tmp_path, *args, **options).strip().splitlines()[-1])
