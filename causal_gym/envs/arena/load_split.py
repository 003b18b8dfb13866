"""The load / per-graph split of amortized methods (paper Section 5, Table 4, Fig. 8).

A pretrained method pays a one-time load, then a forward pass per graph. Nested runs score the
first ``k`` graphs of one sample after one load, for a grid of ``k`` per ``d``; least squares fits
``T(k) = T_fixed + k T_graph`` per method and ``d`` (:func:`fit_load_split`). ``T(k)`` is the wall
time of a fresh process (``python -m causal_gym.discovery.amortized``): interpreter start, imports,
the checkpoint load and ``k`` inferences, i.e. what a user pays for ``k`` graphs. Data generation is
done beforehand and not timed. The sample at each ``d`` cycles through the graph families (balanced,
as in the paper), one SCM per graph from the arena's generator (no stressors, independent roots),
``n`` observational rows each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES, GenerationError
from causal_gym.envs.arena.synthetic import ArenaConfig, generate

__all__ = ["PAPER_K", "balanced_sample", "nested_timings", "fit_load_split"]

PAPER_K: Mapping[int, tuple[int, ...]] = {10: (100, 200, 500, 1000), 20: (50, 100, 200, 500), 30: (50, 100, 200, 500),
                                         50: (20, 50, 100, 200), 100: (20, 50, 100, 200)}
"""The paper's nested ``k`` grid per ``d`` (Table 4): larger at small ``d``, where a graph is cheap."""

_SEED = 44_000


def balanced_sample(d: int, count: int, n: int = 1000, seed: int = _SEED) -> list[np.ndarray]:
    """``count`` datasets of ``n`` rows at ``d``, graph families in turn; a family whose draw fails is redrawn."""
    datasets = []
    for i in range(count):
        family = GRAPH_FAMILIES[i % len(GRAPH_FAMILIES)]
        for attempt in range(20):
            try:
                scm = generate(ArenaConfig(family, d, seed=(seed, d, i, attempt)))
            except GenerationError:
                continue
            datasets.append(scm.sample(n, np.random.default_rng((seed, d, i, attempt, 1))))
            break
        else:
            raise GenerationError(f"no {family} SCM at d={d} in 20 attempts (graph {i})")
    return datasets


def nested_timings(method: str, dims: Sequence[int], ks: Mapping[int, Sequence[int]] | Sequence[int] | None = None,
                   n: int = 1000, seed: int = _SEED, progress: bool = True) -> list[dict[str, Any]]:
    """Wall seconds of a fresh process scoring the first ``k`` graphs of a balanced sample, per ``d`` and ``k``.

    ``ks``: one grid for every ``d``, a grid per ``d``, or None for :data:`PAPER_K`. Returns rows
    ``{"method", "d", "k", "seconds", "load_seconds", "infer_seconds"}`` (the last two as the process
    reported them).
    """
    from causal_gym.discovery.amortized import AMORTIZED_METHODS

    if method not in AMORTIZED_METHODS:
        raise ValueError(f"{method!r} is not an amortized method (known: {sorted(AMORTIZED_METHODS)})")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for d in dims:
            grid = sorted(PAPER_K[d] if ks is None else ks[d] if isinstance(ks, Mapping) else ks)
            if not grid or grid[0] < 1:
                raise ValueError(f"k must be positive integers, got {grid} at d={d}")
            path = Path(scratch) / f"d{d}.npz"
            np.savez(path, *balanced_sample(d, grid[-1], n, seed))
            for k in grid:
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "causal_gym.discovery.amortized", method, str(path),
                                       str(k)], capture_output=True, text=True)
                seconds = time.perf_counter() - start
                if done.returncode:
                    raise RuntimeError(f"{method} at d={d}, k={k} failed: {done.stderr.strip()[-2000:]}")
                report = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append({"method": method, "d": d, "k": k, "seconds": seconds,
                             "load_seconds": report["load_seconds"], "infer_seconds": sum(report["infer_seconds"])})
                if progress:
                    print(f"  {method} d={d} k={k}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return rows


def fit_load_split(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Least-squares ``T(k) = T_fixed + k T_graph`` per method and ``d`` (needs two distinct ``k``).

    Returns rows ``{"method", "d", "ks", "t_fixed", "t_graph", "r2"}`` and, per method, a row with
    ``d = "mean"``: the unweighted means of ``t_fixed`` and ``t_graph`` over ``d`` and the mean and
    minimum ``r2`` (as the paper's Table 4 reports them).
    """
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["method"], int(row["d"])), []).append(row)
    fits: list[dict[str, Any]] = []
    for (method, d), group in sorted(groups.items()):
        k = np.array([r["k"] for r in group], dtype=float)
        t = np.array([r["seconds"] for r in group], dtype=float)
        if np.unique(k).size < 2:
            raise ValueError(f"{method} at d={d}: a fit needs at least two distinct k, got {sorted(set(k))}")
        slope, intercept = np.polyfit(k, t, 1)
        residual = t - (intercept + slope * k)
        total = float(((t - t.mean()) ** 2).sum())
        r2 = 1.0 - float((residual ** 2).sum()) / total if total > 0 else 1.0
        fits.append({"method": method, "d": d, "ks": sorted(int(x) for x in k), "t_fixed": float(intercept),
                     "t_graph": float(slope), "r2": r2})
    for method in sorted({f["method"] for f in fits}):
        own = [f for f in fits if f["method"] == method]
        fits.append({"method": method, "d": "mean", "ks": None, "t_fixed": float(np.mean([f["t_fixed"] for f in own])),
                     "t_graph": float(np.mean([f["t_graph"] for f in own])),
                     "r2": float(np.mean([f["r2"] for f in own])), "min_r2": float(min(f["r2"] for f in own))})
    return fits
