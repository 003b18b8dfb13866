"""The Inspect, verifiers and TRL adapters (issue 17) against a direct ``causal-gym run``.

Every framework plays the same episodes as the runner (same instances and seeds) with the same
scripted model, served by the fake OpenAI-compatible server: the references are the run store's
scores and the requests our own LLM agent sends (tool schemas and conversation), never a snapshot
of an adapter's output.
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("openai")
from causal_gym import cli  # noqa: E402
from causal_gym.eval import RunStore  # noqa: E402
from causal_gym.integrations.core import EpisodeRef, ToolSession, episode_refs, numeric_scores  # noqa: E402
from fake_openai_server import FakeOpenAIServer, text_reply, tool_reply  # noqa: E402

HEURESIS = ("Heuresis-lg-v0", {"d": 4, "n": 200})
CAUSALAB = ("CausaLab-3node-v0", {})
MODEL = "fake-model"
CALL_IDS = {"id", "tool_call_id"}  # the fake server numbers calls in the order it serves them


def scripted(request: dict) -> dict:
    """The scripted model: its next call depends only on the tools offered and the turn number, so
    every framework's conversation of an episode gets the same replies."""
    turn = sum(message["role"] == "assistant" for message in request["messages"])
    tools = {spec["function"]["name"]: spec["function"] for spec in request.get("tools", [])}
    if "intervene" in tools:  # CausaLab
        prop = tools["intervene"]["parameters"]["properties"]["property"]["enum"][0]
        script = [("intervene", {"property": prop, "value": 40}), ("intervene", {"property": prop, "value": "lots"}),
                  ("enter_reactor", {}), ("submit", {"frequency": 50.0})]
    else:  # Heuresis
        script = [("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}),
                  ("set_edge", {"x": "X0", "y": "X1", "relation": "none"}),
                  ("set_edge", {"x": "X2", "y": "X3", "relation": "sideways"}),  # rejected by the env
                  ("submit", {})]
    return tool_reply(script[min(turn, len(script) - 1)])


@pytest.fixture(scope="module")
def direct(tmp_path_factory):
    """``causal-gym run`` of the LLM agent on the scripted server, once per env id of this module:
    ``direct(env_id, env_kwargs)`` -> (store lines by instance, requests)."""
    runs = {}

    def get(env_id, env_kwargs):
        if env_id not in runs:
            runs[env_id] = direct_run(tmp_path_factory.mktemp("direct"), env_id, env_kwargs)
        return runs[env_id]

    return get


def direct_run(tmp_path, env_id, env_kwargs, episodes=2):
    """``causal-gym run`` of the LLM agent on the scripted server: (store lines by instance, requests)."""
    out = tmp_path / f"direct-{env_id}"
    with FakeOpenAIServer(responder=scripted) as server:
        agent = {"model": MODEL, "base_url": server.base_url, "api_key": "k", "tool_mode": "native"}
        code = cli.main(["run", "--env", env_id, "--agent", "llm", "--episodes", str(episodes), "--out", str(out),
                         "--quiet", "--agent-kwargs", json.dumps(agent), "--env-kwargs", json.dumps(env_kwargs)])
        requests = [r.json for r in server.requests]
    assert code in (0, None)
    lines = {line["instance"]: line for line in RunStore(out).episodes()}
    assert sorted(lines) == list(range(episodes)) and all(line["status"] == "finished" for line in lines.values())
    return lines, requests


def conversations(requests):
    """The last request of each conversation, keyed by its system prompt and first user message."""
    last = {}
    for request in requests:
        messages = request["messages"]
        last[(messages[0]["content"], messages[1]["content"])] = request
    return last


def without(schema, fields):
    """``schema`` with the keys in ``fields`` removed at every depth."""
    if isinstance(schema, dict):
        return {k: without(v, fields) for k, v in schema.items() if k not in fields}
    if isinstance(schema, list):
        return [without(v, fields) for v in schema]
    return schema


# ---------------------------------------------------------------------------------------------
# the core
# ---------------------------------------------------------------------------------------------


def test_episode_ref_round_trips_a_row_and_uses_the_runners_seeds():
    from causal_gym.harness.rollout import episode_seeds

    ref = EpisodeRef("Heuresis-lg-v0", 3, "dev", seed=7, repeat=1, env_kwargs={"d": 4})
    assert EpisodeRef.from_row(json.loads(json.dumps(ref.to_row()))) == ref
    assert ref.env_seed == episode_seeds(7, "Heuresis-lg-v0", 3, 1)[0]
    assert ref.options == {"split": "dev", "instance": 3}
    assert [r.instance for r in episode_refs("CausaLab-3node-v0", 2, first_instance=4)] == [4, 5]
    with pytest.raises(ValueError, match="env_id"):
        EpisodeRef.from_row({"instance": 0})
    with pytest.raises(ValueError, match="instance"):
        EpisodeRef("Heuresis-lg-v0", -1)
    with pytest.raises(ValueError, match="not a tool env"):
        ToolSession(EpisodeRef("CausalArena-synthetic-v0"))


def test_session_protocol_matches_the_llm_agents_special_turns():
    session = ToolSession(EpisodeRef(HEURESIS[0], env_kwargs=HEURESIS[1]))
    try:
        reply = session.respond([], "I think X0 causes X1.")  # no tool call: an invalid action, a turn spent
        assert reply.tool_results == () and reply.user_texts[0].startswith("error: the reply called no tool")
        reply = session.respond([("a", "ci_test", '{"x": "X0", "y": '), ("b", "summarize", {})])
        assert [call_id for call_id, _ in reply.tool_results] == ["a", "b"]
        assert "not valid JSON" in reply.tool_results[0][1] and not reply.tool_results[1][1].startswith("error")
        assert session.steps == 3 and not session.done and session.scores == {}
        reply = session.respond([("c", "submit", {}), ("d", "summarize", {})])
        assert session.done and reply.tool_results[1][1].startswith("the episode has ended")
        assert 0.0 <= session.scores["adjacency_f1"] <= 1.0
    finally:
        session.close()


def test_finish_ends_an_open_episode_through_the_envs_error_limit():
    session = ToolSession(EpisodeRef(HEURESIS[0], env_kwargs=HEURESIS[1]))
    session.finish()
    assert session.done and session.truncated
    assert session.final_info["submission_source"] == "rescued_working_graph" and session.scores


def test_numeric_scores_keep_numbers_only():
    assert numeric_scores({"a": 1, "b": True, "c": None, "d": "x", "e": math.nan}) == {"a": 1.0, "b": 1.0}


# ---------------------------------------------------------------------------------------------
# Inspect
# ---------------------------------------------------------------------------------------------


def test_inspect_tool_info_carries_the_env_schemas_losslessly():
    pytest.importorskip("inspect_ai")
    from inspect_ai.util._json import json_schema_dump

    from causal_gym.integrations.inspect import tool_info

    for env_id, kwargs in (HEURESIS, CAUSALAB):
        session = ToolSession(EpisodeRef(env_id, env_kwargs=kwargs))
        for spec in session.tool_specs:
            info = tool_info(spec)
            assert info.name == spec["function"]["name"] and info.description == spec["function"]["description"]
            assert json_schema_dump(info.parameters) == spec["function"]["parameters"]
        session.close()


def test_inspect_eval_of_heuresis_and_causalab_matches_a_direct_run(tmp_path, monkeypatch, direct):
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.util._json import JSON_SCHEMA_EXTENDED_FIELDS

    from causal_gym.integrations.inspect import causalab, heuresis

    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(responder=scripted) as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        logs = inspect_eval(
            [heuresis(family="lg", episodes=2, env_kwargs=json.dumps(HEURESIS[1])), causalab(setting="3node", episodes=2)],
            model=f"openai-api/fake/{MODEL}", model_args={"strict_tools": False}, log_dir=str(tmp_path / "logs"),
            display="none",
        )
        inspect_requests = [r.json for r in server.requests]
    assert [log.status for log in logs] == ["success", "success"]
    for log, (env_id, kwargs) in zip(logs, (HEURESIS, CAUSALAB)):
        lines, direct_requests = direct(env_id, kwargs)
        saved = read_eval_log(log.location)  # the scores are in the log file itself
        assert {s.id: s.scores["episode_scores"].value for s in saved.samples} == {
            EpisodeRef(env_id, k).name: numeric_scores(line["scores"]) for k, line in lines.items()}
        metrics = {score.name: score.metrics["mean"].value for score in saved.results.scores}
        for name in numeric_scores(lines[0]["scores"]):
            assert metrics[name] == pytest.approx(sum(numeric_scores(line["scores"])[name] for line in lines.values()) / 2)
        ours = conversations(direct_requests)
        theirs = conversations(inspect_requests)
        assert set(ours) <= set(theirs)
        for key, request in ours.items():
            # the same conversation, turn for turn, and the same tools (the openai-api provider strips
            # the extended JSON Schema fields, as it documents, and adds strict=False when asked)
            assert without(theirs[key]["messages"], CALL_IDS) == without(request["messages"], CALL_IDS)
            sent = [without(t, {"strict"}) for t in theirs[key]["tools"]]
            assert sent == without(request["tools"], JSON_SCHEMA_EXTENDED_FIELDS)


# ---------------------------------------------------------------------------------------------
# TRL
# ---------------------------------------------------------------------------------------------


def trl_tools(instance):
    """The tools TRL's GRPOTrainer finds on an environment instance, as it finds them."""
    import inspect

    return {name: getattr(instance, name) for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")}


@pytest.mark.parametrize("env_id, kwargs", [HEURESIS, CAUSALAB])
def test_trl_tool_methods_render_the_env_schemas(env_id, kwargs):
    pytest.importorskip("trl")
    from transformers.utils import get_json_schema

    from causal_gym.integrations.trl import environment_class

    instance = environment_class(env_id, env_kwargs=kwargs)()
    session = ToolSession(EpisodeRef(env_id, env_kwargs=kwargs))
    ours = {spec["function"]["name"]: spec["function"] for spec in session.tool_specs}
    session.close()
    tools = trl_tools(instance)
    assert set(tools) == set(ours)
    for name, method in tools.items():
        rendered = get_json_schema(method)["function"]  # what TRL puts in the chat template
        spec = ours[name]
        assert rendered["name"] == name and rendered["description"] == " ".join(spec["description"].split())
        params, theirs = spec["parameters"], rendered["parameters"]
        assert set(theirs["properties"]) == set(params["properties"])
        assert set(theirs.get("required", ())) == set(params.get("required", ()))
        for arg, schema in params["properties"].items():
            got = theirs["properties"][arg]
            assert got["type"] == schema["type"] and got["description"].startswith(" ".join(schema["description"].split()))
            if env_id.startswith("Heuresis"):  # choices are the same in every Heuresis episode: kept exactly
                assert got.get("enum") == schema.get("enum") and got.get("items") == (
                    {k: v for k, v in schema["items"].items()} if "items" in schema else None)
            for bound in ("minimum", "maximum"):
                if bound in schema:
                    assert f"{schema[bound]:g}" in got["description"]


@pytest.mark.parametrize("env_id, kwargs", [HEURESIS, CAUSALAB])
def test_trl_environment_with_a_scripted_policy_matches_a_direct_run(direct, env_id, kwargs):
    pytest.importorskip("trl")
    from transformers.utils import get_json_schema

    from causal_gym.integrations.trl import dataset, environment_class

    lines, _ = direct(env_id, kwargs)
    rows = dataset(env_id, 2, env_kwargs=kwargs)
    factory = environment_class(env_id, env_kwargs=kwargs)
    for row in rows:
        env = factory()
        assert env.reset(**row) is None
        # the prompt is the conversation's start as our agent sends it
        transcript = lines[row["instance"]]["transcript"]
        assert row["prompt"] == [{"role": m["role"], "content": m["content"]} for m in transcript[:2]]
        tools = trl_tools(env)
        schemas = [get_json_schema(method) for method in tools.values()]
        assert {schema["function"]["name"] for schema in schemas} == set(tools)
        assistant_turns = []
        while not env.session.done:
            # the episode's own schemas pick the arguments: TRL renders one schema per class, so a choice
            # list that varies by episode (CausaLab's properties) is a plain string there, named in the task
            call = scripted({"messages": assistant_turns, "tools": env.session.tool_specs})
            call = call["message"]["tool_calls"][0]["function"]
            result = tools[call["name"]](**json.loads(call["arguments"]))
            assert isinstance(result, str)
            assistant_turns.append({"role": "assistant"})
        line = lines[row["instance"]]
        assert env.get_reward() == line["reward"] and env.scores == numeric_scores(line["scores"])


def test_trl_get_reward_ends_an_episode_the_model_left_open():
    pytest.importorskip("trl")
    from causal_gym.integrations.trl import environment_class

    env = environment_class(*HEURESIS[:1], env_kwargs=HEURESIS[1])()
    with pytest.raises(RuntimeError, match="reset"):
        env.get_reward()
    env.reset(**EpisodeRef(HEURESIS[0], env_kwargs=HEURESIS[1]).to_row())
    assert env.set_edge(x="X0", y="X1", relation="sideways").startswith("error: ")
    reference = ToolSession(EpisodeRef(HEURESIS[0], env_kwargs=HEURESIS[1]))
    reference.call("set_edge", {"x": "X0", "y": "X1", "relation": "sideways"})
    reference.finish()
    assert env.get_reward() == reference.total_reward and env.session.truncated
    with pytest.raises(ValueError, match="plays Heuresis-lg-v0"):
        env.reset(**EpisodeRef(CAUSALAB[0]).to_row())


# ---------------------------------------------------------------------------------------------
# verifiers
# ---------------------------------------------------------------------------------------------


def verifiers_eval(env_id, env_kwargs, base_url, episodes=2):
    """The traces of a verifiers v1 eval of ``episodes`` episodes (one rollout each) against ``base_url``."""
    from causal_gym.integrations.verifiers import evaluate

    return evaluate({"gym_id": env_id, "episodes": episodes, "env_kwargs": json.dumps(env_kwargs)}, base_url, MODEL,
                    api_key_var="FAKE_API_KEY")


@pytest.mark.parametrize("env_id, kwargs", [HEURESIS, CAUSALAB])
def test_verifiers_rollout_matches_a_direct_run(monkeypatch, direct, env_id, kwargs):
    pytest.importorskip("verifiers.v1")
    from causal_gym.integrations.core import EpisodeRef as Ref
    from causal_gym.integrations.verifiers import outcome

    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(responder=scripted) as server:
        traces = verifiers_eval(env_id, kwargs, server.base_url)
        verifiers_requests = [r.json for r in server.requests]
    lines, direct_requests = direct(env_id, kwargs)
    by_instance = {Ref.from_row(trace.task.data.episode).instance: trace for trace in traces}
    assert sorted(by_instance) == [0, 1]
    for instance, trace in by_instance.items():
        line = lines[instance]
        assert trace.errors == []
        assert trace.reward == line["reward"] and outcome(trace)["total_reward"] == line["reward"]
        assert outcome(trace)["scores"] == numeric_scores(line["scores"])
    ours, theirs = conversations(direct_requests), conversations(verifiers_requests)
    assert set(ours) == set(theirs)
    for key, request in ours.items():
        assert theirs[key]["tools"] == request["tools"]  # the env's schemas, verbatim
        # the conversation as our agent writes it: no null fields (strict servers reject them)
        assert without(theirs[key]["messages"], CALL_IDS) == without(request["messages"], CALL_IDS)


def test_verifiers_scores_an_episode_the_model_leaves_open_under_the_envs_budgets(monkeypatch):
    pytest.importorskip("verifiers.v1")
    from causal_gym.integrations.verifiers import outcome

    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(default=text_reply("Still thinking.")) as server:
        (trace,) = verifiers_eval(HEURESIS[0], HEURESIS[1], server.base_url, episodes=1)
        n_requests = len(server.requests)
    reference = ToolSession(EpisodeRef(HEURESIS[0], env_kwargs=HEURESIS[1]))
    replies = 0
    while not reference.done:  # the env's budgets and error limit end it, not a turn limit of verifiers'
        reference.respond([], "Still thinking.")
        replies += 1
    assert trace.errors == [] and n_requests == replies
    assert trace.reward == reference.total_reward and outcome(trace)["steps"] == reference.steps
    assert outcome(trace)["scores"] == reference.scores


def test_verifiers_taskset_requires_an_env_id():
    pytest.importorskip("verifiers.v1")
    from causal_gym.integrations.verifiers import evaluate

    with pytest.raises(ValueError, match="gym_id"):  # no default benchmark
        evaluate({}, "http://127.0.0.1:9/v1", MODEL)


def classic_eval(env_id, env_kwargs, base_url, episodes=2, rollouts=1, max_retries=0):
    """The outputs of the classic verifiers environment (``vf-eval causal_gym_verifiers``) against ``base_url``."""
    from verifiers.legacy.types import ClientConfig

    from causal_gym_verifiers import load_environment

    env = load_environment(gym_id=env_id, episodes=episodes, env_kwargs=json.dumps(env_kwargs))
    client = ClientConfig(api_key_var="FAKE_API_KEY", api_base_url=base_url, max_retries=max_retries)
    return env.evaluate_sync(client, MODEL, num_examples=episodes, rollouts_per_example=rollouts,
                             state_columns=["causal_gym"])["outputs"]


@pytest.mark.parametrize("env_id, kwargs", [HEURESIS, CAUSALAB])
def test_verifiers_classic_rollout_matches_a_direct_run(monkeypatch, direct, env_id, kwargs):
    pytest.importorskip("verifiers.legacy")
    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(responder=scripted) as server:
        outputs = classic_eval(env_id, kwargs, server.base_url)
        classic_requests = [r.json for r in server.requests]
    lines, direct_requests = direct(env_id, kwargs)
    assert len(outputs) == 2
    for output in outputs:
        line = lines[output["example_id"]]
        assert output.get("error") is None and output["stop_condition"] == "episode_over"
        assert output["reward"] == line["reward"] and output["causal_gym"]["scores"] == numeric_scores(line["scores"])
    ours, theirs = conversations(direct_requests), conversations(classic_requests)
    assert set(ours) == set(theirs)
    for key, request in ours.items():
        assert [t["function"] for t in theirs[key]["tools"]] == [t["function"] for t in request["tools"]]
        # turn for turn, and no "tool_calls": null or "reasoning_content": null (strict servers refuse them)
        assert without(theirs[key]["messages"], CALL_IDS) == without(request["messages"], CALL_IDS)


def test_verifiers_classic_replays_a_reply_without_a_call_without_null_fields(monkeypatch):
    pytest.importorskip("verifiers.legacy")
    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(default=text_reply("Still thinking.")) as server:
        (output,) = classic_eval(HEURESIS[0], HEURESIS[1], server.base_url, episodes=1)
        requests = [r.json for r in server.requests]
    reference = ToolSession(EpisodeRef(HEURESIS[0], env_kwargs=HEURESIS[1]))
    while not reference.done:  # the env's budgets and error limit end it, not a turn cap of verifiers'
        reference.respond([], "Still thinking.")
    assert output.get("error") is None and output["reward"] == reference.total_reward
    assert len(requests) == reference.steps
    replayed = [m for m in requests[-1]["messages"] if m["role"] == "assistant"]
    assert replayed and all(m == {"role": "assistant", "content": "Still thinking."} for m in replayed)


def test_verifiers_classic_an_aborted_rollout_has_no_reward_not_zero(monkeypatch):
    """A server that fails for good: verifiers aborts the rollout, which is reported as aborted (NaN)."""
    pytest.importorskip("verifiers.legacy")
    from fake_openai_server import error_reply

    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(default=error_reply(500)) as server:
        (output,) = classic_eval(HEURESIS[0], HEURESIS[1], server.base_url, episodes=1)
    assert output["error"] is not None and math.isnan(output["reward"])
    assert "aborted" in output["causal_gym"]
    assert all(math.isnan(output["metrics"][name]) for name in ("episode_reward", "steps", "truncated"))


def test_verifiers_classic_requires_an_env_id():
    pytest.importorskip("verifiers.legacy")
    from causal_gym_verifiers import load_environment

    with pytest.raises(ValueError, match="gym_id"):
        load_environment()


def test_inspect_tasks_name_their_ids_and_refuse_unknown_families():
    pytest.importorskip("inspect_ai")
    from causal_gym.integrations.inspect import causal_arena, causal_gym_task, heuresis

    task = causal_arena(source="synthetic", episodes=3, first_instance=2)
    assert task.name == "CausalArena-synthetic-tools-v0"
    assert [EpisodeRef.from_row(sample.metadata).instance for sample in task.dataset] == [2, 3, 4]
    assert heuresis(family="wild", guided=True, episodes=1).name == "Heuresis-wild-guided-v0"
    with pytest.raises(ValueError, match="Heuresis-gauntlet-v0"):  # the error lists the family's ids
        heuresis(family="nope")
    with pytest.raises(ValueError, match="JSON object"):
        causal_gym_task("Heuresis-lg-v0", env_kwargs="{d: 4")


# ---------------------------------------------------------------------------------------------
# Inspect: the three timeouts (issue 32 item 5)
# ---------------------------------------------------------------------------------------------


def _toy_eval(tmp_path, model, message_limit=None, **task_args):
    """One episode of the slow toy tool env (tests/slow_envs.py) under Inspect: the sample of its log."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    import slow_envs  # noqa: F401  (registers SlowToy-v0)
    from causal_gym.integrations.inspect import causal_gym_task

    env_kwargs = json.dumps(task_args.pop("env_kwargs", {}))
    task = causal_gym_task("SlowToy-v0", episodes=1, split="", env_kwargs=env_kwargs, **task_args)
    (log,) = inspect_eval(task, model=model, message_limit=message_limit, log_dir=str(tmp_path / "logs"),
                          display="none", fail_on_error=False)
    (sample,) = read_eval_log(log.location).samples
    return sample


def _describing_model(calls=20):
    """Inspect's mock model calling ``describe`` every turn (usage given: its tokenizer would need a download)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outputs = [ModelOutput.for_tool_call("mockllm/model", "describe", {}) for _ in range(calls)]
    for output in outputs:
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return get_model("mockllm/model", custom_outputs=outputs)


@pytest.mark.parametrize("score_delay", [0.0, 30.0])
def test_inspect_scorer_ends_an_episode_left_open_within_scorer_timeout_or_errors_without_a_score(tmp_path,
                                                                                                  score_delay):
    # the message limit stops the solver after one describe, with 49 turns left: the scorer ends the episode
    sample = _toy_eval(tmp_path, _describing_model(), message_limit=4, scorer_timeout=2.0,
                       env_kwargs={"turns": 50, "score_delay": score_delay})
    assert sample.limit is not None and sample.limit.type == "message"
    if score_delay == 0.0:  # unanswered, the env scores it wrong: a real 0, the env's own score
        assert sample.error is None and sample.scores["episode_scores"].value == {"correct": 0.0}
        assert sample.scores["episode_scores"].metadata["steps"] == 50
    else:  # the scoring hung: an error of the sample, no score at all (not a 0)
        assert "scorer_timeout" in sample.error.message and not sample.scores


def test_inspect_tool_timeout_makes_a_hung_step_an_error_without_a_score(tmp_path):
    sample = _toy_eval(tmp_path, _describing_model(), tool_timeout=2.0, env_kwargs={"describe_delay": 30.0})
    assert "tool_timeout" in sample.error.message and not sample.scores


def test_inspect_agent_timeout_makes_a_hung_model_call_an_error_without_a_score(tmp_path, monkeypatch):
    from fake_openai_server import delayed

    monkeypatch.setenv("FAKE_API_KEY", "k")
    with FakeOpenAIServer(default=delayed(tool_reply(("describe", {})), 20.0)) as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        sample = _toy_eval(tmp_path, f"openai-api/fake/{MODEL}", agent_timeout=2.0)
    assert "agent_timeout of 2 s" in sample.error.message and not sample.scores


def test_inspect_timeouts_are_positive_reals_and_every_benchmark_task_takes_them():
    pytest.importorskip("inspect_ai")
    import inspect

    from causal_gym.integrations.inspect import causal_gym_task, heuresis

    for name in ("agent_timeout", "tool_timeout", "scorer_timeout"):
        for bad in (0, -1.0, float("inf"), "soon"):
            with pytest.raises(ValueError, match=name):
                causal_gym_task("Heuresis-lg-v0", episodes=1, **{name: bad})
        assert name in inspect.signature(heuresis).parameters


def test_verifiers_a_step_past_tool_timeout_is_a_harness_error_on_time(monkeypatch):
    """The budget ends the wait on time (the step's thread is abandoned, not awaited): an error, no reward."""
    pytest.importorskip("verifiers.v1")
    import time

    from causal_gym.integrations.verifiers import INFO_KEY, evaluate

    monkeypatch.setenv("FAKE_API_KEY", "k")
    start = time.monotonic()
    with FakeOpenAIServer(default=tool_reply(("describe", {}))) as server:
        (trace,) = evaluate({"gym_id": "slow_envs:SlowToy-v0", "episodes": 1, "split": "",
                             "env_kwargs": {"describe_delay": 30.0}},
                            server.base_url, MODEL, api_key_var="FAKE_API_KEY", harness={"tool_timeout": 2.0})
    assert time.monotonic() - start < 25  # well before the 30 s step returned
    assert trace.errors and "tool_timeout" in str(trace.errors) and INFO_KEY not in trace.info
    assert not trace.reward


# ---------------------------------------------------------------------------------------------
# TRL and OpenEnv: tool and scorer timeouts (issue 32 item 5)
# ---------------------------------------------------------------------------------------------


def _slow_trl(**budgets):
    import slow_envs  # noqa: F401  (registers SlowToy-v0)
    from causal_gym.integrations.trl import environment_class

    def make(**env_kwargs):
        env = environment_class("SlowToy-v0", split=None, env_kwargs=env_kwargs, **budgets)()
        env.reset(**EpisodeRef("SlowToy-v0", split=None, env_kwargs=env_kwargs).to_row())
        return env

    return make


def test_trl_a_step_past_tool_timeout_ends_the_episode_unscored_on_time():
    import time

    env = _slow_trl(tool_timeout=1.0)(describe_delay=20.0)
    start = time.monotonic()
    told = env.describe()
    assert time.monotonic() - start < 10  # the wait ended at the budget, not when the step returned
    assert "tool_timeout" in told and "unscored" in told and env.failure == told
    assert env.submit(answer="X0 -> X1") == told  # the episode stays over
    assert env.get_reward() is None and env.scores == {}  # no reward (TRL: NaN, left out), never 0


@pytest.mark.parametrize("score_delay", [0.0, 20.0])
def test_trl_get_reward_within_scorer_timeout_is_the_envs_else_none(score_delay):
    import time

    env = _slow_trl(scorer_timeout=1.0)(score_delay=score_delay, turns=50)
    env.describe()  # then the model stops: get_reward ends the episode, scoring included
    start = time.monotonic()
    reward = env.get_reward()
    assert time.monotonic() - start < 10
    if score_delay == 0.0:
        reference = ToolSession(EpisodeRef("SlowToy-v0", split=None, env_kwargs={"score_delay": 0.0, "turns": 50}))
        reference.call("describe", {})
        reference.finish()
        assert reward == reference.total_reward and env.failure == ""
        reference.close()
    else:
        assert reward is None and "scorer_timeout" in env.failure


def test_trl_and_openenv_timeouts_are_positive_reals():
    pytest.importorskip("openenv")
    from causal_gym.integrations.openenv import make_app
    from causal_gym.integrations.trl import environment_class

    for bad in (0, -1.0, float("inf"), "soon"):
        for name in ("tool_timeout", "scorer_timeout"):
            with pytest.raises(ValueError, match=name):
                environment_class(*HEURESIS[:1], env_kwargs=HEURESIS[1], **{name: bad})
        with pytest.raises(ValueError, match="tool_timeout"):
            make_app(*HEURESIS[:1], HEURESIS[1], tool_timeout=bad)


def test_openenv_a_step_past_tool_timeout_ends_the_episode_unscored_on_time():
    pytest.importorskip("openenv")
    import time

    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.env_server.serialization import serialize_observation

    import slow_envs  # noqa: F401  (registers SlowToy-v0)
    from causal_gym.integrations.openenv import ToolSessionEnvironment

    environment = ToolSessionEnvironment("SlowToy-v0", {"describe_delay": 20.0}, tool_timeout=1.0)
    environment.reset(split="")
    start = time.monotonic()
    sent = serialize_observation(environment.step(CallToolAction(tool_name="describe", arguments={})))
    assert time.monotonic() - start < 10
    assert sent["done"] and sent["reward"] is None and "tool_timeout" in sent["observation"]["failure"]
    sent = serialize_observation(environment.step(CallToolAction(tool_name="submit", arguments={"answer": "X0 -> X1"})))
    assert sent["done"] and sent["reward"] is None and sent["observation"]["scores"] == {}
    environment.close()  # closes the env when the abandoned step returns
