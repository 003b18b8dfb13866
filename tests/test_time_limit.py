"""Time-limited calls: a computation that cannot be interrupted from inside (a discovery run) runs in a
worker process that is killed when its time is up; a timed-out menu run is charged, says so, caches
nothing, and the episode goes on."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time

import gymnasium as gym
import pytest

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym import _cache
from causal_gym._workers import TimeLimitExceeded, call_with_time_limit
from causal_gym.harness import ToolError

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:  # a zombie is dead too
        return handle.read().split(") ")[1][0] != "Z"


def _use_the_worker_then_end(queue) -> None:
    queue.put(call_with_time_limit(os.getpid, 60.0))


def test_a_process_that_used_the_worker_still_ends():
    """A multiprocessing.Process joins its live children at exit: the kept worker must not block that."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_use_the_worker_then_end, args=(queue,))
    child.start()
    worker = queue.get(timeout=120)
    child.join(timeout=60)
    ended = child.exitcode is not None
    if not ended:
        child.kill()
    assert ended and child.exitcode == 0
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


_LOCK_IN_THE_WORKER = """
import functools, multiprocessing, numpy as np
from causal_gym._workers import call_with_time_limit
from causal_gym.discovery import run

def child():
    data = np.random.default_rng(0).normal(size=(200, 3))
    call_with_time_limit(functools.partial(run, "dagma", data), 120.0)  # DAGMA's tqdm makes a semaphore

if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(target=child)
    process.start()
    process.join(120)
    assert process.exitcode == 0, process.exitcode
"""


def test_an_idle_worker_ends_in_order_and_leaks_no_semaphore(tmp_path):
    """The runner's pool workers use the worker too: killing it at their exit left tqdm's lock to
    the resource tracker, which warned of a leaked semaphore at the end of every run."""
    pytest.importorskip("dagma")
    script = tmp_path / "lock_in_the_worker.py"
    script.write_text(_LOCK_IN_THE_WORKER)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr, done.stderr


_THREADS_IN_THE_WORKER = """
import json
from causal_gym._workers import call_with_time_limit

def threads():
    import scipy.linalg  # noqa: F401 -- scipy's own OpenBLAS, loaded after the worker's set-up
    from threadpoolctl import threadpool_info

    return [(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info()]

print(json.dumps(call_with_time_limit(threads, 120.0)))
"""


def test_every_thread_pool_a_worker_loads_has_one_thread(tmp_path):
    """Also those loaded after the worker started (a run-time limit misses them), in a process whose
    environment sets no thread counts (the test session's does)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_NUM_THREADS", "_MAXIMUM_THREADS"))}
    done = subprocess.run([sys.executable, "-c", _THREADS_IN_THE_WORKER], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    pools = json.loads(done.stdout)
    assert pools and all(threads == 1 for _, threads in pools), pools


def test_a_call_past_its_limit_is_killed_and_the_next_call_gets_a_new_worker():
    worker = call_with_time_limit(os.getpid, 60.0)
    assert worker != os.getpid()
    assert call_with_time_limit(os.getpid, 60.0) == worker  # the worker is kept between calls
    with pytest.raises(TimeLimitExceeded, match="within 0.5 s"):
        call_with_time_limit(functools.partial(time.sleep, 60), 0.5)
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)
    assert call_with_time_limit(os.getpid, 60.0) not in (worker, os.getpid())


def test_exceptions_propagate_and_no_limit_runs_in_process():
    with pytest.raises(ValueError, match="invalid literal"):
        call_with_time_limit(functools.partial(int, "x"), 60.0)
    assert call_with_time_limit(os.getpid, None) == os.getpid()


def test_a_timed_out_miss_stores_nothing():
    key = {"what": "time-limit-test", "version": 1}
    with pytest.raises(TimeLimitExceeded):
        _cache.cached(key, functools.partial(time.sleep, 60), time_limit=0.5)
    stored = {path.name for path in _cache.cache_dir().glob("*.json")}
    assert _cache.cached(key, functools.partial(dict, y=9), time_limit=60.0) == {"y": 9}
    assert len({path.name for path in _cache.cache_dir().glob("*.json")} - stored) == 1


@pytest.mark.parametrize("env_id, kwargs", [("Heuresis-lg-v0", {"d": 4, "n": 60}),
                                            ("CausalArena-formula-tools-v0", {"n_obs": 120})])
def test_a_menu_run_past_the_limit_is_charged_reported_and_the_episode_goes_on(env_id, kwargs):
    # 1 ms: spawning the worker alone takes longer, so the uncached run cannot finish in time
    env = gym.make(env_id, algorithm_time_limit=0.001, **kwargs)
    _, info = env.reset(seed=0, options={"instance": 0})
    u = env.unwrapped
    before = info["budgets_remaining"]["algorithm_calls"]
    action = u.parse_tool_call("run_algorithm", {"algorithm": "A"})
    assert not isinstance(action, ToolError)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not (terminated or truncated) and int(obs["last_ok"]) == 0
    assert "did not finish within the per-call time limit of 0.001 s" in obs["last_result"]
    assert info["budgets_remaining"]["algorithm_calls"] == before - 1
    last = u.record()[-1]
    assert last.data["timed_out"] is True and last.data["time_limit"] == 0.001
    # nothing was cached: without a limit the same label computes and returns a graph
    u.algorithm_time_limit = None
    obs, *_ = env.step(action)
    assert int(obs["last_ok"]) == 1 and "returned" in obs["last_result"]


def _variable(name):
    return os.environ.get(name)


def test_a_call_sees_the_environment_of_its_moment_not_the_worker_s_start(monkeypatch):
    """The worker is kept between calls; a variable set or removed since it started (a checkpoint path,
    a cache directory) reaches the call as it would reach one made here."""
    from causal_gym._workers import start_time_limited_worker

    monkeypatch.delenv("CAUSAL_GYM_TEST_VARIABLE", raising=False)
    start_time_limited_worker()
    monkeypatch.setenv("CAUSAL_GYM_TEST_VARIABLE", "set after the start")
    ask = functools.partial(_variable, "CAUSAL_GYM_TEST_VARIABLE")
    assert call_with_time_limit(ask, 60) == "set after the start"
    monkeypatch.delenv("CAUSAL_GYM_TEST_VARIABLE")
    assert call_with_time_limit(ask, 60) is None
    assert call_with_time_limit(functools.partial(_variable, "OMP_NUM_THREADS"), 60) == "1"
