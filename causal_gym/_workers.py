"""Process-pool helpers shared by the reference runs and the evaluation runner."""

from __future__ import annotations

__all__ = ["limit_blas_threads"]


def limit_blas_threads() -> None:
    """Pool initializer: one BLAS thread per worker process, so ``workers`` processes fit ``workers``
    cores instead of each spawning a thread per core (measured: oversubscription made NOTEARS 600x
    slower on the 2-core machine)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
