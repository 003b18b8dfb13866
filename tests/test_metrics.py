"""Graph metrics against hand-computed cases and independent references.

References: causal-learn's SHD / AdjacencyConfusion / ArrowConfusion, scikit-learn's
roc_auc_score / average_precision_score, a definition-by-definition SID built from
graphs.d_separated, and a linear-Gaussian SID computed from population covariances.
"""

import itertools

import numpy as np
import pytest
from causallearn.graph.AdjacencyConfusion import AdjacencyConfusion
from causallearn.graph.ArrowConfusion import ArrowConfusion
from causallearn.graph.SHD import SHD
from sklearn.metrics import average_precision_score, roc_auc_score

from causal_gym import graphs
from causal_gym.metrics import (
    PRF,
    adjacency_scores,
    arrowhead_scores,
    bootstrap_interval,
    directed_edge_scores,
    edge_auroc,
    edge_average_precision,
    nshd,
    paired_bootstrap,
    shd,
    shd_cpdag,
    sid,
    sid_cpdag,
)
from graph_builders import graph


def random_dag(rng, d, p=0.4):
    order = rng.permutation(d)
    a = np.triu(rng.random((d, d)) < p, 1).astype(np.int8)
    return a[np.ix_(order, order)]


def random_pdag(rng, d, p=0.4):
    """Any mix of directed and undirected edges, cycles allowed (metrics other than SID take it)."""
    a = np.zeros((d, d), dtype=np.int8)
    for i, j in itertools.combinations(range(d), 2):
        if rng.random() < p:
            kind = rng.integers(3)
            a[i, j] = kind in (0, 2)
            a[j, i] = kind in (1, 2)
    return a


def perturbed_dag(g, rng, changes=2):
    """``g`` with a few pairs set to a random relation (none, i -> j, j -> i), kept acyclic."""
    while True:
        h = g.copy()
        for i, j in rng.choice(np.argwhere(np.triu(np.ones_like(g), 1)), size=changes):
            h[i, j], h[j, i] = ((0, 0), (1, 0), (0, 1))[rng.integers(3)]
        if graphs.is_dag(h):
            return h


def random_graph_pairs(n, seed):
    """Pairs (true, est) of DAGs, CPDAGs and arbitrary PDAGs, d from 2 to 8."""
    rng = np.random.default_rng(seed)
    for k in range(n):
        d = int(rng.integers(2, 9))
        true = random_dag(rng, d) if k % 2 else graphs.dag_to_cpdag(random_dag(rng, d))
        est = (random_dag(rng, d), graphs.dag_to_cpdag(random_dag(rng, d)), random_pdag(rng, d))[k % 3]
        yield true, est


def prf_from_counts(tp, fp, fn):
    """The documented convention, written out from confusion counts."""
    precision = tp / (tp + fp) if tp + fp else float(fn == 0)
    recall = tp / (tp + fn) if tp + fn else float(fp == 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


# ---------------------------------------------------------------------------------------------
# precision / recall / F1
# ---------------------------------------------------------------------------------------------


def test_empty_denominator_convention():
    empty, edge = np.zeros((3, 3), dtype=int), graph(3, [(0, 1)])
    for score in (adjacency_scores, arrowhead_scores, directed_edge_scores):
        assert score(empty, empty) == PRF(1.0, 1.0, 1.0)  # a right empty answer is perfect
        assert score(edge, empty) == PRF(0.0, 0.0, 0.0)  # nothing predicted, something missed
        assert score(empty, edge) == PRF(0.0, 0.0, 0.0)  # nothing to find, something claimed


def test_adjacency_scores_hand_case():
    true = graph(3, [(0, 1), (1, 2)])  # skeleton {01, 12}
    est = graph(3, [(1, 0)], [(0, 2)])  # skeleton {01, 02}: tp 1, fp 1, fn 1
    assert adjacency_scores(true, est) == PRF(0.5, 0.5, 0.5)


def test_arrowhead_scores_hand_case():
    true = graph(3, [(0, 1), (0, 2), (1, 2)])  # arrowheads (0,1) (0,2) (1,2)
    est = graph(3, [(0, 1), (0, 2)], [(1, 2)])  # arrowheads (0,1) (0,2); the undirected edge has none
    p, r, f = arrowhead_scores(true, est)  # tp 2, fp 0, fn 1
    assert (p, r) == (1.0, pytest.approx(2 / 3)) and f == pytest.approx(0.8)
    # a reversed edge is one false positive and one false negative
    assert arrowhead_scores(graph(2, [(0, 1)]), graph(2, [(1, 0)])) == PRF(0.0, 0.0, 0.0)


def test_directed_edge_scores_counts_undirected_as_both_directions():
    true = graph(3, [(0, 1), (0, 2), (1, 2)])
    est = graph(3, [(0, 1), (0, 2)], [(1, 2)])  # claims 0->1, 0->2, 1->2, 2->1: tp 3, fp 1, fn 0
    p, r, f = directed_edge_scores(true, est)
    assert (p, r) == (0.75, 1.0) and f == pytest.approx(6 / 7)
    # reversed edge: tp 0
    assert directed_edge_scores(graph(2, [(0, 1)]), graph(2, [(1, 0)])) == PRF(0.0, 0.0, 0.0)


def test_adjacency_and_arrowhead_scores_match_causallearn_confusions():
    for true, est in random_graph_pairs(150, seed=1):
        t, e = graphs.to_causallearn(true), graphs.to_causallearn(est)
        adj = AdjacencyConfusion(t, e)
        expected = prf_from_counts(adj.get_adj_tp(), adj.get_adj_fp(), adj.get_adj_fn())
        assert adjacency_scores(true, est) == pytest.approx(expected)
        arr = ArrowConfusion(t, e)
        expected = prf_from_counts(arr.get_arrows_tp(), arr.get_arrows_fp(), arr.get_arrows_fn())
        assert arrowhead_scores(true, est) == pytest.approx(expected)


def test_directed_edge_scores_equal_arrowhead_scores_on_dags():
    rng = np.random.default_rng(2)
    for _ in range(50):
        d = int(rng.integers(2, 8))
        true, est = random_dag(rng, d), random_dag(rng, d)
        assert directed_edge_scores(true, est) == arrowhead_scores(true, est)


# ---------------------------------------------------------------------------------------------
# SHD
# ---------------------------------------------------------------------------------------------


def test_shd_hand_case_and_nshd():
    true = graph(3, [(0, 1), (0, 2)])
    est = graph(3, [(1, 0), (1, 2)], [(0, 2)])  # {0,1} reversed, {1,2} extra, {0,2} unoriented
    assert shd(true, est) == 3
    assert nshd(true, est) == 3 / 6
    assert shd(true, true) == 0 and nshd(true, true) == 0.0
    assert shd(graph(4), graph(4, [(0, 1)], [(2, 3)])) == 2


def test_shd_matches_causallearn_and_reversal_costs_one():
    for true, est in random_graph_pairs(150, seed=3):
        expected = SHD(graphs.to_causallearn(true), graphs.to_causallearn(est)).get_shd()
        assert shd(true, est) == expected
    assert SHD(graphs.to_causallearn(graph(2, [(0, 1)])), graphs.to_causallearn(graph(2, [(1, 0)]))).get_shd() == 1


def test_shd_is_a_metric():
    rng = np.random.default_rng(4)
    for _ in range(50):
        a, b, c = (random_pdag(rng, 6) for _ in range(3))
        assert shd(a, b) == shd(b, a)
        assert shd(a, c) <= shd(a, b) + shd(b, c)
        assert (shd(a, b) == 0) == np.array_equal(a, b)


def test_shd_cpdag_hand_cases():
    chain = graph(3, [(0, 1), (1, 2)])  # CPDAG 0 -- 1 -- 2
    assert shd_cpdag(chain, graph(3, undirected=[(0, 1), (1, 2)])) == 0
    assert shd_cpdag(chain, chain) == 2  # both edges oriented where the class leaves them open
    assert shd_cpdag(chain, graph(3, [(0, 1), (2, 1)])) == 2
    collider = graph(3, [(0, 1), (2, 1)])  # its own CPDAG
    assert shd_cpdag(collider, collider) == 0
    assert shd_cpdag(collider, graph(3, undirected=[(0, 1), (1, 2)])) == 2


def test_shd_cpdag_ignores_the_member_of_the_class():
    rng = np.random.default_rng(5)
    for _ in range(30):
        dag = random_dag(rng, 6)
        cpdag = graphs.dag_to_cpdag(dag)
        for member in graphs.mec_dags(cpdag)[:5]:
            assert shd_cpdag(member, cpdag) == 0


# ---------------------------------------------------------------------------------------------
# SID
# ---------------------------------------------------------------------------------------------


def linear_gaussian_sid(g, h, rng):
    """SID by algebra: count pairs where the adjustment estimate misses the total effect.

    Random weights and noise variances make every coincidence a measure-zero event, so a pair is
    counted exactly when Pa_h(i) is not a valid adjustment set in g.
    """
    d = g.shape[0]
    weights = g * rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    total = np.linalg.inv(np.eye(d) - weights)  # total[i, j]: effect of x_i on x_j
    mix = total.T  # x = mix @ noise
    cov = mix @ np.diag(rng.uniform(0.5, 1.5, d)) @ mix.T
    wrong = 0
    for i in range(d):
        z = np.flatnonzero(h[:, i]).tolist()
        s = [i] + z
        coef = np.linalg.solve(cov[np.ix_(s, s)], cov[s, :])[0]  # coefficient of x_i for every x_j
        for j in range(d):
            if j != i:
                estimate = 0.0 if j in z else coef[j]
                wrong += not np.isclose(estimate, total[i, j], rtol=1e-6, atol=1e-9)
    return wrong


def definitional_sid(g, h):
    """SID pair by pair from Peters & Bühlmann's characterisation, one d-separation per pair."""
    d = g.shape[0]
    wrong = 0
    for i in range(d):
        z = set(graphs.parents(h, i))
        de_i = graphs.descendants(g, i)
        for j in set(range(d)) - {i}:
            if j in z:
                wrong += j in de_i
                continue
            on_path = {w for w in de_i if w == j or j in graphs.descendants(g, w)}
            forbidden = on_path | (graphs.descendants(g, on_path) if on_path else set())
            if z & forbidden:
                wrong += 1
                continue
            cut = g.copy()
            for c in graphs.children(g, i):
                if c in on_path:
                    cut[i, c] = 0
            wrong += not graphs.d_separated(cut, i, j, sorted(z))
    return wrong


def test_sid_paper_example():
    # Peters & Bühlmann (2015), Section 2: G has X1 -> X2 and both point into X3, X4, X5.
    g = graph(5, [(0, 1)] + [(p, c) for p in (0, 1) for c in (2, 3, 4)])
    h1 = graph(5, [(0, 1), (2, 4)] + [(p, c) for p in (0, 1) for c in (2, 3, 4)])  # one extra edge
    h2 = graph(5, [(1, 0)] + [(p, c) for p in (0, 1) for c in (2, 3, 4)])  # X1 -> X2 reversed
    assert shd(g, h1) == shd(g, h2) == 1
    assert sid(g, h1) == 0
    # do(X1): Pa={X2} claims no effect on X2 and blocks X1 -> X2 -> Xk: 4 wrong.
    # do(X2): Pa={} leaves X2 <- X1 -> ... open: 4 wrong.  do(X3..X5): parents agree.
    assert sid(g, h2) == 8


def test_sid_hand_cases():
    chain = graph(3, [(0, 1), (1, 2)])
    empty = graph(3)
    # do(x0): nothing to adjust, both right. do(x1): x0 -- x1 confounds nothing for x2 (right) but
    # p(x0 | x1) != p(x0) (wrong). do(x2): both wrong.
    assert sid(chain, empty) == 3
    assert sid(empty, chain) == 0  # nothing has an effect, and every parent set d-separates
    assert sid(graph(2, [(0, 1)]), graph(2, [(1, 0)])) == 2
    # Adjusting for a descendant of the target: g has 0 -> 1 -> 2 <- 0; h has 2 -> 0 -> 1.
    g = graph(3, [(0, 1), (1, 2), (0, 2)])
    h = graph(3, [(2, 0), (0, 1)])
    # do(x0), Pa={2}: 2 descends from 1 on the path 0 -> 1, wrong for j=1; j=2 is a parent, wrong.
    # do(x1), Pa={0}: right for 0 (not a descendant) and 2 (0 blocks 1 <- 0 -> 2).
    # do(x2), Pa={}: 2 <- 0 and 2 <- 1 <- 0 open: wrong for 0 and 1.
    assert sid(g, h) == 4
    assert sid(chain, chain) == 0


def test_sid_matches_definition_and_linear_gaussian_reference():
    rng = np.random.default_rng(6)
    for k in range(130):
        d = int(rng.integers(2, 8)) if k < 120 else 14
        g = random_dag(rng, d, p=0.5)
        h = random_dag(rng, d, p=0.5) if k % 3 else perturbed_dag(g, rng)
        expected = linear_gaussian_sid(g, h, rng)
        assert definitional_sid(g, h) == expected
        assert sid(g, h) == expected


def test_sid_zero_for_order_consistent_supergraphs():
    rng = np.random.default_rng(7)
    for _ in range(30):
        d = 8
        g = random_dag(rng, d)
        order = graphs.topological_order(g)
        rank = np.argsort(order)
        complete = (rank[:, None] < rank[None, :]).astype(np.int8)
        extra = complete & (rng.random((d, d)) < 0.5)
        assert sid(g, complete) == 0
        assert sid(g, g | extra) == 0


def test_sid_cpdag_hand_cases():
    # true 0 -> 1; the class {0 -> 1, 1 -> 0} has SIDs 0 and 2.
    assert sid_cpdag(graph(2, [(0, 1)]), graph(2, undirected=[(0, 1)])) == (0, 2)
    # true chain; class of 0 -- 1 -- 2: the chain (0), 0 <- 1 -> 2 (3), the reversed chain (6).
    chain = graph(3, [(0, 1), (1, 2)])
    assert sid(chain, graph(3, [(1, 0), (1, 2)])) == 3
    assert sid(chain, graph(3, [(2, 1), (1, 0)])) == 6
    assert sid_cpdag(chain, graph(3, undirected=[(0, 1), (1, 2)])) == (0, 6)
    assert sid_cpdag(chain, chain) == (0, 6)  # a DAG stands for its class


def test_sid_cpdag_is_the_range_over_the_class():
    rng = np.random.default_rng(8)
    for _ in range(15):
        d = 6
        g, h = random_dag(rng, d), random_dag(rng, d)
        cpdag = graphs.dag_to_cpdag(h)
        values = [linear_gaussian_sid(g, member, rng) for member in graphs.mec_dags(cpdag)]
        assert sid_cpdag(g, cpdag) == (min(values), max(values))


# ---------------------------------------------------------------------------------------------
# AUROC / AP
# ---------------------------------------------------------------------------------------------


def test_edge_ranking_hand_case():
    true = graph(3, [(0, 1), (1, 2)])
    scores = np.full((3, 3), 0.1)
    scores[0, 1], scores[1, 2], scores[0, 2] = 0.9, 0.4, 0.5
    # 0.9 beats all 4 non-edges, 0.4 beats the three 0.1s: 7 of 8 pairs.
    assert edge_auroc(true, scores) == pytest.approx(7 / 8)
    # thresholds 0.9 (P 1, R .5), 0.5 (P .5, R .5), 0.4 (P 2/3, R 1): AP = .5 * 1 + .5 * 2/3
    assert edge_average_precision(true, scores) == pytest.approx(0.5 + 1 / 3)
    ties = np.ones((3, 3))
    assert edge_auroc(true, ties) == 0.5
    assert edge_average_precision(true, ties) == pytest.approx(2 / 6)


def test_edge_ranking_matches_sklearn_with_ties():
    rng = np.random.default_rng(9)
    for k in range(100):
        d = int(rng.integers(3, 12))
        true = random_dag(rng, d) if k % 2 else graphs.dag_to_cpdag(random_dag(rng, d))
        off = ~np.eye(d, dtype=bool)
        if true[off].all() or not true[off].any():
            continue
        scores = rng.integers(0, 4, (d, d)).astype(float) if k % 3 else rng.normal(size=(d, d))
        y, s = true[off], scores[off]
        assert edge_auroc(true, scores) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert edge_average_precision(true, scores) == pytest.approx(average_precision_score(y, s), abs=1e-12)


def test_edge_ranking_ignores_the_diagonal_and_accepts_a_graph_as_scores():
    rng = np.random.default_rng(10)
    true, est = random_dag(rng, 6), random_dag(rng, 6)
    scores = rng.normal(size=(6, 6))
    moved = scores.copy()
    np.fill_diagonal(moved, 100.0)
    assert edge_auroc(true, moved) == edge_auroc(true, scores)
    off = ~np.eye(6, dtype=bool)
    assert edge_auroc(true, est.astype(bool)) == pytest.approx(roc_auc_score(true[off], est[off]))


# ---------------------------------------------------------------------------------------------
# bootstrap
# ---------------------------------------------------------------------------------------------


def test_bootstrap_interval_contains_estimate_and_is_deterministic():
    rng = np.random.default_rng(11)
    for _ in range(20):
        x = rng.exponential(size=int(rng.integers(2, 60)))
        est, low, high = bootstrap_interval(x, n_boot=2000, seed=3)
        assert est == pytest.approx(x.mean()) and low <= est <= high
        assert bootstrap_interval(x, n_boot=2000, seed=3) == (est, low, high)
    x = rng.normal(size=50)
    assert bootstrap_interval(x, seed=1) != bootstrap_interval(x, seed=2)
    est, low, high = bootstrap_interval(x, statistic=np.median, n_boot=2000)
    assert est == np.median(x) and low <= est <= high


def test_bootstrap_width_matches_normal_theory_and_shrinks_with_n():
    rng = np.random.default_rng(12)
    widths = []
    for n in (25, 400, 1600):  # n = 400 and 1600 resample in several chunks
        x = rng.normal(size=n)
        _, low, high = bootstrap_interval(x, seed=0)
        widths.append(high - low)
        # the bootstrap distribution of the mean is close to N(mean, var_ml / n)
        assert high - low == pytest.approx(2 * 1.959964 * x.std() / np.sqrt(n), rel=0.1)
    assert widths[0] > widths[1] > widths[2]


def test_paired_bootstrap():
    rng = np.random.default_rng(13)
    a = rng.normal(size=40)
    assert paired_bootstrap(a, a) == (0.0, 0.0, 0.0)
    # same indices for both samples: a constant shift has no spread at all
    est, low, high = paired_bootstrap(a + 0.1, a)
    assert (est, low, high) == pytest.approx((0.1, 0.1, 0.1))
    b = a + rng.normal(scale=0.1, size=40) - 0.05
    est, low, high = paired_bootstrap(a, b, seed=4)
    assert est == pytest.approx(np.mean(a - b)) and low <= est <= high
    assert high - low < (bootstrap_interval(a)[2] - bootstrap_interval(a)[1]) / 3


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------

GRAPH_METRICS = [adjacency_scores, arrowhead_scores, directed_edge_scores, shd, nshd, shd_cpdag, sid, sid_cpdag]


@pytest.mark.parametrize("metric", GRAPH_METRICS)
def test_graph_metrics_reject_shape_mismatch_and_non_binary(metric):
    good3, good4 = graph(3, [(0, 1)]), graph(4, [(0, 1)])
    with pytest.raises(ValueError, match="shape"):
        metric(good3, good4)
    with pytest.raises(ValueError, match="0 or 1"):
        metric(good3, good3 * 2)
    with pytest.raises(ValueError, match="square"):
        metric(good3, np.zeros((3, 2)))


def test_dag_requirements():
    dag, undirected = graph(3, [(0, 1)]), graph(3, undirected=[(0, 1)])
    cycle = graph(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match="est_dag must be a DAG but has undirected"):
        sid(dag, undirected)
    with pytest.raises(ValueError, match="est_dag must be a DAG but has a directed cycle"):
        sid(dag, cycle)
    with pytest.raises(ValueError, match="true_dag must be a DAG"):
        sid(cycle, dag)
    with pytest.raises(ValueError, match="true_dag must be a DAG"):
        shd_cpdag(undirected, dag)
    with pytest.raises(ValueError, match="neither a DAG nor a CPDAG"):
        sid_cpdag(dag, graph(3, [(0, 1)], [(1, 2)]))  # not closed under Meek's R1
    with pytest.raises(ValueError, match="at least 2 nodes"):
        nshd(np.zeros((1, 1)), np.zeros((1, 1)))


def test_edge_ranking_validation():
    true = graph(3, [(0, 1)])
    with pytest.raises(ValueError, match="shape"):
        edge_auroc(true, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        edge_average_precision(true, np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="real-valued"):
        edge_auroc(true, np.full((3, 3), "a"))
    with pytest.raises(ValueError, match="both edges and non-edges"):
        edge_auroc(graph(3), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: bootstrap_interval([1.0]), "at least 2"),
        (lambda: bootstrap_interval([1.0, np.nan]), "NaN"),
        (lambda: bootstrap_interval(np.ones((2, 2))), "1-D"),
        (lambda: bootstrap_interval(["a", "b"]), "real numbers"),
        (lambda: bootstrap_interval([1.0, 2.0], level=1.5), "level"),
        (lambda: bootstrap_interval([1.0, 2.0], n_boot=0), "n_boot"),
        (lambda: bootstrap_interval([1.0, 2.0], statistic=np.cumsum), "one value per row"),
        (lambda: paired_bootstrap([1.0, 2.0], [1.0, 2.0, 3.0]), "same length"),
        (lambda: paired_bootstrap([1.0, 2.0], [1.0, np.inf]), "NaN"),
    ],
)
def test_bootstrap_validation(call, message):
    with pytest.raises(ValueError, match=message):
        call()
