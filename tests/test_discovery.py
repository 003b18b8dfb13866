"""causal_gym.discovery: run() dispatch, PC against causal-learn, the deletion log, the wrappers.

References are independent of our code: causal-learn's PC / FCI / GES and lingam called directly,
causal-learn's own skeleton search instrumented to record its tests, known true graphs of
simulated SEMs, and hand-built PAGs. The simulators here are plain numpy, not causal_gym.scm.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from causal_gym.discovery import DeletionRecord, DiscoveryResult, method_options, methods, run
from causal_gym.discovery.fci import pag_to_graph
from causal_gym.graphs import from_causallearn
from causal_gym.stats import CITester, strength_grade

ALPHA = 0.05


# ---------------------------------------------------------------------------------------------
# Simulators
# ---------------------------------------------------------------------------------------------


def random_dag(rng: np.random.Generator, d: int, p_edge: float) -> np.ndarray:
    """Erdős–Rényi DAG over a random order; ``B[i, j]`` True for ``i -> j``."""
    upper = np.triu(rng.random((d, d)) < p_edge, 1)
    perm = rng.permutation(d)
    return upper[np.ix_(perm, perm)]


def topological(b: np.ndarray) -> list[int]:
    indegree, order = b.sum(0), []
    ready = list(np.flatnonzero(indegree == 0))
    indegree = indegree.copy()
    while ready:
        v = ready.pop()
        order.append(int(v))
        for c in np.flatnonzero(b[v]):
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    return order


def simulate(seed: int, d: int | None = None, n: int | None = None) -> np.ndarray:
    """Linear or nonlinear (tanh + quadratic) additive-noise SEM, sparse or dense."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(4, 11)) if d is None else d
    n = int(rng.integers(50, 501)) if n is None else n
    b = random_dag(rng, d, float(rng.choice([0.2, 0.4, 0.7])))
    w = b * rng.uniform(0.3, 1.5, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    nonlinear = rng.random() < 0.5
    x = np.zeros((n, d))
    for j in topological(b):
        z = x @ w[:, j]
        signal = np.tanh(z) + 0.3 * z**2 if nonlinear else z
        x[:, j] = signal + rng.uniform(0.5, 1.5) * rng.normal(size=n)
    return x


def causallearn_pc(x: np.ndarray, test: str) -> object:
    from causallearn.search.ConstraintBased.PC import pc

    return pc(x, ALPHA, test, stable=True, uc_rule=0, uc_priority=2, show_progress=False)


# ---------------------------------------------------------------------------------------------
# PC: same graph as causal-learn
# ---------------------------------------------------------------------------------------------


def pc_mismatches(seeds: range, test: str, n: int | None = None) -> list[int]:
    bad = []
    for seed in seeds:
        x = simulate(seed, n=n)
        ours = run("pc", x, test=test, alpha=ALPHA)
        reference = from_causallearn(causallearn_pc(x, test).G)
        if not np.array_equal(ours.graph, reference):
            bad.append(seed)
    return bad


def test_pc_fisherz_equals_causallearn_on_220_datasets():
    assert pc_mismatches(range(220), "fisherz") == []


def test_pc_kci_equals_causallearn():
    assert pc_mismatches(range(1000, 1006), "kci", n=150) == []


@pytest.mark.slow
def test_pc_fisherz_equals_causallearn_many():
    assert pc_mismatches(range(220, 1220), "fisherz") == []


@pytest.mark.slow
def test_pc_kci_equals_causallearn_many():
    assert pc_mismatches(range(1004, 1034), "kci", n=250) == []


# ---------------------------------------------------------------------------------------------
# PC: the deletion log
# ---------------------------------------------------------------------------------------------


class _RecordingTest:
    """Wraps causal-learn's CI test so its skeleton search reports every call in order."""

    def __init__(self, x: np.ndarray, test: str) -> None:
        from causallearn.utils.cit import CIT

        self._test = CIT(x, test)
        self.method = self._test.method
        self.calls: list[tuple[int, int, tuple[int, ...], float]] = []

    def __call__(self, i, j, cond=None):
        p = self._test(i, j, cond)
        self.calls.append((int(i), int(j), tuple(sorted(int(c) for c in cond or ())), float(p)))
        return p


def causallearn_first_deletions(x: np.ndarray, test: str) -> tuple[list[tuple[int, int, tuple[int, ...]]], int]:
    """The first test with p > alpha for each pair in causal-learn's own stable skeleton search,
    in call order, and its number of test calls."""
    from causallearn.utils.PCUtils.SkeletonDiscovery import skeleton_discovery

    recorder = _RecordingTest(x, test)
    skeleton_discovery(x, ALPHA, recorder, stable=True, show_progress=False)
    first: dict[tuple[int, int], tuple[int, ...]] = {}
    for i, j, cond, p in recorder.calls:
        pair = (min(i, j), max(i, j))
        if p > ALPHA and pair not in first:
            first[pair] = cond
    return [(x_, y_, cond) for (x_, y_), cond in first.items()], len(recorder.calls)


@pytest.mark.parametrize("test,seeds,n", [("fisherz", range(40), None), ("kci", range(2000, 2004), 150)])
def test_deletion_log(test, seeds, n):
    for seed in seeds:
        x = simulate(seed, n=n)
        result = run("pc", x, test=test, alpha=ALPHA)
        log = result.deletion_log
        d = x.shape[1]
        pairs = [(r.x, r.y) for r in log]
        assert len(pairs) == len(set(pairs)), "a pair is logged twice"
        skeleton = (result.graph | result.graph.T).astype(bool)
        non_adjacent = {(i, j) for i in range(d) for j in range(i + 1, d) if not skeleton[i, j]}
        assert set(pairs) == non_adjacent
        assert [r.order for r in log] == list(range(len(log)))
        assert [r.depth for r in log] == sorted(r.depth for r in log)
        fresh = CITester(x, test=test)
        for r in log:
            assert isinstance(r, DeletionRecord) and r.x < r.y and r.test == test
            assert r.depth == len(r.cond) and list(r.cond) == sorted(r.cond)
            assert r.pvalue > ALPHA
            assert fresh.pvalue(r.x, r.y, r.cond) == pytest.approx(r.pvalue, rel=1e-12, abs=1e-15)
            assert r.grade == strength_grade(r.pvalue, ALPHA)
            assert result.extras["sepsets"][(r.x, r.y)][0] == r.cond
        reference, n_calls = causallearn_first_deletions(x, test)
        assert [(r.x, r.y, r.cond) for r in log] == reference
        assert result.n_tests == n_calls


def test_pc_sepsets_match_causallearn():
    # causal-learn keeps, per side of a pair, the union of its separating sets of the level.
    for seed in range(40):
        x = simulate(seed)
        ours = run("pc", x).extras["sepsets"]
        cg = causallearn_pc(x, "fisherz")
        d = x.shape[1]
        for i in range(d):
            for j in range(i + 1, d):
                theirs = cg.sepset[i, j]
                assert ((i, j) in ours) == (theirs is not None)
                if theirs is not None:
                    assert set().union(*ours[(i, j)]) == set().union(*(set(map(int, s)) for s in theirs))


def test_pc_result_record_is_json():
    x = simulate(3)
    result = run("pc", x, test="fisherz", alpha=0.01)
    assert isinstance(result, DiscoveryResult) and result.method == "pc"
    assert result.graph.dtype == np.int8 and not result.graph.flags.writeable
    assert result.options == {"test": "fisherz", "alpha": 0.01}
    assert result.runtime > 0 and result.n_tests >= result.extras["n_computed"] > 0
    back = json.loads(json.dumps(result.to_dict()))
    assert back["graph"] == result.graph.tolist()
    assert back["deletion_log"][0] == log_dict(result.deletion_log[0])
    assert len(back["extras"]["sepsets"]) == len(result.deletion_log)


def log_dict(record: DeletionRecord) -> dict:
    return {"x": record.x, "y": record.y, "cond": list(record.cond), "test": record.test,
            "pvalue": record.pvalue, "grade": record.grade, "depth": record.depth, "order": record.order}


# ---------------------------------------------------------------------------------------------
# Wrappers: the same result as calling the libraries directly
# ---------------------------------------------------------------------------------------------


def test_ges_equals_causallearn():
    from causallearn.search.ScoreBased.GES import ges

    for seed in (11, 12, 13):
        x = simulate(seed, d=6, n=400)
        ours = run("ges", x)
        reference = ges(x, score_func="local_score_BIC")
        assert np.array_equal(ours.graph, from_causallearn(reference["G"]))
        assert ours.extras["score"] == pytest.approx(float(np.squeeze(reference["score"])))
        assert ours.n_tests == 0 and ours.deletion_log == ()


@pytest.mark.parametrize("test,n", [("fisherz", 400), ("kci", 120)])
def test_fci_equals_causallearn(test, n):
    from causallearn.search.ConstraintBased.FCI import fci

    for seed in (21, 22):
        x = simulate(seed, d=5, n=n)
        ours = run("fci", x, test=test)
        reference, _ = fci(x, test, ALPHA, show_progress=False)
        assert np.array_equal(ours.extras["pag"], reference.graph)
        assert np.array_equal(ours.graph, pag_to_graph(reference.graph))


def test_pag_mapping_by_hand():
    # marks[i, j] = mark at i of the i-j edge (-1 tail, 1 arrow, 2 circle)
    marks = np.zeros((5, 5), dtype=np.int8)
    marks[0, 1], marks[1, 0] = -1, 1  # 0 --> 1
    marks[1, 2], marks[2, 1] = 2, 1  # 1 o-> 2
    marks[2, 3], marks[3, 2] = 1, 1  # 2 <-> 3
    marks[3, 4], marks[4, 3] = 2, 2  # 3 o-o 4
    expected = np.zeros((5, 5), dtype=np.int8)
    expected[0, 1] = 1
    for i, j in [(1, 2), (2, 3), (3, 4)]:
        expected[i, j] = expected[j, i] = 1
    assert np.array_equal(pag_to_graph(marks), expected)


def test_direct_lingam_equals_lingam_and_recovers_chain():
    from lingam import DirectLiNGAM

    rng = np.random.default_rng(5)
    n = 2000
    e = rng.uniform(-1, 1, size=(n, 4))
    x = np.zeros((n, 4))
    order = [2, 0, 3, 1]  # chain 2 -> 0 -> 3 -> 1
    x[:, order[0]] = e[:, order[0]]
    for parent, child in zip(order, order[1:]):
        x[:, child] = 1.5 * x[:, parent] + e[:, child]
    ours = run("direct_lingam", x)
    truth = np.zeros((4, 4), dtype=np.int8)
    for parent, child in zip(order, order[1:]):
        truth[parent, child] = 1
    assert np.array_equal(ours.graph, truth)
    b = DirectLiNGAM().fit(x).adjacency_matrix_
    assert np.allclose(ours.extras["weights"], b.T)
    assert ours.extras["weights"][2, 0] == pytest.approx(1.5, abs=0.1)
    assert ours.extras["causal_order"] == order


# ---------------------------------------------------------------------------------------------
# NOTEARS and the additive-noise method: recovery of known graphs
# ---------------------------------------------------------------------------------------------


def test_notears_recovers_equal_variance_gaussian_sem():
    rng = np.random.default_rng(7)
    d, n = 5, 1000
    b = random_dag(rng, d, 0.5)
    w = b * rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    x = rng.normal(size=(n, d)) @ np.linalg.inv(np.eye(d) - w)  # x = x w + e, unit noise variance
    result = run("notears", x)
    assert np.array_equal(result.graph, b.astype(np.int8))
    # the L1 penalty shrinks the estimates a little towards 0
    assert np.all(np.sign(result.extras["weights"][b]) == np.sign(w[b]))
    assert np.allclose(result.extras["weights"][b], w[b], atol=0.3)
    assert result.extras["h"] < 1e-7


@pytest.mark.parametrize("mechanism", ["cube", "tanh"])
def test_anm_orients_nonlinear_pair(mechanism):
    correct = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        cause = rng.normal(size=300)
        effect = (cause**3 if mechanism == "cube" else np.tanh(2 * cause) * 2) + 0.5 * rng.normal(size=300)
        flip = seed % 2 == 1  # put the cause in either column
        x = np.column_stack([effect, cause] if flip else [cause, effect])
        graph = run("anm", x).graph
        c, e = (1, 0) if flip else (0, 1)
        correct += graph[c, e] == 1 and graph[e, c] == 0
    assert correct >= 15


# ---------------------------------------------------------------------------------------------
# The calling convention and its errors
# ---------------------------------------------------------------------------------------------


def test_methods_and_options_listed(monkeypatch):
    monkeypatch.delenv("CAUSAL_GYM_CDFM_CHECKPOINT", raising=False)  # cdfm is listed only when configured
    assert set(methods()) == {"pc", "fci", "ges", "direct_lingam", "anm", "notears", "gies", "dagma", "random_regress",
                              "ges_fast", "gies_fast", "xges", "notears_mlp", "das", "sdcd", "igsp", "cdis",
                              "alternet"}
    assert method_options("pc") == {"test": "fisherz", "alpha": 0.05}
    assert method_options("notears")["lambda1"] == 0.1 and method_options("notears")["w_threshold"] == 0.3


def test_unknown_method_names_valid_ones():
    with pytest.raises(ValueError, match="unknown method 'lingam'.*'direct_lingam'"):
        run("lingam", simulate(0))


@pytest.mark.parametrize("name", ["fci", "ges", "direct_lingam", "anm", "notears"])
def test_unknown_option_names_valid_ones(name):
    valid = next(iter(method_options(name)))
    with pytest.raises(ValueError, match=f"unknown option.*'bogus'.*{valid}"):
        run(name, simulate(0), bogus=1)


def test_pc_options_are_its_own_and_its_tests():
    with pytest.raises(ValueError, match="unknown option.*'bogus'.*test, alpha$"):
        run("pc", simulate(0), bogus=1)
    with pytest.raises(ValueError, match="'max_cache_mb'.*test 'fisherz'.*test, alpha$"):
        run("pc", simulate(0), max_cache_mb=10)
    result = run("pc", simulate(0, n=100), test="kci", max_cache_mb=10)
    assert result.options == {"test": "kci", "alpha": 0.05, "max_cache_mb": 10}


@pytest.mark.parametrize(
    "name,options",
    [
        ("pc", {"alpha": 1.5}),
        ("pc", {"alpha": True}),
        ("pc", {"test": "chisq"}),
        ("fci", {"test": "gsq"}),
        ("fci", {"depth": -2}),
        ("ges", {"score": "bdeu"}),
        ("ges", {"penalty": 0}),
        ("direct_lingam", {"measure": "ica"}),
        ("anm", {"alpha": 0}),
        ("notears", {"lambda1": -0.1}),
        ("notears", {"max_iter": 2.5}),
    ],
)
def test_invalid_option_value(name, options):
    with pytest.raises(ValueError):
        run(name, simulate(0), **options)


@pytest.mark.parametrize(
    "data",
    [
        np.ones(10),  # 1-D
        np.array([[1.0, np.nan], [2.0, 3.0], [3.0, 1.0], [4.0, 2.0]]),
        np.column_stack([np.arange(10.0), np.ones(10)]),  # constant column
        np.array([["a", "b"], ["c", "d"], ["e", "f"]]),
    ],
)
def test_bad_data(data):
    with pytest.raises(ValueError):
        run("pc", data)


def test_numerical_runtime_warnings_are_counted_on_the_result_not_printed(monkeypatch):
    import warnings

    import causal_gym.discovery as discovery
    from causal_gym.discovery.result import MethodOutput

    def noisy(x, **options):
        for _ in range(3):
            warnings.warn("overflow encountered in matmul", RuntimeWarning)
        warnings.warn("invalid value encountered in multiply", RuntimeWarning)
        warnings.warn("this option is deprecated", FutureWarning)
        return MethodOutput(np.zeros((x.shape[1], x.shape[1]), dtype=np.int8), {})

    monkeypatch.setitem(discovery._METHODS, "noisy", noisy)
    data = np.random.default_rng(0).normal(size=(50, 3))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = discovery.run("noisy", data)
    assert result.warnings == {"overflow encountered in matmul": 3, "invalid value encountered in multiply": 1}
    assert [w.category for w in shown] == [FutureWarning]  # only the non-numerical one reaches the caller
    assert result.to_dict()["warnings"] == result.warnings
    assert discovery.run("pc", data, test="fisherz").warnings == {}
