"""What a CausalArena env shows of a task, and how it scores an answer: shared by both envs.

:class:`ArenaSource` holds the arguments both envs take (source, ``d``, split, factors,
replicate, sizes, seal), lists the source's instances (:mod:`.catalogue`) and, at every
``reset``, draws one and loads its :class:`ArenaView`; :func:`score_submission` scores a graph in
the view's coordinates. The submit env (:mod:`.env`) and the tool env (:mod:`.tool_env`) differ
only in how the agent answers.

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
At every ``reset`` of an ``obs+int`` split, :func:`~.catalogue.audit_split` (run by :func:`~.catalogue.load_task`) replays each interventional row
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

import os
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_gym._validation import (
    check_adjacency,
    check_choice,
    check_count,
    check_instance_option,
    check_reset_options,
)
from causal_gym.envs.arena.audits import AuditResult
from causal_gym.envs.arena.card_pack import check_sealable, load_card_pack
from causal_gym.envs.arena.catalogue import (
    DATA_SPLITS,
    DEFAULT_SIZES,
    INSTANCE_SPLITS,
    SOURCES,
    ArenaTask,
    check_factors,
    default_width,
    instance_list,
    load_task,
    train_instance,
)
from causal_gym.envs.arena.scoring import orient_randomly, score_graph
from causal_gym.harness.working_graph import variable_name
from causal_gym.seal import Seal, keyed_entropy, opaque_id, resolve_seal

__all__ = [
    "ARGUMENTS_DOC",
    "ArenaView",
    "ArenaSource",
    "arena_view",
    "score_submission",
    "reset_info",
    "final_extras",
]

_VIEW_SEED = 20_250_613
_TRAIN_DRAWS = 2**31 - 1  # train-stream indices a seed can draw

ARGUMENTS_DOC = """
    | Parameter            | Default  | Description |
    |----------------------|----------|-------------|
    | ``source``           | ``"synthetic"`` | ``"synthetic"``, ``"formula"``, ``"semantic"`` or ``"real"`` |
    | ``d``                | None     | synthetic: dimension in {10, 20, 30, 50, 100} (None: 10); other sources: variable slots, instances with more variables are left out (None: the largest instance: formula 25, semantic 20, real 37) |
    | ``split``            | ``"obs"`` | ``"obs"`` or ``"obs+int"`` |
    | ``factors``          | None     | synthetic only: filter of the pool, keys of ``FACTOR_VOCABULARIES`` |
    | ``replicate``        | 0        | replicate index of the split (paper: 0..4) |
    | ``n_obs``, ``n_int`` | None     | rows (None: 1000 / 0 for obs, 800 / 200 for obs+int) |
    | ``describe_variables`` | False  | the semantic view: names, units and definitions of the variables in the reset info (tools mode: also in the start message); the final info's ``view`` says ``"semantic"`` or ``"numeric"`` |
    | ``render_mode``      | None     | ``"ansi"`` or ``"rgb_array"`` |
    | ``seal``             | None     | a :class:`~causal_gym.seal.Seal` (or its secret) keying the SCM seeds, protocol seeds and column orders; None reads ``CAUSAL_GYM_SEAL`` (unset: open); under a seal the reset info has an opaque ``"id"`` instead of the index and unit. A seal cannot hide a public structure, so a sealed ``formula``, ``semantic`` or ``real`` source without ``cards`` is refused (:mod:`.card_pack`) |
    | ``cards``            | None     | formula and semantic: the path of a private card pack (a JSON file of cards outside the package, :mod:`.card_pack`) played instead of the public library; the only way to seal a grounded source |
"""
"""The Arguments table of both envs' docstrings (the tool env adds its own rows)."""


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
    shd = scores["shd"]  # always an int; the dict's type allows None for other metrics
    scores["nshd"] = shd / (k * (k - 1)) if k > 1 and shd is not None else None
    return scores


class ArenaSource:
    """The arguments shared by both envs, validated, with the instance list and the per-reset draw.

    Parameters are those of :class:`~causal_gym.envs.arena.env.CausalArenaEnv` (see there).
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
        cards: str | os.PathLike[str] | None = None,
    ) -> None:
        self.source = check_choice(source, SOURCES, "source")
        self.split = check_choice(split, DATA_SPLITS, "split")
        self.factors = check_factors(factors)
        self.seal = resolve_seal(seal)
        self.pack = None if cards is None else load_card_pack(cards)
        check_sealable(self.source, self.seal is not None, self.pack)
        self.width = default_width(self.source, self.split, self.pack) if d is None else check_count(d, "d", 2)
        self.instances = instance_list(self.source, self.width, self.split, factors, self.seal, self.pack)
        self.replicate = check_count(replicate, "replicate", 0)
        default_obs, default_int = DEFAULT_SIZES[self.split]
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

    def check_options(self, options: Any) -> tuple[str, int | None]:
        """Validate ``reset`` options without building anything: ``(split, index)``, the index None
        when none is named.

        Raises
        ------
        ValueError
            Options that are not a dict, unknown keys, an unknown split, a train split of a source
            without a stream, or an index beyond the test list.
        """
        options = check_reset_options(options, ("split", "instance"))
        which = check_choice(options.get("split", "test"), INSTANCE_SPLITS, "options['split']")
        if which == "train" and self.source != "synthetic":
            raise ValueError(f"only the synthetic source streams train instances; {self.source!r} has a test list")
        if "instance" not in options:
            return which, None
        size = len(self.instances) if which == "test" else None
        return which, check_instance_option(options["instance"], size, f"the {self.source} list")

    def draw(self, rng: np.random.Generator, options: Any) -> tuple[ArenaView, dict[str, Any]]:
        """The view of the instance ``options`` name (or ``rng`` draws) and the reset info's
        ``"instance"`` entry (which entry it is, or under a seal an opaque id; nothing about the truth)."""
        which, chosen = self.check_options(options)
        drawn = int(rng.integers(len(self.instances) if which == "test" else _TRAIN_DRAWS))
        k = drawn if chosen is None else chosen
        if which == "test":
            instance = self.instances[k]
        else:
            instance = train_instance(self.instances[k % len(self.instances)], k, self.factors)
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


def final_extras(view: ArenaView, submitted: np.ndarray | None, seal: Seal | None, described: bool) -> dict[str, Any]:
    """Truth-derived entries of the final info (``oriented_graph`` None without a valid submission) and
    the view played: ``"semantic"`` when the variables were described (``described``), else ``"numeric"``
    (the paper's protocol), so results of the two views are never pooled by mistake."""
    audit = view.task.audit
    return {
        "view": "semantic" if described else "numeric",
        "unit": view.task.instance.unit,
        "seal": None if seal is None else seal.fingerprint,
        "true_adjacency": view.truth.copy(),
        "oriented_graph": None if submitted is None else orient_randomly(submitted, view.task.dataset.file_seed),
        "orient_seed": view.task.dataset.file_seed,
        "columns": view.columns.tolist(),
        "factors": dict(view.task.factors),
        "interventional_audit_details": None if audit is None else audit.to_dict(),
    }


def reset_info(
    arena: ArenaSource, view: ArenaView, where: dict[str, Any], describe: bool, totals: Counter[str]
) -> dict[str, Any]:
    """The reset info of both envs; adds the audit's failures to the env's running totals."""
    summary = _audit_summary(view.task.audit)
    if summary is not None:
        totals.update(summary["checks"])
    info: dict[str, Any] = {"instance": where, "interventional_audit": summary}
    if describe:
        info["variables"] = arena.describe(view)
    return info
