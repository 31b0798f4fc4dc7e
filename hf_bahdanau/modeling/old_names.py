"""Public names that changed keep importing: a module's ``__getattr__`` (PEP 562) answers an old name with the object
under its new name, and a ``FutureWarning`` that names it and its module.

    __getattr__ = old_names(__name__, {"MemoryNetworkConfig": BahdanauMemoryNetworkConfig})
"""

import warnings
from collections.abc import Callable

__all__ = ["old_names"]


def old_names(module: str, renamed: dict[str, type]) -> Callable[[str], type]:
    """A ``__getattr__`` for ``module``: ``renamed[old]`` for an old name (with a FutureWarning naming the new one),
    an AttributeError for any other name."""

    def __getattr__(name: str) -> type:
        if name not in renamed:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = renamed[name]
        warnings.warn(f"`{module}.{name}` is now `{new.__module__}.{new.__qualname__}`; import it by that name.",
                      FutureWarning, stacklevel=2)
        return new

    return __getattr__
