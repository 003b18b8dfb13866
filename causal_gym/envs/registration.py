"""Every causal_gym environment id, registered with Gymnasium by :func:`register_envs`.

``import causal_gym`` calls :func:`register_envs`, so ``gym.make("Heuresis-wild-v0")`` works after
the import and ``gym.make("causal_gym:Heuresis-wild-v0")`` works in a fresh interpreter (Gymnasium
imports the module named before the colon). The ids come from the benchmarks' spec modules
(:mod:`causal_gym.envs.benchmark`; each benchmark's ``spec.py`` documents its ids). Entry points
are strings, so registering imports no environment module: the first ``gym.make`` of an id loads it.
No id registers ``max_episode_steps``: every env ends its episodes itself and writes the final info.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import gymnasium as gym

from causal_gym.envs.benchmark import BenchmarkSpec, benchmarks

__all__ = ["env_descriptions", "register_envs", "register_spec"]


def env_descriptions() -> Mapping[str, str]:
    """Registered id -> one-line description (what ``causal-gym list`` prints), benchmark by benchmark."""
    return MappingProxyType({entry.id: entry.description for spec in benchmarks() for entry in spec.envs})


def register_spec(spec: BenchmarkSpec) -> None:
    """Register the ids of one benchmark; ids already registered are kept (idempotent)."""
    for entry in spec.envs:
        if entry.id not in gym.registry:
            gym.register(entry.id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs), max_episode_steps=None,
                         vector_entry_point=entry.vector_entry_point)


def register_envs() -> None:
    """Register every id of every benchmark with Gymnasium; calling it again changes nothing."""
    for spec in benchmarks():
        register_spec(spec)
