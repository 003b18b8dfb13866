"""The Heuresis first reset: announced, interruptible, and on the train stream computed ahead.

The prefetcher must not change the stream (same instances with and without it), must compute
exactly the instances the next resets draw, and must leave nothing running after ``close``.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.envs.heuresis.references import menu_entry_is_cached

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)

SMALL = {"d": 6, "n": 200, "split": "train"}


def _alive(pid: int) -> bool:
    """Through /proc, not multiprocessing (whose is_alive can race the pool's own reaping thread)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _indices(env: gym.Env, resets: int) -> list[int]:
    out = []
    for k in range(resets):
        _, info = env.reset(seed=11 if k == 0 else None)
        out.append(info["instance"]["index"])
    return out


def _drain(env: gym.Env) -> list[tuple]:
    prefetcher = env.unwrapped._prefetcher
    keys = list(prefetcher._futures)
    for future in prefetcher._futures.values():
        future.result(timeout=300)
    return keys


def test_the_prefetcher_computes_the_next_draws_and_leaves_the_stream_unchanged(caplog, tmp_path, monkeypatch):
    from causal_gym import _cache
    from causal_gym.envs.heuresis.env import load_instance

    with monkeypatch.context() as elsewhere:  # the stream without prefetching, computed in another cache
        elsewhere.setenv(_cache.CACHE_ENV, str(tmp_path))
        expected = _indices(gym.make("Heuresis-anm-v0", prefetch=0, **SMALL), 4)
    load_instance.cache_clear()
    assert not menu_entry_is_cached(make_instance("anm", "train", expected[1], d=6, n=200), "pc_kci")
    env = gym.make("Heuresis-anm-v0", prefetch=2, **SMALL)
    env.reset(seed=11)
    keys = _drain(env)
    assert [key[2] for key in keys] == expected[1:3]  # the next two resets' instances, in order
    for index in expected[1:3]:
        assert menu_entry_is_cached(make_instance("anm", "train", index, d=6, n=200), "pc_kci")
    assert not menu_entry_is_cached(make_instance("anm", "train", expected[3], d=6, n=200), "pc_kci")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="causal_gym"):
        _, info = env.reset()
    assert info["instance"]["index"] == expected[1]
    assert not [r for r in caplog.records if "running PC-KCI" in r.getMessage()]  # it was ready
    assert _indices(gym.make("Heuresis-anm-v0", prefetch=2, **SMALL), 4) == expected
    worker = next(iter(env.unwrapped._prefetcher._pool()._processes))  # its pid
    env.close()
    deadline = time.monotonic() + 20
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def test_dev_and_test_splits_and_options_are_not_prefetched():
    env = gym.make("Heuresis-anm-v0", prefetch=2, d=6, n=200, split="dev")
    env.reset(seed=0)
    env.reset(seed=1, options={"split": "train", "instance": 5})
    assert env.unwrapped._prefetcher._futures == {} and env.unwrapped._prefetcher._executor is None
    with pytest.raises(ValueError, match="prefetch"):
        gym.make("Heuresis-anm-v0", prefetch=-1)


def test_a_cold_reset_is_announced_once(caplog):
    env = gym.make("Heuresis-hetero-v0", d=6, n=200)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="causal_gym"):
        env.reset(seed=0, options={"instance": 4})
        env.reset(seed=0, options={"instance": 4})
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("causal_gym")]
    assert len([m for m in lines if "running PC-KCI" in m]) == 1 and "hetero/test instance 4" in lines[0]
    assert any("PC-KCI done in" in m for m in lines)


_COLD_RESET = """
import gymnasium as gym, causal_gym
env = gym.make("Heuresis-wild-guided-v0", d=12, n=1500)
env.reset(seed=0, options={"instance": 1})
print("finished")
"""


def test_ctrl_c_interrupts_a_cold_reset_and_stores_nothing(tmp_path: Path):
    cache = tmp_path / "cache"
    # A job started in the background of a non-interactive shell inherits SIGINT ignored, and Python
    # installs no KeyboardInterrupt handler for an ignored SIGINT: give the child the default disposition,
    # as an interactive terminal would.
    process = subprocess.Popen([sys.executable, "-c", _COLD_RESET], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "CAUSAL_GYM_CACHE": str(cache)},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert "running PC-KCI" in process.stderr.readline()  # the announcement comes first, on stderr
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode != 0 and "KeyboardInterrupt" in err
    assert not any('"pc_kci"' in path.read_text() for path in cache.glob("*.json"))
