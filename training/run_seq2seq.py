#!/usr/bin/env python
"""``python training/run_seq2seq.py ARGS`` is ``python -m training seq2seq ARGS``: the task is
``training/tasks/seq2seq.py``."""


def main(argv: list[str] | None = None) -> None:
    """The seq2seq task with ``argv`` (default: the command line)."""
    from training.__main__ import run_script

    run_script("seq2seq", argv)


if __name__ == "__main__":
    import script_path  # noqa: F401  (run as a file: the repository root on sys.path, see training/script_path.py)

    main()
