"""What a new user and a corrupted store met: episodes beyond a suite, a deleted run.json, a hand-edited
line; each is refused up front with a message that names the problem, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS
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


@pytest.mark.parametrize(
    ("env_id", "size", "env_kwargs"),
    [("CausaLab-3node-v0", 50, {}), ("Heuresis-lg-v0", 32, {"d": 4, "n": 60}),
     ("CausalArena-formula-v0", len(FORMULA_SCENARIOS), {}), ("CausaLab-planner-3node-v0", 50, {})],
)
def test_episodes_beyond_a_suite_are_refused_before_any_line(tmp_path: Path, env_id, size, env_kwargs) -> None:
    config = RunConfig((env_id,), "random", instances=range(size + 10), env_kwargs=env_kwargs)
    with pytest.raises(ValueError, match=rf"cannot play instance {size + 9}.*out of range.*must be < {size}"):
        run(config, tmp_path / "run", progress=False)
    assert not RunStore(tmp_path / "run").episodes_path.exists() or not RunStore(
        tmp_path / "run").episodes_path.read_text()


@pytest.mark.parametrize("env_id", ["CausaLab-3node-v0", "Heuresis-lg-v0", "CausalArena-formula-v0",
                                    "CausalArena-formula-tools-v0", "CausaLab-planner-3node-v0",
                                    "HeuresisRepair-lg-v0"])
@pytest.mark.parametrize("options", ["test", ["instance", 0], 3])
def test_reset_options_that_are_not_a_dict_get_a_clear_error(env_id, options) -> None:
    import gymnasium as gym

    env = gym.make(env_id)
    with pytest.raises(ValueError, match="reset options must be a dict"):
        env.reset(seed=0, options=options)
