"""Algorithm menus of any length (:mod:`causal_gym.harness.menu`): labels, validation, and menus of
3 and 9 entries played end to end in Heuresis and CausalArena's tool mode -- the schema's choices,
every label's output against the method run directly, unknown labels answered with an error, and
the label -> method map kept out of everything the agent sees before the end."""

from __future__ import annotations

import json
import re
import string
from typing import Any

import numpy as np
import pytest

from causal_gym.discovery import run
from causal_gym.envs.arena.baselines import WRAPPER_OPTIONS
from causal_gym.envs.arena.tool_env import ARENA_MENU, CausalArenaToolEnv
from causal_gym.envs.heuresis.baselines import AlgorithmAgent
from causal_gym.envs.heuresis.env import HeuresisEnv
from causal_gym.envs.heuresis.references import MENU, router_graph
from causal_gym.envs.heuresis.router import RouterAgent
from causal_gym.eval import rollout
from causal_gym.harness import ToolError, parse_edge_list
from causal_gym.harness.agent import task_spec
from causal_gym.harness.data_tools import data_fields, data_tools
from causal_gym.harness.menu import Menu, MenuEntry, menu_labels

pytestmark = pytest.mark.usefixtures("isolated_cache")

HEURESIS_3 = ("pc_fisherz", "ges", "direct_lingam")  # names of Heuresis MENU entries: a JSON-friendly sub-menu
HEURESIS_9 = Menu((
    MenuEntry("strict_pc", "pc", {"test": "fisherz", "alpha": 0.01}),
    MenuEntry("loose_pc", "pc", {"test": "fisherz", "alpha": 0.1}),
    MENU["pc_fisherz"],
    MENU["ges"],
    MENU["direct_lingam"],
    MENU["fci"],
    MenuEntry("rand_regress", "random_regress"),
    MenuEntry("exact_ges", "ges"),
    MenuEntry("xges_search", "xges"),
))
ARENA_3 = ("pc", "ges_fast", "random_regress")
ARENA_9 = ("pc", "ges", "gies", "fci", "random_regress", "direct_lingam", "ges_fast", "gies_fast", "xges")


# ---------------------------------------------------------------------------------------------
# labels and the menu type
# ---------------------------------------------------------------------------------------------


def test_labels_count_like_spreadsheet_columns():
    letters = tuple(string.ascii_uppercase)
    assert menu_labels(0) == () and menu_labels(7) == tuple("ABCDEFG") and menu_labels(26) == letters
    two = tuple(a + b for a in letters for b in letters)  # AA .. ZZ, in order
    assert menu_labels(26 + 676) == letters + two
    assert menu_labels(703)[-1] == "AAA"
    assert len(set(menu_labels(2000))) == 2000


def test_default_menus_keep_their_seven_labels_and_entries():
    assert MENU.labels == ARENA_MENU.labels == tuple("ABCDEFG")
    assert list(MENU) == ["pc_fisherz", "pc_kci", "fci", "ges", "direct_lingam", "anm", "notears"]
    assert (MENU["ges"].method, dict(MENU["pc_kci"].options)) == ("ges_fast", {"test": "kci", "alpha": 0.05})
    assert list(ARENA_MENU) == ["pc", "ges_fast", "gies_fast", "direct_lingam", "notears", "dagma", "random_regress"]
    assert dict(ARENA_MENU["ges_fast"].options) == {"ridge": 1e-8} and dict(ARENA_MENU["pc"].options) == {}


def test_menu_validates_its_entries_and_a_permutation():
    with pytest.raises(ValueError, match="unknown method"):
        MenuEntry("x", "no_such_method")
    with pytest.raises(ValueError, match="non-empty"):
        MenuEntry("", "pc")
    with pytest.raises(ValueError, match="string keys"):
        MenuEntry("x", "pc", {1: 2})
    with pytest.raises(ValueError, match="at least one"):
        Menu(())
    with pytest.raises(ValueError, match="distinct names"):
        Menu((MenuEntry("a", "pc"), MenuEntry("a", "ges")))
    with pytest.raises(ValueError, match="sequence of method names"):
        Menu.of_methods("pc")
    menu = Menu.of_methods(ARENA_3)
    with pytest.raises(ValueError, match="permutation"):
        menu.slots([0, 0, 1])
    assert menu.slots([1, 2, 0]) == {"A": "ges_fast", "B": "random_regress", "C": "pc"}
    with pytest.raises(TypeError):
        menu["pc"].options["alpha"] = 0.1  # type: ignore[index]  # entries are frozen: menus are shared


def test_run_algorithm_description_counts_the_entries():
    def text(n):
        return data_tools(10, menu_labels(n))[0].description

    assert "a menu of seven causal-discovery algorithms" in text(7) and "labelled A to G;" in text(7)
    assert "a menu of 13 causal-discovery algorithms" in text(13) and "labelled A to AA;" in text(27)
    assert "menu of one causal-discovery algorithm " in text(1) and "labelled A;" in text(1)
    assert data_fields(menu_labels(27))[1].choices == menu_labels(27)


# ---------------------------------------------------------------------------------------------
# menus of 3 and 9 entries, end to end
# ---------------------------------------------------------------------------------------------


def _seen(value: Any) -> str:
    return json.dumps(value, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x))


def _play_every_label(env: Any, seed: int, labels: tuple[str, ...]) -> tuple[list[str], dict[str, str], dict]:
    """Reset, check the schema, run each label (and unknown ones), submit. Returns what the agent saw
    (as JSON texts), each label's edge list and the final info."""
    obs, info = env.reset(seed=seed, options={"instance": 1})
    task = task_spec(env)
    seen = [_seen([task.description, task.tool_specs, task.prompts, task.condition]), _seen([obs, info])]
    schema = next(s["function"] for s in task.tool_specs if s["function"]["name"] == "run_algorithm")
    assert schema["parameters"]["properties"]["algorithm"]["enum"] == list(labels)
    assert env.action_space["algorithm"].n == len(labels)
    count = {3: "three", 9: "nine"}[len(labels)]
    assert f"a menu of {count} causal-discovery algorithms" in schema["description"]
    assert f"labelled A to {labels[-1]};" in schema["description"]
    edges = {}
    for label in labels:
        obs, _, terminated, _, info = env.step(env.parse_tool_call("run_algorithm", {"algorithm": label}))
        assert obs["last_ok"] == 1 and not terminated, obs["last_result"]
        edges[label] = info["result"]["edges"]
        seen.append(_seen([obs, info]))
    for unknown in (menu_labels(len(labels) + 1)[-1], "AA", "a", ""):
        call = env.parse_tool_call("run_algorithm", {"algorithm": unknown})
        assert isinstance(call, ToolError)
        obs, _, terminated, truncated, info = env.step(call)
        assert obs["last_ok"] == 0 and not (terminated or truncated)
        seen.append(_seen([obs, info]))
    *_, final = env.step(env.parse_tool_call("submit", {}))
    return seen, edges, final


def _assert_hidden(seen: list[str], final: dict, slots: dict[str, str], menu: Menu) -> None:
    """No entry name or method name appears (as a word) in anything the agent saw before the end;
    the final info, which reveals the map, shows the search would find them."""
    words = {name for name in menu} | {entry.method for entry in menu.values()}
    for word in words:
        pattern = re.compile(rf"\b{re.escape(word)}\b")
        assert not any(pattern.search(text) for text in seen), word
    assert all(re.search(rf"\b{re.escape(name)}\b", _seen(final)) for name in slots.values())


@pytest.mark.parametrize("menu", [HEURESIS_3, HEURESIS_9], ids=["3", "9"])
def test_heuresis_menu_of_any_length_end_to_end(menu):
    env = HeuresisEnv(family="lg", d=4, n=60, menu=menu, budgets={"algorithm_calls": None}, sandbox="process")
    expected_menu = menu if isinstance(menu, Menu) else Menu(tuple(MENU[name] for name in menu))
    labels = menu_labels(len(expected_menu))
    seen, edges, final = _play_every_label(env, 4, labels)
    slots = final["scores"]["algorithm_slots"]
    assert list(slots) == list(labels) and sorted(slots.values()) == sorted(expected_menu)
    for label in labels:  # each label's output is its entry's method, run directly on the data
        entry = expected_menu[slots[label]]
        graph = run(entry.method, env._data, **entry.options).graph
        np.testing.assert_array_equal(parse_edge_list(edges[label] or "none", 4), graph)
    _assert_hidden(seen, final, slots, expected_menu)
    maps = set()
    for seed in range(8):  # reshuffled per episode
        env.reset(seed=seed)
        *_, final = env.step(env.parse_tool_call("submit", {}))
        maps.add(tuple(final["scores"]["algorithm_slots"].values()))
    assert len(maps) > 1


@pytest.mark.parametrize("methods", [ARENA_3, ARENA_9, ("pc", "alternet", "direct_lingam")],
                         ids=["3", "9", "3-with-amortized"])
def test_arena_menu_of_any_length_end_to_end(methods):
    if "alternet" in methods:
        pytest.importorskip("torch")
    env = CausalArenaToolEnv(n_obs=80, menu=methods, budgets={"algorithm_calls": None}, sandbox="process")
    labels = menu_labels(len(methods))
    seen, edges, final = _play_every_label(env, 2, labels)
    slots, columns = final["algorithm_slots"], final["columns"]
    assert list(slots) == list(labels) and sorted(slots.values()) == sorted(methods)
    data = env._view.task.dataset.data
    for label in labels:  # the method with the arena's documented wrapper defaults, on the dataset's columns
        method = slots[label]
        graph = run(method, data, None, **WRAPPER_OPTIONS.get(method, {})).graph[np.ix_(columns, columns)]
        np.testing.assert_array_equal(parse_edge_list(edges[label] or "none", env.d)[:len(columns), :len(columns)],
                                      graph)
    _assert_hidden(seen, final, slots, Menu.of_methods(methods, WRAPPER_OPTIONS))


def test_heuresis_baselines_read_the_labels_from_the_task():
    # the router runs every entry of a 3-entry menu, then answers as the reference router
    env = HeuresisEnv(family="lg", guided=True, d=5, n=200, menu=HEURESIS_3, sandbox="process")
    agent = RouterAgent(seed=5)
    record = rollout(env, agent, seed=0, options={"instance": 0})
    reference = router_graph(np.array(env._data), 5)
    assert reference.branch == agent.decision["branch"] == "pc_fisherz"
    calls = [c.arguments.get("algorithm") for c in env.record() if c.tool == "run_algorithm"]
    assert calls == ["A", "B", "C"]
    np.testing.assert_array_equal(record.final_info["submitted_graph"], reference.graph)
    nine = HeuresisEnv(family="lg", d=4, n=60, menu=HEURESIS_9, sandbox="process")
    assert rollout(nine, AlgorithmAgent("I"), seed=0, options={"instance": 0}).terminated
    with pytest.raises(ValueError, match=r"unknown algorithm 'D'.*\['A', 'B', 'C'\]"):
        rollout(HeuresisEnv(family="lg", d=4, n=60, menu=HEURESIS_3), AlgorithmAgent("D"), seed=0)
