"""The working-graph harness: edge-list parsing, the toolbox, budgets, the record and WorkingGraphEnv.

A tiny concrete WorkingGraphEnv (five columns of a linear-Gaussian SCM over a random DAG, with a partial
correlation tool that costs 1 + |conditioning set| tests) exercises the episode protocol end to end.
"""

from __future__ import annotations

import json
import string

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from causal_gym.graphs import meek
from causal_gym.harness.budgets import Budget, Budgets
from causal_gym.harness.record import CallRecord, EpisodeLog
from causal_gym.harness.tool_env import DONE, LAST_TURN, OPEN, ToolResult
from causal_gym.harness.toolbox import TEXT_CHARSET, ActionField, Tool, Toolbox, ToolCall, ToolError
from causal_gym.harness.working_graph import (
    RELATIONS,
    format_edge_list,
    parse_edge_list,
    relation_of,
    render_ansi,
    render_rgb,
    set_relation,
)
from causal_gym.harness.working_graph_env import SUBMISSION_SOURCES, WorkingGraphEnv
from causal_gym.metrics import adjacency_scores, nshd

TEST_ID = "causal_gym_test/TinyTool-v0"


class TinyEnv(WorkingGraphEnv):
    """Five standardised columns of a linear-Gaussian SCM over a random DAG drawn at reset.

    One data tool: ``corr`` (a partial correlation, Pearson or Spearman), costing 1 + |given| tests;
    ``note``, which echoes a required text and costs only the turn.
    """

    D = 5
    N = 200

    def __init__(
        self,
        render_mode: str | None = None,
        max_turns: int = 12,
        tests: int = 6,
        wall_time_limit: float | None = None,
        max_consecutive_errors: int = 5,
        text_max_length: int = 300,
    ) -> None:
        self.test_limit = tests
        super().__init__(
            self.D,
            budget_names=("tests",),
            max_turns=max_turns,
            wall_time_limit=wall_time_limit,
            max_consecutive_errors=max_consecutive_errors,
            text_max_length=text_max_length,
            extra_observation_spaces={"sample_size": spaces.Discrete(self.N + 1)},
            render_mode=render_mode,
        )

    def _tools(self):
        return (
            Tool(
                "corr",
                "Partial correlation of x and y given a set; costs 1 + |given| tests.",
                ("x", "y", "given", "method"),
                ("x", "y", "method"),
                "tests",
            ),
            Tool("note", "Write a note to the record.", ("text",), ("text",)),
        )

    def _fields(self):
        return (
            ActionField("given", "node_set", "Variables to partial out."),
            ActionField("method", "choice", "Correlation type.", ("pearson", "spearman")),
            ActionField("text", "text", "The note."),
        )

    def _new_episode(self, rng, options):
        d = self.D
        order = rng.permutation(d)
        upper = np.triu(rng.random((d, d)) < 0.5, 1)
        dag = np.zeros((d, d), dtype=np.int8)
        dag[np.ix_(order, order)] = upper
        weights = dag * rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1, 1], (d, d))
        x = rng.standard_normal((self.N, d))
        for j in order:
            x[:, j] += x @ weights[:, j]
        self._data = (x - x.mean(0)) / x.std(0)
        self._truth = dag
        return np.ones((d, d), dtype=np.int8) - np.eye(d, dtype=np.int8), {"sample_size": np.int64(self.N)}

    def _budget_limits(self):
        return {"tests": self.test_limit}

    def _tool_corr(self, x, y, given, method):
        data = self._data
        if method == "spearman":
            data = np.argsort(np.argsort(data, axis=0), axis=0).astype(float)
        z = np.column_stack([np.ones(self.N), data[:, list(given)]])
        res = [data[:, v] - z @ np.linalg.lstsq(z, data[:, v], rcond=None)[0] for v in (x, y)]
        r = float(np.corrcoef(res[0], res[1])[0, 1])
        return ToolResult(f"r = {r:.3f}", {"r": r}, {"tests": 1 + len(given)})

    def _tool_note(self, text):
        return ToolResult(f"noted {len(text)} characters")

    def _score(self, completed_graph):
        # Checked by the tests: the base passes the Meek completion of the submitted graph.
        self.scored_graph = completed_graph.copy()
        return {
            "adjacency_f1": adjacency_scores(self._truth, completed_graph).f1,
            "nshd": nshd(self._truth, completed_graph),
        }


@pytest.fixture
def registered():
    gym.register(TEST_ID, entry_point=TinyEnv)
    yield TEST_ID
    del gym.registry[TEST_ID]


def make(**kwargs) -> TinyEnv:
    return TinyEnv(**kwargs)


def act(env: WorkingGraphEnv, name: str, **arguments):
    """Typed action for a JSON-style call; fails the test if the call is rejected."""
    action = env.parse_tool_call(name, arguments)
    assert not isinstance(action, ToolError), action
    return action


# ---------------------------------------------------------------------------------------------
# working graph
# ---------------------------------------------------------------------------------------------


def test_set_relation_and_relation_of_agree_on_every_relation():
    a = np.zeros((4, 4), dtype=np.int8)
    expected = {"none": (0, 0), "undirected": (1, 1), "forward": (1, 0), "backward": (0, 1)}
    for relation, (fwd, bwd) in expected.items():
        b = set_relation(a, 3, 1, relation)
        assert (b[3, 1], b[1, 3]) == (fwd, bwd) and b.sum() == fwd + bwd
        assert relation_of(b, 3, 1) == relation
        flipped = {"forward": "backward", "backward": "forward"}.get(relation, relation)
        assert relation_of(b, 1, 3) == flipped
    assert a.sum() == 0  # pure: the input is untouched
    with pytest.raises(ValueError, match="differ"):
        set_relation(a, 2, 2, "forward")
    with pytest.raises(ValueError, match="relation"):
        set_relation(a, 0, 1, "sideways")


def _random_pdag(rng: np.random.Generator, d: int) -> np.ndarray:
    a = np.zeros((d, d), dtype=np.int8)
    for i in range(d):
        for j in range(i + 1, d):
            a = set_relation(a, i, j, RELATIONS[rng.integers(4)])
    return a


def test_format_and_parse_round_trip_on_random_graphs():
    rng = np.random.default_rng(0)
    for d in (1, 2, 5, 12):
        for _ in range(20):
            a = _random_pdag(rng, d)
            text = format_edge_list(a)
            assert np.array_equal(parse_edge_list(text, d), a), text


EXPECTED = np.zeros((4, 4), dtype=np.int8)
EXPECTED[0, 1] = 1  # X0 -> X1
EXPECTED[2, 1] = EXPECTED[1, 2] = 1  # X1 -- X2
EXPECTED[3, 2] = 1  # X3 -> X2


@pytest.mark.parametrize(
    "text",
    [
        "X0 -> X1, X1 -- X2, X3 -> X2",
        "X0->X1; X1--X2; X2<-X3",
        "x0 → x1\nx1 — x2\nx2 ← x3",
        "0 -> 1, 1 - 2, 3 -> 2",
        "X0 --> X1, X2 – X1, X2 <-- X3",
        "X0 -> X1 and X1 <-> X2; X3 -> X2",
        "Final answer:\n```\nX0 -> X1\nX1 -- X2\nX3 -> X2\n```\nThat is my well-known guess.",
        "**X0** -> **X1**, `X1 -- X2`, X3 -> X2.",
        "[[0, 1], [3, 2], [1, '--', 2]]",
        '[["X0", "X1"], ["X3", "X2"], ["X1", "--", "X2"]]',
        '["X0 -> X1", "X1 -- X2", "X3 -> X2"]',
        '{"edges": [["X0", "X1"], ["X1", "--", "X2"], {"from": "X3", "to": "X2"}]}',
        '```json\n{"Edges": "X0 -> X1, X1 -- X2, X3 -> X2"}\n```',
        'My answer is {"edges": [{"source": 0, "target": 1}, [3, 2], "X2 -- X1"]} as discussed.',
        "[(0, 1), (3, 2), (1, '--', 2)]",
        "X3 -> X2 <- X3, X0 -> X1 -- X2",
    ],
)
def test_parse_edge_list_accepts_the_documented_formats(text):
    assert np.array_equal(parse_edge_list(text, 4), EXPECTED), text


@pytest.mark.parametrize("text", ["", "none", "None.", "no edges", "[]", '{"edges": []}', "```\n```"])
def test_parse_edge_list_reads_explicitly_empty_answers(text):
    assert not parse_edge_list(text, 3).any()


@pytest.mark.parametrize(
    "text, message",
    [
        ("X0 -> X12", r"unknown variable 'X12' in 'X0 -> X12' \(variables are X0..X3\)"),
        ("A -> B", r"unknown variable 'A' in 'A -> B'"),
        ("X1 -> X1", r"self-loop 'X1 -> X1'"),
        ("X0 -> X1, X1 -> X0", r"contradictory entries for the pair X0, X1: 'X0 -> X1' and 'X1 -> X0'"),
        ("X0 -> X1, X0 -- X1", r"contradictory entries for the pair X0, X1"),
        ("[[0, 1, 2, 3]]", r"edge #1 \[0, 1, 2, 3\] is not an edge"),
        ('[["X0", "X9"]]', r"unknown variable 'X9'.*in edge #1"),
        ('{"nodes": [1, 2]}', r'needs an "edges" entry'),
        ("I am not sure about this graph.", r"found no edge"),
        ("[[0, true]]", r"a variable must be a name like 'X0' or an integer index, got True"),
    ],
)
def test_parse_edge_list_rejects_bad_answers_with_precise_messages(text, message):
    with pytest.raises(ValueError, match=message):
        parse_edge_list(text, 4)


def test_prose_hyphens_are_skipped_but_variables_with_dashes_are_edges():
    got = parse_edge_list("A well-known fact - roughly - is X0 - X2 (and x1 -- X3)", 4)
    want = np.zeros((4, 4), dtype=np.int8)
    want[0, 2] = want[2, 0] = want[1, 3] = want[3, 1] = 1
    assert np.array_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.printable + '→←—–[]{}"', max_size=60))
def test_parse_edge_list_either_returns_a_valid_graph_or_raises_value_error(text):
    try:
        a = parse_edge_list(text, 6)
    except ValueError as exc:
        assert str(exc)
    else:
        assert a.shape == (6, 6) and a.dtype == np.int8 and not np.diagonal(a).any()
        assert np.array_equal(parse_edge_list(format_edge_list(a), 6), a)


def test_renderings():
    a = set_relation(set_relation(np.zeros((6, 6), dtype=np.int8), 0, 1, "forward"), 2, 4, "undirected")
    text = render_ansi(a)
    assert "2 edges (1 directed, 1 undirected)" in text and "X0 -> X1, X2 -- X4" in text
    rows = [line.split()[1:] for line in text.splitlines()[2:8]]  # cell (i, j) is rows[i][j]
    assert rows[0][1] == ">" and rows[1][0] == "<" and rows[2][4] == rows[4][2] == "-"
    assert sum(c in "<>-" for row in rows for c in row) == 4
    img = render_rgb(a, size=200)
    assert img.shape == (200, 200, 3) and img.dtype == np.uint8
    blank = render_rgb(np.zeros((6, 6), dtype=np.int8), size=200)
    # The directed edge is drawn in blue, the undirected one in grey: pixels where the pictures differ.
    changed = np.any(img != blank, axis=2)
    colours = {tuple(c) for c in img[changed].tolist()}
    assert (31, 78, 160) in colours and (120, 120, 120) in colours
    with pytest.raises(ValueError):
        render_rgb(a, size=10)


# ---------------------------------------------------------------------------------------------
# toolbox
# ---------------------------------------------------------------------------------------------


def test_toolbox_definition_errors_are_caught():
    x = ActionField("x", "node", "x")
    with pytest.raises(ValueError, match="reserved"):
        ActionField("tool", "node", "d")
    with pytest.raises(ValueError, match="choices"):
        ActionField("c", "choice", "d")
    with pytest.raises(ValueError, match="undefined fields"):
        Toolbox([Tool("t", "d", ("x", "z"), ("x",))], [x], 3)
    with pytest.raises(ValueError, match="used by no tool"):
        Toolbox([Tool("t", "d", ("x",), ("x",))], [x, ActionField("z", "text", "z")], 3)
    with pytest.raises(ValueError, match="must require"):
        Toolbox([Tool("t", "d", ("x",))], [x], 3)


def _random_call(box: Toolbox, tool: Tool, rng: np.random.Generator) -> ToolCall:
    nodes = [box.fields[f] for f in tool.fields if box.fields[f].kind == "node"]
    picked = rng.choice(box.d, size=len(nodes), replace=False).tolist()
    taken = dict(zip((f.name for f in nodes), picked))
    arguments = {}
    for name in tool.fields:
        f = box.fields[name]
        if f.kind == "node":
            arguments[name] = taken[name]
        elif f.kind == "node_set":
            free = [v for v in range(box.d) if v not in picked]
            arguments[name] = tuple(sorted(v for v in free if rng.random() < 0.5))
        elif f.kind == "choice":
            arguments[name] = f.choices[rng.integers(len(f.choices))]
        else:
            arguments[name] = "".join(rng.choice(list(TEXT_CHARSET), size=rng.integers(1, 30)))
    return ToolCall(tool.name, arguments)


def test_schema_and_typed_action_round_trip_for_every_tool():
    jsonschema = pytest.importorskip("jsonschema")
    env = make()
    box = env.toolbox
    schemas = {s["function"]["name"]: s["function"] for s in env.tool_specs()}
    assert list(schemas) == ["set_edge", "submit", "corr", "note"] == list(box.names)
    space = env.action_space
    rng = np.random.default_rng(1)
    for tool in box.tools:
        params = schemas[tool.name]["parameters"]
        assert set(params["properties"]) == set(tool.fields) and params["required"] == list(tool.required)
        assert params["additionalProperties"] is False
        for _ in range(30):
            call = _random_call(box, tool, rng)
            json_arguments = call.to_dict()["arguments"]
            jsonschema.validate(json_arguments, params)  # the schema admits what the parser accepts
            assert box.parse_tool_call(tool.name, json.dumps(json_arguments)) == call
            assert box.parse_tool_call(tool.name, call.arguments) == call  # indices work as well as names
            typed = box.encode(call)
            assert space.contains(typed)
            assert box.decode(typed) == call
            assert env.parse_tool_call(tool.name, json_arguments).keys() == typed.keys()
        extra = {**call.to_dict()["arguments"], "bogus": 1}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(extra, params)
        assert isinstance(box.parse_tool_call(tool.name, extra), ToolError)


def test_typed_sampled_actions_decode_exactly_when_valid():
    box = make().toolbox
    space = box.action_space()
    space.seed(3)
    n_ok = 0
    for _ in range(500):
        action = space.sample()
        call = box.decode(action)
        tool = box.tools[int(action["tool"])]
        nodes = [int(action[f]) for f in tool.fields if box.fields[f].kind == "node"]
        sets = [set(np.flatnonzero(action[f]).tolist()) for f in tool.fields if box.fields[f].kind == "node_set"]
        texts = [action[f] for f in tool.fields if box.fields[f].kind == "text" and f in tool.required]
        valid = (
            len(set(nodes)) == len(nodes) and not any(s & set(nodes) for s in sets) and all(t.strip() for t in texts)
        )
        assert isinstance(call, ToolCall) == valid, (action, call)
        if valid:
            n_ok += 1
            assert box.decode(box.encode(call)) == call
    assert n_ok > 50


@pytest.mark.parametrize(
    "name, arguments, message",
    [
        ("corr", "{not json", "not valid JSON"),
        ("corr", "[1, 2]", "must be a JSON object"),
        ("nope", {}, "unknown tool 'nope'; available tools: set_edge, submit, corr, note"),
        (None, {}, "unknown tool None"),
        ("corr", {"x": "X0", "y": "X1"}, "missing required argument(s) 'method'"),
        ("corr", {"x": "X0", "y": "X1", "method": "pearson", "z": 1}, "unexpected argument(s) 'z'"),
        ("corr", {"x": "X0", "y": "X0", "method": "pearson"}, "arguments 'x' and 'y' both name X0"),
        ("corr", {"x": "X0", "y": "X9", "method": "pearson"}, "argument 'y': unknown variable 'X9'"),
        ("corr", {"x": "Z", "y": "X1", "method": "pearson"}, "argument 'x': unknown variable 'Z'"),
        ("corr", {"x": True, "y": "X1", "method": "pearson"}, "argument 'x': a variable must be"),
        ("corr", {"x": 0, "y": 1, "method": "kendall"}, "argument 'method': expected one of 'pearson', 'spearman'"),
        ("corr", {"x": 0, "y": 1, "method": "pearson", "given": ["X2", "X1"]}, "must not contain X1"),
        ("corr", {"x": 0, "y": 1, "method": "pearson", "given": ["X2", 2]}, "repeats X2"),
        ("corr", {"x": 0, "y": 1, "method": "pearson", "given": "X2"}, "expected a list"),
        ("note", {"text": "x" * 301}, "301 characters long; the limit is 300"),
        ("note", {"text": "héllo"}, "character 'é' at position 1"),
        ("note", {"text": "  "}, "'text' must not be empty"),
        ("note", {"text": 5}, "expected a string"),
    ],
)
def test_parse_tool_call_errors_are_messages(name, arguments, message):
    result = make().toolbox.parse_tool_call(name, arguments)
    assert isinstance(result, ToolError) and message in result.message, result
    json.dumps(result.to_dict())


TOOLBOX = TinyEnv().toolbox
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(["x", "y", "given", "method", "text", "edges", "relation", "other"])


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["set_edge", "submit", "corr", "note", "bogus", ""]) | st.text(max_size=6),
    st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=5) | st.text(max_size=40) | JSON_VALUES,
    st.booleans(),
)
def test_parse_tool_call_never_raises(name, arguments, as_json):
    box = TOOLBOX
    if as_json and not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    result = box.parse_tool_call(name, arguments)
    assert isinstance(result, (ToolCall, ToolError))
    json.dumps(result.to_dict())
    if isinstance(result, ToolCall):
        assert box.decode(box.encode(result)) == result


@pytest.mark.parametrize(
    "action, message",
    [
        (None, "must be a dict"),
        ({"tool": 9}, "action['tool'] must be an integer in 0..3"),
        ({"tool": True}, "action['tool'] must be an integer"),
        ({"tool": np.int64(2), "x": 0, "y": 1}, "lacks the 'given' entry"),
        ({"tool": 2, "x": 0, "y": 1, "given": np.ones(3), "method": 0}, "0/1 vector of length 5"),
        ({"tool": 2, "x": 0, "y": 7, "given": np.zeros(5, np.int8), "method": 0}, "integer in 0..4"),
        ({"tool": 2, "x": 0, "y": 1, "given": np.zeros(5, np.int8), "method": 2}, "integer in 0..1"),
        ({"tool": 3, "text": b"bytes"}, "expected a string"),
    ],
)
def test_decode_errors_are_messages(action, message):
    result = make().toolbox.decode(action)
    assert isinstance(result, ToolError) and message in result.message, result
    json.dumps(result.to_dict())


def test_encode_rejects_calls_the_toolbox_would_refuse():
    box = make().toolbox
    assert box.decode(box.encode(ToolCall("submit", {}))) == ToolCall("submit", {"edges": ""})
    assert box.encode(ToolCall("set_edge", {"x": "X1", "y": 2, "relation": "forward"}))["x"] == 1
    with pytest.raises(ValueError, match="both name X1"):
        box.encode(ToolCall("set_edge", {"x": 1, "y": 1, "relation": "none"}))
    with pytest.raises(ValueError, match="does not match"):
        box.encode(ToolCall("set_edge", {"x": 1}))


def _number_box() -> Toolbox:
    field = ActionField("value", "number", "a setpoint", bounds=(-10.0, 100.0))
    return Toolbox([Tool("shift", "Shift.", ("x", "value"), ("x", "value"))], [ActionField("x", "node", "x"), field], 3)


def test_number_fields_round_trip_and_match_their_schema():
    jsonschema = pytest.importorskip("jsonschema")
    box = _number_box()
    params = box.openai_schemas()[0]["function"]["parameters"]
    assert params["properties"]["value"] == {"type": "number", "minimum": -10.0, "maximum": 100.0, "description": "a setpoint"}
    space = box.action_space()
    assert space["value"] == spaces.Box(-10.0, 100.0, (1,), np.float64)
    for value in (-10, 0, 37.25, 1e-9, 100.0):
        call = box.parse_tool_call("shift", {"x": "X2", "value": value})
        assert call == ToolCall("shift", {"x": 2, "value": float(value)})
        jsonschema.validate(call.to_dict()["arguments"], params)
        typed = box.encode(call)
        assert space.contains(typed) and box.decode(typed) == call
    space.seed(0)
    for _ in range(50):  # every sampled typed action is a valid call with the sampled value
        action = space.sample()
        call = box.decode(action)
        assert isinstance(call, ToolCall) and call.arguments["value"] == float(action["value"][0])


@pytest.mark.parametrize(
    "value, message",
    [("37", "expected a number, got str"), (True, "expected a number, got bool"), (None, "expected a number"),
     (100.5, "in [-10, 100], got 100.5"), (float("nan"), "finite number"), ([1.0], "expected a number, got list")],
)
def test_number_fields_refuse_non_numbers_and_out_of_range_values(value, message):
    result = _number_box().parse_tool_call("shift", {"x": 0, "value": value})
    assert isinstance(result, ToolError) and message in result.message, result
    typed = _number_box().decode({"tool": 0, "x": 0, "value": np.array([value if isinstance(value, float) else 0.0])})
    assert isinstance(typed, ToolError) == isinstance(value, float)


def test_number_field_definition_errors():
    with pytest.raises(ValueError, match="finite bounds"):
        ActionField("v", "number", "v", bounds=(1.0, 1.0))
    with pytest.raises(ValueError, match="must require"):
        Toolbox([Tool("t", "d", ("v",))], [ActionField("v", "number", "v")], 3)


# ---------------------------------------------------------------------------------------------
# budgets and record
# ---------------------------------------------------------------------------------------------


def test_budgets_charge_all_or_nothing_and_report_in_order():
    b = Budgets({"turns": 3, "tests": 10, "free": None})
    assert b.names == ("turns", "tests", "free", "wall_time")
    assert b.charge_all({"turns": 1, "tests": 4})
    assert not b.charge_all({"turns": 1, "tests": 7})  # tests would overdraw: nothing charged
    assert b.used()["turns"] == 1 and b.used()["tests"] == 4
    assert b.charge("tests", 6) and b.exhausted() == ["tests"]
    assert b.charge("free", 1e9) and b.remaining()["free"] == float("inf")
    np.testing.assert_allclose(b.fractions(), [2 / 3, 0, 1, 1])
    with pytest.raises(ValueError, match="unknown budget"):
        b.charge("nope", 1)
    with pytest.raises(ValueError, match="measured"):
        b.charge("wall_time", 1)
    with pytest.raises(ValueError, match=">= 0"):
        b.charge("turns", -1)
    with pytest.raises(ValueError):
        Budget("x", -2)


def test_wall_time_budget_is_measured_from_start():
    b = Budgets({}, wall_time=1e-9)
    assert b.exhausted() == ["wall_time"]
    b = Budgets({}, wall_time=3600)
    b.start()
    assert b.exhausted() == [] and 0 <= b.used()["wall_time"] < 3600


def test_episode_log_views():
    log = EpisodeLog()
    log.append(
        CallRecord(1, "corr", {"x": "X0"}, True, "r = 0.1", {"r": np.float64(0.1)}, {"turns": 1.0, "tests": 1.0}, 0.25)
    )
    log.append(CallRecord(2, None, {"raw": "?"}, False, "error: bad", {}, {"turns": 1.0}, 0.5))
    json.dumps(log.to_dict())
    assert [c["wall_time"] for c in log.to_list()] == [0.25, 0.5]
    assert all("wall_time" not in c for c in log.deterministic_view())
    assert log.summary() == {
        "calls": 2,
        "errors": 1,
        "tool_counts": {"corr": 1, "None": 1},
        "cost": {"turns": 2.0, "tests": 1.0},
    }
    with pytest.raises(TypeError):
        log.append({"step": 3})


# ---------------------------------------------------------------------------------------------
# WorkingGraphEnv: the episode protocol
# ---------------------------------------------------------------------------------------------

STEP_INFO_KEYS = {"phase", "budgets_remaining", "action_mask", "result"}
FINAL_INFO_KEYS = STEP_INFO_KEYS | {
    "scores",
    "submission_source",
    "truncated_reason",
    "record",
    "submitted_graph",
    "completed_graph",
}


def test_check_env_passes_with_both_render_modes(registered):
    env = gym.make(registered, render_mode="rgb_array")
    check_env(env.unwrapped)
    env.close()


def test_spaces_and_first_observation():
    env = make()
    obs, info = env.reset(seed=0)
    assert list(env.action_space.spaces) == ["tool", "x", "y", "relation", "edges", "given", "method", "text"]
    assert list(obs) == ["working_graph", "budgets_remaining", "last_result", "last_ok", "phase", "sample_size"]
    assert obs in env.observation_space
    assert np.array_equal(obs["working_graph"], 1 - np.eye(5, dtype=np.int8))
    assert obs["phase"] == OPEN and obs["sample_size"] == TinyEnv.N
    np.testing.assert_array_equal(obs["budgets_remaining"], [1, 1, 1])
    assert env.budgets() == {"turns": 12, "tests": 6, "wall_time": None}
    assert set(info) == STEP_INFO_KEYS - {"result"} and info["action_mask"]["tool"].tolist() == [1, 1, 1, 1]


def test_edit_then_submit_scores_the_meek_completion():
    env = make()
    env.reset(seed=4)
    truth = env._truth
    # Keep only the true skeleton, orient one edge as in the truth: Meek may orient more.
    for i in range(5):
        for j in range(i + 1, 5):
            if not (truth[i, j] or truth[j, i]):
                obs, reward, term, trunc, info = env.step(act(env, "set_edge", x=i, y=j, relation="none"))
                assert not (term or trunc) and set(info) == STEP_INFO_KEYS and obs["last_ok"] == 1
    i, j = np.argwhere(truth)[0]
    obs, *_ = env.step(act(env, "set_edge", x=f"X{j}", y=f"X{i}", relation="backward"))
    assert obs["working_graph"][i, j] == 1 and obs["working_graph"][j, i] == 0
    assert obs["last_result"] == f"set X{i} -> X{j} (was: X{j} -- X{i})"
    working = obs["working_graph"]
    obs, reward, term, trunc, info = env.step(act(env, "submit"))
    assert term and not trunc and obs["phase"] == DONE and set(info) == FINAL_INFO_KEYS
    assert info["submission_source"] == "agent" and info["truncated_reason"] is None
    np.testing.assert_array_equal(info["submitted_graph"], working)
    np.testing.assert_array_equal(env.scored_graph, meek(working))
    assert reward == info["scores"]["adjacency_f1"] == 1.0  # the true skeleton
    with pytest.raises(RuntimeError, match="ended"):
        env.step(act(env, "submit"))


def test_submit_with_edge_list_and_tool_results():
    env = make()
    env.reset(seed=1)
    obs, _, _, _, info = env.step(act(env, "corr", x="X0", y="X1", method="pearson"))
    r = np.corrcoef(env._data[:, 0], env._data[:, 1])[0, 1]  # independent of the tool's regression
    assert info["result"]["r"] == pytest.approx(r) and obs["last_result"] == f"r = {r:.3f}"
    obs, _, _, _, info = env.step(act(env, "corr", x=0, y=1, given=["X2", "X3"], method="spearman"))
    assert env.budgets()["tests"] - info["budgets_remaining"]["tests"] == 1 + 3
    np.testing.assert_allclose(obs["budgets_remaining"], [10 / 12, 2 / 6, 1])
    obs, reward, term, trunc, info = env.step(act(env, "submit", edges="X0 -> X1 -> X2"))
    assert term and not trunc and info["submission_source"] == "agent_edge_list"
    np.testing.assert_array_equal(info["submitted_graph"], parse_edge_list("X0 -> X1, X1 -> X2", 5))
    calls = env.record().deterministic_view()
    assert [c["tool"] for c in calls] == ["corr", "corr", "submit"]
    assert calls[1]["arguments"] == {"x": "X0", "y": "X1", "given": ["X2", "X3"], "method": "spearman"}
    assert calls[1]["cost"] == {"turns": 1.0, "tests": 3.0} and calls[2]["cost"] == {"turns": 1.0}
    assert info["record"] == {
        "calls": 3,
        "errors": 0,
        "tool_counts": {"corr": 2, "submit": 1},
        "cost": {"turns": 3.0, "tests": 4.0},
    }


def test_refused_call_charges_nothing_but_the_turn():
    env = make(tests=3)
    env.reset(seed=0)
    env.step(act(env, "corr", x=0, y=1, given=["X2"], method="pearson"))  # 2 tests
    obs, _, _, _, info = env.step(act(env, "corr", x=0, y=1, given=["X2", "X3"], method="pearson"))
    assert (
        obs["last_ok"] == 0 and "refused" in obs["last_result"] and "needs tests 3 (remaining 1)" in obs["last_result"]
    )
    assert info["budgets_remaining"]["tests"] == 1 and info["budgets_remaining"]["turns"] == 10
    assert obs["phase"] == OPEN


def test_budget_exhaustion_gives_one_last_turn_for_submit():
    env = make(tests=2)
    env.reset(seed=0)
    obs, _, _, _, info = env.step(act(env, "corr", x=0, y=1, given=["X2"], method="pearson"))
    assert obs["phase"] == LAST_TURN and "last turn" in obs["last_result"]
    assert info["action_mask"]["tool"].tolist() == [0, 1, 0, 0]
    env.action_space.seed(0)
    sampled = env.action_space.sample(mask=info["action_mask"])
    assert sampled["tool"] == env.toolbox.index("submit")
    obs, reward, term, trunc, info = env.step(act(env, "submit"))
    assert term and trunc and info["truncated_reason"] == "budget_exhausted:tests"
    assert info["submission_source"] == "agent"


def test_last_turn_anything_but_submit_rescues_the_working_graph():
    env = make(max_turns=2)
    env.reset(seed=0)
    env.step(act(env, "set_edge", x=0, y=1, relation="forward"))
    obs, *_ = env.step(act(env, "note", text="thinking"))
    assert obs["phase"] == LAST_TURN
    working = obs["working_graph"]
    obs, reward, term, trunc, info = env.step(act(env, "set_edge", x=0, y=2, relation="none"))
    assert not term and trunc and info["submission_source"] == "rescued_working_graph"
    assert info["truncated_reason"] == "budget_exhausted:turns"
    np.testing.assert_array_equal(info["submitted_graph"], working)  # the refused edit was not applied
    assert env.record()[-1].ok is False and env.record()[-1].cost == {}


@pytest.mark.parametrize("exhaust_first", [False, True])
def test_one_retry_of_a_rejected_edge_list_then_rescue(exhaust_first):
    env = make(max_turns=1 if exhaust_first else 12)
    env.reset(seed=0)
    if exhaust_first:
        obs, *_ = env.step(act(env, "note", text="x"))
        assert obs["phase"] == LAST_TURN
    obs, reward, term, trunc, info = env.step(act(env, "submit", edges="X0 -> X7"))
    assert not (term or trunc) and obs["phase"] == LAST_TURN and obs["last_ok"] == 0
    assert "unknown variable 'X7'" in obs["last_result"] and "one retry" in obs["last_result"]
    obs, reward, term, trunc, info = env.step(env.parse_tool_call("submit", '{"edges": 3}'))  # malformed call
    assert trunc and not term and info["submission_source"] == "rescued_working_graph"
    assert info["truncated_reason"] == ("budget_exhausted:turns" if exhaust_first else "edge_list_rejected")
    np.testing.assert_array_equal(info["submitted_graph"], 1 - np.eye(5, dtype=np.int8))


def test_retry_with_a_good_edge_list_finishes_normally():
    env = make()
    env.reset(seed=0)
    env.step(act(env, "submit", edges="X0 => X1"))
    obs, reward, term, trunc, info = env.step(act(env, "submit", edges="X0 -> X1"))
    assert term and not trunc and info["submission_source"] == "agent_edge_list"
    assert info["submitted_graph"].sum() == 1


def test_tool_errors_come_back_as_messages_and_repeated_errors_end_the_episode():
    env = make(max_consecutive_errors=3)
    env.reset(seed=0)
    for k, bad in enumerate([env.parse_tool_call("corr", "{oops"), {"tool": 99}, None]):
        obs, reward, term, trunc, info = env.step(bad)
        assert obs["last_ok"] == 0 and obs["last_result"].startswith("error: ")
        if k == 0:
            env.step(act(env, "note", text="ok"))  # an ok call resets the count
    assert not (term or trunc)
    obs, reward, term, trunc, info = env.step(np.zeros(3))
    assert trunc and not term and info["truncated_reason"] == "consecutive_errors"
    assert info["submission_source"] == "rescued_working_graph"
    records = env.record().to_list()
    assert records[0]["tool"] == "corr" and records[0]["arguments"]["raw"] == {"name": "corr", "arguments": "{oops"}
    json.dumps(records)


def test_wall_time_budget_ends_the_open_phase():
    env = make(wall_time_limit=1e-9)
    env.reset(seed=0)
    obs, *_ = env.step(act(env, "note", text="slow"))
    assert obs["phase"] == LAST_TURN and obs["budgets_remaining"][-1] == 0
    *_, trunc, info = env.step(act(env, "submit"))
    assert trunc and info["truncated_reason"] == "budget_exhausted:wall_time"


def _garbage_action(env: WorkingGraphEnv, rng: np.random.Generator):
    """A random action of one of several kinds, most of them invalid."""
    kind = rng.integers(7)
    if kind in (0, 6):
        return env.action_space.sample()
    if kind == 1:
        names = [*env.toolbox.names, "", "Submit", "corr2", None]
        values = [
            "X0",
            "X4",
            "X5",
            1,
            -1,
            True,
            None,
            ["X1", "X1"],
            ["X2"],
            [],
            "pearson",
            "spearman",
            "X0 -> X1",
            "é",
            {"a": 1},
        ]
        fields = ["x", "y", "given", "method", "text", "edges", "relation", "z"]
        arguments = {
            fields[i]: values[rng.integers(len(values))]
            for i in rng.choice(len(fields), rng.integers(0, 5), replace=False)
        }
        payload = json.dumps(arguments) if rng.random() < 0.5 else arguments
        return env.parse_tool_call(names[rng.integers(len(names))], payload)
    if kind == 5 and rng.random() < 0.5:
        return env.parse_tool_call(
            "submit", {"edges": str(rng.choice(["", "X0 -> X1", "X0 -> X9", "junk", "[[0, 0]]"]))}
        )
    if kind == 2:
        chars = list('{}[]":,X0123 ->abcd')
        return env.parse_tool_call(
            str(rng.choice(env.toolbox.names)), "".join(rng.choice(chars, size=rng.integers(0, 30)))
        )
    if kind == 3:
        return [None, 7, "submit", {"tool": -1}, {"tool": 1.5}, {"tool": 2, "x": "a"}, np.ones((2, 2)), {"tool": 0}][
            rng.integers(8)
        ]
    if kind == 4:
        action = env.action_space.sample()
        action["tool"] = env.toolbox.index(str(rng.choice(["set_edge", "corr"])))
        return action
    return env.parse_tool_call("set_edge", {"x": int(rng.integers(5)), "y": int(rng.integers(5)), "relation": "none"})


def test_random_and_malformed_actions_never_raise_and_always_end_scored():
    rng = np.random.default_rng(7)
    steps = 0
    for episode in range(600):
        env = make(
            max_turns=int(rng.integers(1, 20)),
            tests=int(rng.integers(1, 10)),
            max_consecutive_errors=int(rng.integers(1, 10)),
        )
        env.action_space.seed(episode)
        obs, info = env.reset(seed=episode)
        done, n = False, 0
        while not done:
            obs, reward, term, trunc, info = env.step(_garbage_action(env, rng))
            done, n = term or trunc, n + 1
            assert obs in env.observation_space
            assert n <= env.max_turns + 2, "an episode outlived its limits"
            if not done:
                assert set(info) <= STEP_INFO_KEYS
        steps += n
        assert set(info) == FINAL_INFO_KEYS and info["submission_source"] in SUBMISSION_SOURCES
        assert term == (info["submission_source"] != "rescued_working_graph")
        assert 0 <= info["scores"]["adjacency_f1"] <= 1 and reward == info["scores"]["adjacency_f1"]
        used = env._budgets.used()
        assert used["turns"] <= env.max_turns and used["tests"] <= env.test_limit
        assert len(env.record()) == n
        json.dumps(env.record().to_dict())
    assert steps > 2000


def test_same_seed_same_actions_give_identical_episodes():
    def play(seed: int):
        env = make()
        env.action_space.seed(123)
        obs, info = env.reset(seed=seed)
        trace = [(obs, info)]
        done = False
        while not done:
            action = env.action_space.sample(mask=info["action_mask"])
            obs, reward, term, trunc, info = env.step(action)
            trace.append((obs, reward, term, trunc, info))
            done = term or trunc
        return trace, env.record().deterministic_view()

    first, second, other = play(5), play(5), play(6)
    assert gym.utils.env_checker.data_equivalence(first[0], second[0], exact=True)
    assert first[1] == second[1]
    assert not gym.utils.env_checker.data_equivalence(first[0], other[0])


def test_make_vec_runs_the_registered_env(registered):
    envs = gym.make_vec(registered, num_envs=3, vectorization_mode="sync", max_turns=4)
    envs.action_space.seed(0)
    obs, info = envs.reset(seed=0)
    assert obs["working_graph"].shape == (3, 5, 5) and len(obs["last_result"]) == 3
    ended = 0
    for _ in range(40):
        obs, reward, term, trunc, info = envs.step(envs.action_space.sample())
        assert obs in envs.observation_space
        ended += int(np.sum(term | trunc))
    assert ended > 0
    envs.close()


def test_rendering_and_task_description():
    env = make(render_mode="ansi")
    with pytest.raises(RuntimeError, match="reset"):
        env.budgets()
    assert "limits are set per episode" in env.task_description()
    env.reset(seed=0)
    text = env.render()
    assert "10 edges (0 directed, 10 undirected)" in text and "phase 0" in text
    description = env.task_description()
    assert "Five standardised columns" in description and "turns 12, tests 6, wall_time unlimited" in description
    assert all(name in description for name in env.toolbox.names)
    img = make(render_mode="rgb_array")
    img.reset(seed=0)
    assert img.render().shape == (400, 400, 3)


def test_rollout_with_random_agent_records_json():
    from causal_gym.agents import RandomAgent, task_spec
    from causal_gym.eval import rollout

    env = make()
    env.reset(seed=0)
    spec = task_spec(env)
    assert [t["function"]["name"] for t in spec.tool_specs] == list(env.toolbox.names)
    assert spec.budgets["tests"] == 6
    for seed in range(5):
        record = rollout(env, RandomAgent(seed=seed), seed=seed)
        payload = json.loads(json.dumps(record.to_dict()))
        assert payload["final_info"]["submission_source"] in SUBMISSION_SOURCES
        assert len(payload["env_record"]["calls"]) == record.steps


def test_subclass_programming_errors_raise_at_once():
    class NoHandler(TinyEnv):
        _tool_note = None

    with pytest.raises(TypeError, match="_tool_note"):
        NoHandler()

    class BadGraph(TinyEnv):
        def _new_episode(self, rng, options):
            return np.ones((5, 5)), {"sample_size": 1}

    with pytest.raises(ValueError, match="self-loops"):
        BadGraph().reset(seed=0)
    with pytest.raises(ValueError, match="budget_names"):
        WorkingGraphEnv.__init__(make(), 5, budget_names=("turns",))
