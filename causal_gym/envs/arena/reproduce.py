"""Reproduce CausalArena's method tables: synthetic F1 by method and d (Tables 2, 7, 9), the graph-family,
root-dependency and difficulty-component slices (Tables 8, 10, 11), pairwise win rates (Figure 19) and
the grounded Formula / Semantic cells of Table 2, each next to the paper's numbers.

Usage
-----
    causal-gym reproduce arena --quick      # 1 config per graph family at d=10, obs and obs+int, 1 replicate;
                                            # the 60 formula + semantic scenarios, obs, 1 replicate
    causal-gym reproduce arena --full       # the paper's grid: 1,000 configs x 5 replicates x 2 splits,
                                            # 60 scenarios x 5 replicates x 2 splits; --backend ray --address ...
    causal-gym reproduce arena --full --dims 10,20,30 --splits obs --replicates 1 --no-grounded --workers 2
    causal-gym reproduce arena --quick --families chain,tree --methods pc,gies_fast --n-obs 200 --n-int 50
    causal-gym reproduce arena --full --sample-sizes 100,200,500,1000,2000,5000,10000 --replicates 1
                                            # the sample-size suite (Table 18): d = 30, 10 configs per family
    causal-gym reproduce arena --full --real --methods alternet,pc,ges_fast,gies_fast
                                            # the real tables: the Sachs table and 5 bnlearn networks, obs

How it runs: one unit = one episode of the runner
-------------------------------------------------
Every (configuration, split, replicate, method) unit is one episode of the resumable runner
(:func:`causal_gym.eval.runner.run_plan`, which ``causal-gym reproduce`` hands to :func:`main` as
``runner``: a benchmark does not import the evaluation layer): the submit-mode env ``CausalArena-{source}-v0`` plays the
configuration (``options={"instance": k}``, env keywords ``d``, ``split``, ``replicate``) and the
agent ``arena-method`` (:class:`~causal_gym.envs.arena.baselines.MethodAgent`) answers with the
method. :func:`plan_runs` writes the whole grid as one runner configuration (the keyword arguments of
:class:`~causal_gym.eval.runner.RunConfig`) per source (a run store under ``--out``: ``synthetic/``, ``formula/``, ``semantic/``) whose
*variants* are the (d, split, replicate, method) cells and whose instances are the
configurations. So the runner's machinery carries it: the local process pool (``--workers``) or
Ray (``--backend ray``, ``--address``), one fsync-ed line per unit (a ``kill -9`` loses only the
units in flight, a rerun with the same arguments plays exactly the missing ones), a progress bar
with the ETA and the count of each status (timeouts and failures live), and the per-unit time
limit (``--timeout``, default the paper's one hour per graph; 600 s for ``--quick``): a unit past
it is killed and recorded as ``timeout``, never dropped and not replayed. A failed unit (an
exception) is recorded and played again by the next rerun. Methods that take no intervention mask
have no ``obs+int`` units (missing cells, as in the paper). Replicate scores are averaged per
(method, unit, split) before any aggregation
(:func:`~causal_gym.envs.arena.scoring.average_replicates`); timeouts and failures stay in the
status counts.

How methods receive the data ("standardized tabular inputs")
--------------------------------------------------------------
As :mod:`causal_gym.envs.arena.baselines` documents: the split as one table of the real variables
(view column order), z-scored per column, plus the intervention mask for GIES; the graph is
scored by the env (random orientation of undirected edges with the per-file seed, directed F1).
A graph with a directed cycle is scored as it is (``accept_cycles=True``; SID missing) and
counted as ``ok with a cycle`` in the status table: the paper scores the graphs its methods
return, and reports PC at d = 50 and 100, where PC's orientation phase returned a cyclic graph on
every configuration we sampled (rejecting those would leave PC's cells empty).

Methods
-------
``--methods`` (default :data:`METHODS`): PC, GES and GIES (ours, :mod:`causal_gym.discovery.greedy`:
the graphs of causal-learn's GES and of the ``gies`` package), DirectLiNGAM (the paper's LiNGAM),
linear NOTEARS, DAGMA (the linear arm of the paper's wrapper, :mod:`causal_gym.discovery.dagma`) and
RandomRegress. GES is not among the paper's methods; on ``obs`` splits GIES is GES plus the turning
phase, so its row is compared with the paper's GIES ``obs`` cells. :data:`EXTRA_METHODS` adds XGES
(:mod:`causal_gym.discovery.xges_search`, compared with GIES ``obs`` too), NOTEARS-MLP
(:mod:`causal_gym.discovery.notears_mlp`, whose own budget is 5/6 of the unit's time limit: 3000 s
of the hour, so it returns its current graph rather than being killed), DAS
(:mod:`causal_gym.discovery.das`) and SDCD (:mod:`causal_gym.discovery.sdcd`, with the same budget). The grounded part holds
the library's 60 formula and semantic scenarios (the first release had 20), so ``--quick`` runs
three times the grounded units it used to.

Your own method (``--methods pc,mypkg.methods:fn``; or a registered or entry-point name) gets its row,
then its paired differences against each other method (mean per-unit F1 and SHD difference over the
units both scored, 95% paired bootstrap; ``paired_differences`` in ``--json``). A store is not resumed
after its code changed (use a new ``--out``); it plays ``obs+int`` when registered ``interventional=True``.

Runtime of ``--quick`` (500 units: 80 synthetic, 420 on the cards): 7.8 min wall with
``--workers 2`` on a cold cache on the shared 2-core machine, 0.24 CPU hours in the methods;
NOTEARS (5.7 s per unit) and DAGMA (5.0 s) are most of it. The first release's measurement, 52
min, came from raw column scales (NOTEARS up to 572 s per run on formula units) and the ``gies``
package's search.

Cost
----
Methods' CPU seconds per unit (one BLAS thread), d = 10 / 20 / 30 as the mean over the full
observational slice (200 configurations per d, 1 replicate: 4,200 units, 2.2 CPU hours in the
methods), d = 50 / 100 from 2 configurations each (Erdos-Renyi and scale-free):
PC 0.02 / 0.21 / 1.6 / 5.9 / 32 (max 182 at d=30), GES 0.02 / 0.10 / 0.29 / 2.9 / 12, GIES 0.03 /
0.13 / 0.34 / 3.0 / 14, DirectLiNGAM 0.27 / 1.9 / 6.5 / 32 / 239, NOTEARS 1.4 / 4.6 / 9.8 / 56 / 197,
DAGMA 2.7 / 3.8 / 5.0 / 8.8 / 32, RandomRegress 0.04 / 0.12 / 0.21 / 0.38 / 1.8; XGES 1.5 at d=20
(10 units, where GES took 0.18). So the whole 42,400-unit grid projects to about 190 CPU hours in
the methods (synthetic obs 188, of which d = 100 is 147, mostly DirectLiNGAM and NOTEARS; GIES
obs+int ~5; the grounded sources ~1), i.e. ~95 h on one 2-core machine, ~6 h on 32 cores
(``--backend ray --address ...``), 95 / N hours on N such machines, instead of the ~5,000 CPU
hours of the ``gies`` package's greedy search. The d = 100 figures rest on two configurations.
NOTEARS was measured on the pool before its tree mechanisms split on every parent; on the current
pool it takes 35 CPU s per unit at d = 20 (same machine) and 29 at d = 30 (on a machine that runs
PC and DirectLiNGAM about 3x faster: 0.01 / 0.07 / 0.46 and 0.11 / 0.66 / 1.9), which adds about
14 CPU hours at d = 20 / 30 over 5 replicates; its d = 50 / 100 costs are not re-measured, so read
the projection as a lower bound.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from causal_gym._files import write_atomic
from causal_gym._validation import check_choice
from causal_gym.envs.arena.paper_numbers import (
    _COMPONENT_ORDER,
    _DIMS,
    _FAMILY_ORDER,
    _PAPER_ROW,
    _ROOT_ORDER,
    _SIZES,
    PAPER_NAMES,
    PAPER_PRETRAINED_SACHS,
    PAPER_PRETRAINED_TABLE9,
    PAPER_PRETRAINED_TABLE18,
    PAPER_TABLE2,
    PAPER_TABLE8,
    PAPER_TABLE9,
    PAPER_TABLE10,
    PAPER_TABLE11,
    PAPER_TABLE18,
)
from causal_gym.envs.reproduce_args import add_common_reproduce_args, add_deprecated_alias, reproduce_parser, tables_to

__all__ = [
    "METHODS",
    "EXTRA_METHODS",
    "PAPER_NAMES",
    "PAPER_TABLE2",
    "PAPER_TABLE8",
    "PAPER_TABLE9",
    "PAPER_TABLE10",
    "PAPER_TABLE11",
    "PAPER_TABLE18",
    "ENV_IDS",
    "plan_runs",
    "store_rows",
    "summarize_rows",
    "build_parser",
    "main",
]

METHODS = ("pc", "ges_fast", "gies_fast", "direct_lingam", "notears", "dagma", "random_regress")
"""The methods run by default (the arena's methods available in :mod:`causal_gym.discovery`)."""

EXTRA_METHODS = ("xges", "notears_mlp", "das", "sdcd", "igsp", "cdis")
"""Methods offered beyond :data:`METHODS` (``--methods``): XGES (not in the paper; compared with its
GIES ``obs`` cells, as GES), NOTEARS-MLP (the paper's; 80 s per graph on average in its Table 5), DAS
(:mod:`causal_gym.discovery.das`, ours; the paper's 58 s per graph), SDCD (the ``sdcd`` package with
a CPU-sized schedule and a time limit, :mod:`causal_gym.discovery.sdcd`; the paper's 193 s per graph),
IGSP and CDIS (the paper's; IGSP's defaults are the paper's wrapper settings, CDIS's the authors'
code's, its PAG scored with every adjacency that is not ``->`` undirected). SDCD, IGSP and CDIS take
the intervention mask, so they also play ``obs+int``."""

ENV_IDS = {"synthetic": "CausalArena-synthetic-v0", "formula": "CausalArena-formula-v0",
           "semantic": "CausalArena-semantic-v0", "real": "CausalArena-real-v0"}
"""The submit-mode env of each source the reproduction plays."""


def _name(method: str) -> str:
    """A method's name in the tables: the paper's, or an import path's function (its whole path heads its paired table)."""
    return PAPER_NAMES.get(method, method.rpartition(":")[2])


AMORTIZED = ("alternet", "cdfm", "avici")
"""Our amortized methods: a run with one of them prints the paper's pretrained rows beside it."""


def _paper(table: Mapping[str, Any], method: str) -> Any:
    return table.get(_PAPER_ROW.get(method, method), {})


# ---------------------------------------------------------------------------------------------
# the plan: one RunConfig per source
# ---------------------------------------------------------------------------------------------


def _budget(method: str, timeout: float) -> dict[str, Any]:
    """A method with a time budget of its own (NOTEARS-MLP) stops at 5/6 of the unit's time limit.

    So it returns its current graph before the runner kills the unit: 3,000 s of the paper's hour,
    500 s of ``--quick``'s 600.
    """
    from causal_gym.envs.arena.baselines import WRAPPER_OPTIONS

    default = WRAPPER_OPTIONS.get(method, {}).get("max_seconds")
    return {} if default is None else {"max_seconds": min(float(default), timeout * 5 / 6)}


def _variant(prefix: str, split: str, replicate: int, method: str, env_kwargs: Mapping[str, Any],
             timeout: float, protocol: str | None = None) -> dict[str, Any]:
    """One (d, split, replicate, method) cell, named ``{prefix}{protocol}/r{replicate}/{method}``: the
    protocol is the split, or ``obs-n{n}`` for a sample-size cell (:func:`_protocol_of` reads it back)."""
    return {"name": f"{prefix}{protocol or split}/r{replicate}/{method}", "env_kwargs": {"split": split,
            "replicate": replicate, **env_kwargs}, "agent_kwargs": {"method": method, **_budget(method, timeout)}}


def _protocol_of(variant: Mapping[str, Any]) -> str:
    """The protocol a variant plays: the part of its name before ``r{replicate}`` (see :func:`_variant`)."""
    return str(variant["name"]).split("/")[-3]


def plan_runs(
    *,
    methods: Sequence[str] = METHODS,
    families: Sequence[str] | None = None,
    dims: Sequence[int] = _DIMS,
    per_block: int | None = None,
    splits: Sequence[str] = ("obs", "obs+int"),
    replicates: int | None = None,
    grounded: Sequence[str] = ("formula", "semantic"),
    grounded_splits: Sequence[str] = ("obs", "obs+int"),
    scenarios: Sequence[str] | None = None,
    n_obs: int | None = None,
    n_int: int | None = None,
    sample_sizes: Sequence[int] | None = None,
    timeout: float = 3600.0,
    backend: str = "local",
    workers: int = 1,
    address: str | None = None,
) -> dict[str, Any]:
    """The grid as runner configurations: source -> the keyword arguments of a
    :class:`~causal_gym.eval.runner.RunConfig` (plain values).

    Synthetic units are the first ``per_block`` configurations of every (graph family, d) block
    (instance ``20 f + p`` of the d-list is position ``p`` of family ``f``); grounded units are the
    formula / semantic scenarios (all, or ``scenarios``) and, when ``grounded`` names ``"real"``, the
    real tables (the Sachs table and the bnlearn networks; ``obs`` only, since the Sachs table has no
    ``obs+int`` split and the runner keys a source's units by one list). Every variant is a (d, split, replicate,
    method) cell; a method without intervention support has no ``obs+int`` variants. With
    ``sample_sizes`` the synthetic cells are the sample-size suite instead (Table 18): one ``obs``
    cell of ``n`` rows per size, protocol ``obs-n{n}`` (``splits`` and ``n_obs`` must then be left at
    their defaults).

    Examples
    --------
    >>> plans = plan_runs(methods=("pc", "gies_fast"), families=("chain",), dims=(10,), per_block=2,
    ...                   replicates=1, grounded=())
    >>> config = plans["synthetic"]
    >>> config["instances"], [v["name"] for v in config["variants"]]
    ((40, 41), ['d10/obs/r0/pc', 'd10/obs/r0/gies_fast', 'd10/obs+int/r0/gies_fast'])
    """
    from causal_gym.discovery import supports_interventions
    from causal_gym.envs.arena.catalogue import instance_list
    from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
    from causal_gym.envs.arena.pool import PER_BLOCK
    from causal_gym.envs.arena.protocol import N_REPLICATES

    families = tuple(GRAPH_FAMILIES if families is None else families)
    per_block = PER_BLOCK if per_block is None else per_block
    replicates = N_REPLICATES if replicates is None else replicates
    if not 1 <= per_block <= PER_BLOCK or replicates < 1:
        raise ValueError(f"per_block must be in 1..{PER_BLOCK} and replicates >= 1, got {per_block}, {replicates}")
    if sample_sizes is not None and (n_obs is not None or tuple(splits) not in (("obs",), ("obs", "obs+int"))):
        raise ValueError("the sample-size suite sets the observational rows itself and has obs splits only: "
                         "leave n_obs and splits unset")
    if sample_sizes is not None and (not sample_sizes or any(int(n) < 2 for n in sample_sizes)):
        raise ValueError(f"sample_sizes must be a non-empty list of row counts >= 2, got {sample_sizes!r}")
    sizes = {key: value for key, value in (("n_obs", n_obs), ("n_int", n_int)) if value is not None}
    common = {"agent": "arena-method", "split": "test", "backend": backend, "workers": workers,
              "ray_address": address, "time_limit": timeout, "env_kwargs": {"accept_cycles": True}}

    def cells(prefix: str, chosen_splits: Sequence[str], extra: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = []
        for split in chosen_splits:
            split_sizes = {k: v for k, v in sizes.items() if split == "obs+int" or k == "n_obs"}
            for replicate in range(replicates):
                out += [_variant(prefix, split, replicate, method, {**extra, **split_sizes}, timeout)
                        for method in methods if split == "obs" or supports_interventions(method)]
        return out

    def suite(d: int) -> list[dict[str, Any]]:
        return [_variant(f"d{d}/", "obs", replicate, method, {"d": d, "n_obs": int(n)}, timeout, f"obs-n{int(n)}")
                for n in sample_sizes or () for replicate in range(replicates) for method in methods]

    plans: dict[str, Any] = {}
    if dims and splits and families:
        instances = tuple(GRAPH_FAMILIES.index(f) * PER_BLOCK + p for f in families for p in range(per_block))
        variants = [v for d in dims for v in (suite(int(d)) if sample_sizes is not None
                                              else cells(f"d{d}/", splits, {"d": int(d)}))]
        if variants:
            plans["synthetic"] = {"env_ids": (ENV_IDS["synthetic"],), "instances": instances, "variants": variants,
                                  **common}
    for source in grounded:
        units = instance_list(source, None, "obs")
        chosen = range(len(units)) if scenarios is None else [
            k for k, unit in enumerate(units) if unit.key in set(scenarios)]
        variants = cells("", ("obs",) if source == "real" else grounded_splits, {})
        if chosen and variants:
            plans[source] = {"env_ids": (ENV_IDS[source],), "instances": tuple(chosen), "variants": variants,
                             **common}
    if scenarios is not None:
        known = {str(u.key) for source in grounded for u in instance_list(source, None, "obs")}
        unknown = sorted(set(scenarios) - known)
        if unknown:
            raise ValueError(f"unknown scenario(s) {unknown}")
    return plans


def store_rows(source: str, config: Mapping[str, Any], lines: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The scored rows of a source's run: one per planned unit of ``config`` (from :func:`plan_runs`)
    that has a result line among ``lines`` (the runner's last line per episode).

    A row has ``method``, ``unit``, ``source``, ``protocol`` (the split, or ``obs-n{n}`` in the
    sample-size suite), ``replicate``, ``d``,
    ``status`` (``"ok"``, ``"invalid"`` for a rejected answer, ``"timeout"``, ``"failed"``),
    ``cyclic`` (an ok answer with a directed cycle, scored as it is), ``error``, ``runtime`` (the
    method's seconds; the episode's wall time when it did not finish), ``cpu_seconds``, every
    metric of :data:`~.scoring.METRICS` (None unless ok) and the unit's factor
    labels (synthetic: ``graph_family``, ``root_dependency``, the list of active ``stressors`` and the
    SCM's active ``mechanisms``, ``noises`` and ``roots`` (root families), empty when the episode did not
    report them; grounded: ``domain`` and ``scenario``). Units without a line,
    or whose last line is ``"interrupted"``, are not rows (a rerun plays them).
    """
    from causal_gym.envs.arena.catalogue import instance_list
    from causal_gym.envs.arena.scoring import METRICS

    latest = {(line["instance"], line.get("variant")): line for line in lines}
    rows = []
    for variant in config["variants"]:
        env = variant["env_kwargs"]
        split, method = env["split"], variant["agent_kwargs"]["method"]
        units = instance_list(source, env.get("d"), split)
        for k in config["instances"]:
            line = latest.get((k, variant["name"]))
            if line is None or line["status"] == "interrupted":
                continue
            unit = units[k]
            final = (line.get("record") or {}).get("final_info") or {}
            usage = line.get("usage") or {}
            status = final.get("status", "ok") if line["status"] not in ("timeout", "failed") else line["status"]
            scores = line.get("scores") or {}
            labels = (_synthetic_labels(int(unit.key), final.get("factors") or {}) if source == "synthetic"
                      else {"domain": final.get("factors", {}).get("domain"), "scenario": unit.key})
            rows.append({
                "method": method, "unit": unit.unit, "source": source, "protocol": _protocol_of(variant),
                "replicate": env["replicate"], "d": unit.size, "status": status,
                "cyclic": bool(final.get("cyclic")) and status == "ok",
                "error": line.get("error") or final.get("error"),
                "runtime": usage.get("method_seconds", line.get("wall_time")),
                "cpu_seconds": usage.get("method_cpu_seconds"), "wall_time": line.get("wall_time"),
                **{metric: scores.get(metric) if status == "ok" else None for metric in METRICS},
                **labels,
            })
            audit = final.get("interventional_audit_details")
            if audit is not None:
                rows[-1]["audit_failures"] = sorted({failure["check"] for failure in audit["failures"]})
    return rows


def _synthetic_labels(k: int, factors: Mapping[str, Any]) -> dict[str, Any]:
    """Factor labels of pool configuration ``k``: the schedule's, except that the root dependency is
    the one the episode reports when there is one (a scheduled dependent block on a graph that drew a
    single root is recorded as ``independent``), and the tags the SCM drew (the episode's factors)."""
    from causal_gym.envs.arena.pool import pool_slot

    slot = pool_slot(k)
    return {"graph_family": slot.graph_family,
            "root_dependency": factors.get("root_dependency", slot.root_dependency),
            "stressors": list(slot.stressors),
            **{column: list(factors.get(f"active_{column}") or ()) for column in ("mechanisms", "noises", "roots")}}


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _cell_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean F1 and SHD of replicate-averaged rows (None when none scored) and how many were scored."""
    return {"f1": _mean(r["f1"] for r in rows), "shd": _mean(r["shd"] for r in rows),
            "n_units": len(rows), "n_scored": sum(r["f1"] is not None for r in rows)}


def _by_component(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One copy of each row per difficulty component (its stressors, or ``"baseline"`` when clean),
    labelled ``difficulty_component``: the paper's Table 11 counts a paired case in both columns."""
    return [{**row, "difficulty_component": component}
            for row in rows for component in (row["stressors"] or ["baseline"])]


def summarize_rows(rows: Sequence[Mapping[str, Any]], methods: Sequence[str],
                   compared: Sequence[str] = ()) -> dict[str, Any]:
    """Replicate-averaged rows and the tables printed by :func:`main` (plain JSON).

    ``compared`` names methods (yours) to set against every other method of the run, unit by unit.

    Returns
    -------
    dict
        ``averaged`` (one row per method, unit and split), ``by_d`` (synthetic mean F1 / SHD and
        counts per method, split and d, plus ``"all"``), ``by_n`` (the sample-size suite's cells per
        ``"method/d"`` and n, Table 18), ``by_family`` (synthetic obs F1 per method and graph
        family, :func:`~.analysis.slice_scores`), ``by_root`` (per root dependency, Table 10) and
        ``by_component`` (per difficulty component, Table 11: a clean configuration is
        ``baseline``, one with two stressors counts in both), each also as ``*_int`` for the
        obs+int split, ``grounded`` (per method, source and split), ``real`` (per method: each
        real unit's cell and their ``"mean"``, obs), ``win_rates`` (pairwise, obs
        synthetic units) and ``overall_win_rates``, ``statuses`` (per method and split),
        ``runtime`` (:func:`~.analysis.runtime_summary` per method and split) and ``exposure``
        (:func:`exposure_summary`, obs synthetic units), ``paired_differences`` (per method of
        ``compared``, source and protocol: :func:`~.analysis.paired_differences` rows of F1 and SHD).
    """
    from causal_gym.envs.arena.analysis import (
        overall_win_rates,
        paired_differences,
        runtime_summary,
        slice_scores,
        win_rates,
    )
    from causal_gym.envs.arena.scoring import average_replicates

    averaged = average_replicates(rows, keys=("method", "unit", "protocol"))
    synthetic = [r for r in averaged if r["source"] == "synthetic"]
    by_d: dict[str, Any] = {}
    for method in methods:
        for split in ("obs", "obs+int"):
            cells = [r for r in synthetic if r["method"] == method and r["protocol"] == split]
            if not cells:
                continue
            out = {str(d): _cell_summary([r for r in cells if d == "all" or r["d"] == d])
                   for d in sorted({r["d"] for r in cells}) + ["all"]}
            by_d[f"{method}/{split}"] = out
    by_n: dict[str, Any] = {}
    for row in synthetic:
        if row["protocol"].startswith("obs-n"):
            cell = by_n.setdefault(f"{row['method']}/{row['d']}", {}).setdefault(row["protocol"][len("obs-n"):], [])
            cell.append(row)
    by_n = {key: {n: _cell_summary(chosen) for n, chosen in sorted(cells.items(), key=lambda item: int(item[0]))}
            for key, cells in by_n.items()}
    grounded: dict[str, Any] = {}
    for method in methods:
        for source in ("formula", "semantic"):
            for split in ("obs", "obs+int"):
                chosen = [r for r in averaged if r["method"] == method and r["source"] == source
                          and r["protocol"] == split]
                if chosen:
                    grounded[f"{method}/{source}/{split}"] = _cell_summary(chosen)
    real: dict[str, Any] = {}
    for method in methods:
        chosen = [r for r in averaged if r["method"] == method and r["source"] == "real" and r["protocol"] == "obs"]
        if chosen:
            real[method] = {**{unit: _cell_summary([r for r in chosen if r["unit"] == unit])
                               for unit in dict.fromkeys(r["unit"] for r in chosen)},
                            "mean": _cell_summary(chosen)}
    observational = [r for r in synthetic if r["protocol"] == "obs"]
    interventional = [r for r in synthetic if r["protocol"] == "obs+int"]
    pairwise = win_rates(observational) if observational else []
    statuses: dict[str, dict[str, int]] = {}
    for run in rows:
        counts = statuses.setdefault(f"{run['method']}/{run['protocol']}", {})
        counts[run["status"]] = counts.get(run["status"], 0) + 1
        if run.get("cyclic"):
            counts["ok with a cycle"] = counts.get("ok with a cycle", 0) + 1
    return {
        "averaged": averaged,
        "by_d": by_d,
        "by_n": by_n,
        "by_family": slice_scores(observational, "graph_family") if observational else [],
        "by_family_int": slice_scores(interventional, "graph_family"),
        "by_root": slice_scores(observational, "root_dependency"),
        "by_root_int": slice_scores(interventional, "root_dependency"),
        "by_component": slice_scores(_by_component(observational), "difficulty_component"),
        "by_component_int": slice_scores(_by_component(interventional), "difficulty_component"),
        "grounded": grounded,
        "real": real,
        "win_rates": pairwise,
        "overall_win_rates": overall_win_rates(pairwise),
        "statuses": statuses,
        "runtime": runtime_summary(rows, by=("method", "protocol")),
        "exposure": exposure_summary(observational, methods),
        "paired_differences": [
            {"source": source, "protocol": protocol, **row}
            for method in compared
            for source, protocol in dict.fromkeys((r["source"], r["protocol"]) for r in averaged)
            for row in paired_differences([r for r in averaged if (r["source"], r["protocol"]) == (source, protocol)],
                                          method, [m for m in methods if m != method])
        ],
    }


GRAPHICAL_SEARCH = ("cdis", "gies", "gies_fast", "igsp", "pc")
"""The paper's reference group of the exposure check (CDIS, GIES, IGSP, PC; ours or the package's GIES)."""


def exposure_summary(observational: Sequence[Mapping[str, Any]], methods: Sequence[str]) -> dict[str, Any]:
    """The pretraining-exposure check (paper Fig. 15) of AlterNet when it is among ``methods``.

    Its prior's coverage of the arena's tags is read from its training card (:mod:`.prior`), so the
    ID/OOD split follows what its training generator draws; a published checkpoint such as CDFM has no
    card here. The reference is the graphical-search methods of the run
    (:data:`GRAPHICAL_SEARCH`). Returns ``method -> {"reference", "by_d": {d, and "all" over several d: rows of
    :func:`~.analysis.exposure_scores`}}``; empty without an amortized method, a reference method
    or scored obs units.
    """
    from causal_gym.discovery.amortized import read_card
    from causal_gym.envs.arena.analysis import exposure_scores
    from causal_gym.envs.arena.prior import declared_coverage

    reference = [m for m in methods if m in GRAPHICAL_SEARCH]
    out: dict[str, Any] = {}
    for method in methods:
        if method != "alternet" or not reference:  # the amortized method whose training card declares its prior
            continue
        coverage = declared_coverage(read_card()["arena_coverage"])  # the shipped checkpoint's card
        by_d: dict[str, Any] = {}
        dims = sorted({r["d"] for r in observational})
        for d in dims + (["all"] if len(dims) > 1 else []):
            chosen = [r for r in observational if d == "all" or r["d"] == d]
            try:
                by_d[str(d)] = exposure_scores(chosen, method, coverage, reference)
            except ValueError:  # no unit scored by the method and every reference method
                continue
        if by_d:
            out[method] = {"reference": reference, "by_d": by_d}
    return out


def _pair(cell: tuple[float, float | None] | None) -> str:
    """A paper-only ``obs / obs+int`` cell."""
    if cell is None:
        return "-"
    return f"{cell[0]:.2f} / " + ("-" if cell[1] is None else f"{cell[1]:.2f}")


def _cell(value: float | None, paper: float | None, digits: int = 2) -> str:
    ours = "  -  " if value is None else f"{value:.{digits}f}"
    reference = "-" if paper is None else f"{paper:.{digits}f}"
    return f"{ours} ({reference})"


def _print_slice(cells_list: Sequence[Mapping[str, Any]], methods: Sequence[str], heading: str,
                 order: Sequence[str], table: Mapping[str, Mapping[str, tuple[float, float | None]]],
                 which: int) -> None:
    """One slice table (categories in the paper's column order), ours (paper); nothing when no
    method has a score in it."""
    cells = {(c["method"], c["category"]): c for c in cells_list}
    categories = [c for c in order if any(key[1] == c for key in cells)]
    present = [m for m in methods if any(cells.get((m, c), {}).get("mean") is not None for c in categories)]
    if not present:
        return
    print(f"\n{heading}")
    print(f"{'method':14} " + " ".join(f"{c[:12]:>12}" for c in categories))
    for method in present:
        paper = _paper(table, method)
        ours = [cells[(method, c)]["mean"] if (method, c) in cells else None for c in categories]
        print(f"{_name(method):14} " + " ".join(
            f"{_cell(f1, paper.get(c, (None, None))[which]):>12}" for f1, c in zip(ours, categories)))


def print_tables(summary: Mapping[str, Any], methods: Sequence[str], audits: Mapping[str, Any]) -> None:
    """Print the tables of :func:`summarize_rows` next to the paper's numbers: ours (paper)."""
    by_d = summary["by_d"]
    if by_d:
        dims = sorted({int(k) for cells in by_d.values() for k in cells if k != "all"})
        print("\nSynthetic: directed F1 by method and d, ours (paper Table 9); 'all' F1 / SHD vs Table 2, whose "
              "cells span d = 10..100 (compare only the full grid); splits without a scored run are left out")
        print(f"{'method':14} {'split':8} " + " ".join(f"{'d=' + str(d):>12}" for d in dims)
              + f" {'all F1':>12} {'all SHD':>15} {'scored':>7}")
        for key, cells in by_d.items():
            if not cells["all"]["n_scored"]:
                continue
            method, split = key.split("/", 1)
            paper_d = _paper(PAPER_TABLE9, method)
            paper_all = _paper(PAPER_TABLE2, method).get(f"synthetic/{split}", (None, None))
            which = 0 if split == "obs" else 1
            line = f"{_name(method):14} {split:8} "
            ours = [cells[str(d)]["f1"] if str(d) in cells else None for d in dims]
            line += " ".join(f"{_cell(f1, paper_d.get(d, (None, None))[which]):>12}" for f1, d in zip(ours, dims))
            line += f" {_cell(cells['all']['f1'], paper_all[0]):>12} {_cell(cells['all']['shd'], paper_all[1], 1):>15}"
            line += f" {cells['all']['n_scored']:>3}/{cells['all']['n_units']:<3}"
            print(line)
        if set(methods) & set(AMORTIZED):
            print("the paper's pretrained rows (Table 9), obs / obs+int:")
            for name, cells9 in PAPER_PRETRAINED_TABLE9.items():
                print(f"{name + ' (paper)':23} " + " ".join(
                    f"{_pair(cells9.get(d)):>12}" for d in dims))
    if summary.get("by_n"):
        sizes = sorted({int(n) for cells in summary["by_n"].values() for n in cells})
        print("\nSample-size suite: directed F1 / SHD by n, obs, ours (paper Table 18, d = 30)")
        print(f"{'method':14} {'d':>3} " + " ".join(f"{'n=' + str(n):>24}" for n in sizes))
        for key, cells in summary["by_n"].items():
            method, d = key.rsplit("/", 1)
            paper = _paper(PAPER_TABLE18, method) if d == "30" else {}
            line = f"{_name(method):14} {d:>3} "
            for n in sizes:
                cell = cells.get(str(n), {"f1": None, "shd": None})
                f1, shd = paper.get(n, (None, None))
                line += f" {_cell(cell['f1'], f1) + ' ' + _cell(cell['shd'], shd, 1):>24}"
            print(line)
        if set(methods) & set(AMORTIZED) and any(key.endswith("/30") for key in summary["by_n"]):
            print("the paper's pretrained rows (Table 18, d = 30), F1 / SHD:")
            for name, cells18 in PAPER_PRETRAINED_TABLE18.items():
                print(f"{name + ' (paper)':18} " + " ".join(
                    f"{'-' if n not in cells18 else f'{cells18[n][0]:.2f} / {cells18[n][1]:.1f}':>24}" for n in sizes))
    slices = (("graph family", "by_family", _FAMILY_ORDER, PAPER_TABLE8, "Table 8"),
              ("root dependency", "by_root", _ROOT_ORDER, PAPER_TABLE10, "Table 10"),
              ("difficulty component", "by_component", _COMPONENT_ORDER, PAPER_TABLE11, "Table 11"))
    for factor, key, order, table, label in slices:
        for split, suffix, which in (("obs", "", 0), ("obs+int", "_int", 1)):
            _print_slice(summary.get(key + suffix, []), methods, f"Synthetic {split}: directed F1 by {factor}, ours "
                         f"(paper {label}, whose cells span d = 10..100)", order, table, which)
    if summary["overall_win_rates"]:
        pairs = {(r["method"], r["opponent"]): r["win_rate"] for r in summary["win_rates"]}
        ranked = [r["method"] for r in summary["overall_win_rates"]]
        print("\nPairwise win rates, obs synthetic units (F1 and SHD pooled; row beats column; cf. paper Figure 19)")
        print(f"{'method':14} {'overall':>8} " + " ".join(f"{_name(m)[:8]:>8}" for m in ranked))
        for entry in summary["overall_win_rates"]:
            m = entry["method"]
            rates = " ".join(f"{'':>8}" if m == o else f"{pairs[(m, o)]:>8.2f}" if pairs.get((m, o)) is not None
                             else f"{'-':>8}" for o in ranked)
            overall = "-" if entry["win_rate"] is None else f"{entry['win_rate']:.2f}"
            print(f"{_name(m):14} {overall:>8} {rates}")
    grounded = summary["grounded"]
    if grounded:
        print("\nGrounded scenarios: directed F1 / SHD, ours (paper Table 2)")
        print(f"{'method':14} {'split':8} {'Formula F1':>14} {'Formula SHD':>16} "
              f"{'Semantic F1':>14} {'Semantic SHD':>16}")
        for method in methods:
            for split in ("obs", "obs+int"):
                cells = [grounded.get(f"{method}/{source}/{split}") for source in ("formula", "semantic")]
                if not any(cells):
                    continue
                line = f"{_name(method):14} {split:8}"
                for source, cell in zip(("formula", "semantic"), cells):
                    paper = _paper(PAPER_TABLE2, method).get(f"{source}/{split}", (None, None))
                    f1, shd = (cell["f1"], cell["shd"]) if cell else (None, None)
                    line += f" {_cell(f1, paper[0]):>14} {_cell(shd, paper[1], 1):>16}"
                print(line)
    if summary.get("real"):
        _print_real(summary["real"])
        if set(methods) & set(AMORTIZED):
            print("the paper's pretrained rows on Sachs, obs (Table 17; its Sachs data with the intervention rows "
                  "dropped, not our 1,000-row sample), F1 / SHD: " + ", ".join(
                      f"{name} {f1:.2f} / {shd:.0f}" for name, (f1, shd) in PAPER_PRETRAINED_SACHS.items()))
    for method, exposure in summary.get("exposure", {}).items():
        _print_exposure(method, exposure)
    if summary.get("paired_differences"):
        _print_paired(summary["paired_differences"])
    print("\nRun statuses (failed / timed-out / unsupported runs are kept, never dropped) and seconds per run")
    runtimes = {(r["method"], r["protocol"]): r for r in summary["runtime"]}
    for key, counts in summary["statuses"].items():
        timing = runtimes[tuple(key.split("/", 1))]
        seconds = "" if timing["mean"] is None else f"; {timing['mean']:.1f} s mean, {timing['max']:.1f} s max"
        print(f"  {key:24} " + ", ".join(f"{status} {count}" for status, count in sorted(counts.items())) + seconds)
    if audits:
        failed = {unit: audit for unit, audit in audits.items() if not audit["passed"]}
        print(f"\nInterventional audits of obs+int splits: {len(audits) - len(failed)} of {len(audits)} passed"
              + "".join(f"\n  {unit}: {audit['reasons']}" for unit, audit in failed.items()))


def _signed(value: float | None, low: float | None, high: float | None, digits: int) -> str:
    if value is None:
        return "-"
    bounds = "" if low is None or high is None else f" [{low:+.{digits}f}, {high:+.{digits}f}]"
    return f"{value:+.{digits}f}{bounds}"


def _print_paired(rows: Sequence[Mapping[str, Any]]) -> None:
    """Each compared method against every other of the run, per source and protocol (F1: higher is better)."""
    print("\nYour methods against the others, unit by unit: mean of (yours - theirs) over the units both scored, "
          "95% paired bootstrap interval")
    for (method, source, protocol), chosen in itertools.groupby(rows, key=lambda r: (r["method"], r["source"],
                                                                                        r["protocol"])):
        print(f"{method} on {source} {protocol}\n  {'against':14} {'units':>5} {'F1 yours':>8} {'F1 theirs':>9} "
              f"{'F1 difference':>22} {'SHD difference':>22}")
        for row in chosen:
            f1 = ["-" if row[key] is None else f"{row[key]:.2f}" for key in ("f1", "f1_opponent")]
            print(f"  {_name(row['opponent']):14} {row['f1_units']:>5} {f1[0]:>8} {f1[1]:>9} "
                  f"{_signed(row['f1_difference'], row['f1_low'], row['f1_high'], 2):>22} "
                  f"{_signed(row['shd_difference'], row['shd_low'], row['shd_high'], 1):>22}")


def _print_real(real: Mapping[str, Mapping[str, Any]]) -> None:
    """Directed F1 / SHD per real unit and method (obs). The paper gives no per-method numbers on
    these tables to compare with, so the cells are ours only."""
    units = list(dict.fromkeys(unit for cells in real.values() for unit in cells if unit != "mean"))
    names = [unit.removeprefix("real/").removeprefix("network-") for unit in units]
    print("\nReal tables, obs: directed F1 / SHD, ours (the Sachs table against its 17-edge consensus graph; "
          "the networks: bnlearn structures with causal_gym's mechanisms)")
    print(f"{'method':14} " + " ".join(f"{name[:13]:>13}" for name in names) + f" {'mean':>13} {'scored':>7}")
    for method, cells in real.items():
        text = [("-" if cells.get(u, {}).get("f1") is None else f"{cells[u]['f1']:.2f} / {cells[u]['shd']:.0f}")
                for u in units]
        mean = cells["mean"]
        mean_text = "-" if mean["f1"] is None else f"{mean['f1']:.2f} / {mean['shd']:.1f}"
        print(f"{_name(method):14} " + " ".join(f"{t:>13}" for t in text)
              + f" {mean_text:>13} {mean['n_scored']:>3}/{mean['n_units']:<3}")


def _percent(value: float | None, interval: Sequence[float] | None = None) -> str:
    if value is None:
        return "-"
    return f"{100 * value:+.0f}%" + ("" if interval is None else f" [{100 * interval[0]:+.0f}, {100 * interval[1]:+.0f}]")


def _print_exposure(method: str, exposure: Mapping[str, Any]) -> None:
    """One table per d (and all d) of :func:`exposure_summary`: raw F1 in and out of the prior, gains in percent."""
    for d, rows in exposure["by_d"].items():
        print(f"\nPretraining exposure, synthetic obs, d = {d}: {method} vs the mean of "
              f"{', '.join(exposure['reference'])} on the categories its prior covers (ID) and the others (OOD); "
              f"gain = (F1 - reference) / reference, 95% bootstrap intervals over {rows[0]['n_units']} units "
              "(cf. paper Fig. 15)")
        print(f"{'axis':13} {'ID/OOD':>6} {'F1 ID':>6} {'ref ID':>6} {'F1 OOD':>6} {'ref OOD':>7} {'gain ID':>17} "
              f"{'gain OOD':>17} {'ID - OOD gap':>17}")
        for row in rows:
            if row["axis"] == "mean":
                print(f"{'mean (' + str(len(row['axes'])) + ' axes)':13} {'':>6} {'':>6} {'':>6} {'':>6} {'':>7} "
                      f"{'':>17} {_percent(row['gain_ood'], row['gain_ood_interval']):>17} "
                      f"{_percent(row['gap'], row['gap_interval']):>17}")
                continue
            counts = f"{len(row['id_categories'])}/{len(row['ood_categories'])}"
            f1 = [("-" if row[k] is None else f"{row[k]:.2f}") for k in ("f1_id", "reference_id", "f1_ood",
                                                                          "reference_ood")]
            print(f"{row['axis']:13} {counts:>6} {f1[0]:>6} {f1[1]:>6} {f1[2]:>6} {f1[3]:>7} "
                  f"{_percent(row['gain_id'], row['gain_id_interval']):>17} "
                  f"{_percent(row['gain_ood'], row['gain_ood_interval']):>17} {_percent(row['gap'], row['gap_interval']):>17}")


_QUICK_K = (4, 8, 16, 32)


def _load_split(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """``--load-split``: nested-``k`` timings and their fits (:mod:`~.load_split`), printed and returned."""
    from causal_gym.discovery.amortized import AMORTIZED_METHODS, available_methods
    from causal_gym.envs.arena.load_split import PAPER_K, fit_load_split, nested_timings

    chosen = _names(args.methods, tuple(AMORTIZED_METHODS), "amortized method") or available_methods()
    dims = tuple(int(d) for d in args.dims.split(",")) if args.dims else (10, 30) if args.quick else tuple(PAPER_K)
    try:
        ks = (tuple(int(k) for k in args.k.split(",")) if args.k else _QUICK_K if args.quick
              else {d: PAPER_K[d] for d in dims})
    except (ValueError, KeyError) as err:
        parser.error(f"--k must be comma-separated integers (and without it, --full needs d in {list(PAPER_K)}): "
                     f"{err}")
    n = args.n_obs or 1000
    points = [row for method in chosen for row in nested_timings(method, dims, ks, n=n, progress=not args.quiet)]
    fits = fit_load_split(points)
    print(f"\nLoad / per-graph split, n = {n} rows (cf. paper Table 4, Fig. 8): T(k) = T_fixed + k T_graph by least "
          "squares per d, T(k) the wall time of a fresh process that loads the method and scores k graphs")
    print(f"{'method':10} {'d':>5} {'k':>22} {'T_fixed s':>10} {'T_graph s':>10} {'R^2':>7}")
    for fit in fits:
        ks_text = "" if fit["ks"] is None else ",".join(map(str, fit["ks"]))
        r2 = f"{fit['r2']:.4f}" + (f" (min {fit['min_r2']:.4f})" if "min_r2" in fit else "")
        print(f"{fit['method']:10} {fit['d']!s:>5} {ks_text:>22} {fit['t_fixed']:>10.2f} {fit['t_graph']:>10.3f} {r2:>7}")
    output = {"load_split": {"points": points, "fits": fits, "n": n}}
    if args.json:
        write_atomic(args.json, json.dumps(output, indent=1))
    return output


def _audits(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The interventional audit of every obs+int split among the rows, by unit and replicate."""
    out: dict[str, Any] = {}
    for row in rows:
        if "audit_failures" in row:
            out[f"{row['unit']}/r{row['replicate']}"] = {"passed": not row["audit_failures"],
                                                          "reasons": row["audit_failures"]}
    return out


def _names(text: str | None, choices: Sequence[str], what: str) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(check_choice(item.strip(), choices, what) for item in text.split(",") if item.strip())


def _cost(rows: Sequence[Mapping[str, Any]], wall: float) -> dict[str, Any]:
    """CPU and wall seconds of the rows: the methods' CPU time, the episodes' summed wall time."""
    cpu = sum(r["cpu_seconds"] or 0.0 for r in rows)
    episodes = sum(r["wall_time"] or 0.0 for r in rows)
    by_method: dict[str, float] = {}
    for r in rows:
        by_method[r["method"]] = by_method.get(r["method"], 0.0) + (r["cpu_seconds"] or r["wall_time"] or 0.0)
    return {"method_cpu_hours": cpu / 3600, "episode_wall_hours": episodes / 3600, "run_wall_seconds": wall,
            "cpu_hours_by_method": {m: v / 3600 for m, v in sorted(by_method.items())}}


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``causal-gym reproduce arena`` (the shared grammar of :mod:`causal_gym.envs.reproduce_args`)."""
    parser = reproduce_parser(prog, __doc__)
    add_common_reproduce_args(
        parser, quick="1 config per graph family at d=10 (obs, obs+int) and the grounded scenarios (obs), 1 replicate",
        full="the paper's grid: 20 configs per (family, d) block, d in 10..100, 5 replicates, both splits, and the "
        "grounded scenarios",
        instances="configurations per (graph family, d) block (default: quick 1, full 20; the sample-size suite 10)",
        out="the resumable run stores, one per source (default runs/arena-quick or runs/arena-full); rerun with "
        "the same arguments to resume")
    add_deprecated_alias(parser, "--per-block", "--instances")
    parser.add_argument("--methods", help=f"comma-separated methods (default {','.join(METHODS)}; also "
                        f"{','.join(EXTRA_METHODS)}, any name of causal_gym.discovery.methods(), or a method of your "
                        "own as 'package.module:function', whose row is then set against each other method's with "
                        "paired differences)")
    parser.add_argument("--families", help="comma-separated graph families (default all 10)")
    parser.add_argument("--dims", help="comma-separated d (default: quick 10, full 10,20,30,50,100)")
    parser.add_argument("--splits", help="synthetic splits (default obs,obs+int)")
    parser.add_argument("--replicates", type=int, help="replicates per unit (default: quick 1, full 5)")
    parser.add_argument("--n-obs", type=int, help="observational rows (default 1000 obs, 800 obs+int)")
    parser.add_argument("--n-int", type=int, help="interventional rows of obs+int (default 200)")
    parser.add_argument("--sample-sizes", help="the sample-size suite instead of the synthetic splits (paper Table "
                        f"18: {','.join(map(str, _SIZES))}): obs units of each n rows, d = 30 and 10 configs per "
                        "family unless --dims / --instances say otherwise, no grounded units")
    parser.add_argument("--real", action="store_true",
                        help="the real tables instead of the synthetic and grounded units: the Sachs table and "
                        "semi-synthetic SCMs on 5 bnlearn structures, obs (needs the extra 'real': cdt, pgmpy)")
    parser.add_argument("--timeout", type=float, help="seconds per unit (default: quick 600, full 3600, the paper's)")
    parser.add_argument("--scenarios", help="comma-separated grounded scenario names (default all 60)")
    parser.add_argument("--no-grounded", action="store_true", help="skip the formula and semantic scenarios")
    parser.add_argument("--grounded-splits", help="splits of the grounded units (default: quick obs, full obs,obs+int)")
    parser.add_argument("--backend", default="local", choices=("local", "ray"), help="local process pool or Ray")
    parser.add_argument("--address", help="Ray cluster address (with --backend ray; default a local Ray)")
    parser.add_argument("--load-split", action="store_true",
                        help="instead of the grid: time nested runs of the amortized methods among --methods "
                        "(default those that load here without a path) and fit T(k) = T_fixed + k T_graph per d (paper Table 4); quick: d 10,30 and "
                        f"k {','.join(map(str, _QUICK_K))}; full: the paper's d and k grids")
    parser.add_argument("--k", help="with --load-split: comma-separated k, the same at every d")
    parser.add_argument("--plan", action="store_true", help="print the plan's unit counts and stop")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None, *,
         runner: Callable[..., list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Parse ``argv`` (default: sys.argv), run the grid, print the tables; returns the JSON output.

    ``runner`` is :func:`causal_gym.eval.runner.run_plan` (``causal-gym reproduce arena`` passes
    it); it may be omitted only with ``--plan``.
    """
    from causal_gym.discovery import check_method, resolve
    from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES

    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.address is not None and args.backend != "ray":
        parser.error("--address needs --backend ray")

    if args.load_split:
        return _load_split(args, parser)
    if args.k is not None:
        parser.error("--k needs --load-split")
    try:  # cdfm without its checkpoint is refused here, saying how to get one
        methods = tuple(check_method(m.strip()) for m in (args.methods or "").split(",") if m.strip()) or METHODS
    except (ValueError, FileNotFoundError, ImportError) as err:
        parser.error(str(err))
    try:
        sample_sizes = None if args.sample_sizes is None else tuple(int(n) for n in args.sample_sizes.split(","))
    except ValueError:
        parser.error(f"--sample-sizes must be comma-separated integers, got {args.sample_sizes!r}")
    if args.real and sample_sizes is not None:
        parser.error("--real and --sample-sizes are two different suites: run them one at a time")
    if sample_sizes is not None and (args.n_obs is not None or args.splits not in (None, "obs")):
        parser.error("--sample-sizes sets the observational rows itself and plays obs units only: drop --n-obs "
                     "and --splits")
    families = _names(args.families, GRAPH_FAMILIES, "graph family") or GRAPH_FAMILIES
    dims = tuple(int(d) for d in args.dims.split(",")) if args.dims else (
        (30,) if sample_sizes else (10,) if args.quick else _DIMS)
    splits = _names(args.splits, ("obs", "obs+int"), "split") or ("obs", "obs+int")
    grounded_splits = _names(args.grounded_splits, ("obs", "obs+int"), "split") or (
        ("obs",) if args.quick else ("obs", "obs+int"))
    timeout = args.timeout if args.timeout is not None else (600.0 if args.quick else 3600.0)
    if timeout <= 0:
        parser.error("--timeout must be > 0")
    out = Path(args.out or ("runs/arena-quick" if args.quick else "runs/arena-full"))
    try:
        plans = plan_runs(
            methods=methods, families=families, dims=dims,
            per_block=args.instances or (10 if sample_sizes else 1 if args.quick else None),
            splits=() if args.real else splits, replicates=args.replicates or (1 if args.quick else None),
            grounded=("real",) if args.real else () if args.no_grounded or sample_sizes else ("formula", "semantic"),
            grounded_splits=grounded_splits, sample_sizes=sample_sizes,
            scenarios=[s.strip() for s in args.scenarios.split(",")] if args.scenarios else None,
            n_obs=args.n_obs, n_int=args.n_int, timeout=timeout, backend=args.backend, workers=args.workers,
            address=args.address)
    except ValueError as err:
        parser.error(str(err))
    counts = {source: len(config["instances"]) * len(config["variants"]) for source, config in plans.items()}
    print(f"plan: {sum(counts.values())} units (" + ", ".join(f"{s} {n}" for s, n in counts.items())
          + f"); time limit {timeout:g} s per unit; stores under {out}", file=sys.stderr)
    if args.plan:
        return {"plan": counts}
    if runner is None:
        raise ValueError("main() needs runner= (causal_gym.eval.runner.run_plan), as `causal-gym reproduce arena` "
                         "passes it")

    with tables_to(out):  # also out/tables.txt
        start = time.perf_counter()
        rows: list[dict[str, Any]] = []
        for source, config in plans.items():
            try:
                lines = runner(config, out / source, progress=not args.quiet)
            except ValueError as err:  # e.g. a store of another version of your method: say so, no traceback
                parser.exit(2, f"{parser.prog}: error: {err}\n")
            rows += store_rows(source, config, lines)
        wall = time.perf_counter() - start
        audits = _audits(rows)
        summary = summarize_rows(rows, methods, compared=[m for m in methods if not resolve(m).builtin])
        print_tables(summary, methods, audits)
        cost = _cost(rows, wall)
        print(f"\n{len(rows)} units of {sum(counts.values())} planned; this call {wall:.0f} s; methods' CPU "
              f"{cost['method_cpu_hours']:.2f} h, episodes' summed wall time {cost['episode_wall_hours']:.2f} h")
    output = {
        "config": {"methods": list(methods), "families": list(families), "dims": list(dims),
                   "splits": list(splits), "per_block": args.instances, "replicates": args.replicates,
                   "n_obs": args.n_obs, "n_int": args.n_int, "sample_sizes": sample_sizes, "timeout": timeout,
                   "grounded": not (args.no_grounded or sample_sizes or args.real), "real": args.real,
                   "grounded_splits": list(grounded_splits), "out": str(out)},
        "plan": counts,
        "rows": rows,
        "audits": audits,
        "cost": cost,
        **summary,
    }
    if args.json:
        write_atomic(args.json, json.dumps(output, indent=1))  # replaces a link at that name, never follows it
    return output

