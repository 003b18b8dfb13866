"""CausalArena methods (GIES, DAGMA, RandomRegress), scoring and analyses.

References: GES from causal-learn on the same observational rows, interventional essential graphs
checked by brute-force enumeration of orientations, scikit-learn regressions for RandomRegress'
definition, and hand-computed or brute-force counts for the metrics and analyses.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from causal_gym import discovery
from causal_gym.discovery import INTERVENTIONAL_METHODS, run, supports_interventions
from causal_gym.discovery.gies import environments
from causal_gym.discovery.result import MethodOutput
from causal_gym.envs.arena.analysis import (
    interaction_scores,
    overall_win_rates,
    runtime_summary,
    slice_scores,
    win_rates,
)
from causal_gym.envs.arena.protocol import ArenaProtocol, sample_split
from causal_gym.envs.arena.scoring import (
    METRICS,
    average_replicates,
    evaluate,
    orient_randomly,
    score_graph,
)
from causal_gym.graphs import dag_to_cpdag, essential_graph, is_cpdag, is_dag, meek
from causal_gym.metrics import directed_edge_scores, shd, sid
from causal_gym.scm import SCM, erdos_renyi_dag

pytest.importorskip("gies")

LARGE = ArenaProtocol("large", n_obs=3000, n_int=3000)


def correct_arrows(graph: np.ndarray, truth: np.ndarray) -> int:
    """Directed edges of ``graph`` that the true DAG has with the same orientation."""
    return int(((graph == 1) & (graph.T == 0) & (truth == 1)).sum())


def is_essential_for(graph: np.ndarray, family: list[tuple[int, ...]]) -> bool:
    """Brute force: some acyclic orientation of the undirected edges has ``graph`` as essential graph."""
    undirected = [(i, j) for i, j in zip(*np.nonzero(np.triu(graph & graph.T)))]
    assert len(undirected) <= 14
    for flips in itertools.product((False, True), repeat=len(undirected)):
        dag = graph.copy()
        for (i, j), flip in zip(undirected, flips):
            dag[(i, j) if flip else (j, i)] = 0
        if is_dag(dag) and np.array_equal(essential_graph(dag, family), graph):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# GIES
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gies_cases():
    cases = []
    for seed in range(4):
        truth = erdos_renyi_dag(8, 2.5, rng=seed)
        scm = SCM.random(truth, "linear", rng=50 + seed)
        ds = sample_split(scm, LARGE, seed=seed, pool=[0, 2, 4, 6])
        cases.append((truth, ds, run("gies", ds.data, ds.mask)))
    return cases


def test_gies_with_interventions_orients_more_true_edges_than_ges(gies_cases):
    for truth, ds, result in gies_cases:
        ges = run("ges", ds.data[ds.regime == 0])
        assert correct_arrows(result.graph, truth) > correct_arrows(ges.graph, truth)


def test_gies_returns_an_interventional_essential_graph(gies_cases):
    for truth, ds, result in gies_cases:
        graph = result.graph
        assert np.array_equal(meek(graph), graph)
        assert is_essential_for(graph, ds.target_family)
        assert [e["targets"] for e in result.extras["environments"]] == [[], [0], [2], [4], [6]]
    matches = sum(np.array_equal(r.graph, essential_graph(t, ds.target_family)) for t, ds, r in gies_cases)
    assert matches >= 3


def test_gies_without_mask_returns_a_cpdag(gies_cases):
    truth, ds, _ = gies_cases[0]
    result = run("gies", ds.data[ds.regime == 0])
    assert is_cpdag(result.graph)
    assert shd(dag_to_cpdag(truth), result.graph) <= 1


def test_environments_group_rows_by_mask_pattern():
    data = np.arange(12.0).reshape(6, 2)
    mask = np.array([[0, 1], [0, 0], [1, 0], [0, 1], [0, 0], [1, 1]], dtype=bool)
    blocks, targets = environments(data, mask)
    assert targets == [[], [0], [0, 1], [1]]
    assert [b[:, 0].tolist() for b in blocks] == [[2.0, 8.0], [4.0], [10.0], [0.0, 6.0]]


def test_masks_are_validated_and_reserved_for_interventional_methods(gies_cases):
    _, ds, _ = gies_cases[0]
    assert INTERVENTIONAL_METHODS == ("gies", "gies_fast", "sdcd", "igsp", "cdis", "avici", "alternet") and supports_interventions("gies") and not supports_interventions("pc")
    with pytest.raises(ValueError, match="does not use intervention masks"):
        run("pc", ds.data, ds.mask)
    with pytest.raises(ValueError, match="mask must have the data's shape"):
        run("gies", ds.data, ds.mask[:10])
    everywhere = ds.mask.copy()
    everywhere[:, 3] = True
    with pytest.raises(ValueError, match=r"node\(s\) \[3\] are intervened on in every row"):
        run("gies", ds.data, everywhere)


# ---------------------------------------------------------------------------------------------
# DAGMA and RandomRegress
# ---------------------------------------------------------------------------------------------


def easy_linear(seed: int, d: int = 8, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    truth = erdos_renyi_dag(d, 2.0, rng=seed)
    scm = SCM.random(truth, "linear", rng=10 + seed, sigma_range=(1.0, 1.0))
    return truth, scm.sample(n, rng=seed)


def test_dagma_returns_a_dag_that_recovers_an_easy_linear_graph():
    pytest.importorskip("dagma")
    truth, data = easy_linear(0)
    result = run("dagma", data)
    assert is_dag(result.graph) and result.extras["is_dag"]
    assert directed_edge_scores(truth, result.graph).f1 >= 0.9
    assert np.array_equal(result.graph, (np.abs(result.extras["weights"]) > 0).astype(np.int8))
    assert np.array_equal(result.extras["edge_scores"] >= 0.3, result.graph == 1)


def test_random_regress_matches_its_definition_on_a_hand_case():
    from sklearn.linear_model import LassoLarsIC, LinearRegression

    rng = np.random.default_rng(0)
    n = 2000
    x0 = rng.normal(size=n)
    x1 = 2.0 * x0 + rng.normal(size=n)
    x2 = rng.normal(size=n)
    x3 = x1 - 1.5 * x2 + rng.normal(size=n)
    data = np.column_stack([x0, x1, x2, x3])
    result = run("random_regress", data, seed=5)
    order = result.extras["order"]
    assert order == np.random.default_rng(5).permutation(4).tolist()
    expected = np.zeros((4, 4))
    for k in range(1, 4):
        before, target = order[:k], order[k]
        scale = np.abs(LinearRegression().fit(data[:, before], data[:, target]).coef_)
        coef = LassoLarsIC(criterion="bic").fit(data[:, before] * scale, data[:, target]).coef_ * scale
        expected[before, target] = coef
    assert np.allclose(result.extras["weights"], expected)
    position = {v: k for k, v in enumerate(order)}
    edges = list(zip(*np.nonzero(result.graph)))
    # every edge follows the random order, and the dependent pairs of the data are found
    assert all(position[i] < position[j] for i, j in edges)
    skeleton = {frozenset(e) for e in edges}
    assert {frozenset((0, 1)), frozenset((1, 3)), frozenset((2, 3))} <= skeleton


def test_random_regress_is_fixed_by_its_seed():
    _, data = easy_linear(1, d=6, n=400)
    a, b = run("random_regress", data, seed=3), run("random_regress", data, seed=3)
    assert np.array_equal(a.graph, b.graph) and a.extras["order"] == b.extras["order"]


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------


def test_random_orientation_is_acyclic_seeded_and_fair():
    truth = np.zeros((7, 7), dtype=np.int8)
    for i, j in [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (5, 4), (4, 6)]:
        truth[i, j] = 1
    cpdag = dag_to_cpdag(truth)  # undirected triangle 0, 1, 2 with 2 -- 3; then 3 -> 4 <- 5, 4 -> 6
    undirected = list(zip(*np.nonzero(np.triu(cpdag & cpdag.T))))
    assert len(undirected) == 4
    forward = np.zeros(len(undirected))
    for seed in range(400):
        oriented = orient_randomly(cpdag, seed)
        assert is_dag(oriented)
        assert np.array_equal(oriented | oriented.T, cpdag | cpdag.T)
        assert np.all(oriented[(cpdag == 1) & (cpdag.T == 0)] == 1)
        forward += [oriented[i, j] for i, j in undirected]
    assert np.array_equal(orient_randomly(cpdag, 7), orient_randomly(cpdag, 7))
    assert np.all(np.abs(forward / 400 - 0.5) < 0.1)


def test_random_orientation_of_a_pdag_with_a_partially_directed_cycle_stays_acyclic():
    """0 -> 1 -- 2 -- 0 (plus 2 -- 3 -- 4): the permutation closes 0 -> 1 -> 2 -> 0 when it ranks 1 < 2 < 0;
    then the repair orients along the arrows instead, and otherwise the plain permutation rule holds."""
    pdag = np.zeros((5, 5), dtype=np.int8)
    pdag[0, 1] = 1
    for i, j in [(1, 2), (2, 0), (2, 3), (3, 4)]:
        pdag[i, j] = pdag[j, i] = 1
    repaired = 0
    for seed in range(300):
        oriented = orient_randomly(pdag, seed)
        assert is_dag(oriented) and oriented[0, 1] == 1 and np.array_equal(oriented | oriented.T, pdag | pdag.T)
        rank = np.empty(5, dtype=np.int64)
        rank[np.random.default_rng(seed).permutation(5)] = np.arange(5)
        plain = pdag & ((pdag != pdag.T) | (rank[:, None] < rank[None, :]))  # the permutation rule, by hand
        if is_dag(plain):
            assert np.array_equal(oriented, plain)
        else:
            repaired += 1
            assert rank[1] < rank[2] < rank[0]
    assert 20 < repaired < 80  # about 1 / 6 of the permutations


def test_score_graph_on_a_hand_case():
    truth = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2
    cpdag = dag_to_cpdag(truth)  # 0 -- 1 -- 2
    perfect = score_graph(truth, truth, orient_seed=0)
    assert (perfect["f1"], perfect["shd"], perfect["sid"], perfect["cpdag_shd"]) == (1.0, 0, 0, 0)
    scores = score_graph(truth, cpdag, orient_seed=4)
    oriented = orient_randomly(cpdag, 4)
    assert scores["f1"] == directed_edge_scores(truth, oriented).f1
    assert scores["shd"] == shd(truth, oriented) and scores["sid"] == sid(truth, oriented)
    assert scores["cpdag_shd"] == 0 and scores["n_oriented"] == 2 and scores["auroc"] is None
    # with the chain's source intervened on, the truth's essential graph is the DAG itself
    interventional = score_graph(truth, cpdag, orient_seed=4, targets=[(0,)])
    assert interventional["cpdag_shd"] == 2
    ranked = score_graph(truth, truth, orient_seed=0, edge_scores=truth + 0.1 * truth.T)
    assert ranked["auroc"] == 1.0 and ranked["ap"] == 1.0
    assert set(perfect) == set(METRICS)


@pytest.fixture(scope="module")
def small_splits():
    scm = SCM.random(erdos_renyi_dag(6, 2.0, rng=1), "linear", rng=2)
    meta = {"unit": "u1", "factors": {"family": "er"}}
    return {name: sample_split(scm, name, seed=1, meta=meta) for name in ("obs", "obs+int")}


def test_evaluate_records_every_outcome(small_splits, monkeypatch):
    obs, mixed = small_splits["obs"], small_splits["obs+int"]
    ok = evaluate("gies", mixed)
    assert ok["status"] == "ok" and ok["unit"] == "u1" and ok["family"] == "er" and ok["protocol"] == "obs+int"
    assert ok["f1"] is not None and ok["runtime"] > 0
    unsupported = evaluate("pc", mixed)
    assert unsupported["status"] == "unsupported" and unsupported["f1"] is None
    failed = evaluate("pc", obs, options={"alpha": 2.0})
    assert failed["status"] == "failed" and "alpha" in failed["error"] and failed["shd"] is None
    timed_out = evaluate("notears", obs, timeout=0.01)
    assert timed_out["status"] == "timeout" and timed_out["runtime"] == 0.01 and timed_out["f1"] is None
    monkeypatch.setitem(discovery._METHODS, "broken", lambda data: MethodOutput(np.zeros((2, 2)), {}))
    invalid = evaluate("broken", obs)
    assert invalid["status"] == "invalid" and invalid["f1"] is None


def test_evaluate_in_a_worker_matches_in_process(small_splits):
    obs = small_splits["obs"]
    here, there = evaluate("pc", obs), evaluate("pc", obs, timeout=60)
    assert {k: here[k] for k in METRICS} == {k: there[k] for k in METRICS}


def test_average_replicates_keeps_failures():
    rows = [
        {"method": "a", "unit": "u", "protocol": "obs", "replicate": r, "family": "er", "status": s,
         "runtime": 1.0 + r, **{m: (float(r) if s == "ok" else None) for m in METRICS}}
        for r, s in enumerate(["ok", "ok", "timeout", "ok", "failed"])
    ]
    (avg,) = average_replicates(rows)
    assert avg["status"] == "partial" and avg["n_replicates"] == 5 and avg["n_ok"] == 3
    assert avg["statuses"] == {"ok": 3, "timeout": 1, "failed": 1}
    assert avg["f1"] == pytest.approx((0 + 1 + 3) / 3) and avg["family"] == "er"
    (none_ok,) = average_replicates([r for r in rows if r["status"] != "ok"])
    assert none_ok["f1"] is None and none_ok["status"] in ("timeout", "failed")


# ---------------------------------------------------------------------------------------------
# analyses
# ---------------------------------------------------------------------------------------------


def test_interaction_scores_on_a_hand_2x2_table():
    rows = [
        {"method": "A", "family": "x", "f1": 0.5}, {"method": "A", "family": "x", "f1": 0.7},
        {"method": "A", "family": "y", "f1": 0.2},
        {"method": "B", "family": "x", "f1": 0.4},
        {"method": "B", "family": "y", "f1": 0.4}, {"method": "B", "family": "y", "f1": None},
    ]
    # F = [[0.6, 0.2], [0.4, 0.4]]: row means 0.4, 0.4; column means 0.5, 0.3; grand mean 0.4
    result = {(r["method"], r["category"]): r["interaction"] for r in interaction_scores(rows, "family")}
    assert result == pytest.approx({("A", "x"): 0.1, ("A", "y"): -0.1, ("B", "x"): -0.1, ("B", "y"): 0.1})
    sliced = {(r["method"], r["category"]): (r["n"], r["n_missing"]) for r in slice_scores(rows, "family")}
    assert sliced[("B", "y")] == (1, 1) and sliced[("A", "x")] == (2, 0)
    with pytest.raises(ValueError, match=r"cells \[\('B', 'x'\)\]"):
        interaction_scores(rows[:3] + rows[4:], "family")


def test_win_rates_match_a_brute_force_count():
    rng = np.random.default_rng(3)
    methods, units = ["m0", "m1", "m2", "m3"], range(15)
    f1 = rng.choice([0.2, 0.4, 0.6], size=(4, 15))
    shd_values = rng.choice([3.0, 5.0, 7.0], size=(4, 15))
    f1[1, 4] = np.nan  # a failed run: no score on that unit
    rows = [
        {"method": m, "unit": u, "protocol": "obs",
         "f1": None if np.isnan(f1[k, u]) else float(f1[k, u]), "shd": float(shd_values[k, u])}
        for k, m in enumerate(methods) for u in units
    ]
    table = {(r["method"], r["opponent"]): r for r in win_rates(rows)}
    for (a, ma), (b, mb) in itertools.permutations(enumerate(methods), 2):
        valid = ~np.isnan(f1[a]) & ~np.isnan(f1[b])
        f1_wins = np.sum(f1[a][valid] > f1[b][valid]) + 0.5 * np.sum(f1[a][valid] == f1[b][valid])
        shd_wins = np.sum(shd_values[a] < shd_values[b]) + 0.5 * np.sum(shd_values[a] == shd_values[b])
        row = table[(ma, mb)]
        assert row["f1_wins"] == f1_wins and row["f1_comparisons"] == valid.sum()
        assert row["shd_wins"] == shd_wins and row["shd_comparisons"] == 15
        assert row["win_rate"] == pytest.approx((f1_wins + shd_wins) / (valid.sum() + 15))
        assert row["win_rate"] + table[(mb, ma)]["win_rate"] == pytest.approx(1.0)
    overall = {r["method"]: r["win_rate"] for r in overall_win_rates(table.values())}
    assert np.mean(list(overall.values())) == pytest.approx(0.5, abs=0.02)
    with pytest.raises(ValueError, match="average replicates first"):
        win_rates(rows + rows[:1])


def test_runtime_summary_uses_successful_runs():
    rows = [
        {"method": "a", "d": 10, "status": "ok", "runtime": 1.0},
        {"method": "a", "d": 10, "status": "ok", "runtime": 3.0},
        {"method": "a", "d": 10, "status": "timeout", "runtime": 3600.0},
        {"method": "b", "d": 10, "status": "failed", "runtime": None},
    ]
    a, b = runtime_summary(rows, by=("method", "d"))
    assert (a["method"], a["d"], a["n_runs"], a["n_ok"]) == ("a", 10, 3, 2)
    assert (a["mean"], a["median"], a["max"]) == (2.0, 2.0, 3.0)
    assert a["statuses"] == {"ok": 2, "timeout": 1}
    assert b["mean"] is None and b["n_ok"] == 0



def test_dagma_never_returns_self_loops(monkeypatch):
    linear = pytest.importorskip("dagma.linear")

    def fit_with_self_weights(self, X, **kwargs):  # what the solver can return on badly scaled data
        weights = np.zeros((X.shape[1], X.shape[1]))
        weights[0, 1] = 1.5
        np.fill_diagonal(weights, 0.8)
        return weights

    monkeypatch.setattr(linear.DagmaLinear, "fit", fit_with_self_weights)
    out = run("dagma", np.random.default_rng(0).normal(size=(50, 3)))
    expected = np.zeros((3, 3), dtype=np.int8)
    expected[0, 1] = 1
    assert np.array_equal(out.graph, expected) and np.all(np.diag(out.extras["edge_scores"]) == 0)
