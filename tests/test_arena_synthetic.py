"""CausalArena synthetic generator and audits, checked against independent references:
networkx for graph structure, scipy.stats for root distributions, closed-form moments for noise,
hand-built bad cases for the audits, exact algebraic identities for the stressors."""

import json
import math

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from causal_gym.envs.arena import audits, families, graph_families, pool
from causal_gym.envs.arena.audits import audit_data, audit_graph, audit_interventional, graph_depth
from causal_gym.envs.arena.families import (
    MECHANISM_FORMS,
    NOISE_TAGS,
    ROOT_FAMILIES,
    calibrate_noise,
    couple,
    draw_noise,
)
from causal_gym.envs.arena.graph_families import DENSITY_RANGES, GRAPH_FAMILIES, candidate_graph, sample_graph
from causal_gym.envs.arena.synthetic import STRESSORS, ArenaConfig, ArenaSCM, generate
from causal_gym.graphs import v_structures
from causal_gym.scm import SCM, HardDo, erdos_renyi_dag, get_mechanism, get_noise, mechanism_names, noise_names
from graph_builders import graph


def _nx(adjacency):
    return nx.from_numpy_array(np.asarray(adjacency), create_using=nx.DiGraph)


# ---------------------------------------------------------------------------------------------
# graph families
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", GRAPH_FAMILIES)
@pytest.mark.parametrize("d", [10, 30])
def test_every_family_passes_the_validity_filters(family, d):
    for seed in range(6):
        draw = sample_graph(family, d, rng=seed)
        A = draw.adjacency
        G = _nx(A)
        assert A.dtype == np.int8 and A.shape == (d, d)
        assert nx.is_directed_acyclic_graph(G)
        assert all(G.degree(v) > 0 for v in G)
        assert A.sum() >= math.ceil(0.8 * d)
        needed = 3 if family in {"chain", "tree", "small_world", "scale_free"} else 2
        assert nx.dag_longest_path_length(G) + 1 >= needed
        assert draw.in_degree_cap in graph_families.in_degree_cap_choices(d)
        if draw.in_degree_cap is not None:
            assert A.sum(axis=0).max() <= draw.in_degree_cap


def test_chain_is_a_directed_path_plus_skips():
    for seed in range(10):
        # a density below the edge floor leaves exactly the path
        A = candidate_graph("chain", 12, density=0.01, in_degree_cap=None, rng=seed)
        assert A.sum() == 11 and A.sum(axis=0).max() == 1 and A.sum(axis=1).max() == 1
        assert nx.dag_longest_path_length(_nx(A)) == 11
        dense = sample_graph("chain", 30, rng=seed).adjacency
        order = list(nx.topological_sort(_nx(dense)))
        assert all(dense[a, b] for a, b in zip(order, order[1:]))  # Hamiltonian path


@pytest.mark.parametrize("d", [10, 20, 50])
def test_tree_is_an_out_branching(d):
    for seed in range(10):
        A = sample_graph("tree", d, rng=seed).adjacency
        assert A.sum() == d - 1
        assert A.sum(axis=0).max() == 1 and (A.sum(axis=0) == 0).sum() == 1
        assert nx.is_tree(_nx(A).to_undirected())


def _graded(A):
    """Number of levels of the widest weakly connected component when a level function with
    level(child) = level(parent) + 1 on every edge exists, else None."""
    level, widest = {}, 0
    skeleton = nx.from_numpy_array(np.asarray(A | A.T))
    for component in nx.connected_components(skeleton):
        start = next(iter(component))
        level[start] = 0
        for u, v in nx.bfs_edges(skeleton, start):
            level[v] = level[u] + (1 if A[u, v] else -1)
        values = [level[v] for v in component]
        widest = max(widest, max(values) - min(values) + 1)
    ok = all(level[j] == level[i] + 1 for i, j in zip(*np.nonzero(A)))
    return widest if ok else None


def test_bipartite_layered_edges_join_consecutive_layers_only():
    for d in (10, 30):
        for seed in range(10):
            A = sample_graph("bipartite_layered", d, rng=seed).adjacency
            levels = _graded(A)
            assert levels is not None and levels <= 4  # at most 4 layers
    # the check can fail: Erdős–Rényi graphs have transitive triangles
    assert any(_graded(sample_graph("erdos_renyi", 30, rng=s).adjacency) is None for s in range(5))


@pytest.mark.parametrize("d,cap", [(20, None), (20, 4), (30, 5), (50, 6)])
def test_collider_rich_has_more_v_structures_than_erdos_renyi(d, cap):
    wins, ratio_c, ratio_e = 0, [], []
    for seed in range(15):
        rho = 0.06 + 0.18 * seed / 14
        C = candidate_graph("collider_rich", d, density=rho, in_degree_cap=cap, rng=seed)
        E = candidate_graph("erdos_renyi", d, density=rho, in_degree_cap=cap, rng=100 + seed)
        assert C.sum() == E.sum()
        vc, ve = len(v_structures(C)), len(v_structures(E))
        wins += vc > ve
        ratio_c.append(vc / C.sum())
        ratio_e.append(ve / E.sum())
    assert wins >= 13 and np.mean(ratio_c) > 1.3 * np.mean(ratio_e)


@pytest.mark.parametrize("family", [f for f in GRAPH_FAMILIES if f != "tree"])
def test_realised_density_follows_the_paper_range(family):
    low, high = DENSITY_RANGES[family]
    for d in (20, 30, 50):
        pairs = d * (d - 1) / 2
        floor = math.ceil(0.8 * d) / pairs
        densities = []
        for seed in range(12):
            draw = sample_graph(family, d, rng=seed)
            assert low <= draw.density_parameter <= high
            densities.append(draw.density)
            assert draw.density <= max(high, floor) + 1.5 / pairs
            assert draw.density >= min(low, floor) * 0.9
        assert low <= np.mean(densities) <= high


def test_tree_density_is_two_over_d_and_has_no_parameter():
    draw = sample_graph("tree", 40, rng=0)
    assert draw.density == pytest.approx(2 / 40) and draw.density_parameter is None
    with pytest.raises(ValueError, match="density"):
        candidate_graph("tree", 10, density=0.1, in_degree_cap=None, rng=0)


def test_graph_sampling_is_deterministic_and_validates():
    a = sample_graph("small_world", 20, rng=7)
    b = sample_graph("small_world", 20, rng=7)
    assert np.array_equal(a.adjacency, b.adjacency) and a.to_dict() == b.to_dict()
    with pytest.raises(ValueError, match="graph family"):
        sample_graph("grid", 10, rng=0)
    with pytest.raises(ValueError, match="in_degree_cap"):
        sample_graph("erdos_renyi", 10, rng=0, in_degree_cap="auto")


# ---------------------------------------------------------------------------------------------
# audits
# ---------------------------------------------------------------------------------------------


def test_graph_depth_matches_networkx():
    for seed in range(10):
        A = erdos_renyi_dag(12, 3.0, rng=seed)
        assert graph_depth(A) == nx.dag_longest_path_length(_nx(A)) + 1


def test_audit_graph_rejects_hand_built_bad_graphs():
    good = graph(5, directed=((0, 1), (1, 2), (2, 3), (3, 4)))
    assert audit_graph(good, family="chain").passed
    cyclic = graph(5, directed=((0, 1), (1, 2), (2, 0), (2, 3), (3, 4)))
    assert "acyclic" in audit_graph(cyclic).reasons
    isolated = graph(5, directed=((0, 1), (1, 2), (2, 3), (0, 2), (1, 3)))
    result = audit_graph(isolated)
    assert result.reasons == ("no_isolated",) and result.failures[0].items == (4,)
    few = graph(5, directed=((0, 1), (2, 3), (3, 4)))  # 3 < ceil(0.8 * 5) = 4 edges
    assert audit_graph(few).reasons == ("min_edges",)
    shallow = graph(5, directed=((0, 4), (1, 4), (2, 4), (3, 4)))  # depth 2
    assert audit_graph(shallow, family="layered").passed
    assert audit_graph(shallow, family="tree").reasons == ("min_depth",)
    assert audit_graph(shallow, in_degree_cap=3).reasons == ("in_degree_cap",)


def _good_data(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    binary = (rng.random(n) < 0.3).astype(float)
    censored = np.clip(x + rng.normal(size=n), -2.6, 2.6)  # about 6.6% at the bounds
    return np.c_[x, x + 0.5 * rng.normal(size=n), binary, rng.poisson(3.0, n), censored]


def test_audit_data_accepts_good_and_rejects_hand_built_bad_data():
    X = _good_data()
    assert audit_data(X).passed
    rng = np.random.default_rng(1)
    cases = {
        "constant_column": np.c_[X, np.full(len(X), 2.0)],
        "near_duplicate_pair": np.c_[X, 3.0 * X[:, 0] + 0.01 * rng.normal(size=len(X))],
        "dominant_category": np.c_[X, (np.arange(len(X)) < 5).astype(float)],
        "near_constant_column": np.c_[X, 1.0 + 1e-12 * rng.normal(size=len(X))],
        "boundary_mass": np.c_[X, np.clip(X[:, 0], -0.8, 0.8)],
        "finite": np.c_[X, np.r_[np.nan, X[1:, 0]]],
    }
    for check, data in cases.items():
        result = audit_data(data)
        assert result.reasons == (check,), (check, result.reasons)
        assert any(X.shape[1] in np.ravel(f.items) for f in result.failures)
    # exactly at the paper's thresholds: |corr| 0.99 passes only below it
    assert audit_data(np.c_[X, X[:, 0] + 0.16 * rng.normal(size=len(X))]).passed


def test_audit_new_column_agrees_with_audit_data():
    X = _good_data(seed=3)
    rng = np.random.default_rng(4)
    for column in (rng.normal(size=len(X)), 2 * X[:, 1] + 0.001, np.ones(len(X))):
        full = audit_data(np.c_[X, column])
        single = audits.audit_new_column(column, X)
        assert full.reasons == single.reasons


def _linear_scm():
    A = graph(5, directed=((0, 1), (1, 2), (0, 3), (3, 4)))
    return SCM.random(A, "linear", rng=0)


def _split(scm, targets, corrupt=None):
    obs = scm.sample(200, rng=1)
    data, cf, mask = [obs], [obs], [np.zeros(obs.shape, bool)]
    for i, t in enumerate(targets):
        seed = np.random.SeedSequence([9, i])
        data.append(scm.sample(50, seed, [HardDo(t, low=-1.0, high=1.0)]))
        cf.append(scm.sample(50, np.random.SeedSequence([9, i])))
        m = np.zeros((50, scm.d), bool)
        m[:, t] = True
        mask.append(m)
    return np.vstack(data), np.vstack(mask), np.vstack(cf)


def test_audit_interventional_accepts_a_clean_split_and_names_each_fault():
    scm = _linear_scm()
    X, M, C = _split(scm, [1, 3])
    ok = audit_interventional(scm, X, M, [1, 3], C)
    assert ok.passed and ok.checks == ("mask_consistent", "targets_affected", "target_changed", "descendants_regenerated")
    assert audit_interventional(scm, X, M, [1, 3]).checks == ("mask_consistent", "targets_affected")
    stale = X.copy()
    stale[200:250, 2] = C[200:250, 2]  # child 2 of target 1 not recomputed
    assert audit_interventional(scm, stale, M, [1, 3], C).reasons == ("descendants_regenerated",)
    moved = X.copy()
    moved[250:300, 1] += 1.0  # non-descendant of target 3 changed
    assert audit_interventional(scm, moved, M, [1, 3], C).reasons == ("descendants_regenerated",)
    unchanged = X.copy()
    unchanged[200:250, 1] = C[200:250, 1]
    assert "target_changed" in audit_interventional(scm, unchanged, M, [1, 3], C).reasons
    assert audit_interventional(scm, X, M, [1, 3, 4], C).reasons == ("targets_affected",)
    assert audit_interventional(scm, X, M, [1], C).reasons == ("mask_consistent",)
    assert audit_interventional(scm, X, M[:, :4], [1, 3], C).reasons == ("mask_consistent",)


# ---------------------------------------------------------------------------------------------
# families: mechanisms, roots, noise
# ---------------------------------------------------------------------------------------------

FORMS = sorted({form for forms in MECHANISM_FORMS.values() for form in forms})


def test_registries_hold_every_family():
    assert len(families.MECHANISM_TAGS) == 16 and len(FORMS) == 17
    assert len(ROOT_FAMILIES) == 14 and len(NOISE_TAGS) == 15
    assert set(FORMS) <= set(mechanism_names())
    assert {"linear", "mlp"} <= set(FORMS)  # built-ins reused
    assert {families.root_noise_name(r) for r in ROOT_FAMILIES} <= set(noise_names())
    for tag in NOISE_TAGS:
        assert draw_noise(tag, np.random.default_rng(0), 2).noise in noise_names()


@pytest.mark.parametrize("form", FORMS)
def test_every_form_is_a_finite_additive_mechanism(form):
    rng = np.random.default_rng(0)
    family = get_mechanism(form)
    for k in (1, 3):
        z = rng.standard_normal((500, k))
        params = family.sample_params(rng, k, **families.form_config(form, rng, k))
        if callable(getattr(family, "calibrate", None)):
            params = family.calibrate(params, z)
        json.dumps(params)
        f0 = family.evaluate(params, z, np.zeros(500))
        e = rng.standard_normal(500)
        assert f0.shape == (500,) and np.isfinite(f0).all()
        assert np.allclose(family.evaluate(params, z, e) - f0, e)
        assert np.std(f0) > 0


def test_forms_run_through_scm_random_and_the_node_wrapper():
    A = erdos_renyi_dag(6, 2.0, rng=1)
    for form in ("arena_discretize", "arena_activation", "arena_rff"):
        X = SCM.random(A, form, rng=0).sample(300, rng=1)
        assert np.isfinite(X).all()
    scm = SCM.random(A, "arena_node", rng=0, mechanism_config={"form": "arena_tree"}, sigma_range=(0.1, 0.1))
    assert np.isfinite(scm.sample(300, rng=2)).all()


def _parents_that_move(form, params, z):
    """The columns of ``z`` whose shift (by -2..2 sds) changes the form's output on some row: an
    independent, numeric reading of which parents a mechanism depends on."""
    family = get_mechanism(form)
    base = family.evaluate(params, z, 0.0)
    moving = set()
    for j in range(z.shape[1]):
        for shift in (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0):
            shifted = z.copy()
            shifted[:, j] += shift
            if not np.allclose(family.evaluate(params, shifted, 0.0), base, rtol=0.0, atol=1e-12):
                moving.add(j)
                break
    return moving


def test_a_tree_depends_on_every_parent():
    """A uniform split draw leaves parents out (k = 4 parents, depth 2: at least one unused);
    an edge its child ignores could never be found."""
    rng = np.random.default_rng(11)
    tree = get_mechanism("arena_tree")
    for k in range(1, 17):
        for _ in range(15):
            p = tree.sample_params(rng, k)
            assert len(p["features"]) == len(p["thresholds"]) == 2 ** p["depth"] - 1 >= k
            assert len(p["leaves"]) == 2 ** p["depth"] and p["depth"] >= 2
            assert p["depth"] <= 4 or k > 15
            assert _parents_that_move("arena_tree", p, rng.normal(size=(1000, k))) == set(range(k))


def test_every_edge_of_the_pool_moves_its_child():
    """Every edge of the d = 10 pool configurations carries an effect: the child's form changes
    when the parent's standardised value alone is shifted (hidden inputs excluded)."""
    rng = np.random.default_rng(3)
    for k in pool.pool_indices(d=10):
        for node in pool.pool_config(k).scm.nodes:
            spec = node.to_dict()
            params = spec["mechanism_params"]
            if spec["mechanism"] != "arena_node" or not params.get("input_mean"):
                continue
            inputs = len(params["input_mean"])
            moving = _parents_that_move(params["form"], params["form_params"], rng.normal(size=(400, inputs)))
            assert moving == set(range(inputs)), (k, params["form"])


def test_documented_mechanism_ranges():
    rng = np.random.default_rng(5)
    for _ in range(50):
        p = get_mechanism("arena_threshold").sample_params(rng, 2)
        assert -0.6 <= p["cutoff"] <= 0.6 and 0.2 <= p["low_slope"] <= 1.0 and 1.0 <= p["high_slope"] <= 2.5
        assert -1.5 <= p["offset"] <= 1.5
        p = get_mechanism("arena_rff").sample_params(rng, 2)
        assert 64 <= len(p["phases"]) <= 256 and 0.25 <= p["lengthscale"] <= 3.0
        p = get_mechanism("arena_tree").sample_params(rng, 3)
        assert 2 <= p["depth"] <= 4 and np.all(np.abs(p["thresholds"]) <= 0.8)
        p = get_mechanism("arena_polynomial").sample_params(rng, 2)
        c = np.asarray(p["coefficients"])
        assert np.all(np.abs(c[:, 1]) <= 0.5) and np.all(np.abs(c[:, 2]) <= 0.15)
        p = get_mechanism("arena_interaction").sample_params(rng, 4)
        assert 1 <= len(p["pairs"]) <= 3
        assert 3 <= len(get_mechanism("arena_discretize").sample_params(rng, 2)["values"]) <= 7
        assert 0.3 <= get_mechanism("arena_aggregate").sample_params(rng, 2)["temperature"] <= 1.5


def _root_reference(name, p):
    """The scipy.stats law of a continuous root family (None for the others)."""
    if name == "uniform":
        return stats.uniform(p["low"], p["high"] - p["low"])
    if name == "gaussian":
        return stats.norm(p["mean"], p["sd"])
    if name == "lognormal":
        return stats.lognorm(p["log_sd"], scale=math.exp(p["log_mean"]))
    if name == "gamma":
        return stats.gamma(p["concentration"], scale=1 / p["rate"])
    if name == "scaled_beta":
        return stats.beta(p["a"], p["b"], loc=p["low"], scale=p["high"] - p["low"])
    if name == "exponential":
        return stats.expon(scale=1 / p["rate"])
    if name == "gumbel":
        return stats.gumbel_r(p["location"], p["scale"])
    return None


@pytest.mark.parametrize("name", ROOT_FAMILIES)
def test_root_families_match_independent_references(name):
    rng = np.random.default_rng(11)
    family = get_noise(families.root_noise_name(name))
    p = family.sample_params(rng)
    x = family.sample(p, 20000, rng)
    assert np.isfinite(x).all()
    law = _root_reference(name, p)
    if law is not None:
        assert stats.kstest(x, law.cdf).pvalue > 1e-3
    elif name == "truncated_gaussian":
        ref = np.clip(rng.normal(p["mean"], p["sd"], 200000), p["mean"] - 2.5 * p["sd"], p["mean"] + 2.5 * p["sd"])
        assert stats.ks_2samp(x, ref).pvalue > 1e-3
        assert np.mean(x == x.max()) + np.mean(x == x.min()) == pytest.approx(2 * stats.norm.sf(2.5), abs=0.004)
    elif name == "mixture_gaussian":
        pick = rng.random(200000) < p["weight"]
        ref = np.where(pick, rng.normal(p["means"][0], p["sds"][0], 200000), rng.normal(p["means"][1], p["sds"][1], 200000))
        assert stats.ks_2samp(x, ref).pvalue > 1e-3
    elif name == "bernoulli":
        assert set(np.unique(x)) <= {0.0, 1.0} and x.mean() == pytest.approx(p["p"], abs=0.015)
    elif name == "poisson":
        values, counts = np.unique(x, return_counts=True)
        assert np.allclose(counts / x.size, stats.poisson.pmf(values, p["rate"]), atol=0.01)
    elif name == "ordinal":
        counts = np.bincount(x.astype(int), minlength=len(p["probabilities"]))
        assert np.allclose(counts / x.size, p["probabilities"], atol=0.01)
    elif name == "multinomial":
        assert x.mean() == pytest.approx(0.0, abs=0.03) and x.std() == pytest.approx(1.0, abs=0.03)
        assert len(np.unique(x)) == len(p["probabilities"])
    else:  # zipf: capped at 10 and centred
        assert x.mean() == pytest.approx(0.0, abs=0.03) and x.max() + p["mean"] <= 10.0


def test_root_parameter_ranges():
    rng = np.random.default_rng(2)
    for _ in range(100):
        assert 1.0 <= get_noise("arena_root_poisson").sample_params(rng)["rate"] <= 12.0
        assert 3 <= len(get_noise("arena_root_ordinal").sample_params(rng)["probabilities"]) <= 6
        assert 2 <= len(get_noise("arena_root_multinomial").sample_params(rng)["probabilities"]) <= 10
        assert 8 <= len(get_noise("arena_root_zipf").sample_params(rng)["probabilities"]) <= 20
        assert 0.15 <= get_noise("arena_root_bernoulli").sample_params(rng)["p"] <= 0.85


def _noise_sd(name, p):
    """Closed-form standard deviation documented for each arena noise family."""
    if name == "arena_exponential":
        return p["scale"] / p["rate"]
    if name == "arena_gumbel":
        return p["scale"] * math.pi / math.sqrt(6)
    if name == "arena_mixture_outlier":
        q = p["outlier_probability"]
        return math.sqrt((1 - q) * p["scale"] ** 2 + q * p["outlier_scale"] ** 2)
    return p["scale"]  # built-ins and arena_beta: unit variance times scale


@pytest.mark.parametrize("tag", [t for t in NOISE_TAGS if t not in {"none"}])
def test_noise_draws_have_mean_zero_and_the_documented_sd(tag):
    rng = np.random.default_rng(3)
    choice = draw_noise(tag, rng, 2)
    x = get_noise(choice.noise).sample(choice.noise_params, 200000, rng)
    sd = _noise_sd(choice.noise, choice.noise_params)
    assert x.mean() == pytest.approx(0.0, abs=4 * sd / math.sqrt(x.size) * (3 if tag == "student_t" else 1))
    assert x.std() == pytest.approx(sd, rel=0.05 if tag in {"student_t", "mixture_outlier"} else 0.01)


def test_noise_shapes_match_scipy():
    rng = np.random.default_rng(8)
    for tag in ("beta", "exponential", "gumbel"):
        choice = draw_noise(tag, rng, 1)
        p = choice.noise_params
        x = get_noise(choice.noise).sample(p, 20000, rng)
        if tag == "beta":
            law = stats.beta(p["a"], p["b"])
            ref = stats.beta(p["a"], p["b"], loc=-law.mean() * p["scale"] / law.std(), scale=p["scale"] / law.std())
        elif tag == "exponential":
            ref = stats.expon(loc=-p["scale"] / p["rate"], scale=p["scale"] / p["rate"])
        else:
            ref = stats.gumbel_r(loc=-p["scale"] * np.euler_gamma, scale=p["scale"])
        assert stats.kstest(x, ref.cdf).pvalue > 1e-3


def test_noise_ranges_and_no_noise():
    rng = np.random.default_rng(4)
    for _ in range(100):
        t = draw_noise("student_t", rng, 1).noise_params
        assert 2.5 <= t["df"] <= 8.0 and 0.03 <= t["scale"] <= 0.30
        assert 0.05 <= draw_noise("gaussian", rng, 1).noise_params["scale"] <= 0.45
        assert 0.05 <= draw_noise("quantized", rng, 1).coupling["step"] <= 0.35
    assert not get_noise("arena_none").sample({}, 10, rng).any()


def test_couplings_follow_their_formulas():
    rng = np.random.default_rng(6)
    n = 200000
    s = np.full(n, 1.7)
    e = rng.standard_normal(n)
    mult = couple({"kind": "multiplicative", "sigma": 0.25}, s, None, e)
    assert mult.mean() == pytest.approx(1.7, rel=0.003)  # mean preserving
    het = couple({"kind": "heteroskedastic", "base": 0.1, "slope": 0.2}, s, None, e)
    assert het.std() == pytest.approx(0.1 + 0.2 / (1 + math.exp(-1.7)), rel=0.01)
    signal = rng.standard_normal(n)
    q = couple({"kind": "quantized", "step": 0.25}, signal, None, 0.1 * e)
    assert np.allclose(q / 0.25, np.round(q / 0.25))
    choice = draw_noise("censored", rng, 1)
    draw = get_noise("gaussian").sample(choice.noise_params, n, rng)
    choice, draw = calibrate_noise(choice, signal, draw)
    c = couple(choice.coupling, signal, None, draw)
    assert np.mean(c == c.min()) + np.mean(c == c.max()) == pytest.approx(0.06, abs=0.002)
    choice = draw_noise("target_r2_gaussian", rng, 1)
    draw = get_noise("gaussian").sample(choice.noise_params, n, rng)
    choice, draw = calibrate_noise(choice, 2.0 * signal, draw)
    value = couple(choice.coupling, 2.0 * signal, None, draw)
    assert np.var(2.0 * signal) / np.var(value) == pytest.approx(choice.coupling["target_r2"], abs=0.01)
    assert 0.1 <= choice.coupling["target_r2"] <= 0.9


def test_gaussian_copula_node_has_its_root_marginal_exactly():
    rng = np.random.default_rng(12)
    copula = get_mechanism("arena_root_copula")
    params = copula.sample_params(rng, 3, marginal="lognormal")
    assert sum(w * w for w in params["loadings"]) + params["residual"] ** 2 == pytest.approx(1.0)
    x = copula.evaluate(params, rng.standard_normal((20000, 3)), rng.standard_normal(20000))
    p = params["marginal_params"]
    assert stats.kstest(x, stats.lognorm(p["log_sd"], scale=math.exp(p["log_mean"])).cdf).pvalue > 1e-3
    blend = get_mechanism("arena_blend")
    b = blend.sample_params(rng, 3)
    parents = rng.standard_normal((50, 3))
    own = get_mechanism("linear").evaluate(b["params"], parents[:, :2], np.zeros(50))
    assert np.allclose(blend.evaluate(b, parents, np.zeros(50)), 0.45 * own + 0.55 * parents[:, 2])


def test_copula_roots_keep_their_marginals():
    for dependency in ("common_factor", "random_covariance", "uniform_ball"):
        arena = generate(ArenaConfig("erdos_renyi", 12, seed=2, roots=("gamma",), root_dependency=dependency))
        X = arena.sample(6000, rng=0, postprocess=False)
        roots = [j for j, r in enumerate(arena.tags["root_family"]) if r]
        assert len(roots) >= 2 and arena.tags["root_dependency"] == dependency
        for j in roots:
            p = arena.scm.nodes[j].mechanism_params["marginal_params"]
            assert stats.kstest(X[:, j], stats.gamma(p["concentration"], scale=1 / p["rate"]).cdf).pvalue > 1e-3
        scores = stats.rankdata(X[:, roots], axis=0) / (len(X) + 1)
        if dependency == "common_factor":
            block = arena.tags["root_block"]
            normal = stats.norm.ppf(scores)
            corr = np.corrcoef(normal.T)[0, 1]
            assert corr == pytest.approx(block["rho"] * block["signs"][0] * block["signs"][1], abs=0.05)
        if dependency == "uniform_ball":
            # coordinates of a ball point are uncorrelated but not independent: their squares repel
            spread = np.abs(scores - 0.5)
            assert abs(np.corrcoef(scores.T)[0, 1]) < 0.05 and np.corrcoef(spread.T)[0, 1] < -0.02


# ---------------------------------------------------------------------------------------------
# synthetic SCMs
# ---------------------------------------------------------------------------------------------


def test_generation_is_deterministic_and_json_round_trips_bit_identically():
    config = ArenaConfig("block_sparse_layered", 15, seed=(4, 2), root_dependency="common_factor", stressors=STRESSORS)
    arena = generate(config)
    assert generate(config).to_json() == arena.to_json()
    assert generate(ArenaConfig("block_sparse_layered", 15, seed=(4, 3))).to_json() != arena.to_json()
    again = ArenaSCM.from_json(arena.to_json())
    assert again.to_json() == arena.to_json()
    hard = [HardDo(int(np.flatnonzero(arena.graph.sum(axis=1))[0]), low=-0.5, high=0.5)]
    for interventions in ((), hard):
        assert np.array_equal(arena.sample(400, 3, interventions), again.sample(400, 3, interventions))
    assert not np.array_equal(arena.sample(400, 3), arena.sample(400, 4))
    assert ArenaConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize("family", GRAPH_FAMILIES)
def test_tags_describe_the_generated_scm(family):
    arena = generate(ArenaConfig(family, 20, seed=1))
    tags = arena.tags
    A = arena.graph
    roots = ~A.any(axis=0)
    assert np.array_equal(A, arena.scm.graph[:20, :20]) and tags["n_edges"] == A.sum()
    assert [r is not None for r in tags["root_family"]] == roots.tolist()
    assert [m is not None for m in tags["mechanism"]] == (~roots).tolist()
    assert [m is not None for m in tags["noise"]] == (~roots).tolist()
    low, high = families.mixing_count_range(20)
    assert low <= len(tags["active_mechanisms"]) <= high and low <= len(tags["active_noises"]) <= high
    if (~roots).sum() >= high:  # enough nodes: every active family is used
        assert set(m for m in tags["mechanism"] if m) == set(tags["active_mechanisms"])
        assert set(n for n in tags["noise"] if n) == set(tags["active_noises"])
    assert sum(n == "none" for n in tags["noise"]) <= 2
    for j in np.flatnonzero(~roots):
        assert tags["form"][j] in MECHANISM_FORMS[tags["mechanism"][j]]
        assert arena.scm.nodes[j].mechanism_params["form"] == tags["form"][j]


def test_no_noise_is_capped_at_ten_percent():
    arena = generate(ArenaConfig("erdos_renyi", 30, seed=0, noises=("none", "gaussian")))
    noise = arena.tags["noise"]
    assert sum(n == "none" for n in noise) == 3
    quiet = [j for j, n in enumerate(noise) if n == "none"]
    assert all(arena.scm.nodes[j].noise == "arena_none" for j in quiet)
    with pytest.raises(ValueError, match="10%"):
        ArenaConfig("erdos_renyi", 30, seed=0, noises=("none",))


def test_weak_signal_and_high_noise_are_parameter_choices():
    clean = generate(ArenaConfig("layered", 12, seed=5))
    weak = generate(ArenaConfig("layered", 12, seed=5, stressors=("weak_signal", "high_noise")))
    structural = np.flatnonzero(weak.graph.any(axis=0))
    assert weak.n_hidden == structural.size and clean.n_hidden == 0
    for j in structural:
        params = weak.scm.nodes[j].mechanism_params
        assert params["gain"] == 0.45 and params["hidden_inputs"] == 1
        hidden = weak.scm.parents(int(j))[-1]
        assert hidden >= 12 and weak.scm.nodes[hidden].noise_params == {"scale": 0.35}
        parents = weak.scm.sample(50, rng=0)[:, list(weak.scm.parents(int(j)))]
        node = get_mechanism("arena_node")
        bumped = parents.copy()
        bumped[:, -1] += 1.0
        assert np.allclose(node.evaluate(params, bumped, np.zeros(50)) - node.evaluate(params, parents, np.zeros(50)), 1.0)


def test_observation_stressors_leave_the_structure_and_touch_the_documented_shares():
    base = ("feature_corruption",)
    arena = generate(ArenaConfig("erdos_renyi", 20, seed=8, stressors=base))
    clean = arena.sample(5000, 1, postprocess=False)
    noisy = arena.sample(5000, 1)
    assert np.array_equal(np.sort(clean, axis=0), np.sort(noisy, axis=0))  # a permutation within columns
    assert np.mean(clean != noisy) == pytest.approx(0.03, abs=0.006)

    arena = generate(ArenaConfig("erdos_renyi", 20, seed=8, stressors=("missingness",)))
    clean, noisy = arena.sample(5000, 1, postprocess=False), arena.sample(5000, 1)
    changed = clean != noisy
    assert changed.mean() == pytest.approx(0.05, abs=0.006)
    z = (noisy - clean.mean(axis=0)) / clean.std(axis=0)
    assert np.abs(z[changed]).max() < 0.5  # column mean plus small jitter

    arena = generate(ArenaConfig("erdos_renyi", 20, seed=8, stressors=("outliers",)))
    clean, noisy = arena.sample(5000, 1, postprocess=False), arena.sample(5000, 1)
    assert np.mean(clean != noisy) == pytest.approx(0.025, abs=0.005)

    arena = generate(ArenaConfig("erdos_renyi", 20, seed=8, stressors=("feature_warping",)))
    clean, noisy = arena.sample(5000, 1, postprocess=False), arena.sample(5000, 1)
    warped = arena.stressors["feature_warping"]["columns"]
    assert 1 <= len(warped) and set(np.flatnonzero((clean != noisy).any(axis=0))) == set(warped)
    for c in warped:  # monotone increasing transform, same location and scale
        assert stats.spearmanr(clean[:, c], noisy[:, c]).statistic > 0.999
        assert noisy[:, c].std() == pytest.approx(clean[:, c].std(), rel=0.1)


def test_soft_intervention_blends_and_recomputes_descendants():
    arena = generate(ArenaConfig("chain", 10, seed=3, stressors=("soft_interventions",)))
    target = int(np.flatnonzero(arena.graph.any(axis=0) & arena.graph.any(axis=1))[0])
    cf = arena.sample(300, 5, postprocess=False)
    soft = arena.sample(300, 5, [HardDo(target, value=2.0)], postprocess=False)
    assert np.allclose(soft[:, target], 0.45 * cf[:, target] + 0.55 * 2.0)
    data = np.vstack([cf, soft])
    mask = np.zeros(data.shape, bool)
    mask[300:, target] = True
    assert audit_interventional(arena, data, mask, [target], np.vstack([cf, cf])).passed


def test_distribution_shift_acts_on_interventional_rows_only():
    arena = generate(ArenaConfig("layered", 15, seed=2, stressors=("distribution_shift",)))
    shift = arena.stressors["distribution_shift"]
    assert np.array_equal(arena.sample(200, 1), arena.sample(200, 1, postprocess=False))
    target = 0
    raw = arena.sample(200, 1, [HardDo(target, value=0.3)], postprocess=False)
    shifted = arena.sample(200, 1, [HardDo(target, value=0.3)])
    for c, m, sd, k, delta in zip(shift["columns"], shift["mean"], shift["sd"], shift["scale"], shift["delta"]):
        assert np.allclose(shifted[:, c], m + k * (raw[:, c] - m) + delta * sd)
    others = [c for c in range(15) if c not in shift["columns"]]
    assert np.array_equal(shifted[:, others], raw[:, others])


def test_interventions_on_hidden_columns_are_rejected():
    arena = generate(ArenaConfig("tree", 10, seed=0, stressors=("high_noise",)))
    with pytest.raises(ValueError, match="intervention target"):
        arena.sample(10, 0, [HardDo(arena.d, value=0.0)])


def test_d100_generates_samples_and_passes_the_data_audits():
    arena = generate(ArenaConfig("erdos_renyi", 100, seed=0, stressors=("high_noise", "feature_warping")))
    X = arena.sample(1000, rng=1)
    assert X.shape == (1000, 100) and np.isfinite(X).all()
    assert audit_graph(arena.graph, family="erdos_renyi").passed
    # node redraws cannot rule out a near-duplicate pair (the pool resamples those); all else holds
    assert set(audit_data(X).reasons) <= {"near_duplicate_pair"}


# ---------------------------------------------------------------------------------------------
# pool
# ---------------------------------------------------------------------------------------------


def test_pool_schedule_is_balanced():
    slots = [pool.pool_slot(k) for k in range(pool.POOL_SIZE)]
    assert pool.POOL_SIZE == 1000
    kinds = [s.difficulty for s in slots]
    assert kinds.count("clean") == 250 and kinds.count("single") == 500 and kinds.count("paired") == 250
    assert all(len(s.stressors) == ("clean", "single", "paired").index(s.difficulty) for s in slots)
    dependent = [s for s in slots if s.root_dependency != "independent"]
    assert len(dependent) == 200 and not any(s.graph_family in ("chain", "tree") for s in dependent)
    counts = {k: sum(s.root_dependency == k for s in dependent) for k in ("common_factor", "random_covariance", "uniform_ball")}
    assert sorted(counts.values()) == [66, 67, 67]
    for s in STRESSORS:
        assert 55 <= sum(slot.stressors == (s,) for slot in slots) <= 70
    block = pool.pool_indices("tree", 30)
    assert len(block) == 20 and {pool.pool_slot(k).graph_family for k in block} == {"tree"}
    assert {pool.pool_slot(k).d for k in block} == {30}
    with pytest.raises(ValueError):
        pool.pool_indices(d=40)


def test_pool_configs_are_reproducible_and_audited():
    indices = [0, 1, 2, 3, 300, 901]
    first = [pool.pool_config(k).to_json() for k in indices]
    pool._build.cache_clear()
    assert [pool.pool_config(k).to_json() for k in indices] == first
    for k in indices:
        arena = pool.pool_config(k)
        slot = pool.pool_slot(k)
        attempts = pool.pool_attempts(k)
        assert attempts[-1]["passed"] and not any(a["passed"] for a in attempts[:-1])
        assert arena.config == slot.config(len(attempts) - 1)
        X = arena.sample(pool.AUDIT_ROWS, np.random.SeedSequence([pool.POOL_SEED, k, len(attempts) - 1, 1]))
        assert audit_data(X).passed
    table = pool.rejection_table(indices)
    assert table["configs"] == len(indices) and table["attempts"] - table["rejected"] == len(indices)
    assert next(iter(pool.iter_pool("erdos_renyi", 10))).to_json() == first[0]
