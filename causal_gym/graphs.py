"""Pure functions on graphs stored as adjacency matrices.

Encoding
--------
Every graph in causal_gym is a ``d x d`` int8 matrix ``A`` over nodes ``0 .. d-1``:

============================  =====================
``A[i, j] = 1, A[j, i] = 0``  directed edge ``i -> j``
``A[i, j] = A[j, i] = 1``     undirected edge ``i -- j``
``A[i, j] = A[j, i] = 0``     no edge
============================  =====================

So a row lists where arrows go *to*: ``np.flatnonzero(A[i] & ~A[:, i])`` are the children of
``i``. Entries are 0 or 1 and the diagonal is 0; anything else is rejected with a ``ValueError``
(see :func:`causal_gym._validation.check_adjacency`). A DAG has only directed edges and no
directed cycle; a PDAG mixes directed and undirected edges; a CPDAG (essential graph) is the PDAG
whose directed edges are exactly those shared by every DAG of a Markov equivalence class.

Every function here is pure: it validates its input, never modifies it, and returns new arrays
(int8 in the encoding above) or plain Python ints, lists and sets.

Algorithms
----------
- :func:`meek` applies Meek's rules R1-R4 in vectorised sweeps (all applicable edges of a rule at
  once) until a fixpoint.
- :func:`consistent_extension` finds a DAG that a PDAG stands for with Dor & Tarsi's (1992)
  sink-peeling algorithm, or shows there is none (then Meek's completion can orient a cycle).
- :func:`dag_to_cpdag` builds the CPDAG as skeleton + v-structures, then the Meek closure.
- :func:`d_separated` uses Shachter's (1998) Bayes-ball reachability: linear in the graph size,
  no path enumeration.
- :func:`mec_dags` enumerates a class by orienting one undirected edge either way and taking the
  Meek closure (Meek 1995: every branch of a closed PDAG stays extendable), so no branch is wasted.
- :func:`imec_size` counts DAGs of the interventional essential graph (Hauser & Bühlmann 2012)
  with the rooted-subclass recursion of He, Jia & Yu (2015) on its chain components.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from causal_gym._validation import check_adjacency, check_node, check_node_set

if TYPE_CHECKING:
    import networkx as nx
    from causallearn.graph.GeneralGraph import GeneralGraph

__all__ = [
    "is_dag",
    "is_cpdag",
    "directed_cycle",
    "topological_order",
    "kahn_order",
    "orient_along_arrows",
    "greedy_dag",
    "parents",
    "children",
    "neighbors",
    "adjacent",
    "ancestors",
    "descendants",
    "reachable",
    "skeleton",
    "v_structures",
    "meek",
    "consistent_extension",
    "dag_to_cpdag",
    "d_separated",
    "mec_dags",
    "imec_size",
    "essential_graph",
    "to_networkx",
    "from_networkx",
    "to_causallearn",
    "from_causallearn",
]

MAX_ENUMERATION_NODES = 12
"""Largest number of nodes :func:`mec_dags` accepts (classes grow like d!)."""

_MEEK_RULES = (1, 2, 3, 4)


# ---------------------------------------------------------------------------------------------
# internal views of the encoding (boolean arrays; callers have validated the input)
# ---------------------------------------------------------------------------------------------


def _directed(b: np.ndarray) -> np.ndarray:
    """``D[i, j]`` is True for ``i -> j``."""
    return b & ~b.T


def _undirected(b: np.ndarray) -> np.ndarray:
    """``U[i, j] = U[j, i]`` is True for ``i -- j``."""
    return b & b.T


def _nonadjacent(b: np.ndarray) -> np.ndarray:
    """``N[i, j]`` is True for distinct, non-adjacent ``i`` and ``j``."""
    nonadj = ~(b | b.T)
    np.fill_diagonal(nonadj, False)
    return nonadj


def _nodes(nodes: int | Iterable[int], d: int, name: str, exclude: tuple[int, ...] = ()) -> tuple[int, ...]:
    """Accept one node index or an iterable of them; return a sorted tuple."""
    if isinstance(nodes, (int, np.integer)) and not isinstance(nodes, (bool, np.bool_)):
        return check_node_set([nodes], d, name, exclude)
    return check_node_set(nodes, d, name, exclude)  # type: ignore[arg-type]


def reachable(step: np.ndarray, start: tuple[int, ...]) -> set[int]:
    """Nodes reachable from ``start`` in one or more steps of the boolean relation ``step``.

    ``step`` is any square boolean matrix (``step[u, v]``: one step leads from u to v), e.g. the
    directed part of a graph or the transition relation of a d-separation search; SID builds on it.
    A start node is included only if a cycle leads back to it.
    """
    seen = np.zeros(step.shape[0], dtype=bool)
    frontier = np.zeros_like(seen)
    frontier[list(start)] = True
    while frontier.any():
        frontier = step[frontier].any(axis=0) & ~seen
        seen |= frontier
    return {int(v) for v in np.flatnonzero(seen)}


def _is_acyclic(directed: np.ndarray) -> bool:
    """True when the relation has no cycle (repeatedly strip nodes without parents).

    An undirected edge would count as a 2-cycle, so callers pass DAG candidates or directed parts.
    """
    alive = np.ones(directed.shape[0], dtype=bool)
    while alive.any():
        roots = alive & ~directed[alive].any(axis=0)
        if not roots.any():
            return False
        alive &= ~roots
    return True


def _require_dag(a: np.ndarray, name: str) -> np.ndarray:
    b = a.astype(bool)
    if _undirected(b).any():
        raise ValueError(f"{name} must be a DAG but has undirected edges")
    if not _is_acyclic(b):
        raise ValueError(f"{name} must be a DAG but has a directed cycle")
    return b


# ---------------------------------------------------------------------------------------------
# basic queries
# ---------------------------------------------------------------------------------------------


def is_dag(A: np.ndarray) -> bool:
    """Return True when ``A`` has only directed edges and no directed cycle."""
    b = check_adjacency(A, "A").astype(bool)
    return not _undirected(b).any() and _is_acyclic(b)


def directed_cycle(A: np.ndarray) -> list[int] | None:
    """One cycle of the directed edges of ``A`` as ``[v0, v1, ..., v0]``, or None when there is none.

    Undirected edges (``A[i, j] = A[j, i] = 1``) are ignored: only ``i -> j`` edges can form a
    directed cycle. Used to reject cyclic answers with a message that names the cycle.

    Examples
    --------
    >>> A = np.zeros((3, 3), dtype=np.int8)
    >>> A[0, 1] = A[1, 2] = A[2, 0] = 1
    >>> directed_cycle(A)
    [0, 1, 2, 0]
    >>> A[2, 0] = 0
    >>> directed_cycle(A) is None
    True
    """
    directed = _directed(check_adjacency(A, "A").astype(bool))
    alive = np.ones(directed.shape[0], dtype=bool)
    while True:  # strip nodes without a parent among the living: what remains lies on or above a cycle
        roots = alive & ~(directed & alive[:, None]).any(axis=0)
        if not roots.any():
            break
        alive &= ~roots
    if not alive.any():
        return None
    # every living node has a living parent: walk parents until a node repeats
    path, seen = [int(np.flatnonzero(alive)[0])], {}
    while path[-1] not in seen:
        seen[path[-1]] = len(path) - 1
        path.append(int(np.flatnonzero(directed[:, path[-1]] & alive)[0]))
    cycle = path[seen[path[-1]]:]
    return cycle[::-1]


def topological_order(A: np.ndarray) -> list[int]:
    """Order the nodes of a DAG so that every edge points forward.

    Ties are broken by the smallest index (Kahn's algorithm with a heap), so the order is
    deterministic: ``topological_order(np.zeros((3, 3)))`` is ``[0, 1, 2]``.

    Raises
    ------
    ValueError
        If ``A`` has undirected edges or a directed cycle.
    """
    b = _require_dag(check_adjacency(A, "A"), "A")
    return kahn_order(b.shape[0], zip(*np.nonzero(b)))


def orient_along_arrows(pdag: np.ndarray) -> np.ndarray:
    """A DAG with the adjacencies and arrows of ``pdag``: each undirected edge points along a
    topological order of the directed edges (ties by the smallest index).

    The way to turn a PDAG that no DAG extends (:func:`consistent_extension`) into an answer that
    keeps everything it states; new colliders are the price.

    Raises
    ------
    ValueError
        If the directed edges of ``pdag`` form a cycle.

    Examples
    --------
    >>> A = np.zeros((4, 4), dtype=np.int8)
    >>> for i, j in [(0, 1), (1, 2), (2, 3), (3, 0)]:
    ...     A[i, j] = A[j, i] = 1  # a chordless undirected 4-cycle: no DAG extends it
    >>> A[3, 0] = 0  # 0 -> 3
    >>> orient_along_arrows(A).nonzero()
    (array([0, 0, 1, 2]), array([1, 3, 2, 3]))
    """
    b = check_adjacency(pdag, "pdag").astype(bool)
    directed = b & ~b.T
    rank = np.argsort(topological_order(directed.astype(np.int8)))
    return (directed | (b & b.T & (rank[:, None] < rank[None, :]))).astype(np.int8)


def greedy_dag(weights: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The candidate edges taken in decreasing weight, each kept unless it closes a directed cycle
    with those kept before: a DAG, the greedy heuristic for the maximum-weight acyclic subgraph.

    Ties are taken in row-major order. When the candidates already form a DAG, all are kept. A
    candidate pair in both directions keeps at most one (the second would close a 2-cycle), so a
    symmetric candidate set is oriented rather than cut.

    Parameters
    ----------
    weights : ndarray of shape (d, d)
        Finite scores, ``weights[i, j]`` for ``i -> j`` (e.g. edge probabilities).
    candidates : ndarray of shape (d, d)
        Boolean (or 0/1) mask of the edges that may be kept; the diagonal is ignored.

    Returns
    -------
    ndarray of shape (d, d), int8
        The kept edges.

    Examples
    --------
    >>> w = np.array([[0, .9, 0], [0, 0, .8], [.7, 0, 0]])
    >>> greedy_dag(w, w > 0).tolist()  # 2 -> 0 would close 0 -> 1 -> 2 -> 0
    [[0, 1, 0], [0, 0, 1], [0, 0, 0]]
    """
    w = np.asarray(weights, dtype=float)
    keep = np.asarray(candidates).astype(bool)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or keep.shape != w.shape:
        raise ValueError(f"weights and candidates must be square and of one shape, got {w.shape} and {keep.shape}")
    keep = keep & ~np.eye(w.shape[0], dtype=bool)
    if not np.isfinite(w[keep]).all():
        raise ValueError("weights of candidate edges must be finite")
    edges = np.argwhere(keep)
    order = np.argsort(-w[edges[:, 0], edges[:, 1]], kind="stable")
    reach = np.eye(w.shape[0], dtype=bool)  # reach[a, b]: a directed path a -> ... -> b among the kept edges
    out = np.zeros(w.shape, dtype=np.int8)
    for i, j in edges[order].tolist():
        if reach[j, i]:
            continue
        out[i, j] = 1
        reach |= reach[:, i, None] & reach[None, j, :]  # whatever reaches i now reaches whatever j reaches
    return out


def kahn_order(n_nodes: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    """:func:`topological_order` of the directed edges ``(i, j)`` over nodes ``0 .. n_nodes - 1``,
    in plain Python and without validation: the lexicographically smallest causal order.

    Callers that hold an edge list (a few nodes, built once per episode) skip the matrix and its
    checks this way. On a cycle the order is shorter than ``n_nodes``: it holds only the nodes
    that no cycle reaches.

    Examples
    --------
    >>> kahn_order(3, [(2, 0)])
    [1, 2, 0]
    >>> kahn_order(2, [(0, 1), (1, 0)])
    []
    """
    children: list[list[int]] = [[] for _ in range(n_nodes)]
    indegree = [0] * n_nodes
    for i, j in edges:
        children[i].append(int(j))
        indegree[j] += 1
    heap = [v for v in range(n_nodes) if indegree[v] == 0]  # ascending, so already a heap
    order: list[int] = []
    while heap:
        v = heapq.heappop(heap)
        order.append(v)
        for c in children[v]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(heap, c)
    return order


def parents(A: np.ndarray, i: int) -> list[int]:
    """Nodes ``p`` with ``p -> i``, sorted."""
    b = check_adjacency(A, "A").astype(bool)
    i = check_node(i, b.shape[0], "i")
    return np.flatnonzero(b[:, i] & ~b[i]).tolist()


def children(A: np.ndarray, i: int) -> list[int]:
    """Nodes ``c`` with ``i -> c``, sorted."""
    b = check_adjacency(A, "A").astype(bool)
    i = check_node(i, b.shape[0], "i")
    return np.flatnonzero(b[i] & ~b[:, i]).tolist()


def neighbors(A: np.ndarray, i: int) -> list[int]:
    """Nodes joined to ``i`` by an undirected edge, sorted."""
    b = check_adjacency(A, "A").astype(bool)
    i = check_node(i, b.shape[0], "i")
    return np.flatnonzero(b[i] & b[:, i]).tolist()


def adjacent(A: np.ndarray, i: int) -> list[int]:
    """Nodes joined to ``i`` by any edge, sorted."""
    b = check_adjacency(A, "A").astype(bool)
    i = check_node(i, b.shape[0], "i")
    return np.flatnonzero(b[i] | b[:, i]).tolist()


def ancestors(A: np.ndarray, nodes: int | Iterable[int]) -> set[int]:
    """Nodes with a directed path into ``nodes``, following directed edges only.

    The start nodes themselves are excluded from the result, even when a directed cycle
    leads back to them.
    """
    b = check_adjacency(A, "A").astype(bool)
    start = _nodes(nodes, b.shape[0], "nodes")
    return reachable(_directed(b).T, start) - set(start)


def descendants(A: np.ndarray, nodes: int | Iterable[int]) -> set[int]:
    """Nodes reachable from ``nodes`` by a directed path, following directed edges only.

    The start nodes themselves are excluded from the result, even when a directed cycle
    leads back to them.
    """
    b = check_adjacency(A, "A").astype(bool)
    start = _nodes(nodes, b.shape[0], "nodes")
    return reachable(_directed(b), start) - set(start)


def skeleton(A: np.ndarray) -> np.ndarray:
    """Symmetric int8 matrix with a 1 wherever ``A`` has an edge of any kind."""
    b = check_adjacency(A, "A").astype(bool)
    return (b | b.T).astype(np.int8)


def _v_structures(b: np.ndarray) -> list[tuple[int, int, int]]:
    directed = _directed(b)
    nonadj = _nonadjacent(b)
    triples = directed[:, :, None] & directed.T[None, :, :] & nonadj[:, None, :]
    return [(i, j, k) for i, j, k in np.argwhere(triples).tolist() if i < k]


def v_structures(A: np.ndarray) -> list[tuple[int, int, int]]:
    """Unshielded colliders ``(i, j, k)`` with ``i -> j <- k``, ``i < k`` and ``i``, ``k`` non-adjacent.

    Only directed edges count, so on a PDAG this lists the oriented colliders. Sorted.
    """
    return _v_structures(check_adjacency(A, "A").astype(bool))


# ---------------------------------------------------------------------------------------------
# Meek's rules and the CPDAG
# ---------------------------------------------------------------------------------------------


def _meek_rule(b: np.ndarray, rule: int) -> np.ndarray:
    """Boolean matrix ``O`` with ``O[x, y]`` True where ``rule`` orients the undirected ``x -- y`` as ``x -> y``."""
    und = _undirected(b)
    directed = _directed(b)
    nonadj = _nonadjacent(b)
    if rule == 1:
        # a -> x -- y with a, y non-adjacent
        hits = directed.T.astype(np.int64) @ nonadj.astype(np.int64) > 0
    elif rule == 2:
        # x -> a -> y with x -- y
        hits = directed.astype(np.int64) @ directed.astype(np.int64) > 0
    else:
        # R3 and R4 look at pairs of witnesses; a loop over the (few) undirected edges with
        # vectorised witness tests costs O(#undirected * d^2) instead of a dense O(d^4) einsum.
        hits = np.zeros_like(und)
        adj = b | b.T
        for x, y in np.argwhere(und).tolist():
            if rule == 3:
                # x -- c -> y and x -- e -> y with c, e non-adjacent
                c = und[x] & directed[:, y]
                hits[x, y] = nonadj[np.ix_(c, c)].any()
            else:
                # x -- c -> e -> y with c, y non-adjacent and x adjacent to e
                c = und[x] & nonadj[:, y]
                e = directed[:, y] & adj[x]
                hits[x, y] = directed[np.ix_(c, e)].any()
    return und & hits


_BITWISE_MEEK_NODES = 16
"""Up to this many nodes :func:`_meek` closes the graph on bitmask rows in plain Python: on the
small graphs of the lab benchmarks numpy's per-call overhead dominates the matrix version, which
takes over on larger graphs (both give the same graph; ``tests/test_graphs.py`` compares them)."""


def _meek(b: np.ndarray, rules: tuple[int, ...]) -> np.ndarray:
    """Meek closure of the boolean PDAG ``b`` (see :func:`meek` for the rules and their order)."""
    d = b.shape[0]
    if d > _BITWISE_MEEK_NODES:
        return _meek_matrix(b, rules)
    rows = _meek_rows([sum(1 << j for j, v in enumerate(r) if v) for r in b.tolist()], rules)
    return np.array([[bool(r >> j & 1) for j in range(d)] for r in rows], dtype=bool).reshape(d, d)


def _bits(mask: int) -> Iterator[int]:
    """Indices of the set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _meek_rows(rows: list[int], rules: tuple[int, ...]) -> list[int]:
    """:func:`_meek_matrix` on bitmask rows (bit ``y`` of ``rows[x]`` is ``b[x, y]``), rule by rule
    with the same simultaneous updates, so both reach the same graph."""
    d = len(rows)
    full = (1 << d) - 1
    changed = True
    while changed:
        changed = False
        for rule in rules:
            cols = [sum(1 << x for x in range(d) if rows[x] >> y & 1) for y in range(d)]  # bit x: b[x, y]
            und = [rows[x] & cols[x] for x in range(d)]
            if not any(und):
                return rows
            out = [rows[x] & ~cols[x] for x in range(d)]  # x -> y
            into = [cols[x] & ~rows[x] for x in range(d)]  # y -> x
            adj = [rows[x] | cols[x] for x in range(d)]
            nonadj = [full & ~adj[x] & ~(1 << x) for x in range(d)]
            orient = [0] * d
            for x in range(d):
                hits = 0
                if not und[x]:
                    continue
                if rule == 1:  # a -> x -- y with a, y non-adjacent
                    for a in _bits(into[x]):
                        hits |= nonadj[a]
                elif rule == 2:  # x -> a -> y with x -- y
                    for a in _bits(out[x]):
                        hits |= out[a]
                elif rule == 3:  # x -- c -> y and x -- e -> y with c, e non-adjacent
                    for y in _bits(und[x]):
                        c = und[x] & into[y]
                        if any(nonadj[k] & c for k in _bits(c)):
                            hits |= 1 << y
                else:  # x -- c -> e -> y with c, y non-adjacent and x adjacent to e
                    for y in _bits(und[x]):
                        e = into[y] & adj[x]
                        if any(out[k] & e for k in _bits(und[x] & nonadj[y])):
                            hits |= 1 << y
                orient[x] = und[x] & hits
            for x in range(d):  # an edge asked for both ways stays undirected; the others are oriented x -> y
                for y in _bits(orient[x]):
                    if not orient[y] >> x & 1:
                        rows[y] &= ~(1 << x)
                        changed = True
    return rows


def _meek_matrix(b: np.ndarray, rules: tuple[int, ...]) -> np.ndarray:
    b = b.copy()
    changed = True
    while changed:
        changed = False
        for rule in rules:
            orient = _meek_rule(b, rule)
            # A PDAG without a consistent extension can ask for both directions of an edge at
            # once; such an edge is left undirected rather than oriented arbitrarily.
            orient &= ~orient.T
            if orient.any():
                b[orient.T] = False
                changed = True
    return b


def _check_rules(rules: object) -> tuple[int, ...]:
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Iterable):
        raise ValueError(f"rules must be a sequence drawn from {_MEEK_RULES}, got {rules!r}")
    chosen = list(rules)
    if not chosen or any(r not in _MEEK_RULES or isinstance(r, bool) for r in chosen) or len(set(chosen)) != len(chosen):
        raise ValueError(f"rules must be distinct values drawn from {_MEEK_RULES}, got {rules!r}")
    return tuple(sorted(chosen))


def meek(pdag: np.ndarray, rules: Iterable[int] = _MEEK_RULES) -> np.ndarray:
    """Apply Meek's orientation rules to a PDAG until nothing changes.

    Application order: one sweep applies R1, then R2, then R3, then R4 (restricted to
    ``rules``); each rule orients every edge it applies to simultaneously, on the graph as left
    by the previous rule. Sweeps repeat until a whole sweep orients nothing. Directed edges are
    never reversed or un-oriented. The rules, for an undirected edge ``x -- y``:

    - R1: ``a -> x`` with ``a``, ``y`` non-adjacent gives ``x -> y``;
    - R2: ``x -> a -> y`` gives ``x -> y``;
    - R3: ``x -- c -> y`` and ``x -- e -> y`` with ``c``, ``e`` non-adjacent give ``x -> y``;
    - R4: ``x -- c -> e -> y`` with ``c``, ``y`` non-adjacent and ``x`` adjacent to ``e``
      gives ``x -> y``.

    On a PDAG with a consistent extension the result is its unique Meek closure. On one without
    (e.g. conflicting v-structures from noisy tests) an edge that a rule would orient both ways in
    the same step stays undirected; the result is deterministic but not guaranteed acyclic.

    Parameters
    ----------
    pdag : (d, d) array
        Graph in the causal_gym encoding.
    rules : iterable of int, default (1, 2, 3, 4)
        Which rules to use; ``(1, 2, 3)`` reproduces the closure step of causal-learn's PC.

    Returns
    -------
    numpy.ndarray
        A new int8 matrix.
    """
    b = check_adjacency(pdag, "pdag").astype(bool)
    return _meek(b, _check_rules(rules)).astype(np.int8)


def consistent_extension(pdag: np.ndarray) -> np.ndarray | None:
    """A DAG that ``pdag`` stands for, or None when there is none.

    A *consistent extension* keeps the skeleton and every directed edge of ``pdag``, orients its
    undirected edges, and is acyclic with exactly the v-structures (unshielded colliders) that
    ``pdag`` already has. Meek's rules are sound only on PDAGs that have one: on others
    :func:`meek` can orient a directed cycle (``0 -> 1 -- 2 -- 3 -> 0`` with 0, 2 and 1, 3
    non-adjacent completes to ``0 -> 1 -> 2 -> 3 -> 0``), so an answer is checked here before it
    is completed and scored.

    Dor & Tarsi (1992): repeatedly remove a node ``x`` that has no directed edge out and whose
    undirected neighbours are each adjacent to every other node adjacent to ``x``, orienting its
    undirected edges into it; the PDAG has a consistent extension exactly when every node goes.

    Examples
    --------
    >>> A = np.zeros((4, 4), dtype=np.int8)
    >>> A[0, 1] = A[3, 0] = 1
    >>> A[1, 2] = A[2, 1] = A[2, 3] = A[3, 2] = 1
    >>> consistent_extension(A) is None
    True
    >>> A[3, 0] = 0  # 0 -> 1 -- 2 -- 3: orienting 1 -> 2 -> 3 adds no collider
    >>> consistent_extension(A).nonzero()
    (array([0, 1, 2]), array([1, 2, 3]))

    Returns
    -------
    numpy.ndarray or None
        An int8 DAG matrix, or None.
    """
    b = check_adjacency(pdag, "pdag").astype(bool)
    directed, undirected, adjacent = _directed(b), _undirected(b), b | b.T
    dag = directed.copy()
    alive = np.ones(b.shape[0], dtype=bool)
    but = ~np.eye(b.shape[0], dtype=bool)  # row y: every node but y
    # masks, not index arrays: numpy's fancy indexing lets go of the interpreter lock on every call,
    # which costs a thread switch each time when many episodes share one process (issue 32)
    while alive.any():
        for x in np.flatnonzero(alive).tolist():
            if (directed[x] & alive).any():
                continue  # not a sink
            others = adjacent[x] & alive
            around = undirected[x] & alive
            # each undirected neighbour y must be adjacent to every other node adjacent to x
            if all(not (others & ~adjacent[y] & but[y]).any() for y in np.flatnonzero(around).tolist()):
                dag[:, x] |= around
                alive[x] = False
                break
        else:
            return None
    return dag.astype(np.int8)


def _pattern(b: np.ndarray) -> np.ndarray:
    """Skeleton of a DAG with only its v-structures oriented."""
    out = b | b.T
    for i, j, k in _v_structures(b):
        out[j, i] = out[j, k] = False
    return out


def dag_to_cpdag(A: np.ndarray) -> np.ndarray:
    """CPDAG (essential graph) of the Markov equivalence class of a DAG.

    Built as the skeleton with the v-structures oriented, closed under Meek's rules R1-R4
    (Meek 1995; R4 never fires here, it is kept so the closure is the general one).

    Raises
    ------
    ValueError
        If ``A`` is not a DAG.
    """
    b = _require_dag(check_adjacency(A, "A"), "A")
    return _meek(_pattern(b), _MEEK_RULES).astype(np.int8)


# ---------------------------------------------------------------------------------------------
# d-separation
# ---------------------------------------------------------------------------------------------


def d_separated(A: np.ndarray, xs: int | Iterable[int], ys: int | Iterable[int], zs: int | Iterable[int] = ()) -> bool:
    """True when every path between ``xs`` and ``ys`` in the DAG ``A`` is blocked by ``zs``.

    Uses Shachter's (1998) Bayes-ball reachability: a ball is tracked as (node, arrived from a
    child / from a parent). An unobserved node passes a ball from a child to its parents and
    children and one from a parent to its children; a node in ``zs`` bounces a ball from a parent
    back to its parents and stops one from a child. Bouncing off an observed descendant is what
    opens a collider, so no ancestor set and no path enumeration are needed: O(d + edges).

    Raises
    ------
    ValueError
        If ``A`` is not a DAG, ``xs`` or ``ys`` is empty, or the three sets overlap.
    """
    b = _require_dag(check_adjacency(A, "A"), "A")
    d = b.shape[0]
    x = _nodes(xs, d, "xs")
    y = _nodes(ys, d, "ys", exclude=x)
    z = _nodes(zs, d, "zs", exclude=x + y)
    if not x or not y:
        raise ValueError("xs and ys must each contain at least one node")
    in_z = np.zeros(d, dtype=bool)
    in_z[list(z)] = True
    pa = [np.flatnonzero(b[:, v]).tolist() for v in range(d)]
    ch = [np.flatnonzero(b[v]).tolist() for v in range(d)]

    targets = set(y)
    # a ball is (node, came_up); came_up means it entered the node from one of its children
    stack = [(v, True) for v in x]
    visited: set[tuple[int, bool]] = set()
    while stack:
        v, came_up = stack.pop()
        if (v, came_up) in visited:
            continue
        visited.add((v, came_up))
        if in_z[v]:
            if not came_up:
                stack.extend((p, True) for p in pa[v])
            continue
        if v in targets:
            return False
        if came_up:
            stack.extend((p, True) for p in pa[v])
        stack.extend((c, False) for c in ch[v])
    return True


# ---------------------------------------------------------------------------------------------
# Markov equivalence classes
# ---------------------------------------------------------------------------------------------


def _chain_components(b: np.ndarray) -> list[tuple[int, ...]]:
    """Vertex sets of the connected components of the undirected part that have an edge."""
    und = _undirected(b)
    seen = np.zeros(b.shape[0], dtype=bool)
    components = []
    for v in np.flatnonzero(und.any(axis=1)).tolist():
        if not seen[v]:
            comp = tuple(sorted(reachable(und, (v,)) | {v}))
            seen[list(comp)] = True
            components.append(comp)
    return components


@lru_cache(maxsize=4096)
def _count_chordal_orientations(edges: frozenset[tuple[int, int]], vertices: frozenset[int]) -> int:
    """Number of acyclic orientations without v-structures of a connected chordal graph.

    Such an orientation has exactly one source; rooting it at ``v`` (all edges of ``v`` point
    out) and closing under Meek's rules leaves chain components that are oriented independently
    (He, Jia & Yu 2015). Memoised on the component, which keeps the recursion cheap.
    """
    if len(vertices) == 1:
        return 1
    index = {v: k for k, v in enumerate(sorted(vertices))}
    n = len(index)
    und = np.zeros((n, n), dtype=bool)
    for u, w in edges:
        und[index[u], index[w]] = und[index[w], index[u]] = True
    names = sorted(vertices)
    total = 0
    for root in range(n):
        rooted = und.copy()
        rooted[:, root] = False
        closed = _meek(rooted, _MEEK_RULES)
        total += _count_pdag(closed, names)
    return total


def _count_pdag(b: np.ndarray, names: list[int] | None = None) -> int:
    """Product over chain components of their orientation counts (graph is a closed PDAG)."""
    names = names if names is not None else list(range(b.shape[0]))
    und = _undirected(b)
    count = 1
    for comp in _chain_components(b):
        edges = frozenset((names[u], names[w]) for u, w in itertools.combinations(comp, 2) if und[u, w])
        count *= _count_chordal_orientations(edges, frozenset(names[u] for u in comp))
    return count


def _extensions(b: np.ndarray) -> Iterator[np.ndarray]:
    """DAGs obtained by orienting undirected edges one at a time, each time taking the Meek closure."""
    und = np.argwhere(np.triu(_undirected(b)))
    if und.size == 0:
        yield b
        return
    i, j = und[0]
    for src, dst in ((i, j), (j, i)):
        branch = b.copy()
        branch[dst, src] = False
        yield from _extensions(_meek(branch, _MEEK_RULES))


def _essential_input(graph: np.ndarray, name: str) -> np.ndarray:
    """Accept a DAG (replaced by its CPDAG) or a CPDAG; reject other PDAGs."""
    b = check_adjacency(graph, name).astype(bool)
    if not _undirected(b).any() and _is_acyclic(b):
        return _meek(_pattern(b), _MEEK_RULES)
    if not _is_cpdag(b):
        raise ValueError(f"{name} is neither a DAG nor a CPDAG (the essential graph of a Markov equivalence class)")
    return b


def _is_cpdag(b: np.ndarray) -> bool:
    if not _is_acyclic(_directed(b)):
        return False
    dag = next(_extensions(_meek(b, _MEEK_RULES)))
    if _undirected(dag).any() or not _is_acyclic(dag):
        return False
    return bool(np.array_equal(_meek(_pattern(dag), _MEEK_RULES), b))


def is_cpdag(A: np.ndarray) -> bool:
    """True when ``A`` is the CPDAG of some DAG (a DAG with no reversible edge counts, too)."""
    return _is_cpdag(check_adjacency(A, "A").astype(bool))


def mec_dags(cpdag: np.ndarray, limit: int | None = None) -> list[np.ndarray]:
    """All DAGs in the Markov equivalence class represented by a CPDAG.

    A DAG is accepted and stands for its own class. The class is enumerated by orienting one
    undirected edge each way and closing under Meek's rules, which never creates a v-structure
    or a cycle in a CPDAG, so every leaf is a member and no member is produced twice.

    Parameters
    ----------
    cpdag : (d, d) array
        A CPDAG or a DAG, ``d <= 12``.
    limit : int, optional
        Refuse classes larger than this (checked by counting before enumerating).

    Returns
    -------
    list of numpy.ndarray
        int8 DAG matrices, in a deterministic order.

    Raises
    ------
    ValueError
        If the graph is neither a DAG nor a CPDAG, ``d > 12``, or the class exceeds ``limit``.
    """
    a = check_adjacency(cpdag, "cpdag")
    if a.shape[0] > MAX_ENUMERATION_NODES:
        raise ValueError(f"mec_dags enumerates classes for d <= {MAX_ENUMERATION_NODES} only, got d={a.shape[0]}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    b = _essential_input(a, "cpdag")
    if limit is not None:
        size = _count_pdag(b)
        if size > limit:
            raise ValueError(f"the class has {size} DAGs, more than limit={limit}")
    return [dag.astype(np.int8) for dag in _extensions(b)]


def _interventional_essential(b: np.ndarray, targets: list[tuple[int, ...]]) -> np.ndarray:
    """Meek closure of the CPDAG with every edge cut by some target oriented as in the DAG ``b``."""
    essential = _meek(_pattern(b), _MEEK_RULES)
    d = b.shape[0]
    for target in targets:
        inside = np.zeros(d, dtype=bool)
        inside[list(target)] = True
        cut = inside[:, None] != inside[None, :]
        essential[cut & b.T] = False
    return _meek(essential, _MEEK_RULES)


def essential_graph(dag: np.ndarray, targets: Iterable[Iterable[int]] = ()) -> np.ndarray:
    """The (interventional) essential graph of ``dag`` for a family of targets; the CPDAG when empty.

    The observational regime is always included; see :func:`imec_size` for the construction.
    CausalArena scores CPDAG-aware metrics against it (the class GIES estimates).
    """
    b = _require_dag(check_adjacency(dag, "dag"), "dag")
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        raise ValueError(f"targets must be an iterable of node sets, got {targets!r}")
    family = [check_node_set(t, b.shape[0], f"targets[{k}]") for k, t in enumerate(targets)]
    return _interventional_essential(b, family).astype(np.int8)


def imec_size(dag: np.ndarray, targets: Iterable[Iterable[int]] = ()) -> int:
    """Number of DAGs interventionally Markov equivalent to ``dag`` under a family of targets.

    The observational regime (empty target) is always included. Following Hauser & Bühlmann
    (2012), the I-essential graph is the Meek closure (R1-R4) of the CPDAG after orienting, as in
    ``dag``, every edge with exactly one endpoint in some target. Its chain components are chordal
    and are oriented independently, so the size is the product of their counts of acyclic
    orientations without v-structures, computed exactly by the rooted-subclass recursion of
    He, Jia & Yu (2015) (no enumeration of the DAGs themselves).

    Parameters
    ----------
    dag : (d, d) array
        The DAG.
    targets : iterable of iterables of int
        Intervention targets; an empty family gives the observational MEC size.

    Raises
    ------
    ValueError
        If ``dag`` is not a DAG or a target is not a set of valid, distinct nodes.
    """
    b = _require_dag(check_adjacency(dag, "dag"), "dag")
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        raise ValueError(f"targets must be an iterable of node sets, got {targets!r}")
    family = [check_node_set(t, b.shape[0], f"targets[{k}]") for k, t in enumerate(targets)]
    return _count_pdag(_interventional_essential(b, family))


# ---------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------


def to_networkx(A: np.ndarray) -> nx.DiGraph:
    """A ``networkx.DiGraph`` on nodes ``0 .. d-1``; an undirected edge becomes two opposite arcs."""
    import networkx as nx

    a = check_adjacency(A, "A")
    graph = nx.DiGraph()
    graph.add_nodes_from(range(a.shape[0]))
    graph.add_edges_from(np.argwhere(a).tolist())
    return graph


def from_networkx(G: nx.Graph, nodelist: list | None = None) -> np.ndarray:
    """Adjacency matrix of a networkx graph, rows ordered as ``nodelist`` (default ``G.nodes``).

    An arc ``u -> v`` becomes a directed edge, a pair of opposite arcs or an edge of an undirected
    ``nx.Graph`` an undirected one (the inverse of :func:`to_networkx`). Multigraphs and self-loops
    are rejected.
    """
    import networkx as nx

    if not isinstance(G, nx.Graph):
        raise ValueError(f"G must be a networkx graph, got {type(G).__name__}")
    if G.is_multigraph():
        raise ValueError("G must not be a multigraph; collapse parallel edges first")
    nodes = list(G.nodes) if nodelist is None else list(nodelist)
    if len(set(nodes)) != len(nodes) or set(nodes) != set(G.nodes):
        raise ValueError("nodelist must list every node of G exactly once")
    a = nx.to_numpy_array(G, nodelist=nodes, weight=None, dtype=np.int64)
    return check_adjacency(a, "G")


def to_causallearn(A: np.ndarray) -> GeneralGraph:
    """A causal-learn ``GeneralGraph`` with nodes ``X1 .. Xd`` (causal-learn's default names).

    Directed edges become tail-arrow edges (``graph[j, i] = 1, graph[i, j] = -1`` for
    ``i -> j``), undirected edges tail-tail edges (``graph[i, j] = graph[j, i] = -1``).
    """
    from causallearn.graph.Edge import Edge
    from causallearn.graph.Endpoint import Endpoint
    from causallearn.graph.GeneralGraph import GeneralGraph
    from causallearn.graph.GraphNode import GraphNode

    a = check_adjacency(A, "A").astype(bool)
    nodes = [GraphNode(f"X{k + 1}") for k in range(a.shape[0])]
    graph = GeneralGraph(nodes)
    for i, j in np.argwhere(_directed(a)).tolist():
        graph.add_edge(Edge(nodes[i], nodes[j], Endpoint.TAIL, Endpoint.ARROW))
    for i, j in np.argwhere(np.triu(_undirected(a))).tolist():
        graph.add_edge(Edge(nodes[i], nodes[j], Endpoint.TAIL, Endpoint.TAIL))
    return graph


def from_causallearn(G: GeneralGraph) -> np.ndarray:
    """Adjacency matrix of a causal-learn graph, nodes in ``G.nodes`` order.

    causal-learn stores the mark at ``i`` of the edge ``i *-* j`` in ``G.graph[i, j]``
    (-1 tail, 1 arrow). Only ``i -> j`` (tail, arrow) and ``i -- j`` (tail, tail) have a meaning in
    the causal_gym encoding.

    Raises
    ------
    ValueError
        For any other mark (circles and bidirected edges of PAGs, multi-edge codes).
    """
    g = np.asarray(G.graph)
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise ValueError(f"G.graph must be a square matrix, got shape {g.shape}")
    tail = g == -1
    arrow = g == 1
    ok = (tail & tail.T) | (tail & arrow.T) | (arrow & tail.T) | ((g == 0) & (g.T == 0))
    if not ok.all():
        i, j = np.argwhere(~ok)[0].tolist()
        raise ValueError(
            f"G has an edge between nodes {i} and {j} with marks ({g[i, j]}, {g[j, i]}); only tail/arrow "
            "(directed) and tail/tail (undirected) edges are supported, not PAG circles or bidirected edges"
        )
    # G.graph[i, j] == -1 (tail at i) means the edge leaves i, which is A[i, j] = 1
    return check_adjacency(tail.astype(np.int8), "G")
