"""The agent protocol and single-episode rollout on a standard Gymnasium env."""

import json

import gymnasium as gym
import numpy as np
import pytest

from causal_gym._jsonable import to_jsonable
from causal_gym.agents import Agent, RandomAgent, task_spec
from causal_gym.eval import rollout


def test_random_agent_satisfies_protocol_and_is_reproducible():
    assert isinstance(RandomAgent(0), Agent)
    first = rollout(gym.make("CartPole-v1"), RandomAgent(seed=3), seed=11)
    second = rollout(gym.make("CartPole-v1"), RandomAgent(seed=3), seed=11)
    assert first.rewards == second.rewards and first.steps == second.steps
    # CartPole pays 1 per step, so the return equals the step count: an independent check of bookkeeping.
    assert first.total_reward == first.steps
    assert first.terminated != first.truncated or first.truncated


def test_max_steps_truncates_and_record_is_json():
    record = rollout(gym.make("CartPole-v1"), RandomAgent(seed=0), seed=0, max_steps=3)
    assert record.steps == 3 and record.truncated and not record.finished
    assert record.status == "truncated"  # the run store's status of a limit-ended episode
    payload = json.loads(json.dumps(record.to_dict()))
    assert payload["steps"] == 3 and payload["truncated"] is True
    with pytest.raises(ValueError):
        rollout(gym.make("CartPole-v1"), RandomAgent(seed=0), max_steps=0)


def test_task_spec_falls_back_to_docstring():
    spec = task_spec(gym.make("CartPole-v1"))
    assert spec.env_id == "CartPole-v1" and spec.tool_specs == () and spec.description


def test_to_jsonable_handles_numpy_and_rejects_unknown():
    out = to_jsonable({"a": np.arange(3, dtype=np.int8), 1: np.float32(0.5), "s": {2, 1}, "nan": float("nan")})
    assert out == {"a": [0, 1, 2], "1": 0.5, "s": [1, 2], "nan": None}
    json.dumps(out)
    with pytest.raises(TypeError):
        to_jsonable(object())


def test_rollout_takes_a_factory_and_refuses_what_is_no_agent():
    by_class = rollout(gym.make("CartPole-v1"), RandomAgent, seed=3)  # RandomAgent() is seeded 0 by default
    by_instance = rollout(gym.make("CartPole-v1"), RandomAgent(seed=0), seed=3)
    assert by_class.rewards == by_instance.rewards and by_class.steps == by_instance.steps
    with pytest.raises(TypeError, match="reset.*act"):
        rollout(gym.make("CartPole-v1"), lambda: "not an agent", seed=3)
