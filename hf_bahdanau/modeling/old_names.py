"""Public names that changed keep working, each with a ``FutureWarning`` that names the new one.

- a module's old names: its ``__getattr__`` (PEP 562) answers an old name with the object under its new name,
    ``__getattr__ = old_names(__name__, {"MemoryNetworkConfig": BahdanauMemoryNetworkConfig})``;
- a class's old attribute or method names: ``memory = OldAttribute("encoded")`` in the class body reads (and sets)
  the attribute under its new name;
- a function's old keyword arguments: ``@old_keywords({"head_memory": "output_layer_inputs"})`` passes them under their
  new names (transformers' ``deprecate_kwarg``, in our words).
"""

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["OldAttribute", "old_keywords", "old_names"]


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


class OldAttribute:
    """A class attribute's old name: reading it (on an instance or the class) or setting it (on an instance) reads or
    sets the attribute ``new``, with a FutureWarning naming it."""

    def __init__(self, new: str):
        self.new = new
        self.old = new  # until ``__set_name__`` gives the old name

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name

    def _warn(self, owner: type) -> None:
        warnings.warn(f"`{owner.__qualname__}.{self.old}` is now `{owner.__qualname__}.{self.new}`; use that name.",
                      FutureWarning, stacklevel=3)

    def __get__(self, instance: Any, owner: type) -> Any:
        self._warn(owner)
        return getattr(owner if instance is None else instance, self.new)

    def __set__(self, instance: Any, value: Any) -> None:
        self._warn(type(instance))
        setattr(instance, self.new, value)


def old_keywords(renamed: dict[str, str]) -> Callable[[Callable], Callable]:
    """Decorator: the function takes each old keyword argument of ``renamed`` (old -> new) under its new name, with a
    FutureWarning naming it; both names at once are a TypeError."""

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def with_old_keywords(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{function.__qualname__}() got `{old}` and its new name `{new}`: pass `{new}` "
                                    "only.")
                warnings.warn(f"`{function.__qualname__}({old}=…)` is now `{new}=…`; pass it by that name.",
                              FutureWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return with_old_keywords

    return decorate
