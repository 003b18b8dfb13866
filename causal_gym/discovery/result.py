"""What a discovery method returns: the graph, how it was obtained, and PC's deletion log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from causal_gym._jsonable import to_jsonable

__all__ = ["DeletionRecord", "DiscoveryResult", "MethodOutput"]


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
        Name of the method (one of :func:`causal_gym.discovery.methods`).
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
    the method name, the resolved options and the runtime."""

    graph: np.ndarray
    extras: dict[str, Any]
    n_tests: int = 0
    deletion_log: tuple[DeletionRecord, ...] = ()
