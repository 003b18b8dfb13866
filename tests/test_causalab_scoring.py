"""CausaLab hypothesis DSL and scoring: hand-computed cases, brute-force and cross-module references."""

import itertools
import json
import math

import numpy as np
import pytest

from causal_gym import metrics
from causal_gym.envs.causalab.hypothesis import (
    FREQ,
    Hypothesis,
    HypothesisError,
    hypothesis_schema,
    parse_hypothesis,
    predict_frequency,
    reproduces,
    verify,
)
from causal_gym.envs.causalab.scoring import (
    adjacency_from_edges,
    directed_shd,
    final_hypothesis,
    freq_weight_scores,
    hypothesis_metrics,
    imec_size_for_targets,
    prf,
    root_nodes,
    task_success,
    trajectory,
)

F = FREQ
PROPS = ["density", "ph", "moisture"]


def _edges(*pairs):
    return [{"from": a, "to": b} for a, b in pairs]


BASE = {
    "edges": _edges(("density", F), ("ph", F), ("moisture", "density")),
    "freq_equation": "resonanceFreq = base + c_density*density + c_ph*ph",
    "coefficients": {"base": 20, "c_density": 2, "c_ph": 3},
}
QUAD = {
    "edges": _edges(("density", F), ("ph", "density")),
    "freq_equation": "resonanceFreq = base + c_density_2*density^2 + c_density_1*density",
    "coefficients": {"base": 90.01, "c_density_2": 0.016, "c_density_1": -1.73385},
}


def _with(base, **changes):
    out = json.loads(json.dumps(base))
    out.update(changes)
    return out


def _ok(value, kind="linear"):
    h = parse_hypothesis(value, PROPS, kind)
    assert isinstance(h, Hypothesis), getattr(h, "message", h)
    return h


# ---------------------------------------------------------------------------------------------
# parser: acceptance
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "equation",
    [
        "resonanceFreq = base + c_density*density + c_ph*ph",
        "base+c_density*density+c_ph*ph",
        "resonanceFreq=c_ph ph + density*c_density + base",
        "resonanceFreq = base + (c_density * density) + c_ph·ph",
        "  resonanceFreq =  c_density×density+ base +c_ph*ph  ",
    ],
)
def test_linear_equation_spellings_parse_to_one_hypothesis(equation):
    h = _ok(_with(BASE, freq_equation=equation))
    assert h.edges == {("density", F), ("ph", F), ("moisture", "density")}
    assert h.freq_equation == "resonanceFreq = base + c_density*density + c_ph*ph"
    assert dict(h.coefficients) == {"base": 20.0, "c_density": 2.0, "c_ph": 3.0}
    assert h.freq_parents == ("density", "ph")
    assert h.linear_coefficients == {"density": 2.0, "ph": 3.0}


def test_json_string_fenced_json_and_repeated_edges_are_accepted():
    reference = _ok(BASE)
    assert _ok(json.dumps(BASE)) == reference
    assert _ok("```json\n" + json.dumps(BASE) + "\n```") == reference
    assert _ok(_with(BASE, edges=BASE["edges"] + BASE["edges"][:1])) == reference
    # the frequency may be listed among the properties
    assert parse_hypothesis(BASE, PROPS + [F]) == reference


def test_empty_graph_and_edges_out_of_frequency_are_valid_claims():
    h = _ok({"edges": [], "freq_equation": "resonanceFreq = base", "coefficients": {"base": 7.5}})
    assert h.edges == frozenset() and h.freq_parents == ()
    h = _ok(_with(BASE, edges=_edges(("density", F), ("ph", F), (F, "moisture"))))
    assert (F, "moisture") in h.edges and h.freq_parents == ("density", "ph")


@pytest.mark.parametrize(
    "equation",
    [
        "resonanceFreq = base + c_density_2*density^2 + c_density_1*density",
        "base + c_density_2*density**2 + c_density_1*density",
        "c_density_1 density + c_density_2 (density^2) + base",
        "base + c_density_2*density*density + density*c_density_1",
        "resonanceFreq = base + c_density_2·density² + c_density_1×density",
    ],
)
def test_quadratic_equation_spellings(equation):
    h = _ok(_with(QUAD, freq_equation=equation), "quadratic")
    assert h.freq_equation == "resonanceFreq = base + c_density_2*density^2 + c_density_1*density"
    assert h.linear_coefficients == {"density": -1.73385}
    assert h.kind == "quadratic"


# ---------------------------------------------------------------------------------------------
# parser: rejection table
# ---------------------------------------------------------------------------------------------

_BAD_LINEAR = [
    (None, "no hypothesis given"),
    ('{"edges": [}', "not valid JSON"),
    ([1, 2], "must be a JSON object"),
    ({}, "hypothesis is empty"),
    ({k: v for k, v in BASE.items() if k != "coefficients"}, "missing key 'coefficients'"),
    (_with(BASE, notes="hi"), "unknown key(s) ['notes']"),
    (_with(BASE, edges="density->ph"), "'edges' must be a list"),
    (_with(BASE, edges=[{"source": "density", "target": F}]), "edges[0] must be an object with exactly the keys"),
    (_with(BASE, edges=BASE["edges"] + _edges(("radiation", "ph"))), "undeclared property 'radiation'"),
    (_with(BASE, edges=BASE["edges"] + _edges(("ph", "ph"))), "self-loop ph -> ph"),
    (_with(BASE, edges=BASE["edges"] + _edges(("density", "moisture"))),
     "directed cycle density -> moisture -> density"),
    (_with(BASE, freq_equation=["base"]), "'freq_equation' must be a non-empty string"),
    (_with(BASE, freq_equation="resonanceFreq = base + c_density*density - c_ph*ph"), "join terms with '+'"),
    (_with(BASE, freq_equation="resonanceFreq = 20 + c_density*density + c_ph*ph"), "numbers are not allowed"),
    (_with(BASE, freq_equation="base + c_density*dens + c_ph*ph"), "unknown name 'dens'"),
    (_with(BASE, freq_equation="base + density + c_ph*ph"), "has no coefficient name; write c_density*density"),
    (_with(BASE, freq_equation="base + c_ph*density + c_ph*ph"),
     "coefficient c_ph multiplies density; name it c_density"),
    (_with(BASE, freq_equation="base + c_density*density^2 + c_ph*ph"), "linear family has no squared terms"),
    (_with(BASE, freq_equation="base + c_density*density*ph"), "interaction terms"),
    (_with(BASE, freq_equation="c_density*density + c_ph*ph"), "needs the constant term 'base'"),
    (_with(BASE, freq_equation="frequency = base + c_density*density + c_ph*ph"), "left-hand side"),
    (_with(BASE, freq_equation="base + c_density*resonanceFreq"), "cannot appear on the right-hand side"),
    (_with(BASE, freq_equation="base + c_density*density + c_ph*ph + c_ph*ph"), "appears more than once"),
    (_with(BASE, freq_equation="base + c_density*density^3 + c_ph*ph"), "only powers 1 and 2"),
    (_with(BASE, freq_equation="base + c_density*(density + c_ph*ph"), "unbalanced parentheses"),
    (_with(BASE, freq_equation="base + c_density*density + c_ph*ph + $"), "unexpected character '$'"),
    (_with(BASE, freq_equation="base + c_density*density + + c_ph*ph"), "empty term"),
    (_with(BASE, coefficients=[20, 2, 3]), "'coefficients' must be an object"),
    (_with(BASE, coefficients={"base": 20, "c_density": "2", "c_ph": 3}), "c_density must be a finite number, got '2'"),
    (_with(BASE, coefficients={"base": 20, "c_density": True, "c_ph": 3}), "c_density must be a finite number"),
    (_with(BASE, coefficients={"base": 20, "c_density": 2, "c_ph": 0}), "coefficient c_ph is 0"),
    (_with(BASE, coefficients={"base": 20, "c_density": 2, "c_ph": 3, "c_radiation": 1}),
     "undeclared property 'radiation'"),
    (_with(BASE, coefficients={"base": 20, "c_density": 2, "c_ph": 3, "c_moisture": 1}),
     "coefficient c_moisture is not used: moisture is not a parent of resonanceFreq"),
    (_with(BASE, coefficients={"c_density": 2, "c_ph": 3}), "'coefficients' needs 'base'"),
    (_with(BASE, coefficients={"base": 20, "c_density": 2}), "'coefficients' lacks ['c_ph']"),
    (_with(BASE, coefficients={"base": 20, "c_density_1": 2, "c_ph": 3}),
     "quadratic-family name; the linear family uses c_density"),
    (_with(BASE, coefficients={"base": 20, "weight": 2}), "coefficient names are 'base' and c_<property>"),
    (_with(BASE, edges=BASE["edges"] + _edges(("moisture", F))), "they must match"),
    (_with(BASE, edges=_edges(("density", F))), "but the parents of resonanceFreq in edges are ['density']"),
]


@pytest.mark.parametrize("value, expected", _BAD_LINEAR, ids=[m for _, m in _BAD_LINEAR])
def test_malformed_hypotheses_are_returned_as_errors(value, expected):
    result = parse_hypothesis(value, PROPS)
    assert isinstance(result, HypothesisError)
    assert expected in result.message
    assert result.message.startswith("invalid hypothesis: ")


def test_nan_coefficient_and_several_problems_reported_together():
    bad = _with(BASE, coefficients={"base": 20, "c_density": 2, "c_ph": 3})
    bad["coefficients"]["c_ph"] = float("nan")
    bad["edges"] = bad["edges"] + _edges(("ph", "ph"))
    result = parse_hypothesis(bad, PROPS)
    assert isinstance(result, HypothesisError) and len(result.problems) == 2
    assert "self-loop" in result.message and "c_ph must be a finite number" in result.message


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"freq_equation": "base + c_density*density"}, "name it c_density_1"),
        ({"freq_equation": "base + c_density_1*density", "coefficients": {"base": 1, "c_density_1": 2}},
         "needs both c_density_2*density^2 and c_density_1*density"),
        ({"coefficients": {"base": 1, "c_density": 2}}, "must be named c_<property>_1 or c_<property>_2"),
        ({"freq_equation": "base + c_density_1*density^2 + c_density_2*density"}, "name it c_density_2"),
    ],
)
def test_quadratic_rejections(changes, expected):
    result = parse_hypothesis(_with(QUAD, **changes), PROPS, "quadratic")
    assert isinstance(result, HypothesisError)
    assert expected in result.message


def test_programmer_errors_raise():
    with pytest.raises(ValueError, match="kind"):
        parse_hypothesis(BASE, PROPS, kind="cubic")
    with pytest.raises(ValueError, match="repeated"):
        parse_hypothesis(BASE, ["ph", "ph"])
    with pytest.raises(ValueError, match="clash"):
        parse_hypothesis(BASE, ["c_x"])


# ---------------------------------------------------------------------------------------------
# random hypotheses: spelling-invariant parsing, round trip, schema
# ---------------------------------------------------------------------------------------------

POOL = ["temperatureC", "moisture", "density", "quantumSize", "radiation", "pressure", "ph", "conductivity"]


def _render(parents, kind, rng):
    """A randomly spelled equation (term and factor order, spacing, '*' or space, power syntax)."""
    terms = ["base"]
    for p in parents:
        if kind == "quadratic":
            pieces = [(f"c_{p}_2", f"{p}{rng.choice(['^2', '**2', '²'])}"), (f"c_{p}_1", p)]
        else:
            pieces = [(f"c_{p}", p)]
        for coef, var in pieces:
            a, b = (coef, var) if rng.random() < 0.5 else (var, coef)
            terms.append(f"{a}{rng.choice(['*', ' * ', ' ', '·'])}{b}")
    rng.shuffle(terms)
    rhs = "".join(t + rng.choice(["+", " + ", "  +"]) for t in terms)[:-1].rstrip("+ ")
    return rhs if rng.random() < 0.3 else f"{F} = {rhs}"


def _random_case(rng, kind):
    n = int(rng.integers(2, 7))
    props = list(rng.choice(POOL, size=n, replace=False))
    nodes = props + [F]
    order = list(rng.permutation(nodes))
    edges = {(a, b) for i, a in enumerate(order) for b in order[i + 1:] if rng.random() < 0.4}
    parents = [p for p in props if (p, F) in edges]
    coefficients = {"base": float(rng.integers(15, 26))}
    for p in parents:
        for suffix in (["_2", "_1"] if kind == "quadratic" else [""]):
            coefficients[f"c_{p}{suffix}"] = float(rng.choice([-3, -2, -1, 1, 2, 3, 0.016, -1.7]))
    value = {"edges": _edges(*sorted(edges)), "freq_equation": _render(parents, kind, rng),
             "coefficients": coefficients}
    return props, edges, parents, coefficients, value


@pytest.mark.parametrize("kind", ["linear", "quadratic"])
def test_random_hypotheses_parse_round_trip_and_match_schema(kind):
    jsonschema = pytest.importorskip("jsonschema")
    rng = np.random.default_rng(7)
    for _ in range(150):
        props, edges, parents, coefficients, value = _random_case(rng, kind)
        h = parse_hypothesis(value, props, kind)
        assert isinstance(h, Hypothesis), (value, getattr(h, "message", None))
        assert h.edges == edges and dict(h.coefficients) == coefficients
        assert parse_hypothesis(h.to_dict(), props, kind) == h
        schema = hypothesis_schema(props, kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(value, schema)
        record = {p: float(rng.integers(0, 101)) for p in props}
        if kind == "quadratic":
            expected = coefficients["base"] + sum(
                coefficients[f"c_{p}_2"] * record[p] ** 2 + coefficients[f"c_{p}_1"] * record[p] for p in parents)
        else:
            expected = coefficients["base"] + sum(coefficients[f"c_{p}"] * record[p] for p in parents)
        assert predict_frequency(h, record) == pytest.approx(expected, abs=1e-9)


def test_schema_rejects_structural_errors():
    jsonschema = pytest.importorskip("jsonschema")
    schema = hypothesis_schema(PROPS)
    jsonschema.validate(BASE, schema)
    for bad in (
        _with(BASE, notes="x"),
        _with(BASE, edges=_edges(("radiation", F))),
        _with(BASE, coefficients={"base": "20"}),
        _with(BASE, coefficients={"base": 20, "c_density_1": 2}),
        {k: v for k, v in BASE.items() if k != "edges"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    quad = hypothesis_schema(PROPS, "quadratic")
    jsonschema.validate(QUAD, quad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(BASE, quad)


# ---------------------------------------------------------------------------------------------
# prediction and verification
# ---------------------------------------------------------------------------------------------


def _linear_records():
    # frequency = 20 + 2*density + 3*ph, each value rounded to 2 decimals as the environment does
    rows = [(10.5, 3.25), (0.0, 0.0), (47.13, 91.07), (-3.3, 12.01)]
    return [{"density": d, "ph": p, "moisture": 50.0, F: round(20 + 2 * d + 3 * p, 2)} for d, p in rows]


def test_predict_frequency_hand_values():
    h = _ok(BASE)
    assert predict_frequency(h, {"density": 10.5, "ph": 3.25}) == pytest.approx(50.75)
    q = _ok(QUAD, "quadratic")
    # 90.01 + 0.016 * 22^2 - 1.73385 * 22 = 90.01 + 7.744 - 38.1447
    assert predict_frequency(q, {"density": 22.0}) == pytest.approx(59.6093)
    with pytest.raises(ValueError, match="no value for 'ph'"):
        predict_frequency(h, {"density": 1.0})


def test_verify_linear_records():
    records = _linear_records()
    result = verify(_ok(BASE), records)
    assert result.ok and result.n_records == 4 and result.max_abs_error < 1e-9
    assert reproduces(_ok(BASE), records)
    wrong = _ok(_with(BASE, coefficients={"base": 20, "c_density": 2, "c_ph": 2}))
    result = verify(wrong, records)
    # residual = -ph per record: -3.25, 0, -91.07, -12.01
    assert not result.ok
    assert result.worst_record_index == 2
    assert result.max_abs_error == pytest.approx(91.07)
    assert result.residuals == pytest.approx((-3.25, 0.0, -91.07, -12.01))
    assert "misses 3 of 4 records" in result.message and "record 2" in result.message
    assert not reproduces(wrong, records)


def test_verify_uses_two_decimal_rounding_semantics():
    q = _ok(QUAD, "quadratic")
    records = [{"density": 22.0, F: 59.61}, {"density": 54.0, F: round(90.01 + 0.016 * 54**2 - 1.73385 * 54, 2)}]
    assert reproduces(q, records, tol=0.0)  # 59.6093 rounds to 59.61
    assert not reproduces(q, [{"density": 22.0, F: 59.62}])  # off by 0.0107, beyond the default slack too
    # with no slack: a prediction 0.0051 away from the reading could not round to it
    assert not reproduces(q, [{"density": 22.0, F: 59.6093 + 0.0051}], tol=0.0)
    assert reproduces(q, [{"density": 22.0, F: 59.6093 + 0.0049}], tol=0.0)
    off = {"base": 90.01, "c_density_2": 0.016, "c_density_1": -1.73485}
    slightly_off = _ok(_with(QUAD, coefficients=off), "quadratic")
    assert not reproduces(slightly_off, records)  # c1 off by 0.001 -> error 0.022 at density 22


def test_verify_default_slack_accepts_a_fitted_equation_near_the_rounding_edge():
    # issue 14.16: readings are the true equation rounded to 2 decimals; an equation fitted from them
    # predicts within a few thousandths of the truth. With zero slack beyond the rounding it misses
    # every record where the truth sits on the other side of the rounding edge.
    q = _ok(QUAD, "quadratic")
    records = [{"density": float(d), F: round(90.01 + 0.016 * d * d - 1.73385 * d, 2)} for d in range(0, 101, 3)]
    assert reproduces(q, records) and reproduces(q, records, tol=0.0)
    for shift in (0.0048, -0.0048):
        fitted = _ok(_with(QUAD, coefficients={**QUAD["coefficients"], "base": 90.01 + shift}), "quadratic")
        # by hand: |truth - reading| <= 0.005, so the fitted prediction is within 0.0098 of each reading
        assert verify(fitted, records).ok and verify(fitted, records).max_abs_error <= 0.0098 + 1e-12
        assert not verify(fitted, records, tol=0.0).ok  # the old rule: some reading is > 0.005 away
    beyond = _ok(_with(QUAD, coefficients={**QUAD["coefficients"], "base": 90.01 + 0.0151}), "quadratic")
    assert not reproduces(beyond, records)  # > 0.0101 from every reading: more than one display unit


def test_verify_without_records_and_bad_records():
    result = verify(_ok(BASE), [])
    assert result.ok and result.n_records == 0 and result.worst_record_index is None
    with pytest.raises(ValueError, match="resonanceFreq"):
        verify(_ok(BASE), [{"density": 1.0, "ph": 2.0}])


# ---------------------------------------------------------------------------------------------
# set metrics
# ---------------------------------------------------------------------------------------------


def test_prf_conventions():
    assert prf(set(), set()) == (1.0, 1.0, 1.0)
    assert prf(set(), {1}) == (0.0, 0.0, 0.0)
    assert prf({1}, set()) == (0.0, 0.0, 0.0)
    p = prf({1, 2, 3, 4}, {1, 2, 5})
    assert p.precision == 0.5 and p.recall == pytest.approx(2 / 3) and p.f1 == pytest.approx(4 / 7)


def test_shd_counts_reversal_once():
    assert directed_shd({("a", "b")}, {("b", "a")}) == 1
    assert directed_shd({("a", "b"), ("c", "d")}, {("b", "a"), ("a", "c")}) == 3  # reversed, extra, missing
    assert directed_shd(set(), {("a", "b"), ("b", "c")}) == 2
    assert directed_shd({("a", "b")}, {("a", "b")}) == 0


def _random_dag(rng, d, p):
    order = rng.permutation(d)
    a = np.zeros((d, d), dtype=np.int8)
    for i in range(d):
        for j in range(i + 1, d):
            if rng.random() < p:
                a[order[i], order[j]] = 1
    return a


def _edge_set(a):
    return {(f"n{i}", f"n{j}") for i, j in zip(*np.nonzero(a))}


def test_set_metrics_agree_with_adjacency_metrics_on_random_dags():
    rng = np.random.default_rng(3)
    for _ in range(300):
        d = int(rng.integers(2, 8))
        true, est = _random_dag(rng, d, rng.random()), _random_dag(rng, d, rng.random())
        assert directed_shd(_edge_set(est), _edge_set(true)) == metrics.shd(true, est)
        reference = metrics.directed_edge_scores(true, est)
        assert tuple(prf(_edge_set(est), _edge_set(true))) == pytest.approx(tuple(reference))
        names = [f"n{i}" for i in range(d)]
        assert np.array_equal(adjacency_from_edges(_edge_set(true), names), true)


def test_root_nodes_exclude_off_path_nodes():
    edges = {("moisture", "density"), ("density", F), ("ph", F), ("ph", "radiation"), ("conductivity", "radiation"),
             ("pressure", "pressure2")}
    assert root_nodes(edges) == {"moisture", "ph"}
    assert root_nodes(set()) == frozenset()
    assert root_nodes({("a", "b"), ("b", F), ("c", "b"), (F, "d"), ("e", "d")}) == {"a", "c"}


def test_freq_weight_scores_tolerance():
    assert freq_weight_scores({"a": 2.0, "b": 1.0}, {"a": 2.0, "c": 3.0}) == (0.5, 0.5, 0.5)
    assert freq_weight_scores({"a": 2.0000005}, {"a": 2.0}).f1 == 1.0
    assert freq_weight_scores({"a": 2.001}, {"a": 2.0}, tol=1e-6).f1 == 0.0
    assert freq_weight_scores({"a": 2.011}, {"a": 2.0}).f1 == 0.0  # the default tolerance is 0.01
    assert freq_weight_scores({"a": 2.001}, {"a": 2.0}, tol=0.01).f1 == 1.0
    assert freq_weight_scores({"a": 1.0}, {"a": 2.0, "b": 1.0}) == (0.0, 0.0, 0.0)
    assert freq_weight_scores({}, {"a": 2.0}) == (0.0, 0.0, 0.0)


TRUE_EDGES = {("moisture", "density"), ("density", F), ("ph", F), ("ph", "radiation"), ("conductivity", "radiation")}
TRUE_COEFS = {"density": 2.0, "ph": 3.0}
ALL_PROPS = ["moisture", "density", "ph", "radiation", "conductivity"]
PREDICTED = {
    "edges": _edges(("density", "moisture"), ("density", F), ("moisture", F), ("ph", "radiation")),
    "freq_equation": "resonanceFreq = base + c_density*density + c_moisture*moisture",
    "coefficients": {"base": 20, "c_density": 2, "c_moisture": 1},
}


def test_hypothesis_metrics_hand_computed():
    h = parse_hypothesis(PREDICTED, ALL_PROPS)
    m = hypothesis_metrics(TRUE_EDGES, TRUE_COEFS, ALL_PROPS, h)
    expected = {
        "edge_precision": 2 / 4, "edge_recall": 2 / 5, "edge_f1": 4 / 9,
        "shd": 4.0,  # reversed density-moisture, extra moisture->F, missing ph->F and conductivity->radiation
        "freq_edge_precision": 0.5, "freq_edge_recall": 0.5, "freq_edge_f1": 0.5,
        "root_precision": 0.0, "root_recall": 0.0, "root_f1": 0.0,  # predicted {density}, true {moisture, ph}
        "freq_weight_precision": 0.5, "freq_weight_recall": 0.5, "freq_weight_f1": 0.5,
    }
    assert m == pytest.approx(expected)


def test_hypothesis_metrics_perfect_and_none():
    perfect = parse_hypothesis({
        "edges": [{"from": a, "to": b} for a, b in sorted(TRUE_EDGES)],
        "freq_equation": "base + c_density*density + c_ph*ph",
        "coefficients": {"base": 11, "c_density": 2, "c_ph": 3},
    }, ALL_PROPS)
    m = hypothesis_metrics(TRUE_EDGES, TRUE_COEFS, ALL_PROPS, perfect)
    assert m.pop("shd") == 0.0 and all(v == 1.0 for v in m.values())
    m = hypothesis_metrics(TRUE_EDGES, TRUE_COEFS, ALL_PROPS, None)
    assert m.pop("shd") == 5.0 and all(v == 0.0 for v in m.values())


def test_hypothesis_metrics_quadratic_uses_linear_coefficient():
    q = _ok(QUAD, "quadratic")
    truth = {("density", F), ("ph", "density")}
    assert hypothesis_metrics(truth, {"density": -1.73385}, PROPS, q)["freq_weight_f1"] == 1.0
    assert hypothesis_metrics(truth, {"density": 0.016}, PROPS, q)["freq_weight_f1"] == 0.0
    # ph is a root of the true graph and of the hypothesis
    assert hypothesis_metrics(truth, {"density": 0.016}, PROPS, q)["root_f1"] == 1.0


def test_hypothesis_metrics_rejects_inconsistent_truth():
    with pytest.raises(ValueError, match="true_coefficients"):
        hypothesis_metrics(TRUE_EDGES, {"density": 2.0}, ALL_PROPS, None)
    with pytest.raises(ValueError, match="true_edges"):
        hypothesis_metrics({("nowhere", F)}, {"nowhere": 1.0}, ALL_PROPS, None)


def test_trajectory_carries_last_valid_nonempty_hypothesis():
    good = parse_hypothesis(PREDICTED, ALL_PROPS)
    empty = parse_hypothesis({"edges": [], "freq_equation": "base", "coefficients": {"base": 1}}, ALL_PROPS)
    bad = parse_hypothesis({"edges": 3}, ALL_PROPS)
    assert isinstance(bad, HypothesisError) and isinstance(empty, Hypothesis)
    steps = [None, bad, good, None, empty, bad]
    curve = trajectory(steps, TRUE_EDGES, TRUE_COEFS, ALL_PROPS)
    assert [row["stated"] for row in curve] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    none_score = hypothesis_metrics(TRUE_EDGES, TRUE_COEFS, ALL_PROPS, None)
    good_score = hypothesis_metrics(TRUE_EDGES, TRUE_COEFS, ALL_PROPS, good)
    for row, expected in zip(curve, [none_score] * 2 + [good_score] * 4):
        row = dict(row)
        row.pop("stated")
        assert row == expected
    assert final_hypothesis(steps) == good
    assert final_hypothesis([None, bad, empty]) is None


def test_trajectory_matches_scoring_every_prefix_from_scratch():
    # trajectory rescores only when the claim in force changes (equal restatements are not rescored);
    # reference: the claim in force after step k is final_hypothesis(steps[:k + 1]), scored anew
    rng = np.random.default_rng(21)
    texts = [json.dumps(_with(PREDICTED, coefficients={"base": 20, "c_density": c, "c_moisture": 1}))
             for c in (2, 2.005, 3)] + [json.dumps({"edges": [], "freq_equation": "base", "coefficients": {"base": 1}}),
                                         json.dumps({"edges": 3})]
    for _ in range(60):
        steps = [None if k == len(texts) else parse_hypothesis(texts[k], ALL_PROPS)  # fresh, equal objects
                 for k in rng.integers(0, len(texts) + 1, size=int(rng.integers(1, 9)))]
        curve = trajectory(steps, TRUE_EDGES, TRUE_COEFS, ALL_PROPS)
        for k, row in enumerate(curve):
            in_force = final_hypothesis(steps[: k + 1])
            stated = float(isinstance(steps[k], Hypothesis) and bool(steps[k].edges))
            assert row == {**hypothesis_metrics(TRUE_EDGES, TRUE_COEFS, ALL_PROPS, in_force), "stated": stated}


# ---------------------------------------------------------------------------------------------
# IMEC against a brute force over all DAGs
# ---------------------------------------------------------------------------------------------


def _all_dags(d):
    pairs = list(itertools.combinations(range(d), 2))
    out = []
    for choice in itertools.product((0, 1, 2), repeat=len(pairs)):
        edges = frozenset((i, j) if c == 1 else (j, i) for (i, j), c in zip(pairs, choice) if c)
        # acyclic iff repeatedly removing sources empties the graph
        alive, rest = set(range(d)), set(edges)
        while alive:
            sources = {v for v in alive if not any(b == v for _, b in rest)}
            if not sources:
                break
            alive -= sources
            rest = {(a, b) for a, b in rest if a not in sources}
        if not alive:
            out.append(edges)
    return out


def _markov_signature(edges):
    skeleton = frozenset(frozenset(e) for e in edges)
    colliders = frozenset(
        (frozenset((a, c)), b) for (a, b) in edges for (c, b2) in edges
        if b2 == b and a < c and frozenset((a, c)) not in skeleton
    )
    return skeleton, colliders


def _brute_imec_sizes(dags, targets):
    """Hauser & Bühlmann (2012, Thm. 10): I-equivalent iff every intervened graph (edges into the
    target removed), the observational one included, has the same skeleton and v-structures."""
    family = [()] + [(t,) for t in targets]
    signature = {
        dag: tuple(_markov_signature({(a, b) for a, b in dag if b not in target}) for target in family) for dag in dags
    }
    counts = {}
    for s in signature.values():
        counts[s] = counts.get(s, 0) + 1
    return {dag: counts[s] for dag, s in signature.items()}


def _adjacency(dag, d):
    a = np.zeros((d, d), dtype=np.int8)
    for i, j in dag:
        a[i, j] = 1
    return a


def test_imec_hand_cases():
    chain = _adjacency({(0, 1), (1, 2)}, 3)
    assert imec_size_for_targets(chain, []) == 3
    assert imec_size_for_targets(chain, [1]) == 1
    assert imec_size_for_targets(chain, [0, 0]) == 1
    assert imec_size_for_targets(chain, [2]) == 2  # 0 -- 1 stays reversible
    with pytest.raises(ValueError):
        imec_size_for_targets(chain, [3])


def test_imec_matches_brute_force_on_three_nodes():
    dags = _all_dags(3)
    assert len(dags) == 25
    for r in range(4):
        for targets in itertools.combinations(range(3), r):
            sizes = _brute_imec_sizes(dags, targets)
            for dag in dags:
                assert imec_size_for_targets(_adjacency(dag, 3), targets) == sizes[dag]


def test_imec_matches_brute_force_on_all_four_node_dags():
    dags = _all_dags(4)
    assert len(dags) == 543
    for r in range(5):
        for targets in itertools.combinations(range(4), r):
            sizes = _brute_imec_sizes(dags, targets)
            for dag in dags:
                assert imec_size_for_targets(_adjacency(dag, 4), targets) == sizes[dag]


# ---------------------------------------------------------------------------------------------
# task success
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prediction, target, strict, original",
    [
        (104.99, 100.0, True, True),
        (105.0, 100.0, False, False),
        (105.9, 100.8, False, True),  # original truncates 105.9 to 105: |105 - 100.8| = 4.2
        (95.5, 100.4, True, False),  # original truncates 95.5 to 95: |95 - 100.4| = 5.4
        (100.2, 100.9, True, True),
        (math.nan, 100.0, False, False),
    ],
)
def test_task_success_rules(prediction, target, strict, original):
    assert task_success(prediction, target) is strict
    assert task_success(prediction, target, rule="original") is original


def test_task_success_original_integer_match_and_bad_rule():
    assert task_success(100.9, 100.1, tol=0.5, rule="original")  # same integer part
    assert not task_success(100.9, 100.1, tol=0.5)
    with pytest.raises(ValueError, match="rule"):
        task_success(1.0, 1.0, rule="loose")
