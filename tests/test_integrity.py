"""Benchmark integrity as an attacker tests it: sealed splits, nothing visible that depends on the truth
or the seal, the regeneration attack, cyclic answers, and the seal kept out of every record.

The counterfactual checks play the same actions twice with one hidden thing changed -- the truth
(same data) or the seal (same instance) -- and compare everything an agent can see before the end:
observations, non-final infos, the call record and the task text.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.envs.arena import source as arena_module
from causal_gym.envs.arena.env import CausalArenaEnv
from causal_gym.envs.arena.tool_env import CausalArenaToolEnv
from causal_gym.envs.causalab.env import CausaLabEnv
from causal_gym.envs.heuresis.env import HeuresisEnv
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.eval.runner import RunConfig, run
from causal_gym.graphs import consistent_extension, directed_cycle, meek
from causal_gym.harness import ToolError, parse_edge_list
from causal_gym.metrics import adjacency_scores
from causal_gym.scm import erdos_renyi_dag
from causal_gym.seal import OPEN, SEAL_ENV, Seal, new_secret, opaque_id, resolve_seal

TINY = {"d": 4, "n": 60}
FAST_MENU = ("pc", "ges", "gies", "fci", "random_regress", "direct_lingam", "dagma")
SECRET_A = "integrity-test-secret-" + "a" * 24
SECRET_B = "integrity-test-secret-" + "b" * 24


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def call(env, name: str, **arguments):
    action = env.unwrapped.parse_tool_call(name, arguments)
    assert not isinstance(action, ToolError), action
    return action


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


# ---------------------------------------------------------------------------------------------
# the seal itself
# ---------------------------------------------------------------------------------------------


def test_seal_keys_streams_and_hides_its_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = Seal(SECRET_A), Seal(SECRET_B)
    assert a.entropy("heuresis", 1, 2, 3) == Seal(SECRET_A).entropy("heuresis", 1, 2, 3)
    assert a.entropy("heuresis", 1, 2, 3) != b.entropy("heuresis", 1, 2, 3)
    assert a.entropy("heuresis", 1, 2, 3) != a.entropy("causalab", 1, 2, 3) != a.entropy("heuresis", 1, 2, 4)
    assert len(a.fingerprint) == 16 and a.fingerprint != b.fingerprint
    for text in (repr(a), str(a), a.fingerprint, json.dumps(a.entropy("x", 1))):
        assert SECRET_A not in text and "aaaa" not in text
    assert pickle.loads(pickle.dumps(a)) == a and hash(pickle.loads(pickle.dumps(a))) == hash(a)
    with pytest.raises(ValueError, match="at least 16 characters"):
        Seal("short")
    path = tmp_path / "seal"
    path.write_text(SECRET_A + "\n")
    assert Seal.from_file(path) == a
    with pytest.raises(ValueError, match="cannot read the seal file"):
        Seal.from_file(tmp_path / "missing")
    assert len(new_secret()) == 64 and new_secret() != new_secret()
    monkeypatch.setenv(SEAL_ENV, SECRET_B)
    assert resolve_seal(None) == b and resolve_seal(OPEN) is None and resolve_seal(SECRET_A) == a
    monkeypatch.delenv(SEAL_ENV)
    assert resolve_seal(None) is None
    with pytest.raises(ValueError, match="seal must be"):
        resolve_seal(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", ["heuresis", "causalab", "arena"])
def test_a_seal_changes_the_instances_and_is_deterministic(make: str) -> None:
    def first_view(seal):
        if make == "heuresis":
            env = HeuresisEnv("lg", **TINY, seal=seal)
            obs, info = env.reset(seed=0, options={"instance": 2})
            return env._instance.data, info["instance"]
        if make == "causalab":
            env = CausaLabEnv("4node", seal=seal)
            obs, info = env.reset(seed=0, options={"instance": 2})
            return obs["records"], info["instance"]
        env = CausalArenaEnv(n_obs=80, seal=seal)
        obs, info = env.reset(seed=0, options={"instance": 2})
        return obs["data"], info["instance"]

    open_data, open_where = first_view(OPEN)
    sealed_data, sealed_where = first_view(SECRET_A)
    again_data, again_where = first_view(Seal(SECRET_A))
    other_data, _ = first_view(SECRET_B)
    assert np.array_equal(sealed_data, again_data) and sealed_where == again_where
    assert not np.array_equal(sealed_data, open_data) and not np.array_equal(sealed_data, other_data)
    assert open_where["index"] == 2 and "id" not in open_where
    assert "index" not in sealed_where and "unit" not in sealed_where and len(sealed_where["id"]) == 16
    if make == "heuresis":  # a hash of the data the agent is shown anyway
        assert sealed_where["id"] == opaque_id(sealed_data)


# ---------------------------------------------------------------------------------------------
# the regeneration attack
# ---------------------------------------------------------------------------------------------


def _bic(data: np.ndarray, dag: np.ndarray) -> float:
    """Linear-Gaussian BIC of ``data`` under ``dag`` (the attacker's model choice)."""
    n, d = data.shape
    total = 0.0
    for j in range(d):
        parents = np.flatnonzero(dag[:, j])
        design = np.column_stack([np.ones(n), data[:, parents]])
        residual = data[:, j] - design @ np.linalg.lstsq(design, data[:, j], rcond=None)[0]
        total += -0.5 * n * np.log(residual @ residual / n) - 0.5 * design.shape[1] * np.log(n)
    return total


def _regenerate(data: np.ndarray, family: str) -> tuple[bool, np.ndarray]:
    """The outside battery's attack: rebuild the public test split, keep the best-fitting candidate."""
    candidates = [make_instance(family, "test", k, **TINY) for k in range(32)]
    exact = [c for c in candidates if np.array_equal(c.data, data)]
    best = exact[0] if exact else max(candidates, key=lambda c: _bic(data, c.hidden.dag))
    return bool(exact), best.hidden.dag


@pytest.mark.parametrize("family", ["lg", "wild"])
def test_regeneration_from_public_seeds_finds_nothing_under_a_seal(family: str) -> None:
    scores = {}
    for seal in (OPEN, SECRET_A):
        f1 = []
        for index in (1, 5, 9):
            env = HeuresisEnv(family, **TINY, seal=seal)
            env.reset(seed=0, options={"instance": index})
            found, guess = _regenerate(env._instance.data, family)
            assert found == (seal == OPEN)
            f1.append(adjacency_scores(env._instance.hidden.dag, guess).f1)
        scores[seal] = float(np.mean(f1))
    assert scores[OPEN] == 1.0  # the attack works on the open split ...
    assert scores[SECRET_A] < 0.9  # ... and finds nothing under the seal


# ---------------------------------------------------------------------------------------------
# counterfactual replays: the truth and the seal
# ---------------------------------------------------------------------------------------------


def _replay(env, seed: int, options: dict, actions: list) -> tuple[list, list, str, dict]:
    obs, info = env.reset(seed=seed, options=options)
    seen = [(obs, info)]
    task = env.unwrapped.task_description()
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return seen, env.unwrapped.record().deterministic_view()[:-1], task, info
        seen.append((obs, reward, info))
    raise AssertionError("the episode did not end")


def _heuresis_actions(env) -> list:
    return [
        call(env, "summarize"),
        call(env, "ci_test", x="X0", y="X1", cond=["X2"], test="fisherz"),
        call(env, "run_algorithm", algorithm="B"),
        call(env, "fit_parents", x="X0", cond=["X1", "X2"]),
        call(env, "run_code", code="import os\nprint(sorted(os.environ), X.shape, float(X[0, 0]))"),
        call(env, "set_edge", x="X0", y="X3", relation="forward"),
        call(env, "submit", edges="X0 -> X1, X1 -> X2, X0 -> X2"),
    ]


def _arena_actions(env) -> list:
    return [
        call(env, "summarize"),
        call(env, "ci_test", x="X0", y="X1", cond=[], test="fisherz"),
        call(env, "run_algorithm", algorithm="A"),
        call(env, "run_code", code="print(X.shape, float(abs(X).sum()))"),
        call(env, "set_edge", x="X0", y="X1", relation="forward"),
        call(env, "submit"),
    ]


def _other_dag(d: int, avoid: np.ndarray, seed: int) -> np.ndarray:
    other = erdos_renyi_dag(d, 2.0, rng=seed)
    while np.array_equal(other, avoid):
        seed += 1
        other = erdos_renyi_dag(d, 2.0, rng=seed)
    return other


def _swapped_arena_views(real):
    """``arena_view`` with another true DAG over the same data."""

    def swapped(task, width, seal=None):
        view = real(task, width, seal)
        k = view.size
        truth = np.zeros_like(view.truth)
        truth[:k, :k] = _other_dag(k, view.truth[:k, :k], 7)
        return dataclasses.replace(view, truth=truth)

    return swapped


def test_arena_tools_mode_shows_nothing_that_depends_on_the_truth(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same split with another true DAG: identical until the end, different scores."""
    real = arena_module.arena_view
    outcomes = []
    for patch in (False, True):
        if patch:
            monkeypatch.setattr(arena_module, "arena_view", _swapped_arena_views(real))
        env = CausalArenaToolEnv(n_obs=80, menu=FAST_MENU)
        env.reset(seed=1, options={"instance": 3})
        outcomes.append(_replay(env, 1, {"instance": 3}, _arena_actions(env)))
    (seen, record, task, final), (seen2, record2, task2, final2) = outcomes
    assert data_equivalence(seen, seen2, exact=True) and record == record2 and task == task2
    assert not np.array_equal(final["true_adjacency"], final2["true_adjacency"])
    assert final["scores"] != final2["scores"]


def test_arena_action_masks_do_not_depend_on_the_truth(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded ``action_space.sample(mask=info["action_mask"])`` on a split with padding slots draws
    the same actions, and sees the same masks, with the true DAG swapped (menu runs left out: they
    read the data only, and take long)."""
    real = arena_module.arena_view
    runs = []
    for patch in (False, True):
        if patch:
            monkeypatch.setattr(arena_module, "arena_view", _swapped_arena_views(real))
        env = CausalArenaToolEnv("formula", n_obs=80, menu=FAST_MENU, start="complete")
        keep = np.array([name not in ("run_algorithm", "run_code") for name in env.toolbox.names], dtype=np.int8)
        env.action_space.seed(5)
        obs, info = env.reset(seed=5, options={"instance": 2})
        seen = []
        for k in range(60):  # several episodes: the ending step's info is truth-based, so it is left out
            mask = dict(info["action_mask"])
            mask["tool"] = mask["tool"] * keep if (mask["tool"] * keep).any() else mask["tool"]
            action = env.action_space.sample(mask=mask)
            seen.append((obs, info, action))
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                obs, info = env.reset(seed=6 + k, options={"instance": 2})
        runs.append((seen, env._view.truth))
    (seen, truth), (seen2, truth2) = runs
    assert not np.array_equal(truth, truth2) and int(seen[0][0]["variables"].sum()) < env.d  # padding slots
    assert data_equivalence(seen, seen2, exact=True)


def _sealed_envs(kind: str, secret: str):
    if kind == "heuresis":
        return HeuresisEnv("wild", guided=True, **TINY, seal=secret), _heuresis_actions, {"instance": 4}
    if kind == "arena":
        env = CausalArenaToolEnv(n_obs=80, menu=FAST_MENU, seal=secret)
        return env, _arena_actions, {"instance": 4}
    env = CausaLabEnv("4node", seal=secret)
    a = "temperatureC"

    def actions(lab):
        return [call(lab, "hypothesize", hypothesis="{}"), call(lab, "intervene", property=a, value=40.0),
                call(lab, "verify", hypothesis="{}"), call(lab, "enter_reactor"), call(lab, "give_up")]

    return env, actions, {"instance": 4}


@pytest.mark.parametrize("kind", ["heuresis", "causalab", "arena"])
def test_nothing_visible_depends_on_the_seal_but_the_instance(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two seals made to generate the same instance: every visible output is identical, so nothing
    derived from the seal (beyond the instance it keys) reaches the agent; the final info names it."""
    monkeypatch.setattr(Seal, "entropy", lambda self, benchmark, *public: tuple(range(8)))
    results = []
    for secret in (SECRET_A, SECRET_B):
        env, actions, options = _sealed_envs(kind, secret)
        env.reset(seed=2, options=options)
        results.append(_replay(env, 2, options, actions(env)))
    (seen, record, task, final), (seen2, record2, task2, final2) = results
    assert data_equivalence(seen, seen2, exact=True) and record == record2 and task == task2
    assert final["seal"] == Seal(SECRET_A).fingerprint and final2["seal"] == Seal(SECRET_B).fingerprint
    visible = [s for item in seen for s in _strings(item)] + [s for c in record for s in _strings(c)] + [task]
    for secret in (SECRET_A, SECRET_B):
        fingerprint = Seal(secret).fingerprint
        assert not any(secret in s or fingerprint in s for s in visible)


def test_a_sealed_run_keeps_the_secret_out_of_every_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Runner + store + code tool: the secret is nowhere on disk or on the terminal; resuming under
    another seal is refused."""
    config = RunConfig(("Heuresis-lg-guided-v0",), "pc-kci", instances=(0, 1), env_kwargs=TINY, seal=SECRET_A)
    summary = run(config, tmp_path / "run", progress=True)
    assert summary.counts == {"finished": 2}
    out = capsys.readouterr()
    files = list((tmp_path / "run").rglob("*"))
    assert files
    for text in [p.read_text() for p in files if p.is_file()] + [out.out, out.err]:
        assert SECRET_A not in text
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["seal"] == Seal(SECRET_A).fingerprint
    lines = [json.loads(x) for x in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert {line["seal"] for line in lines} == {Seal(SECRET_A).fingerprint}
    assert all("index" not in line["record"]["final_info"]["scores"]["instance"] for line in lines)
    with pytest.raises(ValueError, match="differs in seal"):
        run(dataclasses.replace(config, seal=SECRET_B), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="not in env_kwargs"):
        RunConfig(("Heuresis-lg-v0",), "random", env_kwargs={"seal": SECRET_A})
    with pytest.raises(ValueError, match="cannot play it"):
        run(RunConfig(("CartPole-v1",), "random", split=None, seal=SECRET_A), tmp_path / "cartpole", progress=False)


def test_the_code_tool_cannot_see_the_seal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEAL_ENV, SECRET_A)
    env = gym.make("Heuresis-lg-v0", **TINY)  # sealed from the environment variable
    env.reset(seed=0, options={"instance": 0})
    assert env.unwrapped.seal == Seal(SECRET_A)
    program = "import os\nprint(dict(os.environ))\nprint([open(f'/proc/{p}/environ').read() for p in os.listdir('/proc') if p.isdigit()])"
    obs, *_ = env.step(call(env, "run_code", code=program))
    assert SECRET_A not in obs["last_result"] and SEAL_ENV not in obs["last_result"]


# ---------------------------------------------------------------------------------------------
# public structures: what a seal cannot hide
# ---------------------------------------------------------------------------------------------

QUANTILES = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


def _quantile_signature(data: np.ndarray) -> np.ndarray:
    return np.quantile(data, QUANTILES, axis=0).T  # one row of quantiles per column


def _match_cost(seen: np.ndarray, reference: np.ndarray) -> float:
    """Mean relative quantile distance under the best column matching (the view permutes columns)."""
    from scipy.optimize import linear_sum_assignment

    scale = np.abs(reference).max(axis=1) + 1e-9
    cost = (np.abs(seen[:, None, :] - reference[None, :, :]) / scale[None, :, None]).mean(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


@pytest.mark.parametrize("source", ["formula", "semantic"])
def test_the_quantile_matcher_finds_every_public_card_whatever_the_seal_keys(source: str) -> None:
    """Why a sealed env refuses public cards: the attacker of issue 28 draws data from every card in the
    package, and per-column quantiles of the data it is shown under a secret seal (sampling and column
    order keyed by the secret, built below the env) pick the card -- hence its public graph."""
    from causal_gym.envs.arena.card_pack import public_cards
    from causal_gym.envs.arena.catalogue import instance_list, load_task
    from causal_gym.envs.arena.grounded import compile_scenario

    library = {name: _quantile_signature(compile_scenario(card).scm.sample(500, rng=1))
               for name, card in public_cards(source).items()}
    seal = Seal(new_secret())  # a secret the attacker never sees
    instances = instance_list(source, None, "obs")
    found = 0
    for instance in instances:
        view = arena_module.arena_view(load_task(instance, "obs", 0, 300, 0, seal), 30, seal)
        seen = _quantile_signature(view.data[:, :view.size])
        guess = min(library, key=lambda name: _match_cost(seen, library[name])
                    if library[name].shape == seen.shape else np.inf)
        found += guess == instance.key
    assert found >= 0.9 * len(instances)  # chance is about 1 / 30


@pytest.mark.parametrize("source", ["formula", "semantic", "real"])
def test_a_seal_on_a_public_source_is_refused_and_names_what_works(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every way an evaluator can seal an arena env -- the argument, a Seal, the environment variable,
    gym.make of both ids -- refuses the public cards and tables with a message naming what works."""
    attempts = [lambda: CausalArenaEnv(source=source, seal=SECRET_A),
                lambda: CausalArenaToolEnv(source=source, seal=Seal(SECRET_A)),
                lambda: gym.make(f"CausalArena-{source}-v0", seal=SECRET_A),
                lambda: gym.make(f"CausalArena-{source}-tools-v0", seal=SECRET_A)]
    for attempt in attempts:
        with pytest.raises(ValueError, match=f"a seal cannot hide the {source} source") as caught:
            attempt()
        assert "source='synthetic'" in str(caught.value) and "cards=PATH" in str(caught.value)
    monkeypatch.setenv(SEAL_ENV, SECRET_B)
    with pytest.raises(ValueError, match="a seal cannot hide"):
        gym.make(f"CausalArena-{source}-v0")
    assert CausalArenaEnv(source=source, seal=OPEN).arena.seal is None  # open play stays possible
    assert CausalArenaEnv(source="synthetic", n_obs=80).arena.seal == Seal(SECRET_B)


# ---------------------------------------------------------------------------------------------
# cyclic answers
# ---------------------------------------------------------------------------------------------


def test_cyclic_edge_lists_and_working_graphs_are_rejected_with_one_retry() -> None:
    env = HeuresisEnv("lg", **TINY)
    env.reset(seed=0, options={"instance": 0})
    obs, reward, terminated, truncated, info = env.step(call(env, "submit", edges="X0 -> X1, X1 -> X2, X2 -> X0"))
    assert not (terminated or truncated) and not obs["last_ok"] and obs["phase"] == 1
    assert "directed cycle (X0 -> X1 -> X2 -> X0)" in obs["last_result"]
    obs, reward, terminated, truncated, info = env.step(call(env, "submit", edges="X0 -> X1, X1 -> X2, X0 -> X2"))
    assert terminated and info["submission_source"] == "agent_edge_list"
    # the working graph: a cycle made with set_edge cannot be submitted either
    env.reset(seed=0, options={"instance": 0})
    for x, y in (("X0", "X1"), ("X1", "X2"), ("X2", "X0")):
        env.step(call(env, "set_edge", x=x, y=y, relation="forward"))
    obs, *_ = env.step(call(env, "submit"))
    assert "the working graph has a directed cycle" in obs["last_result"] and obs["phase"] == 1
    # a second rejection: the env submits the working graph with the cycle's edges undirected
    obs, reward, terminated, truncated, info = env.step(call(env, "submit"))
    assert truncated and info["submission_source"] == "rescued_working_graph"
    submitted = np.asarray(info["submitted_graph"])
    assert directed_cycle(submitted) is None
    assert all(submitted[a, b] and submitted[b, a] for a, b in ((0, 1), (1, 2), (2, 0)))


def test_consecutive_errors_rescue_an_acyclic_graph() -> None:
    env = HeuresisEnv("lg", **TINY, budgets={"turns": 8})
    env.reset(seed=0, options={"instance": 0})
    for x, y in (("X0", "X1"), ("X1", "X2"), ("X2", "X0")):
        env.step(call(env, "set_edge", x=x, y=y, relation="forward"))
    info = {}
    for _ in range(5):
        *_, terminated, truncated, info = env.step(env.unwrapped.parse_tool_call("no_such_tool", {}))
        if terminated or truncated:
            break
    assert info["truncated_reason"] == "consecutive_errors"
    assert directed_cycle(np.asarray(info["submitted_graph"])) is None


def test_arena_submit_mode_marks_a_cyclic_answer_invalid() -> None:
    env = CausalArenaEnv(n_obs=80)
    env.reset(seed=0, options={"instance": 0})
    answer = np.zeros((env.d, env.d), dtype=np.int8)
    answer[0, 1] = answer[1, 2] = answer[2, 0] = 1
    obs, reward, terminated, truncated, info = env.step(answer)
    assert terminated and reward == 0.0 and info["status"] == "invalid"
    assert "form a cycle (X0 -> X1 -> X2 -> X0)" in info["error"]
    assert all(value is None for value in info["scores"].values())
    env.reset(seed=0, options={"instance": 0})
    answer[2, 0] = 0
    *_, info = env.step(answer)
    assert info["status"] == "ok"


def test_arena_tools_mode_rejects_a_cyclic_submission() -> None:
    env = CausalArenaToolEnv(n_obs=80)
    env.reset(seed=0, options={"instance": 0})
    obs, *_ = env.step(call(env, "submit", edges="X2 -> X3, X3 -> X4, X4 -> X2"))
    assert not obs["last_ok"] and "directed cycle (X2 -> X3 -> X4 -> X2)" in obs["last_result"]


MEEK_CYCLE = "X0 -> X1, X1 -- X2, X2 -- X3, X3 -> X0"
"""Issue 28: its directed part is acyclic, but Meek's R1 orients X1 -> X2 -> X3, closing X0 -> ... -> X0."""


def _meek_cycle_env(kind: str):
    if kind == "heuresis":
        return HeuresisEnv("lg", **TINY)
    return CausalArenaToolEnv(n_obs=80, menu=FAST_MENU)


@pytest.mark.parametrize("kind", ["heuresis", "arena"])
def test_an_answer_that_meek_completes_into_a_cycle_is_rejected_with_one_retry(kind: str) -> None:
    env = _meek_cycle_env(kind)
    env.reset(seed=0, options={"instance": 0})
    obs, reward, terminated, truncated, info = env.step(call(env, "submit", edges=MEEK_CYCLE))
    assert not (terminated or truncated) and not obs["last_ok"] and obs["phase"] == 1 and reward == 0
    assert "the edge list has no acyclic completion" in obs["last_result"]
    assert "X0 -> X1 -> X2 -> X3 -> X0" in obs["last_result"]  # the cycle the completion would make
    obs, reward, terminated, truncated, info = env.step(call(env, "submit", edges=MEEK_CYCLE))
    assert truncated and info["submission_source"] == "rescued_working_graph"
    assert info["truncated_reason"] == "edge_list_rejected"
    assert directed_cycle(np.asarray(info["completed_graph"])) is None
    # no DAG has an undirected chordless 4-cycle's pattern either, though Meek's completion orients nothing:
    # refused too (every orientation adds a collider the answer does not state), then rescued as a DAG
    env.reset(seed=0, options={"instance": 0})
    square = "X0 -- X1, X1 -- X2, X2 -- X3, X3 -- X0"
    assert consistent_extension(parse_edge_list(square, env.d)) is None
    assert directed_cycle(meek(parse_edge_list(square, env.d))) is None
    obs, reward, terminated, truncated, info = env.step(call(env, "submit", edges=square))
    assert not (terminated or truncated) and not obs["last_ok"] and "no consistent DAG extension" in obs["last_result"]
    *_, terminated, truncated, info = env.step(call(env, "submit", edges=square))
    assert truncated and info["submission_source"] == "rescued_working_graph"
    assert consistent_extension(np.asarray(info["submitted_graph"])) is not None


@pytest.mark.parametrize("kind", ["heuresis", "arena"])
def test_a_working_graph_that_meek_completes_into_a_cycle_is_rejected_then_rescued_acyclic(kind: str) -> None:
    env = _meek_cycle_env(kind)
    env.reset(seed=0, options={"instance": 0})
    for x, y, relation in (("X0", "X1", "forward"), ("X1", "X2", "undirected"), ("X2", "X3", "undirected"),
                           ("X3", "X0", "forward"), ("X0", "X2", "none"), ("X1", "X3", "none")):
        env.step(call(env, "set_edge", x=x, y=y, relation=relation))
    obs, *_ = env.step(call(env, "submit"))
    assert not obs["last_ok"] and "the working graph has no acyclic completion" in obs["last_result"]
    *_, truncated, info = env.step(call(env, "submit"))
    assert truncated and info["submission_source"] == "rescued_working_graph"
    submitted, completed = np.asarray(info["submitted_graph"]), np.asarray(info["completed_graph"])
    assert consistent_extension(submitted) is not None and directed_cycle(completed) is None
    assert submitted[0, 1] and not submitted[1, 0] and submitted[3, 0] and not submitted[0, 3]  # arrows kept
    assert np.array_equal(submitted | submitted.T, env.unwrapped._graph | env.unwrapped._graph.T)  # and every pair


def test_arena_submit_mode_never_scores_a_cycle_its_random_orientation_would_close() -> None:
    """``X -> Y -- Z -- X`` has no directed cycle, but orienting its undirected edges along the wrong
    permutation closes one; the attacker picks the nodes from the public orient seed of an open instance."""
    env = CausalArenaEnv(n_obs=80)
    env.reset(seed=0, options={"instance": 0})
    seed = env.step(np.zeros((env.d, env.d), dtype=np.int8))[4]["orient_seed"]
    rank = np.empty(env.d, dtype=np.int64)
    rank[np.random.default_rng(seed).permutation(env.d)] = np.arange(env.d)  # the permutation the env orients by
    y, z, x = np.argsort(rank)[:3]  # rank[y] < rank[z] < rank[x]: y -> z and z -> x, then x -> y closes it
    answer = np.zeros((env.d, env.d), dtype=np.int8)
    answer[x, y] = answer[y, z] = answer[z, y] = answer[z, x] = answer[x, z] = 1
    env.reset(seed=0, options={"instance": 0})
    *_, info = env.step(answer)
    assert info["status"] == "ok" and info["orient_seed"] == seed
    oriented = np.asarray(info["oriented_graph"])
    assert directed_cycle(oriented) is None and info["cyclic"] is False and info["scores"]["sid"] is not None
    assert oriented[x, y] and (oriented | oriented.T)[y, z] and (oriented | oriented.T)[z, x]


@pytest.mark.parametrize("kind", ["heuresis", "causalab", "arena"])
def test_same_seed_and_seal_give_identical_traces(kind: str) -> None:
    traces = []
    for _ in range(2):
        env, actions, options = _sealed_envs(kind, SECRET_A)
        env.reset(seed=5, options=options)
        seen, record, task, final = _replay(env, 5, options, actions(env))
        traces.append((seen, record, task, final["scores"]))
    (seen, record, task, scores), (seen2, record2, task2, scores2) = traces
    assert data_equivalence(seen, seen2, exact=True) and record == record2 and task == task2
    assert json.dumps(scores, sort_keys=True, default=str) == json.dumps(scores2, sort_keys=True, default=str)
