"""CausalArena as Gymnasium environments: a one-step graph submission, or the working-graph tool harness.

Two environment classes share one instance machinery (:class:`ArenaSource`):

- :class:`CausalArenaEnv` (``mode="submit"``): the observation is one exported split (data and
  intervention mask); the single action is a directed adjacency matrix; the reward is its
  directed-edge F1, scored as CausalArena scores a method (:mod:`.scoring`).
- :class:`CausalArenaToolEnv` (``mode="tools"``): the same split behind the evidence tools shared
  with Heuresis (:mod:`causal_gym.harness.data_tools`) and a working graph
  (:class:`causal_gym.harness.WorkingGraphEnv`); the algorithm menu holds the arena's methods.

:func:`make_arena_env` picks the class from ``mode`` and is the registered entry point of
``CausalArena-{synthetic,formula,semantic,real}-v0`` (:mod:`causal_gym.envs.registration`).

Instance lists (``options={"instance": k}`` picks entry ``k``)
---------------------------------------------------------------
===============  ===================================================================================
source           instances, in order
===============  ===================================================================================
``synthetic``    the pool configurations (:mod:`.pool`) of dimension ``d`` (200 per ``d``: 10 graph
                 families x 20, family-major) that match ``factors``; protocol seed = pool index
``formula``      the formula-grounded cards (:data:`~.scenarios.formula.FORMULA_SCENARIOS`, 14, in
                 that order) with at most ``d`` variables
``semantic``     the semantic cards (:data:`~.scenarios.semantic.SEMANTIC_SCENARIOS`, 6)
``real``         ``obs`` split: the Sachs et al. (2005) flow-cytometry table (a real table with the
                 17-edge consensus graph, :func:`~.real.load_sachs`), then semi-synthetic SCMs on
                 the bnlearn structures :data:`REAL_NETWORKS` (:func:`~.real.semi_synthetic_scm`);
                 ``obs+int`` split: the networks only
===============  ===================================================================================

The Sachs table is observational only: cdt's file pools the stimulation conditions without
their labels, so it has no intervention mask and no ``obs+int`` split; each replicate is ``n``
rows drawn without replacement from its 7,466 (seeded by the replicate). The pooled conditions
include perturbations of some molecules, so the "observational" rows are not i.i.d. draws of one
SCM -- the published graph is a reference, not verified ground truth (paper §5.2). ``cdt`` and
``pgmpy`` are optional (extra ``real``); without them the ``real`` instances raise ImportError at
``reset``.

Every non-table instance is sampled with :func:`.protocol.sample_split` (``obs``: 1,000 rows;
``obs+int``: 800 observational + 200 interventional rows by default; ``n_obs`` / ``n_int``
override) with protocol seed ``crc32(unit)`` for grounded and network units. The ``"train"``
instance split (``options={"split": "train"}``, synthetic only) streams fresh SCMs for RL: train
instance ``k`` takes the schedule (family, ``d``, stressors, root dependency) of test instance
``k mod len(list)`` with seeds ``(TRAIN_SEED, k, attempt)`` disjoint from the pool's, accepts
the first attempt that passes the pool's graph and data audits and matches ``factors``.

What the agent sees (the view)
------------------------------
Columns are shown in a fixed random order per instance (a permutation seeded by the unit, the
same in both modes), because the generators and cards list causes before effects. Grounded and
real sources mix sizes, while a Gymnasium space has one shape: the env has ``d`` variable slots
(default: the largest instance of the source), an instance with fewer variables fills the first
slots and the rest are *padding*: zero data columns, flagged 0 in the ``variables`` observation,
and isolated nodes of the truth, so an edge touching padding is a false positive. nSHD is
normalised by the instance's own number of variables. Synthetic instances always fill all ``d``.

Interventional audit
--------------------
At every ``reset`` of an ``obs+int`` split, :func:`audit_split` replays each interventional row
without its intervention (:func:`.protocol.counterfactual_rows`) and runs
:func:`.audits.audit_interventional`. The outcome is counted, never dropped: the reset info holds
``"interventional_audit"`` (``passed``, ``n_failures`` and, per failed check, the number of
offending items -- no items, since those name (target, child) pairs of the truth), the env keeps
the running totals in ``audit_failures``, and the final info holds the full audit.

Scoring
-------
A submitted graph (a DAG, or a PDAG with undirected edges ``A[i, j] = A[j, i] = 1``) is scored
by :func:`.scoring.score_graph`: undirected edges are oriented along a random node permutation
drawn from the split's fixed per-file seed (``ArenaDataset.file_seed``; the same submission always
gets the same orientation), then directed precision / recall / F1, SHD, nSHD and SID, plus the
CPDAG-aware metrics (SHD, arrowhead and adjacency P/R/F1 between essential graphs for the split's
intervention targets). The reward is the directed F1.
"""

from __future__ import annotations

import functools
import hashlib
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym import _cache
from causal_gym._validation import check_adjacency, check_choice, check_count, check_real
from causal_gym.envs.arena.audits import AuditResult, audit_interventional
from causal_gym.envs.arena.families import MECHANISM_TAGS, NOISE_TAGS, ROOT_FAMILIES
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
from causal_gym.envs.arena.protocol import ArenaDataset, ArenaProtocol, counterfactual_rows, sample_split
from causal_gym.envs.arena.scoring import METRICS, orient_randomly, score_graph
from causal_gym.envs.arena.synthetic import ROOT_DEPENDENCIES, STRESSORS, ArenaConfig, GenerationError
from causal_gym.harness import SandboxLimits, ToolResult, WorkingGraphEnv, check_sandbox_options, render_rgb
from causal_gym.harness.data_tools import ALGORITHM_SLOTS, DataTools
from causal_gym.graphs import directed_cycle
from causal_gym.harness.working_graph import render_ansi, variable_name
from causal_gym.seal import Seal, keyed_entropy, opaque_id, resolve_seal

__all__ = [
    "SOURCES",
    "DATA_SPLITS",
    "INSTANCE_SPLITS",
    "MODES",
    "REAL_NETWORKS",
    "ARENA_MENU",
    "FACTOR_VOCABULARIES",
    "DEFAULT_TOOL_BUDGETS",
    "TRAIN_SEED",
    "default_width",
    "pool_tags",
    "menu_graph",
    "ArenaInstance",
    "ArenaTask",
    "ArenaView",
    "ArenaSource",
    "instance_list",
    "load_task",
    "audit_split",
    "arena_view",
    "score_submission",
    "CausalArenaEnv",
    "CausalArenaToolEnv",
    "make_arena_env",
]

SOURCES = ("synthetic", "formula", "semantic", "real")
"""The four SCM families of the arena."""

DATA_SPLITS = ("obs", "obs+int")
"""The protocol splits (the ``split`` argument)."""

INSTANCE_SPLITS = ("test", "train")
"""Instance splits of ``reset(options={"split": ...})``: the fixed lists, or fresh synthetic SCMs."""

MODES = ("submit", "tools")
"""``"submit"``: one-step adjacency answer; ``"tools"``: the working-graph harness."""

REAL_NETWORKS: Mapping[str, int] = MappingProxyType({"asia": 8, "sachs": 11, "child": 20, "insurance": 27, "alarm": 37})
"""bnlearn structures of the ``real`` source and their sizes (literal so that listing instances
reads no file; :func:`load_task` checks them)."""

ARENA_MENU = ("pc", "ges", "gies", "direct_lingam", "notears", "dagma", "random_regress")
"""The tool mode's algorithm menu (behind the labels A..G): the arena's methods in
:mod:`causal_gym.discovery`. GIES receives the intervention mask on ``obs+int`` splits; the
others see the pooled rows."""

FACTOR_VOCABULARIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "graph_family": GRAPH_FAMILIES,
    "difficulty": ("clean", "single", "paired"),
    "stressor": STRESSORS,
    "root_dependency": ROOT_DEPENDENCIES,
    "mechanism": MECHANISM_TAGS,
    "noise": NOISE_TAGS,
    "root": ROOT_FAMILIES,
})
"""Keys of the ``factors`` filter and their allowed values. A value is one name or a list (any
of them matches). ``graph_family``, ``difficulty`` and ``stressor`` (an active stressor) are read
from the pool schedule; ``root_dependency`` (as generated), ``mechanism``, ``noise`` and ``root``
(an active family) need the generated SCM: the first such filter generates every configuration
of the dimension once (about 0.1 s each at d = 10) and caches their tags on disk."""

DEFAULT_TOOL_BUDGETS: Mapping[str, Any] = MappingProxyType(
    {"turns": 60, "tests": 500, "algorithm_calls": 10, "wall_time": None}
)
"""Tool-mode budgets (ours; the paper evaluates methods, not agents). None means unlimited."""

TRAIN_SEED = 20_250_612
"""Master seed of the synthetic train stream (the pool uses 20_250_611)."""

_VIEW_SEED = 20_250_613
_TRAIN_DRAWS = 2**31 - 1
_TAG_FACTORS = {"root_dependency": "root_dependency", "mechanism": "active_mechanisms",
                "noise": "active_noises", "root": "active_roots"}
_POOL_TAGS_VERSION = 1
_MENU_VERSION = 1
_DEFAULT_SIZES = {"obs": (1000, 0), "obs+int": (800, 200)}


# ---------------------------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArenaInstance:
    """One entry of an instance list.

    Attributes
    ----------
    source : str
        One of :data:`SOURCES`.
    kind : str
        ``"pool"`` (a pool configuration), ``"train"`` (a fresh synthetic SCM), ``"formula"``,
        ``"semantic"``, ``"network"`` (semi-synthetic bnlearn structure) or ``"table"`` (Sachs).
    key : int or str
        Pool index, train index, card name or network name.
    unit : str
        The instance's identifier in run rows and file seeds (``"synthetic/pool-0123"``,
        ``"formula/gas_cylinder"``, ``"real/network-alarm"``, ``"real/sachs-table"``, ...).
    size : int
        Number of variables.
    template : int
        Train instances: the pool index whose schedule they follow (-1 otherwise).
    requirements : tuple
        Train instances: the generated-tag filters, as ``((factor, (values...)), ...)``.
    """

    source: str
    kind: str
    key: int | str
    unit: str
    size: int
    template: int = -1
    requirements: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def protocol_seed(self) -> int:
        """The seed of :func:`~.protocol.sample_split`: the pool index, else ``crc32(unit)``."""
        return int(self.key) if self.kind == "pool" else zlib.crc32(self.unit.encode())


def _check_factors(factors: Mapping[str, Any] | None) -> dict[str, frozenset[str]]:
    if factors is None:
        return {}
    if not isinstance(factors, Mapping):
        raise ValueError(f"factors must be a dict of filters, got {type(factors).__name__}")
    checked: dict[str, frozenset[str]] = {}
    for key, value in factors.items():
        vocabulary = FACTOR_VOCABULARIES.get(key)
        if vocabulary is None:
            raise ValueError(f"unknown factor {key!r}; filters are {', '.join(FACTOR_VOCABULARIES)}")
        values = (value,) if isinstance(value, str) else value
        if not isinstance(values, Sequence) or not values:
            raise ValueError(f"factors[{key!r}] must be a name or a non-empty list of names, got {value!r}")
        checked[key] = frozenset(check_choice(v, vocabulary, f"factors[{key!r}]") for v in values)
    return checked


def pool_tags(k: int, seal: Seal | None = None) -> dict[str, Any]:
    """Generated factor tags of pool configuration ``k`` (disk-cached): root dependency, active families."""
    from causal_gym.envs.arena.pool import POOL_SEED, pool_config

    def compute() -> dict[str, Any]:
        tags = pool_config(k, seal).tags
        return {name: tags[name] for name in _TAG_FACTORS.values()}

    key = {"what": "arena_pool_tags", "version": _POOL_TAGS_VERSION, "pool_seed": POOL_SEED, "k": k}
    if seal is not None:
        key["seal"] = seal.fingerprint
    return _cache.cached(key, compute)


def _tags_match(tags: Mapping[str, Any], filters: Mapping[str, frozenset[str]]) -> bool:
    for key, wanted in filters.items():
        if key in _TAG_FACTORS:
            value = tags[_TAG_FACTORS[key]]
            present = {value} if isinstance(value, str) else set(value)
            if not present & wanted:
                return False
    return True


def _schedule_match(k: int, filters: Mapping[str, frozenset[str]]) -> bool:
    from causal_gym.envs.arena.pool import pool_slot

    slot = pool_slot(k)
    return (
        ("graph_family" not in filters or slot.graph_family in filters["graph_family"])
        and ("difficulty" not in filters or slot.difficulty in filters["difficulty"])
        and ("stressor" not in filters or bool(set(slot.stressors) & filters["stressor"]))
    )


def _cards(source: str) -> Mapping[str, Mapping[str, Any]]:
    if source == "formula":
        from causal_gym.envs.arena.scenarios.formula import FORMULA_SCENARIOS

        return FORMULA_SCENARIOS
    from causal_gym.envs.arena.scenarios.semantic import SEMANTIC_SCENARIOS

    return SEMANTIC_SCENARIOS


def default_width(source: str, split: str) -> int:
    """The default number of variable slots ``d`` of a source: its largest instance (10 for synthetic)."""
    source = check_choice(source, SOURCES, "source")
    if source == "synthetic":
        return 10
    return max(instance.size for instance in instance_list(source, None, split))


def instance_list(
    source: str, d: int | None, split: str, factors: Mapping[str, Any] | None = None, seal: Seal | None = None
) -> tuple[ArenaInstance, ...]:
    """The test instances of a source (table in the module docstring).

    Parameters
    ----------
    source : str
        One of :data:`SOURCES`.
    d : int or None
        Synthetic: the dimension (one of :data:`~.pool.DIMENSIONS`). Other sources: the largest
        instance kept (None keeps all).
    split : str
        ``"obs"`` or ``"obs+int"`` (the ``real`` list drops the Sachs table for ``obs+int``).
    factors : mapping, optional
        Synthetic only: the filter of :data:`FACTOR_VOCABULARIES`.
    seal : Seal, optional
        The seal whose pool the generated-tag filters read.

    Raises
    ------
    ValueError
        On a bad argument or when no instance is left.
    """
    from causal_gym.envs.arena.pool import DIMENSIONS, pool_indices

    source = check_choice(source, SOURCES, "source")
    split = check_choice(split, DATA_SPLITS, "split")
    filters = _check_factors(factors)
    if filters and source != "synthetic":
        raise ValueError("factors filter the synthetic pool only")
    if source == "synthetic":
        if d is None or isinstance(d, bool) or d not in DIMENSIONS:
            raise ValueError(f"synthetic d must be one of {DIMENSIONS}, got {d!r}")
        chosen = [k for k in pool_indices(d=d) if _schedule_match(k, filters)]
        if set(filters) & set(_TAG_FACTORS):
            chosen = [k for k in chosen if _tags_match(pool_tags(k, seal), filters)]
        found = tuple(ArenaInstance(source, "pool", k, f"synthetic/pool-{k:04d}", d) for k in chosen)
    elif source in ("formula", "semantic"):
        found = tuple(
            ArenaInstance(source, source, name, f"{source}/{name}", len(card["variables"]))
            for name, card in _cards(source).items()
        )
    else:
        table = (ArenaInstance(source, "table", "sachs", "real/sachs-table", 11),) if split == "obs" else ()
        found = table + tuple(
            ArenaInstance(source, "network", name, f"real/network-{name}", size) for name, size in REAL_NETWORKS.items()
        )
    if source != "synthetic" and d is not None:
        found = tuple(instance for instance in found if instance.size <= check_count(d, "d", 2))
    if not found:
        raise ValueError(f"no {source} instance matches d={d!r}, split={split!r}, factors={dict(factors or {})!r}")
    return found


def _train_instance(template: ArenaInstance, k: int, filters: Mapping[str, frozenset[str]]) -> ArenaInstance:
    requirements = tuple(sorted((key, tuple(sorted(v))) for key, v in filters.items() if key in _TAG_FACTORS))
    return ArenaInstance("synthetic", "train", k, f"synthetic/train-{k:010d}", template.size, int(template.key),
                         requirements)


# ---------------------------------------------------------------------------------------------
# loading a split
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ArenaTask:
    """A loaded instance: the exported split and what the env and the final info need.

    Attributes
    ----------
    instance : ArenaInstance
    dataset : ArenaDataset
        The split in the SCM's own variable order (no permutation, no padding).
    scm : object or None
        The SCM it was sampled from (None for a real table).
    variables : tuple of dict
        ``{"name", "unit", "definition"}`` per variable (empty strings for the nameless variables
        of synthetic and network instances).
    factors : dict
        Labels for slicing and the final info (graph family, domain, network, ...).
    audit : AuditResult or None
        The interventional audit of an ``obs+int`` split (None for ``obs``).
    """

    instance: ArenaInstance
    dataset: ArenaDataset
    scm: object | None
    variables: tuple[dict[str, str], ...]
    factors: dict[str, Any]
    audit: AuditResult | None


def audit_split(scm: object, dataset: ArenaDataset) -> AuditResult:
    """The interventional audit (Appendix A.2) of a split sampled from ``scm`` by :func:`~.protocol.sample_split`.

    Replays every row without its intervention (:func:`~.protocol.counterfactual_rows`) and runs
    :func:`~.audits.audit_interventional` with the split's target pool.
    """
    pool = dataset.meta.get("target_pool", [])
    return audit_interventional(scm, dataset.data, dataset.mask, pool, counterfactual_rows(scm, dataset))


def _anonymous(d: int) -> tuple[dict[str, str], ...]:
    """Descriptions of nameless variables (:meth:`ArenaSource.describe` names them by their slot)."""
    return tuple({"name": "", "unit": "", "definition": ""} for _ in range(d))


def _synthetic_factors(arena: Any, pool_index: int | None) -> dict[str, Any]:
    tags = arena.tags
    return {
        "graph_family": tags["graph_family"],
        "root_dependency": tags["root_dependency"],
        "difficulty": tags["difficulty"],
        "stressors": "+".join(tags["stressors"]) or "none",
        "active_mechanisms": tags["active_mechanisms"],
        "active_noises": tags["active_noises"],
        "active_roots": tags["active_roots"],
        "pool_index": pool_index,
    }


def _train_scm(instance: ArenaInstance, seal: Seal | None) -> Any:
    from causal_gym.envs.arena.pool import MAX_ATTEMPTS, audited_candidate, pool_slot

    slot = pool_slot(instance.template)
    filters = {key: frozenset(values) for key, values in instance.requirements}
    for attempt in range(MAX_ATTEMPTS):
        seed = keyed_entropy(seal, "arena/train", (TRAIN_SEED, int(instance.key), attempt))
        config = ArenaConfig(slot.graph_family, slot.d, seed,
                             root_dependency=slot.root_dependency, stressors=slot.stressors)
        try:
            audit_seed = keyed_entropy(seal, "arena/train-audit", (TRAIN_SEED, int(instance.key), attempt, 1))
            arena, audit = audited_candidate(config, audit_seed)
        except GenerationError:
            continue
        if audit.passed and _tags_match(arena.tags, filters):
            return arena
    raise GenerationError(f"train instance {instance.key}: no candidate passed the audits and filters "
                          f"in {MAX_ATTEMPTS} tries")


def _card_variables(card: Mapping[str, Any]) -> tuple[dict[str, str], ...]:
    return tuple({"name": v["name"], "unit": v["unit"], "definition": v["definition"]} for v in card["variables"])


@functools.lru_cache(maxsize=32)
def _compiled(source: str, name: str) -> Any:
    from causal_gym.envs.arena.grounded import compile_scenario

    return compile_scenario(_cards(source)[name])


def _protocol_seed(instance: ArenaInstance, seal: Seal | None) -> int:
    """The instance's protocol seed; under a seal a 256-bit int keyed by the secret."""
    if seal is None:
        return instance.protocol_seed
    words = seal.entropy("arena/protocol", instance.protocol_seed, zlib.crc32(instance.unit.encode()))
    return sum(word << (32 * i) for i, word in enumerate(words))


def _sachs_split(
    instance: ArenaInstance, replicate: int, n: int, seed: int
) -> tuple[ArenaDataset, tuple[dict[str, str], ...]]:
    from causal_gym.envs.arena.real import load_sachs

    table, truth, names = load_sachs()
    if n > table.shape[0]:
        raise ValueError(f"the Sachs table has {table.shape[0]} rows; n_obs={n} is more")
    rows = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, replicate, n))).choice(
        table.shape[0], size=n, replace=False)
    meta = {
        "unit": instance.unit, "protocol": "obs", "seed": seed, "replicate": replicate, "n_obs": n, "n_int": 0,
        "regimes": [{"name": "observational", "targets": [], "interventions": [], "n_rows": n, "spawn_key": None}],
        "row_order": list(range(n)), "source_rows": int(table.shape[0]),
        "factors": {"network": "sachs", "kind": "table"},
    }
    dataset = ArenaDataset(table[rows], np.zeros((n, truth.shape[0]), dtype=bool), ((),) * n,
                           np.zeros(n, dtype=np.int64), truth, meta)
    variables = tuple({"name": name, "unit": "fluorescence intensity (a.u.)",
                       "definition": f"single-cell level of {name} measured by flow cytometry"} for name in names)
    return dataset, variables


@functools.lru_cache(maxsize=32)
def load_task(
    instance: ArenaInstance, split: str, replicate: int, n_obs: int, n_int: int, seal: Seal | None = None
) -> ArenaTask:
    """Build the SCM of ``instance``, sample its split and audit it (kept in memory, 32 most recent).

    Parameters
    ----------
    instance : ArenaInstance
    split : str
        ``"obs"`` or ``"obs+int"``.
    replicate : int
        Replicate index (the paper's main protocol uses 0..4).
    n_obs, n_int : int
        Observational and interventional rows (``n_int`` must be 0 for ``obs``).
    seal : Seal, optional
        Keys the SCM's seeds (pool, train stream, network parameters) and the protocol seed.

    Raises
    ------
    ImportError
        For a ``real`` instance whose package (cdt, pgmpy) is missing.
    ValueError
        On a bad size, or a network whose size differs from :data:`REAL_NETWORKS`.
    """
    split = check_choice(split, DATA_SPLITS, "split")
    replicate = check_count(replicate, "replicate", 0)
    n_obs, n_int = check_count(n_obs, "n_obs", 1), check_count(n_int, "n_int", 0)
    if (n_int > 0) != (split == "obs+int"):
        raise ValueError(f"split {split!r} needs {'n_int > 0' if split == 'obs+int' else 'n_int = 0'}, got {n_int}")
    seed = _protocol_seed(instance, seal)
    if instance.kind == "table":
        dataset, variables = _sachs_split(instance, replicate, n_obs, seed)
        return ArenaTask(instance, dataset, None, variables, {"network": "sachs", "kind": "table"}, None)
    if instance.kind in ("pool", "train"):
        from causal_gym.envs.arena.pool import pool_config

        scm = pool_config(int(instance.key), seal) if instance.kind == "pool" else _train_scm(instance, seal)
        factors = _synthetic_factors(scm, int(instance.key) if instance.kind == "pool" else None)
        variables = _anonymous(scm.d)
    elif instance.kind == "network":
        from causal_gym.envs.arena.real import semi_synthetic_scm

        scm = semi_synthetic_scm(str(instance.key), seed)
        if scm.d != instance.size:
            raise ValueError(f"network {instance.key!r} has {scm.d} variables, expected {instance.size}")
        factors = {"network": instance.key, "kind": "semi_synthetic"}
        variables = _anonymous(scm.d)
    else:
        compiled = _compiled(instance.source, str(instance.key))
        scm = compiled.scm
        factors = {"domain": compiled.metadata["domain"], "scenario": instance.key}
        variables = _card_variables(_cards(instance.source)[str(instance.key)])
    labels = {k: v for k, v in factors.items() if isinstance(v, str)}
    dataset = sample_split(scm, ArenaProtocol(split, n_obs=n_obs, n_int=n_int), seed=seed,
                           replicate=replicate, meta={"unit": instance.unit, "factors": labels})
    audit = audit_split(scm, dataset) if split == "obs+int" else None
    return ArenaTask(instance, dataset, scm, variables, factors, audit)


# ---------------------------------------------------------------------------------------------
# the view and the score
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ArenaView:
    """A task as the env shows it: columns permuted and padded to ``width`` slots.

    Attributes
    ----------
    task : ArenaTask
    width : int
        Variable slots (the env's ``d``).
    columns : (k,) int array
        ``columns[j]`` is the task variable shown as ``X{j}``; slots ``k .. width-1`` are padding.
    data : (n, width) float array
    mask : (n, width) int8 array
    variables : (width,) int8 array
        1 for a real variable, 0 for padding.
    truth : (width, width) int8 array
        The true DAG in view coordinates (padding isolated).
    """

    task: ArenaTask
    width: int
    columns: np.ndarray
    data: np.ndarray
    mask: np.ndarray
    variables: np.ndarray
    truth: np.ndarray

    @property
    def size(self) -> int:
        """Number of real variables."""
        return int(self.columns.size)

    @property
    def target_family(self) -> list[tuple[int, ...]]:
        """The split's intervention target sets in view coordinates."""
        position = np.argsort(self.columns)
        return sorted({tuple(sorted(int(position[t]) for t in targets)) for targets in self.task.dataset.target_family})


def arena_view(task: ArenaTask, width: int, seal: Seal | None = None) -> ArenaView:
    """Permute ``task``'s columns (seeded by its unit, keyed by ``seal``) and pad them to ``width`` slots."""
    dataset = task.dataset
    k = dataset.d
    if k > width:
        raise ValueError(f"instance {task.instance.unit} has {k} variables, more than the env's d={width}")
    seed = np.random.SeedSequence(keyed_entropy(seal, "arena/view", (_VIEW_SEED, zlib.crc32(task.instance.unit.encode()))))
    columns = np.random.default_rng(seed).permutation(k)
    data = np.zeros((dataset.n, width))
    data[:, :k] = dataset.data[:, columns]
    mask = np.zeros((dataset.n, width), dtype=np.int8)
    mask[:, :k] = dataset.mask[:, columns]
    truth = np.zeros((width, width), dtype=np.int8)
    truth[:k, :k] = dataset.true_adjacency[np.ix_(columns, columns)]
    variables = np.zeros(width, dtype=np.int8)
    variables[:k] = 1
    for value in (columns, data, mask, truth, variables):
        value.flags.writeable = False
    return ArenaView(task, width, columns, data, mask, variables, truth)


def score_submission(view: ArenaView, graph: np.ndarray) -> dict[str, Any]:
    """Every metric of :data:`.scoring.METRICS` for a graph in view coordinates (module docstring).

    nSHD is normalised by the instance's own number of variables, not the padded width.
    """
    graph = check_adjacency(graph, "graph", d=view.width)
    scores = score_graph(view.truth, graph, orient_seed=view.task.dataset.file_seed, targets=view.target_family)
    k = view.size
    scores["nshd"] = scores["shd"] / (k * (k - 1)) if k > 1 else None
    return scores


# ---------------------------------------------------------------------------------------------
# the shared settings
# ---------------------------------------------------------------------------------------------


class ArenaSource:
    """The arguments shared by both modes, validated, with the instance list and the per-reset draw.

    Parameters are those of :class:`CausalArenaEnv` (see there).
    """

    def __init__(
        self,
        source: str,
        d: int | None,
        split: str,
        factors: Mapping[str, Any] | None,
        replicate: int,
        n_obs: int | None,
        n_int: int | None,
        seal: Seal | str | None = None,
    ) -> None:
        self.source = check_choice(source, SOURCES, "source")
        self.split = check_choice(split, DATA_SPLITS, "split")
        self.factors = _check_factors(factors)
        self.seal = resolve_seal(seal)
        self.width = default_width(self.source, self.split) if d is None else check_count(d, "d", 2)
        self.instances = instance_list(self.source, self.width, self.split, factors, self.seal)
        self.replicate = check_count(replicate, "replicate", 0)
        default_obs, default_int = _DEFAULT_SIZES[self.split]
        self.n_obs = default_obs if n_obs is None else check_count(n_obs, "n_obs", 3)
        if self.split == "obs":
            if n_int not in (None, 0):
                raise ValueError(f"the obs split has no interventional rows; n_int must be None or 0, got {n_int!r}")
            self.n_int = 0
        else:
            self.n_int = default_int if n_int is None else check_count(n_int, "n_int", 1)

    @property
    def n(self) -> int:
        """Rows per split."""
        return self.n_obs + self.n_int

    def draw(self, rng: np.random.Generator, options: Mapping[str, Any]) -> tuple[ArenaView, dict[str, Any]]:
        """The view of the instance ``options`` name (or ``rng`` draws) and the reset info's
        ``"instance"`` entry (which entry it is, or under a seal an opaque id; nothing about the truth)."""
        unknown = sorted(set(options) - {"split", "instance"})
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options are 'split' and 'instance'")
        which = check_choice(options.get("split", "test"), INSTANCE_SPLITS, "options['split']")
        if which == "train" and self.source != "synthetic":
            raise ValueError(f"only the synthetic source streams train instances; {self.source!r} has a test list")
        drawn = int(rng.integers(len(self.instances) if which == "test" else _TRAIN_DRAWS))
        k = check_count(options.get("instance", drawn), "options['instance']", 0)
        if which == "test":
            if k >= len(self.instances):
                size = len(self.instances)
                raise ValueError(f"options['instance'] must be < {size} (the {self.source} list), got {k}")
            instance = self.instances[k]
        else:
            instance = _train_instance(self.instances[k % len(self.instances)], k, self.factors)
        task = load_task(instance, self.split, self.replicate, self.n_obs, self.n_int, self.seal)
        view = arena_view(task, self.width, self.seal)
        where: dict[str, Any] = {"source": self.source, "split": which}
        if self.seal is None:
            where.update(index=k, unit=instance.unit)
        else:  # the instance's position and unit would let an agent look it up
            where["id"] = opaque_id(view.data, view.mask)
        where.update(data_split=self.split, replicate=self.replicate, n=self.n, n_variables=view.size, d=self.width)
        return view, where

    def describe(self, view: ArenaView) -> list[dict[str, str]]:
        """Name, unit and definition of every variable slot (padding slots say so)."""
        out = [dict(view.task.variables[c], slot=variable_name(j)) for j, c in enumerate(view.columns.tolist())]
        for entry in out:
            entry["name"] = entry["name"] or entry["slot"]
        out += [{"slot": variable_name(j), "name": "padding", "unit": "", "definition": "not a variable"}
                for j in range(view.size, view.width)]
        return out


def _audit_summary(audit: AuditResult | None) -> dict[str, Any] | None:
    """Counts of the audit's failures by check, without the offending items (they name truth pairs)."""
    if audit is None:
        return None
    counts: Counter[str] = Counter()
    for failure in audit.failures:
        counts[failure.check] += max(len(failure.items), 1)
    return {"passed": audit.passed, "n_failures": len(audit.failures), "checks": dict(counts)}


def _final_extras(view: ArenaView, submitted: np.ndarray | None, seal: Seal | None) -> dict[str, Any]:
    """Truth-derived entries of the final info (``oriented_graph`` None without a valid submission)."""
    audit = view.task.audit
    return {
        "unit": view.task.instance.unit,
        "seal": None if seal is None else seal.fingerprint,
        "true_adjacency": view.truth.copy(),
        "oriented_graph": None if submitted is None else orient_randomly(submitted, view.task.dataset.file_seed),
        "orient_seed": view.task.dataset.file_seed,
        "columns": view.columns.tolist(),
        "factors": dict(view.task.factors),
        "interventional_audit_details": None if audit is None else audit.to_dict(),
    }


_ARGUMENTS_DOC = """
    | Parameter            | Default  | Description |
    |----------------------|----------|-------------|
    | ``source``           | ``"synthetic"`` | ``"synthetic"``, ``"formula"``, ``"semantic"`` or ``"real"`` |
    | ``d``                | None     | synthetic: dimension in {10, 20, 30, 50, 100} (None: 10); other sources: variable slots, instances with more variables are left out (None: the largest instance: formula 17, semantic 18, real 37) |
    | ``split``            | ``"obs"`` | ``"obs"`` or ``"obs+int"`` |
    | ``factors``          | None     | synthetic only: filter of the pool, keys of ``FACTOR_VOCABULARIES`` |
    | ``replicate``        | 0        | replicate index of the split (paper: 0..4) |
    | ``n_obs``, ``n_int`` | None     | rows (None: 1000 / 0 for obs, 800 / 200 for obs+int) |
    | ``describe_variables`` | False  | put names, units and definitions of the variables in the reset info |
    | ``render_mode``      | None     | ``"ansi"`` or ``"rgb_array"`` |
    | ``seal``             | None     | a :class:`~causal_gym.seal.Seal` (or its secret) keying the SCM seeds, protocol seeds and column orders; None reads ``CAUSAL_GYM_SEAL`` (unset: open); under a seal the reset info has an opaque ``"id"`` instead of the index and unit. Grounded and real structures are public (cards, bnlearn): a seal re-randomises their sampling, not their graphs |
"""


# ---------------------------------------------------------------------------------------------
# submit mode
# ---------------------------------------------------------------------------------------------


class CausalArenaEnv(gym.Env):
    """CausalArena, submit mode: read one exported split, answer with a directed graph in one step.

    ## Description

    Each episode is one instance of the arena (module :mod:`causal_gym.envs.arena.env` lists the
    instances per source): a split of an executable SCM -- synthetic factor-grid SCM, formula-
    grounded or semantic scenario, semi-synthetic network -- or the Sachs table, sampled under
    the paper's protocol (observational, or 800 observational + 200 interventional rows with an
    intervention mask). The agent returns the causal graph over the variables.

    ## Action Space

    ``MultiBinary((d, d))``: ``A[i, j] = 1, A[j, i] = 0`` is ``Xi -> Xj``; ``A[i, j] = A[j, i] = 1``
    is an undirected edge, oriented for scoring along a random node order drawn from the split's
    fixed per-file seed (so the same answer always gets the same score). The diagonal must be 0.
    An action that is not a 0/1 ``(d, d)`` matrix without self-loops, or whose directed edges form
    a cycle, is invalid: the episode ends with reward 0, ``info["status"] == "invalid"`` and
    ``info["error"]``.

    ## Observation Space

    | Key           | Space                               | Meaning |
    |---------------|-------------------------------------|---------|
    | ``data``      | ``Box(-inf, inf, (n, d), float64)`` | the rows (padding columns 0) |
    | ``mask``      | ``MultiBinary((n, d))``             | 1 where a row intervenes on a variable (all 0 for ``obs``) |
    | ``variables`` | ``MultiBinary(d)``                  | 1 for a real variable, 0 for a padding slot |

    Columns are in a fixed random order per instance; rows are as exported (shuffled).

    ## Rewards

    The directed-edge F1 of the (oriented) submission against the true DAG.

    ## Starting State

    ``reset(seed=, options=)``: ``{"instance": k}`` picks entry ``k`` of the instance list,
    otherwise ``self.np_random`` draws one; ``{"split": "train"}`` (synthetic) streams fresh SCMs.
    The info holds ``"instance"`` (source, index, unit, sizes), ``"interventional_audit"`` (for
    ``obs+int``: passed, failure counts per check) and, with ``describe_variables``,
    ``"variables"``.

    ## Episode End

    After the one step (``terminated=True``). The final info holds ``"scores"`` (every metric of
    :data:`causal_gym.envs.arena.scoring.METRICS`; all None for an invalid action),
    ``"status"`` (``"ok"`` or ``"invalid"``), ``"error"``, ``"submitted_graph"``,
    ``"oriented_graph"``, ``"orient_seed"``, ``"true_adjacency"``, ``"columns"`` (view slot ->
    SCM variable), ``"factors"`` and ``"interventional_audit_details"``. Nothing derived from
    the truth appears before that.

    ## Arguments
    {arguments}
    ## Vectorized environment

    ``gym.make_vec("CausalArena-synthetic-v0", num_envs=4)``; every episode is one step.

    ## Version History

    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        source: str = "synthetic",
        d: int | None = None,
        split: str = "obs",
        factors: Mapping[str, Any] | None = None,
        replicate: int = 0,
        n_obs: int | None = None,
        n_int: int | None = None,
        describe_variables: bool = False,
        render_mode: str | None = None,
        seal: Seal | str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if not isinstance(describe_variables, bool):
            raise ValueError(f"describe_variables must be True or False, got {describe_variables!r}")
        self.arena = ArenaSource(source, d, split, factors, replicate, n_obs, n_int, seal)
        self.describe_variables = describe_variables
        self.render_mode = render_mode
        width, n = self.arena.width, self.arena.n
        self.d = width
        self.observation_space = spaces.Dict({
            "data": spaces.Box(-np.inf, np.inf, (n, width), dtype=np.float64),
            "mask": spaces.MultiBinary((n, width)),
            "variables": spaces.MultiBinary(width),
        })
        self.action_space = spaces.MultiBinary((width, width))
        self.audit_failures: Counter[str] = Counter()
        self._view: ArenaView | None = None
        self._done = False
        self._submitted: np.ndarray | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode (see *Starting State*)."""
        super().reset(seed=seed)
        self._view, where = self.arena.draw(self.np_random, dict(options or {}))
        self._done, self._submitted = False, None
        info = _reset_info(self.arena, self._view, where, self.describe_variables, self.audit_failures)
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Score the submitted graph; the episode ends.

        Raises
        ------
        RuntimeError
            If called before ``reset`` or after the episode ended (loop errors, not agent input).
        """
        if self._view is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode has ended; call reset() to start a new one")
        self._done = True
        try:
            graph = check_adjacency(np.asarray(action), "the action", d=self.d)
            cycle = directed_cycle(graph)
            if cycle is not None:
                raise ValueError("the action's directed edges form a cycle (" + " -> ".join(map(variable_name, cycle))
                                 + "); a causal graph answer must be acyclic")
        except (ValueError, TypeError) as err:
            info = {"status": "invalid", "error": str(err), "scores": dict.fromkeys(METRICS),
                    "submitted_graph": None, **_final_extras(self._view, None, self.arena.seal)}
            return self._observation(), 0.0, True, False, info
        self._submitted = graph
        scores = score_submission(self._view, graph)
        info = {"status": "ok", "error": None, "scores": scores, "submitted_graph": graph.copy(),
                **_final_extras(self._view, graph, self.arena.seal)}
        return self._observation(), float(scores["f1"]), True, False, info

    def task_description(self) -> str:
        """The task statement (for agents that read text)."""
        return (
            f"CausalArena ({self.arena.source} source, {self.arena.split} split): {self.arena.n} rows of up to "
            f"{self.d} variables; 'variables' flags the real ones and 'mask' the intervened cells. Answer with one "
            "(d, d) 0/1 adjacency matrix: A[i, j] = 1 and A[j, i] = 0 for Xi -> Xj, both 1 for an undirected edge "
            "(oriented at random with the dataset's fixed seed before scoring). The reward is the directed-edge F1."
        )

    def render(self) -> str | np.ndarray | None:
        """The instance and the submitted graph as text (``"ansi"``) or a drawing (``"rgb_array"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self._view is None:
            raise RuntimeError("call reset() before render()")
        graph = self._submitted if self._submitted is not None else np.zeros((self.d, self.d), dtype=np.int8)
        if self.render_mode == "rgb_array":
            return render_rgb(graph)
        state = "submitted" if self._submitted is not None else "nothing submitted yet"
        return (f"{self._view.task.instance.unit} ({self.arena.split}): {self.arena.n} rows x {self._view.size} "
                f"variables; {state}\n{render_ansi(graph)}\n")

    def _observation(self) -> dict[str, np.ndarray]:
        view = self._view
        return {"data": view.data.copy(), "mask": view.mask.copy(), "variables": view.variables.copy()}


CausalArenaEnv.__doc__ = CausalArenaEnv.__doc__.replace("{arguments}", _ARGUMENTS_DOC)


def _reset_info(
    arena: ArenaSource, view: ArenaView, where: dict[str, Any], describe: bool, totals: Counter[str]
) -> dict[str, Any]:
    """The reset info of both modes; adds the audit's failures to the env's running totals."""
    summary = _audit_summary(view.task.audit)
    if summary is not None:
        totals.update(summary["checks"])
    info: dict[str, Any] = {"instance": where, "interventional_audit": summary}
    if describe:
        info["variables"] = arena.describe(view)
    return info


# ---------------------------------------------------------------------------------------------
# tools mode
# ---------------------------------------------------------------------------------------------


def _check_budgets(budgets: Mapping[str, Any] | None) -> dict[str, Any]:
    budgets = {} if budgets is None else budgets
    if not isinstance(budgets, Mapping) or set(budgets) - set(DEFAULT_TOOL_BUDGETS):
        raise ValueError(f"budgets must be a dict with keys among {list(DEFAULT_TOOL_BUDGETS)}, got {budgets!r}")
    merged = {**DEFAULT_TOOL_BUDGETS, **budgets}
    merged["turns"] = check_count(merged["turns"], "budgets['turns']", 1)
    for name in ("tests", "algorithm_calls", "wall_time"):
        if merged[name] is not None:
            merged[name] = check_real(merged[name], f"budgets[{name!r}]", 0.0, strict=name == "wall_time")
    return merged


def _check_menu(menu: Sequence[str]) -> tuple[str, ...]:
    from causal_gym.discovery import methods

    if isinstance(menu, str) or not isinstance(menu, Sequence):
        raise ValueError(f"menu must be a sequence of method names, got {menu!r}")
    chosen = tuple(check_choice(m, methods(), "menu entry") for m in menu)
    if len(chosen) != len(ALGORITHM_SLOTS) or len(set(chosen)) != len(chosen):
        raise ValueError(f"menu must name {len(ALGORITHM_SLOTS)} distinct methods (labels A..G), got {list(menu)}")
    return chosen


def menu_graph(dataset: ArenaDataset, method: str) -> np.ndarray:
    """``method``'s graph on ``dataset`` (mask passed to interventional methods), cached on disk by content."""
    from causal_gym.discovery import run, supports_interventions
    from causal_gym.stats.kci import single_threaded_blas

    mask = dataset.mask if dataset.n_interventional and supports_interventions(method) else None
    digest = hashlib.sha256(dataset.data.tobytes() + np.packbits(dataset.mask).tobytes()).hexdigest()
    key = {"what": "arena_menu", "version": _MENU_VERSION, "method": method, "data": digest,
           "shape": list(dataset.data.shape), "mask": mask is not None}

    def compute() -> dict[str, Any]:
        with single_threaded_blas():
            return {"graph": run(method, dataset.data, mask).graph}

    return np.asarray(_cache.cached(key, compute)["graph"], dtype=np.int8)


class CausalArenaToolEnv(DataTools, WorkingGraphEnv):
    """CausalArena, tools mode: find the graph of one exported split with the Heuresis evidence tools.

    ## Description

    The instance and its view are those of :class:`CausalArenaEnv` (same instance lists, column
    order, padding and scoring). The agent edits a working graph over ``X0 .. X{d-1}`` with the
    tools of :mod:`causal_gym.harness.data_tools`, whose computations are shared with Heuresis:

    | Tool                | Arguments               | Returns                                     | Cost |
    |---------------------|-------------------------|---------------------------------------------|------|
    | ``run_algorithm``   | ``algorithm`` (A..G)    | output graph of a masked menu entry         | 1 algorithm call |
    | ``ci_test``         | ``x, y, cond, test``    | verdict + strength grade                    | 1 test |
    | ``stability``       | ``x, y, cond, test``    | share of "independent" verdicts, subsamples | n_resamples tests |
    | ``summarize``       | --                      | marginal statistics, most correlated pairs  | -- |
    | ``fit_parents``     | ``x``, ``cond`` parents | out-of-fold R^2, graded residual diagnostics | -- |
    | ``probe_direction`` | ``x, y``                | graded additive-noise direction preference  | -- |
    | ``run_code``        | ``code``                | output of a numpy/scipy program (sandbox)   | -- |
    | ``set_edge``        | ``x, y, relation``      | edits the working graph                     | -- |
    | ``submit``          | ``edges`` (optional)    | ends the episode                            | -- |

    The menu (``menu``, default :data:`ARENA_MENU`: PC, GES, GIES, DirectLiNGAM, NOTEARS, DAGMA,
    RandomRegress) hides behind the labels A..G in an order drawn per episode and revealed in
    the final info; GIES gets the intervention mask on ``obs+int`` splits. Menu runs are cached
    on disk by data content. The data tools work on the real variables only (a padding slot in
    their arguments is an error) and see the rows sorted by regime: observational rows first,
    then each intervention regime as one block, as the first observation lists;
    ``run_code``'s ``X`` holds these rows and the real variables.

    ## Action Space

    As :class:`causal_gym.envs.heuresis.env.HeuresisEnv`: a ``Dict`` with ``"tool"``
    ``Discrete(9)`` (``set_edge, submit, run_algorithm, ci_test, stability, summarize,
    fit_parents, probe_direction, run_code``) and the argument fields ``x``, ``y``, ``relation``,
    ``edges``, ``cond``, ``algorithm``, ``test``, ``code``; LLM agents use :meth:`tool_specs` and
    :meth:`parse_tool_call`.

    ## Observation Space

    The :class:`~causal_gym.harness.WorkingGraphEnv` entries (``working_graph``, ``budgets_remaining``
    over turns, tests, algorithm_calls, wall_time, ``last_result`` ``Text(8000)``, ``last_ok``,
    ``phase``) plus ``intervention_mask`` ``MultiBinary((n, d))`` (rows sorted by regime, as the
    data tools see them) and ``variables`` ``MultiBinary(d)`` (0 for padding).

    ## Rewards

    0 on every step but the last, whose reward is the directed-edge F1 of the Meek-completed
    submitted graph after the seeded orientation of its undirected edges.

    ## Starting State

    As :class:`CausalArenaEnv`; the working graph starts empty (``start="empty"``) or complete
    and undirected over the real variables (``"complete"``). The label permutation and the
    resampling stream of ``stability`` are drawn from ``self.np_random``.

    ## Episode End

    As :class:`~causal_gym.harness.WorkingGraphEnv` (submit; budgets, then one last turn; five errors in a
    row). The final info holds ``"scores"`` (every metric of
    :data:`causal_gym.envs.arena.scoring.METRICS`), the truth-based entries of
    :class:`CausalArenaEnv`'s final info (``true_adjacency``, ``oriented_graph``, ``orient_seed``,
    ``columns``, ``factors``, ``interventional_audit_details``) and ``"algorithm_slots"`` (label ->
    method).

    ## Arguments
    {arguments}    | ``budgets``          | None     | overrides of :data:`DEFAULT_TOOL_BUDGETS` (turns, tests, algorithm_calls, wall_time) |
    | ``menu``             | ``ARENA_MENU`` | seven distinct method names of :func:`causal_gym.discovery.methods` |
    | ``start``            | ``"empty"`` | ``"empty"`` or ``"complete"`` starting graph |
    | ``n_resamples``      | 10       | subsamples of ``stability`` |
    | ``subsample``        | 0.8      | share of rows per ``stability`` subsample |
    | ``sandbox_limits``   | None     | :class:`~causal_gym.harness.SandboxLimits` of ``run_code`` |
    | ``sandbox``          | ``"auto"`` | ``run_code``'s backend: ``"auto"``, ``"bwrap"``, ``"unshare"`` or ``"process"`` (no OS isolation) |

    ## Version History

    * v0: initial release.
    """

    def __init__(
        self,
        source: str = "synthetic",
        d: int | None = None,
        split: str = "obs",
        factors: Mapping[str, Any] | None = None,
        replicate: int = 0,
        n_obs: int | None = None,
        n_int: int | None = None,
        describe_variables: bool = False,
        render_mode: str | None = None,
        seal: Seal | str | None = None,
        *,
        budgets: Mapping[str, Any] | None = None,
        menu: Sequence[str] = ARENA_MENU,
        start: str = "empty",
        n_resamples: int = 10,
        subsample: float = 0.8,
        sandbox_limits: SandboxLimits | None = None,
        sandbox: str = "auto",
    ) -> None:
        if not isinstance(describe_variables, bool):
            raise ValueError(f"describe_variables must be True or False, got {describe_variables!r}")
        self.arena = ArenaSource(source, d, split, factors, replicate, n_obs, n_int, seal)
        self.describe_variables = describe_variables
        self.budget_settings = _check_budgets(budgets)
        self.menu = _check_menu(menu)
        self.start = check_choice(start, ("empty", "complete"), "start")
        self.n_resamples = check_count(n_resamples, "n_resamples", 1)
        self.subsample = check_real(subsample, "subsample", 0.0, strict=True)
        if self.subsample >= 1:
            raise ValueError(f"subsample must be a share of the rows in (0, 1), got {subsample!r}")
        self.sandbox_limits, self.sandbox = check_sandbox_options(sandbox_limits, sandbox)
        self.audit_failures: Counter[str] = Counter()
        width = self.arena.width
        super().__init__(
            width,
            budget_names=("tests", "algorithm_calls"),
            max_turns=self.budget_settings["turns"],
            wall_time_limit=self.budget_settings["wall_time"],
            text_max_length=8000,
            extra_observation_spaces={
                "intervention_mask": spaces.MultiBinary((self.arena.n, width)),
                "variables": spaces.MultiBinary(width),
            },
            render_mode=render_mode,
        )

    # -- WorkingGraphEnv hooks -------------------------------------------------------------------------

    def _new_episode(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        permutation = rng.permutation(len(self.menu))
        resample_seed = int(rng.integers(2**63 - 1))
        self._view, self._where = self.arena.draw(rng, options)
        self._slots = dict(zip(ALGORITHM_SLOTS, (self.menu[k] for k in permutation)))
        self._resample_rng = np.random.default_rng(resample_seed)
        self._testers: dict[str, Any] = {}
        self._summary: tuple[str, dict[str, Any]] | None = None
        k = self._view.size
        rows = np.argsort(self._view.task.dataset.regime, kind="stable")
        self._data = np.ascontiguousarray(self._view.data[rows, :k])
        graph = np.zeros((self.d, self.d), dtype=np.int8)
        if self.start == "complete":
            graph[:k, :k] = 1 - np.eye(k, dtype=np.int8)
        self._start_text = self._layout_text(rows)
        return graph, {"intervention_mask": self._view.mask[rows].copy(), "variables": self._view.variables.copy()}

    def _budget_limits(self) -> dict[str, float | None]:
        return {"tests": self.budget_settings["tests"], "algorithm_calls": self.budget_settings["algorithm_calls"]}

    def _task_intro(self) -> str:
        arena = self.arena
        data = (
            f"{arena.n_obs} observational rows and {arena.n_int} rows under interventions (each row intervenes on one "
            "variable, resampling it uniformly over its observed 10-90% range; its descendants follow)"
            if arena.split == "obs+int" else f"{arena.n_obs} observational rows"
        )
        return (
            f"CausalArena ({arena.source} source): {data} of the variables X0..X{self.d - 1}, in random column "
            "order. The first observation says which variables are real (the rest are padding slots, isolated "
            "in the truth) and which rows are interventional. Find the causal DAG among the real variables. The "
            "score is the directed-edge F1 of the submitted graph after Meek completion, with remaining "
            "undirected edges oriented at random (a fixed seed per dataset)."
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on an instance (see *Starting State* in the class docstring)."""
        super().reset(seed=seed, options=options)
        self._last_text = self._start_text
        info = self._info()
        info.update(_reset_info(self.arena, self._view, self._where, self.describe_variables, self.audit_failures))
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play one tool call (as :meth:`WorkingGraphEnv.step`); the final info adds the truth-based entries."""
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            info.update(_final_extras(self._view, np.asarray(info["completed_graph"], dtype=np.int8), self.arena.seal))
            info["algorithm_slots"] = dict(self._slots)
        return observation, reward, terminated, truncated, info

    def _score(self, completed_graph: np.ndarray) -> dict[str, Any]:
        return score_submission(self._view, completed_graph)

    def _reward(self, scores: Mapping[str, Any]) -> float:
        return float(scores["f1"])

    # -- texts ---------------------------------------------------------------------------------

    def _layout_text(self, rows: np.ndarray) -> str:
        """The start message: the real variables and the row blocks of each regime."""
        view, k = self._view, self._view.size
        dataset = view.task.dataset
        position = np.argsort(view.columns)
        lines = [f"The data has {dataset.n} rows of {k} variables X0..X{k - 1}."]
        if k < self.d:
            lines[0] += f" X{k}..X{self.d - 1} are padding slots (no data; isolated in the truth)."
        regimes = dataset.regime[rows]
        for g, record in enumerate(dataset.meta["regimes"]):
            where = np.flatnonzero(regimes == g)
            if not where.size:
                continue
            span = f"rows {where[0]}-{where[-1]}"
            if g == 0:
                lines.append(f"- {span}: observational")
            else:
                kind = record["name"].split("(")[0]
                targets = ", ".join(variable_name(int(position[t])) for t in record["targets"])
                lines.append(f"- {span}: intervention on {targets} ({kind})")
        if self.describe_variables:
            lines.append("Variables:")
            lines += [f"- {v['slot']}: {v['name']} [{v['unit']}] {v['definition']}".rstrip()
                      for v in self.arena.describe(view)[:k]]
        start = "complete and undirected" if self.start == "complete" else "empty"
        lines.append(f"The working graph starts {start}.")
        return "\n".join(lines)

    # -- tools ---------------------------------------------------------------------------------

    def _refusal(self, *nodes: int) -> ToolResult | None:
        """An error result when a node is a padding slot, else None."""
        bad = [variable_name(v) for v in nodes if v >= self._view.size]
        if not bad:
            return None
        return ToolResult(f"error: {', '.join(bad)} {'is a padding slot' if len(bad) == 1 else 'are padding slots'}; "
                          f"the variables are X0..X{self._view.size - 1}", {"padding": bad}, ok=False)

    def _menu_graph(self, algorithm: str) -> np.ndarray:
        view = self._view
        found = menu_graph(view.task.dataset, algorithm)
        graph = np.zeros((self.d, self.d), dtype=np.int8)
        graph[: view.size, : view.size] = found[np.ix_(view.columns, view.columns)]
        return graph


CausalArenaToolEnv.__doc__ = CausalArenaToolEnv.__doc__.replace("{arguments}", _ARGUMENTS_DOC.rstrip("\n") + "\n")


def make_arena_env(
    mode: str = "submit", seal: Seal | str | None = None, **kwargs: Any
) -> CausalArenaEnv | CausalArenaToolEnv:
    """The CausalArena env of ``mode`` (``"submit"``: :class:`CausalArenaEnv`, ``"tools"``:
    :class:`CausalArenaToolEnv`) with ``kwargs``; the entry point of the registered ids.

    Examples
    --------
    >>> env = make_arena_env(source="formula", n_obs=200)
    >>> obs, info = env.reset(seed=0, options={"instance": 0})
    >>> obs["data"].shape, info["instance"]["unit"]
    ((200, 17), 'formula/gas_cylinder')
    """
    mode = check_choice(mode, MODES, "mode")
    return (CausalArenaEnv if mode == "submit" else CausalArenaToolEnv)(seal=seal, **kwargs)
