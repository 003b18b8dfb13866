"""Stable PC with a deletion log, graph-identical to causal-learn's
``pc(data, alpha, indep_test, stable=True, uc_rule=0, uc_priority=2)``.

The skeleton search is ours (it drives :class:`causal_gym.stats.CITester`, whose cache and
shared kernel work make PC-KCI fast) and records, for every deleted pair, the test that deleted it.
The orientation phase reproduces causal-learn's collider rule (``uc_sepset`` with priority 2) and
its Meek phase step for step; see :func:`_orient` for why :func:`causal_gym.graphs.meek` is not
used there.

causal-learn's stable skeleton search, which :func:`_skeleton` follows exactly
---------------------------------------------------------------------------------
- Levels ``depth = 0, 1, ...`` run while some node has more than ``depth + 1`` neighbours.
- At a level the graph is frozen; for ``x = 0 .. d-1`` and each neighbour ``y`` of ``x``
  (ascending), every ``S`` in ``combinations(adj(x) - {y}, depth)`` (lexicographic) is tested.
  A pair is therefore tested from both ends, and testing does *not* stop at the first
  independence: every set of the level is tried. Pairs found independent are removed together
  when the level ends.
- The separating sets kept for a removed pair are all sets of its removal level that gave
  ``p > alpha``, from either end; a triple ``x - y - z`` becomes a collider when ``y`` is in
  none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from causal_gym._validation import check_choice, check_level
from causal_gym.discovery.result import DeletionRecord, MethodOutput

if TYPE_CHECKING:
    from causal_gym.stats import CITester

__all__ = ["pc"]

Pair = tuple[int, int]


Deletion = tuple[Pair, tuple[int, ...], float, int]  # pair, conditioning set, p-value, depth


def _skeleton(tester: CITester, d: int, alpha: float) -> tuple[np.ndarray, list[Deletion],
                                                               dict[Pair, tuple[tuple[int, ...], ...]]]:
    """Stable PC skeleton: adjacency, deletions ``(pair, cond, p, depth)`` in order, sepsets."""
    adj = ~np.eye(d, dtype=bool)
    deletions: list[Deletion] = []
    sepsets: dict[Pair, list[tuple[int, ...]]] = {}
    depth = -1
    while adj.sum(axis=1).max() - 1 > depth:
        depth += 1
        removed: dict[Pair, None] = {}  # insertion-ordered set
        for x in range(d):
            neighbours = np.flatnonzero(adj[x]).tolist()
            for y in neighbours:
                pair = (min(x, y), max(x, y))
                others = [v for v in neighbours if v != y]
                for cond in combinations(others, depth):
                    p = tester.pvalue(x, y, cond)
                    if p > alpha:
                        if pair not in removed:
                            removed[pair] = None
                            deletions.append((pair, cond, p, depth))
                            sepsets[pair] = []
                        if cond not in sepsets[pair]:
                            sepsets[pair].append(cond)
        for x, y in removed:
            adj[x, y] = adj[y, x] = False
    return adj, deletions, {pair: tuple(sets) for pair, sets in sepsets.items()}


class _AncestorRecord:
    """causal-learn's ``GeneralGraph.dpath`` bookkeeping, reproduced.

    ``rec[a, b]`` True means "b was recorded as an ancestor of a". Adding ``i -> j`` makes the
    recorded ancestors of ``i`` ancestors of ``j`` and the recorded descendants of ``j``
    descendants of ``i`` -- but not ancestors of ``i`` ancestors of descendants of ``j``, so the
    record is *not* the transitive closure. causal-learn's cycle checks read this record, so
    matching its output requires the same incomplete bookkeeping.
    """

    def __init__(self, d: int) -> None:
        self.rec = np.eye(d, dtype=bool)

    def add(self, i: int, j: int) -> None:
        row_i, col_j = self.rec[i].copy(), self.rec[:, j].copy()
        self.rec[j, i] = True
        self.rec[j] |= row_i
        self.rec[:, i] |= col_j

    def rebuild(self, directed: np.ndarray) -> None:
        """Recompute from scratch after a directed edge was removed (causal-learn walks the
        edges ``(i, j), i < j`` in reverse row-major order)."""
        self.rec = np.eye(len(directed), dtype=bool)
        pairs = np.argwhere(np.triu(directed | directed.T, 1)).tolist()
        for i, j in reversed(pairs):
            if directed[i, j]:
                self.add(i, j)
            else:
                self.add(j, i)

    def is_ancestor(self, a: int, b: int) -> bool:
        """Whether ``a`` is recorded as an ancestor of ``b``."""
        return bool(self.rec[b, a])


def _adjacency_list(g: np.ndarray) -> list[Pair]:
    """causal-learn's ``find_adj`` order: pairs ``(p, q)`` of adjacent nodes, first those whose
    mark at ``q`` is a tail, then those with an arrowhead at ``q``, each in ``(q, p)`` order."""
    d = len(g)
    adjacent = g | g.T
    arrow_at = g & ~g.T  # arrow_at[p, q]: p -> q, an arrowhead at q
    tails = [(p, q) for q in range(d) for p in range(d) if adjacent[q, p] and not arrow_at[p, q]]
    heads = [(p, q) for q in range(d) for p in range(d) if arrow_at[p, q]]
    return tails + heads


def _linked(items: Sequence[tuple[int, ...]], last: Callable, first: Callable) -> list[tuple[tuple[int, ...], ...]]:
    """``[(a, b) for a, b in itertools.permutations(items, 2) if last(a) == first(b)]``, same
    order, found through a lookup table instead of scanning all pairs."""
    by_key: dict[object, list[int]] = {}
    for k, item in enumerate(items):
        by_key.setdefault(first(item), []).append(k)
    return [(a, items[k]) for n, a in enumerate(items) for k in by_key.get(last(a), ()) if k != n]


def _triples(g: np.ndarray) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]],
                                     list[tuple[int, int, int, int]]]:
    """causal-learn's unshielded triples, triangles and kites, in its enumeration order."""
    adjacent = g | g.T
    chains = [(a[0], a[1], b[1]) for a, b in _linked(_adjacency_list(g), itemgetter(1), itemgetter(0))
              if a[0] != b[1]]
    unshielded = [t for t in chains if not adjacent[t[0], t[2]]]
    triangles = [t for t in chains if adjacent[t[0], t[2]]]
    kites = [(s[0], s[1], t[1], s[2]) for s, t in _linked(triangles, itemgetter(0, 2), itemgetter(0, 2))
             if s[1] < t[1] and not adjacent[s[1], t[1]]]
    return unshielded, triangles, kites


def _orient(adj: np.ndarray, sepsets: dict[Pair, tuple[tuple[int, ...], ...]]) -> np.ndarray:
    """Colliders then Meek rules R1-R3, exactly as causal-learn's ``uc_sepset(priority=2)`` and
    ``Meek.meek`` do.

    Why not :func:`causal_gym.graphs.meek`: on a consistent pattern any Meek closure agrees, but
    PC's pattern from finite data is often inconsistent (conflicting colliders, rules pointing both
    ways). There causal-learn's result depends on its sequential order -- triples enumerated
    once, each orientation applied immediately, an orientation skipped when its head is a
    recorded ancestor of its tail (an incomplete record, :class:`_AncestorRecord`) -- whereas
    ``graphs.meek`` orients rule-by-rule in simultaneous sweeps, leaves two-way conflicts
    undirected and also applies R4. Only the sequential replay reproduces causal-learn's graph:
    on 300 random PC patterns (d = 4..10, n = 50..500, Fisher-z), ``graphs.meek(rules=(1, 2, 3))``
    after the same colliders differed from causal-learn on 14, dropping the ancestor check on 11
    and reversing the triple order on 3; this replay on none.
    """
    g = adj.copy()  # g[i, j] & ~g[j, i]: i -> j; both: i -- j
    d = len(g)
    record = _AncestorRecord(d)

    def directed(i: int, j: int) -> bool:
        return bool(g[i, j] and not g[j, i])

    def undirected(i: int, j: int) -> bool:
        return bool(g[i, j] and g[j, i])

    def orient(i: int, j: int) -> None:
        if directed(i, j):
            # causal-learn removes and re-adds an already directed edge; the removal rebuilds
            # its ancestor record from the other directed edges.
            others = g & ~g.T
            others[i, j] = False
            record.rebuild(others)
        g[j, i] = False
        record.add(i, j)

    # Colliders (priority 2: an earlier collider is never overwritten). causal-learn lists the
    # unshielded triples x - y - z, x < z, ordered by (y, x, z).
    for y in range(d):
        neighbours = np.flatnonzero(adj[y]).tolist()
        for x in neighbours:
            for z in neighbours:
                if x < z and not adj[x, z] and all(y not in s for s in sepsets[(x, z)]):
                    if not directed(y, x) and not directed(y, z):
                        orient(x, y)
                        orient(z, y)

    unshielded, triangles, kites = _triples(g)
    changed = True
    while changed:
        changed = False
        for i, j, k in unshielded:  # R1: i -> j - k, i and k non-adjacent
            if directed(i, j) and undirected(j, k) and not record.is_ancestor(k, j):
                orient(j, k)
                changed = True
        for i, j, k in triangles:  # R2: i -> j -> k and i - k
            if directed(i, j) and directed(j, k) and undirected(i, k) and not record.is_ancestor(k, i):
                orient(i, k)
                changed = True
        for i, j, k, l in kites:  # noqa: E741 -- Meek's names; R3: i - j -> l, i - k -> l, j and k non-adjacent, i - l
            if (undirected(i, j) and undirected(i, k) and directed(j, l) and directed(k, l)
                    and undirected(i, l) and not record.is_ancestor(l, i)):
                orient(i, l)
                changed = True
    return g.astype(np.int8)


def pc(data: np.ndarray, *, test: str = "fisherz", alpha: float = 0.05, **test_options: object) -> MethodOutput:
    """Stable PC (see the module docstring) with the deletion log.

    Options
    -------
    test : {"fisherz", "kci"}
        CI test of :class:`causal_gym.stats.CITester`.
    alpha : float
        Significance level; a pair is deleted when some test gives ``p > alpha``.
    **test_options
        Passed to :class:`~causal_gym.stats.CITester`; the valid ones per test are
        ``causal_gym.stats.TEST_OPTIONS[test]`` (e.g. ``max_cache_mb`` for KCI).

    Deletion log
    ------------
    One :class:`DeletionRecord` per deleted pair: the *first* test (in the search order above)
    that found the pair independent at the level where it was removed -- the test that deletes it
    in the classical, non-exhaustive PC. Records are in deletion order (by level, then by that
    test's position in the search).

    Extras
    ------
    sepsets : dict
        ``{(x, y): (S1, S2, ...)}`` for every deleted pair ``x < y``: every conditioning set of
        its removal level with ``p > alpha``, in test order (the first is the logged one).
    n_computed : int
        Distinct CI tests actually computed (``n_tests`` counts requests, cache hits included).
    """
    from causal_gym.stats import TEST_OPTIONS, CITester, strength_grade

    test = check_choice(test, ("fisherz", "kci"), "test")
    unknown = sorted(set(test_options) - set(TEST_OPTIONS[test]))
    if unknown:
        valid = ", ".join(["test", "alpha", *TEST_OPTIONS[test]])
        raise ValueError(f"unknown option(s) {unknown} for method 'pc' with test {test!r}; valid options: {valid}")
    alpha = check_level(alpha, "alpha")
    tester = CITester(data, test=test, **test_options)
    d = data.shape[1]
    adj, deletions, sepsets = _skeleton(tester, d, alpha)
    log = tuple(
        DeletionRecord(x=x, y=y, cond=tuple(sorted(cond)), test=tester.test, pvalue=float(p),
                       grade=strength_grade(p, alpha), depth=depth, order=order)
        for order, ((x, y), cond, p, depth) in enumerate(deletions)
    )
    return MethodOutput(
        graph=_orient(adj, sepsets),
        extras={"sepsets": sepsets, "n_computed": int(tester.n_computed)},
        n_tests=int(tester.n_calls),
        deletion_log=log,
    )
