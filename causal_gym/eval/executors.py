"""Executors: play a run's episodes in this process, a process pool, threads or Ray.

Each hands every episode's line to ``sink`` as it arrives. On a stop request it stops the episodes
in flight, hands their interrupted lines to ``sink`` too, and re-raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from causal_gym._turns import Turns, taking_turns
from causal_gym._workers import process_pool
from causal_gym.eval.worker import STOP, EpisodeTask, failure_line, play, play_episode, stop_on_sigterm
from causal_gym.harness.rollout import RolloutInterrupted

__all__ = ["DRAIN_SECONDS", "play_local", "play_ray", "play_threaded"]

DRAIN_SECONDS = 30.0
"""How long an interrupted run waits for the episodes in flight to write their interrupted lines."""


def _drain(futures: dict[Any, EpisodeTask], sink: Callable[[dict[str, Any]], None]) -> None:
    """Hand over the lines of futures that finish within :data:`DRAIN_SECONDS`; cancel the rest."""
    from concurrent.futures import wait

    running = [f for f in futures if not f.cancel()]
    done, _ = wait(running, timeout=DRAIN_SECONDS)
    for future in done:
        try:
            sink(future.result())
        except BaseException:  # noqa: BLE001 -- a worker lost while stopping: its episode replays anyway
            pass


def play_local(tasks: list[EpisodeTask], workers: int, sink: Callable[[dict[str, Any]], None]) -> None:
    """In this process (``workers == 1``) or a pool of fresh worker processes (:func:`~causal_gym._workers.process_pool`)."""
    if workers == 1:
        for task in tasks:
            line = play(task)
            sink(line)
            if line["status"] == "interrupted":
                raise RolloutInterrupted("stopped")
        return
    from concurrent.futures import as_completed

    with process_pool(min(workers, len(tasks)), then=stop_on_sigterm) as executor:
        futures = {executor.submit(play, task): task for task in tasks}
        try:
            for future in as_completed(futures):
                task = futures.pop(future)
                try:
                    sink(future.result())
                except BrokenProcessPool as exc:
                    raise RuntimeError(
                        "a worker process died (killed, out of memory or crashed); the episodes finished so far are "
                        "saved -- run again with the same configuration to continue"
                    ) from exc
                except Exception:  # noqa: BLE001 -- e.g. a result that could not be sent back
                    sink(failure_line(task, None, None))
        except (RolloutInterrupted, KeyboardInterrupt):
            for process in list(getattr(executor, "_processes", {}).values()):
                try:
                    process.terminate()  # SIGTERM: the worker's handler stops its episode
                except (OSError, ValueError):
                    pass
            _drain(futures, sink)
            raise


def play_threaded(tasks: list[EpisodeTask], concurrency: int, sink: Callable[[dict[str, Any]], None]) -> None:
    """``concurrency`` episodes at once in threads of this process (LLM agents wait on HTTP, not the CPU).

    The threads take turns at the interpreter (:mod:`causal_gym._turns`): an LLM agent gives up its
    turn while it waits on its server. Each thread hands its episode's line to ``sink`` itself, in
    its turn and one at a time, so ``sink`` need not be thread-safe, and no thread outside the turns
    competes with the episodes for the interpreter to write them. If ``sink`` raises (the store
    cannot be written), the episodes not started are cancelled and the error is raised once those
    in flight end."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    turns, handing = Turns(), threading.Lock()

    def play_in_turn(task: EpisodeTask) -> None:
        with taking_turns(turns):
            line = play_episode(task)
            with handing:
                sink(line)

    with ThreadPoolExecutor(max_workers=min(concurrency, len(tasks)), thread_name_prefix="episode") as pool:
        futures = [pool.submit(play_in_turn, task) for task in tasks]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()
        except (RolloutInterrupted, KeyboardInterrupt):
            STOP.set()  # the episodes in flight stop and hand over their interrupted lines
            wait([f for f in futures if not f.cancel()], timeout=DRAIN_SECONDS)
            raise
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def play_ray(
    tasks: list[EpisodeTask], workers: int, address: str | None, sink: Callable[[dict[str, Any]], None]
) -> None:
    """As Ray tasks, at most ``workers`` in flight, on the cluster at ``address`` or a local Ray."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "backend='ray' needs Ray: pip install 'causal-gym[distributed]'", name=exc.name
        ) from exc
    started = not ray.is_initialized()
    if started:
        if address is None:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        else:
            try:
                ray.init(address=address, log_to_driver=False)
            except ConnectionError as exc:
                raise ConnectionError(
                    f"cannot reach the Ray cluster at {address!r} ({exc}). A cluster started with `ray start` uses "
                    "token authentication on recent Ray (by default for local clusters since 2.59): run this "
                    "command with RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH "
                    "or ~/.ray/auth_token)"
                ) from exc
    pending: dict[Any, EpisodeTask] = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(play)
        queue = list(reversed(tasks))
        while queue or pending:
            while queue and len(pending) < workers:
                task = queue.pop()
                pending[remote.remote(task)] = task
            done, _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(done[0])
            try:
                sink(ray.get(done[0]))
            except Exception:  # noqa: BLE001 -- a lost worker or node: record it, go on
                sink(failure_line(task, None, None))
    except (RolloutInterrupted, KeyboardInterrupt):
        for ref in pending:
            ray.cancel(ref, force=True)  # cancelled episodes have no line: the next run plays them
        raise
    finally:
        if started:
            ray.shutdown()
