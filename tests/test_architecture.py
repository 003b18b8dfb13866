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
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT), os.environ.get("PYTHONPATH", "")])}
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
