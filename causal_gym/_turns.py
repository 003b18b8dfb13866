"""Turns at the interpreter for the episode threads of one process (a threaded run).

Why: episodes played in threads (``RunConfig(concurrency=N)``) share one interpreter lock. CPython
hands that lock to another waiting thread whenever the holder makes a system call or enters a
numpy routine that lets it go (fancy indexing, ``arange``, a socket write), and the holder waits to
get it back; with hundreds of episode threads every such call becomes a pair of thread switches.
Measured on Heuresis episodes against a 1-s server (issue 32): 300-430 voluntary switches per
episode at 64-256 in flight against 10 when played one at a time, and twice the CPU per episode.

So the threads of a run take turns: :func:`taking_turns` gives an episode thread the one turn of
its run while it computes, and :func:`waiting` gives it up while the thread waits on something
outside the process (an LLM agent's HTTP round trip), so the others compute then, one at a time,
without handing the interpreter back and forth at each call.

A turn is advisory, never a lock the program's correctness depends on: a thread that finds the
turn held for longer than :data:`PATIENCE` seconds (a long computation, or a wait that does not
use :func:`waiting`) runs alongside its holder, as threads do without turns. So no thread can
deadlock on a turn or wait on one for long. Outside :func:`taking_turns` both functions do nothing.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PATIENCE", "Turns", "taking_turns", "waiting"]

PATIENCE = 0.05
"""Seconds a turn may be held before the threads waiting for it run anyway."""

_LOCAL = threading.local()  # .turns: the Turns this thread takes part in; .held: whether it holds the turn


class Turns:
    """The one turn shared by the episode threads of a run (see the module docstring).

    Handed over in the order the threads asked for it: a plain lock lets whichever thread wakes
    first take it, and with hundreds of threads asking, some were passed over again and again --
    measured at 256 in flight (issue 32), a reply waited for the turn up to 1.2-2.3 s, against
    0.4-0.6 s in order (the run's overhead, bound by the interpreter's CPU, did not change)."""

    def __init__(self, patience: float | None = None) -> None:
        self.patience = PATIENCE if patience is None else patience
        self._mutex = threading.Lock()  # guards the fields below, held only to read or change them
        self._held = False
        self._since = 0.0  # when the current holder got the turn (time.monotonic)
        self._queue: deque[threading.Lock] = deque()  # one locked lock per waiting thread, oldest first

    @property
    def held(self) -> bool:
        """Whether some thread holds the turn now."""
        return self._held

    def take(self) -> bool:
        """Take the turn when the threads that asked before have had theirs, or give up waiting once
        its holder has had it for ``patience`` seconds. Returns whether the turn is held."""
        with self._mutex:
            if not self._held and not self._queue:
                self._held, self._since = True, time.monotonic()
                return True
            baton = threading.Lock()
            baton.acquire()
            self._queue.append(baton)
        while True:
            if baton.acquire(timeout=max(0.0, self.patience - (time.monotonic() - self._since))):
                return True  # handed over by give_back, which set _held and _since
            with self._mutex:
                if baton not in self._queue:  # handed over just now
                    baton.acquire()
                    return True
                if time.monotonic() - self._since >= self.patience:
                    self._queue.remove(baton)
                    return False

    def give_back(self) -> None:
        """Hand the turn to the thread that has waited longest, or leave it free."""
        with self._mutex:
            if self._queue:
                self._since = time.monotonic()
                self._queue.popleft().release()
            else:
                self._held = False


@contextmanager
def taking_turns(turns: Turns) -> Iterator[None]:
    """Run the block (one episode) in this thread taking ``turns`` with the run's other threads."""
    _LOCAL.turns, _LOCAL.held = turns, turns.take()
    try:
        yield
    finally:
        if _LOCAL.held:
            turns.give_back()
        _LOCAL.turns = None
        _LOCAL.held = False


def give_up() -> None:
    """Give up this thread's turn, if it holds one (it is about to wait outside the process)."""
    turns = getattr(_LOCAL, "turns", None)
    if turns is not None and _LOCAL.held:
        turns.give_back()
        _LOCAL.held = False


def take_back() -> None:
    """Take this thread's turn back after :func:`give_up` (nothing if it holds it or takes no turns)."""
    turns = getattr(_LOCAL, "turns", None)
    if turns is not None and not _LOCAL.held:
        _LOCAL.held = turns.take()


@contextmanager
def waiting() -> Iterator[None]:
    """Give up this thread's turn while the block waits outside the process, and take it back after."""
    give_up()
    try:
        yield
    finally:
        take_back()
