"""Run the peer toolkits' RNN attention models on our benchmark batches, each in its own virtualenv.

    import peers                                      # with benchmarks/ on sys.path, as run_benchmarks.py has it
    peers.save_batches("/tmp/batches.pt", [synthetic_batch(s) for s in range(5)], synthetic_batch(1000))
    for name in peers.available_peers():
        result = peers.run_peer(name, "/tmp/batches.pt", threads=2, train_batches=5, repeats=3)

``run_peer`` executes ``<venv_root>/<name>/bin/python benchmarks/peers/<name>_runner.py`` and returns
the JSON object it prints (see ``peer_harness.py`` for the metrics). The virtualenvs are made by
``install_peers.sh DIR fairseq joeynmt opennmt`` (see README.md here); their root is ``venv_root``,
else ``$HF_BAHDANAU_PEERS``, else ``/root/peer-venvs``.
"""

import json
import os
import subprocess
from pathlib import Path

import torch

PEERS = ("fairseq", "joeynmt", "opennmt")
RUNNERS = Path(__file__).resolve().parent


def venv_root(root: str | os.PathLike | None = None) -> Path:
    return Path(root or os.environ.get("HF_BAHDANAU_PEERS", "/root/peer-venvs"))


def peer_python(name: str, root: str | os.PathLike | None = None) -> Path:
    if name not in PEERS:
        raise ValueError(f"name={name!r} is not a peer; expected one of {PEERS}")
    return venv_root(root) / name / "bin" / "python"


def available_peers(venv_root: str | os.PathLike | None = None) -> list[str]:
    """The peers whose virtualenv python exists under ``venv_root`` (default ``$HF_BAHDANAU_PEERS`` or /root/peer-venvs)."""
    return [name for name in PEERS if peer_python(name, venv_root).exists()]


def save_batches(path: str | os.PathLike, train: list[dict], decode: dict) -> None:
    """Write the batches every implementation is measured on (batches as ``run_benchmarks.synthetic_batch`` makes)."""
    torch.save(dict(train=train, decode=decode), path)


def run_peer(name: str, batches_path: str | os.PathLike, threads: int = 2, train_batches: int = 5,
             repeats: int = 3, venv_root: str | os.PathLike | None = None, timeout: float | None = None,
             device: str = "cpu", dtype: str = "fp32") -> dict:
    """Measure peer ``name`` in a subprocess of its own virtualenv, on ``device`` (cpu, cuda, cuda:N) and in ``dtype``
    (fp32, or bf16 under autocast: ``peer_harness.py``); returns the runner's JSON object.

    Raises RuntimeError with the runner's stderr when it fails or prints no JSON.
    """
    python = peer_python(name, venv_root)
    if not python.exists():
        raise ValueError(f"name={name!r}: no virtualenv python at {python}; install it with install_peers.sh "
                         f"(available: {available_peers(venv_root)})")
    if not Path(batches_path).is_file():
        raise ValueError(f"batches_path={str(batches_path)!r} is not a file; write it with save_batches()")
    command = [str(python), str(RUNNERS / f"{name}_runner.py"), "--batches", str(batches_path),
               "--threads", str(threads), "--train_batches", str(train_batches), "--repeats", str(repeats),
               "--device", device, "--dtype", dtype]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"peer {name} failed (exit {completed.returncode}): {' '.join(command)}\n"
                           f"{completed.stderr[-4000:]}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as error:
        raise RuntimeError(f"peer {name} printed no JSON on its last stdout line: {lines[-1][:500]!r}\n"
                           f"{completed.stderr[-4000:]}") from error
