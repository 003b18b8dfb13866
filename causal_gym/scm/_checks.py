"""Boundary checks shared by the SCM modules: seeds, counts, real numbers and ranges.

They complement :mod:`causal_gym._validation` (data matrices, graphs, node indices) with the
scalar arguments of generators and mechanisms. Each raises a ``ValueError`` naming the argument.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["as_generator", "check_count", "check_real", "check_range"]


def as_generator(seed: object, name: str = "rng") -> np.random.Generator:
    """Return a numpy Generator for an explicit seed.

    An ``int`` (>= 0) or ``SeedSequence`` starts a fresh PCG64 stream; a ``Generator`` is used
    as is (and advanced by the caller's draws). ``None`` is rejected: every random draw in
    causal_gym must be reproducible from an explicit seed.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and seed >= 0:
        return np.random.default_rng(int(seed))
    raise ValueError(
        f"{name} must be a non-negative int seed, a numpy SeedSequence or a numpy Generator, got {seed!r}"
    )


def check_count(value: object, name: str, minimum: int = 1) -> int:
    """Validate an integer count ``>= minimum`` (bools rejected) and return it as an int."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_real(value: object, name: str, minimum: float | None = None, strict: bool = False) -> float:
    """Validate a finite real number, optionally ``>= minimum`` (``> minimum`` when ``strict``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out}")
    if minimum is not None and (out <= minimum if strict else out < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {out}")
    return out


def check_range(value: object, name: str, minimum: float | None = None) -> tuple[float, float]:
    """Validate a ``(low, high)`` pair of finite reals with ``low <= high`` (and ``low >= minimum``).

    ``low == high`` is allowed and means a fixed value.
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a (low, high) pair, got {value!r}")
    low = check_real(value[0], f"{name}[0]", minimum)  # type: ignore[index]
    high = check_real(value[1], f"{name}[1]", minimum)  # type: ignore[index]
    if low > high:
        raise ValueError(f"{name} must satisfy low <= high, got ({low}, {high})")
    return low, high
