"""The offline Golden variant: a chain of records generated before the episode."""


from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from causal_gym._validation import as_generator, check_choice, check_count
from causal_gym.envs.causalab.world.crystals import Record, _row_dict
from causal_gym.envs.causalab.world.manipulator import Manipulator
from causal_gym.envs.causalab.world.mechanism import EXOGENOUS_HIGH, LabSCM
from causal_gym.graphs import imec_size

GOLDEN_BOOTSTRAP_RANGE = (15.0, 45.0)
"""Uniform range (2 decimals) of the exogenous terms of the Golden bootstrap records."""

GOLDEN_LENGTH_RULES = ("released", "fixed")
"""How :func:`golden_records` sets the chain length: as the released suites distribute it, or always
the cap."""

GOLDEN_ONE_PASS_SHARE = 0.3
"""On a complete graph, the share of released Golden chains that make one pass over the
controllable nodes (4-node suite: 3 of its 10 complete graphs); the rest make one pass and one
more intervention (7 of 10)."""

GOLDEN_EMPTY_SHARE: Mapping[int, float] = MappingProxyType({6: 14 / 50})
"""By node count, the share of released Golden records that hold no chain at all (6-node suite:
14 of 50, on graphs of every size; the 4-node suite has none)."""


def golden_records(
    scm: LabSCM,
    rng: np.random.Generator | np.random.SeedSequence | int,
    n_bootstrap: int = 2,
    max_length: int = 6,
    stop_at_singleton: bool = False,
    lengths: str = "released",
) -> tuple[tuple[Record, ...], tuple[Record, ...]]:
    """Offline low-MEC intervention chain (the Golden control).

    ``n_bootstrap`` observational records with exogenous terms ``U(15, 45)`` (2 decimals), then a
    chain of shift interventions starting from record 0's state, cycling through the controllable
    nodes in alphabetical order with integer targets ``0 .. 100``.

    The original's stopping rule is unpublished, so the length follows the released suites
    (``lengths="released"``, the default), capped by ``max_length``: 6 interventions on a graph
    that is not complete; on a complete graph one pass over the controllable nodes (share
    :data:`GOLDEN_ONE_PASS_SHARE`) or one pass and one more — the 4-node suite has 40 chains of 6,
    7 of 4 and 3 of 3, all the short ones on its complete graphs; and, by node count, a share
    :data:`GOLDEN_EMPTY_SHARE` of graphs gets no chain at all (the 6-node suite has 36 chains of 6
    and 14 empty ones). The draws come after the chain's, so a shorter chain is a prefix of the
    full one. ``lengths="fixed"`` always makes ``max_length`` interventions. With
    ``stop_at_singleton=True`` the chain also stops as soon as the observational regime plus the
    single-node targets used so far make the interventional MEC of the true DAG a singleton
    (:func:`causal_gym.graphs.imec_size`) — a minimal chain, measured at 0–3 interventions on
    4-node graphs, so far fewer records than the released chains.

    Returns
    -------
    bootstrap, chain : tuple of Record
    """
    rng = as_generator(rng)
    n_bootstrap = check_count(n_bootstrap, "n_bootstrap", minimum=1)
    max_length = check_count(max_length, "max_length", minimum=0)
    check_choice(lengths, GOLDEN_LENGTH_RULES, "lengths")
    exo = np.round(rng.uniform(*GOLDEN_BOOTSTRAP_RANGE, size=(n_bootstrap, len(scm.controllable))), 2)
    bootstrap = tuple(Record(dict(zip(scm.properties, row.tolist()))) for row in scm.evaluate_rows(exo))
    dag = scm.adjacency()
    index = {p: i for i, p in enumerate(scm.properties)}
    cycle = sorted(scm.controllable)
    manipulator = Manipulator(scm, _row_dict(scm, exo[0]))
    chain: list[Record] = []
    targets: list[tuple[int]] = []
    while len(chain) < max_length and not (stop_at_singleton and imec_size(dag, targets) == 1):
        node = cycle[len(chain) % len(cycle)]
        value = float(rng.integers(0, EXOGENOUS_HIGH + 1))
        result = manipulator.intervene(node, value)
        chain.append(Record(result.values, (node, value)))
        targets.append((index[node],))
    if lengths == "released":
        empty, one_pass = rng.random(2)
        n = scm.n_nodes
        if empty < GOLDEN_EMPTY_SHARE.get(n, 0.0):
            chain = []
        elif len(scm.edges) == n * (n - 1) // 2:
            chain = chain[: len(cycle) + (one_pass >= GOLDEN_ONE_PASS_SHARE)]
    return bootstrap, tuple(chain)
