"""The Heuresis repair-policy env: oracle and no-op gains, masks, test results, budgets, the scripted rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.envs.heuresis.references import pc_kci_reference
from causal_gym.envs.heuresis.repair import (
    CONDITIONING,
    DECISIONS,
    GRADE_SCORES,
    PAIR_FEATURES,
    EmptySetKCIRule,
    HeuresisRepairEnv,
)
from causal_gym.graphs import directed_cycle, meek
from causal_gym.metrics import adjacency_scores
from causal_gym.stats import CITester, strength_grade

SMALL = {"family": "wild", "d": 7, "n": 300, "split": "test"}
INSTANCES = (0, 1, 2)  # wild, d=7, n=300 test instances; each has wrongly deleted pairs (asserted below)


def action(decision: str, slot: int = 0, test: str = "kci", cond: str = "empty") -> np.ndarray:
    return np.array([DECISIONS.index(decision), slot, ("fisherz", "kci").index(test), CONDITIONING.index(cond)])


def play(env: HeuresisRepairEnv, actions: list[np.ndarray]) -> tuple[float, dict]:
    for a in actions:
        _, reward, terminated, truncated, info = env.step(a)
        if terminated or truncated:
            return reward, info
    raise AssertionError("the episode did not end")


@pytest.mark.parametrize("index", INSTANCES)
def test_restoring_the_oracle_pairs_earns_the_oracle_gain(index: int) -> None:
    instance = make_instance("wild", "test", index, d=7, n=300)
    reference = pc_kci_reference(instance)
    dag = instance.hidden.dag
    wrong = [(r.x, r.y) for r in reference.deletion_log if dag[r.x, r.y] or dag[r.y, r.x]]
    assert wrong, "the chosen instances must have wrongly deleted pairs"
    oracle = reference.graph.copy()
    for x, y in wrong:
        oracle[x, y] = oracle[y, x] = 1
    expected = adjacency_scores(dag, meek(oracle)).f1 - adjacency_scores(dag, meek(reference.graph)).f1
    env = HeuresisRepairEnv(**SMALL)
    env.reset(seed=0, options={"instance": index})
    slots = [env.candidate_pairs.index(pair) for pair in wrong]
    reward, info = play(env, [action("restore", s) for s in slots] + [action("submit")])
    assert reward == pytest.approx(expected, abs=1e-12) and expected > 0
    assert info["scores"]["recovered"] == len(wrong) and info["scores"]["harmful"] == 0


@pytest.mark.parametrize("index", INSTANCES)
def test_keeping_everything_earns_zero(index: int) -> None:
    env = HeuresisRepairEnv(**SMALL)
    env.reset(seed=0, options={"instance": index})
    assert play(env, [action("submit")])[0] == 0.0
    env.reset(seed=1, options={"instance": index})
    keep_all = [action("keep", s) for s in range(len(env.candidate_pairs))]
    tests = [action("test", s, "fisherz", "logged") for s in range(3)]
    reward, info = play(env, tests + keep_all + [action("submit")])
    assert reward == 0.0 and info["scores"]["n_deleted"] == len(env.candidate_pairs)


def test_candidates_are_the_deletion_log() -> None:
    env = HeuresisRepairEnv(**SMALL)
    obs, info = env.reset(seed=0, options={"instance": 0})
    reference = pc_kci_reference(make_instance("wild", "test", 0, d=7, n=300))
    assert info["pairs"] == env.candidate_pairs == [(r.x, r.y) for r in reference.deletion_log]
    table = env.pair_table(obs)
    filled = len(env.candidate_pairs)
    assert table.shape == (21, len(PAIR_FEATURES))
    assert table[:filled, 0].all() and not table[filled:].any()
    assert env.observation_space.contains(obs)


def test_masks_agree_with_accepted_actions() -> None:
    env = HeuresisRepairEnv(**SMALL, budgets={"turns": 400})
    rng = np.random.default_rng(0)
    env.action_space.seed(0)
    obs, info = env.reset(seed=0, options={"instance": 1})
    n_submit = 0
    for _ in range(300):
        a = env.action_space.sample()
        if a[0] == DECISIONS.index("submit") and rng.random() < 0.9:
            a[0] = DECISIONS.index("test")
        mask = env.action_masks()
        parts = np.split(mask, np.cumsum(env.action_space.nvec)[:-1])
        allowed = all(part[v] for part, v in zip(parts, a))
        turns = info["budgets_remaining"]["turns"]
        obs, _, terminated, truncated, info = env.step(a)
        is_submit = a[0] == DECISIONS.index("submit")
        assert info["accepted"] == (allowed or is_submit)
        if not terminated and not truncated:
            assert info["budgets_remaining"]["turns"] == turns - 1
        if terminated or truncated:
            n_submit += is_submit
            obs, info = env.reset(options={"instance": int(rng.integers(3))})
    assert n_submit > 0


def test_test_results_enter_the_observation() -> None:
    env = HeuresisRepairEnv(**SMALL)
    env.reset(seed=0, options={"instance": 2})
    instance = make_instance("wild", "test", 2, d=7, n=300)
    x, y = env.candidate_pairs[1]
    obs, _, _, _, info = env.step(action("test", 1, "kci", "empty"))
    grade = strength_grade(CITester(instance.data, test="kci").pvalue(x, y, ()))
    row = env.pair_table(obs)[1]
    column = PAIR_FEATURES.index("kci_empty_tested")
    assert info["result"]["grade"] == grade
    assert row[column] == 1.0 and row[column + 1] == GRADE_SCORES[grade]
    assert env.pair_table(obs)[0, column] == 0.0
    # "neighbours": every variable adjacent to x or y in the current working graph
    env.step(action("restore", 0))
    graph = pc_kci_reference(instance).graph.copy()
    a, b = env.candidate_pairs[0]
    graph[a, b] = graph[b, a] = 1
    adjacent = (graph | graph.T).astype(bool)
    expected = sorted(set(np.flatnonzero(adjacent[x] | adjacent[y])) - {x, y})
    obs, _, _, _, info = env.step(action("test", 1, "fisherz", "neighbours"))
    assert info["result"]["cond"] == [f"X{v}" for v in expected]
    assert env.pair_table(obs)[0, PAIR_FEATURES.index("restored")] == 1.0


def test_exhausting_the_test_budget_submits() -> None:
    env = HeuresisRepairEnv(**SMALL, budgets={"tests": 2})
    env.reset(seed=0, options={"instance": 0})
    _, reward, terminated, _, info = env.step(action("test", 0))
    assert not terminated
    env.step(action("restore", 0))
    _, reward, terminated, truncated, info = env.step(action("test", 1))
    assert terminated and not truncated and info["budget_exhausted"]
    assert "scores" in info and info["scores"]["n_deleted"] == len(env.candidate_pairs)


def test_empty_set_rule_restores_exactly_the_marginally_dependent_pairs() -> None:
    env = HeuresisRepairEnv(**SMALL)
    obs, info = env.reset(seed=0, options={"instance": 0})
    tester = CITester(make_instance("wild", "test", 0, d=7, n=300).data, test="kci")
    dependent = {(x, y) for x, y in env.candidate_pairs if tester.pvalue(x, y, ()) <= 0.05}
    rule = EmptySetKCIRule(env)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(rule.act(obs, info))
        done = terminated or truncated
    graph = info["submitted_graph"]
    restored = {(x, y) for x, y in env.candidate_pairs if graph[x, y] or graph[y, x]}
    assert restored == dependent


def test_train_pool_and_options() -> None:
    env = HeuresisRepairEnv("lg", d=5, n=200, train_instances=3)
    seen = {env.reset(seed=s)[1]["instance"]["index"] for s in range(8)}
    assert seen <= {0, 1, 2}
    assert env.reset(seed=0)[0].tolist() == env.reset(seed=0)[0].tolist()
    assert env.reset(seed=0, options={"instance": 7})[1]["instance"]["index"] == 7
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"level": 1})


def test_maskable_ppo_smoke() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = HeuresisRepairEnv("lg", d=5, n=200, train_instances=3)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    obs, _ = env.reset(seed=0)
    a, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_space.contains(a)


def _colliding_restore() -> tuple[int, list[int], np.ndarray, np.ndarray]:
    """An instance and a few of its deletion-log slots whose restoration (undirected, on PC-KCI's graph)
    Meek's rules complete into a directed cycle: PC's arrows propagate through the restored edges (so
    Heuresis rejects the submission)."""
    for index in INSTANCES:
        reference = pc_kci_reference(make_instance("wild", "test", index, d=7, n=300))
        pairs = [(r.x, r.y) for r in reference.deletion_log]
        for size in (1, 2, 3):
            for slots in itertools.combinations(range(len(pairs)), size):
                restored = reference.graph.copy()
                for slot in slots:
                    x, y = pairs[slot]
                    restored[x, y] = restored[y, x] = 1
                if directed_cycle(meek(restored)) is not None:
                    return index, list(slots), restored, reference.graph
    raise AssertionError("no restoration of up to three pairs completes into a cycle")


@pytest.mark.parametrize("ending", ["submit", "budget"])
def test_a_restoration_heuresis_rejects_is_rescued_with_its_adjacencies(ending: str) -> None:
    index, slots, restored, pc_graph = _colliding_restore()
    dag = make_instance("wild", "test", index, d=7, n=300).hidden.dag
    expected = adjacency_scores(dag, restored).f1 - adjacency_scores(dag, meek(pc_graph)).f1
    restores = [action("restore", s) for s in slots]
    env = HeuresisRepairEnv(**SMALL, budgets={"turns": len(restores)} if ending == "budget" else None)
    env.reset(seed=0, options={"instance": index})
    reward, info = play(env, restores + [action("submit")])
    assert info["submission_rejected"] == (ending == "submit") and info["budget_exhausted"] == (ending == "budget")
    assert info["accepted"] and info["submission_source"] == "rescued_working_graph"
    submitted, completed = np.asarray(info["submitted_graph"]), np.asarray(info["completed_graph"])
    assert np.array_equal(submitted | submitted.T, restored | restored.T)  # the adjacencies, unchanged
    assert directed_cycle(completed) is None and reward == pytest.approx(expected, abs=1e-12)
