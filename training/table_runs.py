"""One training run of a results table, in its own process with one thread (the tables run two at a time on two
cores): ``training/babi_table.py`` and ``training/image_text_table.py``."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


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


def run_all(jobs: list[tuple], run: Callable[..., tuple[float, int]], workers: int,
            folder_of: Callable[..., Path]) -> None:
    """``run(*job)`` for every job, ``workers`` at a time, printing each one's seconds, exit status and log."""
    with ThreadPoolExecutor(workers) as pool:
        for job, (seconds, status) in zip(jobs, pool.map(lambda job: run(*job), jobs)):
            print(f"{' '.join(map(str, job))}: {seconds:.0f} s, exit status {status} (log: "
                  f"{folder_of(*job) / 'run.log'})", flush=True)
