"""A name -> family registry, the extension point for mechanism and noise families.

Benchmarks add their own families with a decorator (``@register_mechanism("my_map")``) instead of
editing causal_gym; SCMs store only the family name and its JSON parameters, so an SCM written by
one process can be re-read by another that has registered the same families.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from causal_gym._validation import check_choice

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Map family names to (stateless) family instances.

    Parameters
    ----------
    kind : str
        What is registered, used in error messages (e.g. ``"mechanism"``).
    required : tuple of str
        Methods every registered class must define.
    """

    def __init__(self, kind: str, required: tuple[str, ...]) -> None:
        self.kind = kind
        self.required = required
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator registering one instance of the class under ``name``.

        Raises
        ------
        ValueError
            If ``name`` is empty or already taken (families are never silently replaced).
        TypeError
            If the class lacks one of the required methods.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def decorator(cls: type[T]) -> type[T]:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            missing = [m for m in self.required if not callable(getattr(cls, m, None))]
            if missing:
                raise TypeError(f"{self.kind} class {cls.__name__} must define {', '.join(missing)}")
            self._entries[name] = cls()
            return cls

        return decorator

    def get(self, name: str) -> T:
        """Return the family registered as ``name`` (ValueError listing the known names otherwise)."""
        return self._entries[check_choice(name, self.names(), self.kind)]

    def names(self) -> tuple[str, ...]:
        """Registered names, sorted."""
        return tuple(sorted(self._entries))
