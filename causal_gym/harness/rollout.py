"""One episode of an agent on an environment, kept as a JSON-serialisable record.

The full runner (many episodes, resumable run stores, Ray) builds on :func:`rollout`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from causal_gym._jsonable import to_jsonable
from causal_gym.harness.agent import Agent, task_spec

__all__ = ["EpisodeRecord", "RolloutInterrupted", "rollout"]


class RolloutInterrupted(BaseException):
    """A stop request (a signal, or ``should_stop()``) while an episode was being played.

    A ``BaseException``, like ``KeyboardInterrupt``, so that an agent's or env's ``except Exception``
    does not swallow it.
    """


@dataclass
class EpisodeRecord:
    """Everything one episode produced.

    ``final_info`` is the info of the last step (for causal_gym envs it holds the scores and the
    truth-based analyses, which appear only once the episode has ended). ``env_record`` is the
    env's own call record (``env.unwrapped.record()``) when the env keeps one.
    """

    env_id: str
    seed: int | None
    options: dict[str, Any]
    steps: int
    total_reward: float
    terminated: bool
    truncated: bool
    wall_time: float
    rewards: list[float] = field(default_factory=list)
    final_info: dict[str, Any] = field(default_factory=dict)
    env_record: Any = None

    @property
    def finished(self) -> bool:
        """True when the task ended on its own (not cut off by a limit)."""
        return self.terminated and not self.truncated

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "seed": self.seed,
            "options": to_jsonable(self.options),
            "steps": self.steps,
            "total_reward": self.total_reward,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "finished": self.finished,
            "wall_time": self.wall_time,
            "rewards": self.rewards,
            "final_info": to_jsonable(self.final_info),
            "env_record": to_jsonable(self.env_record),
        }


def rollout(
    env: gym.Env,
    agent: Agent,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    max_steps: int = 100_000,
    should_stop: Callable[[], bool] | None = None,
) -> EpisodeRecord:
    """Play one episode of ``agent`` on ``env`` and return its record.

    Parameters
    ----------
    env:
        Any Gymnasium env; causal_gym envs add tool schemas, budgets and a call record.
    agent:
        Implements :class:`causal_gym.agents.Agent`.
    seed, options:
        Passed to ``env.reset`` (e.g. ``options={"split": "test", "instance": 3}``).
    max_steps:
        A safety stop for envs without their own limit; reaching it marks the episode truncated.
    should_stop:
        Checked before every step; when it returns True the episode stops with
        :class:`RolloutInterrupted` (how the runner stops episodes playing in threads).

    Examples
    --------
    >>> import gymnasium as gym
    >>> from causal_gym.agents import RandomAgent
    >>> record = rollout(gym.make("CartPole-v1"), RandomAgent(seed=0), seed=0)
    >>> record.steps > 0
    True
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    opts = dict(options or {})
    start = time.perf_counter()
    observation, info = env.reset(seed=seed, options=opts or None)
    bind = getattr(agent, "bind", None)
    if callable(bind):  # agents that speak JSON tool calls need the env's converter (see Agent)
        bind(env)
    agent.reset(task_spec(env))
    rewards: list[float] = []
    terminated = truncated = False
    while not (terminated or truncated):
        if should_stop is not None and should_stop():
            raise RolloutInterrupted("stop requested")
        action = agent.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        if len(rewards) >= max_steps and not (terminated or truncated):
            truncated = True
    base = env.unwrapped
    return EpisodeRecord(
        env_id=env.spec.id if env.spec is not None else "unregistered",
        seed=seed,
        options=opts,
        steps=len(rewards),
        total_reward=float(sum(rewards)),
        terminated=bool(terminated),
        truncated=bool(truncated),
        wall_time=time.perf_counter() - start,
        rewards=rewards,
        final_info=dict(info),
        env_record=base.record() if hasattr(base, "record") else None,
    )
