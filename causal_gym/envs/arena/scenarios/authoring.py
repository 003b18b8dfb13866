"""Shorthands for writing scenario cards: each returns the plain record of
:mod:`causal_gym.envs.arena.grounded`, so a card stays a JSON-ready dict.

A card of twenty variables written as literal dicts repeats the same nine keys on every line;
these helpers take the fields in a fixed order instead (name, unit, definition, range, then what
the role needs), which keeps the content -- definitions, equations, rationales -- in view.

>>> root("V", "V", "supply voltage", [0, 12], uniform(2, 10), "set the bench supply")["role"]
'input'
>>> formula("I", "A", "current", [0, 1], "V / R", "Ohm's law")["law"]
"Ohm's law"
>>> mul(0.05)
{'family': 'gaussian', 'scale': 0.05, 'mode': 'multiplicative'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from causal_gym.envs.arena.grounded import VariableSpec

__all__ = ["uniform", "around", "add", "mul", "root", "process", "formula", "readout"]


def uniform(low: float, high: float) -> dict[str, Any]:
    """A root drawn uniformly on ``[low, high]``."""
    return {"family": "uniform", "low": low, "high": high}


def around(center: float, scale: float, family: str = "gaussian", mode: str = "additive", **extra: Any) -> dict[str, Any]:
    """A root ``center + scale z`` (``mode="multiplicative"``: ``center exp(scale z)``), ``z`` from ``family``."""
    return {"family": family, "center": center, "scale": scale, "mode": mode, **extra}


def add(scale: float, family: str = "gaussian", **extra: Any) -> dict[str, Any]:
    """Additive noise ``f(pa) + scale z`` (signed quantities, readings with an absolute error)."""
    return {"family": family, "scale": scale, **extra}


def mul(scale: float, family: str = "gaussian", **extra: Any) -> dict[str, Any]:
    """Multiplicative noise ``f(pa) exp(scale z)`` (positive quantities, gain errors)."""
    return {"family": family, "scale": scale, "mode": "multiplicative", **extra}


def _variable(name: str, unit: str, definition: str, bounds: Sequence[float], role: str,
              intervention: str | None, **extra: Any) -> VariableSpec:
    record: dict[str, Any] = {"name": name, "unit": unit, "definition": definition, "range": list(bounds),
                              "role": role, "intervention": intervention, **extra}
    return record  # type: ignore[return-value]


def root(name: str, unit: str, definition: str, bounds: Sequence[float], distribution: Mapping[str, Any],
         intervention: str | None = None, role: str = "input") -> VariableSpec:
    """An exogenous variable: an ``input`` (or an ``instrument`` property with ``role="instrument"``)."""
    return _variable(name, unit, definition, bounds, role, intervention, distribution=dict(distribution))


def process(name: str, unit: str, definition: str, bounds: Sequence[float], equation: str,
            noise: Mapping[str, Any], intervention: str | None = None) -> VariableSpec:
    """An operational mechanism with its own randomness."""
    return _variable(name, unit, definition, bounds, "process", intervention, equation=equation, noise=dict(noise))


def formula(name: str, unit: str, definition: str, bounds: Sequence[float], equation: str, law: str,
            intervention: str | None = None) -> VariableSpec:
    """A named identity, exact given its parents."""
    return _variable(name, unit, definition, bounds, "formula", intervention, equation=equation, law=law)


def readout(name: str, unit: str, definition: str, bounds: Sequence[float], equation: str,
            noise: Mapping[str, Any]) -> VariableSpec:
    """A terminal measurement (no children)."""
    return _variable(name, unit, definition, bounds, "readout", None, equation=equation, noise=dict(noise))
