"""Reader for the original CausaLab JSONL graph configs (comparison runs on the released suites).

Format (one JSON object per line; fields read from the released files):

- ``graph_id``, ``description``; ``budget`` (intervention budget).
- ``nodes``: name -> ``{is_controllable, observable, property_name, display_name, base_value,
  computation?}``. ``computation`` is the node's equation as text, e.g.
  ``"base_freq + coeff_density_freq * density"`` or, quadratic,
  ``"base_X + coeff2_p_X * (p ^ 2) + coeff1_p_X * p"``. The coefficient *names* abbreviate
  some nodes (``freq``, ``temp``), so the loader reads the names from the text and never guesses.
- ``edges``: ``[{from, to}, ...]``; ``params``: name -> number (bases and coefficients).
- optional ``equation_family`` (``"linear"``/``"quadratic"``), ``quadratic_mode``,
  ``frequency_can_be_parent``.
- optional ``hidden_variable``: ``{enabled, initial_value, value_space, edge_weight,
  affected_nodes, ...}``.
- optional ``bootstrap_past_data`` (Golden): records ``{id, props, freq, intervention?:
  {target_prop, target_value}}``; the ones without ``intervention`` are the bootstrap records.
- optional ``quadratic_metadata``: fixed exogenous presets (``observation_presets``,
  ``property_manipulator``, ``reactor``) the hard-quadratic suite used.

Root bases in ``params`` (``base_X`` of a parentless node) are placeholders replaced at run time
and are ignored. Anything the spec does not describe (a non-controllable property, a hidden
variable whose ``initial_value`` is not 0, an equation term of another shape) is rejected with a
``ValueError`` rather than guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from types import MappingProxyType
from typing import Any

from causal_gym.envs.causalab.world import (
    FREQ,
    KINDS,
    PROPERTIES,
    Coefficient,
    Episode,
    HiddenConfig,
    HiddenSpec,
    LabSCM,
    Record,
    Setting,
    episode_from_scm,
)

__all__ = ["LabConfig", "load_jsonl", "parse_config"]

_LINEAR_TERM = re.compile(r"^(\w+)\s*\*\s*(\w+)$")
_SQUARE_TERM = re.compile(r"^(\w+)\s*\*\s*\(\s*(\w+)\s*\^\s*2\s*\)$")
_BASE_TERM = re.compile(r"^(base_\w+)$")


@dataclass(frozen=True, eq=False)
class LabConfig:
    """One released graph config, as our objects.

    Attributes
    ----------
    graph_id : str
    scm : LabSCM
    budget : int
        Intervention budget of the config.
    hidden : HiddenConfig or None
    bootstrap : tuple of Record
        Golden bootstrap records (empty unless the config has ``bootstrap_past_data``).
    chain : tuple of Record
        Golden intervention records.
    presets : mapping or None
        Fixed exogenous terms from ``quadratic_metadata``: ``"records"`` (tuple of mappings),
        ``"manipulator"`` and ``"reactor"``.
    """

    graph_id: str
    scm: LabSCM
    budget: int
    hidden: HiddenConfig | None
    bootstrap: tuple[Record, ...]
    chain: tuple[Record, ...]
    presets: Mapping[str, Any] | None

    @property
    def setting(self) -> Setting:
        """The setting this config belongs to (Golden when it has a chain or bootstrap records)."""
        hidden = None
        if self.hidden is not None:
            freqnode = FREQ in self.hidden.affected
            hidden = HiddenSpec(len(self.hidden.affected), self.hidden.values, freqnode, self.hidden.edge_weight)
        golden = bool(self.bootstrap)
        return Setting(
            self.scm.n_nodes,
            kind=self.scm.kind,
            hidden=hidden,
            freq_parent=self.scm.freq_parent,
            golden=golden,
            n_prior_records=len(self.bootstrap) if golden else 2,
            intervention_budget=0 if golden else self.budget,
        )

    def episode(self, seed: int | tuple[int, ...], setting: Setting | None = None) -> Episode:
        """An episode on this config's SCM; presets and Golden records are used as released,
        everything else is drawn from ``seed`` (:func:`~.world.episode_from_scm`)."""
        setting = self.setting if setting is None else setting
        prior = self.bootstrap or None
        manipulator = reactor = None
        if self.presets is not None:
            if prior is None:
                prior = tuple(Record(self.scm.evaluate(row)) for row in self.presets["records"])
            manipulator, reactor = self.presets["manipulator"], self.presets["reactor"]
        return episode_from_scm(
            seed,
            setting,
            self.scm,
            hidden=self.hidden,
            prior=prior,
            golden_chain=self.chain if self.bootstrap else None,
            manipulator_exogenous=manipulator,
            reactor_exogenous=reactor,
        )


def load_jsonl(path: str | PathLike[str]) -> list[LabConfig]:
    """Read every config of a released JSONL suite.

    Raises
    ------
    ValueError
        On a malformed line, naming the line number and the problem.
    """
    out = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                out.append(parse_config(json.loads(line)))
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{number}: {err}") from err
    return out


def _parse_computation(text: str, node: str, params: Mapping[str, float], quadratic: bool) -> tuple[str, dict[str, Coefficient]]:
    """Base parameter name and the coefficient of each parent from one computation string."""
    terms = [t.strip() for t in text.split("+")]
    base = _BASE_TERM.match(terms[0])
    if base is None:
        raise ValueError(f"computation of {node!r} must start with a base_ parameter: {text!r}")
    linear: dict[str, float] = {}
    square: dict[str, float] = {}
    for term in terms[1:]:
        match = _SQUARE_TERM.match(term)
        target = square
        if match is None:
            match, target = _LINEAR_TERM.match(term), linear
        if match is None:
            raise ValueError(f"cannot read term {term!r} in the computation of {node!r}")
        name, parent = match.groups()
        if parent in target:
            raise ValueError(f"parent {parent!r} appears twice in the computation of {node!r}")
        target[parent] = float(params[name])
    if not quadratic:
        if square:
            raise ValueError(f"squared term in the linear computation of {node!r}")
        return base.group(1), dict(linear)
    if set(square) != set(linear):
        raise ValueError(f"quadratic computation of {node!r} needs a squared and a linear term per parent: {text!r}")
    return base.group(1), {p: (square[p], linear[p]) for p in linear}


def _parse_hidden(data: Mapping[str, Any], properties: tuple[str, ...]) -> HiddenConfig | None:
    hidden = data.get("hidden_variable")
    if hidden is None or not hidden.get("enabled", False):
        return None
    if hidden.get("initial_value", 0) != 0:
        raise ValueError(f"hidden initial_value must be 0, got {hidden['initial_value']!r}")
    for node in hidden["affected_nodes"]:
        if node not in properties:
            raise ValueError(f"hidden variable affects unknown node {node!r}")
    return HiddenConfig(tuple(hidden["affected_nodes"]), tuple(hidden["value_space"]), hidden.get("edge_weight", 1.0))


def _parse_records(data: Mapping[str, Any]) -> tuple[tuple[Record, ...], tuple[Record, ...]]:
    bootstrap: list[Record] = []
    chain: list[Record] = []
    for entry in data.get("bootstrap_past_data", ()):
        values = {**entry["props"], FREQ: entry["freq"]}
        step = entry.get("intervention")
        if step is None:
            if chain:
                raise ValueError("a bootstrap record follows an intervention record")
            bootstrap.append(Record(values))
        else:
            chain.append(Record(values, (step["target_prop"], float(step["target_value"]))))
    return tuple(bootstrap), tuple(chain)


def parse_config(data: Mapping[str, Any]) -> LabConfig:
    """Convert one decoded JSONL object (see the module docstring)."""
    nodes = data["nodes"]
    for name, spec in nodes.items():
        if name not in PROPERTIES and name != FREQ:
            raise ValueError(f"unknown property {name!r}")
        if name != FREQ and not spec.get("is_controllable", True):
            raise ValueError(f"non-controllable property {name!r} is not supported (every property is controllable)")
    family = data.get("equation_family", "linear")
    if family not in KINDS:
        raise ValueError(f"unknown equation_family {family!r}")
    params = data["params"]
    edges = tuple((e["from"], e["to"]) for e in data["edges"])
    coefficients: dict[tuple[str, str], Coefficient] = {}
    hybrid_bases: dict[str, float] = {}
    base_freq = None
    for node, spec in nodes.items():
        parents = sorted(a for a, b in edges if b == node)
        if "computation" not in spec:
            if parents:
                raise ValueError(f"{node!r} has parents {parents} but no computation")
            continue
        base, terms = _parse_computation(spec["computation"], node, params, family == "quadratic")
        if sorted(terms) != parents:
            raise ValueError(f"computation of {node!r} names parents {sorted(terms)}, edges say {parents}")
        coefficients.update({(p, node): c for p, c in terms.items()})
        if node == FREQ:
            base_freq = params[base]
        elif parents:
            hybrid_bases[node] = params[base]
    if base_freq is None:
        raise ValueError(f"{FREQ} has no computation")
    controllable = sorted(n for n in nodes if n != FREQ)
    scm = LabSCM(
        (*controllable, FREQ),
        edges,
        family,
        tuple(coefficients[e] for e in edges),
        base_freq,
        tuple(hybrid_bases.items()),
        bool(data.get("frequency_can_be_parent", False)),
    )
    bootstrap, chain = _parse_records(data)
    presets = None
    meta = data.get("quadratic_metadata")
    if meta is not None and "property_manipulator" in meta:
        presets = MappingProxyType(
            {
                "records": tuple(dict(r) for r in meta["observation_presets"]),
                "manipulator": dict(meta["property_manipulator"]),
                "reactor": dict(meta["reactor"]),
            }
        )
    budget = data["budget"]
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer, got {budget!r}")
    return LabConfig(str(data["graph_id"]), scm, budget, _parse_hidden(data, scm.properties), bootstrap, chain, presets)
