"""What a new user and a corrupted store met: episodes beyond a suite, a deleted run.json, a hand-edited
line; each is refused up front with a message that names the problem, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RUN_FILE, RunStore


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


LAB = RunConfig(("CausaLab-3node-v0",), "causalab-systematic", instances=range(2))


def test_a_line_without_scores_does_not_crash_the_summary(tmp_path: Path) -> None:
    run(LAB, tmp_path / "run", progress=False)
    path = RunStore(tmp_path / "run").episodes_path
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    del lines[1]["scores"], lines[1]["reward"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = run(LAB, tmp_path / "run", progress=False)
    assert summary.complete and summary.played == 0


def test_a_store_without_run_json_is_not_adopted(tmp_path: Path) -> None:
    run(LAB, tmp_path / "run", progress=False)
    (tmp_path / "run" / RUN_FILE).unlink()
    other = RunConfig(("CausaLab-3node-v0",), "causalab-random", instances=range(2))
    with pytest.raises(ValueError, match="no run.json"):
        run(other, tmp_path / "run", progress=False)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda line: {**line, "scores": [1, 2]}, "field 'scores' is a list"),
        (lambda line: {**line, "key": "CausaLab-3node-v0|test|9|0"}, "not an episode of this run"),
        (lambda line: [line], "not a JSON object"),
    ],
    ids=["wrong-type", "foreign-key", "not-an-object"],
)
def test_a_malformed_line_is_refused_naming_the_line(tmp_path: Path, edit, message) -> None:
    run(LAB, tmp_path / "run", progress=False)
    path = RunStore(tmp_path / "run").episodes_path
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    lines[1] = edit(lines[1])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ValueError, match=message) as caught:
        run(LAB, tmp_path / "run", progress=False)
    assert "line 2" in str(caught.value) or "not an episode of this run" in str(caught.value)
