"""Interventions on an SCM: frozen, JSON-serialisable descriptions applied by ``SCM.sample``.

Semantics (node ``j``, its mechanism ``f_j``, its noise draw ``eps_j``; descendants are always
recomputed from the modified value):

==========================================  ===================================================
``HardDo(j, value=c)``                      ``X_j = c`` on every row.
``HardDo(j, low=a, high=b)``                ``X_j ~ U[a, b]`` independently per row (resampled
                                            do; CausalArena draws from a target's 10th-90th
                                            percentile, which the caller passes as the bounds).
``Shift(j, delta)``                         ``X_j = f_j(pa, eps) + delta``.
``Soft(j, strength)``                       ``X_j = f_j(0, eps) + s (f_j(pa, eps) - f_j(0, eps))``:
                                            the node keeps its noise and the part of its value
                                            that depends on the parents is scaled by ``s``
                                            (``s = 1`` no change, ``s = 0`` independent of the
                                            parents; for ``linear`` it scales every weight).
``ParameterShift(j, factor)``               the mechanism's outer weights are multiplied by
                                            ``factor`` (its ``scale_params`` hook; ValueError
                                            when the family has none).
``HiddenDisturbance(j, value=c)``           ``X_j = f_j(pa, eps) + c``, an unobserved additive
                                            term (not part of any intervention mask).
``HiddenDisturbance(j, scale=s)``           ``X_j = f_j(pa, eps) + h``, ``h ~ N(0, s^2)`` per row.
==========================================  ===================================================

Soft and ParameterShift act on the dependence on parents, so they are rejected on root nodes.
A node may receive several interventions of different kinds in one call (they compose in the
order ParameterShift, Soft, Shift, HiddenDisturbance), but at most one of each kind, and a hard
do excludes every other intervention on its node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from causal_gym._validation import check_count, check_node, check_real

__all__ = [
    "HardDo",
    "Shift",
    "Soft",
    "ParameterShift",
    "HiddenDisturbance",
    "Intervention",
    "NodeInterventions",
    "intervention_from_dict",
    "group_by_target",
]


@dataclass(frozen=True)
class _Base:
    target: int
    kind: ClassVar[str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", check_count(self.target, "target", minimum=0))

    def _set_real(self, name: str, minimum: float | None = None, strict: bool = False) -> None:
        value = getattr(self, name)
        if value is not None:
            object.__setattr__(self, name, check_real(value, name, minimum, strict))

    def to_dict(self) -> dict[str, Any]:
        """``{"type": kind, **fields}``, the form :func:`intervention_from_dict` reads."""
        return {"type": self.kind, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class HardDo(_Base):
    """``do(X_target = value)``, or ``X_target ~ U[low, high]`` per row when bounds are given."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    kind: ClassVar[str] = "hard_do"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("value", "low", "high"):
            self._set_real(name)
        bounds = (self.low is not None, self.high is not None)
        if (self.value is not None and any(bounds)) or (self.value is None and not all(bounds)):
            raise ValueError("HardDo needs either value=... or both low=... and high=..., not a mix")
        if self.value is None and not self.low < self.high:  # type: ignore[operator]
            raise ValueError(f"HardDo needs low < high, got low={self.low}, high={self.high}")

    @property
    def resampled(self) -> bool:
        """True when values are drawn from ``U[low, high]`` rather than fixed."""
        return self.value is None


@dataclass(frozen=True)
class Shift(_Base):
    """Add ``delta`` to the target's value; descendants see the shifted value."""

    delta: float
    kind: ClassVar[str] = "shift"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set_real("delta")


@dataclass(frozen=True)
class Soft(_Base):
    """Scale the target's dependence on its parents by ``strength >= 0`` (noise kept)."""

    strength: float
    kind: ClassVar[str] = "soft"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set_real("strength", minimum=0.0)


@dataclass(frozen=True)
class ParameterShift(_Base):
    """Multiply the outer weights of the target's mechanism by ``factor``."""

    factor: float
    kind: ClassVar[str] = "parameter_shift"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set_real("factor")


@dataclass(frozen=True)
class HiddenDisturbance(_Base):
    """An unobserved additive term: a constant ``value`` or a per-row ``N(0, scale^2)`` draw."""

    value: float | None = None
    scale: float | None = None
    kind: ClassVar[str] = "hidden_disturbance"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set_real("value")
        self._set_real("scale", minimum=0.0, strict=True)
        if (self.value is None) == (self.scale is None):
            raise ValueError("HiddenDisturbance needs exactly one of value=... or scale=...")


Intervention = HardDo | Shift | Soft | ParameterShift | HiddenDisturbance
_TYPES: dict[str, type] = {cls.kind: cls for cls in (HardDo, Shift, Soft, ParameterShift, HiddenDisturbance)}


def intervention_from_dict(data: Mapping[str, Any]) -> Intervention:
    """Rebuild an intervention from its ``to_dict`` form (ValueError on unknown type or fields)."""
    if not isinstance(data, Mapping) or "type" not in data:
        raise ValueError(f"an intervention record must be a mapping with a 'type' key, got {data!r}")
    kind = data["type"]
    if kind not in _TYPES:
        raise ValueError(f"unknown intervention type {kind!r}; choose one of {', '.join(map(repr, _TYPES))}")
    cls = _TYPES[kind]
    fields = {k: v for k, v in data.items() if k != "type"}
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {unknown}; fields are {sorted(allowed)}")
    return cls(**fields)


@dataclass(frozen=True)
class NodeInterventions:
    """The interventions acting on one node, at most one of each kind."""

    hard_do: HardDo | None = None
    shift: Shift | None = None
    soft: Soft | None = None
    parameter_shift: ParameterShift | None = None
    hidden_disturbance: HiddenDisturbance | None = None


def group_by_target(interventions: Iterable[Intervention], d: int) -> dict[int, NodeInterventions]:
    """Validate interventions for a ``d``-node SCM and group them by target node.

    Raises
    ------
    ValueError
        If an element is not an intervention, a target is out of range, a node gets two
        interventions of one kind, or a hard do is combined with anything else on its node.
    """
    if isinstance(interventions, (str, bytes, Mapping)) or not isinstance(interventions, Iterable):
        raise ValueError(f"interventions must be a sequence of interventions, got {interventions!r}")
    grouped: dict[int, dict[str, Intervention]] = {}
    for item in interventions:
        if not isinstance(item, tuple(_TYPES.values())):
            raise ValueError(
                f"interventions must hold HardDo/Shift/Soft/ParameterShift/HiddenDisturbance objects, got {item!r}"
            )
        target = check_node(item.target, d, "intervention target")
        kinds = grouped.setdefault(target, {})
        if item.kind in kinds:
            raise ValueError(f"node {target} has two {item.kind} interventions; combine them into one")
        kinds[item.kind] = item
    for target, kinds in grouped.items():
        if "hard_do" in kinds and len(kinds) > 1:
            others = sorted(set(kinds) - {"hard_do"})
            raise ValueError(f"node {target} has a hard do together with {others}; a hard do fixes the value")
    return {target: NodeInterventions(**kinds) for target, kinds in sorted(grouped.items())}  # type: ignore[arg-type]
