"""Where a saved model comes from: a local folder, or a Hub repository id.

``from_pretrained`` treats a name it cannot find on disk as a Hub id and asks the Hub for it: on a machine without
network that is a long wait before "couldn't connect to huggingface.co", for what was a mistyped local path. A name
that can only be a local path is checked here first.
"""

import os
from pathlib import Path

from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

__all__ = ["check_model_location"]


def check_model_location(name: str, argument: str) -> None:
    """Raise ValueError naming ``argument`` when ``name`` does not exist locally and cannot be a Hub id: it is absolute,
    starts with "." or "~", has more than one "/" or a "\\", fails the Hub's id rules, or its first folder exists here
    (``outputs/my-model`` when ``outputs/`` is a local folder)."""
    path = Path(name).expanduser()
    if path.exists():
        return
    first_folder = Path(name.split("/")[0])
    local = (path.is_absolute() or name.startswith((".", "~")) or name.count("/") > 1 or "\\" in name
             or ("/" in name and first_folder.is_dir()))
    if not local:
        try:
            validate_repo_id(name)
        except HFValidationError:
            local = True
    if local:
        raise ValueError(f"`{argument}` {name!r} is not a local folder (nothing exists at {os.path.abspath(path)}) "
                         "and cannot be a Hub model id: check the path.")
