"""CausaLab hypotheses: the DSL an agent states at each step, its parser, and the verify check.

A hypothesis claims a causal graph over the episode's properties and the structural equation of
the frequency with its coefficients::

    {"edges": [{"from": "density", "to": "resonanceFreq"}, {"from": "ph", "to": "density"}],
     "freq_equation": "resonanceFreq = base + c_density*density",
     "coefficients": {"base": 20, "c_density": 2}}

In the hard-quadratic family every parent ``X`` of the frequency contributes two terms,
``c_X_2*X^2 + c_X_1*X``, and the coefficients are named ``c_X_2`` and ``c_X_1``.

Agent input never raises: :func:`parse_hypothesis` returns either a :class:`Hypothesis` or a
:class:`HypothesisError` listing every problem found, in words the agent can act on (the paper
re-prompts with the parser error). Wrong arguments from Python code (the property list, the
family name) raise ``ValueError`` as everywhere in causal_gym.

What the parser accepts
-----------------------
- The three keys ``edges``, ``freq_equation`` and ``coefficients`` and no others; a JSON string
  (optionally wrapped in a Markdown code fence) or a dict.
- ``edges``: a list of ``{"from": A, "to": B}`` over the declared properties and the frequency;
  no self-loops, no directed cycle (the cycle is named). Repeated edges are the same claim and
  collapse. Edges out of the frequency are accepted (the FreqParent variant has them; elsewhere
  they are simply wrong edges for the metrics to count).
- ``freq_equation``: ``base`` plus one term per parent of the frequency, joined by ``+``. The
  parser is tolerant of spacing, term order, factor order (``density*c_density``), ``*`` written
  or left out between space-separated factors (``c_density density``), unicode ``·``/``×`` for
  products, ``X^2``, ``X**2``, ``X²``, ``X*X`` and parentheses around a product. It rejects
  ``-`` (signs belong in the coefficient values), numeric literals (values belong in
  ``coefficients``), unknown names, interaction terms, powers above 2 and, in the linear family,
  squared terms. A left-hand side, if written, must be the frequency's name.
- ``coefficients``: ``base`` and exactly the coefficient names used in the equation, each a
  non-zero finite JSON number (numeric strings are rejected, not converted).
- The variables of the equation must be exactly the parents of the frequency in ``edges``.

A hypothesis with no edge (equation ``resonanceFreq = base``) is valid; scoring treats it as an
empty claim (see :func:`causal_gym.envs.causalab.scoring.final_hypothesis`).

Verification
------------
Every value the environment shows is rounded to 2 decimals, so a correct frequency equation
reproduces an observed frequency ``f`` up to that rounding: the exact prediction ``f_hat`` lies
within 0.005 of ``f``. A hypothesis whose coefficients were themselves estimated from such
readings (a least-squares fit) is off the true equation by a few thousandths more, so a check
with no slack beyond the rounding fails a fitted hypothesis that predicts within 0.0048 Hz of the
truth on records where the truth itself sits near the rounding edge. :func:`verify` therefore
accepts a record when ``|f_hat - f| <= 0.005 + tol`` with ``tol`` defaulting to
:data:`VERIFY_SLACK` (0.005, another half unit of the display rounding): one display unit in
all, 500 times finer than the 5 Hz of task success. Only the frequency equation is checked:
edges among the other properties carry no coefficients in the DSL.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from causal_gym._validation import check_choice, check_real
from causal_gym.envs.causalab.world import FREQ, KINDS

__all__ = [
    "FREQ",
    "KINDS",
    "READING_ROUNDING",
    "VERIFY_SLACK",
    "Hypothesis",
    "HypothesisError",
    "VerifyResult",
    "hypothesis_schema",
    "parse_hypothesis",
    "predict_frequency",
    "reproduces",
    "verify",
]

_KEYS = ("edges", "freq_equation", "coefficients")
READING_ROUNDING = 0.005
"""Half a unit of the 2-decimal display: the most a correct prediction can differ from a reading."""
VERIFY_SLACK = 0.005
"""Default slack of :func:`verify` beyond the readings' rounding: half a display unit, for a
hypothesis whose coefficients were estimated from rounded readings (see the module docstring)."""
_FLOAT_ERROR = 1e-9


@dataclass(frozen=True)
class Hypothesis:
    """A valid, parsed hypothesis.

    Attributes
    ----------
    edges : frozenset of (str, str)
        Claimed directed edges ``(parent, child)``.
    freq_equation : str
        The frequency equation in canonical form (``base`` first, parents in declaration order).
    coefficients : mapping of str to float
        ``base`` and one coefficient per equation term (read-only).
    kind : {"linear", "quadratic"}
        Functional family; decides how coefficient names map to terms.
    freq : str
        Name of the frequency node.
    """

    edges: frozenset[tuple[str, str]]
    freq_equation: str
    coefficients: Mapping[str, float] = field(hash=False)
    kind: str = "linear"
    freq: str = FREQ

    def __post_init__(self) -> None:
        check_choice(self.kind, KINDS, "kind")
        object.__setattr__(self, "edges", frozenset(self.edges))
        object.__setattr__(self, "coefficients", MappingProxyType(dict(self.coefficients)))

    @property
    def freq_parents(self) -> tuple[str, ...]:
        """Claimed parents of the frequency, sorted by name."""
        return tuple(sorted(a for a, b in self.edges if b == self.freq))

    @property
    def linear_coefficients(self) -> dict[str, float]:
        """Coefficient of each parent's linear term (``c_X``, or ``c_X_1`` in the quadratic family).

        This is what the frequency-weight metric compares with the truth.
        """
        suffix = "_1" if self.kind == "quadratic" else ""
        return {p: float(self.coefficients[f"c_{p}{suffix}"]) for p in self.freq_parents}

    def to_dict(self) -> dict[str, Any]:
        """The hypothesis in the DSL's JSON form (edges sorted); parses back to an equal object."""
        return {
            "edges": [{"from": a, "to": b} for a, b in sorted(self.edges)],
            "freq_equation": self.freq_equation,
            "coefficients": dict(self.coefficients),
        }


@dataclass(frozen=True)
class HypothesisError:
    """Why a hypothesis was rejected: one sentence per problem, addressed to the agent."""

    problems: tuple[str, ...]

    @property
    def message(self) -> str:
        """All problems in one message, ready to send back to the agent."""
        return "invalid hypothesis: " + "; ".join(self.problems)


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of checking a hypothesis's frequency equation against recorded measurements.

    Attributes
    ----------
    ok : bool
        Every record is reproduced (vacuously true without records).
    n_records : int
    max_abs_error : float
        Largest ``|predicted - observed|`` frequency (0.0 without records).
    worst_record_index : int or None
        Index of the record with that error (None without records).
    residuals : tuple of float
        ``predicted - observed`` for each record, in order.
    message : str
        A one-line summary for the agent.
    """

    ok: bool
    n_records: int
    max_abs_error: float
    worst_record_index: int | None
    residuals: tuple[float, ...]
    message: str


# ---------------------------------------------------------------------------------------------
# argument checks (programmer errors raise)
# ---------------------------------------------------------------------------------------------


def _nodes(properties: Sequence[str], freq: str) -> tuple[str, ...]:
    """Declared node names: the properties, then the frequency (which may be listed or not)."""
    if not isinstance(freq, str) or not freq:
        raise ValueError(f"freq must be a non-empty string, got {freq!r}")
    if isinstance(properties, (str, bytes)) or not isinstance(properties, Sequence):
        raise ValueError(f"properties must be a sequence of property names, got {properties!r}")
    names = list(properties)
    if any(not isinstance(p, str) or not p for p in names):
        raise ValueError(f"properties must be non-empty strings, got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"properties has repeated names: {names!r}")
    reserved = [p for p in names if p == "base" or p.startswith("c_")]
    if reserved:
        raise ValueError(f"property names {reserved} clash with coefficient names ('base', 'c_...')")
    return tuple(p for p in names if p != freq) + (freq,)


# ---------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------


_FENCE = re.compile(r"^```[A-Za-z]*\s*(.*?)\s*```$", re.DOTALL)
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+(?:\.\d+)?)|(?P<op>[\^*()]))")


def _load(value: object) -> tuple[dict | None, list[str]]:
    """The hypothesis as a dict, or the problems that prevent reading it as one."""
    if value is None:
        return None, ["no hypothesis given"]
    if isinstance(value, str):
        text = value.strip()
        fenced = _FENCE.match(text)
        if fenced:
            text = fenced.group(1)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            return None, [f"hypothesis is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})"]
    if not isinstance(value, dict):
        return None, [f"hypothesis must be a JSON object with keys {', '.join(_KEYS)}, got {type(value).__name__}"]
    if not value:
        return None, [f"hypothesis is empty; give {', '.join(_KEYS)}"]
    problems = [f"missing key '{k}'" for k in _KEYS if k not in value]
    extra = sorted(str(k) for k in value if k not in _KEYS)
    if extra:
        problems.append(f"unknown key(s) {extra}; a hypothesis has exactly {', '.join(_KEYS)}")
    return value, problems


def _find_cycle(edges: set[tuple[str, str]], nodes: tuple[str, ...]) -> list[str] | None:
    """One directed cycle as a closed node list, or None (depth-first search in declaration order)."""
    children: dict[str, list[str]] = {v: [] for v in nodes}
    for a, b in sorted(edges, key=lambda e: (nodes.index(e[0]), nodes.index(e[1]))):
        children[a].append(b)
    state = dict.fromkeys(nodes, 0)  # 0 unvisited, 1 on the current path, 2 done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for c in children[v]:
            if state[c] == 1:
                return path[path.index(c):] + [c]
            if state[c] == 0:
                found = visit(c)
                if found:
                    return found
        state[v] = 2
        path.pop()
        return None

    for v in nodes:
        if state[v] == 0:
            found = visit(v)
            if found:
                return found
    return None


def _parse_edges(raw: object, nodes: tuple[str, ...]) -> tuple[set[tuple[str, str]], list[str]]:
    if not isinstance(raw, list):
        return set(), [f"'edges' must be a list of {{\"from\": ..., \"to\": ...}} objects, got {type(raw).__name__}"]
    declared = ", ".join(nodes)
    edges: set[tuple[str, str]] = set()
    problems = []
    for k, item in enumerate(raw):
        if not isinstance(item, dict) or set(item) != {"from", "to"}:
            problems.append(f"edges[{k}] must be an object with exactly the keys 'from' and 'to', got {item!r}")
            continue
        a, b = item["from"], item["to"]
        bad = [v for v in (a, b) if not isinstance(v, str) or v not in nodes]
        if bad:
            problems.append(f"edges[{k}] names undeclared propert{'ies' if len(bad) > 1 else 'y'} "
                            f"{', '.join(map(repr, bad))}; declared: {declared}")
        elif a == b:
            problems.append(f"edges[{k}] is a self-loop {a} -> {a}")
        else:
            edges.add((a, b))
    if not problems:
        cycle = _find_cycle(edges, nodes)
        if cycle:
            problems.append(f"edges contain a directed cycle {' -> '.join(cycle)}; the graph must be acyclic")
    return edges, problems


@dataclass(frozen=True)
class _Term:
    coefficient: str
    variable: str | None
    power: int


def _parse_term(text: str, nodes: tuple[str, ...], freq: str) -> tuple[_Term | None, str | None]:
    """One ``+``-separated term: a coefficient name times at most one property (power 1 or 2)."""
    shown = text.strip()
    tokens: list[tuple[str, str]] = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _TOKEN.match(stripped, pos)
        if not m:
            return None, f"unexpected character {stripped[pos:].lstrip()[0]!r} in term '{shown}'"
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    depth = 0
    for kind, tok in tokens:
        depth += (tok == "(") - (tok == ")") if kind == "op" else 0
        if depth < 0:
            break
    if depth != 0:
        return None, (f"unbalanced parentheses in term '{shown}' "
                      "(a term is a product; sums inside parentheses are not supported)")
    tokens = [t for t in tokens if t[1] not in "*()"]
    coefficients: list[str] = []
    powers: dict[str, int] = {}
    i = 0
    while i < len(tokens):
        kind, tok = tokens[i]
        if kind == "number":
            return None, f"numbers are not allowed in freq_equation (term '{shown}'); put values in 'coefficients'"
        if kind == "op":
            return None, f"misplaced '^' in term '{shown}'"
        power = 1
        if i + 1 < len(tokens) and tokens[i + 1][1] == "^":
            if i + 2 >= len(tokens) or tokens[i + 2][0] != "number" or tokens[i + 2][1] not in ("1", "2"):
                return None, f"only powers 1 and 2 are allowed (term '{shown}')"
            power = int(tokens[i + 2][1])
            i += 2
        i += 1
        if tok == freq:
            return None, f"{freq} cannot appear on the right-hand side of freq_equation (term '{shown}')"
        if tok in nodes:
            powers[tok] = powers.get(tok, 0) + power
        elif tok == "base" or tok.startswith("c_"):
            if power != 1:
                return None, f"coefficient {tok} cannot be raised to a power (term '{shown}')"
            coefficients.append(tok)
        else:
            return None, (f"unknown name {tok!r} in term '{shown}'; use 'base', coefficient names c_<property> "
                          f"and the declared properties {', '.join(nodes[:-1])}")
    if not coefficients:
        hint = f"; write c_{next(iter(powers))}*{next(iter(powers))}" if len(powers) == 1 else ""
        return None, f"term '{shown}' has no coefficient name{hint}"
    if len(coefficients) > 1:
        return None, f"term '{shown}' multiplies several coefficients {coefficients}; use one per term"
    name = coefficients[0]
    if len(powers) > 1:
        return None, f"term '{shown}' multiplies several properties; interaction terms are not part of the family"
    if name == "base":
        if powers:
            return None, f"'base' is the constant term and cannot multiply a property (term '{shown}')"
        return _Term(name, None, 0), None
    if not powers:
        return None, f"term '{shown}' has a coefficient but no property"
    variable, power = next(iter(powers.items()))
    if power > 2:
        return None, f"only powers 1 and 2 are allowed (term '{shown}')"
    return _Term(name, variable, power), None


def _parse_equation(raw: object, nodes: tuple[str, ...], freq: str, kind: str) -> tuple[dict[str, _Term], list[str]]:
    if not isinstance(raw, str) or not raw.strip():
        return {}, [f"'freq_equation' must be a non-empty string like '{freq} = base + c_X*X', got {raw!r}"]
    text = (raw.replace("**", "^").replace("²", "^2").replace("·", "*").replace("×", "*")
            .replace("−", "-"))
    sides = text.split("=")
    if len(sides) > 2:
        return {}, [f"freq_equation has more than one '=': {raw!r}"]
    if len(sides) == 2:
        if sides[0].strip() != freq:
            return {}, [f"the left-hand side of freq_equation must be '{freq}', got {sides[0].strip()!r}"]
        text = sides[1]
    if "-" in text:
        return {}, ["freq_equation must join terms with '+'; put signs in the coefficient values"]
    terms: dict[str, _Term] = {}
    problems = []
    for piece in text.split("+"):
        if not piece.strip():
            problems.append(f"freq_equation has an empty term: {raw!r}")
            continue
        term, problem = _parse_term(piece, nodes, freq)
        if problem:
            problems.append(problem)
            continue
        assert term is not None
        if term.variable is not None:
            if kind == "linear" and term.power == 2:
                problems.append(f"the linear family has no squared terms (term '{piece.strip()}')")
                continue
            expected = f"c_{term.variable}" + (f"_{term.power}" if kind == "quadratic" else "")
            if term.coefficient != expected:
                problems.append(f"coefficient {term.coefficient} multiplies {term.variable}"
                                f"{'^2' if term.power == 2 else ''}; name it {expected}")
                continue
        if term.coefficient in terms:
            problems.append(f"term {term.coefficient} appears more than once in freq_equation")
            continue
        terms[term.coefficient] = term
    if problems:
        return terms, problems
    if "base" not in terms:
        problems.append("freq_equation needs the constant term 'base'")
    if kind == "quadratic":
        for var in sorted({t.variable for t in terms.values() if t.variable}, key=nodes.index):
            if f"c_{var}_1" not in terms or f"c_{var}_2" not in terms:
                problems.append(f"the quadratic family needs both c_{var}_2*{var}^2 and c_{var}_1*{var} for {var}")
    return terms, problems


def _coefficient_property(name: str, nodes: tuple[str, ...], kind: str) -> tuple[str | None, str | None]:
    """Property a coefficient name refers to, or the reason the name is malformed."""
    body = name[2:]
    if kind == "quadratic":
        if not re.fullmatch(r".+_[12]", body):
            return None, f"coefficient {name} must be named c_<property>_1 or c_<property>_2 in the quadratic family"
        body = body[:-2]
    elif re.fullmatch(r".+_[12]", body) and body not in nodes and body[:-2] in nodes:
        return None, f"coefficient {name} is a quadratic-family name; the linear family uses c_{body[:-2]}"
    if body not in nodes[:-1]:
        return None, f"coefficient {name} names an undeclared property {body!r}; declared: {', '.join(nodes[:-1])}"
    return body, None


def _parse_coefficients(raw: object, nodes: tuple[str, ...], kind: str) -> tuple[dict[str, float], list[str]]:
    if not isinstance(raw, dict):
        return {}, [f"'coefficients' must be an object of name: number, got {type(raw).__name__}"]
    values: dict[str, float] = {}
    problems = []
    for name, value in raw.items():
        if name != "base":
            if not isinstance(name, str) or not name.startswith("c_"):
                problems.append(f"coefficient names are 'base' and c_<property>, got {name!r}")
                continue
            _, problem = _coefficient_property(name, nodes, kind)
            if problem:
                problems.append(problem)
                continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            problems.append(f"coefficient {name} must be a finite number, got {value!r}")
        elif value == 0:
            problems.append(f"coefficient {name} is 0; drop the term (and its edge) instead")
        else:
            values[name] = float(value)
    if "base" not in raw:
        problems.append("'coefficients' needs 'base'")
    return values, problems


def _canonical_equation(parents: list[str], freq: str, kind: str) -> str:
    terms = ["base"]
    for p in parents:
        terms += [f"c_{p}_2*{p}^2", f"c_{p}_1*{p}"] if kind == "quadratic" else [f"c_{p}*{p}"]
    return f"{freq} = " + " + ".join(terms)


def parse_hypothesis(
    value: object, properties: Sequence[str], kind: str = "linear", freq: str = FREQ
) -> Hypothesis | HypothesisError:
    """Validate an agent's hypothesis against the episode's declared properties.

    Parameters
    ----------
    value : dict or str
        The hypothesis as a dict or a JSON string (see the module docstring for the format).
    properties : sequence of str
        The episode's property names; the frequency may be listed or not.
    kind : {"linear", "quadratic"}
        Functional family the agent was told about.
    freq : str
        Name of the frequency node.

    Returns
    -------
    Hypothesis or HypothesisError
        The parsed hypothesis (equation in canonical form), or every problem found.

    Raises
    ------
    ValueError
        Only for bad ``properties``, ``kind`` or ``freq`` (programmer errors).

    Examples
    --------
    >>> h = parse_hypothesis({"edges": [{"from": "ph", "to": "resonanceFreq"}],
    ...                       "freq_equation": "resonanceFreq = c_ph ph + base",
    ...                       "coefficients": {"base": 20, "c_ph": 3}}, ["ph", "density"])
    >>> h.freq_equation
    'resonanceFreq = base + c_ph*ph'
    """
    nodes = _nodes(properties, freq)
    check_choice(kind, KINDS, "kind")
    raw, problems = _load(value)
    if raw is None:
        return HypothesisError(tuple(problems))
    edges: set[tuple[str, str]] = set()
    terms: dict[str, _Term] = {}
    coefficients: dict[str, float] = {}
    if "edges" in raw:
        edges, found = _parse_edges(raw["edges"], nodes)
        problems += found
    if "freq_equation" in raw:
        terms, found = _parse_equation(raw["freq_equation"], nodes, freq, kind)
        problems += found
    if "coefficients" in raw:
        coefficients, found = _parse_coefficients(raw["coefficients"], nodes, kind)
        problems += found
    if not problems:
        parents = sorted({a for a, b in edges if b == freq}, key=nodes.index)
        in_equation = sorted({t.variable for t in terms.values() if t.variable}, key=nodes.index)
        if parents != in_equation:
            problems.append(f"freq_equation terms use {in_equation or 'no property'} but the parents of {freq} "
                            f"in edges are {parents or 'none'}; they must match")
        missing = [n for n in terms if n not in coefficients]
        if missing:
            problems.append(f"'coefficients' lacks {missing} used in freq_equation")
        unused = sorted(n for n in coefficients if n not in terms)
        for name in unused:
            prop, _ = _coefficient_property(name, nodes, kind)
            reason = "it is not in freq_equation" if prop in parents else f"{prop} is not a parent of {freq} in edges"
            problems.append(f"coefficient {name} is not used: {reason}")
    if problems:
        return HypothesisError(tuple(problems))
    parents = sorted({a for a, b in edges if b == freq}, key=nodes.index)
    equation = _canonical_equation(parents, freq, kind)
    ordered = {"base": coefficients["base"]}
    for p in parents:
        for name in ([f"c_{p}_2", f"c_{p}_1"] if kind == "quadratic" else [f"c_{p}"]):
            ordered[name] = coefficients[name]
    return Hypothesis(frozenset(edges), equation, ordered, kind, freq)


def hypothesis_schema(properties: Sequence[str], kind: str = "linear", freq: str = FREQ) -> dict[str, Any]:
    """JSON schema of a hypothesis for LLM tool definitions.

    It fixes the structure (keys, edge objects over the declared names, numeric coefficients with
    the family's names); the rules a schema cannot express well (acyclicity, non-zero values,
    equation syntax, equation/edges agreement) are enforced by :func:`parse_hypothesis`. Every
    hypothesis the parser accepts validates against this schema.
    """
    nodes = _nodes(properties, freq)
    check_choice(kind, KINDS, "kind")
    suffixes = ("_2", "_1") if kind == "quadratic" else ("",)
    names = ["base"] + [f"c_{p}{s}" for p in nodes[:-1] for s in suffixes]
    example = (f"{freq} = base + c_X_2*X^2 + c_X_1*X + ..." if kind == "quadratic"
               else f"{freq} = base + c_X*X + ...")
    number = {"type": "number"}
    return {
        "type": "object",
        "properties": {
            "edges": {
                "type": "array",
                "description": "Directed causal edges (parent -> child) over the declared properties.",
                "items": {
                    "type": "object",
                    "properties": {"from": {"type": "string", "enum": list(nodes)},
                                   "to": {"type": "string", "enum": list(nodes)}},
                    "required": ["from", "to"],
                    "additionalProperties": False,
                },
            },
            "freq_equation": {
                "type": "string",
                "description": f"Structural equation of {freq}: '{example}', one term per parent of "
                               f"{freq} in edges, terms joined by '+'.",
            },
            "coefficients": {
                "type": "object",
                "description": "'base' and one non-zero number per coefficient name used in freq_equation.",
                "properties": {name: number for name in names},
                "required": ["base"],
                "additionalProperties": False,
            },
        },
        "required": list(_KEYS),
        "additionalProperties": False,
    }


# ---------------------------------------------------------------------------------------------
# prediction and verification
# ---------------------------------------------------------------------------------------------


def predict_frequency(h: Hypothesis, record: Mapping[str, float]) -> float:
    """Frequency the hypothesis predicts from the values of its claimed parents (unrounded).

    Raises
    ------
    ValueError
        If ``record`` lacks a claimed parent or a value is not a finite number.
    """
    if not isinstance(h, Hypothesis):
        raise ValueError(f"h must be a Hypothesis, got {type(h).__name__}")
    if not isinstance(record, Mapping):
        raise ValueError(f"record must be a mapping of property name to value, got {type(record).__name__}")
    c = h.coefficients
    total = c["base"]
    for p in h.freq_parents:
        if p not in record:
            raise ValueError(f"record has no value for {p!r}, a claimed parent of {h.freq}")
        x = check_real(record[p], f"record[{p!r}]")
        total += c[f"c_{p}_2"] * x * x + c[f"c_{p}_1"] * x if h.kind == "quadratic" else c[f"c_{p}"] * x
    return float(total)


def verify(h: Hypothesis, records: Sequence[Mapping[str, float]], tol: float = VERIFY_SLACK) -> VerifyResult:
    """Check the hypothesis's frequency equation against recorded measurements.

    A record is reproduced when ``|predicted - observed| <= 0.005 + tol``: the observed frequency
    was rounded to 2 decimals, so a correct equation is off by at most half a unit of the last
    digit, and ``tol`` is the slack for an equation estimated from such readings (floating-point
    error is absorbed on top).

    Parameters
    ----------
    h : Hypothesis
    records : sequence of mappings
        Each maps property names (and ``h.freq``) to the values shown to the agent.
    tol : float, default :data:`VERIFY_SLACK` (0.005)

    Raises
    ------
    ValueError
        If a record lacks the frequency or a claimed parent, or ``tol`` is negative.
    """
    tol = check_real(tol, "tol", minimum=0.0)
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
        raise ValueError(f"records must be a sequence of mappings, got {type(records).__name__}")
    residuals = []
    for k, record in enumerate(records):
        if not isinstance(record, Mapping) or h.freq not in record:
            raise ValueError(f"records[{k}] must be a mapping with a value for {h.freq!r}")
        residuals.append(predict_frequency(h, record) - check_real(record[h.freq], f"records[{k}][{h.freq!r}]"))
    if not residuals:
        return VerifyResult(True, 0, 0.0, None, (), "no records to check the hypothesis against")
    errors = [abs(r) for r in residuals]
    worst = max(range(len(errors)), key=errors.__getitem__)
    misses = sum(e > READING_ROUNDING + tol + _FLOAT_ERROR for e in errors)
    observed = records[worst][h.freq]
    if misses == 0:
        message = f"the hypothesis reproduces all {len(errors)} records (largest error {errors[worst]:.4g} Hz)"
    else:
        message = (f"the hypothesis misses {misses} of {len(errors)} records; worst is record {worst}: "
                   f"predicted {observed + residuals[worst]:.2f} Hz, observed {observed:.2f} Hz")
    return VerifyResult(misses == 0, len(errors), errors[worst], worst, tuple(residuals), message)


def reproduces(h: Hypothesis, records: Sequence[Mapping[str, float]], tol: float = VERIFY_SLACK) -> bool:
    """True when :func:`verify` accepts every record (the paper's consistency check)."""
    return verify(h, records, tol).ok
