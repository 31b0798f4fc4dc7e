#!/usr/bin/env python
"""``python training/run_image_to_text.py ARGS`` is ``python -m training image-to-text ARGS``: the task is
``training/tasks/image_to_text.py``."""


def main(argv: list[str] | None = None) -> None:
    """The image-to-text task with ``argv`` (default: the command line)."""
    from training.__main__ import run_script

    run_script("image-to-text", argv)


if __name__ == "__main__":
    import script_path  # noqa: F401  (run as a file: the repository root on sys.path, see training/script_path.py)

    main()
