"""causal_gym.scm: graph priors, mechanism/noise registries, interventions, sampling, JSON.

References are independent of the code under test: binomial/analytic edge counts and root shares,
a hand-computed preferential-attachment probability, the analytic covariance and total effects
of linear-Gaussian SCMs, scipy's distributions for the noise families, and exact invariances
(same seed -> identical non-descendant columns, factor/strength 1 -> identity).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from causal_gym.graphs import descendants, is_dag
from causal_gym.scm import (
    FORMAT_VERSION,
    SCM,
    HardDo,
    HiddenDisturbance,
    NodeRecipe,
    NodeSpec,
    ParameterShift,
    Shift,
    Soft,
    barabasi_albert_dag,
    erdos_renyi_dag,
    get_mechanism,
    get_noise,
    intervention_from_dict,
    mechanism_names,
    noise_names,
    register_mechanism,
    register_noise,
    standardize,
)
from causal_gym.scm import mechanisms as mechanisms_module
from causal_gym.scm import noise as noise_module

SCALAR_MAPS = ("piecewise", "sigmoid", "fourier", "quadratic", "abs")
HETERO = ("mlp_hetero", "sigmoid_hetero")
ADDITIVE = ("linear", "mlp", *SCALAR_MAPS)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def weight_matrix(scm: SCM) -> np.ndarray:
    """W[i, j] = weight of i -> j, read from the linear node specs (parents in index order)."""
    W = np.zeros((scm.d, scm.d))
    for j, spec in enumerate(scm.nodes):
        assert spec.mechanism == "linear"
        W[list(scm.parents(j)), j] = spec.mechanism_params["weights"]
    return W


def total_effects(W: np.ndarray) -> np.ndarray:
    """T[i, j] = total causal effect of X_i on X_j in a linear SCM: (I - W)^{-1}."""
    return np.linalg.inv(np.eye(W.shape[0]) - W)


def chain_with_branch() -> np.ndarray:
    """0 -> 1 -> 2 -> 3, 0 -> 3, and 4 -> 2; node 5 isolated."""
    A = np.zeros((6, 6), dtype=np.int8)
    for i, j in [(0, 1), (1, 2), (2, 3), (0, 3), (4, 2)]:
        A[i, j] = 1
    return A


@pytest.fixture
def linear_scm() -> SCM:
    return SCM.random(chain_with_branch(), "linear", rng=11)


@pytest.fixture
def fresh_registries(monkeypatch):
    """Let a test register families without leaking them into other tests."""
    for registry in (mechanisms_module._MECHANISMS, noise_module._NOISE):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


def mixed_chooser(node: int, n_parents: int, rng: np.random.Generator) -> NodeRecipe:
    """Cycle through every built-in family (a 'wild'-like mix with standardised maps and t3 noise)."""
    families = ("linear", "mlp", "mlp_hetero", *SCALAR_MAPS, "sigmoid_hetero")
    name = families[node % len(families)]
    config = {"standardize_map": True} if name in SCALAR_MAPS else {}
    noise = ("gaussian", "student_t", "laplace", "uniform")[node % 4]
    return NodeRecipe(name, noise=noise, sigma_range=(0.2, 0.6), mechanism_config=config)


# ---------------------------------------------------------------------------------------------
# graph priors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d, degree", [(10, 2.0), (20, 3.0), (6, 0.7)])
def test_erdos_renyi_mean_edge_count_and_acyclicity(d, degree):
    draws = 2000
    gen = np.random.default_rng(0)
    graphs = [erdos_renyi_dag(d, degree, rng=gen) for _ in range(draws)]
    assert all(g.dtype == np.int8 and is_dag(g) for g in graphs)
    edges = np.array([g.sum() for g in graphs])
    # edge count ~ Binomial(d(d-1)/2, p), p = degree / (d - 1): the standard error of the mean is exact.
    pairs, p = d * (d - 1) / 2, degree / (d - 1)
    se = np.sqrt(pairs * p * (1 - p) / draws)
    assert abs(edges.mean() - d * degree / 2) < 5 * se


@pytest.mark.parametrize("d, degree", [(10, 2.0), (20, 3.0), (7, 0.5), (8, 5.3)])
def test_barabasi_albert_mean_edge_count_and_acyclicity(d, degree):
    draws = 2000
    gen = np.random.default_rng(1)
    graphs = [barabasi_albert_dag(d, degree, rng=gen) for _ in range(draws)]
    assert all(g.dtype == np.int8 and is_dag(g) for g in graphs)
    edges = np.array([g.sum() for g in graphs], dtype=float)
    # Edges are a sum of independent per-node attachment counts; 5 empirical standard errors.
    se = max(edges.std(ddof=1), 1e-12) / np.sqrt(draws)
    assert abs(edges.mean() - d * degree / 2) < 5 * se + 1e-9


def test_barabasi_albert_integer_degree_one_gives_trees_with_d_minus_one_edges():
    # d = 10 with 2E/d = 1.8 means exactly one attachment per node: a random recursive tree whose
    # edges point towards the first arrival, so every node but that one has exactly one child.
    for seed in range(50):
        A = barabasi_albert_dag(10, 1.8, rng=seed)
        assert A.sum() == 9 and (A.sum(axis=1) == 1).sum() == 9


def test_barabasi_albert_attaches_preferentially():
    # d = 4, one attachment per node (2E/d = 1.5). Hand computation with weights degree + 1:
    # node 2 picks node 0 w.p. 2/4; then weights (3, 2, 2) so node 3 picks node 0 w.p. 3/7.
    # P(node 0 collects all 3 edges, a star) = 3/14; uniform attachment would give 1/2 * 1/3 = 1/6.
    # Edges point from the newer node to the older one, so the star's centre is a sink (in-degree 3).
    draws = 6000
    gen = np.random.default_rng(2)
    stars = sum(barabasi_albert_dag(4, 1.5, rng=gen).sum(axis=0).max() == 3 for _ in range(draws))
    share, p = stars / draws, 3 / 14
    assert abs(share - p) < 4.5 * np.sqrt(p * (1 - p) / draws)
    assert abs(share - 1 / 6) > 4.5 * np.sqrt(p * (1 - p) / draws)


def test_erdos_renyi_causal_order_is_uniform():
    # Node 0 sits at each causal position with probability 1/d and is a root at position k w.p. (1-p)^k.
    d, degree, draws = 10, 2.0, 3000
    p = degree / (d - 1)
    expected = np.mean((1 - p) ** np.arange(d))
    gen = np.random.default_rng(3)
    share = np.mean([erdos_renyi_dag(d, degree, rng=gen)[:, 0].sum() == 0 for _ in range(draws)])
    assert abs(share - expected) < 5 * np.sqrt(expected * (1 - expected) / draws)


def test_barabasi_albert_root_is_uniform_over_nodes():
    # With at least one attachment per node, the first arrival is the only sink (edges point from
    # newer to older nodes), and it is uniform over nodes because the arrival order is.
    d, draws = 6, 3000
    gen = np.random.default_rng(4)
    roots = []
    for _ in range(draws):
        A = barabasi_albert_dag(d, 2.0, rng=gen)
        (root,) = np.flatnonzero(A.sum(axis=1) == 0)
        roots.append(root)
    counts = np.bincount(roots, minlength=d)
    assert stats.chisquare(counts).pvalue > 1e-3


@settings(max_examples=40, deadline=None)
@given(d=st.integers(1, 12), fraction=st.floats(0, 1), seed=st.integers(0, 2**32))
def test_priors_always_return_dags_and_the_complete_dag_at_full_degree(d, fraction, seed):
    degree = fraction * (d - 1)
    for prior in (erdos_renyi_dag, barabasi_albert_dag):
        A = prior(d, degree, rng=seed)
        assert A.shape == (d, d) and A.dtype == np.int8 and is_dag(A)
        full = prior(d, d - 1, rng=seed)
        assert full.sum() == d * (d - 1) // 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"d": 0, "rng": 0}, "d must be >= 1"),
        ({"d": 5, "expected_degree": 4.5, "rng": 0}, "<= d - 1"),
        ({"d": 5, "expected_degree": -1.0, "rng": 0}, ">= 0"),
        ({"d": 5, "expected_degree": float("nan"), "rng": 0}, "finite"),
        ({"d": 5, "rng": None}, "seed"),
        ({"d": 2.5, "rng": 0}, "integer"),
    ],
)
def test_priors_reject_bad_input(kwargs, message):
    for prior in (erdos_renyi_dag, barabasi_albert_dag):
        with pytest.raises(ValueError, match=message):
            prior(**kwargs)


# ---------------------------------------------------------------------------------------------
# mechanisms
# ---------------------------------------------------------------------------------------------


def _parents_sample(n: int, k: int, seed: int) -> np.ndarray:
    """Correlated, shifted Gaussian parents; one fixed law per ``k``, draws depend on ``seed``."""
    law = np.random.default_rng(k)
    mixing, offset = law.normal(size=(k, k)), law.normal(size=k)
    return np.random.default_rng(seed).normal(size=(n, k)) @ mixing + offset


BUILT_IN_MECHANISMS = ("linear", "mlp", "mlp_hetero", "piecewise", "sigmoid", "fourier", "quadratic", "abs", "sigmoid_hetero")
"""The families causal_gym.scm registers itself (benchmarks register more, e.g. arena_* step maps
that by design ignore small parent changes, so this list is fixed rather than read at collection)."""


def test_built_in_mechanisms_are_registered():
    assert set(BUILT_IN_MECHANISMS) <= set(mechanism_names())


@pytest.mark.parametrize("name", BUILT_IN_MECHANISMS)
def test_every_mechanism_shape_finite_json_and_uses_each_parent(name):
    gen = np.random.default_rng(5)
    mechanism = get_mechanism(name)
    params = mechanism.sample_params(gen, 3)
    json.dumps(params, allow_nan=False)
    if callable(getattr(mechanism, "calibrate", None)):
        params = mechanism.calibrate(params, _parents_sample(500, 3, 6))
    P = _parents_sample(400, 3, 7)
    eps = gen.normal(size=400)
    out = mechanism.evaluate(params, P, eps)
    assert out.shape == (400,) and np.all(np.isfinite(out))
    for i in range(3):
        moved = P.copy()
        moved[:, i] += 1.0
        changed = np.abs(mechanism.evaluate(params, moved, eps) - out) > 1e-9
        assert changed.mean() > 0.5, f"{name} ignores parent {i}"


@pytest.mark.parametrize("name", ADDITIVE)
def test_additive_mechanisms_add_the_noise_unchanged(name):
    mechanism = get_mechanism(name)
    params = mechanism.sample_params(np.random.default_rng(8), 2)
    P, eps = _parents_sample(300, 2, 9), np.random.default_rng(10).normal(size=300)
    noise_part = mechanism.evaluate(params, P, eps) - mechanism.evaluate(params, P, 0 * eps)
    np.testing.assert_allclose(noise_part, eps, atol=1e-12)


@pytest.mark.parametrize("name", HETERO)
@pytest.mark.parametrize("seed", range(4))
def test_hetero_mechanisms_have_parent_dependent_residual_variance(name, seed):
    n, k = 5000, 2
    mechanism = get_mechanism(name)
    params = mechanism.sample_params(np.random.default_rng(seed), k)
    P = np.random.default_rng(100 + seed).normal(size=(n, k))
    eps = np.random.default_rng(200 + seed).normal(size=n)
    residual = mechanism.evaluate(params, P, eps) - mechanism.evaluate(params, P, np.zeros(n))
    features = np.column_stack([np.ones(n), P, P**2])

    def r_squared(y: np.ndarray) -> float:
        fitted = features @ np.linalg.lstsq(features, y, rcond=None)[0]
        return 1 - np.var(y - fitted) / np.var(y)

    # Under homoscedastic noise R^2 of eps^2 on 5 features is ~ 5/n = 0.001.
    assert r_squared(residual**2) > 0.05
    assert r_squared(eps**2) < 0.01


@pytest.mark.parametrize("name", SCALAR_MAPS)
def test_standardized_maps_have_unit_variance_on_the_reference_distribution(name):
    mechanism = get_mechanism(name)
    params = mechanism.sample_params(np.random.default_rng(12), 3, standardize_map=True)
    P_fresh = _parents_sample(20000, 3, 14)
    with pytest.raises(ValueError, match="not calibrated"):
        mechanism.evaluate(params, P_fresh, np.zeros(20000))
    params = mechanism.calibrate(params, _parents_sample(20000, 3, 13))
    out = mechanism.evaluate(params, P_fresh, np.zeros(20000))
    assert abs(out.mean()) < 0.05 and abs(out.var() - 1) < 0.15
    plain = mechanism.sample_params(np.random.default_rng(12), 3)
    assert mechanism.calibrate(plain, P_fresh) == plain


@pytest.mark.parametrize(
    "name, standardize_map", [(name, False) for name in (*ADDITIVE, *HETERO)] + [(name, True) for name in SCALAR_MAPS]
)
def test_scale_params_multiplies_the_noiseless_output_and_keeps_the_noise_part(name, standardize_map):
    mechanism = get_mechanism(name)
    config = {"standardize_map": True} if standardize_map else {}
    params = mechanism.sample_params(np.random.default_rng(15), 2, **config)
    if standardize_map:
        params = mechanism.calibrate(params, _parents_sample(1000, 2, 16))
    P, eps = _parents_sample(200, 2, 17), np.random.default_rng(18).normal(size=200)
    zero = np.zeros(200)
    assert mechanism.scale_params(params, 1.0) == params
    scaled = mechanism.scale_params(params, -2.5)
    np.testing.assert_allclose(
        mechanism.evaluate(scaled, P, zero), -2.5 * mechanism.evaluate(params, P, zero), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(
        mechanism.evaluate(scaled, P, eps) - mechanism.evaluate(scaled, P, zero),
        mechanism.evaluate(params, P, eps) - mechanism.evaluate(params, P, zero),
        atol=1e-12,
    )


def test_mechanism_config_validation():
    gen = np.random.default_rng(0)
    assert get_mechanism("linear").sample_params(gen, 0) == {"weights": []}
    for name in set(mechanism_names()) & {"mlp", "mlp_hetero", *SCALAR_MAPS, "sigmoid_hetero"}:
        with pytest.raises(ValueError, match="n_parents"):
            get_mechanism(name).sample_params(gen, 0)
    with pytest.raises(ValueError, match="weight_range"):
        get_mechanism("linear").sample_params(gen, 2, weight_range=(2.0, 0.5))
    with pytest.raises(ValueError, match="standardize_map"):
        get_mechanism("quadratic").sample_params(gen, 2, standardize_map="yes")
    with pytest.raises(ValueError, match="lengthscale"):
        get_mechanism("fourier").sample_params(gen, 2, lengthscale=0.0)
    weights = np.abs(get_mechanism("linear").sample_params(gen, 1000)["weights"])
    assert weights.min() >= 0.5 and weights.max() <= 2.0


# ---------------------------------------------------------------------------------------------
# noise
# ---------------------------------------------------------------------------------------------


def _scipy_reference(name: str, params: dict) -> stats.rv_continuous:
    s = params["scale"]
    if name == "gaussian":
        return stats.norm(scale=s)
    if name == "student_t":
        df = params["df"]
        return stats.t(df, scale=s / np.sqrt(df / (df - 2)))
    if name == "laplace":
        return stats.laplace(scale=s / np.sqrt(2))
    if name == "gumbel":
        b = s * np.sqrt(6) / np.pi
        return stats.gumbel_r(loc=-np.euler_gamma * b, scale=b)
    return stats.uniform(loc=-s * np.sqrt(3), scale=2 * s * np.sqrt(3))


@pytest.mark.parametrize(
    "name, config",
    [("gaussian", {}), ("student_t", {"df": 3.0}), ("student_t", {"df": 7.0}), ("laplace", {}), ("uniform", {}),
     ("gumbel", {})],
)
def test_noise_families_match_scipy_and_have_variance_scale_squared(name, config):
    family = get_noise(name)
    params = family.sample_params(np.random.default_rng(19), scale_range=(0.5, 2.0), **config)
    assert 0.5 <= params["scale"] <= 2.0
    x = family.sample(params, 20000, np.random.default_rng(20))
    assert x.shape == (20000,)
    reference = _scipy_reference(name, params)
    assert stats.kstest(x, reference.cdf).pvalue > 1e-3
    assert reference.var() == pytest.approx(params["scale"] ** 2)  # the reference is scaled to variance scale^2


@pytest.mark.parametrize(
    "name, config, kurtosis",
    [("gaussian", {}, 3.0), ("student_t", {"df": 6.0}, 6.0), ("laplace", {}, 6.0), ("uniform", {}, 1.8),
     ("gumbel", {}, 5.4)],
)
def test_noise_sample_variance_is_scale_squared(name, config, kurtosis):
    n = 200_000
    family = get_noise(name)
    params = family.sample_params(np.random.default_rng(21), scale_range=(1.5, 1.5), **config)
    x = family.sample(params, n, np.random.default_rng(22))
    # sd of the sample variance is sigma^2 sqrt((kurtosis - 1) / n)
    assert abs(x.var() / 2.25 - 1) < 5 * np.sqrt((kurtosis - 1) / n)
    assert abs(x.mean()) < 5 * 1.5 / np.sqrt(n)


def test_noise_config_validation():
    gen = np.random.default_rng(0)
    with pytest.raises(ValueError, match="df"):
        get_noise("student_t").sample_params(gen, df=2.0)
    with pytest.raises(ValueError, match="scale_range"):
        get_noise("gaussian").sample_params(gen, scale_range=(2.0, 1.0))
    with pytest.raises(ValueError, match="scale_range"):
        get_noise("gaussian").sample_params(gen, scale_range=(-1.0, 1.0))
    assert set(noise_names()) >= {"gaussian", "student_t", "laplace", "uniform"}


# ---------------------------------------------------------------------------------------------
# registries
# ---------------------------------------------------------------------------------------------


def test_registries_accept_extensions_and_reject_duplicates(fresh_registries):
    @register_mechanism("cubic")
    class Cubic:
        def sample_params(self, rng, n_parents, scale=1.0):
            return {"weights": (scale * rng.normal(size=n_parents)).tolist()}

        def evaluate(self, params, parents, noise):
            return (parents @ np.asarray(params["weights"])) ** 3 + noise

    @register_noise("rademacher")
    class Rademacher:
        def sample_params(self, rng, scale_range=(1.0, 1.0)):
            return {"scale": float(rng.uniform(*scale_range))}

        def sample(self, params, n, rng):
            return params["scale"] * rng.choice([-1.0, 1.0], n)

    assert "cubic" in mechanism_names() and "rademacher" in noise_names()
    scm = SCM.random(chain_with_branch(), "cubic", noise="rademacher", rng=0, mechanism_config={"scale": 0.5})
    np.testing.assert_array_equal(SCM.from_json(scm.to_json()).sample(50, 1), scm.sample(50, 1))
    with pytest.raises(ValueError, match="no scale_params"):
        scm.sample(10, 0, [ParameterShift(3, 2.0)])
    with pytest.raises(ValueError, match="already registered"):
        register_mechanism("cubic")(Cubic)
    with pytest.raises(ValueError, match="already registered"):
        register_mechanism("linear")(Cubic)
    with pytest.raises(TypeError, match="evaluate"):

        @register_mechanism("broken")
        class Broken:
            def sample_params(self, rng, n_parents):
                return {}

    with pytest.raises(ValueError, match="unknown mechanism"):
        get_mechanism("no_such_family")
    with pytest.raises(ValueError, match="unknown noise"):
        get_noise("no_such_noise")


# ---------------------------------------------------------------------------------------------
# linear-Gaussian SCM against analytic results
# ---------------------------------------------------------------------------------------------


def test_linear_gaussian_covariance_matches_analytic():
    A = erdos_renyi_dag(6, 3.0, rng=23)
    scm = SCM.random(A, "linear", rng=24)
    W = weight_matrix(scm)
    D = np.diag([spec.noise_params["scale"] ** 2 for spec in scm.nodes])
    T = total_effects(W)
    sigma = T.T @ D @ T  # = (I - W^T)^{-1} D (I - W)^{-1} for rows X = X W + E
    n = 200_000
    X = scm.sample(n, 25)
    S = np.cov(X, rowvar=False, bias=True)
    se = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    assert np.all(np.abs(S - sigma) < 5 * se)


def test_hard_do_fixes_target_keeps_non_descendants_and_moves_descendants_by_total_effect(linear_scm):
    target, c, n = 1, 3.0, 20_000
    T = total_effects(weight_matrix(linear_scm))
    X = linear_scm.sample(n, 26)
    X_do = linear_scm.sample(n, 26, [HardDo(target, value=c)])
    assert np.all(X_do[:, target] == c)
    below = sorted(descendants(chain_with_branch(), target))
    others = sorted(set(range(6)) - set(below) - {target})
    assert below == [2, 3] and others == [0, 4, 5]
    np.testing.assert_array_equal(X_do[:, others], X[:, others])
    # Row by row (shared noise) the change at a descendant is T[target, j] * (c - X_target).
    np.testing.assert_allclose(X_do[:, below] - X[:, below], np.outer(c - X[:, target], T[target, below]), atol=1e-9)
    # In distribution: E[X_j | do(X_t = c)] = T[t, j] * c for zero-mean noise.
    for j in below:
        se = X_do[:, j].std() / np.sqrt(n)
        assert abs(X_do[:, j].mean() - T[target, j] * c) < 5 * se


def test_resampled_hard_do_is_uniform_between_bounds(linear_scm):
    X = linear_scm.sample(5000, 27)
    X_do = linear_scm.sample(5000, 27, [HardDo(2, low=-1.0, high=0.5)])
    values = X_do[:, 2]
    assert values.min() >= -1.0 and values.max() <= 0.5
    assert stats.kstest(values, stats.uniform(loc=-1.0, scale=1.5).cdf).pvalue > 1e-3
    np.testing.assert_array_equal(X_do[:, [0, 1, 4, 5]], X[:, [0, 1, 4, 5]])


@pytest.mark.parametrize("make", [lambda t: Shift(t, delta=1.7), lambda t: HiddenDisturbance(t, value=1.7)])
def test_shift_and_hidden_value_move_target_and_descendants_by_delta_times_total_effect(linear_scm, make):
    target = 0
    T = total_effects(weight_matrix(linear_scm))
    X = linear_scm.sample(1000, 28)
    X_s = linear_scm.sample(1000, 28, [make(target)])
    np.testing.assert_allclose(X_s - X, np.tile(1.7 * T[target], (1000, 1)), atol=1e-9)
    np.testing.assert_array_equal(X_s[:, [4, 5]], X[:, [4, 5]])


def test_hidden_disturbance_with_scale_is_a_random_unobserved_term(linear_scm):
    target, n = 1, 50_000
    T = total_effects(weight_matrix(linear_scm))
    X = linear_scm.sample(n, 29)
    X_h = linear_scm.sample(n, 29, [HiddenDisturbance(target, scale=0.8)])
    h = X_h[:, target] - X[:, target]
    np.testing.assert_allclose(X_h - X, np.outer(h, T[target]), atol=1e-9)
    assert abs(h.std() - 0.8) < 5 * 0.8 / np.sqrt(2 * n)


def test_parameter_shift_and_soft_on_linear_nodes(linear_scm):
    target, n = 2, 20_000
    w = np.asarray(linear_scm.nodes[target].mechanism_params["weights"])
    X = linear_scm.sample(n, 30)
    np.testing.assert_array_equal(linear_scm.sample(n, 30, [ParameterShift(target, 1.0)]), X)
    np.testing.assert_array_equal(linear_scm.sample(n, 30, [Soft(target, 1.0)]), X)
    signal = X[:, list(linear_scm.parents(target))] @ w
    for intervention, factor in [(ParameterShift(target, 0.3), 0.3), (Soft(target, 0.3), 0.3)]:
        X_i = linear_scm.sample(n, 30, [intervention])
        np.testing.assert_allclose(X_i[:, target] - X[:, target], (factor - 1) * signal, atol=1e-9)
    X_0 = linear_scm.sample(n, 30, [Soft(target, 0.0)])
    for parent in linear_scm.parents(target):
        assert abs(np.corrcoef(X_0[:, target], X_0[:, parent])[0, 1]) < 5 / np.sqrt(n)
        assert abs(np.corrcoef(X[:, target], X[:, parent])[0, 1]) > 0.1


def test_soft_zero_makes_nonlinear_nodes_independent_of_parents():
    n = 20_000
    for name in ("mlp", "mlp_hetero", "sigmoid_hetero", "quadratic"):
        scm = SCM.random(chain_with_branch(), name, rng=31)
        X = scm.sample(n, 32, [Soft(2, 0.0)])
        # Independence: the node's values are f(0, eps), a function of its own noise only.
        for parent in scm.parents(2):
            assert abs(stats.spearmanr(X[:, 2], X[:, parent]).statistic) < 5 / np.sqrt(n)
            assert abs(stats.spearmanr(np.abs(X[:, 2] - np.median(X[:, 2])), X[:, parent]).statistic) < 5 / np.sqrt(n)


def test_parameter_shift_with_factor_one_is_identity_for_every_family():
    scm = SCM.random(chain_with_branch(), mixed_chooser, rng=33)
    X = scm.sample(300, 34)
    for j in range(scm.d):
        if scm.parents(j):
            np.testing.assert_array_equal(scm.sample(300, 34, [ParameterShift(j, 1.0)]), X)
            np.testing.assert_array_equal(scm.sample(300, 34, [Soft(j, 1.0)]), X)


def test_multiple_interventions_compose_and_their_order_does_not_matter(linear_scm):
    ivs = [Shift(0, 1.0), HardDo(4, low=0.0, high=1.0), HiddenDisturbance(3, scale=0.5), Soft(2, 0.5)]
    X = linear_scm.sample(200, 35, ivs)
    np.testing.assert_array_equal(linear_scm.sample(200, 35, ivs[::-1]), X)
    np.testing.assert_array_equal(X[:, 5], linear_scm.sample(200, 35)[:, 5])


@pytest.mark.parametrize(
    "interventions, message",
    [
        ([HardDo(1, value=0.0), HardDo(1, value=1.0)], "two hard_do"),
        ([HardDo(1, value=0.0), Shift(1, 1.0)], "hard do together"),
        ([Shift(6, 1.0)], "out of range"),
        ([Soft(0, 0.5)], "is a root"),
        ([ParameterShift(4, 2.0)], "is a root"),
        (["do(1)"], "HardDo"),
        (HardDo(1, value=0.0), "sequence"),
    ],
)
def test_invalid_intervention_sets_are_rejected(linear_scm, interventions, message):
    with pytest.raises(ValueError, match=message):
        linear_scm.sample(10, 0, interventions)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: HardDo(0), "either value"),
        (lambda: HardDo(0, value=1.0, low=0.0), "not a mix"),
        (lambda: HardDo(0, low=0.0), "either value"),
        (lambda: HardDo(0, low=1.0, high=1.0), "low < high"),
        (lambda: HiddenDisturbance(0), "exactly one"),
        (lambda: HiddenDisturbance(0, value=1.0, scale=1.0), "exactly one"),
        (lambda: HiddenDisturbance(0, scale=0.0), "scale must be >"),
        (lambda: Soft(0, -0.1), "strength"),
        (lambda: Shift(0, float("nan")), "finite"),
        (lambda: Shift(-1, 1.0), "target"),
        (lambda: Shift(True, 1.0), "target"),
    ],
)
def test_intervention_constructors_validate(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_interventions_round_trip_through_json():
    items = [
        HardDo(1, value=2.0),
        HardDo(2, low=-1.0, high=1.0),
        Shift(0, 0.5),
        Soft(3, 0.25),
        ParameterShift(3, 1.5),
        HiddenDisturbance(4, scale=0.3),
    ]
    for item in items:
        assert intervention_from_dict(json.loads(json.dumps(item.to_dict()))) == item
    with pytest.raises(ValueError, match="unknown intervention type"):
        intervention_from_dict({"type": "teleport", "target": 0})
    with pytest.raises(ValueError, match="no field"):
        intervention_from_dict({"type": "shift", "target": 0, "delta": 1.0, "speed": 2})


# ---------------------------------------------------------------------------------------------
# determinism, JSON, construction
# ---------------------------------------------------------------------------------------------


def test_sampling_is_deterministic_per_seed():
    scm = SCM.random(erdos_renyi_dag(10, rng=36), "mlp", rng=37)
    X = scm.sample(600, 38)
    np.testing.assert_array_equal(scm.sample(600, 38), X)
    np.testing.assert_array_equal(scm.sample(600, np.random.default_rng(38)), X)
    np.testing.assert_array_equal(scm.sample(600, np.random.SeedSequence(38)), X)
    assert not np.any(scm.sample(600, 39) == X)
    assert SCM.random(erdos_renyi_dag(10, rng=36), "mlp", rng=37).to_dict() == scm.to_dict()


def test_json_round_trip_samples_bit_identical_data():
    # The graph seed is one whose draw covers the families below (the assertion guards that).
    scm = SCM.random(barabasi_albert_dag(12, rng=50), mixed_chooser, rng=41)
    families = {spec.mechanism for spec in scm.nodes}
    assert families >= {"mlp", "mlp_hetero", "fourier", "sigmoid_hetero"}
    text = scm.to_json()
    again = SCM.from_json(text)
    assert again.to_dict() == scm.to_dict() == json.loads(text)
    assert json.loads(text)["version"] == FORMAT_VERSION
    ivs = [Shift(3, 1.0), HardDo(5, low=-1.0, high=1.0)]
    np.testing.assert_array_equal(again.sample(600, 42), scm.sample(600, 42))
    np.testing.assert_array_equal(again.sample(600, 42, ivs), scm.sample(600, 42, ivs))


def test_from_dict_rejects_other_formats_and_versions(linear_scm):
    data = linear_scm.to_dict()
    with pytest.raises(ValueError, match="version"):
        SCM.from_dict({**data, "version": FORMAT_VERSION + 1})
    with pytest.raises(ValueError, match="format"):
        SCM.from_dict({**data, "format": "other"})
    with pytest.raises(ValueError, match="keys"):
        SCM.from_dict({**data, "nodes": [{"mechanism": "linear"}] * 6})
    with pytest.raises(ValueError, match="invalid SCM JSON"):
        SCM.from_json("{not json")


def test_random_standardized_maps_have_unit_variance_on_the_scm_distribution():
    def chooser(node, n_parents, rng):
        return NodeRecipe(SCALAR_MAPS[node % 5], sigma_range=(0.15, 0.35), mechanism_config={"standardize_map": True})

    scm = SCM.random(erdos_renyi_dag(10, 2.5, rng=43), chooser, rng=44, reference_size=20_000)
    X = scm.sample(50_000, 45)
    checked = 0
    for j, spec in enumerate(scm.nodes):
        parents = list(scm.parents(j))
        if not parents:
            continue
        f = get_mechanism(spec.mechanism).evaluate(spec.mechanism_params, X[:, parents], np.zeros(len(X)))
        assert abs(f.mean()) < 0.1 and abs(f.var() - 1) < 0.15, (j, spec.mechanism, f.mean(), f.var())
        checked += 1
    assert checked >= 5


def test_random_roots_are_their_noise_and_ranges_are_respected():
    A = chain_with_branch()
    scm = SCM.random(A, "mlp", rng=46, sigma_range=(0.3, 0.4), root_sigma_range=(1.0, 1.0), noise="laplace")
    for j, spec in enumerate(scm.nodes):
        assert spec.noise == "laplace"
        if scm.parents(j):
            assert spec.mechanism == "mlp" and 0.3 <= spec.noise_params["scale"] <= 0.4
        else:
            assert spec.mechanism == "linear" and spec.mechanism_params == {"weights": []}
            assert spec.noise_params["scale"] == 1.0
    X = scm.sample(20_000, 47)
    assert stats.kstest(X[:, 0], stats.laplace(scale=1 / np.sqrt(2)).cdf).pvalue > 1e-3


@pytest.mark.parametrize(
    "graph, message",
    [
        (np.array([[0, 1], [1, 0]]), "undirected"),
        (np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]]), "directed cycle"),
        (np.zeros((0, 0)), "at least one node"),
        (np.array([[0, 2], [0, 0]]), "0 or 1"),
    ],
)
def test_scm_rejects_bad_graphs(graph, message):
    nodes = [NodeSpec("linear", {"weights": []}, "gaussian", {"scale": 1.0})] * graph.shape[0]
    with pytest.raises(ValueError, match=message):
        SCM(graph, nodes)
    with pytest.raises(ValueError, match=message):
        SCM.random(graph, rng=0)


def test_scm_rejects_bad_node_specs():
    A = np.array([[0, 1], [0, 0]])
    root = NodeSpec("linear", {"weights": []}, "gaussian", {"scale": 1.0})
    good = NodeSpec("linear", {"weights": [0.7]}, "gaussian", {"scale": 1.0})
    SCM(A, [root, good])
    cases = [
        ([root], "one NodeSpec per graph node"),
        ([root, NodeSpec("linear", {"weights": [1.0, 2.0]}, "gaussian", {"scale": 1.0})], "node 1"),
        ([root, NodeSpec("mlp", {"weights": [1.0]}, "gaussian", {"scale": 1.0})], "node 1"),
        ([root, NodeSpec("nope", {}, "gaussian", {"scale": 1.0})], "unknown mechanism"),
        ([root, NodeSpec("linear", {"weights": [1.0]}, "gaussian", {})], "node 1"),
        ([root, {"mechanism": "linear"}], "NodeSpec"),
    ]
    for nodes, message in cases:
        with pytest.raises(ValueError, match=message):
            SCM(A, nodes)
    with pytest.raises(ValueError, match="NaN"):
        NodeSpec("linear", {"weights": [float("nan")]}, "gaussian", {"scale": 1.0})
    with pytest.raises(ValueError, match="JSON"):
        NodeSpec("linear", {"weights": object()}, "gaussian", {"scale": 1.0})
    assert NodeSpec("linear", {"weights": np.array([0.5])}, "gaussian", {"scale": np.float64(1)}).mechanism_params == {
        "weights": [0.5]
    }


def test_random_and_sample_reject_bad_arguments(linear_scm):
    A = chain_with_branch()
    for n in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match="n must"):
            linear_scm.sample(n, 0)
    with pytest.raises(ValueError, match="seed"):
        linear_scm.sample(10, None)
    with pytest.raises(ValueError, match="callable mechanism chooser"):
        SCM.random(A, mixed_chooser, rng=0, noise="laplace")
    with pytest.raises(ValueError, match="NodeRecipe"):
        SCM.random(A, lambda node, k, rng: "linear", rng=0)
    with pytest.raises(ValueError, match="rejected its config"):
        SCM.random(A, "mlp", rng=0, mechanism_config={"hidden": 3})
    with pytest.raises(ValueError, match="sigma_range"):
        SCM.random(A, "mlp", rng=0, sigma_range=(1.0, 0.5))
    with pytest.raises(ValueError, match="sigma_range"):
        NodeRecipe(noise_config={"scale_range": (1.0, 1.0)})
    with pytest.raises(ValueError, match="unknown mechanism"):
        SCM.random(A, "nope", rng=0)
    with pytest.raises(ValueError, match="out of range"):
        linear_scm.parents(6)


# ---------------------------------------------------------------------------------------------
# standardize
# ---------------------------------------------------------------------------------------------


def test_standardize():
    X = np.random.default_rng(48).normal(3.0, 2.0, size=(100, 4)) * [1, 10, 0.1, 5]
    Xs, mean, std = standardize(X)
    np.testing.assert_allclose(Xs.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Xs.std(axis=0), 1, atol=1e-12)
    np.testing.assert_allclose(Xs * std + mean, X, atol=1e-12)
    with pytest.raises(ValueError, match="constant column"):
        standardize(np.column_stack([X[:, 0], np.ones(100)]))
    with pytest.raises(ValueError, match="NaN"):
        standardize(np.array([[1.0, np.nan], [2.0, 3.0]]))
