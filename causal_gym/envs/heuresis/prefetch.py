"""Compute upcoming train-stream instances ahead of their ``reset``: :class:`ReferencePrefetcher`.

The first ``reset`` of an instance runs PC-KCI on it (seconds at d=10, n=600; a minute on a busy
machine), and a training loop on the unbounded train stream meets a new instance every episode.
The env knows its next draws (a copy of its generator replays them), so while an episode runs a
background worker computes the next instances' PC-KCI references into the disk cache and the
next ``reset`` only reads them. The worker is a process (one BLAS thread, dies with the env's
process), or a thread inside a daemonic process (``AsyncVectorEnv`` workers may not have children).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

from causal_gym._workers import in_daemonic_process, stop_pool, worker_pool
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.envs.heuresis.references import pc_kci_reference

__all__ = ["InstanceKey", "ReferencePrefetcher"]

logger = logging.getLogger(__name__)

InstanceKey = tuple[str, str, int, int, int, float, Any]
"""``(family, split, index, d, n, expected_degree, seal)``: the arguments of ``load_instance`` (seal: a
:class:`~causal_gym.seal.Seal` or None)."""


def compute_reference(key: InstanceKey) -> None:
    """Fill the disk cache with the instance's PC-KCI reference (what the worker runs; a cached one is
    only read, so the env's process never builds an instance to ask first)."""
    family, split, index, d, n, expected_degree, seal = key
    pc_kci_reference(make_instance(family, split, index, d=d, n=n, expected_degree=expected_degree, seal=seal))


class ReferencePrefetcher:
    """Keeps a background worker computing the references of the instances it is told come next.

    Parameters
    ----------
    depth : int
        How many upcoming instances to keep computed or in flight.
    """

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self._executor: Executor | None = None
        self._futures: dict[InstanceKey, Future[None]] = {}

    def schedule(self, upcoming: Iterable[InstanceKey]) -> None:
        """Compute these instances (the next first) unless in flight; forget the others."""
        wanted = list(upcoming)[: self.depth]
        for key in list(self._futures):
            if key not in wanted and (self._futures[key].done() or self._futures[key].cancel()):
                del self._futures[key]
        for key in wanted:
            if key not in self._futures:
                self._futures[key] = self._pool().submit(compute_reference, key)

    def wait(self, key: InstanceKey) -> None:
        """Block until ``key``'s computation ends if it is in flight (a failure is logged: the caller
        then computes it itself)."""
        future = self._futures.pop(key, None)
        if future is None or future.cancelled():
            return
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 -- the reset recomputes it and raises there if it must
            logger.warning("prefetching instance %s failed (%s: %s); computing it now", key[:3], type(exc).__name__, exc)

    def close(self) -> None:
        """Stop the worker (a computation in flight is abandoned; the cache holds only finished ones)."""
        executor, self._executor = self._executor, None
        self._futures.clear()
        if executor is None:
            return
        if isinstance(executor, ThreadPoolExecutor):
            executor.shutdown(wait=False, cancel_futures=True)
        else:
            stop_pool(executor)

    def _pool(self) -> Executor:
        if self._executor is None:
            daemonic = in_daemonic_process()
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="heuresis-prefetch") if daemonic else worker_pool(1)
        return self._executor
