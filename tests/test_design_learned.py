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
    path_probabilities,
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
    np.testing.assert_allclose(pairs[0, 1, :7], [0.9, 0.1, 0.1, 0.1, 1.0, 0.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(pairs[2, 0, :7], [0.6, 0.2, 0.4, 0.2, abs(r02), 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(pairs[1, 2, :7], [0.5, 0.3, 0.5, 0.3, abs(r02), 0.5, 0.0], atol=1e-6)
    reach = path_probabilities(p[None])[0]  # checked against enumeration in the next test
    np.testing.assert_allclose(pairs[1, 2, 7:], [reach[1, 2], reach[2, 1], min(reach[1, 2], 1 - reach[1, 2])],
                               atol=1e-6)
    assert not pairs[[0, 1, 2], [0, 1, 2]].any()  # no self pairs
    errors = 0.1 + 0.2 + 0.1 + 0.5 + 0.4 + 0.3
    np.testing.assert_allclose(x[0, -GLOBAL_FEATURES:], [0.5, errors / 6], atol=1e-6)
    with pytest.raises(KeyError, match="observe_posterior=True"):
        design_features({k: v for k, v in obs.items() if k != "edge_probs"}, budget=4)


def test_path_probabilities_equal_enumeration_when_paths_share_no_edge():
    import itertools

    # three nodes in a fixed order: the paths 0 -> 2 and 0 -> 1 -> 2 share no edge
    edges = [(0, 1), (0, 2), (1, 2)]
    probs = {(0, 1): 0.7, (0, 2): 0.2, (1, 2): 0.6}
    p = np.zeros((1, 3, 3))
    for edge, value in probs.items():
        p[(0, *edge)] = value
    exact = np.zeros((3, 3))
    for present in itertools.product([0, 1], repeat=3):  # every subgraph with its probability
        weight = np.prod([probs[e] if on else 1 - probs[e] for e, on in zip(edges, present)])
        reach = np.zeros((3, 3), dtype=bool)
        for (i, j), on in zip(edges, present):
            reach[i, j] |= bool(on)
        reach[0, 2] |= reach[0, 1] and reach[1, 2]
        exact += weight * reach
    np.testing.assert_allclose(path_probabilities(p)[0], exact, atol=1e-12)
    assert exact[0, 2] == pytest.approx(1 - 0.8 * (1 - 0.7 * 0.6))
    # with shared edges it stays a probability, at least the direct edge's
    rng = np.random.default_rng(0)
    q = rng.random((5, 6, 6))
    r = path_probabilities(q)
    off = ~np.eye(6, dtype=bool)
    assert ((r >= q * off - 1e-12) & (r <= 1.0)).all() and not r[:, ~off].any()


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
    assert np.allclose(features[:, :-GLOBAL_FEATURES].reshape(3, 4, 4, PAIR_FEATURES)[..., 5:7], 0.0)  # counts


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


def _played(seed: int, prefix: list[np.ndarray]) -> DesignVecEnv:
    venv = DesignVecEnv("InterventionDesign-lg10-v0", 3, seed=seed, **SMALL)
    venv.reset()
    for targets in prefix:
        venv.step_async(targets)
        venv.step_wait()
    return venv


def test_lookahead_gives_what_each_target_would_earn_and_leaves_the_env_as_it_was():
    prefix = [np.array([0, 1, 2]), np.array([3, 3, 0])]
    venv = _played(7, prefix)
    rewards, after = venv.lookahead()
    assert rewards.shape == (3, 4) and after.shape == (3, 4, 16 * PAIR_FEATURES + GLOBAL_FEATURES)
    for k in range(4):  # an independent env replayed to the same state, then target k
        replay = _played(7, prefix)
        replay.step_async(np.full(3, k))
        features, reward, _, _ = replay.step_wait()
        np.testing.assert_allclose(rewards[:, k], reward, rtol=1e-6)
        np.testing.assert_allclose(after[:, k], features, rtol=1e-6)
    assert np.ptp(rewards, axis=1).max() > 1e-3  # targets differ
    alone, none = venv.lookahead(with_features=False)
    np.testing.assert_array_equal(alone, rewards)
    assert none is None
    venv.step_async(np.array([2, 0, 1]))  # the looked-ahead env steps as if nothing had happened
    untouched = _played(7, prefix)
    untouched.step_async(np.array([2, 0, 1]))
    np.testing.assert_array_equal(venv.step_wait()[1], untouched.step_wait()[1])
    with pytest.raises(RuntimeError, match="reset"):
        DesignVecEnv("InterventionDesign-lg10-v0", 2, **SMALL).lookahead()
    held_out = DesignVecEnv("InterventionDesign-lg10-v0", 2, **SMALL)
    held_out.reset(options={"split": "test", "instance": 0})
    with pytest.raises(RuntimeError, match="train stream only"):
        held_out.lookahead()


def test_q_targets_add_the_best_next_value_except_after_the_last_step():
    from causal_gym.envs.design.learned import PairScorer, q_targets

    scorer = PairScorer(8)
    with torch.no_grad():  # constant action values: Q(s, k) = 1.5 for every state and node
        for parameter in scorer.parameters():
            parameter.zero_()
        scorer.score.bias.fill_(1.5)
    rewards = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.0]])
    after = np.zeros((2, 3, 9 * PAIR_FEATURES + GLOBAL_FEATURES), dtype=np.float32)
    last = np.array([False, True])
    np.testing.assert_allclose(q_targets(scorer, rewards, after, last), [[1.6, 1.7, 1.8], [1.0, -1.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(q_targets(scorer, rewards, after, last, gamma=0.5)[0], [0.85, 0.95, 1.05], rtol=1e-6)
    np.testing.assert_array_equal(q_targets(None, rewards, after, last), rewards.astype(np.float32))
    np.testing.assert_array_equal(q_targets(scorer, rewards, None, last, gamma=0.0), rewards.astype(np.float32))
    with pytest.raises(ValueError, match="needs next_features"):  # an AttributeError on None before
        q_targets(scorer, rewards, None, last)


def test_fit_scorer_learns_a_per_node_function_of_the_pairs():
    from causal_gym.envs.design.learned import PairScorer, fit_scorer

    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    x = rng.random((1500, 16 * PAIR_FEATURES + GLOBAL_FEATURES)).astype(np.float32)
    pairs = x[:, :-GLOBAL_FEATURES].reshape(-1, 4, 4, PAIR_FEATURES)
    off = ~np.eye(4, dtype=bool)
    y = (pairs[..., 2] * off).sum(axis=2) * 2.0  # node k's target: twice the sum of its pairs' third feature
    scorer = PairScorer(32)
    loss = fit_scorer(scorer, x, y, epochs=40, lr=3e-3)
    assert loss < 0.05 * y.var()
    with torch.no_grad():
        chosen = scorer.forward_actor(torch.as_tensor(x)).argmax(dim=1).numpy()
    assert (chosen == y.argmax(axis=1)).mean() > 0.8
