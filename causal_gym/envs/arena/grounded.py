"""Grounded CausalArena scenarios: a declarative card format and its compiler to an executable SCM.

CausalArena's semantic and formula-grounded families (paper §4.2–4.3, Appendix A.3–A.5) are
authored as *scenario cards*: named variables with units, definitions, valid ranges, roles and
intervention meanings; named equations for formula nodes; one rationale per edge. A card is a
plain dict (JSON-ready), read top-down as follows.

Scenario card (``ScenarioSpec``)
--------------------------------
=================  =========================================================================
key                value
=================  =========================================================================
``name``           identifier of the scenario (``"gas_cylinder"``)
``domain``         scientific or operational domain (``"thermodynamics"``)
``description``    what one row of data is, in a sentence or two
``constants``      optional ``{name: {"value", "unit", "definition"}}`` read by equations
``variables``      list of variable records (below); their order is the node order
``edges``          list of ``{"source", "target", "rationale"}``
=================  =========================================================================

Variable record (``VariableSpec``): ``name`` (identifier), ``unit``, ``definition``, ``range``
(``[low, high]``, the values the variable can validly take), ``role``, ``intervention`` (what
setting this variable means in the lab or process, or ``None`` when it cannot be set), plus by role:

===============  =================================================================================
role             meaning and extra keys
===============  =================================================================================
``input``        exogenous quantity, a root: ``distribution``
``instrument``   an instrument's own property as a root (``distribution``: zero offset, gain), or
                 a measurement that later nodes use (``equation`` + ``noise``)
``process``      an operational mechanism with its own randomness (``equation`` + ``noise``;
                 semantic scenarios)
``formula``      a named scientific identity, exact given its parents: ``equation`` + ``law``
                 (the equation's name); no noise
``readout``      a terminal measurement, no children: ``equation`` + ``noise``
===============  =================================================================================

Noise therefore sits only on inputs, instruments, process steps and readouts, never on a formula.

- ``distribution``: ``{"family": "uniform", "low": a, "high": b}`` (uniform on ``[a, b]``), or
  ``{"family": F, "center": c, "scale": s, "mode": M, ...}`` with ``F`` a registered noise
  family (:mod:`causal_gym.scm.noise`; extra keys such as ``df`` go to the family), giving
  ``c + s z`` (``mode="additive"``, the default) or ``c exp(s z)`` (``"multiplicative"``,
  log-normal around ``c`` for Gaussian ``z``), ``z`` the family's unit-variance draw.
- ``noise``: ``{"family": F, "scale": s, "mode": M, ...}``: the node is ``f(pa) + s z`` or
  ``f(pa) exp(s z)``.
- ``equation``: a formula over exactly the node's parents and some constants, in the whitelisted
  syntax of :mod:`causal_gym.envs.arena.expressions`.

Compilation
-----------
:func:`compile_scenario` checks the card (names, roles, every equation's free variables equal the
node's parents from ``edges``, every constant used, acyclic graph, readouts are sinks, inputs are
roots), builds the SCM with the ``"expression"`` mechanism for every node (roots included: an
input is a constant centre plus its distribution's draw), and reports what the paper's
validators check (Appendix A.2-A.3):

- on the card's graph: the synthetic family's graph audit (:func:`~.audits.audit_graph`: no
  isolated variable, depth >= 2, at least ``ceil(0.8 d)`` edges) and *structural aliases*, formula
  nodes computed from a single parent (a unit conversion or re-expression of that parent, not a
  new variable);
- on a reference draw (:func:`check_sample`, which takes any sample and honours an intervention
  mask): finite values, values inside the declared ranges, formula residuals ``X_j - f_j(pa_j)``
  (exactly 0 on rows where ``j`` is not intervened), constant columns, near-copy pairs
  (``|Pearson| >= 0.99``, the release audit) and *rank aliases* (``|Spearman| >= 0.99``: one column
  is, up to little noise, a monotone re-expression of the other, e.g. a logarithm or a reading with
  tiny noise through a nonlinear gauge, which a Pearson check can miss).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np
from scipy.stats import rankdata

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_count, check_real
from causal_gym.envs.arena.audits import audit_graph
from causal_gym.envs.arena.expressions import FUNCTIONS, expression_params, parse_expression
from causal_gym.graphs import is_dag
from causal_gym.scm import SCM, NodeSpec, get_noise

__all__ = [
    "ROLES",
    "NEAR_COPY_CORRELATION",
    "ALIAS_RANK_CORRELATION",
    "ScenarioSpec",
    "VariableSpec",
    "EdgeSpec",
    "CompiledScenario",
    "compile_scenario",
    "check_sample",
    "edges_into",
]

ROLES: tuple[str, ...] = ("input", "instrument", "process", "formula", "readout")
"""Variable roles of a scenario card (module docstring)."""

NEAR_COPY_CORRELATION = 0.99
"""Pairs whose absolute Pearson correlation reaches this are reported as near copies (A.2 audit)."""

ALIAS_RANK_CORRELATION = 0.99
"""Pairs whose absolute Spearman correlation reaches this are reported as rank aliases (one is a
monotone re-expression of the other up to little noise; the paper's review removes such aliases)."""

_RANGE_TOLERANCE = 1e-9
"""Relative slack (of the range width) for range checks: a uniform input on exactly ``[a, b]``
may land one rounding error outside it."""

_SCENARIO_KEYS = {"name", "domain", "description", "variables", "edges"}
_VARIABLE_KEYS = {"name", "unit", "definition", "range", "role", "intervention"}
_ROLE_KEYS: Mapping[str, tuple[frozenset[str], ...]] = {
    "input": (frozenset({"distribution"}),),
    "instrument": (frozenset({"distribution"}), frozenset({"equation", "noise"})),
    "process": (frozenset({"equation", "noise"}),),
    "formula": (frozenset({"equation", "law"}),),
    "readout": (frozenset({"equation", "noise"}),),
}
_CONSTANT_KEYS = {"value", "unit", "definition"}
_EDGE_KEYS = {"source", "target", "rationale"}


class EdgeSpec(TypedDict):
    """A directed edge with the reason why changing the source changes the target."""

    source: str
    target: str
    rationale: str


class VariableSpec(TypedDict, total=False):
    """One variable of a scenario card (see the module docstring for which keys each role needs)."""

    name: str
    unit: str
    definition: str
    range: Sequence[float]
    role: str
    intervention: str | None
    distribution: Mapping[str, Any]
    equation: str
    law: str
    noise: Mapping[str, Any]


class ScenarioSpec(TypedDict, total=False):
    """A scenario card: a JSON-ready dict (module docstring)."""

    name: str
    domain: str
    description: str
    constants: Mapping[str, Mapping[str, Any]]
    variables: Sequence[VariableSpec]
    edges: Sequence[EdgeSpec]


class CompiledScenario(NamedTuple):
    """Result of :func:`compile_scenario`; unpacks as ``scm, names, metadata``."""

    scm: SCM
    names: tuple[str, ...]
    metadata: dict[str, Any]


def edges_into(target: str, rationales: Mapping[str, str]) -> list[EdgeSpec]:
    """Edge records ``source -> target`` for each ``source: rationale`` (an authoring shorthand).

    >>> edges_into("I", {"V": "voltage drives current"})
    [{'source': 'V', 'target': 'I', 'rationale': 'voltage drives current'}]
    """
    return [{"source": source, "target": target, "rationale": why} for source, why in rationales.items()]


# ---------------------------------------------------------------------------------------------
# card checks
# ---------------------------------------------------------------------------------------------


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _keys(record: object, required: set[str] | frozenset[str], optional: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        raise ValueError(f"{where} must be a mapping, got {type(record).__name__}")
    missing = sorted(required - set(record))
    unknown = sorted(set(record) - required - optional)
    if missing or unknown:
        raise ValueError(f"{where}: missing keys {missing}, unknown keys {unknown}")
    return record


def _range(value: object, where: str) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise ValueError(f"{where} must be a [low, high] pair, got {value!r}")
    low, high = (check_real(v, where) for v in value)
    if not low < high:
        raise ValueError(f"{where} must satisfy low < high, got {value!r}")
    return low, high


def _role_keys(variable: Mapping[str, Any], where: str) -> frozenset[str]:
    role = variable.get("role")
    options = _ROLE_KEYS.get(role) if isinstance(role, str) else None
    if options is None:
        raise ValueError(f"{where}: role must be one of {', '.join(map(repr, ROLES))}, got {role!r}")
    present = frozenset(set(variable) - _VARIABLE_KEYS)
    if present not in options:
        wanted = " or ".join(str(sorted(option)) for option in options)
        raise ValueError(f"{where}: a {role} variable needs exactly the extra keys {wanted}, got {sorted(present)}")
    return present


def _family_params(family: str, scale: float, config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Parameters of a registered noise family at a fixed scale (extra keys go to the family)."""
    try:
        return get_noise(family).sample_params(np.random.default_rng(0), scale_range=(scale, scale), **config)
    except TypeError as err:
        raise ValueError(f"{where}: noise family {family!r} rejected {sorted(config)}: {err}") from err


def _scale_and_mode(config: dict[str, Any], where: str) -> tuple[float, str]:
    """Pop ``scale`` and ``mode`` from a noise or distribution record."""
    if "scale" not in config:
        raise ValueError(f"{where} needs a 'scale'")
    scale = check_real(config.pop("scale"), f"{where} scale", minimum=0.0, strict=True)
    mode = config.pop("mode", "additive")
    if mode not in ("additive", "multiplicative"):
        raise ValueError(f"{where}: mode must be 'additive' or 'multiplicative', got {mode!r}")
    return scale, mode


def _split(record: object, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(record, Mapping) or not isinstance(record.get("family"), str):
        raise ValueError(f"{where} must be a mapping with a 'family' key naming a noise family, got {record!r}")
    config = dict(record)
    return config.pop("family"), config


def _distribution(record: object, where: str) -> tuple[str, dict[str, Any], str, float]:
    """A root's noise family, its parameters, the combination mode and the centre."""
    family, config = _split(record, where)
    if family == "uniform" and "low" in config:
        low, high = _range([config.pop("low"), config.pop("high", None)], f"{where} [low, high]")
        if config:
            raise ValueError(f"{where}: a uniform [low, high] distribution takes no other keys, got {sorted(config)}")
        scale = (high - low) / (2.0 * math.sqrt(3.0))
        return family, _family_params(family, scale, {}, where), "additive", 0.5 * (low + high)
    if "center" not in config:
        raise ValueError(f"{where} needs 'center' and 'scale' (or family 'uniform' with 'low' and 'high')")
    center = check_real(config.pop("center"), f"{where} center")
    scale, mode = _scale_and_mode(config, where)
    return family, _family_params(family, scale, config, where), mode, center


def _noise(record: object, where: str) -> tuple[str, dict[str, Any], str]:
    """A non-root node's noise family, its parameters and the combination mode."""
    family, config = _split(record, where)
    scale, mode = _scale_and_mode(config, where)
    return family, _family_params(family, scale, config, where), mode


def _constants(spec: Mapping[str, Any], where: str) -> dict[str, float]:
    raw = spec.get("constants", {})
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} constants must be a mapping of name -> record")
    values = {}
    for name, record in raw.items():
        here = f"{where} constant {name!r}"
        if not isinstance(name, str) or not name.isidentifier() or name in FUNCTIONS:
            raise ValueError(f"{here}: name must be an identifier that is not a function name")
        record = _keys(record, _CONSTANT_KEYS, set(), here)
        _text(record["unit"], f"{here} unit")
        _text(record["definition"], f"{here} definition")
        values[name] = check_real(record["value"], f"{here} value")
    return values


def _variables(spec: Mapping[str, Any], constants: Mapping[str, float], where: str) -> list[Mapping[str, Any]]:
    variables = spec["variables"]
    if isinstance(variables, (str, bytes, Mapping)) or not isinstance(variables, Sequence) or not variables:
        raise ValueError(f"{where} variables must be a non-empty list of records")
    seen: set[str] = set()
    for i, variable in enumerate(variables):
        here = f"{where} variable {i}"
        if not isinstance(variable, Mapping):
            raise ValueError(f"{here} must be a mapping, got {type(variable).__name__}")
        name = variable.get("name")
        if not isinstance(name, str) or not name.isidentifier() or name in FUNCTIONS:
            raise ValueError(f"{here}: name must be an identifier that is not a function name, got {name!r}")
        here = f"{where} variable {name!r}"
        if name in seen or name in constants:
            raise ValueError(f"{here}: the name is used twice (variables and constants share one namespace)")
        seen.add(name)
        extra = _role_keys(variable, here)
        _keys(variable, _VARIABLE_KEYS | extra, set(), here)
        _text(variable["unit"], f"{here} unit")
        _text(variable["definition"], f"{here} definition")
        _range(variable["range"], f"{here} range")
        if variable["intervention"] is not None:
            _text(variable["intervention"], f"{here} intervention")
        if "law" in variable:
            _text(variable["law"], f"{here} law")
    return list(variables)


def _graph(spec: Mapping[str, Any], index: Mapping[str, int], where: str) -> tuple[np.ndarray, list[dict[str, str]]]:
    edges = spec["edges"]
    if isinstance(edges, (str, bytes, Mapping)) or not isinstance(edges, Sequence):
        raise ValueError(f"{where} edges must be a list of records")
    adjacency = np.zeros((len(index), len(index)), dtype=np.int8)
    records = []
    for k, edge in enumerate(edges):
        here = f"{where} edge {k}"
        edge = _keys(edge, _EDGE_KEYS, set(), here)
        source, target = edge["source"], edge["target"]
        for end in (source, target):
            if end not in index:
                raise ValueError(f"{here}: unknown variable {end!r}")
        if source == target:
            raise ValueError(f"{here}: self-loop on {source!r}")
        if adjacency[index[source], index[target]]:
            raise ValueError(f"{here}: edge {source} -> {target} is listed twice")
        _text(edge["rationale"], f"{here} ({source} -> {target}) rationale")
        adjacency[index[source], index[target]] = 1
        records.append({"source": source, "target": target, "rationale": edge["rationale"]})
    if not is_dag(adjacency):
        raise ValueError(f"{where}: the edges contain a directed cycle")
    return adjacency, records


def _node(
    variable: Mapping[str, Any], parents: list[str], constants: Mapping[str, float], has_children: bool, where: str
) -> tuple[NodeSpec, dict[str, Any] | None]:
    """The node of one variable and, for a formula, its equation record."""
    role = variable["role"]
    if "distribution" in variable:
        if parents:
            raise ValueError(f"{where}: a variable with a distribution must be a root, but has parents {parents}")
        family, noise_params, mode, center = _distribution(variable["distribution"], f"{where} distribution")
        params = expression_params(repr(center), [], None, mode)
        return NodeSpec("expression", params, family, noise_params), None
    if not parents:
        raise ValueError(f"{where}: a {role} variable computes from parents, but no edge points into it")
    if role == "readout" and has_children:
        raise ValueError(
            f"{where}: a readout is a terminal measurement; use role 'instrument' for one that feeds others"
        )
    equation = variable["equation"]
    used = parse_expression(equation).names
    if used - set(constants) != set(parents):
        raise ValueError(
            f"{where}: equation {equation!r} reads variables {sorted(used - set(constants))} "
            f"but the edges give parents {sorted(parents)}"
        )
    own_constants = {name: constants[name] for name in sorted(used & set(constants))}
    if role == "formula":
        params = expression_params(equation, parents, own_constants, "exact")
        record = {"law": variable["law"], "expression": equation, "inputs": parents, "constants": sorted(own_constants)}
        return NodeSpec("expression", params, "gaussian", {"scale": 0.0}), record
    family, noise_params, mode = _noise(variable["noise"], f"{where} noise")
    params = expression_params(equation, parents, own_constants, mode)
    return NodeSpec("expression", params, family, noise_params), None


# ---------------------------------------------------------------------------------------------
# compile and validate
# ---------------------------------------------------------------------------------------------


def compile_scenario(spec: ScenarioSpec, *, reference_size: int = 2000, reference_seed: int = 0) -> CompiledScenario:
    """Check a scenario card, build its SCM and validate a reference draw.

    Parameters
    ----------
    spec : ScenarioSpec
        The card (module docstring).
    reference_size : int
        Rows of the observational reference draw used for the validation report.
    reference_seed : int
        Seed of that draw.

    Returns
    -------
    CompiledScenario
        ``scm`` (every node an ``"expression"`` node, in card order), ``names`` (variable names
        in node order) and ``metadata``: the card's descriptive fields, ``roles``,
        ``intervenable`` (names with an intervention meaning), ``equations`` (formula nodes:
        law, expression, inputs, constants), ``edges`` with rationales, ``n_variables``,
        ``n_edges`` and ``validation``: the :func:`check_sample` report on the reference draw plus
        ``graph_audit`` (failures of :func:`~.audits.audit_graph`) and ``structural_aliases``
        (formula name -> its only parent), with ``problems`` listing every failed check (empty
        when the card passes).

    Raises
    ------
    ValueError
        On any malformed card: unknown or missing keys, a bad range, a role without its keys,
        an equation whose free variables differ from the node's parents, an unused constant,
        a cycle, a readout with children or a distribution on a non-root.

    Examples
    --------
    >>> card = {
    ...     "name": "ohm", "domain": "circuits", "description": "one resistor per row",
    ...     "variables": [
    ...         {"name": "V", "unit": "V", "definition": "supply voltage", "range": [1, 10],
    ...          "role": "input", "intervention": "set the supply",
    ...          "distribution": {"family": "uniform", "low": 2, "high": 9}},
    ...         {"name": "R", "unit": "ohm", "definition": "resistance", "range": [1, 100],
    ...          "role": "input", "intervention": "swap the resistor",
    ...          "distribution": {"family": "uniform", "low": 10, "high": 90}},
    ...         {"name": "I", "unit": "A", "definition": "current", "range": [0, 1],
    ...          "role": "formula", "intervention": None, "equation": "V / R", "law": "Ohm's law"},
    ...         {"name": "P", "unit": "W", "definition": "power in the resistor", "range": [0, 10],
    ...          "role": "formula", "intervention": None, "equation": "V * I", "law": "Joule's law"},
    ...     ],
    ...     "edges": [{"source": "V", "target": "I", "rationale": "voltage drives current"},
    ...               {"source": "R", "target": "I", "rationale": "resistance limits current"},
    ...               {"source": "V", "target": "P", "rationale": "power is voltage"},
    ...               {"source": "I", "target": "P", "rationale": "times current"}],
    ... }
    >>> scm, names, meta = compile_scenario(card)
    >>> names, meta["validation"]["problems"]
    (('V', 'R', 'I', 'P'), [])
    """
    where = f"scenario {spec.get('name')!r}" if isinstance(spec, Mapping) else "scenario"
    card = _keys(spec, _SCENARIO_KEYS, {"constants"}, where)
    for key in ("name", "domain", "description"):
        _text(card[key], f"{where} {key}")
    constants = _constants(card, where)
    variables = _variables(card, constants, where)
    names = tuple(v["name"] for v in variables)
    index = {name: i for i, name in enumerate(names)}
    adjacency, edges = _graph(card, index, where)
    nodes, equations = [], {}
    used_constants: set[str] = set()
    for j, variable in enumerate(variables):
        parents = [names[i] for i in np.flatnonzero(adjacency[:, j])]
        node, equation = _node(variable, parents, constants, bool(adjacency[j].any()), f"{where} variable {names[j]!r}")
        used_constants |= set(node.mechanism_params["constants"])
        nodes.append(node)
        if equation is not None:
            equations[names[j]] = equation
    unused = sorted(set(constants) - used_constants)
    if unused:
        raise ValueError(f"{where}: constants {unused} are not used by any equation")
    scm = SCM(adjacency, nodes)
    metadata: dict[str, Any] = {
        "name": card["name"],
        "domain": card["domain"],
        "description": card["description"],
        "constants": to_jsonable(card.get("constants", {})),
        "variables": [
            {key: to_jsonable(v[key]) for key in ("name", "unit", "definition", "range", "role", "intervention")}
            for v in variables
        ],
        "roles": {v["name"]: v["role"] for v in variables},
        "intervenable": [v["name"] for v in variables if v["intervention"] is not None],
        "equations": equations,
        "edges": edges,
        "n_variables": len(names),
        "n_edges": len(edges),
    }
    compiled = CompiledScenario(scm, names, metadata)
    size = check_count(reference_size, "reference_size", minimum=2)
    structure = _structure_report(adjacency, names, equations)
    report = check_sample(compiled, scm.sample(size, rng=reference_seed))
    problems = structure.pop("problems") + report.pop("problems")
    metadata["validation"] = {"reference_size": size, "reference_seed": reference_seed, **structure, **report,
                              "problems": problems}
    return compiled


def _structure_report(adjacency: np.ndarray, names: tuple[str, ...], equations: Mapping[str, Any]) -> dict[str, Any]:
    """The card-level checks: the synthetic graph audit and formula nodes with a single parent."""
    audit = audit_graph(adjacency)
    aliases = {name: record["inputs"][0] for name, record in equations.items() if len(record["inputs"]) == 1}
    problems = [f"graph audit {failure.check}: {failure.detail}" for failure in audit.failures]
    problems += [f"structural alias: formula {name} is a function of {parent} alone" for name, parent in aliases.items()]
    return {"graph_audit": [failure.to_dict() for failure in audit.failures], "structural_aliases": aliases,
            "problems": problems}


def check_sample(compiled: CompiledScenario, data: object, intervention_mask: object = None) -> dict[str, Any]:
    """Validate a sample of a compiled scenario (the release checks of Appendix A.3).

    Parameters
    ----------
    compiled : CompiledScenario
    data : array_like, shape (n, d)
        Rows sampled from ``compiled.scm`` (observational or mixed).
    intervention_mask : array_like of bool, shape (n, d), optional
        ``True`` where a row's variable was intervened on. Ranges are checked on rows without any
        intervention; the residual of formula node ``j`` on rows where ``j`` itself was not
        intervened (an intervened parent leaves the equation intact).

    Returns
    -------
    dict
        ``nonfinite`` (names with NaN/inf on checked rows), ``range_violations`` (name ->
        fraction of rows outside the range, observed min and max, declared range),
        ``formula_residuals`` (name -> max ``|X_j - f_j(pa_j)|``), ``constant`` (names with one
        value), ``near_copies`` (``[a, b, corr]`` with ``|corr| >= NEAR_COPY_CORRELATION``),
        ``rank_aliases`` (``[a, b, rho]`` with Spearman ``|rho| >= ALIAS_RANK_CORRELATION``, pairs
        not already near copies), and ``problems``, one line per failed check (empty when the
        sample passes).
    """
    scm, names, metadata = compiled
    X = np.asarray(data, dtype=float)
    if X.ndim != 2 or X.shape[1] != len(names) or X.shape[0] < 2:
        raise ValueError(f"data must have shape (n >= 2, {len(names)}), got {X.shape}")
    if intervention_mask is None:
        mask = np.zeros(X.shape, dtype=bool)
    else:
        mask = np.asarray(intervention_mask)
        if mask.dtype != bool or mask.shape != X.shape:
            raise ValueError(f"intervention_mask must be a bool array of shape {X.shape}")
    clean = X[~mask.any(axis=1)]
    report: dict[str, Any] = {"nonfinite": [], "range_violations": {}, "formula_residuals": {}}
    for j, variable in enumerate(metadata["variables"]):
        column = clean[:, j]
        if not np.all(np.isfinite(column)):
            report["nonfinite"].append(variable["name"])
            continue
        low, high = variable["range"]
        slack = _RANGE_TOLERANCE * (high - low)
        outside = (column < low - slack) | (column > high + slack)
        if outside.any():
            report["range_violations"][variable["name"]] = {
                "fraction": float(outside.mean()),
                "min": float(column.min()),
                "max": float(column.max()),
                "range": [low, high],
            }
    for name, equation in metadata["equations"].items():
        j = names.index(name)
        rows = ~mask[:, j]
        parents = X[np.ix_(rows, np.asarray(scm.parents(j), dtype=np.intp))]
        env = {n: parents[:, i] for i, n in enumerate(equation["inputs"])}
        env.update(scm.nodes[j].mechanism_params["constants"])
        with np.errstate(invalid="ignore"):
            residual = np.abs(X[rows, j] - parse_expression(equation["expression"])(env))
        report["formula_residuals"][name] = float(np.max(residual, initial=0.0))
    finite = np.all(np.isfinite(clean), axis=0)
    spread = np.ptp(np.where(np.isfinite(clean), clean, 0.0), axis=0) if clean.shape[0] else np.zeros(len(names))
    report["constant"] = [names[j] for j in range(len(names)) if finite[j] and clean.shape[0] and spread[j] == 0]
    usable = finite & (spread > 0)
    report["near_copies"] = _correlated_pairs(clean, names, usable, NEAR_COPY_CORRELATION)
    copies = {(a, b) for a, b, _ in report["near_copies"]}
    ranks = rankdata(clean, axis=0) if clean.shape[0] else clean
    report["rank_aliases"] = [
        pair for pair in _correlated_pairs(ranks, names, usable, ALIAS_RANK_CORRELATION) if tuple(pair[:2]) not in copies
    ]
    report["problems"] = _problems(report)
    return report


def _correlated_pairs(
    clean: np.ndarray, names: tuple[str, ...], usable: np.ndarray, threshold: float
) -> list[list[Any]]:
    """``[a, b, corr]`` for the usable column pairs whose absolute Pearson correlation reaches ``threshold``."""
    columns = np.flatnonzero(usable)
    if clean.shape[0] < 3 or columns.size < 2:
        return []
    corr = np.corrcoef(clean[:, columns], rowvar=False)
    a, b = np.nonzero(np.triu(np.abs(corr) >= threshold, k=1))
    return [[names[columns[i]], names[columns[k]], float(corr[i, k])] for i, k in zip(a, b)]


def _problems(report: Mapping[str, Any]) -> list[str]:
    problems = [f"non-finite values in {name}" for name in report["nonfinite"]]
    problems += [
        f"{name}: {100 * v['fraction']:.2f}% of rows outside {v['range']} (observed {v['min']:.6g} .. {v['max']:.6g})"
        for name, v in report["range_violations"].items()
    ]
    problems += [f"formula {name}: residual {r:.3g}" for name, r in report["formula_residuals"].items() if r != 0.0]
    problems += [f"constant column {name}" for name in report["constant"]]
    problems += [f"near copies {a} ~ {b} (corr {c:+.4f})" for a, b, c in report["near_copies"]]
    problems += [f"rank aliases {a} ~ {b} (Spearman {c:+.4f})" for a, b, c in report["rank_aliases"]]
    return problems
