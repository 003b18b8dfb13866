"""AlterNet's interventional orientation: the likelihood evidence of intervened rows, against direct
regressions and hand-checked cases, and the promise that observational output never changes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from causal_gym.discovery.amortized import cache_options, load  # noqa: E402
from causal_gym.discovery.amortized.invariance import direction_evidence  # noqa: E402
from causal_gym.discovery.amortized.network import direction_weights, orient  # noqa: E402
from causal_gym.discovery.amortized.prior import draw  # noqa: E402


def _chain(n_obs: int, n_int: int, target: int, seed: int, soft: bool = False,
           width: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """x0 -> x1 (weight 1.5, unit noise), then ``n_int`` rows intervening on ``target``: a hard do
    uniform on [-width, width], or with ``soft`` a new mechanism for it."""
    rng = np.random.default_rng(seed)
    n = n_obs + n_int
    x0 = rng.normal(size=n)
    hit = np.arange(n) >= n_obs
    if target == 0:
        x0[hit] = rng.normal(0.5, 0.5, n_int) if soft else rng.uniform(-width, width, n_int)
    x1 = 1.5 * x0 + rng.normal(size=n)
    if target == 1:
        x1[hit] = (0.5 * x0[hit] + rng.normal(size=n_int) + 1.0) if soft else rng.uniform(-width, width, n_int)
    mask = np.zeros((n, 2), dtype=np.int8)
    mask[hit, target] = 1
    return np.column_stack([x0, x1]), mask


def _nats_by_direct_regressions(x: np.ndarray, mask: np.ndarray, t: int, i: int, parents: list[int]) -> float:
    """The evidence for ``t -> i`` computed plainly: z-score, explicit design matrices, ``lstsq`` on the
    observational rows, Gaussian log-likelihoods of the rows intervening on ``t`` inside its range."""
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    obs = ~mask.astype(bool).any(axis=1)
    low, high = np.quantile(z[obs, t], [0.01, 0.99])
    rows = mask[:, t].astype(bool) & ~mask[:, i].astype(bool) & (z[:, t] >= low) & (z[:, t] <= high)

    def design(cols: list[int], where: np.ndarray) -> np.ndarray:
        parts = [np.ones(where.sum())]
        for k in cols:
            v = z[where, k]
            parts += [v, np.tanh(v), np.tanh(2 * v - 1), np.tanh(2 * v + 1)]
        return np.column_stack(parts)

    def loglik(cols: list[int]) -> float:
        coef = np.linalg.lstsq(design(cols, obs), z[obs, i], rcond=None)[0]
        var = np.var(z[obs, i] - design(cols, obs) @ coef)
        res = z[rows, i] - design(cols, rows) @ coef
        return float(np.sum(-0.5 * np.log(2 * np.pi * var) - 0.5 * res**2 / var))

    return loglik([*parents, t]) - loglik(parents)


def test_evidence_matches_direct_regressions_and_is_antisymmetric():
    x, mask = _chain(400, 120, target=0, seed=1, width=3.0)  # some values beyond the 1%-99% range
    graph = np.array([[0, 1], [0, 0]])
    e = direction_evidence(x, mask, graph)
    expected = _nats_by_direct_regressions(x, mask, 0, 1, [])
    assert e[0, 1] == pytest.approx(expected, rel=1e-6)
    assert e[1, 0] == -e[0, 1] and np.isnan(np.diag(e)).all()
    # the parents come from the graph, not from the pair's direction in it: the same evidence either way
    np.testing.assert_allclose(direction_evidence(x, mask, graph.T), e, rtol=1e-9)


@pytest.mark.parametrize("target", [0, 1])
@pytest.mark.parametrize("soft", [False, True])
def test_interventions_on_either_end_point_to_the_true_direction(target, soft):
    # x0 -> x1: intervening on the cause leaves x1's mechanism (given x0) valid; intervening on the
    # effect leaves x0's marginal valid; hard or soft, the evidence favours 0 -> 1 by many nats
    x, mask = _chain(600, 150, target=target, seed=2 + target, soft=soft)
    for graph in (np.array([[0, 1], [0, 0]]), np.array([[0, 0], [1, 0]])):
        assert direction_evidence(x, mask, graph)[0, 1] > 10


def test_evidence_needs_an_adjacent_intervened_pair_and_rows_inside_the_observational_range():
    x, mask = _chain(300, 80, target=0, seed=4)
    assert np.isnan(direction_evidence(x, mask, np.zeros((2, 2)))).all()  # not adjacent
    assert np.isnan(direction_evidence(x, np.zeros_like(mask), np.array([[0, 1], [0, 0]]))).all()  # no target
    far = x.copy()
    far[mask[:, 0] == 1, 0] = 50.0  # every intervened value far outside what the regressions were fit on
    assert np.isnan(direction_evidence(far, mask, np.array([[0, 1], [0, 0]]))).all()
    everywhere = np.ones_like(mask)
    everywhere[:, 1] = 0  # every row intervenes on x0: no observational row to fit on
    assert np.isnan(direction_evidence(x, everywhere, np.array([[0, 1], [0, 0]]))).all()
    # a row intervening on both ends scores neither
    both = mask.copy()
    both[:, 1] = both[:, 0]
    assert np.isnan(direction_evidence(x, both, np.array([[0, 1], [0, 0]]))).all()


def test_weights_add_the_evidence_to_the_networks_log_odds_by_hand():
    # pair 0-1 adjacent (.6 + .2 > .5), the network says 0 -> 1 at log-odds log 3 = 1.0986
    p = np.array([[0.0, 0.6, 0.0], [0.2, 0.0, 0.0], [0.0, 0.0, 0.0]])
    nan = np.nan
    against = np.array([[nan, -2.0, nan], [2.0, nan, nan], [nan, nan, nan]])  # 2 nats for 1 -> 0 beat 1.0986
    np.testing.assert_array_equal(orient(p, 0.5, evidence=against), [[0, 0, 0], [1, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(direction_weights(p, 0.5, against), [[0, 0, 0], [1.2, 0, 0], [0, 0, 0]])
    weak = against / 2.0  # 1 nat for 1 -> 0: below 1.0986, so 0 -> 1 stays
    np.testing.assert_array_equal(orient(p, 0.5, evidence=weak), [[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    # evidence on a pair below the threshold (0-2) adds no edge; all-nan evidence changes nothing
    far = np.full((3, 3), nan)
    far[0, 2], far[2, 0] = 9.0, -9.0
    np.testing.assert_array_equal(orient(p, 0.5, evidence=far), orient(p, 0.5))
    np.testing.assert_array_equal(direction_weights(p, 0.5, np.full((3, 3), nan)), p)
    with pytest.raises(ValueError, match="shape"):
        orient(p, 0.5, evidence=np.zeros((2, 2)))


def test_decided_pairs_are_taken_before_the_others_and_the_graph_stays_a_dag():
    # 0 -> 1 (.9), 1 -> 2 (.8), 2 -> 0 (.7): evidence turning 1 -> 2 into 2 -> 1 is taken first, so the
    # cycle no longer needs a turn: 0 -> 1, 2 -> 1, 2 -> 0
    p = np.array([[0.0, 0.9, 0.2], [0.1, 0.0, 0.8], [0.7, 0.15, 0.0]])
    e = np.full((3, 3), np.nan)
    e[2, 1], e[1, 2] = 5.0, -5.0
    np.testing.assert_array_equal(orient(p, 0.5, evidence=e), [[0, 1, 0], [0, 0, 0], [1, 1, 0]])


@pytest.fixture(scope="module")
def methods():
    return load("alternet"), load("alternet", invariance=False)


def test_observational_output_is_the_same_with_and_without_the_rule(methods):
    on, off = methods
    for seed in range(6):
        dr = draw(seed, interventional=False)
        zeros = np.zeros_like(dr.mask)
        graphs = [m.run(dr.data, mask).graph for m in (on, off) for mask in (None, zeros)]
        for g in graphs[1:]:
            np.testing.assert_array_equal(g, graphs[0])
        assert on.run(dr.data).extras["invariance_turned"] == 0


def test_with_a_mask_the_graph_is_the_network_oriented_by_the_evidence(methods):
    on, off = methods
    turned = 0
    for seed in range(8):
        dr = draw(seed, interventional=True)
        result, plain = on.run(dr.data, dr.mask), off.run(dr.data, dr.mask)
        p, th = result.probabilities, result.threshold
        np.testing.assert_array_equal(plain.graph, orient(p, th))
        evidence = direction_evidence(dr.data, dr.mask, plain.graph)
        np.testing.assert_array_equal(result.graph, orient(p, th, evidence=evidence))
        np.testing.assert_array_equal(result.graph | result.graph.T, plain.graph | plain.graph.T)  # same pairs
        w = direction_weights(p, th, evidence)
        edges = result.graph.astype(bool)
        assert result.extras["invariance_turned"] == int((edges & (p < p.T) & (w > w.T)).sum())
        turned += result.extras["invariance_turned"]
    assert turned > 0  # the draws did exercise the rule


def test_the_option_is_part_of_the_cache_key():
    assert cache_options("alternet", {})["invariance"] is True
    assert cache_options("alternet", {"invariance": False})["invariance"] is False
