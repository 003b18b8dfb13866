"""What real servers taught the LLM agent: valid messages, tool_choice, the tool-mode probe, context
management, deterministic errors, timeouts and time limits, all against a local scripted server."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("openai")

import causal_gym  # noqa: E402,F401
from causal_gym.agents.context import ContextOverflow, ContextWindow, window_from_error  # noqa: E402
from causal_gym.agents.llm import LLMAgent, LLMRequestError  # noqa: E402
from causal_gym.eval import rollout  # noqa: E402
from causal_gym.harness.working_graph import parse_edge_list  # noqa: E402
from fake_openai_server import (  # noqa: E402
    FakeOpenAIServer,
    delayed,
    error_reply,
    raw_text_reply,
    text_reply,
    tool_reply,
)

OPTIONS = {"split": "test", "instance": 0}


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def make_env(**kwargs):
    return gym.make("Heuresis-lg-v0", d=4, n=60, **kwargs)


def play(server, script, env=None, **kwargs):
    server.script.extend(script)
    env = env or make_env()
    kwargs.setdefault("retry_base_delay", 0.001)
    agent = LLMAgent("fake-model", base_url=server.base_url, api_key="k", **kwargs)
    agent.bind(env)
    return env, agent, rollout(env, agent, seed=0, options=OPTIONS)


def test_tool_call_history_is_valid_for_strict_servers_and_tool_choice_is_sent(server):
    script = [tool_reply(("summarize", {})), tool_reply(("submit", {}))]
    play(server, script, tool_mode="native")
    first, second = (r.json for r in server.requests)
    assert first["tool_choice"] == "auto" and first["tools"]
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant and all(isinstance(m["content"], str) for m in assistant)  # "" rather than null
    server.requests.clear()
    server.served, server.script = 0, [tool_reply(("submit", {}))]
    play(server, [], tool_mode="native", tool_choice=None)
    assert "tool_choice" not in server.requests[0].json


def test_auto_mode_probes_once_and_plays_native_when_the_server_calls_tools(server):
    script = [tool_reply(("ping", {})), tool_reply(("summarize", {})), tool_reply(("submit", {}))]
    env, agent, record = play(server, script)  # tool_mode="auto" is the default
    probe = server.requests[0].json
    assert [t["function"]["name"] for t in probe["tools"]] == ["ping"] and probe["tool_choice"] == "auto"
    assert "tools" in server.requests[1].json and record.terminated
    usage = agent.usage()
    assert usage["tool_mode"] == "native" and usage["n_tool_calls"] == 2 and not usage["never_called_a_tool"]
    assert agent.transcript()[0] == {"event": "tool_mode_probe", "mode": "native", "tool_calls": 1}
    # a second episode does not probe again
    server.script.extend([tool_reply(("submit", {}))])
    before = len(server.requests)
    rollout(env, agent, seed=1, options=OPTIONS)
    assert len(server.requests) == before + 1


def test_auto_mode_falls_back_to_json_when_no_tool_call_comes_back(server):
    script = [text_reply("pong"), text_reply('{"tool": "summarize", "arguments": {}}'),
              text_reply('{"tool": "submit", "arguments": {}}')]
    env, agent, record = play(server, script)
    assert "tools" not in server.requests[1].json
    assert "replying with one JSON object" in server.requests[1].json["messages"][0]["content"]
    assert agent.usage()["tool_mode"] == "json" and record.terminated
    assert [c.tool for c in env.unwrapped.record()] == ["summarize", "submit"]


def test_a_model_that_never_calls_a_tool_is_flagged(server):
    env, agent, record = play(server, [text_reply("I do not know.")] * 5 + [text_reply("")] * 3, tool_mode="native")
    usage = agent.usage()
    assert usage["never_called_a_tool"] and usage["n_tool_calls"] == 0 and usage["n_invalid_calls"] >= 5
    assert record.final_info["submission_source"] == "rescued_working_graph"


def test_rejected_well_formed_calls_are_counted(server):
    script = [tool_reply(("submit", {"edges": "X0 -> X1, X1 -> X2, X2 -> X0"})), tool_reply(("submit", {}))]
    env, agent, record = play(server, script, tool_mode="native")
    usage = agent.usage()
    assert usage["n_invalid_calls"] == 0 and usage["n_rejected_calls"] == 1  # the cyclic answer was refused


def test_a_validation_500_is_deterministic_and_not_retried(server):
    body = "7 validation errors: {'type': 'literal_error', 'msg': \"Input should be 'system'\"}"
    with pytest.raises(LLMRequestError, match="deterministic") as caught:
        play(server, [error_reply(500, body), tool_reply(("submit", {}))], tool_mode="native")
    assert caught.value.attempts == 1 and len(server.requests) == 1


def test_a_repeated_500_stops_after_the_second_identical_answer(server):
    with pytest.raises(LLMRequestError, match="deterministic"):
        play(server, [error_reply(500, "boom")] * 4 + [tool_reply(("submit", {}))], tool_mode="native")
    assert len(server.requests) == 2


def test_a_timeout_is_retried_once(server):
    script = [delayed(tool_reply(("summarize", {})), 1.5), delayed(tool_reply(("summarize", {})), 1.5)]
    with pytest.raises(LLMRequestError, match="APITimeoutError"):
        play(server, script, tool_mode="native", timeout=0.5)
    assert len(server.requests) == 2
    agent = LLMAgent("m", max_tokens=1000)
    assert agent.timeout == pytest.approx(30 + 1000 / 20)  # scaled to the reply budget


def test_an_over_length_error_trims_and_retries_instead_of_failing(server):
    overflow = ("This model's maximum context length is 4000 tokens. However, you requested 5200 tokens "
                "(5100 in the messages, 100 in the completion).")
    # usage=None: the fake server's token counts are not real ones, so the estimate stays uncalibrated
    script = [tool_reply(("summarize", {}), usage=None)] * 3 + [error_reply(400, overflow),
                                                              tool_reply(("submit", {}), usage=None)]
    env, agent, record = play(server, script, tool_mode="native", max_tokens=100)
    assert record.terminated and agent.usage()["turns_dropped"] >= 1
    events = [e for e in agent.transcript() if e.get("event") == "context_overflow"]
    assert events and events[0]["window"] == 4000
    retried = server.requests[-1].json["messages"]
    assert len(retried) < len(server.requests[-2].json["messages"])
    assert retried[0]["role"] == "system" and "earlier turn" in retried[1]["content"]


def test_a_small_context_window_bounds_every_request(server):
    cut = tool_reply(("set_edge", {"x": 0, "y": 1, "relation": "none"}), usage=None)
    script = [cut] + [tool_reply(("summarize", {}), usage=None)] * 12 + [tool_reply(("submit", {}), usage=None)]
    env, agent, record = play(server, script, tool_mode="native", context_window=6000, max_tokens=200)
    window = ContextWindow(6000, 200)
    assert record.terminated and agent.usage()["turns_dropped"] > 0
    # once turns are dropped, the latest message carries the current working graph and budgets
    last = server.requests[-1].json["messages"][-1]["content"]
    state = last[last.index("[current state: working graph edges: "):]
    shown = parse_edge_list(state[len("[current state: working graph edges: "):state.index("; remaining")], 4)
    expected = np.ones((4, 4), dtype=np.int8) - np.eye(4, dtype=np.int8)
    expected[0, 1] = expected[1, 0] = 0  # the start (the complete undirected graph) minus the cut edge
    np.testing.assert_array_equal(shown, expected)
    assert "remaining: turns " in state
    for request in server.requests:
        body = request.json
        assert window.estimate(body["messages"], body.get("tools", ())) <= window.budget
        assert body["messages"][0]["role"] == "system"
        # a tool result never arrives without the call it answers
        ids = {c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or ()}
        assert all(m["tool_call_id"] in ids for m in body["messages"] if m["role"] == "tool")


def test_context_window_refuses_what_cannot_fit_and_reads_server_errors():
    window = ContextWindow(300, 200)
    with pytest.raises(ContextOverflow, match="cannot hold"):
        window.fit([{"role": "system", "content": "x" * 2000}, {"role": "user", "content": "go"},
                    {"role": "assistant", "content": "ok"}])
    shrinking = ContextWindow(8192, 200)
    error = "This model's maximum context length is 8192 tokens. However, you requested 8392 tokens"
    assert shrinking.learn(error) and shrinking.window == 6144  # the known window overflowed: shrink
    assert shrinking.learn(error) and shrinking.window == 4608  # the same error must not grow it back
    assert window_from_error("This model's maximum context length is 8192 tokens.") == 8192
    assert window_from_error("Requested tokens exceed context window of 4096") == 4096
    assert window_from_error("bad request") is None


def test_long_results_are_cut_and_a_time_limit_submits(server):
    script = [tool_reply(("summarize", {}))] + [delayed(tool_reply(("summarize", {})), 0.4)] * 5
    env, agent, record = play(server, script, tool_mode="native", max_result_chars=120, episode_time_limit=0.6)
    results = [m["content"] for m in server.requests[-1].json["messages"] if m["role"] == "tool"]
    assert results and all(len(r) < 200 for r in results) and "[result cut to 120" in results[0]
    assert record.final_info["submission_source"] == "agent" and len(server.requests) < 6
    assert any(e.get("event") == "episode_time_limit" for e in agent.transcript())
    assert np.isfinite(record.total_reward)


# -- a model cannot void its own episode (issue 28, finding 8) ---------------------------------------------------------

_DEEP = 100_000
HOSTILE_ARGUMENTS = {
    "nested [ 100k": "[" * _DEEP + "]" * _DEEP,
    "nested { 100k": '{"a":' * _DEEP + "1" + "}" * _DEEP,
    "unterminated [ 100k": "[" * _DEEP,
    "nested [ 480": '{"x": ' + "[" * 480 + "]" * 480 + "}",
    "int of 100k digits": '{"x": ' + "1" * _DEEP + "}",
    "NaN and Infinity": '{"x": NaN, "y": Infinity, "alpha": -Infinity}',
    "lone surrogate": '{"x": "\ud800", "y": "X1"}',
    "escaped lone surrogate": '{"x": "\\udc00", "y": "X1"}',
    "5 MB string": '{"x": "' + "A" * 5_000_000 + '"}',
}


def _hostile_run(tmp_path, reply, mode):
    from causal_gym.eval import RunConfig, RunStore, run

    submit = text_reply('{"tool": "submit", "arguments": {}}') if mode == "json" else tool_reply(("submit", {}))
    with FakeOpenAIServer([reply, submit]) as server:
        config = RunConfig(("Heuresis-lg-v0",), "llm", {"model": "m", "base_url": server.base_url, "tool_mode": mode,
                                                        "retry_base_delay": 0.001},
                           env_kwargs={"d": 4, "n": 60})
        first = run(config, tmp_path, progress=False)
        second = run(config, tmp_path, progress=False)
        requests = [r.body for r in server.requests]
    (line,) = RunStore(tmp_path).episodes()
    return first, second, line, requests


@pytest.mark.parametrize("mode", ["json", "native"])
@pytest.mark.parametrize("name", list(HOSTILE_ARGUMENTS))
def test_a_hostile_reply_is_an_invalid_call_and_the_episode_is_scored_not_replayed(tmp_path, name, mode):
    arguments = HOSTILE_ARGUMENTS[name]
    reply = (text_reply('{"tool": "ci_test", "arguments": ' + arguments + "}") if mode == "json"
             else tool_reply(("ci_test", arguments)))
    first, second, line, requests = _hostile_run(tmp_path, reply, mode)
    assert first.played == 1 and line["status"] == "finished", line.get("error")
    assert second.played == 0  # final: a rerun does not play it again
    assert np.isfinite(line["reward"]) and "adjacency_f1" in line["scores"]
    calls = line["record"]["env_record"]["calls"]
    assert [c["ok"] for c in calls] == [False, True] and calls[1]["tool"] == "submit"
    assert line["usage"]["n_invalid_calls"] == 1
    # the conversation went on: the model was sent the error, in a body that is valid UTF-8 JSON
    assert len(requests) == 2 and "error: " in json.dumps(json.loads(requests[1])["messages"][-1])


@pytest.mark.parametrize("mode", ["json", "native"])
def test_a_reply_that_is_not_utf8_is_an_invalid_call_and_the_runner_warns(tmp_path, mode, caplog):
    first, second, line, requests = _hostile_run(tmp_path, raw_text_reply(b'{"tool": "ci_test\xff\xfe \xc3'), mode)
    assert line["status"] == "finished" and second.played == 0
    assert line["usage"]["n_invalid_calls"] == 1 and line["usage"]["n_unreadable_replies"] == 1
    assert any(e.get("event") == "unreadable_reply" and e["error"] == "UnicodeDecodeError" for e in line["transcript"])
    assert "1 repl(ies) could not be read" in caplog.text  # a bug of ours on ordinary replies would not go unseen


@pytest.mark.parametrize("mode", ["json", "native"])
def test_a_reply_body_that_is_not_json_is_an_invalid_call(tmp_path, mode):
    """Model text that breaks the body's JSON (a quote passed through unescaped) costs the model its
    turn; the episode goes on and is scored rather than failing."""
    first, second, line, requests = _hostile_run(tmp_path, raw_text_reply(b'X0 -> X1"} broken'), mode)
    assert line["status"] == "finished" and second.played == 0 and np.isfinite(line["reward"])
    assert line["usage"]["n_unreadable_replies"] == 1
    assert any(e.get("event") == "unreadable_reply" and e["error"] == "JSONDecodeError" for e in line["transcript"])
    assert len(requests) == 2


def test_any_error_while_reading_a_reply_is_the_models_invalid_call(server, monkeypatch):
    """The boundary: an exception raised while reading a reply (here injected into the JSON reader) costs the
    model its turn, puts the conversation back as it was and is counted, never failing the episode."""
    import causal_gym.agents.llm as llm

    def broken(text):
        raise MemoryError("injected")

    monkeypatch.setattr(llm, "parse_json_tool_call", broken)
    server.default = text_reply('{"tool": "summarize"}')
    env, agent, record = play(server, [], env=make_env(budgets={"turns": 3}), tool_mode="json")
    usage = agent.usage()
    assert usage["n_unreadable_replies"] >= 1 and usage["n_invalid_calls"] == usage["n_unreadable_replies"]
    assert record.final_info["submission_source"] == "rescued_working_graph"
    later = server.requests[1].json["messages"]
    assert [m["role"] for m in later[-2:]] == ["assistant", "user"] and later[-2]["content"] == ""
    assert "could not be read (MemoryError)" in later[-1]["content"]


def test_the_json_reader_tries_a_bounded_number_of_object_starts():
    """Each failed start costs time linear in the reply, so only the first 1,000 places where an object can
    open are tried (a reply of a million braces has none: ``{`` must be followed by ``"`` or ``}``)."""
    from causal_gym.agents.llm import parse_json_tool_call

    call = '{"tool": "submit", "arguments": {}}'
    assert parse_json_tool_call("{ not json } " * 5000 + call) == ("submit", {})  # no object can open there
    assert parse_json_tool_call('{"x": 1} ' * 999 + call) == ("submit", {})
    assert parse_json_tool_call('{"x": 1} ' * 1000 + call) is None
    assert parse_json_tool_call("{" * 1_000_000) is None
