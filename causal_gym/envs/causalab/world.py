"""CausaLab world model: the hidden crystal SCM, the three crystals and the property manipulator.

Reads top-down: what the hidden mechanism is (:class:`LabSCM`), how one is drawn
(:func:`sample_lab_scm`), what the crystals are (:class:`Crystal`, :func:`prior_records`), how the
manipulator reacts to shift interventions and the hidden disturbance (:class:`Manipulator`), the
offline Golden chain (:func:`golden_records`) and finally everything one episode needs
(:class:`Setting`, :func:`make_episode`). There is no Gymnasium code here: the env plays on top.

The mechanism (spec ``shared/specs/causalab.md``)
-------------------------------------------------
Nodes are ``n - 1`` crystal properties from :data:`PROPERTIES` plus the target :data:`FREQ`.
Every non-frequency property is controllable; frequency never is. Each edge ``p -> x`` adds a
term to ``x``: ``c * p`` (linear) or ``c2 * p**2 + c1 * p`` (quadratic). The intercept of the
frequency is ``base_freq``; the intercept of a controllable node is its *exogenous term*, which
differs between crystals (for a root it is the node's value). Every value is rounded to 2
decimals (``numpy.round``) before its children use it. Nothing is clamped.

Random streams
--------------
Every draw comes from a ``numpy.random.Generator`` passed in by the caller; :func:`make_episode`
derives one independent child of ``SeedSequence(seed)`` per component (see its docstring), so an
episode is a pure function of ``(seed, setting)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import as_generator, check_choice, check_count, check_real
from causal_gym.graphs import ancestors, imec_size, kahn_order

__all__ = [
    "PROPERTIES",
    "FREQ",
    "FREQ_LABEL",
    "KINDS",
    "Coefficient",
    "DECOY_READINGS",
    "MAX_TARGET",
    "HIDDEN_VALUES",
    "LabSCM",
    "sample_lab_graph",
    "sample_equations",
    "sample_lab_scm",
    "Record",
    "Crystal",
    "draw_exogenous",
    "prior_records",
    "HiddenConfig",
    "hidden_priority",
    "hidden_config",
    "InterventionResult",
    "Manipulator",
    "golden_records",
    "GOLDEN_LENGTH_RULES",
    "GOLDEN_ONE_PASS_SHARE",
    "GOLDEN_EMPTY_SHARE",
    "HiddenSpec",
    "Setting",
    "Episode",
    "make_episode",
    "episode_from_scm",
]

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

GOLDEN_BOOTSTRAP_RANGE = (15.0, 45.0)
"""Uniform range (2 decimals) of the exogenous terms of the Golden bootstrap records."""

GOLDEN_LENGTH_RULES = ("released", "fixed")
"""How :func:`golden_records` sets the chain length: as the released suites distribute it, or always
the cap."""

GOLDEN_ONE_PASS_SHARE = 0.3
"""On a complete graph, the share of released Golden chains that make one pass over the
controllable nodes (4-node suite: 3 of its 10 complete graphs); the rest make one pass and one
more intervention (7 of 10)."""

GOLDEN_EMPTY_SHARE: Mapping[int, float] = MappingProxyType({6: 14 / 50})
"""By node count, the share of released Golden records that hold no chain at all (6-node suite:
14 of 50, on graphs of every size; the 4-node suite has none)."""

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


# ---------------------------------------------------------------------------------------------
# the hidden mechanism
# ---------------------------------------------------------------------------------------------


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
        linear = self.kind == "linear"
        for (a, b), c in zip(self.edges, self.coefficients):
            out[self._index[b]].append((self._index[a], c, 0.0) if linear else (self._index[a], c[1], c[0]))
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


# ---------------------------------------------------------------------------------------------
# the sampler
# ---------------------------------------------------------------------------------------------


def _edge_bounds(n_nodes: int) -> tuple[int, int]:
    return n_nodes - 1, min(2 * n_nodes, n_nodes * (n_nodes - 1) // 2)


def sample_lab_graph(
    rng: np.random.Generator | int, n_nodes: int, freq_parent: bool = False
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Draw the node names and edges of a CausaLab graph.

    The generative story reproduces the statistics of the 950 released configs (see
    ``tests/test_causalab_world.py`` for the comparison): ``n - 1`` properties uniformly without
    replacement from the pool; an edge count ``E ~ U{n-1 .. min(2n, n(n-1)/2)}``; a uniformly
    random causal order of the properties with the frequency last (FreqParent: at a uniform
    position other than first); ``E`` of the forward pairs uniformly at random. Order and edges
    are redrawn, with ``E`` kept, until the frequency has a parent. Isolated and off-path
    nodes are allowed, as in the original.

    Returns
    -------
    properties : tuple of str
        Controllable names sorted alphabetically, then :data:`FREQ`.
    edges : tuple of (str, str)
    """
    rng = as_generator(rng)
    n = check_count(n_nodes, "n_nodes", minimum=2)
    if n > len(PROPERTIES) + 1:
        raise ValueError(f"n_nodes must be <= {len(PROPERTIES) + 1} (pool of {len(PROPERTIES)} properties), got {n}")
    # choosing indices draws exactly what choosing from the list of names would, without the string array
    names = [_POOL[k] for k in rng.choice(len(_POOL), size=n - 1, replace=False).tolist()]
    low, high = _edge_bounds(n)
    n_edges = int(rng.integers(low, high + 1))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    while True:
        order = [names[k] for k in rng.permutation(n - 1)]
        order.insert(int(rng.integers(1, n)) if freq_parent else n - 1, FREQ)
        chosen = [pairs[k] for k in rng.choice(len(pairs), size=n_edges, replace=False)]
        edges = tuple((order[i], order[j]) for i, j in chosen)
        if any(b == FREQ for _, b in edges):
            return (*sorted(names), FREQ), edges


def sample_equations(
    rng: np.random.Generator | int,
    properties: Sequence[str],
    edges: Sequence[tuple[str, str]],
    kind: str = "linear",
    freq_parent: bool = False,
) -> LabSCM:
    """Draw coefficients and intercepts for a fixed graph.

    Linear: coefficients uniform on :data:`LINEAR_COEFFICIENTS`, ``base_freq`` and hybrid bases
    integers in :data:`BASE_RANGE`. Quadratic (the paper's hard-quadratic family): per edge
    ``c2`` uniform on :data:`QUADRATIC_CURVATURES`, an axis ``a ~ U`` :data:`AXIS_RANGE` and
    ``c1 = -2 c2 a`` (6 decimals); a node's base is a floor from :data:`QUADRATIC_FLOOR` plus
    ``sum c2 a**2`` over its in-edges. Drawing the graph and the equations from separate streams
    lets the linear and quadratic suites share topologies, as the released ones do.
    """
    rng = as_generator(rng)
    kind = check_choice(kind, KINDS, "kind")
    edges = tuple((str(a), str(b)) for a, b in edges)
    hybrids = sorted({b for _, b in edges if b != FREQ})
    offset = dict.fromkeys((FREQ, *hybrids), 0.0)
    if kind == "linear":
        coefficients: tuple[Coefficient, ...] = tuple(float(c) for c in rng.choice(LINEAR_COEFFICIENTS, size=len(edges)))
        draws = rng.integers(BASE_RANGE[0], BASE_RANGE[1] + 1, size=len(hybrids) + 1).astype(float)
    else:
        c2 = rng.choice(QUADRATIC_CURVATURES, size=len(edges))
        axis = np.round(rng.uniform(*AXIS_RANGE, size=len(edges)), 6)
        coefficients = tuple((float(a), float(round(-2.0 * a * x, 6))) for a, x in zip(c2, axis))
        for (_, child), a, x in zip(edges, c2, axis):
            offset[child] += float(a * x * x)
        floors = np.array([QUADRATIC_FLOOR[FREQ]] + [QUADRATIC_FLOOR["hybrid"]] * len(hybrids))
        draws = rng.uniform(floors[:, 0], floors[:, 1])
    bases = {node: round(float(d) + offset[node], 6) for node, d in zip([FREQ, *hybrids], draws)}
    base_freq = bases.pop(FREQ)
    return LabSCM(tuple(properties), edges, kind, coefficients, base_freq, tuple(bases.items()), freq_parent)


def sample_lab_scm(
    rng: np.random.Generator | int, n_nodes: int, kind: str = "linear", freq_parent: bool = False
) -> LabSCM:
    """Draw a CausaLab SCM: :func:`sample_lab_graph` then :func:`sample_equations` on one stream.

    Reachability of the reactor target (<= :data:`MAX_TARGET`) depends on the reactor's draw, so
    it is enforced by :func:`make_episode`, which redraws the SCM and the reactor together.

    Examples
    --------
    >>> scm = sample_lab_scm(0, 4)
    >>> scm.n_nodes, scm.kind
    (4, 'linear')
    """
    rng = as_generator(rng)
    properties, edges = sample_lab_graph(rng, n_nodes, freq_parent)
    return sample_equations(rng, properties, edges, kind, freq_parent)


# ---------------------------------------------------------------------------------------------
# crystals and records
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One measurement of a crystal: every node value (frequency included).

    ``intervention`` is ``(target, requested value)`` for a Golden chain record, None for an
    observation.
    """

    values: Mapping[str, float]
    intervention: tuple[str, float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType({k: float(v) for k, v in self.values.items()}))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (``intervention`` as ``{"target": ..., "value": ...}`` or None)."""
        out: dict[str, Any] = {"values": dict(self.values), "intervention": None}
        if self.intervention is not None:
            out["intervention"] = {"target": self.intervention[0], "value": self.intervention[1]}
        return out


@dataclass(frozen=True)
class Crystal:
    """A crystal: its exogenous terms and the node values they give under the SCM."""

    exogenous: Mapping[str, float]
    values: Mapping[str, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "exogenous", MappingProxyType(dict(self.exogenous)))
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @classmethod
    def from_exogenous(cls, scm: LabSCM, exogenous: Mapping[str, float]) -> Crystal:
        """Evaluate ``scm`` on ``exogenous``."""
        return cls({p: float(exogenous[p]) for p in scm.controllable}, scm.evaluate(exogenous))

    @property
    def frequency(self) -> float:
        """The crystal's resonance frequency (the reactor's target)."""
        return self.values[FREQ]

    @property
    def visible(self) -> dict[str, float]:
        """The non-frequency readings (what the reactor shows)."""
        return {k: v for k, v in self.values.items() if k != FREQ}


def draw_exogenous(scm: LabSCM, rng: np.random.Generator | int, k: int = 1) -> np.ndarray:
    """``(k, n - 1)`` integer exogenous terms uniform on ``0 .. 100`` (columns: ``scm.controllable``).

    Draws are row-major, so the first rows do not depend on ``k``.
    """
    rng = as_generator(rng)
    k = check_count(k, "k", minimum=0)
    return rng.integers(0, EXOGENOUS_HIGH + 1, size=(k, len(scm.controllable))).astype(float)


def _row_dict(scm: LabSCM, row: np.ndarray) -> dict[str, float]:
    return {p: float(v) for p, v in zip(scm.controllable, row)}


def prior_records(scm: LabSCM, rng: np.random.Generator | int, k: int) -> tuple[Record, ...]:
    """``k`` observational records: fresh exogenous terms per record, frequency included."""
    exo = draw_exogenous(scm, rng, k)
    values = scm.evaluate_rows(exo)
    return tuple(Record(dict(zip(scm.properties, row.tolist()))) for row in values)


# ---------------------------------------------------------------------------------------------
# hidden disturbance
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HiddenConfig:
    """The hidden disturbance of one episode: ``h`` is added (times ``edge_weight``) to ``affected``.

    ``h`` is 0 until the first intervention and redrawn uniformly from ``values`` after each one.
    It changes only what the manipulator displays.
    """

    affected: tuple[str, ...]
    values: tuple[float, ...] = HIDDEN_VALUES
    edge_weight: float = 1.0

    def __post_init__(self) -> None:
        affected = tuple(self.affected)
        if not affected or len(set(affected)) != len(affected):
            raise ValueError(f"affected must be a non-empty list of distinct nodes, got {affected}")
        values = tuple(check_real(v, "hidden value") for v in self.values)
        if not values:
            raise ValueError("the hidden value set is empty")
        object.__setattr__(self, "affected", affected)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "edge_weight", check_real(self.edge_weight, "edge_weight"))

    def offsets(self, h: float) -> dict[str, float]:
        """Additive shift of every affected node for hidden value ``h``."""
        return {node: self.edge_weight * h for node in self.affected}


def hidden_priority(scm: LabSCM, rng: np.random.Generator | int) -> tuple[str, ...]:
    """Properties in the order the hidden variable claims them: frequency's parents first
    (shuffled), then the other properties (shuffled). Prefixes give nested affected sets."""
    rng = as_generator(rng)
    first = [scm.freq_parents()[k] for k in rng.permutation(len(scm.freq_parents()))]
    rest = [p for p in scm.controllable if p not in first]
    return (*first, *(rest[k] for k in rng.permutation(len(rest))))


def hidden_config(
    scm: LabSCM,
    rng: np.random.Generator | int,
    count: int,
    values: Sequence[float] = HIDDEN_VALUES,
    freqnode: bool = False,
    edge_weight: float = 1.0,
) -> HiddenConfig:
    """The first ``count`` nodes of :func:`hidden_priority`; with ``freqnode`` the frequency plus
    the first ``count - 1`` (the released freqnode_n1..n3 variants)."""
    count = check_count(count, "count", minimum=1)
    if count > len(scm.controllable) + int(freqnode):
        raise ValueError(f"count={count} exceeds the {len(scm.controllable)} properties of the graph")
    order = hidden_priority(scm, rng)
    affected = (FREQ, *order[: count - 1]) if freqnode else order[:count]
    return HiddenConfig(affected, tuple(values), edge_weight)


# ---------------------------------------------------------------------------------------------
# the property manipulator
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InterventionResult:
    """What one manipulator call did.

    Attributes
    ----------
    target : str
    requested : float
    values : mapping
        Every displayed node value after the call (hidden disturbance included).
    changed : tuple of str
        Nodes whose displayed value moved by more than 1e-6 (what the agent can see move).
    cost : int
        Intervention budget units used (always 1, even when the value repeats).
    chains : tuple of tuple of str, or None
        Oracle mode only: maximal paths to the frequency through nodes whose undisturbed value
        changed (the paper's Oracle control).
    """

    target: str
    requested: float
    values: Mapping[str, float]
    changed: tuple[str, ...]
    cost: int = 1
    chains: tuple[tuple[str, ...], ...] | None = None


class Manipulator:
    """The manipulator crystal under budgeted shift interventions.

    Setting controllable ``X`` to ``v``: a root's exogenous term becomes ``v``; a hybrid's becomes
    ``round(v - c, 2)`` with ``c`` its current undisturbed parent contribution, so ``X`` shows
    ``v`` now and keeps following its parents later. Exogenous terms persist, so interventions
    accumulate; every descendant is recomputed. With a :class:`HiddenConfig`, ``h`` (0 at the
    start) is redrawn after each intervention and the displayed values include it; the stored
    exogenous terms never do. Budget accounting is the env's: each call reports ``cost=1``.

    Parameters
    ----------
    scm : LabSCM
    exogenous : mapping
        Starting exogenous terms of the controllable nodes.
    hidden : HiddenConfig, optional
    rng : seed or Generator, optional
        Stream of the ``h`` draws; required with ``hidden`` and only then.
    oracle_chains : bool
        Also report the changed causal chains (:attr:`InterventionResult.chains`).
    """

    def __init__(
        self,
        scm: LabSCM,
        exogenous: Mapping[str, float],
        hidden: HiddenConfig | None = None,
        rng: np.random.Generator | int | np.random.SeedSequence | None = None,
        oracle_chains: bool = False,
    ) -> None:
        if (hidden is None) != (rng is None):
            raise ValueError("rng is the stream of the hidden draws: pass both hidden and rng, or neither")
        for node in () if hidden is None else hidden.affected:
            _check_name(node, scm.properties, "hidden affected node")
        self._scm = scm
        self._exogenous = _exogenous_row(scm, exogenous)
        self._hidden = hidden
        self._rng = None if rng is None else as_generator(rng)
        self._oracle = bool(oracle_chains)
        self._h = 0.0
        self._calls = 0
        self._true = scm.evaluate_rows(self._exogenous[None, :])[0]
        self._shown = self._display()

    def _display(self) -> np.ndarray:
        if self._hidden is None or self._h == 0.0:
            return self._true
        return self._scm.evaluate_rows(self._exogenous[None, :], self._hidden.offsets(self._h))[0]

    def _as_dict(self, row: np.ndarray) -> dict[str, float]:
        return {p: float(v) for p, v in zip(self._scm.properties, row)}

    @property
    def scm(self) -> LabSCM:
        return self._scm

    @property
    def values(self) -> dict[str, float]:
        """Displayed values (what the agent sees; free to read before any intervention)."""
        return self._as_dict(self._shown)

    @property
    def true_values(self) -> dict[str, float]:
        """Undisturbed values (ground truth; equal to :attr:`values` without hidden disturbance)."""
        return self._as_dict(self._true)

    @property
    def exogenous(self) -> dict[str, float]:
        """Current exogenous terms."""
        return _row_dict(self._scm, self._exogenous)

    @property
    def hidden_value(self) -> float:
        """Current hidden ``h`` (ground truth)."""
        return self._h

    @property
    def n_interventions(self) -> int:
        """Number of :meth:`intervene` calls so far."""
        return self._calls

    def intervene(self, node: str, value: float) -> InterventionResult:
        """Set controllable ``node`` to ``value`` (shift semantics) and return the new display.

        Raises
        ------
        ValueError
            If ``node`` is not controllable or ``value`` is not a finite number (the env turns
            these into invalid-action messages that cost nothing).
        """
        _check_name(node, self._scm.controllable, "intervention target")
        v = check_real(value, "value")
        hybrid = bool(self._scm.parents(node))
        # a hybrid keeps its (undisturbed) parent contribution: only the intercept moves
        term = round(v - self._scm.parent_contribution(node, self.true_values), 2) if hybrid else v
        self._exogenous[self._scm.controllable.index(node)] = term
        before_true, before_shown = self._true, self._shown
        self._true = self._scm.evaluate_rows(self._exogenous[None, :])[0]
        if self._hidden is not None:
            self._h = float(self._rng.choice(self._hidden.values))  # type: ignore[union-attr]
        self._shown = self._display()
        self._calls += 1
        moved = np.abs(self._shown - before_shown) > CHANGE_TOLERANCE
        chains = None
        if self._oracle:
            changed_true = {p for p, m in zip(self._scm.properties, np.abs(self._true - before_true) > CHANGE_TOLERANCE) if m}
            chains = _changed_chains(self._scm, changed_true)
        return InterventionResult(
            node,
            v,
            MappingProxyType(self.values),
            tuple(p for p, m in zip(self._scm.properties, moved) if m),
            1,
            chains,
        )


def _changed_chains(scm: LabSCM, changed: set[str]) -> tuple[tuple[str, ...], ...]:
    """Maximal directed paths ending at the frequency inside the changed nodes."""
    if FREQ not in changed:
        return ()
    starts = [p for p in scm.properties if p in changed and not any(q in changed for q in scm.parents(p))]

    def walk(path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        if path[-1] == FREQ:
            yield path
            return
        for child in scm.children(path[-1]):
            if child in changed:
                yield from walk((*path, child))

    return tuple(sorted(chain for s in starts for chain in walk((s,))))


# ---------------------------------------------------------------------------------------------
# the Golden variant
# ---------------------------------------------------------------------------------------------


def golden_records(
    scm: LabSCM,
    rng: np.random.Generator | int,
    n_bootstrap: int = 2,
    max_length: int = 6,
    stop_at_singleton: bool = False,
    lengths: str = "released",
) -> tuple[tuple[Record, ...], tuple[Record, ...]]:
    """Offline low-MEC intervention chain (the Golden control).

    ``n_bootstrap`` observational records with exogenous terms ``U(15, 45)`` (2 decimals), then a
    chain of shift interventions starting from record 0's state, cycling through the controllable
    nodes in alphabetical order with integer targets ``0 .. 100``.

    The original's stopping rule is unpublished, so the length follows the released suites
    (``lengths="released"``, the default), capped by ``max_length``: 6 interventions on a graph
    that is not complete; on a complete graph one pass over the controllable nodes (share
    :data:`GOLDEN_ONE_PASS_SHARE`) or one pass and one more — the 4-node suite has 40 chains of 6,
    7 of 4 and 3 of 3, all the short ones on its complete graphs; and, by node count, a share
    :data:`GOLDEN_EMPTY_SHARE` of graphs gets no chain at all (the 6-node suite has 36 chains of 6
    and 14 empty ones). The draws come after the chain's, so a shorter chain is a prefix of the
    full one. ``lengths="fixed"`` always makes ``max_length`` interventions. With
    ``stop_at_singleton=True`` the chain also stops as soon as the observational regime plus the
    single-node targets used so far make the interventional MEC of the true DAG a singleton
    (:func:`causal_gym.graphs.imec_size`) — a minimal chain, measured at 0–3 interventions on
    4-node graphs, so far fewer records than the released chains.

    Returns
    -------
    bootstrap, chain : tuple of Record
    """
    rng = as_generator(rng)
    n_bootstrap = check_count(n_bootstrap, "n_bootstrap", minimum=1)
    max_length = check_count(max_length, "max_length", minimum=0)
    check_choice(lengths, GOLDEN_LENGTH_RULES, "lengths")
    exo = np.round(rng.uniform(*GOLDEN_BOOTSTRAP_RANGE, size=(n_bootstrap, len(scm.controllable))), 2)
    bootstrap = tuple(Record(dict(zip(scm.properties, row.tolist()))) for row in scm.evaluate_rows(exo))
    dag = scm.adjacency()
    index = {p: i for i, p in enumerate(scm.properties)}
    cycle = sorted(scm.controllable)
    manipulator = Manipulator(scm, _row_dict(scm, exo[0]))
    chain: list[Record] = []
    targets: list[tuple[int]] = []
    while len(chain) < max_length and not (stop_at_singleton and imec_size(dag, targets) == 1):
        node = cycle[len(chain) % len(cycle)]
        value = float(rng.integers(0, EXOGENOUS_HIGH + 1))
        result = manipulator.intervene(node, value)
        chain.append(Record(result.values, (node, value)))
        targets.append((index[node],))
    if lengths == "released":
        empty, one_pass = rng.random(2)
        n = scm.n_nodes
        if empty < GOLDEN_EMPTY_SHARE.get(n, 0.0):
            chain = []
        elif len(scm.edges) == n * (n - 1) // 2:
            chain = chain[: len(cycle) + (one_pass >= GOLDEN_ONE_PASS_SHARE)]
    return bootstrap, tuple(chain)


# ---------------------------------------------------------------------------------------------
# settings and episodes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HiddenSpec:
    """How a setting draws its hidden disturbance (see :func:`hidden_config`)."""

    count: int
    values: tuple[float, ...] = HIDDEN_VALUES
    freqnode: bool = False
    edge_weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", check_count(self.count, "hidden count", minimum=1))
        object.__setattr__(self, "values", tuple(check_real(v, "hidden value") for v in self.values))
        object.__setattr__(self, "freqnode", bool(self.freqnode))
        object.__setattr__(self, "edge_weight", check_real(self.edge_weight, "edge_weight"))


@dataclass(frozen=True)
class Setting:
    """One CausaLab task configuration.

    Attributes
    ----------
    n_nodes : int
        Nodes including the frequency (3-7 in the paper).
    kind : {"linear", "quadratic"}
    hidden : HiddenSpec or None
    freq_parent : bool
        Frequency may have children.
    golden : bool
        Offline Golden chain instead of online interventions (budget defaults to 0).
    n_prior_records : int
        Observational records given up front (Golden: bootstrap records).
    intervention_budget : int or None
        None means ``4 (n - 1)``, or 0 with ``golden``.
    decoys : bool
        Show :data:`DECOY_READINGS` for pool properties outside the graph (on by default: part
        of the original task's difficulty).
    max_target : float
        Reactor targets above this are unreachable; such episodes are redrawn.
    golden_max_length : int
        Cap of the Golden chain.
    """

    n_nodes: int
    kind: str = "linear"
    hidden: HiddenSpec | None = None
    freq_parent: bool = False
    golden: bool = False
    n_prior_records: int = 2
    intervention_budget: int | None = None
    decoys: bool = True
    max_target: float = MAX_TARGET
    golden_max_length: int = 6

    def __post_init__(self) -> None:
        n = check_count(self.n_nodes, "n_nodes", minimum=2)
        if n > len(PROPERTIES) + 1:
            raise ValueError(f"n_nodes must be <= {len(PROPERTIES) + 1}, got {n}")
        check_choice(self.kind, KINDS, "kind")
        if self.hidden is not None and not isinstance(self.hidden, HiddenSpec):
            raise ValueError(f"hidden must be a HiddenSpec or None, got {self.hidden!r}")
        if self.hidden is not None and self.hidden.count > n - 1 + int(self.hidden.freqnode):
            raise ValueError(f"hidden count {self.hidden.count} exceeds the {n - 1} properties")
        budget = self.intervention_budget
        if budget is None:
            budget = 0 if self.golden else 4 * (n - 1)
        object.__setattr__(self, "intervention_budget", check_count(budget, "intervention_budget", minimum=0))
        object.__setattr__(self, "n_prior_records", check_count(self.n_prior_records, "n_prior_records", minimum=0))
        if self.golden and self.n_prior_records < 1:
            raise ValueError("the Golden chain starts from a bootstrap record: n_prior_records must be >= 1")
        object.__setattr__(self, "max_target", check_real(self.max_target, "max_target", minimum=0.0, strict=True))
        object.__setattr__(self, "golden_max_length", check_count(self.golden_max_length, "golden_max_length", minimum=0))


@dataclass(frozen=True, eq=False)
class Episode:
    """Everything an env needs for one episode. All of it except the visible parts is ground truth.

    Attributes
    ----------
    setting : Setting
    seed : tuple of int
        SeedSequence entropy the episode was derived from.
    scm : LabSCM
    prior_records : tuple of Record
        Observational records given up front (Golden: the bootstrap records).
    manipulator_start : mapping
        Exogenous terms of the manipulator crystal at the start.
    reactor : Crystal
        The reactor; ``reactor.visible`` is shown, ``reactor.frequency`` is the target.
    hidden : HiddenConfig or None
    golden_chain : tuple of Record
        Golden intervention records (empty unless ``setting.golden``).
    decoys : mapping
        Decoy readings shown with the reactor (empty when disabled).
    hidden_stream : SeedSequence
        Stream of the hidden ``h`` draws (each :meth:`manipulator` restarts it).
    redraws : int
        SCM/reactor pairs rejected because the target exceeded ``setting.max_target``.
    """

    setting: Setting
    seed: tuple[int, ...]
    scm: LabSCM
    prior_records: tuple[Record, ...]
    manipulator_start: Mapping[str, float]
    reactor: Crystal
    hidden: HiddenConfig | None
    golden_chain: tuple[Record, ...]
    decoys: Mapping[str, float]
    hidden_stream: np.random.SeedSequence = field(repr=False)
    redraws: int = 0

    @property
    def target(self) -> float:
        """The reactor's frequency (what the agent must predict)."""
        return self.reactor.frequency

    def manipulator(self, oracle_chains: bool = False) -> Manipulator:
        """A fresh manipulator at the start state; its ``h`` draws restart from the episode's stream."""
        rng = None if self.hidden is None else np.random.default_rng(self.hidden_stream)
        return Manipulator(self.scm, self.manipulator_start, self.hidden, rng, oracle_chains)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (truth included: for the final info and run stores only)."""
        return {
            "setting": to_jsonable(self.setting),
            "seed": list(self.seed),
            "scm": self.scm.to_dict(),
            "prior_records": [r.to_dict() for r in self.prior_records],
            "manipulator_start": dict(self.manipulator_start),
            "reactor": {"exogenous": dict(self.reactor.exogenous), "values": dict(self.reactor.values)},
            "hidden": to_jsonable(self.hidden),
            "golden_chain": [r.to_dict() for r in self.golden_chain],
            "decoys": dict(self.decoys),
            "redraws": self.redraws,
        }


_STREAMS = ("graph", "equations", "records", "manipulator", "reactor", "hidden_targets", "hidden_draws", "golden")
_MAX_REDRAWS = 1000


def _entropy(seed: int | Sequence[int] | np.random.SeedSequence) -> tuple[int, ...]:
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
        seed = entropy if isinstance(entropy, Sequence) else [entropy]
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        seed = [seed]
    if isinstance(seed, (str, bytes)) or not isinstance(seed, Sequence) or not seed:
        raise ValueError(f"seed must be a non-negative int or a sequence of them, got {seed!r}")
    return tuple(check_count(s, "seed", minimum=0) for s in seed)  # type: ignore[misc]


class _Streams:
    """The children of ``SeedSequence(entropy).spawn(len(_STREAMS))``, by name, each built when asked for.

    A spawned child is ``SeedSequence(entropy, spawn_key=(k,))``; building only the ones an episode
    uses, from the entropy's 32-bit words (how numpy reads a sequence of ints) converted once,
    gives the same streams for a fraction of the cost (``tests/test_causalab_world.py`` compares).
    """

    def __init__(self, entropy: tuple[int, ...]) -> None:
        words: list[int] = []
        for s in entropy:  # numpy's little-endian 32-bit words of each int ([0] for a zero)
            words.append(s & 0xFFFFFFFF)
            s >>= 32
            while s:
                words.append(s & 0xFFFFFFFF)
                s >>= 32
        self._words = np.array(words, dtype=np.uint32)

    def __getitem__(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self._words, spawn_key=(_STREAMS.index(name),))


def make_episode(seed: int | Sequence[int] | np.random.SeedSequence, setting: Setting) -> Episode:
    """Generate one episode, fully determined by ``(seed, setting)``.

    ``SeedSequence(seed)`` spawns one child per component, in this order: graph, equations,
    prior records, manipulator, reactor, hidden targets, hidden draws, Golden chain. Settings
    that share ``n_nodes`` and ``freq_parent`` therefore share graphs under the same seed (the
    hidden, Golden and scaling variants of a suite use the base graphs; the quadratic one the
    same topologies), and the same records and crystals. If the reactor's frequency exceeds
    ``setting.max_target`` the SCM and the reactor are redrawn from their streams (the original
    kept such unreachable episodes, 2-11% at 5-7 nodes); ``Episode.redraws`` counts the rejections.

    Examples
    --------
    >>> ep = make_episode(7, Setting(n_nodes=4))
    >>> ep.setting.intervention_budget, len(ep.prior_records)
    (12, 2)
    """
    if not isinstance(setting, Setting):
        raise ValueError(f"setting must be a Setting, got {setting!r}")
    entropy = _entropy(seed)
    streams = _Streams(entropy)
    graph_rng = np.random.default_rng(streams["graph"])
    equation_rng = np.random.default_rng(streams["equations"])
    reactor_rng = np.random.default_rng(streams["reactor"])
    for redraws in range(_MAX_REDRAWS):
        properties, edges = sample_lab_graph(graph_rng, setting.n_nodes, setting.freq_parent)
        scm = sample_equations(equation_rng, properties, edges, setting.kind, setting.freq_parent)
        reactor = Crystal.from_exogenous(scm, _row_dict(scm, draw_exogenous(scm, reactor_rng)[0]))
        if reactor.frequency <= setting.max_target:
            break
    else:
        raise RuntimeError(f"no reachable episode in {_MAX_REDRAWS} draws; is max_target={setting.max_target} too low?")
    hidden = None
    if setting.hidden is not None:
        spec = setting.hidden
        hidden = hidden_config(scm, streams["hidden_targets"], spec.count, spec.values, spec.freqnode, spec.edge_weight)
    return _assemble(entropy, streams, setting, scm, reactor, hidden, redraws=redraws)


def episode_from_scm(
    seed: int | Sequence[int] | np.random.SeedSequence,
    setting: Setting,
    scm: LabSCM,
    *,
    hidden: HiddenConfig | None = None,
    prior: tuple[Record, ...] | None = None,
    golden_chain: tuple[Record, ...] | None = None,
    manipulator_exogenous: Mapping[str, float] | None = None,
    reactor_exogenous: Mapping[str, float] | None = None,
) -> Episode:
    """An episode on a given SCM (e.g. a released config), drawing whatever is not supplied.

    Draws use the same streams as :func:`make_episode`. Nothing is redrawn for reachability: a
    fixed SCM is played as given.

    Raises
    ------
    ValueError
        If ``setting`` disagrees with ``scm`` (node count, kind, freq_parent) or with the given
        hidden configuration.
    """
    if not isinstance(setting, Setting) or not isinstance(scm, LabSCM):
        raise ValueError("setting must be a Setting and scm a LabSCM")
    if (setting.n_nodes, setting.kind, setting.freq_parent) != (scm.n_nodes, scm.kind, scm.freq_parent):
        raise ValueError(
            f"setting (n_nodes={setting.n_nodes}, kind={setting.kind!r}, freq_parent={setting.freq_parent}) does not "
            f"match the SCM ({scm.n_nodes}, {scm.kind!r}, {scm.freq_parent})"
        )
    entropy = _entropy(seed)
    streams = _Streams(entropy)
    if reactor_exogenous is None:
        reactor_exogenous = _row_dict(scm, draw_exogenous(scm, streams["reactor"])[0])
    reactor = Crystal.from_exogenous(scm, reactor_exogenous)
    if hidden is None and setting.hidden is not None:
        spec = setting.hidden
        hidden = hidden_config(scm, streams["hidden_targets"], spec.count, spec.values, spec.freqnode, spec.edge_weight)
    return _assemble(
        entropy, streams, setting, scm, reactor, hidden, prior=prior, golden_chain=golden_chain,
        manipulator_exogenous=manipulator_exogenous,
    )


def _assemble(
    entropy: tuple[int, ...],
    streams: _Streams,
    setting: Setting,
    scm: LabSCM,
    reactor: Crystal,
    hidden: HiddenConfig | None,
    *,
    redraws: int = 0,
    prior: tuple[Record, ...] | None = None,
    golden_chain: tuple[Record, ...] | None = None,
    manipulator_exogenous: Mapping[str, float] | None = None,
) -> Episode:
    chain: tuple[Record, ...] = ()
    if setting.golden and (prior is None or golden_chain is None):
        prior, chain = golden_records(scm, streams["golden"], setting.n_prior_records, setting.golden_max_length)
    elif golden_chain is not None:
        chain = golden_chain
    if prior is None:
        prior = prior_records(scm, streams["records"], setting.n_prior_records)
    if manipulator_exogenous is None:
        manipulator_exogenous = _row_dict(scm, draw_exogenous(scm, streams["manipulator"])[0])
    manipulator_exogenous = _row_dict(scm, _exogenous_row(scm, manipulator_exogenous))
    decoys = {p: v for p, v in DECOY_READINGS.items() if p not in scm.properties} if setting.decoys else {}
    return Episode(
        setting=setting,
        seed=entropy,
        scm=scm,
        prior_records=tuple(prior),
        manipulator_start=MappingProxyType(manipulator_exogenous),
        reactor=reactor,
        hidden=hidden,
        golden_chain=tuple(chain),
        decoys=MappingProxyType(decoys),
        redraws=redraws,
        hidden_stream=streams["hidden_draws"],
    )
