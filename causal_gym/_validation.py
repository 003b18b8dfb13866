"""Input validation at the public boundary (the role of scikit-learn's ``check_array``).

Every public function that takes user data or a graph calls one of these helpers first; the
internals then trust their input. Each helper raises a ``ValueError`` (or ``TypeError`` for a
wrong Python type) that names the offending argument and says what was expected. Nothing is
silently coerced: a float matrix with a NaN, a graph with a 2 in it or a self-loop is an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np

__all__ = [
    "as_generator",
    "check_adjacency",
    "check_choice",
    "check_count",
    "check_instance_option",
    "check_data",
    "check_level",
    "check_node",
    "check_node_set",
    "check_range",
    "check_real",
    "check_reset_options",
]


def check_data(data: object, name: str = "data", min_rows: int = 3) -> np.ndarray:
    """Validate an ``(n, d)`` numeric data matrix and return it as a C-contiguous float64 array.

    Raises
    ------
    ValueError
        If the array is not 2-D, is not of a real numeric dtype (bool, complex, object and strings
        are rejected rather than coerced), has fewer than ``min_rows`` rows or no column, contains
        NaN or infinite values, or has a constant column (zero variance breaks every CI test).
    """
    arr = np.asarray(data)
    if arr.dtype.kind not in "iuf":
        raise ValueError(
            f"{name} must hold real numbers (int or float dtype), got dtype {arr.dtype}"
        )
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_variables), got shape {arr.shape}")
    n, d = arr.shape
    if d == 0:
        raise ValueError(f"{name} has no columns")
    if n < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {n}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    finite = np.isfinite(arr)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        raise ValueError(
            f"{name} contains NaN or infinite values ({rows.size} cells, first at row {rows[0]}, column {cols[0]})"
        )
    constant = np.flatnonzero(np.ptp(arr, axis=0) == 0)
    if constant.size:
        raise ValueError(f"{name} has constant column(s) {constant.tolist()}; drop them before testing")
    return arr


def check_adjacency(graph: object, name: str = "graph", d: int | None = None) -> np.ndarray:
    """Validate a graph in causal_gym's encoding and return it as a C-contiguous int8 array.

    The encoding (see :mod:`causal_gym.graphs`): ``A[i, j] = 1, A[j, i] = 0`` for ``i -> j``;
    ``A[i, j] = A[j, i] = 1`` for ``i -- j``; both 0 for no edge. Must be square, with entries
    in {0, 1}, no self-loops, and of size ``d`` when ``d`` is given.
    """
    arr = np.asarray(graph)
    if arr.dtype.kind not in "iubf":
        raise ValueError(f"{name} must be a numeric 0/1 matrix, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {arr.shape}")
    if d is not None and arr.shape[0] != d:
        raise ValueError(f"{name} must have shape ({d}, {d}), got {arr.shape}")
    if not ((arr == 0) | (arr == 1)).all():
        bad = np.unique(arr[~np.isin(arr, (0, 1))])[:5]
        raise ValueError(f"{name} entries must be 0 or 1, found {bad.tolist()}")
    if np.any(np.diagonal(arr)):
        loops = np.flatnonzero(np.diagonal(arr)).tolist()
        raise ValueError(f"{name} has self-loops at node(s) {loops}")
    return np.ascontiguousarray(arr, dtype=np.int8)


def check_node(index: object, d: int, name: str = "node") -> int:
    """Validate a node index in ``[0, d)`` and return it as a Python int (bools are rejected)."""
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"{name} must be an integer node index, got {index!r}")
    if not 0 <= int(index) < d:
        raise ValueError(f"{name}={index} is out of range for {d} variables (valid: 0..{d - 1})")
    return int(index)


def check_node_set(
    nodes: Iterable[object] | None, d: int, name: str = "conditioning set", exclude: Sequence[int] = ()
) -> tuple[int, ...]:
    """Validate a set of distinct node indices and return it sorted as a tuple.

    ``exclude`` lists nodes that may not appear (e.g. the pair being tested).
    """
    if nodes is None:
        return ()
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        raise ValueError(f"{name} must be a sequence of node indices, got {nodes!r}")
    out = [check_node(v, d, f"{name} member") for v in nodes]
    if len(set(out)) != len(out):
        raise ValueError(f"{name} has repeated nodes: {out}")
    clash = sorted(set(out) & set(exclude))
    if clash:
        raise ValueError(f"{name} must not contain {clash} (they are the tested variables)")
    return tuple(sorted(out))


def check_choice(value: object, choices: Iterable[str], name: str) -> str:
    """Validate that ``value`` is one of ``choices`` (exact string match)."""
    options = tuple(choices)
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(map(repr, options))}")
    return str(value)


def check_reset_options(options: object, allowed: Sequence[str]) -> dict[str, Any]:
    """Validate a ``reset(options=...)`` argument: None or a mapping with keys from ``allowed``.

    Returns a new dict (None gives ``{}``), so callers may add defaults without touching the caller's.

    Examples
    --------
    >>> check_reset_options({"instance": 3}, ("split", "instance"))
    {'instance': 3}
    >>> check_reset_options("test", ("split", "instance"))
    Traceback (most recent call last):
    ...
    ValueError: reset options must be a dict such as {'split': ..., 'instance': ...} or None, got str 'test'
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        example = ", ".join(f"{key!r}: ..." for key in allowed)
        raise ValueError(f"reset options must be a dict such as {{{example}}} or None, got "
                         f"{type(options).__name__} {options!r:.60}")
    unknown = sorted(set(map(str, options)) - set(allowed))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; valid options are "
                         + " and ".join(repr(key) for key in allowed))
    return dict(options)


def check_instance_option(value: object, size: int | None, where: str) -> int:
    """Validate ``options['instance']``: a count below ``size`` (None: an unbounded stream).

    Examples
    --------
    >>> check_instance_option(3, 50, "the test suite")
    3
    >>> check_instance_option(50, 50, "the test suite")
    Traceback (most recent call last):
    ...
    ValueError: options['instance'] = 50 is out of range: it must be < 50 (the test suite has 50 instances)
    """
    index = int(check_count(value, "options['instance']", 0))
    if size is not None and index >= size:
        raise ValueError(f"options['instance'] = {index} is out of range: it must be < {size} "
                         f"({where} has {size} instances)")
    return index


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


@overload
def check_count(value: object, name: str, minimum: int = 1, allow_none: Literal[False] = False) -> int: ...


@overload
def check_count(value: object, name: str, minimum: int = 1, allow_none: bool = ...) -> int | None: ...


def check_count(value: object, name: str, minimum: int = 1, allow_none: bool = False) -> int | None:
    """Validate an integer count ``>= minimum`` (bools rejected; None only with ``allow_none``)."""
    if value is None and allow_none:
        return None
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
    # a set or a mapping has a length but no order: refused here, not met by a TypeError below
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) or len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair, got {value!r}")
    low = check_real(value[0], f"{name}[0]", minimum)
    high = check_real(value[1], f"{name}[1]", minimum)
    if low > high:
        raise ValueError(f"{name} must satisfy low <= high, got ({low}, {high})")
    return low, high


def check_level(value: object, name: str) -> float:
    """Validate a significance level strictly between 0 and 1."""
    level = check_real(value, name)
    if not 0.0 < level < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return level
