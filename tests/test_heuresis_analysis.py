"""Heuresis analyses: hand-made records and graphs with hand-computed answers, invariances, and one
real short episode scripted through the env where the answers are known by construction."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import entropy

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.envs.heuresis.analysis import (
    MergeEpisode,
    algorithm_outputs,
    best_k_merge,
    distinct_algorithms,
    k_vote_merge,
    merge_star,
    mutual_information_bits,
    shortcut,
    shortcut_rate,
    tool_choice_mutual_information,
    unsupported_restorations,
)
from causal_gym.envs.heuresis.env import load_instance
from causal_gym.harness.record import CallRecord
from causal_gym.harness.working_graph import format_edge_list
from graph_builders import graph


def algo_call(step: int, label: str, g: np.ndarray | None, ok: bool = True) -> dict:
    data = {} if g is None else {"algorithm": label, "edges": format_edge_list(g)}
    return {"step": step, "tool": "run_algorithm", "arguments": {"algorithm": label}, "ok": ok,
            "result_text": "", "data": data, "cost": {}}


def final_info(completed: np.ndarray, slots: dict, family: str = "lg") -> dict:
    return {"completed_graph": completed,
            "scores": {"algorithm_slots": slots, "instance": {"family": family, "split": "test", "index": 0}}}


SLOTS = {"A": "pc_fisherz", "B": "pc_kci", "C": "ges", "D": "fci", "E": "anm", "F": "notears", "G": "direct_lingam"}
PC = graph(4, undirected=[(0, 1), (1, 2), (2, 3)])  # Meek-closed, as a completed graph is


# -- shortcut and distinct algorithms ---------------------------------------------------------------


def test_shortcut_no_pc_variant_called():
    record = [algo_call(1, "C", PC), algo_call(2, "D", PC)]
    assert not shortcut(record, final_info(PC, SLOTS))


@pytest.mark.parametrize(
    ("final", "expected"),
    [
        (PC, True),  # submitted verbatim
        (graph(4, undirected=[(0, 1), (1, 2)]), True),  # one pair dropped
        (graph(4, undirected=[(0, 1)]), False),  # two pairs dropped
        (graph(4, undirected=[(0, 1), (1, 2), (2, 3), (0, 3)]), True),  # one pair added
        (graph(4, directed=[(1, 0)], undirected=[(1, 2), (2, 3)]), True),  # one pair oriented
        (graph(4, directed=[(1, 0)], undirected=[(2, 3)]), False),  # oriented + dropped
    ],
)
def test_shortcut_counts_shd_to_first_pc_output(final, expected):
    record = [algo_call(1, "C", graph(4)), algo_call(2, "B", PC)]
    assert shortcut(record, final_info(final, SLOTS)) is expected


def test_shortcut_uses_first_pc_variant_and_ignores_refused_calls():
    other = graph(4, undirected=[(0, 2), (1, 3)])
    # refused call to A (no output), then B (pc_kci) first, then A (pc_fisherz) with another output
    record = [algo_call(1, "A", None, ok=False), algo_call(2, "B", PC), algo_call(3, "A", other)]
    assert shortcut(record, final_info(PC, SLOTS))
    assert not shortcut(record, final_info(other, SLOTS))


def test_shortcut_compares_with_meek_completed_pc_output():
    # 0 -> 1 -- 2, 1 -- 3, with 0, 2, 3 pairwise non-adjacent: R1 orients 1 -> 2 and 1 -> 3.
    pc = graph(4, directed=[(0, 1)], undirected=[(1, 2), (1, 3)])
    completed = graph(4, directed=[(0, 1), (1, 2), (1, 3)])
    record = [algo_call(1, "A", pc)]
    assert shortcut(record, final_info(completed, SLOTS))


def test_shortcut_reads_call_records_and_dicts_alike():
    entry = algo_call(1, "B", PC)
    record = [CallRecord(**entry)]
    assert shortcut(record, final_info(PC, SLOTS)) and shortcut([entry], final_info(PC, SLOTS))


def test_shortcut_rate_and_errors():
    yes = ([algo_call(1, "A", PC)], final_info(PC, SLOTS))
    no = ([algo_call(1, "C", PC)], final_info(PC, SLOTS))
    assert shortcut_rate([yes, no, no, yes]) == 0.5
    with pytest.raises(ValueError, match="at least one episode"):
        shortcut_rate([])
    with pytest.raises(ValueError, match="algorithm_slots"):
        shortcut([algo_call(1, "A", PC)], {"completed_graph": PC})
    with pytest.raises(ValueError, match="not in final_info"):
        shortcut([algo_call(1, "Z", PC)], final_info(PC, SLOTS))


def test_distinct_algorithms():
    record = [algo_call(1, "A", PC), algo_call(2, "C", PC), algo_call(3, "A", PC), algo_call(4, "D", None, ok=False),
              {"step": 5, "tool": "submit", "ok": True, "data": {}}]
    assert distinct_algorithms(record) == 2
    assert distinct_algorithms([]) == 0


def test_algorithm_outputs_maps_labels_in_first_call_order():
    g = graph(4, undirected=[(0, 3)])
    record = [algo_call(1, "D", g), algo_call(2, "B", PC), algo_call(3, "D", g)]
    outputs = algorithm_outputs(record, final_info(PC, SLOTS))
    assert [name for name, _ in outputs] == ["fci", "pc_kci"]
    np.testing.assert_array_equal(outputs[1][1], PC)


# -- tool-choice mutual information ---------------------------------------------------------------


def tool_record(tools: list[str]) -> list[dict]:
    return [{"step": k, "tool": t, "ok": True, "data": {}} for k, t in enumerate(tools, 1)]


def test_mutual_information_hand_table():
    # counts: lg -> (a 2, b 2), wild -> (a 4, b 0); I = H(T) - H(T|F) = H(3/4) - 1/2 = 1.5 - 0.75 log2 3
    episodes = [
        (tool_record(["a", "b", "b"]), final_info(PC, SLOTS, "lg")),
        (tool_record(["a"]), final_info(PC, SLOTS, "lg")),
        (tool_record(["a", "a", "a", "a"]), final_info(PC, SLOTS, "wild")),
    ]
    expected = 1.5 - 0.75 * math.log2(3)
    assert tool_choice_mutual_information(episodes) == pytest.approx(expected, abs=1e-12)
    assert mutual_information_bits(["lg"] * 4 + ["wild"] * 4, list("abbaaaaa")) == pytest.approx(expected, abs=1e-12)


def test_mutual_information_skips_calls_naming_no_tool():
    record = tool_record(["a", "b"]) + [{"step": 3, "tool": None, "ok": False, "data": {}}]
    episodes = [(record, final_info(PC, SLOTS, "lg")), (tool_record(["a", "b"]), final_info(PC, SLOTS, "wild"))]
    assert tool_choice_mutual_information(episodes) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_mutual_information_zero_for_product_table(row_weights, col_weights):
    xs, ys = [], []
    for i, wi in enumerate(row_weights):
        for j, wj in enumerate(col_weights):
            xs += [f"f{i}"] * (wi * wj)
            ys += [f"t{j}"] * (wi * wj)
    assert mutual_information_bits(xs, ys) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.permutations(range(4)))
def test_mutual_information_deterministic_equals_entropy_and_is_symmetric(families, relabel):
    tools = [f"tool{relabel[f]}" for f in families]
    h = entropy(np.bincount(families), base=2)
    assert mutual_information_bits(families, tools) == pytest.approx(h, abs=1e-12)
    assert mutual_information_bits(tools, families) == pytest.approx(h, abs=1e-12)


def test_mutual_information_errors():
    with pytest.raises(ValueError, match="pair up"):
        mutual_information_bits(["a"], [])
    with pytest.raises(ValueError, match="at least one pair"):
        mutual_information_bits([], [])


# -- k-vote merge ------------------------------------------------------------------------------------

TRUTH = graph(4, directed=[(0, 1), (1, 2), (2, 3)])
VOTERS = [
    graph(4, directed=[(0, 1)], undirected=[(1, 2), (0, 3)]),
    graph(4, directed=[(1, 0), (3, 2)], undirected=[(0, 3)]),
    graph(4, undirected=[(0, 1), (1, 2)]),
]  # votes: 01: 3, 12: 2, 03: 2, 23: 1


def test_k_vote_merge_hand_counts():
    np.testing.assert_array_equal(k_vote_merge(VOTERS, 1), graph(4, undirected=[(0, 1), (1, 2), (0, 3), (2, 3)]))
    np.testing.assert_array_equal(k_vote_merge(VOTERS, 2), graph(4, undirected=[(0, 1), (1, 2), (0, 3)]))
    np.testing.assert_array_equal(k_vote_merge(VOTERS, 3), graph(4, undirected=[(0, 1)]))
    np.testing.assert_array_equal(k_vote_merge(VOTERS, 4), graph(4))


def test_k_vote_merge_with_base_keeps_its_orientations():
    base = graph(4, directed=[(1, 0)])
    merged = k_vote_merge(VOTERS, 2, base=base)
    np.testing.assert_array_equal(merged, graph(4, directed=[(1, 0)], undirected=[(1, 2), (0, 3)]))
    np.testing.assert_array_equal(k_vote_merge([], 1, base=base), base)
    with pytest.raises(ValueError, match="at least one graph or a base"):
        k_vote_merge([], 1)
    with pytest.raises(ValueError, match="k must be >= 1"):
        k_vote_merge(VOTERS, 0)
    with pytest.raises(ValueError, match="shape"):
        k_vote_merge([graph(4), graph(3)], 1)


def test_merge_star_hand_f1():
    # k=1: tp 3 fp 1 -> F1 6/7; k=2: tp 2 fp 1 fn 1 -> 2/3; k=3: tp 1 fn 2 -> 1/2
    assert merge_star(VOTERS, TRUTH) == pytest.approx({1: 6 / 7, 2: 2 / 3, 3: 0.5})
    assert merge_star(VOTERS, TRUTH, k_values=[3]) == pytest.approx({3: 0.5})
    # with PC-KCI's 1 -> 2 as base, k=3 adds 0 -- 1: tp 2, fn 1 -> F1 4/5
    assert merge_star(VOTERS, TRUTH, [3], base=graph(4, directed=[(1, 2)])) == pytest.approx({3: 0.8})


def test_best_k_merge_hand_means_and_ties():
    second = [graph(4, undirected=[(0, 1), (0, 2)])] * 2  # k=1,2: tp 1 fp 1 fn 2 -> F1 0.4; k=3: empty -> 0
    k, f1 = best_k_merge([(VOTERS, TRUTH), MergeEpisode(second, TRUTH)])
    assert k == 1 and f1 == pytest.approx((6 / 7 + 0.4) / 2)
    truth = graph(4, directed=[(0, 1)])
    noisy = [graph(4, undirected=[(0, 1), (2, 3)]), graph(4, undirected=[(0, 1), (0, 2)]), graph(4, undirected=[(0, 1)])]
    assert best_k_merge([(noisy, truth)]) == (2, pytest.approx(1.0))  # k=2 and k=3 tie at 1.0
    with pytest.raises(ValueError, match="at least one episode"):
        best_k_merge([])


def test_unsupported_restorations_hand_count():
    truth = graph(4, directed=[(0, 1), (1, 2), (2, 3), (0, 3)])
    pc = graph(4, undirected=[(0, 1)])
    submitted = graph(4, directed=[(0, 1), (1, 2), (3, 2)], undirected=[(0, 3), (0, 2)])
    # restored true edges: 12, 23, 03; 12 is proposed (reversed marks still count); 02 is not true
    assert unsupported_restorations(submitted, pc, [graph(4, directed=[(2, 1)])], truth) == 2
    assert unsupported_restorations(submitted, pc, [], truth) == 3
    assert unsupported_restorations(pc, pc, [], truth) == 0


# -- a real Heuresis episode ---------------------------------------------------------------------------

ENV_KW = {"d": 5, "n": 200}
SEED, OPTIONS = 0, {"instance": 0}


def play(calls: list[str], submit_edges) -> tuple:
    """Run the labels in ``calls``, then submit ``submit_edges(outputs)``; return (record, final info)."""
    env = gym.make("Heuresis-lg-v0", **ENV_KW)
    env.reset(seed=SEED, options=OPTIONS)
    u = env.unwrapped
    outputs = {}
    for label in calls:
        *_, info = env.step(u.parse_tool_call("run_algorithm", {"algorithm": label}))
        outputs[label] = info["result"]["edges"]
    *_, terminated, _, info = env.step(u.parse_tool_call("submit", {"edges": submit_edges(outputs)}))
    assert terminated
    return list(u.record()), info


@pytest.fixture(scope="module")
def slots() -> dict:
    return play([], lambda _: "none")[1]["scores"]["algorithm_slots"]


def test_real_episode_submitting_pc_kci_output_is_a_shortcut(slots):
    label = {name: lab for lab, name in slots.items()}
    pc, ges = label["pc_kci"], label["ges"]
    record, info = play([ges, pc], lambda out: out[pc])
    assert shortcut(record, info) and distinct_algorithms(record) == 2
    names = [name for name, _ in algorithm_outputs(record, info)]
    assert names == ["ges", "pc_kci"]
    instance, reference = load_instance("lg", "test", 0, 5, 200, 2.0)
    np.testing.assert_array_equal(algorithm_outputs(record, info)[1][1], reference.graph)
    # the agent's submission restores nothing PC-KCI deleted
    assert unsupported_restorations(info["submitted_graph"], reference.graph, [], instance.hidden.dag) == 0


def test_real_episode_without_pc_or_far_from_it_is_not_a_shortcut(slots):
    label = {name: lab for lab, name in slots.items()}
    ges, fci, pc = label["ges"], label["fci"], label["pc_fisherz"]
    record, info = play([ges, fci], lambda out: out[fci])
    assert not shortcut(record, info) and distinct_algorithms(record) == 2

    def two_edges_dropped(out: dict) -> str:
        edges = out[pc].split(", ")
        assert len(edges) >= 2, "the construction needs a PC output with two edges"
        return ", ".join(edges[2:]) or "none"

    record, info = play([pc, pc], two_edges_dropped)
    assert not shortcut(record, info) and distinct_algorithms(record) == 1
