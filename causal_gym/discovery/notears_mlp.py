"""NOTEARS-MLP, nonparametric NOTEARS (Zheng, Dan, Aragam, Ravikumar & Xing, AISTATS 2020), through ``gcastle``.

Each node ``j`` is fitted by its own MLP from all variables, ``x_j ~ f_j(x)``; the first-layer
weights from input ``i`` of ``f_j`` give the edge strength ``W[i, j]`` (their Euclidean norm), so
``f_j`` does not depend on ``x_i`` when ``W[i, j] = 0``. Acyclicity is NOTEARS' constraint
``h(W) = tr(exp(W o W)) - d = 0``, handled by the augmented Lagrangian (each subproblem solved by
L-BFGS-B, ``rho`` raised tenfold until ``h`` falls to a quarter, then ``alpha += rho h``), with
an L1 penalty ``lambda1`` on the first layer and an L2 penalty ``lambda2`` on all weights. Edges
are the pairs with ``W[i, j] > w_threshold``.

The implementation is gcastle's ``NotearsNonlinear`` (Huawei Noah's Ark, a port of the authors'
code); CausalArena's Appendix B.4 settings (hidden size 10, ``lambda1 = lambda2 = 0.01``, 100
iterations, threshold 0.3) are its defaults and ours. This module drives its dual ascent steps
itself, for two reasons:

- a time limit: ``max_seconds`` is checked after each dual ascent step, and when it has passed the
  current ``W`` is returned, recorded as ``extras["stopped"] = "max_seconds"`` (a step in progress
  runs to its end, so the limit can be overshot by one step; the arena runner's per-unit limit
  still kills a unit that runs past it);
- a DAG always: a stopped (or unconverged) fit can leave a cycle among the surviving weights; the
  weakest edge of a remaining cycle is cut until none is left (counted in
  ``extras["cycle_edges_cut"]``, 0 after a converged fit).

gcastle has two import-time side effects that would leak into the caller's process, both undone
here: ``logging.basicConfig(level=INFO)`` on the root logger (every later INFO line of any library
would print) and ``torch.set_default_dtype(torch.double)``. The fit itself runs under double
precision, as the package intends, and restores the caller's default dtype afterwards.

Needs torch and gcastle (the ``arena`` extra). Slow: CausalArena's Table 5 gives 80 s per graph on
average (sd 99 s), its slowest method but one.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

import numpy as np

from causal_gym._validation import check_count, check_real
from causal_gym.discovery.result import MethodOutput

__all__ = ["notears_mlp"]


@contextlib.contextmanager
def _double_precision() -> Iterator[None]:
    import torch

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


@contextlib.contextmanager
def _root_logger_untouched() -> Iterator[None]:
    """Keep gcastle from configuring the root logger: its ``logging.basicConfig(level=INFO)`` at import
    and module-level ``logging.info`` calls (which run ``basicConfig()`` on a handler-less root)."""
    root = logging.getLogger()
    guard = logging.NullHandler()
    added = not root.handlers
    if added:  # basicConfig does nothing on a root logger that already has a handler
        root.addHandler(guard)
    try:
        yield
    finally:
        if added:
            root.removeHandler(guard)


def _import_learner() -> type:
    """gcastle's ``NotearsNonlinear``, imported without its side effects on logging and torch."""
    try:
        import torch
    except ImportError as error:
        raise ImportError("method 'notears_mlp' needs torch and gcastle: pip install 'causal-gym[arena]'") from error

    previous = torch.get_default_dtype()
    try:
        with _root_logger_untouched():
            from castle.algorithms.gradient.notears.torch.nonlinear import NotearsNonlinear
    except ImportError as error:
        raise ImportError("method 'notears_mlp' needs gcastle: pip install 'causal-gym[arena]' "
                          "(or pip install gcastle==1.0.4)") from error
    finally:
        torch.set_default_dtype(previous)
    return NotearsNonlinear


def _cut_cycles(weights: np.ndarray) -> int:
    """Zero the weakest edge of a directed cycle of ``weights != 0`` until none is left; returns the count."""
    from causal_gym.graphs import directed_cycle

    # two-cycles first: the graph encoding would read ``i -> j`` plus ``j -> i`` as one undirected edge
    both = np.triu((weights != 0) & (weights.T != 0), 1)
    rows, cols = np.nonzero(both)
    for i, j in zip(rows.tolist(), cols.tolist()):
        weakest = (i, j) if abs(weights[i, j]) <= abs(weights[j, i]) else (j, i)
        weights[weakest] = 0.0
    cut = len(rows)
    while (cycle := directed_cycle((weights != 0).astype(np.int8))) is not None:
        i, j = min(zip(cycle[:-1], cycle[1:]), key=lambda e: abs(weights[e]))
        weights[i, j] = 0.0
        cut += 1
    return cut


def notears_mlp(data: np.ndarray, *, hidden: int = 10, lambda1: float = 0.01, lambda2: float = 0.01,
                max_iter: int = 100, h_tol: float = 1e-8, rho_max: float = 1e16, w_threshold: float = 0.3,
                max_seconds: float | None = None, seed: int = 0) -> MethodOutput:
    """NOTEARS-MLP (one hidden layer per node); the thresholded first-layer norms are the edges of a DAG.

    Options
    -------
    hidden : int
        Hidden units of each node's MLP.
    lambda1, lambda2 : float
        L1 weight on the first layer, L2 weight on all layers.
    max_iter : int
        Maximum number of dual ascent steps.
    h_tol : float
        Stop once ``h(W) <= h_tol`` (converged).
    rho_max : float
        Stop once the penalty weight reaches ``rho_max``.
    w_threshold : float
        Edges are the pairs with ``W[i, j] > w_threshold``.
    max_seconds : float or None
        Wall-time budget, checked after each dual ascent step; past it the current ``W`` is used.
    seed : int
        Seed of the networks' initial weights (the global torch generator is left untouched).

    Extras
    ------
    weights : (d, d) float array
        ``W`` after thresholding and cycle cutting; ``weights[i, j] > 0`` is the edge ``i -> j``.
    edge_scores : (d, d) float array
        ``W`` before thresholding (a ranking of every ordered pair).
    h : float
        Acyclicity residual of the last iterate.
    iterations : int
        Dual ascent steps taken.
    stopped : str
        Why the loop ended: ``"h_tol"`` (converged), ``"rho_max"``, ``"max_iter"`` or ``"max_seconds"``.
    cycle_edges_cut : int
        Edges cut to make the thresholded graph acyclic (see the module docstring).
    """
    hidden = check_count(hidden, "hidden", 1)
    lambda1 = check_real(lambda1, "lambda1", 0.0)
    lambda2 = check_real(lambda2, "lambda2", 0.0)
    max_iter = check_count(max_iter, "max_iter", 1)
    h_tol = check_real(h_tol, "h_tol", 0.0, strict=True)
    rho_max = check_real(rho_max, "rho_max", 0.0, strict=True)
    w_threshold = check_real(w_threshold, "w_threshold", 0.0)
    if max_seconds is not None:
        max_seconds = check_real(max_seconds, "max_seconds", 0.0, strict=True)
    seed = check_count(seed, "seed", 0)
    NotearsNonlinear = _import_learner()
    import torch

    start = time.monotonic()
    x = np.ascontiguousarray(data, dtype=np.float64)
    with _root_logger_untouched():
        learner = NotearsNonlinear(lambda1=lambda1, lambda2=lambda2, max_iter=max_iter, h_tol=h_tol, rho_max=rho_max,
                                   w_threshold=w_threshold, hidden_layers=(hidden, 1))
    stopped, iterations = "max_iter", 0
    with torch.random.fork_rng(devices=[]), _double_precision():
        torch.manual_seed(seed)
        model = learner.get_model(x.shape[1])
        for iterations in range(1, max_iter + 1):
            learner.dual_ascent_step(model, x)
            if learner.h <= h_tol:
                stopped = "h_tol"
            elif learner.rho >= rho_max:
                stopped = "rho_max"
            elif max_seconds is not None and time.monotonic() - start >= max_seconds:
                stopped = "max_seconds"
            else:
                continue
            break
        raw = np.array(model.fc1_to_adj(), dtype=np.float64)
    np.fill_diagonal(raw, 0.0)
    weights = np.where(raw > w_threshold, raw, 0.0)  # strict, as gcastle
    cut = _cut_cycles(weights)
    return MethodOutput(graph=(weights != 0).astype(np.int8),
                        extras={"weights": weights, "edge_scores": raw, "h": float(learner.h),
                                "iterations": iterations, "stopped": stopped, "cycle_edges_cut": cut})
