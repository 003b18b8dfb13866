"""Tool listings for prompts: a function-calling schema as one compact signature per tool.

JSON mode (``LLMAgent(tool_mode="json")``) states the tools in the system prompt. Dumped as JSON
Schema they cost a small model's context dearly: CausaLab's six tools each carry the nested
hypothesis object, ~10k characters in all, and a byte-level tokenizer spends ~1.5 characters per
token on escaped JSON, so the start of an episode no longer fit an 8k window. A signature keeps
what a model needs to form a call (names, types, choices, bounds, which arguments are optional,
the top-level descriptions) at about a third of the length. Native mode sends the schemas
themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["describe_tools", "type_text"]

_NUMBERED = re.compile(r"(\D*)(\d+)")


def type_text(schema: Mapping[str, Any]) -> str:
    """A JSON Schema as short text: choices ``a|b``, bounded numbers, ``[item, ...]`` and ``{key: type}``.

    Optional object keys end in ``?``.

    Examples
    --------
    >>> type_text({"type": "string", "enum": ["X0", "X1"]})
    'X0|X1'
    >>> type_text({"type": "number", "minimum": 0, "maximum": 5})
    'number in [0, 5]'
    >>> type_text({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
    ...            "required": ["a"]})
    '{a: integer, b?: string}'
    >>> type_text({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}})
    '[x|y, ...]'
    >>> type_text({"type": "string", "enum": [f"X{i}" for i in range(17)]})
    'one of X0..X16'
    """
    if "enum" in schema:
        return _choices([str(value) for value in schema["enum"]])
    kind = schema.get("type", "any")
    if kind in ("number", "integer"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{kind} in [{low:g}, {high:g}]"
        if low is not None:
            return f"{kind} >= {low:g}"
        if high is not None:
            return f"{kind} <= {high:g}"
        return str(kind)
    if kind == "array":
        return f"[{type_text(schema.get('items', {}))}, ...]"
    if kind == "object" and "properties" in schema:
        required = set(schema.get("required", ()))
        keys = [f"{name}{'' if name in required else '?'}: {type_text(sub)}"
                for name, sub in schema["properties"].items()]
        return "{" + ", ".join(keys) + "}"
    return str(kind)


def _choices(values: list[str]) -> str:
    """``a|b|c``, or ``one of X0..X16`` for a run of numbered names (variable lists repeat in every tool)."""
    numbered = [_NUMBERED.fullmatch(value) for value in values]
    if len(values) >= 4 and all(numbered):
        prefixes = {match.group(1) for match in numbered}  # type: ignore[union-attr]
        numbers = [int(match.group(2)) for match in numbered]  # type: ignore[union-attr]
        if len(prefixes) == 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            return f"one of {values[0]}..{values[-1]}"
    return "|".join(values)


def describe_tools(specs: Sequence[Mapping[str, Any]]) -> str:
    """One block per tool of an OpenAI ``tools`` list: ``name: description`` and one line per argument.

    An argument identical to one of an earlier tool (``x`` of every pair tool, CausaLab's
    ``hypothesis``) says so instead of repeating itself.

    Examples
    --------
    >>> print(describe_tools([{"type": "function", "function": {
    ...     "name": "ci_test", "description": "Test x _||_ y.",
    ...     "parameters": {"type": "object", "required": ["x"], "properties": {
    ...         "x": {"type": "string", "enum": ["X0", "X1"], "description": "First variable."},
    ...         "alpha": {"type": "number", "minimum": 0, "maximum": 1}}}}}]))
    ci_test: Test x _||_ y.
      x: X0|X1 - First variable.
      alpha (optional): number in [0, 1]
    """
    blocks = []
    first: dict[tuple[str, str, str], str] = {}  # argument -> the tool that listed it first
    for spec in specs:
        function = spec.get("function", spec)
        lines = [f"{function['name']}: {function.get('description', '').strip()}".rstrip(": ")]
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required", ()))
        for name, schema in (parameters.get("properties") or {}).items():
            optional = "" if name in required else " (optional)"
            description = str(schema.get("description", "")).strip()
            kind = type_text(schema)
            earlier = first.setdefault((name, kind, description), function["name"])
            if earlier != function["name"]:
                lines.append(f"  {name}{optional}: as in {earlier}")
            else:
                lines.append(f"  {name}{optional}: {kind}" + (f" - {description}" if description else ""))
        if len(lines) == 1:
            lines.append("  (no arguments)")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)
