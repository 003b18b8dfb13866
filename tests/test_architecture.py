"""The architecture's promises: the import layers hold (import-linter), and a benchmark defined
outside causal_gym's folders is one module — it appears in ``causal-gym list``, plays under the
runner (in worker processes too) and gets its table in the report."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


def test_import_contracts_hold():
    pytest.importorskip("importlinter")
    tool = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(tool)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


MODULE_LINE_LIMIT = 1000


def test_no_module_over_the_line_limit_without_a_reason_at_its_top():
    """A module over 1,000 lines holds several concepts unless its docstring opens by saying why not."""
    import ast

    unexplained = []
    for path in sorted((ROOT / "causal_gym").rglob("*.py")):
        text = path.read_text()
        if text.count("\n") <= MODULE_LINE_LIMIT:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "Why one module" not in "\n".join(doc.split("\n\n")[:2]):
            unexplained.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not unexplained, f"split these by concept or say at the top why not: {unexplained}"


def test_every_benchmark_folder_is_under_the_contracts():
    """A new benchmark folder must join the independence and 'names no benchmark' contracts."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    folders = {f"causal_gym.envs.{spec.parent.name}" for spec in (ROOT / "causal_gym" / "envs").glob("*/spec.py")}
    assert len(folders) >= 3
    independent = next(c for c in contracts if c["type"] == "independence")
    forbidden = next(c for c in contracts if c["type"] == "forbidden")
    assert set(independent["modules"]) == folders
    assert set(forbidden["forbidden_modules"]) == folders


_PLAY_TOY = """
import contextlib, io, json, sys
import toy_benchmark  # registers the toy benchmark, as a third-party package's import would
from causal_gym.cli import main
from causal_gym.eval.runner import RunConfig, run
listing = io.StringIO()
with contextlib.redirect_stdout(listing):
    main(["list"])
out = sys.argv[1]
counts = {}
for workers in (1, 2):
    summary = run(RunConfig(("toy_benchmark:ToyDirection-v0",), "toy-first", instances=tuple(range(8)),
                            workers=workers), f"{out}/run{workers}", progress=False)
    counts[workers] = dict(summary.counts)
with contextlib.redirect_stdout(io.StringIO()):
    main(["report", f"{out}/run1", "--out", f"{out}/report"])
print(json.dumps({"listing": listing.getvalue(), "counts": counts}))
"""


def test_a_benchmark_defined_outside_the_tree_lists_plays_and_reports(tmp_path):
    # a fresh interpreter, so the registration does not leak into other tests' benchmark lists
    # the checkout itself stays off the path: its causal_gym.egg-info (left by `pip install -e .`) would stand
    # for the installed distribution, and Inspect names tasks "causal_gym/..." only for an installed package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", _PLAY_TOY, str(tmp_path)], capture_output=True, text=True,
                            timeout=600, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    played = json.loads(result.stdout.strip().splitlines()[-1])
    assert "ToyDirection-v0" in played["listing"] and "Toy -- which of two variables is the cause" in played["listing"]
    assert played["counts"] == {"1": {"finished": 8}, "2": {"finished": 8}}
    # the report's toy table against the truth restated from the module's rule (agent always answers 0)
    truth = [int(np.random.default_rng([7, k]).integers(2)) for k in range(8)]
    with open(tmp_path / "report" / "toy_direction.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["agent"] == "toy-first" and int(row["episodes"]) == 8
    assert float(row["accuracy"]) == pytest.approx(np.mean([t == 0 for t in truth]))
    assert "Toy direction -- accuracy by agent" in (tmp_path / "report" / "report.md").read_text()


_TOY_INSPECT = """
import json, sys
import toy_benchmark  # registers the toy benchmark; its spec declares the Inspect task toy_direction
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
calls = []
for _ in range(int(sys.argv[2])):  # per episode: look at the data, then answer X0 -> X1
    calls += [ModelOutput.for_tool_call("mockllm/model", "describe", {}),
              ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "X0 -> X1"})]
for output in calls:  # given usage, the mock model counts no tokens (its tokenizer would need a download)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
model = get_model("mockllm/model", custom_outputs=calls)
# by its registry name, as `inspect eval causal_gym/toy_direction` finds it through the entry point
(log,) = inspect_eval("causal_gym/toy_direction", task_args={"episodes": int(sys.argv[2])}, model=model,
                      max_samples=1, log_dir=sys.argv[1], display="none")
saved = read_eval_log(log.location)
print(json.dumps({"status": log.status, "task": saved.eval.task_registry_name,
                  "scores": {s.id: s.scores["episode_scores"].value for s in saved.samples},
                  "steps": [s.scores["episode_scores"].metadata["steps"] for s in saved.samples]}))
"""


def test_the_toy_benchmarks_inspect_task_plays_with_no_edit_outside_its_module(tmp_path):
    """The toy declares ``InspectTask("toy_direction", ...)`` in its spec; causal_gym.integrations.inspect
    (which names no benchmark) turns it into a task Inspect finds by name and plays."""
    pytest.importorskip("inspect_ai")
    episodes = 4
    # the checkout itself stays off the path: its causal_gym.egg-info (left by `pip install -e .`) would stand
    # for the installed distribution, and Inspect names tasks "causal_gym/..." only for an installed package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", _TOY_INSPECT, str(tmp_path), str(episodes)], capture_output=True,
                            text=True, timeout=600, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    played = json.loads(result.stdout.strip().splitlines()[-1])
    assert played["status"] == "success" and played["task"] == "causal_gym/toy_direction"
    truth = [int(np.random.default_rng([7, k]).integers(2)) for k in range(episodes)]  # the module's rule
    assert played["scores"] == {f"ToyDirection-tools-v0/test/{k}/0": {"correct": float(t == 0)}
                                for k, t in enumerate(truth)}
    assert played["steps"] == [2] * episodes


def test_a_benchmark_missing_a_piece_fails_at_registration_naming_each():
    from causal_gym.envs.benchmark import (
        AgentEntry,
        BenchmarkSpec,
        EnvEntry,
        InspectTask,
        benchmarks,
        register_benchmark,
    )

    spec = BenchmarkSpec(
        name="broken",
        title="Broken",
        envs=(EnvEntry("Broken-v0", "causal_gym.no_such_module:Env", "an entry point that does not import"),
              EnvEntry("Broken-sealed-v0", "fractions:Fraction", "declares a seal it does not take",
                       takes_seal=True)),
        agents={"broken-agent": AgentEntry("string:Template", "declares a seed it does not take", takes_seed=True)},
        reproduce="textwrap:dedent",  # takes no argv
        report="json",  # has neither episode_columns nor report_tables
    )
    with pytest.raises(ValueError) as raised:
        register_benchmark(spec)
    message = str(raised.value)
    for piece in ("env Broken-v0: entry point 'causal_gym.no_such_module:Env' does not load",
                  "env Broken-sealed-v0: entry point 'fractions:Fraction' takes no 'seal'",
                  "agent 'broken-agent': 'string:Template' takes no 'seed'",
                  "reproduce 'textwrap:dedent' takes no 'argv'",
                  "report module 'json' has no function episode_columns()",
                  "report module 'json' has no function report_tables()"):
        assert piece in message
    assert "broken" not in {s.name for s in benchmarks()}  # nothing half-registered
    with pytest.raises(ValueError, match="plays ids it does not declare"):
        BenchmarkSpec("broken", "Broken", spec.envs, inspect_tasks=(
            InspectTask("broken", "plays a stranger", {"v": 0}, {(0,): "CartPole-v1"}),))
    with pytest.raises(ValueError, match="the defaults"):
        InspectTask("broken", "defaults choose nothing", {"v": 1}, {(0,): "Broken-v0"})
