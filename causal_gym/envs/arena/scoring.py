"""CausalArena scoring (Appendix B.1-B.2): one row per method run, replicate averaging, statuses.

DAG metrics (the paper's)
-------------------------
Every output is scored as a directed graph against the true DAG: directed-edge precision, recall
and F1, SHD, nSHD = SHD / (d (d - 1)), SID, and AUROC / AP when the method reports edge scores
(``extras["edge_scores"]``, e.g. DAGMA's and RandomRegress' ``|W|``); otherwise those two are
missing (None), as in the paper's tables. Outputs with undirected edges (PC, GIES, GES, FCI's
mapped PAG) are first oriented at random with a fixed per-file seed (``ArenaDataset.file_seed``):
a uniformly random permutation of the nodes is drawn from ``numpy.random.default_rng(file_seed)``
and each undirected edge points from the earlier to the later node. Each edge's direction is a
fair coin, and on a CPDAG (or any chain graph) the result is acyclic, so SID is defined; when an
output still has a directed cycle (a method returning a cyclic graph) SID is missing. The same
file always gets the same orientation, so reruns are reproducible.

CPDAG-aware metrics (our addition)
----------------------------------
Beside them, without random orientation: SHD, arrowhead and adjacency precision / recall / F1
between the essential graphs. The truth is the interventional essential graph of the true DAG
for the split's target family (Hauser & Bühlmann 2012; the CPDAG for an observational split);
a DAG output is replaced by its essential graph under the same family, a PDAG output is taken as
it is. These do not charge a method for orientations the data cannot determine.

Runs and statuses
-----------------
:func:`evaluate` runs a method on a split and returns one row, whatever happens: ``"ok"`` with
metrics, or ``"failed"`` (an exception; the message is kept), ``"timeout"`` (the run exceeded
its budget and its process was terminated), ``"invalid"`` (the output is not a graph over the
split's variables) or ``"unsupported"`` (an interventional split for a method that takes no
intervention mask; the paper marks these cells missing). Metrics of a non-ok row are None.
:func:`average_replicates` averages each metric over a unit's successful replicates and keeps
the status counts, so a failure is never dropped.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from causal_gym._validation import check_adjacency, check_count, check_real
from causal_gym._workers import TimeLimitExceeded, call_with_time_limit
from causal_gym.envs.arena.protocol import ArenaDataset
from causal_gym.graphs import essential_graph, is_dag, kahn_order
from causal_gym.metrics import (
    adjacency_scores,
    arrowhead_scores,
    directed_edge_scores,
    edge_auroc,
    edge_average_precision,
    nshd,
    shd,
    sid,
)

__all__ = [
    "STATUSES",
    "DAG_METRICS",
    "CPDAG_METRICS",
    "METRICS",
    "orient_randomly",
    "score_graph",
    "evaluate",
    "average_replicates",
]

STATUSES = ("ok", "failed", "timeout", "invalid", "unsupported")
"""Possible ``status`` values of a run row."""

DAG_METRICS = ("precision", "recall", "f1", "shd", "nshd", "sid", "auroc", "ap")
"""The paper's metrics, computed on the randomly oriented output."""

CPDAG_METRICS = (
    "cpdag_shd",
    "arrow_precision",
    "arrow_recall",
    "arrow_f1",
    "adjacency_precision",
    "adjacency_recall",
    "adjacency_f1",
)
"""Equivalence-class-aware metrics (no random orientation)."""

METRICS = (*DAG_METRICS, *CPDAG_METRICS, "n_oriented")
"""Every numeric column of a run row; ``n_oriented`` counts the randomly oriented edges."""


def orient_randomly(graph: np.ndarray, seed: int) -> np.ndarray:
    """Orient every undirected edge along a random node permutation drawn from ``seed``.

    Directed edges are kept. On a chain graph (a CPDAG, an interventional essential graph, or a
    DAG) every permutation gives a DAG. On another PDAG (one with a partially directed cycle such
    as ``0 -> 1 -- 2 -- 0``, which Meek's completion can leave) the permutation could close a
    directed cycle; then the undirected edges follow the topological order of the directed edges
    that breaks ties by the same permutation, so the result is a DAG whenever the directed edges
    are acyclic.

    Examples
    --------
    >>> import numpy as np
    >>> chain = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])  # 0 -- 1 -- 2
    >>> oriented = orient_randomly(chain, seed=3)
    >>> int(oriented.sum()), bool((oriented & oriented.T).any())
    (2, False)
    """
    a = check_adjacency(graph, "graph").astype(bool)
    seed = check_count(seed, "seed", minimum=0)
    rank = np.empty(a.shape[0], dtype=np.int64)
    rank[np.random.default_rng(seed).permutation(a.shape[0])] = np.arange(a.shape[0])
    undirected = a & a.T
    oriented = a & (~undirected | (rank[:, None] < rank[None, :]))
    if is_dag(oriented):
        return oriented.astype(np.int8)
    # Kahn's order on the nodes relabelled by rank: among the nodes free to come next, the lowest rank
    order = kahn_order(a.shape[0], [(rank[i], rank[j]) for i, j in np.argwhere(a & ~a.T).tolist()])
    if len(order) < a.shape[0]:  # the directed edges themselves form a cycle: nothing to repair
        return oriented.astype(np.int8)
    position = np.empty_like(rank)
    position[np.argsort(rank)[order]] = np.arange(a.shape[0])
    return (a & (~undirected | (position[:, None] < position[None, :]))).astype(np.int8)


def score_graph(
    true_dag: np.ndarray,
    est: np.ndarray,
    *,
    orient_seed: int,
    edge_scores: np.ndarray | None = None,
    targets: Iterable[Sequence[int]] = (),
) -> dict[str, float | int | None]:
    """All metrics of one estimate (see the module docstring).

    Parameters
    ----------
    true_dag : (d, d) array
        The true DAG.
    est : (d, d) array
        The method's graph (DAG, CPDAG or PDAG) in the causal_gym encoding.
    orient_seed : int
        Seed of the random orientation (the split's ``file_seed``).
    edge_scores : (d, d) array, optional
        ``edge_scores[i, j]`` ranks ``i -> j``; enables AUROC and AP.
    targets : iterable of target sets
        The split's intervention target family (empty for observational data); sets the
        essential graphs of the CPDAG-aware metrics.

    Returns
    -------
    dict
        One entry per name in :data:`METRICS`; None where a metric is undefined.

    Raises
    ------
    ValueError
        If ``true_dag`` is not a DAG or the graphs differ in size.
    """
    truth = check_adjacency(true_dag, "true_dag")
    graph = check_adjacency(est, "est", d=truth.shape[0])
    family = [tuple(t) for t in targets]
    true_essential = essential_graph(truth, family)
    oriented = orient_randomly(graph, orient_seed)
    directed = directed_edge_scores(truth, oriented)
    d = truth.shape[0]
    ranking = d > 1 and 0 < int(truth.sum()) < d * (d - 1)
    est_essential = essential_graph(graph, family) if is_dag(graph) else graph
    arrows = arrowhead_scores(true_essential, est_essential)
    adjacency = adjacency_scores(truth, graph)
    return {
        "precision": directed.precision,
        "recall": directed.recall,
        "f1": directed.f1,
        "shd": shd(truth, oriented),
        "nshd": nshd(truth, oriented) if d > 1 else None,
        "sid": sid(truth, oriented) if is_dag(oriented) else None,
        "auroc": edge_auroc(truth, edge_scores) if edge_scores is not None and ranking else None,
        "ap": edge_average_precision(truth, edge_scores) if edge_scores is not None and ranking else None,
        "cpdag_shd": shd(true_essential, est_essential),
        "arrow_precision": arrows.precision,
        "arrow_recall": arrows.recall,
        "arrow_f1": arrows.f1,
        "adjacency_precision": adjacency.precision,
        "adjacency_recall": adjacency.recall,
        "adjacency_f1": adjacency.f1,
        "n_oriented": int(np.count_nonzero(np.triu(graph & graph.T))),
    }


# ---------------------------------------------------------------------------------------------
# running a method on a split
# ---------------------------------------------------------------------------------------------


def _call(name: str, data: np.ndarray, mask: np.ndarray | None, options: Mapping[str, Any]) -> tuple:
    """``("ok", graph, edge_scores, runtime, None)``, ``("invalid", ...)`` for an output that is no graph
    of the data's variables, or ``("failed", None, None, None, message)``."""
    from causal_gym.discovery import InvalidOutput, run

    try:
        result = run(name, data, mask, **options)
    except InvalidOutput as err:
        return ("invalid", None, None, None, str(err))
    except Exception as err:  # noqa: BLE001 -- every failure becomes a recorded row
        return ("failed", None, None, None, f"{type(err).__name__}: {err}")
    return ("ok", np.asarray(result.graph), result.extras.get("edge_scores"), result.runtime, None)


def _call_with_timeout(
    name: str, data: np.ndarray, mask: np.ndarray | None, options: Mapping[str, Any], timeout: float
) -> tuple:
    """:func:`_call` in the worker of :func:`causal_gym._workers.call_with_time_limit`, killed when it
    outlives ``timeout`` seconds."""
    try:
        return call_with_time_limit(functools.partial(_call, name, data, mask, options), timeout)
    except TimeLimitExceeded:
        return ("timeout", None, None, timeout, f"no result within {timeout} s")
    except BrokenProcessPool:
        return ("failed", None, None, None, "the worker process died without a result (killed, out of memory or crashed)")
    except Exception:  # noqa: BLE001 -- e.g. a result that could not be sent back; the row records it
        return ("failed", None, None, None, traceback.format_exc(limit=1))


def evaluate(
    method: str, dataset: ArenaDataset, *, timeout: float | None = None, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Run ``method`` on a split and score it: one row, whatever the outcome.

    Parameters
    ----------
    method : str
        A name from :func:`causal_gym.discovery.methods`.
    dataset : ArenaDataset
        The split; interventional splits pass their mask to methods that take one.
    timeout : float, optional
        Wall-time budget in seconds; the run then happens in a worker process that is killed on
        expiry (status ``"timeout"``; :func:`causal_gym._workers.call_with_time_limit`: a fresh
        interpreter, never a fork of this one). None runs in this process without a limit.
    options : mapping, optional
        Method options for :func:`causal_gym.discovery.run`.

    Returns
    -------
    dict
        ``method``, ``unit`` (``meta["unit"]``), ``protocol``, ``replicate``, ``d``, ``n``,
        ``status``, ``error`` (None when ok), ``runtime`` (seconds; the budget for a timeout),
        every metric of :data:`METRICS` (None unless ok), and the labels of ``meta["factors"]``.

    Raises
    ------
    ValueError
        On an unknown method, a bad timeout, or factor labels that clash with row keys.
    """
    from causal_gym.discovery import supports_interventions

    interventional = dataset.n_interventional > 0
    takes_mask = supports_interventions(method)
    if timeout is not None:
        timeout = check_real(timeout, "timeout", 0.0, strict=True)
    row: dict[str, Any] = {
        "method": method,
        "unit": dataset.meta.get("unit"),
        "protocol": dataset.meta.get("protocol"),
        "replicate": dataset.meta.get("replicate"),
        "d": dataset.d,
        "n": dataset.n,
    }
    factors = dict(dataset.meta.get("factors") or {})
    clash = sorted(set(factors) & (set(row) | {"status", "error", "runtime", *METRICS}))
    if clash:
        raise ValueError(f"factor labels {clash} clash with run-row keys; rename them")
    row.update(factors)
    empty = dict.fromkeys(METRICS)
    if interventional and not takes_mask:
        error = f"{method} takes no intervention mask"
        return {**row, "status": "unsupported", "error": error, "runtime": None, **empty}
    mask = np.asarray(dataset.mask) if interventional else None
    options = dict(options or {})
    call = _call(method, dataset.data, mask, options) if timeout is None else _call_with_timeout(
        method, dataset.data, mask, options, timeout
    )
    status, graph, edge_scores, runtime, error = call
    if status != "ok":
        return {**row, "status": status, "error": error, "runtime": runtime, **empty}
    try:
        graph = check_adjacency(graph, "the method's graph", d=dataset.d)
    except ValueError as err:
        return {**row, "status": "invalid", "error": str(err), "runtime": runtime, **empty}
    metrics = score_graph(
        dataset.true_adjacency, graph, orient_seed=dataset.file_seed, edge_scores=edge_scores,
        targets=dataset.target_family,
    )
    return {**row, "status": "ok", "error": None, "runtime": runtime, **metrics}


# ---------------------------------------------------------------------------------------------
# replicate averaging
# ---------------------------------------------------------------------------------------------


def average_replicates(
    rows: Iterable[Mapping[str, Any]], keys: Sequence[str] = ("method", "unit", "protocol")
) -> list[dict[str, Any]]:
    """Average replicate rows into one row per ``keys`` group (e.g. per method, SCM and split).

    Each metric is the mean over the group's ``"ok"`` rows (None when there is none); ``runtime``
    is the mean over rows that report one. Every other column that is constant within the group
    (factor labels, ``d``) is kept. Added columns: ``n_replicates``, ``n_ok``, ``statuses`` (a
    count per status) and ``status``: ``"ok"`` when every replicate succeeded, ``"partial"`` when
    some did, otherwise the most frequent failure status.

    Raises
    ------
    ValueError
        If a row lacks one of ``keys`` or ``status``.
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        missing = [k for k in (*keys, "status") if k not in row]
        if missing:
            raise ValueError(f"row lacks {missing}: {dict(row)!r}")
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    averaged = []
    for group_rows in groups.values():
        ok = [r for r in group_rows if r["status"] == "ok"]
        counts: dict[str, int] = {}
        for r in group_rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        out: dict[str, Any] = {}
        skip = {"replicate", "status", "error", "runtime", *METRICS}
        for column in group_rows[0]:
            shared = [r.get(column) for r in group_rows]
            if column not in skip and all(v == shared[0] for v in shared):
                out[column] = shared[0]
        for metric in METRICS:
            values = [r[metric] for r in ok if r.get(metric) is not None]
            out[metric] = float(np.mean(values)) if values else None
        runtimes = [r["runtime"] for r in group_rows if r.get("runtime") is not None]
        out["runtime"] = float(np.mean(runtimes)) if runtimes else None
        failures = {s: c for s, c in counts.items() if s != "ok"}
        if not failures:
            status = "ok"
        elif ok:
            status = "partial"
        else:
            status = max(sorted(failures), key=lambda s: failures[s])
        out.update(n_replicates=len(group_rows), n_ok=len(ok), statuses=counts, status=status)
        averaged.append(out)
    return averaged
