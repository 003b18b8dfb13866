"""The intervention-design benchmark: its SCM streams, the env's play and scoring, the batched env, the baselines.

The posterior itself is tested in tests/test_graph_posterior.py (DP vs enumeration of all DAGs,
BGe vs the textbook formula and by hand, interventional scoring); here the env's use of it is
checked against a recomputation from the observation alone.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.envs.design.baselines import (
    GreedyDesigner,
    ObservationalDesigner,
    RandomDesigner,
    RoundRobinDesigner,
)
from causal_gym.envs.design.batch import decode_actions, encode_action, graph_scores
from causal_gym.envs.design.env import InterventionDesignEnv
from causal_gym.envs.design.world import (
    DesignSetting,
    instance_entropy,
    make_batch,
    make_instance,
    sample_rows,
    train_entropy,
)
from causal_gym.harness.agent import task_spec
from causal_gym.harness.rollout import rollout
from causal_gym.metrics import directed_edge_scores, shd
from causal_gym.seal import Seal
from causal_gym.stats.graph_posterior import (
    edge_posterior,
    expected_correct_entries,
    local_scores,
)
from test_graph_posterior import enumerate_dags, log_weights  # the reference: every DAG enumerated

SMALL = {"d": 4, "expected_degree": 2.0, "n_observational": 20, "budget": 5}


def _observed(observation):
    filled = observation["filled"].astype(bool)
    return observation["data"][filled].astype(np.float64), observation["intervention_mask"][filled].astype(bool)


# -- the hidden world ---------------------------------------------------------------------------


def test_er_graphs_have_the_erdos_renyi_law():
    d, degree, size = 5, 2.0, 20_000
    batch = make_batch(DesignSetting(d=d, expected_degree=degree, n_observational=0), (1, 2, 3), size)
    a = batch.adjacency.astype(float)
    p = degree / (d - 1)
    off = ~np.eye(d, dtype=bool)
    # each ordered pair is an edge when it is forward in the uniform order (1/2) and drawn (p)
    freq = a.mean(axis=0)[off]
    assert np.abs(freq - p / 2).max() < 4 * np.sqrt(p / 2 * (1 - p / 2) / size)
    assert (a * a.transpose(0, 2, 1)).sum() == 0
    position = np.argsort(batch.order, axis=1)
    b, i, j = np.nonzero(batch.adjacency)
    assert (position[b, i] < position[b, j]).all()  # the order is causal
    # weights: N(0, 1/|pa(j)|) on the edges, zero elsewhere
    indegree = a.sum(axis=1)
    w = batch.weights
    assert (w[a == 0] == 0).all()
    scaled = (w * np.sqrt(np.maximum(indegree, 1))[:, None, :])[a == 1]
    assert abs(scaled.var() - 1.0) < 0.03


def test_rows_solve_the_structural_equations_with_the_target_cut():
    rng = np.random.default_rng(0)
    setting = DesignSetting(d=6, expected_degree=3.0, n_observational=0)
    batch = make_batch(setting, (5,), 7)
    eps = rng.normal(size=(7, 3, 6))
    targets = np.array([-1, 0, 1, 2, 3, 4, 5])
    values = rng.normal(size=7) * 3
    x = sample_rows(batch.weights, batch.order, eps, targets, values)
    for b in range(7):
        w = batch.weights[b].copy()
        e = eps[b].copy()
        if targets[b] >= 0:
            w[:, targets[b]] = 0.0
            e[:, targets[b]] = values[b]
        reference = np.linalg.solve((np.eye(6) - w).T, e.T).T  # x = x W + e
        np.testing.assert_allclose(x[b], reference, atol=1e-10)


def test_streams_are_deterministic_disjoint_and_paired():
    setting = DesignSetting()
    one = make_instance(setting, instance_entropy(setting, "test", 3))
    again = make_instance(setting, instance_entropy(setting, "test", 3))
    assert np.array_equal(one.observational, again.observational)
    observational = {split: make_instance(setting, instance_entropy(setting, split, 3)).observational
                      for split in ("train", "dev", "test")}
    assert not np.array_equal(observational["dev"], observational["test"])
    assert not np.array_equal(observational["train"], observational["test"])
    train_batch = make_batch(setting, train_entropy(setting, 0), 4)
    assert not any(np.array_equal(train_batch.observational[k], observational["test"]) for k in range(4))
    # settings that differ only in the noise share graphs and weights
    gumbel = DesignSetting(noise="gumbel")
    other = make_instance(gumbel, instance_entropy(gumbel, "test", 3))
    assert np.array_equal(other.weights, one.weights) and not np.array_equal(other.observational, one.observational)
    sealed = make_instance(setting, instance_entropy(setting, "test", 3, Seal("a secret for the design tests")))
    assert not np.array_equal(sealed.adjacency, one.adjacency) or not np.array_equal(sealed.weights, one.weights)


def test_a_parent_cap_keeps_the_parents_first_in_the_causal_order():
    free = make_batch(DesignSetting(d=8, expected_degree=5.0, n_observational=0), (7,), 300)
    capped = make_batch(DesignSetting(d=8, expected_degree=5.0, n_observational=0, max_parents=2), (7,), 300)
    assert np.array_equal(free.order, capped.order)  # the same draws, edges cut
    assert capped.adjacency.sum(axis=1).max() == 2 and free.adjacency.sum(axis=1).max() > 2
    for a, cut, order in zip(free.adjacency, capped.adjacency, free.order):
        for j in range(8):
            parents = [i for i in order if a[i, j]]  # in causal order
            assert np.flatnonzero(cut[:, j]).tolist() == sorted(parents[:2])
    indegree = np.maximum(capped.adjacency.sum(axis=1), 1)
    assert (capped.weights[capped.adjacency == 0] == 0).all()
    scaled = (capped.weights * np.sqrt(indegree)[:, None, :])[capped.adjacency == 1]  # N(0, 1/|pa|) after the cut
    assert abs(scaled.var() - 1.0) < 0.1


def test_mixed_noise_draws_a_family_per_instance_and_the_truth_names_it():
    from causal_gym.envs.design.world import NOISES

    setting = DesignSetting(d=4, expected_degree=2.0, n_observational=200, noise="mixed")
    batch = make_batch(setting, (9,), 40)
    assert set(batch.noise_family.tolist()) == set(range(4))
    uniform = batch.noise_family == NOISES.index("uniform")
    assert np.abs(batch.step_noise[uniform]).max() <= np.sqrt(3.0) + 1e-12  # unit-variance uniform is bounded
    assert np.abs(batch.step_noise[~uniform]).max() > np.sqrt(3.0)
    gumbel = batch.noise_family == NOISES.index("gumbel")
    skew = lambda z: ((z - z.mean()) ** 3).mean() / z.std() ** 3  # noqa: E731
    assert skew(batch.step_noise[gumbel].ravel()) > 0.5 and abs(skew(batch.step_noise[uniform].ravel())) < 0.3
    env = InterventionDesignEnv(d=4, expected_degree=2.0, n_observational=20, budget=1, noise="mixed")
    env.reset(options={"instance": 0})
    info = env.step(encode_action(0, 1.0, 4, env.value_bound))[4]
    assert info["truth"]["noise"] in NOISES


def test_above_sixteen_nodes_the_env_needs_a_cap_and_plays_with_it():
    with pytest.raises(ValueError, match="max_parents"):
        DesignSetting(d=17, expected_degree=2.0)
    with pytest.raises(ValueError, match="max_parents"):
        DesignSetting(d=17, expected_degree=2.0, max_parents=5)
    env = InterventionDesignEnv(d=17, expected_degree=2.0, n_observational=30, budget=1, max_parents=2)
    assert "-K2" in env.setting.name and env.task_condition()["max_parents"] == 2
    env.reset(options={"instance": 0})
    _, reward, terminated, _, info = env.step(encode_action(3, 5.0, 17, env.value_bound))
    assert terminated and np.isfinite(reward) and info["truth"]["adjacency"].sum(axis=0).max() <= 2
    assert info["trajectory"]["map_f1"][-1] >= 0.0 and np.isfinite(info["scores"]["entropy"])


# -- the env ------------------------------------------------------------------------------------


def test_same_seed_same_trajectory():
    def play(seed):
        env = InterventionDesignEnv(**SMALL)
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        out = [obs["data"].copy()]
        for _ in range(SMALL["budget"]):
            obs, reward, *_ = env.step(env.action_space.sample())
            out += [obs["data"].copy(), np.array([reward])]
        return out

    first, second, third = play(4), play(4), play(5)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not np.array_equal(first[0], third[0])


def test_rewards_are_the_gain_of_the_posterior_of_the_observed_data():
    env = InterventionDesignEnv(**SMALL)
    obs, _ = env.reset(options={"instance": 2})

    def correct(observation):
        data, mask = _observed(observation)
        return expected_correct_entries(edge_posterior(local_scores(data, mask)).edge_probs)

    before = correct(obs)
    total = 0.0
    for target in (0, 1, None, 3, 2):
        obs, reward, terminated, _, info = env.step(encode_action(target, 2.0, 4, env.value_bound))
        after = correct(obs)
        # the env works in float64, the observation is float32
        assert reward == pytest.approx(after - before, abs=1e-3)
        total += reward
        before = after
    assert terminated
    assert info["scores"]["gain"] == pytest.approx(total, abs=1e-9)
    assert info["scores"]["expected_correct"] == pytest.approx(after, abs=1e-3)


def brute_force_posterior(observation):
    """Edge marginals, (order, DAG) entropy, expected SHD and best DAG by enumerating every DAG on the rows shown."""
    data, mask = _observed(observation)
    scores = local_scores(data, mask)  # BGe, checked against the textbook formula in test_graph_posterior
    dags, _, extensions = enumerate_dags(scores.shape[0])
    log_w = log_weights(scores)  # log(#linear extensions x prod_j rho_j exp(score_j))
    p = np.exp(log_w - np.logaddexp.reduce(log_w))
    probs = np.einsum("g,gij->ij", p, dags)
    entropy = -(p * np.log(p / extensions)).sum()  # each of G's orders carries p(G) / L(G)
    guess = (probs > 0.5).astype(np.int8)
    expected = sum(w * shd(g, guess) for w, g in zip(p, dags))
    best = dags[np.argmax(log_w - np.log(extensions))]  # the mode of the joint (order, DAG) posterior
    return probs, entropy, expected, best


@pytest.mark.parametrize("d", [3, 4])
def test_every_reward_and_metric_equals_enumeration_of_all_dags(d):
    setting = {**SMALL, "d": d, "expected_degree": 1.5, "budget": 4}
    designs = [(0, 3.0), (None, 0.0), (d - 1, -4.0), (1, 2.0)]
    per_mode = {}
    for reward in ("confidence", "truth", "information_gain"):
        env = InterventionDesignEnv(**setting, reward=reward)
        obs, _ = env.reset(options={"instance": 5 + d})
        posts, rewards, infos = [brute_force_posterior(obs)], [], []
        for target, value in designs:
            obs, r, terminated, _, info = env.step(encode_action(target, value, d, env.value_bound))
            posts.append(brute_force_posterior(obs))
            rewards.append(r)
            infos.append(info)
        assert terminated
        truth = info["truth"]["adjacency"]
        off = ~np.eye(d, dtype=bool)
        value = {"confidence": [np.maximum(p, 1 - p)[off].sum() for p, *_ in posts],
                 "truth": [np.where(truth == 1, p, 1 - p)[off].sum() for p, *_ in posts],
                 "information_gain": [-h for _, h, *_ in posts]}[reward]
        # rows are shown in float32, the env works in float64
        np.testing.assert_allclose(rewards, np.diff(value), atol=2e-3)
        for info, (p, h, e, _) in zip(infos, posts[1:]):
            assert info["metrics"]["confidence"] == pytest.approx(np.maximum(p, 1 - p)[off].sum(), abs=2e-3)
            assert info["metrics"]["entropy"] == pytest.approx(h, abs=2e-3)
            assert info["metrics"]["expected_shd"] == pytest.approx(e, abs=2e-3)
        path = info["trajectory"]
        np.testing.assert_allclose(path["truth"], [np.where(truth == 1, p, 1 - p)[off].sum() for p, *_ in posts],
                                   atol=2e-3)
        np.testing.assert_allclose(path["map_f1"], [directed_edge_scores(truth, b).f1 for *_, b in posts])
        np.testing.assert_allclose(path["map_shd"], [shd(truth, b) for *_, b in posts])
        scores = info["scores"]
        assert scores["truth_gain"] == pytest.approx(path["truth"][-1] - path["truth"][0], abs=1e-12)
        assert scores["information_gain"] == pytest.approx(path["entropy"][0] - path["entropy"][-1], abs=1e-12)
        per_mode[reward] = path
    for name in per_mode["confidence"]:  # the reward mode changes what is paid, not the episode
        np.testing.assert_array_equal(per_mode["confidence"][name], per_mode["truth"][name])


def test_batched_graph_scores_equal_the_metrics_one_graph_at_a_time():
    rng = np.random.default_rng(3)
    truth = np.triu(rng.random((50, 5, 5)) < 0.4, 1).astype(np.int8)
    guess = (rng.random((50, 5, 5)) < 0.3).astype(np.int8) * (1 - np.eye(5, dtype=np.int8))
    guess[0], truth[1], guess[1] = 0, 0, 0  # empty guesses, an empty truth
    f1, distance = graph_scores(truth, guess)
    np.testing.assert_allclose(f1, [directed_edge_scores(t, g).f1 for t, g in zip(truth, guess)])
    np.testing.assert_array_equal(distance, [shd(t, g) for t, g in zip(truth, guess)])


@pytest.mark.parametrize("sparse", [False, True])
def test_observed_posterior_is_the_posterior_of_the_rows_shown(sparse):
    from gymnasium.utils.env_checker import check_env

    env = InterventionDesignEnv(**SMALL, sparse=sparse, observe_posterior=True)
    check_env(env)
    obs, _ = env.reset(options={"instance": 3})
    plain = InterventionDesignEnv(**SMALL, sparse=sparse)
    plain_obs, _ = plain.reset(options={"instance": 3})
    for target in (None, 0, 3, 1, 1):
        data, mask = _observed(obs)
        expected = edge_posterior(local_scores(data, mask)).edge_probs  # recomputed from what is shown
        assert obs["edge_probs"].shape == (4, 4)
        np.testing.assert_allclose(obs["edge_probs"], expected, atol=1e-4)
        assert np.array_equal(plain_obs["data"], obs["data"])  # the option changes nothing else
        action = encode_action(target, 3.0, 4, env.value_bound)
        obs, reward_seen, *_ = env.step(action)
        plain_obs, plain_reward, *_ = plain.step(action)
        assert reward_seen == plain_reward
    with pytest.raises(ValueError, match="observe_posterior needs a posterior"):
        InterventionDesignEnv(**SMALL, reward="none", observe_posterior=True)


def test_interventions_set_the_target_and_mark_it():
    env = InterventionDesignEnv(**SMALL)
    obs, _ = env.reset(options={"instance": 0})
    obs, *_ = env.step(encode_action(2, -3.0, 4, env.value_bound))
    row = SMALL["n_observational"]
    assert obs["filled"][row] == 1 and obs["filled"][row + 1] == 0
    assert obs["data"][row, 2] == pytest.approx(-3.0)
    assert obs["intervention_mask"][row].tolist() == [0, 0, 1, 0]
    assert obs["intervention_mask"][:row].sum() == 0
    obs, *_ = env.step(encode_action(None, 0.0, 4, env.value_bound))
    assert obs["intervention_mask"][row + 1].sum() == 0 and obs["filled"][row + 1] == 1


@pytest.mark.parametrize("reward", ["confidence", "truth", "information_gain"])
def test_sparse_pays_the_dense_return_at_the_end(reward):
    returns, infos = {}, {}
    for sparse in (False, True):
        env = InterventionDesignEnv(**SMALL, reward=reward, sparse=sparse)
        env.reset(options={"instance": 1})
        steps = [env.step(encode_action(k % 4, 4.0, 4, env.value_bound)) for k in range(SMALL["budget"])]
        returns[sparse], infos[sparse] = [step[1] for step in steps], [step[4] for step in steps]
    assert all(r == 0.0 for r in returns[True][:-1])
    assert returns[True][-1] == pytest.approx(sum(returns[False]), abs=1e-9)
    # sparse computes the posterior at the start and the end only: no metrics between, NaN in the trajectory
    assert all("metrics" not in info for info in infos[True][:-1]) and "metrics" in infos[True][-1]
    path, dense_path = infos[True][-1]["trajectory"], infos[False][-1]["trajectory"]
    assert all(np.isnan(path["entropy"][1:-1]))
    for name in dense_path:
        assert path[name][0] == pytest.approx(dense_path[name][0]) and path[name][-1] == pytest.approx(dense_path[name][-1])


def test_reward_modes_and_their_errors():
    assert InterventionDesignEnv(**SMALL, reward="dense").reward_mode == "confidence"  # the old name
    with pytest.raises(ValueError, match="sparse=True"):
        InterventionDesignEnv(**SMALL, reward="sparse")
    with pytest.raises(ValueError, match="reward"):
        InterventionDesignEnv(**SMALL, reward="shd")
    with pytest.raises(ValueError, match="reward='none' has none"):
        InterventionDesignEnv(**SMALL, reward="none", sparse=True)
    with pytest.raises(ValueError, match="sparse must be True or False"):
        InterventionDesignEnv(**SMALL, sparse="yes")
    texts = {mode: InterventionDesignEnv(**SMALL, reward=mode).task_description()
             for mode in ("confidence", "truth", "information_gain")}
    assert "CAASL" in texts["truth"] and "entropy" in texts["information_gain"] and len(set(texts.values())) == 3


@pytest.mark.parametrize("reward", ["confidence", "truth", "information_gain"])
def test_nothing_before_the_end_reveals_the_graph(reward):
    # the "truth" reward is computed from the hidden graph (a training signal); the infos never are
    env = InterventionDesignEnv(**SMALL, reward=reward, seal=Seal("a secret for the design tests"))
    texts = set()
    for k in range(3):
        obs, info = env.reset(options={"instance": k})
        assert set(obs) == {"data", "intervention_mask", "filled", "budget_left"}
        assert set(info) == {"instance"} and "index" not in info["instance"]  # opaque id under a seal
        texts.add(env.unwrapped.task_description())
        for step in range(SMALL["budget"]):
            obs, _, terminated, _, info = env.step(encode_action(step % 4, 1.0, 4, env.value_bound))
            if not terminated:
                assert set(info) == {"target", "value", "budget_left", "metrics"}
                assert set(info["metrics"]) == {"confidence", "entropy", "expected_shd"}
        assert {"scores", "truth", "trajectory"} <= set(info)
    assert len(texts) == 1  # the task text names no instance


def test_bad_actions():
    env = InterventionDesignEnv(**SMALL)
    obs, _ = env.reset(options={"instance": 0})
    rows = obs["filled"].sum()
    obs, reward, terminated, truncated, info = env.step(np.array([np.nan, 0.0], dtype=np.float32))
    assert "invalid action" in info["error"] and reward == 0.0 and obs["filled"].sum() == rows
    assert obs["budget_left"][0] == SMALL["budget"] - 1 and not terminated
    obs, *_ = env.step(np.array([5.0, 9.0]))  # clipped: the observe bin, value at the bound
    assert obs["filled"].sum() == rows + 1
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3))
    with pytest.raises(ValueError, match="instance"):
        env.reset(options={"instance": 1000})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"seed": 1})
    env.reset()
    for _ in range(SMALL["budget"]):
        env.step(np.zeros(2))
    with pytest.raises(RuntimeError, match="ended"):
        env.step(np.zeros(2))


def test_a_batch_design_plays_the_rows_of_its_designs_in_turn():
    # k = 2 designs sharing 2 rows per step draw the same noise rows as one design per step for twice the steps
    batch = InterventionDesignEnv(**{**SMALL, "budget": 2}, rows_per_step=2, targets_per_step=2)
    single = InterventionDesignEnv(**{**SMALL, "budget": 4})
    assert batch.action_space.shape == (2, 2)
    obs, _ = batch.reset(options={"instance": 3})
    single.reset(options={"instance": 3})
    designs = [((0, 3.0), (2, -4.0)), ((None, 0.0), (3, 5.0))]
    for pair in designs:
        action = np.stack([encode_action(t, v, 4, 5.0) for t, v in pair])
        obs, reward, terminated, _, info = batch.step(action)
        paid = sum(single.step(encode_action(t, v, 4, 5.0))[1] for t, v in pair)
        assert reward == pytest.approx(paid, abs=1e-9)  # the same rows, so the same posterior
        assert info["target"] == [t for t, _ in pair]
    assert terminated
    np.testing.assert_array_equal(obs["data"], single._batch.observation(0)["data"])
    np.testing.assert_array_equal(obs["intervention_mask"], single._batch.observation(0)["intervention_mask"])
    # the scripted designers play batches: round-robin takes the next k nodes
    record = rollout(batch, RoundRobinDesigner(), options={"instance": 0})
    mask = batch._batch.mask[0, SMALL["n_observational"]:]
    assert record.finished and mask.argmax(axis=1).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="multiple of targets_per_step"):
        InterventionDesignEnv(**SMALL, rows_per_step=3, targets_per_step=2)
    with pytest.raises(ValueError, match="'discrete' plays one design"):
        InterventionDesignEnv(**SMALL, rows_per_step=2, targets_per_step=2, action="discrete")
    multi = InterventionDesignEnv(**SMALL, rows_per_step=2, targets_per_step=2, action="multidiscrete")
    multi.reset(options={"instance": 3})
    assert multi.action_space.shape == (4,)  # flat: SB3 takes one-dimensional MultiDiscrete spaces only
    assert multi.step(np.array([0, 1, 4, 0]))[4]["target"] == [0, None]


def test_node_costs_are_taken_from_the_reward_and_greedy_weighs_them():
    costs = [5.0, 5.0, 0.5, 5.0]
    env = InterventionDesignEnv(**SMALL, node_costs=costs)
    free = InterventionDesignEnv(**SMALL)
    env.reset(options={"instance": 2})
    free.reset(options={"instance": 2})
    spent = 0.0
    for target in (0, 2, None, 1, 2):
        action = encode_action(target, 3.0, 4, 5.0)
        _, reward, _, _, info = env.step(action)
        cost = 0.0 if target is None else costs[target]
        assert reward == pytest.approx(free.step(action)[1] - cost, abs=1e-12) and info["cost"] == cost
        spent += cost
    assert info["scores"]["cost"] == spent
    assert info["scores"]["net_gain"] == pytest.approx(info["scores"]["gain"] - spent, abs=1e-12)
    assert "x2: 0.5" in env.task_description()
    greedy = GreedyDesigner(samples=4, value_grid=(1.0,), observe=True)
    record = rollout(env, greedy, options={"instance": 2})
    chosen = env._batch.mask[0, SMALL["n_observational"]:].sum(axis=0)
    assert record.finished and chosen[[0, 1, 3]].sum() == 0  # a cost of 5 outweighs any one row's gain here
    with pytest.raises(ValueError, match="node_costs"):
        InterventionDesignEnv(**SMALL, node_costs=[1.0, 2.0])
    with pytest.raises(ValueError, match="node_costs"):
        InterventionDesignEnv(**SMALL, node_costs=[1.0, -2.0, 0.0, 0.0])


def test_action_codec_round_trips():
    for d in (3, 10):
        for target in (*range(d), None):
            a = encode_action(target, 1.5, d, 5.0)
            targets, values, valid = decode_actions(a[None], d, 5.0)
            assert targets[0] == (-1 if target is None else target) and valid[0]
            assert values[0] == pytest.approx(1.5, rel=1e-6)


# -- the batched env ----------------------------------------------------------------------------


def test_vector_env_plays_the_single_envs_instances():
    vec = gym.make_vec("InterventionDesign-lg10-v0", num_envs=3, vectorization_mode="vector_entry_point", **SMALL)
    obs, _ = vec.reset(seed=0, options={"instance": 5})
    actions = np.stack([encode_action(t, 2.0, 4, 5.0) for t in (0, 3, None)])
    singles = [InterventionDesignEnv(**SMALL) for _ in range(3)]
    single_obs = [env.reset(options={"instance": 5 + k})[0] for k, env in enumerate(singles)]
    for k in range(3):
        assert np.array_equal(obs["data"][k], single_obs[k]["data"])
    final = [{}] * 3
    for _ in range(SMALL["budget"]):
        obs, rewards, terminated, _, info = vec.step(actions)
        for k, env in enumerate(singles):
            o, r, _, _, final[k] = env.step(actions[k])
            assert np.array_equal(obs["data"][k], o["data"])
            assert rewards[k] == pytest.approx(r, abs=1e-9)
            for name, value in final[k]["metrics"].items():
                assert info["metrics"][name][k] == pytest.approx(value, abs=1e-9)
    assert terminated.all()
    for name in final[0]["scores"]:
        np.testing.assert_allclose(info["scores"][name], [f["scores"][name] for f in final], atol=1e-9)
    for name in final[0]["trajectory"]:
        np.testing.assert_allclose(info["trajectory"][name], [f["trajectory"][name] for f in final], atol=1e-9)
    assert np.array_equal(info["adjacency"][2], final[2]["truth"]["adjacency"])
    # autoreset (NEXT_STEP): the next step starts instances 8..10 with reward 0
    obs, rewards, terminated, _, _ = vec.step(actions)
    assert not terminated.any() and (rewards == 0).all()
    fresh = InterventionDesignEnv(**SMALL).reset(options={"instance": 8})[0]
    assert np.array_equal(obs["data"][0], fresh["data"])


def test_a_vector_env_above_one_posterior_chunk_rewards_each_episode_by_its_own_rows():
    # 20 episodes: the posteriors are computed in chunks of 16 (batch._POSTERIOR_CHUNK)
    vec = gym.make_vec("InterventionDesign-lg10-v0", num_envs=20, vectorization_mode="vector_entry_point", **SMALL)
    vec.reset(seed=1)
    batch = vec.unwrapped._batch  # the float64 rows (the observation shows them in float32)

    def correct(k):
        filled = batch.filled[k].astype(bool)
        data, mask = batch.data[k][filled], batch.mask[k][filled].astype(bool)
        return expected_correct_entries(edge_posterior(local_scores(data, mask)).edge_probs)

    before = [correct(k) for k in range(20)]
    actions = np.stack([encode_action(None if k % 5 == 4 else k % 4, 3.0, 4, 5.0) for k in range(20)])
    _, rewards, _, _, _ = vec.step(actions)
    for k in range(20):
        assert rewards[k] == pytest.approx(correct(k) - before[k], abs=1e-9)


def test_vector_env_train_stream_is_seeded():
    def first(seed):
        vec = gym.make_vec("InterventionDesign-lg10-v0", num_envs=4, vectorization_mode="vector_entry_point",
                           reward="none")
        return vec.reset(seed=seed)[0]["data"]

    assert np.array_equal(first(1), first(1)) and not np.array_equal(first(1), first(2))


# -- baselines ----------------------------------------------------------------------------------


def test_baselines_play_their_designs():
    env = gym.make("InterventionDesign-lg10-v0", **SMALL)
    row = SMALL["n_observational"]
    record = rollout(env, RoundRobinDesigner(), options={"instance": 0})
    mask = env.unwrapped._batch.mask[0, row:]
    assert record.finished and mask.sum(axis=0).tolist() == [2, 1, 1, 1]  # 5 steps over 4 nodes
    rollout(env, ObservationalDesigner(), options={"instance": 0})
    assert env.unwrapped._batch.mask.sum() == 0
    rollout(env, RandomDesigner(seed=1), options={"instance": 0})
    assert env.unwrapped._batch.mask[0, row:].sum() == SMALL["budget"]
    with pytest.raises(ValueError, match="intervention-design"):
        RoundRobinDesigner().reset(task_spec(gym.make("CartPole-v1")))


def test_greedy_prefers_intervening_where_the_direction_is_unknown():
    # two strongly correlated variables: observational data cannot orient the edge, one do-row can
    env = InterventionDesignEnv(d=2, expected_degree=1.0, n_observational=30, budget=1)
    obs, _ = env.reset(options={"instance": 0})
    greedy = GreedyDesigner(samples=64, value_grid=(1.0,))
    greedy.reset(task_spec(env))
    gains = greedy.expected_gains(obs)  # candidates: do(x0 = 5), do(x1 = 5), observe
    assert gains[2] < min(gains[0], gains[1])
    assert greedy.evaluations == 64 * 3


def test_greedy_objectives_value_the_same_outcomes_by_their_own_quantities():
    env = InterventionDesignEnv(d=2, expected_degree=1.0, n_observational=30, budget=1)
    obs, _ = env.reset(options={"instance": 0})
    gains = {}
    for objective in ("confidence", "truth", "information_gain"):
        greedy = GreedyDesigner(samples=64, value_grid=(1.0,), objective=objective)
        greedy.reset(task_spec(env))
        gains[objective] = greedy.expected_gains(obs)  # the same draws: the seed, episode and step match
        assert gains[objective][2] < min(gains[objective][:2])  # intervening beats observing whatever the objective
    assert not np.allclose(gains["confidence"], gains["truth"])
    with pytest.raises(ValueError, match="objective"):
        GreedyDesigner(objective="shd")


def test_greedy_truth_objective_is_the_expected_agreement_with_a_graph_drawn_from_the_posterior():
    from causal_gym.envs.design.baselines import _objective
    from causal_gym.envs.design.batch import truth_agreement
    from causal_gym.stats.graph_posterior import sample_dags

    data, mask = _observed(InterventionDesignEnv(**SMALL).reset(options={"instance": 4})[0])
    scores = local_scores(data, mask)
    posterior = edge_posterior(scores)
    dags = sample_dags(scores, 20000, rng=0)  # the truth drawn from the posterior itself
    monte_carlo = truth_agreement(np.broadcast_to(posterior.edge_probs, dags.shape), dags).mean()
    assert float(_objective(posterior, "truth")) == pytest.approx(monte_carlo, abs=0.02)


def _uncertainty_case():
    """A SMALL env, a fresh UncertaintyDesigner reset on it, its first observation, and that observation showing
    hand-made edge marginals whose expected errors per node (row + column sums of min(p, 1 - p)) are 0.8, 0.9, 0.6, 0.3."""
    from causal_gym.envs.design.baselines import UncertaintyDesigner

    env = InterventionDesignEnv(**SMALL, observe_posterior=True)
    obs, _ = env.reset(options={"instance": 0})
    agent = UncertaintyDesigner()
    agent.reset(task_spec(env))
    p = np.array([[0.0, 0.5, 0.1, 0.0], [0.2, 0.0, 0.8, 0.0], [0.0, 0.0, 0.0, 0.3], [0.0, 0.0, 0.0, 0.0]])
    return env, agent, obs, {**obs, "edge_probs": p.astype(np.float32)}


def test_uncertainty_designer_picks_the_untargeted_node_with_the_most_uncertain_edges():
    from causal_gym.envs.design.baselines import UncertaintyDesigner

    env, agent, obs, shown = _uncertainty_case()
    assert decode_actions(agent.act(shown, {})[None], 4, env.value_bound)[0][0] == 1
    shown["intervention_mask"] = obs["intervention_mask"].copy()
    shown["intervention_mask"][SMALL["n_observational"], 1] = 1  # node 1 targeted already
    targets, values, _ = decode_actions(agent.act(shown, {})[None], 4, env.value_bound)
    assert targets[0] == 0 and values[0] == pytest.approx(env.value_bound)
    shown["intervention_mask"][SMALL["n_observational"] + 1, [0, 2, 3]] = 1  # all targeted: all candidates again
    assert decode_actions(agent.act(shown, {})[None], 4, env.value_bound)[0][0] == 1
    assert agent.evaluations == 0
    # without the shown posterior it computes the same one from the rows (one evaluation)
    hidden = {key: value for key, value in obs.items() if key != "edge_probs"}
    agent.reset(task_spec(env))
    choice = agent.act(hidden, {})
    agent_shown = UncertaintyDesigner()
    agent_shown.reset(task_spec(env))
    assert np.array_equal(choice, agent_shown.act(obs, {})) and agent.evaluations == 1


def test_greedy_over_a_proposers_shortlist_values_only_what_it_ranks_highest():
    from causal_gym.envs.design.baselines import GreedyDesigner, UncertaintyDesigner, shortlist_samples

    env, heuristic, obs, shown = _uncertainty_case()  # node errors 0.8, 0.9, 0.6, 0.3
    shown["intervention_mask"] = obs["intervention_mask"].copy()
    shown["intervention_mask"][SMALL["n_observational"], 1] = 1  # node 1 targeted: it ranks after the others
    bound = env.value_bound
    targets = np.array([0, 0, 1, 1, 2, 2, 3, 3, -1])
    values = np.array([-bound, bound] * 4 + [0.0])
    rank = heuristic.rank(shown, targets, values)
    assert np.isneginf(rank[[0, 2, 4, 6, 8]]).all()  # -value_bound and "observe": never its designs
    assert np.argsort(-rank[[1, 3, 5, 7]]).tolist() == [0, 2, 3, 1]  # untargeted 0, 2, 3 by error, then node 1
    # shortlist 1: greedy evaluates the heuristic's one choice and so plays it, at `samples` evaluations
    for shortlist, allowed in [(1, {0}), (2, {0, 2})]:
        greedy = GreedyDesigner(samples=3, value_grid=(-1.0, 1.0), proposer=UncertaintyDesigner(), shortlist=shortlist)
        greedy.reset(task_spec(env))
        chosen, value = decode_actions(greedy.act(shown, {})[None], 4, bound)[:2]
        assert chosen[0] in allowed and value[0] == pytest.approx(bound)
        assert greedy.evaluations == 3 * shortlist
    assert decode_actions(heuristic.act(shown, {})[None], 4, bound)[0][0] == 0
    hidden = {key: value for key, value in obs.items() if key != "edge_probs"}  # the heuristic computes a posterior
    greedy = GreedyDesigner(samples=3, proposer=UncertaintyDesigner(), shortlist=2)
    greedy.reset(task_spec(env))
    greedy.act(hidden, {})
    assert greedy.evaluations == 3 * 2 + 1  # its own count includes the proposer's posterior
    with pytest.raises(ValueError, match="give both or neither"):
        GreedyDesigner(proposer=UncertaintyDesigner())
    with pytest.raises(TypeError, match="rank"):
        GreedyDesigner(proposer=object(), shortlist=2)
    assert [shortlist_samples(d, 2) for d in (5, 7, 9, 10, 14, 16)] == [4, 6, 7, 8, 11, 13]  # 2 x s <= (2d + 1) 8 / 10
    assert all(2 * shortlist_samples(d, 2) <= (2 * d + 1) * 8 / 10 < 2 * (shortlist_samples(d, 2) + 1) for d in range(3, 21))


def test_cost_aware_uncertainty_designer_weighs_a_share_of_each_nodes_uncertainty_against_its_cost():
    from causal_gym.envs.design.baselines import CostAwareUncertaintyDesigner, UncertaintyDesigner

    p = np.array([[0.0, 0.5, 0.1, 0.0], [0.3, 0.0, 0.2, 0.0], [0.0, 0.0, 0.0, 0.4], [0.0, 0.0, 0.0, 0.0]])
    # uncertainties (row + column sums of min(p, 1 - p)) 0.9, 1.0, 0.7, 0.4; half of each against costs
    # 0.1, 0.6, 0.05, 0: net values 0.35, -0.1, 0.3, 0.2, so node 0 (the plain heuristic's node 1 is not worth its cost)
    env = InterventionDesignEnv(**SMALL, node_costs=[0.1, 0.6, 0.05, 0.0], observe_posterior=True)
    obs, _ = env.reset(options={"instance": 0})
    n0 = SMALL["n_observational"]

    def shown(*targeted):
        mask = obs["intervention_mask"].copy()
        mask[n0, list(targeted)] = 1
        return {**obs, "edge_probs": p, "intervention_mask": mask}

    def targets(agent, observation):
        return decode_actions(np.reshape(agent.act(observation, {}), (-1, 2)), 4, env.value_bound)[0].tolist()

    agent, plain = CostAwareUncertaintyDesigner(settled=0.5), UncertaintyDesigner()
    agent.reset(task_spec(env))
    plain.reset(task_spec(env))
    assert targets(agent, shown()) == [0] and targets(plain, shown()) == [1]
    assert targets(agent, shown(0, 3)) == [2]  # the untargeted node worth its cost, though node 0 nets more
    assert targets(agent, shown(0, 2, 3)) == [0]  # node 1, the only untargeted one, is not worth 0.6
    # settled 0.15: values 0.135, 0.15, 0.105, 0.06, net 0.035, -0.45, 0.055, 0.06: the free, least uncertain node 3
    low = CostAwareUncertaintyDesigner(settled=0.15)
    low.reset(task_spec(env))
    assert targets(low, shown()) == [3]
    # a batch of 2 with every node at cost 1: the nodes worth it, untargeted first, then observational rows
    dear = InterventionDesignEnv(**SMALL, node_costs=[1.0] * 4, observe_posterior=True, rows_per_step=2,
                                 targets_per_step=2)
    expected = {0.5: ([], [-1, -1]),  # values 0.45, 0.5, 0.35, 0.2: none worth 1
                1.05: ([], [1, -1]),  # 0.945, 1.05, ...: node 1 only
                1.2: ([1], [0, 1]),  # 1.08, 1.2, 0.84, 0.48: nodes 0 and 1, the untargeted 0 first
                1.5: ([], [1, 0])}  # 1.35, 1.5, 1.05, 0.6: nodes 1, 0, 2 by net value
    for settled, (targeted, chosen) in expected.items():
        batch = CostAwareUncertaintyDesigner(settled=settled)
        batch.reset(task_spec(dear))
        assert targets(batch, shown(*targeted)) == chosen, settled
        assert batch.evaluations == 0
    # with no costs it plays as the plain heuristic over a whole episode
    free = InterventionDesignEnv(**SMALL, observe_posterior=True)
    played = []
    for designer in (CostAwareUncertaintyDesigner(), UncertaintyDesigner()):
        record = rollout(free, designer, options={"instance": 1})
        played.append((free._batch.mask[0].copy(), free._batch.data[0].copy(), record.rewards))
    np.testing.assert_array_equal(played[0][0], played[1][0])
    np.testing.assert_array_equal(played[0][1], played[1][1])
    assert played[0][2] == played[1][2] and played[0][0][n0:].any(axis=1).all()  # and never observes
    with pytest.raises(ValueError, match="settled"):
        CostAwareUncertaintyDesigner(settled=-0.1)


def test_runner_and_report_table(tmp_path):
    from causal_gym.envs.benchmark import ReportOptions
    from causal_gym.envs.design.report import report_tables
    from causal_gym.eval.report import load_runs
    from causal_gym.eval.runner import RunConfig, run

    run(RunConfig(("InterventionDesign-lg10-v0",), "design-round-robin", instances=(0, 1, 2), env_kwargs=SMALL),
        tmp_path / "store", progress=False)
    (table,) = report_tables(load_runs(tmp_path / "store"), ReportOptions())
    (row,) = table.frame.to_dict("records")
    env = gym.make("InterventionDesign-lg10-v0", **SMALL)
    gains = [rollout(env, RoundRobinDesigner(), options={"instance": k}).final_info["scores"]["gain"] for k in range(3)]
    assert row["setting"] == "er4-gaussian-deg2-n20-T5" and row["episodes"] == 3
    assert row["gain"] == pytest.approx(np.mean(gains), abs=1e-9)
    assert row["gain_low"] <= row["gain"] <= row["gain_high"]


def test_value_bounds_are_reported_apart_and_variants_share_the_reference_instances(tmp_path):
    from causal_gym.envs.benchmark import ReportOptions
    from causal_gym.envs.design.report import report_tables
    from causal_gym.eval.report import load_runs
    from causal_gym.eval.runner import RunConfig, run

    variants = ({}, {"value_bound": 2.0}, {"node_costs": [1.0, 0.0, 0.0, 0.5]},
                {"rows_per_step": 2, "targets_per_step": 2})
    for k, extra in enumerate(variants):
        run(RunConfig(("InterventionDesign-lg10-v0",), "design-round-robin", instances=(0,),
                      env_kwargs={**SMALL, **extra}), tmp_path / f"run{k}", progress=False)
    (table,) = report_tables(load_runs(*(tmp_path / f"run{k}" for k in range(len(variants)))), ReportOptions())
    assert sorted(table.frame["setting"]) == ["er4-gaussian-deg2-n20-T5", "er4-gaussian-deg2-n20-T5-costs",
                                              "er4-gaussian-deg2-n20-T5-k2-x2", "er4-gaussian-deg2-n20-T5-vb2"]
    for base, env_id in (("lg10", "lg10-T3"), ("lg10", "lg10-T5-bounded"), ("sf10", "sf10-T3"),
                         ("gumbel10", "gumbel10-T3")):
        reference = gym.make(f"InterventionDesign-{base}-v0").reset(options={"instance": 7})[0]
        variant = gym.make(f"InterventionDesign-{env_id}-v0").reset(options={"instance": 7})[0]
        n0 = 50
        assert np.array_equal(variant["data"][:n0], reference["data"][:n0])
