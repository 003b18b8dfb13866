"""The resumable runner and its run store: scores against direct rollouts, resuming, torn lines, failures, Ray."""

import json
import shutil
import sys
import warnings
import zlib
from collections.abc import Mapping

import gymnasium as gym
import numpy as np
import pytest

from causal_gym.agents import RandomAgent, task_spec
from causal_gym.agents.registry import agents, make_agent
from causal_gym.envs.heuresis.baselines import AlgorithmAgent
from causal_gym.envs.heuresis.env import HeuresisEnv
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.eval import rollout
from causal_gym.eval.runner import RunConfig, run
from causal_gym.eval.store import RunStore
from causal_gym.graphs import consistent_extension, meek, orient_along_arrows
from causal_gym.harness.working_graph import parse_edge_list
from causal_gym.metrics import adjacency_scores

ENVS = ("Heuresis-lg-v0", "Heuresis-wild-v0")
KWARGS = {"d": 4, "n": 100, "budgets": {"turns": 6}}
CONFIG = RunConfig(ENVS, "random", instances=(0, 1), env_kwargs=KWARGS, workers=2)


class RaisingAgent:
    """Random actions, but raises on the second step of instance ``fail_instance``; counts its acts."""

    def __init__(self, fail_instance: int, seed: int = 0) -> None:
        self.fail_instance = fail_instance
        self.inner = RandomAgent(seed)

    def reset(self, task):
        self.inner.reset(task)
        self.acts = 0
        self.instance = None

    def act(self, observation, info):
        self.acts += 1
        if self.acts == 1:
            self.instance = info["instance"]["index"]
        elif self.instance == self.fail_instance:
            raise RuntimeError("boom on step 2")
        return self.inner.act(observation, info)

    def usage(self):
        return {"acts": self.acts}


class KeyedAgent:
    """Refuses to play unless it received the real key (the store must redact it, not drop it)."""

    def __init__(self, api_key: str, max_tokens: int, seed: int = 0) -> None:
        if api_key != "sk-secret-123":
            raise ValueError("wrong key")
        self.inner = RandomAgent(seed)

    def reset(self, task):
        self.inner.reset(task)

    def act(self, observation, info):
        return self.inner.act(observation, info)


@pytest.fixture(scope="module")
def cache(isolated_cache):
    """The module's fresh cache (tests/conftest.py), requested by the fixtures that play episodes."""


@pytest.fixture(scope="module")
def base_run(cache, tmp_path_factory):
    """2 Heuresis envs x 2 instances, RandomAgent, 2 spawned worker processes."""
    out = tmp_path_factory.mktemp("base")
    summary = run(CONFIG, out, progress=False)
    return out, summary


@pytest.fixture
def resets(monkeypatch):
    """Counts HeuresisEnv.reset calls in this process."""
    calls = []
    original = HeuresisEnv.reset

    def counting(self, **kwargs):
        calls.append(kwargs)
        return original(self, **kwargs)

    monkeypatch.setattr(HeuresisEnv, "reset", counting)
    return calls


def _copy(base, tmp_path):
    return shutil.copytree(base, tmp_path / "run")


def _hand_seeds(seed, env_id, instance, repeat):
    words = np.random.SeedSequence(seed, spawn_key=(zlib.crc32(env_id.encode()), instance, repeat)).generate_state(2)
    return int(words[0]), int(words[1])


def test_parallel_run_matches_direct_rollouts(base_run):
    out, summary = base_run
    lines = RunStore(out).episodes()
    assert len(lines) == 4 and summary.played == 4 and summary.skipped == 0
    assert {(line["env_id"], line["instance"]) for line in lines} == {(e, k) for e in ENVS for k in (0, 1)}
    assert len({line["env_seed"] for line in lines}) == 4
    for line in lines:
        env_seed, agent_seed = _hand_seeds(0, line["env_id"], line["instance"], 0)
        assert (line["env_seed"], line["agent_seed"]) == (env_seed, agent_seed)
        direct = rollout(
            gym.make(line["env_id"], **KWARGS), RandomAgent(seed=agent_seed), seed=env_seed,
            options={"split": "test", "instance": line["instance"]},
        )
        assert line["scores"] == json.loads(json.dumps(direct.final_info["scores"]))
        assert line["reward"] == direct.total_reward and line["steps"] == direct.steps
        assert line["record"]["final_info"]["submitted_graph"] == direct.final_info["submitted_graph"].tolist()
        calls = [{k: v for k, v in c.items() if k != "wall_time"} for c in line["record"]["env_record"]["calls"]]
        assert calls == direct.env_record.deterministic_view()
        # Independent of the env's scoring: Meek-complete the stored graph, score it on the true DAG.
        family = line["env_id"].split("-")[1]
        dag = make_instance(family, "test", line["instance"], d=4, n=100).hidden.dag
        submitted = np.array(line["record"]["final_info"]["submitted_graph"], dtype=np.int8)
        assert line["scores"]["adjacency_f1"] == pytest.approx(adjacency_scores(dag, meek(submitted)).f1)
        expected = "rescued" if direct.final_info["submission_source"] == "rescued_working_graph" else (
            "truncated" if direct.truncated else "finished")
        assert line["status"] == expected
    for row in summary.rows:
        mine = [line for line in lines if line["env_id"] == row["env_id"]]
        assert row["episodes"] == 2
        assert row["mean_reward"] == pytest.approx(np.mean([line["reward"] for line in mine]))


def test_rerun_skips_finished_episodes(base_run, tmp_path, resets):
    out = _copy(base_run[0], tmp_path)
    before = (out / "episodes.jsonl").read_bytes()
    summary = run(RunConfig(ENVS, "random", instances=(0, 1), env_kwargs=KWARGS, workers=1), out, progress=False)
    assert resets == [] and summary.played == 0 and summary.skipped == 4 and summary.complete
    assert (out / "episodes.jsonl").read_bytes() == before


def test_torn_last_line_is_ignored_and_replayed(base_run, tmp_path, resets):
    out = _copy(base_run[0], tmp_path)
    path = out / "episodes.jsonl"
    raw = path.read_bytes()
    lost = json.loads(raw.splitlines()[-1])
    path.write_bytes(raw[: raw.rindex(b"\n", 0, len(raw) - 1) + 1 + 500])  # a crash 500 bytes into line 4
    with pytest.warns(RuntimeWarning, match="torn last line"):
        assert len(RunStore(out).episodes()) == 3
    config = RunConfig(ENVS, "random", instances=(0, 1), env_kwargs=KWARGS)
    with pytest.warns(RuntimeWarning, match="torn last line"):
        summary = run(config, out, progress=False)
    assert summary.played == 1 and len(resets) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lines = RunStore(out).episodes()
    assert len(lines) == 4 and lines[-1]["key"] == lost["key"]
    assert lines[-1]["scores"] == lost["scores"] and lines[-1]["reward"] == lost["reward"]


def test_failing_agent_gives_a_failed_line_and_the_run_goes_on(cache, tmp_path, resets):
    config = RunConfig(ENVS[:1], f"{__name__}:RaisingAgent", {"fail_instance": 1}, instances=(0, 1, 2), env_kwargs=KWARGS)
    summary = run(config, tmp_path, progress=False)
    lines = RunStore(tmp_path).episodes()
    assert [line["instance"] for line in lines] == [0, 1, 2]
    failed = lines[1]
    assert failed["status"] == "failed" and failed["error"] == "RuntimeError: boom on step 2"
    assert "in act" in failed["traceback"] and "RuntimeError: boom on step 2" in failed["traceback"]
    assert len(failed["trace"]["calls"]) == 1 and failed["usage"] == {"acts": 2} and failed["record"] is None
    for line in (lines[0], lines[2]):
        assert line["status"] != "failed" and line["usage"] == {"acts": line["steps"]}
    assert summary.counts["failed"] == 1 and not summary.complete
    # Failed episodes are retried by the next run (and fail again here, deterministically).
    resets.clear()
    again = run(config, tmp_path, progress=False)
    assert again.played == 1 and len(resets) == 1 and len(RunStore(tmp_path).episodes()) == 4
    assert RunStore(tmp_path).latest()[failed["key"]]["status"] == "failed"


def test_credentials_are_redacted_but_reach_the_agent(tmp_path):
    config = RunConfig(
        ("CartPole-v1",), f"{__name__}:KeyedAgent", {"api_key": "sk-secret-123", "max_tokens": 5},
        instances=(0,), split=None, max_steps=5,
    )
    summary = run(config, tmp_path, progress=False)
    assert summary.counts == {"truncated": 1}  # cut by max_steps; not failed, so the agent got the key
    for name in ("run.json", "episodes.jsonl"):
        assert "sk-secret-123" not in (tmp_path / name).read_text()
    line = RunStore(tmp_path).episodes()[0]
    assert line["agent_kwargs"]["api_key"] == "<redacted>" and line["agent_kwargs"]["max_tokens"] == 5
    assert line["scores"] == {} and summary.rows[0]["mean_adjacency_f1"] is None
    assert "-" in summary.table().splitlines()[1].split()[-1]


def test_invalid_configurations_fail_before_any_episode(cache, tmp_path, base_run):
    with pytest.raises(ValueError, match="single string"):
        RunConfig("Heuresis-lg-v0", "random")
    with pytest.raises(ValueError, match="ray_address"):
        RunConfig(ENVS, "random", ray_address="auto")
    with pytest.raises(ValueError, match="distinct"):
        RunConfig(ENVS, "random", instances=(1, 1))
    with pytest.raises(ValueError, match="Nope-v0"):
        run(RunConfig(("Nope-v0",), "random"), tmp_path / "a", progress=False)
    with pytest.raises(ValueError, match="unknown agent"):
        run(RunConfig(ENVS, "no-such-agent"), tmp_path / "b", progress=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    out = _copy(base_run[0], tmp_path)
    with pytest.raises(ValueError, match="differs in seed"):
        run(RunConfig(ENVS, "random", instances=(0, 1), env_kwargs=KWARGS, seed=1), out, progress=False)


def test_store_rejects_a_corrupt_middle_line(tmp_path):
    store = RunStore(tmp_path)
    for k in range(3):
        store.append({"key": f"e|-|{k}|0", "status": "finished"})
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    (tmp_path / "episodes.jsonl").write_text("\n".join([lines[0], lines[1][:10], lines[2]]) + "\n")
    with pytest.raises(ValueError, match="line 2"):
        store.episodes()
    with pytest.raises(ValueError, match="status"):
        store.append({"key": "x", "status": "done"})


def test_registry_names_and_errors(monkeypatch):
    assert set(agents()) >= {"random", "router", "pc-kci", "algorithm", "llm"}
    assert isinstance(make_agent("random", seed=1), RandomAgent)
    assert make_agent("algorithm", algorithm="C").algorithm == "C" and make_agent("pc-kci").algorithm is None
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("nope")
    with pytest.raises(ValueError, match="does not accept"):
        make_agent("random", temperature=0)
    monkeypatch.setitem(sys.modules, "causal_gym.agents.llm", None)  # as in an installation without it
    with pytest.raises(ModuleNotFoundError, match="causal_gym.agents.llm"):
        make_agent("llm", model="m")


def test_algorithm_agent_submits_pc_kci_or_a_menu_entry(cache):
    from causal_gym import discovery
    from causal_gym.envs.heuresis.references import run_menu_entry

    instance = make_instance("lg", "test", 2, d=4, n=100)
    guided = rollout(gym.make("Heuresis-lg-guided-v0", d=4, n=100), AlgorithmAgent(), seed=5, options={"instance": 2})
    pc = discovery.run("pc", instance.data, test="kci").graph
    assert guided.steps == 1 and guided.final_info["submission_source"] == "agent"
    np.testing.assert_array_equal(guided.final_info["submitted_graph"], pc)
    assert guided.final_info["scores"]["adjacency_f1"] == pytest.approx(adjacency_scores(instance.hidden.dag, meek(pc)).f1)

    menu = rollout(gym.make("Heuresis-lg-v0", d=4, n=100), AlgorithmAgent("C"), seed=5, options={"instance": 2})
    algorithm = menu.final_info["scores"]["algorithm_slots"]["C"]
    output = np.asarray(run_menu_entry(instance, algorithm)["graph"])
    assert menu.final_info["submission_source"] == "agent_edge_list" and menu.terminated
    if consistent_extension(output) is not None:
        assert menu.steps == 2
        np.testing.assert_array_equal(menu.final_info["submitted_graph"], output)
    else:  # refused (no DAG extends it, e.g. FCI's circle marks), then sent oriented along its arrows
        assert menu.steps == 3
        np.testing.assert_array_equal(menu.final_info["submitted_graph"], orient_along_arrows(output))

    # a rejected answer is sent again with the same adjacencies and arrows, never swapped for the start graph
    env, agent = gym.make("Heuresis-lg-v0", d=4, n=100), AlgorithmAgent("C")
    obs, info = env.reset(seed=5, options={"instance": 2})
    agent.reset(task_spec(env))
    obs, _, _, _, info = env.step(agent.act(obs, info))
    first = env.unwrapped.toolbox.decode(agent.act(obs, info)).arguments["edges"]
    retry = env.unwrapped.toolbox.decode(agent.act(obs, {"result": {"ok": False}})).arguments["edges"]
    assert first.strip()
    before, after = parse_edge_list(first, 4), parse_edge_list(retry, 4)
    assert np.array_equal(before | before.T, after | after.T) and (after >= (before & (1 - before.T))).all()
    assert consistent_extension(after) is not None

    with pytest.raises(ValueError, match="does not start"):
        rollout(gym.make("Heuresis-lg-v0", d=4, n=100), AlgorithmAgent(), seed=5, options={"instance": 2})
    with pytest.raises(ValueError, match="unknown algorithm"):
        rollout(gym.make("Heuresis-lg-v0", d=4, n=100), AlgorithmAgent("Z"), seed=5, options={"instance": 2})


def test_ray_backend_gives_the_same_scores(base_run, tmp_path):
    pytest.importorskip("ray")
    config = RunConfig(ENVS, "random", instances=(0, 1), env_kwargs=KWARGS, backend="ray", workers=2)
    summary = run(config, tmp_path, progress=False)
    assert summary.played == 4
    ours = {key: line["scores"] for key, line in RunStore(tmp_path).latest().items()}
    local = {key: line["scores"] for key, line in RunStore(base_run[0]).latest().items()}
    assert ours == local and all(isinstance(s, Mapping) and "adjacency_f1" in s for s in ours.values())


def test_progress_without_tqdm_prints_a_line_per_episode(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    run(RunConfig(("CartPole-v1",), "random", instances=(0, 1), split=None, max_steps=3), tmp_path)
    err = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in err] == ["[1/2", "[2/2"]
    assert all(line.endswith("truncated reward 3.000") for line in err)


class _OffSpaceEnv(gym.Env):
    """Observations outside the observation space, which Gymnasium's passive checker warns about."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,))
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.array([5.0], dtype=np.float32), {}

    def step(self, action):
        return np.array([5.0], dtype=np.float32), 1.0, True, False, {}


def test_passive_env_checker_checks_the_first_episode_of_an_id_in_a_process(tmp_path, monkeypatch):
    import causal_gym.eval.worker as worker

    monkeypatch.setattr(worker, "_CHECKED", set())
    gym.register("OffSpace-v0", entry_point=_OffSpaceEnv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = run(RunConfig(("OffSpace-v0",), "random", instances=range(3), split=None), tmp_path, progress=False)
    finally:
        gym.registry.pop("OffSpace-v0")
    assert summary.complete and summary.rows[0]["mean_reward"] == 1.0
    off = [str(w.message) for w in caught if "not within the observation space" in str(w.message)]
    assert len(off) == 2 and "reset()" in off[0] and "step()" in off[1]  # the first episode's reset and step only
