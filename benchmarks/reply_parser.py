"""The JSON-mode reply parser (:func:`causal_gym.agents.reply_parser.parse_json_tool_call`) on adversarial replies.

A model's reply is untrusted text of any size, read while the episode holds the interpreter, so the
parser must take time linear in the reply. For each shape below, at each ``--sizes`` (in bytes),
it prints the parser's best time of ``--repeats``, what it returned, and the ratio against
``json.loads`` of a valid document of the same size (``{"k": [1, 1, ...]}``) timed in the same run:
a linear parser keeps the ratio roughly constant as the size grows, a quadratic one multiplies it.

Shapes (each padded to the size with its long tail):

- ``open_arrays``: ``{"k":[`` x 450 then an unclosed array of ones -- every start opens an object
  whose decode runs to the end of the reply (the case of issue 44);
- ``open_arrays_call``: the same followed by a real call, which must still be found;
- ``nested_valid``: ``{"a":`` x 400, a long array, ``}`` x 400 -- every start is a valid object
  that is not a call;
- ``string_array``: ``{"k":["ab","ab",...`` unclosed -- a token for every few bytes;
- ``empty_objects``: ``{"k":[{},{},...`` unclosed -- an object start every 3 bytes;
- ``call_keys``: ``{"k":[{"name":0},...`` unclosed -- a key to check every 11 bytes;
- ``open_strings``: ``{"`` repeated -- a start every 2 bytes, each failing at once;
- ``braces``: ``{`` repeated -- no start at all.

Usage: python benchmarks/reply_parser.py [--sizes 130000 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from causal_gym.agents.llm import parse_json_tool_call  # where it is on older versions too

CALL = '{"tool": "submit", "arguments": {}}'


def _fill(head: str, unit: str, size: int, tail: str = "") -> str:
    return head + unit * max(0, (size - len(head) - len(tail)) // len(unit)) + tail


SHAPES: dict[str, Callable[[int], str]] = {
    "open_arrays": lambda size: _fill('{"k":[' * 450, "1,", size),
    "open_arrays_call": lambda size: _fill('{"k":[' * 450, "1,", size, "] " + CALL),
    "nested_valid": lambda size: _fill('{"a":' * 400 + "[0", ",1", size, "]" + "}" * 400),
    "string_array": lambda size: _fill('{"k":[', '"ab",', size),
    "empty_objects": lambda size: _fill('{"k":[', "{},", size),
    "call_keys": lambda size: _fill('{"k":[', '{"name":0},', size),
    "open_strings": lambda size: _fill("", '{"', size),
    "braces": lambda size: _fill("", "{", size),
}


def best_time(function: Callable[[], object], repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[130_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    args = parser.parse_args()
    print(f"{'shape':<18}{'bytes':>10}{'parser s':>11}{'json.loads s':>14}{'ratio':>9}  result")
    for size in args.sizes:
        valid = _fill('{"k":[0', ",1", size, "]}")
        reference, _ = best_time(lambda: json.loads(valid), args.repeats)
        for name in args.shapes:
            reply = SHAPES[name](size)
            seconds, result = best_time(lambda: parse_json_tool_call(reply), args.repeats)
            print(f"{name:<18}{len(reply):>10}{seconds:>11.4f}{reference:>14.5f}{seconds / reference:>9.1f}  {result}")


if __name__ == "__main__":
    main()
