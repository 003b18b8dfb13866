"""CDIS (Dai et al., ICLR 2025): causal discovery from interventional data under possible selection bias.

Setting: an observational dataset and interventional datasets whose interventions may be soft and
whose targets are unknown, all drawn after a selection that may depend on the variables (subjects
enrolled by a condition); no latent confounders. The paper shows that pooling such data with an
intervention indicator misleads plain methods, and models each interventional dataset by an
*interventional twin graph*: the observational variables ``X``, their post-intervention twins
``X*`` for every variable the intervention changes, shared exogenous noises, the selection acting
on the pre-intervention values, and the indicator ``zeta`` pointing into the targets. CI
relations among ``X`` and ``zeta`` in the pooled (observational + k-th) data are read off the
twin graph, so each pooled dataset has a PAG of its own over ``X + {zeta}``.

What we run (the procedure of the authors' code, github.com/MarkDana/CDIS, written anew)
----------------------------------------------------------------------------------------
1. Skeleton of the observational rows: PC's adjacency search (order-independent, Fisher-z tests
   through :class:`causal_gym.stats.CITester`), keeping separating sets and the dependencies found.
2. For each interventional setting ``k``, the pooled rows ``[obs; k]`` with ``zeta`` (0 / 1) as one
   more variable: the same search over ``X + {zeta}``, the observational adjacencies kept without
   testing and the observational dependencies (given ``S``, and hence given ``S + {zeta}``) taken as
   known. Variables dependent on ``zeta`` marginally are those the setting *changed*.
3. The observational PAG (:func:`~causal_gym.discovery.pag_rules.orient`: FCI's rules with
   selection, no latents).
4. Repeat until the observational PAG stops changing: orient each pooled PAG with the
   observational PAG's ``->`` edges, ``zeta -> x`` for ``zeta``'s neighbours and its own previous
   marks as background knowledge; then refine each undetermined edge ``a - b`` of the
   observational PAG: ``a -- b`` if some pooled PAG has ``a -- b`` or two pooled PAGs orient it
   oppositely; ``a -> b`` if a pooled PAG has ``a -> b`` and that setting changed ``a``.

The result is the final PAG over ``X``: ``a -> b`` means ``a`` causes ``b`` and ``b`` is not
involved in the selection; ``a -- b`` means both are ancestors of a selection; circles are
undetermined.

Left out, or different from the authors' code
---------------------------------------------
- FCI's skeleton refinement by Possible-D-Sep is not run (the authors' ``cdis_from_data`` skips it by
  default too: without latents, PC's search from adjacencies finds the skeleton).
- R8-R10 are not run: with no latents every ``o->`` becomes ``->`` anyway (:mod:`.pag_rules`).
- The adjacency search is PC-stable (adjacency sets frozen per level) where the authors' removes
  edges as it goes, so our skeleton does not depend on the variable order.
- A refinement branch of the authors' code whose condition can never hold is not reproduced.
- The mask only splits rows into settings (one per distinct target pattern, observational rows
  first, as :func:`causal_gym.discovery.gies.environments` does); CDIS does not use which nodes were
  targeted, which is its point (unknown targets).

Encoding: ``a -> b`` is a directed edge; every other adjacency (``--``, ``o-o``, ``o--``) is
undirected (both entries 1). The PAG's marks are in ``extras["pag"]`` in causal-learn's endpoint
convention (as :mod:`~causal_gym.discovery.fci`'s), so ``--`` (selection) can be told from ``o-o``.
On finite samples the directed edges can form a cycle (tests that contradict one another orient
edges one by one, and nothing checks acyclicity, as in the authors' code): in ``causal-gym reproduce
arena --quick`` 1 and 3 of 10 units at d = 10 (obs, obs+int), 5 and 6 of 10 at d = 30.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations

import numpy as np

from causal_gym._validation import check_count, check_level
from causal_gym.discovery.pag_rules import ARROW, CIRCLE, TAIL, orient, to_causallearn
from causal_gym.discovery.result import MethodOutput

__all__ = ["cdis", "adjacency_search"]

CIPredicate = Callable[[int, int, tuple[int, ...]], bool]
"""``(a, b, cond) -> bool``: a verdict on ``a`` and ``b`` given ``cond``."""


def adjacency_search(d: int, independent: CIPredicate, max_cond: int = -1, fixed: np.ndarray | None = None,
                     known_dependent: CIPredicate | None = None,
                     ) -> tuple[np.ndarray, dict[tuple[int, int], tuple[int, ...]]]:
    """PC-stable's adjacency search over ``d`` variables.

    ``fixed`` marks pairs kept adjacent without testing; ``known_dependent(a, b, cond)`` says that a
    test's answer is known to be "dependent" (it is then not run). Returns the skeleton and the
    separating set of every removed pair ``(a, b)``, ``a < b``.
    """
    adjacent = ~np.eye(d, dtype=bool)
    sepsets: dict[tuple[int, int], tuple[int, ...]] = {}
    level = 0
    while max_cond < 0 or level <= max_cond:
        frozen = [np.flatnonzero(adjacent[a]).tolist() for a in range(d)]
        if all(len(n) - 1 < level for n in frozen):
            break
        for a, b in combinations(range(d), 2):
            if not adjacent[a, b] or (fixed is not None and fixed[a, b]):
                continue
            candidates = sorted({tuple(s) for x, y in ((a, b), (b, a))
                                 for s in combinations([k for k in frozen[x] if k != y], level)})
            for cond in candidates:
                if known_dependent is not None and known_dependent(a, b, cond):
                    continue
                if independent(a, b, cond):
                    adjacent[a, b] = adjacent[b, a] = False
                    sepsets[(a, b)] = cond
                    break
        level += 1
    return adjacent, sepsets


def cdis(data: np.ndarray, mask: np.ndarray | None = None, *, alpha: float = 0.05, max_cond: int = -1,
         max_rounds: int = 100) -> MethodOutput:
    """Run CDIS.

    Parameters
    ----------
    data : (n, d) array
    mask : (n, d) bool array, optional
        Splits the rows into the observational rows (no target) and one setting per target pattern;
        without it (or without interventional rows) the result is the observational PAG.

    Options
    -------
    alpha : float
        Level of the Fisher-z CI tests (the authors' default 0.05).
    max_cond : int
        Largest conditioning set of the adjacency searches, -1 for none (the authors' default).
    max_rounds : int
        Cap on the refinement rounds of step 4 (it converges in a few; the cap guards against
        contradictory tests making it cycle).

    Returns
    -------
    MethodOutput
        ``graph``: the final PAG in the encoding (module docstring).

    Extras
    ------
    pag, observational_pag : (d, d) int8 arrays
        The final and the observational-only PAG, causal-learn endpoint convention (``pag[i, j]``
        the mark at ``i``: 0 none, -1 tail, 1 arrowhead, 2 circle).
    selection_edges : list of [a, b]
        Pairs ``a -- b`` (``a < b``): both ancestors of a selection.
    changed : list of list of int
        Per setting, the variables dependent on its indicator.
    settings : list of list of int
        The targets of each setting as the mask has them (not used by the algorithm).
    rounds : int
        Refinement rounds run.

    Raises
    ------
    ValueError
        If the mask leaves no observational row, or on a bad option.
    """
    from causal_gym.discovery.gies import environments
    from causal_gym.stats import CITester

    alpha = check_level(alpha, "alpha")
    max_cond = check_count(max_cond, "max_cond", -1)
    max_rounds = check_count(max_rounds, "max_rounds")
    blocks, targets = environments(data, mask)
    if targets[0]:
        raise ValueError("CDIS needs observational rows (rows whose mask is all False)")
    d = data.shape[1]
    zeta = d
    observational = CITester(blocks[0], test="fisherz")
    dependencies: set[tuple[int, int, tuple[int, ...]]] = set()

    def independent_obs(a: int, b: int, cond: tuple[int, ...]) -> bool:
        verdict = observational.pvalue(a, b, cond) > alpha
        if not verdict:
            dependencies.add((a, b, cond))
        return verdict

    skeleton, sepsets = adjacency_search(d, independent_obs, max_cond)
    pooled = []
    for block in blocks[1:]:
        stacked = np.column_stack([np.vstack([blocks[0], block]),
                                   np.r_[np.zeros(len(blocks[0])), np.ones(len(block))]])
        tester = CITester(stacked, test="fisherz")
        fixed = np.zeros((d + 1, d + 1), dtype=bool)
        fixed[:d, :d] = skeleton

        def known(a: int, b: int, cond: tuple[int, ...]) -> bool:
            if b == zeta:
                return False
            return (a, b, tuple(c for c in cond if c != zeta)) in dependencies

        def independent_k(a: int, b: int, cond: tuple[int, ...], tester: CITester = tester) -> bool:
            return tester.pvalue(a, b, cond) > alpha

        skeleton_k, sepsets_k = adjacency_search(d + 1, independent_k, max_cond, fixed, known)
        changed = [x for x in range(d) if not independent_k(x, zeta, ())]
        pooled.append((skeleton_k, sepsets_k, changed, tester.n_calls))

    obs_pag = orient(skeleton, sepsets)
    current = obs_pag.copy()
    previous = [np.zeros((d + 1, d + 1), dtype=np.int8) for _ in pooled]
    rounds = 0
    while pooled and rounds < max_rounds:
        rounds += 1
        directed = (current == ARROW) & (current.T == TAIL)
        for k, (skeleton_k, sepsets_k, _, _) in enumerate(pooled):
            background = previous[k].copy()
            background[:d, :d][directed] = ARROW
            background[:d, :d][directed.T] = TAIL
            into = np.flatnonzero(skeleton_k[zeta, :d])
            background[zeta, into], background[into, zeta] = ARROW, TAIL
            previous[k] = orient(skeleton_k, sepsets_k, background)
        refined = current.copy()
        for a, b in zip(*np.nonzero(current)):
            a, b = int(a), int(b)
            if current[a, b] != CIRCLE and current[b, a] != CIRCLE:
                continue
            for (_, _, changed, _), pk in zip(pooled, previous):
                if pk[a, b] == TAIL and pk[b, a] == TAIL:
                    _set_edge(refined, a, b, TAIL, TAIL)
                    break
                if pk[a, b] == ARROW and pk[b, a] == TAIL and a in changed:
                    _set_edge(refined, a, b, TAIL, ARROW)
                    break
            forward = any(pk[a, b] == ARROW and pk[b, a] == TAIL for pk in previous)
            backward = any(pk[b, a] == ARROW and pk[a, b] == TAIL for pk in previous)
            if forward and backward:
                _set_edge(refined, a, b, TAIL, TAIL)
        if np.array_equal(refined, current):
            break
        current = refined

    pag = to_causallearn(current)
    directed = (current == ARROW) & (current.T == TAIL)
    graph = ((current != 0) & ~directed.T).astype(np.int8)
    selection = (current == TAIL) & (current.T == TAIL)
    extras = {
        "pag": pag,
        "observational_pag": to_causallearn(obs_pag),
        "selection_edges": [[int(a), int(b)] for a, b in zip(*np.nonzero(np.triu(selection)))],
        "changed": [changed for _, _, changed, _ in pooled],
        "settings": targets[1:],
        "rounds": rounds,
    }
    n_tests = observational.n_calls + sum(n for *_, n in pooled)
    return MethodOutput(graph=graph, extras=extras, n_tests=n_tests)


def _set_edge(marks: np.ndarray, a: int, b: int, at_a: int, at_b: int) -> None:
    """Set the marks of ``a``-``b`` where they are circles, never making ``<->``."""
    if marks[a, b] == CIRCLE and not (at_b == ARROW and marks[b, a] == ARROW):
        marks[a, b] = at_b
    if marks[b, a] == CIRCLE and not (at_a == ARROW and marks[a, b] == ARROW):
        marks[b, a] = at_a
