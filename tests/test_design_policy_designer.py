"""PolicyDesigner: a trained summary-route policy played from the rows observation, alone or shortlisting for greedy.

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
    """shortlist=1 through rollout on the rows observation = the policy's argmax on the vector env's summaries."""
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


def test_a_shortlist_of_every_design_is_full_greedy(policy):
    env = gym.make(BASE_ID, observe_posterior=True, **SMALL)
    greedy = GreedyDesigner(samples=3, value_grid=(1.0,), observe=True)
    full = PolicyDesigner(policy, shortlist=SMALL["d"] + 1, samples=3)
    reference, greedy_evaluations = _scores(env, greedy, range(6))
    mine, evaluations = _scores(env, full, range(6))
    np.testing.assert_array_equal(mine, reference)
    np.testing.assert_array_equal(evaluations, greedy_evaluations)
    assert (evaluations == 3 * (SMALL["d"] + 1) * SMALL["budget"]).all()


class _Recording(PolicyDesigner):
    def designs(self, observation):
        ranked = np.argsort(-self.scores(observation), kind="stable")
        chosen = super().designs(observation)
        self.log.append((ranked, chosen))
        return chosen


def test_a_short_shortlist_plays_within_the_policys_best_and_pays_for_them(policy):
    env = gym.make(BASE_ID, observe_posterior=True, **D7)
    agent = _Recording(policy, shortlist=2, samples=5)
    agent.log = []
    _, evaluations = _scores(env, agent, range(400, 410))
    assert (evaluations == 2 * 5 * 3).all()
    differs = 0
    for ranked, [(target, value)] in agent.log:
        played = 0 if target is None else 1 + target
        assert played in ranked[:2].tolist()
        assert value == (0.0 if target is None else 5.0)
        differs += played != ranked[0]
    assert 0 < differs < len(agent.log)  # the lookahead overrules the policy sometimes, not always


def test_bad_use_gets_a_clear_error(policy):
    with pytest.raises(TypeError, match="SB3 zip path"):
        PolicyDesigner(object())
    env = gym.make(BASE_ID, observe_posterior=True, **D7)
    agent = PolicyDesigner(policy, value_grid=(-1.0, 1.0))
    with pytest.raises(ValueError, match="is value_grid the policy's"):
        rollout(env, agent, options={"split": "test", "instance": 400})
    blind = gym.make(BASE_ID, **D7)
    with pytest.raises(ValueError, match="observe_posterior=True"):
        rollout(blind, PolicyDesigner(policy), options={"split": "test", "instance": 400})
    batch = gym.make("InterventionDesign-lg10-B2x2-v0", observe_posterior=True)
    with pytest.raises(ValueError, match="one design per step"):
        rollout(batch, PolicyDesigner(policy), options={"split": "test", "instance": 400})
