"""Validation of method option values (names are checked by :func:`causal_gym.discovery.run`).

Every check raises ``ValueError`` naming the option and the accepted range; nothing is coerced
(a bool is not an int, a string is not a float).
"""

from __future__ import annotations

import numbers

__all__ = ["check_level", "check_positive", "check_count"]


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"option {name} must be a real number, got {value!r}")
    return float(value)


def check_level(value: object, name: str) -> float:
    """A significance level strictly between 0 and 1."""
    level = _real(value, name)
    if not 0.0 < level < 1.0:
        raise ValueError(f"option {name} must lie strictly between 0 and 1, got {value!r}")
    return level


def check_positive(value: object, name: str, allow_zero: bool = False) -> float:
    """A finite real number > 0 (or >= 0 with ``allow_zero``)."""
    number = _real(value, name)
    if not (number >= 0.0 if allow_zero else number > 0.0) or number == float("inf"):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"option {name} must be a finite number {bound}, got {value!r}")
    return number


def check_count(value: object, name: str, minimum: int, allow_none: bool = False) -> int | None:
    """An integer >= ``minimum`` (or None when ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        extra = " or None" if allow_none else ""
        raise ValueError(f"option {name} must be an integer >= {minimum}{extra}, got {value!r}")
    return int(value)
