"""Skeleton3: find the skeleton of a random three-variable DAG from its data, in one step."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym.harness.agent import TaskSpec
from causal_gym.metrics import adjacency_scores

PAIRS = ((0, 1), (0, 2), (1, 2))


def instance(index: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The true DAG and ``n`` rows of instance ``index``: each of the three pairs an edge with
    probability 2/3, oriented by a random order, linear Gaussian mechanisms."""
    rng = np.random.default_rng([3, index])
    order = rng.permutation(3)
    dag = np.zeros((3, 3), dtype=np.int8)
    for i, j in PAIRS:
        if rng.random() < 2 / 3:
            first, second = sorted((i, j), key=lambda k: int(np.flatnonzero(order == k)[0]))
            dag[first, second] = 1
    data = rng.normal(size=(n, 3))
    for k in order:
        data[:, k] += data @ (dag[:, k] * rng.uniform(0.5, 1.5, 3) * rng.choice((-1, 1), 3))
    return dag, data


class Skeleton3Env(gym.Env):
    """Skeleton3: say which of the three pairs of variables are adjacent in the true DAG.

    ## Description

    An instance is a random DAG over ``X0, X1, X2`` and ``n`` rows of linear Gaussian data from it.
    The agent sees the data and answers once.

    ## Action Space

    ``MultiBinary(3)``: one bit per pair ``(X0, X1), (X0, X2), (X1, X2)``, 1 for adjacent.

    ## Observation Space

    ``Box(-inf, inf, (n, 3), float64)``: the data.

    ## Rewards

    The adjacency F1 of the answer against the true skeleton (``causal_gym.metrics.adjacency_scores``).

    ## Episode End

    After the one answer (``terminated``); the final info holds ``scores``.

    ## Arguments

    ``n`` (default 500): rows per instance; ``render_mode``: ``"ansi"`` or None. Reset options:
    ``{"instance": k}`` (k >= 0) picks instance k; without it the seed draws one.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, n: int = 500, render_mode: str | None = None) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.n, self.render_mode = int(n), render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.n, 3), dtype=np.float64)
        self.action_space = spaces.MultiBinary(3)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"instance"})
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; the only one is 'instance'")
        index = options.get("instance", int(self.np_random.integers(2**31)))
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"instance must be an integer >= 0, got {index!r}")
        self._dag, self._data = instance(int(index), self.n)
        self._answer: np.ndarray | None = None
        return self._data.copy(), {}

    def step(self, action):
        bits = np.asarray(action, dtype=np.int8).reshape(3)
        answer = np.zeros((3, 3), dtype=np.int8)
        for bit, (i, j) in zip(bits, PAIRS):
            answer[i, j] = answer[j, i] = bit
        self._answer = answer
        f1 = adjacency_scores(self._dag, answer).f1
        return self._data.copy(), float(f1), True, False, {"scores": {"adjacency_f1": float(f1)}}

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self._answer is None:
            return f"{self.n} rows of X0, X1, X2; no answer yet"
        return "answered " + ", ".join(f"X{i}-X{j}" for i, j in PAIRS if self._answer[i, j])

    def task_description(self) -> str:
        return "Three variables X0, X1, X2: answer which pairs are adjacent in the causal DAG."


class PartialCorrelationAgent:
    """Answers the skeleton of the plug-in's ``pcorr`` method (run through causal_gym.discovery)."""

    def __init__(self, alpha: float = 0.01) -> None:
        self.alpha = alpha

    def reset(self, task: TaskSpec) -> None:
        self.task = task

    def act(self, observation: Any, info: Any) -> np.ndarray:
        from causal_gym.discovery import run

        graph = run("pcorr", np.asarray(observation), alpha=self.alpha).graph
        return np.array([graph[i, j] for i, j in PAIRS], dtype=np.int8)
