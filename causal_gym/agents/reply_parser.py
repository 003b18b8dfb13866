"""The tolerant reader of tool calls written as JSON in a model's reply (the LLM agent's JSON mode).

A reply is untrusted text of any size, read while the episode holds the interpreter, so
:func:`parse_json_tool_call` does work linear in its length whatever its shape
(``benchmarks/reply_parser.py`` measures it against ``json.loads``).
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from typing import Any

import numpy as np

__all__ = ["parse_json_tool_call"]

_OBJECT_START = re.compile(r'\{\s*["}]')
_MAX_OBJECT_STARTS = 1000
_SETTLE_NESTED = 4096
"""A decode that read more characters than this settles the starts nested in what it read
(:func:`_nested_calls`); in shorter stretches they are decoded one by one, which costs less."""
_CALL_KEYS = ("tool", "name")
_STRING_VALUE = re.compile(r'[ \t\n\r]*"')


def _call(value: Any) -> tuple[str, Any] | None:
    """The (name, arguments) of a decoded object that names a tool under "tool" or "name", else None."""
    name = value.get("tool", value.get("name")) if isinstance(value, dict) else None
    return (name, value.get("arguments", value.get("parameters", {}))) if isinstance(name, str) else None


def _bytes(text: str, start: int, stop: int) -> np.ndarray:
    """``text[start:stop]`` as one byte per character (anything but ASCII becomes ``?``, never structural)."""
    return np.frombuffer(text[start:stop].encode("ascii", "replace"), dtype=np.uint8)


def _delimiters(raw: np.ndarray) -> np.ndarray:
    """The positions of the quotes that open or close strings in a valid JSON prefix that starts outside one.

    A backslash occurs only inside strings there, so a quote delimits unless an odd run of
    backslashes precedes it.
    """
    quotes = np.flatnonzero(raw == ord('"'))
    backslashes = np.flatnonzero(raw == ord("\\"))
    if not backslashes.size:
        return quotes
    run_start = np.maximum.accumulate(np.where(np.diff(backslashes, prepend=-2) > 1, backslashes, 0))
    before = np.minimum(np.searchsorted(backslashes, quotes - 1), backslashes.size - 1)
    run = np.where(backslashes[before] == quotes - 1, quotes - run_start[before], 0)
    return quotes[run % 2 == 0]


def _first_long_integer(text: str, start: int, stop: int) -> int:
    """Where the first integer past ``int()``'s digit limit lies in ``text[start:stop]`` (a valid prefix), or
    ``start`` when there is none."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()  # Python 3.10.7+; without it, no limit
    if limit:
        quotes = _delimiters(_bytes(text, start, stop))
        longer = r"-?[0-9]{%d,}" % (limit + 1)  # noqa: UP031 -- a format string doubles the regex's braces
        for run in re.finditer(longer, text[start:stop]):
            token = run.start()
            preceding = text[start + token - 1] if token else ""
            following = text[start + run.end():start + run.end() + 1]
            if (np.searchsorted(quotes, token) % 2 == 0 and preceding not in ".eE+-0123456789"
                    and following not in (".", "e", "E")):  # an integer, not a float's part
                return start + token
    return start


def _decode(decoder: json.JSONDecoder, text: str, start: int) -> tuple[Any, int]:
    """The value at ``start`` and where it ends, or None and where the decode stopped on an error.

    An integer past ``int()``'s digit limit stops a decode with a ValueError that carries no
    position: the decode is repeated with integers read as floats, which have no limit, to find
    how far the text is JSON, and the first such integer there is where it stopped.
    """
    try:
        return decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return None, exc.pos
    except ValueError:
        pass
    try:
        stop = json.JSONDecoder(parse_int=float).raw_decode(text, start)[1]
    except json.JSONDecodeError as exc:
        stop = exc.pos
    return None, _first_long_integer(text, start, stop)


def _nested_calls(text: str, start: int, stop: int, starts: np.ndarray) -> dict[int, bool]:
    """Settle the object ``starts`` that open inside ``text[start:stop]``, a valid JSON prefix opening at
    ``start``: position -> whether the object closes inside the prefix and names a tool.

    Inside a valid prefix every ``{`` outside a string opens a nested value whose own decode would
    read exactly what the prefix's decode read: it succeeds if it closes before ``stop`` and fails
    at ``stop`` otherwise, so one decode settles every start nested in it. The pass is vectorised
    (a reply may hold a brace every other byte): a brace or colon counts when an even number of
    string delimiters precedes it; braces pair up level by level; a colon follows the key it ends,
    and a key sits right inside the innermost open object.
    """
    raw = _bytes(text, start, stop)
    quotes = _delimiters(raw)

    def outside(positions: np.ndarray) -> np.ndarray:
        return positions[np.searchsorted(quotes, positions) % 2 == 0]

    # which objects close: their braces, by level
    step = np.zeros(raw.size, dtype=np.int8)
    step[outside(np.flatnonzero(raw == ord("{")))] = 1
    step[outside(np.flatnonzero(raw == ord("}")))] = -1
    events = np.flatnonzero(step)  # in text order
    opens = step[events] > 0
    depth = np.cumsum(step[events], dtype=np.int64)
    level = depth + ~opens  # an object's two braces share a level; by level, then position, they alternate
    order = np.lexsort((events, level))
    ranked = level[order] * (raw.size + 1) + events[order]
    pairs = opens[order][:-1] & ~opens[order][1:] & (level[order][:-1] == level[order][1:])
    closed = events[order][:-1][pairs]

    mine = starts[(starts >= start) & (starts < stop)] - start  # the starts to settle, as positions in raw
    mine = mine[np.isin(mine, events[opens])]

    # which of them name a tool: their "tool" and "name" keys, and whether the values are strings
    colons = outside(np.flatnonzero(raw == ord(":")))
    closing = np.searchsorted(quotes, colons) - 1
    opening, closing = quotes[closing - 1], quotes[closing]
    depths = depth[np.searchsorted(events, opening) - 1]
    owners = events[order][np.searchsorted(ranked, depths * (raw.size + 1) + opening) - 1]
    keep = np.isin(owners, mine)
    colons, opening, closing, owners = colons[keep], opening[keep], closing[keep], owners[keep]
    slot = np.zeros(colons.size, dtype=np.int64)  # 1: a "tool" key, 2: a "name" key
    padded = np.concatenate((raw, np.zeros(8, dtype=np.uint8)))
    for number, key in enumerate(_CALL_KEYS, 1):
        spelled = np.logical_and.reduce([padded[opening + 1 + i] == ord(c) for i, c in enumerate(key)])
        slot[(closing - opening == len(key) + 1) & spelled] = number
    backslashes = np.flatnonzero(raw == ord("\\"))
    escaped = np.searchsorted(backslashes, closing) > np.searchsorted(backslashes, opening)
    for k in np.flatnonzero(escaped & (closing - opening < 32)).tolist():  # a key such as "\\u0074ool"
        key = json.loads(text[start + opening[k]:start + closing[k] + 1])
        slot[k] = _CALL_KEYS.index(key) + 1 if key in _CALL_KEYS else 0
    keys: dict[int, dict[int, bool]] = {}  # object -> key slot -> its value is a string (the last of repeats)
    for k in np.flatnonzero(slot).tolist():
        is_string = _STRING_VALUE.match(text, start + int(colons[k]) + 1) is not None
        keys.setdefault(int(owners[k]), {})[int(slot[k])] = is_string

    settled = {}
    for position, whole in zip(mine.tolist(), np.isin(mine, closed).tolist()):
        named = keys.get(position, {})
        settled[start + position] = whole and named.get(1, named.get(2, False))  # as _call reads the object
    return settled


def parse_json_tool_call(text: str) -> tuple[str, Any] | None:
    """Find a tool call written as JSON in a model's reply, tolerantly.

    The first JSON object in ``text`` (code fences and prose around it are ignored) that names a
    tool under ``"tool"`` or ``"name"`` wins; its arguments are read from ``"arguments"`` (or
    ``"parameters"``), as an object or as a JSON string, and default to none. An object nesting
    the call, such as ``{"function": {"name": ..., "arguments": ...}}``, is found through its
    inner object.

    The reply is untrusted and may be large, so the work is linear in its length. Only a ``{``
    followed by ``"`` or ``}`` can open an object, and only the first :data:`_MAX_OBJECT_STARTS`
    of those are considered. A decode that fails or succeeds after reading a long stretch settles
    every start nested in that stretch (:func:`_nested_calls`), so no stretch is read again from
    the starts inside it (only from a start that sees it the other way round, strings as
    structure); starts in shorter stretches are decoded one by one (at most
    :data:`_SETTLE_NESTED` characters each). JSON nested deeper than the interpreter can decode
    ends the search: the reply holds no call.

    Returns
    -------
    (name, arguments) or None
        None when no such object is in the text. The arguments are not validated here: the env's
        converter does that and reports what is wrong.

    Examples
    --------
    >>> parse_json_tool_call('Next:\\n```json\\n{"tool": "ci_test", "arguments": {"x": "X0"}}\\n``` done')
    ('ci_test', {'x': 'X0'})
    >>> parse_json_tool_call("I submit now.") is None
    True
    """
    decoder = json.JSONDecoder()
    starts = np.fromiter((match.start() for match in itertools.islice(_OBJECT_START.finditer(text),
                                                                        _MAX_OBJECT_STARTS)), dtype=np.int64)
    settled: dict[int, bool] = {}  # starts nested in a long decoded stretch -> whether a call opens there
    for start in starts.tolist():
        if settled.get(start, True):
            try:
                value, stop = _decode(decoder, text, start)
            except RecursionError:
                return None
            call = _call(value)
            if call is not None:
                return call
            if stop - start > _SETTLE_NESTED:
                settled.update(_nested_calls(text, start, stop, starts))
    return None
