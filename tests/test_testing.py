"""The public checker (:mod:`causal_gym.testing`) fails what breaks the contract, naming the check and
why, and passes what keeps it: methods that return weights, ignore the data's size, draw unseeded
numbers, write into the caller's array or exist only in this process; envs that accept any reset
option, ignore their seed or leave a process behind; specs whose flags lie or that are not
registered. (``tests/test_conformance.py`` runs it over every registered id.)"""

from __future__ import annotations

import subprocess
import unittest

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from causal_gym import discovery, testing
from causal_gym.envs import benchmark
from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry, register_benchmark
from causal_gym.testing import check_benchmark, check_env, check_method, parametrize_with_checks

pytestmark = pytest.mark.usefixtures("isolated_cache")


# -- methods --------------------------------------------------------------------------------------


def partial_correlation_skeleton(data, *, mask=None, alpha=0.01):
    from scipy import stats

    n, d = data.shape
    precision = np.linalg.inv(np.corrcoef(data, rowvar=False))
    partial = -precision / np.sqrt(np.outer(np.diag(precision), np.diag(precision)))
    z = np.arctanh(np.clip(partial, -0.999999, 0.999999)) * np.sqrt(max(n - d - 1, 1))
    graph = (2 * stats.norm.sf(np.abs(z)) < alpha).astype(np.int8)
    np.fill_diagonal(graph, 0)
    return graph


def correlations(data, *, mask=None):
    return np.abs(np.corrcoef(data, rowvar=False)) * (1 - np.eye(data.shape[1]))


def always_four(data, *, mask=None):
    return np.zeros((4, 4), dtype=np.int8)


def coin_flips(data, *, mask=None):
    d = data.shape[1]
    return np.triu(np.random.default_rng().integers(0, 2, (d, d)), 1)


def centres_in_place(data, *, mask=None):
    data -= data.mean(axis=0)
    return np.zeros((data.shape[1], data.shape[1]), dtype=np.int8)


def shift_targets(data, *, mask=None):
    """X0 -> Xj for every j whose rows under an intervention on X0 moved: reads the mask."""
    d = data.shape[1]
    graph = np.zeros((d, d), dtype=np.int8)
    if mask is not None and mask[:, 0].any():
        moved = np.abs(data[mask[:, 0]].mean(axis=0) - data[~mask[:, 0]].mean(axis=0)) > 0.5
        graph[0, 1:] = moved[1:]
    return graph


def test_a_partial_correlation_skeleton_passes_every_check():
    outcomes = check_method("test_testing:partial_correlation_skeleton")
    assert outcomes.pop("reads_the_intervention_mask").startswith("skipped: an observational method")
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 4


@pytest.mark.parametrize(("method", "check", "says"), [
    (correlations, "graph_of_the_data", "a weighted matrix"),
    (always_four, "graph_of_the_data", "the data has 2 variables"),
    (coin_flips, "same_graph_for_the_same_data", "different graphs"),
    (centres_in_place, "data_left_unchanged", "work on a copy"),
])
def test_a_method_that_breaks_the_contract_fails_the_check_that_says_so(method, check, says):
    with pytest.raises(AssertionError, match=f"fails {check}: .*{says}"):
        check_method(method)


def test_a_function_without_an_import_path_passes_by_value_with_a_warning():
    def empty(data, *, mask=None):  # a closure: what a script's or notebook's function is to a worker
        return np.zeros((data.shape[1],) * 2, dtype=np.int8)

    with pytest.warns(UserWarning, match="has no import path.*define it in an importable module"):
        assert check_method(empty)["same_graph_in_a_worker_process"] == "passed"


def test_a_name_registered_only_in_this_process_fails_in_a_worker():
    discovery.register("only_in_this_process", partial_correlation_skeleton)
    try:
        with pytest.raises(AssertionError, match="same_graph_in_a_worker_process: a worker process cannot resolve "
                                                 "'only_in_this_process'"):
            check_method("only_in_this_process")
        assert check_method(partial_correlation_skeleton)["same_graph_in_a_worker_process"] == "passed"
    finally:
        discovery.unregister("only_in_this_process")


def test_an_interventional_method_gets_the_mask_in_its_check():
    discovery.register("shift_targets", shift_targets, interventional=True)
    try:
        assert check_method(shift_targets)["reads_the_intervention_mask"] == "passed"
        # the check's data: X0's shift moves its descendants, so a method that reads the mask sees it
        from causal_gym.testing import _chain, _mask

        data, mask = _mask(_chain(4))
        assert discovery.run("shift_targets", data, mask).graph[0].tolist() == [0, 1, 1, 1]
    finally:
        discovery.unregister("shift_targets")


def test_check_method_refuses_what_is_no_method():
    with pytest.raises(ValueError, match="unknown method 'no_such_method'"):
        check_method("no_such_method")


# -- environments ---------------------------------------------------------------------------------


class Coins(gym.Env):
    """Two rows of coin flips: a valid env, broken one way at a time by its subclasses."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, (2,), dtype=np.float64)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if set(options or {}) - {"instance"} or (options or {}).get("instance", 0) < 0:
            raise ValueError(f"bad options {options}")
        return self._draw(), {}

    def _draw(self):
        return self.np_random.integers(0, 2, 2).astype(np.float64)

    def step(self, action):
        return self._draw(), 0.0, True, False, {}

    def render(self):
        return "coins"


class AnyOptions(Coins):
    def reset(self, *, seed=None, options=None):
        gym.Env.reset(self, seed=seed)
        return self._draw(), {}


class SharesState(Coins):
    """Its draws depend on how many were built before it (state shared across instances, as a module-level
    generator would), which one env replayed against itself cannot show."""

    built = 0

    def __init__(self, render_mode=None):
        super().__init__(render_mode)
        SharesState.built += 1
        self.offset = SharesState.built % 2

    def _draw(self):
        return np.abs(self.np_random.integers(0, 2, 2) - self.offset).astype(np.float64)


class LeavesAProcess(Coins):
    started: list[subprocess.Popen] = []

    def __init__(self, render_mode=None):
        super().__init__(render_mode)
        LeavesAProcess.started.append(subprocess.Popen(["sleep", "600"]))  # never stopped by close()


for _name in ("Coins", "AnyOptions", "SharesState", "LeavesAProcess"):
    gym.register(f"TestTesting{_name}-v0", entry_point=f"test_testing:{_name}")


def test_a_valid_env_passes_and_a_check_that_does_not_apply_is_skipped():
    outcomes = check_env("TestTestingCoins-v0")
    assert outcomes["tool_calls_round_trip"].startswith("skipped: TestTestingCoins-v0 is not a tool env")
    assert all(outcome == "passed" for name, outcome in outcomes.items() if name != "tool_calls_round_trip")


@pytest.mark.parametrize(("env_id", "check"), [
    ("TestTestingAnyOptions-v0", "bad_reset_options_refused"),
    ("TestTestingSharesState-v0", "same_seed_same_observations"),
    ("TestTestingLeavesAProcess-v0", "no_child_process_after_close"),
])
def test_an_env_that_breaks_a_rule_fails_that_check(env_id, check, monkeypatch):
    monkeypatch.setattr(testing, "CHILD_GRACE_SECONDS", 1.0)  # the process it leaves sleeps for minutes
    try:
        with pytest.raises(AssertionError, match=f"{env_id} fails {check}"):
            check_env(env_id)
    finally:
        for process in LeavesAProcess.started:
            process.kill()
            process.wait()


def test_a_well_known_env_that_accepts_any_reset_option_fails():
    with pytest.raises(AssertionError, match="CartPole-v1 fails bad_reset_options_refused"):
        check_env("CartPole-v1")


def test_an_env_instance_is_checked_with_fresh_copies_from_its_spec():
    outcomes = check_env(gym.make("Heuresis-lg-v0", d=4, n=100))
    assert outcomes["same_seed_same_observations"] == "passed" and outcomes["tool_calls_round_trip"] == "passed"


# -- benchmarks -----------------------------------------------------------------------------------


class SeededCoinsAgent:
    def __init__(self, seed=0):
        self.seed = seed

    def reset(self, task):
        pass

    def act(self, observation, info):
        return 0


def _spec(name: str, takes_seed: bool) -> BenchmarkSpec:
    return BenchmarkSpec(name=name, title=name, envs=(EnvEntry(f"{name.title()}-v0", "test_testing:Coins", "coins"),),
                         agents={f"{name}-agent": AgentEntry("test_testing:SeededCoinsAgent", "zero",
                                                             takes_seed=takes_seed)})


@pytest.fixture
def registrations_undone(monkeypatch: pytest.MonkeyPatch):
    """Benchmarks and ids a test registers are gone after it: later tests in the worker (the README's
    count of ids, the conformance kit over every benchmark) see only the project's own."""
    monkeypatch.setattr(benchmark, "_REGISTERED", dict(benchmark._REGISTERED))
    before = set(gym.registry)
    yield
    for env_id in set(gym.registry) - before:
        del gym.registry[env_id]


def test_a_spec_must_be_registered_and_its_flags_true(registrations_undone):
    honest, lying = _spec("coinshonest", True), _spec("coinslying", False)
    with pytest.raises(AssertionError, match="benchmark 'coinshonest' is not registered"):
        check_benchmark(honest)
    register_benchmark(honest)
    register_benchmark(lying)
    outcomes = check_benchmark(honest)
    assert outcomes["coinshonest/spec_registered_and_complete"] == "passed"
    assert outcomes["Coinshonest-v0/gymnasium_checker"] == "passed"
    with pytest.raises(AssertionError, match="agent 'coinslying-agent': takes_seed=False but its factory takes seed="):
        check_benchmark(lying)


def test_parametrize_with_checks_makes_one_named_test_per_target_and_check():
    mark = parametrize_with_checks(envs=["TestTestingCoins-v0"], methods=["pc"])
    names, params = mark.args
    assert names == ("target", "check")
    ids = [param.id for param in params]
    assert ids[:2] == ["TestTestingCoins-v0-gymnasium_checker", "TestTestingCoins-v0-sb3_checker"]
    assert "pc-same_graph_in_a_worker_process" in ids and len(ids) == len(set(ids)) == 7 + 5
    target, check = params[-1].values
    assert target == "pc" and callable(check)


def test_a_skip_is_unittest_s_so_pytest_reports_it_as_a_skip():
    from causal_gym.testing import method_checks

    interventional = next(c for c in method_checks("pc") if c.__name__ == "reads_the_intervention_mask")
    with pytest.raises(unittest.SkipTest):
        interventional("pc")
