#!/usr/bin/env python
"""``python training/run_memory_qa.py ARGS`` is ``python -m training memory-qa ARGS``, or ``passage-qa`` when ARGS say
``--architecture coattention`` (``training.common.babi_qa.architecture_task``): the tasks are
``training/tasks/memory_qa.py`` and ``training/tasks/passage_qa.py``."""


def main(argv: list[str] | None = None) -> None:
    """The memory-qa task (the passage-qa task for --architecture coattention) with ``argv`` (default: the command
    line)."""
    import sys

    from training.__main__ import run_script
    from training.common.babi_qa import architecture_task

    argv = sys.argv[1:] if argv is None else argv
    run_script(architecture_task(argv), argv)


if __name__ == "__main__":
    import script_path  # noqa: F401  (run as a file: the repository root on sys.path, see training/script_path.py)

    main()
