"""The learned designer's parts: posterior features by hand, the policy's equivariance, the SB3 adapter's episodes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402

from causal_gym.envs.design.batch import encode_action  # noqa: E402
from causal_gym.envs.design.learned import (  # noqa: E402
    GLOBAL_FEATURES,
    PAIR_FEATURES,
    DesignVecEnv,
    PairScorerPolicy,
    design_features,
)

SMALL = {"d": 4, "expected_degree": 2.0, "n_observational": 20, "budget": 5}


def test_design_features_by_hand():
    p = np.array([[0.0, 0.9, 0.2], [0.1, 0.0, 0.5], [0.6, 0.3, 0.0]])
    data = np.zeros((5, 3), dtype=np.float32)
    data[:4] = [[1, 2, 0], [2, 4, 1], [3, 6, 0], [4, 8, 1]]  # x1 = 2 x0; row 4 not filled yet
    filled = np.array([1, 1, 1, 1, 0], dtype=np.int8)
    mask = np.zeros((5, 3), dtype=np.int8)
    mask[2, 1] = mask[3, 1] = 1  # node 1 intervened twice
    obs = {"edge_probs": p[None], "intervention_mask": mask[None], "budget_left": np.array([[2.0]]),
           "data": data[None], "filled": filled[None]}
    x = design_features(obs, budget=4)
    assert x.shape == (1, 9 * PAIR_FEATURES + GLOBAL_FEATURES)
    pairs = x[0, :-GLOBAL_FEATURES].reshape(3, 3, PAIR_FEATURES)
    r02 = np.corrcoef([1, 2, 3, 4], [0, 1, 0, 1])[0, 1]  # ~0.447
    # pair (0, 1): p01, p10, their errors, |corr(x0, x1)| = 1, count of 0 and of 1
    np.testing.assert_allclose(pairs[0, 1], [0.9, 0.1, 0.1, 0.1, 1.0, 0.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(pairs[2, 0], [0.6, 0.2, 0.4, 0.2, abs(r02), 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(pairs[1, 2], [0.5, 0.3, 0.5, 0.3, abs(r02), 0.5, 0.0], atol=1e-6)
    assert not pairs[[0, 1, 2], [0, 1, 2]].any()  # no self pairs
    errors = 0.1 + 0.2 + 0.1 + 0.5 + 0.4 + 0.3
    np.testing.assert_allclose(x[0, -GLOBAL_FEATURES:], [0.5, errors / 6], atol=1e-6)
    with pytest.raises(KeyError, match="observe_posterior=True"):
        design_features({k: v for k, v in obs.items() if k != "edge_probs"}, budget=4)


def _policy(d: int = 4) -> PPO:
    venv = DesignVecEnv("InterventionDesign-lg10-v0", 2, seed=0, **{**SMALL, "d": d})
    return PPO(PairScorerPolicy, venv, n_steps=5, batch_size=10, n_epochs=1, seed=0, policy_kwargs={"hidden": 16})


def test_relabelling_nodes_relabels_the_choice_and_keeps_the_value():
    policy = _policy().policy
    with torch.no_grad():  # random weights away from the near-uniform start
        for parameter in policy.parameters():
            parameter.normal_()
    rng = np.random.default_rng(0)
    x = rng.random((3, 16 * PAIR_FEATURES + GLOBAL_FEATURES)).astype(np.float32)
    perm = np.array([2, 0, 3, 1])
    pairs = x[:, :-GLOBAL_FEATURES].reshape(3, 4, 4, PAIR_FEATURES)
    permuted = np.concatenate([pairs[:, perm][:, :, perm].reshape(3, -1), x[:, -GLOBAL_FEATURES:]], axis=1)
    with torch.no_grad():
        logits = policy.get_distribution(torch.as_tensor(x)).distribution.logits.numpy()
        logits_p = policy.get_distribution(torch.as_tensor(permuted)).distribution.logits.numpy()
        value, value_p = policy.predict_values(torch.as_tensor(x)), policy.predict_values(torch.as_tensor(permuted))
    np.testing.assert_allclose(logits_p, logits[:, perm], atol=1e-5)
    np.testing.assert_allclose(value_p.numpy(), value.numpy(), atol=1e-5)
    assert np.ptp(logits, axis=1).min() > 1e-3  # not trivially equal scores
    with pytest.raises(ValueError, match="Discrete"):
        PairScorerPolicy(gym.spaces.Box(0, 1, (3,)), gym.spaces.Box(0, 1, (2,)), lambda _: 1e-3)


def test_adapter_plays_the_vector_envs_episodes_and_resets_with_the_done_flag():
    venv = DesignVecEnv("InterventionDesign-lg10-v0", 3, seed=5, **SMALL)
    direct = gym.make_vec("InterventionDesign-lg10-v0", num_envs=3, vectorization_mode="vector_entry_point",
                          observe_posterior=True, **SMALL)
    features = venv.reset()
    obs, _ = direct.reset(seed=5)
    np.testing.assert_array_equal(features, design_features(obs, SMALL["budget"]))
    returns = np.zeros(3)
    for step in range(SMALL["budget"]):
        targets = np.array([step % 4, (step + 1) % 4, 3])
        venv.step_async(targets)
        features, rewards, done, infos = venv.step_wait()
        obs, direct_rewards, terminated, _, info = direct.step(
            np.stack([encode_action(int(k), direct.unwrapped.value_bound, 4, direct.unwrapped.value_bound)
                      for k in targets]))
        np.testing.assert_allclose(rewards, direct_rewards, rtol=1e-6)
        returns += rewards
    assert done.all() and terminated.all()
    np.testing.assert_allclose(returns, info["scores"]["gain"], rtol=1e-5)
    np.testing.assert_array_equal(venv.last_scores["gain"], info["scores"]["gain"])
    np.testing.assert_array_equal(infos[0]["terminal_observation"], design_features(obs, SMALL["budget"])[0])
    # the observation returned with done is a new episode's: full budget, no intervention yet
    assert np.allclose(features[:, -GLOBAL_FEATURES], 1.0)
    assert np.allclose(features[:, :-GLOBAL_FEATURES].reshape(3, 4, 4, PAIR_FEATURES)[..., 5:], 0.0)


def test_ppo_learns_saves_and_loads_the_policy(tmp_path):
    model = _policy()
    model.learn(40)
    model.save(tmp_path / "model.zip")
    loaded = PPO.load(tmp_path / "model.zip")
    assert isinstance(loaded.policy, PairScorerPolicy)
    x = np.random.default_rng(1).random((4, 16 * PAIR_FEATURES + GLOBAL_FEATURES)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(x, deterministic=True)[0], loaded.predict(x, deterministic=True)[0])
    # one network for any number of nodes: the same weights score 6 nodes
    wider = np.random.default_rng(2).random((2, 36 * PAIR_FEATURES + GLOBAL_FEATURES)).astype(np.float32)
    with torch.no_grad():
        assert loaded.policy.get_distribution(torch.as_tensor(wider)).distribution.logits.shape == (2, 6)
