"""XGES (method ``xges``): its CPDAG against our GES and against the brute-force optimum of the same BIC."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from causallearn.utils.PDAG2DAG import pdag2dag

from causal_gym import scm
from causal_gym.discovery import run
from causal_gym.discovery.bic_score import GaussianBIC
from causal_gym.graphs import dag_to_cpdag, from_causallearn, is_cpdag, to_causallearn

pytest.importorskip("xges")


def simulate(seed: int, d: int, n: int, degree: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng([7, seed])
    model = scm.SCM.random(scm.erdos_renyi_dag(d, degree, rng=rng), mechanism="linear", rng=rng)
    return model.sample(n, rng=rng)


def best_dag(data: np.ndarray) -> tuple[float, np.ndarray]:
    """The BIC-optimal DAG by exhaustion: for every node order, each node takes its best parent set
    among its predecessors (the optimum over all DAGs is the best of these)."""
    score = GaussianBIC.from_data(data)
    d = data.shape[1]
    best, arg = -np.inf, None
    for order in itertools.permutations(range(d)):
        total, dag = 0.0, np.zeros((d, d), dtype=np.int8)
        for position, node in enumerate(order):
            sets = [s for r in range(position + 1) for s in itertools.combinations(order[:position], r)]
            value, parents = max(((score.local(node, s), s) for s in sets), key=lambda c: c[0])
            total += value
            dag[list(parents), node] = 1
        if total > best + 1e-9:
            best, arg = total, dag
    return best, arg


def test_xges_scores_at_least_as_high_as_ges_on_random_linear_gaussian_data():
    # XGES searches the same BIC (our GaussianBIC): its class should never score below GES's.
    better = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        d = int(rng.integers(6, 16))
        data = simulate(seed, d, int(rng.integers(200, 1000)), float(rng.uniform(1.5, 3.5)))
        ours, ges = run("xges", data), run("ges_fast", data)
        assert is_cpdag(ours.graph)
        # the reported score is the BIC of a member DAG of the class (causal-learn's extension), recomputed
        member = from_causallearn(pdag2dag(to_causallearn(ours.graph)))
        assert ours.extras["score"] == pytest.approx(GaussianBIC.from_data(data).total(member), abs=1e-6)
        assert ours.extras["score"] >= ges.extras["score"] - 1e-8 * abs(ges.extras["score"]), seed
        better += ours.extras["score"] > ges.extras["score"] + 1e-6
    assert better >= 1  # the two searches are not the same: XGES's interleaving finds better classes


def test_xges_finds_the_bic_optimal_class_on_small_graphs():
    # d <= 5: the optimum over all DAGs by exhaustion, whose CPDAG XGES should return.
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        data = simulate(100 + seed, int(rng.integers(3, 6)), int(rng.integers(100, 1000)))
        best, dag = best_dag(data)
        result = run("xges", data)
        assert result.graph.tolist() == dag_to_cpdag(dag).tolist(), seed
        assert result.extras["score"] == pytest.approx(best, abs=1e-6)


def test_xges_identifies_a_collider():
    rng = np.random.default_rng(0)
    a, c = rng.normal(size=800), rng.normal(size=800)
    data = np.column_stack([a, a + c + rng.normal(size=800), c, c + rng.normal(size=800)])
    # a -> b <- c is compelled; c -- d stays undirected (no arrow points into c)
    assert run("xges", data).graph.tolist() == [[0, 1, 0, 0], [0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0]]


def test_xges_options_and_errors():
    data = simulate(0, 5, 300)
    with pytest.raises(ValueError, match="scorer"):
        run("xges", data, scorer="fast")
    with pytest.raises(ValueError, match="ridge applies to scorer='causal_gym' only"):
        run("xges", data, scorer="numba", ridge=1e-8)
    with pytest.raises(ValueError, match="extended_search"):
        run("xges", data, extended_search="yes")
    collinear = np.column_stack([data, data[:, 0] + data[:, 1]])
    with pytest.raises(ValueError, match="linear combination"):
        run("xges", collinear)
    graph = run("xges", collinear, ridge=1e-8).graph  # scored with the variance floor: the exact parents found
    assert graph[0, 5] + graph[5, 0] > 0 and graph[1, 5] + graph[5, 1] > 0
    # XGES-0 (no extended search) is still a CPDAG that scores no better than XGES
    full, zero = run("xges", data), run("xges", data, extended_search=False)
    assert is_cpdag(zero.graph) and zero.extras["score"] <= full.extras["score"] + 1e-9


def test_missing_xges_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "xges", None)  # makes `import xges` raise ImportError
    with pytest.raises(ImportError, match=r"pip install --no-deps xges==0\.1\.6"):
        run("xges", simulate(0, 4, 200))


@pytest.mark.slow
def test_package_numba_scorer_gives_the_same_class():
    # the package's own compiled BIC (about 15 s of numba compilation) against ours
    for seed in range(3):
        data = simulate(200 + seed, 12, 600)
        assert run("xges", data, scorer="numba").graph.tolist() == run("xges", data).graph.tolist()
