"""Tool definitions: one definition gives both the typed Gymnasium action and the OpenAI tool schema.

A tool (:class:`Tool`) names the argument fields (:class:`ActionField`) it uses. A :class:`Toolbox`
turns a set of tools into

- a typed action space for RL policies and scripted agents: a ``gymnasium.spaces.Dict`` with a
  ``"tool"`` entry (which tool) and one entry per field, shared by all tools (a tool ignores the
  fields it does not use);
- OpenAI-style function schemas for LLM agents, with variables named ``X0 .. X{d-1}``;

and converts both kinds of input into one validated :class:`ToolCall`. Agent input never raises:
anything malformed becomes a :class:`ToolError` whose message tells the agent what to fix.

Field kinds and their forms
---------------------------
============  ==========================  ===========================  ====================
kind          typed action entry          JSON argument                ``ToolCall`` value
============  ==========================  ===========================  ====================
``node``      ``Discrete(d)``             ``"X3"`` (or ``3``)          ``int``
``node_set``  ``MultiBinary(d)``          ``["X1", "X4"]``             sorted ``tuple[int]``
``choice``    ``Discrete(len(choices))``  one of the choice strings    ``str``
``text``      ``Text(text_max_length)``   a string                     ``str``
``number``    ``Box(low, high, (1,))``    a JSON number                ``float``
============  ==========================  ===========================  ====================

Rules every call obeys, whichever way it arrives: the variables named by a call's node fields are
distinct (no pair ``x == y``), and its node sets contain none of them (a conditioning set never
holds the tested pair, a parent set never the child). Node, choice and number fields, when a
tool uses them, are required (a typed action cannot leave them out); node sets and texts may be optional and
then default to the empty set and the empty string — in a typed action the empty value *is* the
omitted one.

Sampling valid actions
----------------------
The typed space is a :class:`ToolActionSpace`, a ``gymnasium.spaces.Dict`` whose
``sample(mask=...)`` takes Gymnasium's per-key masks (the envs put them in ``info["action_mask"]``)
and also keeps the rules above, which per-key masks cannot say: it draws a tool the mask allows,
then that tool's arguments under their masks with distinct variables and node sets free of them.
Optional texts are left empty; a required text is one of its field's :attr:`ActionField.examples`
(a tool whose required text has none, and no mask, is never drawn); a text field's mask may also be
a ``str``, the text to send. ``sample()`` without a mask is Gymnasium's: any element of the space.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_choice, check_count
from causal_gym.harness.working_graph import variable_index, variable_name

__all__ = [
    "FIELD_KINDS",
    "TEXT_CHARSET",
    "ActionField",
    "Tool",
    "ToolActionSpace",
    "ToolCall",
    "ToolError",
    "Toolbox",
    "display_text",
]

FIELD_KINDS = ("node", "node_set", "choice", "text", "number")
"""The kinds of argument a tool can take."""

TEXT_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n\t" + "→←↔—–"
"""Characters allowed in text arguments and results: printable ASCII, newline, tab, and the arrows
and dashes that edge lists are commonly written with."""

_CHARSET = frozenset(TEXT_CHARSET)
_REQUIRED_KINDS = ("node", "choice", "number")
_CUT_MARK = "...[cut]"


def display_text(text: str, limit: int) -> str:
    """``text`` as a ``Text`` observation can hold it: characters outside :data:`TEXT_CHARSET` shown
    as '?', cut to ``limit`` characters with a visible mark (the call record keeps the full text)."""
    if len(text) <= limit and _CHARSET.issuperset(text):
        return text
    shown = "".join(c if c in _CHARSET else "?" for c in text)
    if len(shown) <= limit:
        return shown
    return shown[: limit - len(_CUT_MARK)] + _CUT_MARK if limit > len(_CUT_MARK) else shown[:limit]
_RAW_MAX_CHARS = 1000


def _check_identifier(name: object, what: str) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{what} must be a Python identifier, got {name!r}")
    return name


@dataclass(frozen=True)
class ActionField:
    """One argument field shared by the tools of a toolbox.

    Attributes
    ----------
    name:
        Identifier used as the action-space key and the JSON argument name (not ``"tool"``).
    kind:
        One of :data:`FIELD_KINDS`.
    description:
        Shown to LLM agents in the tool schemas.
    choices:
        The allowed strings of a ``"choice"`` field (empty for other kinds).
    bounds:
        The closed range ``(low, high)`` of a ``"number"`` field; ignored by other kinds. Numbers
        are finite by construction, so a typed action's ``Box`` is bounded like its JSON schema.
    grid:
        Default setpoints of a ``"number"`` field for policies that enumerate actions (the RL
        wrappers' catalogue, :class:`causal_gym.envs.wrappers.FlattenDictActions`): distinct values
        inside ``bounds``. Empty (the default, and for other kinds): no default, a tool using the
        field is enumerated only when a grid is passed.
    examples:
        Texts of a ``"text"`` field that the env accepts in any state (e.g. a harmless program for
        ``run_code``): what :meth:`ToolActionSpace.sample` sends when a tool requires the field.
        Empty (the default, and for other kinds): masked sampling never draws a tool that requires it.
    """

    name: str
    kind: str
    description: str
    choices: tuple[str, ...] = ()
    bounds: tuple[float, float] = (-1e6, 1e6)
    grid: tuple[float, ...] = ()
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_identifier(self.name, "a field name")
        if self.name == "tool":
            raise ValueError("'tool' is reserved for the tool index of a typed action")
        check_choice(self.kind, FIELD_KINDS, "field kind")
        choices = tuple(self.choices)
        object.__setattr__(self, "choices", choices)
        if self.kind == "choice":
            if not choices or not all(isinstance(c, str) and c for c in choices) or len(set(choices)) != len(choices):
                raise ValueError(f"choice field {self.name!r} needs distinct non-empty string choices, got {choices!r}")
        elif choices:
            raise ValueError(f"only choice fields take choices; {self.name!r} is a {self.kind} field")
        low, high = (float(b) for b in self.bounds)
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"field {self.name!r} needs finite bounds low < high, got {self.bounds!r}")
        object.__setattr__(self, "bounds", (low, high))
        grid = tuple(float(v) for v in self.grid)
        if grid and self.kind != "number":
            raise ValueError(f"only number fields take a grid; {self.name!r} is a {self.kind} field")
        if any(not low <= v <= high for v in grid) or len(set(grid)) != len(grid):
            raise ValueError(f"the grid of field {self.name!r} must hold distinct values in [{low:g}, {high:g}], "
                             f"got {self.grid!r}")
        object.__setattr__(self, "grid", grid)
        examples = tuple(self.examples)
        if examples and self.kind != "text":
            raise ValueError(f"only text fields take examples; {self.name!r} is a {self.kind} field")
        if not all(isinstance(t, str) and t.strip() and _CHARSET.issuperset(t) for t in examples):
            raise ValueError(f"the examples of field {self.name!r} must be non-empty texts in TEXT_CHARSET, "
                             f"got {self.examples!r}")
        object.__setattr__(self, "examples", examples)


@dataclass(frozen=True)
class Tool:
    """A tool an agent can call.

    Attributes
    ----------
    name:
        Identifier; the JSON function name.
    description:
        What the tool does and returns, for LLM agents.
    fields:
        Names of the :class:`ActionField` s the tool takes.
    required:
        The subset of ``fields`` a JSON call must give (node and choice fields must be required).
    cost_kind:
        The budget the tool's calls draw on (e.g. ``"tests"``), named in its schema description;
        ``None`` for tools that only cost a turn.
    cost:
        What one call draws from ``cost_kind`` (default 1; e.g. Heuresis's ``stability`` costs
        ``n_resamples`` tests). The env that builds the toolbox sets it, so that its handlers and
        the RL wrappers' budget masks read the same amount.
    """

    name: str
    description: str
    fields: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    cost_kind: str | None = None
    cost: float = 1.0

    def __post_init__(self) -> None:
        _check_identifier(self.name, "a tool name")
        fields, required = tuple(self.fields), tuple(self.required)
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "required", required)
        if len(set(fields)) != len(fields):
            raise ValueError(f"tool {self.name!r} lists a field twice: {fields}")
        extra = [f for f in required if f not in fields]
        if extra:
            raise ValueError(f"tool {self.name!r} requires {extra}, which are not among its fields {fields}")
        if isinstance(self.cost, bool) or not isinstance(self.cost, (int, float, np.integer, np.floating)) or not (
            0 <= self.cost < np.inf
        ):
            raise ValueError(f"the cost of tool {self.name!r} must be a finite number >= 0, got {self.cost!r}")
        object.__setattr__(self, "cost", float(self.cost))


@dataclass(frozen=True)
class ToolCall:
    """A validated call: the tool name and its arguments as plain Python values.

    ``arguments`` holds every field of the tool: node -> ``int``, node set -> sorted
    ``tuple[int]``, choice -> ``str``, text -> ``str``, number -> ``float`` (optional ones at
    their empty default).
    """

    tool: str
    arguments: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The call with variables written by name (``"X3"``), for records and messages."""

        def readable(value: Any) -> Any:
            if isinstance(value, int):
                return variable_name(value)
            if isinstance(value, tuple):
                return [variable_name(v) for v in value]
            return value

        return {"tool": self.tool, "arguments": {k: readable(v) for k, v in self.arguments.items()}}


@dataclass(frozen=True)
class ToolError:
    """A rejected call: the message for the agent, the tool it named (if any) and what it sent.

    ``raw`` is a JSON-serialisable summary of the rejected input (long input is cut), so a record
    of malformed calls stays writable.
    """

    message: str
    tool: str | None = None
    raw: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "tool": self.tool, "raw": self.raw}


def _raw_summary(value: Any) -> Any:
    """A JSON-serialisable stand-in for arbitrary agent input, at most about 1000 characters."""
    if isinstance(value, str):
        return value if len(value) <= _RAW_MAX_CHARS else value[:_RAW_MAX_CHARS] + "...[cut]"
    try:
        data = to_jsonable(value)
        text = json.dumps(data)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except Exception:  # an agent-supplied object whose __repr__ fails still needs a record entry
            text = f"<{type(value).__name__}>"
        return _raw_summary(text)
    return data if len(text) <= _RAW_MAX_CHARS else _raw_summary(text)


def _as_int(value: Any) -> int | None:
    """``value`` as an int when it is an integer scalar (not a bool); else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iu":
        return int(value)
    return None


def _as_mask(value: Any, d: int) -> tuple[int, ...] | None:
    """The indices set in a length-``d`` 0/1 vector, or None when ``value`` is not one."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.shape != (d,) or arr.dtype.kind not in "biu" or not np.isin(arr, (0, 1)).all():
        return None
    return tuple(np.flatnonzero(arr).tolist())


def _number(value: Any, bounds: tuple[float, float]) -> tuple[float | None, str | None]:
    """``value`` as a float inside ``bounds``, or the problem with it (bools and strings are refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None, f"expected a number, got {type(value).__name__} {_raw_summary(value)!r}"
    number = float(value)
    if not np.isfinite(number) or not bounds[0] <= number <= bounds[1]:
        return None, f"expected a finite number in [{bounds[0]:g}, {bounds[1]:g}], got {number!r}"
    return number, None


class Toolbox:
    """The tools of an environment, as typed actions and as OpenAI tool schemas.

    Parameters
    ----------
    tools : sequence of Tool
        In the order of the typed action's ``"tool"`` index.
    fields : sequence of ActionField
        Every field the tools use (and no other), in the order of the action space's keys.
    d : int
        Number of variables, named ``X0 .. X{d-1}``.
    text_max_length : int, default 4000
        Longest text argument, in characters.

    Raises
    ------
    ValueError
        If names repeat, a tool uses an undefined field, a field is used by no tool, or a tool
        leaves a node or choice field optional.

    Examples
    --------
    >>> box = Toolbox([Tool("probe", "Probe a pair.", ("x", "y"), ("x", "y"))],
    ...               [ActionField("x", "node", "first"), ActionField("y", "node", "second")], d=4)
    >>> box.parse_tool_call("probe", '{"x": "X1", "y": 3}')
    ToolCall(tool='probe', arguments={'x': 1, 'y': 3})
    >>> box.parse_tool_call("probe", {"x": "X1", "y": "X1"}).message
    "arguments 'x' and 'y' both name X1; they must differ"
    """

    def __init__(
        self, tools: Sequence[Tool], fields: Sequence[ActionField], d: int, text_max_length: int = 4000
    ) -> None:
        self.d = check_count(d, "d", 1)
        self.text_max_length = check_count(text_max_length, "text_max_length", 1)
        self.tools = tuple(tools)
        if not self.tools or not all(isinstance(t, Tool) for t in self.tools):
            raise ValueError("tools must be a non-empty sequence of Tool")
        if not all(isinstance(f, ActionField) for f in fields):
            raise ValueError("fields must be a sequence of ActionField")
        self.fields = {f.name: f for f in fields}
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names) or len(self.fields) != len(fields):
            raise ValueError(f"tool and field names must be unique; tools {names}, fields {[f.name for f in fields]}")
        self._index = {name: k for k, name in enumerate(names)}
        used = {f for t in self.tools for f in t.fields}
        if used - self.fields.keys():
            raise ValueError(f"tools use undefined fields {sorted(used - self.fields.keys())}")
        if self.fields.keys() - used:
            raise ValueError(f"fields {sorted(self.fields.keys() - used)} are used by no tool")
        for tool in self.tools:
            loose = [f for f in tool.fields if self.fields[f].kind in _REQUIRED_KINDS and f not in tool.required]
            if loose:
                raise ValueError(f"tool {tool.name!r} must require its node/choice/number fields {loose}")
        long = [f.name for f in fields if any(len(t) > self.text_max_length for t in f.examples)]
        if long:
            raise ValueError(f"fields {long} have examples longer than text_max_length={self.text_max_length}")

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names, in index order."""
        return tuple(self._index)

    def tool(self, name: str) -> Tool:
        """The tool called ``name`` (``KeyError`` if there is none)."""
        return self.tools[self._index[name]]

    def index(self, name: str) -> int:
        """The typed-action index of tool ``name`` (``KeyError`` if there is none)."""
        return self._index[name]

    # -- the two presentations ----------------------------------------------------------------

    def action_space(self) -> ToolActionSpace:
        """The typed action space: ``"tool"`` first, then one entry per field in definition order."""
        entries: dict[str, spaces.Space] = {"tool": spaces.Discrete(len(self.tools))}
        for name, f in self.fields.items():
            if f.kind == "node":
                entries[name] = spaces.Discrete(self.d)
            elif f.kind == "node_set":
                entries[name] = spaces.MultiBinary(self.d)
            elif f.kind == "choice":
                entries[name] = spaces.Discrete(len(f.choices))
            elif f.kind == "number":
                entries[name] = spaces.Box(*f.bounds, shape=(1,), dtype=np.float64)
            else:
                entries[name] = spaces.Text(self.text_max_length, min_length=0, charset=TEXT_CHARSET)
        return ToolActionSpace(self, entries)

    def openai_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas, one per tool (a fresh list on every call)."""
        names = [variable_name(i) for i in range(self.d)]
        schemas = []
        for tool in self.tools:
            properties: dict[str, Any] = {}
            for name in tool.fields:
                f = self.fields[name]
                if f.kind == "node":
                    prop: dict[str, Any] = {"type": "string", "enum": list(names)}
                elif f.kind == "node_set":
                    prop = {"type": "array", "items": {"type": "string", "enum": list(names)}}
                elif f.kind == "choice":
                    prop = {"type": "string", "enum": list(f.choices)}
                elif f.kind == "number":
                    prop = {"type": "number", "minimum": f.bounds[0], "maximum": f.bounds[1]}
                else:
                    # No maxLength: servers that constrain decoding with a grammar (llama.cpp) expand it
                    # into one rule per character and crash at 8000; the limit is enforced on parsing
                    # and stated in the description instead.
                    prop = {"type": "string"}
                prop["description"] = f.description + (
                    f" At most {self.text_max_length} characters." if f.kind == "text" else "")
                properties[name] = prop
            description = tool.description
            if tool.cost_kind is not None:
                description += f" Draws on the '{tool.cost_kind}' budget."
            schemas.append(
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": description,
                        "parameters": {
                            "type": "object",
                            "properties": properties,
                            "required": list(tool.required),
                            "additionalProperties": False,
                        },
                    },
                }
            )
        return schemas

    # -- input ---------------------------------------------------------------------------------

    def parse_tool_call(self, name: Any, arguments: Any) -> ToolCall | ToolError:
        """Validate an LLM tool call; never raises on agent input.

        Parameters
        ----------
        name : str
            The function name.
        arguments : dict or str or None
            The arguments, as a mapping or as the JSON text LLM APIs deliver (``""`` and ``None``
            mean no arguments). Variables may be given by name (``"X3"``) or index (``3``).

        Returns
        -------
        ToolCall or ToolError
        """
        sent = {"name": name, "arguments": arguments}

        def raw() -> Any:  # summarised only for a rejected call: a valid one never pays for it
            return _raw_summary(sent)

        if not isinstance(name, str) or name not in self._index:
            return ToolError(f"unknown tool {name!r}; available tools: {', '.join(self._index)}", None, raw())
        tool = self.tool(name)

        def error(message: str) -> ToolError:
            return ToolError(message, name, raw())

        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        elif isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                return error(f"arguments are not valid JSON ({exc})")
        if not isinstance(arguments, Mapping):
            return error(f"arguments must be a JSON object, got {type(arguments).__name__}")
        unknown = [k for k in arguments if k not in tool.fields]
        if unknown:
            return error(
                f"unexpected argument(s) {', '.join(map(repr, unknown))} for tool {name!r} "
                f"(it takes: {', '.join(tool.fields) or 'no arguments'})"
            )
        missing = [k for k in tool.required if k not in arguments]
        if missing:
            return error(f"missing required argument(s) {', '.join(map(repr, missing))} for tool {name!r}")
        values: dict[str, Any] = {}
        for key in tool.fields:
            if key not in arguments:
                continue
            value, problem = self._from_json(self.fields[key], arguments[key])
            if problem is not None:
                return error(f"argument {key!r}: {problem}")
            values[key] = value
        return self._complete(tool, values, raw)

    def decode(self, action: Any) -> ToolCall | ToolError:
        """Validate a typed action (an element of :meth:`action_space`); never raises on agent input.

        Entries for fields the chosen tool does not use are ignored.
        """
        def raw() -> Any:  # summarised only for a rejected action
            return _raw_summary(action)

        if not isinstance(action, Mapping):
            return ToolError(f"an action must be a dict with a 'tool' entry, got {type(action).__name__}", None, raw())
        index = _as_int(action.get("tool"))
        if index is None or not 0 <= index < len(self.tools):
            return ToolError(f"action['tool'] must be an integer in 0..{len(self.tools) - 1}", None, raw())
        tool = self.tools[index]
        values: dict[str, Any] = {}
        for key in tool.fields:
            if key not in action:
                return ToolError(f"the action lacks the {key!r} entry that tool {tool.name!r} uses", tool.name, raw())
            value, problem = self._from_typed(self.fields[key], action[key])
            if problem is not None:
                return ToolError(f"action[{key!r}]: {problem}", tool.name, raw())
            values[key] = value
        return self._complete(tool, values, raw)

    def encode(self, call: ToolCall) -> dict[str, Any]:
        """The typed action for ``call`` (unused fields at 0 / empty); ``decode`` inverts it.

        The call's values may also be written as in JSON (``"X3"``, a list for a node set), and
        optional fields may be left out, so scripted agents can write
        ``toolbox.encode(ToolCall("submit", {}))``.

        Raises
        ------
        ValueError
            If ``call`` names an unknown tool, lacks a required argument, has an argument the tool
            does not take, or holds values the toolbox would reject.
        """
        if not isinstance(call, ToolCall) or call.tool not in self._index:
            raise ValueError(f"expected a ToolCall of one of the tools {list(self._index)}, got {call!r}")
        tool = self.tool(call.tool)
        wrong = sorted(set(call.arguments) - set(tool.fields)) + sorted(set(tool.required) - set(call.arguments))
        if wrong:
            raise ValueError(
                f"call {call!r} does not match the fields {tool.fields} (required {tool.required}) of {tool.name!r}"
            )
        values: dict[str, Any] = {}
        for key, value in call.arguments.items():
            values[key], problem = self._from_json(self.fields[key], value)
            if problem is not None:
                raise ValueError(f"cannot encode the {call.tool!r} call: argument {key!r}: {problem}")
        checked = self._complete(tool, values, lambda: None)
        if isinstance(checked, ToolError):
            raise ValueError(f"cannot encode the {call.tool!r} call: {checked.message}")
        action: dict[str, Any] = {"tool": np.int64(self._index[call.tool])}
        for name, f in self.fields.items():
            value = checked.arguments.get(name)
            if f.kind == "node_set":
                mask = np.zeros(self.d, dtype=np.int8)
                mask[list(value or ())] = 1
                action[name] = mask
            elif f.kind == "text":
                action[name] = value or ""
            elif f.kind == "choice":
                action[name] = np.int64(f.choices.index(value) if value is not None else 0)
            elif f.kind == "number":
                action[name] = np.array([value if value is not None else 0.0], dtype=np.float64)
            else:
                action[name] = np.int64(value if value is not None else 0)
        return action

    # -- field conversion ----------------------------------------------------------------------

    def _text_problem(self, value: str) -> str | None:
        if len(value) > self.text_max_length:
            return f"the text is {len(value)} characters long; the limit is {self.text_max_length}"
        if _CHARSET.issuperset(value):  # the common case, without a Python loop over the text
            return None
        bad = next(c for c in value if c not in _CHARSET)
        return (
            f"the text contains the character {bad!r} at position {value.index(bad)}; use printable "
            "ASCII (plus newline, tab and the arrows/dashes → ← ↔ — –)"
        )

    def _from_json(self, f: ActionField, value: Any) -> tuple[Any, str | None]:
        if f.kind == "node":
            try:
                return variable_index(value, self.d), None
            except ValueError as exc:
                return None, str(exc)
        if f.kind == "node_set":
            if not isinstance(value, (list, tuple)):
                return None, f'expected a list of variable names like ["X1", "X2"], got {type(value).__name__}'
            try:
                members = [variable_index(v, self.d) for v in value]
            except ValueError as exc:
                return None, str(exc)
            if len(set(members)) != len(members):
                repeated = sorted({variable_name(m) for m in members if members.count(m) > 1})
                return None, f"repeats {', '.join(repeated)}"
            return tuple(sorted(members)), None
        if f.kind == "choice":
            if not isinstance(value, str) or value not in f.choices:
                return None, f"expected one of {', '.join(map(repr, f.choices))}, got {value!r}"
            return value, None
        if f.kind == "number":
            return _number(value, f.bounds)
        if not isinstance(value, str):
            return None, f"expected a string, got {type(value).__name__}"
        return value, self._text_problem(value)

    def _from_typed(self, f: ActionField, value: Any) -> tuple[Any, str | None]:
        if f.kind == "node_set":
            members = _as_mask(value, self.d)
            return members, None if members is not None else f"expected a 0/1 vector of length {self.d}"
        if f.kind == "text":
            if not isinstance(value, str):
                return None, f"expected a string, got {type(value).__name__}"
            return value, self._text_problem(value)
        if f.kind == "number":
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError, OverflowError):
                return None, f"expected a length-1 float vector, got {_raw_summary(value)!r}"
            if arr.shape not in ((), (1,)):
                return None, f"expected a length-1 float vector, got shape {arr.shape}"
            return _number(float(arr.reshape(())), f.bounds)
        index = _as_int(value)
        size = self.d if f.kind == "node" else len(f.choices)
        if index is None or not 0 <= index < size:
            return None, f"expected an integer in 0..{size - 1}, got {_raw_summary(value)!r}"
        return (index if f.kind == "node" else f.choices[index]), None

    def _complete(self, tool: Tool, values: dict[str, Any], raw: Callable[[], Any]) -> ToolCall | ToolError:
        """Apply the cross-field rules, fill optional fields with their empty default, build the call.

        ``raw()`` gives the summary of what was sent, for the error of a rejected call."""
        named: dict[int, str] = {}
        for key in tool.fields:
            if self.fields[key].kind == "node":
                if values[key] in named:
                    return ToolError(
                        f"arguments {named[values[key]]!r} and {key!r} both name {variable_name(values[key])}; "
                        "they must differ",
                        tool.name,
                        raw(),
                    )
                named[values[key]] = key
        arguments: dict[str, Any] = {}
        for key in tool.fields:
            kind = self.fields[key].kind
            value = values.get(key, () if kind == "node_set" else "")
            if kind == "node_set":
                clash = [v for v in value if v in named]
                if clash:
                    return ToolError(
                        f"argument {key!r} must not contain {', '.join(variable_name(v) for v in clash)} "
                        f"(already named by {', '.join(repr(named[v]) for v in clash)})",
                        tool.name,
                        raw(),
                    )
            elif kind == "text" and key in tool.required and not value.strip():
                return ToolError(f"argument {key!r} must not be empty", tool.name, raw())
            arguments[key] = value
        return ToolCall(tool.name, arguments)


class ToolActionSpace(spaces.Dict):
    """A toolbox's typed action space: a ``Dict`` whose masked ``sample`` draws only calls it accepts.

    ``sample(mask=...)`` takes Gymnasium's ``Dict`` mask (one entry per key, ``None`` = no
    restriction; an env's ``info["action_mask"]``) and keeps the toolbox's rules on top of it:

    - the tool is drawn uniformly among those the ``"tool"`` mask allows whose arguments can be
      filled under the other masks;
    - node fields follow their ``Discrete`` masks and name distinct variables; node sets follow
      their ``MultiBinary`` masks (0 out, 1 in, 2 free) and never hold a variable the call names;
      choices follow their masks; numbers are drawn in their bounds (a ``Box`` takes no mask);
    - a text field's mask is Gymnasium's ``(length, charlist_mask)``, or a ``str`` (the text to
      send), or ``None``: an optional text is left empty (its omitted value), a required one is one
      of the field's :attr:`ActionField.examples`;
    - fields the drawn tool does not use hold their empty value (as :meth:`Toolbox.encode` writes).

    Without a mask, ``sample`` is ``Dict.sample`` (any element of the space, valid or not);
    ``probability`` masks are passed to it unchanged. Every draw comes from the sub-spaces' generators,
    so ``seed`` makes the draws reproducible.

    Raises
    ------
    ValueError
        From ``sample`` when the mask is not a dict over the space's keys, or allows no tool whose
        arguments can be filled.

    Examples
    --------
    >>> box = Toolbox([Tool("probe", "Probe a pair.", ("x", "y"), ("x", "y"))],
    ...               [ActionField("x", "node", "first"), ActionField("y", "node", "second")], d=3)
    >>> space = box.action_space()
    >>> _ = space.seed(0)
    >>> calls = [box.decode(space.sample(mask={"tool": None, "x": None, "y": np.array([0, 0, 1], np.int8)}))
    ...          for _ in range(50)]
    >>> sorted({(c.arguments["x"], c.arguments["y"]) for c in calls})
    [(0, 2), (1, 2)]
    """

    def __init__(self, toolbox: Toolbox, entries: Mapping[str, spaces.Space]) -> None:
        super().__init__(dict(entries), sort_keys=False)
        self.toolbox = toolbox

    def sample(self, mask: dict[str, Any] | None = None, probability: dict[str, Any] | None = None) -> dict[str, Any]:
        """A valid call under ``mask`` (see the class docstring); without one, ``Dict.sample``."""
        if mask is None:
            return super().sample(probability=probability)
        if probability is not None:
            raise ValueError("only one of mask and probability can be given")
        if not isinstance(mask, Mapping) or mask.keys() != self.spaces.keys():
            raise ValueError(f"the mask must be a dict with the keys {list(self.spaces)}, got {_raw_summary(mask)!r}")
        allowed = np.ones(len(self.toolbox.tools), dtype=np.int8) if mask["tool"] is None else np.array(
            mask["tool"], dtype=np.int8)
        options = [self._node_options(tool, mask) if allowed[k] else None for k, tool in enumerate(self.toolbox.tools)]
        fillable = np.array([o is not None for o in options], dtype=np.int8)
        if not fillable.any():
            raise ValueError("the mask allows no tool whose arguments can be filled")
        index = int(self.spaces["tool"].sample(mask=fillable))
        tool, node_options = self.toolbox.tools[index], options[index]
        assert node_options is not None  # the fillable mask drew it
        arguments: dict[str, Any] = {}
        named: list[int] = []
        for k, (name, values) in enumerate(node_options.items()):
            rest = list(node_options.values())[k + 1:]
            choice = np.zeros(self.toolbox.d, dtype=np.int8)
            choice[[v for v in values - set(named) if _distinct([*named, v], rest)]] = 1
            named.append(int(self.spaces[name].sample(mask=choice)))
            arguments[name] = named[-1]
        for name in tool.fields:
            f, space, m = self.toolbox.fields[name], self.spaces[name], mask[name]
            if f.kind == "node_set":
                members = np.full(self.toolbox.d, 2, dtype=np.int8) if m is None else np.array(m, dtype=np.int8)
                members[named] = 0
                arguments[name] = np.flatnonzero(space.sample(mask=members)).tolist()
            elif f.kind == "choice":
                arguments[name] = f.choices[int(space.sample(mask=m))]
            elif f.kind == "number":
                arguments[name] = float(space.sample(mask=m)[0])
            elif f.kind == "text" and isinstance(m, str):
                arguments[name] = m
            elif f.kind == "text" and m is not None:
                arguments[name] = space.sample(mask=m)
            elif f.kind == "text" and name in tool.required:
                arguments[name] = f.examples[int(space.np_random.integers(len(f.examples)))]
        return self.toolbox.encode(ToolCall(tool.name, arguments))

    def _node_options(self, tool: Tool, mask: Mapping[str, Any]) -> dict[str, set[int]] | None:
        """The variables each node field of ``tool`` may name under the masks, or None when the masks
        leave some argument of the tool without a valid value."""
        forced: set[int] = set()  # variables a node set of the call must hold, which no node field may name
        nodes: dict[str, set[int]] = {}
        for name in tool.fields:
            f, m = self.toolbox.fields[name], mask[name]
            if f.kind == "node":
                nodes[name] = set(range(self.toolbox.d)) if m is None else set(np.flatnonzero(np.asarray(m)).tolist())
            elif f.kind == "node_set" and m is not None:
                forced |= set(np.flatnonzero(np.asarray(m) == 1).tolist())
            elif self._empty(f, m, name in tool.required):
                return None
        nodes = {name: values - forced for name, values in nodes.items()}
        return nodes if _distinct([], list(nodes.values())) else None


    @staticmethod
    def _empty(f: ActionField, mask: Any, required: bool) -> bool:
        """Whether ``mask`` leaves choice or required text field ``f`` no value to send."""
        if f.kind == "choice":
            return mask is not None and not np.any(mask)
        if f.kind != "text" or not required:
            return False
        return (mask is None and not f.examples) or (isinstance(mask, str) and not mask.strip())


def _distinct(named: list[int], options: Sequence[set[int]]) -> bool:
    """Whether the variables in ``named`` are distinct and each set in ``options`` can still give one
    more, all distinct (a call has at most a few node fields, so the search is tiny)."""
    if len(set(named)) != len(named):
        return False
    if not options:
        return True
    return any(_distinct(named + [v], options[1:]) for v in options[0] - set(named))
