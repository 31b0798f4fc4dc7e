#!/usr/bin/env python
"""``python training/run_vqa.py ARGS`` is ``python -m training vqa ARGS``: the task is
``training/tasks/vqa.py``."""


def main(argv: list[str] | None = None) -> None:
    """The VQA task with ``argv`` (default: the command line)."""
    from training.__main__ import run_script

    run_script("vqa", argv)


if __name__ == "__main__":
    import script_path  # noqa: F401  (run as a file: the repository root on sys.path, see training/script_path.py)

    main()
