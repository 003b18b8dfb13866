"""CausalArena grounded families: the expression mechanism, scenario cards, real tables and networks.

References are independent of the code under test: Python's ``math`` evaluating the same formula
element by element, hand-written numpy versions of named laws (ideal gas, Hagen-Poiseuille,
Michaelis-Menten, CSTR conversion, Little's law), bounds checked directly on the sampled columns,
the graph's descendant sets, cdt's CSV header read with the csv module, and pgmpy's own BIF reader
for the network structures (including bnlearn's sachs network for the 17-edge consensus graph).
"""

from __future__ import annotations

import copy
import csv
import functools
import gzip
import json
import math
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from causal_gym.envs.arena import real
from causal_gym.envs.arena.diversity import audit_library
from causal_gym.envs.arena.expressions import expression_params, parse_expression
from causal_gym.envs.arena.grounded import ROLES, check_sample, compile_scenario, edges_into
from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS
from causal_gym.envs.arena.scenarios.semantic import SEMANTIC_SCENARIOS
from causal_gym.graphs import descendants, is_dag
from causal_gym.scm import SCM, HardDo, NodeSpec, ParameterShift

ALL_SCENARIOS = {**FORMULA_SCENARIOS, **SEMANTIC_SCENARIOS}


@pytest.fixture(scope="module")
def compiled() -> dict:
    return {name: compile_scenario(spec) for name, spec in ALL_SCENARIOS.items()}


# ---------------------------------------------------------------------------------------------
# expression parser and mechanism
# ---------------------------------------------------------------------------------------------

ACCEPTED = [
    ("n * R * T / V", {"n", "R", "T", "V"}),
    ("-x ** 2 + +y", {"x", "y"}),
    ("exp(-k * t) * C0", {"k", "t", "C0"}),
    ("clip(x, 0, 1) + min(x, y) - max(x, 2.5e-3)", {"x", "y"}),
    ("sqrt(abs(x)) + log(y) + log10(y) + sin(x) * cos(x) + tan(x) + atan(x) + tanh(x)", {"x", "y"}),
    ("pow(x, 3) + sigmoid(x)", {"x"}),
    ("300.0", set()),
    ("  ( a + b ) / ( a - b ) ", {"a", "b"}),
]

REJECTED = [
    ("os.system('ls')", "attribute"),
    ("np.exp(x)", "attribute"),
    ("x.real", "attribute"),
    ("import os", "not a single arithmetic expression"),
    ("__import__('os')", "calling '__import__'"),
    ("lambda: 1", "lambda"),
    ("(lambda x: x)(1)", "calling anything but"),
    ("eval('1')", "calling 'eval'"),
    ("open('f')", "calling 'open'"),
    ("exp2(x)", "calling 'exp2'"),
    ("x[0]", "subscripts"),
    ("x if y else z", "conditional"),
    ("x < y", "comparisons"),
    ("x and y", "'and'/'or'"),
    ("(y := 2)", "assignment"),
    ("[x for x in y]", "comprehensions"),
    ("(x, y)", "tuples"),
    ("'text'", "literal"),
    ("True", "literal"),
    ("1j", "literal"),
    ("x // y", "FloorDiv"),
    ("x % y", "Mod"),
    ("x ^ y", "BitXor"),
    ("~x", "Invert"),
    ("not x", "Not"),
    ("exp(x=1)", "keyword"),
    ("exp(x, y)", "takes 1 argument"),
    ("clip(x, 1)", "takes 3 argument"),
    ("exp", "function name"),
    ("f'{x}'", "f-strings"),
    ("x = 1", "not a single arithmetic expression"),
    ("", "non-empty"),
    ("-" * 100 + "x", "nested"),
]


@pytest.mark.parametrize("text, names", ACCEPTED)
def test_parser_accepts_whitelisted_formulas(text: str, names: set) -> None:
    assert parse_expression(text).names == frozenset(names)


@pytest.mark.parametrize("text, message", REJECTED)
def test_parser_rejects_everything_else(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="expression|non-empty") as info:
        parse_expression(text)
    assert message in str(info.value)


def test_parser_rejects_non_strings() -> None:
    for bad in (None, 3, ["x"], b"x"):
        with pytest.raises(ValueError, match="non-empty string"):
            parse_expression(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "expression, parents, constants, message",
    [
        ("a * b", ["a"], None, r"uses \['b'\]"),
        ("a * R", ["a"], None, r"uses \['R'\]"),
        ("a", ["a", "b"], None, r"does not use \['b'\]"),
        ("a", ["a"], {"R": 1.0}, r"does not use \['R'\]"),
        ("a * R", ["a", "R"], {"R": 1.0}, "both parents and constants"),
        ("a", ["a", "a"], None, "repeated"),
        ("exp(a)", ["exp"], None, "not a function name"),
        ("a + b", "ab", None, "sequence of names"),
        ("a", ["a"], None, "noise_mode"),
    ],
)
def test_expression_params_require_exactly_the_parents(expression, parents, constants, message) -> None:
    mode = "loud" if message == "noise_mode" else "exact"
    with pytest.raises(ValueError, match=message):
        expression_params(expression, parents, constants, mode)


def test_formulas_equal_hand_computed_values() -> None:
    rng = np.random.default_rng(0)
    n, T, V = rng.uniform(0.5, 2, 50), rng.uniform(250, 400, 50), rng.uniform(1, 10, 50)
    R = 8.314462618
    gas = parse_expression("n * R * T / V")({"n": n, "R": R, "T": T, "V": V})
    np.testing.assert_allclose(gas, n * R * T / V, rtol=1e-15)
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    assert parse_expression("clip(x, -1, 1)")({"x": x}).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    np.testing.assert_allclose(parse_expression("sigmoid(x)")({"x": x}), 1 / (1 + np.exp(-x)), rtol=1e-14)
    assert float(parse_expression("2 ** 3 ** 2")({})) == 512.0  # right-associative, as in Python
    assert float(parse_expression("-3 ** 2")({})) == -9.0
    assert float(parse_expression("max(2, 7) - min(2, 7) + pow(2, 10)")({})) == 1029.0
    assert np.isnan(parse_expression("log(x)")({"x": -1.0}))  # out of domain: NaN, no warning


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-3, 3), st.floats(0.1, 5)), min_size=1, max_size=20))
def test_vectorised_evaluation_matches_python_math(pairs: list) -> None:
    text = "x * y + exp(-abs(x)) / (1 + y ** 2) - sqrt(y) * tanh(x) + log(y) * cos(x)"
    x = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    got = parse_expression(text)({"x": x, "y": y})
    want = [
        a * b + math.exp(-abs(a)) / (1 + b**2) - math.sqrt(b) * math.tanh(a) + math.log(b) * math.cos(a)
        for a, b in pairs
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _two_node_scm(mode: str, noise_scale: float) -> SCM:
    root = NodeSpec("expression", expression_params("2.0", [], None, "additive"), "uniform", {"scale": 0.5})
    params = expression_params("3 * a + 1", ["a"], None, mode)
    child = NodeSpec("expression", params, "gaussian", {"scale": noise_scale})
    return SCM([[0, 1], [0, 0]], [root, child])


def test_noise_modes_combine_as_documented() -> None:
    exact = _two_node_scm("exact", 0.0).sample(500, rng=1)
    assert np.array_equal(exact[:, 1], 3 * exact[:, 0] + 1)
    additive = _two_node_scm("additive", 0.2).sample(500, rng=1)
    multiplicative = _two_node_scm("multiplicative", 0.2).sample(500, rng=1)
    eps = additive[:, 1] - (3 * additive[:, 0] + 1)
    assert 0.15 < eps.std() < 0.25
    np.testing.assert_allclose(multiplicative[:, 1], (3 * multiplicative[:, 0] + 1) * np.exp(eps), rtol=1e-12)
    shifted = _two_node_scm("exact", 0.0).sample(500, rng=1, interventions=[ParameterShift(1, factor=2.0)])
    np.testing.assert_allclose(shifted[:, 1], 2 * (3 * shifted[:, 0] + 1), rtol=1e-15)


def test_exact_node_refuses_noise_and_bad_formulas_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="nonzero noise"):
        _two_node_scm("exact", 0.1).sample(10, rng=0)
    bad = {"expression": "a.real", "parents": ["a"], "constants": {}, "noise_mode": "exact"}
    root = NodeSpec("expression", expression_params("1.0", [], None, "additive"), "uniform", {"scale": 1.0})
    with pytest.raises(ValueError, match="attribute access"):
        SCM([[0, 1], [0, 0]], [root, NodeSpec("expression", bad, "gaussian", {"scale": 0.0})])
    one_parent = NodeSpec("expression", expression_params("a", ["a"]), "gaussian", {"scale": 0.0})
    with pytest.raises(ValueError, match="2 parent column"):
        SCM([[0, 0, 1], [0, 0, 1], [0, 0, 0]], [root, root, one_parent])


# ---------------------------------------------------------------------------------------------
# scenario cards
# ---------------------------------------------------------------------------------------------


PAPER_SEMANTIC_DOMAINS = (
    "cybersecurity and IT operations", "education", "finance and credit", "government services",
    "healthcare delivery", "housing and real estate", "manufacturing", "public health", "urban transportation",
    "water and sanitation",
)
"""The paper's ten operational domains (§4.2)."""


def test_scenario_pools_cover_the_required_breadth() -> None:
    assert len(FORMULA_SCENARIOS) >= 30 and len({s["domain"] for s in FORMULA_SCENARIOS.values()}) >= 10
    # the paper's released pools stay within 16-25 variables per scenario (Appendix A, graph-design target)
    assert all(16 <= len(s["variables"]) <= 25 for s in FORMULA_SCENARIOS.values())
    semantic_domains = Counter(s["domain"] for s in SEMANTIC_SCENARIOS.values())
    assert len(SEMANTIC_SCENARIOS) >= 30 and set(PAPER_SEMANTIC_DOMAINS) <= set(semantic_domains)
    assert all(16 <= len(s["variables"]) <= 25 for s in SEMANTIC_SCENARIOS.values())
    assert not set(FORMULA_SCENARIOS) & set(SEMANTIC_SCENARIOS)


def test_first_release_cards_keep_their_instance_indices() -> None:
    """Old instance indices still mean the same scenario: the first release leads each list, in order."""
    assert list(SEMANTIC_SCENARIOS)[:6] == [
        "injection_molding_line", "emergency_department", "online_shop_funnel", "distribution_feeder",
        "irrigated_maize", "fulfilment_centre"]
    assert list(FORMULA_SCENARIOS)[:14] == [
        "gas_cylinder", "wall_heat_loss", "heater_circuit", "iv_bolus_pk", "spring_projectile", "satellite_orbit",
        "enzyme_assay", "arrhenius_cstr", "fishery_schaefer", "thin_lens_camera", "poiseuille_pipe",
        "cobb_douglas_firm", "solar_pv", "barometric_station"]


def test_library_passes_the_release_checks() -> None:
    result = audit_library(ALL_SCENARIOS.values())
    assert result.passed, [f.detail for f in result.failures]


def _relabelled(card: dict, prefix: str) -> dict:
    """``card`` with every variable renamed and every text rewritten: the same graph, nothing else shared."""
    rename = {v["name"]: f"{prefix}{i}" for i, v in enumerate(card["variables"])}
    return {"name": f"{prefix}card", "description": f"{prefix} description",
            "variables": [{"name": rename[v["name"]], "definition": f"{prefix} definition {i}"}
                          for i, v in enumerate(card["variables"])],
            "edges": [{"source": rename[e["source"]], "target": rename[e["target"]], "rationale": f"{prefix} {k}"}
                      for k, e in enumerate(card["edges"])]}


def test_library_checks_catch_reskins_copies_and_reused_text() -> None:
    """Each check fires on a hand-built offender and only there (each offence is built to hit one check)."""
    base = ALL_SCENARIOS["emergency_department"]
    other = ALL_SCENARIOS["gas_cylinder"]
    reskin = _relabelled(base, "zz")
    assert audit_library([base, reskin]).reasons == ("duplicate_topology",)
    # the same variable names with a different graph: one scenario re-skinned as another
    rewired = _relabelled(other, "yy")
    rewired["variables"] = [dict(v, name=w["name"]) for v, w in zip(rewired["variables"], base["variables"])]
    names = [v["name"] for v in rewired["variables"]]
    rewired["edges"] = [{"source": names[k], "target": names[k + 1], "rationale": f"yy {k}"}
                        for k in range(len(names) - 1)]
    assert audit_library([base, rewired]).reasons == ("shared_variables",)
    copied = copy.deepcopy(_relabelled(other, "xx"))
    copied["edges"][0]["rationale"] = base["edges"][3]["rationale"].upper()  # case and spacing do not hide a copy
    assert audit_library([base, copied]).reasons == ("repeated_text",)
    renamed = dict(_relabelled(other, "ww"), name=base["name"].upper())
    assert audit_library([base, renamed]).reasons == ("unique_name",)


@pytest.mark.parametrize("name", sorted(ALL_SCENARIOS))
def test_scenario_compiles_to_a_dag_matching_its_card(compiled: dict, name: str) -> None:
    spec = ALL_SCENARIOS[name]
    scm, names, meta = compiled[name]
    assert names == tuple(v["name"] for v in spec["variables"])
    assert is_dag(scm.graph)
    edges = {(e["source"], e["target"]) for e in spec["edges"]}
    assert {(names[i], names[j]) for i, j in zip(*np.nonzero(scm.graph))} == edges
    assert all(e["rationale"].strip() for e in spec["edges"])
    for j, variable in enumerate(spec["variables"]):
        assert variable["role"] in ROLES
        node = scm.nodes[j]
        if variable["role"] == "formula":
            assert node.noise_params["scale"] == 0.0 and node.mechanism_params["noise_mode"] == "exact"
            assert variable["law"].strip()
            parents = {names[i] for i in scm.parents(j)}
            assert parse_expression(variable["equation"]).names - set(spec.get("constants", {})) == parents
        else:
            assert node.noise_params["scale"] > 0.0
        if variable["role"] == "readout":
            assert not scm.graph[j].any()
    if name in FORMULA_SCENARIOS:
        assert meta["equations"], "a formula scenario needs named equations"
    assert meta["validation"]["problems"] == []
    json.dumps(meta)


@pytest.mark.parametrize("name", sorted(ALL_SCENARIOS))
def test_reference_draw_respects_declared_ranges(compiled: dict, name: str) -> None:
    scm, names, _ = compiled[name]
    X = scm.sample(2000, rng=0)
    for j, variable in enumerate(ALL_SCENARIOS[name]["variables"]):
        low, high = variable["range"]
        slack = 1e-9 * (high - low)
        assert np.all(np.isfinite(X[:, j]))
        assert X[:, j].min() >= low - slack and X[:, j].max() <= high + slack, names[j]
        assert np.ptp(X[:, j]) > 0, f"{names[j]} is constant"


@pytest.mark.parametrize("name", sorted(ALL_SCENARIOS))
def test_formula_residuals_are_exactly_zero_on_observational_rows(compiled: dict, name: str) -> None:
    compiled_scenario = compiled[name]
    X = compiled_scenario.scm.sample(1000, rng=7)
    residuals = check_sample(compiled_scenario, X)["formula_residuals"]
    assert set(residuals) == {v["name"] for v in ALL_SCENARIOS[name]["variables"] if v["role"] == "formula"}
    assert all(value == 0.0 for value in residuals.values())


def test_named_laws_hold_against_hand_written_numpy(compiled: dict) -> None:
    def sample(name: str) -> dict:
        scm, names, _ = compiled[name]
        X = scm.sample(500, rng=3)
        return {n: X[:, i] for i, n in enumerate(names)}

    gas = sample("gas_cylinder")
    np.testing.assert_allclose(gas["P_abs"], gas["n_gas"] * 8.314462618 * gas["T_bath"] / gas["V_cyl"], rtol=1e-13)
    pipe = sample("poiseuille_pipe")
    r = pipe["r_mm"] / 1000
    q = np.pi * r**4 * pipe["dP_kPa"] * 1000 / (8 * pipe["mu"] * pipe["L_m"]) * 1e6
    np.testing.assert_allclose(pipe["Q_flow"], q, rtol=1e-13)
    enzyme = sample("enzyme_assay")
    v0 = enzyme["Vmax"] * enzyme["S0"] / (40.0 * (1 + enzyme["I_conc"] / 15.0) + enzyme["S0"])
    np.testing.assert_allclose(enzyme["v0"], v0, rtol=1e-13)
    cstr = sample("arrhenius_cstr")
    k_tau = cstr["k_rate"] * cstr["V_reactor"] / cstr["Q_feed"]
    np.testing.assert_allclose(cstr["X_A"], k_tau / (1 + k_tau), rtol=1e-13)
    ed = sample("emergency_department")
    np.testing.assert_allclose(ed["occupancy"], ed["arrivals_per_hr"] * ed["los_hr"], rtol=1e-13)


@pytest.mark.parametrize("name", sorted(ALL_SCENARIOS))
def test_json_round_trip_resamples_identically(compiled: dict, name: str) -> None:
    scm = compiled[name].scm
    again = SCM.from_json(scm.to_json())
    assert np.array_equal(again.sample(300, rng=11), scm.sample(300, rng=11))


@pytest.mark.parametrize("name", sorted(ALL_SCENARIOS))
def test_intervening_on_an_input_changes_only_its_descendants(compiled: dict, name: str) -> None:
    scm, names, meta = compiled[name]
    observed = scm.sample(400, rng=5)
    inputs = [j for j, v in enumerate(meta["variables"]) if v["role"] == "input" and v["intervention"] is not None]
    assert inputs, "every scenario has a settable input"
    for j in inputs:
        low, high = meta["variables"][j]["range"]
        target_value = observed[:, j].min() + 0.37 * np.ptp(observed[:, j])
        intervened = scm.sample(400, rng=5, interventions=[HardDo(j, value=float(target_value))])
        assert low <= target_value <= high
        down = descendants(scm.graph, j) - {j}
        assert np.all(intervened[:, j] == target_value)
        for k in range(scm.d):
            if k != j and k not in down:
                assert np.array_equal(intervened[:, k], observed[:, k]), (names[j], names[k])
        for k in np.flatnonzero(scm.graph[j]):
            assert not np.array_equal(intervened[:, k], observed[:, k]), (names[j], names[k])


def test_check_sample_flags_broken_ranges_residuals_and_honours_masks(compiled: dict) -> None:
    spec = copy.deepcopy(FORMULA_SCENARIOS["gas_cylinder"])
    p_abs = next(v for v in spec["variables"] if v["name"] == "P_abs")
    p_abs["range"] = [50, 300]
    report = compile_scenario(spec).metadata["validation"]
    assert "P_abs" in report["range_violations"] and report["problems"]

    gas = compiled["gas_cylinder"]
    j = gas.names.index("P_abs")
    X = gas.scm.sample(200, rng=2)
    X[5, j] += 1e-9
    assert check_sample(gas, X)["formula_residuals"]["P_abs"] > 0
    forced = gas.scm.sample(200, rng=2, interventions=[HardDo(j, value=250.0)])
    assert check_sample(gas, forced)["formula_residuals"]["P_abs"] > 0
    mask = np.zeros(forced.shape, dtype=bool)
    mask[:, j] = True
    assert check_sample(gas, forced, mask)["formula_residuals"]["P_abs"] == 0.0
    parent = gas.names.index("n_gas")
    parent_forced = gas.scm.sample(200, rng=2, interventions=[HardDo(parent, value=1.4)])
    mask = np.zeros(parent_forced.shape, dtype=bool)
    mask[:, parent] = True
    assert check_sample(gas, parent_forced, mask)["formula_residuals"]["P_abs"] == 0.0


def _card() -> dict:
    return {
        "name": "toy",
        "domain": "circuits",
        "description": "a resistor",
        "constants": {"k": {"value": 2.0, "unit": "1", "definition": "gain"}},
        "variables": [
            {"name": "V", "unit": "V", "definition": "voltage", "range": [0, 20], "role": "input",
             "intervention": "set the supply", "distribution": {"family": "uniform", "low": 1, "high": 9}},
            {"name": "R", "unit": "ohm", "definition": "resistance", "range": [1, 200], "role": "input",
             "intervention": None, "distribution": {"family": "gaussian", "center": 50, "scale": 0.3,
                                                     "mode": "multiplicative"}},
            {"name": "I", "unit": "A", "definition": "current", "range": [0, 2], "role": "formula",
             "intervention": None, "equation": "k * V / R", "law": "Ohm's law"},
            {"name": "I_meter", "unit": "A", "definition": "ammeter", "range": [-1, 3], "role": "readout",
             "intervention": None, "equation": "I", "noise": {"family": "student_t", "scale": 0.05, "df": 4.0}},
            {"name": "P_el", "unit": "W", "definition": "dissipated power", "range": [0, 20], "role": "formula",
             "intervention": None, "equation": "V * I", "law": "P = V I"},
        ],
        "edges": [*edges_into("I", {"V": "drives", "R": "limits"}), *edges_into("I_meter", {"I": "measured"}),
                  *edges_into("P_el", {"V": "voltage", "I": "current"})],
    }


def _broken(change) -> dict:
    card = _card()
    change(card)
    return card


def _var(card: dict, name: str) -> dict:
    return next(v for v in card["variables"] if v["name"] == name)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c["edges"].pop(0), "reads variables"),
        (lambda c: c["edges"].append({"source": "V", "target": "I_meter", "rationale": "x"}), "reads variables"),
        (lambda c: _var(c, "I").update(equation="k * V / R / I_meter"), "reads variables"),
        (lambda c: c["edges"].append({"source": "I_meter", "target": "V", "rationale": "loop"}), "cycle"),
        (lambda c: _var(c, "I").update(equation="V / R"), "not used"),
        (lambda c: _var(c, "I").update(noise={"family": "gaussian", "scale": 1.0}), "extra keys"),
        (lambda c: _var(c, "I_meter").update(role="formula"), "extra keys"),
        (lambda c: _var(c, "V").update(name="R"), "used twice"),
        (lambda c: _var(c, "V").update(name="k"), "used twice"),
        (lambda c: _var(c, "V").update(range=[5, 1]), "low < high"),
        (lambda c: _var(c, "V").update(role="sensor"), "role must be"),
        (lambda c: _var(c, "V").update(role=["root"]), "role must be"),  # unhashable: no TypeError
        (lambda c: _var(c, "V").update(distribution={"family": 3, "center": 1, "scale": 1}), "naming a noise family"),
        (lambda c: _var(c, "I_meter").update(noise={"family": ["gaussian"], "scale": 0.1}), "naming a noise family"),
        (lambda c: _var(c, "V").update(colour="red"), "extra keys"),
        (lambda c: c.update(owner="me"), "unknown keys"),
        (lambda c: c["edges"][0].update(rationale=" "), "rationale"),
        (lambda c: c["edges"].append(dict(c["edges"][0])), "listed twice"),
        (lambda c: c["edges"].append({"source": "V", "target": "Q", "rationale": "x"}), "unknown variable"),
        (lambda c: _var(c, "V").update(distribution={"family": "cauchy", "center": 1, "scale": 1}), "cauchy"),
        (lambda c: _var(c, "V").update(distribution={"family": "uniform", "low": 1, "high": 9, "df": 3}),
         "no other keys"),
        (lambda c: _var(c, "I_meter").update(noise={"family": "gaussian", "scale": 0.1, "mode": "weird"}), "mode"),
        (lambda c: _var(c, "I_meter").update(noise={"family": "gaussian", "scale": 0.1, "df": 3}), "rejected"),
        (lambda c: c["edges"].append({"source": "I_meter", "target": "R", "rationale": "x"}), "cycle"),
    ],
)
def test_malformed_cards_are_rejected(change, message: str) -> None:
    assert compile_scenario(_card()).metadata["validation"]["problems"] == []
    with pytest.raises(ValueError, match=message):
        compile_scenario(_broken(change))


def test_structural_roles_are_enforced() -> None:
    card = _card()
    card["variables"].append({"name": "P", "unit": "W", "definition": "power", "range": [0, 10], "role": "formula",
                              "intervention": None, "equation": "V * I_meter", "law": "P = V I"})
    card["edges"] += edges_into("P", {"V": "voltage", "I_meter": "current"})
    with pytest.raises(ValueError, match="readout is a terminal"):
        compile_scenario(card)
    card = _card()
    card["edges"].append({"source": "V", "target": "R", "rationale": "x"})
    with pytest.raises(ValueError, match="must be a root"):
        compile_scenario(card)


# ---------------------------------------------------------------------------------------------
# real tables and networks
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cdt_resources():
    import importlib.util

    spec = importlib.util.find_spec("cdt")
    if spec is None:
        pytest.skip("cdt is not installed")
    return real._package_dirs("cdt")[0].joinpath("data", "resources")


def test_sachs_table_and_consensus_graph(cdt_resources) -> None:
    data, adjacency, names = real.load_sachs()
    assert data.shape == (7466, 11) and np.all(np.isfinite(data))
    assert names == real.SACHS_NAMES and len(names) == 11
    assert adjacency.sum() == 17 and is_dag(adjacency)
    with (cdt_resources / "cyto_full_data.csv").open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        first = [float(x) for x in next(reader)]
    assert tuple(header) == real.SACHS_CSV_COLUMNS
    assert data[0].tolist() == first
    protein = {"praf": "Raf", "pmek": "Mek", "plcg": "Plcg", "p44/42": "Erk", "pakts473": "Akt", "pjnk": "Jnk"}
    assert tuple(protein.get(column, column) for column in header) == names
    _, cdt_graph, _ = real.load_sachs(reference="cdt")
    assert cdt_graph.sum() == 18 and not is_dag(cdt_graph)
    with pytest.raises(ValueError, match="reference"):
        real.load_sachs(reference="bnlearn")


@functools.cache
def _pgmpy_edges(name: str) -> tuple[list[str], set[tuple[str, str]]]:
    reader_module = pytest.importorskip("pgmpy.readwrite")
    path = real._package_dirs("pgmpy")[0] / "utils" / "example_models" / f"{name}.bif.gz"
    with gzip.open(path, "rt") as handle:
        reader = reader_module.BIFReader(string=handle.read())
    return list(reader.variable_names), set(reader.get_model().edges())


@pytest.mark.parametrize("name", ["asia", "sachs", "child"])
def test_bif_parser_matches_pgmpy(name: str) -> None:
    variables, edges = _pgmpy_edges(name)
    adjacency, names = real.bn_structure(name)
    assert list(names) == variables
    assert {(names[i], names[j]) for i, j in zip(*np.nonzero(adjacency))} == edges


def test_sachs_consensus_edges_match_bnlearn_network_read_by_pgmpy() -> None:
    variables, edges = _pgmpy_edges("sachs")
    assert set(variables) == set(real.SACHS_NAMES)
    assert set(real.SACHS_CONSENSUS_EDGES) == edges


def test_bif_parser_handles_comments_and_both_header_forms() -> None:
    text = """
    // a comment with variable x { }
    network "demo" { property author me ; }
    /* variable ghost { } */
    variable a { type discrete [ 2 ] { lo, hi }; property note {braces} ; }
    variable b-1 { type discrete [ 2 ] { lo, hi }; }
    variable c.2 { type discrete [ 3 ] { x, y, z }; }
    probability ( a ) { table 0.5, 0.5; }
    probability ( b-1 | a ) { (lo) 0.9, 0.1; (hi) 0.2, 0.8; }
    probability ( c.2 a b-1 ) { default 0.3, 0.3, 0.4; }
    """
    names, parents = real.parse_bif_structure(text)
    assert names == ("a", "b-1", "c.2")
    assert parents == {"a": (), "b-1": ("a",), "c.2": ("a", "b-1")}


@pytest.mark.parametrize(
    "text, message",
    [
        ("variable a { } probability ( a | z ) { }", "undeclared"),
        ("variable a { } variable a { } probability ( a ) { }", "twice"),
        ("variable a { } variable b { }  probability ( a ) { }", "without a probability block"),
        ("variable a { } probability ( a ) { } probability ( a ) { }", "two probability blocks"),
        ("variable a { } variable b { } probability ( a | b ) { } probability ( b | a ) { }", "cycle"),
        ("variable a { probability ( a ) { }", "unclosed"),
        ("banana a { }", "expected a network"),
        ("variable a { } probability ( a | a ) { }", "repeats a parent"),
    ],
)
def test_bif_parser_rejects_malformed_networks(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        real.parse_bif_structure(text)


def test_semi_synthetic_scm_is_a_seeded_relabelling_of_the_network() -> None:
    pytest.importorskip("pgmpy", reason="network structures come from the pgmpy wheel")
    adjacency, _ = real.bn_structure("child")
    scm = real.semi_synthetic_scm("child", seed=4)
    graph = scm.graph
    assert graph.sum() == adjacency.sum() and is_dag(graph)
    assert sorted(graph.sum(0)) == sorted(adjacency.sum(0)) and sorted(graph.sum(1)) == sorted(adjacency.sum(1))
    assert scm.to_json() == real.semi_synthetic_scm("child", seed=4).to_json()
    assert scm.to_json() != real.semi_synthetic_scm("child", seed=5).to_json()
    X = scm.sample(500, rng=0)
    assert np.all(np.isfinite(X)) and np.all(X.std(axis=0) > 0)
    with pytest.raises(ValueError, match="network"):
        real.bn_structure("no_such_network")
    with pytest.raises(ValueError, match="seed"):
        real.semi_synthetic_scm("child", seed=-1)


def test_missing_packages_raise_an_import_error_naming_the_extra(monkeypatch) -> None:
    monkeypatch.setattr(real.importlib.util, "find_spec", lambda name, *args: None)
    with pytest.raises(ImportError, match=r"causal-gym\[real\].*pip install cdt"):
        real.load_sachs()
    with pytest.raises(ImportError, match=r"pip install pgmpy"):
        real.bn_structure("asia")
    assert real.available_real_datasets() == {"tables": (), "networks": ()}


def test_real_loaders_do_not_import_cdt_or_pgmpy() -> None:
    code = (
        "import sys\n"
        "from causal_gym.envs.arena import real\n"
        "sets = real.available_real_datasets()\n"
        "if sets['tables']: real.load_sachs()\n"
        "if sets['networks']: real.bn_structure('asia')\n"
        "print(sorted(m for m in ('cdt', 'pgmpy', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
