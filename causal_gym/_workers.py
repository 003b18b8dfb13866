"""Process-pool helpers shared by the reference runs and the evaluation runner."""

from __future__ import annotations

__all__ = ["limit_blas_threads", "die_with_parent"]


def limit_blas_threads() -> None:
    """Pool initializer: one BLAS thread per worker process, so ``workers`` processes fit ``workers``
    cores instead of each spawning a thread per core (measured: oversubscription made NOTEARS 600x
    slower on the 2-core machine)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


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
