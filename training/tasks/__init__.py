"""The training tasks, one file each: ``training/tasks/<task>.py`` defines ``TASK``, a ``training.common.driver.Task``
subclass. A task's name is its file's name with dashes (``image_to_text.py``: ``image-to-text``); adding a file adds a
task, with nothing else to edit.

    load_task("classification")   # -> the Task subclass
    task_names()                  # -> ["classification", ...], every file here
"""

import importlib
import pkgutil

from training.common.driver import Task

__all__ = ["load_task", "task_names"]


def task_names() -> list[str]:
    """The names of the tasks, one per module of this package, sorted."""
    return sorted(module.name.replace("_", "-") for module in pkgutil.iter_modules(__path__)
                  if not module.name.startswith("_"))


def load_task(name: str) -> type[Task]:
    """The task ``name`` (dashes or underscores); a ValueError naming the known tasks for any other name."""
    if name.replace("_", "-") not in task_names():
        raise ValueError(f"The task must be one of {task_names()}, got {name!r}.")
    task = getattr(importlib.import_module(f"{__name__}.{name.replace('-', '_')}"), "TASK", None)
    if not (isinstance(task, type) and issubclass(task, Task)):
        raise ValueError(f"training/tasks/{name.replace('-', '_')}.py must define TASK, a "
                         f"training.common.driver.Task subclass, got {task!r}.")
    return task
