"""Runner variants (one run = a grid x named overrides) and the per-episode time limit (timeouts recorded)."""

from __future__ import annotations

import sys

import pytest

from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RunStore, episode_key

TOY = "toy_benchmark:ToyDirection-v0"  # tests/ is on sys.path (conftest)
VARIANTS = (
    {"name": "small/first", "env_kwargs": {"n": 50}, "agent_kwargs": {"answer": 0}},
    {"name": "large/second", "env_kwargs": {"n": 120}, "agent_kwargs": {"answer": 1}},
)


def _truth(instance: int) -> int:
    """The toy env's hidden direction of ``instance``, drawn as the env draws it."""
    import numpy as np

    return int(np.random.default_rng([7, instance]).integers(2))


def test_variants_override_env_and_agent_and_are_paired(tmp_path):
    config = RunConfig((TOY,), "runner_agents:SleepyAgent", instances=(0, 1, 2), split=None, variants=VARIANTS)
    summary = run(config, tmp_path, progress=False)
    assert summary.played == 6
    latest = RunStore(tmp_path).latest()
    for variant, rows, answer in (("small/first", 50, 0), ("large/second", 120, 1)):
        for instance in range(3):
            line = latest[episode_key(TOY, None, instance, 0, variant)]
            assert line["variant"] == variant and line["usage"]["rows"] == rows
            assert line["reward"] == float(answer == _truth(instance))
    seeds = {(line["instance"], line["env_seed"]) for line in latest.values()}
    assert len(seeds) == 3  # the same env seed for both variants of an instance
    assert run(config, tmp_path, progress=False).played == 0  # resumed: nothing left


def test_bad_variants_are_refused():
    for bad in ({"name": "a"}, [{"name": ""}], [{"name": "a|b"}], [{"name": "a"}, {"name": "a"}],
                [{"name": "a", "extra": 1}], [{"name": "a", "env_kwargs": {"seal": "x"}}]):
        with pytest.raises(ValueError):
            RunConfig((TOY,), "runner_agents:SleepyAgent", split=None, variants=bad)
    with pytest.raises(ValueError, match="time_limit"):
        RunConfig((TOY,), "runner_agents:SleepyAgent", split=None, time_limit=0)


def test_time_limit_records_timeouts_and_does_not_replay_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    variants = ({"name": "fast", "agent_kwargs": {"delay": 0.0}}, {"name": "stuck", "agent_kwargs": {"delay": 120.0}})
    config = RunConfig((TOY,), "runner_agents:SleepyAgent", instances=(0, 1), split=None, variants=variants,
                       time_limit=8.0)
    run(config, tmp_path)
    latest = RunStore(tmp_path).latest()
    statuses = {key.rsplit("|", 1)[1] + f"/{line['instance']}": line["status"] for key, line in latest.items()}
    assert statuses == {"fast/0": "finished", "fast/1": "finished", "stuck/0": "timeout", "stuck/1": "timeout"}
    stuck = [line for line in latest.values() if line["status"] == "timeout"]
    assert all("time limit of 8 s" in line["error"] and line["scores"] == {} and line["wall_time"] < 120
               for line in stuck)
    progress = capsys.readouterr().err.splitlines()
    assert "ETA" in progress[-1] and "timeout 2" in progress[-1]
    assert run(config, tmp_path, progress=False).played == 0  # a timeout is a result, not replayed
    assert sum(1 for _ in RunStore(tmp_path).episodes()) == 4


@pytest.mark.slow  # a local Ray start takes a minute or more on a loaded 2-core machine
def test_time_limit_under_ray_kills_and_records_the_stuck_episodes(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    import os
    from pathlib import Path

    import causal_gym

    tests = str(Path(__file__).parent)  # the Ray workers import the toy benchmark and the agent from here
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests, os.path.dirname(os.path.dirname(causal_gym.__file__))]))
    variants = ({"name": "fast", "agent_kwargs": {"delay": 0.0}}, {"name": "stuck", "agent_kwargs": {"delay": 120.0}})
    config = RunConfig((TOY,), "runner_agents:SleepyAgent", instances=(0,), split=None, variants=variants,
                       time_limit=15.0, backend="ray", workers=2)
    run(config, tmp_path, progress=False)
    statuses = {line["variant"]: line["status"] for line in RunStore(tmp_path).latest().values()}
    assert statuses == {"fast": "finished", "stuck": "timeout"}


def _descendants(pid: int) -> list[int]:
    from pathlib import Path

    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def test_sigterm_stops_a_time_limited_run_promptly_and_the_rerun_plays_the_rest(tmp_path, monkeypatch):
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    import causal_gym

    tests = str(Path(__file__).parent)
    out = tmp_path / "run"
    code = ("from causal_gym.eval.runner import RunConfig, run\n"
            f"run(RunConfig(({TOY!r},), 'runner_agents:SleepyAgent', instances=(0, 1, 2, 3), split=None, "
            f"agent_kwargs={{'delay': 300.0}}, time_limit=900.0, workers=2), {str(out)!r}, progress=False)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.path.dirname(os.path.dirname(causal_gym.__file__))])}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_descendants(proc.pid)) < 5 and time.monotonic() < deadline:  # 2 workers, 2 helpers, a tracker
        time.sleep(0.2)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=90)  # the drain waits 30 s at most, never the 900 s limit
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = RunStore(out).episodes()
    assert lines and all(line["status"] == "interrupted" for line in lines)
    monkeypatch.setenv("SLEEPY_AGENT_DELAY", "0")
    config = RunConfig((TOY,), "runner_agents:SleepyAgent", instances=(0, 1, 2, 3), split=None,
                       agent_kwargs={"delay": 300.0}, time_limit=900.0, workers=2)
    assert run(config, out, progress=False).played == 4
    assert sorted(RunStore(out).finished_keys()) == [episode_key(TOY, None, k, 0) for k in range(4)]
