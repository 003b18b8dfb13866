"""CI tests, grades and stability: p-values against causal-learn, algebraic identities, calibration, errors."""

import itertools

import numpy as np
import pytest
from causallearn.utils.cit import CIT
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.linalg import eigh
from threadpoolctl import threadpool_limits

from causal_gym.stats import GRADES, TEST_OPTIONS, CITester, strength_grade, verdict, verdict_stability
from causal_gym.stats._cache import ByteBoundedLRU
from causal_gym.stats.kci import _ResidualMaker, gaussian_kernel, pivoted_cholesky


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # as our KCI does: multi-threaded LAPACK on small matrices crawls when test workers share the cores
    with threadpool_limits(1):
        yield


RTOL_KCI = 1e-6  # required agreement with causal-learn's KCI
ATOL_KCI = 1e-12  # p = 1 - cdf carries ~1e-16 absolute rounding, so tiny p-values need an absolute floor


def nonlinear_data(n, d, seed):
    """Random DAG in index order with nonlinear mechanisms and mixed noise."""
    rng = np.random.default_rng(seed)
    mechanisms = (np.tanh, np.sin, lambda u: 0.5 * u**2, np.abs, lambda u: u)
    data = np.empty((n, d))
    for j in range(d):
        noise = rng.normal(size=n) if rng.random() < 0.7 else rng.uniform(-1.5, 1.5, size=n)
        value = 0.6 * noise
        for parent in rng.choice(j, size=min(j, 2), replace=False) if j else ():
            value += rng.uniform(0.5, 1.5) * mechanisms[rng.integers(len(mechanisms))](data[:, parent])
        data[:, j] = value
    return data


def random_queries(d, sizes, count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        size = int(rng.choice(sizes))
        nodes = rng.choice(d, size=size + 2, replace=False)
        out.append((int(nodes[0]), int(nodes[1]), tuple(int(v) for v in nodes[2:])))
    return out


def causallearn_pvalues(data, method, queries):
    cit = CIT(data, method)
    return np.array([cit(x, y, list(cond)) for x, y, cond in queries])


def assert_kci_matches(ours, ref):
    ours, ref = np.asarray(ours), np.asarray(ref)
    np.testing.assert_allclose(ours, ref, rtol=RTOL_KCI, atol=ATOL_KCI)
    np.testing.assert_array_equal(ours > 0.05, ref > 0.05)


# ---------------------------------------------------------------- Fisher-z


@pytest.mark.parametrize("seed", range(12))
def test_fisherz_identical_to_causallearn(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(20, 400)), 7
    data = nonlinear_data(n, d, seed) if seed % 2 else rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    queries = random_queries(d, sizes=range(5), count=40, seed=seed)
    ref = causallearn_pvalues(data, "fisherz", queries)
    tester = CITester(data, test="fisherz")
    ours = np.array([tester.pvalue(x, y, cond) for x, y, cond in queries])
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("noise", [1e-4, 1e-7, 1e-10])
def test_fisherz_identical_on_near_singular_data(noise):
    rng = np.random.default_rng(7)
    base = rng.normal(size=(200, 3))
    # column 3 is almost column 0, column 4 almost a combination of 1 and 2: near-singular sub-matrices
    near_copy = base[:, 0] + noise * rng.normal(size=200)
    near_combination = base[:, 1] - base[:, 2] + noise * rng.normal(size=200)
    data = np.column_stack([base, near_copy, near_combination])
    queries = [(0, 3, ()), (0, 1, (3,)), (1, 4, (2,)), (0, 4, (1, 2)), (3, 4, (0, 1, 2)), (1, 2, (4,))]
    cit = CIT(data, "fisherz")
    tester = CITester(data, test="fisherz")
    for x, y, cond in queries:
        assert tester.pvalue(x, y, cond) == cit(x, y, list(cond))


def test_fisherz_small_sample_and_deterministic_relation_follow_causallearn():
    rng = np.random.default_rng(3)
    data = rng.normal(size=(5, 4))
    tester = CITester(data, test="fisherz")
    cit = CIT(data, "fisherz")
    # n - |S| - 3 = 0 gives a statistic of 0, hence p = 1, in both
    assert tester.pvalue(0, 1, (2, 3)) == cit(0, 1, [2, 3]) == 1.0
    with pytest.raises(ValueError, match="needs at least"):
        CITester(rng.normal(size=(4, 4)), test="fisherz").pvalue(0, 1, (2, 3))
    x = rng.normal(size=50)
    exact = np.column_stack([x, 2 * x + 1, rng.normal(size=50)])
    assert CITester(exact, test="fisherz").pvalue(0, 1) == CIT(exact, "fisherz")(0, 1)


def test_fisherz_answers_exactly_singular_blocks_where_causallearn_raises():
    """An exact linear identity (column 2 = 0 + 1, column 4 = 3 + 2) makes blocks singular: causal-learn
    inverts them and raises (where LAPACK's rounding finds them singular: which of the three it does
    depends on the machine's BLAS kernels); ours gives the statistic's limit, checked against
    hand-derived values and a regression."""
    rng = np.random.default_rng(90)
    a, b = rng.integers(-5, 6, size=(2, 60)).astype(float)
    y = rng.normal(size=60)
    w = y + rng.normal(size=60)
    data = np.column_stack([a, b, a + b, y, a + b + y, w])
    cit = CIT(data, "fisherz")
    tester = CITester(data, test="fisherz")
    blocks = [(3, 4, (0, 1, 2)), (2, 3, (0, 1)), (3, 5, (0, 1, 2))]
    refused = 0
    for x, y_, cond in blocks:
        columns = data[:, [x, y_, *cond]]
        assert np.linalg.matrix_rank(columns - columns.mean(axis=0)) < columns.shape[1]  # exactly singular
        try:
            cit(x, y_, list(cond))
        except ValueError as exc:
            assert "singular" in str(exc)
            refused += 1
    assert refused >= 1
    # given a, b and a + b, column 4 is column 3 plus a known number: perfectly dependent
    assert tester.pvalue(3, 4, (0, 1, 2)) == 0.0
    # a + b is constant given a and b, hence independent of anything
    assert tester.pvalue(2, 3, (0, 1)) == 1.0
    # a redundant member of S changes nothing but the degrees of freedom: residuals of y and w on (1, a, b)
    design = np.column_stack([np.ones(60), a, b])
    res = [v - design @ np.linalg.lstsq(design, v, rcond=None)[0] for v in (y, w)]
    r = np.corrcoef(res)[0, 1]
    expected = 2 * sps.norm.sf(np.sqrt(60 - 3 - 3) * abs(np.arctanh(r)))
    assert tester.pvalue(3, 5, (0, 1, 2)) == pytest.approx(expected, rel=1e-9)


# ---------------------------------------------------------------- KCI against causal-learn


@pytest.mark.parametrize("n, seed", [(100, 0), (100, 1), (250, 2), (250, 3)])
def test_kci_matches_causallearn(n, seed):
    d = 6
    data = nonlinear_data(n, d, seed)
    queries = random_queries(d, sizes=(0, 1, 1, 2, 3), count=14, seed=seed)
    ref = causallearn_pvalues(data, "kci", queries)
    tester = CITester(data, test="kci")
    assert_kci_matches([tester.pvalue(x, y, cond) for x, y, cond in queries], ref)


def test_kci_matches_causallearn_at_n600():
    data = nonlinear_data(600, 5, 11)
    queries = [(0, 1, ()), (1, 3, (0,)), (0, 4, (1, 2)), (2, 3, (1,))]
    ref = causallearn_pvalues(data, "kci", queries)
    tester = CITester(data, test="kci")
    assert_kci_matches([tester.pvalue(x, y, cond) for x, y, cond in queries], ref)


def test_kci_matches_causallearn_on_ties_and_tiny_samples():
    # repeated values make kernels exactly rank-deficient; n=6 exercises the smallest factors
    rng = np.random.default_rng(0)
    datasets = [
        rng.normal(size=(6, 4)),
        rng.integers(0, 3, size=(300, 4)).astype(float),
        np.column_stack([rng.integers(0, 2, size=200), rng.normal(size=(200, 3))]),
    ]
    queries = [(0, 1, ()), (0, 2, (1,)), (1, 3, (0, 2))]
    for data in datasets:
        tester = CITester(data, test="kci")
        assert_kci_matches([tester.pvalue(*q) for q in queries], causallearn_pvalues(data, "kci", queries))


@pytest.mark.slow
@pytest.mark.parametrize("n, seed", [(120, 20), (199, 21), (200, 22), (400, 23), (600, 24), (800, 25), (1250, 26)])
def test_kci_matches_causallearn_sweep(n, seed):
    # crosses the kernel-width bands at n = 200 and 1200 and conditioning sets up to 4
    d = 7
    data = nonlinear_data(n, d, seed)
    queries = random_queries(d, sizes=range(5), count=25 if n <= 800 else 8, seed=seed)
    ref = causallearn_pvalues(data, "kci", queries)
    tester = CITester(data, test="kci")
    assert_kci_matches([tester.pvalue(x, y, cond) for x, y, cond in queries], ref)


def test_kci_gamma_moments_equal_the_uu_construction():
    # causal-learn builds uu[:, i*ry + j] = vx[:, i] * vy[:, j] and takes tr(uu'uu), tr((uu'uu)^2)
    rng = np.random.default_rng(0)
    vx, vy = rng.normal(size=(40, 6)), rng.normal(size=(40, 4))
    uu = (vx[:, :, None] * vy[:, None, :]).reshape(40, -1)
    prod = uu.T @ uu
    mean = np.sum(vx**2, axis=1) @ np.sum(vy**2, axis=1)
    p = (vx @ vx.T) * (vy @ vy.T)
    np.testing.assert_allclose(mean, np.trace(prod), rtol=1e-12)
    np.testing.assert_allclose(np.sum(p**2), np.trace(prod @ prod), rtol=1e-12)


def test_pivoted_cholesky_reconstructs_the_kernel():
    rng = np.random.default_rng(1)
    points = rng.normal(size=(150, 2))
    kernel = gaussian_kernel(points, 2.0)
    dense = np.exp(-np.sum((points[:, None] - points[None]) ** 2, axis=2))
    np.testing.assert_allclose(kernel, dense, atol=1e-15)
    factor, pivots = pivoted_cholesky(kernel, 1e-13)
    assert factor.shape[1] < 150
    assert np.all(np.diff(pivots) <= 1e-15)
    np.testing.assert_allclose(factor @ factor.T, kernel, atol=1e-12)
    head, _ = pivoted_cholesky(kernel, 1e-6)
    np.testing.assert_array_equal(head, factor[:, : head.shape[1]])


@pytest.mark.parametrize("columns", [1, 3])
def test_residual_maker_equals_regularised_inverse(columns):
    # one column: low-rank Kz, Woodbury form; three columns at n=120: high rank, dense form
    rng = np.random.default_rng(columns)
    kernel = gaussian_kernel(rng.normal(size=(120, columns)), 2.0 / columns)
    h = np.eye(120) - 1.0 / 120
    expected = 1e-3 * np.linalg.inv(h @ kernel @ h + 1e-3 * np.eye(120))
    maker = _ResidualMaker.from_kernel(kernel)
    assert (maker.dense is None) == (columns == 1)
    np.testing.assert_allclose(maker.apply(np.eye(120)), expected, atol=1e-9)


# ---------------------------------------------------------------- caching, symmetry, counters


def test_kci_cache_and_order_do_not_change_pvalues():
    data = nonlinear_data(150, 6, 5)
    queries = random_queries(6, sizes=(0, 1, 2, 3), count=20, seed=5)
    fresh = [CITester(data, test="kci").pvalue(x, y, cond) for x, y, cond in queries]
    warm = CITester(data, test="kci")
    assert [warm.pvalue(x, y, cond) for x, y, cond in queries] == fresh
    for seed in range(2):
        order = np.random.default_rng(seed).permutation(len(queries))
        tester = CITester(data, test="kci")
        permuted = {int(i): tester.pvalue(*queries[i]) for i in order}
        assert [permuted[i] for i in range(len(queries))] == fresh
    tiny = CITester(data, test="kci", max_cache_mb=0.2)  # forces evictions and recomputation
    assert [tiny.pvalue(x, y, cond) for x, y, cond in queries * 2] == fresh * 2
    assert [CITester(data, test="kci", max_cache_mb=0).pvalue(x, y, cond) for x, y, cond in queries] == fresh


@pytest.mark.parametrize("test", ["fisherz", "kci"])
def test_pvalue_symmetric_and_counted(test):
    data = nonlinear_data(120, 5, 9)
    a, b = CITester(data, test=test), CITester(data, test=test)
    for x, y, cond in [(0, 3, ()), (1, 4, (2,)), (2, 0, (4, 1))]:
        assert a.pvalue(x, y, cond) == b.pvalue(y, x, tuple(reversed(cond)))
    assert a.pvalue(np.int64(3), 0) == a.pvalue(0, 3, [])
    assert (a.n_calls, a.n_computed) == (5, 3)
    assert (a.test, a.n, a.d) == (test, 120, 5)
    assert 0.0 <= a.pvalue(1, 2, [0, 3, 4]) <= 1.0


# ---------------------------------------------------------------- calibration under independence


def test_fisherz_pvalues_uniform_under_independence():
    rng = np.random.default_rng(0)
    pvalues = [CITester(rng.normal(size=(100, 4)), test="fisherz").pvalue(0, 1, (2, 3)) for _ in range(300)]
    assert sps.kstest(pvalues, "uniform").pvalue > 1e-3


def test_kci_pvalues_roughly_uniform_under_independence():
    rng = np.random.default_rng(1)
    pvalues = []
    for _ in range(40):
        columns = [rng.normal(size=150), rng.uniform(size=150), rng.normal(size=150) ** 2, rng.normal(size=150)]
        data = np.column_stack(columns)
        tester = CITester(data, test="kci")
        pvalues += [tester.pvalue(0, 1), tester.pvalue(0, 2, (3,)), tester.pvalue(1, 2, (0, 3))]
    # loose: the gamma approximation is not exact and tests on one dataset are correlated
    assert sps.kstest(pvalues, "uniform").pvalue > 1e-3
    assert 0.02 <= np.mean(np.array(pvalues) <= 0.05) <= 0.12


# ---------------------------------------------------------------- grades and verdicts


@pytest.mark.parametrize(
    "p, alpha, grade",
    [
        (0.0, 0.05, "strong dependence"),
        (0.000999, 0.05, "strong dependence"),
        (0.001, 0.05, "dependence"),
        (0.00999, 0.05, "dependence"),
        (0.01, 0.05, "weak dependence"),
        (0.05, 0.05, "weak dependence"),  # p == alpha: PC keeps the edge, so still a dependence grade
        (0.050001, 0.05, "weak independence"),
        (0.1999, 0.05, "weak independence"),
        (0.2, 0.05, "independence"),
        (1.0, 0.05, "independence"),
        (0.03, 0.01, "weak independence"),
        (0.01, 0.01, "weak dependence"),
        (0.008, 0.005, "weak independence"),
        (0.004, 0.005, "dependence"),
        (0.15, 0.1999, "weak dependence"),
    ],
)
def test_strength_grade_thresholds(p, alpha, grade):
    assert strength_grade(p, alpha) == grade


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(1e-6, 0.1999))
def test_grade_never_contradicts_verdict(p, alpha):
    grade = strength_grade(p, alpha)
    assert grade in GRADES
    assert (GRADES.index(grade) <= 2) == (verdict(p, alpha) == "dependent")


def test_verdict_rule_and_errors():
    assert verdict(0.05) == "dependent" and verdict(0.0500001) == "independent"
    assert verdict(0.3, alpha=0.5) == "dependent"
    for bad_p in (-0.01, 1.01, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="pvalue"):
            verdict(bad_p)
        with pytest.raises(ValueError, match="pvalue"):
            strength_grade(bad_p)
    for bad_alpha in (0.2, 0.5, 0.0, -0.1):
        with pytest.raises(ValueError, match="alpha"):
            strength_grade(0.1, bad_alpha)
    with pytest.raises(ValueError, match="alpha"):
        verdict(0.1, 1.0)


# ---------------------------------------------------------------- stability


def test_verdict_stability_matches_a_by_hand_subsampling():
    data = nonlinear_data(200, 4, 4)
    share = verdict_stability(data, 0, 3, (1,), n_resamples=15, fraction=0.6, seed=42)
    rng = np.random.default_rng(42)
    expected = 0
    for _ in range(15):
        rows = rng.choice(200, size=120, replace=False)
        expected += CIT(data[rows], "fisherz")(0, 3, [1]) > 0.05
    assert share == expected / 15
    assert share == verdict_stability(data, 0, 3, (1,), n_resamples=15, fraction=0.6, seed=42)


@pytest.mark.parametrize("test", ["fisherz", "kci"])
def test_verdict_stability_extremes(test):
    rng = np.random.default_rng(2)
    x = rng.normal(size=200)
    data = np.column_stack([x, rng.normal(size=200), np.sin(2 * x) + 0.1 * rng.normal(size=200)])
    resamples = 12 if test == "fisherz" else 6
    independent = verdict_stability(data, 0, 1, test=test, n_resamples=resamples)
    dependent = verdict_stability(data, 0, 2, test=test, n_resamples=resamples)
    assert 0.0 <= dependent <= independent <= 1.0
    assert independent >= 0.8 and dependent == 0.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"fraction": 0.0}, "fraction"),
        ({"fraction": 1.5}, "fraction"),
        ({"fraction": 0.01}, "at least 3"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"n_resamples": 2.5}, "n_resamples"),
        ({"seed": -1}, "seed"),
        ({"seed": None}, "seed"),
        ({"alpha": 1.0}, "alpha"),
        ({"test": "pearson"}, "unknown test"),
        ({"test": "kci", "bandwidth": 1.0}, "unknown option"),
        ({"cond": (0,)}, "must not contain"),
    ],
)
def test_verdict_stability_rejects(kwargs, message):
    data = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match=message):
        verdict_stability(data, 0, 1, **kwargs)


# ---------------------------------------------------------------- input errors


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: np.where(np.arange(d.size).reshape(d.shape) == 7, np.nan, d), "NaN"),
        (lambda d: np.column_stack([d, np.full(len(d), 2.0)]), "constant column"),
        (lambda d: d[:2], "at least 3 rows"),
    ],
)
@pytest.mark.parametrize("test", ["fisherz", "kci"])
def test_bad_data_rejected(make, message, test):
    data = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match=message):
        CITester(make(data), test=test)


def test_bad_test_and_options_rejected():
    data = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="'fisherz', 'kci'"):
        CITester(data, test="chisq")
    with pytest.raises(ValueError, match="valid options: 'max_cache_mb'"):
        CITester(data, test="kci", kernelX="Linear")
    with pytest.raises(ValueError, match="valid options: none"):
        CITester(data, test="fisherz", max_cache_mb=10)
    for cap in (-1, "big", True, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="max_cache_mb"):
            CITester(data, test="kci", max_cache_mb=cap)
    assert set(TEST_OPTIONS) == {"fisherz", "kci"}


@pytest.mark.parametrize(
    "x, y, cond, message",
    [
        (0, 0, (), "different"),
        (0, 3, (), "out of range"),
        (-1, 1, (), "out of range"),
        (0, 1, (1,), "must not contain"),
        (0, 1, (2, 2), "repeated"),
        (0, 1, (5,), "out of range"),
        (True, 1, (), "integer"),
        (0.0, 1, (), "integer"),
        (0, 1, 2, "sequence"),
    ],
)
def test_bad_queries_rejected(x, y, cond, message):
    tester = CITester(np.random.default_rng(0).normal(size=(30, 3)), test="fisherz")
    with pytest.raises(ValueError, match=message):
        tester.pvalue(x, y, cond)
    assert tester.n_calls == 0


# ---------------------------------------------------------------- the byte-bounded cache


def test_byte_bounded_lru_evicts_least_recently_used():
    cache = ByteBoundedLRU(max_bytes=3 * 800)
    calls = []

    def make(key):
        calls.append(key)
        return np.zeros(100)  # 800 bytes

    for key in "abc":
        cache.get_or_compute(key, lambda key=key: make(key))
    cache.get_or_compute("a", lambda: make("a"))  # hit, refreshes "a"
    cache.get_or_compute("d", lambda: make("d"))  # evicts "b"
    cache.get_or_compute("b", lambda: make("b"))  # recomputed, evicts "c"
    assert calls == ["a", "b", "c", "d", "b"]
    assert len(cache) == 3 and cache.nbytes == 2400
    huge = cache.get_or_compute("e", lambda: np.zeros(1000))
    assert huge.shape == (1000,) and len(cache) == 3  # larger than the budget: returned, not stored


@pytest.mark.slow
def test_kci_pc_style_run_matches_causallearn():
    # every (x, y, S) a stable PC skeleton at d=6, n=600 would ask, up to |S| = 2
    d = 6
    data = nonlinear_data(600, d, 31)
    queries = [(x, y, cond) for x, y in itertools.combinations(range(d), 2) for size in range(3)
               for cond in itertools.combinations([v for v in range(d) if v not in (x, y)], size)][::3]
    ref = causallearn_pvalues(data, "kci", queries)
    tester = CITester(data, test="kci")
    assert_kci_matches([tester.pvalue(x, y, cond) for x, y, cond in queries], ref)


def test_eigh_reference_for_kept_directions():
    # the Gram-matrix route gives the eigenpairs of A A' that a direct n x n eigh gives
    from causal_gym.stats.kci import _kept_directions

    rng = np.random.default_rng(4)
    a = rng.normal(size=(80, 12)) * np.logspace(0, -4, 12)
    kept = _kept_directions(a)
    w, v = eigh(a @ a.T)
    keep = w > w.max() * 1e-5
    direct = v[:, keep] * np.sqrt(w[keep])
    np.testing.assert_allclose(kept @ kept.T, direct @ direct.T, atol=1e-12)
    assert kept.shape[1] == keep.sum()
