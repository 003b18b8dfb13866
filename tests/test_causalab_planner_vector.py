"""The batched CausaLab planner against the single planner env, which plays every step through the lab's tools.

The reference is independent of the batched code: ``gym.make_vec(..., "sync")`` runs ``B`` copies of
:class:`CausaLabPlannerEnv` (the lab's toolbox, records, reactor and scoring); the batched env
reads the world directly. Equal observations, rewards and final scores, step for step and across
autoresets, is the claim of ``causal_gym/envs/causalab/planner_vector.py``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import causal_gym  # noqa: F401  (registers the ids)

PLANNERS = ["CausaLab-planner-3node-v0", "CausaLab-planner-4node-v0", "CausaLab-planner-5node-v0"]


def _batched(env_id: str, num_envs: int, **kwargs) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def _assert_same(ours: dict, reference: dict) -> None:
    assert ours.keys() == reference.keys()
    for key in ours:
        np.testing.assert_array_equal(ours[key], reference[key], err_msg=key)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        (PLANNERS[0], {}),
        (PLANNERS[1], {"reward": "success+edge_f1", "shaping": 0.5}),
        (PLANNERS[2], {"intervention_budget": 2}),  # fewer interventions than properties: estimates go wrong
        (PLANNERS[1], {"hidden": {"count": 1}}),  # the disturbed lab: the estimator is misspecified
    ],
)
def test_batched_planner_equals_single_envs_step_for_step(env_id, kwargs):
    num_envs, rng = 5, np.random.default_rng(1)
    ours, reference = _batched(env_id, num_envs, **kwargs), gym.make_vec(env_id, num_envs, "sync", **kwargs)
    observation, _ = ours.reset(seed=11)
    expected, _ = reference.reset(seed=11)
    finals = 0
    for _ in range(4 * (ours.unwrapped.budget + 1)):  # four episodes each, autoresets included
        _assert_same(observation, expected)
        assert ours.observation_space.contains(observation)
        actions = rng.integers(ours.single_action_space.n, size=num_envs)
        observation, reward, terminated, truncated, info = ours.step(actions)
        expected, reward_ref, terminated_ref, truncated_ref, info_ref = reference.step(actions)
        np.testing.assert_array_equal(reward, reward_ref)
        np.testing.assert_array_equal(terminated, terminated_ref)
        assert not truncated.any() and not truncated_ref.any()
        if "scores" in info:
            finals += 1
            for name, values in info["scores"].items():
                np.testing.assert_allclose(values, info_ref["scores"][name], rtol=0, atol=1e-12, err_msg=name)
    assert finals == 4
    ours.close()
    reference.close()


def test_instances_are_the_single_envs_and_move_on_by_the_batch():
    env_id, num_envs, budget = PLANNERS[1], 3, 3
    ours = _batched(env_id, num_envs)
    single = gym.make(env_id)
    observation, _ = ours.reset(options={"instance": 48})  # 48, 49, then the suite wraps to 0
    for start in (48, 1):
        for b in range(num_envs):
            expected, _ = single.reset(options={"instance": (start + b) % 50})
            _assert_same({k: v[b] for k, v in observation.items()}, expected)
        actions = np.zeros(num_envs, dtype=np.int64)
        for _ in range(budget):
            observation, *_ = ours.step(actions)
        observation, *_ = ours.step(actions)  # the autoreset: the next three instances


def test_train_instances_from_an_index():
    ours = _batched(PLANNERS[0], 2)
    single = gym.make(PLANNERS[0])
    observation, _ = ours.reset(options={"split": "train", "instance": 7})
    for b in range(2):
        expected, _ = single.reset(options={"split": "train", "instance": 7 + b})
        _assert_same({k: v[b] for k, v in observation.items()}, expected)


def test_bad_actions_seeds_and_options_are_clear_errors():
    ours = _batched(PLANNERS[0], 2)
    with pytest.raises(RuntimeError, match="reset"):
        ours.step(np.zeros(2, dtype=np.int64))
    ours.reset(seed=0)
    n = ours.single_action_space.n
    for bad in (np.zeros(3, dtype=np.int64), np.array([0, n]), np.array([0.0, 1.0]), np.array([-1, 0])):
        with pytest.raises(ValueError, match="actions must be"):
            ours.step(bad)
    with pytest.raises(ValueError, match="seed"):
        ours.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError):
        ours.reset(options={"instance": 50})
    with pytest.raises(ValueError):
        _batched(PLANNERS[0], 2, reward="nonsense")


def test_sb3_route_over_the_batch():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from causal_gym.envs.sb3_vec import BatchedSB3VecEnv

    venv = BatchedSB3VecEnv(PLANNERS[1], 4, seed=0)
    single = gym.make(PLANNERS[1])
    observation = venv.reset()
    assert set(observation) == set(single.observation_space.spaces)
    for key, space in venv.observation_space.spaces.items():
        assert observation[key].shape == (4, *space.shape)
    for _ in range(venv.env.unwrapped.budget - 1):
        _, _, done, _ = venv.step(np.zeros(4, dtype=np.int64))
        assert not done.any()
    _, _, done, infos = venv.step(np.zeros(4, dtype=np.int64))
    assert done.all() and all("terminal_observation" in info for info in infos)
    assert set(venv.last_scores) >= {"edge_f1", "success"}
    PPO("MultiInputPolicy", venv, n_steps=8, batch_size=16, n_epochs=1, seed=0).learn(32)
