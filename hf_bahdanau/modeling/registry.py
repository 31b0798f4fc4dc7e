"""One registry per axis of the configuration: the names a config field accepts, declared with their descriptions
in ``axes.py`` (torch-free, so the config imports no model code), each mapped to the class that implements it.

A new score function, bridge, deep output or decoder style is two things:

1. one line in ``axes.py``, its name and the model card's one-line words for it::

       ATTENTION_SCORES = Registry("attention_type", {
           "additive": "additive (Bahdanau) score e_ij = v_aᵀ tanh(W_a q_i + U_a h_j)",
           ...

2. the class, registered under that name in its module::

       from .axes import ATTENTION_SCORES

       @ATTENTION_SCORES.register("additive")
       class AdditiveAttention(AttentionMechanism): ...

The config's allowed values and its error message, the model card's words and the table of axes
(``axes.axes_table``) are read from the declarations, so nothing else has to be kept in step. ``register`` refuses a
name ``axes.py`` does not declare; ``unimplemented`` lists the declared names no imported module has registered.
"""

from collections.abc import Callable, Iterable

__all__ = ["Registry"]


class Registry(dict):
    """name -> class for the config field ``field``, over the names ``declared`` (name -> one-line description).

    ``special`` names values the field accepts that no class implements (e.g. ``attention_type="none"``), with their
    descriptions. ``flags`` are plain facts about the names that the config needs without the classes: flag -> the
    names it holds for; ``register`` sets it on each class as a bool attribute (e.g. ``same_size_required``)."""

    def __init__(self, field: str, declared: dict[str, str], special: dict[str, str] | None = None,
                 flags: dict[str, Iterable[str]] | None = None):
        super().__init__()
        self.field = field
        self.declared = dict(declared)
        self.special = dict(special or {})
        self.flags = {flag: set(names) for flag, names in (flags or {}).items()}
        for flag, names in self.flags.items():
            if not names <= self.declared.keys():
                raise ValueError(f"{field}: flag {flag!r} names {sorted(names - self.declared.keys())}, which are "
                                 f"not declared; declared: {list(self.declared)}.")
        if self.declared.keys() & self.special.keys():
            raise ValueError(f"{field}: {sorted(self.declared.keys() & self.special.keys())} cannot be both a "
                             "declared name (a class implements it) and a special value (none does).")

    def register(self, name: str) -> Callable[[type], type]:
        """Class decorator: ``@REGISTRY.register("name")`` for a name ``axes.py`` declares."""

        def add(cls: type) -> type:
            if name not in self.declared:
                raise ValueError(f"{cls.__name__} is registered as {self.field}={name!r}, which axes.py does not "
                                 f"declare; declared: {list(self.declared)}. Add the name and its one-line "
                                 f"description to the axis in axes.py.")
            if name in self and self[name] is not cls:
                raise ValueError(f"{self.field}={name!r} is already registered ({self[name].__name__}).")
            for flag, names in self.flags.items():
                setattr(cls, flag, name in names)
            self[name] = cls
            return cls

        return add

    def __missing__(self, name: str) -> type:
        if name in self.declared:
            raise KeyError(f"{self.field}={name!r} is declared in axes.py but no class is registered for it yet; "
                           f"names without a class: {self.unimplemented}.")
        raise KeyError(f"{self.field}={name!r} has no class; the names with one are {list(self)}.")

    @property
    def unimplemented(self) -> list[str]:
        """The declared names no imported module has registered a class for."""
        return [name for name in self.declared if name not in self]

    @property
    def allowed(self) -> list[str]:
        """Every value the field accepts: the declared names and the special ones."""
        return [*self.declared, *self.special]

    def check(self, value: str) -> None:
        """ValueError naming the field, the value and the allowed values, unless ``value`` is one of them."""
        if value not in self.allowed:
            raise ValueError(f"`{self.field}` must be one of {self.allowed}, got {value!r}.")

    def describe(self, value: str) -> str:
        """The model card's words for ``value``."""
        self.check(value)
        return {**self.declared, **self.special}[value]

    def markdown_rows(self) -> list[str]:
        """One table row per allowed value: `| \\`value\\` | description |`."""
        return [f"| `{value}` | {self.describe(value)} |" for value in self.allowed]
