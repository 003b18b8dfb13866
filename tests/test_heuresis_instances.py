"""Heuresis instances: determinism, disjoint splits, standardisation, the hidden permutation, and
the mechanism families checked against the paper's Appendix C (values restated here, not
imported from the module under test)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from causal_gym.envs.heuresis.families import FAMILIES, family_kinds
from causal_gym.envs.heuresis.instances import (
    MASTER_SEED,
    HeuresisInstance,
    instance_seed,
    make_instance,
    split_size,
)
from causal_gym.graphs import is_dag, mec_dags, skeleton
from causal_gym.scm import SCM, standardize

# Appendix C / the spec's family table, restated independently of families.py:
# family -> {(mechanism, noise): (sigma_low, sigma_high)} for non-root nodes.
SPEC = {
    "lg": {("linear", "gaussian"): (0.5, 2.0)},
    "anm": {("mlp", "gaussian"): (0.5, 1.5)},
    "hetero": {("mlp_hetero", "gaussian"): (1.0, 1.0)},
    "wild": {
        ("linear", "gaussian"): (0.5, 1.5),
        ("mlp", "gaussian"): (0.5, 1.5),
        ("mlp_hetero", "gaussian"): (1.0, 1.0),
        ("quadratic", "gaussian"): (0.15, 0.35),
        ("abs", "gaussian"): (0.15, 0.35),
        ("fourier", "gaussian"): (0.15, 0.35),
        ("linear", "student_t"): (0.5, 1.5),
    },
    "mixed": {
        ("linear", "gaussian"): (0.5, 2.0),
        ("mlp", "gaussian"): (0.5, 1.5),
        ("mlp_hetero", "gaussian"): (1.0, 1.0),
    },
    "gauntlet": {
        (m, "gaussian"): (0.15, 0.40)
        for m in ("piecewise", "sigmoid", "sigmoid_hetero", "quadratic", "abs", "fourier")
    },
}
MAPS = {"piecewise", "sigmoid", "quadratic", "abs", "fourier"}


def _nodes(instance: HeuresisInstance) -> list[tuple[bool, dict]]:
    """(is_root, node record) for every SCM node."""
    scm = json.loads(instance.hidden.scm)
    graph = np.asarray(scm["graph"])
    return [(not graph[:, j].any(), node) for j, node in enumerate(scm["nodes"])]


def test_same_arguments_give_bit_identical_instances():
    a = make_instance("wild", "test", 5, d=8, n=150)
    b = make_instance("wild", "test", 5, d=8, n=150)
    assert a.data.tobytes() == b.data.tobytes()
    assert np.array_equal(a.hidden.dag, b.hidden.dag)
    assert a.hidden.scm == b.hidden.scm
    assert np.array_equal(a.hidden.permutation, b.hidden.permutation)
    assert a.seed == (MASTER_SEED, FAMILIES.index("wild"), 1, 5)


def test_different_indices_families_and_master_seeds_differ():
    base = make_instance("lg", "dev", 0, d=6, n=100)
    for other in (make_instance("lg", "dev", 1, d=6, n=100), make_instance("anm", "dev", 0, d=6, n=100),
                  make_instance("lg", "test", 0, d=6, n=100),
                  make_instance("lg", "dev", 0, d=6, n=100, master_seed=MASTER_SEED + 1)):
        assert not np.array_equal(base.data, other.data)


def test_splits_are_disjoint_by_seed():
    states = {}
    for family in FAMILIES:
        for split, count in (("dev", 100), ("test", 32), ("train", 200)):
            for index in range(count):
                seed = instance_seed(family, split, index)
                state = tuple(np.random.SeedSequence(seed).generate_state(4).tolist())
                assert state not in states, (seed, states.get(state))
                states[state] = seed
    assert len(states) == len(FAMILIES) * 332


def test_split_sizes_and_index_range():
    assert split_size("dev") == 100 and split_size("test") == 32 and split_size("train") is None
    make_instance("lg", "train", 10_000, d=4, n=20)
    for split, index in (("dev", 100), ("test", 32), ("dev", -1)):
        with pytest.raises(ValueError, match="index"):
            make_instance("lg", split, index)
    with pytest.raises(ValueError, match="split"):
        make_instance("lg", "validation", 0)
    with pytest.raises(ValueError, match="family"):
        make_instance("linear", "dev", 0)


@pytest.mark.parametrize("family", FAMILIES)
def test_columns_are_standardised(family):
    inst = make_instance(family, "dev", 3, d=10, n=600)
    assert inst.data.shape == (600, 10) and inst.data.dtype == np.float64
    np.testing.assert_allclose(inst.data.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(inst.data.var(axis=0), 1.0, rtol=1e-12)
    assert not inst.data.flags.writeable


@pytest.mark.parametrize("family", ["lg", "gauntlet", "wild"])
def test_permuted_truth_matches_the_scm(family):
    inst = make_instance(family, "test", 7, d=9, n=300)
    scm = SCM.from_json(inst.hidden.scm)
    perm = inst.hidden.permutation
    assert sorted(perm.tolist()) == list(range(9))
    # The documented recipe: stream 2 of spawn(4) samples the SCM; columns then standardised and permuted.
    sample_stream = np.random.SeedSequence(inst.seed).spawn(4)[2]
    expected = standardize(scm.sample(300, rng=sample_stream))[0][:, perm]
    assert expected.tobytes() == inst.data.tobytes()
    dag = inst.hidden.dag
    for a in range(9):
        for b in range(9):
            assert dag[a, b] == scm.graph[perm[a], perm[b]]
    assert is_dag(dag)
    cpdag = inst.hidden.cpdag
    assert np.array_equal(skeleton(cpdag), skeleton(dag))
    assert any(np.array_equal(member, dag) for member in mec_dags(cpdag))


def test_order_is_hidden():
    # Over many instances, the first column is a root about as often as any column is.
    first_is_root = [not make_instance("lg", "train", i, d=6, n=20).hidden.dag[:, 0].any() for i in range(300)]
    roots = [not make_instance("lg", "train", i, d=6, n=20).hidden.dag[:, 3].any() for i in range(300)]
    assert abs(np.mean(first_is_root) - np.mean(roots)) < 0.15
    assert 0.2 < np.mean(first_is_root) < 0.8


@pytest.mark.parametrize("family", FAMILIES)
def test_mechanisms_and_noise_scales_follow_appendix_c(family):
    spec = SPEC[family]
    seen: dict[tuple[str, str], int] = {}
    for index in range(40):
        inst = make_instance(family, "train", index, d=8, n=20)
        for is_root, node in _nodes(inst):
            scale = node["noise_params"]["scale"]
            if is_root:
                assert node["mechanism"] == "linear" and node["mechanism_params"]["weights"] == []
                if family == "gauntlet":
                    assert node["noise"] == "gaussian" and scale == 1.0  # Appendix C: roots N(0, 1)
                else:  # a root is the noise of the kind it drew
                    assert any(node["noise"] == noise and lo <= scale <= hi for (_, noise), (lo, hi) in spec.items())
                continue
            key = (node["mechanism"], node["noise"])
            assert key in spec, key
            low, high = spec[key]
            assert low <= scale <= high
            params = node["mechanism_params"]
            if node["noise"] == "student_t":
                assert node["noise_params"]["df"] == 3.0
            if node["mechanism"] == "linear":
                assert all(0.5 <= abs(w) <= 2.0 for w in params["weights"])
            if node["mechanism"] == "mlp":
                assert np.asarray(params["hidden_weights"]).shape[1] == 10
            if node["mechanism"] in ("mlp_hetero", "sigmoid_hetero"):
                assert params["noise_floor"] == 0.2
            if node["mechanism"] in MAPS:
                assert params["standardize"] is (family == "wild")
                assert np.isclose(np.linalg.norm(params["direction"]), 1.0)
            seen[key] = seen.get(key, 0) + 1
    assert set(seen) == set(spec)
    counts = np.array(list(seen.values()))
    assert counts.min() > 0.5 * counts.mean()  # drawn uniformly: no kind starved
    assert len(family_kinds(family)) == len(spec)


def test_expected_edge_count_is_about_d():
    edges, priors = [], []
    for index in range(200):
        inst = make_instance(FAMILIES[index % 6], "train", index, d=10, n=20)
        edges.append(int(inst.hidden.dag.sum()))
        priors.append(inst.hidden.graph_prior)
    assert abs(np.mean(edges) - 10.0) < 0.8
    assert 0.35 < np.mean([p == "erdos_renyi" for p in priors]) < 0.65
