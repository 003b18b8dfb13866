"""Method baselines for CausalArena's submit mode: one discovery-menu method answers the dataset.

The agent reads the data table, keeps the real variables (``observation["variables"]``; the rest
are padding slots), runs :func:`causal_gym.discovery.run` and submits the graph embedded back
into the padded adjacency. Mask-aware methods (GIES) get the intervention mask on obs+int splits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from causal_gym.harness.agent import TaskSpec

__all__ = ["MethodAgent"]


class MethodAgent:
    """Submits the output of discovery method ``method`` (e.g. ``"pc"``, ``"gies"``) with ``options``."""

    def __init__(self, method: str = "pc", **options: Any) -> None:
        from causal_gym.discovery import methods

        if method not in methods():
            raise ValueError(f"unknown method {method!r}; choose one of {', '.join(methods())}")
        self.method, self.options = method, dict(options)

    def reset(self, task: TaskSpec) -> None:
        if set(task.observation_space.spaces) < {"data", "mask", "variables"}:
            raise ValueError(f"MethodAgent plays CausalArena's submit mode, not {task.env_id}")

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> np.ndarray:
        from causal_gym.discovery import run, supports_interventions

        real = np.flatnonzero(np.asarray(observation["variables"], dtype=bool))
        data = np.asarray(observation["data"], dtype=float)[:, real]
        mask = np.asarray(observation["mask"], dtype=bool)[:, real]
        extra = {"mask": mask} if supports_interventions(self.method) and mask.any() else {}
        graph = run(self.method, data, **extra, **self.options).graph
        width = len(observation["variables"])
        answer = np.zeros((width, width), dtype=np.int8)
        answer[np.ix_(real, real)] = graph
        return answer
