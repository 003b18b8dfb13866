"""Linear NOTEARS (Zheng, Aragam, Ravikumar & Xing, NeurIPS 2018), written from the paper.

The DAG search is cast as a smooth equality-constrained program over a weighted adjacency matrix
``W`` (``W[i, j]`` is the effect of ``i`` on ``j``):

    minimise  F(W) = 1/(2n) ||X - X W||_F^2 + lambda1 ||W||_1   subject to  h(W) = 0,
    h(W) = tr(exp(W o W)) - d,

where ``o`` is the element-wise product; ``h(W) = 0`` exactly when ``W`` has no directed cycle
(``tr(exp(.))`` counts weighted closed walks). The constraint is handled by the augmented
Lagrangian ``F(W) + rho/2 h(W)^2 + alpha h(W)``: each subproblem is solved by L-BFGS-B, ``rho``
grows tenfold until ``h`` has shrunk to a quarter of its previous value, then the multiplier
takes a dual ascent step ``alpha += rho h``. The L1 term is made smooth by writing
``W = W+ - W-`` with ``W+, W- >= 0`` (box constraints that L-BFGS-B handles natively); diagonal
entries are pinned to 0. Finally weights with ``|W| < w_threshold`` are cut, as in the paper.
"""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_count, check_real
from causal_gym.discovery.result import MethodOutput

__all__ = ["notears"]


def _acyclicity(w: np.ndarray) -> tuple[float, np.ndarray]:
    """``h(W) = tr(exp(W o W)) - d`` and its gradient ``exp(W o W)^T o 2W``."""
    from scipy.linalg import expm

    e = expm(w * w)
    return float(np.trace(e)) - w.shape[0], e.T * 2.0 * w


def _fit(x: np.ndarray, lambda1: float, max_iter: int, h_tol: float, rho_max: float) -> tuple[np.ndarray, float]:
    """Unthresholded NOTEARS weights for centred data ``x`` and the final ``h``."""
    from scipy.optimize import minimize

    n, d = x.shape
    gram = x.T @ x / n

    def split(v: np.ndarray) -> np.ndarray:
        return (v[: d * d] - v[d * d:]).reshape(d, d)

    def objective(v: np.ndarray, rho: float, alpha: float) -> tuple[float, np.ndarray]:
        w = split(v)
        # 1/(2n)||X - XW||^2 expanded through the Gram matrix: no n x d product per evaluation.
        gw = gram @ w
        loss = 0.5 * np.trace(gram - 2.0 * gw + w.T @ gw)
        h, grad_h = _acyclicity(w)
        smooth_grad = (gw - gram) + (rho * h + alpha) * grad_h
        value = loss + 0.5 * rho * h * h + alpha * h + lambda1 * v.sum()
        grad = np.concatenate([(smooth_grad + lambda1).ravel(), (lambda1 - smooth_grad).ravel()])
        return value, grad

    off_diagonal = [(0.0, 0.0) if i == j else (0.0, None) for i in range(d) for j in range(d)]
    bounds = off_diagonal * 2
    v = np.zeros(2 * d * d)
    rho, alpha, h = 1.0, 0.0, np.inf
    for _ in range(max_iter):
        while rho < rho_max:
            solution = minimize(objective, v, args=(rho, alpha), method="L-BFGS-B", jac=True, bounds=bounds)
            h_new, _ = _acyclicity(split(solution.x))
            if h_new > 0.25 * h:
                rho *= 10.0
            else:
                break
        v, h = solution.x, h_new
        alpha += rho * h
        if h <= h_tol or rho >= rho_max:
            break
    return split(v), h


def notears(data: np.ndarray, *, lambda1: float = 0.1, w_threshold: float = 0.3, max_iter: int = 100,
            h_tol: float = 1e-8, rho_max: float = 1e16) -> MethodOutput:
    """Linear NOTEARS with least-squares loss on centred data.

    Options
    -------
    lambda1 : float
        L1 penalty weight.
    w_threshold : float
        Estimated weights with ``|w| < w_threshold`` are set to 0.
    max_iter : int
        Maximum number of dual ascent steps.
    h_tol : float
        Stop once ``h(W) <= h_tol``.
    rho_max : float
        Stop once the penalty weight reaches ``rho_max``.

    Extras
    ------
    weights : (d, d) float array
        Thresholded ``W``; ``weights[i, j] != 0`` is the edge ``i -> j`` (were both ``w_ij`` and
        ``w_ji`` to survive -- only possible when ``h`` has not converged -- the pair would read as
        undirected in the graph encoding).
    h : float
        Acyclicity residual ``h(W)`` of the unthresholded solution.
    """
    lambda1 = check_real(lambda1, "lambda1", 0.0)
    w_threshold = check_real(w_threshold, "w_threshold", 0.0)
    max_iter = check_count(max_iter, "max_iter", 1)
    h_tol = check_real(h_tol, "h_tol", 0.0, strict=True)
    rho_max = check_real(rho_max, "rho_max", 0.0, strict=True)
    x = data - data.mean(axis=0)
    w, h = _fit(x, lambda1, max_iter, h_tol, rho_max)
    w[np.abs(w) < w_threshold] = 0.0
    return MethodOutput(graph=(w != 0).astype(np.int8), extras={"weights": w, "h": h})
