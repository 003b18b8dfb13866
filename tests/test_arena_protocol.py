"""CausalArena protocol: splits, masks, target pools, intervention values, suites, seeds, files.

References are independent of the code under test: quantiles recomputed from the split's own
observational rows, descendant sets from the true graph, and replays of each regime's rows from
its recorded seed without the intervention (the causal_gym SCM draws every noise column before
intervention values, so non-descendants of the targets must come back bit-identical).
"""

from __future__ import annotations

import numpy as np
import pytest

from causal_gym.envs.arena.protocol import (
    INTERVENTION_SUITE,
    MAIN_SPLITS,
    N_REPLICATES,
    PROTOCOLS,
    SAMPLE_SIZES,
    ArenaDataset,
    ArenaProtocol,
    draw_target_pool,
    intervention_suite,
    sample_replicates,
    sample_size_split,
    sample_split,
    target_pool_size_range,
)
from causal_gym.graphs import descendants
from causal_gym.scm import SCM, erdos_renyi_dag


@pytest.fixture(scope="module")
def scm() -> SCM:
    return SCM.random(erdos_renyi_dag(12, 2.5, rng=4), "mlp", rng=5)


@pytest.fixture(scope="module")
def suite(scm) -> dict[str, ArenaDataset]:
    return intervention_suite(scm, seed=11, meta={"unit": "er-12"})


def observational(ds: ArenaDataset) -> np.ndarray:
    return ds.data[~ds.mask.any(axis=1)]


def replay(scm: SCM, ds: ArenaDataset, regime: int) -> np.ndarray:
    """The regime's rows sampled again from its recorded seed, without intervention."""
    record = ds.meta["regimes"][regime]
    seed = np.random.SeedSequence(ds.meta["seed"], spawn_key=tuple(record["spawn_key"]))
    return scm.sample(record["n_rows"], rng=seed)


def same_rows(a: np.ndarray, b: np.ndarray, columns: list[int]) -> bool:
    """Whether two row blocks agree bit for bit on ``columns`` up to row order."""
    key = columns[0]
    return np.array_equal(a[np.argsort(a[:, key])][:, columns], b[np.argsort(b[:, key])][:, columns])


# ---------------------------------------------------------------------------------------------
# main splits
# ---------------------------------------------------------------------------------------------


def test_main_splits_have_the_paper_sizes(scm, suite):
    obs = sample_split(scm, "obs", seed=11)
    assert MAIN_SPLITS == ("obs", "obs+int")
    assert obs.data.shape == (1000, 12) and not obs.mask.any() and obs.n_interventional == 0
    mixed = suite["obs+int"]
    assert mixed.data.shape == (1000, 12)
    assert mixed.n_interventional == 200 and (mixed.mask.sum(axis=1) == 1).sum() == 200


def test_masks_targets_and_regimes_agree(suite):
    for ds in suite.values():
        for row, targets in enumerate(ds.targets):
            assert np.flatnonzero(ds.mask[row]).tolist() == list(targets)
            assert ds.meta["regimes"][ds.regime[row]]["targets"] == list(targets)
        assert set(np.flatnonzero(ds.mask.any(axis=0))) <= set(ds.meta["target_pool"])
        counts = np.bincount(ds.regime, minlength=len(ds.meta["regimes"]))
        assert counts.tolist() == [r["n_rows"] for r in ds.meta["regimes"]]


@pytest.mark.parametrize("name", ["obs+int", "high_fraction"])
def test_single_targets_are_balanced(suite, name):
    ds = suite[name]
    pool = ds.meta["target_pool"]
    counts = ds.mask.sum(axis=0)[pool]
    assert counts.sum() == PROTOCOLS[name].n_int
    assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("name", ["obs+int", "high_fraction", "multi_target"])
def test_resampled_values_lie_in_the_observational_10_90_range(suite, name):
    ds = suite[name]
    q10, q90 = np.quantile(observational(ds), [0.1, 0.9], axis=0)
    for t in ds.meta["target_pool"]:
        values = ds.data[ds.mask[:, t], t]
        assert values.min() >= q10[t] and values.max() <= q90[t]
        # uniform on the range, not a point: the draws spread over most of it
        assert values.max() - values.min() > 0.5 * (q90[t] - q10[t])


def test_non_descendants_keep_their_noise_and_descendants_change(scm, suite):
    ds = suite["obs+int"]
    graph = scm.graph
    checked = 0
    for regime in range(1, len(ds.meta["regimes"])):
        (t,) = ds.meta["regimes"][regime]["targets"]
        moved = descendants(graph, t) | {t}
        keep = [j for j in range(scm.d) if j not in moved]
        rows, again = ds.data[ds.regime == regime], replay(scm, ds, regime)
        if keep:
            assert same_rows(rows, again, keep)
            checked += 1
        for j in moved:
            assert not np.array_equal(np.sort(rows[:, j]), np.sort(again[:, j]))
    assert checked >= 2


def test_obs_and_mixed_splits_share_their_observational_rows(scm, suite):
    obs = sample_split(scm, "obs", seed=11)
    mixed_obs = observational(suite["obs+int"])
    assert same_rows(obs.data[:800], mixed_obs, list(range(scm.d)))


# ---------------------------------------------------------------------------------------------
# the intervention-protocol suite
# ---------------------------------------------------------------------------------------------


def test_suite_lists_the_six_protocols(suite):
    assert INTERVENTION_SUITE == (
        "obs+int", "fixed_setpoint", "parameter_shift", "high_fraction", "multi_target", "dense_mixed"
    )
    shares = {name: ds.n_interventional / ds.n for name, ds in suite.items()}
    assert shares == {"obs+int": 0.2, "fixed_setpoint": 0.2, "parameter_shift": 0.2, "high_fraction": 0.8,
                      "multi_target": 0.2, "dense_mixed": 0.8}


def test_fixed_setpoints_sit_at_three_percentiles_with_small_jitter(suite):
    ds = suite["fixed_setpoint"]
    obs = observational(ds)
    setpoints = np.quantile(obs, [0.2, 0.5, 0.8], axis=0)
    iqr = np.subtract(*np.quantile(obs, [0.75, 0.25], axis=0))
    for t in ds.meta["target_pool"]:
        values = ds.data[ds.mask[:, t], t]
        distance = np.abs(values[:, None] - setpoints[:, t][None, :]).min(axis=1)
        assert distance.max() <= 0.01 * iqr[t] * (1 + 1e-9)
        # all three setpoints are used
        nearest = np.abs(values[:, None] - setpoints[:, t][None, :]).argmin(axis=1)
        assert set(nearest.tolist()) == {0, 1, 2}


def test_setpoints_without_jitter_are_constants(scm):
    protocol = ArenaProtocol("exact", n_obs=800, n_int=200, kinds=("setpoint",), setpoints=(0.5,), setpoint_jitter=0.0)
    ds = sample_split(scm, protocol, seed=3)
    medians = np.quantile(observational(ds), 0.5, axis=0)
    for t in ds.meta["target_pool"]:
        values = ds.data[ds.mask[:, t], t]
        assert np.unique(values).tolist() == [medians[t]]


def test_parameter_shift_targets_structural_nodes_and_changes_their_mechanism(scm, suite):
    ds = suite["parameter_shift"]
    graph = scm.graph
    roots = set(np.flatnonzero(~graph.any(axis=0)).tolist())
    assert not roots & set(ds.meta["target_pool"])
    iqr = np.subtract(*np.quantile(observational(ds), [0.75, 0.25], axis=0))
    kinds = set()
    for regime in range(1, len(ds.meta["regimes"])):
        (change,) = ds.meta["regimes"][regime]["interventions"]
        t = change["target"]
        kinds.add(change["type"])
        if change["type"] == "parameter_shift":
            assert 0.6 <= change["factor"] <= 0.85 or 1.15 <= change["factor"] <= 1.6
        else:
            assert change["type"] == "shift" and 0.3 <= abs(change["delta"]) / iqr[t] <= 0.8
        rows, again = ds.data[ds.regime == regime], replay(scm, ds, regime)
        keep = [j for j in range(scm.d) if j not in descendants(graph, t) | {t}]
        assert same_rows(rows, again, keep)
        assert not np.array_equal(np.sort(rows[:, t]), np.sort(again[:, t]))
    assert kinds == {"parameter_shift", "shift"}


class NoScaleHook:
    """An SCM-like object whose mechanisms reject ParameterShift (any interface user)."""

    def __init__(self, scm: SCM) -> None:
        self._scm = scm
        self.d = scm.d
        self.graph = scm.graph

    def sample(self, n, rng, interventions=()):
        if any(i.kind == "parameter_shift" for i in interventions):
            raise ValueError("no scale_params hook")
        return self._scm.sample(n, rng, interventions)


def test_parameter_shift_falls_back_to_bias_shifts_without_the_hook(scm):
    ds = sample_split(NoScaleHook(scm), "parameter_shift", seed=11)
    types = {i["type"] for r in ds.meta["regimes"][1:] for i in r["interventions"]}
    assert types == {"shift"} and ds.n_interventional == 200


def test_multi_target_rows_have_two_to_four_targets(suite):
    ds = suite["multi_target"]
    sizes = ds.mask.sum(axis=1)[ds.mask.any(axis=1)]
    assert sizes.size == 200 and sizes.min() >= 2 and sizes.max() <= min(4, len(ds.meta["target_pool"]))
    assert len(set(sizes.tolist())) > 1


def test_dense_mixed_balances_three_kinds_on_structural_targets(scm, suite):
    ds = suite["dense_mixed"]
    assert ds.n_interventional == 800 and (ds.mask.sum(axis=1)[ds.regime > 0] >= 2).all()
    assert not set(np.flatnonzero(~scm.graph.any(axis=0)).tolist()) & set(ds.meta["target_pool"])
    ranges = ds.meta["target_ranges"]
    counts = {"resample": 0, "setpoint": 0, "parameter_shift": 0}
    for record in ds.meta["regimes"][1:]:
        for i in record["interventions"]:
            if i["type"] in ("parameter_shift", "shift"):
                kind = "parameter_shift"
            elif (i["low"], i["high"]) == (ranges[str(i["target"])]["low"], ranges[str(i["target"])]["high"]):
                kind = "resample"
            else:
                kind = "setpoint"
            counts[kind] += record["n_rows"]
    assert sum(counts.values()) == ds.mask.sum()
    assert max(counts.values()) - min(counts.values()) <= 1


# ---------------------------------------------------------------------------------------------
# pools, sample sizes, replicates, seeds, files
# ---------------------------------------------------------------------------------------------


def test_pool_sizes_follow_the_paper_table():
    table = {10: (2, 4), 20: (3, 6), 30: (4, 8), 50: (5, 12), 100: (8, 20)}
    assert {d: target_pool_size_range(d) for d in table} == table
    lows, highs = zip(*(target_pool_size_range(d) for d in range(1, 300)))
    assert all(np.diff(lows) >= 0) and all(np.diff(highs) >= 0)
    assert all(1 <= lo <= hi <= d for d, (lo, hi) in enumerate(zip(lows, highs), start=1))


def test_drawn_pools_respect_the_range_and_eligibility():
    for seed in range(20):
        scm = SCM.random(erdos_renyi_dag(30, 2.0, rng=seed), "linear", rng=seed)
        pool = draw_target_pool(scm, seed)
        assert 4 <= len(pool) <= 8 and len(set(pool)) == len(pool)
        structural = draw_target_pool(scm, seed, structural_only=True)
        assert all(scm.graph[:, t].any() for t in structural)


def test_sample_size_suite_uses_the_paper_sizes(scm):
    assert SAMPLE_SIZES == (100, 200, 500, 1000, 2000, 5000, 10000)
    for n in (100, 2000):
        ds = sample_size_split(scm, n, seed=2)
        assert ds.data.shape == (n, 12) and ds.n_interventional == 0


def test_replicates_are_reproducible_and_distinct(scm):
    assert N_REPLICATES == 5
    first = sample_replicates(scm, "obs+int", seed=8)
    again = sample_replicates(scm, "obs+int", seed=8)
    assert [ds.meta["replicate"] for ds in first] == list(range(5))
    for a, b in zip(first, again):
        assert np.array_equal(a.data, b.data) and np.array_equal(a.mask, b.mask)
    assert all(ds.meta["target_pool"] == first[0].meta["target_pool"] for ds in first)
    assert not np.array_equal(first[0].data, first[1].data)
    assert len({ds.file_seed for ds in first}) == 5


def test_npz_round_trip(tmp_path, suite):
    ds = suite["dense_mixed"]
    ds.to_npz(tmp_path / "split.npz")
    back = ArenaDataset.from_npz(tmp_path / "split.npz")
    assert np.array_equal(back.data, ds.data) and np.array_equal(back.mask, ds.mask)
    assert back.targets == ds.targets and np.array_equal(back.regime, ds.regime)
    assert np.array_equal(back.true_adjacency, ds.true_adjacency) and back.meta == ds.meta
    assert back.file_seed == ds.file_seed
    # a link planted under the name is replaced, not written through (issue 28, finding 9)
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    (tmp_path / "planted.npz").symlink_to(victim)
    ds.to_npz(tmp_path / "planted")  # numpy's rule: the suffix is added
    assert victim.read_text() == "not yours" and not (tmp_path / "planted.npz").is_symlink()
    assert np.array_equal(ArenaDataset.from_npz(tmp_path / "planted.npz").data, ds.data)


def test_protocol_errors_name_the_problem(scm):
    with pytest.raises(ValueError, match="unknown protocol 'bogus'"):
        sample_split(scm, "bogus", seed=0)
    root = int(np.flatnonzero(~scm.graph.any(axis=0))[0])
    with pytest.raises(ValueError, match="structural nodes only"):
        sample_split(scm, "parameter_shift", seed=0, pool=[root])
    with pytest.raises(ValueError, match="set by the protocol"):
        sample_split(scm, "obs", seed=0, meta={"seed": 3})
    with pytest.raises(ValueError, match="needs a pool of at least 2"):
        sample_split(scm, "multi_target", seed=0, pool=[1])
    with pytest.raises(ValueError, match="structural_only"):
        ArenaProtocol("x", n_obs=10, n_int=10, kinds=("parameter_shift",))
    ds = sample_split(scm, "obs+int", seed=0)
    with pytest.raises(ValueError, match="targets and mask disagree"):
        ArenaDataset(ds.data, ds.mask, ((),) * ds.n, ds.regime, ds.true_adjacency, ds.meta)
