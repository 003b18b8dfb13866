"""The 1,000-configuration synthetic pool (Appendix A.1): 10 graph families x 5 dimensions x 20.

Configuration ``k`` (0-999) is slot ``position = k % 20`` of block ``(family, d)`` with
``family = GRAPH_FAMILIES[k // 100]`` and ``d = DIMENSIONS[(k % 100) // 20]``. Nothing is built
at import: :func:`pool_config` generates one configuration on demand (and keeps the most recent
ones in memory).

Schedule (positional, so the design is balanced by construction; where the paper is silent the
choice is ours):

- difficulty: positions cycle clean, single, single, paired (A.1 "Schedule"): per block 5 clean,
  10 single-stressor and 5 paired-stressor configurations. The ``s``-th single slot of block
  ``b`` (``b = 5 family + dimension index``) takes stressor ``STRESSORS[(b + s) % 8]``; the
  ``p``-th paired slot takes pair ``(5 b + p) % 28`` of the 28 stressor pairs (in
  ``itertools.combinations`` order).
- root dependency: 200 of 1,000 configurations use a dependent block (A.1). Chains and trees
  have a single root (a dependent block needs two), so the 200 go to the other 8 families, 5
  per block at positions 0, 5, 10, 15 and 18 (covering all four difficulty kinds), their kind
  cycling common-factor, random-covariance, uniform-ball over the pool's dependent slots.
  A graph that happens to have one root still records ``independent`` (``tags``).

Seeds and audits: attempt ``a`` of configuration ``k`` is ``ArenaConfig(..., seed=(POOL_SEED, k,
a))`` with everything not fixed by the schedule (graph, active families, parameters) drawn from
that seed. A candidate is accepted when its graph passes :func:`~.audits.audit_graph` and a
1,000-row observational sample (``SeedSequence([POOL_SEED, k, a, 1])``, stressors applied) passes
:func:`~.audits.audit_data`; otherwise the next attempt is drawn and the failed checks are counted
(:func:`rejection_table`). The interventional audits need the protocol's target pool and run
there (:func:`~.audits.audit_interventional`). Under a seal (:mod:`causal_gym.seal`) the schedule
stays the same and both seeds become ``seal.entropy("arena/pool", ...)`` and
``seal.entropy("arena/pool-audit", ...)`` of the same tuples.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_count
from causal_gym.envs.arena.audits import audit_data, audit_graph
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
from causal_gym.envs.arena.synthetic import STRESSORS, ArenaConfig, ArenaSCM, GenerationError, generate
from causal_gym.seal import Seal, keyed_entropy

__all__ = [
    "POOL_SEED",
    "DIMENSIONS",
    "PER_BLOCK",
    "POOL_SIZE",
    "MAX_ATTEMPTS",
    "audited_candidate",
    "PoolSlot",
    "pool_slot",
    "pool_indices",
    "pool_config",
    "pool_attempts",
    "iter_pool",
    "rejection_table",
]

POOL_SEED = 20_250_611
"""Master seed of the pool: an arbitrary constant, fixed once and never tuned."""

DIMENSIONS: tuple[int, ...] = (10, 20, 30, 50, 100)
PER_BLOCK = 20
POOL_SIZE = len(GRAPH_FAMILIES) * len(DIMENSIONS) * PER_BLOCK
MAX_ATTEMPTS = 50
AUDIT_ROWS = 1000

_KINDS = ("clean", "single", "single", "paired")
_PAIRS = tuple(itertools.combinations(STRESSORS, 2))
_DEPENDENT_POSITIONS = (0, 5, 10, 15, 18)
_DEPENDENT_KINDS = ("common_factor", "random_covariance", "uniform_ball")
_SINGLE_ROOT_FAMILIES = ("chain", "tree")
_MULTI_ROOT_FAMILIES = tuple(f for f in GRAPH_FAMILIES if f not in _SINGLE_ROOT_FAMILIES)
_GRAPH_CHECKS = frozenset({"acyclic", "no_isolated", "min_depth", "min_edges", "in_degree_cap"})


@dataclass(frozen=True)
class PoolSlot:
    """What the schedule fixes for configuration ``index``."""

    index: int
    graph_family: str
    d: int
    position: int
    stressors: tuple[str, ...]
    root_dependency: str

    @property
    def difficulty(self) -> str:
        """``"clean"``, ``"single"`` or ``"paired"``."""
        return _KINDS[self.position % 4]

    def config(self, attempt: int, seal: Seal | None = None) -> ArenaConfig:
        """The configuration of attempt ``attempt`` (seed ``(POOL_SEED, index, attempt)``, keyed by ``seal``)."""
        seed = keyed_entropy(seal, "arena/pool", (POOL_SEED, self.index, check_count(attempt, "attempt", minimum=0)))
        return ArenaConfig(
            self.graph_family, self.d, seed, root_dependency=self.root_dependency, stressors=self.stressors
        )


def pool_slot(k: int) -> PoolSlot:
    """The schedule of configuration ``k`` (cheap: nothing is generated).

    Examples
    --------
    >>> slot = pool_slot(123)
    >>> slot.graph_family, slot.d, slot.position, slot.difficulty
    ('scale_free', 20, 3, 'paired')
    """
    k = check_count(k, "k", minimum=0)
    if k >= POOL_SIZE:
        raise ValueError(f"k must be < {POOL_SIZE}, got {k}")
    family_index, rest = divmod(k, len(DIMENSIONS) * PER_BLOCK)
    dim_index, position = divmod(rest, PER_BLOCK)
    family = GRAPH_FAMILIES[family_index]
    block = family_index * len(DIMENSIONS) + dim_index
    kind = _KINDS[position % 4]
    if kind == "single":
        rank = sum(_KINDS[p % 4] == "single" for p in range(position))
        stressors: tuple[str, ...] = (STRESSORS[(block + rank) % len(STRESSORS)],)
    elif kind == "paired":
        rank = sum(_KINDS[p % 4] == "paired" for p in range(position))
        stressors = _PAIRS[(block * 5 + rank) % len(_PAIRS)]
    else:
        stressors = ()
    dependency = "independent"
    if family in _MULTI_ROOT_FAMILIES and position in _DEPENDENT_POSITIONS:
        ordinal = (_MULTI_ROOT_FAMILIES.index(family) * len(DIMENSIONS) + dim_index) * len(_DEPENDENT_POSITIONS)
        ordinal += _DEPENDENT_POSITIONS.index(position)
        dependency = _DEPENDENT_KINDS[ordinal % len(_DEPENDENT_KINDS)]
    return PoolSlot(k, family, DIMENSIONS[dim_index], position, stressors, dependency)


def pool_indices(family: str | None = None, d: int | None = None) -> tuple[int, ...]:
    """Indices of the configurations of a graph family and/or dimension (all by default)."""
    families = GRAPH_FAMILIES if family is None else (check_choice(family, GRAPH_FAMILIES, "graph family"),)
    if d is not None and (isinstance(d, bool) or d not in DIMENSIONS):
        raise ValueError(f"d must be one of {DIMENSIONS}, got {d!r}")
    dims = DIMENSIONS if d is None else (d,)
    return tuple(
        (GRAPH_FAMILIES.index(f) * len(DIMENSIONS) + DIMENSIONS.index(dim)) * PER_BLOCK + p
        for f in families
        for dim in dims
        for p in range(PER_BLOCK)
    )


def audited_candidate(config: ArenaConfig, audit_seed: Sequence[int]) -> tuple[ArenaSCM, Any]:
    """Generate ``config`` and run the graph and data audits on :data:`AUDIT_ROWS` rows drawn from
    ``audit_seed``: the one acceptance test of the pool and of the env's train stream.

    Raises ``GenerationError`` when the generator finds no valid candidate.
    """
    arena = generate(config)
    data = arena.sample(AUDIT_ROWS, np.random.SeedSequence(list(audit_seed)))
    return arena, audit_graph(arena.graph, family=config.graph_family) + audit_data(data)


@functools.lru_cache(maxsize=64)
def _build(k: int, seal: Seal | None = None) -> tuple[ArenaSCM, tuple[dict[str, Any], ...]]:
    slot = pool_slot(k)
    records: list[dict[str, Any]] = []
    for attempt in range(MAX_ATTEMPTS):
        try:
            audit_seed = keyed_entropy(seal, "arena/pool-audit", (POOL_SEED, k, attempt, 1))
            arena, result = audited_candidate(slot.config(attempt, seal), audit_seed)
        except GenerationError as err:
            records.append({"attempt": attempt, "passed": False, "reasons": ["generation"], "error": str(err),
                            "graph_rejections": {}, "node_redraws": {}})
            continue
        build = arena.build
        records.append({
            "attempt": attempt,
            "passed": result.passed,
            "reasons": list(result.reasons),
            "graph_rejections": build["graph"]["rejections"],
            "node_redraws": build["node_redraws"],
        })
        if result.passed:
            return arena, tuple(records)
    raise GenerationError(f"pool configuration {k}: no candidate passed the audits in {MAX_ATTEMPTS} tries: {records}")


def pool_config(k: int, seal: Seal | None = None) -> ArenaSCM:
    """The accepted SCM of pool configuration ``k`` (generated on first use, then cached); ``seal``
    keys its seeds (the schedule is the same).

    Examples
    --------
    >>> arena = pool_config(0)
    >>> arena.config.graph_family, arena.d
    ('erdos_renyi', 10)
    """
    return _build(pool_slot(k).index, seal)[0]


def pool_attempts(k: int) -> tuple[dict[str, Any], ...]:
    """Per-attempt audit record of configuration ``k`` (a copy): passed, failed checks, graph
    rejections inside the attempt and node redraws."""
    return tuple(json.loads(json.dumps(record)) for record in _build(pool_slot(k).index)[1])


def iter_pool(family: str | None = None, d: int | None = None) -> Iterator[ArenaSCM]:
    """Yield the accepted SCMs of a family and/or dimension, in index order, one at a time."""
    for k in pool_indices(family, d):
        yield pool_config(k)


def rejection_table(indices: Iterable[int] | None = None) -> dict[str, int]:
    """Counts of audit failures over configurations (all 1,000 by default: slow).

    Keys: ``configs``, ``attempts`` (candidates drawn), ``rejected`` (candidates failing), then
    ``data:<check>`` / ``graph:<check>`` per failed check of a rejected candidate,
    ``build:generation`` per candidate that could not be built (:class:`GenerationError`),
    ``graph_redraw:<check>`` per graph candidate redrawn inside an attempt
    (:func:`~.graph_families.sample_graph`) and ``node_redraw:<check>`` per node redrawn inside
    an attempt (:mod:`.synthetic`).
    """
    chosen = range(POOL_SIZE) if indices is None else indices
    table: Counter[str] = Counter()
    for k in chosen:
        records = pool_attempts(k)
        table["configs"] += 1
        table["attempts"] += len(records)
        for record in records:
            table["rejected"] += not record["passed"]
            for reason in record["reasons"]:
                stage = "graph:" if reason in _GRAPH_CHECKS else "build:" if reason == "generation" else "data:"
                table[stage + reason] += 1
            for reason, count in record["graph_rejections"].items():
                table["graph_redraw:" + reason] += count
            for reason, count in record["node_redraws"].items():
                table["node_redraw:" + reason] += count
    return dict(sorted(table.items(), key=lambda item: (item[0] not in ("configs", "attempts", "rejected"), item[0])))
