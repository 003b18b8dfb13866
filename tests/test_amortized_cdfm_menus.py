"""CDFM where AlterNet is offered: ``discovery.run``, the arena's submit and tool modes, a Heuresis menu.

On checkpoints made here in the ``cdfm-base`` package's format (:mod:`cdfm_checkpoints`). The
references are the package's own ``CDFM.predict`` and ``discovery.run`` called directly; what an
agent sees (task, observations, tool results, ``run_code`` output, final info) is searched for the
checkpoint's path and folder name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

cdfm = pytest.importorskip("cdfm")
pytest.importorskip("torch")

from causal_gym.discovery import check_method, methods, run  # noqa: E402
from causal_gym.discovery.amortized import cache_options  # noqa: E402
from causal_gym.discovery.amortized.cdfm_checkpoint import CHECKPOINT_ENV  # noqa: E402
from causal_gym.envs.arena.baselines import MethodAgent, standardize_columns  # noqa: E402
from causal_gym.envs.arena.tool_env import CausalArenaToolEnv, menu_graph  # noqa: E402
from causal_gym.envs.heuresis.env import HeuresisEnv  # noqa: E402
from causal_gym.envs.heuresis.references import MENU  # noqa: E402
from causal_gym.harness.agent import task_spec  # noqa: E402
from causal_gym.harness.menu import Menu, MenuEntry  # noqa: E402
from cdfm_checkpoints import CALIBRATION, write_checkpoint  # noqa: E402

pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("secret-models") / "cdfm-private-ckpt", CALIBRATION)


@pytest.fixture
def configured(checkpoint, monkeypatch) -> Path:
    monkeypatch.setenv(CHECKPOINT_ENV, str(checkpoint))
    return checkpoint


@pytest.fixture
def unconfigured(monkeypatch) -> None:
    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)


def chain(n: int = 120, d: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[:, 1] += 1.5 * x[:, 0]
    x[:, 2] = np.tanh(x[:, 1]) + 0.3 * rng.normal(size=n)
    return x


def test_run_equals_the_package_predict_and_loads_once(checkpoint, unconfigured):
    reference = cdfm.CDFM.from_pretrained(str(checkpoint), device="cpu")
    edges = 0
    for seed in range(10):
        x = chain(seed=seed)
        result, theirs = run("cdfm", x, checkpoint=str(checkpoint)), reference.predict(x)
        np.testing.assert_array_equal(result.graph, theirs.adjacency)
        off = ~np.eye(5, dtype=bool)
        np.testing.assert_allclose(result.extras["probabilities"][off], theirs.probabilities[off], atol=1e-9)
        assert result.extras["threshold"] == pytest.approx(theirs.threshold, abs=1e-12)
        assert result.extras["calibrated"] and (result.extras["load_seconds"] == 0) == (seed > 0)
        edges += int(result.graph.sum())
    assert 0 < edges < 10 * 20
    fixed = run("cdfm", chain(), checkpoint=str(checkpoint), threshold=0.5)
    np.testing.assert_array_equal(fixed.graph, (fixed.extras["probabilities"] > 0.5).astype(np.int8))


def test_without_a_checkpoint_cdfm_is_absent_and_asking_for_it_says_how(unconfigured, tmp_path):
    assert "cdfm" not in methods() and "alternet" in methods()
    how = f"DMIRLAB/CDFM.*{CHECKPOINT_ENV}"
    with pytest.raises(FileNotFoundError, match=how):
        run("cdfm", chain())
    with pytest.raises(FileNotFoundError, match=how):
        check_method("cdfm")
    with pytest.raises(ValueError, match=f"menu entry 'fm' cannot run 'cdfm' here: .*{how}"):
        MenuEntry("fm", "cdfm")
    with pytest.raises(ValueError, match=how):
        CausalArenaToolEnv(n_obs=80, menu=["pc", "cdfm"])
    with pytest.raises(FileNotFoundError, match=how):
        MethodAgent("cdfm")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        MethodAgent("cdfm", checkpoint=str(tmp_path))
    with pytest.raises(ValueError, match="unknown method 'cdfmx'"):
        MenuEntry("fm", "cdfmx")


def test_a_configured_checkpoint_lists_cdfm_and_runs_it_by_name(configured):
    assert methods()[-1] == "cdfm" and check_method("cdfm") == "cdfm"
    x = chain(seed=4)
    np.testing.assert_array_equal(run("cdfm", x).graph, run("cdfm", x, checkpoint=str(configured)).graph)


def test_submit_mode_answers_with_cdfm_on_the_standardized_table(checkpoint, unconfigured):
    import gymnasium as gym

    env = gym.make("CausalArena-synthetic-v0", d=10, n_obs=200, accept_cycles=True)
    obs, info = env.reset(seed=0, options={"instance": 3})
    agent = MethodAgent("cdfm", checkpoint=str(checkpoint))
    agent.reset(task_spec(env))
    answer = agent.act(obs, info)
    real = np.flatnonzero(obs["variables"])
    expected = run("cdfm", standardize_columns(obs["data"][:, real]), checkpoint=str(checkpoint)).graph
    np.testing.assert_array_equal(answer[np.ix_(real, real)], expected)
    assert answer.sum() > 0
    *_, final = env.step(answer)
    assert final["status"] == "ok"


def _seen(value: Any) -> str:
    return json.dumps(value, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x))


def _play(env: Any, labels: tuple[str, ...], probes: tuple[str, ...]) -> tuple[list[str], dict[str, str], dict]:
    """Reset, run each label and each ``run_code`` probe, submit: what the agent saw (the last
    ``len(probes)`` texts before the final info are the probes'), the edge lists, the final info."""
    obs, info = env.reset(seed=1, options={"instance": 1})
    task = task_spec(env)
    seen = [_seen([task.description, task.tool_specs, task.prompts, task.condition]), _seen([obs, info])]
    edges = {}
    for label in labels:
        obs, _, _, _, info = env.step(env.parse_tool_call("run_algorithm", {"algorithm": label}))
        assert obs["last_ok"] == 1, obs["last_result"]
        edges[label] = info["result"]["edges"]
        seen.append(_seen([obs, info]))
    for code in probes:
        obs, _, _, _, info = env.step(env.parse_tool_call("run_code", {"code": code}))
        seen.append(_seen([obs, info]))
    *_, final = env.step(env.parse_tool_call("submit", {}))
    seen.append(_seen(final))
    return seen, edges, final


def _probes(checkpoint: Path) -> tuple[str, ...]:
    """Programs an agent could try: the environment variable and the process's memory maps, then
    reading the checkpoint's config at a path it guessed (the last; its result echoes that path)."""
    return (f"import os\nprint(sorted(os.environ.items()))\nprint(os.environ.get({CHECKPOINT_ENV!r}))",
            "print(open('/proc/self/maps').read()[-3000:])",
            f"print(open({str(checkpoint / 'config.json')!r}).read())")


def _assert_hidden(seen: list[str], checkpoint: Path) -> None:
    """Neither the checkpoint's path nor its folder's names in what the agent saw, except in the echo
    of the guessed path; its config's content nowhere; the guessed read refused."""
    unprompted = "\n".join(seen[:-2] + seen[-1:])
    for secret in (str(checkpoint), checkpoint.name, checkpoint.parent.name):
        assert secret not in unprompted, secret
    assert '"embed_dim"' not in "\n".join(seen) and "blocked" in seen[-2]


def test_arena_tool_mode_offers_cdfm_and_never_shows_its_checkpoint(configured):
    from causal_gym.harness import parse_edge_list

    env = CausalArenaToolEnv(n_obs=100, menu=["pc", "cdfm"], budgets={"algorithm_calls": None},
                             sandbox="process")
    seen, edges, final = _play(env, ("A", "B"), _probes(configured))
    slots, columns = final["algorithm_slots"], final["columns"]
    assert sorted(slots.values()) == ["cdfm", "pc"]
    data = env._view.task.dataset.data
    label = next(k for k, v in slots.items() if v == "cdfm")
    graph = run("cdfm", data).graph[np.ix_(columns, columns)]  # the menu's run: the dataset's table, no options
    assert graph.sum() > 0
    np.testing.assert_array_equal(parse_edge_list(edges[label] or "none", env.d)[:len(columns), :len(columns)],
                                  graph)
    _assert_hidden(seen, configured)


def test_a_checkpoint_given_as_an_option_stays_out_of_sight_too(checkpoint, unconfigured):
    menu = Menu((MenuEntry("pc", "pc"), MenuEntry("foundation", "cdfm", {"checkpoint": str(checkpoint)})))
    env = CausalArenaToolEnv(n_obs=100, menu=menu, budgets={"algorithm_calls": None}, sandbox="process")
    seen, edges, final = _play(env, ("A", "B"), ())
    assert sorted(final["algorithm_slots"].values()) == ["foundation", "pc"]
    text = "\n".join(seen)
    assert str(checkpoint) not in text and checkpoint.name not in text


def test_heuresis_menu_entry_runs_cdfm_on_the_instance_data(configured):
    from causal_gym.harness import parse_edge_list

    menu = Menu((MENU["pc_fisherz"], MenuEntry("cdfm", "cdfm")))
    env = HeuresisEnv(family="lg", d=5, n=150, menu=menu, budgets={"algorithm_calls": None}, sandbox="process")
    seen, edges, final = _play(env, ("A", "B"), _probes(configured))
    slots = final["scores"]["algorithm_slots"]
    label = next(k for k, v in slots.items() if v == "cdfm")
    np.testing.assert_array_equal(parse_edge_list(edges[label] or "none", 5), run("cdfm", env._data).graph)
    _assert_hidden(seen, configured)


def test_cache_keys_follow_the_checkpoint_content_not_its_path(tmp_path, monkeypatch):
    first = write_checkpoint(tmp_path / "first", CALIBRATION, seed=0)
    copy = write_checkpoint(tmp_path / "copy", CALIBRATION, seed=0)
    other = write_checkpoint(tmp_path / "other", CALIBRATION, seed=3)
    keys = [cache_options("cdfm", {"checkpoint": str(p), "threshold": 0.4}) for p in (first, copy, other)]
    assert keys[0] == keys[1] != keys[2] and keys[0]["threshold"] == 0.4
    assert not any(str(tmp_path) in json.dumps(key) for key in keys)
    monkeypatch.setenv(CHECKPOINT_ENV, str(other))
    assert cache_options("cdfm", {}) == {"checkpoint_sha256": keys[2]["checkpoint_sha256"]}
    assert cache_options("pc", {"alpha": 0.1}) == {"alpha": 0.1} and "checkpoint_sha256" in cache_options("alternet", {})
    # the same menu entry on the same data after the variable moves to another checkpoint: not the cached graph
    env = CausalArenaToolEnv(n_obs=100, menu=["cdfm"])
    env.reset(seed=0, options={"instance": 2})
    dataset, entry = env._view.task.dataset, env.menu["cdfm"]
    graphs = []
    for folder in (first, other):
        monkeypatch.setenv(CHECKPOINT_ENV, str(folder))
        graphs.append(menu_graph(dataset, entry))
        np.testing.assert_array_equal(graphs[-1], run("cdfm", dataset.data).graph)
    assert not np.array_equal(*graphs)


def test_reproduce_arena_plays_cdfm_only_when_configured(checkpoint, monkeypatch, tmp_path, capsys):
    import gymnasium as gym

    from causal_gym.envs.arena.reproduce import main, plan_runs
    from causal_gym.eval.runner import run_plan

    arguments = ["--quick", "--methods", "cdfm", "--families", "chain", "--no-grounded", "--splits", "obs",
                 "--n-obs", "200", "--out", str(tmp_path), "--quiet"]
    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    with pytest.raises(SystemExit):
        main(arguments, runner=run_plan)
    assert CHECKPOINT_ENV in capsys.readouterr().err
    monkeypatch.setenv(CHECKPOINT_ENV, str(checkpoint))  # the runner's worker inherits it
    output = main(arguments, runner=run_plan)
    [row] = output["rows"]
    assert row["method"] == "cdfm" and row["status"] == "ok"
    # the same unit played here: the env's reward for MethodAgent('cdfm')
    env = gym.make("CausalArena-synthetic-v0", d=10, split="obs", replicate=0, n_obs=200, accept_cycles=True)
    [instance] = plan_runs(methods=("cdfm",), families=("chain",), dims=(10,), per_block=1, splits=("obs",),
                           replicates=1, grounded=())["synthetic"]["instances"]
    obs, info = env.reset(seed=0, options={"instance": instance})
    agent = MethodAgent("cdfm")
    agent.reset(task_spec(env))
    _, reward, _, _, _ = env.step(agent.act(obs, info))
    assert row["f1"] == pytest.approx(reward) and 0 < reward < 1


def test_heuresis_foundation_rows_add_cdfm_only_when_configured(checkpoint, monkeypatch):
    from causal_gym.discovery.amortized import load
    from causal_gym.envs.heuresis import references as refs
    from causal_gym.envs.heuresis.instances import make_instance
    from causal_gym.metrics import adjacency_scores

    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    assert list(refs.foundation_baselines()) == ["alternet"]
    with pytest.raises(ValueError, match=f"unknown baseline.*{CHECKPOINT_ENV}"):
        refs.collect_rows(("lg",), "dev", range(1), d=5, n=150, labels=("pc_fisherz",), baselines=("cdfm",))
    monkeypatch.setenv(CHECKPOINT_ENV, str(checkpoint))
    assert list(refs.foundation_baselines()) == ["alternet", "cdfm"]
    row = refs.instance_row("lg", "dev", 0, d=5, n=150, labels=("pc_fisherz",), baselines=("cdfm",))
    instance = make_instance("lg", "dev", 0, d=5, n=150)
    expected = adjacency_scores(instance.hidden.dag, load("cdfm", checkpoint).run(instance.data).graph)
    scores = row["baselines"]["cdfm"]
    assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx(
        (expected.precision, expected.recall, expected.f1))
