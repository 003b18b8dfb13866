"""The LLM agent end to end: real ``openai`` client, real HTTP to a scripted local server, real
Heuresis episodes. Checks the conversation the server received (tool results and errors came back,
the key only in the auth header), the env's outcome against hand-built graphs, token sums against
the script, the retry policy, JSON fallback mode, the last turn, and the prompt variants."""

from __future__ import annotations

import json
import socket

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("openai")

import causal_gym  # noqa: E402,F401  (registers the ids)
from causal_gym.agents import task_spec  # noqa: E402
from causal_gym.agents.llm import LLMAgent, LLMRequestError, parse_json_tool_call  # noqa: E402
from causal_gym.envs.heuresis.prompts import PROMPT_LEVEL_TEXTS, TARGET_TEXTS  # noqa: E402
from causal_gym.eval import rollout  # noqa: E402
from fake_openai_server import FakeOpenAIServer, error_reply, text_reply, tool_reply  # noqa: E402

KEY = "sk-test-0123456789-do-not-leak"
OPTIONS = {"split": "test", "instance": 0}
D = 5


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def make_env(**kwargs):
    return gym.make("Heuresis-lg-v0", d=D, n=200, **kwargs)


def make_agent(server, **kwargs):
    kwargs.setdefault("retry_base_delay", 0.001)
    kwargs.setdefault("tool_mode", "native")  # scripted replies: no tool-mode probe request
    return LLMAgent("fake-model", base_url=server.base_url, api_key=KEY, **kwargs)


def play(server, script, env=None, **agent_kwargs):
    server.script.extend(script)
    env = env or make_env()
    agent = make_agent(server, **agent_kwargs)
    agent.bind(env)
    return env, agent, rollout(env, agent, seed=0, options=OPTIONS)


def graph(*edges: tuple[int, str, int], base: np.ndarray | None = None) -> np.ndarray:
    """A graph over D variables from ``(a, "->" | "--" | "none", b)`` edges, optionally edited from ``base``."""
    out = np.zeros((D, D), dtype=np.int8) if base is None else base.copy()
    for a, kind, b in edges:
        out[a, b], out[b, a] = (1, 0) if kind == "->" else (1, 1) if kind == "--" else (0, 0)
    return out


COMPLETE = np.ones((D, D), dtype=np.int8) - np.eye(D, dtype=np.int8)


def messages(request) -> list[dict]:
    return request.json["messages"]


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


# ---------------------------------------------------------------------------------------------
# a full native episode
# ---------------------------------------------------------------------------------------------


def test_native_episode_relays_results_errors_and_retries_a_500(server):
    usages = [(100 + 10 * k, 7 + k) for k in range(7)]
    script = [
        tool_reply(("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}), usage=usages[0]),
        error_reply(500),
        tool_reply(("set_edge", {"x": "X0", "y": "X1", "relation": "forward"}), usage=usages[1]),
        tool_reply(("ci_test", '{"x": "X0", "y": '), usage=usages[2]),  # invalid JSON arguments
        tool_reply(("delete_everything", {}), usage=usages[3]),  # unknown tool
        tool_reply(("set_edge", {"x": "X2", "y": "X3", "relation": "none"}), ("summarize", {}), usage=usages[4]),
        text_reply("I believe the graph is fine now.", usage=usages[5]),  # no tool call
        tool_reply(("submit", {"edges": "X0 -> X1, X1 -- X2"}), usage=usages[6]),
    ]
    prices = {"fake-model": (3.0, 15.0)}
    env, agent, record = play(server, script, max_tokens=256, temperature=0.2, seed=7, prices=prices)

    # the episode: every scripted call became one env step, the edge list was submitted and scored
    assert record.steps == 8 and record.terminated and not record.truncated
    info = record.final_info
    assert info["submission_source"] == "agent_edge_list"
    np.testing.assert_array_equal(info["submitted_graph"], graph((0, "->", 1), (1, "--", 2)))
    assert record.total_reward == pytest.approx(info["scores"]["adjacency_f1"])
    env_calls = [call.tool for call in env.unwrapped.record()]
    assert env_calls == ["ci_test", "set_edge", "ci_test", None, "set_edge", "summarize", None, "submit"]

    # the server: 7 replies + the 500; the retry resent the same request
    assert len(server.requests) == 8 and server.served == 8
    assert server.requests[1].body == server.requests[2].body
    first = server.requests[0].json
    assert first["tools"] == env.unwrapped.tool_specs()
    assert first["max_tokens"] == 256 and first["temperature"] == 0.2 and first["seed"] == 7
    assert messages(server.requests[0])[0] == {"role": "system", "content": task_spec(env).description}

    # results and errors came back as tool messages answering the right call ids
    final = messages(server.requests[-1])
    tool_messages = {m["tool_call_id"]: m["content"] for m in final if m["role"] == "tool"}
    calls = {c["id"]: c for m in final if m["role"] == "assistant" for c in m.get("tool_calls") or []}
    assert set(tool_messages) == set(calls) and len(calls) == 6
    by_name = {}
    for call_id, call in calls.items():
        by_name.setdefault(call["function"]["name"], []).append(tool_messages[call_id])
    log = env.unwrapped.record()
    assert by_name["ci_test"][0] == log[0].result_text and "fisherz" in by_name["ci_test"][0]
    assert by_name["ci_test"][1].startswith("error: ") and "not valid JSON" in by_name["ci_test"][1]
    assert by_name["delete_everything"][0].startswith("error: unknown tool 'delete_everything'")
    assert by_name["summarize"][0] == log[5].result_text
    # the reply without a tool call was answered by a user message carrying the env's error
    text_at = next(i for i, m in enumerate(final) if m["role"] == "assistant" and not m.get("tool_calls"))
    assert final[text_at + 1]["role"] == "user" and final[text_at + 1]["content"].startswith("error: ")
    # level 0 shows no budget status
    assert not any("[remaining:" in str(m["content"]) for m in final)

    # the invalid JSON went back to the server wrapped in valid JSON; the transcript keeps it raw
    sent_bad = next(c for c in calls.values() if "invalid_arguments" in c["function"]["arguments"])
    assert json.loads(sent_bad["function"]["arguments"]) == {"invalid_arguments": '{"x": "X0", "y": '}
    raw = [c["function"]["arguments"] for m in agent.transcript() for c in m.get("tool_calls") or []]
    assert '{"x": "X0", "y": ' in raw

    # usage: the scripted token counts, the price table, the retry and the invalid calls
    usage = agent.usage()
    prompt, completion = sum(u[0] for u in usages), sum(u[1] for u in usages)
    assert usage["prompt_tokens"] == prompt and usage["completion_tokens"] == completion
    assert usage["cost"] == pytest.approx((prompt * 3.0 + completion * 15.0) / 1e6)
    assert (usage["n_requests"], usage["n_retries"], usage["n_api_errors"], usage["n_invalid_calls"]) == (8, 1, 1, 3)
    events = [e for e in agent.transcript() if "event" in e]
    assert [(e["status_code"], e["attempt"]) for e in events] == [(500, 1)]
    assert 0.0005 <= events[0]["retry_in"] < 0.001

    # the key: only in the authorization header, never in a body, the transcript or a record
    for request in server.requests:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert KEY not in request.body
        assert not any(KEY in v for k, v in request.headers.items() if k != "authorization")
    for text in (repr(agent), json.dumps(agent.transcript()), json.dumps(agent.config()), json.dumps(record.to_dict())):
        assert KEY not in text


def test_a_400_is_not_retried_and_raises(server):
    server.script.append(error_reply(400, "bad request: unsupported parameter"))
    env = make_env()
    agent = make_agent(server, max_retries=5)
    agent.bind(env)
    with pytest.raises(LLMRequestError, match="not retryable") as caught:
        rollout(env, agent, seed=0, options=OPTIONS)
    assert caught.value.status_code == 400 and caught.value.attempts == 1
    assert len(server.requests) == 1
    usage = agent.usage()
    assert (usage["n_requests"], usage["n_retries"], usage["n_api_errors"]) == (1, 0, 1)
    assert agent.transcript()[-1]["event"] == "api_error" and agent.transcript()[-1]["retry_in"] is None


def test_429_and_503_are_retried_with_backoff_until_the_limit(server):
    script = [
        error_reply(429, headers={"Retry-After": "0.05"}),
        error_reply(503),
        tool_reply(("submit", {})),
    ]
    _, agent, record = play(server, script, max_retries=2, retry_base_delay=0.002)
    assert record.final_info["submission_source"] == "agent" and len(server.requests) == 3
    delays = [e["retry_in"] for e in agent.transcript() if "event" in e]
    assert delays[0] >= 0.05  # the Retry-After header lengthens the first wait
    assert 0.002 <= delays[1] < 0.004  # the second: base * 2 with jitter in [0.5, 1)
    assert agent.usage()["n_retries"] == 2

    server.script.extend([error_reply(500), error_reply(502)])  # out of retries: raises
    env = make_env()
    agent = make_agent(server, max_retries=1)
    agent.bind(env)
    with pytest.raises(LLMRequestError, match="retries exhausted") as caught:
        rollout(env, agent, seed=0, options=OPTIONS)
    assert caught.value.status_code == 502 and caught.value.attempts == 2 and len(server.requests) == 5


def test_connection_errors_are_retried_then_raise():
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = make_env()
    agent = LLMAgent("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=2, retry_base_delay=0.001,
                     tool_mode="native")
    agent.bind(env)
    with pytest.raises(LLMRequestError) as caught:
        rollout(env, agent, seed=0, options=OPTIONS)
    assert caught.value.status_code is None and caught.value.attempts == 3
    assert agent.usage()["n_requests"] == 3 and agent.usage()["n_retries"] == 2


# ---------------------------------------------------------------------------------------------
# JSON fallback mode
# ---------------------------------------------------------------------------------------------


def test_json_mode_plays_an_episode_without_tools(server):
    script = [
        text_reply('Let me test.\n```json\n{"tool": "ci_test", "arguments": {"x": "X0", "y": "X1", "cond": ["X2"], '
                   '"test": "fisherz"}}\n```\nThen I decide.'),
        text_reply('{"name": "set_edge", "arguments": "{\\"x\\": \\"X0\\", \\"y\\": \\"X1\\", \\"relation\\": '
                   '\\"backward\\"}"}'),
        text_reply("I am not sure what to do next."),
        text_reply('{"tool": "submit", "arguments": {}} -- that is my final answer'),
    ]
    env, agent, record = play(server, script, tool_mode="json", token_limit_param="max_completion_tokens")
    assert record.steps == 4 and record.final_info["submission_source"] == "agent"
    np.testing.assert_array_equal(record.final_info["submitted_graph"], graph((1, "->", 0), base=COMPLETE))
    assert agent.usage()["n_invalid_calls"] == 1

    bodies = [r.json for r in server.requests]
    assert all("tools" not in b for b in bodies)
    assert all(b["max_completion_tokens"] == 4096 and "max_tokens" not in b for b in bodies)
    system = bodies[0]["messages"][0]["content"]
    for spec in env.unwrapped.tool_specs():  # every tool and argument is listed, with its choices
        function = spec["function"]
        block = system[system.index(f"\n{function['name']}: "):].split("\n", 1)[1]
        for name, schema in function["parameters"]["properties"].items():
            optional = "" if name in function["parameters"]["required"] else " (optional)"
            assert f"  {name}{optional}: " in block
        relation = function["parameters"]["properties"].get("relation")
        if relation is not None:
            assert "|".join(relation["enum"]) in block
    final = bodies[-1]["messages"]
    assert [m["role"] for m in final] == ["system", "user"] + ["assistant", "user"] * 3
    log = env.unwrapped.record()
    assert final[3]["content"] == log[0].result_text and final[5]["content"] == log[1].result_text
    assert final[7]["content"].startswith("error: no tool call found")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"tool": "summarize"}', ("summarize", {})),
        ('```json\n{"tool": "ci_test", "arguments": {"x": "X0", "y": "X1"}}\n```', ("ci_test", {"x": "X0", "y": "X1"})),
        ('call: {"name": "submit", "parameters": {"edges": "X0 -> X1"}} ok', ("submit", {"edges": "X0 -> X1"})),
        ('{"type": "function", "function": {"name": "summarize", "arguments": "{}"}}', ("summarize", "{}")),
        ('{broken {"tool": "run_code", "arguments": {"code": "print(\'{}\')"}}', ("run_code", {"code": "print('{}')"})),
        ('{"x": "X0"} and nothing else', None),
        ("no json here", None),
    ],
)
def test_parse_json_tool_call(text, expected):
    assert parse_json_tool_call(text) == expected


# ---------------------------------------------------------------------------------------------
# the last turn
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("retry_valid", [True, False])
def test_last_turn_asks_for_the_edge_list_and_allows_one_retry(server, retry_valid):
    retry = "Final answer: X0 -> X1, X2 -- X3" if retry_valid else "X0 -> X1 -> X0"
    script = [
        tool_reply(("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"})),
        tool_reply(("set_edge", {"x": "X0", "y": "X4", "relation": "none"})),
        text_reply("My graph: X0 -> X7"),  # X7 does not exist: rejected, one retry left
        text_reply(retry),
    ]
    env, agent, record = play(server, script, env=make_env(budgets={"turns": 2}), prompt_level=1)
    info = record.final_info
    assert record.steps == 4 and record.truncated
    assert info["truncated_reason"].startswith("budget_exhausted:turns")
    if retry_valid:
        assert record.terminated and info["submission_source"] == "agent_edge_list"
        np.testing.assert_array_equal(info["submitted_graph"], graph((0, "->", 1), (2, "--", 3)))
    else:
        assert info["submission_source"] == "rescued_working_graph"
        np.testing.assert_array_equal(info["submitted_graph"], graph((0, "none", 4), base=COMPLETE))

    submit_spec = [s for s in env.unwrapped.tool_specs() if s["function"]["name"] == "submit"]
    assert [len(r.json["tools"]) for r in server.requests] == [9, 9, 1, 1]
    assert server.requests[2].json["tools"] == submit_spec
    third = messages(server.requests[2])
    assert third[-1]["role"] == "user" and third[-1]["content"].startswith("Only submit is accepted now")
    assert "[last turn: budget turns exhausted" in third[-2]["content"]
    assert "[remaining: turns 0," in third[-2]["content"]
    fourth = messages(server.requests[3])
    assert "submission rejected" in fourth[-2]["content"] and "X7" in fourth[-2]["content"]
    assert fourth[-1]["content"].startswith("Only submit is accepted now")


def test_queued_calls_stop_at_the_last_turn(server):
    script = [
        tool_reply(("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}),
                   ("set_edge", {"x": "X0", "y": "X1", "relation": "none"})),
        tool_reply(("submit", {})),
    ]
    env, agent, record = play(server, script, env=make_env(budgets={"turns": 1}))
    # the turn budget allowed the first call only; the set_edge was never played
    assert [c.tool for c in env.unwrapped.record()] == ["ci_test", "submit"]
    assert record.final_info["submission_source"] == "agent"
    np.testing.assert_array_equal(record.final_info["submitted_graph"], COMPLETE)
    second = messages(server.requests[1])
    assert [m["role"] for m in second[-3:]] == ["tool", "tool", "user"]
    assert second[-2]["content"] == "not run: only submit is accepted now"


# ---------------------------------------------------------------------------------------------
# prompts and configuration
# ---------------------------------------------------------------------------------------------


def test_prompt_levels_and_targets_add_to_the_neutral_statement():
    env = make_env()
    env.reset(seed=0, options=OPTIONS)
    task = task_spec(env)
    prompts = [LLMAgent("m", prompt_level=k).system_prompt(task) for k in range(4)]
    assert prompts[0] == task.description  # level 0 is the env's neutral statement, untouched
    for k in range(1, 4):
        assert prompts[k].startswith(prompts[k - 1]) and prompts[k].endswith(PROMPT_LEVEL_TEXTS[k])
    assert "F1" in prompts[1] and "heteroscedastic" not in prompts[1]
    assert "noise scale depends" in prompts[2] and "never reconsiders" in prompts[3]
    for target in ("cpdag", "dag"):
        prompt = LLMAgent("m", prompt_level=2, stated_target=target).system_prompt(task)
        assert prompt == prompts[2] + "\n\n" + TARGET_TEXTS[target]
    # a level the task does not offer is refused when the task is known (the texts are the benchmark's)
    with pytest.raises(ValueError, match="prompt_level"):
        LLMAgent("m", prompt_level=4).system_prompt(task)
    with pytest.raises(ValueError, match="prompt_level"):
        LLMAgent("m", prompt_level=-1)


def test_configuration_from_environment_and_validation(monkeypatch):
    monkeypatch.setenv("CAUSAL_GYM_LLM_MODEL", "env-model")
    monkeypatch.setenv("CAUSAL_GYM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CAUSAL_GYM_LLM_API_KEY", KEY)
    agent = LLMAgent()
    assert (agent.model, agent.base_url) == ("env-model", "http://127.0.0.1:9/v1")
    assert KEY not in repr(agent) and KEY not in json.dumps(agent.config()) and "***" in repr(agent)
    monkeypatch.delenv("CAUSAL_GYM_LLM_MODEL")
    with pytest.raises(ValueError, match="model"):
        LLMAgent()
    for bad in ({"tool_mode": "xml"}, {"stated_target": "pag"}, {"max_tokens": 0}, {"prices": {"m": (1.0,)}},
                {"temperature": -1.0}, {"token_limit_param": "limit"}):
        with pytest.raises(ValueError):
            LLMAgent("m", **bad)

    env = make_env()
    obs, info = env.reset(seed=0, options=OPTIONS)
    with pytest.raises(RuntimeError, match="bind"):
        LLMAgent("m").act(obs, info)
    with pytest.raises(TypeError, match="tool envs"):
        LLMAgent("m").bind(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="submit"):
        LLMAgent("m").reset(task_spec(gym.make("CartPole-v1")))


def test_the_agent_runs_where_openai_brings_httpx2_and_httpx_is_not_installed(tmp_path):
    """openai >= 3 is built on ``httpx2`` and a fresh ``pip install 'causal-gym[llm]'`` has no ``httpx``:
    an episode in a process that cannot import ``httpx`` (a meta-path blocker) plays to its end."""
    import os
    import subprocess
    import sys

    openai = pytest.importorskip("openai")
    if "httpx2" not in openai.DefaultHttpxClient.__mro__[1].__module__:
        pytest.skip("this openai is built on httpx itself")
    code = """
import sys
class NoHttpx:
    def find_spec(self, name, path=None, target=None):
        if name == "httpx" or name.startswith("httpx."):
            raise ModuleNotFoundError("No module named 'httpx'", name="httpx")
sys.meta_path.insert(0, NoHttpx())
import gymnasium as gym, causal_gym
from causal_gym.agents.llm import LLMAgent
from causal_gym.eval import rollout
agent = LLMAgent("fake-model", base_url=sys.argv[1], api_key="k", tool_mode="native")
record = rollout(gym.make("Heuresis-lg-v0", d=4, n=60), agent, seed=0, options={"instance": 0})
assert "httpx" not in sys.modules, "httpx was imported"
print(record.final_info["submission_source"], agent.usage()["n_tool_calls"])
"""
    with FakeOpenAIServer([tool_reply(("summarize", {})), tool_reply(("submit", {}))]) as server:
        done = subprocess.run([sys.executable, "-c", code, server.base_url], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "CAUSAL_GYM_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["agent", "2"]
