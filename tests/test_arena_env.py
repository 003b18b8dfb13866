"""CausalArena environments: registration and the Gymnasium contract in both modes, instance lists
and views against the SCMs they come from, submit-mode scores against independent metric calls,
malformed actions, a scripted tool episode, the truth rule, the interventional audit at reset, the
shared Heuresis tool functions, and ``reproduce arena --quick`` on two families."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import networkx as nx
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from scipy import stats

from causal_gym.discovery import run
from causal_gym.envs.arena import reproduce
from causal_gym.envs.arena import source as source_module
from causal_gym.envs.arena.audits import audit_graph
from causal_gym.envs.arena.catalogue import REAL_NETWORKS, SOURCES, ArenaTask, audit_split, instance_list, load_task
from causal_gym.envs.arena.env import CausalArenaEnv, make_arena_env
from causal_gym.envs.arena.pool import pool_config, pool_slot
from causal_gym.envs.arena.protocol import ArenaDataset
from causal_gym.envs.arena.spec import SOURCES as ARENA_SOURCES
from causal_gym.envs.arena.tool_env import CausalArenaToolEnv
from causal_gym.envs.registration import env_descriptions, register_envs
from causal_gym.eval.runner import run_plan

ENV_DESCRIPTIONS = env_descriptions()
from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS
from causal_gym.envs.arena.scenarios.semantic import SEMANTIC_SCENARIOS
from causal_gym.graphs import meek
from causal_gym.harness import ToolError
from causal_gym.harness import data_tools as heuresis_tools
from causal_gym.metrics import directed_edge_scores, shd
from causal_gym.stats import CITester

SMALL = {"n_obs": 80}
SMALL_INT = {"split": "obs+int", "n_obs": 80, "n_int": 40}
FAST_MENU = ("pc", "ges", "gies", "fci", "random_regress", "direct_lingam", "dagma")
TRUTH_KEYS = {"true_adjacency", "scores", "factors", "oriented_graph", "columns", "interventional_audit_details",
              "algorithm_slots", "orient_seed"}


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def act(env: CausalArenaToolEnv, name: str, **arguments):
    action = env.parse_tool_call(name, arguments)
    assert not isinstance(action, ToolError), action
    return action


def oriented_by_rule(graph: np.ndarray, seed: int) -> np.ndarray:
    """The documented rule, written independently: undirected edges point along a seeded node order;
    where that closes a cycle and the arrows alone have none, along the arrows' topological order that
    takes the lowest rank first."""
    d = graph.shape[0]
    rank = np.argsort(np.random.default_rng(seed).permutation(d))

    def along(position):
        out = graph.copy()
        for i in range(d):
            for j in range(d):
                if graph[i, j] and graph[j, i] and position[i] > position[j]:
                    out[i, j] = 0
        return out

    plain = along(rank)
    arrows = [(i, j) for i in range(d) for j in range(d) if graph[i, j] and not graph[j, i]]
    if nx.is_directed_acyclic_graph(nx.DiGraph([(i, j) for i in range(d) for j in range(d) if plain[i, j]])):
        return plain
    if not nx.is_directed_acyclic_graph(nx.DiGraph(arrows)):
        return plain  # a cyclic answer (accept_cycles=True) is scored as it is
    order: list[int] = []
    while len(order) < d:
        free = [v for v in range(d) if v not in order and all(u in order for u, w in arrows if w == v)]
        order.append(min(free, key=lambda v: rank[v]))
    return along(np.argsort(order))


def leaks(value, truth: np.ndarray) -> bool:
    """Whether ``value`` holds a truth key or a copy of the true matrix anywhere inside."""
    if isinstance(value, dict):
        return bool(TRUTH_KEYS & set(value)) or any(leaks(v, truth) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(leaks(v, truth) for v in value)
    if isinstance(value, np.ndarray) and value.shape == truth.shape and truth.any():
        return bool(np.array_equal(value, truth))
    return False


# ---------------------------------------------------------------------------------------------
# registration and the Gymnasium contract
# ---------------------------------------------------------------------------------------------


ARENA_IDS = tuple(f"CausalArena-{s}-v0" for s in ARENA_SOURCES)
ARENA_TOOL_IDS = tuple(f"CausalArena-{s}-tools-v0" for s in ARENA_SOURCES)


def test_registration_ids_cover_every_source():
    assert ARENA_SOURCES == SOURCES
    assert {i for i in ENV_DESCRIPTIONS if i.startswith("CausalArena-")} == set(ARENA_IDS) | set(ARENA_TOOL_IDS)
    register_envs()  # idempotent
    for env_id, source in zip(ARENA_IDS, ARENA_SOURCES):
        spec = gym.spec(env_id)
        assert spec.entry_point == "causal_gym.envs.arena.env:make_arena_env" and spec.max_episode_steps is None
        assert spec.kwargs == {"source": source}
    for env_id, source in zip(ARENA_TOOL_IDS, ARENA_SOURCES):
        spec = gym.spec(env_id)
        assert spec.entry_point == "causal_gym.envs.arena.tool_env:CausalArenaToolEnv"
        assert spec.max_episode_steps is None and spec.kwargs == {"source": source}


@pytest.mark.parametrize("source", ARENA_SOURCES)
def test_tools_ids_make_the_tool_env_and_mode_tools_is_deprecated(source):
    if source == "real":
        from causal_gym.envs.arena.real import available_real_datasets

        if not available_real_datasets()["tables"] or not available_real_datasets()["networks"]:
            pytest.skip("cdt and pgmpy (extra 'real') are not installed")
    env = gym.make(f"CausalArena-{source}-tools-v0", render_mode="ansi", **SMALL)
    assert type(env.unwrapped) is CausalArenaToolEnv and env.unwrapped.arena.source == source
    with pytest.warns(DeprecationWarning, match=r"CausalArena-\{source\}-tools-v0"):
        old = gym.make(f"CausalArena-{source}-v0", mode="tools", **SMALL)
    assert type(old.unwrapped) is CausalArenaToolEnv
    a, b = env.reset(seed=3), old.reset(seed=3)
    assert data_equivalence(a, b, exact=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(gym.make(f"CausalArena-{source}-v0", mode="submit", **SMALL).unwrapped) is CausalArenaEnv


def test_make_vec_plays_one_step_episodes():
    envs = gym.make_vec("CausalArena-synthetic-v0", num_envs=2, n_obs=50)
    obs, _ = envs.reset(seed=0)
    assert obs["data"].shape == (2, 50, 10)
    envs.action_space.seed(0)
    _, reward, terminated, truncated, _ = envs.step(envs.action_space.sample())
    assert terminated.all() and not truncated.any() and reward.shape == (2,)
    envs.close()


def test_arguments_and_options_are_validated():
    with pytest.raises(ValueError, match="source"):
        make_arena_env(source="nope")
    with pytest.raises(ValueError, match="mode"):
        make_arena_env(mode="chat")
    with pytest.raises(ValueError, match="synthetic d"):
        CausalArenaEnv(d=12)
    with pytest.raises(ValueError, match="unknown factor"):
        CausalArenaEnv(factors={"colour": "red"})
    with pytest.raises(ValueError, match="graph_family"):
        CausalArenaEnv(factors={"graph_family": "hypercube"})
    with pytest.raises(ValueError, match="synthetic pool only"):
        CausalArenaEnv(source="formula", factors={"graph_family": "chain"})
    with pytest.raises(ValueError, match="n_int"):
        CausalArenaEnv(split="obs", n_int=10)
    with pytest.raises(ValueError, match="no formula instance"):
        CausalArenaEnv(source="formula", d=5)
    for menu in (("pc", "pc"), ("pc", "no_such_method"), (), "pc"):  # a menu of any length, but a menu
        with pytest.raises(ValueError, match="menu"):
            CausalArenaToolEnv(menu=menu)
    env = CausalArenaEnv(**SMALL)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"instnace": 1})
    with pytest.raises(ValueError, match="must be < 200"):
        env.reset(seed=0, options={"instance": 200})
    with pytest.raises(ValueError, match="train"):
        CausalArenaEnv(source="semantic", **SMALL).reset(seed=0, options={"split": "train"})
    with pytest.raises(RuntimeError, match="reset"):
        CausalArenaEnv(**SMALL).step(np.zeros((10, 10), dtype=np.int8))


# ---------------------------------------------------------------------------------------------
# instance lists and the view
# ---------------------------------------------------------------------------------------------


def test_instance_lists_follow_the_pool_schedule_and_the_cards():
    chain = instance_list("synthetic", 20, "obs", {"graph_family": "chain"})
    assert len(chain) == 20
    assert all(pool_slot(u.key).graph_family == "chain" and pool_slot(u.key).d == 20 for u in chain)
    paired = instance_list("synthetic", 10, "obs", {"difficulty": "paired", "stressor": ["outliers", "missingness"]})
    assert paired and all(pool_slot(u.key).difficulty == "paired"
                          and {"outliers", "missingness"} & set(pool_slot(u.key).stressors) for u in paired)
    tagged = instance_list("synthetic", 10, "obs", {"graph_family": "tree", "mechanism": "tree_based"})
    assert 0 < len(tagged) < 20
    assert all("tree_based" in pool_config(u.key).tags["active_mechanisms"] for u in tagged)
    assert [u.key for u in instance_list("formula", None, "obs")] == list(FORMULA_SCENARIOS)
    sizes = [len(card["variables"]) for card in SEMANTIC_SCENARIOS.values()]
    assert [u.size for u in instance_list("semantic", None, "obs")] == sizes
    small = [name for name, card in FORMULA_SCENARIOS.items() if len(card["variables"]) <= 17]
    assert 0 < len(small) < len(FORMULA_SCENARIOS)  # d keeps the cards that fit, and only those
    assert [u.key for u in instance_list("formula", 17, "obs")] == small
    real_obs, real_int = instance_list("real", None, "obs"), instance_list("real", None, "obs+int")
    assert [u.kind for u in real_obs] == ["table"] + ["network"] * 5
    assert [u.key for u in real_int] == list(REAL_NETWORKS)


def test_network_sizes_match_the_bif_files():
    from causal_gym.envs.arena.real import available_real_datasets, bn_structure

    if not set(REAL_NETWORKS) <= set(available_real_datasets()["networks"]):
        pytest.skip("pgmpy (extra 'real') is not installed")

    assert {name: bn_structure(name)[0].shape[0] for name in REAL_NETWORKS} == dict(REAL_NETWORKS)


def test_the_view_is_the_split_of_the_scm_with_permuted_columns():
    env = CausalArenaEnv(**SMALL_INT)
    obs, info = env.reset(seed=0, options={"instance": 7})
    unit = instance_list("synthetic", 10, "obs")[7]
    assert info["instance"]["unit"] == unit.unit == f"synthetic/pool-{unit.key:04d}"
    _, _, _, _, final = env.step(np.zeros((10, 10), dtype=np.int8))
    columns = final["columns"]
    assert sorted(columns) == list(range(10)) and columns != list(range(10))
    graph = pool_config(unit.key).graph
    assert np.array_equal(final["true_adjacency"], graph[np.ix_(columns, columns)])
    dataset = load_task(unit, "obs+int", 0, 80, 40).dataset
    assert np.array_equal(obs["data"], dataset.data[:, columns])
    assert np.array_equal(obs["mask"], dataset.mask[:, columns]) and obs["mask"].any(axis=1).sum() == 40
    assert final["factors"]["graph_family"] == pool_slot(unit.key).graph_family


def test_grounded_instances_are_padded_and_named():
    env = CausalArenaEnv(source="semantic", describe_variables=True, **SMALL)
    obs, info = env.reset(seed=0, options={"instance": 2})
    card = list(SEMANTIC_SCENARIOS.values())[2]
    k = len(card["variables"])
    assert obs["variables"].tolist() == [1] * k + [0] * (env.arena.width - k)
    assert {v["name"] for v in info["variables"][:k]} == {v["name"] for v in card["variables"]}
    env = CausalArenaEnv(source="formula", **SMALL)
    width = max(len(card["variables"]) for card in FORMULA_SCENARIOS.values())  # the default d: the largest card
    assert env.arena.width == width
    index = next(i for i, u in enumerate(instance_list("formula", None, "obs")) if u.size < width)
    obs, info = env.reset(seed=0, options={"instance": index})
    k = info["instance"]["n_variables"]
    assert obs["variables"].tolist() == [1] * k + [0] * (width - k) and not obs["data"][:, k:].any()
    action = np.zeros((width, width), dtype=np.int8)
    action[0, width - 1] = 1  # an edge to a padding slot: a false positive
    _, reward, _, _, final = env.step(action)
    truth = final["true_adjacency"]
    assert not truth[k:].any() and not truth[:, k:].any()
    assert final["scores"]["precision"] == 0.0 and reward == 0.0
    assert final["scores"]["nshd"] == pytest.approx(shd(truth, action) / (k * (k - 1)))


def test_real_source_serves_the_sachs_table_and_networks():
    from causal_gym.envs.arena.real import SACHS_CONSENSUS_EDGES, SACHS_NAMES, available_real_datasets, load_sachs

    if "sachs" not in available_real_datasets()["tables"]:
        pytest.skip("cdt (extra 'real') is not installed")

    env = CausalArenaEnv(source="real", **SMALL)
    obs, info = env.reset(seed=0, options={"instance": 0})
    assert info["instance"]["unit"] == "real/sachs-table" and not obs["mask"].any()
    table = load_sachs()[0]
    rows = obs["data"][:, :11]
    _, _, _, _, final = env.step(np.zeros((37, 37), dtype=np.int8))
    original = np.empty_like(rows)
    original[:, final["columns"]] = rows
    table_rows = {tuple(r) for r in table.tolist()}
    assert all(tuple(r) in table_rows for r in original.tolist()) and len({tuple(r) for r in original.tolist()}) == 80
    assert int(final["true_adjacency"].sum()) == len(SACHS_CONSENSUS_EDGES) and len(SACHS_NAMES) == 11
    _, info = CausalArenaEnv(source="real", **SMALL_INT).reset(seed=0, options={"instance": 0})
    assert info["instance"]["unit"] == "real/network-asia" and info["interventional_audit"]["passed"]


def test_train_split_streams_fresh_audited_synthetic_scms():
    env = CausalArenaEnv(factors={"graph_family": "layered"}, **SMALL)
    obs, info = env.reset(seed=0, options={"split": "train", "instance": 5})
    assert info["instance"]["split"] == "train" and info["instance"]["unit"] == "synthetic/train-0000000005"
    again, _ = CausalArenaEnv(factors={"graph_family": "layered"}, **SMALL).reset(seed=9, options={"split": "train",
                                                                                                    "instance": 5})
    assert np.array_equal(obs["data"], again["data"])
    _, _, _, _, final = env.step(np.zeros((10, 10), dtype=np.int8))
    assert final["factors"]["graph_family"] == "layered"
    assert audit_graph(final["true_adjacency"], family="layered").passed
    tests = {env.reset(seed=0, options={"instance": k})[0]["data"].tobytes() for k in range(20)}
    assert obs["data"].tobytes() not in tests


# ---------------------------------------------------------------------------------------------
# determinism, scores, malformed actions
# ---------------------------------------------------------------------------------------------


def test_same_seed_same_episode_and_instance_fixes_the_data():
    first = [CausalArenaEnv(source="formula", **SMALL).reset(seed=s) for s in (3, 3, 4)]
    assert np.array_equal(first[0][0]["data"], first[1][0]["data"]) and first[0][1] == first[1][1]
    picked = {CausalArenaEnv(**SMALL).reset(seed=s)[1]["instance"]["index"] for s in range(8)}
    assert len(picked) > 3
    a, _ = CausalArenaEnv(**SMALL_INT).reset(seed=1, options={"instance": 11})
    b, _ = CausalArenaEnv(**SMALL_INT).reset(seed=2, options={"instance": 11})
    assert all(np.array_equal(a[key], b[key]) for key in a)

    def episode(seed):
        env = CausalArenaToolEnv(menu=FAST_MENU, **SMALL)
        obs, info = env.reset(seed=seed)
        steps = [env.step(act(env, name, **args)) for name, args in (
            ("run_algorithm", {"algorithm": "B"}), ("stability", {"x": "X0", "y": "X2", "test": "fisherz"}),
            ("submit", {}))]
        return obs, info, steps, env.record().deterministic_view()

    one, two = episode(5), episode(5)
    assert one[0]["last_result"] == two[0]["last_result"] and one[1]["instance"] == two[1]["instance"]
    assert [s[0]["last_result"] for s in one[2]] == [s[0]["last_result"] for s in two[2]]
    assert one[3] == two[3] and one[2][-1][1] == two[2][-1][1]


@pytest.mark.parametrize("instance", [0, 45, 133])
def test_submit_reward_is_the_directed_f1_of_the_oriented_answer(instance):
    rng = np.random.default_rng(instance)
    for trial in range(4):
        env = CausalArenaEnv(**SMALL)
        env.reset(seed=0, options={"instance": instance})
        upper = np.triu(rng.random((10, 10)) < 0.25, 1).astype(np.int8)
        order = rng.permutation(10)
        action = upper[np.ix_(order, order)]
        undirected = np.triu(rng.random((10, 10)) < 0.1 * trial, 1)
        action = np.where(undirected | undirected.T, 1, action).astype(np.int8)
        np.fill_diagonal(action, 0)
        _, reward, terminated, truncated, info = env.step(action)
        assert terminated and not truncated and info["status"] == "ok"
        truth = info["true_adjacency"]
        expected = directed_edge_scores(truth, oriented_by_rule(action, info["orient_seed"]))
        assert reward == pytest.approx(expected.f1) and info["scores"]["f1"] == pytest.approx(expected.f1)
        assert info["scores"]["precision"] == pytest.approx(expected.precision)
        assert np.array_equal(info["oriented_graph"], oriented_by_rule(action, info["orient_seed"]))
        assert nx.is_directed_acyclic_graph(nx.DiGraph(np.asarray(info["oriented_graph"])))  # never a cycle
        assert set(info["scores"]) >= {"shd", "nshd", "sid", "cpdag_shd", "arrow_f1", "adjacency_f1"}
    env.reset(seed=0, options={"instance": instance})
    truth = env._view.truth
    assert env.step(truth)[1] == 1.0


@pytest.mark.parametrize("action", [
    np.zeros((9, 9), dtype=np.int8), np.full((10, 10), 2), -np.eye(10)[::-1], np.full((10, 10), 0.5),
    np.full((10, 10), np.nan), np.eye(10, dtype=np.int8), "X0 -> X1", None, [[0, 1], [0]], {"edges": 1},
])
def test_malformed_actions_end_the_episode_with_reward_zero_and_an_error(action):
    env = CausalArenaEnv(**SMALL)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert reward == 0.0 and terminated and not truncated and obs in env.observation_space
    assert info["status"] == "invalid" and info["error"] and all(v is None for v in info["scores"].values())
    with pytest.raises(RuntimeError, match="ended"):
        env.step(np.zeros((10, 10), dtype=np.int8))


def test_a_cyclic_answer_is_invalid_unless_accept_cycles_and_then_scored_as_it_is():
    strict, lenient = CausalArenaEnv(**SMALL), CausalArenaEnv(**SMALL, accept_cycles=True)
    strict.reset(seed=0, options={"instance": 3})
    lenient.reset(seed=0, options={"instance": 3})
    truth = strict._view.truth
    a, b, c = next((a, b, c) for a, b in zip(*np.nonzero(truth)) for c in np.flatnonzero(truth[b]))
    answer = truth.copy()
    answer[c, a] = 1  # every true edge plus one closing the cycle a -> b -> c -> a
    _, reward, _, _, info = strict.step(answer)
    assert reward == 0.0 and info["status"] == "invalid" and info["cyclic"] is None
    named = info["error"].split("(")[1].split(")")[0].split(" -> ")
    assert named[0] == named[-1] and set(named) == {f"X{a}", f"X{b}", f"X{c}"}  # the error names the cycle
    _, reward, _, _, info = lenient.step(answer)
    edges = int(truth.sum())
    assert info["status"] == "ok" and info["cyclic"] is True and info["scores"]["sid"] is None
    assert info["scores"]["precision"] == pytest.approx(edges / (edges + 1)) and info["scores"]["recall"] == 1.0
    assert reward == pytest.approx(2 * edges / (2 * edges + 1))  # F1 by hand: every true edge and one extra
    lenient.reset(seed=0, options={"instance": 3})
    assert lenient.step(truth)[4]["cyclic"] is False
    with pytest.raises(ValueError, match="accept_cycles"):
        CausalArenaEnv(**SMALL, accept_cycles="yes")


def test_the_reproduction_scores_a_cyclic_pc_answer_instead_of_rejecting_it():
    """Configuration 171 at d = 10: PC's graph has the cycle X0 -> X8 -> X1 -> X0 (found on the full slice)."""
    from causal_gym.agents import task_spec
    from causal_gym.envs.arena.baselines import MethodAgent
    from causal_gym.graphs import directed_cycle

    config = reproduce.plan_runs(methods=("pc",), families=("chain",), dims=(10,), per_block=1, splits=("obs",),
                                 replicates=1, grounded=())["synthetic"]
    env = gym.make("CausalArena-synthetic-v0", **config["env_kwargs"], **config["variants"][0]["env_kwargs"])
    obs, info = env.reset(seed=0, options={"instance": 171})
    agent = MethodAgent("pc")
    agent.reset(task_spec(env))
    answer = agent.act(obs, info)
    assert directed_cycle(answer) is not None
    _, reward, _, _, final = env.step(answer)
    assert final["status"] == "ok" and final["cyclic"] is True
    expected = directed_edge_scores(final["true_adjacency"], oriented_by_rule(answer, final["orient_seed"]))
    assert reward == pytest.approx(expected.f1) and 0 < reward < 1


# ---------------------------------------------------------------------------------------------
# tools mode and the truth rule
# ---------------------------------------------------------------------------------------------


def fisher_z_pvalue(x: np.ndarray, y: np.ndarray) -> float:
    r = stats.pearsonr(x, y).statistic
    z = np.sqrt(len(x) - 3) * np.arctanh(r)
    return float(2 * stats.norm.sf(abs(z)))


def test_tools_mode_scripted_episode_is_scored_and_keeps_the_truth_inside():
    env = CausalArenaToolEnv(menu=FAST_MENU, **SMALL_INT)
    obs, info = env.reset(seed=2, options={"instance": 3})
    assert "rows 0-79: observational" in obs["last_result"] and "intervention on X" in obs["last_result"]
    assert obs["intervention_mask"][:80].sum() == 0 and obs["intervention_mask"][80:].any(axis=1).all()
    infos = [info]
    obs, _, _, _, info = env.step(act(env, "run_algorithm", algorithm="C"))
    infos.append(info)
    algorithm_text = obs["last_result"]
    obs, _, _, _, info = env.step(act(env, "ci_test", x="X0", y="X1", test="fisherz"))
    infos.append(info)
    ci_verdict = info["result"]["verdict"]
    obs, _, _, _, info = env.step(act(env, "set_edge", x="X0", y="X1", relation="forward"))
    infos.append(info)
    obs, reward, terminated, truncated, final = env.step(act(env, "submit"))
    assert terminated and not truncated
    truth = final["true_adjacency"]
    assert not any(leaks(i, truth) for i in infos)
    assert infos[0]["interventional_audit"]["passed"] and "items" not in json.dumps(infos[0]["interventional_audit"])

    completed = meek(final["submitted_graph"])
    expected = directed_edge_scores(truth, oriented_by_rule(completed, final["orient_seed"]))
    assert reward == pytest.approx(expected.f1) and final["scores"]["f1"] == pytest.approx(expected.f1)

    unit = instance_list("synthetic", 10, "obs+int")[3]
    dataset = load_task(unit, "obs+int", 0, 80, 40).dataset
    columns = final["columns"]
    p = fisher_z_pvalue(dataset.data[:, columns[0]], dataset.data[:, columns[1]])
    assert ci_verdict == ("independent" if p > 0.05 else "dependent")
    method = final["algorithm_slots"]["C"]
    mask = dataset.mask if method == "gies" else None
    found = run(method, dataset.data, mask).graph[np.ix_(columns, columns)]
    assert algorithm_text == f"Algorithm C returned {heuresis_tools.graph_text(found)}"


def test_tools_refuse_padding_slots():
    env = CausalArenaToolEnv(source="formula", menu=FAST_MENU, **SMALL)
    index = next(i for i, u in enumerate(instance_list("formula", None, "obs")) if u.size < 17)
    obs, info = env.reset(seed=0, options={"instance": index})
    k = info["instance"]["n_variables"]
    assert "padding" in obs["last_result"]
    obs, *_ = env.step(act(env, "ci_test", x="X0", y="X16", test="fisherz"))
    assert obs["last_ok"] == 0 and "X16 is a padding slot" in obs["last_result"]
    obs, *_ = env.step(act(env, "fit_parents", x="X0", cond=[f"X{k}"]))
    assert obs["last_ok"] == 0
    obs, *_ = env.step(act(env, "run_code", code="print(X.shape)"))
    assert obs["last_result"].strip() == f"(80, {k})"


def test_heuresis_tool_functions_give_the_heuresis_env_texts():
    from causal_gym.envs.heuresis.env import HeuresisEnv

    env = HeuresisEnv(family="lg", d=4, n=60)
    env.reset(seed=0, options={"instance": 0})
    obs, *_ = env.step(env.parse_tool_call("ci_test", {"x": "X0", "y": "X2", "cond": ["X1"], "test": "fisherz"}))
    assert obs["last_result"] == heuresis_tools.ci_test(CITester(env._data, test="fisherz"), 0, 2, (1,))[0]
    state = env._resample_rng.bit_generator.state
    obs, *_ = env.step(env.parse_tool_call("stability", {"x": "X0", "y": "X3", "test": "fisherz"}))
    replay = np.random.default_rng()
    replay.bit_generator.state = state
    text, _ = heuresis_tools.stability(env._data, 0, 3, (), "fisherz", n_resamples=env.n_resamples,
                                       subsample=env.subsample, seed=int(replay.integers(2**63 - 1)))
    assert obs["last_result"] == text


# ---------------------------------------------------------------------------------------------
# the interventional audit
# ---------------------------------------------------------------------------------------------


def test_interventional_audit_passes_at_reset_on_pool_configs():
    env = CausalArenaEnv(**SMALL_INT)
    for k in (0, 57, 181):
        _, info = env.reset(seed=0, options={"instance": k})
        assert info["interventional_audit"] == {"passed": True, "n_failures": 0, "checks": {}}
    assert not env.audit_failures
    _, info = CausalArenaEnv(**SMALL).reset(seed=0)
    assert info["interventional_audit"] is None


def corrupted(task: ArenaTask) -> ArenaDataset:
    """The split with one target's child reset to its counterfactual on the target's rows."""
    from causal_gym.envs.arena.protocol import counterfactual_rows

    dataset, graph = task.dataset, task.scm.graph
    target = next(t for t in dataset.meta["target_pool"] if graph[t].any())
    child = int(np.flatnonzero(graph[target])[0])
    data = np.array(dataset.data)
    rows = dataset.mask[:, target] & ~dataset.mask[:, child]
    data[rows, child] = counterfactual_rows(task.scm, dataset)[rows, child]
    return ArenaDataset(data, dataset.mask, dataset.targets, dataset.regime, dataset.true_adjacency, dataset.meta)


def test_interventional_audit_fails_on_a_corrupted_split_and_the_env_counts_it(monkeypatch):
    tasks = (load_task(unit, "obs+int", 0, 80, 40) for unit in instance_list("synthetic", 10, "obs+int"))
    task = next(t for t in tasks if any(t.scm.graph[p].any() for p in t.dataset.meta["target_pool"]))
    assert audit_split(task.scm, task.dataset).passed
    broken = corrupted(task)
    audit = audit_split(task.scm, broken)
    assert audit.reasons == ("descendants_regenerated",)
    mask = np.array(task.dataset.mask)
    mask[0, next(j for j in range(10) if j not in task.dataset.meta["target_pool"])] = True
    relabelled = ArenaDataset(task.dataset.data, mask, tuple(tuple(np.flatnonzero(r).tolist()) for r in mask),
                              task.dataset.regime, task.dataset.true_adjacency, task.dataset.meta)
    assert "mask_consistent" in audit_split(task.scm, relabelled).reasons

    bad_task = ArenaTask(task.instance, broken, task.scm, task.variables, task.factors, audit)
    monkeypatch.setattr(source_module, "load_task", lambda *args: bad_task)
    env = CausalArenaEnv(**SMALL_INT)
    _, info = env.reset(seed=0, options={"instance": 0})
    summary = info["interventional_audit"]
    assert not summary["passed"] and summary["n_failures"] == 1 and summary["checks"]["descendants_regenerated"] >= 1
    env.reset(seed=0, options={"instance": 0})
    assert env.audit_failures["descendants_regenerated"] == 2 * summary["checks"]["descendants_regenerated"]
    _, _, _, _, final = env.step(np.zeros((10, 10), dtype=np.int8))
    assert not final["interventional_audit_details"]["passed"] and final["interventional_audit_details"]["failures"]


# ---------------------------------------------------------------------------------------------
# reproduce arena --quick
# ---------------------------------------------------------------------------------------------


def test_reproduce_quick_on_two_families(tmp_path, capsys):
    from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES

    path = tmp_path / "arena.json"
    argv = ["--quick", "--families", "chain,layered", "--methods", "pc,gies_fast,random_regress", "--n-obs", "150",
            "--n-int", "50", "--scenarios", "cobb_douglas_firm", "--quiet", "--json", str(path),
            "--out", str(tmp_path / "stores")]
    output = reproduce.main(argv, prog="causal-gym reproduce arena", runner=run_plan)
    printed = capsys.readouterr().out
    assert "paper Table 9" in printed and "Pairwise win rates" in printed and "Grounded scenarios" in printed
    rows = json.loads(path.read_text())["rows"]
    # 2 configurations x (3 obs methods + GIES on obs+int) + 1 formula scenario x 3 obs methods; no
    # obs+int cells for the methods without intervention support (as in the paper)
    assert len(rows) == 2 * 4 + 3 == len(output["rows"]) == sum(output["plan"].values())
    assert {(r["method"], r["protocol"], r["status"]) for r in rows if r["source"] == "synthetic"} == {
        ("pc", "obs", "ok"), ("gies_fast", "obs", "ok"), ("random_regress", "obs", "ok"), ("gies_fast", "obs+int", "ok")}
    assert {r["graph_family"] for r in rows if r["source"] == "synthetic"} == {"chain", "layered"}
    assert all(audit["passed"] for audit in output["audits"].values()) and len(output["audits"]) == 2

    # the chain configuration's PC row is the directed F1 of PC's answer played on the env by hand
    env = gym.make("CausalArena-synthetic-v0", d=10, split="obs", replicate=0, n_obs=150)
    obs, _ = env.reset(seed=0, options={"split": "test", "instance": GRAPH_FAMILIES.index("chain") * 20})
    real = np.flatnonzero(obs["variables"])
    table = obs["data"][:, real]
    answer = np.zeros((len(obs["variables"]),) * 2, dtype=np.int8)
    answer[np.ix_(real, real)] = run("pc", (table - table.mean(axis=0)) / table.std(axis=0)).graph
    _, reward, _, _, info = env.step(answer)
    row = next(r for r in rows if r["graph_family"] == "chain" and r["method"] == "pc" and r["protocol"] == "obs")
    assert row["f1"] == pytest.approx(reward) == pytest.approx(info["scores"]["f1"])
    scored = [r["f1"] for r in rows if r["source"] == "synthetic" and r["method"] == "pc" and r["protocol"] == "obs"]
    assert output["by_d"]["pc/obs"]["10"]["f1"] == pytest.approx(np.mean(scored))
    again = reproduce.main(argv, prog="causal-gym reproduce arena", runner=run_plan)  # resumed: every unit from the stores
    assert again["rows"] == output["rows"]
    for row in (r for r in rows if r["source"] == "synthetic"):  # the slice labels are the pool's schedule
        slot = pool_slot(int(row["unit"].rsplit("-", 1)[1]))
        assert (row["graph_family"], row["root_dependency"], row["stressors"]) == (
            slot.graph_family, slot.root_dependency, list(slot.stressors))


def _row(unit, f1, stressors, root, replicate=0, status="ok", protocol="obs"):
    from causal_gym.envs.arena.scoring import METRICS

    metrics = {m: (f1 if m == "f1" else 1.0) if status == "ok" else None for m in METRICS}
    return {"method": "pc", "unit": unit, "source": "synthetic", "protocol": protocol, "replicate": replicate,
            "d": 10, "status": status, "cyclic": False, "runtime": 0.1, "graph_family": "chain",
            "root_dependency": root, "stressors": list(stressors), **metrics}


def test_root_and_difficulty_slices_average_replicates_and_count_a_paired_case_in_both_columns(capsys):
    rows = [_row("u1", 0.2, (), "independent"), _row("u1", 0.4, (), "independent", replicate=1),
            _row("u2", 0.6, ("outliers", "weak_signal"), "common_factor"),
            _row("u3", None, ("outliers",), "independent", status="failed"),
            _row("u2", 0.9, ("outliers", "weak_signal"), "common_factor", protocol="obs+int")]
    summary = reproduce.summarize_rows(rows, ["pc"])
    def cells(key):
        return {c["category"]: (round(c["mean"], 12), c["n"], c["n_missing"]) for c in summary[key]}

    assert cells("by_component") == {"baseline": (0.3, 1, 0), "outliers": (0.6, 1, 1), "weak_signal": (0.6, 1, 0)}
    assert cells("by_root") == {"independent": (0.3, 1, 1), "common_factor": (0.6, 1, 0)}
    assert cells("by_component_int") == {"outliers": (0.9, 1, 0), "weak_signal": (0.9, 1, 0)}
    reproduce.print_tables(summary, ["pc"], {})
    printed = capsys.readouterr().out
    heading = "Synthetic obs: directed F1 by difficulty component, ours (paper Table 11"
    table = printed.split(heading, 1)[1].split("\n\n", 1)[0].splitlines()
    # the paper's column order, only the columns that have units; PC's outlier cell next to the paper's 0.23
    assert table[1].split() == ["method", "baseline", "outliers", "weak_signal"]
    assert table[2].split() == ["PC", "0.30", "(0.33)", "0.60", "(0.23)", "0.60", "(0.31)"]
    assert "by root dependency, ours (paper Table 10" in printed



def test_the_papers_pretrained_rows_print_beside_an_amortized_method_only(capsys):
    # GES, not a graphical-search method, so no exposure check (which needs the units' factor tags)
    rows = [{**_row("u1", 0.5, (), "independent"), "method": method} for method in ("ges_fast", "alternet")]
    reproduce.print_tables(reproduce.summarize_rows(rows, ["ges_fast", "alternet"]), ["ges_fast", "alternet"], {})
    printed = capsys.readouterr().out
    block = printed.split("the paper's pretrained rows (Table 9), obs / obs+int:", 1)[1].splitlines()
    # the paper's Table 9 at d = 10: FoundCause 0.67 obs only, TabCausal 0.56 / 0.58
    assert block[1].split() == ["Arrow", "(paper)", "0.45", "/", "-"]
    assert ["FoundCause", "(paper)", "0.67", "/", "-"] in [line.split() for line in block[1:8]]
    assert ["TabCausal", "(paper)", "0.56", "/", "0.58"] in [line.split() for line in block[1:8]]
    reproduce.print_tables(reproduce.summarize_rows(rows[:1], ["ges_fast"]), ["ges_fast"], {})
    assert "pretrained rows" not in capsys.readouterr().out

@pytest.mark.parametrize("method", ["ges_fast", "random_regress", "xges"])
def test_method_agent_under_the_runner_matches_direct_discovery_on_z_scored_columns(tmp_path, method):
    from causal_gym import discovery
    from causal_gym.eval import RunConfig, RunStore, run

    config = RunConfig(env_ids=("CausalArena-synthetic-v0",), agent="arena-method", agent_kwargs={"method": method},
                       instances=(0, 1), env_kwargs=SMALL)
    assert run(config, tmp_path / "run", progress=False).complete
    lines = RunStore(tmp_path / "run").episodes()
    assert len(lines) == 2
    for line in lines:  # the same answer built by hand (real columns, z-scored), played directly, gets the reward
        env = gym.make("CausalArena-synthetic-v0", **SMALL)
        obs, _ = env.reset(seed=0, options={"instance": line["instance"]})
        real = np.flatnonzero(obs["variables"])
        table = obs["data"][:, real]
        table = (table - table.mean(axis=0)) / table.std(axis=0)
        answer = np.zeros((len(obs["variables"]),) * 2, dtype=np.int8)
        answer[np.ix_(real, real)] = discovery.run(method, table).graph
        _, reward, terminated, _, _ = env.step(answer)
        assert terminated and line["reward"] == pytest.approx(reward)
        assert line["usage"]["method"] == method and line["usage"]["standardized"] is True
        assert 0 <= line["usage"]["method_cpu_seconds"] and 0 <= line["usage"]["method_seconds"] <= line["wall_time"]
        # the numerical warnings are the direct run's, recorded per unit instead of printed
        assert line["usage"]["numerical_warnings"] == discovery.run(method, table).warnings


def _texts_of(value) -> str:
    """Every string inside an observation or info, joined (what an agent can read)."""
    if isinstance(value, dict):
        return " ".join(_texts_of(k) + " " + _texts_of(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_texts_of(v) for v in value)
    return value if isinstance(value, str) else ""


def _play_tools(env: CausalArenaToolEnv, instance: int) -> tuple[str, dict]:
    """Reset and call every text tool once; all the text the agent saw before the end, and the final info."""
    obs, info = env.reset(seed=0, options={"instance": instance})
    seen = [_texts_of(obs), _texts_of(info)]
    for name, arguments in (("summarize", {}), ("fit_parents", {"x": "X0", "cond": ["X1", "X2"]}),
                            ("probe_direction", {"x": "X0", "y": "X1"}), ("run_algorithm", {"algorithm": "E"}),
                            ("ci_test", {"x": "X0", "y": "X1", "test": "fisherz"})):
        obs, _, _, _, info = env.step(act(env, name, **arguments))
        seen += [_texts_of(obs), _texts_of(info)]
    *_, final = env.step(act(env, "submit"))
    return " ".join(seen), final


def test_numeric_view_shows_no_card_text_and_semantic_view_shows_no_edges():
    """The default (paper) view names nothing of the card but the open instance's unit (a public card
    cannot be sealed); the semantic view adds names, units and definitions and still no edge, rationale,
    equation, law or role (the card is the independent reference)."""
    index = 1
    card = list(SEMANTIC_SCENARIOS.values())[index]
    numeric, final = _play_tools(CausalArenaToolEnv(source="semantic", menu=FAST_MENU, **SMALL), index)
    assert final["view"] == "numeric" and final["unit"] == f"semantic/{card['name']}"
    assert numeric.count(final["unit"]) == 1  # the reset info's "instance" entry names the open unit, once
    numeric = numeric.replace(final["unit"], "")
    words = {v["name"] for v in card["variables"]} | {v["definition"] for v in card["variables"]}
    assert not [word for word in words if word in numeric]
    assert card["name"] not in numeric and card["description"] not in numeric

    semantic, final = _play_tools(CausalArenaToolEnv(source="semantic", describe_variables=True, menu=FAST_MENU,
                                                     **SMALL), index)
    assert final["view"] == "semantic"
    for variable in card["variables"]:
        assert f"{variable['name']} [{variable['unit']}] {variable['definition']}" in semantic
    hidden = [e["rationale"] for e in card["edges"]]
    hidden += [v[key] for v in card["variables"] for key in ("equation", "law", "intervention") if v.get(key)]
    assert not [text for text in hidden if text in semantic]
    assert not any(f" {role}" in semantic for role in ("readout", "formula", "instrument"))
    # the start message maps slots to names; no pair of named variables appears as an edge text
    names = [v["name"] for v in card["variables"]]
    assert not [(a, b) for a in names for b in names if f"{a} -> {b}" in semantic or f"{a}->{b}" in semantic]


@pytest.mark.parametrize("source", ["formula", "semantic"])
def test_pc_answers_on_every_grounded_card(source):
    """Exact linear identities (accounting balances, sums of formula nodes) make some Fisher-z blocks
    singular; PC must still answer every card (causal-learn's PC raises on some of them)."""
    from causal_gym.envs.arena.baselines import MethodAgent
    from causal_gym.envs.arena.catalogue import instance_list

    env = gym.make(f"CausalArena-{source}-v0", split="obs", replicate=0, n_obs=300)
    agent = MethodAgent("pc")
    for k in range(len(instance_list(source, None, "obs"))):
        obs, info = env.reset(seed=0, options={"split": "test", "instance": k})
        _, _, terminated, _, final = env.step(agent.act(obs, info))
        assert terminated and final["status"] == "ok", (k, final.get("error"))


_PAPER_ROW_NAMES = {"random_regress": "RandomRegress", "gies": "GIES", "pc": "PC", "direct_lingam": "LiNGAM",
                    "dagma": "DAGMA", "notears": "NOTEARS", "notears_mlp": "NOTEARS-MLP", "das": "DAS", "sdcd": "SDCD",
                    "igsp": "IGSP", "cdis": "CDIS"}
"""Our method -> its row name in the paper's tables."""


def _paper_slice_table(number: int, title: str = "Compact synthetic") -> tuple[list[str], dict[str, list[tuple]]]:
    """Header and rows of the paper's Table ``number`` ('a/b' cells: Obs./Obs+int F1 in Tables 8-11,
    F1/SHD in Table 18), read from the seed text beside the repository (../shared/seeds)."""
    from pathlib import Path

    seeds = Path(__file__).resolve().parents[2] / "shared" / "seeds"
    texts = [p.read_text(encoding="utf-8") for p in sorted(seeds.glob("*.txt"))] if seeds.is_dir() else []
    text = next((t for t in texts if "CausalArena" in t and f"Table {number}: {title}" in t), None)
    if text is None:
        pytest.skip("the CausalArena paper's text (../shared/seeds) is not beside the repository")
    lines = text.split(f"Table {number}: {title}", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Method\t"))
    header = lines[start].split("\t")[1:]
    rows = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        name, *cells = line.split("\t")
        parsed = []
        for cell in cells:
            obs, interventional = cell.split("/")
            second = None if interventional == "–" else float(interventional.strip("$"))
            parsed.append((float(obs.strip("$")), second))
        rows[name] = parsed
    return header, rows


@pytest.mark.parametrize("number, table, order", [
    (8, reproduce.PAPER_TABLE8, reproduce._FAMILY_ORDER), (9, reproduce.PAPER_TABLE9, reproduce._DIMS),
    (10, reproduce.PAPER_TABLE10, reproduce._ROOT_ORDER), (11, reproduce.PAPER_TABLE11, reproduce._COMPONENT_ORDER)])
def test_the_paper_tables_printed_beside_ours_are_the_papers_cells(number, table, order):
    header, rows = _paper_slice_table(number)
    aliases = {"correlated_normal": "common_factor", "independent_roots": "independent",
               "random_covariance_normal": "random_covariance", "dense_local_modules": "dense_local_module"}
    columns = [h.lower().replace("–", "_").replace("-", "_").replace(" ", "_") for h in header]
    assert [aliases.get(c, c) for c in columns] == [str(c) for c in order]  # the same columns, in the same order
    assert set(table) == set(_PAPER_ROW_NAMES)
    for method, cells in table.items():
        assert [cells[column] for column in order] == rows[_PAPER_ROW_NAMES[method]], method


def test_the_sample_size_suite_plays_each_n_as_its_own_protocol(tmp_path, capsys):
    from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES

    argv = ["--full", "--sample-sizes", "60,120", "--families", "chain", "--instances", "1", "--dims", "10",
            "--methods", "pc,random_regress", "--replicates", "1", "--quiet", "--out", str(tmp_path / "stores")]
    output = reproduce.main(argv, prog="causal-gym reproduce arena", runner=run_plan)
    rows = output["rows"]
    assert sorted((r["method"], r["protocol"]) for r in rows) == [
        ("pc", "obs-n120"), ("pc", "obs-n60"), ("random_regress", "obs-n120"), ("random_regress", "obs-n60")]
    assert output["by_d"] == {} and "formula" not in output["plan"]  # no main-split cells, no grounded units
    for n in (60, 120):  # each cell is PC's answer on an n-row obs split of the same configuration
        env = gym.make("CausalArena-synthetic-v0", d=10, split="obs", replicate=0, n_obs=n)
        obs, info = env.reset(seed=0, options={"split": "test", "instance": GRAPH_FAMILIES.index("chain") * 20})
        real = np.flatnonzero(obs["variables"])
        table = obs["data"][:, real]
        assert table.shape[0] == n
        answer = np.zeros((len(obs["variables"]),) * 2, dtype=np.int8)
        answer[np.ix_(real, real)] = run("pc", (table - table.mean(axis=0)) / table.std(axis=0)).graph
        _, reward, _, _, _ = env.step(answer)
        row = next(r for r in rows if r["method"] == "pc" and r["protocol"] == f"obs-n{n}")
        assert row["f1"] == pytest.approx(reward) == pytest.approx(output["by_n"]["pc/10"][str(n)]["f1"])
    assert "Sample-size suite" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        reproduce.main([*argv, "--splits", "obs+int"], runner=run_plan)


def test_the_paper_sample_size_table_printed_beside_ours_is_table_18():
    header, rows = _paper_slice_table(18, "Complete sample-size")
    assert [int(h.strip("$").split("=")[1]) for h in header] == list(reproduce._SIZES)
    assert set(reproduce.PAPER_TABLE18) == set(_PAPER_ROW_NAMES)
    for method, cells in reproduce.PAPER_TABLE18.items():
        assert [cells[n] for n in reproduce._SIZES] == rows[_PAPER_ROW_NAMES[method]], method
