"""ges_fast / gies_fast (causal_gym.discovery.greedy) against causal-learn's GES and the gies package.

The reference runs are the wrapped methods ``ges`` and ``gies``. Datasets are drawn from fixed
seeds; the default run checks 20 of each kind, ``-m slow`` the remaining 100 (120 in all).
"""

from __future__ import annotations

import numpy as np
import pytest

from causal_gym import scm
from causal_gym.discovery import methods, run, supports_interventions
from causal_gym.discovery.bic_score import GaussianBIC
from causal_gym.discovery.gies import environments
from causal_gym.discovery.greedy import GIES_MIN_GAIN, GreedySearch, essential_of_dag, ges_fast, gies_fast
from causal_gym.graphs import essential_graph, is_cpdag

pytest.importorskip("causallearn")
pytest.importorskip("gies")

FAST = range(20)
SLOW = range(20, 120)


def observational(seed: int) -> np.ndarray:
    """Linear-Gaussian data on an ER DAG: d in 4..12, n in 200..2000, expected degree 1..3."""
    rng = np.random.default_rng([7, seed])
    d = int(rng.integers(4, 13))
    n = int(rng.integers(200, 2001))
    dag = scm.erdos_renyi_dag(d, float(rng.uniform(1.0, 3.0)), rng=rng)
    return scm.SCM.random(dag, mechanism="linear", rng=rng).sample(n, rng=rng)


def interventional(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observational rows plus 0..d-1 hard-intervention environments (mostly single targets,
    uniform or fixed values), d in 4..10, 100..800 observational rows, denser graphs."""
    rng = np.random.default_rng([8, seed])
    d = int(rng.integers(4, 11))
    n = int(rng.integers(100, 801))
    dag = scm.erdos_renyi_dag(d, float(rng.uniform(1.5, min(d - 1, 4.0))), rng=rng)
    model = scm.SCM.random(dag, mechanism="linear", rng=rng)
    parts, masks = [model.sample(n, rng=rng)], [np.zeros((n, d), dtype=bool)]
    for _ in range(int(rng.integers(0, d))):
        targets = rng.choice(d, size=1 if rng.random() < 0.75 else 2, replace=False).tolist()
        rows = int(rng.integers(30, 300))
        if rng.random() < 0.7:
            hard = [scm.HardDo(t, low=-2.0, high=2.0) for t in targets]
        else:
            hard = [scm.HardDo(t, value=float(rng.normal())) for t in targets]
        parts.append(model.sample(rows, rng=rng, interventions=hard))
        block = np.zeros((rows, d), dtype=bool)
        block[:, targets] = True
        masks.append(block)
    return np.vstack(parts), np.vstack(masks)


# ---------------------------------------------------------------------------------------------
# the same graphs and scores as the references
# ---------------------------------------------------------------------------------------------


def check_ges(seed: int) -> None:
    x = observational(seed)
    ours, reference = run("ges_fast", x), run("ges", x)
    assert np.array_equal(ours.graph, reference.graph), f"seed {seed}"
    assert ours.extras["score"] == pytest.approx(reference.extras["score"], abs=1e-6)


def check_gies(seed: int) -> None:
    x, mask = interventional(seed)
    ours, reference = run("gies_fast", x, mask=mask), run("gies", x, mask=mask)
    assert np.array_equal(ours.graph, reference.graph), f"seed {seed}"
    assert ours.extras["score"] == pytest.approx(reference.extras["score"], abs=1e-6)
    assert ours.extras["environments"] == reference.extras["environments"]


@pytest.mark.parametrize("seed", FAST)
def test_ges_fast_equals_causallearn(seed):
    check_ges(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW)
def test_ges_fast_equals_causallearn_slow(seed):
    check_ges(seed)


@pytest.mark.parametrize("seed", FAST)
def test_gies_fast_equals_gies(seed):
    check_gies(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW)
def test_gies_fast_equals_gies_slow(seed):
    check_gies(seed)


@pytest.mark.parametrize("penalty,max_parents", [(0.25, None), (1.0, 1), (2.0, 0), (0.5, 2)])
def test_ges_fast_options_match_causallearn(penalty, max_parents):
    for seed in (3, 4):
        x = observational(seed)
        ours = run("ges_fast", x, penalty=penalty, max_parents=max_parents)
        reference = run("ges", x, penalty=penalty, max_parents=max_parents)
        assert np.array_equal(ours.graph, reference.graph)
        assert ours.extras["score"] == pytest.approx(reference.extras["score"], abs=1e-6)


@pytest.mark.parametrize("options", [{}, {"penalty": 1.0}, {"iterate": False}, {"phases": ("forward", "turning")}])
def test_gies_fast_options_and_observational_data_match_gies(options):
    x, mask = interventional(5)
    for m in (mask, None):
        ours, reference = run("gies_fast", x, mask=m, **options), run("gies", x, mask=m, **options)
        assert np.array_equal(ours.graph, reference.graph)
        assert ours.extras["score"] == pytest.approx(reference.extras["score"], abs=1e-6)


# ---------------------------------------------------------------------------------------------
# the incremental search picks what an exhaustive rescan picks, and gains are real
# ---------------------------------------------------------------------------------------------


def replay(score: GaussianBIC, targets, phases, iterate: bool, min_gain: float, reference: GreedySearch) -> None:
    """Redo ``reference``'s search, taking at every step the best of all valid operators."""
    search = GreedySearch(score, targets, min_gain=min_gain)
    done = 0
    while True:
        moved = 0
        for phase in phases:
            while (ops := search.valid_operators(phase)) and ops[0][0] > min_gain:
                gain, x, y, clique = ops[0]
                before = score.total(search.extension())
                search.apply(phase, x, y, clique, gain)
                assert score.total(search.extension()) - before == pytest.approx(gain, abs=1e-7)
                assert search.moves[-1][:4] == reference.moves[done][:4]
                assert search.moves[-1].gain == pytest.approx(reference.moves[done].gain, abs=1e-9)
                done += 1
                moved += 1
        if not iterate or not moved:
            break
    assert done == len(reference.moves)
    assert np.array_equal(search.graph, reference.graph)
    assert search.total == pytest.approx(reference.final_score(), abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_incremental_ges_equals_exhaustive_rescans(seed):
    score = GaussianBIC.from_data(observational(seed))
    search = GreedySearch(score)
    search.run(("forward", "backward"), iterate=False)
    replay(score, (), ("forward", "backward"), False, 0.0, search)


@pytest.mark.parametrize("seed", [1, 6, 9])
def test_incremental_gies_equals_exhaustive_rescans(seed):
    x, mask = interventional(seed)
    blocks, targets = environments(x, mask)
    score = GaussianBIC.from_environments(blocks, targets)
    search = GreedySearch(score, targets, min_gain=GIES_MIN_GAIN)
    search.run(("forward", "backward", "turning"), iterate=True)
    assert {m.operator for m in search.moves} >= {"insert"}
    replay(score, targets, ("forward", "backward", "turning"), True, GIES_MIN_GAIN, search)


def test_turning_phase_is_exercised_by_the_interventional_cases():
    operators = [m["operator"] for s in FAST for m in run("gies_fast", *interventional(s)).extras["moves"]]
    assert operators.count("turn") >= 5 and operators.count("delete") >= 5


# ---------------------------------------------------------------------------------------------
# the score
# ---------------------------------------------------------------------------------------------


def test_local_scores_equal_causallearn_local_score_bic():
    from causallearn.score.LocalScoreFunction import local_score_BIC

    rng = np.random.default_rng(0)
    for seed in range(3):
        x = observational(seed)
        d = x.shape[1]
        score = GaussianBIC.from_data(x)
        for _ in range(100):
            k = int(rng.integers(d))
            others = [v for v in range(d) if v != k]
            parents = rng.choice(others, size=int(rng.integers(0, d)), replace=False).tolist()
            expected = local_score_BIC(x, k, parents, {"lambda_value": 0.5})
            assert score.local(k, parents) == pytest.approx(expected, rel=1e-12, abs=1e-8)
            if parents:
                base, extra = parents[:-1], np.array(others)
                extra = extra[~np.isin(extra, base)]
                gains = score.insert_gains(k, sorted(base), extra)
                direct = [score.local(k, base + [int(v)]) - score.local(k, base) for v in extra]
                assert np.allclose(gains, direct, rtol=0, atol=1e-8)


def test_local_scores_equal_the_gies_package_score():
    from gies.scores.gauss_int_l0_pen import GaussIntL0Pen

    rng = np.random.default_rng(1)
    for seed in range(3):
        x, mask = interventional(seed)
        blocks, targets = environments(x, mask)
        ours, reference = GaussianBIC.from_environments(blocks, targets), GaussIntL0Pen(blocks, targets)
        d = x.shape[1]
        for _ in range(100):
            k = int(rng.integers(d))
            parents = rng.choice([v for v in range(d) if v != k], size=int(rng.integers(0, d)), replace=False)
            assert ours.local(k, parents.tolist()) == pytest.approx(reference.local_score(k, set(parents.tolist())), abs=1e-8)


def test_two_variable_bic_by_hand():
    # var(x) = var(y) = 1.25 and cov(x, y) = 0.75 (ddof=0), so r = 0.6 and var(y | x) = 0.8.
    data = np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 4.0], [4.0, 3.0]])
    n = 4
    score = GaussianBIC.from_data(data)
    empty = -n / 2 * (1 + np.log(1.25)) - 0.5 * np.log(n)
    one_parent = -n / 2 * (1 + np.log(0.8)) - 0.5 * np.log(n) * 2
    assert score.local(1, []) == pytest.approx(empty, abs=1e-12)
    assert score.local(1, [0]) == pytest.approx(one_parent, abs=1e-12)
    # The edge gains -2 log 0.64 - log(4)/2 = 0.199 > 0, so GES keeps it, undirected.
    result = ges_fast(data)
    assert result.graph.tolist() == [[0, 1], [1, 0]]
    assert result.extras["score"] == pytest.approx(empty + one_parent, abs=1e-12)
    assert [m["operator"] for m in result.extras["moves"]] == ["insert"]


def test_interventional_score_drops_the_rows_that_target_the_node():
    rng = np.random.default_rng(3)
    obs = rng.normal(size=(50, 2)) @ np.array([[1.0, 0.8], [0.0, 1.0]])
    hit = np.column_stack([rng.normal(size=30), rng.uniform(-2, 2, size=30)])
    data = np.vstack([obs, hit])
    mask = np.zeros(data.shape, dtype=bool)
    mask[50:, 1] = True
    score = GaussianBIC.from_environments(*environments(data, mask))
    centred = obs - obs.mean(axis=0)
    cov = centred.T @ centred / 50
    resid = cov[1, 1] - cov[0, 1] ** 2 / cov[0, 0]
    penalty = 0.5 * np.log(80)
    assert score.local(1, [0]) == pytest.approx(-25 * (1 + np.log(resid)) - 2 * penalty, abs=1e-10)
    pooled = np.var(obs[:, 0]) * 50 + np.var(hit[:, 0]) * 30
    assert score.local(0, []) == pytest.approx(-40 * (1 + np.log(pooled / 80)) - penalty, abs=1e-10)


# ---------------------------------------------------------------------------------------------
# operator validity on hand-built graphs
# ---------------------------------------------------------------------------------------------


def graph_of(d: int, directed=(), undirected=()) -> np.ndarray:
    g = np.zeros((d, d), dtype=np.int8)
    for i, j in directed:
        g[i, j] = 1
    for i, j in undirected:
        g[i, j] = g[j, i] = 1
    assert is_cpdag(g)
    return g


def search_on(graph: np.ndarray) -> GreedySearch:
    data = np.random.default_rng(0).normal(size=(200, graph.shape[0]))
    return GreedySearch(GaussianBIC.from_data(data), graph=graph)


def sets_for(search: GreedySearch, phase: str, x: int, y: int) -> set[tuple[int, ...]]:
    return {c for _, a, b, c in search.valid_operators(phase) if (a, b) == (x, y)}


def test_insert_needs_a_blocked_semi_directed_path():
    # 0 -> 2 <- 1, 2 -> 3: inserting 3 -> 0 would close the cycle 0 -> 2 -> 3 -> 0.
    search = search_on(graph_of(4, directed=[(0, 2), (1, 2), (2, 3)]))
    assert sets_for(search, "forward", 3, 0) == set()
    assert sets_for(search, "forward", 0, 3) == {()}


def test_insert_path_blocked_by_t():
    # 0 -- 1 -> 2 <- 4, 2 -> 3: the path 0 -- 1 -> 2 -> 3 is blocked only when T = {1}.
    search = search_on(graph_of(5, directed=[(1, 2), (4, 2), (2, 3)], undirected=[(0, 1)]))
    assert sets_for(search, "forward", 3, 0) == {(1,)}


def test_insert_needs_a_clique():
    # 0 -- 1 -- 2, node 3 alone: T = {0, 2} is not a clique.
    search = search_on(graph_of(4, undirected=[(0, 1), (1, 2)]))
    assert sets_for(search, "forward", 3, 1) == {(), (0,), (2,)}


def test_delete_needs_na_minus_h_to_be_a_clique():
    # 0 -- 1 with common neighbours 2 and 3 (not adjacent): NA = {2, 3}, so H = {} is invalid.
    search = search_on(graph_of(4, undirected=[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3)]))
    assert sets_for(search, "backward", 0, 1) == {(2,), (3,), ()}


def test_turn_validity():
    # 0 -> 2 <- 1: turning 0 -> 2 into 2 -> 0 is valid (no other path from 0 to 2).
    assert sets_for(search_on(graph_of(3, directed=[(0, 2), (1, 2)])), "turning", 2, 0) == {()}
    # 0 -> 1 -> 2 and 0 -> 2 (compelled by 3 -> 1 and 4 -> 2): turning 0 -> 2 would close a cycle.
    dense = graph_of(5, directed=[(0, 1), (1, 2), (0, 2), (3, 1), (4, 2)])
    assert sets_for(search_on(dense), "turning", 2, 0) == set()
    # 0 -- 1 -- 2: turning 0 -- 1 into 0 -> 1 must make 2 a parent of 1 (C = {2}).
    assert sets_for(search_on(graph_of(3, undirected=[(0, 1), (1, 2)])), "turning", 0, 1) == {(2,)}


def test_essential_of_dag_equals_graphs_essential_graph():
    rng = np.random.default_rng(4)
    for _ in range(400):
        d = int(rng.integers(1, 12))
        dag = scm.erdos_renyi_dag(d, float(rng.uniform(0, min(d - 1, 5))), rng=rng).astype(bool)
        targets = [rng.choice(d, size=int(rng.integers(1, min(3, d) + 1)), replace=False).tolist()
                   for _ in range(int(rng.integers(0, 3)))]
        assert np.array_equal(essential_of_dag(dag, targets), essential_graph(dag, targets).astype(bool))


# ---------------------------------------------------------------------------------------------
# edge cases, options, registry
# ---------------------------------------------------------------------------------------------


def test_edge_cases():
    with pytest.raises(ValueError, match="at least 3 rows"):
        ges_fast(np.empty((0, 3)))
    single = np.random.default_rng(0).normal(size=(100, 1))
    result = ges_fast(single)
    assert result.graph.tolist() == [[0]] and result.extras["moves"] == []
    expected = -50 * (1 + np.log(single.var())) - 0.5 * np.log(100)
    assert result.extras["score"] == pytest.approx(expected)
    assert gies_fast(single).graph.tolist() == [[0]]
    x = np.random.default_rng(1).normal(size=(100, 3))
    with pytest.raises(ValueError, match=r"column 3 is \(numerically\) a linear combination of column\(s\) \[0, 2\]"):
        ges_fast(np.column_stack([x, x[:, 0] - 2 * x[:, 2]]))
    with pytest.raises(ValueError, match="linear combination"):
        gies_fast(np.random.default_rng(2).normal(size=(5, 8)))  # fewer rows than columns
    with pytest.raises(ValueError, match="constant"):
        ges_fast(np.column_stack([x, np.ones(100)]))


def test_options_are_validated():
    x, mask = interventional(0)
    for bad in ({"penalty": 0}, {"penalty": "big"}, {"max_parents": -1}, {"max_parents": 1.5}, {"score": "bic"}):
        with pytest.raises(ValueError):
            run("ges_fast", x, **bad)
    for bad in ({"phases": "forward"}, {"phases": ()}, {"phases": ("sideways",)}, {"iterate": 1}, {"penalty": -1.0}):
        with pytest.raises(ValueError):
            run("gies_fast", x, mask=mask, **bad)
    with pytest.raises(ValueError, match="does not use intervention masks"):
        run("ges_fast", x, mask=mask)
    everywhere = mask.copy()
    everywhere[:, 0] = True
    with pytest.raises(ValueError, match="intervened on in every row"):
        run("gies_fast", x, mask=everywhere)
    with pytest.raises(ValueError, match="mask must be a boolean array"):
        gies_fast(x, mask[:10])


def test_registry():
    assert {"ges_fast", "gies_fast"} <= set(methods())
    assert supports_interventions("gies_fast") and not supports_interventions("ges_fast")
    result = run("gies_fast", *interventional(2))
    assert result.method == "gies_fast"
    assert result.options == {"penalty": 0.5, "phases": ("forward", "backward", "turning"), "iterate": True, "ridge": 0.0}
    assert all(set(m) == {"operator", "x", "y", "subset", "gain"} for m in result.extras["moves"])


def test_ridge_inflates_every_variance_by_hand():
    # As test_two_variable_bic_by_hand, with every variance times 1.1: var(y | x) = 1.375 - 0.75**2 / 1.375.
    data = np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 4.0], [4.0, 3.0]])
    score = GaussianBIC.from_data(data, ridge=0.1)
    assert score.local(1, []) == pytest.approx(-2 * (1 + np.log(1.375)) - 0.5 * np.log(4), abs=1e-12)
    assert score.local(1, [0]) == pytest.approx(-2 * (1 + np.log(1.375 - 0.75**2 / 1.375)) - np.log(4), abs=1e-12)
    # rescaling a column leaves the ridged score unchanged (the floor is relative)
    scaled = GaussianBIC.from_data(data * [1.0, 1e3], ridge=0.1)
    assert scaled.local(1, [0]) - scaled.local(1, []) == pytest.approx(score.local(1, [0]) - score.local(1, []))


@pytest.mark.parametrize("seed", range(5))
def test_tiny_ridge_keeps_causallearns_graphs(seed):
    x = observational(seed)
    assert np.array_equal(run("ges_fast", x, ridge=1e-8).graph, run("ges", x).graph), f"seed {seed}"


def test_ridge_scores_a_formula_node_computed_exactly_from_its_parents():
    x = np.random.default_rng(1).normal(size=(500, 3))
    data = np.column_stack([x, x[:, 0] - 2 * x[:, 2]])  # refused without the ridge (test_edge_cases)
    graph = ges_fast(data, ridge=1e-8).graph
    adjacent = (graph | graph.T).astype(bool)
    assert adjacent[3, 0] and adjacent[3, 2] and not adjacent[3, 1] and not adjacent[0, 2] | adjacent[0, 1]
    assert graph[0, 3] and graph[2, 3] and not graph[3, 0] and not graph[3, 2]  # the collider 0 -> 3 <- 2
    with pytest.raises(ValueError, match="ridge"):
        ges_fast(data, ridge=-1.0)
