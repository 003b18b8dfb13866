"""The runner's three per-call budgets (issue 32 item 5): agent (one ``act``), tool (one ``env.step``)
and scorer (the final scoring), each recorded as a timeout naming its budget, never as reward 0.

The references are hand-made: an agent or env that sleeps far past a budget (30 s against 1-2 s),
or well within it, so the outcome does not depend on the machine's load.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import causal_gym
from causal_gym._deadlines import BudgetExpired, call_budget, call_budgets, expired
from causal_gym.eval.report import load_runs, outcome_table, tool_call_table
from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RunStore

SLOW = "slow_envs:SlowToy-v0"  # tests/ is on sys.path (conftest), and on the workers' path
AGENT = "slow_envs:DescribeThenSubmit"
LONG = 30.0  # far past every budget below: a run that waited for it would show in wall_time


def _only_line(out) -> dict:
    (line,) = RunStore(out).latest().values()
    return line


# -- the mechanism -------------------------------------------------------------------------------


def test_a_mark_outside_budgets_does_nothing_and_budgets_restore_the_signal_state():
    before = signal.getsignal(signal.SIGALRM)
    with call_budget("agent"):
        time.sleep(0.01)
    with call_budgets(agent=0.2):
        with pytest.raises(BudgetExpired) as caught:
            with call_budget("agent"):
                time.sleep(LONG)
        with call_budget("tool"):  # no tool budget: a slow call is fine
            time.sleep(0.3)
    assert caught.value.budget == "agent" and caught.value.seconds == 0.2
    assert expired() is caught.value
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_scoring_inside_a_step_is_charged_to_the_scorer_budget_not_the_tools():
    with call_budgets(tool=0.5, scorer=5.0):
        with call_budget("tool"):
            time.sleep(0.2)
            with call_budget("scorer"):
                time.sleep(0.8)  # past the tool's 0.5 s, within the scorer's: the tool clock is paused
            time.sleep(0.1)
    assert expired() is None
    with call_budgets(tool=0.5, scorer=5.0):
        with pytest.raises(BudgetExpired, match="tool"):
            with call_budget("tool"):
                time.sleep(0.3)
                with call_budget("scorer"):
                    time.sleep(0.1)
                time.sleep(LONG)  # the tool clock resumed with its 0.2 s left


# -- the runner -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "5", True])
@pytest.mark.parametrize("name", ["agent_timeout", "tool_timeout", "scorer_timeout"])
def test_budgets_are_positive_reals(name, bad):
    with pytest.raises(ValueError, match=name):
        RunConfig((SLOW,), AGENT, split=None, **{name: bad})


def test_budgets_refuse_threads():
    with pytest.raises(ValueError, match="tool_timeout"):
        RunConfig((SLOW,), AGENT, split=None, tool_timeout=5.0, concurrency=2)


@pytest.mark.parametrize("budget, env_kwargs, agent_kwargs", [
    ("agent", {}, {"delay": LONG}),
    ("agent", {}, {"delay": LONG, "swallow": True}),  # the agent caught the expiry: still the agent's timeout
    ("tool", {"describe_delay": LONG}, {}),
    ("scorer", {"score_delay": LONG}, {}),
])
def test_a_call_past_its_budget_is_a_timeout_naming_the_budget(tmp_path, budget, env_kwargs, agent_kwargs):
    config = RunConfig((SLOW,), AGENT, agent_kwargs=agent_kwargs, env_kwargs=env_kwargs, instances=(0, 1),
                       split=None, agent_timeout=2.0, tool_timeout=2.0, scorer_timeout=2.0)
    summary = run(config, tmp_path, progress=False)
    lines = list(RunStore(tmp_path).latest().values())
    assert summary.counts == {"timeout": 2}
    for line in lines:
        assert line["status"] == "timeout" and line["timeout"] == budget
        assert f"{budget}_timeout of 2 s" in line["error"]
        assert line["reward"] is None and line["scores"] == {} and line["record"] is None
        assert line["wall_time"] < LONG
        calls = line["trace"]["calls"]  # the record up to the interrupted call
        # the agent that swallowed its expiry played on (and submitted): its episode still timed out
        assert [c["tool"] for c in calls] == (["describe"] if budget == "agent" and not agent_kwargs.get("swallow")
                                              else [] if budget == "tool" else ["describe", "submit"])
        assert line["usage"]["pid"] != os.getpid()  # played in the helper process
    assert summary.rows[0]["mean_reward"] is None  # no reward 0 averaged in
    frame = load_runs(tmp_path)
    assert frame["reward"].isna().all() and ("score.correct" not in frame or frame["score.correct"].isna().all())
    outcomes = outcome_table(frame)
    assert int(outcomes["timeout"].iloc[0]) == 2 and int(outcomes[f"timeout ({budget})"].iloc[0]) == 2
    assert tool_call_table(frame).empty  # no call counts of episodes without a record
    assert run(config, tmp_path, progress=False).played == 0  # a timeout is final: the rerun resumes past it


def test_within_budgets_an_episode_is_scored_and_scoring_time_is_not_the_steps(tmp_path):
    # the scoring takes 3 s, past the 2 s tool budget of the step that scores it, within the scorer's
    config = RunConfig((SLOW,), AGENT, env_kwargs={"score_delay": 3.0}, instances=(0, 1), split=None,
                       agent_timeout=20.0, tool_timeout=2.0, scorer_timeout=20.0)
    run(config, tmp_path, progress=False)
    truth = [int(__import__("numpy").random.default_rng([7, k]).integers(2)) for k in (0, 1)]
    lines = RunStore(tmp_path).latest()
    for line in lines.values():
        assert line["status"] == "finished" and "timeout" not in line
        assert line["reward"] == float(truth[line["instance"]] == 0)  # the agent answers X0 -> X1


def test_without_budgets_a_run_is_as_before(tmp_path):
    config = RunConfig((SLOW,), AGENT, split=None)
    run(config, tmp_path, progress=False)
    line = _only_line(tmp_path)
    assert line["status"] == "finished" and "timeout" not in line
    assert line["usage"]["pid"] == os.getpid()  # in this process, no helper
    stored = json.loads((tmp_path / "run.json").read_text())["config"]
    assert not {"time_limit", "agent_timeout", "tool_timeout", "scorer_timeout"} & set(stored)


def test_a_store_with_budget_timeouts_resumes_and_refuses_other_budgets(tmp_path):
    config = RunConfig((SLOW,), AGENT, agent_kwargs={"delay": LONG}, instances=(0,), split=None, agent_timeout=1.0)
    run(config, tmp_path, progress=False)
    assert _only_line(tmp_path)["timeout"] == "agent"
    with pytest.raises(ValueError, match="agent_timeout"):  # another budget is another run
        run(RunConfig((SLOW,), AGENT, agent_kwargs={"delay": LONG}, instances=(0,), split=None, agent_timeout=2.0),
            tmp_path, progress=False)
    again = run(config, tmp_path, progress=False)
    assert (again.played, again.skipped, again.counts) == (0, 1, {"timeout": 1})


def test_a_store_written_before_the_budgets_still_resumes(tmp_path):
    """A run.json and a timeout line as the runner wrote them before the budgets (no new keys)."""
    config = RunConfig((SLOW,), AGENT, instances=(0, 1), split=None, time_limit=60.0)
    run(config, tmp_path, progress=False)
    lines = [line for line in RunStore(tmp_path).episodes()]
    old = {**lines[0], "status": "timeout", "reward": None, "scores": {}, "record": None,
           "error": "the episode exceeded the run's time limit of 60 s and was killed"}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(old) + "\n" + json.dumps(lines[1]) + "\n")
    assert run(config, tmp_path, progress=False).played == 0
    frame = load_runs(tmp_path)
    assert sorted(frame["timeout"].fillna("-")) == ["-", "episode"]


_SCRIPT = """
import os, time
import gymnasium as gym
from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RunStore
from causal_gym.harness.agent import typed_action
from toy_benchmark import ToyDirectionToolEnv

with open(os.environ["TOPLEVEL_COUNTER"], "a") as counter:  # top-level code: it must run once, here
    counter.write(f"{os.getpid()}\\n")

class Stuck:  # an agent of this script's __main__, which no worker imports
    def __init__(self, delay=0.0):
        self.delay = delay
    def reset(self, task):
        self.task = task
    def act(self, observation, info):
        time.sleep(self.delay)
        return typed_action(self.task, "submit", answer="X0 -> X1")

class ScriptToy(ToyDirectionToolEnv):  # an env of this __main__ too: it travels to the worker by value
    pass

gym.register("ScriptToy-v0", entry_point=ScriptToy)
variants = [{"name": "quick", "agent_kwargs": {"delay": 0.0}}, {"name": "stuck", "agent_kwargs": {"delay": 60.0}}]
run(RunConfig(("ScriptToy-v0",), "__main__:Stuck", split=None, variants=variants, agent_timeout=2.0),
    os.environ["OUT"], progress=False)
for line in RunStore(os.environ["OUT"]).episodes():
    print(line["variant"], line["status"], line.get("timeout"))
"""


def test_a_script_without_a_main_guard_runs_with_a_budget(tmp_path):
    tests = str(Path(__file__).parent)
    root = os.path.dirname(os.path.dirname(causal_gym.__file__))
    counter = tmp_path / "count"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, root]), "TOPLEVEL_COUNTER": str(counter),
           "OUT": str(tmp_path / "run")}
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(done.stdout.split("\n")[:-1]) == ["quick finished None", "stuck timeout agent"]
    assert len(counter.read_text().split()) == 1  # no worker re-ran the script


def test_the_cli_takes_the_budgets(tmp_path, capsys):
    from causal_gym.cli import main

    base = ["run", "--env", SLOW, "--agent", AGENT, "--episodes", "1", "--split", "test", "--quiet"]
    with pytest.raises(SystemExit) as exit_info:
        main(base + ["--out", str(tmp_path / "bad"), "--tool-timeout", "0"])
    assert exit_info.value.code == 2 and "tool_timeout must be > 0" in capsys.readouterr().err
    code = main(base + ["--out", str(tmp_path / "run"), "--agent-kwargs", json.dumps({"delay": LONG}),
                        "--agent-timeout", "1.5", "--tool-timeout", "20", "--scorer-timeout", "20"])
    assert code in (0, None)
    line = _only_line(tmp_path / "run")
    assert (line["status"], line["timeout"]) == ("timeout", "agent")
    stored = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert (stored["agent_timeout"], stored["tool_timeout"], stored["scorer_timeout"]) == (1.5, 20.0, 20.0)
    assert "time_limit" not in stored


def test_the_llm_agents_model_call_is_interrupted_at_agent_timeout(tmp_path):
    """The budget stops an HTTP request in flight (the model's server answers after 30 s)."""
    pytest.importorskip("openai")
    from fake_openai_server import FakeOpenAIServer, delayed, tool_reply

    with FakeOpenAIServer(default=delayed(tool_reply(("describe", {})), LONG)) as server:
        agent = {"model": "fake", "base_url": server.base_url, "api_key": "k", "tool_mode": "native"}
        config = RunConfig((SLOW,), "llm", agent_kwargs=agent, split=None, agent_timeout=2.0)
        run(config, tmp_path, progress=False)
    line = _only_line(tmp_path)
    assert (line["status"], line["timeout"]) == ("timeout", "agent") and line["wall_time"] < LONG
    assert line["usage"]["n_requests"] >= 1 and line["reward"] is None
