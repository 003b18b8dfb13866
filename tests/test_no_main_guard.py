"""The library never runs the caller's ``__main__`` (issue 30): a top-level script without an
``if __name__ == "__main__":`` guard, the same code through ``python -c`` and through stdin, plays
every menu algorithm of a Heuresis and a CausalArena tools episode on a cold cache, and its top-level
code runs exactly once. Ctrl-C and ``close()`` leave no worker behind.

pytest is the ``__main__`` of the test process, so only real subprocesses can show this: each script
appends its pid to a counter file at top level (a worker that re-ran ``__main__`` would append its own)
and prints what it played; the test reads both.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import causal_gym
from causal_gym.envs.arena.tool_env import ARENA_MENU
from causal_gym.envs.heuresis.references import MENU
from processes import live_processes

ROOT = os.path.dirname(os.path.dirname(causal_gym.__file__))

_COUNT = """
import os
with open(os.environ["TOPLEVEL_COUNTER"], "a") as counter:  # top-level code: it must run once, here
    counter.write(f"{os.getpid()}\\n")
"""

# Heuresis on its train stream, so the prefetcher's worker computes the next instance's PC-KCI (the
# reset computes this one's, which is why PC-KCI then comes from the cache); CausalArena's synthetic
# tools env at its smallest. A cold cache: every other menu run goes to the time-limited call's worker.
_PLAY = _COUNT + """
import json
import gymnasium as gym
import causal_gym
from causal_gym._workers import call_with_time_limit

def here():
    return os.getpid()

assert call_with_time_limit(here, 120.0) != os.getpid()  # a function of this __main__ reaches the worker

prefetch_workers = []
for env_id, kwargs, options in [("Heuresis-lg-v0", {"d": 4, "n": 60, "split": "train"}, None),
                                ("CausalArena-synthetic-tools-v0", {"n_obs": 100}, {"instance": 0})]:
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0, options=options)
    u = env.unwrapped
    for label in "ABCDEFG":
        obs, *_ = env.step(u.parse_tool_call("run_algorithm", {"algorithm": label}))
        print(json.dumps({"env": env_id, "label": label, "algorithm": u._slots[label], "ok": int(obs["last_ok"]),
                          "result": obs["last_result"]}), flush=True)
    if env_id.startswith("Heuresis"):
        env.reset()  # the next train instance: its PC-KCI is the prefetcher's
        prefetch_workers = list(u._prefetcher._pool()._processes)
    env.close()

def children():
    found = {}
    for stat in os.listdir("/proc"):
        try:
            with open(f"/proc/{stat}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{stat}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if fields[0] != "Z" and int(fields[1]) == os.getpid():
            found[int(stat)] = command
    return found

print(json.dumps({"worker": call_with_time_limit(os.getpid, 120.0), "prefetch_workers": prefetch_workers,
                  "children": children()}), flush=True)
"""


def _none_left(leader: int) -> list[int]:
    """Wait for the processes of ``leader``'s session to end (workers die with their parent, resource
    trackers when the last pipe to them closes); those still alive after a minute."""
    deadline = time.monotonic() + 60
    while live_processes(session=leader) and time.monotonic() < deadline:
        time.sleep(0.1)
    return live_processes(session=leader)


def _start(mode: str, code: str, tmp_path: Path, **popen: object) -> subprocess.Popen:
    """Run ``code`` as ``python script.py``, ``python -c code`` or ``python - < script``, in a new session,
    with a cold cache, this checkout first on the path, and a counter file for its top-level runs."""
    script = tmp_path / "script.py"
    script.write_text(code)
    env = {**os.environ, "CAUSAL_GYM_CACHE": str(tmp_path / "cache"), "TOPLEVEL_COUNTER": str(tmp_path / "count"),
           "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    args = {"file": [str(script)], "-c": ["-c", code], "stdin": ["-"]}[mode]
    stdin = script.open() if mode == "stdin" else subprocess.DEVNULL
    try:
        return subprocess.Popen([sys.executable, *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=tmp_path, start_new_session=True, **popen)
    finally:
        if mode == "stdin":
            stdin.close()


def _top_level_runs(tmp_path: Path) -> list[str]:
    return (tmp_path / "count").read_text().split()


def _run(mode: str, code: str, tmp_path: Path) -> tuple[str, str]:
    """Run ``code`` to its end (see :func:`_start`): it succeeds, its top-level code ran once (in its
    own process) and its session leaves no process behind. Its stdout and stderr."""
    process = _start(mode, code, tmp_path)
    try:
        out, err = process.communicate(timeout=600)
    finally:
        process.kill()
    assert process.returncode == 0, err[-3000:]
    assert _top_level_runs(tmp_path) == [str(process.pid)]
    assert _none_left(process.pid) == []
    return out, err


@pytest.mark.parametrize("mode", ["file", "-c", "stdin"])
def test_a_script_without_a_main_guard_plays_every_menu_algorithm(tmp_path: Path, mode: str) -> None:
    out, err = _run(mode, _PLAY, tmp_path)
    lines = [json.loads(line) for line in out.splitlines()]
    played, final = lines[:-1], lines[-1]
    for env_id, menu in (("Heuresis-lg-v0", set(MENU)), ("CausalArena-synthetic-tools-v0", set(ARENA_MENU))):
        calls = [line for line in played if line["env"] == env_id]
        assert [line["label"] for line in calls] == list("ABCDEFG")
        assert {line["algorithm"] for line in calls} == menu  # the shuffled labels cover the menu
        assert all(line["ok"] == 1 and " returned " in line["result"] for line in calls), calls
    # one PC-KCI announced: the second train instance's came from the prefetcher's worker
    assert err.count("running PC-KCI") == 1 and "prefetching" not in err, err[-3000:]
    # close() stopped the prefetcher's worker; the time-limited call's worker is kept until exit
    assert final["prefetch_workers"] and not set(final["prefetch_workers"]) & set(map(int, final["children"]))
    workers = {int(pid) for pid, command in final["children"].items() if "resource_tracker" not in command}
    assert workers == {final["worker"]}, final["children"]
    assert "leaked" not in err, err[-3000:]


_INTERRUPTED = _COUNT + """
import functools, json, time
import gymnasium as gym
import causal_gym
from causal_gym._workers import call_with_time_limit

def nap(mark):
    open(mark, "w").close()
    time.sleep(600)

env = gym.make("Heuresis-lg-v0", d=4, n=60, split="train")
env.reset(seed=0)  # the prefetcher's worker
obs, *_ = env.step(env.unwrapped.parse_tool_call("run_algorithm", {"algorithm": "A"}))
assert int(obs["last_ok"]) == 1, obs["last_result"]
print(json.dumps({"worker": call_with_time_limit(os.getpid, 120.0),
                  "prefetch_workers": list(env.unwrapped._prefetcher._pool()._processes)}), flush=True)
call_with_time_limit(functools.partial(nap, os.path.abspath("running")), 900.0)
print("not interrupted", flush=True)
"""


@pytest.mark.parametrize("target", ["script", "terminal"])
def test_ctrl_c_during_a_call_leaves_no_worker_behind(tmp_path: Path, target: str) -> None:
    """Ctrl-C in a terminal signals the whole foreground group (workers too); ``script``: the script
    alone. A job started by a non-interactive shell inherits SIGINT ignored: restore the default."""
    process = _start("file", _INTERRUPTED, tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        started = json.loads(process.stdout.readline() or "{}")
        deadline = time.monotonic() + 120
        while not (tmp_path / "running").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "running").exists(), process.stderr.read()[-3000:]  # the call runs in its worker
        if target == "script":
            process.send_signal(signal.SIGINT)
        else:
            os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode != 0 and "KeyboardInterrupt" in err and "not interrupted" not in out, err[-3000:]
    assert started["worker"] != process.pid and started["prefetch_workers"]
    assert _top_level_runs(tmp_path) == [str(process.pid)]
    assert _none_left(process.pid) == []


_RUN = _COUNT + """
import gymnasium as gym
from causal_gym.agents.random_agent import RandomAgent
from causal_gym.envs.heuresis.env import HeuresisEnv
from causal_gym.eval.runner import RunConfig, run

class Walker(RandomAgent):  # an agent and an env of this __main__: the workers get them by value
    pass

class Mine(HeuresisEnv):
    pass

gym.register("Mine-v0", entry_point=Mine, kwargs={"family": "lg", "d": 4, "n": 60})
config = RunConfig(env_ids=("Mine-v0",), agent="__main__:Walker", instances=(0, 1), split="dev", workers=2,
                   max_steps=8, time_limit=300.0)
run(config, "store", progress=False)
"""


def test_the_runner_with_worker_processes_from_a_script_without_a_main_guard(tmp_path: Path) -> None:
    """``eval.run`` with ``workers=2``, an agent class and an env registered by the script (each episode
    in a time-limited call's worker inside a pool worker)."""
    from causal_gym.eval.store import RunStore

    _run("file", _RUN, tmp_path)
    lines = list(RunStore(tmp_path / "store").latest().values())
    assert sorted(line["instance"] for line in lines) == [0, 1]
    # played: no failure (an unknown env or agent in the worker), no timeout
    assert all(line["status"] not in ("failed", "timeout", "interrupted") and line["steps"] for line in lines), [
        (line["status"], line["error"]) for line in lines]
