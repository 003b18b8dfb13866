"""A trained design policy as an agent of the harness, and as the proposer of a greedy lookahead.

Needs the ``rl`` extra (torch, Stable-Baselines3); nothing else in causal_gym imports this module.

Policies such as :class:`~causal_gym.envs.design.policy.NodePairPolicy` train on SB3 vector envs with
``observation="summary"``; the harness, the runner and the baselines play agents on the rows
observation. :class:`PolicyDesigner` rebuilds the summary vector from the rows observation with
``observe_posterior=True`` (:func:`~causal_gym.envs.design.batch.summary_vector`, the same numbers the
vector env shows) and plays the network's highest-scoring design, so a trained zip plays wherever
the scripted designers do (``rollout``, ``examples/design_baselines.py``, a user's loop).

Its :meth:`PolicyDesigner.rank` makes it a ``proposer`` of
:class:`~causal_gym.envs.design.baselines.GreedyDesigner`: with ``shortlist=M`` the lookahead values
only the policy's ``M`` best designs, ``M x samples`` posterior evaluations per decision against full
greedy's ``(d x |grid| + 1) x samples``: the policy's ranking narrows a one-step lookahead, as a
policy prior narrows a tree search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from causal_gym.envs.design.baselines import Designer
from causal_gym.envs.design.batch import summary_vector
from causal_gym.harness.agent import TaskSpec

__all__ = ["PolicyDesigner"]


class PolicyDesigner(Designer):
    """Plays a trained summary-observation policy from the rows observation (see the module docstring).

    Parameters
    ----------
    policy : path or SB3 policy
        An SB3 zip (loaded with ``PPO.load(..., device="cpu")``) or its ``.policy``; its
        ``mlp_extractor.forward_actor`` maps summary vectors to ``1 + d x |value_grid|`` logits
        (observe, then each node at each value), as :class:`~causal_gym.envs.design.policy.NodePairNet`'s do.
    value_grid : sequence of float, default (1.0,)
        The route's value grid the policy was trained with (fractions of ``value_bound``).

    Examples
    --------
    >>> env = gym.make("InterventionDesign-lg10-T3-v0", observe_posterior=True)  # doctest: +SKIP
    >>> policy = PolicyDesigner("examples/results/design/mix/mix-pair-seed0.zip")  # doctest: +SKIP
    >>> rollout(env, policy, options={"split": "test", "instance": 400})  # its own choices  # doctest: +SKIP
    >>> lookahead = GreedyDesigner(samples=8, value_grid=(1.0,), proposer=policy, shortlist=2)  # doctest: +SKIP
    >>> rollout(env, lookahead, options={"split": "test", "instance": 400})  # 16 evaluations a decision  # doctest: +SKIP
    """

    evaluations = 0
    """Posterior evaluations of its own: none (it reads the posterior the env shows)."""

    def __init__(self, policy: str | Path | Any, *, value_grid: Sequence[float] = (1.0,)) -> None:
        if isinstance(policy, (str, Path)):
            from stable_baselines3 import PPO

            policy = PPO.load(str(policy), device="cpu").policy
        if not callable(getattr(getattr(policy, "mlp_extractor", None), "forward_actor", None)):
            raise TypeError(f"policy must be an SB3 zip path or a policy whose mlp_extractor has forward_actor, "
                            f"got {type(policy).__name__}")
        grid = np.array([float(v) for v in value_grid])
        if not grid.size or (np.abs(grid) > 1.0).any():
            raise ValueError(f"value_grid must hold fractions of value_bound in [-1, 1], got {value_grid!r}")
        self.policy, self.grid = policy, grid

    def reset(self, task: TaskSpec) -> None:
        super().reset(task)
        if self.k != 1:
            raise ValueError(f"PolicyDesigner plays one design per step; this task asks for {self.k} "
                             "(play batch policies on DesignSB3VecEnv with action='multidiscrete')")
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
        return logits.astype(np.float64)

    def designs(self, observation: Mapping[str, Any]) -> list[tuple[int | None, float]]:
        best = int(np.argmax(self.scores(observation)))
        if best == 0:
            return [(None, 0.0)]
        node, g = divmod(best - 1, self.grid.size)
        return [(node, float(self.grid[g] * self.value_bound))]

    def rank(self, observation: Mapping[str, Any], targets: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The policy's logit of each candidate design (``-1``: observe), ``-inf`` for a value off its grid:
        :class:`~causal_gym.envs.design.baselines.GreedyDesigner`'s ``proposer`` protocol."""
        logits = self.scores(observation)
        targets, values = np.asarray(targets), np.asarray(values, dtype=np.float64)
        on_grid = np.isclose(values[:, None], self.grid[None, :] * self.value_bound)
        index = np.where(targets < 0, 0, 1 + np.maximum(targets, 0) * self.grid.size + on_grid.argmax(axis=1))
        return np.where((targets < 0) | on_grid.any(axis=1), logits[index], -np.inf)
