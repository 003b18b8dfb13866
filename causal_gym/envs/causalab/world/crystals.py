"""Crystals and their records: exogenous terms and the prior observations."""


from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym._validation import as_generator, check_count
from causal_gym.envs.causalab.world.mechanism import EXOGENOUS_HIGH, FREQ, LabSCM


@dataclass(frozen=True)
class Record:
    """One measurement of a crystal: every node value (frequency included).

    ``intervention`` is ``(target, requested value)`` for a Golden chain record, None for an
    observation.
    """

    values: Mapping[str, float]
    intervention: tuple[str, float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType({k: float(v) for k, v in self.values.items()}))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (``intervention`` as ``{"target": ..., "value": ...}`` or None)."""
        out: dict[str, Any] = {"values": dict(self.values), "intervention": None}
        if self.intervention is not None:
            out["intervention"] = {"target": self.intervention[0], "value": self.intervention[1]}
        return out


@dataclass(frozen=True)
class Crystal:
    """A crystal: its exogenous terms and the node values they give under the SCM."""

    exogenous: Mapping[str, float]
    values: Mapping[str, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "exogenous", MappingProxyType(dict(self.exogenous)))
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    @classmethod
    def from_exogenous(cls, scm: LabSCM, exogenous: Mapping[str, float]) -> Crystal:
        """Evaluate ``scm`` on ``exogenous``."""
        return cls({p: float(exogenous[p]) for p in scm.controllable}, scm.evaluate(exogenous))

    @property
    def frequency(self) -> float:
        """The crystal's resonance frequency (the reactor's target)."""
        return self.values[FREQ]

    @property
    def visible(self) -> dict[str, float]:
        """The non-frequency readings (what the reactor shows)."""
        return {k: v for k, v in self.values.items() if k != FREQ}


def draw_exogenous(scm: LabSCM, rng: np.random.Generator | np.random.SeedSequence | int, k: int = 1) -> np.ndarray:
    """``(k, n - 1)`` integer exogenous terms uniform on ``0 .. 100`` (columns: ``scm.controllable``).

    Draws are row-major, so the first rows do not depend on ``k``.
    """
    rng = as_generator(rng)
    k = check_count(k, "k", minimum=0)
    return rng.integers(0, EXOGENOUS_HIGH + 1, size=(k, len(scm.controllable))).astype(float)


def _row_dict(scm: LabSCM, row: np.ndarray) -> dict[str, float]:
    return {p: float(v) for p, v in zip(scm.controllable, row)}


def prior_records(scm: LabSCM, rng: np.random.Generator | np.random.SeedSequence | int, k: int) -> tuple[Record, ...]:
    """``k`` observational records: fresh exogenous terms per record, frequency included."""
    exo = draw_exogenous(scm, rng, k)
    values = scm.evaluate_rows(exo)
    return tuple(Record(dict(zip(scm.properties, row.tolist()))) for row in values)
