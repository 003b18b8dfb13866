"""NOTEARS-MLP (method ``notears_mlp``, gcastle's NotearsNonlinear driven by us): recovery on small
nonlinear SCMs, a DAG always, the stopping rules, and no side effects on the caller's process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from causal_gym.discovery import run
from causal_gym.discovery.notears_mlp import _cut_cycles
from causal_gym.graphs import is_dag, skeleton

pytest.importorskip("torch")
pytest.importorskip("castle")


def standardized(*columns: np.ndarray) -> np.ndarray:
    x = np.column_stack(columns)
    return (x - x.mean(axis=0)) / x.std(axis=0)


def test_recovers_a_nonlinear_chain():
    # x0 -> x1 -> x2 through tanh and sin: neither edge is linear, both are strong
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=500)
    x1 = 2 * np.tanh(2 * x0) + 0.4 * rng.normal(size=500)
    x2 = 2 * np.sin(x1) + 0.4 * rng.normal(size=500)
    result = run("notears_mlp", standardized(x0, x1, x2))
    graph = result.graph
    assert is_dag(graph)
    truth = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert (skeleton(graph) >= skeleton(truth)).all()  # every true adjacency found
    assert result.extras["stopped"] == "h_tol" and result.extras["cycle_edges_cut"] == 0
    # the edge scores are the first-layer norms behind the graph
    assert ((result.extras["edge_scores"] > 0.3) == (graph == 1)).all()


def test_independent_variables_give_no_edges():
    x = np.random.default_rng(1).normal(size=(300, 3))
    assert run("notears_mlp", x).graph.sum() == 0


def test_stopping_rules_and_seeded_start():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 3))
    x[:, 1] += 2 * np.tanh(2 * x[:, 0])
    timed = run("notears_mlp", x, max_seconds=1e-9)  # past the budget after the first step
    assert timed.extras["stopped"] == "max_seconds" and timed.extras["iterations"] == 1
    assert is_dag(timed.graph)
    capped = run("notears_mlp", x, max_iter=1)
    assert capped.extras["stopped"] == "max_iter" and capped.extras["iterations"] == 1
    # same seed, same single step: the same weights whichever rule stopped it
    np.testing.assert_array_equal(timed.extras["edge_scores"], capped.extras["edge_scores"])
    with pytest.raises(ValueError, match="max_seconds"):
        run("notears_mlp", x, max_seconds=0)
    with pytest.raises(ValueError, match="hidden"):
        run("notears_mlp", x, hidden=0)


def test_cycle_cutting_drops_the_weakest_edge_of_each_cycle():
    w = np.zeros((4, 4))
    w[0, 1], w[1, 0] = 0.5, 0.9  # a two-cycle: 0 -> 1 is the weaker
    w[1, 2], w[2, 3], w[3, 1] = 0.8, 0.4, 0.7  # a three-cycle: 2 -> 3 is the weakest
    assert _cut_cycles(w) == 2
    expected = np.zeros((4, 4))
    expected[1, 0], expected[1, 2], expected[3, 1] = 0.9, 0.8, 0.7
    np.testing.assert_array_equal(w, expected)


def test_no_side_effects_on_torch_or_logging():
    # gcastle sets torch's default dtype to double and configures the root logger at import; a fresh
    # interpreter checks that neither leaks out of a call, and that the global torch RNG is untouched
    code = (
        "import logging, numpy as np, torch\n"
        "from causal_gym.discovery import run\n"
        "state = torch.get_rng_state()\n"
        "x = np.random.default_rng(0).normal(size=(100, 3))\n"
        "run('notears_mlp', x, max_iter=1)\n"
        "print(torch.get_default_dtype(), logging.getLogger().handlers, bool(torch.equal(state, torch.get_rng_state())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "torch.float32 [] True"
    assert "INFO" not in out.stderr
