"""CausalArena's ten synthetic graph families (Appendix A.1, "Graph structure").

Every family builds its DAG over *causal positions* ``0 .. d-1`` (edges only point from a lower
to a higher position, so the result is acyclic by construction) and then gives the positions to
node labels by a uniformly random permutation, as :mod:`causal_gym.scm.graph_priors` does: no
node index says anything about the causal order.

Density. ``rho = E / (d (d - 1) / 2)``, the share of the ``d (d - 1) / 2`` node pairs that carry
an edge (the paper does not define it; with this reading, the nSHD and SHD of Table 7 are
consistent with edge counts in the listed ranges, thinned at d = 100 by the in-degree cap). A graph draws ``rho`` uniformly from its
family's range (:data:`DENSITY_RANGES`) and aims at ``m = round(rho d (d - 1) / 2)`` edges,
raised to the validity minimum ``ceil(0.8 d)`` and lowered to what the in-degree cap and the
family's structure allow. At small ``d`` the minimum, and at ``d = 100`` the cap, can therefore
move the realised density outside the listed range (e.g. ``ceil(0.8 * 10) / 45 = 0.18`` for a
chain at ``d = 10``).

In-degree cap (A.1, "Validity filters"): drawn uniformly from {none, 4, 5} for ``d <= 20``,
{4, 5, 6} for ``20 < d <= 50`` and {5, 6, 8} above.

==========================  ===========  ==================================================
family                      rho range    construction (choices where the paper is silent)
==========================  ===========  ==================================================
``erdos_renyi``             0.05-0.25    ``m`` edges uniformly among the forward pairs
``scale_free``              0.04-0.22    preferential-attachment skeleton (each arriving node
                                         attaches to earlier arrivals with probability
                                         proportional to degree + 1, ``m`` attachments in
                                         total, at least one each), oriented by an
                                         independent uniformly random causal order
``chain``                   0.03-0.16    a directed path through all positions plus
                                         ``m - (d - 1)`` skip edges, a skip over ``g``
                                         positions drawn with weight ``g ** -2``
``tree``                    (see note)   uniform random recursive tree: position ``b`` gets
                                         one parent uniformly among ``0 .. b-1``; ``d - 1``
                                         edges, in-degree <= 1 (an out-branching)
``layered``                 0.04-0.20    ``L ~ U{3 .. max(3, round(sqrt d))}`` balanced
                                         layers; edges from any layer to any later one
``bipartite_layered``       0.04-0.20    ``L ~ U{2 .. min(4, d // 2)}`` balanced layers;
                                         edges only between consecutive layers
``small_world``             0.04-0.20    ring lattice over the positions: ``m - s`` local
                                         edges at ring distance ``c <= K`` (weight ``1 / c``,
                                         ``K = ceil(m / d) + 1``) and ``s = round(beta m)``
                                         shortcuts, ``beta ~ U[0.05, 0.3]``; every edge
                                         oriented towards the higher position
``block_sparse_layered``    0.04-0.20    layers as ``layered`` crossed with
                                         ``B ~ U{2 .. max(2, d // 10)}`` balanced random
                                         blocks; a share ``U[0.05, 0.15]`` of the edges
                                         crosses blocks, the rest stay inside one
``dense_local_module``      0.06-0.24    contiguous modules of ``U{4 .. 8}`` positions; a
                                         share ``U[0.7, 0.9]`` of the edges (up to complete
                                         modules) inside modules, the rest across
``collider_rich``           0.06-0.24    in-degree concentrated: from the last position back,
                                         each node takes ``k`` parents (``k`` = the cap, or
                                         ``U{4 .. 6}`` without one) until ``m`` edges are
                                         allotted; each node then picks its parents one by
                                         one among earlier positions not adjacent to a
                                         parent already picked (unshielded colliders),
                                         nodes without edges five times as likely
==========================  ===========  ==================================================

Tree note: a tree has exactly ``d - 1`` edges, density ``2 / d``, whatever ``rho`` is; the
paper's 0.03-0.16 contains ``2 / d`` for ``13 <= d <= 66`` only, so a tree draws no density.

Edges are added in two phases (every family but ``tree``, ``scale_free`` and ``collider_rich``):
first each still-isolated node, in random order, gets one edge drawn among its candidate pairs by
weight; then pairs are drawn by weight without replacement (Gumbel top-k) until the target count,
skipping pairs whose child is at the cap. Candidates failing :func:`~.audits.audit_graph`
(no isolated variable, minimum depth, ``>= ceil(0.8 d)`` edges, acyclic) are redrawn with the
same generator; :func:`sample_graph` counts the reasons.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from causal_gym._validation import as_generator, check_choice, check_count, check_real
from causal_gym.envs.arena.audits import audit_graph, graph_depth, min_edges_for
from causal_gym.scm import place_in_order

__all__ = [
    "GRAPH_FAMILIES",
    "DENSITY_RANGES",
    "DRAW",
    "GenerationError",
    "GraphDraw",
    "in_degree_cap_choices",
    "candidate_graph",
    "sample_graph",
]

GRAPH_FAMILIES: tuple[str, ...] = (
    "erdos_renyi",
    "scale_free",
    "chain",
    "tree",
    "layered",
    "bipartite_layered",
    "small_world",
    "block_sparse_layered",
    "dense_local_module",
    "collider_rich",
)
"""The ten graph families, in the paper's order (the index is the family id of pool seeds)."""

DENSITY_RANGES: Mapping[str, tuple[float, float] | None] = MappingProxyType({
    "erdos_renyi": (0.05, 0.25),
    "scale_free": (0.04, 0.22),
    "chain": (0.03, 0.16),
    "tree": None,
    "layered": (0.04, 0.20),
    "bipartite_layered": (0.04, 0.20),
    "small_world": (0.04, 0.20),
    "block_sparse_layered": (0.04, 0.20),
    "dense_local_module": (0.06, 0.24),
    "collider_rich": (0.06, 0.24),
})
"""Density range per family (Appendix A.1); ``tree`` draws none (module docstring)."""

DRAW: Literal["draw"] = "draw"
"""Sentinel for ``in_degree_cap``: draw the cap from :func:`in_degree_cap_choices`."""

class GenerationError(RuntimeError):
    """A generator found no candidate passing its filters within its attempt budget."""


def in_degree_cap_choices(d: int) -> tuple[int | None, ...]:
    """The in-degree caps a ``d``-variable graph draws from uniformly (``None`` = no cap)."""
    d = check_count(d, "d")
    if d <= 20:
        return (None, 4, 5)
    if d <= 50:
        return (4, 5, 6)
    return (5, 6, 8)


@dataclass(frozen=True)
class GraphDraw:
    """An audited graph and how it was drawn.

    ``density_parameter`` is the drawn ``rho`` (None for trees), ``target_edges`` the edge count
    aimed at, ``attempts`` the candidates drawn and ``rejections`` the failed-check counts of the
    rejected ones.
    """

    adjacency: np.ndarray
    family: str
    density_parameter: float | None
    in_degree_cap: int | None
    target_edges: int
    attempts: int
    rejections: Mapping[str, int]

    @property
    def n_edges(self) -> int:
        """Number of directed edges."""
        return int(self.adjacency.sum())

    @property
    def density(self) -> float:
        """Realised density ``E / (d (d - 1) / 2)``."""
        d = self.adjacency.shape[0]
        return self.n_edges / (d * (d - 1) / 2)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON record of the draw (without the adjacency, which the SCM stores)."""
        return {
            "family": self.family,
            "density_parameter": self.density_parameter,
            "density": self.density,
            "n_edges": self.n_edges,
            "target_edges": self.target_edges,
            "in_degree_cap": self.in_degree_cap,
            "depth": graph_depth(self.adjacency),
            "attempts": self.attempts,
            "rejections": dict(sorted(self.rejections.items())),
        }


# ---------------------------------------------------------------------------------------------
# edge placement over causal positions
# ---------------------------------------------------------------------------------------------


def _room(A: np.ndarray, cap: int | None) -> np.ndarray:
    """Free parent slots per position (infinite without a cap)."""
    if cap is None:
        return np.full(A.shape[0], np.inf)
    return cap - A.sum(axis=0)


def _connect_isolated(A: np.ndarray, weights: np.ndarray, cap: int | None, gen: np.random.Generator) -> None:
    """Give every isolated position one edge among its candidate pairs, drawn by weight (in place)."""
    d = A.shape[0]
    for v in gen.permutation(d):
        if A[v].any() or A[:, v].any():
            continue
        room = _room(A, cap) > 0
        into = weights[:, v] * (room[v] & ~A[:, v])
        out_of = weights[v, :] * (room & ~A[v, :])
        w = np.concatenate([into, out_of])
        if w.sum() <= 0:
            continue
        pick = int(gen.choice(2 * d, p=w / w.sum()))
        if pick < d:
            A[pick, v] = True
        else:
            A[v, pick - d] = True


def _fill(
    weights: np.ndarray, m: int, cap: int | None, gen: np.random.Generator, start: np.ndarray | None = None
) -> np.ndarray:
    """Edges over positions: ``start``, one edge per isolated position, then weighted draws up to ``m``.

    ``weights[a, b] > 0`` marks the candidate pairs ``a -> b`` (``a < b``). The weighted phase is
    successive sampling without replacement (Gumbel top-k keys), skipping a pair when its child
    has no free slot; since a skip depends only on earlier pairs with the same child, the
    accepted set is the first ``k`` pairs whose rank among their child's pairs is below the
    child's free slots.
    """
    d = weights.shape[0]
    A = np.zeros((d, d), dtype=bool) if start is None else start.copy()
    _connect_isolated(A, weights, cap, gen)
    k = m - int(A.sum())
    if k <= 0:
        return A
    rows, cols = np.nonzero((weights > 0) & ~A)
    keys = np.log(weights[rows, cols]) + gen.gumbel(size=rows.size)
    order = np.argsort(-keys, kind="stable")
    rows, cols = rows[order], cols[order]
    by_child = np.argsort(cols, kind="stable")
    grouped = cols[by_child]
    rank = np.empty(cols.size, dtype=np.int64)
    rank[by_child] = np.arange(cols.size) - np.searchsorted(grouped, grouped, side="left")
    chosen = np.flatnonzero(rank < _room(A, cap)[cols])[:k]
    A[rows[chosen], cols[chosen]] = True
    return A


def _capacity(weights: np.ndarray, cap: int | None, start: np.ndarray | None = None) -> int:
    """Most edges a placement can hold: candidate parents per child, limited by the cap."""
    candidates = (weights > 0).sum(axis=0) + (0 if start is None else start.sum(axis=0))
    if cap is not None:
        candidates = np.minimum(candidates, cap)
    return int(candidates.sum())


def _target(d: int, density: float, capacity: int) -> int:
    """``round(rho d (d - 1) / 2)``, raised to ``ceil(0.8 d)`` and lowered to the capacity."""
    return int(min(max(round(density * d * (d - 1) / 2), min_edges_for(d)), capacity))


def _forward(d: int) -> np.ndarray:
    return np.triu(np.ones((d, d)), k=1)


def _balanced_groups(d: int, groups: int) -> np.ndarray:
    """Group index per position, groups contiguous and of sizes differing by at most one."""
    sizes = np.full(groups, d // groups)
    sizes[: d % groups] += 1
    return np.repeat(np.arange(groups), sizes)


# ---------------------------------------------------------------------------------------------
# the families (each returns (forward adjacency over positions, target edge count))
# ---------------------------------------------------------------------------------------------


def _erdos_renyi(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    weights = _forward(d)
    m = _target(d, density, _capacity(weights, cap))
    return _fill(weights, m, cap, gen), m


def _scale_free(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    position = gen.permutation(d)  # arrival index -> causal position
    m = _target(d, density, _capacity(_forward(d), cap))
    arrivals = np.arange(1, d)
    per_node = np.full(d - 1, m // (d - 1))
    per_node[gen.choice(d - 1, size=m % (d - 1), replace=False)] += 1
    per_node = np.maximum(per_node, 1)
    overflow = int(np.maximum(per_node - arrivals, 0).sum())
    per_node = np.minimum(per_node, arrivals)
    for t in range(d - 2, -1, -1):  # late arrivals have the most earlier nodes to attach to
        extra = min(overflow, arrivals[t] - per_node[t])
        per_node[t] += extra
        overflow -= extra
    A = np.zeros((d, d), dtype=bool)
    degree = np.zeros(d)
    in_degree = np.zeros(d)
    limit = np.inf if cap is None else cap
    for t in range(1, d):
        earlier = np.arange(t)
        into_new = position[earlier] < position[t]  # the new node is the child of these edges
        child = np.maximum(position[earlier], position[t])
        open_ = in_degree[child] < limit
        # successive sampling by weight (Gumbel keys); the new node accepts at most its free slots
        keys = np.where(open_, np.log(degree[earlier] + 1.0) + gen.gumbel(size=t), -np.inf)
        order = np.argsort(-keys, kind="stable")
        slots = np.cumsum(into_new[order]) <= limit - in_degree[position[t]]
        ok = order[open_[order] & (~into_new[order] | slots)]
        chosen = ok[: int(per_node[t - 1])]
        low = np.minimum(position[chosen], position[t])
        high = np.maximum(position[chosen], position[t])
        A[low, high] = True
        np.add.at(in_degree, high, 1)
        degree[chosen] += 1
        degree[t] += chosen.size
    return A, m


def _chain(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    path = np.eye(d, k=1, dtype=bool)
    gap = np.arange(d)[None, :] - np.arange(d)[:, None]
    weights = np.where(gap >= 2, 1.0 / np.maximum(gap, 1) ** 2, 0.0)
    m = max(_target(d, density, _capacity(weights, cap, path)), d - 1)
    return _fill(weights, m, cap, gen, start=path), m


def _tree(d: int, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    A = np.zeros((d, d), dtype=bool)
    children = np.arange(1, d)
    A[np.floor(gen.random(d - 1) * children).astype(np.int64), children] = True
    return A, d - 1


def _layer_weights(layer: np.ndarray, consecutive: bool) -> np.ndarray:
    gap = layer[None, :] - layer[:, None]
    return ((gap == 1) if consecutive else (gap >= 1)).astype(float)


def _layered(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    layers = int(gen.integers(3, max(3, round(math.sqrt(d))) + 1))
    weights = _layer_weights(_balanced_groups(d, layers), consecutive=False)
    m = _target(d, density, _capacity(weights, cap))
    return _fill(weights, m, cap, gen), m


def _bipartite_layered(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    layers = int(gen.integers(2, max(2, min(4, d // 2)) + 1))
    weights = _layer_weights(_balanced_groups(d, layers), consecutive=True)
    m = _target(d, density, _capacity(weights, cap))
    return _fill(weights, m, cap, gen), m


def _two_stage(
    first: np.ndarray,
    second: np.ndarray,
    share_first: float,
    d: int,
    density: float,
    cap: int | None,
    gen: np.random.Generator,
) -> tuple[np.ndarray, int]:
    """Place ``share_first`` of the edges among ``first`` candidates, the rest among ``second``."""
    m = _target(d, density, _capacity(first + second, cap))
    A = _fill(first, round(share_first * m), cap, gen)
    return _fill(second, m, cap, gen, start=A), m


def _small_world(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    gap = np.arange(d)[None, :] - np.arange(d)[:, None]
    ring = np.minimum(gap, d - gap)
    m = _target(d, density, _capacity(_forward(d), cap))
    reach = min(math.ceil(m / d) + 1, (d - 1) // 2) if d > 2 else 1
    forward = gap > 0
    local = np.where(forward & (ring <= reach), 1.0 / np.maximum(ring, 1), 0.0)
    shortcut = np.where(forward & (ring > reach), 1.0, 0.0)
    beta = gen.uniform(0.05, 0.3) if shortcut.any() else 0.0
    return _two_stage(local, shortcut, 1.0 - beta, d, density, cap, gen)


def _block_sparse_layered(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    layers = int(gen.integers(3, max(3, round(math.sqrt(d))) + 1))
    blocks = int(gen.integers(2, max(2, d // 10) + 1))
    forward = _layer_weights(_balanced_groups(d, layers), consecutive=False)
    block = gen.permutation(_balanced_groups(d, blocks))
    same = block[:, None] == block[None, :]
    cross_share = gen.uniform(0.05, 0.15)
    return _two_stage(forward * same, forward * ~same, 1.0 - cross_share, d, density, cap, gen)


def _dense_local_module(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    sizes: list[int] = []
    while sum(sizes) < d:
        sizes.append(min(int(gen.integers(4, 9)), d - sum(sizes)))
    if len(sizes) > 1 and sizes[-1] < 2:
        last = sizes.pop()
        sizes[-1] += last
    module = np.repeat(np.arange(len(sizes)), sizes)
    forward = _forward(d)
    same = module[:, None] == module[None, :]
    return _two_stage(forward * same, forward * ~same, gen.uniform(0.7, 0.9), d, density, cap, gen)


def _collider_rich(d: int, density: float, cap: int | None, gen: np.random.Generator) -> tuple[np.ndarray, int]:
    m = _target(d, density, _capacity(_forward(d), cap))
    limit = np.minimum(np.arange(d), np.inf if cap is None else cap)
    quota = np.zeros(d, dtype=np.int64)
    parents_each = cap if cap is not None else int(gen.integers(4, 7))
    remaining = m
    for level in (parents_each, None):  # k parents per collider from the last position back, then any room
        for j in range(d - 1, 0, -1):
            take = int(min(remaining, (limit[j] if level is None else min(level, limit[j])) - quota[j]))
            quota[j] += take
            remaining -= take
    A = np.zeros((d, d), dtype=bool)
    for j in range(1, d):
        touched = A[:j].any(axis=1) | A[:, :j].any(axis=0)
        chosen = np.zeros(j, dtype=bool)
        shielded = np.zeros(j, dtype=bool)  # adjacent to a chosen parent: picking it would shield
        for _ in range(quota[j]):
            free = ~chosen & ~shielded
            if not free.any():
                free = ~chosen
            keys = np.where(free, np.log1p(4.0 * ~touched) + gen.gumbel(size=j), -np.inf)
            pick = int(np.argmax(keys))
            chosen[pick] = True
            shielded |= A[pick, :j] | A[:j, pick]
        A[:j, j] = chosen
    return A, m


_DENSE_BUILDERS = {
    "erdos_renyi": _erdos_renyi,
    "scale_free": _scale_free,
    "chain": _chain,
    "layered": _layered,
    "bipartite_layered": _bipartite_layered,
    "small_world": _small_world,
    "block_sparse_layered": _block_sparse_layered,
    "dense_local_module": _dense_local_module,
    "collider_rich": _collider_rich,
}


def _check_cap(in_degree_cap: object) -> int | None:
    return None if in_degree_cap is None else check_count(in_degree_cap, "in_degree_cap")


def _candidate(
    family: str, d: int, density: float | None, cap: int | None, gen: np.random.Generator
) -> tuple[np.ndarray, int]:
    if family == "tree":
        if density is not None:
            raise ValueError("a tree has d - 1 edges whatever the density; pass density=None")
        positions, m = _tree(d, cap, gen)
    else:
        if density is None:
            raise ValueError(f"family {family!r} needs a density")
        density = check_real(density, "density", minimum=0.0, strict=True)
        if density > 1.0:
            raise ValueError(f"density must be at most 1, got {density}")
        positions, m = _DENSE_BUILDERS[family](d, density, cap, gen)
    return place_in_order(positions, gen.permutation(d)), m


def candidate_graph(
    family: str, d: int, *, density: float | None, in_degree_cap: int | None, rng: object
) -> np.ndarray:
    """Draw one unaudited candidate DAG of a family.

    Parameters
    ----------
    family : str
        One of :data:`GRAPH_FAMILIES`.
    d : int
        Number of variables (>= 3).
    density : float or None
        Target density ``rho`` in ``(0, 1]``; must be None for ``tree``.
    in_degree_cap : int or None
        Most parents a node may get (None: no cap).
    rng : int, SeedSequence or Generator
        Explicit source of randomness.

    Returns
    -------
    ndarray of int8, shape (d, d)
        DAG adjacency, ``A[i, j] = 1`` for ``i -> j``.

    Examples
    --------
    >>> A = candidate_graph("chain", 10, density=0.1, in_degree_cap=None, rng=0)
    >>> int(A.sum()) >= 9
    True
    """
    family = check_choice(family, GRAPH_FAMILIES, "graph family")
    d = check_count(d, "d", minimum=3)
    return _candidate(family, d, density, _check_cap(in_degree_cap), as_generator(rng))[0]


def sample_graph(
    family: str,
    d: int,
    rng: object,
    *,
    density: float | None = None,
    in_degree_cap: int | None | Literal["draw"] = DRAW,
    max_attempts: int = 200,
) -> GraphDraw:
    """Draw candidates of a family until one passes the graph audits (Appendix A.1 validity filters).

    Parameters
    ----------
    family : str
        One of :data:`GRAPH_FAMILIES`.
    d : int
        Number of variables (>= 3).
    rng : int, SeedSequence or Generator
        Explicit source of randomness.
    density : float, optional
        Fixed ``rho``; by default every candidate draws one from :data:`DENSITY_RANGES`
        (``tree``: must stay None).
    in_degree_cap : int, None or "draw"
        Fixed cap (None: no cap); by default every candidate draws one from
        :func:`in_degree_cap_choices`.
    max_attempts : int
        Candidates to try before giving up.

    Returns
    -------
    GraphDraw

    Raises
    ------
    GenerationError
        If no candidate passes within ``max_attempts`` (the message lists the reasons).

    Examples
    --------
    >>> draw = sample_graph("bipartite_layered", 20, rng=3)
    >>> draw.adjacency.shape, draw.n_edges >= 16
    ((20, 20), True)
    """
    family = check_choice(family, GRAPH_FAMILIES, "graph family")
    d = check_count(d, "d", minimum=3)
    gen = as_generator(rng)
    attempts = check_count(max_attempts, "max_attempts")
    draw_cap = isinstance(in_degree_cap, str)
    if draw_cap and in_degree_cap != DRAW:
        raise ValueError(f"in_degree_cap must be an int, None or {DRAW!r}, got {in_degree_cap!r}")
    fixed_cap = None if draw_cap else _check_cap(in_degree_cap)
    rejections: Counter[str] = Counter()
    for attempt in range(1, attempts + 1):
        cap = in_degree_cap_choices(d)[gen.integers(3)] if draw_cap else fixed_cap
        rho = density
        if rho is None and family != "tree":
            low, high = DENSITY_RANGES[family]  # type: ignore[misc]
            rho = float(gen.uniform(low, high))
        adjacency, m = _candidate(family, d, rho, cap, gen)
        result = audit_graph(adjacency, family=family, in_degree_cap=cap)
        if result.passed:
            return GraphDraw(adjacency, family, rho, cap, m, attempt, MappingProxyType(dict(rejections)))
        rejections.update(result.reasons)
    raise GenerationError(f"no {family} graph with d={d} passed the audits in {attempts} attempts: {dict(rejections)}")
