"""Stopping a run: SIGTERM or Ctrl-C writes the episodes in flight as interrupted, the next run
replays them; workers die with the run; threads (concurrency) give the same episodes as one by one."""

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
from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RunStore
from processes import live_processes

TESTS = Path(__file__).parent
ENV = ("Heuresis-lg-v0",)
KWARGS = {"d": 4, "n": 60, "budgets": {"turns": 100}}


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def _cli(out: Path, *extra: str, steps: int | None = None, mark: Path | None = None) -> subprocess.Popen:
    args = ["run", "--env", ENV[0], "--agent", "runner_agents:SlowAgent", "--episodes", "4", "--out", str(out),
            "--env-kwargs", json.dumps(KWARGS), "--agent-kwargs", json.dumps({"steps": 80, "delay": 0.1}), "--quiet",
            *extra]
    code = f"import sys\nfrom causal_gym.cli import main\nsys.exit(main({args!r}))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.path.dirname(os.path.dirname(causal_gym.__file__))])}
    if steps is not None:
        env["SLOW_AGENT_STEPS"] = str(steps)
    if mark is not None:
        env["SLOW_AGENT_MARK"] = str(mark)
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


@pytest.mark.parametrize("extra", [(), ("--workers", "2"), ("--concurrency", "2")], ids=["inline", "processes", "threads"])
def test_sigterm_saves_the_episodes_in_flight_and_the_next_run_replays_them(tmp_path: Path, extra) -> None:
    out = tmp_path / "run"
    mark = tmp_path / "steps"
    proc = _cli(out, *extra, mark=mark)
    deadline = time.monotonic() + 180  # warm-up (PC-KCI references) then a few steps, however busy the cores
    while (not mark.exists() or len(mark.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        time.sleep(0.1)
    steps_seen = len(mark.read_text().splitlines()) if mark.exists() else 0
    still_running = proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (steps_seen, still_running, stderr.decode()[-2000:])
    assert b"interrupted" in stderr
    lines = list(RunStore(out).episodes())
    interrupted = [line for line in lines if line["status"] == "interrupted"]
    assert interrupted, [line["status"] for line in lines]
    # what it had done: the calls so far (an episode stopped while its env was still being built has none)
    assert any(line["trace"] and line["trace"]["calls"] for line in interrupted)
    assert "RolloutInterrupted" in interrupted[0]["error"]
    done = RunStore(out).finished_keys()
    assert not done & {line["key"] for line in interrupted}
    proc = _cli(out, *extra, steps=5)  # the replay: short episodes
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    latest = RunStore(out).latest()
    assert len(latest) == 4 and all(line["status"] == "finished" for line in latest.values())


def test_kill_9_of_a_run_leaves_no_worker_behind(tmp_path: Path) -> None:
    proc = _cli(tmp_path / "run", "--workers", "2")
    deadline = time.monotonic() + 60
    while len(live_processes(ppid=proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = live_processes(ppid=proc.pid)
    assert len(workers) >= 2
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
              for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
             and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    assert alive == []


def test_threads_play_the_same_episodes_as_one_by_one(tmp_path: Path) -> None:
    config = RunConfig(("Heuresis-lg-guided-v0",), "pc-kci", instances=range(4), env_kwargs={"d": 4, "n": 60})
    run(config, tmp_path / "serial", progress=False)
    summary = run(RunConfig(**{**config.__dict__, "concurrency": 4}), tmp_path / "threads", progress=False)
    assert summary.complete
    serial, threaded = RunStore(tmp_path / "serial").latest(), RunStore(tmp_path / "threads").latest()
    assert serial.keys() == threaded.keys()
    for key in serial:
        assert serial[key]["scores"] == threaded[key]["scores"] and serial[key]["env_seed"] == threaded[key]["env_seed"]
    with pytest.raises(ValueError, match="concurrency"):
        RunConfig(("Heuresis-lg-v0",), "random", concurrency=2, workers=2)


def test_a_store_that_cannot_be_written_stops_a_threaded_run(tmp_path: Path, monkeypatch) -> None:
    """The episode threads write their own lines; the first write that fails cancels the episodes not
    yet started and is raised, rather than the run playing on with nowhere to keep what it plays."""
    import causal_gym.eval.executors as executors

    played = []
    play_episode = executors.play_episode

    def slow_play(task):
        played.append(task.key)
        time.sleep(0.05)  # long beside the main thread's wake-up, so the threads start few episodes meanwhile
        return play_episode(task)

    def full_disk(self, line):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(executors, "play_episode", slow_play)
    monkeypatch.setattr(RunStore, "append", full_disk)
    with pytest.raises(OSError, match="No space left"):
        run(RunConfig(("Heuresis-lg-v0",), "random", instances=range(20), env_kwargs={"d": 4, "n": 60}, concurrency=2),
            tmp_path, progress=False)
    assert 1 <= len(played) <= 6
