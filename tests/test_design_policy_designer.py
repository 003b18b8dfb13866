"""PolicyDesigner: a trained summary-route policy played from the rows observation, and proposing for greedy.

References: the SB3 summary route playing the same policy on the same instances (an independent path
through the vector env); the full greedy lookahead, which a shortlist of every design must equal; the
policy's own ranking, which bounds what a short shortlist may play.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.baselines import GreedyDesigner  # noqa: E402
from causal_gym.envs.design.policy_designer import PolicyDesigner  # noqa: E402
from causal_gym.envs.design.sb3 import DesignSB3VecEnv  # noqa: E402
from causal_gym.harness.agent import task_spec  # noqa: E402
from causal_gym.harness.rollout import rollout  # noqa: E402

MIX = Path(__file__).resolve().parents[1] / "examples" / "results" / "design" / "mix" / "mix-pair-seed0.zip"
BASE_ID = "InterventionDesign-lg10-T3-v0"
D7 = {"d": 7, "graph": "er", "noise": "gaussian", "expected_degree": 3.0, "budget": 3}
SMALL = {"d": 4, "expected_degree": 2.0, "n_observational": 20, "budget": 4}


@pytest.fixture(scope="module")
def policy():
    return PPO.load(MIX, device="cpu").policy


def _scores(env, agent, instances, key="gain"):
    out, evaluations = [], []
    for k in instances:
        out.append(rollout(env, agent, options={"split": "test", "instance": k}).final_info["scores"][key])
        evaluations.append(agent.evaluations)
        agent.evaluations = 0
    return np.array(out), np.array(evaluations)


def test_it_plays_the_policy_as_the_summary_route_does(policy):
    """Through rollout on the rows observation = the policy's argmax on the vector env's summaries."""
    env = gym.make(BASE_ID, observe_posterior=True, **D7)
    mine, evaluations = _scores(env, PolicyDesigner(MIX), range(400, 412))
    venv = DesignSB3VecEnv(BASE_ID, 12, options={"split": "test", "instance": 400}, action="discrete",
                           value_grid=(1.0,), observation="summary", **D7)
    obs = venv.reset()
    for _ in range(3):
        with torch.no_grad():
            obs, _, _, _ = venv.step(policy.mlp_extractor.forward_actor(torch.as_tensor(obs)).argmax(dim=1).numpy())
    np.testing.assert_allclose(mine, venv.last_scores["gain"], rtol=1e-12, atol=1e-12)
    assert (evaluations == 0).all()


def test_its_rank_is_its_logits_and_off_grid_values_are_never_proposed(policy):
    env = gym.make(BASE_ID, observe_posterior=True, **D7)
    agent = PolicyDesigner(policy)
    obs, _ = env.reset(options={"split": "test", "instance": 400})
    agent.reset(task_spec(env))
    logits = agent.scores(obs)
    bound = env.unwrapped.value_bound
    rank = agent.rank(obs, np.array([3, -1, 3, 0]), np.array([bound, 0.0, -bound, bound]))
    assert rank[0] == logits[1 + 3] and rank[1] == logits[0] and np.isneginf(rank[2]) and rank[3] == logits[1]


def test_a_shortlist_of_every_design_is_full_greedy(policy):
    env = gym.make(BASE_ID, observe_posterior=True, **SMALL)
    greedy = GreedyDesigner(samples=3, value_grid=(1.0,), observe=True)
    full = GreedyDesigner(samples=3, value_grid=(1.0,), proposer=PolicyDesigner(policy), shortlist=SMALL["d"] + 1)
    reference, greedy_evaluations = _scores(env, greedy, range(6))
    mine, evaluations = _scores(env, full, range(6))
    np.testing.assert_array_equal(mine, reference)
    np.testing.assert_array_equal(evaluations, greedy_evaluations)
    assert (evaluations == 3 * (SMALL["d"] + 1) * SMALL["budget"]).all()


class _Recording(PolicyDesigner):
    log: list

    def rank(self, observation, targets, values):
        rank = super().rank(observation, targets, values)
        self.log.append(np.argsort(-rank, kind="stable")[:2])
        return rank


def test_a_short_shortlist_plays_within_the_policys_best_and_pays_for_them(policy):
    env = gym.make(BASE_ID, observe_posterior=True, **D7)
    proposer = _Recording(policy)
    proposer.log = []
    agent = GreedyDesigner(samples=5, value_grid=(1.0,), proposer=proposer, shortlist=2)
    played = []
    original = agent.best_of

    def spy(observation, t, v):
        chosen = original(observation, t, v)
        played.append((t.copy(), chosen[0][0]))
        return chosen

    agent.best_of = spy
    _, evaluations = _scores(env, agent, range(400, 410))
    assert (evaluations == 2 * 5 * 3).all()
    overruled = 0
    for best_two, (offered, choice) in zip(proposer.log, played):
        candidates = np.append(np.arange(D7["d"]), -1)  # greedy's order at value grid (1.0,): nodes, then observe
        assert sorted(offered.tolist()) == sorted(candidates[best_two].tolist())
        node = -1 if choice is None else choice
        assert node in offered.tolist()
        overruled += node != candidates[best_two[0]]
    assert len(played) == 30 and 0 < overruled < 30  # the lookahead overrules the policy sometimes, not always


def test_bad_use_gets_a_clear_error(policy):
    with pytest.raises(TypeError, match="SB3 zip path"):
        PolicyDesigner(object())
    env = gym.make(BASE_ID, observe_posterior=True, **D7)
    with pytest.raises(ValueError, match="is value_grid the policy's"):
        rollout(env, PolicyDesigner(policy, value_grid=(-1.0, 1.0)), options={"split": "test", "instance": 400})
    blind = gym.make(BASE_ID, **D7)
    with pytest.raises(ValueError, match="observe_posterior=True"):
        rollout(blind, PolicyDesigner(policy), options={"split": "test", "instance": 400})
    batch = gym.make("InterventionDesign-lg10-B2x2-v0", observe_posterior=True)
    with pytest.raises(ValueError, match="one design per step"):
        rollout(batch, PolicyDesigner(policy), options={"split": "test", "instance": 400})
