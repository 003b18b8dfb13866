"""The cooperative multi-scientist CausaLab (PettingZoo Parallel and AEC)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402
from pettingzoo.utils.conversions import parallel_to_aec_wrapper  # noqa: E402
from pettingzoo.utils.wrappers import OrderEnforcingWrapper  # noqa: E402

from causal_gym.envs.causalab import multi_agent  # noqa: E402
from causal_gym.envs.causalab.env import COLUMNS  # noqa: E402
from causal_gym.envs.causalab.suites import train_episode  # noqa: E402
from causal_gym.envs.causalab.world import PROPERTIES  # noqa: E402

POOL = list(PROPERTIES)
WAIT = np.array([0, 0, 0, 0, 0])


def intervene(prop: str, setpoint_index: int = 3) -> np.ndarray:
    return np.array([1, POOL.index(prop), setpoint_index, 0, 0])


def submit(frequency: int) -> np.ndarray:
    return np.array([3, 0, 0, frequency // 100, frequency % 100])


ENTER = np.array([2, 0, 0, 0, 0])


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def test_parallel_api() -> None:
    parallel_api_test(multi_agent.parallel_env(n_agents=3, setting="5node"), num_cycles=200)


def test_aec_api() -> None:
    api_test(multi_agent.env(), num_cycles=100)


def test_seeded_runs_repeat() -> None:
    parallel_seed_test(lambda: multi_agent.parallel_env())
    seed_test(lambda: multi_agent.env())


def test_factories_follow_pettingzoo_conventions() -> None:
    raw = multi_agent.raw_env(setting="3node")
    assert isinstance(raw, parallel_to_aec_wrapper)
    wrapped = multi_agent.env(setting="3node")
    assert isinstance(wrapped, OrderEnforcingWrapper) and isinstance(wrapped.env, parallel_to_aec_wrapper)
    par = multi_agent.parallel_env(n_agents=4)
    assert par.possible_agents == [f"scientist_{i}" for i in range(4)]
    first = par.observation_space("scientist_0")
    assert all(par.observation_space(a) == first for a in par.possible_agents)
    assert len({tuple(par.action_space(a).nvec) for a in par.possible_agents}) == 1


@pytest.mark.parametrize("n_agents", [1, 2, 3, 4])
def test_control_is_a_seeded_partition_of_the_episode_properties(n_agents: int) -> None:
    env = multi_agent.parallel_env(setting="6node", n_agents=n_agents)
    for seed in range(3):
        _, infos = env.reset(seed=seed)
        index = infos["scientist_0"]["instance"]["index"]
        truth = set(train_episode("6node", index).scm.controllable)
        owned = [set(env.controlled(a)) for a in env.possible_agents]
        assert set().union(*owned) == truth
        assert sum(len(s) for s in owned) == len(truth)
        assert max(map(len, owned)) - min(map(len, owned)) <= 1
        for agent, mine in zip(env.possible_agents, owned):
            mask = infos[agent]["action_mask"][1]
            assert {POOL[i] for i in np.flatnonzero(mask)} == mine
        again = multi_agent.parallel_env(setting="6node", n_agents=n_agents)
        again.reset(seed=seed)
        assert [again.controlled(a) for a in again.possible_agents] == [env.controlled(a) for a in env.possible_agents]


def test_intervention_on_a_property_not_controlled_is_rejected() -> None:
    env = multi_agent.parallel_env(setting="4node", n_agents=2)
    obs, infos = env.reset(seed=1)
    mine, theirs = env.controlled("scientist_0"), env.controlled("scientist_1")
    before = obs["scientist_0"].copy()
    obs, _, _, _, infos = env.step({"scientist_0": intervene(theirs[0]), "scientist_1": WAIT})
    assert infos["scientist_0"]["accepted"] is False
    assert "does not control" in infos["scientist_0"]["result"]
    assert infos["scientist_0"]["budgets_remaining"]["interventions"] == 12
    assert len(env.lab.record()) == 0
    layout = env.observation_layout
    assert np.array_equal(obs["scientist_0"][layout["manipulator"]], before[layout["manipulator"]])
    assert obs["scientist_0"][layout["last_accepted"]][0] == 0
    obs, _, _, _, infos = env.step({"scientist_0": intervene(mine[0], 3), "scientist_1": WAIT})
    assert infos["scientist_0"]["accepted"] is True
    assert infos["scientist_0"]["budgets_remaining"]["interventions"] == 11
    assert obs["scientist_1"][layout["manipulator"]][COLUMNS.index(mine[0])] == pytest.approx(env.setpoints[3])


def test_shared_budget_accounting_matches_a_hand_count() -> None:
    env = multi_agent.parallel_env(setting="4node", n_agents=2, intervention_budget=3)
    _, infos = env.reset(seed=7)
    a, b = env.controlled("scientist_0"), env.controlled("scientist_1")
    steps = [
        ({"scientist_0": intervene(a[0]), "scientist_1": intervene(b[0])}, (True, True), 1, 2),
        ({"scientist_0": intervene(b[0]), "scientist_1": WAIT}, (False, True), 1, 2),
        ({"scientist_0": intervene(a[-1]), "scientist_1": intervene(b[0])}, (True, False), 0, 4),
    ]
    for actions, accepted, interventions_left, lab_calls in steps:
        _, _, _, _, infos = env.step(actions)
        assert (infos["scientist_0"]["accepted"], infos["scientist_1"]["accepted"]) == accepted
        assert infos["scientist_1"]["budgets_remaining"]["interventions"] == interventions_left
        assert len(env.lab.record()) == lab_calls
        assert infos["scientist_1"]["budgets_remaining"]["steps"] == env.lab.step_limit - lab_calls
    assert infos["scientist_0"]["action_mask"][0].tolist() == [1, 0, 1, 0]
    _, _, _, _, infos = env.step({"scientist_0": ENTER, "scientist_1": ENTER})
    assert infos["scientist_1"]["result"].startswith("merged")
    assert infos["scientist_0"]["lab_phase"] == 1 and len(env.lab.record()) == 5
    assert infos["scientist_0"]["action_mask"][0].tolist() == [1, 0, 0, 1]
    _, rewards, terminations, _, infos = env.step({"scientist_0": submit(0), "scientist_1": submit(5)})
    assert infos["scientist_1"]["result"].startswith("superseded")
    assert infos["scientist_0"]["budgets_remaining"]["submissions"] == 1
    calls = list(env.lab.record())
    assert [c.tool for c in calls] == ["intervene"] * 4 + ["enter_reactor", "submit"]
    assert calls[-1].data["frequency"] == 0.0
    assert not any(terminations.values()) and set(rewards.values()) == {0.0}


def test_a_correct_prediction_rewards_the_whole_team() -> None:
    env = multi_agent.parallel_env(setting="3node", n_agents=2)
    _, infos = env.reset(seed=3)
    target = train_episode("3node", infos["scientist_0"]["instance"]["index"]).target
    env.step({"scientist_0": WAIT, "scientist_1": ENTER})
    _, rewards, terminations, truncations, infos = env.step(
        {"scientist_0": WAIT, "scientist_1": submit(int(round(target)))}
    )
    assert rewards == {"scientist_0": 1.0, "scientist_1": 1.0}
    assert all(terminations.values()) and not any(truncations.values())
    assert env.agents == []
    assert infos["scientist_0"]["lab"]["success"] is True and infos["scientist_0"]["lab"]["target"] == target


def test_max_cycles_truncates_everyone() -> None:
    env = multi_agent.parallel_env(setting="3node", n_agents=2, max_cycles=3)
    env.reset(seed=0)
    for _ in range(2):
        _, _, terminations, truncations, _ = env.step({"scientist_0": WAIT, "scientist_1": WAIT})
        assert not any(truncations.values())
    _, rewards, terminations, truncations, infos = env.step({"scientist_0": WAIT})
    assert all(truncations.values()) and not any(terminations.values())
    assert infos["scientist_1"]["lab"]["end_reason"] == "give_up" and rewards["scientist_1"] == 0.0
    with pytest.raises(RuntimeError):
        env.step({})


def test_bad_input() -> None:
    env = multi_agent.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not playing"):
        env.step({"scientist_9": WAIT})
    _, _, _, _, infos = env.step({"scientist_0": np.array([1, 2]), "scientist_1": "intervene"})
    assert infos["scientist_0"]["accepted"] is False and infos["scientist_1"]["accepted"] is False
    assert len(env.lab.record()) == 0
    with pytest.raises(ValueError, match="n_agents"):
        multi_agent.parallel_env(n_agents=9)


def test_supersuit_shared_policy_ppo_trains() -> None:
    ss = pytest.importorskip("supersuit")
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecMonitor

    venv = ss.pettingzoo_env_to_vec_env_v1(multi_agent.parallel_env())
    venv = VecMonitor(ss.concat_vec_envs_v1(venv, 2, num_cpus=0, base_class="stable_baselines3"))
    # no seed= here: SuperSuit's ConcatVecEnv has no seed() for SB3 to call
    model = sb3.PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, device="cpu")
    model.learn(2000)
    assert model.num_timesteps >= 2000
    actions, _ = model.predict(venv.reset(), deterministic=True)
    assert actions.shape == (4, 5)
