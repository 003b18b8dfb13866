"""The hidden disturbance: which properties it moves and by how much."""


from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from causal_gym._validation import as_generator, check_count, check_real
from causal_gym.envs.causalab.world.mechanism import FREQ, HIDDEN_VALUES, LabSCM


@dataclass(frozen=True)
class HiddenConfig:
    """The hidden disturbance of one episode: ``h`` is added (times ``edge_weight``) to ``affected``.

    ``h`` is 0 until the first intervention and redrawn uniformly from ``values`` after each one.
    It changes only what the manipulator displays.
    """

    affected: tuple[str, ...]
    values: tuple[float, ...] = HIDDEN_VALUES
    edge_weight: float = 1.0

    def __post_init__(self) -> None:
        affected = tuple(self.affected)
        if not affected or len(set(affected)) != len(affected):
            raise ValueError(f"affected must be a non-empty list of distinct nodes, got {affected}")
        values = tuple(check_real(v, "hidden value") for v in self.values)
        if not values:
            raise ValueError("the hidden value set is empty")
        object.__setattr__(self, "affected", affected)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "edge_weight", check_real(self.edge_weight, "edge_weight"))

    def offsets(self, h: float) -> dict[str, float]:
        """Additive shift of every affected node for hidden value ``h``."""
        return {node: self.edge_weight * h for node in self.affected}


def hidden_priority(scm: LabSCM, rng: np.random.Generator | np.random.SeedSequence | int) -> tuple[str, ...]:
    """Properties in the order the hidden variable claims them: frequency's parents first
    (shuffled), then the other properties (shuffled). Prefixes give nested affected sets."""
    rng = as_generator(rng)
    first = [scm.freq_parents()[k] for k in rng.permutation(len(scm.freq_parents()))]
    rest = [p for p in scm.controllable if p not in first]
    return (*first, *(rest[k] for k in rng.permutation(len(rest))))


def hidden_config(
    scm: LabSCM,
    rng: np.random.Generator | np.random.SeedSequence | int,
    count: int,
    values: Sequence[float] = HIDDEN_VALUES,
    freqnode: bool = False,
    edge_weight: float = 1.0,
) -> HiddenConfig:
    """The first ``count`` nodes of :func:`hidden_priority`; with ``freqnode`` the frequency plus
    the first ``count - 1`` (the released freqnode_n1..n3 variants)."""
    count = check_count(count, "count", minimum=1)
    if count > len(scm.controllable) + int(freqnode):
        raise ValueError(f"count={count} exceeds the {len(scm.controllable)} properties of the graph")
    order = hidden_priority(scm, rng)
    affected = (FREQ, *order[: count - 1]) if freqnode else order[:count]
    return HiddenConfig(affected, tuple(values), edge_weight)
