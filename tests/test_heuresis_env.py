"""The Heuresis environment: registration, Gymnasium contract, tools against independent
references, scoring, the guided start, determinism, robustness to garbage, no truth leak, and the
router agent against the reference router."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from itertools import combinations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.discovery import run
from causal_gym.envs.heuresis import env as env_module
from causal_gym.envs.heuresis.env import DEFAULT_BUDGETS, HeuresisEnv
from causal_gym.envs.heuresis.families import FAMILIES
from causal_gym.envs.heuresis.instances import HiddenRecord, make_instance
from causal_gym.envs.heuresis.references import MENU, pc_kci_reference, router_graph
from causal_gym.envs.heuresis.router import RouterAgent
from causal_gym.envs.heuresis.spec import FAMILIES as HEURESIS_FAMILIES
from causal_gym.envs.registration import env_descriptions, register_envs
from causal_gym.harness import data_tools as tools
from causal_gym.harness import data_tools as tools_module

ENV_DESCRIPTIONS = env_descriptions()
from causal_gym.eval import rollout
from causal_gym.graphs import dag_to_cpdag, meek
from causal_gym.harness import CodeResult, ToolError, parse_edge_list
from causal_gym.harness.agent import task_spec
from causal_gym.harness.working_graph_env import SUBMISSION_SOURCES
from causal_gym.metrics import adjacency_scores, nshd
from causal_gym.scm import erdos_renyi_dag
from causal_gym.stats import CITester, strength_grade, verdict

SMALL = {"d": 5, "n": 200}
TINY = {"d": 4, "n": 60}


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def act(env: HeuresisEnv, name: str, **arguments):
    action = env.parse_tool_call(name, arguments)
    assert not isinstance(action, ToolError), action
    return action


def step(env: HeuresisEnv, name: str, **arguments):
    return env.step(act(env, name, **arguments))


# ---------------------------------------------------------------------------------------------
# registration and the Gymnasium contract
# ---------------------------------------------------------------------------------------------


def test_registry_lists_every_family_in_both_conditions():
    assert HEURESIS_FAMILIES == FAMILIES
    expected = {f"Heuresis-{f}{g}-v0" for f in FAMILIES for g in ("", "-guided")}
    assert {i for i in ENV_DESCRIPTIONS if i.startswith("Heuresis-")} == expected and expected <= set(gym.registry)
    register_envs()  # idempotent
    for env_id in expected:
        spec = gym.spec(env_id)
        assert spec.entry_point == "causal_gym.envs.heuresis.env:HeuresisEnv" and spec.max_episode_steps is None
        assert spec.kwargs["guided"] == env_id.endswith("-guided-v0")


def test_make_in_a_fresh_interpreter_without_importing_causal_gym():
    code = (
        "import gymnasium as gym, sys\n"
        "env = gym.make('causal_gym:Heuresis-wild-v0', d=4, n=60)\n"
        "obs, info = env.reset(seed=0)\n"
        "print(type(env.unwrapped).__name__, obs['working_graph'].sum(), 'causallearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["HeuresisEnv", "12", "False"]


def test_make_vec_runs_a_few_steps():
    envs = gym.make_vec("Heuresis-lg-guided-v0", num_envs=4, **TINY, budgets={"turns": 3})
    envs.action_space.seed(0)
    obs, info = envs.reset(seed=0)
    assert obs["working_graph"].shape == (4, 4, 4)
    ended = 0
    for _ in range(8):
        obs, reward, term, trunc, info = envs.step(envs.action_space.sample())
        assert obs in envs.observation_space
        ended += int(np.sum(term | trunc))
    assert ended > 0
    envs.close()


def test_constructor_and_reset_validate_their_arguments():
    with pytest.raises(ValueError, match="family"):
        HeuresisEnv(family="nope")
    with pytest.raises(ValueError, match="budgets"):
        HeuresisEnv(budgets={"coffee": 1})
    with pytest.raises(ValueError, match="tests"):
        HeuresisEnv(budgets={"tests": -1})
    with pytest.raises(ValueError, match="reward"):
        HeuresisEnv(reward="accuracy")
    with pytest.raises(ValueError, match="guided"):
        HeuresisEnv(guided="yes")
    env = HeuresisEnv(family="lg", **TINY)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"instnace": 1})
    with pytest.raises(ValueError, match="out of range"):
        env.reset(seed=0, options={"instance": 32})
    with pytest.raises(ValueError, match="split"):
        env.reset(seed=0, options={"split": "validation"})


def test_reset_picks_the_requested_instance_and_split():
    env = HeuresisEnv(family="anm", **TINY)
    obs, info = env.reset(seed=1, options={"split": "dev", "instance": 7})
    assert info["instance"] == {"family": "anm", "split": "dev", "index": 7}
    assert np.array_equal(env._data, make_instance("anm", "dev", 7, **TINY).data)
    indices = {env.reset(seed=s)[1]["instance"]["index"] for s in range(12)}
    assert len(indices) > 3 and all(0 <= i < 32 for i in indices)
    train = {env.reset(seed=s, options={"split": "train"})[1]["instance"]["index"] for s in range(3)}
    assert len(train) == 3 and max(train) >= 32


# ---------------------------------------------------------------------------------------------
# budgets, starting states
# ---------------------------------------------------------------------------------------------


def test_budgets_default_to_pc_kcis_own_test_count():
    env = HeuresisEnv(family="mixed", **SMALL)
    obs, info = env.reset(seed=0, options={"instance": 2})
    pc = run("pc", env._data, test="kci", alpha=0.05)  # independent of the reference cache
    assert info["budgets_remaining"] == {"turns": 60, "tests": pc.n_tests, "algorithm_calls": 10,
                                         "wall_time": float("inf")}
    assert env.budgets() == {"turns": 60, "tests": pc.n_tests, "algorithm_calls": 10, "wall_time": None}
    assert DEFAULT_BUDGETS["tests"] == "pc_kci"
    np.testing.assert_array_equal(obs["budgets_remaining"], [1, 1, 1, 1])
    obs, *_, info = step(env, "stability", x=0, y=1, test="fisherz")
    assert info["budgets_remaining"]["tests"] == pc.n_tests - 10
    custom = HeuresisEnv(family="mixed", **SMALL, budgets={"tests": 3, "algorithm_calls": 1}, n_resamples=4)
    custom.reset(seed=0, options={"instance": 2})
    obs, *_ = step(custom, "stability", x=0, y=1, test="fisherz")
    assert obs["last_ok"] == 0 and "refused" in obs["last_result"]
    obs, *_ = step(custom, "run_algorithm", algorithm="C")
    assert obs["phase"] == 1 and "budget algorithm_calls exhausted" in obs["last_result"]


def test_guided_start_is_pc_kcis_output_with_its_deletion_log():
    env = HeuresisEnv(family="wild", guided=True, **SMALL)
    for index in range(3):
        obs, info = env.reset(seed=index, options={"instance": index})
        pc = run("pc", env._data, test="kci", alpha=0.05)
        np.testing.assert_array_equal(obs["working_graph"], pc.graph)
        deleted = np.zeros((5, 5), dtype=np.int8)
        for r in pc.deletion_log:
            deleted[r.x, r.y] = deleted[r.y, r.x] = 1
            assert obs["deletion_depth"][r.x, r.y] == len(r.cond)
            cond = ", ".join(f"X{v}" for v in r.cond)
            assert f"- X{r.x}, X{r.y}: kci test given {{{cond}}}, evidence: {r.grade}" in obs["last_result"]
        np.testing.assert_array_equal(obs["deletion_log"], deleted)
    unguided = HeuresisEnv(family="wild", **SMALL)
    obs, _ = unguided.reset(seed=0)
    assert np.array_equal(obs["working_graph"], 1 - np.eye(5, dtype=np.int8)) and not obs["deletion_log"].any()


def test_an_empty_start_is_scored_from_nothing_and_each_true_edge_counts():
    """``start="empty"`` (a training setting): no edges at reset; submitting at once scores the empty graph,
    and adding the true skeleton pair by pair raises the reward to 1 (F1 by hand: 2k / (k + m))."""
    env = HeuresisEnv(family="lg", start="empty", **SMALL)
    obs, _ = env.reset(seed=0, options={"instance": 1})
    assert not obs["working_graph"].any() and obs["last_result"].startswith("The working graph is empty")
    assert "The working graph starts empty." in task_spec(env).description
    assert task_spec(env).condition["start"] == "empty"
    truth = env._instance.hidden.dag
    pairs = [(x, y) for x, y in combinations(range(5), 2) if truth[x, y] or truth[y, x]]
    *_, info = step(env, "submit")
    assert info["scores"]["adjacency_f1"] == adjacency_scores(truth, np.zeros((5, 5))).f1 == 0.0
    env.reset(seed=0, options={"instance": 1})
    rewards = []
    for k, (x, y) in enumerate(pairs, 1):
        relation = "forward" if truth[x, y] else "backward"  # the true DAG's own marks: always submittable
        obs, *_ = step(env, "set_edge", x=f"X{x}", y=f"X{y}", relation=relation)
        f1 = adjacency_scores(truth, obs["working_graph"]).f1
        assert f1 == pytest.approx(2 * k / (k + len(pairs)))
        rewards.append(f1)
    *_, info = step(env, "submit")
    assert info["scores"]["adjacency_f1"] == 1.0 and rewards == sorted(rewards)
    with pytest.raises(ValueError, match="guided=False"):
        HeuresisEnv(family="lg", guided=True, start="empty", **SMALL)
    with pytest.raises(ValueError, match="start must be"):
        HeuresisEnv(family="lg", start="complete", **SMALL)


# ---------------------------------------------------------------------------------------------
# the tools against independent references
# ---------------------------------------------------------------------------------------------


def test_masked_labels_shuffle_across_seeds_and_stay_fixed_within_an_episode():
    env = HeuresisEnv(family="lg", **TINY, budgets={"algorithm_calls": None, "turns": 30})
    maps = []
    for seed in range(6):
        env.reset(seed=seed, options={"instance": 0})
        outputs = {}
        for label in ("A", "B", "A"):
            *_, info = step(env, "run_algorithm", algorithm=label)
            outputs.setdefault(label, []).append(info["result"]["edges"])
        assert outputs["A"][0] == outputs["A"][1]
        *_, final = step(env, "submit")
        slots = final["scores"]["algorithm_slots"]
        assert sorted(slots) == list("ABCDEFG") and sorted(slots.values()) == sorted(MENU)
        for label in ("A", "B"):  # the label's output is that algorithm's, run independently
            entry = MENU[slots[label]]
            expected = run(entry.method, env._data, **entry.options).graph
            assert np.array_equal(parse_edge_list(outputs[label][0] or "none", 4), expected)
        maps.append(tuple(slots.values()))
    assert len(set(maps)) > 1


@pytest.mark.parametrize("test", ["fisherz", "kci"])
def test_ci_test_reports_the_verdict_and_grade_of_the_direct_p_value(test):
    env = HeuresisEnv(family="hetero", **SMALL)
    env.reset(seed=3, options={"instance": 1})
    rng = np.random.default_rng(0)
    tester = CITester(np.array(env._data), test=test)
    for _ in range(8):
        x, y, *rest = rng.permutation(5).tolist()
        cond = sorted(rest[: rng.integers(0, 3)])
        obs, _, _, _, info = step(env, "ci_test", x=x, y=y, cond=[f"X{v}" for v in cond], test=test)
        p = tester.pvalue(x, y, tuple(cond))
        assert info["result"]["verdict"] == verdict(p, 0.05) and info["result"]["grade"] == strength_grade(p, 0.05)
        assert obs["last_result"].endswith(f"({test} test): {verdict(p, 0.05)} ({strength_grade(p, 0.05)})")
        assert repr(p)[:6] not in obs["last_result"] and "p =" not in obs["last_result"]


AGAINST = {"strong dependence": "strong evidence against", "dependence": "evidence against",
           "weak dependence": "weak evidence against", "weak independence": "weakly consistent with",
           "independence": "consistent with"}


def test_summarize_matches_scipy():
    from scipy import stats as sps

    data = np.random.default_rng(1).standard_t(5, size=(300, 4))
    text, out = tools.summarize(data)
    for j, row in enumerate(out["variables"]):
        assert row["skewness"] == pytest.approx(sps.skew(data[:, j]), abs=0.006)
        assert row["excess_kurtosis"] == pytest.approx(sps.kurtosis(data[:, j]), abs=0.006)
        quantiles = np.quantile(data[:, j], [0, 0.05, 0.25, 0.5, 0.75, 0.95, 1])
        np.testing.assert_allclose(row["quantiles"], quantiles, atol=0.006)
        assert row["normality"] == f"{AGAINST[strength_grade(sps.jarque_bera(data[:, j]).pvalue)]} normality"
    corr = np.corrcoef(data, rowvar=False)
    best = max(combinations(range(4), 2), key=lambda p: abs(corr[p]))
    assert out["top_pairs"][0]["pair"] == [f"X{best[0]}", f"X{best[1]}"]
    rho = sps.spearmanr(data[:, best[0]], data[:, best[1]])[0]
    assert out["top_pairs"][0]["spearman"] == pytest.approx(rho, abs=6e-4)


def test_summarize_never_shows_a_negative_zero():
    """A standardised column's mean is +-1e-17 depending on the BLAS kernel: it must read 0.00 either way."""
    import math

    rng = np.random.default_rng(3)
    data = rng.normal(size=(200, 3))
    data = (data - data.mean(0)) / data.std(0)
    data[:, 0] -= 1e-12  # a mean just below zero
    data[:, 1] += 1e-12
    text, out = tools.summarize(data)
    assert "-0.00" not in text and " 0.00" in text
    numbers = [row[k] for row in out["variables"] for k in ("mean", "sd", "skewness", "excess_kurtosis")]
    numbers += [q for row in out["variables"] for q in row["quantiles"]]
    assert all(math.copysign(1.0, v) > 0 for v in numbers if v == 0)
    assert out["variables"][0]["mean"] == 0.0 and out["variables"][1]["mean"] == 0.0


def test_fit_parents_r2_matches_sklearn_cross_validated_fits():
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 250))
    data = np.column_stack([a, b, a**2 + 0.5 * b + 0.3 * rng.normal(size=250)])
    text, out = tools.fit_parents(data, 2, [0, 1])
    folds = np.arange(250) % tools.FOLDS
    features, target = data[:, :2], data[:, 2]
    linear = np.empty(250)
    kernel = {lam: np.empty(250) for lam in tools.RIDGE_GRID}
    sq = ((features[:, None, :] - features[None, :, :]) ** 2).sum(-1)
    gamma = 1 / (2 * np.median(sq[np.triu_indices(250, 1)]))
    for k in range(tools.FOLDS):
        tr, te = folds != k, folds == k
        linear[te] = LinearRegression().fit(features[tr], target[tr]).predict(features[te])
        centre = target[tr].mean()
        for lam in tools.RIDGE_GRID:
            model = KernelRidge(alpha=lam * tr.sum(), kernel="rbf", gamma=gamma).fit(features[tr], target[tr] - centre)
            kernel[lam][te] = centre + model.predict(features[te])

    def r2(pred):
        return 1 - np.sum((target - pred) ** 2) / np.sum((target - target.mean()) ** 2)

    best = min(tools.RIDGE_GRID, key=lambda lam: np.sum((target - kernel[lam]) ** 2))
    assert out["r2_linear"] == pytest.approx(r2(linear), abs=6e-4)
    assert out["r2_nonlinear"] == pytest.approx(r2(kernel[best]), abs=6e-4)
    assert out["linearity"] == "strong nonlinear gain" and out["parents"] == ["X0", "X1"]
    _, linear_out = tools.fit_parents(np.column_stack([a, 2 * a + 0.5 * rng.normal(size=250)]), 1, [0])
    assert linear_out["linearity"] == "none nonlinear gain" and linear_out["residual_tails"] == "light"
    _, alone = tools.fit_parents(data, 2, [])
    assert alone["r2_linear"] == alone["r2_nonlinear"] <= 0 and "not applicable" in alone["constant_noise_scale"]


def test_fit_parents_grades_heteroscedastic_and_heavy_tailed_noise():
    rng = np.random.default_rng(3)
    a = rng.normal(size=600)
    hetero = np.column_stack([a, a + np.exp(a) * rng.normal(size=600)])
    assert tools.fit_parents(hetero, 1, [0])[1]["constant_noise_scale"] == "strong evidence against a constant scale"
    homo = np.column_stack([a, a + rng.normal(size=600)])
    assert tools.fit_parents(homo, 1, [0])[1]["constant_noise_scale"].endswith("consistent with a constant scale")
    heavy = np.column_stack([a, a + rng.standard_t(3, size=600)])
    assert tools.fit_parents(heavy, 1, [0])[1]["residual_tails"] == "heavy"


def test_probe_direction_prefers_the_additive_noise_direction():
    rng = np.random.default_rng(4)
    cause = rng.uniform(-2, 2, size=400)
    effect = cause**3 / 4 + rng.uniform(-1, 1, size=400)
    text, out = tools.probe_direction(np.column_stack([effect, cause]), 1, 0)
    assert out["preference"].startswith("X1 -> X0 preferred") and text.startswith("Direction probe X1, X0: X1 -> X0")
    assert out["forward"]["verdict"] == "independent" and out["backward"]["verdict"] == "dependent"
    linear = np.column_stack([cause, 2 * cause + rng.normal(size=400)])
    assert not any(isinstance(v, float) for part in tools.probe_direction(linear, 0, 1)[1].values()
                   for v in (part.values() if isinstance(part, dict) else [part]))


def test_run_code_sees_the_data_only():
    env = HeuresisEnv(family="lg", **TINY)
    env.reset(seed=0, options={"instance": 0})
    obs, _, _, _, info = step(env, "run_code", code="print(X.shape, round(float(X[:, 2].std()), 6))")
    assert obs["last_result"].strip() == "(60, 4) 1.0" and info["result"]["ok"]
    obs, _, _, _, info = step(env, "run_code", code="1/0")
    assert obs["last_ok"] == 0 and "ZeroDivisionError" in obs["last_result"] and not info["result"]["ok"]


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------


def _brute_force_drill_down(completed, pc_graph, log, dag):
    d = len(dag)
    adjacent = lambda g, i, j: bool(g[i, j] or g[j, i])  # noqa: E731
    deleted = {(r.x, r.y) for r in log}
    wrong = {p for p in deleted if adjacent(dag, *p)}
    out = {"recovered": 0, "harmful": 0, "pc_edges_dropped": 0, "reoriented": 0}
    for i, j in combinations(range(d), 2):
        now, before = adjacent(completed, i, j), adjacent(pc_graph, i, j)
        out["recovered"] += now and (i, j) in wrong
        out["harmful"] += now and (i, j) in deleted - wrong
        out["pc_edges_dropped"] += before and not now
        out["reoriented"] += now and before and (completed[i, j], completed[j, i]) != (pc_graph[i, j], pc_graph[j, i])
    restored = {p for p in deleted if adjacent(completed, *p)}
    out["restoration_precision"] = len(restored & wrong) / len(restored) if restored else float(not wrong)
    out["restoration_recall"] = len(restored & wrong) / len(wrong) if wrong else float(not restored)
    return out


@pytest.mark.parametrize("reward", ["adjacency_f1", "nshd", "f1_gain_over_pc"])
def test_scores_are_metrics_of_the_meek_completion(reward):
    rng = np.random.default_rng(5)
    env = HeuresisEnv(family="gauntlet", guided=True, **SMALL, reward=reward)
    for episode in range(4):
        env.reset(seed=episode, options={"instance": episode})
        for _ in range(6):
            x, y = rng.choice(5, 2, replace=False).tolist()
            step(env, "set_edge", x=x, y=y, relation=str(rng.choice(["none", "undirected", "forward", "backward"])))
        obs, r, term, trunc, info = step(env, "submit")
        if not (term or trunc):  # random edits can leave a graph that no DAG extends: the retry rescues it
            assert "no acyclic completion" in obs["last_result"] or "no consistent DAG extension" in obs["last_result"]
            obs, r, term, trunc, info = step(env, "submit")
        submitted = info["submitted_graph"]
        completed = meek(submitted)
        dag = make_instance("gauntlet", "test", episode, **SMALL).hidden.dag
        pc = run("pc", env._data, test="kci", alpha=0.05)
        scores = info["scores"]
        prf = adjacency_scores(dag, completed)
        assert (scores["adjacency_precision"], scores["adjacency_recall"], scores["adjacency_f1"]) == tuple(prf)
        assert scores["nshd"] == nshd(dag, completed)
        pc_f1 = adjacency_scores(dag, meek(pc.graph)).f1
        assert scores["pc_kci_f1"] == pytest.approx(pc_f1)
        for key, value in _brute_force_drill_down(completed, pc.graph, pc.deletion_log, dag).items():
            assert scores[key] == pytest.approx(value), key
        expected = {"adjacency_f1": prf.f1, "nshd": -scores["nshd"], "f1_gain_over_pc": prf.f1 - pc_f1}[reward]
        assert r == pytest.approx(expected)


def test_submitting_the_oracle_recovers_every_wrong_deletion():
    env = HeuresisEnv(family="wild", guided=True, **SMALL)
    for index in range(6):
        env.reset(seed=0, options={"instance": index})
        reference = pc_kci_reference(env._instance)
        for x, y in reference.wrong_pairs:
            step(env, "set_edge", x=x, y=y, relation="undirected")
        *_, info = step(env, "submit")
        s = info["scores"]
        assert s["recovered"] == s["n_wrong_deletions"] == len(reference.wrong_pairs) and s["harmful"] == 0
        assert s["restoration_precision"] == s["restoration_recall"] == 1.0


# ---------------------------------------------------------------------------------------------
# determinism, garbage, truth
# ---------------------------------------------------------------------------------------------

SCRIPT = [
    ("summarize", {}),
    ("run_algorithm", {"algorithm": "D"}),
    ("ci_test", {"x": "X0", "y": "X3", "cond": ["X1"], "test": "kci"}),
    ("stability", {"x": "X1", "y": "X2", "test": "kci"}),
    ("stability", {"x": "X1", "y": "X2", "test": "fisherz"}),
    ("fit_parents", {"x": "X2", "cond": ["X0", "X4"]}),
    ("probe_direction", {"x": "X3", "y": "X1"}),
    ("run_code", {"code": "print(np.round(np.corrcoef(X.T)[0], 4))"}),
    ("set_edge", {"x": "X0", "y": "X1", "relation": "none"}),
    ("submit", {"edges": "X0 -> X2, X2 -> X3, X4 -> X3"}),  # with X2 -- X3 no DAG would extend it
]


def _play_script(seed: int, env: HeuresisEnv | None = None):
    env = env or HeuresisEnv(family="wild", guided=True, **SMALL)
    obs, info = env.reset(seed=seed)
    trace = [(obs, info)]
    for name, arguments in SCRIPT:
        obs, reward, term, trunc, info = step(env, name, **arguments)
        trace.append((obs, reward, term, trunc, info))
    return trace, env.record().deterministic_view()


def test_same_seed_gives_identical_observations_results_and_records():
    first, second = _play_script(11), _play_script(11)
    assert data_equivalence(first[0], second[0], exact=True)
    assert first[1] == second[1]
    assert first[0][-1][2] and len(first[1]) == len(SCRIPT)
    other = _play_script(12)
    assert not data_equivalence(first[0], other[0])


def _valid_call(env: HeuresisEnv, rng: np.random.Generator):
    """A well-formed call of a random tool but submit (it may still be refused for lack of budget)."""
    name = str(rng.choice(env.toolbox.names[2:] + ("set_edge",)))
    x, y, *rest = [f"X{v}" for v in rng.permutation(env.d)]
    arguments = {"x": x, "y": y, "cond": rest[: rng.integers(0, len(rest) + 1)], "code": "print(n)", "edges": "",
                 "test": str(rng.choice(["fisherz", "kci"])), "algorithm": str(rng.choice(list("ABCDEFG"))),
                 "relation": str(rng.choice(["none", "undirected", "forward", "backward"]))}
    fields = env.toolbox.tool(name).fields
    return env.parse_tool_call(name, {k: v for k, v in arguments.items() if k in fields})


def _garbage(env: HeuresisEnv, rng: np.random.Generator):
    kind = rng.integers(8)
    d = env.d
    if kind >= 6:
        return _valid_call(env, rng)
    if kind == 0:
        return env.action_space.sample()
    if kind == 1:  # JSON calls with random (often invalid) arguments
        names = [*env.toolbox.names, "", "Submit", "ci-test", None]
        values = ["X0", "X1", f"X{d}", 2, -1, True, None, ["X1", "X1"], ["X0"], [], "kci", "fisherz", "A", "H",
                  "X0 -> X1", "print(1)", "é", {"a": 1}, "forward"]
        fields = ["x", "y", "cond", "test", "algorithm", "code", "edges", "relation", "z"]
        arguments = {fields[i]: values[rng.integers(len(values))]
                     for i in rng.choice(len(fields), rng.integers(0, 5), replace=False)}
        payload = json.dumps(arguments) if rng.random() < 0.5 else arguments
        return env.parse_tool_call(names[rng.integers(len(names))], payload)
    if kind == 2:  # broken JSON
        chars = list('{}[]":,X0123 ->abcdkci')
        return env.parse_tool_call(str(rng.choice(env.toolbox.names)), "".join(rng.choice(chars, rng.integers(0, 30))))
    if kind == 3:  # not an action at all, or bad indices
        return [None, 7, "submit", {"tool": -1}, {"tool": 99}, {"tool": 3, "x": 0, "y": 0}, np.ones((2, 2))][
            rng.integers(7)]
    if kind == 4:  # a valid tool with typed fields that may clash (x == y, cond holding x or y)
        action = env.action_space.sample()
        action["tool"] = env.toolbox.index(str(rng.choice(["ci_test", "stability", "fit_parents", "probe_direction",
                                                           "run_algorithm", "set_edge"])))
        return action
    edges = ["", "X0 -> X1", f"X0 -> X{d}", "junk", "[[0, 0]]"]
    return env.parse_tool_call("submit", {"edges": str(rng.choice(edges))})


def _fast_run_code(code, data, limits=None, *, sandbox="auto"):
    # The sandbox itself is tested in test_sandbox.py; here only the protocol matters.
    return CodeResult(ok=len(code) % 2 == 0, output=f"{len(code)} chars", error=None if len(code) % 2 == 0 else "odd",
                      wall_time=0.0, output_truncated=False, sandbox=sandbox)


def test_random_and_malformed_actions_never_raise_and_always_end_scored(monkeypatch):
    monkeypatch.setattr(tools_module, "run_code", _fast_run_code)
    rng = np.random.default_rng(8)
    steps = 0
    for family in FAMILIES:
        for episode in range(80):
            # A zero budget is exhausted at once (the first step is followed by the last turn): keep it rare.
            budgets = {"turns": int(rng.integers(1, 30)),
                       "tests": int(rng.integers(0, 40) > 0) * int(rng.integers(1, 40)),
                       "algorithm_calls": int(rng.integers(0, 10) > 0) * int(rng.integers(1, 4))}
            env = HeuresisEnv(family=family, guided=bool(episode % 2), **TINY, budgets=budgets, n_resamples=3)
            env.action_space.seed(episode)
            obs, info = env.reset(seed=episode, options={"instance": episode % 2})
            done, n = False, 0
            while not done:
                obs, reward, term, trunc, info = env.step(_garbage(env, rng))
                done, n = term or trunc, n + 1
                assert obs in env.observation_space and n <= budgets["turns"] + 2
            steps += n
            assert info["submission_source"] in SUBMISSION_SOURCES and 0 <= info["scores"]["adjacency_f1"] <= 1
            used = env._budgets.used()
            assert used["tests"] <= budgets["tests"] and used["algorithm_calls"] <= budgets["algorithm_calls"]
            assert len(env.record()) == n
            json.dumps(env.record().to_dict())
    assert steps > 2000


def _swap_truth(instance, seed: int):
    """The same instance (same data) with another hidden DAG."""
    other = erdos_renyi_dag(instance.d, 2.0, rng=seed)
    while np.array_equal(other, instance.hidden.dag):
        seed += 1
        other = erdos_renyi_dag(instance.d, 2.0, rng=seed)
    hidden = HiddenRecord(dag=other, cpdag=dag_to_cpdag(other), scm="{}", permutation=np.arange(instance.d),
                          graph_prior="swapped")
    return dataclasses.replace(instance, hidden=hidden)


def _swapped_loader(real):
    """``load_instance`` giving each instance another hidden DAG (same data) and its PC-KCI reference."""

    def swapped(*key):
        instance, _ = real(*key)
        fake = _swap_truth(instance, 100 + key[2])
        return fake, pc_kci_reference(fake)

    return swapped


def _texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _texts(v)


def _play_until_the_end(env: HeuresisEnv, seed: int, actions: list) -> tuple[list, list, dict]:
    """Everything an agent sees before the final step, the record without that step, and the final info."""
    obs, info = env.reset(seed=seed)
    seen = [(obs, info)]
    for action in actions:
        obs, reward, term, trunc, info = env.step(action)
        if term or trunc:
            return seen, env.record().deterministic_view()[:-1], info
        seen.append((obs, reward, info))
    raise AssertionError("the episode did not end")


def test_nothing_before_the_end_depends_on_the_truth(monkeypatch):
    """Counterfactual check: with the hidden DAG swapped (same data), everything an agent sees before
    the final step is identical; only the final scores change. Texts never quote p-values."""
    monkeypatch.setattr(tools_module, "run_code", _fast_run_code)
    real = env_module.load_instance
    swapped = _swapped_loader(real)

    rng = np.random.default_rng(9)
    for family, guided, seed in (("lg", False, 0), ("wild", True, 1), ("gauntlet", True, 2), ("anm", False, 3)):
        probe = HeuresisEnv(family=family, guided=guided, **TINY)
        probe.action_space.seed(seed)
        probe.reset(seed=seed)
        actions = [_garbage(probe, rng) for _ in range(30)] + [probe.parse_tool_call("submit", {})] * 2
        seen, record, final = _play_until_the_end(HeuresisEnv(family=family, guided=guided, **TINY), seed, actions)
        monkeypatch.setattr(env_module, "load_instance", swapped)
        env = HeuresisEnv(family=family, guided=guided, **TINY)
        seen_swapped, record_swapped, final_swapped = _play_until_the_end(env, seed, actions)
        monkeypatch.setattr(env_module, "load_instance", real)
        truth = make_instance(family, "test", env._instance.index, **TINY).hidden.dag
        assert not np.array_equal(env._instance.hidden.dag, truth)
        assert data_equivalence(seen, seen_swapped, exact=True)
        assert record == record_swapped
        assert final["scores"] != final_swapped["scores"]
        texts = [t for item in seen for t in _texts(item)] + [c["result_text"] for c in record]
        pvalues = [f"{r.pvalue:.6f}" for r in env._reference.deletion_log] + ["p-value", "p ="]
        assert not any(p in t for p in pvalues for t in texts)


def test_masked_sampling_does_not_depend_on_the_truth(monkeypatch):
    """The action masks read public state only: with the hidden DAG swapped (same data), seeded
    ``action_space.sample(mask=info["action_mask"])`` draws the same actions and sees the same
    observations and infos, masks included, until the end."""
    monkeypatch.setattr(tools_module, "run_code", _fast_run_code)
    real = env_module.load_instance
    swapped = _swapped_loader(real)

    def play(seed: int) -> tuple[list, HeuresisEnv]:
        env = HeuresisEnv(family="wild", guided=True, **TINY)
        env.action_space.seed(seed)
        obs, info = env.reset(seed=seed)
        seen = []
        while True:
            action = env.action_space.sample(mask=info["action_mask"])
            seen.append((obs, info, action))
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                return seen, env

    steps = 0
    for seed in range(4):
        seen, env = play(seed)
        monkeypatch.setattr(env_module, "load_instance", swapped)
        seen_swapped, env_swapped = play(seed)
        monkeypatch.setattr(env_module, "load_instance", real)
        assert not np.array_equal(env._instance.hidden.dag, env_swapped._instance.hidden.dag)
        assert data_equivalence(seen, seen_swapped, exact=True)
        steps += len(seen)
    assert steps >= 12


# ---------------------------------------------------------------------------------------------
# the router agent and a run at the defaults
# ---------------------------------------------------------------------------------------------


def test_router_agent_reproduces_the_reference_router():
    # Cases chosen to cover both branches and menus where FCI or GES share PC-Fisher-z's skeleton.
    branches = set()
    for family, index in (("lg", 0), ("mixed", 0), ("wild", 1), ("hetero", 3)):
        env = gym.make(f"Heuresis-{family}-guided-v0", **SMALL)
        agent = RouterAgent(seed=5)
        record = rollout(env, agent, seed=index, options={"instance": index})
        reference = router_graph(np.array(env.unwrapped._data), 5)
        assert agent.decision["branch"] == reference.branch
        assert agent.decision["flagged_share"] == pytest.approx(reference.flagged_share)
        assert record.terminated and not record.truncated
        np.testing.assert_array_equal(record.final_info["submitted_graph"], reference.graph)
        branches.add(reference.branch)
    assert branches == {"pc_kci", "pc_fisherz"}
    with pytest.raises(ValueError, match="guided"):
        rollout(gym.make("Heuresis-lg-v0", **SMALL), RouterAgent(), seed=0)


def test_one_episode_at_the_default_size():
    env = gym.make("Heuresis-wild-guided-v0")
    obs, info = env.reset(seed=0, options={"instance": 0})
    assert obs["working_graph"].shape == (10, 10) and obs["last_result"].startswith("The working graph is the output")
    assert info["budgets_remaining"]["tests"] == pc_kci_reference(env.unwrapped._instance).n_tests > 0
    for name, arguments in [("summarize", {}), ("ci_test", {"x": "X0", "y": "X1", "test": "kci"}),
                            ("fit_parents", {"x": "X0", "cond": ["X1", "X2"]}),
                            ("probe_direction", {"x": "X0", "y": "X1"})]:
        obs, *_ = env.step(env.unwrapped.parse_tool_call(name, arguments))
        assert obs["last_ok"] == 1, obs["last_result"]
    obs, reward, term, trunc, info = env.step(env.unwrapped.parse_tool_call("submit", {}))
    assert term and reward == info["scores"]["adjacency_f1"] == info["scores"]["pc_kci_f1"]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_router_agent_reproduces_the_reference_router_at_the_default_size(family):
    for index in range(3):
        env = gym.make(f"Heuresis-{family}-guided-v0")
        record = rollout(env, RouterAgent(seed=0), seed=index, options={"instance": index})
        reference = router_graph(np.array(env.unwrapped._data), 0)
        np.testing.assert_array_equal(record.final_info["submitted_graph"], reference.graph)


def test_the_submit_mask_follows_every_edit_of_the_working_graph():
    """The masks ask at every step whether the working graph can be submitted; the answer, worked out
    once per graph, must change with each edit that changes it (a directed cycle made, then broken)."""
    env = HeuresisEnv(**TINY)
    env.reset(seed=3)
    for x, y in ((0, 1), (1, 2)):
        _, _, _, _, info = step(env, "set_edge", x=x, y=y, relation="forward")
        assert info["action_mask"]["edges"] is None
    _, _, _, _, info = step(env, "set_edge", x=2, y=0, relation="forward")  # X0 -> X1 -> X2 -> X0
    rescue = info["action_mask"]["edges"]
    assert isinstance(rescue, str) and rescue != "none"
    assert np.array_equal(parse_edge_list(rescue, 4), env.unwrapped._rescued())
    _, _, _, _, info = step(env, "summarize")  # no edit: the same answer
    assert info["action_mask"]["edges"] == rescue
    _, _, _, _, info = step(env, "set_edge", x=2, y=0, relation="none")
    assert info["action_mask"]["edges"] is None
