"""An amortized method's training prior as CausalArena factor tags: what the exposure check splits on.

The paper's check (Fig. 14/15) maps each pretrained method's documented prior onto the arena's tags
per factor axis. Our own network's training card declares that mapping (``"arena_coverage"``, from
:meth:`causal_gym.discovery.amortized.prior.Prior.arena_coverage`), so the split comes from what the
training generator draws rather than from reading a paper; :func:`declared_coverage` reads it and
refuses a tag the arena does not know.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from causal_gym.envs.arena.families.tags import MECHANISM_TAGS, NOISE_TAGS, ROOT_FAMILIES
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES

__all__ = ["EXPOSURE_AXES", "declared_coverage"]

EXPOSURE_AXES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "graph_family": GRAPH_FAMILIES,
    "mechanism": MECHANISM_TAGS,
    "noise": NOISE_TAGS,
    "root": ROOT_FAMILIES,
})
"""The four factor axes of the paper's pretraining-exposure check (Fig. 14/15) and their vocabularies."""


def declared_coverage(declared: Mapping[str, Sequence[str]]) -> dict[str, frozenset[str]]:
    """The covered tags per axis of :data:`EXPOSURE_AXES` from a card's ``"arena_coverage"``.

    Raises
    ------
    ValueError
        If an axis is missing or unknown, or a tag is not in its axis's vocabulary.
    """
    if not isinstance(declared, Mapping) or set(declared) != set(EXPOSURE_AXES):
        keys = sorted(declared) if isinstance(declared, Mapping) else declared
        raise ValueError(f"a coverage needs exactly the axes {sorted(EXPOSURE_AXES)}, got {keys!r}")
    out = {}
    for axis, vocabulary in EXPOSURE_AXES.items():
        unknown = sorted(set(declared[axis]) - set(vocabulary))
        if unknown:
            raise ValueError(f"unknown {axis} tag(s) {unknown}; the arena's are {list(vocabulary)}")
        out[axis] = frozenset(declared[axis])
    return out
