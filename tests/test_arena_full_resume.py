"""``causal-gym reproduce arena --full`` killed with SIGKILL in the middle resumes with nothing lost or duplicated.

A small slice of the full grid runs in a subprocess (the per-unit time limit on), either on the
local pool (two worker processes, so three process levels) or on a real Ray cluster that the test
starts with ``ray start --head`` (token authentication, as Ray >= 2.59 does for local clusters);
the test kills the command with SIGKILL once some units are on disk and others are not, reruns the
same command, and checks the store against an uninterrupted run of the same plan played here:
every planned unit has exactly one result line and the same scores.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import causal_gym
from causal_gym.envs.arena import reproduce
from causal_gym.eval.runner import run_plan
from causal_gym.eval.store import RunStore
from processes import live_processes

pytestmark = pytest.mark.usefixtures("isolated_cache")

ARGS = ["--full", "--dims", "10", "--families", "chain,tree", "--instances", "2", "--splits", "obs",
        "--replicates", "1", "--no-grounded", "--methods", "pc,direct_lingam,random_regress", "--n-obs", "200",
        "--timeout", "300", "--quiet"]
UNITS = 2 * 2 * 3


def _command(out: Path, workers: int, backend: tuple[str, ...] = ()) -> list[str]:
    argv = ["reproduce", "arena", *ARGS, "--workers", str(workers), "--out", str(out), *backend]
    return [sys.executable, "-c", f"import sys\nfrom causal_gym.cli import main\nsys.exit(main({argv!r}))"]


def _lines(store: Path) -> int:
    path = store / "episodes.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A one-node Ray cluster started with ``ray start --head`` on loopback: (address, env with its token)."""
    pytest.importorskip("ray")
    ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("the ray command is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_hex(32)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
           "PYTHONPATH": os.path.dirname(os.path.dirname(causal_gym.__file__))}
    temp = Path("/tmp") / f"cg-ray-{secrets.token_hex(4)}"  # short: Ray's socket paths must fit in 107 bytes
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--port", str(port), "--node-ip-address", "127.0.0.1",
         "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", str(temp)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while subprocess.run([ray_cli, "status", "--address", address], env=env, capture_output=True).returncode:
            if time.monotonic() > deadline or head.poll() is not None:
                pytest.fail(f"the Ray head did not come up at {address} (exit code {head.poll()})")
            time.sleep(1.0)
        yield address, env
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops its processes on SIGTERM
        try:
            head.wait(timeout=60)
        finally:
            if live_processes(pgrp=head.pid):
                os.killpg(head.pid, signal.SIGKILL)
            shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.parametrize("backend", ["local", "ray-cluster"])
def test_kill_9_in_the_middle_of_full_resumes_with_nothing_lost_or_duplicated(tmp_path, backend, request):
    out = tmp_path / "full"
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(causal_gym.__file__))}
    extra: tuple[str, ...] = ()
    if backend == "ray-cluster":
        address, env = request.getfixturevalue("ray_cluster")
        extra = ("--backend", "ray", "--address", address)
    proc = subprocess.Popen(_command(out, 2, extra), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while _lines(out / "synthetic") < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)  # kill -9 of the command only: its local workers must die with it
    proc.wait(timeout=60)
    deadline = time.monotonic() + 10
    while live_processes(pgrp=proc.pid) and time.monotonic() < deadline:  # its workers die with it, and write nothing
        time.sleep(0.2)
    leftover = live_processes(pgrp=proc.pid)
    if leftover:
        os.killpg(proc.pid, signal.SIGKILL)
    done = _lines(out / "synthetic")
    assert 3 <= done < UNITS, f"killed after {done} of {UNITS} units; stderr: {proc.stderr.read().decode()[-2000:]}"
    assert not leftover, "processes of the killed run were still alive 10 s after it"

    resumed = subprocess.run(_command(out, 2, extra), env=env, capture_output=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    lines = RunStore(out / "synthetic").episodes()
    keys = [line["key"] for line in lines]
    assert len(keys) == len(set(keys)) == UNITS  # nothing duplicated, nothing lost
    assert all(line["status"] == "finished" for line in lines)

    clean = reproduce.main([*ARGS, "--workers", "1", "--out", str(tmp_path / "clean")], runner=run_plan)
    reference = {line["key"]: line["scores"] for line in RunStore(tmp_path / "clean" / "synthetic").episodes()}
    assert {line["key"]: line["scores"] for line in lines} == reference and len(clean["rows"]) == UNITS


def test_a_ray_cluster_without_its_token_gets_a_clear_error(ray_cluster, tmp_path):
    address, env = ray_cluster
    env = {key: value for key, value in env.items() if not key.startswith("RAY_AUTH")}
    done = subprocess.run(_command(tmp_path / "denied", 1, ("--backend", "ray", "--address", address)), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "cannot reach the Ray cluster" in done.stderr and "RAY_AUTH_MODE=token" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "denied" / "synthetic" / "episodes.jsonl").exists()


def test_a_method_with_its_own_budget_stops_before_the_units_time_limit():
    from causal_gym.envs.arena.baselines import MethodAgent

    def agents(timeout: float) -> dict[str, dict]:
        plan = reproduce.plan_runs(methods=("pc", "notears_mlp"), families=("chain",), dims=(10,), per_block=1,
                                   splits=("obs",), replicates=1, grounded=(), timeout=timeout)
        return {v["agent_kwargs"]["method"]: v["agent_kwargs"] for v in plan["synthetic"]["variants"]}

    assert agents(600.0)["notears_mlp"]["max_seconds"] == pytest.approx(500.0)  # --quick's 600 s per unit
    assert agents(3600.0)["notears_mlp"]["max_seconds"] == pytest.approx(3000.0)  # the paper's hour
    assert agents(7200.0)["notears_mlp"]["max_seconds"] == pytest.approx(3000.0)  # never above the default
    assert "max_seconds" not in agents(600.0)["pc"]  # methods without a budget get none
    assert MethodAgent(**agents(600.0)["notears_mlp"]).options["max_seconds"] == pytest.approx(500.0)
