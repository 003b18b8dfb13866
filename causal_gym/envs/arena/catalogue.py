"""The CausalArena task catalogue: the instances of each source, and how one is loaded.

An *instance* (:class:`ArenaInstance`) is one entry of a source's list; :func:`load_task` builds
its SCM, samples the split the env plays and audits it (:class:`ArenaTask`). What an env shows of
a task and how it scores an answer is :mod:`.source`; the envs are :mod:`.env` (submit) and
:mod:`.tool_env` (tools).

Instance lists (``options={"instance": k}`` picks entry ``k``)
---------------------------------------------------------------
===============  ===================================================================================
source           instances, in order
===============  ===================================================================================
``synthetic``    the pool configurations (:mod:`.pool`) of dimension ``d`` (200 per ``d``: 10 graph
                 families x 20, family-major) that match ``factors``; protocol seed = pool index
``formula``      the formula-grounded cards (:data:`~.scenarios.formula.FORMULA_SCENARIOS`, 30, in
                 that order) with at most ``d`` variables
``semantic``     the semantic cards (:data:`~.scenarios.semantic.SEMANTIC_SCENARIOS`, 30, in that order)
``formula`` or   with a private card pack (``cards=PATH``, :mod:`.card_pack`): the pack's cards, in
``semantic``     file order, instead of the public library
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
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym import _cache
from causal_gym._validation import check_choice, check_count
from causal_gym.envs.arena.audits import AuditResult, audit_interventional
from causal_gym.envs.arena.card_pack import CardPack, public_cards
from causal_gym.envs.arena.families import MECHANISM_TAGS, NOISE_TAGS, ROOT_FAMILIES
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
from causal_gym.envs.arena.protocol import (
    ArenaDataset,
    ArenaProtocol,
    SamplesFromSCM,
    counterfactual_rows,
    sample_split,
)
from causal_gym.envs.arena.synthetic import ROOT_DEPENDENCIES, STRESSORS, ArenaConfig, GenerationError
from causal_gym.seal import Seal, keyed_entropy

__all__ = [
    "SOURCES",
    "DATA_SPLITS",
    "INSTANCE_SPLITS",
    "REAL_NETWORKS",
    "FACTOR_VOCABULARIES",
    "TRAIN_SEED",
    "DEFAULT_SIZES",
    "ArenaInstance",
    "ArenaTask",
    "check_factors",
    "pool_tags",
    "default_width",
    "instance_list",
    "train_instance",
    "audit_split",
    "load_task",
]

SOURCES = ("synthetic", "formula", "semantic", "real")
"""The four SCM families of the arena."""

DATA_SPLITS = ("obs", "obs+int")
"""The protocol splits (the ``split`` argument)."""

INSTANCE_SPLITS = ("test", "train")
"""Instance splits of ``reset(options={"split": ...})``: the fixed lists, or fresh synthetic SCMs."""

REAL_NETWORKS: Mapping[str, int] = MappingProxyType({"asia": 8, "sachs": 11, "child": 20, "insurance": 27, "alarm": 37})
"""bnlearn structures of the ``real`` source and their sizes (literal so that listing instances
reads no file; :func:`load_task` checks them)."""

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

TRAIN_SEED = 20_250_612
"""Master seed of the synthetic train stream (the pool uses 20_250_611)."""

DEFAULT_SIZES: Mapping[str, tuple[int, int]] = MappingProxyType({"obs": (1000, 0), "obs+int": (800, 200)})
"""Observational and interventional rows of a split when ``n_obs`` / ``n_int`` are not given."""

_TAG_FACTORS = {"root_dependency": "root_dependency", "mechanism": "active_mechanisms",
                "noise": "active_noises", "root": "active_roots"}
_POOL_TAGS_VERSION = 1


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
    pack : CardPack or None
        Cards of a private pack: the pack holding the card (None: the public library).
    """

    source: str
    kind: str
    key: int | str
    unit: str
    size: int
    template: int = -1
    requirements: tuple[tuple[str, tuple[str, ...]], ...] = ()
    pack: CardPack | None = None

    @property
    def protocol_seed(self) -> int:
        """The seed of :func:`~.protocol.sample_split`: the pool index, else ``crc32(unit)``."""
        return int(self.key) if self.kind == "pool" else zlib.crc32(self.unit.encode())


def check_factors(factors: Mapping[str, Any] | None) -> dict[str, frozenset[str]]:
    """The ``factors`` filter, validated against :data:`FACTOR_VOCABULARIES`: factor -> allowed values."""
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


def default_width(source: str, split: str, pack: CardPack | None = None) -> int:
    """The default number of variable slots ``d`` of a source (or of a private ``pack``): its largest
    instance (10 for synthetic)."""
    source = check_choice(source, SOURCES, "source")
    if source == "synthetic":
        return 10
    return max(instance.size for instance in instance_list(source, None, split, pack=pack))


def instance_list(
    source: str,
    d: int | None,
    split: str,
    factors: Mapping[str, Any] | None = None,
    seal: Seal | None = None,
    pack: CardPack | None = None,
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
    pack : CardPack, optional
        Formula and semantic only: the private cards listed instead of the public library.

    Raises
    ------
    ValueError
        On a bad argument or when no instance is left.
    """
    from causal_gym.envs.arena.pool import DIMENSIONS, pool_indices

    source = check_choice(source, SOURCES, "source")
    split = check_choice(split, DATA_SPLITS, "split")
    filters = check_factors(factors)
    if filters and source != "synthetic":
        raise ValueError("factors filter the synthetic pool only")
    if pack is not None and source not in ("formula", "semantic"):
        raise ValueError(f"a card pack holds formula or semantic cards; source {source!r} takes none")
    if source == "synthetic":
        if d is None or isinstance(d, bool) or d not in DIMENSIONS:
            raise ValueError(f"synthetic d must be one of {DIMENSIONS}, got {d!r}")
        chosen = [k for k in pool_indices(d=d) if _schedule_match(k, filters)]
        if set(filters) & set(_TAG_FACTORS):
            chosen = [k for k in chosen if _tags_match(pool_tags(k, seal), filters)]
        found = tuple(ArenaInstance(source, "pool", k, f"synthetic/pool-{k:04d}", d) for k in chosen)
    elif source in ("formula", "semantic"):
        cards = public_cards(source) if pack is None else pack.cards
        found = tuple(
            ArenaInstance(source, source, name, f"{source}/{name}", len(card["variables"]), pack=pack)
            for name, card in cards.items()
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


def train_instance(template: ArenaInstance, k: int, filters: Mapping[str, frozenset[str]]) -> ArenaInstance:
    """Train-stream instance ``k``: the schedule of test instance ``template``, the generated-tag filters kept."""
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


def audit_split(scm: SamplesFromSCM, dataset: ArenaDataset) -> AuditResult:
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
def _compiled_public(source: str, name: str) -> Any:
    from causal_gym.envs.arena.grounded import compile_scenario

    return compile_scenario(public_cards(source)[name])


def _compiled(instance: ArenaInstance) -> Any:
    """The compiled card of a formula or semantic instance (its pack's, or the public library's)."""
    name = str(instance.key)
    return _compiled_public(instance.source, name) if instance.pack is None else instance.pack.compiled(name)


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
        compiled = _compiled(instance)
        scm = compiled.scm
        factors = {"domain": compiled.metadata["domain"], "scenario": instance.key}
        if instance.pack is not None:
            factors["card_pack"] = instance.pack.digest
        variables = _card_variables(compiled.metadata)
    labels = {k: v for k, v in factors.items() if isinstance(v, str)}
    dataset = sample_split(scm, ArenaProtocol(split, n_obs=n_obs, n_int=n_int), seed=seed,
                           replicate=replicate, meta={"unit": instance.unit, "factors": labels})
    audit = audit_split(scm, dataset) if split == "obs+int" else None
    return ArenaTask(instance, dataset, scm, variables, factors, audit)
