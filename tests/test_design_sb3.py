"""The design envs' standard RL route: discrete actions, the summary observation, make_sb3_env, SB3's VecEnv.

References: the discrete actions against the box action encoding the same design (an independent
path through the env); the summary observation against the posterior recomputed from the rows the
``rows`` observation shows and intervention counts taken from its mask; the SB3 adapter against
single envs stepped on the same instances with the same actions.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import time
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from gymnasium.utils.env_checker import check_env as gym_check_env  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env as sb3_check_env  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.baselines import GreedyDesigner, RoundRobinDesigner  # noqa: E402
from causal_gym.envs.design.batch import DesignInterface, encode_action  # noqa: E402
from causal_gym.envs.design.env import InterventionDesignEnv  # noqa: E402
from causal_gym.envs.design.sb3 import DesignSB3VecEnv  # noqa: E402
from causal_gym.envs.design.spec import SETTINGS_BY_ID  # noqa: E402
from causal_gym.envs.wrappers import make_sb3_env  # noqa: E402
from causal_gym.harness.rollout import rollout  # noqa: E402
from causal_gym.metrics import paired_bootstrap  # noqa: E402
from causal_gym.stats.graph_posterior import edge_posterior, local_scores  # noqa: E402

SMALL = {"d": 4, "expected_degree": 2.0, "n_observational": 20, "budget": 5}
GRID = (-1.0, -0.5, 1.0)


def _observed(observation):
    filled = observation["filled"].astype(bool)
    return observation["data"][filled].astype(np.float64), observation["intervention_mask"][filled].astype(bool)


def test_discrete_codes_by_hand():
    face = DesignInterface("discrete", GRID)
    assert face.action_space(4) == gym.spaces.Discrete(1 + 4 * 3)
    targets, values, valid = face.decode(np.array([0, 1, 3, 4, 12, 13, -1]), 4, 2.0)
    # 0 observes; 1 + t * 3 + g is node t at GRID[g] * 2; 13 and -1 lie outside Discrete(13)
    assert targets.tolist() == [-1, 0, 0, 1, 3, -1, -1]
    assert values.tolist() == [0.0, -2.0, 2.0, -2.0, 2.0, 0.0, 0.0]
    assert valid.tolist() == [True] * 5 + [False, False]
    multi = DesignInterface("multidiscrete", GRID)
    assert multi.action_space(4) == gym.spaces.MultiDiscrete([5, 3])
    targets, values, valid = multi.decode(np.array([[4, 2], [2, 1], [5, 0], [0, 3]]), 4, 2.0)
    assert targets.tolist() == [-1, 2, -1, -1] and values.tolist() == [0.0, -1.0, 0.0, 0.0]
    assert valid.tolist() == [True, True, False, False]
    for kind in ("discrete", "multidiscrete"):
        face = DesignInterface(kind, GRID)
        for target in (None, *range(4)):
            for g in range(3):
                code = np.asarray(face.encode(target, g, 4))[None]
                t, v, ok = face.decode(code, 4, 2.0)
                assert ok[0] and t[0] == (-1 if target is None else target)
                assert v[0] == (0.0 if target is None else GRID[g] * 2.0)
    with pytest.raises(ValueError, match="integers"):
        DesignInterface("discrete").decode(np.array([1.0]), 4, 2.0)
    with pytest.raises(ValueError, match="action"):
        DesignInterface("joystick")
    with pytest.raises(ValueError, match="observation"):
        DesignInterface(observation="pixels")
    with pytest.raises(ValueError, match="value_grid"):
        DesignInterface("discrete", (0.5, 0.5))
    with pytest.raises(ValueError, match="value_grid"):
        DesignInterface("discrete", (2.0,))


@pytest.mark.parametrize("kind", ["discrete", "multidiscrete"])
def test_discrete_actions_play_the_same_experiments_as_the_box(kind):
    box = InterventionDesignEnv(**SMALL)
    env = InterventionDesignEnv(**SMALL, action=kind, value_grid=GRID)
    box.reset(options={"instance": 4})
    env.reset(options={"instance": 4})
    for target, g in ((2, 0), (None, 1), (0, 1), (3, 2), (2, 2)):
        o, r, t, _, info = env.step(env.interface.encode(target, g, 4))
        value = 0.0 if target is None else GRID[g] * env.value_bound
        ob, rb, tb, _, info_b = box.step(encode_action(target, value, 4, box.value_bound))
        assert np.array_equal(o["data"], ob["data"]) and np.array_equal(o["intervention_mask"], ob["intervention_mask"])
        assert r == rb and t == tb and info["target"] == info_b["target"]
        assert info["value"] == pytest.approx(info_b["value"], abs=1e-6)
    assert info["scores"]["gain"] == info_b["scores"]["gain"]


def test_an_index_outside_the_space_costs_its_step_and_adds_no_row():
    env = InterventionDesignEnv(**SMALL, action="discrete")
    obs, _ = env.reset(options={"instance": 0})
    obs, reward, terminated, _, info = env.step(np.int64(9))  # Discrete(1 + 4 * 2) = 0..8
    assert "invalid action" in info["error"] and reward == 0.0 and obs["filled"].sum() == SMALL["n_observational"]
    assert obs["budget_left"][0] == SMALL["budget"] - 1 and not terminated
    with pytest.raises(ValueError, match="shape"):
        env.step(np.array([1, 2]))
    multi = InterventionDesignEnv(**SMALL, action="multidiscrete")
    multi.reset(options={"instance": 0})
    assert "invalid action" in multi.step(np.array([1, 2]))[4]["error"]  # value index 2 of a grid of 2


def test_summary_is_the_posterior_of_the_rows_and_the_counts_of_the_mask():
    summary = InterventionDesignEnv(**SMALL, observation="summary")
    rows = InterventionDesignEnv(**SMALL)
    vec, _ = summary.reset(options={"instance": 3})
    obs, _ = rows.reset(options={"instance": 3})
    d, budget, n0 = 4, SMALL["budget"], SMALL["n_observational"]
    assert summary.observation_space == gym.spaces.Box(0.0, 1.0, (d * (d - 1) + d + 1,), np.float32)
    for step, target in enumerate((1, 1, None, 3, 0)):
        data, mask = _observed(obs)
        probs = edge_posterior(local_scores(data, mask)).edge_probs
        expected_probs = [probs[i, j] for i in range(d) for j in range(d) if i != j]
        counts = obs["intervention_mask"][n0:].sum(axis=0) / budget
        np.testing.assert_allclose(vec[: d * (d - 1)], expected_probs, atol=1e-4)
        np.testing.assert_allclose(vec[d * (d - 1): -1], counts, atol=1e-7)
        assert vec[-1] == pytest.approx((budget - step) / budget)
        assert summary.observation_space.contains(vec)
        action = encode_action(target, 4.0, d, 5.0)
        vec, reward, *_ = summary.step(action)
        obs, plain_reward, *_ = rows.step(action)
        assert reward == plain_reward
    np.testing.assert_allclose(vec[d * (d - 1): -1], [0.2, 0.4, 0.0, 0.2], atol=1e-7)  # node 1 twice, 2 never
    assert vec[-1] == 0.0
    with pytest.raises(ValueError, match="needs a posterior"):
        InterventionDesignEnv(**SMALL, reward="none", observation="summary")


ROUTES = [{}, {"action": "discrete"}, {"action": "multidiscrete", "observation": "summary"},
          {"action": "discrete", "observation": "summary", "observe_posterior": True},
          {"action": "box", "observation": "rows", "observe_posterior": True, "flatten": True}]


@pytest.mark.parametrize("env_id", [pytest.param(env_id, marks=pytest.mark.slow) if SETTINGS_BY_ID[env_id].get("d", 10) > 16
                                    else env_id for env_id in sorted(SETTINGS_BY_ID)])  # d = 20: a second a step
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: "-".join(f"{v}" for v in r.values()) or "default")
def test_make_sb3_env_passes_both_checkers_on_every_design_id(env_id, route):
    if route.get("action") == "discrete" and SETTINGS_BY_ID[env_id].get("targets_per_step", 1) > 1:
        with pytest.raises(ValueError, match="'discrete' plays one design per step"):
            make_sb3_env(env_id, **route)
        return
    env = make_sb3_env(env_id, **route)
    discrete = route.get("action") in ("discrete", "multidiscrete")
    assert isinstance(env.action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete) if discrete else gym.spaces.Box)
    if discrete:
        env.reset(seed=0)
        assert env.action_masks().all()
    space = env.observation_space
    entries = space.spaces.values() if isinstance(space, gym.spaces.Dict) else [space]
    assert all(len(s.shape) == 1 for s in entries)
    gym_check_env(env.unwrapped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning of SB3's checker (a space it cannot take, a bad bound) fails
        sb3_check_env(env, warn=True)


@pytest.mark.parametrize("observation", ["rows", "summary"])
def test_sb3_vecenv_equals_single_envs_on_the_same_instances(observation):
    kwargs = {**SMALL, "action": "discrete", "observation": observation}
    venv = DesignSB3VecEnv("InterventionDesign-lg10-v0", 3, options={"instance": 7}, **kwargs)
    singles = [gym.make("InterventionDesign-lg10-v0", **kwargs) for _ in range(3)]

    def flat(o):
        return o if observation == "summary" else {k: v.reshape(-1) for k, v in o.items()}

    def same(batched, k, single):
        if observation == "summary":
            np.testing.assert_array_equal(batched[k], single)
        else:
            for key, value in flat(single).items():
                np.testing.assert_array_equal(batched[key][k], value)

    obs = venv.reset()
    for k, env in enumerate(singles):
        same(obs, k, env.reset(options={"instance": 7 + k})[0])
    rng = np.random.default_rng(0)
    for _ in range(SMALL["budget"]):
        actions = rng.integers(0, venv.action_space.n, size=3)
        venv.step_async(actions)
        obs, rewards, done, infos = venv.step_wait()
        for k, env in enumerate(singles):
            single_obs, reward, terminated, _, info = env.step(actions[k])
            assert rewards[k] == pytest.approx(reward, abs=1e-5)
            assert done[k] == terminated
            if terminated:
                same({key: v[None] for key, v in infos[k]["terminal_observation"].items()}
                     if observation == "rows" else infos[k]["terminal_observation"][None], 0, single_obs)
                assert venv.last_scores["gain"][k] == pytest.approx(info["scores"]["gain"], abs=1e-9)
            else:
                same(obs, k, single_obs)
                assert set(infos[k]) <= {"error"}  # nothing of the hidden SCM before the end
    assert done.all()
    # the observation returned with done starts the next batch: instances 10, 11, 12
    for k in range(3):
        same(obs, k, gym.make("InterventionDesign-lg10-v0", **kwargs).reset(options={"instance": 10 + k})[0])


def test_ppo_runs_on_the_route_with_vecnormalize():
    venv = VecNormalize(DesignSB3VecEnv("InterventionDesign-lg10-v0", 4, seed=0, action="discrete", **SMALL),
                        norm_obs_keys=["data"], norm_reward=False)
    model = PPO("MultiInputPolicy", venv, n_steps=5, batch_size=10, n_epochs=1, seed=0, device="cpu")
    model.learn(40)
    assert model.num_timesteps == 40
    summary = DesignSB3VecEnv("InterventionDesign-lg10-v0", 4, seed=0, action="multidiscrete", observation="summary",
                              **SMALL)
    action, _ = PPO("MlpPolicy", summary, n_steps=5, seed=0, device="cpu").predict(summary.reset())
    assert action.shape == (4, 2) and summary.action_space.contains(action[0])


SHIPPED = Path(__file__).resolve().parents[1] / "examples" / "results" / "design" / "sb3"
ROUTE = {"action": "discrete", "value_grid": (1.0,), "observation": "summary"}


@pytest.mark.parametrize("policy", ["mlp", "pair"])
def test_training_script_trains_and_evaluates_as_a_plain_script(tmp_path, policy):
    """``examples/train_design_sb3.py`` run as users run it (its own ``__main__``): a curve, a model, an evaluation."""
    script = SHIPPED.parents[2] / "train_design_sb3.py"
    common = [sys.executable, str(script), "--out", str(tmp_path), "--seeds", "3", "--policy", policy]
    subprocess.run([*common, "--timesteps", "96", "--n-envs", "4", "--rollout-episodes", "2", "--batch-size", "8",
                    "--eval-every", "48", "--dev", "4"], check=True, capture_output=True, timeout=300)
    with open(tmp_path / f"curve-ppo-{policy}.csv") as handle:
        curve = list(csv.DictReader(handle))
    assert [int(r["env_steps"]) for r in curve] == [0, 48, 96] and {r["seed"] for r in curve} == {"3"}
    assert (tmp_path / f"curve-ppo-{policy}.png").stat().st_size > 0
    done = subprocess.run([*common, "--evaluate", "--test", "5", "--eval-ids", "InterventionDesign-lg10-T3-v0"],
                          check=True, capture_output=True, text=True, timeout=300)
    assert f"ppo-{policy} (mean of 1 seeds)" in done.stdout
    with open(tmp_path / "eval.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["instance"]) for r in rows] == list(range(5)) and {r["agent"] for r in rows} == {f"ppo-{policy}-seed3"}
    # the evaluation's returns are the single env's on the same instances with the same designs
    model = PPO.load(tmp_path / f"ppo-{policy}-seed3.zip", device="cpu")
    for row in rows[:2]:
        env = gym.make("InterventionDesign-lg10-T3-v0", **ROUTE)
        obs, _ = env.reset(options={"instance": int(row["instance"])})
        total, terminated = 0.0, False
        while not terminated:
            obs, reward, terminated, _, info = env.step(int(model.predict(obs, deterministic=True)[0]))
            total += reward
        assert total == pytest.approx(float(row["gain"]), abs=1e-9)
        assert info["scores"]["gain"] == pytest.approx(float(row["gain"]), abs=1e-9)


@pytest.mark.parametrize("env_id", ["InterventionDesign-lg10-T5-costs-v0", "InterventionDesign-lg10-B2x2-v0"])
def test_training_script_runs_the_richer_designs_by_env_id_and_nets_their_costs(tmp_path, env_id):
    """``--env-id`` on a cost or batch id, as a plain script: the evaluation's return is ``net_gain``, which is
    the single env's summed reward and its gain minus the costs of the played targets counted by hand
    (odd nodes 2, even nodes 0.5, observing free; no costs on the batch id)."""
    script = SHIPPED.parents[2] / "train_design_sb3.py"
    common = [sys.executable, str(script), "--env-id", env_id, "--out", str(tmp_path), "--seeds", "0", "--policy", "pair"]
    subprocess.run([*common, "--timesteps", "40", "--n-envs", "4", "--rollout-episodes", "2", "--batch-size", "8",
                    "--eval-every", "40", "--dev", "4"], check=True, capture_output=True, timeout=300)
    done = subprocess.run([*common, "--evaluate", "--test", "3", "--first", "400"],
                          check=True, capture_output=True, text=True, timeout=300)
    assert f"{env_id}: test instances 400..402, return (net_gain)" in done.stdout
    with open(tmp_path / "eval.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["env_id"], int(r["instance"])) for r in rows] == [(env_id, k) for k in (400, 401, 402)]
    model = PPO.load(tmp_path / "ppo-pair-seed0.zip", device="cpu")
    route = BATCH_ROUTE if "B2x2" in env_id else ROUTE
    paid = []
    for row in rows:
        env = gym.make(env_id, **route)
        obs, _ = env.reset(options={"instance": int(row["instance"])})
        total, cost, terminated = 0.0, 0.0, False
        while not terminated:
            obs, reward, terminated, _, info = env.step(model.predict(obs, deterministic=True)[0])
            total += reward
            targets = info["target"] if isinstance(info["target"], list) else [info["target"]]
            cost += sum(0.0 if t is None or "costs" not in env_id else (2.0 if t % 2 else 0.5) for t in targets)
        assert total == pytest.approx(float(row["net_gain"]), abs=1e-9)
        assert float(row["net_gain"]) == pytest.approx(float(row["gain"]) - cost, abs=1e-9)
        assert info["scores"]["cost"] == pytest.approx(cost)
        paid.append(cost)
    assert (sum(paid) > 0) == ("costs" in env_id)  # the untrained policy intervenes: the check is not vacuous


def _baseline_gains(env_id: str, count: int, agent, score: str = "gain") -> np.ndarray:
    """A scripted designer's returns through the single env's box actions (an independent path to the adapter's)."""
    env = gym.make(env_id)
    return np.array([rollout(env, agent, options={"instance": k}).final_info["scores"][score] for k in range(count)])


def _policy_gains(path: Path, env_id: str, count: int, score: str = "gain") -> np.ndarray:
    model = PPO.load(path, device="cpu")
    batch = gym.spec(env_id).kwargs.get("targets_per_step", 1) > 1
    venv = DesignSB3VecEnv(env_id, count, options={"instance": 0}, **{**ROUTE, "action": "multidiscrete"} if batch
                           else ROUTE)
    obs = venv.reset()
    for _ in range(venv.env.unwrapped.setting.budget):
        obs, _, done, _ = venv.step(model.predict(obs, deterministic=True)[0])
    assert done.all()
    return venv.last_scores[score]


def test_shipped_ppo_policies_beat_round_robin_and_the_pair_policies_cheap_greedy():
    """The shipped PPO policies (3 seeds each of MlpPolicy and NodePairPolicy, trained through the route only)
    on the 200 test SCMs of ``lg10-T3``: every one beats round-robin, and every pair policy beats the greedy
    lookahead at its lowest compute (one predictive sample of each node at +5: 10 posteriors per decision),
    paired bootstrap intervals above 0. The baselines play the same instances through the single env."""
    env_id, count = "InterventionDesign-lg10-T3-v0", 200
    models = {kind: sorted(SHIPPED.glob(f"ppo-{kind}-seed*.zip")) for kind in ("mlp", "pair")}
    assert [len(found) for found in models.values()] == [3, 3]
    robin = _baseline_gains(env_id, count, RoundRobinDesigner())
    cheap = _baseline_gains(env_id, count, GreedyDesigner(samples=1, value_grid=(1.0,), observe=False))
    for kind, paths in models.items():
        for path in paths:
            assert path.stat().st_size < 1_000_000  # a small file
            gains = _policy_gains(path, env_id, count)
            for name, reference in [("round-robin", robin)] + [("greedy-cheap", cheap)] * (kind == "pair"):
                mean, low, _ = paired_bootstrap(gains, reference)
                assert low > 0, f"{path.name} - {name}: {mean:+.3f}, interval from {low:+.3f}"



@pytest.mark.parametrize("folder, env_id, seeds", [("costs", "InterventionDesign-lg10-T5-costs-v0", 3),
                                                   ("batch", "InterventionDesign-lg10-B2x2-v0", 3),
                                                   ("batch-b1x3", "InterventionDesign-lg10-B1x3-v0", 3)])
def test_shipped_cost_and_batch_policies_beat_round_robin(folder: str, env_id: str, seeds: int):
    """The shipped pair policies of the cost and batch ids, loaded from their zips alone (the node costs and the
    batch head travel in them), on 100 test SCMs: each beats round-robin played through the single env, net of
    the node costs, paired bootstrap interval above 0."""
    paths = sorted((SHIPPED.parent / folder).glob("ppo-pair-seed*.zip"))
    assert len(paths) == seeds
    robin = _baseline_gains(env_id, 100, RoundRobinDesigner(), "net_gain")
    for path in paths:
        assert path.stat().st_size < 1_000_000
        mean, low, _ = paired_bootstrap(_policy_gains(path, env_id, 100, "net_gain"), robin)
        assert low > 0, f"{folder}/{path.name} - round-robin: {mean:+.3f}, interval from {low:+.3f}"

def test_node_pair_policy_relabels_its_choice_with_the_nodes_and_plays_any_d():
    """Permuting the nodes of a summary observation permutes the node logits; "observe" and the value stay."""
    import torch

    from causal_gym.envs.design.policy import NodePairPolicy, summary_graph

    venv = DesignSB3VecEnv("InterventionDesign-lg10-T3-v0", 4, seed=0, **ROUTE)
    model = PPO(NodePairPolicy, venv, n_steps=3, batch_size=12, seed=0, device="cpu")
    model.learn(24)  # weights away from their initial symmetry
    obs = torch.as_tensor(venv.reset())
    probs, share, left = summary_graph(obs)
    perm = torch.as_tensor(np.random.default_rng(1).permutation(10))
    off = ~torch.eye(10, dtype=torch.bool)
    moved = torch.cat([probs[:, perm][:, :, perm][:, off], share[:, perm], left], dim=1)
    net = model.policy.mlp_extractor
    with torch.no_grad():
        logits, value = net.forward_actor(obs), model.policy.predict_values(obs)
        moved_logits, moved_value = net.forward_actor(moved), model.policy.predict_values(moved)
    torch.testing.assert_close(moved_logits[:, 1:], logits[:, 1:][:, perm])
    torch.testing.assert_close(moved_logits[:, 0], logits[:, 0])
    torch.testing.assert_close(moved_value, value)
    assert not torch.allclose(logits[:, 1:], logits[:, 1:2].expand(-1, 10))  # not trivially constant
    twelve = DesignSB3VecEnv("InterventionDesign-lg12-v0", 2, seed=0, **ROUTE)
    with torch.no_grad():
        assert net.forward_actor(torch.as_tensor(twelve.reset())).shape == (2, 13)  # observe + 12 nodes
    with pytest.raises(ValueError, match="route"):
        PPO(NodePairPolicy, DesignSB3VecEnv("InterventionDesign-lg10-T3-v0", 2, action="box",
                                            observation="summary"), device="cpu")


# -- richer designs: node costs and batch designs on the route ----------------------------------

BATCH_ROUTE = {**ROUTE, "action": "multidiscrete"}


def test_distinct_designs_by_hand():
    """Plackett-Luce over observe + d G designs, hand-computed: codes, log-probabilities, mode."""
    import torch

    from causal_gym.envs.design.policy import DistinctDesigns

    # d = 3 nodes, G = 1, k = 2; weights exp(logits) = 1 (observe), 2, 1, 3 (nodes 0, 1, 2)
    dist = DistinctDesigns(3, 1, 2).proba_distribution(torch.log(torch.tensor([[1.0, 2.0, 1.0, 3.0]])))
    # node 2 first (3 of 7), then observe among what is left (1 of 1 + 2 + 1)
    assert dist.log_prob(torch.tensor([[2, 0, 3, 0]])).item() == pytest.approx(np.log(3 / 7 * 1 / 4))
    # node 1 (1 of 7), then node 0 (2 of 1 + 2 + 3)
    assert dist.log_prob(torch.tensor([[1, 0, 0, 0]])).item() == pytest.approx(np.log(1 / 7 * 2 / 6))
    assert dist.mode().tolist() == [[2, 0, 0, 0]]  # the two heaviest (nodes 2, 0), heaviest first
    # G = 2: node 1 at grid 1 is design 1 + 1 * 2 + 1 = 4; observe is t = d whatever its grid index
    two = DistinctDesigns(3, 2, 2)
    assert two.codes(torch.tensor([[1, 1, 3, 1]])).tolist() == [[4, 0]]
    assert two.actions(torch.tensor([[4, 0]])).tolist() == [[1, 1, 3, 0]]
    with pytest.raises(ValueError, match="k <= 1"):
        DistinctDesigns(2, 1, 4)


def test_distinct_designs_draw_without_replacement_at_their_probabilities():
    """Sampled batches never repeat a design, and the ordered pairs come at exp(log_prob) (20,000 draws)."""
    import itertools

    import torch

    from causal_gym.envs.design.policy import DistinctDesigns

    torch.manual_seed(0)
    logits = torch.tensor([0.3, -1.0, 1.2, 0.0])  # observe, nodes 0, 1, 2
    dist = DistinctDesigns(3, 1, 2).proba_distribution(logits.expand(20_000, -1))
    codes = dist.codes(dist.sample())
    assert (codes[:, 0] != codes[:, 1]).all()
    counts = {pair: 0 for pair in itertools.permutations(range(4), 2)}
    for pair in map(tuple, codes.tolist()):
        counts[pair] += 1
    one = DistinctDesigns(3, 1, 2).proba_distribution(logits[None])
    for pair, count in counts.items():
        p = one.log_prob(one.actions(torch.tensor([pair]))).exp().item()
        assert count / 20_000 == pytest.approx(p, abs=0.01), pair
    assert sum(one.log_prob(one.actions(torch.tensor([pair]))).exp().item() for pair in counts) == pytest.approx(1.0)


def test_a_batch_policy_plays_its_k_best_designs_in_the_env():
    """The pair policy on a batch id: its deterministic action is the env's designs of its top-k logits."""
    import torch

    from causal_gym.envs.design.policy import NodePairPolicy

    venv = DesignSB3VecEnv("InterventionDesign-lg10-B2x2-v0", 4, seed=0, **BATCH_ROUTE)
    assert venv.action_space == gym.spaces.MultiDiscrete([11, 1, 11, 1])
    model = PPO(NodePairPolicy, venv, n_steps=2, batch_size=8, seed=0, device="cpu")
    model.learn(16)
    obs = venv.reset()
    with torch.no_grad():
        logits = model.policy.mlp_extractor.forward_actor(torch.as_tensor(obs))
    best = torch.topk(logits, 2, dim=1).indices.numpy()  # 0: observe, 1 + i: node i
    actions = model.predict(obs, deterministic=True)[0]
    assert actions.shape == (4, 4)
    env = gym.make("InterventionDesign-lg10-B2x2-v0", **BATCH_ROUTE)
    for b in range(4):
        env.reset(options={"instance": 0})
        _, _, _, _, info = env.step(actions[b])
        assert info["target"] == [None if c == 0 else int(c) - 1 for c in best[b]]
        assert info["value"] == [0.0 if c == 0 else 5.0 for c in best[b]]
    sampled = np.array([model.predict(obs)[0] for _ in range(50)]).reshape(-1, 2, 2)
    assert (sampled[:, 0] != sampled[:, 1]).any(axis=1).all()  # a batch never repeats a design


def test_node_costs_enter_the_pair_policy_and_relabel_with_the_nodes():
    """With ``node_costs``, permuting the nodes and their costs permutes the logits; changing one cost moves
    only that node's logits; the costs come back with a saved model."""
    import torch

    from causal_gym.envs.design.policy import NodePairPolicy

    costs = tuple(SETTINGS_BY_ID["InterventionDesign-lg10-T5-costs-v0"]["node_costs"])
    venv = DesignSB3VecEnv("InterventionDesign-lg10-T5-costs-v0", 4, seed=0, **ROUTE)
    model = PPO(NodePairPolicy, venv, n_steps=5, batch_size=10, seed=0, device="cpu",
                policy_kwargs={"node_costs": costs})
    model.learn(40)
    net = model.policy.mlp_extractor
    obs = torch.as_tensor(venv.reset())
    perm = torch.as_tensor(np.random.default_rng(2).permutation(10))
    from causal_gym.envs.design.policy import NodePairNet, summary_graph

    probs, share, left = summary_graph(obs)
    off = ~torch.eye(10, dtype=torch.bool)
    moved = torch.cat([probs[:, perm][:, :, perm][:, off], share[:, perm], left], dim=1)
    twin = NodePairNet(64, 1, [costs[i] for i in perm.tolist()])
    twin.load_state_dict(net.state_dict())
    with torch.no_grad():
        logits = net.forward_actor(obs)
        torch.testing.assert_close(twin.forward_actor(moved)[:, 1:], logits[:, 1:][:, perm])
        dearer = NodePairNet(64, 1, [c + 1.0 * (i == 4) for i, c in enumerate(costs)])
        dearer.load_state_dict(net.state_dict())
        changed = dearer.forward_actor(obs) != logits
    assert changed[:, 5].all() and not changed[:, :5].any() and not changed[:, 6:].any()
    with pytest.raises(ValueError, match="node_costs"):
        PPO(NodePairPolicy, venv, device="cpu", policy_kwargs={"node_costs": costs[:3]})


# -- the CAASL-style interface: the rows in, per-node scores and values out ---------------------


def test_rows_adapter_packs_the_rows_and_plays_the_best_scoring_node_at_its_value():
    import torch

    from causal_gym.envs.design.rows import RowsVecEnv, unpack_rows

    venv = RowsVecEnv("InterventionDesign-lg10-v0", 3, options={"instance": 7}, **SMALL)
    rows = SMALL["n_observational"] + SMALL["budget"]
    assert venv.action_space.shape == (8,) and venv.observation_space.shape == (2 * rows * 4 + rows + 1,)
    singles = [InterventionDesignEnv(**SMALL) for _ in range(3)]
    single_obs = [env.reset(options={"instance": 7 + k})[0] for k, env in enumerate(singles)]
    obs = venv.reset()
    rng = np.random.default_rng(0)
    for step in range(SMALL["budget"]):
        data, mask, filled, left = (t.numpy() for t in unpack_rows(torch.as_tensor(obs), 4))
        for k in range(3):
            np.testing.assert_allclose(data[k], single_obs[k]["data"], atol=1e-5)  # the values pass float32 once more
            np.testing.assert_array_equal(mask[k], single_obs[k]["intervention_mask"])
            np.testing.assert_array_equal(filled[k], single_obs[k]["filled"])
            assert left[k, 0] == pytest.approx(single_obs[k]["budget_left"][0] / SMALL["budget"])
        actions = rng.uniform(-1, 1, size=(3, 8)).astype(np.float32)
        obs, rewards, _, _ = venv.step(actions)
        for k, env in enumerate(singles):
            target = int(np.argmax(actions[k, :4]))
            single_obs[k], reward, *_ = env.step(encode_action(target, actions[k, 4 + target] * 5.0, 4, 5.0))
            assert rewards[k] == pytest.approx(reward, abs=1e-5)
    with pytest.raises(ValueError, match="fixes"):
        RowsVecEnv("InterventionDesign-lg10-v0", 2, observe_posterior=True)


def test_row_attention_policy_is_equivariant_in_the_nodes_and_invariant_in_the_rows():
    import torch

    from causal_gym.envs.design.rows import RowAttentionPolicy, RowsVecEnv, unpack_rows

    venv = RowsVecEnv("InterventionDesign-lg10-T3-v0", 4, seed=0, n_observational=12)
    model = PPO(RowAttentionPolicy, venv, n_steps=3, batch_size=12, seed=0, device="cpu",
                policy_kwargs={"hidden": 8, "heads": 2})
    model.learn(24)
    venv.reset()
    obs, *_ = venv.step(np.tile(np.linspace(-1, 1, 20, dtype=np.float32), (4, 1)))  # a filled interventional row
    x = torch.as_tensor(obs)
    data, mask, filled, left = unpack_rows(x, 10)
    perm = torch.as_tensor(np.random.default_rng(1).permutation(10))
    rows = torch.as_tensor(np.r_[np.random.default_rng(2).permutation(13), np.arange(13, data.shape[1])])

    def pack(data, mask, filled):
        return torch.cat([data.reshape(4, -1), mask.reshape(4, -1), filled, left], dim=1)

    net = model.policy.mlp_extractor
    with torch.no_grad():
        means, value = net(x)
        moved_means, moved_value = net(pack(data[:, :, perm], mask[:, :, perm], filled))
        shuffled_means, shuffled_value = net(pack(data[:, rows], mask[:, rows], filled[:, rows]))
    torch.testing.assert_close(moved_means.reshape(4, 2, 10), means.reshape(4, 2, 10)[:, :, perm])
    torch.testing.assert_close(moved_value, value)
    torch.testing.assert_close(shuffled_means, means, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shuffled_value, value, atol=1e-5, rtol=1e-5)
    assert model.policy.log_std.shape == (2,)
    assert not torch.allclose(means[:, :10], means[:, :1].expand(-1, 10))  # not trivially constant


@pytest.mark.slow
def test_the_caasl_and_mix_scripts_train_and_evaluate_as_plain_scripts(tmp_path):
    """``examples/train_design_caasl.py`` and ``train_design_mix.py`` run as users run them, from another folder."""
    examples = SHIPPED.parents[2]
    caasl = [sys.executable, str(examples / "train_design_caasl.py"), "--out", str(tmp_path / "caasl"), "--seeds", "1"]
    subprocess.run([*caasl, "--timesteps", "48", "--n-envs", "4", "--rollout-episodes", "2", "--batch-size", "8",
                    "--eval-every", "24", "--dev", "4", "--device", "cpu"], check=True, capture_output=True,
                   timeout=600, cwd=tmp_path)
    subprocess.run([*caasl, "--evaluate", "--test", "4", "--eval-ids", "InterventionDesign-lg10-T3-v0"], check=True,
                   capture_output=True, timeout=600, cwd=tmp_path)
    with open(tmp_path / "caasl" / "eval-caasl.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["instance"]) for r in rows] == [400, 401, 402, 403] and rows[0]["agent"] == "caasl-rows-seed1"
    mix = [sys.executable, str(examples / "train_design_mix.py"), "--out", str(tmp_path / "mix"), "--seeds", "2"]
    subprocess.run([*mix, "--timesteps", "1", "--n-envs", "2", "--rollout-episodes", "1", "--batch-size", "6",
                    "--dev", "2"], check=True, capture_output=True, timeout=600, cwd=tmp_path)
    for _ in range(2):  # the second run finds both settings played and adds nothing
        subprocess.run([*mix, "--evaluate", "--test", "3", "--eval", "er7-gaussian-deg3-T3",
                        "InterventionDesign-sf10-T3-v0"], check=True, capture_output=True, timeout=600, cwd=tmp_path)
    with open(tmp_path / "mix" / "eval-mix.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["env_id"], r["setting"]) for r in rows} == {("InterventionDesign-lg10-T3-v0", "er7-gaussian-deg3-T3"),
                                                          ("InterventionDesign-sf10-T3-v0", "")}
    assert len(rows) == 6
    subprocess.run([*mix, "--evaluate", "--test", "2", "--eval", "er7-gaussian-deg3-T3", "--shortlist", "2"],
                   check=True, capture_output=True, timeout=600, cwd=tmp_path)
    with open(tmp_path / "mix" / "eval-mix.csv") as handle:
        rows = [r for r in csv.DictReader(handle) if r["agent"] == "mix-pair-shortlist2-seed2"]
    # d = 7: full greedy evaluates (2 d + 1) x 8 = 120 posteriors per decision; a tenth is 2 designs x 6 samples
    assert [int(r["instance"]) for r in rows] == [400, 401] and {r["evaluations"] for r in rows} == {str(3 * 2 * 6)}
    with open(tmp_path / "mix" / "curve-mix.csv") as handle:
        assert [r["final"] for r in csv.DictReader(handle)][-1] == "1"


@pytest.mark.slow
def test_the_mix_script_killed_from_outside_keeps_the_policy_of_its_last_curve_point(tmp_path):
    """A run stopped by a kill (not by ``--max-minutes``) still leaves ``mix-pair-seed<k>.zip`` to evaluate."""
    out = tmp_path / "mix"
    run = subprocess.Popen([sys.executable, str(SHIPPED.parents[2] / "train_design_mix.py"), "--out", str(out),
                            "--seeds", "3", "--timesteps", "10000000", "--n-envs", "2", "--rollout-episodes", "1",
                            "--batch-size", "6", "--dev", "2", "--eval-every", "10000000"],
                           cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(600):  # the first curve point (step 0) is written after its policy is saved
            if run.poll() is not None or (out / "curve-mix.csv").exists():
                break
            time.sleep(1)
    finally:
        run.kill()
        _, err = run.communicate()
    assert (out / "curve-mix.csv").exists(), err.decode()[-2000:]
    with open(out / "curve-mix.csv") as handle:
        assert [(r["env_steps"], r["final"]) for r in csv.DictReader(handle)] == [("0", "0")]
    policy = PPO.load(out / "mix-pair-seed3.zip", device="cpu").policy
    assert policy.observation_space.shape == DesignSB3VecEnv(
        "InterventionDesign-lg10-T3-v0", 1, action="discrete", value_grid=(1.0,), observation="summary",
        budget=3).observation_space.shape


def test_design_table_merges_learned_seeds_per_scm_or_lists_them_per_seed(tmp_path):
    """Hand-made scores: the merged row is the per-SCM mean of the seeds, ``--per-seed`` keeps each seed's own."""
    path = tmp_path / "scores.csv"
    scores = {"greedy-168": [1.0, 1.0, 1.0], "mix-pair-seed0": [1.0, 2.0, 3.0], "mix-pair-seed1": [3.0, 4.0, 5.0]}
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["env_id", "setting", "agent", "instance", "gain", "evaluations"])
        for agent, gains in scores.items():
            writer.writerows(["x", "er5", agent, 400 + k, g, 0] for k, g in enumerate(gains))
    script = [sys.executable, str(SHIPPED.parents[2] / "design_table.py"), str(path), "--versus", "greedy-168"]

    def rows(*extra: str) -> dict[str, str]:
        text = subprocess.run([*script, *extra], check=True, capture_output=True, text=True, cwd=tmp_path).stdout
        return {line.split(" | ")[0].lstrip("| ").split(" (")[0]: line for line in text.splitlines()
                if line.startswith("| ") and not line.startswith("| agent")}

    merged = rows()
    assert set(merged) == {"greedy-168", "mix-pair"}
    assert "(2 seeds: 2.00, 4.00) | 0 | 3.00 [" in merged["mix-pair"] and "| +2.00 [" in merged["mix-pair"]
    per_seed = rows("--per-seed")
    assert set(per_seed) == {"greedy-168", "mix-pair-seed0", "mix-pair-seed1"}
    assert "| 0 | 2.00 [" in per_seed["mix-pair-seed0"] and "| +1.00 [" in per_seed["mix-pair-seed0"]
    assert "| 0 | 4.00 [" in per_seed["mix-pair-seed1"] and "| +3.00 [" in per_seed["mix-pair-seed1"]
    named = rows("--per-seed", "--agents", "mix-pair", "greedy-168")  # a learned name lists its seeds
    assert list(named) == ["mix-pair-seed0", "mix-pair-seed1", "greedy-168"] and named == per_seed
