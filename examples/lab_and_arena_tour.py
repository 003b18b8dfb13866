"""A tour of CausaLab and CausalArena through the shared Agent / rollout interface.

1. CausaLab: the systematic experimenter (shift every property once, solve for the direct effects,
   verify, predict) and the observation-only baseline on the first five 4-node test episodes.
2. CausalArena (submit mode): PC and GES from the discovery menu answer synthetic pool datasets;
   the reward is the directed F1 of the submitted adjacency.

Run: ``python examples/lab_and_arena_tour.py`` (about half a minute on 2 cores).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym import discovery
from causal_gym.agents import make_agent
from causal_gym.eval import rollout


def causalab() -> None:
    env = gym.make("CausaLab-4node-v0")
    print("CausaLab-4node-v0, test episodes 0-4")
    print(f"{'agent':22s} {'episode':>7s} {'success':>8s} {'edge F1':>8s} {'interventions':>14s}")
    for name in ("causalab-systematic", "causalab-observe"):
        for k in range(5):
            record = rollout(env, make_agent(name), seed=k, options={"instance": k})
            scores = record.final_info["scores"]
            print(f"{name:22s} {k:7d} {scores['success']:8.0f} {scores['edge_f1']:8.3f} "
                  f"{scores['budget_used_at_commit']:14.0f}")


def arena() -> None:
    env = gym.make("CausalArena-synthetic-v0", d=10)
    print("\nCausalArena-synthetic-v0 (d=10, obs), submit mode")
    print(f"{'instance':>8s} {'method':>6s} {'directed F1':>12s} {'SHD':>5s}")
    for k in range(3):
        for method in ("pc", "ges"):
            observation, _ = env.reset(seed=0, options={"instance": k})
            result = discovery.run(method, np.asarray(observation["data"]))
            _, reward, _, _, info = env.step(result.graph)
            print(f"{k:8d} {method:>6s} {reward:12.3f} {info['scores']['shd']:5.0f}")


if __name__ == "__main__":
    causalab()
    arena()
