"""``python -m training <task> [CONFIG.json] [--flag value ...]``: train, evaluate, and save a model with its card,
pictures and (``--push_to_hub``) Hub repository, for any task of ``training/tasks/``.

    python -m training seq2seq training/configs/dates_rnnsearch.json
    python -m training classification training/configs/han_classifier.json --num_train_epochs 2
    python -m training classification --help          # the task's flags
"""

import sys
from collections.abc import Sequence

from hf_bahdanau.cli import usage_errors
from training.common.driver import train
from training.tasks import load_task, task_names

__all__ = ["main", "run_script"]

USAGE = "usage: python -m training TASK [CONFIG.json] [--flag value ...]"


def main(argv: Sequence[str] | None = None) -> None:
    """Train the task named by ``argv[0]`` with the rest of ``argv`` (default: the command line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{USAGE}\n\ntasks: {', '.join(task_names())}\n\n`python -m training TASK --help` lists a task's flags.")
        return
    with usage_errors("python -m training"):
        task = load_task(argv[0])
    train(task, argv[1:], prog=f"python -m training {argv[0]}")


def run_script(task: str, argv: Sequence[str] | None = None) -> None:
    """What a ``training/run_<task>.py`` shim runs: ``task`` with ``argv`` (default: the command line), the script
    named in usage and error lines."""
    train(load_task(task), sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
