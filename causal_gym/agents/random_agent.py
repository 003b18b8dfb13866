"""The uniform-random agent: the floor every benchmark reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from causal_gym.harness.agent import TaskSpec

__all__ = ["RandomAgent"]


class RandomAgent:
    """Samples uniformly from the action space (with the env's action mask when it offers one).

    On the causal_gym tool envs the mask (``info["action_mask"]``) and the typed space together
    draw only calls the env accepts (:class:`causal_gym.harness.ToolActionSpace`), so the floor is
    random valid play, not a stream of rejected calls.

    The floor every benchmark reports. Seeded: the same ``seed`` gives the same action sequence
    for the same observations.
    """

    def __init__(self, seed: int | None = 0) -> None:
        self.seed = seed
        self._episode = 0
        self._space: gym.Space | None = None

    def reset(self, task: TaskSpec) -> None:
        self._space = task.action_space
        # Each episode gets its own stream, derived from the agent seed and the episode counter.
        self._space.seed(int(np.random.SeedSequence([self.seed or 0, self._episode]).generate_state(1)[0]))
        self._episode += 1

    def act(self, observation: Any, info: Mapping[str, Any]) -> Any:
        if self._space is None:
            raise RuntimeError("RandomAgent.act() called before reset(task)")
        mask = info.get("action_mask") if isinstance(info, Mapping) else None
        return self._space.sample(mask=mask) if mask is not None else self._space.sample()
