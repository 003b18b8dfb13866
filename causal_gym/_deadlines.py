"""Per-call time budgets of an episode: one agent call, one env step, the scoring at its end.

The runner (:mod:`causal_gym.eval.worker`) installs the budgets with :func:`call_budgets` around
an episode; the code that makes the calls marks them with :func:`call_budget` (``"agent"`` around
``agent.act`` and ``"tool"`` around ``env.step`` in :func:`causal_gym.harness.rollout.rollout`,
``"scorer"`` around a tool env's final scoring in :class:`causal_gym.harness.tool_env.ToolEnv`).
Outside :func:`call_budgets` a mark costs nothing and touches no signal.

How a budget is enforced, and why this way
------------------------------------------
A budget has to stop the call it bounds *and* say which budget ran out. A thread cannot be stopped
from outside, and killing the episode's process (what the whole-episode ``time_limit`` does)
loses the attribution and the partial record. So each mark arms ``setitimer(ITIMER_REAL)``, and
the ``SIGALRM`` handler raises :class:`BudgetExpired` in the main thread, inside the call: it
interrupts Python code and blocking system calls (a sleep, a socket read waiting on a model's
server). Two limits follow, and the runner answers both:

- a C routine that never returns to Python (a long BLAS call) is interrupted only when it
  returns; the whole-episode ``time_limit``, which kills the process, is the backstop;
- an interrupted call may leave its process in any state (a lock held, a half-read connection),
  so the runner plays budgeted episodes in the disposable helper process of
  :func:`causal_gym._workers.call_with_time_limit` and discards that process after an expiry.

:class:`BudgetExpired` is a ``BaseException``, so an agent's or env's ``except Exception`` does not
swallow it; one that swallows it anyway is still caught: :func:`expired` keeps the first expiry of
the :func:`call_budgets` block. Marks nest: a ``"scorer"`` mark inside a ``"tool"`` mark (a step
that ends the episode and scores it) pauses the tool's clock, so scoring is charged to the scorer
budget alone; a budget of None pauses the outer clock and arms none.
"""

from __future__ import annotations

import signal
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["BUDGETS", "BudgetExpired", "call_budget", "call_budgets", "expired"]

BUDGETS = ("agent", "tool", "scorer")
"""The per-call budgets: one ``agent.act`` (for an LLM agent, its model call), one ``env.step``,
and the scoring of the episode at its end."""


class BudgetExpired(BaseException):
    """A call ran past its budget (see the module docstring); ``budget`` names which, ``seconds`` its length."""

    def __init__(self, budget: str, seconds: float) -> None:
        super().__init__(f"the {budget} budget of {seconds:g} s expired")
        self.budget, self.seconds = budget, seconds


@dataclass
class _Mark:
    budget: str
    seconds: float | None
    expires: float | None  # monotonic time; None while paused or unlimited
    left: float | None = None  # seconds left while paused


_LIMITS: dict[str, float | None] | None = None
_MARKS: list[_Mark] = []
_EXPIRED: list[BudgetExpired] = []


def _arm() -> None:
    """Arm the timer for the innermost mark (disarm it when that mark has no limit)."""
    top = _MARKS[-1] if _MARKS else None
    if top is None or top.expires is None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    signal.setitimer(signal.ITIMER_REAL, max(top.expires - time.monotonic(), 1e-4))


def _on_alarm(signum: int, frame: Any) -> None:
    top = _MARKS[-1] if _MARKS else None
    if top is None or top.expires is None or top.seconds is None:
        return  # a late signal of a mark that has ended
    if time.monotonic() < top.expires:
        _arm()  # a signal of the outer mark, delivered just as this one began
        return
    exc = BudgetExpired(top.budget, top.seconds)
    if not _EXPIRED:
        _EXPIRED.append(exc)
    top.expires = None  # raised once
    raise exc


@contextmanager
def call_budgets(agent: float | None = None, tool: float | None = None,
                 scorer: float | None = None) -> Iterator[None]:
    """Enforce the per-call budgets (seconds; None: unlimited) on the marks inside the block.

    Needs the main thread (signals are delivered there); elsewhere it warns and enforces nothing.
    The block's previous ``SIGALRM`` handler and timer are restored at its end.
    """
    global _LIMITS
    if threading.current_thread() is not threading.main_thread():
        warnings.warn("per-call budgets are enforced with SIGALRM, in the main thread only; running without them",
                      RuntimeWarning, stacklevel=3)
        yield
        return
    if _LIMITS is not None:
        raise RuntimeError("call_budgets blocks do not nest")
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _LIMITS = {"agent": agent, "tool": tool, "scorer": scorer}
    _MARKS.clear()
    _EXPIRED.clear()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _LIMITS = None
        _MARKS.clear()
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def call_budget(budget: str) -> Iterator[None]:
    """Mark a call of kind ``budget`` (one of :data:`BUDGETS`): inside :func:`call_budgets` (main
    thread), it raises :class:`BudgetExpired` when the call outlasts its budget; elsewhere nothing."""
    if _LIMITS is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    if budget not in _LIMITS:
        raise ValueError(f"budget must be one of {BUDGETS}, got {budget!r}")
    now = time.monotonic()
    outer = _MARKS[-1] if _MARKS else None
    if outer is not None and outer.expires is not None:  # pause the outer clock
        outer.left, outer.expires = outer.expires - now, None
    seconds = _LIMITS[budget]
    _MARKS.append(_Mark(budget, seconds, None if seconds is None else now + seconds))
    _arm()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _MARKS.pop()
        if outer is not None and outer.left is not None:  # resume the outer clock
            outer.expires, outer.left = time.monotonic() + outer.left, None
        _arm()


def expired() -> BudgetExpired | None:
    """The first expiry inside the current (or last) :func:`call_budgets` block, even if swallowed."""
    return _EXPIRED[0] if _EXPIRED else None
