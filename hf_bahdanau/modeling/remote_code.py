"""The code a saved model folder carries, so that it loads with ``trust_remote_code=True`` where hf_bahdanau is not
installed: the module of every class named in the config's ``auto_map`` and ``custom_pipelines``, and every module
they import (flat siblings, imported as ``from .module import Name``).
"""

import os
import shutil
from pathlib import Path
from typing import Any

from transformers.dynamic_module_utils import get_relative_import_files

__all__ = ["SavesModelCode", "copy_model_code"]


def copy_model_code(config: Any, folder: str | os.PathLike) -> None:
    """Copy the modules of ``config.auto_map`` and ``config.custom_pipelines`` (imports included) from this file's
    folder into ``folder``."""
    package, folder = Path(__file__).resolve().parent, Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    references = list((getattr(config, "auto_map", None) or {}).values())
    references += [task["impl"] for task in (getattr(config, "custom_pipelines", None) or {}).values()]
    modules = {reference.split("--")[-1].split(".")[0] for reference in references if isinstance(reference, str)}
    for source in (package / f"{module}.py" for module in sorted(modules)):
        if source.is_file():  # a remote-code cache holds only the modules fetched so far
            for path in (source, *map(Path, get_relative_import_files(source))):
                shutil.copyfile(path, folder / path.name)


class SavesModelCode:
    """A config mixin (before ``PreTrainedConfig`` in the bases): ``save_pretrained`` also writes, when the code is
    saved (``register_for_auto_class``), the code of every class in ``auto_map`` and of the pipelines, not only the
    model being saved, so each head loads from any checkpoint with ``trust_remote_code=True``."""

    def save_pretrained(self, save_directory: str | os.PathLike, push_to_hub: bool = False, **kwargs: Any) -> None:
        if self._auto_class is not None:
            copy_model_code(self, save_directory)
        super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)
