"""A trained design policy as an agent of the harness: alone, or shortlisting designs for a greedy lookahead.

Needs the ``rl`` extra (torch, Stable-Baselines3); nothing else in causal_gym imports this module.

Policies such as :class:`~causal_gym.envs.design.policy.NodePairPolicy` train on SB3 vector envs with
``observation="summary"``; the harness, the runner and the baselines play agents on the rows
observation. :class:`PolicyDesigner` rebuilds the summary vector from the rows observation with
``observe_posterior=True`` (:func:`~causal_gym.envs.design.batch.summary_vector`, the same numbers the
vector env shows) and plays the network's highest-scoring design, so a trained zip plays wherever
the scripted designers do (``rollout``, ``examples/design_baselines.py``, a user's loop).

With ``shortlist = m > 1`` the policy only proposes: its ``m`` highest-scoring designs go to a
:class:`~causal_gym.envs.design.baselines.GreedyDesigner`, which values each by ``samples``
posterior-predictive outcomes and plays the best. That costs ``m x samples`` posterior
evaluations per decision against full greedy's ``(d x |grid| + 1) x samples``: the policy's
ranking narrows a one-step lookahead, as a policy prior narrows a tree search. ``shortlist=1``
evaluates nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from causal_gym._validation import check_count
from causal_gym.envs.design.baselines import GreedyDesigner, _Designer
from causal_gym.envs.design.batch import summary_vector
from causal_gym.harness.agent import TaskSpec

__all__ = ["PolicyDesigner"]


class PolicyDesigner(_Designer):
    """Plays a trained summary-observation policy from the rows observation (see the module docstring).

    Parameters
    ----------
    policy : path or SB3 policy
        An SB3 zip (loaded with ``PPO.load(..., device="cpu")``) or its ``.policy``; its
        ``mlp_extractor.forward_actor`` maps summary vectors to ``1 + d x |value_grid|`` logits
        (observe, then each node at each value), as :class:`~causal_gym.envs.design.policy.NodePairNet`'s do.
    value_grid : sequence of float, default (1.0,)
        The route's value grid the policy was trained with (fractions of ``value_bound``).
    shortlist : int, default 1
        How many of its best designs the policy proposes to the lookahead (1: none, it plays its best).
    samples, seed, objective
        The lookahead's (:class:`~causal_gym.envs.design.baselines.GreedyDesigner`).

    Examples
    --------
    >>> from causal_gym.harness.rollout import rollout                           # doctest: +SKIP
    >>> env = gym.make("InterventionDesign-lg10-T3-v0", observe_posterior=True)  # doctest: +SKIP
    >>> agent = PolicyDesigner("examples/results/design/mix/mix-pair-seed0.zip", shortlist=2)  # doctest: +SKIP
    >>> rollout(env, agent, options={"split": "test", "instance": 400}).final_info["scores"]  # doctest: +SKIP
    """

    def __init__(self, policy: str | Path | Any, *, value_grid: Sequence[float] = (1.0,), shortlist: int = 1,
                 samples: int = 8, seed: int = 0, objective: str = "confidence") -> None:
        if isinstance(policy, (str, Path)):
            from stable_baselines3 import PPO

            policy = PPO.load(str(policy), device="cpu").policy
        if not callable(getattr(getattr(policy, "mlp_extractor", None), "forward_actor", None)):
            raise TypeError(f"policy must be an SB3 zip path or a policy whose mlp_extractor has forward_actor, "
                            f"got {type(policy).__name__}")
        self.policy = policy
        self.shortlist = check_count(shortlist, "shortlist", 1)
        self.lookahead = GreedyDesigner(samples=samples, value_grid=value_grid, observe=True, seed=seed,
                                        objective=objective)
        self.grid = self.lookahead.value_grid

    @property
    def evaluations(self) -> int:
        """Posterior evaluations of the lookahead so far (0 with ``shortlist=1``); settable, like greedy's counter."""
        return self.lookahead.evaluations

    @evaluations.setter
    def evaluations(self, count: int) -> None:
        self.lookahead.evaluations = count

    def reset(self, task: TaskSpec) -> None:
        super().reset(task)
        if self.k != 1:
            raise ValueError(f"PolicyDesigner plays one design per step; this task asks for {self.k} "
                             "(play batch policies on DesignSB3VecEnv with action='multidiscrete')")
        self.lookahead.reset(task)
        self.budget, self.rows_per_step = int(task.condition["budget"]), int(task.condition["rows_per_step"])

    def scores(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The policy's ``1 + d x |value_grid|`` logits for this observation (observe first)."""
        if "edge_probs" not in observation:
            raise ValueError("PolicyDesigner reads the posterior the env shows: make the env with observe_posterior=True")
        filled = np.asarray(observation["filled"]).astype(bool)
        intervened = np.asarray(observation["intervention_mask"])[filled].sum(axis=0)
        x = summary_vector(observation["edge_probs"], intervened, np.asarray(observation["budget_left"]).reshape(1),
                           self.budget, self.rows_per_step)
        with torch.no_grad():
            logits = self.policy.mlp_extractor.forward_actor(torch.as_tensor(x[None]))[0].numpy()
        if logits.shape != (1 + self.d * self.grid.size,):
            raise ValueError(f"the policy gives {logits.shape[0]} logits; d = {self.d} with a value grid of "
                             f"{self.grid.size} needs {1 + self.d * self.grid.size} (is value_grid the policy's?)")
        return logits

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        best = np.argsort(-self.scores(observation), kind="stable")[: self.shortlist]
        best = np.sort(best)  # GreedyDesigner.candidates' order (nodes, then observe): the full list draws as greedy does
        if best[0] == 0:
            best = np.append(best[1:], 0)
        targets = np.where(best > 0, (best - 1) // self.grid.size, -1)
        values = np.where(best > 0, self.grid[(best - 1) % self.grid.size] * self.value_bound, 0.0)
        if best.size == 1:
            return [(None if targets[0] < 0 else int(targets[0]), float(values[0]))]
        self.lookahead.step = self.step
        return self.lookahead.best_of(observation, targets, values)
