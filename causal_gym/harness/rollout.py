"""One episode of an agent on an environment, kept as a JSON-serialisable record.

The full runner (many episodes, resumable run stores, Ray; :mod:`causal_gym.eval.runner`) builds
on :func:`rollout`, and so do the benchmarks' reproduce scripts: :func:`episode_seeds` gives both
the same seeds for the same episode, so they play it identically, and :func:`episode_key` names it
in a run store (the runner's and ``causal-gym serve``'s).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from causal_gym._deadlines import call_budget
from causal_gym._jsonable import to_jsonable
from causal_gym.harness.agent import Agent, task_spec
from causal_gym.harness.contracts import BindsEnv, Records

__all__ = ["EpisodeRecord", "RolloutInterrupted", "episode_key", "episode_seeds", "rollout"]


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

    @property
    def status(self) -> str:
        """The run store's status of the episode: ``"rescued"`` (the env submitted the working graph
        for the agent), ``"truncated"`` (a limit was involved but the agent submitted) or ``"finished"``."""
        if self.final_info.get("submission_source") == "rescued_working_graph":
            return "rescued"
        return "truncated" if self.truncated else "finished"

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


def episode_seeds(seed: int, env_id: str, instance: int, repeat: int) -> tuple[int, int]:
    """``(env_seed, agent_seed)`` of episode ``(env_id, instance, repeat)`` of a run with base ``seed``.

    The two 32-bit words of ``SeedSequence(seed, spawn_key=(crc32(env_id), instance, repeat))``:
    the first seeds ``env.reset``, the second the agent. They do not depend on the order in which
    a run plays its episodes, its backend or its number of workers.

    Examples
    --------
    >>> episode_seeds(0, "CartPole-v1", 0, 0) == episode_seeds(0, "CartPole-v1", 0, 0)
    True
    """
    words = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(env_id.encode()), instance, repeat)).generate_state(2)
    return int(words[0]), int(words[1])


def episode_key(env_id: str, split: str | None, instance: int, repeat: int, variant: str | None = None) -> str:
    """The identity of an episode in a run: ``"env_id|split|instance|repeat"`` (split ``-`` when None),
    followed by ``"|variant"`` for an episode of a run with variants.

    Examples
    --------
    >>> episode_key("CausalArena-synthetic-v0", "test", 3, 0, "d10/obs/r0/pc")
    'CausalArena-synthetic-v0|test|3|0|d10/obs/r0/pc'
    """
    key = f"{env_id}|{'-' if split is None else split}|{instance}|{repeat}"
    return key if variant is None else f"{key}|{variant}"


def rollout(
    env: gym.Env,
    agent: Agent | Callable[[], Agent],
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    max_steps: int = 100_000,
    should_stop: Callable[[], bool] | None = None,
) -> EpisodeRecord:
    """Play one episode of ``agent`` on ``env`` and return its record.

    Each ``agent.act`` is marked as an ``"agent"`` call and each ``env.step`` as a ``"tool"`` call
    (:func:`causal_gym._deadlines.call_budget`): under the runner's per-call budgets a call past its
    budget raises :class:`~causal_gym._deadlines.BudgetExpired`; otherwise the marks do nothing.

    Parameters
    ----------
    env:
        Any Gymnasium env; causal_gym envs add tool schemas, budgets and a call record.
    agent:
        Implements :class:`causal_gym.agents.Agent`; or a factory (a class, a function) called with no
        arguments to build one for this episode.
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
    if isinstance(agent, type) or not isinstance(agent, Agent) and callable(agent):
        agent = agent()
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must have reset(task) and act(observation, info) (or be a factory of one), got "
                        f"{type(agent).__name__}")
    opts = dict(options or {})
    start = time.perf_counter()
    observation, info = env.reset(seed=seed, options=opts or None)
    if isinstance(agent, BindsEnv):  # agents that speak JSON tool calls need the env's converter (see Agent)
        agent.bind(env)
    agent.reset(task_spec(env))
    rewards: list[float] = []
    terminated = truncated = False
    while not (terminated or truncated):
        if should_stop is not None and should_stop():
            raise RolloutInterrupted("stop requested")
        with call_budget("agent"):
            action = agent.act(observation, info)
        with call_budget("tool"):
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
        env_record=base.record() if isinstance(base, Records) else None,
    )
