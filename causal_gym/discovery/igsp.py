"""IGSP (Wang, Solus, Yang & Uhler, NeurIPS 2017): greedy search over permutations with interventions.

What the search does
--------------------
A permutation ``pi`` of the nodes defines its minimal I-MAP ``G_pi``: ``pi_a -> pi_b`` (``a < b``)
unless ``pi_a _||_ pi_b | {pi_c : c < b} \\ {pi_a}``. GSP (Solus, Wang & Uhler) walks between
minimal I-MAPs by reversing *covered* arrows (``i -> j`` with ``pa(j) = pa(i) + {i}``), which keeps
the graph an I-MAP and drops every arrow that the new order makes unnecessary; it moves to any
sparser neighbour at once and otherwise explores equally sparse ones depth-first, up to ``depth``
reversals deep. IGSP restricts the reversals to *I-covered* arrows and, among graphs of equal
sparsity, prefers fewer *I-contradicting* arrows. With the interventional settings ``I`` (sets of
targets) and invariance tests of a variable's distribution between the observational rows and a
setting's rows (:class:`causal_gym.stats.invariance.InvarianceTester`):

- ``i -> j`` is I-covered if it is covered and, when ``{i}`` is a setting, ``j``'s marginal does not
  change under it (otherwise the data say ``i`` is an ancestor of ``j``: never reverse);
- ``i -> j`` is I-contradicting if (a) some ``S`` within ``j``'s other neighbours makes ``j | S``
  invariant under every setting that targets ``i`` and not ``j`` (there is at least one), or (b) some
  setting that targets ``j`` and not ``i`` changes ``i | S`` for every such ``S`` of ``i``'s.
  When every setting has one target these reduce, as in the paper, to marginal tests: ``{i}``
  leaves ``j`` invariant, or ``{j}`` changes ``i``.

Each of ``n_restarts`` runs starts from a minimum-degree elimination order of the estimated
conditional-independence graph (``i - j`` unless ``i _||_ j`` given all the others; ties broken
by the seeded generator) and ends at the best graph it met (fewest arrows, then fewest
I-contradicting ones); the best over the runs is returned. Without interventional rows this is
GSP. The CI tests (Fisher-z through :class:`causal_gym.stats.CITester`) use the observational rows
only, as in the paper; the rows with a target serve the invariance tests alone.

Settings are read from the mask as :func:`causal_gym.discovery.gies.environments` reads them: one
setting per distinct target pattern. The reference implementation is the ``causaldag`` /
``graphical_model_learning`` package of the authors' group, whose defaults (``alpha = alpha_inv =
1e-3`` in CausalArena's wrapper, depth 4, 5 runs) are ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import chain, combinations
from typing import TYPE_CHECKING

import numpy as np

from causal_gym._validation import as_generator, check_count, check_level
from causal_gym.discovery.result import MethodOutput

if TYPE_CHECKING:
    from causal_gym.stats.invariance import InvarianceTester

__all__ = ["igsp", "minimal_imap", "min_degree_order"]


def minimal_imap(order: list[int], independent: Callable[[int, int, list[int]], bool]) -> np.ndarray:
    """The minimal I-MAP of ``order``: ``a -> b`` unless ``independent(a, b, predecessors of b but a)``."""
    d = len(order)
    dag = np.zeros((d, d), dtype=bool)
    for position, b in enumerate(order):
        before = order[:position]
        for a in before:
            if not independent(a, b, [c for c in before if c != a]):
                dag[a, b] = True
    return dag


def min_degree_order(adjacency: np.ndarray, rng: np.random.Generator) -> list[int]:
    """A perfect-elimination-style order: repeatedly eliminate a node of least degree (ties drawn at
    random), joining its neighbours; the order is the elimination sequence reversed, so nodes that
    were eliminated first (sinks of the moral graph) come last."""
    graph = adjacency.astype(bool) | adjacency.astype(bool).T
    np.fill_diagonal(graph, False)
    remaining = list(range(len(graph)))
    eliminated = []
    while remaining:
        degrees = graph[np.ix_(remaining, remaining)].sum(axis=0)
        candidates = [remaining[k] for k in np.flatnonzero(degrees == degrees.min())]
        node = candidates[int(rng.integers(len(candidates)))]
        neighbours = [k for k in remaining if graph[node, k]]
        graph[np.ix_(neighbours, neighbours)] = True
        graph[neighbours, neighbours] = False
        remaining.remove(node)
        eliminated.append(node)
    return eliminated[::-1]


def _subsets(nodes: list[int]) -> Iterator[tuple[int, ...]]:
    return chain.from_iterable(combinations(nodes, r) for r in range(len(nodes) + 1))


class _Search:
    """The tests and moves of one IGSP call (state: the testers and their caches)."""

    def __init__(self, data: np.ndarray, mask: np.ndarray | None, alpha: float, alpha_inv: float) -> None:
        from causal_gym.discovery.gies import environments
        from causal_gym.stats import CITester
        from causal_gym.stats.invariance import InvarianceTester

        blocks, targets = environments(data, mask)
        if targets[0]:
            raise ValueError("IGSP needs observational rows (rows whose mask is all False) for its CI tests")
        self.alpha, self.alpha_inv = alpha, alpha_inv
        self.ci = CITester(blocks[0], test="fisherz")
        self.settings = [(frozenset(t), InvarianceTester(blocks[0], b)) for t, b in zip(targets[1:], blocks[1:])]
        self.single = all(len(t) == 1 for t, _ in self.settings)
        self.of_node = {next(iter(t)): tester for t, tester in self.settings if len(t) == 1}

    def independent(self, a: int, b: int, cond: list[int]) -> bool:
        return self.ci.pvalue(a, b, cond) > self.alpha

    def varies(self, tester: InvarianceTester, j: int, cond: Iterable[int] = ()) -> bool:
        return tester.pvalue(j, cond) <= self.alpha_inv

    def n_invariance_tests(self) -> int:
        return sum(tester.n_calls for _, tester in self.settings)

    # -- arrows ------------------------------------------------------------------------------
    def i_covered(self, dag: np.ndarray) -> list[tuple[int, int]]:
        out = []
        for i, j in zip(*np.nonzero(dag)):
            parents_j = dag[:, j].copy()
            parents_j[i] = False
            if np.array_equal(parents_j, dag[:, i]):
                tester = self.of_node.get(int(i))
                if tester is None or not self.varies(tester, int(j)):
                    out.append((int(i), int(j)))
        return out

    def contradicting(self, dag: np.ndarray) -> int:
        return sum(self._contradicts(int(i), int(j), dag) for i, j in zip(*np.nonzero(dag)))

    def _contradicts(self, i: int, j: int, dag: np.ndarray) -> bool:
        if self.single:
            on_i, on_j = self.of_node.get(i), self.of_node.get(j)
            return (on_i is not None and not self.varies(on_i, j)) or (on_j is not None and self.varies(on_j, i))
        skeleton = dag | dag.T
        on_i_only = [tester for t, tester in self.settings if i in t and j not in t]
        if on_i_only:
            others = [k for k in np.flatnonzero(skeleton[j]).tolist() if k != i]
            if any(all(not self.varies(tester, j, s) for tester in on_i_only) for s in _subsets(others)):
                return True
        others = [k for k in np.flatnonzero(skeleton[i]).tolist() if k != j]
        return any(all(self.varies(tester, i, s) for s in _subsets(others))
                   for t, tester in self.settings if j in t and i not in t)

    def reverse(self, dag: np.ndarray, i: int, j: int) -> np.ndarray:
        """Reverse the covered arrow ``i -> j`` and drop the arrows into ``i`` and ``j`` the new order makes
        unnecessary (the parents of ``i`` are the only candidates)."""
        out = dag.copy()
        out[i, j], out[j, i] = False, True
        parents = np.flatnonzero(dag[:, i]).tolist()
        for p in parents:
            rest = [q for q in parents if q != p]
            if self.independent(i, p, [*rest, j]):
                out[p, i] = False
            if self.independent(j, p, rest):
                out[p, j] = False
        return out

    # -- one run -----------------------------------------------------------------------------
    def moves(self, dag: np.ndarray, visited: set[bytes], rng: np.random.Generator) -> list[np.ndarray]:
        seen, out = set(visited), []
        for i, j in self.i_covered(dag):
            graph = self.reverse(dag, i, j)
            key = graph.tobytes()
            if key not in seen:
                seen.add(key)
                out.append(graph)
        rng.shuffle(out)
        return out

    def run(self, order: list[int], depth: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        current = minimal_imap(order, self.independent)
        best = (current, self.contradicting(current))
        visited = {current.tobytes()}
        trace: list[tuple[np.ndarray, list[np.ndarray]]] = []
        neighbours = self.moves(current, visited, rng)
        while True:
            edges = current.sum()
            sparser = [g for g in neighbours if g.sum() < edges]
            if sparser:  # restart the depth-first search from the sparsest neighbour
                fewest = min(g.sum() for g in sparser)
                candidates = [g for g in sparser if g.sum() == fewest]
                current = candidates[int(rng.integers(len(candidates)))]
                best = (current, self.contradicting(current))
                visited, trace = {current.tobytes()}, []
            elif neighbours and len(trace) < depth:
                trace.append((current, neighbours))
                current = neighbours.pop()
                visited.add(current.tobytes())
                contradicting = self.contradicting(current)
                if contradicting < best[1]:
                    best = (current, contradicting)
            elif trace:
                current, neighbours = trace.pop()
                neighbours = [g for g in neighbours if g.tobytes() not in visited]
                continue
            else:
                return best
            neighbours = self.moves(current, visited, rng)


def igsp(data: np.ndarray, mask: np.ndarray | None = None, *, alpha: float = 1e-3, alpha_inv: float = 1e-3,
         n_restarts: int = 5, depth: int = 4, seed: int = 0) -> MethodOutput:
    """Run IGSP (GSP when there are no interventional rows).

    Parameters
    ----------
    data : (n, d) array
    mask : (n, d) bool array, optional
        Intervention mask (passed by :func:`causal_gym.discovery.run`); rows without a target are
        the observational rows, the CI tests' data; without a mask every row is observational.

    Options
    -------
    alpha : float
        Level of the Fisher-z CI tests (an arrow is kept when its test rejects at ``alpha``).
    alpha_inv : float
        Level of the invariance tests (a distribution "changes" when its test rejects).
    n_restarts : int
        Runs from independent starting orders; the best result is returned.
    depth : int
        Maximum number of consecutive covered-arrow reversals that do not make the graph sparser.
    seed : int
        Seeds the tie-breaks of the starting orders and the order in which moves are tried.

    Returns
    -------
    MethodOutput
        ``graph`` is a DAG.

    Extras
    ------
    n_contradicting : int
        I-contradicting arrows of the returned DAG (0 without interventions).
    runs : list of dict
        ``{"edges": ..., "contradicting": ...}`` of each run's result.
    settings : list of list of int
        The targets of each interventional setting, in the order of the invariance testers.
    n_invariance_tests : int
        Invariance tests requested (cache hits included).

    Raises
    ------
    ValueError
        If the mask leaves no observational row, or on a bad option.
    """
    alpha = check_level(alpha, "alpha")
    alpha_inv = check_level(alpha_inv, "alpha_inv")
    n_restarts = check_count(n_restarts, "n_restarts")
    depth = check_count(depth, "depth", 0)
    rng = as_generator(check_count(seed, "seed", 0), "seed")
    search = _Search(data, mask, alpha, alpha_inv)
    d = data.shape[1]
    ci_graph = np.zeros((d, d), dtype=bool)
    for a, b in combinations(range(d), 2):
        ci_graph[a, b] = ci_graph[b, a] = not search.independent(a, b, [k for k in range(d) if k not in (a, b)])
    results = [search.run(min_degree_order(ci_graph, rng), depth, rng) for _ in range(n_restarts)]
    best, contradicting = min(results, key=lambda r: (int(r[0].sum()), r[1]))
    extras = {
        "n_contradicting": int(contradicting),
        "runs": [{"edges": int(g.sum()), "contradicting": int(c)} for g, c in results],
        "settings": [sorted(t) for t, _ in search.settings],
        "n_invariance_tests": search.n_invariance_tests(),
    }
    return MethodOutput(graph=best.astype(np.int8), extras=extras, n_tests=search.ci.n_calls)
