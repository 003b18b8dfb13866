"""A tool env and an agent whose calls take as long as a test asks, for the runner's per-call budgets.

Importable by worker processes (tests/ is on their path): the env is registered on import as
``SlowToy-v0``, so the runner plays it as ``"slow_envs:SlowToy-v0"``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym

from causal_gym.harness.agent import TaskSpec, typed_action
from causal_gym.harness.tool_env import Outcome
from toy_benchmark import ToyDirectionToolEnv


class SlowToyEnv(ToyDirectionToolEnv):
    """The toy direction tool env; ``describe`` sleeps ``describe_delay`` s, the final scoring ``score_delay`` s."""

    def __init__(self, describe_delay: float = 0.0, score_delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.describe_delay, self.score_delay = describe_delay, score_delay

    def _tool_describe(self):
        time.sleep(self.describe_delay)
        return super()._tool_describe()

    def _finish(self, outcome: Outcome):
        time.sleep(self.score_delay)
        return super()._finish(outcome)


if "SlowToy-v0" not in gym.registry:
    gym.register("SlowToy-v0", entry_point="slow_envs:SlowToyEnv")


class DescribeThenSubmit:
    """Calls ``describe``, then submits X0 -> X1; its second ``act`` sleeps ``delay`` s first (so an
    agent timeout there leaves a record of one call). ``swallow=True`` catches everything while it
    sleeps, as a careless agent might. ``usage()`` tells the pid that played it."""

    def __init__(self, delay: float = 0.0, swallow: bool = False) -> None:
        self.delay, self.swallow = delay, swallow

    def reset(self, task: TaskSpec) -> None:
        self.task, self.calls = task, 0

    def act(self, observation: Any, info: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            return typed_action(self.task, "describe")
        try:
            time.sleep(self.delay)
        except BaseException:  # noqa: BLE001 -- what a careless agent does
            if not self.swallow:
                raise
        return typed_action(self.task, "submit", answer="X0 -> X1")

    def usage(self) -> dict[str, Any]:
        return {"pid": os.getpid()}
