"""CausaLab world model: hand-computed shift interventions, rounding, the hidden disturbance,
determinism, graph constraints, the Golden stopping rule against a brute-force I-MEC, the JSONL
loader on a hand-written fixture, and (slow) distributions against the released configs."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from causal_gym.envs.causalab import (
    DECOY_READINGS,
    FREQ,
    PROPERTIES,
    SETTINGS,
    HiddenConfig,
    HiddenSpec,
    LabSCM,
    Manipulator,
    Setting,
    load_jsonl,
    make_episode,
    sample_lab_scm,
    suite,
    train_seeds,
)
from causal_gym.envs.causalab.world import (
    draw_exogenous,
    golden_records,
    hidden_config,
    prior_records,
    sample_lab_graph,
)
from causal_gym.envs.causalab.world.episodes import _STREAMS, _Streams
from causal_gym.graphs import topological_order

FIXTURE = Path(__file__).parent / "data" / "causalab_fixture.jsonl"
RELEASED = Path("/work/shared/reference-data/causalab/causalab_dataset/data")

# The spec's numbers, restated here rather than imported from the module under test.
POOL = {"temperatureC", "moisture", "density", "quantumSize", "radiation", "pressure", "ph", "conductivity"}
SPEC_DECOYS = {"temperatureC": 25.0, "density": 1.0, "quantumSize": 2.0}


def hand_scm(**kw) -> LabSCM:
    """density -> moisture (2), moisture -> F (3), density -> F (1); ph isolated; base_freq 20."""
    return LabSCM(
        properties=("density", "moisture", "ph", FREQ),
        edges=(("density", "moisture"), ("moisture", FREQ), ("density", FREQ)),
        kind="linear",
        coefficients=(2.0, 3.0, 1.0),
        base_freq=20.0,
        hybrid_bases={"moisture": 17.0},
        **kw,
    )


START = {"density": 10.0, "moisture": 5.0, "ph": 7.0}


# ---------------------------------------------------------------------------------------------
# equations and shift interventions (hand-computed)
# ---------------------------------------------------------------------------------------------


def test_evaluate_hand_computed():
    # moisture = 5 + 2*10 = 25; F = 20 + 3*25 + 10 = 105
    assert hand_scm().evaluate(START) == {"density": 10.0, "moisture": 25.0, "ph": 7.0, FREQ: 105.0}


def test_values_are_rounded_before_children_use_them():
    # density 1.006 shows 1.01; moisture = 0 + 2*1.01 = 2.02 (2.012 unrounded would give 2.01);
    # F = 20 + 3*2.02 + 1.01 = 27.07 (27.042 from unrounded parents).
    values = hand_scm().evaluate({"density": 1.006, "moisture": 0.0, "ph": 0.0})
    assert values == {"density": 1.01, "moisture": 2.02, "ph": 0.0, FREQ: 27.07}


def test_shift_on_root_recomputes_descendants():
    m = Manipulator(hand_scm(), START)
    result = m.intervene("density", 30)
    # moisture = 5 + 60 = 65; F = 20 + 195 + 30 = 245
    assert result.values == {"density": 30.0, "moisture": 65.0, "ph": 7.0, FREQ: 245.0}
    assert m.exogenous == {"density": 30.0, "moisture": 5.0, "ph": 7.0}
    assert set(result.changed) == {"density", "moisture", FREQ}
    assert result.cost == 1


def test_shift_on_hybrid_keeps_following_parents_and_accumulates():
    m = Manipulator(hand_scm(), START)
    m.intervene("density", 30)
    # hybrid: exogenous becomes 40 - 2*30 = -20; F = 20 + 120 + 30 = 170
    assert m.intervene("moisture", 40).values == {"density": 30.0, "moisture": 40.0, "ph": 7.0, FREQ: 170.0}
    assert m.exogenous["moisture"] == -20.0
    # accumulation: density back to 0 drags moisture to -20 + 0 (negative values allowed); F = 20 - 60 + 0
    assert m.intervene("density", 0).values == {"density": 0.0, "moisture": -20.0, "ph": 7.0, FREQ: -40.0}
    assert m.n_interventions == 3


def test_repeated_value_costs_a_unit_and_changes_nothing():
    m = Manipulator(hand_scm(), START)
    result = m.intervene("density", 10)
    assert result.cost == 1 and result.changed == ()
    assert m.n_interventions == 1


def test_oracle_chains_hand_example():
    m = Manipulator(hand_scm(), START, oracle_chains=True)
    assert set(m.intervene("density", 11).chains) == {("density", "moisture", FREQ), ("density", FREQ)}
    assert m.intervene("ph", 50).chains == ()  # ph changed, frequency did not
    assert m.intervene("moisture", 99).chains == (("moisture", FREQ),)
    assert Manipulator(hand_scm(), START).intervene("density", 11).chains is None


def test_invalid_interventions_raise():
    m = Manipulator(hand_scm(), START)
    with pytest.raises(ValueError, match="intervention target"):
        m.intervene(FREQ, 3.0)
    with pytest.raises(ValueError, match="value"):
        m.intervene("density", "high")
    with pytest.raises(ValueError, match="value"):
        m.intervene("density", float("nan"))
    assert m.n_interventions == 0
    with pytest.raises(ValueError, match="rng"):
        Manipulator(hand_scm(), START, HiddenConfig(("ph",)))
    with pytest.raises(ValueError, match="rng"):
        Manipulator(hand_scm(), START, rng=0)


def test_quadratic_evaluation_hand_computed():
    scm = LabSCM(
        ("conductivity", "radiation", FREQ),
        (("radiation", "conductivity"), ("conductivity", FREQ), ("radiation", FREQ)),
        "quadratic",
        ((0.016, -1.92), (0.012, -0.96), (0.008, -0.8)),
        69.2,
        {"conductivity": 82.6},
    )
    # conductivity = 30 + 0.016*2500 - 1.92*50 = -26; F = 69.2 + (20 - 40) + (8.112 + 24.96) = 82.272
    assert scm.evaluate({"radiation": 50.0, "conductivity": 30.0}) == {"conductivity": -26.0, "radiation": 50.0, FREQ: 82.27}


# ---------------------------------------------------------------------------------------------
# hidden disturbance
# ---------------------------------------------------------------------------------------------


def test_hidden_disturbance_changes_only_the_display():
    hidden = HiddenConfig(affected=("moisture",), values=(5.0,))
    m = Manipulator(hand_scm(), START, hidden, rng=0)
    assert m.values == hand_scm().evaluate(START)  # h = 0 before the first intervention
    shown = m.intervene("density", 30).values
    # undisturbed moisture 65 shows 70; F uses the shown value: 20 + 3*70 + 30 = 260 (true 245)
    assert shown == {"density": 30.0, "moisture": 70.0, "ph": 7.0, FREQ: 260.0}
    assert m.true_values[FREQ] == 245.0
    assert m.exogenous["moisture"] == 5.0
    # the hybrid shift uses the undisturbed contribution (60): exogenous -20; it shows 40 + 5
    assert m.intervene("moisture", 40).values["moisture"] == 45.0
    assert m.exogenous["moisture"] == -20.0


def test_hidden_values_redrawn_from_the_seeded_stream():
    values = (-5.0, 0.0, 5.0)
    m = Manipulator(hand_scm(), START, HiddenConfig(("ph",), values), rng=123)
    reference = np.random.default_rng(123)
    for step in range(12):
        m.intervene("density", float(step))
        h = float(reference.choice(values))
        assert m.hidden_value == h
        assert m.values["ph"] == 7.0 + h


def test_hidden_leaves_records_and_reactor_alone():
    base = make_episode(11, Setting(4))
    for spec in (HiddenSpec(3), HiddenSpec(2, freqnode=True), HiddenSpec(1, (-50.0, 0.0, 50.0))):
        ep = make_episode(11, Setting(4, hidden=spec))
        assert ep.scm == base.scm
        assert ep.prior_records == base.prior_records
        assert ep.reactor == base.reactor
        assert ep.reactor.values == ep.scm.evaluate(dict(ep.reactor.exogenous))
        for record in ep.prior_records:
            exo = ep.scm.exogenous_from_values(record.values)
            assert ep.scm.evaluate(exo) == dict(record.values)


def test_hidden_priority_parents_first_and_nested():
    ep = make_episode(5, Setting(6))
    scm = ep.scm
    parents = set(scm.freq_parents())
    full = hidden_config(scm, 9, len(scm.controllable)).affected
    assert set(full[: len(parents)]) == parents and set(full) == set(scm.controllable)
    for k in range(1, len(scm.controllable) + 1):
        assert hidden_config(scm, 9, k).affected == full[:k]
        assert hidden_config(scm, 9, k, freqnode=True).affected == (FREQ, *full[: k - 1])


def test_hidden_suites_are_nested_like_the_released_ones():
    for k in range(10):
        n = [suite(f"4node-hidden-n{c}")[k].make().hidden.affected for c in (1, 2, 3)]
        f = [suite(f"4node-hidden-freqnode-n{c}")[k].make().hidden.affected for c in (1, 2, 3)]
        assert n[0] == n[1][:1] and n[1] == n[2][:2]
        assert f == [(FREQ,), (FREQ, *n[0]), (FREQ, *n[1])]


# ---------------------------------------------------------------------------------------------
# sampler constraints
# ---------------------------------------------------------------------------------------------


def _is_acyclic(nodes, edges) -> bool:
    remaining, arcs = set(nodes), set(edges)
    while remaining:
        free = {v for v in remaining if not any(b == v and a in remaining for a, b in arcs)}
        if not free:
            return False
        remaining -= free
    return True


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 9), freq_parent=st.booleans(), quad=st.booleans())
def test_sampled_graphs_meet_the_spec(seed, n, freq_parent, quad):
    scm = sample_lab_scm(seed, n, "quadratic" if quad else "linear", freq_parent)
    names = set(scm.properties) - {FREQ}
    assert len(scm.properties) == n and FREQ in scm.properties and names <= POOL and len(names) == n - 1
    assert _is_acyclic(scm.properties, scm.edges)
    assert n - 1 <= len(scm.edges) <= min(2 * n, n * (n - 1) // 2)
    assert any(b == FREQ for _, b in scm.edges)
    if not freq_parent:
        assert not any(a == FREQ for a, _ in scm.edges)
    if quad:
        for c2, c1 in scm.coefficients:
            assert c2 in (0.008, 0.012, 0.016)
            assert 35.0 - 1e-6 <= -c1 / (2 * c2) <= 65.0 + 1e-6
    else:
        assert set(scm.coefficients) <= {1.0, 2.0, 3.0}
        assert scm.base_freq == int(scm.base_freq) and 15 <= scm.base_freq <= 25
        assert all(15 <= b <= 25 for _, b in scm.hybrid_bases)


def test_structure_queries_hand_example():
    scm = hand_scm()
    assert scm.freq_parents() == ("density", "moisture")
    assert scm.true_roots() == ("density",)  # ph is a root but off-path
    assert scm.roots() == ("density", "ph") and scm.hybrids() == ("moisture",)
    order = scm.topological_order()
    assert order.index("density") < order.index("moisture") < order.index(FREQ)
    a = scm.adjacency((FREQ, "ph", "moisture", "density"))
    expected = np.zeros((4, 4), dtype=np.int8)
    expected[3, 2] = expected[2, 0] = expected[3, 0] = 1
    assert a.dtype == np.int8 and np.array_equal(a, expected)


def test_labscm_json_round_trip_and_validation():
    for scm in (hand_scm(), sample_lab_scm(3, 6, "quadratic"), sample_lab_scm(4, 5, freq_parent=True)):
        assert LabSCM.from_dict(scm.to_dict()) == scm
    with pytest.raises(ValueError, match="cycle"):
        LabSCM(
            ("density", "ph", "pressure", FREQ),
            (("density", "ph"), ("ph", "pressure"), ("pressure", "density"), ("ph", FREQ)),
            "linear",
            (1, 1, 1, 1),
            20,
            {"density": 1, "ph": 1, "pressure": 1},
        )
    with pytest.raises(ValueError, match="at least one parent"):
        LabSCM(("density", FREQ), (), "linear", (), 20)
    with pytest.raises(ValueError, match="freq_parent"):
        LabSCM(("density", "ph", FREQ), (("density", FREQ), (FREQ, "ph")), "linear", (1, 1), 20, {"ph": 3})
    with pytest.raises(ValueError, match="properties member"):
        LabSCM(("viscosity", FREQ), (("viscosity", FREQ),), "linear", (1,), 20)
    with pytest.raises(ValueError, match="hybrid_bases"):
        LabSCM(("density", "ph", FREQ), (("density", "ph"), ("ph", FREQ)), "linear", (1, 1), 20)
    with pytest.raises(ValueError, match="exogenous"):
        hand_scm().evaluate({"density": 1.0})


# ---------------------------------------------------------------------------------------------
# episodes, determinism, suites
# ---------------------------------------------------------------------------------------------


def test_episode_is_a_function_of_the_seed():
    setting = Setting(5, hidden=HiddenSpec(2))
    a, b = make_episode((1, 2, 3), setting), make_episode((1, 2, 3), setting)
    assert a.to_dict() == b.to_dict()
    assert make_episode((1, 2, 4), setting).to_dict() != a.to_dict()
    ma, mb = a.manipulator(), b.manipulator()
    for k, node in enumerate(a.scm.controllable * 3):
        value = 17.0 + k
        assert ma.intervene(node, value) == mb.intervene(node, value)
    # a fresh manipulator replays the same hidden draws
    again = a.manipulator()
    first = [again.intervene(p, 3.0).values for p in a.scm.controllable]
    replay = a.manipulator()
    assert first == [replay.intervene(p, 3.0).values for p in a.scm.controllable]


def test_episode_streams_are_the_spawned_children_of_the_seed():
    # make_episode builds the children of SeedSequence(seed).spawn(8) one at a time from the entropy's words
    rng = np.random.default_rng(3)
    for k in range(40):
        fixed = (k, 0, 2**32 - 1, 2**32, 2**64 + 5, 2**100)
        entropy = fixed[k % 3: k % 3 + 1 + k % 4] if k % 2 else tuple(rng.integers(0, 2**63, size=1 + k % 4).tolist())
        streams = _Streams(entropy)
        for name, child in zip(_STREAMS, np.random.SeedSequence(entropy).spawn(len(_STREAMS)), strict=True):
            assert np.array_equal(streams[name].generate_state(8), child.generate_state(8)), (entropy, name)
    # the episode draws from them: its graph from the first child, its hidden draws from the seventh
    children = np.random.SeedSequence((7, 2**40)).spawn(len(_STREAMS))
    episode = make_episode((7, 2**40), Setting(4))
    properties, edges = sample_lab_graph(np.random.default_rng(children[0]), 4)
    assert episode.redraws == 0 and episode.scm.properties == properties and set(episode.scm.edges) == set(edges)
    assert np.array_equal(episode.hidden_stream.generate_state(4), children[6].generate_state(4))


def test_graph_properties_are_numpys_choice_from_the_pool():
    # the names are drawn by index (no string array); numpy draws the same from the list of names
    for seed in range(200):
        n = 2 + seed % 8
        properties, _ = sample_lab_graph(np.random.default_rng(seed), n)
        chosen = np.random.default_rng(seed).choice(list(PROPERTIES), size=n - 1, replace=False)
        assert properties == (*sorted(str(p) for p in chosen), FREQ)


def test_causal_order_is_the_graph_topological_order():
    for seed in range(200):
        scm = sample_lab_scm(seed, 2 + seed % 8, freq_parent=seed % 2 == 0)
        expected = tuple(scm.properties[i] for i in topological_order(scm.adjacency()))
        assert scm.topological_order() == expected
        assert all(expected.index(a) < expected.index(b) for a, b in scm.edges)


def test_episode_contents_follow_the_setting():
    ep = make_episode(2, Setting(5, n_prior_records=4))
    assert ep.setting.intervention_budget == 16 and len(ep.prior_records) == 4
    for exo in (dict(ep.manipulator_start), dict(ep.reactor.exogenous)):
        assert set(exo) == set(ep.scm.controllable)
        assert all(v == int(v) and 0 <= v <= 100 for v in exo.values())
    expected = {p: v for p, v in SPEC_DECOYS.items() if p not in ep.scm.properties}
    assert dict(ep.decoys) == expected and dict(DECOY_READINGS) == SPEC_DECOYS
    assert dict(make_episode(2, Setting(5, decoys=False)).decoys) == {}
    assert ep.target == ep.scm.evaluate(dict(ep.reactor.exogenous))[FREQ]


def test_unreachable_targets_are_redrawn():
    redraws = 0
    for seed in range(20):
        ep = make_episode(seed, Setting(6, max_target=300.0))
        assert ep.target <= 300.0
        redraws += ep.redraws
    assert redraws > 0


def test_prior_records_prefix_does_not_depend_on_count():
    scm = hand_scm()
    short, long = prior_records(scm, 8, 3), prior_records(scm, 8, 24)
    assert long[:3] == short
    assert np.array_equal(draw_exogenous(scm, 8, 24)[:3], draw_exogenous(scm, 8, 3))


def test_settings_cover_every_published_suite():
    expected = {f"{n}node" for n in range(3, 8)} | {"4node-quad", "4node-freqparent", "6node-freqparent", "4node-golden", "6node-golden"}
    expected |= {f"4node-hidden-n{k}" for k in (1, 2, 3)} | {f"4node-hidden-freqnode-n{k}" for k in (1, 2, 3)}
    expected |= {f"4node-hidden-vrange-{v}" for v in ("pm0p5", "pm5", "pm50")}
    expected |= {f"4node-{o}o0i" for o in (3, 6, 12, 24)} | {f"4node-0o{i}i" for i in (3, 6, 12, 24)} | {f"4node-3o{i}i" for i in (3, 6, 12, 24)}
    expected |= {f"6node-{o}o0i" for o in (5, 10, 20)} | {f"6node-0o{i}i" for i in (5, 10, 20)} | {f"6node-5o{i}i" for i in (5, 10, 20)}
    assert set(SETTINGS) == expected
    assert [SETTINGS[f"{n}node"].intervention_budget for n in range(3, 8)] == [8, 12, 16, 20, 24]
    assert SETTINGS["4node-golden"].intervention_budget == 0
    assert (SETTINGS["6node-5o20i"].n_prior_records, SETTINGS["6node-5o20i"].intervention_budget) == (5, 20)
    assert SETTINGS["4node-hidden-vrange-pm0p5"].hidden.values == (-0.5, 0.0, 0.5)


def test_suites_are_fixed_disjoint_and_matched():
    base = suite("4node")
    assert len(base) == 50 and len({s.seed for s in base}) == 50
    train = set(itertools.islice(train_seeds("4node"), 500))
    assert not train & {s.seed for s in base}
    for k in range(5):
        linear = base[k].make()
        assert suite("4node-golden")[k].make().scm == linear.scm
        assert suite("4node-quad")[k].make().scm.edges == linear.scm.edges
        assert suite("4node-24o0i")[k].make().prior_records[:2] == linear.prior_records
    assert suite("4node-freqparent")[0].seed != base[0].seed


# ---------------------------------------------------------------------------------------------
# Golden chain: stopping rule against a brute-force interventional MEC
# ---------------------------------------------------------------------------------------------


def _all_dags(d: int):
    pairs = list(itertools.combinations(range(d), 2))
    for states in itertools.product((0, 1, 2), repeat=len(pairs)):
        edges = {(i, j) if s == 1 else (j, i) for (i, j), s in zip(pairs, states) if s}
        if _is_acyclic(range(d), edges):
            yield frozenset(edges)


def _signature(edges, target):
    """Skeleton and v-structures of the graph with every edge into ``target`` removed."""
    cut = {(a, b) for a, b in edges if b not in target}
    skeleton = {frozenset(e) for e in cut}
    vs = {(a, c, b) for (a, c) in cut for (b, c2) in cut if c == c2 and a < b and frozenset((a, b)) not in skeleton}
    return skeleton, vs


def _brute_imec(edges, d, targets, dags):
    family = [frozenset()] + [frozenset(t) for t in targets]
    truth = [_signature(edges, t) for t in family]
    return sum(all(_signature(g, t) == s for t, s in zip(family, truth)) for g in dags)


@pytest.mark.parametrize("n", [3, 4])
def test_golden_stopping_rule_matches_brute_force(n):
    dags = list(_all_dags(n))
    lengths = Counter()
    for seed in range(12):
        scm = sample_lab_scm(seed, n)
        bootstrap, chain = golden_records(scm, seed, stop_at_singleton=True)
        assert len(golden_records(scm, seed, lengths="fixed")[1]) == 6
        index = {p: i for i, p in enumerate(scm.properties)}
        edges = {(index[a], index[b]) for a, b in scm.edges}
        cycle = sorted(scm.controllable)
        targets = [(index[r.intervention[0]],) for r in chain]
        assert [r.intervention[0] for r in chain] == [cycle[k % len(cycle)] for k in range(len(chain))]
        assert all(v == int(v) and 0 <= v <= 100 for _, v in (r.intervention for r in chain))
        sizes = [_brute_imec(edges, n, targets[:k], dags) for k in range(len(chain) + 1)]
        assert all(s > 1 for s in sizes[:-1])
        assert sizes[-1] == 1 or len(chain) == 6
        lengths[len(chain)] += 1
        assert len(bootstrap) == 2
        for record in bootstrap:
            exo = scm.exogenous_from_values(record.values)
            assert all(15 <= v <= 45 for v in exo.values())
    assert len(lengths) > 1  # the rule actually varies the chain length


@pytest.mark.parametrize("kind", ["linear", "quadratic"])
def test_row_by_row_evaluation_is_bit_identical_to_the_vectorised_one(kind):
    # a few rows take a plain-Python path (speed); many rows the numpy one: same bits, sign of zero included
    rng = np.random.default_rng(0)
    for seed in range(40):
        scm = sample_lab_scm(seed, 3 + seed % 5, kind, freq_parent=seed % 3 == 0)
        exo = np.round(rng.uniform(-120, 120, size=(20, len(scm.controllable))), 2)
        exo[0], exo[1], exo[2] = 0.0, -0.003, 0.005  # roots round to -0.0 / a half-way case
        offsets = {scm.properties[seed % scm.n_nodes]: float(np.round(rng.uniform(-9, 9), 2))}
        for shift in (None, offsets):
            batch = scm.evaluate_rows(exo, shift)
            rows = np.vstack([scm.evaluate_rows(exo[k:k + 1], shift) for k in range(len(exo))])
            assert np.array_equal(batch, rows) and np.array_equal(np.signbit(batch), np.signbit(rows))
            single = scm.evaluate(dict(zip(scm.controllable, exo[3].tolist())), shift)
            assert list(single.values()) == batch[3].tolist()


def test_golden_chain_lengths_follow_the_released_suites():
    # issue 14.17: released 4-node chains {6: 40, 4: 7, 3: 3}, every short one on a complete graph;
    # 6-node {6: 36, 0: 14}. Shares are checked within 4 binomial standard deviations.
    def share_ok(hits: int, n: int, p: float) -> bool:
        return abs(hits / n - p) <= 4 * math.sqrt(p * (1 - p) / n)

    complete_lengths = Counter()
    for seed in range(300):
        scm = sample_lab_scm(seed, 4)
        chain = golden_records(scm, seed)[1]
        full = golden_records(scm, seed, lengths="fixed")[1]
        assert chain == full[: len(chain)]  # a shorter chain is a prefix of the fixed one
        if len(scm.edges) == 6:
            complete_lengths[len(chain)] += 1
        else:
            assert len(chain) == 6
    assert set(complete_lengths) == {3, 4}
    assert share_ok(complete_lengths[3], sum(complete_lengths.values()), 3 / 10)
    six = Counter(len(golden_records(sample_lab_scm(seed, 6), seed)[1]) for seed in range(300))
    assert set(six) == {0, 6} and share_ok(six[0], 300, 14 / 50)
    for n in (3, 5, 7):  # no released Golden suite: never empty, 6 unless the graph is complete
        for seed in range(20):
            scm = sample_lab_scm(seed, n)
            assert len(golden_records(scm, seed)[1]) in ({6} if len(scm.edges) < n * (n - 1) // 2 else {n - 1, n})
    with pytest.raises(ValueError, match="lengths"):
        golden_records(sample_lab_scm(0, 4), 0, lengths="paper")


def test_golden_chain_replays_with_shift_semantics():
    scm = sample_lab_scm(21, 5)
    bootstrap, chain = golden_records(scm, 4)
    m = Manipulator(scm, scm.exogenous_from_values(bootstrap[0].values))
    for record in chain:
        assert m.intervene(*record.intervention).values == record.values
    ep = make_episode(4, Setting(4, golden=True))
    assert len(ep.prior_records) == 2 and ep.setting.intervention_budget == 0


# ---------------------------------------------------------------------------------------------
# loader on the hand-written fixture
# ---------------------------------------------------------------------------------------------


def test_loader_reads_the_fixture():
    linear, quad, golden = load_jsonl(FIXTURE)
    assert linear.graph_id == "fixture_linear_hidden" and linear.budget == 12
    assert set(linear.scm.edges) == {("pressure", "ph"), ("ph", FREQ), ("pressure", FREQ), ("conductivity", "ph")}
    assert linear.scm.coefficient("ph", FREQ) == 3.0 and linear.scm.coefficient("pressure", "ph") == 2.0
    assert linear.scm.base_freq == 18.0 and dict(linear.scm.hybrid_bases) == {"ph": 22.0}
    assert linear.hidden == HiddenConfig(("ph",), (-5.0, 0.0, 5.0), 1.0)
    assert linear.setting.hidden == HiddenSpec(1)
    # pressure 10, conductivity 4, ph exogenous 1: ph = 1 + 20 + 4 = 25; F = 18 + 75 + 10 = 103
    assert linear.scm.evaluate({"pressure": 10, "conductivity": 4, "ph": 1})[FREQ] == 103.0

    assert quad.scm.kind == "quadratic" and quad.scm.coefficient("radiation", "conductivity") == (0.016, -1.92)
    ep = quad.episode(0)
    assert ep.target == 82.27 and ep.reactor.values["conductivity"] == -26.0
    # preset record 0: conductivity = 20 + 1.6 - 19.2 = 2.4; F = 69.2 + (0.8 - 8) + (0.06912 - 2.304) = 59.76512
    assert ep.prior_records[0].values == {"conductivity": 2.4, "radiation": 10.0, FREQ: 59.77}
    assert dict(ep.manipulator_start) == {"conductivity": 60.0, "radiation": 40.0}

    assert golden.scm.freq_parent and golden.scm.coefficient(FREQ, "temperatureC") == 3.0
    assert len(golden.bootstrap) == 2 and len(golden.chain) == 4
    assert golden.setting.golden and golden.setting.intervention_budget == 0
    m = Manipulator(golden.scm, golden.scm.exogenous_from_values(golden.bootstrap[0].values))
    assert m.exogenous == {"density": 30.5, "moisture": 20.25, "temperatureC": 15.1}
    for record in golden.chain:
        assert m.intervene(*record.intervention).values == record.values
    assert golden.episode(1).golden_chain == golden.chain


def test_loader_rejects_malformed_lines(tmp_path):
    line = FIXTURE.read_text(encoding="utf-8").splitlines()[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line.replace("coeff_ph_freq * ph", "coeff_ph_freq * ph * ph"), encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_jsonl(bad)
    bad.write_text(line.replace('{"from": "conductivity", "to": "ph"}', '{"from": "conductivity", "to": "resonanceFreq"}'), encoding="utf-8")
    with pytest.raises(ValueError, match="parents"):
        load_jsonl(bad)


# ---------------------------------------------------------------------------------------------
# slow: the released suites
# ---------------------------------------------------------------------------------------------


def _stats(graphs):
    """Per-suite statistics of a list of (nodes, edges) graphs, as shares of the graphs."""
    out = {"edges": Counter(), "fpar": Counter(), "fchild": Counter(), "isolated": 0, "offpath": 0}
    for nodes, edges in graphs:
        out["edges"][len(edges)] += 1
        out["fpar"][sum(b == FREQ for _, b in edges)] += 1
        out["fchild"][sum(a == FREQ for a, _ in edges)] += 1
        touched = {v for e in edges for v in e}
        out["isolated"] += any(v not in touched for v in nodes)
        anc, frontier = set(), [FREQ]
        while frontier:
            x = frontier.pop()
            for a, b in edges:
                if b == x and a not in anc:
                    anc.add(a)
                    frontier.append(a)
        out["offpath"] += any(v != FREQ and v not in anc for v in nodes)
    total = len(graphs)
    return {k: ({j: c / total for j, c in v.items()} if isinstance(v, Counter) else v / total) for k, v in out.items()}


def _tv(p, q):
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def _fmt(dist):
    return " ".join(f"{k}:{50 * v:.1f}" for k, v in sorted(dist.items()))


def distribution_table(draws: int = 1000):
    """Ours (``draws`` graphs, scaled to 50) vs each released suite; returns rows and the text table."""
    rows, lines = [], []
    for label, n, fp in [("3nodes", 3, False), ("4nodes", 4, False), ("5nodes", 5, False), ("6nodes", 6, False),
                         ("7nodes", 7, False), ("4nodes_freqparent", 4, True), ("6nodes_freqparent", 6, True)]:
        released = [(tuple(c.scm.properties), c.scm.edges) for c in load_jsonl(RELEASED / f"{label}.jsonl")]
        rng = np.random.default_rng(n + 10 * fp)
        ours = [(s.properties, s.edges) for s in (sample_lab_scm(rng, n, freq_parent=fp) for _ in range(draws))]
        r, o = _stats(released), _stats(ours)
        rows.append((label, r, o))
        lines.append(f"{label} (per 50 graphs)")
        for key in ("edges", "fpar") + (("fchild",) if fp else ()):
            lines.append(f"  {key:8s} released {_fmt(r[key])}\n  {'':8s} ours     {_fmt(o[key])}   TV={_tv(r[key], o[key]):.2f}")
        lines.append(f"  isolated released {50 * r['isolated']:.0f} ours {50 * o['isolated']:.1f}; "
                     f"off-path released {50 * r['offpath']:.0f} ours {50 * o['offpath']:.1f}")
    return rows, "\n".join(lines)


needs_released = pytest.mark.skipif(not RELEASED.is_dir(), reason="released CausaLab suites not available")


@pytest.mark.slow
@needs_released
def test_graph_distribution_matches_released_suites():
    rows, table = distribution_table()
    print("\n" + table)
    for label, released, ours in rows:
        assert _tv(released["edges"], ours["edges"]) < 0.3, label
        assert _tv(released["fpar"], ours["fpar"]) < 0.3, label
        assert _tv(released["fchild"], ours["fchild"]) < 0.3, label
        assert abs(released["offpath"] - ours["offpath"]) < 0.2, label
        assert abs(released["isolated"] - ours["isolated"]) < 0.1, label


@pytest.mark.slow
@needs_released
def test_released_golden_chains_follow_our_shift_semantics():
    steps = 0
    for name in ("4nodes_golden", "6nodes_golden"):
        for config in load_jsonl(RELEASED / f"{name}.jsonl"):
            for record in config.bootstrap:
                assert config.scm.evaluate(config.scm.exogenous_from_values(record.values)) == dict(record.values)
            m = Manipulator(config.scm, config.scm.exogenous_from_values(config.bootstrap[0].values))
            for record in config.chain:
                assert m.intervene(*record.intervention).values == pytest.approx(dict(record.values), abs=1e-9)
                steps += 1
    assert steps > 400


@pytest.mark.slow
@needs_released
def test_every_released_suite_loads_and_plays():
    files = sorted(RELEASED.glob("*.jsonl"))
    assert len(files) == 19
    for path in files:
        configs = load_jsonl(path)
        assert len(configs) == 50
        for config in configs[:5]:
            ep = config.episode(0)
            m = ep.manipulator()
            m.intervene(ep.scm.controllable[0], 50.0)
            assert set(m.values) == set(ep.scm.properties)
        hidden = [c.hidden for c in configs]
        if "hidden" in path.name:
            assert all(h is not None and set(h.affected) <= set(c.scm.properties) for h, c in zip(hidden, configs))
        else:
            assert all(h is None for h in hidden)
    assert set(PROPERTIES) == POOL
