"""Agents for runner tests, importable by worker processes as ``runner_agents:<Name>`` (tests/ on the path)."""

from __future__ import annotations

import os
import time
from typing import Any

from causal_gym.harness.agent import TaskSpec, typed_action


class SlowAgent:
    """Calls ``summarize`` ``steps`` times, ``delay`` seconds apart, then submits: an episode long enough to stop.

    ``$SLOW_AGENT_STEPS`` overrides ``steps``, so a test can resume a run with the same configuration
    but shorter episodes; with ``$SLOW_AGENT_MARK`` set, each step appends a line to that file, so a
    test can wait for episodes to be under way instead of guessing a time.
    """

    def __init__(self, steps: int = 20, delay: float = 0.1) -> None:
        self.steps = int(os.environ.get("SLOW_AGENT_STEPS", steps))
        self.delay = delay

    def reset(self, task: TaskSpec) -> None:
        self.task, self.done = task, 0

    def act(self, observation: Any, info: Any) -> Any:
        time.sleep(self.delay)
        self.done += 1
        mark = os.environ.get("SLOW_AGENT_MARK")
        if mark:
            with open(mark, "a", encoding="utf-8") as stream:
                stream.write(f"{os.getpid()} {self.done}\n")
        return typed_action(self.task, "summarize" if self.done <= self.steps else "submit")


class SleepyAgent:
    """Waits ``delay`` seconds, then answers ``answer`` (the toy benchmark's one step); ``usage()`` tells
    how many rows the observation had, so a test sees which env keywords reached the env.
    ``$SLEEPY_AGENT_DELAY`` overrides ``delay`` (a resumed run with the same configuration, but quick)."""

    def __init__(self, delay: float = 0.0, answer: int = 0) -> None:
        self.delay, self.answer = float(os.environ.get("SLEEPY_AGENT_DELAY", delay)), answer
        self.rows: int | None = None

    def reset(self, task: TaskSpec) -> None:
        self.rows = None

    def act(self, observation: Any, info: Any) -> int:
        self.rows = len(observation)
        time.sleep(self.delay)
        return self.answer

    def usage(self) -> dict[str, Any]:
        return {"rows": self.rows}


class MeetingAgent:
    """Before its first step, waits (in :func:`causal_gym.agents.waiting`) until ``$MEETING_AGENTS``
    agents of this process are waiting at once, then submits: a threaded run completes only if every
    waiting agent gives up its turn (with ``$MEETING_AGENTS`` unset it meets nobody and submits)."""

    barrier: Any = None

    def reset(self, task: TaskSpec) -> None:
        import threading

        parties = int(os.environ.get("MEETING_AGENTS", 1))
        if MeetingAgent.barrier is None or MeetingAgent.barrier.parties != parties:
            MeetingAgent.barrier = threading.Barrier(parties, timeout=20)
        self.task = task

    def act(self, observation: Any, info: Any) -> Any:
        from causal_gym.agents import waiting

        with waiting():
            MeetingAgent.barrier.wait()
        return typed_action(self.task, "submit")
