"""The hidden mechanism: constants of the laboratory and :class:`LabSCM` (values, shifts, JSON)."""


from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_real
from causal_gym.graphs import ancestors, kahn_order

PROPERTIES: Mapping[str, str] = MappingProxyType(
    {
        "temperatureC": "Temperature (°C)",
        "moisture": "Moisture",
        "density": "Density",
        "quantumSize": "Quantum Size",
        "radiation": "Radiation",
        "pressure": "Pressure",
        "ph": "pH",
        "conductivity": "Conductivity",
    }
)
"""The pool of crystal properties (name -> display label); a graph uses ``n - 1`` of them."""

_POOL = tuple(PROPERTIES)

FREQ = "resonanceFreq"
"""The target node: observable in records and on the manipulator, hidden on the reactor."""

FREQ_LABEL = "Resonance Frequency (Hz)"
"""Display label of :data:`FREQ`."""

KINDS = ("linear", "quadratic")
"""Equation families."""

DECOY_READINGS: Mapping[str, float] = MappingProxyType({"temperatureC": 25.0, "density": 1.0, "quantumSize": 2.0})
"""Constant readings the original reactor dialog shows for these pool properties when they are not
in the graph (a distractor: they play no causal role)."""

MAX_TARGET = 10000.0
"""Largest reactor frequency an agent can submit; episodes with a larger target are redrawn."""

HIDDEN_VALUES = (-5.0, 0.0, 5.0)
"""Default value set of the hidden disturbance ``h``."""

EXOGENOUS_HIGH = 100
"""Exogenous terms of records, manipulator and reactor are integers ``0 .. EXOGENOUS_HIGH``."""

LINEAR_COEFFICIENTS = (1.0, 2.0, 3.0)
"""Edge coefficients of the linear family (uniform)."""

BASE_RANGE = (15, 25)
"""Integer range of ``base_freq`` and of the configured hybrid bases in the linear family."""

QUADRATIC_CURVATURES = (0.008, 0.012, 0.016)
"""``c2`` of a quadratic edge (uniform); ``c1 = -2 * c2 * axis``."""

AXIS_RANGE = (35.0, 65.0)
"""Uniform range of the vertex (axis) of a quadratic edge term."""

QUADRATIC_FLOOR = MappingProxyType({"hybrid": (20.0, 35.0), FREQ: (25.0, 60.0)})
"""Uniform range of a quadratic node's value when every parent sits at its edge's vertex. The
base is this floor plus ``sum c2 * axis**2`` (inferred from the released hard-quadratic suite,
whose frequency bases span about 53-191)."""

CHANGE_TOLERANCE = 1e-6
"""A value counts as changed when it moves by more than this."""

_SCALAR_ROWS = 8
"""Up to this many crystals :meth:`LabSCM.evaluate_rows` evaluates row by row in plain Python
(faster than numpy's per-call overhead at a handful of nodes; both paths are bit-identical)."""

_FORMAT = "causal_gym.causalab.scm"
_FORMAT_VERSION = 1

Coefficient = float | tuple[float, float]


def _round2(x: np.ndarray | float) -> np.ndarray:
    return np.round(x, 2)


def _round2_scalar(x: float) -> float:
    """``float(np.round(x, 2))`` without numpy: numpy rounds as ``rint(x * 100) / 100`` (half to
    even, the sign of a zero kept), which differs from Python's correctly rounded ``round(x, 2)``."""
    y = x * 100.0
    if not math.isfinite(y):
        return float(np.round(x, 2))
    r = float(round(y))
    return (r if r != 0.0 else math.copysign(0.0, y)) / 100.0


def _check_name(value: object, allowed: Sequence[str], name: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value




@dataclass(frozen=True)
class LabSCM:
    """The hidden SCM shared by the prior records, the manipulator and the reactor.

    Attributes
    ----------
    properties : tuple of str
        Node names: ``n - 1`` names from :data:`PROPERTIES` and :data:`FREQ`. This is the default
        node order of :meth:`adjacency`; it says nothing about the causal order.
    edges : tuple of (str, str)
        Directed edges ``(parent, child)``; stored sorted by node position.
    kind : {"linear", "quadratic"}
        Equation family.
    coefficients : tuple
        One entry per edge, aligned with ``edges``: a float ``c`` (linear) or a pair
        ``(c2, c1)`` (quadratic).
    base_freq : float
        Intercept of the frequency equation (shared by all crystals).
    hybrid_bases : tuple of (str, float)
        The configured intercept of each controllable node with parents, sorted by name. Kept
        for fidelity with the released configs only: at run time every crystal replaces it by
        its own exogenous term.
    freq_parent : bool
        Whether frequency may have children (the FreqParent variant).

    Raises
    ------
    ValueError
        Unknown names, duplicate or self edges, a cycle, a frequency without parents, frequency
        children without ``freq_parent``, coefficients of the wrong shape, or hybrid bases that do
        not match the hybrid nodes.
    """

    properties: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    kind: str
    coefficients: tuple[Coefficient, ...]
    base_freq: float
    hybrid_bases: tuple[tuple[str, float], ...] = ()
    freq_parent: bool = False

    def __post_init__(self) -> None:
        props = tuple(self.properties)
        allowed = (*PROPERTIES, FREQ)
        for p in props:
            _check_name(p, allowed, "properties member")
        if len(set(props)) != len(props) or FREQ not in props or len(props) < 2:
            raise ValueError(f"properties must be distinct, include {FREQ!r} and one property at least, got {props}")
        kind = check_choice(self.kind, KINDS, "kind")
        edges = tuple((str(a), str(b)) for a, b in self.edges)
        for a, b in edges:
            _check_name(a, props, "edge parent")
            _check_name(b, props, "edge child")
            if a == b:
                raise ValueError(f"self-loop on {a!r}")
        if len({frozenset(e) for e in edges}) != len(edges):
            raise ValueError(f"edges repeat a pair of nodes: {edges}")
        if len(self.coefficients) != len(edges):
            raise ValueError(f"need one coefficient per edge ({len(edges)}), got {len(self.coefficients)}")
        coefficients = tuple(_check_coefficient(c, kind, f"coefficient of {e}") for c, e in zip(self.coefficients, edges))
        position = {p: i for i, p in enumerate(props)}
        ranked = sorted(zip(edges, coefficients), key=lambda ec: (position[ec[0][0]], position[ec[0][1]]))
        edges = tuple(e for e, _ in ranked)
        coefficients = tuple(c for _, c in ranked)
        object.__setattr__(self, "properties", props)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "coefficients", coefficients)
        object.__setattr__(self, "base_freq", check_real(self.base_freq, "base_freq"))
        object.__setattr__(self, "freq_parent", bool(self.freq_parent))
        if len(self._topo) < len(props):  # the causal order (cached: evaluation walks it) proves acyclicity
            raise ValueError(f"edges form a directed cycle: {edges}")
        if not self.freq_parents():
            raise ValueError(f"{FREQ} needs at least one parent")
        if self.children(FREQ) and not self.freq_parent:
            raise ValueError(f"{FREQ} has children {self.children(FREQ)} but freq_parent is False")
        bases = dict(self.hybrid_bases.items() if isinstance(self.hybrid_bases, Mapping) else self.hybrid_bases)
        if set(bases) != set(self.hybrids()):
            raise ValueError(f"hybrid_bases must name exactly the hybrid nodes {self.hybrids()}, got {sorted(bases)}")
        object.__setattr__(
            self, "hybrid_bases", tuple(sorted((k, check_real(v, f"hybrid base of {k}")) for k, v in bases.items()))
        )

    # -- structure ---------------------------------------------------------------------------

    @cached_property
    def _index(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.properties)}

    @property
    def n_nodes(self) -> int:
        """Number of nodes (frequency included)."""
        return len(self.properties)

    @cached_property
    def controllable(self) -> tuple[str, ...]:
        """Every non-frequency property, in :attr:`properties` order (the exogenous-term order)."""
        return tuple(p for p in self.properties if p != FREQ)

    def parents(self, node: str) -> tuple[str, ...]:
        """Parents of ``node`` in :attr:`properties` order."""
        _check_name(node, self.properties, "node")
        return tuple(a for a, b in self.edges if b == node)

    def children(self, node: str) -> tuple[str, ...]:
        """Children of ``node`` in :attr:`properties` order."""
        _check_name(node, self.properties, "node")
        return tuple(b for a, b in self.edges if a == node)

    def freq_parents(self) -> tuple[str, ...]:
        """Direct parents of the frequency."""
        return self.parents(FREQ)

    def roots(self) -> tuple[str, ...]:
        """Controllable nodes without parents (their value is their exogenous term)."""
        fed = {b for _, b in self.edges}
        return tuple(p for p in self.controllable if p not in fed)

    def hybrids(self) -> tuple[str, ...]:
        """Controllable nodes with parents (exogenous term plus parent contributions)."""
        fed = {b for _, b in self.edges}
        return tuple(p for p in self.controllable if p in fed)

    def true_roots(self) -> tuple[str, ...]:
        """Ancestors of the frequency without parents; off-path nodes are excluded."""
        anc = ancestors(self.adjacency(), self._index[FREQ])
        return tuple(p for i, p in enumerate(self.properties) if i in anc and not self.parents(p))

    def descendants(self, node: str) -> tuple[str, ...]:
        """Nodes with a directed path from ``node``, in :attr:`properties` order."""
        _check_name(node, self.properties, "node")
        out: set[str] = set()
        frontier = [node]
        while frontier:
            for child in self.children(frontier.pop()):
                if child not in out:
                    out.add(child)
                    frontier.append(child)
        return tuple(p for p in self.properties if p in out)

    def topological_order(self) -> tuple[str, ...]:
        """A causal order (ties broken by :attr:`properties` position, so it is deterministic)."""
        return tuple(self.properties[i] for i in self._topo)

    @cached_property
    def _topo(self) -> tuple[int, ...]:
        """Node indices in causal order; shorter than :attr:`properties` when the edges have a cycle
        (``__post_init__`` rejects that)."""
        index = {p: i for i, p in enumerate(self.properties)}
        return tuple(kahn_order(len(self.properties), [(index[a], index[b]) for a, b in self.edges]))

    def adjacency(self, order: Sequence[str] | None = None) -> np.ndarray:
        """The DAG as a d x d int8 matrix (``A[i, j] = 1`` for ``i -> j``) over ``order``.

        Raises
        ------
        ValueError
            If ``order`` is not a permutation of :attr:`properties`.
        """
        names = self.properties if order is None else tuple(order)
        if sorted(names) != sorted(self.properties):
            raise ValueError(f"order must be a permutation of {list(self.properties)}, got {list(names)}")
        pos = {p: i for i, p in enumerate(names)}
        a = np.zeros((len(names), len(names)), dtype=np.int8)
        for u, v in self.edges:
            a[pos[u], pos[v]] = 1
        return a

    def coefficient(self, parent: str, child: str) -> Coefficient:
        """Coefficient of the edge ``parent -> child`` (``c`` or ``(c2, c1)``)."""
        try:
            return self.coefficients[self.edges.index((parent, child))]
        except ValueError:
            raise ValueError(f"no edge {parent!r} -> {child!r}") from None

    # -- equations -----------------------------------------------------------------------------

    @cached_property
    def _node_terms(self) -> tuple[tuple[tuple[int, float, float], ...], ...]:
        """Per node index: its ``(parent index, linear weight, quadratic weight)`` terms, parents in
        :attr:`properties` order (the quadratic weight is 0.0 in the linear family)."""
        out: list[list[tuple[int, float, float]]] = [[] for _ in self.properties]
        for (a, b), c in zip(self.edges, self.coefficients):  # a float in the linear family, (quadratic, linear) else
            out[self._index[b]].append((self._index[a], c[1], c[0]) if isinstance(c, tuple) else (self._index[a], c, 0.0))
        return tuple(tuple(terms) for terms in out)

    @cached_property
    def _terms(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
        """:attr:`_node_terms` as arrays: parent indices, linear weights, quadratic weights."""
        return tuple(
            (np.array([i for i, _, _ in t], dtype=np.intp), np.array([c for _, c, _ in t], dtype=float),
             np.array([c for _, _, c in t], dtype=float))
            for t in self._node_terms
        )

    def _contribution(self, j: int, values: np.ndarray) -> np.ndarray:
        idx, lin, quad = self._terms[j]
        p = values[:, idx]
        return p @ lin + (p * p) @ quad

    @cached_property
    def _plan(self) -> tuple[tuple[int, int, tuple[tuple[int, float, float], ...]], ...]:
        """The equations as plain Python numbers, in causal order: per node its index, its exogenous
        column (-1 for the frequency) and ``(parent index, linear weight, quadratic weight)`` terms."""
        column = {p: i for i, p in enumerate(self.controllable)}
        return tuple((j, column.get(self.properties[j], -1), self._node_terms[j]) for j in self._topo)

    @staticmethod
    def _contribution_scalar(terms: tuple[tuple[int, float, float], ...], values: Sequence[float]) -> float:
        """One row of :meth:`_contribution` in the same arithmetic (linear dot product, then the
        quadratic one, each summed left to right), so both give bit-identical values."""
        linear = quadratic = 0.0
        for i, c, _ in terms:
            linear += values[i] * c
        for i, _, c in terms:
            x = values[i]
            quadratic += x * x * c
        return linear + quadratic

    def _evaluate_row(self, exogenous: Sequence[float], offsets: Mapping[int, float] | None = None) -> list[float]:
        """:meth:`evaluate_rows` for one validated row, in plain Python (numpy's per-call overhead
        dominates at a handful of nodes); bit-identical to the vectorised path."""
        values = [0.0] * len(self.properties)
        shift = offsets or {}
        for j, column, terms in self._plan:
            intercept = self.base_freq if column < 0 else exogenous[column]
            values[j] = _round2_scalar(intercept + self._contribution_scalar(terms, values) + shift.get(j, 0.0))
        return values

    def parent_contribution(self, node: str, values: Mapping[str, float]) -> float:
        """Sum of the parent terms of ``node`` given (rounded) node values, without intercept."""
        j = self._index[_check_name(node, self.properties, "node")]
        missing = [p for p in self.parents(node) if p not in values]
        if missing:
            raise ValueError(f"values lack the parents {missing} of {node!r}")
        row = [float(values[p]) if p in values else 0.0 for p in self.properties]
        return self._contribution_scalar(self._node_terms[j], row)

    def evaluate_rows(self, exogenous: np.ndarray, offsets: Mapping[str, float] | None = None) -> np.ndarray:
        """Node values for many crystals at once.

        Parameters
        ----------
        exogenous : (k, n - 1) array
            Exogenous terms, columns in :attr:`controllable` order.
        offsets : mapping, optional
            Additive disturbance per node, added after the node's equation and before rounding;
            descendants see the disturbed value (the hidden ``h``).

        Returns
        -------
        ndarray, shape (k, n)
            Values in :attr:`properties` order, each rounded to 2 decimals.
        """
        exo = np.asarray(exogenous, dtype=float)
        m = len(self.controllable)
        if exo.ndim != 2 or exo.shape[1] != m or not np.isfinite(exo).all():
            raise ValueError(f"exogenous must be a finite (k, {m}) array, got shape {exo.shape}")
        shift = {} if offsets is None else {_check_name(k, self.properties, "offset node"): float(v) for k, v in offsets.items()}
        if exo.shape[0] <= _SCALAR_ROWS:
            by_index = {self._index[k]: v for k, v in shift.items()}
            rows = [self._evaluate_row(row, by_index) for row in exo.tolist()]
            return np.array(rows, dtype=float).reshape(exo.shape[0], self.n_nodes)
        return self._evaluate_batch(exo, shift)

    def _evaluate_batch(self, exo: np.ndarray, shift: Mapping[str, float]) -> np.ndarray:
        """The vectorised evaluation of validated rows (node by node in causal order, all rows at once)."""
        column = {p: i for i, p in enumerate(self.controllable)}
        values = np.zeros((exo.shape[0], self.n_nodes))
        for j in self._topo:
            node = self.properties[j]
            intercept = self.base_freq if node == FREQ else exo[:, column[node]]
            values[:, j] = _round2(intercept + self._contribution(j, values) + shift.get(node, 0.0))
        return values

    def evaluate(self, exogenous: Mapping[str, float], offsets: Mapping[str, float] | None = None) -> dict[str, float]:
        """Node values of one crystal from its exogenous terms (see :meth:`evaluate_rows`).

        Raises
        ------
        ValueError
            If ``exogenous`` does not name exactly the controllable nodes with finite numbers.
        """
        row = _exogenous_row(self, exogenous).tolist()
        by_index = {} if offsets is None else {
            self._index[_check_name(k, self.properties, "offset node")]: float(v) for k, v in offsets.items()}
        return dict(zip(self.properties, self._evaluate_row(row, by_index)))

    def exogenous_from_values(self, values: Mapping[str, float]) -> dict[str, float]:
        """Invert :meth:`evaluate`: each controllable node's value minus its parent contribution.

        Used to continue from a displayed state (the Golden chain starts from record 0).
        """
        return {p: round(float(values[p]) - self.parent_contribution(p, values), 2) for p in self.controllable}

    # -- serialisation ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; :meth:`from_dict` inverts it exactly."""
        return {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "properties": list(self.properties),
            "edges": [list(e) for e in self.edges],
            "kind": self.kind,
            "coefficients": [list(c) if isinstance(c, tuple) else c for c in self.coefficients],
            "base_freq": self.base_freq,
            "hybrid_bases": dict(self.hybrid_bases),
            "freq_parent": self.freq_parent,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LabSCM:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            On a foreign format, another version or missing fields.
        """
        if data.get("format") != _FORMAT or data.get("version") != _FORMAT_VERSION:
            raise ValueError(f"not a {_FORMAT} v{_FORMAT_VERSION} record: {data.get('format')!r} v{data.get('version')!r}")
        try:
            return cls(
                properties=tuple(data["properties"]),
                edges=tuple(tuple(e) for e in data["edges"]),
                kind=data["kind"],
                coefficients=tuple(tuple(c) if isinstance(c, list) else c for c in data["coefficients"]),
                base_freq=data["base_freq"],
                hybrid_bases=tuple(dict(data["hybrid_bases"]).items()),
                freq_parent=data["freq_parent"],
            )
        except KeyError as err:
            raise ValueError(f"LabSCM record lacks field {err}") from None


def _check_coefficient(value: object, kind: str, name: str) -> Coefficient:
    if kind == "linear":
        c = check_real(value, name)
        if c == 0.0:
            raise ValueError(f"{name} must be non-zero (a zero coefficient is a missing edge)")
        return c
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise ValueError(f"{name} must be a (c2, c1) pair in the quadratic family, got {value!r}")
    return (check_real(value[0], f"{name} c2"), check_real(value[1], f"{name} c1"))


def _exogenous_row(scm: LabSCM, exogenous: Mapping[str, float]) -> np.ndarray:
    if not isinstance(exogenous, Mapping) or set(exogenous) != set(scm.controllable):
        got = sorted(exogenous) if isinstance(exogenous, Mapping) else exogenous
        raise ValueError(f"exogenous must map exactly the controllable nodes {list(scm.controllable)}, got {got}")
    return np.array([check_real(exogenous[p], f"exogenous[{p!r}]") for p in scm.controllable])
