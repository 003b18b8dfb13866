"""The LLM agent under the evaluation runner, over real HTTP: a Heuresis and a CausaLab run whose
transcripts, token counts and scores land in the run store, with malformed calls sent back to the
model as errors (issue 6's end-to-end check)."""

from __future__ import annotations

import json

import pytest

from causal_gym.envs.causalab.suites import suite
from causal_gym.eval import RunConfig, RunStore, run

pytest.importorskip("openai")
from fake_openai_server import FakeOpenAIServer, error_reply, tool_reply  # noqa: E402

SECRET = "sk-test-never-store-me"


def _run(tmp_path, env_id, script, name):
    with FakeOpenAIServer(script) as server:
        config = RunConfig(
            env_ids=(env_id,),
            agent="llm",
            agent_kwargs={"model": "fake-model", "base_url": server.base_url, "api_key": SECRET, "retry_base_delay": 0.001,
                          "tool_mode": "native"},
            instances=(0,),
        )
        summary = run(config, tmp_path / name, progress=False)
        requests = [r.json for r in server.requests]
    (line,) = RunStore(tmp_path / name).episodes()
    raw = "".join(p.read_text() for p in (tmp_path / name).iterdir() if p.is_file())
    assert SECRET not in raw  # the key never reaches the store
    return summary, line, requests


def _tool_messages(request):
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_heuresis_llm_run_stores_transcript_tokens_and_scores(tmp_path):
    script = [
        tool_reply(("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}), usage=(100, 7)),
        tool_reply(("ci_test", '{"x": "X0", "y": '), usage=(120, 9)),  # malformed JSON arguments
        error_reply(500),  # retried by the agent
        tool_reply(("set_edge", {"x": "X0", "y": "X1", "relation": "none"}), usage=(140, 11)),
        tool_reply(("submit", {}), usage=(160, 13)),
    ]
    summary, line, requests = _run(tmp_path, "Heuresis-lg-v0", script, "heuresis")
    assert summary.complete and line["status"] == "finished"
    assert line["usage"]["prompt_tokens"] == 100 + 120 + 140 + 160
    assert line["usage"]["completion_tokens"] == 7 + 9 + 11 + 13 and line["usage"]["n_retries"] == 1
    assert 0.0 <= line["scores"]["adjacency_f1"] <= 1.0
    messages = _tool_messages(requests[-1])
    assert messages[1].startswith("error: ") and "not valid JSON" in messages[1]
    transcript = json.dumps(line["transcript"])
    assert "not valid JSON" in transcript and "set_edge" in transcript


def test_causalab_llm_run_stores_success_and_hypothesis_scores(tmp_path):
    episode = suite("3node")[0].make()
    prop = episode.scm.controllable[0]
    script = [
        tool_reply(("intervene", {"property": prop, "value": "a lot"})),  # not a number
        tool_reply(("intervene", {"property": prop, "value": 40})),
        tool_reply(("enter_reactor", {})),
        tool_reply(("submit", {"frequency": episode.target + 2.0})),
    ]
    summary, line, requests = _run(tmp_path, "CausaLab-3node-v0", script, "lab")
    assert line["status"] == "finished" and line["scores"]["success"] == 1.0
    assert line["scores"]["abs_error"] == pytest.approx(2.0) and line["scores"]["budget_used_at_commit"] == 1
    assert line["usage"]["prompt_tokens"] == 40 and line["usage"]["n_invalid_calls"] == 1
    assert "expected a number" in _tool_messages(requests[-1])[0]
