"""Env work of an adapter (Inspect, verifiers, TRL, OpenEnv) in worker threads, under a time budget.

``anyio.fail_after`` around ``anyio.to_thread.run_sync`` bounds nothing by itself: a thread cannot
be cancelled, so the wait is shielded and the budget is noticed only after the call has returned
(measured: a 2 s call under a 0.5 s budget returns normally). :meth:`GuardedSession.call` waits
with ``abandon_on_cancel=True`` instead, so the budget's expiry ends the wait on time; the call
keeps its thread until it returns, and the session is then closed by that thread, not under it.
:meth:`GuardedSession.call_sync` is the same for synchronous callers (TRL's tool methods, OpenEnv's
``step``): the caller waits on an event, with the budget as its timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from causal_gym._validation import check_real
from causal_gym.integrations.core import ToolSession

__all__ = ["BudgetTimeout", "GuardedSession", "check_budget"]

T = TypeVar("T")


class BudgetTimeout(RuntimeError):
    """A model call, env step or scoring ran past its timeout. Not a ``TimeoutError``: Inspect reads
    that as one of its own timeouts and goes on to score the sample."""


def check_budget(value: float | None, name: str) -> float | None:
    """A timeout in seconds: None (no budget) or a positive real."""
    return None if value is None else check_real(value, name, 0.0, strict=True)


class GuardedSession:
    """A :class:`~causal_gym.integrations.core.ToolSession` whose env work runs in worker threads
    under a budget; :meth:`close` while an abandoned call still runs leaves the closing to it."""

    def __init__(self, session: ToolSession) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._busy = self._close_when_done = False

    def _guarded(self, work: Callable[[], T]) -> Callable[[], T]:
        """``work`` marked busy until it returns, then closing the session if :meth:`close` came meanwhile."""

        def run() -> T:
            try:
                return work()
            finally:
                with self._lock:
                    self._busy, close = False, self._close_when_done
                if close:
                    self.session.close()

        with self._lock:
            self._busy = True
        return run

    async def call(self, work: Callable[[], T], seconds: float | None, what: str) -> T:
        """``work()`` in a worker thread; :class:`BudgetTimeout` (naming ``what``) after ``seconds`` (None: no budget)."""
        run = self._guarded(work)
        try:
            with anyio.fail_after(seconds):
                return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except TimeoutError:
            raise BudgetTimeout(f"{what} exceeded {seconds:g} s") from None

    def call_sync(self, work: Callable[[], T], seconds: float | None, what: str) -> T:
        """As :meth:`call`, for a synchronous caller; without a budget ``work`` runs in the caller's thread."""
        if seconds is None:
            return work()
        run = self._guarded(work)
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                outcome["value"] = run()
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller below
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=target, name=f"causal-gym {what}", daemon=True).start()
        if not done.wait(seconds):
            raise BudgetTimeout(f"{what} exceeded {seconds:g} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def close(self) -> None:
        """Close the env now, or when the call that still runs in its thread returns."""
        with self._lock:
            if self._busy:
                self._close_when_done = True
                return
        self.session.close()
