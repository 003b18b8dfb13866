"""Reproduce CausalArena's method tables: synthetic F1 by method and d (Tables 2, 7, 9), the graph-family
slice (Table 8), pairwise win rates (Figure 19) and the grounded Formula / Semantic cells of Table 2,
each next to the paper's numbers.

Usage
-----
    causal-gym reproduce arena --quick      # 1 config per graph family at d=10, obs and obs+int, 1 replicate;
                                            # the 60 formula + semantic scenarios, obs, 1 replicate
    causal-gym reproduce arena              # the paper's grid: 1,000 configs x 5 replicates x 2 splits,
                                            # 60 scenarios x 5 replicates x 2 splits
    causal-gym reproduce arena --quick --families chain,tree --methods pc,gies --n-obs 200 --n-int 50

Methods (``--methods``, default :data:`METHODS`) run through
:func:`causal_gym.envs.arena.scoring.evaluate` with a wall-time budget per run (``--timeout``,
default 600 s quick, 3600 s full, the paper's one hour); each run happens in a forked process
with one BLAS thread. Methods that take no intervention mask get an ``"unsupported"`` row on
``obs+int`` splits (missing cells, as in the paper). Failed, timed-out and unsupported runs stay
in the rows and the status counts; replicate scores are averaged per (method, unit, split)
before any aggregation (:func:`~causal_gym.envs.arena.scoring.average_replicates`). Every row is
cached on disk (``CAUSAL_GYM_CACHE``) under the data's content hash, the method, the sizes and
the budget, so a rerun or an interrupted run only computes what is missing. ``obs+int`` splits
are audited when loaded (:func:`causal_gym.envs.arena.catalogue.audit_split`); failures are printed and kept.

GES is not among the paper's methods (its columns show "-"). DirectLiNGAM is the paper's LiNGAM.
Our DAGMA is the linear arm of the paper's wrapper (see :mod:`causal_gym.discovery.dagma`).

Runtime. ``--quick`` (10 synthetic units x 2 splits + 20 grounded units, 7 methods: 280 rows, 220
actual runs) took 52 minutes on a cold cache on the shared 2-core machine (load 4-7), and 2 s
from the cache; that was with the first release's 20 grounded cards, the library now has 60, which
triples the grounded part of ``--quick``. NOTEARS is 80% of it: on the raw (unstandardised) formula scenarios it needs up
to 572 s (mean 147 s); the other methods take 0.1-9 s per run at d <= 18. Single-run times
measured on one Erdos-Renyi configuration with one BLAS thread (seconds):

======  ====  =======  ======  ========  =====  =============  =======
d       PC    GES      GIES    LiNGAM    DAGMA  RandomRegress  NOTEARS
======  ====  =======  ======  ========  =====  =============  =======
10      0.1   0.4      0.4     4.8       2.4    0.9            5.6
30      0.3   45       237     4.4       2.0    3.4            43
50      2.8   > 1000   --      19        4.4    4.0            146
100     6.2   --       --      74        19     1.7            56
======  ====  =======  ======  ========  =====  =============  =======

The full grid is 1,000 configurations x 5 replicates x (7 obs runs + 1 obs+int GIES run) =
40,000 runs plus 200 grounded units. GES and GIES (the ``gies`` package's greedy search) grow
fastest and reach the one-hour budget from d = 50 on, so the d = 50 and d = 100 blocks dominate:
about 15 CPU hours for d = 10, 40 for d = 20, 160 for d = 30 and up to 2,000-3,000 each for
d = 50 and d = 100, i.e. of the order of 5,000 CPU hours (3-4 months on 2 cores, about a week on
32 cores with ``--workers 32``), most of it GES/GIES timeouts. Without ges and gies
(``--methods``) the grid needs about 120 CPU hours. It is not run in the tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_gym import _cache
from causal_gym._validation import check_choice
from causal_gym.envs.arena.catalogue import ArenaInstance, instance_list, load_task

__all__ = [
    "METHODS",
    "PAPER_NAMES",
    "PAPER_TABLE2",
    "PAPER_TABLE8",
    "PAPER_TABLE9",
    "Job",
    "synthetic_units",
    "grounded_units",
    "evaluate_job",
    "collect_rows",
    "summarize_rows",
    "main",
]

METHODS = ("pc", "ges", "gies", "direct_lingam", "notears", "dagma", "random_regress")
"""The methods run by default (the arena's methods available in :mod:`causal_gym.discovery`)."""

PAPER_NAMES = {"pc": "PC", "ges": "GES", "gies": "GIES", "direct_lingam": "LiNGAM", "notears": "NOTEARS",
               "dagma": "DAGMA", "random_regress": "RandomRegress"}

# Table 2 (F1, SHD): Syn./Sem./Form. x obs / obs+int; methods without intervention support have no obs+int cells.
PAPER_TABLE2: dict[str, dict[str, tuple[float, float]]] = {
    "random_regress": {"synthetic/obs": (0.28, 218.0), "semantic/obs": (0.25, 93.2), "formula/obs": (0.20, 108.3)},
    "gies": {"synthetic/obs": (0.48, 123.6), "synthetic/obs+int": (0.48, 134.0), "semantic/obs": (0.55, 33.4),
             "semantic/obs+int": (0.57, 32.9), "formula/obs": (0.47, 36.7), "formula/obs+int": (0.52, 34.7)},
    "pc": {"synthetic/obs": (0.31, 115.4), "semantic/obs": (0.33, 33.5), "formula/obs": (0.22, 31.1)},
    "direct_lingam": {"synthetic/obs": (0.21, 109.6), "semantic/obs": (0.20, 38.9), "formula/obs": (0.24, 34.7)},
    "dagma": {"synthetic/obs": (0.28, 107.2), "semantic/obs": (0.18, 42.0), "formula/obs": (0.18, 39.7)},
    "notears": {"synthetic/obs": (0.28, 104.2), "semantic/obs": (0.20, 38.1), "formula/obs": (0.18, 35.2)},
}

# Table 9: synthetic F1 by d, (obs, obs+int); None where the paper has no cell.
_DIMS = (10, 20, 30, 50, 100)
PAPER_TABLE9: dict[str, dict[int, tuple[float, float | None]]] = {
    "random_regress": dict(zip(_DIMS, ((0.34, None), (0.31, None), (0.28, None), (0.25, None), (0.23, None)))),
    "gies": dict(zip(_DIMS, ((0.49, 0.55), (0.49, 0.49), (0.49, 0.48), (0.47, 0.45), (0.47, 0.44)))),
    "pc": dict(zip(_DIMS, ((0.42, None), (0.34, None), (0.31, None), (0.26, None), (0.20, None)))),
    "direct_lingam": dict(zip(_DIMS, ((0.29, None), (0.23, None), (0.21, None), (0.18, None), (0.13, None)))),
    "dagma": dict(zip(_DIMS, ((0.34, None), (0.30, None), (0.29, None), (0.27, None), (0.22, None)))),
    "notears": dict(zip(_DIMS, ((0.33, None), (0.30, None), (0.28, None), (0.26, None), (0.21, None)))),
}

# Table 8: synthetic F1 by graph family, (obs, obs+int).
_FAMILY_ORDER = ("erdos_renyi", "scale_free", "chain", "tree", "layered", "collider_rich", "bipartite_layered",
                 "dense_local_module", "small_world", "block_sparse_layered")
PAPER_TABLE8: dict[str, dict[str, tuple[float, float | None]]] = {
    method: dict(zip(_FAMILY_ORDER, zip(obs, interventional)))
    for method, obs, interventional in (
        ("random_regress", (0.27, 0.27, 0.30, 0.27, 0.27, 0.27, 0.27, 0.31, 0.30, 0.30), (None,) * 10),
        ("gies", (0.50, 0.42, 0.45, 0.44, 0.52, 0.49, 0.61, 0.45, 0.44, 0.47),
         (0.48, 0.46, 0.50, 0.48, 0.50, 0.47, 0.51, 0.46, 0.48, 0.47)),
        ("pc", (0.28, 0.25, 0.34, 0.30, 0.32, 0.28, 0.29, 0.35, 0.31, 0.34), (None,) * 10),
        ("direct_lingam", (0.18, 0.21, 0.22, 0.22, 0.21, 0.19, 0.18, 0.23, 0.19, 0.23), (None,) * 10),
        ("dagma", (0.23, 0.34, 0.30, 0.37, 0.26, 0.24, 0.19, 0.32, 0.25, 0.36), (None,) * 10),
        ("notears", (0.24, 0.30, 0.30, 0.33, 0.27, 0.23, 0.20, 0.30, 0.24, 0.34), (None,) * 10),
    )
}

_ROW_VERSION = 1


@dataclass(frozen=True)
class Job:
    """One method run: an instance, its split and replicate, sizes, the method and its budget."""

    instance: ArenaInstance
    split: str
    replicate: int
    n_obs: int
    n_int: int
    method: str
    timeout: float


def synthetic_units(families: Sequence[str], dims: Sequence[int], per_block: int) -> list[ArenaInstance]:
    """The first ``per_block`` pool configurations of every (family, d) block, in pool order."""
    units = []
    for d in dims:
        for family in families:
            units += list(instance_list("synthetic", d, "obs", {"graph_family": family})[:per_block])
    return units


def grounded_units(
    sources: Iterable[str] = ("formula", "semantic"), names: Sequence[str] | None = None
) -> list[ArenaInstance]:
    """The formula and semantic scenarios (all, or those in ``names``)."""
    units = [u for source in sources for u in instance_list(source, None, "obs")]
    if names is not None:
        unknown = sorted(set(names) - {u.key for u in units})
        if unknown:
            raise ValueError(f"unknown scenario(s) {unknown}")
        units = [u for u in units if u.key in set(names)]
    return units


def evaluate_job(job: Job) -> dict[str, Any]:
    """The scored row of ``job`` (disk-cached), with the unit's source and d added."""
    from causal_gym.envs.arena.scoring import evaluate

    dataset = load_task(job.instance, job.split, job.replicate, job.n_obs, job.n_int).dataset
    digest = hashlib.sha256(dataset.data.tobytes() + np.packbits(dataset.mask).tobytes()).hexdigest()
    key = {"what": "arena_reproduce_row", "version": _ROW_VERSION, "unit": job.instance.unit, "split": job.split,
           "replicate": job.replicate, "n_obs": job.n_obs, "n_int": job.n_int, "method": job.method,
           "timeout": job.timeout, "data": digest}
    row = _cache.cached(key, lambda: evaluate(job.method, dataset, timeout=job.timeout))
    return {**row, "source": job.instance.source}


def _worker_row(job: Job) -> dict[str, Any]:
    return evaluate_job(job)


def collect_rows(jobs: Sequence[Job], *, workers: int = 1, progress: bool = True) -> list[dict[str, Any]]:
    """Run every job (``workers`` spawned processes, one BLAS thread each) and return the rows in job order."""
    from threadpoolctl import threadpool_limits

    rows: list[dict[str, Any] | None] = [None] * len(jobs)
    start = time.perf_counter()

    def report(i: int) -> None:
        if progress:
            row = rows[i]
            f1 = "-" if row["f1"] is None else f"{row['f1']:.3f}"
            print(f"[{sum(r is not None for r in rows)}/{len(jobs)} {time.perf_counter() - start:6.0f}s] "
                  f"{row['unit']} {row['protocol']} r{row['replicate']} {row['method']}: {row['status']} F1 {f1}",
                  file=sys.stderr, flush=True)

    if workers == 1:
        with threadpool_limits(1):
            for i, job in enumerate(jobs):
                rows[i] = evaluate_job(job)
                report(i)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        from causal_gym._workers import limit_blas_threads

        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context, initializer=limit_blas_threads) as pool:
            futures = {pool.submit(_worker_row, job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                rows[futures[future]] = future.result()
                report(futures[future])
    return [row for row in rows if row is not None]


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def summarize_rows(rows: Sequence[Mapping[str, Any]], methods: Sequence[str]) -> dict[str, Any]:
    """Replicate-averaged rows and the tables printed by :func:`main` (plain JSON).

    Returns
    -------
    dict
        ``averaged`` (one row per method, unit and split), ``by_d`` (synthetic mean F1 / SHD and
        counts per method, split and d, plus ``"all"``), ``by_family`` (synthetic obs F1 per
        method and graph family, :func:`~.analysis.slice_scores`), ``grounded`` (per method,
        source and split), ``win_rates`` (pairwise, obs synthetic units) and ``overall_win_rates``,
        ``statuses`` (per method and split) and ``runtime`` (:func:`~.analysis.runtime_summary` per
        method and split).
    """
    from causal_gym.envs.arena.analysis import overall_win_rates, runtime_summary, slice_scores, win_rates
    from causal_gym.envs.arena.scoring import average_replicates

    averaged = average_replicates(rows, keys=("method", "unit", "protocol"))
    synthetic = [r for r in averaged if r["source"] == "synthetic"]
    by_d: dict[str, Any] = {}
    for method in methods:
        for split in ("obs", "obs+int"):
            cells = [r for r in synthetic if r["method"] == method and r["protocol"] == split]
            if not cells:
                continue
            out = {}
            for d in sorted({r["d"] for r in cells}) + ["all"]:
                chosen = [r for r in cells if d == "all" or r["d"] == d]
                out[str(d)] = {"f1": _mean(r["f1"] for r in chosen), "shd": _mean(r["shd"] for r in chosen),
                               "n_units": len(chosen), "n_scored": sum(r["f1"] is not None for r in chosen)}
            by_d[f"{method}/{split}"] = out
    grounded: dict[str, Any] = {}
    for method in methods:
        for source in ("formula", "semantic"):
            for split in ("obs", "obs+int"):
                chosen = [r for r in averaged if r["method"] == method and r["source"] == source
                          and r["protocol"] == split]
                if chosen:
                    grounded[f"{method}/{source}/{split}"] = {
                        "f1": _mean(r["f1"] for r in chosen), "shd": _mean(r["shd"] for r in chosen),
                        "n_units": len(chosen), "n_scored": sum(r["f1"] is not None for r in chosen)}
    observational = [r for r in synthetic if r["protocol"] == "obs"]
    pairwise = win_rates(observational) if observational else []
    statuses: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = statuses.setdefault(f"{row['method']}/{row['protocol']}", {})
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return {
        "averaged": averaged,
        "by_d": by_d,
        "by_family": slice_scores(observational, "graph_family") if observational else [],
        "by_family_int": slice_scores([r for r in synthetic if r["protocol"] == "obs+int"], "graph_family"),
        "grounded": grounded,
        "win_rates": pairwise,
        "overall_win_rates": overall_win_rates(pairwise),
        "statuses": statuses,
        "runtime": runtime_summary(rows, by=("method", "protocol")),
    }


def _cell(value: float | None, paper: float | None, digits: int = 2) -> str:
    ours = "  -  " if value is None else f"{value:.{digits}f}"
    reference = "-" if paper is None else f"{paper:.{digits}f}"
    return f"{ours} ({reference})"


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
            paper_d = PAPER_TABLE9.get(method, {})
            paper_all = PAPER_TABLE2.get(method, {}).get(f"synthetic/{split}", (None, None))
            which = 0 if split == "obs" else 1
            line = f"{PAPER_NAMES.get(method, method):14} {split:8} "
            ours = [cells[str(d)]["f1"] if str(d) in cells else None for d in dims]
            line += " ".join(f"{_cell(f1, paper_d.get(d, (None, None))[which]):>12}" for f1, d in zip(ours, dims))
            line += f" {_cell(cells['all']['f1'], paper_all[0]):>12} {_cell(cells['all']['shd'], paper_all[1], 1):>15}"
            line += f" {cells['all']['n_scored']:>3}/{cells['all']['n_units']:<3}"
            print(line)
    for title, key, which in (("obs", "by_family", 0), ("obs+int", "by_family_int", 1)):
        cells = {(c["method"], c["category"]): c for c in summary[key]}
        if not cells:
            continue
        families = [f for f in _FAMILY_ORDER if any(c[1] == f for c in cells)]
        present = [m for m in methods if any((m, f) in cells and cells[(m, f)]["mean"] is not None for f in families)]
        if not present:
            continue
        print(f"\nSynthetic {title}: directed F1 by graph family, ours (paper Table 8)")
        print(f"{'method':14} " + " ".join(f"{f[:12]:>12}" for f in families))
        for method in present:
            paper = PAPER_TABLE8.get(method, {})
            ours = [cells[(method, f)]["mean"] if (method, f) in cells else None for f in families]
            print(f"{PAPER_NAMES.get(method, method):14} " + " ".join(
                f"{_cell(f1, paper.get(f, (None, None))[which]):>12}" for f1, f in zip(ours, families)))
    if summary["overall_win_rates"]:
        pairs = {(r["method"], r["opponent"]): r["win_rate"] for r in summary["win_rates"]}
        ranked = [r["method"] for r in summary["overall_win_rates"]]
        print("\nPairwise win rates, obs synthetic units (F1 and SHD pooled; row beats column; cf. paper Figure 19)")
        print(f"{'method':14} {'overall':>8} " + " ".join(f"{PAPER_NAMES.get(m, m)[:8]:>8}" for m in ranked))
        for entry in summary["overall_win_rates"]:
            m = entry["method"]
            rates = " ".join(f"{'':>8}" if m == o else f"{pairs[(m, o)]:>8.2f}" if pairs.get((m, o)) is not None
                             else f"{'-':>8}" for o in ranked)
            overall = "-" if entry["win_rate"] is None else f"{entry['win_rate']:.2f}"
            print(f"{PAPER_NAMES.get(m, m):14} {overall:>8} {rates}")
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
                line = f"{PAPER_NAMES.get(method, method):14} {split:8}"
                for source, cell in zip(("formula", "semantic"), cells):
                    paper = PAPER_TABLE2.get(method, {}).get(f"{source}/{split}", (None, None))
                    f1, shd = (cell["f1"], cell["shd"]) if cell else (None, None)
                    line += f" {_cell(f1, paper[0]):>14} {_cell(shd, paper[1], 1):>16}"
                print(line)
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


def _jobs(units: Sequence[ArenaInstance], splits: Sequence[str], replicates: int, n_obs: int | None,
          n_int: int | None, methods: Sequence[str], timeout: float) -> list[Job]:
    jobs = []
    for unit in units:
        for split in splits:
            obs_rows = n_obs if n_obs is not None else (1000 if split == "obs" else 800)
            int_rows = 0 if split == "obs" else (n_int if n_int is not None else 200)
            for replicate in range(replicates):
                jobs += [Job(unit, split, replicate, obs_rows, int_rows, method, timeout) for method in methods]
    return jobs


def _audits(jobs: Sequence[Job]) -> dict[str, Any]:
    """The interventional audit of every obs+int split among the jobs, by unit and replicate."""
    out = {}
    for job in jobs:
        name = f"{job.instance.unit}/r{job.replicate}"
        if job.split == "obs+int" and name not in out:
            audit = load_task(job.instance, job.split, job.replicate, job.n_obs, job.n_int).audit
            out[name] = {"passed": audit.passed, "reasons": list(audit.reasons)}
    return out


def _names(text: str | None, choices: Sequence[str], what: str) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(check_choice(item.strip(), choices, what) for item in text.split(",") if item.strip())


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> dict[str, Any]:
    """Parse ``argv`` (default: sys.argv), run the grid, print the tables; returns the JSON output."""
    from causal_gym.discovery import methods as all_methods
    from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
    from causal_gym.envs.arena.pool import DIMENSIONS, PER_BLOCK
    from causal_gym.envs.arena.protocol import N_REPLICATES

    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true",
                        help="1 config per graph family at d=10 (obs, obs+int) and the grounded scenarios (obs), "
                        "1 replicate")
    parser.add_argument("--methods", help=f"comma-separated methods (default {','.join(METHODS)})")
    parser.add_argument("--families", help="comma-separated graph families (default all 10)")
    parser.add_argument("--dims", help="comma-separated d (default: quick 10, full 10,20,30,50,100)")
    parser.add_argument("--per-block", type=int,
                        help=f"configs per (family, d) block (default: quick 1, full {PER_BLOCK})")
    parser.add_argument("--replicates", type=int, help=f"replicates per unit (default: quick 1, full {N_REPLICATES})")
    parser.add_argument("--n-obs", type=int, help="observational rows (default 1000 obs, 800 obs+int)")
    parser.add_argument("--n-int", type=int, help="interventional rows of obs+int (default 200)")
    parser.add_argument("--timeout", type=float, help="seconds per run (default: quick 600, full 3600)")
    parser.add_argument("--scenarios", help="comma-separated grounded scenario names (default all 60)")
    parser.add_argument("--no-grounded", action="store_true", help="skip the formula and semantic scenarios")
    parser.add_argument("--grounded-splits", help="splits of the grounded units (default: quick obs, full obs,obs+int)")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--json", help="write the rows and tables to this file")
    parser.add_argument("--quiet", action="store_true", help="no per-run progress lines")
    args = parser.parse_args(argv)

    methods = _names(args.methods, all_methods(), "method") or METHODS
    families = _names(args.families, GRAPH_FAMILIES, "graph family") or GRAPH_FAMILIES
    dims = tuple(int(d) for d in args.dims.split(",")) if args.dims else ((10,) if args.quick else DIMENSIONS)
    per_block = args.per_block if args.per_block is not None else (1 if args.quick else PER_BLOCK)
    replicates = args.replicates if args.replicates is not None else (1 if args.quick else N_REPLICATES)
    timeout = args.timeout if args.timeout is not None else (600.0 if args.quick else 3600.0)
    grounded_splits = _names(args.grounded_splits, ("obs", "obs+int"), "split") or (
        ("obs",) if args.quick else ("obs", "obs+int"))
    if args.workers < 1 or per_block < 1 or replicates < 1 or timeout <= 0:
        parser.error("--workers, --per-block and --replicates must be >= 1 and --timeout > 0")

    start = time.perf_counter()
    jobs = _jobs(synthetic_units(families, dims, per_block), ("obs", "obs+int"), replicates, args.n_obs,
                 args.n_int, methods, timeout)
    if not args.no_grounded:
        names = tuple(s.strip() for s in args.scenarios.split(",")) if args.scenarios else None
        grounded = grounded_units(names=names)
        jobs += _jobs(grounded, grounded_splits, replicates, args.n_obs, args.n_int, methods, timeout)
    rows = collect_rows(jobs, workers=args.workers, progress=not args.quiet)
    audits = _audits(jobs)
    summary = summarize_rows(rows, methods)
    print_tables(summary, methods, audits)
    print(f"\n{len(rows)} runs over {len({j.instance.unit for j in jobs})} units; {time.perf_counter() - start:.0f} s")
    output = {
        "config": {"methods": list(methods), "families": list(families), "dims": list(dims), "per_block": per_block,
                   "replicates": replicates, "n_obs": args.n_obs, "n_int": args.n_int, "timeout": timeout,
                   "grounded": not args.no_grounded, "grounded_splits": list(grounded_splits)},
        "rows": rows,
        "audits": audits,
        **summary,
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(output, stream, indent=1)
    return output


if __name__ == "__main__":
    main()
