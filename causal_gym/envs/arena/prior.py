"""Declared training priors for amortized discovery: named subsets of the arena's synthetic factors.

A prior fixes which graph families, mechanisms and noise laws the generator may use and the ranges of
``d`` and ``n``; :func:`draw` turns one seed into a dataset and its true graph with the arena's own
generator (:func:`~.synthetic.generate`), so the training data and the evaluation configurations
come from one code path. ``OUT_OF_PRIOR`` names categories the model never saw, for the honest test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym.envs.arena.families.tags import MECHANISM_TAGS, NOISE_TAGS, ROOT_FAMILIES
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
from causal_gym.envs.arena.synthetic import ArenaConfig, generate

__all__ = ["Prior", "PRIORS", "EXPOSURE_AXES", "draw"]


@dataclass(frozen=True)
class Prior:
    """A named subset of the synthetic factor grid; ``d`` and ``n`` ranges are inclusive."""

    name: str
    graph_families: tuple[str, ...]
    mechanisms: tuple[str, ...]
    noises: tuple[str, ...]
    d: tuple[int, int]
    n: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, for training cards."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Prior:
        """Rebuild from :meth:`to_dict` output (a training card's ``"prior"``); unknown tags are errors."""
        keys = {f.name for f in fields(cls)}
        if not isinstance(data, Mapping) or set(data) != keys:
            raise ValueError(f"a prior needs exactly the keys {sorted(keys)}, got {sorted(data) if isinstance(data, Mapping) else data!r}")
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        prior = cls(**values)
        for axis, vocabulary in EXPOSURE_AXES.items():
            if axis != "root":
                unknown = set(getattr(prior, _FIELD_OF[axis])) - set(vocabulary)
                if unknown:
                    raise ValueError(f"prior {prior.name!r}: unknown {axis} tag(s) {sorted(unknown)}")
        return prior

    def coverage(self) -> dict[str, frozenset[str]]:
        """The categories of each exposure axis (:data:`EXPOSURE_AXES`) that training under this prior drew from.

        Exact, since :func:`draw` is the training generator: graph families, mechanisms and noise
        laws are the prior's own lists; root families are not constrained by a prior, so :func:`draw`
        takes them from the whole vocabulary and every root family is covered.
        """
        return {axis: frozenset(vocabulary) if axis == "root" else frozenset(getattr(self, _FIELD_OF[axis]))
                for axis, vocabulary in EXPOSURE_AXES.items()}


EXPOSURE_AXES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "graph_family": GRAPH_FAMILIES,
    "mechanism": MECHANISM_TAGS,
    "noise": NOISE_TAGS,
    "root": ROOT_FAMILIES,
})
"""The four factor axes of the paper's pretraining-exposure check (Fig. 14/15) and their vocabularies."""

_FIELD_OF = {"graph_family": "graph_families", "mechanism": "mechanisms", "noise": "noises"}


PRIORS: dict[str, Prior] = {
    # What the shipped checkpoint trains on: additive-ish mechanisms, common noise laws, small d.
    "core": Prior(
        name="core",
        graph_families=("erdos_renyi", "scale_free", "chain", "tree", "layered"),
        mechanisms=("linear_additive", "activation_additive", "polynomial_power"),
        noises=("gaussian", "uniform", "laplace"),
        d=(5, 20),
        n=(200, 500),
    ),
    # Held-out categories: none of these families, mechanisms or noise laws are in "core".
    "out_of_prior": Prior(
        name="out_of_prior",
        graph_families=("small_world", "collider_rich", "bipartite_layered"),
        mechanisms=("multiplicative", "trig_periodic", "piecewise_threshold"),
        noises=("student_t", "heteroskedastic"),
        d=(10, 10),
        n=(500, 500),
    ),
}


def draw(prior: Prior, seed: int, d: int | None = None, n: int | None = None) -> tuple[np.ndarray, np.ndarray, ArenaConfig]:
    """One ``(n, d)`` observational dataset, its true ``(d, d)`` DAG and the config, from ``seed``.

    Each factor is drawn uniformly from the prior; one or two mechanisms and noise laws are active.
    ``d`` or ``n`` given explicitly override the prior's range.
    """
    gen = np.random.default_rng(seed)
    d = int(gen.integers(prior.d[0], prior.d[1] + 1)) if d is None else d
    n = int(gen.integers(prior.n[0], prior.n[1] + 1)) if n is None else n

    def pick(options: tuple[str, ...]) -> tuple[str, ...]:
        k = int(gen.integers(1, min(2, len(options)) + 1))
        return tuple(str(x) for x in gen.choice(options, size=k, replace=False))

    config = ArenaConfig(
        graph_family=str(gen.choice(prior.graph_families)),
        d=d,
        seed=(seed, 33),
        mechanisms=pick(prior.mechanisms),
        noises=pick(prior.noises),
    )
    scm = generate(config)
    data = scm.sample(n, np.random.default_rng((seed, 1)))
    return data, np.asarray(scm.graph, dtype=np.int8), config
