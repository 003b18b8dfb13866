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
