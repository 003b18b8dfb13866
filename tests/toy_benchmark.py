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

from causal_gym.envs.benchmark import (
    AgentEntry,
    BenchmarkSpec,
    EnvEntry,
    InspectTask,
    ReportOptions,
    register_benchmark,
)
from causal_gym.harness.agent import TaskSpec
from causal_gym.harness.budgets import Budgets
from causal_gym.harness.tool_env import Outcome, ToolEnv, ToolResult
from causal_gym.harness.toolbox import TEXT_CHARSET, ActionField, Tool, Toolbox, display_text
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
        self._truth, self._data = _instance(int((options or {}).get("instance", 0)), self.n)
        return self._data.copy(), {}

    def step(self, action):
        correct = int(action) == self._truth
        info = {"scores": {"correct": float(correct)}, "truth": self._truth}
        return self._data.copy(), float(correct), True, False, info

    def task_description(self) -> str:
        return "Two variables; answer 0 if X0 causes X1, 1 if X1 causes X0."


def _instance(index: int, n: int) -> tuple[int, np.ndarray]:
    """The truth (0: X0 -> X1) and the data of instance ``index``."""
    rng = np.random.default_rng([7, index])
    truth = int(rng.integers(2))
    cause = rng.uniform(-1, 1, n)
    effect = cause + 0.3 * rng.uniform(-1, 1, n)
    return truth, np.column_stack([cause, effect] if truth == 0 else [effect, cause])


ANSWERS = ("X0 -> X1", "X1 -> X0")


class ToyDirectionToolEnv(ToolEnv):
    """Toy direction by tool calls: ``describe`` the data (a turn), then ``submit`` the direction."""

    def __init__(self, n: int = 200, turns: int = 3, render_mode: str | None = None) -> None:
        toolbox = Toolbox(
            [Tool("describe", "Correlation and the variables' ranges."),
             Tool("submit", "Answer which variable causes the other; ends the episode.", ("answer",), ("answer",))],
            [ActionField("answer", "choice", "the causal direction", ANSWERS)], d=2)
        super().__init__(toolbox, budget_names=("turns",), step_budget="turns", render_mode=render_mode)
        self.n, self.turns = n, turns
        self.observation_space = spaces.Dict({
            "phase": spaces.Discrete(3),
            "last_result": spaces.Text(toolbox.text_max_length, min_length=0, charset=TEXT_CHARSET),
        })

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._truth, self._data = _instance(int((options or {}).get("instance", 0)), self.n)
        self._start_episode(Budgets({"turns": self.turns}))
        self._last_text = "Two variables X0 and X1; call describe, then submit."
        return self._observation(), self._info()

    def task_description(self) -> str:
        return "Two variables; find which one causes the other and submit it."

    def _tool_describe(self) -> ToolResult:
        r = float(np.corrcoef(self._data.T)[0, 1])
        return ToolResult(f"correlation {r:.3f}; ranges {np.ptp(self._data, axis=0).round(3).tolist()}")

    def _tool_submit(self, answer: str) -> ToolResult:
        return ToolResult(f"submitted {answer}", end=ANSWERS.index(answer))

    def _on_exhausted(self, outcome: Outcome, exhausted: list[str]) -> None:
        outcome.end = -1  # out of turns: the episode ends unanswered

    def _observation(self) -> dict[str, Any]:
        return {"phase": self._phase, "last_result": display_text(self._last_text, self.toolbox.text_max_length)}

    def _finish(self, outcome: Outcome):
        correct = outcome.end == self._truth
        info = self._info(outcome.data) | {"scores": {"correct": float(correct)}}
        return self._observation(), float(correct), True, False, info

    def _render(self) -> str:
        return self._last_text


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
    envs=(EnvEntry("ToyDirection-v0", "toy_benchmark:ToyDirectionEnv", "Toy -- which of two variables is the cause"),
          EnvEntry("ToyDirection-tools-v0", "toy_benchmark:ToyDirectionToolEnv",
                   "Toy by tool calls -- describe the data, submit the direction")),
    agents={"toy-first": AgentEntry("toy_benchmark:FirstCausesAgent", "Toy: always X0 -> X1")},
    report="toy_benchmark",
    inspect_tasks=(InspectTask("toy_direction", "Toy direction episodes, played by tool calls.", {},
                               {(): "ToyDirection-tools-v0"}),),
)
register_benchmark(SPEC)  # importing the module is all a process needs: "toy_benchmark:ToyDirection-v0"
