"""CausalArena's sampling protocol: matched observational and interventional splits of one SCM.

Works on any object with the causal_gym SCM interface: ``d``, ``graph`` (DAG adjacency) and
``sample(n, rng, interventions)`` (:class:`causal_gym.scm.SCM` and the arena generators).

Main splits (Appendix B.1)
--------------------------
- ``"obs"``: 1,000 observational rows.
- ``"obs+int"``: 800 observational rows and 200 interventional rows. Each interventional row has
  one target from the SCM's target pool, assigned in balanced fashion (per-target counts differ
  by at most 1), and the target is hard do-resampled: ``X_t ~ U[q10_t, q90_t]`` per row, where
  the quantiles are the empirical 10th and 90th percentiles of ``X_t`` over the split's own
  observational rows; descendants are recomputed by the SCM. Rows are shipped shuffled with a
  binary ``(n, d)`` intervention mask, the targets of every row and a regime label.

Target pool (Appendix A.1, "Interventions")
-------------------------------------------
Each SCM has one target pool, drawn uniformly without replacement from all nodes (or from the
non-root "structural" nodes when a protocol asks for them), of a size drawn uniformly from a
range that grows with ``d``: 2-4 targets for ``d = 10``, 3-6 for 20, 4-8 for 30, 5-12 for 50 and
8-20 for 100. For other ``d`` (our extension) the bounds are interpolated linearly between those
rows and rounded; below 10 they are ``round(0.2 d)``-``round(0.4 d)`` (at least 1) and above 100
``round(0.08 d)``-``round(0.2 d)``, matching the table at both ends. A pool never exceeds the
eligible nodes and holds at least as many targets as a row needs.

Intervention-protocol suite (Appendix A.2)
------------------------------------------
=================== =======  =======  =========  ==================================================
protocol            n_obs    n_int    per row    interventions
=================== =======  =======  =========  ==================================================
``obs+int``         800      200      1          hard resampling on U[q10, q90] (the "default")
``fixed_setpoint``  800      200      1          ``X_t`` set to its q20, q50 or q80 (chosen per row)
                                                 with uniform jitter of +-1% of its IQR
``parameter_shift`` 800      200      1          structural targets only; per target either its
                                                 parent effects scaled by a factor from
                                                 U[0.6, 0.85] or U[1.15, 1.6]
                                                 (:class:`~causal_gym.scm.ParameterShift`) or its
                                                 bias shifted by +-U[0.3, 0.8] IQR
                                                 (:class:`~causal_gym.scm.Shift`)
``high_fraction``   200      800      1          as ``obs+int``
``multi_target``    800      200      2-4        hard resampling of each selected target
``dense_mixed``     200      800      2-4        structural targets; each (row, target) slot gets
                                                 resampling, a fixed setpoint or the target's
                                                 parameter shift, in balanced proportions
=================== =======  =======  =========  ==================================================

The paper names three mechanism changes (scale parent effects, shift a bias/threshold, change a
nonlinear strength); our SCMs expose two hooks, so "scale" covers both the parent-effect and the
nonlinear-strength change (``ParameterShift`` multiplies the outer weights), and "bias" is an
additive shift. Scale and bias alternate over a permutation of the pool; a target whose mechanism
has no ``scale_params`` hook (``ParameterShift`` raises ValueError on a 2-row probe) gets the bias
shift. A parameter shift is a property of the regime: one change per target, shared by all its
rows. The sample-size suite (``sample_size_split``) draws observational splits with
``n`` in :data:`SAMPLE_SIZES` (the paper's list, d = 30 representative SCMs chosen by the caller).

Seeds and replicates
--------------------
Everything is a function of the protocol ``seed`` (an int the caller assigns to the SCM, e.g.
its configuration index) and the replicate ``r`` (``0 .. 4`` for the paper's 5 replicates), via
``numpy.random.SeedSequence(seed, spawn_key=key)``:

=================================  ================================================================
spawn key                          draws
=================================  ================================================================
``(0, s)``                         the target pool (``s = 1`` structural-only, else 0); shared by
                                   all replicates and protocols of the SCM
``(1, r, n_obs + n_int)``          the observational draw of ``n_obs + n_int`` rows; the split keeps
                                   its first ``n_obs``, so the ``obs`` and ``obs+int`` splits of a
                                   replicate share their first 800 observational rows
``(2, r, crc32(protocol name))``   row design: targets per row, kinds, setpoints, parameter
                                   shifts, then the final row shuffle
``(3, r, crc32(name), g)``         the rows of interventional regime ``g`` (regimes in sorted order)
=================================  ================================================================

A regime is one intervention set; its rows are one ``scm.sample`` call, so rows are sampled per
regime and concatenated before the shuffle. ``meta["regimes"][k]`` records regime ``k`` (0 is
observational): its targets, interventions (``to_dict`` form), row count and spawn key, so that
``scm.sample(n_rows, SeedSequence(seed, spawn_key=key))`` replays its observational counterpart
with the same noise (the causal_gym SCM draws all noise before intervention values).
``meta["row_order"]`` is the shuffle itself: shipped row ``i`` is row ``row_order[i]`` of the
concatenation (observational rows, then the regimes in order), so :func:`counterfactual_rows`
aligns every replayed row with the row it shipped as -- what
:func:`~causal_gym.envs.arena.audits.audit_interventional` compares against.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

import numpy as np

from causal_gym._files import write_atomic
from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_adjacency, check_count, check_range, check_real
from causal_gym.scm.interventions import HardDo, Intervention, ParameterShift, Shift

__all__ = [
    "SamplesFromSCM",
    "ArenaProtocol",
    "ArenaDataset",
    "PROTOCOLS",
    "MAIN_SPLITS",
    "INTERVENTION_SUITE",
    "SAMPLE_SIZES",
    "N_REPLICATES",
    "target_pool_size_range",
    "draw_target_pool",
    "sample_split",
    "sample_replicates",
    "intervention_suite",
    "sample_size_split",
    "counterfactual_rows",
]

N_REPLICATES = 5
"""Independent replicates per SCM in the main protocol (Appendix B.1)."""

SAMPLE_SIZES = (100, 200, 500, 1000, 2000, 5000, 10000)
"""Observational sample sizes of the sample-size suite (Appendix A.2, Table 18)."""

KINDS = ("resample", "setpoint", "parameter_shift")
"""Intervention kinds a protocol can mix."""

_POOL_D = (10, 20, 30, 50, 100)
_POOL_LOW = (2, 3, 4, 5, 8)
_POOL_HIGH = (4, 6, 8, 12, 20)


class SamplesFromSCM(TypingProtocol):
    """The SCM interface the protocol needs."""

    @property
    def d(self) -> int: ...

    @property
    def graph(self) -> np.ndarray: ...

    def sample(self, n: int, rng: object, interventions: Sequence[Intervention] = ()) -> np.ndarray: ...


@dataclass(frozen=True)
class ArenaProtocol:
    """One row of the protocol table in the module docstring.

    Attributes
    ----------
    name : str
        Protocol name (also seeds its row design).
    n_obs, n_int : int
        Observational and interventional rows.
    targets_per_row : (int, int)
        Inclusive range of targets per interventional row, drawn uniformly per row.
    kinds : tuple of str
        Intervention kinds mixed in balanced proportions over (row, target) slots.
    structural_only : bool
        Draw the pool from non-root nodes.
    quantiles : (float, float)
        Resampling range as quantiles of the observational rows.
    setpoints : tuple of float
        Quantiles a fixed setpoint chooses from (uniformly per row).
    setpoint_jitter : float
        Half-width of the uniform jitter around a setpoint, in IQRs (0: an exact constant).
    scale_factors : tuple of (float, float)
        Ranges a parameter-shift factor is drawn from (a range first, uniformly, then a value).
    bias_shift : (float, float)
        Range of the absolute bias shift, in IQRs; the sign is drawn uniformly.
    """

    name: str
    n_obs: int
    n_int: int = 0
    targets_per_row: tuple[int, int] = (1, 1)
    kinds: tuple[str, ...] = ("resample",)
    structural_only: bool = False
    quantiles: tuple[float, float] = (0.1, 0.9)
    setpoints: tuple[float, ...] = (0.2, 0.5, 0.8)
    setpoint_jitter: float = 0.01
    scale_factors: tuple[tuple[float, float], ...] = ((0.6, 0.85), (1.15, 1.6))
    bias_shift: tuple[float, float] = (0.3, 0.8)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"protocol name must be a non-empty string, got {self.name!r}")
        check_count(self.n_int, "n_int", minimum=0)
        check_count(self.n_obs, "n_obs", minimum=1)
        low, high = (check_count(k, "targets_per_row", 1) for k in self.targets_per_row)
        if low > high:
            raise ValueError(f"targets_per_row must satisfy low <= high, got {self.targets_per_row}")
        if not self.kinds or any(kind not in KINDS for kind in self.kinds) or len(set(self.kinds)) != len(self.kinds):
            raise ValueError(f"kinds must be distinct values from {KINDS}, got {self.kinds!r}")
        if "parameter_shift" in self.kinds and not self.structural_only:
            raise ValueError("parameter shifts change the dependence on parents: set structural_only=True")
        q_low, q_high = check_range(self.quantiles, "quantiles", minimum=0.0)
        if not q_low < q_high <= 1.0:
            raise ValueError(f"quantiles must satisfy 0 <= low < high <= 1, got {self.quantiles}")
        if not self.setpoints or any(not 0.0 <= check_real(q, "setpoints") <= 1.0 for q in self.setpoints):
            raise ValueError(f"setpoints must be quantiles in [0, 1], got {self.setpoints!r}")
        check_real(self.setpoint_jitter, "setpoint_jitter", 0.0)
        if not self.scale_factors:
            raise ValueError("scale_factors needs at least one range")
        for pair in self.scale_factors:
            check_range(pair, "scale_factors", minimum=0.0)
        check_range(self.bias_shift, "bias_shift", minimum=0.0)

    @property
    def interventional(self) -> bool:
        """Whether the split has interventional rows."""
        return self.n_int > 0

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (tuples as lists)."""
        return to_jsonable(dataclasses.asdict(self))


PROTOCOLS: dict[str, ArenaProtocol] = {
    p.name: p
    for p in (
        ArenaProtocol("obs", n_obs=1000),
        ArenaProtocol("obs+int", n_obs=800, n_int=200),
        ArenaProtocol("fixed_setpoint", n_obs=800, n_int=200, kinds=("setpoint",)),
        ArenaProtocol("parameter_shift", n_obs=800, n_int=200, kinds=("parameter_shift",), structural_only=True),
        ArenaProtocol("high_fraction", n_obs=200, n_int=800),
        ArenaProtocol("multi_target", n_obs=800, n_int=200, targets_per_row=(2, 4)),
        ArenaProtocol(
            "dense_mixed", n_obs=200, n_int=800, targets_per_row=(2, 4), kinds=KINDS, structural_only=True
        ),
    )
}
"""The main splits and the intervention-protocol suite, by name."""

MAIN_SPLITS = ("obs", "obs+int")
"""The two leaderboard splits."""

INTERVENTION_SUITE = ("obs+int", "fixed_setpoint", "parameter_shift", "high_fraction", "multi_target", "dense_mixed")
"""The intervention-protocol suite (Table 19); ``obs+int`` is its "default" row."""


# ---------------------------------------------------------------------------------------------
# the dataset record
# ---------------------------------------------------------------------------------------------


def _targets_from_mask(mask: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(np.flatnonzero(row).tolist()) for row in mask)


@dataclass(frozen=True, eq=False)
class ArenaDataset:
    """One exported split: data, intervention mask, per-row targets and regimes, truth, metadata.

    Arrays are read-only. Equality is identity; compare fields explicitly.

    Attributes
    ----------
    data : (n, d) float array
        The rows, shuffled.
    mask : (n, d) bool array
        ``mask[i, j]`` is True when node ``j`` is an intervention target in row ``i``.
    targets : tuple of tuple of int
        Targets of each row (empty for observational rows); must agree with ``mask``.
    regime : (n,) int array
        Index of the row's regime in ``meta["regimes"]`` (0 = observational).
    true_adjacency : (d, d) int8 array
        The SCM's DAG.
    meta : dict
        Plain-JSON metadata: protocol, seed, replicate, pool, target ranges, regimes, and the
        caller's keys (scoring reads ``"unit"``, the SCM id, and ``"factors"``, a dict of labels).
    """

    data: np.ndarray
    mask: np.ndarray
    targets: tuple[tuple[int, ...], ...]
    regime: np.ndarray
    true_adjacency: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        data = np.array(self.data)
        if data.ndim != 2 or data.dtype.kind != "f":
            raise ValueError(f"data must be a 2-D float array, got dtype {data.dtype} and shape {data.shape}")
        n, d = data.shape
        truth = check_adjacency(self.true_adjacency, "true_adjacency", d=d)
        mask = np.array(self.mask)
        if mask.shape != (n, d) or mask.dtype != bool:
            raise ValueError(f"mask must be a bool array of shape {(n, d)}, got {mask.dtype} {mask.shape}")
        regime = np.array(self.regime)
        if regime.shape != (n,) or regime.dtype.kind not in "iu" or (n and regime.min() < 0):
            raise ValueError(f"regime must hold one non-negative int per row, got {regime.dtype} {regime.shape}")
        targets = tuple(tuple(int(t) for t in row) for row in self.targets)
        if targets != _targets_from_mask(mask):
            raise ValueError("targets and mask disagree: each row's targets must be the mask's nonzero columns")
        for value in (data, mask, regime, truth):
            value.flags.writeable = False
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "regime", regime)
        object.__setattr__(self, "true_adjacency", truth)
        object.__setattr__(self, "meta", to_jsonable(dict(self.meta)))

    @property
    def n(self) -> int:
        """Number of rows."""
        return self.data.shape[0]

    @property
    def d(self) -> int:
        """Number of variables."""
        return self.data.shape[1]

    @property
    def n_interventional(self) -> int:
        """Rows with at least one target."""
        return int(self.mask.any(axis=1).sum())

    @property
    def target_family(self) -> list[tuple[int, ...]]:
        """Distinct target sets of the interventional rows, sorted (the family ``I`` minus the empty set)."""
        return sorted({row for row in self.targets if row})

    @property
    def file_seed(self) -> int:
        """A fixed per-file seed: CRC32 of the split's identity (unit, protocol, seed, replicate, shape).

        Scoring orients CPDAG outputs with it, so one file always gets the same orientation.
        """
        identity = [self.meta.get(key) for key in ("unit", "protocol", "seed", "replicate")] + [self.n, self.d]
        return zlib.crc32(json.dumps(identity, sort_keys=True).encode())

    def to_npz(self, path: str | Path) -> None:
        """Write a compressed ``.npz`` (no pickles; ``meta`` as JSON text), atomically: a link at ``path``
        is replaced, not written through (:func:`causal_gym._files.write_atomic`)."""
        width = max((len(row) for row in self.targets), default=0)
        padded = np.full((self.n, width), -1, dtype=np.int64)
        for i, row in enumerate(self.targets):
            padded[i, : len(row)] = row
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            data=self.data,
            mask=self.mask,
            targets=padded,
            regime=self.regime,
            true_adjacency=self.true_adjacency,
            meta=np.array(json.dumps(self.meta, allow_nan=False)),
        )
        path = Path(path)  # numpy's rule: a name without the .npz suffix gets it
        write_atomic(path if path.suffix == ".npz" else path.with_name(path.name + ".npz"), buffer.getvalue())

    @classmethod
    def from_npz(cls, path: str | Path) -> ArenaDataset:
        """Read a file written by :meth:`to_npz` (ValueError when a field is missing)."""
        with np.load(path, allow_pickle=False) as archive:
            missing = sorted({"data", "mask", "targets", "regime", "true_adjacency", "meta"} - set(archive.files))
            if missing:
                raise ValueError(f"{path} is not an ArenaDataset file: it lacks {missing}")
            targets = tuple(tuple(int(t) for t in row if t >= 0) for row in archive["targets"])
            return cls(
                data=archive["data"],
                mask=archive["mask"],
                targets=targets,
                regime=archive["regime"],
                true_adjacency=archive["true_adjacency"],
                meta=json.loads(str(archive["meta"])),
            )


# ---------------------------------------------------------------------------------------------
# target pools
# ---------------------------------------------------------------------------------------------


def target_pool_size_range(d: int) -> tuple[int, int]:
    """Inclusive range of the target-pool size for ``d`` variables (rule in the module docstring)."""
    d = check_count(d, "d")
    if d < _POOL_D[0]:
        low, high = round(0.2 * d), round(0.4 * d)
    elif d > _POOL_D[-1]:
        low, high = round(0.08 * d), round(0.2 * d)
    else:
        low, high = round(float(np.interp(d, _POOL_D, _POOL_LOW))), round(float(np.interp(d, _POOL_D, _POOL_HIGH)))
    low = min(max(low, 1), d)
    return low, min(max(high, low), d)


def _structural_nodes(graph: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.asarray(graph).any(axis=0))


def draw_target_pool(
    scm: SamplesFromSCM, seed: int, *, structural_only: bool = False, minimum: int = 1
) -> tuple[int, ...]:
    """The SCM's intervention target pool (sorted), drawn from ``SeedSequence(seed, spawn_key=(0, s))``.

    Parameters
    ----------
    scm : SCM-like
        Needs ``d`` and ``graph``.
    seed : int
        The SCM's protocol seed.
    structural_only : bool
        Draw from nodes with at least one parent.
    minimum : int
        Smallest acceptable pool (e.g. the fewest targets a row needs); the drawn size is raised
        to it when enough nodes are eligible.

    Raises
    ------
    ValueError
        If fewer than ``minimum`` nodes are eligible.
    """
    seed = check_count(seed, "seed", minimum=0)
    minimum = check_count(minimum, "minimum")
    eligible = _structural_nodes(scm.graph) if structural_only else np.arange(scm.d)
    if eligible.size < minimum:
        kind = "structural (non-root) " if structural_only else ""
        raise ValueError(f"the SCM has {eligible.size} {kind}nodes, fewer than the {minimum} targets required")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, int(structural_only))))
    low, high = target_pool_size_range(scm.d)
    size = min(max(int(rng.integers(low, high + 1)), minimum), eligible.size)
    return tuple(sorted(int(t) for t in rng.choice(eligible, size=size, replace=False)))


# ---------------------------------------------------------------------------------------------
# row design
# ---------------------------------------------------------------------------------------------

Slot = tuple[int, str, int]
"""One (row, target) entry of the design: target, kind, setpoint index (-1 when unused)."""


def _row_target_sets(
    n_int: int, pool: np.ndarray, per_row: tuple[int, int], rng: np.random.Generator
) -> list[np.ndarray]:
    """Targets of each interventional row: balanced single targets, or uniform random subsets."""
    k = pool.size
    low, high = per_row
    if high == 1:
        counts = np.full(k, n_int // k)
        counts[rng.permutation(k)[: n_int % k]] += 1
        return [np.array([t]) for t in np.repeat(pool, counts)]
    sizes = rng.integers(low, min(high, k) + 1, size=n_int)
    ranks = np.argsort(rng.random((n_int, k)), axis=1)
    return [np.sort(pool[ranks[i, :s]]) for i, s in enumerate(sizes)]


def _probe_parameter_shift(scm: SamplesFromSCM, target: int, factor: float) -> bool:
    """Whether the SCM accepts a ParameterShift on ``target`` (its mechanism has the hook)."""
    try:
        scm.sample(2, rng=0, interventions=[ParameterShift(target, factor=factor)])
    except ValueError:
        return False
    return True


def _parameter_shifts(
    scm: SamplesFromSCM, pool: np.ndarray, protocol: ArenaProtocol, iqr: np.ndarray, rng: np.random.Generator
) -> dict[int, Intervention]:
    """One mechanism change per pool target: scale (ParameterShift) and bias (Shift) alternating."""
    changes: dict[int, Intervention] = {}
    for rank, t in enumerate(rng.permutation(pool).tolist()):
        low, high = protocol.scale_factors[int(rng.integers(len(protocol.scale_factors)))]
        factor = float(rng.uniform(low, high))
        delta = float(rng.choice((-1.0, 1.0)) * rng.uniform(*protocol.bias_shift) * iqr[t])
        if rank % 2 == 0 and _probe_parameter_shift(scm, t, factor):
            changes[t] = ParameterShift(t, factor=factor)
        else:
            changes[t] = Shift(t, delta=delta)
    return changes


def _design(
    scm: SamplesFromSCM, protocol: ArenaProtocol, pool: np.ndarray, iqr: np.ndarray, rng: np.random.Generator
) -> tuple[list[tuple[Slot, ...]], dict[int, Intervention]]:
    """Per interventional row, its sorted slots; plus the per-target parameter shifts."""
    rows = _row_target_sets(protocol.n_int, pool, protocol.targets_per_row, rng)
    n_slots = sum(row.size for row in rows)
    kinds = rng.permutation(np.resize(np.arange(len(protocol.kinds)), n_slots))
    levels = rng.integers(len(protocol.setpoints), size=n_slots)
    shifts = _parameter_shifts(scm, pool, protocol, iqr, rng) if "parameter_shift" in protocol.kinds else {}
    design, k = [], 0
    for row in rows:
        slots = []
        for t in row.tolist():
            kind = protocol.kinds[kinds[k]]
            slots.append((t, kind, int(levels[k]) if kind == "setpoint" else -1))
            k += 1
        design.append(tuple(slots))
    return design, shifts


def _slot_intervention(
    slot: Slot, protocol: ArenaProtocol, quantiles: np.ndarray, setpoints: np.ndarray, iqr: np.ndarray,
    shifts: Mapping[int, Intervention],
) -> Intervention:
    t, kind, level = slot
    if kind == "parameter_shift":
        return shifts[t]
    if kind == "setpoint":
        half = protocol.setpoint_jitter * iqr[t]
        low, high = setpoints[level, t] - half, setpoints[level, t] + half
    else:
        low, high = quantiles[0, t], quantiles[1, t]
    # A degenerate range (a discrete node, or no jitter) becomes an exact value.
    if low < high:
        return HardDo(t, low=float(low), high=float(high))
    return HardDo(t, value=float(low))


def _slot_label(slot: Slot, protocol: ArenaProtocol, intervention: Intervention) -> str:
    t, kind, level = slot
    if kind == "setpoint":
        return f"setpoint({t}, q{round(100 * protocol.setpoints[level])})"
    if isinstance(intervention, ParameterShift):
        return f"scale({t}, x{intervention.factor:.3g})"
    if isinstance(intervention, Shift):
        return f"bias({t}, {intervention.delta:+.3g})"
    return f"resample({t})"


# ---------------------------------------------------------------------------------------------
# splits
# ---------------------------------------------------------------------------------------------


def _protocol(protocol: str | ArenaProtocol) -> ArenaProtocol:
    if isinstance(protocol, ArenaProtocol):
        return protocol
    if protocol not in PROTOCOLS:
        names = ", ".join(map(repr, PROTOCOLS))
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {names} or pass an ArenaProtocol")
    return PROTOCOLS[protocol]


def _check_scm(scm: object) -> SamplesFromSCM:
    if not all(hasattr(scm, attr) for attr in ("d", "graph", "sample")):
        raise ValueError(f"scm must provide d, graph and sample(n, rng, interventions), got {type(scm).__name__}")
    return scm  # type: ignore[return-value]


def sample_split(
    scm: SamplesFromSCM,
    protocol: str | ArenaProtocol = "obs+int",
    *,
    seed: int,
    replicate: int = 0,
    pool: Sequence[int] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ArenaDataset:
    """Sample one split of ``scm`` under ``protocol``.

    Parameters
    ----------
    scm : SCM-like
        ``d``, ``graph`` and ``sample(n, rng, interventions)``.
    protocol : str or ArenaProtocol, default "obs+int"
        A name from :data:`PROTOCOLS` or a custom protocol.
    seed : int
        The SCM's protocol seed (see the module docstring for what it drives).
    replicate : int, default 0
        Replicate index.
    pool : sequence of int, optional
        Target pool; default :func:`draw_target_pool` with the protocol's structural flag.
    meta : mapping, optional
        Extra JSON metadata stored in the dataset (e.g. ``{"unit": "er-d30-007", "factors":
        {...}}``); may not override the protocol's own keys.

    Returns
    -------
    ArenaDataset

    Raises
    ------
    ValueError
        On an unknown protocol, a bad seed, replicate or pool, or metadata key clashes.

    Examples
    --------
    >>> from causal_gym.scm import SCM, erdos_renyi_dag
    >>> scm = SCM.random(erdos_renyi_dag(10, rng=0), "linear", rng=1)
    >>> split = sample_split(scm, "obs+int", seed=7)
    >>> split.data.shape, split.n_interventional
    ((1000, 10), 200)
    """
    scm = _check_scm(scm)
    spec = _protocol(protocol)
    seed = check_count(seed, "seed", minimum=0)
    replicate = check_count(replicate, "replicate", minimum=0)
    d = scm.d
    truth = check_adjacency(scm.graph, "scm.graph", d=d)
    n_total = spec.n_obs + spec.n_int
    observational = scm.sample(n_total, rng=np.random.SeedSequence(seed, spawn_key=(1, replicate, n_total)))
    observational = observational[: spec.n_obs]
    base_meta: dict[str, Any] = {
        "protocol": spec.name,
        "protocol_spec": spec.to_dict(),
        "seed": seed,
        "replicate": replicate,
        "n_obs": spec.n_obs,
        "n_int": spec.n_int,
    }
    regimes: list[dict[str, Any]] = [
        {"name": "observational", "targets": [], "interventions": [], "n_rows": spec.n_obs, "spawn_key": None}
    ]
    blocks, labels = [observational], [0] * spec.n_obs
    targets: list[tuple[int, ...]] = [()] * spec.n_obs
    if spec.interventional:
        chosen = _check_pool(pool, scm, spec, seed)
        quantiles = np.quantile(observational, spec.quantiles, axis=0)
        setpoints = np.quantile(observational, spec.setpoints, axis=0).reshape(len(spec.setpoints), d)
        q25, q75 = np.quantile(observational, (0.25, 0.75), axis=0)
        iqr = q75 - q25
        name_key = zlib.crc32(spec.name.encode())
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2, replicate, name_key)))
        design, shifts = _design(scm, spec, np.asarray(chosen), iqr, rng)
        groups: dict[tuple[Slot, ...], list[int]] = {}
        for row, slots in enumerate(design):
            groups.setdefault(slots, []).append(row)
        for g, slots in enumerate(sorted(groups)):
            interventions = [_slot_intervention(s, spec, quantiles, setpoints, iqr, shifts) for s in slots]
            key = (3, replicate, name_key, g)
            n_rows = len(groups[slots])
            block_rng = np.random.SeedSequence(seed, spawn_key=key)
            blocks.append(scm.sample(n_rows, rng=block_rng, interventions=interventions))
            row_targets = tuple(s[0] for s in slots)
            targets += [row_targets] * n_rows
            labels += [g + 1] * n_rows
            regimes.append({
                "name": " + ".join(_slot_label(s, spec, i) for s, i in zip(slots, interventions)),
                "targets": list(row_targets),
                "interventions": [i.to_dict() for i in interventions],
                "n_rows": n_rows,
                "spawn_key": list(key),
            })
        order = rng.permutation(n_total)
        base_meta["target_pool"] = list(chosen)
        base_meta["target_ranges"] = {
            str(t): {"low": float(quantiles[0, t]), "high": float(quantiles[1, t]), "iqr": float(iqr[t])}
            for t in chosen
        }
    else:
        order = np.arange(n_total)
    base_meta["regimes"] = regimes
    base_meta["row_order"] = order.tolist()
    extra = dict(meta or {})
    clash = sorted(set(extra) & set(base_meta))
    if clash:
        raise ValueError(f"meta keys {clash} are set by the protocol; choose other names")
    data = np.concatenate(blocks)[order]
    mask = np.zeros((n_total, d), dtype=bool)
    for i, targeted in enumerate(targets):
        mask[i, list(targeted)] = True
    return ArenaDataset(
        data=data,
        mask=mask[order],
        targets=tuple(targets[i] for i in order),
        regime=np.asarray(labels, dtype=np.int64)[order],
        true_adjacency=truth,
        meta={**base_meta, **extra},
    )


def _check_pool(pool: Sequence[int] | None, scm: SamplesFromSCM, spec: ArenaProtocol, seed: int) -> tuple[int, ...]:
    minimum = spec.targets_per_row[0]
    if pool is None:
        return draw_target_pool(scm, seed, structural_only=spec.structural_only, minimum=minimum)
    if isinstance(pool, (str, bytes)) or not isinstance(pool, Sequence):
        raise ValueError(f"pool must be a sequence of node indices, got {pool!r}")
    chosen = tuple(sorted(check_count(t, "pool member", minimum=0) for t in pool))
    if len(set(chosen)) != len(chosen) or (chosen and chosen[-1] >= scm.d):
        raise ValueError(f"pool must hold distinct nodes in 0..{scm.d - 1}, got {list(pool)}")
    if len(chosen) < minimum:
        raise ValueError(f"protocol {spec.name!r} needs a pool of at least {minimum} targets, got {len(chosen)}")
    if spec.structural_only:
        roots = sorted(set(chosen) - set(_structural_nodes(scm.graph).tolist()))
        if roots:
            raise ValueError(f"protocol {spec.name!r} targets structural nodes only; {roots} are roots")
    return chosen


def sample_replicates(
    scm: SamplesFromSCM,
    protocol: str | ArenaProtocol = "obs+int",
    *,
    seed: int,
    n_replicates: int = N_REPLICATES,
    meta: Mapping[str, Any] | None = None,
) -> list[ArenaDataset]:
    """Replicates ``0 .. n_replicates - 1`` of one split (same pool, independent rows)."""
    n_replicates = check_count(n_replicates, "n_replicates")
    return [sample_split(scm, protocol, seed=seed, replicate=r, meta=meta) for r in range(n_replicates)]


def intervention_suite(
    scm: SamplesFromSCM, *, seed: int, replicate: int = 0, meta: Mapping[str, Any] | None = None
) -> dict[str, ArenaDataset]:
    """Every protocol of :data:`INTERVENTION_SUITE` for one SCM and replicate, by name."""
    return {name: sample_split(scm, name, seed=seed, replicate=replicate, meta=meta) for name in INTERVENTION_SUITE}


def sample_size_split(
    scm: SamplesFromSCM, n: int, *, seed: int, replicate: int = 0, meta: Mapping[str, Any] | None = None
) -> ArenaDataset:
    """An observational split of ``n`` rows for the sample-size suite (protocol name ``obs-n{n}``)."""
    n = check_count(n, "n")
    return sample_split(scm, ArenaProtocol(f"obs-n{n}", n_obs=n), seed=seed, replicate=replicate, meta=meta)


def counterfactual_rows(scm: SamplesFromSCM, dataset: ArenaDataset) -> np.ndarray:
    """Every shipped row replayed without its interventions, in the shipped row order.

    Observational rows are their own counterpart; the rows of interventional regime ``g`` are
    ``scm.sample(n_rows, SeedSequence(seed, spawn_key=key))`` with the regime's recorded key and no
    intervention, put back where :func:`sample_split`'s shuffle (``meta["row_order"]``) sent them.
    ``scm`` must be the SCM the split was sampled from.

    Raises
    ------
    ValueError
        If the dataset's metadata lacks the protocol seed, the regimes or the row order (a split
        written by another tool), or disagrees with the dataset's shape or regime labels.
    """
    scm = _check_scm(scm)
    missing = sorted({"seed", "regimes", "row_order"} - set(dataset.meta))
    if missing:
        raise ValueError(f"the dataset's meta lacks {missing}; it was not written by sample_split")
    regimes = dataset.meta["regimes"]
    order = np.asarray(dataset.meta["row_order"], dtype=np.int64)
    sizes = np.array([record["n_rows"] for record in regimes], dtype=np.int64)
    if order.shape != (dataset.n,) or sizes.sum() != dataset.n or scm.d != dataset.d:
        raise ValueError("the dataset's row order, regime sizes or width do not match its data or the SCM")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    origin_regime = np.searchsorted(starts, order, side="right") - 1
    if not np.array_equal(origin_regime, dataset.regime):
        raise ValueError("the dataset's regime labels do not match its row order")
    replayed = np.array(dataset.data, dtype=np.float64)
    for g, record in enumerate(regimes[1:], start=1):
        rows = np.flatnonzero(dataset.regime == g)
        seed = np.random.SeedSequence(dataset.meta["seed"], spawn_key=tuple(record["spawn_key"]))
        block = scm.sample(int(record["n_rows"]), rng=seed)
        replayed[rows] = block[order[rows] - starts[g]]
    return replayed
