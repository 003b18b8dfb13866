"""What a discovery method returns: the graph, how it was obtained, and PC's deletion log."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from causal_gym._jsonable import to_jsonable

__all__ = ["DeletionRecord", "DiscoveryResult", "MethodOutput", "InvalidOutput", "check_output"]


@dataclass(frozen=True)
class DeletionRecord:
    """One edge removed by PC's skeleton search, with the test that removed it.

    Attributes
    ----------
    x, y : int
        The deleted pair, ``x < y``.
    cond : tuple of int
        The conditioning set of the deleting test (sorted).
    test : str
        CI test name (``"fisherz"`` or ``"kci"``).
    pvalue : float
        Its p-value; ``CITester(data, test).pvalue(x, y, cond)`` reproduces it.
    grade : str
        Coarse strength of the independence evidence, ``stats.strength_grade(pvalue, alpha)``.
    depth : int
        The PC level at which the pair was deleted, ``len(cond)``.
    order : int
        Position in the deletion sequence (0, 1, 2, ...).
    """

    x: int
    y: int
    cond: tuple[int, ...]
    test: str
    pvalue: float
    grade: str
    depth: int
    order: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict of the record."""
        return {
            "x": self.x,
            "y": self.y,
            "cond": list(self.cond),
            "test": self.test,
            "pvalue": self.pvalue,
            "grade": self.grade,
            "depth": self.depth,
            "order": self.order,
        }


@dataclass(frozen=True, eq=False)
class DiscoveryResult:
    """Output of :func:`causal_gym.discovery.run`.

    Equality is identity (``eq=False``): the fields hold arrays, for which ``==`` is element-wise;
    compare ``result.graph`` arrays explicitly. ``graph`` is read-only.

    Attributes
    ----------
    method : str
        Name of the method: one of :func:`causal_gym.discovery.methods`, or the import path of a method
        of your own (:attr:`causal_gym.discovery.Method.name`).
    graph : numpy.ndarray
        ``(d, d)`` int8 graph in the causal_gym encoding (``A[i, j] = 1, A[j, i] = 0`` for
        ``i -> j``; both 1 for ``i -- j``).
    options : dict
        Every option the method ran with, defaults filled in.
    runtime : float
        Wall time of the method in seconds.
    n_tests : int
        CI tests requested (repeats served from the cache included); 0 for methods that run
        no tests through causal_gym's tester.
    deletion_log : tuple of DeletionRecord
        PC only: one record per deleted pair, in deletion order; empty for other methods.
    extras : dict
        Method-specific details (sepsets, weights, scores, PAG endpoint marks, ...), documented
        by each method.
    warnings : dict
        The numerical ``RuntimeWarning`` s the method raised (overflow, invalid value, ...; expected
        from NOTEARS, GIES or scipy on raw scales), ``{"message": count}``: recorded here instead of
        printed.
    """

    method: str
    graph: np.ndarray
    options: dict[str, Any]
    runtime: float
    n_tests: int = 0
    deletion_log: tuple[DeletionRecord, ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)
    warnings: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.graph.flags.writeable = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (arrays as nested lists, tuple keys as strings)."""
        return {
            "method": self.method,
            "graph": to_jsonable(self.graph),
            "options": to_jsonable(self.options),
            "runtime": self.runtime,
            "n_tests": self.n_tests,
            "deletion_log": [record.to_dict() for record in self.deletion_log],
            "extras": to_jsonable(self.extras),
            "warnings": dict(self.warnings),
        }


class MethodOutput(NamedTuple):
    """What a method implementation hands back to :func:`~causal_gym.discovery.run`, which adds
    the method name, the resolved options and the runtime. A method may return the graph alone."""

    graph: np.ndarray
    extras: Mapping[str, Any] = MappingProxyType({})
    n_tests: int = 0
    deletion_log: tuple[DeletionRecord, ...] = ()


class InvalidOutput(ValueError):
    """A method returned something that is not a graph of the data's variables in the causal_gym encoding."""


def check_output(method: str, out: object, d: int) -> MethodOutput:
    """``out`` -- a graph or a :class:`MethodOutput` -- as a :class:`MethodOutput` with an int8 graph.

    The graph must be ``(d, d)`` for data of ``d`` columns, hold only 0 and 1 (booleans allowed)
    and have an empty diagonal; ``extras`` must be a dict with string keys. A directed cycle is a
    valid answer (each benchmark scores it as it scores cycles: CausalArena as it is, Heuresis after
    completing the orientations).

    Raises
    ------
    InvalidOutput
        Naming ``method`` and what is wrong (and, for causal-learn's endpoint marks or a weighted
        matrix, how to convert them).

    Examples
    --------
    >>> check_output("mine", [[0, 1], [0, 0]], 2).graph.tolist()
    [[0, 1], [0, 0]]
    >>> check_output("mine", [[0, 0.7], [0, 0]], 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    causal_gym.discovery.result.InvalidOutput: method 'mine' returned values other than 0 and 1 ([0.7]): a weighted...
    """
    where = f"method {method!r}"
    graph: object
    if isinstance(out, MethodOutput):
        graph, extras, n_tests, log = out
    elif isinstance(out, DiscoveryResult):
        graph, extras, n_tests, log = out.graph, out.extras, out.n_tests, out.deletion_log
    else:
        graph, extras, n_tests, log = out, {}, 0, ()
    try:
        array = np.asarray(graph)
    except Exception as exc:  # noqa: BLE001 -- whatever it is, it is not a graph
        raise InvalidOutput(f"{where} returned {type(graph).__name__}, not a (d, d) array: {exc}") from None
    if array.dtype.kind not in "biuf":
        raise InvalidOutput(f"{where} returned {type(graph).__name__} of dtype {array.dtype}; a graph is a (d, d) "
                            "array of 0 and 1 (or a MethodOutput holding one)")
    if array.shape != (d, d):
        raise InvalidOutput(f"{where} returned a graph of shape {array.shape}; the data has {d} variables, so "
                            f"({d}, {d})")
    if not np.isfinite(array).all():
        raise InvalidOutput(f"{where} returned a graph with NaN or infinite entries")
    odd = np.unique(array[(array != 0) & (array != 1)])
    if odd.size:
        hint = ("causal-learn's endpoint marks (G[i, j] = -1, G[j, i] = 1 for i -> j)? Convert them: "
                "A = (G == -1).astype(int) keeps every tail (i -> j and i -- j)"
                if np.isin(odd, (-1, 2)).all() else
                "a weighted matrix? Threshold it (e.g. (np.abs(W) > 0.3).astype(int))")
        raise InvalidOutput(f"{where} returned values other than 0 and 1 ({odd[:5].tolist()}): {hint}")
    if np.diagonal(array).any():
        raise InvalidOutput(f"{where} returned a graph with self-loops (a nonzero diagonal)")
    if not isinstance(extras, Mapping) or not all(isinstance(k, str) for k in extras):
        raise InvalidOutput(f"{where} returned extras that are not a dict with string keys: {extras!r}")
    if isinstance(n_tests, bool) or not isinstance(n_tests, (int, np.integer)) or n_tests < 0:
        raise InvalidOutput(f"{where} returned n_tests={n_tests!r}; a count of CI tests, >= 0")
    return MethodOutput(np.ascontiguousarray(array, dtype=np.int8), dict(extras), int(n_tests), tuple(log))
