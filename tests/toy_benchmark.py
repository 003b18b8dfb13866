"""A toy benchmark defined outside causal_gym's folders: the proof that a benchmark is one module.

Its env shows 200 rows of two variables, one causing the other with uniform (non-Gaussian)
noise; the answer is the direction; the reward is 1 for the right one. It declares its id, an
agent and a report module (this module) in :data:`SPEC`; ``register_benchmark(SPEC)`` on import is
all it takes to appear in ``causal-gym list``, play under the runner (``"toy_benchmark:ToyDirection-v0"``
imports it in worker processes too) and get a table in the report.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry, ReportOptions, register_benchmark
from causal_gym.harness.agent import TaskSpec
from causal_gym.tables import ReportTable, build_table


class ToyDirectionEnv(gym.Env):
    """Toy direction: say which of two variables causes the other (one step)."""

    metadata = {"render_modes": []}

    def __init__(self, n: int = 200) -> None:
        self.n = n
        self.observation_space = spaces.Box(-np.inf, np.inf, (n, 2), dtype=np.float64)
        self.action_space = spaces.Discrete(2)  # 0: X0 -> X1, 1: X1 -> X0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        index = int((options or {}).get("instance", 0))
        rng = np.random.default_rng([7, index])
        self._truth = int(rng.integers(2))
        cause = rng.uniform(-1, 1, self.n)
        effect = cause + 0.3 * rng.uniform(-1, 1, self.n)
        self._data = np.column_stack([cause, effect] if self._truth == 0 else [effect, cause])
        return self._data.copy(), {}

    def step(self, action):
        correct = int(action) == self._truth
        info = {"scores": {"correct": float(correct)}, "truth": self._truth}
        return self._data.copy(), float(correct), True, False, info

    def task_description(self) -> str:
        return "Two variables; answer 0 if X0 causes X1, 1 if X1 causes X0."


class FirstCausesAgent:
    """Always answers X0 -> X1 (right half of the time)."""

    def reset(self, task: TaskSpec) -> None:
        self.task = task

    def act(self, observation: Any, info: Any) -> int:
        return 0


def episode_columns(params: dict[str, Any], line: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    return {"setting": "direction", "scores": line.get("scores") or {}}


def report_tables(frame: Any, options: ReportOptions) -> list[ReportTable]:
    rows = [{"agent": agent, "episodes": len(group), "accuracy": float(group["score.correct"].mean())}
            for agent, group in frame.groupby("agent")]
    return [ReportTable("toy_direction", "Toy direction -- accuracy by agent", build_table(rows))]


SPEC = BenchmarkSpec(
    name="toy",
    title="Toy direction",
    envs=(EnvEntry("ToyDirection-v0", "toy_benchmark:ToyDirectionEnv", "Toy -- which of two variables is the cause"),),
    agents={"toy-first": AgentEntry("toy_benchmark:FirstCausesAgent", "Toy: always X0 -> X1")},
    report="toy_benchmark",
)
register_benchmark(SPEC)  # importing the module is all a process needs: "toy_benchmark:ToyDirection-v0"
