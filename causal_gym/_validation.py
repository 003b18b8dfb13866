"""Input validation at the public boundary (the role of scikit-learn's ``check_array``).

Every public function that takes user data or a graph calls one of these helpers first; the
internals then trust their input. Each helper raises a ``ValueError`` (or ``TypeError`` for a
wrong Python type) that names the offending argument and says what was expected. Nothing is
silently coerced: a float matrix with a NaN, a graph with a 2 in it or a self-loop is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["check_data", "check_adjacency", "check_node", "check_node_set", "check_choice"]


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
    if not np.isin(arr, (0, 1)).all():
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
