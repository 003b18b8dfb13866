"""The JSON-mode reply parser (causal_gym.agents.reply_parser.parse_json_tool_call): the same answers as the plain
algorithm it replaces, in work linear in the reply.

Reference: ``brute_force`` below decodes from every place an object can open, in order, and takes the first
tool call -- the parser's specification, quadratic on adversarial replies. Speed lives in
benchmarks/reply_parser.py; here the work is counted (characters the JSON decoder reads), not timed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from causal_gym.agents import reply_parser
from causal_gym.agents.reply_parser import parse_json_tool_call

CALL = '{"tool": "submit", "arguments": {}}'


def brute_force(text: str) -> tuple[str, Any] | None:
    decoder = json.JSONDecoder()
    for tried, match in enumerate(reply_parser._OBJECT_START.finditer(text)):
        if tried == reply_parser._MAX_OBJECT_STARTS:
            return None
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except RecursionError:
            return None
        except ValueError:
            continue
        name = value.get("tool", value.get("name"))
        if isinstance(name, str):
            return name, value.get("arguments", value.get("parameters", {}))
    return None


HAND_MADE = [
    # nesting: the first object in text order that names a tool wins, the outer one when both do
    ('{"a": {"tool": "inner"}, "tool": "outer"}', ("outer", {})),
    ('{"a": {"tool": "inner"}, "tool": 3}', ("inner", {})),
    ('{"a": {"tool": "inner"}, "tool": 3', ("inner", {})),  # the outer never closes
    ('{"a": [{"x": 1}, {"name": "n", "parameters": {"p": [1, 2]}}]', ("n", {"p": [1, 2]})),
    # "tool" present but not a string hides "name"; the last of repeated keys counts
    ('{"tool": null, "name": "n"} {"name": "m"}', ("m", {})),
    ('{"tool": "a", "tool": 1} {"tool": "b", "tool": "c"}', ("c", {})),
    ('{"tool": 1, "tool": "a"}', ("a", {})),
    # keys spelled with escapes, quotes and braces inside strings, backslash runs before quotes
    ('{"\\u0074ool": "escaped"}', ("escaped", {})),
    ('{"note": "a \\"{\\"tool\\": \\"fake\\"}\\" here", "tool": "real"}', ("real", {})),
    ('{"note": "ends in a backslash \\\\", "tool": "t"}', ("t", {})),
    ('{"code": "print(\'{\\"tool\\": 1}\')", "x": {"tool": "deep", "arguments": "{}"}}', ("deep", "{}")),
    # an object inside a string of an unclosed one is found from its own start
    ('{"a": "{"tool": "seen"}', ("seen", {})),
    ('say "{"tool": "q"}" now', ("q", {})),
    # a value that is not a string, an unterminated string, bad escapes and control characters
    ('{"tool": ["x"]} {"tool": {"name": "y"}}', ("y", {})),
    ('{"tool": "a', None),
    ('{"a": "\\x", "b": {"tool": "after"}}', ("after", {})),
    ('{"b": {"tool": "before"}, "a": "\\x"}', ("before", {})),
    ('{"a": "\x01", "b": {"tool": "t"}}', ("t", {})),
    ('{"b": {"tool": "t"}, "a": "\x01"}', ("t", {})),
    ('{"tool": "ünïcode ✓", "arguments": {"é": "ß"}}', ("ünïcode ✓", {"é": "ß"})),
    ('{"x": "\ud800"} {"tool": "surrogate"}', ("surrogate", {})),
]


@pytest.mark.parametrize(("text", "expected"), HAND_MADE)
def test_hand_made_replies(text: str, expected: tuple[str, Any] | None) -> None:
    assert parse_json_tool_call(text) == expected
    assert brute_force(text) == expected  # the reference agrees with the hand-derived answer


def _padded(text: str) -> str:
    """Long stretches, so that the vectorised settling of nested starts runs too."""
    return text.replace("PAD", "[" + "1," * 3000 + "1]").replace("SPACE", " " * 5000)


FRAGMENTS = st.sampled_from([
    "{", "}", "[", "]", '"', "\\", ":", ",", " ", "1", "-", "e", "0", "x", "é", "\n", "\x01",
    '"tool"', '"name"', '"arguments"', '"parameters"', '"t"', '"\\u0074ool"', '"\\\\"', '\\"', "null", "PAD", "SPACE",
    '{"tool": "a"}', '{"name": "b", "arguments": {"c": 1}}', '{"k":[', '{"a":', '{}',
])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_the_parser_answers_as_the_brute_force_reference(text: str) -> None:
    text = _padded(text)
    assert parse_json_tool_call(text) == brute_force(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(FRAGMENTS, max_size=30).map("".join))
def test_settling_nested_starts_changes_no_answer(text: str) -> None:
    """Every decode settles its nested starts (the vectorised pass runs on short stretches too)."""
    text = _padded(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reply_parser, "_SETTLE_NESTED", 0)
        assert parse_json_tool_call(text) == brute_force(text)


def test_integers_past_the_digit_limit_fail_their_objects_only() -> None:
    limit = sys.get_int_max_str_digits()
    big, within = "7" * (limit + 1), "7" * limit
    cases = [
        (f'{{"a": {{"tool": "inner"}}, "n": {big}}}', ("inner", {})),
        (f'{{"tool": "x", "n": {big}}} {CALL}', ("submit", {})),
        (f'{{"tool": "x", "n": -{big}}}', None),
        (f'{{"tool": "x", "n": {within}}}', ("x", {})),
        (f'{{"tool": "x", "n": {big}.5, "m": 1e{big}}}', ("x", {})),  # floats have no digit limit
        (f'{{"s": "{big}", "tool": "x"}}', ("x", {})),
        (f'{{"p": [{"1," * 3000}1], "q": {{"tool": "y"}}, "n": {big}}}', ("y", {})),
    ]
    for text, expected in cases:
        assert brute_force(text) == expected
        assert parse_json_tool_call(text) == expected


def _adversarial(size: int) -> dict[str, tuple[str, tuple[str, Any] | None]]:
    def fill(head: str, unit: str, tail: str = "") -> str:
        return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail

    return {  # shape -> (reply, the call in it)
        "open arrays (issue 44)": (fill('{"k":[' * 450, "1,"), None),
        "open arrays, then a call": (fill('{"k":[' * 450, "1,", "] " + CALL), ("submit", {})),
        "valid nesting without a call": (fill('{"a":' * 400 + "[0", ",1", "]" + "}" * 400), None),
        "strings read two ways": (fill('{"k":[' * 100, '"{\\"a\\":1}", "{", '), None),
        "nested objects every few bytes": (fill('{"k":[' * 300, '{"a":{}},'), None),
    }


def test_the_decoder_reads_each_character_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work, not time: the characters the JSON decoder reads stay within a few times the reply's size as it
    grows (deciding from every start separately reads the shared tail once per start: 450 times here)."""
    read = [0]
    decode = json.JSONDecoder.raw_decode

    def counting(self: json.JSONDecoder, text: str, index: int = 0) -> tuple[Any, int]:
        try:
            value, end = decode(self, text, index)
        except json.JSONDecodeError as exc:
            read[0] += exc.pos - index
            raise
        read[0] += end - index
        return value, end

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    for size in (40_000, 160_000):
        for shape, (text, call) in _adversarial(size).items():
            read[0] = 0
            assert parse_json_tool_call(text) == call, shape
            assert read[0] <= 3 * len(text), (shape, read[0])
