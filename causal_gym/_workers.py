"""Worker processes for the reference runs, the evaluation runner and time-limited calls.

The library starts them on the caller's behalf, inside whatever the caller runs: a script without an
``if __name__ == "__main__":`` guard, ``python -c``, a script piped to ``python -``, a notebook. So a
worker must never run the caller's ``__main__``. The standard library's ``spawn`` and ``forkserver``
workers do: they re-import the main script (its top-level code runs again in every worker, then the
pool breaks), and ``fork`` copies a process whose BLAS and pool threads may hold locks. The pools
here are loky's (``joblib.externals.loky``, the process pool behind joblib and scikit-learn): a
worker is a fresh interpreter started with ``python -m`` that imports only what its calls need
(``init_main_module`` off), and calls travel with cloudpickle, so even a function defined in the
caller's ``__main__`` reaches the worker by value instead of by re-running the script.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from types import MappingProxyType
from typing import TypeVar

__all__ = ["ONE_THREAD", "die_with_parent", "worker_pool", "process_pool", "stop_pool", "in_daemonic_process",
           "TimeLimitExceeded", "call_with_time_limit", "discard_time_limited_worker", "start_time_limited_worker"]

T = TypeVar("T")


ONE_THREAD: Mapping[str, str] = MappingProxyType({name: "1" for name in (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS")})
"""The environment of every worker, set before it imports anything: one BLAS and OpenMP thread per
worker, so ``workers`` processes fit ``workers`` cores instead of each spawning a thread per core
(measured: oversubscription made NOTEARS 600x slower on the 2-core machine). A limit set at run time
(threadpoolctl) reaches only the libraries already loaded, and a fresh worker loads scipy's own
OpenBLAS or torch's OpenMP later."""


def die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so
    pool workers do not outlive a ``kill -9`` of the run (with the parent gone, nobody could store
    their results anyway); a no-op elsewhere. ``parent`` is the pid the worker was started by: a worker
    whose parent died while it was still starting exits at once."""
    import ctypes
    import os
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
    if os.getppid() != parent:
        os._exit(1)


class TimeLimitExceeded(RuntimeError):
    """A :func:`call_with_time_limit` call did not finish in time; its worker was killed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"did not finish within {seconds:g} s")
        self.seconds = seconds


_LOCAL = threading.local()


def _worker_start(parent: int, then: Callable[[], None] | None) -> None:
    die_with_parent(parent)
    if then is not None:
        then()


def worker_pool(workers: int = 1, then: Callable[[], None] | None = None) -> Executor:
    """A pool of ``workers`` processes that have one BLAS thread (:data:`ONE_THREAD`), die with this
    process and never run the caller's ``__main__`` (a loky pool, see the module docstring); ``then``
    (a module-level function) runs in each worker after that set-up.

    It is closed at this process's exit (:func:`_close_pool`), before a ``multiprocessing.Process``
    would wait for its children; :func:`stop_pool` stops it earlier.
    """
    from multiprocessing.util import Finalize

    from joblib.externals.loky import ProcessPoolExecutor
    from joblib.externals.loky.backend.context import get_context

    # "loky" by name: loky's default start method is a global a caller may have changed
    executor = ProcessPoolExecutor(workers, context=get_context("loky"), initializer=_worker_start,
                                   initargs=(os.getpid(), then), env=dict(ONE_THREAD))
    Finalize(None, _close_pool, args=(executor,), exitpriority=100)
    return executor


@contextmanager
def process_pool(workers: int, then: Callable[[], None] | None = None) -> Iterator[Executor]:
    """:func:`worker_pool` for a ``with`` block: shut down in order when the block ends, stopped
    (:func:`stop_pool`) when it raises, so a Ctrl-C does not wait for the calls still queued."""
    executor = worker_pool(workers, then)
    try:
        yield executor
    except BaseException:
        stop_pool(executor)
        raise
    executor.shutdown(wait=True)


def _close_pool(executor: Executor) -> None:
    """Shut an idle pool down in order, and stop one with a call in progress (:func:`stop_pool`).

    A worker that ends in order runs its own exit handlers, which release the semaphores a library
    made in it (tqdm's lock, which DAGMA's progress bar creates): a killed one leaves them to
    Python's resource tracker, which then warns of "leaked semaphore objects" at shutdown.
    """
    if getattr(executor, "_pending_work_items", None):
        stop_pool(executor)
    else:
        executor.shutdown(wait=True)


def stop_pool(executor: Executor) -> None:
    """Kill a :func:`worker_pool`'s workers now (a call in progress dies with them, and so do the
    workers such a call started: :func:`die_with_parent`) and fail the calls still queued."""
    import signal

    for process in list((getattr(executor, "_processes", None) or {}).values()):
        if process.exitcode is None:  # not reaped yet, so its pid is still its own
            # SIGKILL by hand: loky's process has no kill(), and its kill_process_tree needs psutil or pgrep
            os.kill(process.pid, signal.SIGKILL)
        process.join()
    executor.shutdown(wait=False, kill_workers=True)  # type: ignore[call-arg]  # loky's shutdown


def _executor() -> Executor:
    """This thread's one-worker pool (started on first use and kept: the worker's imports are paid once;
    one per thread, so concurrent episodes do not queue behind each other's calls)."""
    executor = getattr(_LOCAL, "executor", None)
    if executor is None:
        executor = _LOCAL.executor = worker_pool(1)
    return executor


def time_limited_worker_pids() -> frozenset[int]:
    """The processes this thread keeps for :func:`call_with_time_limit` (empty before the first call):
    they outlive an env on purpose, so a check for processes an env leaves behind discounts them."""
    executor = getattr(_LOCAL, "executor", None)
    return frozenset(getattr(executor, "_processes", None) or ())


def _discard_executor() -> None:
    executor = _LOCAL.__dict__.pop("executor", None)
    if executor is not None:  # the stuck call has to die now
        stop_pool(executor)


def discard_time_limited_worker() -> None:
    """Kill this thread's :func:`call_with_time_limit` worker (the next call starts a new one): for a
    caller whose call returned but was interrupted inside (a per-call budget of
    :mod:`causal_gym._deadlines`), which may have left that process in any state."""
    _discard_executor()


def in_daemonic_process() -> bool:
    """Whether this process may not start children (a daemonic ``multiprocessing`` worker)."""
    import multiprocessing

    return bool(multiprocessing.current_process().daemon)


def _daemonic() -> bool:
    if not in_daemonic_process():
        return False
    if not getattr(_LOCAL, "warned", False):
        import warnings

        warnings.warn("a daemonic process cannot start the worker of a time-limited call; running it without "
                      "the limit", RuntimeWarning, stacklevel=3)
        _LOCAL.warned = True
    return True


def start_time_limited_worker(*modules: str) -> None:
    """Start this thread's :func:`call_with_time_limit` worker now (if not running) and import ``modules``
    in it, without a limit: the next limited call then times its own work, not a process start and
    imports (seconds on a loaded machine). Nothing happens inside a daemonic process."""
    if not _daemonic():
        _executor().submit(_import, modules).result()


def _import(modules: tuple[str, ...]) -> None:
    import importlib

    for module in modules:
        importlib.import_module(module)


def _environment() -> dict[str, str]:
    """This process's environment as a worker should see it: as it is now, one BLAS thread."""
    return {**os.environ, **ONE_THREAD}


def _in_environment(function: Callable[[], T], environment: dict[str, str]) -> T:
    """``function()`` with the worker's environment set to ``environment`` first: the kept worker was
    started with the caller's environment of that moment, and a variable set since (a checkpoint
    path, a cache directory) must reach the call as it would reach one made in the caller."""
    for name in set(os.environ) - set(environment):
        del os.environ[name]
    os.environ.update(environment)
    return function()


def call_with_time_limit(function: Callable[[], T], seconds: float | None, *, in_worker: bool = False) -> T:
    """``function()`` in a worker process, killed after ``seconds`` (None: called here, no limit;
    with ``in_worker``, in the worker all the same, without a limit).

    A computation that cannot be interrupted from inside (a causal-discovery run in a C or numpy
    loop) is stopped by killing its process, so ``function`` travels there (with cloudpickle: a
    module-level function, a :func:`functools.partial`, also one defined in the caller's
    ``__main__``, which the worker never imports), with this process's environment variables as
    they are at the call. The worker has one BLAS thread and dies with this process. Exceptions inside ``function`` propagate; an exception that interrupts the wait
    (a signal handler's) kills the worker too. Inside a daemonic process (the workers
    of Gymnasium's ``AsyncVectorEnv``), which may not have children, ``function`` runs here without
    a limit, with a warning.

    Raises
    ------
    TimeLimitExceeded
        When ``seconds`` passed first (the worker is killed; the next call starts a new one).
    """
    if (seconds is None and not in_worker) or _daemonic():
        return function()
    future = _executor().submit(_in_environment, function, _environment())
    try:
        return future.result(timeout=seconds)
    except FutureTimeout:
        _discard_executor()
        assert seconds is not None  # without a limit the wait does not time out
        raise TimeLimitExceeded(seconds) from None
    except BrokenProcessPool:  # the worker died (out of memory, a signal): start afresh next time
        _discard_executor()
        raise
    except BaseException:  # interrupted while waiting (a stop signal): the call must not run on unseen
        if not future.done():
            _discard_executor()
        raise
