"""One episode as a worker plays it: the task, its store line, its time limits and stop requests.

:func:`play` is what every executor (:mod:`causal_gym.eval.executors`) runs per episode, in this
process, a thread, a pool worker or a Ray task; it never raises for the episode's own faults: a
failure, a timeout or a stop request becomes the episode's line (see :mod:`causal_gym.eval.runner`).

An episode with a time limit or a per-call budget plays in the helper process of
:func:`~causal_gym._workers.call_with_time_limit`: the whole-episode limit kills that process, and
the per-call budgets (:mod:`causal_gym._deadlines`) are enforced in its main thread, where the
``SIGALRM`` they use is delivered and no caller's thread, handler or lock is disturbed. A process
whose call a budget interrupted is discarded, never reused.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

import causal_gym
from causal_gym._deadlines import BudgetExpired, call_budgets, expired
from causal_gym._jsonable import to_jsonable
from causal_gym._workers import (
    TimeLimitExceeded,
    call_with_time_limit,
    discard_time_limited_worker,
    start_time_limited_worker,
)
from causal_gym.agents.registry import make_agent
from causal_gym.eval.store import redact
from causal_gym.harness.contracts import Records
from causal_gym.harness.rollout import RolloutInterrupted, rollout
from causal_gym.seal import OPEN, Seal

__all__ = ["STOP", "EpisodeTask", "failure_line", "play", "play_budgeted", "play_episode", "stop_on_sigterm", "stop_request"]

STOP = threading.Event()
"""Set by a stop request; episodes check it before every step."""

_CHECKED: set[tuple[str, str | None]] = set()
"""``(env_id, variant)`` pairs whose episode envs this process has made under Gymnasium's passive checker."""


@dataclass(frozen=True)
class EpisodeTask:
    """Everything a worker needs to play one episode (picklable: plain values, and the factory of an
    agent of the caller's ``__main__``)."""

    key: str
    env_id: str
    split: str | None
    instance: int
    repeat: int
    env_seed: int
    agent_seed: int | None
    agent: str
    agent_kwargs: Mapping[str, Any]
    env_kwargs: Mapping[str, Any]
    max_steps: int
    seal: Seal | None = field(default=None, repr=False)
    pass_seal: bool = False
    variant: str | None = None
    time_limit: float | None = None
    agent_timeout: float | None = None
    tool_timeout: float | None = None
    scorer_timeout: float | None = None
    factory: Callable[..., Any] | None = field(default=None, repr=False)
    """The agent's factory when it lives in the caller's ``__main__`` (``"__main__:Factory"``), which no
    worker runs, or was given as an object: the task carries it (cloudpickle: by value when it is
    not importable)."""
    agent_instance: Any = field(default=None, repr=False)
    """The agent itself, when the run was given an instance: it plays the episode as it is (a worker
    process receives a copy)."""
    env_spec: EnvSpec | None = field(default=None, repr=False)
    """The env's ``EnvSpec`` when the caller's script registered it with an entry point of its own
    ``__main__``: carried by value likewise, since a worker's registry lacks it."""

    def header(self) -> dict[str, Any]:
        """The identifying fields of the episode's line."""
        variant = {} if self.variant is None else {"variant": self.variant}
        return {
            **variant,
            "key": self.key,
            "env_id": self.env_id,
            "split": self.split,
            "instance": self.instance,
            "repeat": self.repeat,
            "env_seed": self.env_seed,
            "agent_seed": self.agent_seed,
            "agent": self.agent,
            "agent_kwargs": redact(self.agent_kwargs),
            "seal": None if self.seal is None else self.seal.fingerprint,
        }

    def make_agent(self, **kwargs: Any) -> Any:
        """The episode's agent: the run's instance, or a fresh one from its name or factory with ``kwargs``."""
        if self.agent_instance is not None:
            return self.agent_instance
        return make_agent(self.agent, self.factory, **kwargs)

    @property
    def budgeted(self) -> bool:
        """Whether any per-call budget is set (the episode then plays in the helper process)."""
        return any(seconds is not None for seconds in (self.agent_timeout, self.tool_timeout, self.scorer_timeout))

    def make_env(self, check_once: bool = False) -> gym.Env:
        """The episode's env; an env that takes ``seal=`` gets the run's seal (or OPEN explicitly).

        With ``check_once``, Gymnasium's passive env checker (which ``gym.make`` adds; it validates the
        first reset and step against the spaces, text observations character by character) wraps only
        the first env of each id and variant that this process makes so: it costs about 0.5 ms of the
        3.5 ms of env CPU in a Heuresis d = 4 LLM episode (``benchmarks/llm_concurrency.py``), and
        Python shows each of its warnings once anyway.
        """
        kwargs = dict(self.env_kwargs)
        if self.pass_seal:
            kwargs["seal"] = OPEN if self.seal is None else self.seal
        checked = (self.env_id, self.variant)
        skip_checker = True if check_once and checked in _CHECKED else None  # None: the spec's own setting
        if check_once:
            _CHECKED.add(checked)
        return gym.make(self.env_id if self.env_spec is None else self.env_spec, disable_env_checker=skip_checker,
                        **kwargs)


def _agent_hook(agent: Any, name: str) -> Any:
    """The agent's optional ``usage()`` / ``transcript()``; a failing hook is recorded, not raised."""
    hook = getattr(agent, name, None)
    if not callable(hook):
        return None
    try:
        return to_jsonable(hook())
    except Exception as exc:  # noqa: BLE001 -- bookkeeping must not cost the episode its scores
        return {"error": f"{type(exc).__name__}: {exc}"}


def _line(task: EpisodeTask, agent: Any, start: float | None, **fields: Any) -> dict[str, Any]:
    """The store line of ``task``: its header, ``fields`` and the agent's hooks, as plain JSON."""
    return to_jsonable({
        **task.header(),
        **fields,
        "usage": _agent_hook(agent, "usage"),
        "transcript": _agent_hook(agent, "transcript"),
        "wall_time": None if start is None else time.perf_counter() - start,
        "causal_gym_version": causal_gym.__version__,
    })


def failure_line(task: EpisodeTask, agent: Any, start: float | None, trace: Any = None) -> dict[str, Any]:
    """The failed line of ``task``, from the exception being handled."""
    exc = sys.exc_info()[1]
    return _line(
        task, agent, start, status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(),
        reward=None, steps=None, scores={}, record=None, trace=trace,
    )


def _trace(env: Any) -> Any:
    """The env's call record so far, or None (no episode started, or the record itself is broken)."""
    base = env.unwrapped if env is not None else None
    if not isinstance(base, Records):
        return None
    try:
        return to_jsonable(base.record())
    except Exception:  # noqa: BLE001
        return None


def _budget_line(task: EpisodeTask, agent: Any, start: float | None, exc: BudgetExpired, env: Any) -> dict[str, Any]:
    """The timeout line of an episode whose ``exc.budget`` call ran past its budget (with what it had done)."""
    calls = {"agent": "an agent call (agent.act)", "tool": "an env step", "scorer": "the final scoring"}
    return _line(task, agent, start, status="timeout", timeout=exc.budget, traceback=None, reward=None, steps=None,
                 scores={}, record=None, trace=_trace(env),
                 error=f"{calls[exc.budget]} exceeded the run's {exc.budget}_timeout of {exc.seconds:g} s")


def play_episode(task: EpisodeTask) -> dict[str, Any]:
    """Play ``task`` and return its store line (plain JSON values); exceptions become a failed line,
    a stop request an interrupted one, a call past its budget (:mod:`causal_gym._deadlines`, when
    the caller enforces them) a timeout line naming the budget."""
    start = time.perf_counter()
    env = agent = None
    try:
        env = task.make_env(check_once=True)
        agent = task.make_agent(**task.agent_kwargs)
        options = {"instance": task.instance} if task.split is None else {"split": task.split, "instance": task.instance}
        record = rollout(env, agent, seed=task.env_seed, options=options, max_steps=task.max_steps,
                         should_stop=STOP.is_set)
        swallowed = expired()
        if task.budgeted and swallowed is not None:  # the agent or env caught it: the call still ran over
            return _budget_line(task, agent, start, swallowed, env)
        return _line(
            task, agent, start, status=record.status, error=None, traceback=None, reward=record.total_reward,
            steps=record.steps, scores=record.final_info.get("scores", {}), record=record.to_dict(), trace=None,
        )
    except BudgetExpired as exc:
        return _budget_line(task, agent, start, exc, env)
    except (RolloutInterrupted, KeyboardInterrupt) as exc:
        return _line(
            task, agent, start, status="interrupted", error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(), reward=None, steps=None, scores={}, record=None, trace=_trace(env),
        )
    except Exception:  # noqa: BLE001 -- a failed episode is data; the run goes on
        if task.budgeted and (swallowed := expired()) is not None:  # an error the expiry caused downstream
            return _budget_line(task, agent, start, swallowed, env)
        return failure_line(task, agent, start, _trace(env))
    finally:
        if env is not None:
            env.close()


def play_budgeted(task: EpisodeTask) -> dict[str, Any]:
    """:func:`play_episode` under the task's per-call budgets (in the helper process's main thread)."""
    if not task.budgeted:
        return play_episode(task)
    with call_budgets(task.agent_timeout, task.tool_timeout, task.scorer_timeout):
        return play_episode(task)


def play(task: EpisodeTask) -> dict[str, Any]:
    """Play ``task``; under a time limit or a per-call budget in the worker process of
    :func:`~causal_gym._workers.call_with_time_limit`, which is killed when the limit expires (the
    episode then gets a ``"timeout"`` line with ``timeout="episode"``) and discarded after a
    budget's expiry (``timeout="agent"``, ``"tool"`` or ``"scorer"``)."""
    if task.time_limit is None and not task.budgeted:
        return play_episode(task)
    start = time.perf_counter()
    if STOP.is_set():  # a task the pool handed over after the stop request: start nothing
        return _line(task, None, start, status="interrupted", error="RolloutInterrupted: stopped before it started",
                     traceback=None, reward=None, steps=None, scores={}, record=None, trace=None)
    try:
        start_time_limited_worker(__name__)  # the limit counts the episode, not the worker's start-up
        start = time.perf_counter()
        line = call_with_time_limit(functools.partial(play_budgeted, task), task.time_limit, in_worker=True)
        if line["status"] == "timeout":  # a budget interrupted a call there: the process may be in any state
            discard_time_limited_worker()
        return line
    except TimeLimitExceeded:
        return _line(task, None, start, status="timeout", timeout="episode", traceback=None, reward=None, steps=None,
                     scores={}, record=None, trace=None,
                     error=f"the episode exceeded the run's time limit of {task.time_limit:g} s and was killed")
    except BrokenProcessPool:
        return _line(task, None, start, status="failed", traceback=traceback.format_exc(), reward=None, steps=None,
                     scores={}, record=None, trace=None,
                     error="the episode's process died without a result (killed, out of memory or crashed)")
    except (RolloutInterrupted, KeyboardInterrupt) as exc:
        return _line(task, None, start, status="interrupted", error=f"{type(exc).__name__}: {exc}",
                     traceback=traceback.format_exc(), reward=None, steps=None, scores={}, record=None, trace=None)


def stop_request(signum: int, frame: Any) -> None:
    STOP.set()
    raise RolloutInterrupted(f"stopped by {signal.Signals(signum).name}")


def stop_on_sigterm() -> None:
    """Worker set-up: SIGTERM is a stop request."""
    signal.signal(signal.SIGTERM, stop_request)

