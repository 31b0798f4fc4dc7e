"""One registry per axis of the configuration: the names a config field accepts, each mapped to the class that
implements it.

    ATTENTION_SCORES = Registry("attention_type")

    @ATTENTION_SCORES.register("additive")
    class AdditiveAttention(AttentionMechanism):
        description = "additive (Bahdanau) score e_ij = v_aᵀ tanh(W_a q_i + U_a h_j)"

A new score function, bridge, deep output or decoder style is that: one class with a ``description`` and one
``register`` line. The config's allowed values and its error message, the model card's words and the README's table
of axes (``configuration_bahdanau.axes_table``) are all read from the registries, so nothing else has to be kept in step.
"""

from collections.abc import Callable

__all__ = ["Registry"]


class Registry(dict):
    """name -> class for the config field ``field``; each class carries a one-line ``description``.

    ``special`` names values the field accepts that no class implements (e.g. ``attention_type="none"``), with their
    descriptions."""

    def __init__(self, field: str, special: dict[str, str] | None = None):
        super().__init__()
        self.field = field
        self.special = dict(special or {})

    def register(self, name: str) -> Callable[[type], type]:
        """Class decorator: ``@REGISTRY.register("name")``; the class must have a ``description``."""

        def add(cls: type) -> type:
            if not isinstance(getattr(cls, "description", None), str):
                raise TypeError(f"{cls.__name__} needs a `description` (one line for the model card) to be "
                                f"registered as {self.field}={name!r}.")
            if name in self.special or (name in self and self[name] is not cls):
                raise ValueError(f"{self.field}={name!r} is already registered ({self.get(name, 'special value')}).")
            self[name] = cls
            return cls

        return add

    @property
    def allowed(self) -> list[str]:
        """Every value the field accepts: the registered names and the special ones."""
        return [*self, *self.special]

    def check(self, value: str) -> None:
        """ValueError naming the field, the value and the allowed values, unless ``value`` is one of them."""
        if value not in self.allowed:
            raise ValueError(f"`{self.field}` must be one of {self.allowed}, got {value!r}.")

    def describe(self, value: str) -> str:
        """The model card's words for ``value``."""
        return self.special[value] if value in self.special else self[value].description

    def markdown_rows(self) -> list[str]:
        """One table row per allowed value: `| \\`value\\` | description |`."""
        return [f"| `{value}` | {self.describe(value)} |" for value in self.allowed]
