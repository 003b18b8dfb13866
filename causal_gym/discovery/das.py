"""DAS, Discovery At Scale (Montagna, Noceti, Rosasco, Zhang, Bühlmann & Locatello, CLeaR 2023).

DAS assumes an additive noise model with Gaussian noise, ``x_j = f_j(pa_j) + e_j``, and reads the
graph off the Hessian of the log-density ``H = d^2 log p(x) / dx dx``, estimated from the rows
alone by Stein's identity (no density model):

1. **Order** (SCORE, Rolland et al. 2022): a node ``l`` is a leaf exactly when ``H[l, l]`` is
   constant over the rows (it is ``-1 / var(e_l)``); any other node's diagonal entry varies
   through its children's mechanisms. So the leaf is the argmin over nodes of the variance of the
   estimated ``H[j, j]`` across rows; remove it and repeat on the remaining columns. The reversed
   removal sequence is a topological order.
2. **Edges from the off-diagonal** (the DAS step): for a leaf ``l``, ``H[l, j]`` is zero for every
   row unless ``j`` is a parent of ``l`` (or shares a child with it). One Hessian is estimated on all
   columns; for each node, taken in reverse order, the candidates are its predecessors ranked by
   ``|median_rows H[l, j]|``: the top ``max_parents`` are kept when among the first ``min_parents``,
   or when a one-sided Welch t-test says ``|H[l, j]|`` exceeds ``|H[l, r]|`` (``r`` the weakest of the
   top ``max_parents``, taken as a zero entry) at level ``das_alpha``.
3. **CAM pruning** (Bühlmann, Peters & Ernest 2014): each node is regressed on its remaining
   candidates with an additive cubic B-spline model; a candidate stays a parent when its spline
   block is significant at level ``alpha``. The DAS step is what makes this cheap: CAM pruning
   alone regresses every node on all its predecessors.

Stein estimators (Li & Turner 2018; Rolland et al. 2022): with the Gaussian kernel
``K = exp(-|x - x'|^2 / (2 s^2)) / s``, ``s`` the median pairwise distance (where most rows tie, as
with a few discrete columns, the mean of the nonzero distances instead), the score is
``G = (K + eta_g I)^{-1} <nabla, K>`` and the Hessian ``H = -G G^T + (K + eta_h I)^{-1} <nabla^2, K>``,
row by row. All sums over rows are written as products with ``K`` (one Cholesky factor per
solve), so nothing of size ``n x n x d`` is built: ``n = 1000``, ``d = 30`` costs about one second.

Choices and why
---------------
- Written here, not wrapped: the reference implementation is ``dodiscover`` (py-why), which is not
  on PyPI (its source needs pygam, pandas and pywhy-graphs besides). The algorithm follows the
  paper and that implementation's defaults, which are CausalArena's settings (Appendix B.4:
  ``eta_G = eta_H = 0.001``, ``alpha = 0.05``, 10 splines of degree 3, parents 5 to 20).
- CAM pruning fits unpenalised B-splines by least squares and tests each parent's block with the
  Wald F-test (the partial F-test of dropping the block). The reference fits penalised splines
  (pygam, smoothing chosen by GCV) and uses their approximate p-values; unpenalised fits with an
  exact F reference need no smoothing search and are the more conservative of the two.
- ``min_parents`` and ``max_parents`` count candidate edges, excluding the node itself. As in the
  reference, the weakest of the top ``max_parents`` serves as the zero reference, so it is kept only
  within ``min_parents``; and the ranking is by ``|median H[l, j]|``, which is near zero for a parent
  whose effect is even (``x_j = x_i^2 + e``): such a parent is kept within ``min_parents`` or by its
  t-test, not by its rank.
- No standardisation: the kernel width is one median over all columns, as in the paper; the
  arena hands methods z-scored columns.
"""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_count, check_level, check_real
from causal_gym.discovery.result import MethodOutput

__all__ = ["das", "stein_hessian", "stein_hessian_diagonal", "score_order", "cam_prune"]


class _SteinKernel:
    """The Gaussian kernel of one data matrix and what Stein's estimators need from it."""

    def __init__(self, x: np.ndarray, eta_g: float) -> None:
        sq = (x * x).sum(1)
        dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)
        np.fill_diagonal(dist2, 0.0)
        dist = np.sqrt(dist2)
        s = float(np.median(dist))  # over all n^2 pairs, the diagonal's zeros included
        if s <= 0:
            # most rows tie (discrete columns, once few remain): the median heuristic has no scale, so
            # take the mean of the distances that are not zero (1 when every row is the same)
            positive = dist[dist > 0]
            s = float(positive.mean()) if positive.size else 1.0
        self.x, self.s = x, s
        self.k = np.exp(-dist2 / (2.0 * s * s)) / s
        self.row_sum = self.k.sum(1)
        self.kx = self.k @ x
        self._factors: dict[float, tuple[np.ndarray, bool]] = {}
        self.score = self.solve(eta_g, -(x * self.row_sum[:, None] - self.kx) / s**2)

    def solve(self, eta: float, rhs: np.ndarray) -> np.ndarray:
        """``(K + eta I)^{-1} rhs``, the Cholesky factor kept per ``eta``."""
        from scipy.linalg import cho_factor, cho_solve

        if eta not in self._factors:
            self._factors[eta] = cho_factor(self.k + eta * np.eye(len(self.k)), lower=True)
        return cho_solve(self._factors[eta], rhs)


def stein_hessian_diagonal(x: np.ndarray, eta_g: float = 0.001, eta_h: float = 0.001) -> np.ndarray:
    """Stein estimate of ``d^2 log p / dx_j^2`` at every row: an ``(n, d)`` array."""
    kernel = _SteinKernel(np.asarray(x, dtype=np.float64), eta_g)
    x, s, r = kernel.x, kernel.s, kernel.row_sum[:, None]
    # sum_i K_ki (-1/s^2 + (x_kj - x_ij)^2 / s^4), expanded into products with K
    nabla2_k = -r / s**2 + (x * x * r - 2.0 * x * kernel.kx + kernel.k @ (x * x)) / s**4
    return -kernel.score**2 + kernel.solve(eta_h, nabla2_k)


def stein_hessian(x: np.ndarray, eta_g: float = 0.001, eta_h: float = 0.001) -> np.ndarray:
    """Stein estimate of the Hessian of ``log p`` at every row: an ``(n, d, d)`` array."""
    kernel = _SteinKernel(np.asarray(x, dtype=np.float64), eta_g)
    x, s, r, kx = kernel.x, kernel.s, kernel.row_sum, kernel.kx
    n, d = x.shape
    # sum_i K_ki (x_kc - x_ic)(x_kj - x_ij) / s^4, minus sum_i K_ki / s^2 where c == j
    kxx = (kernel.k @ (x[:, :, None] * x[:, None, :]).reshape(n, d * d)).reshape(n, d, d)
    nabla2 = (x[:, :, None] * x[:, None, :] * r[:, None, None] - x[:, :, None] * kx[:, None, :]
              - kx[:, :, None] * x[:, None, :] + kxx) / s**4
    nabla2[:, np.arange(d), np.arange(d)] -= r[:, None] / s**2
    solved = kernel.solve(eta_h, nabla2.reshape(n, d * d)).reshape(n, d, d)
    return -kernel.score[:, :, None] * kernel.score[:, None, :] + solved


def score_order(x: np.ndarray, eta_g: float = 0.001, eta_h: float = 0.001) -> list[int]:
    """SCORE's topological order, causes first: repeatedly remove the column whose Hessian
    diagonal varies least over the rows (a leaf)."""
    x = np.asarray(x, dtype=np.float64)
    active = list(range(x.shape[1]))
    removed: list[int] = []
    while len(active) > 1:
        h_diag = stein_hessian_diagonal(x[:, active], eta_g, eta_h)
        leaf = int(np.argmin(h_diag.var(axis=0)))
        removed.append(active.pop(leaf))
    return active + removed[::-1]


def _candidates(hessian: np.ndarray, order: list[int], min_parents: int, max_parents: int,
                level: float) -> np.ndarray:
    """The DAS step: each node's candidate parents among its predecessors, from ``H[l, j]``."""
    from scipy.stats import ttest_ind

    d = hessian.shape[1]
    candidates = np.zeros((d, d), dtype=bool)
    for position, leaf in enumerate(order):
        before = np.asarray(order[:position], dtype=int)
        if before.size == 0:
            continue
        entries = np.abs(hessian[:, leaf, before])
        strength = np.abs(np.median(hessian[:, leaf, before], axis=0))
        top = np.argsort(-strength, kind="stable")[:max_parents]
        reference = entries[:, top[-1]]  # the weakest of the top, taken as a zero entry
        for rank, j in enumerate(top):
            if rank < min_parents:
                candidates[before[j], leaf] = True
                continue
            _, p = ttest_ind(entries[:, j], reference, equal_var=False, alternative="greater")
            candidates[before[j], leaf] = bool(p < level)
    return candidates


def _spline_block(x: np.ndarray, n_splines: int, degree: int) -> np.ndarray:
    """Centred cubic (degree ``degree``) B-spline basis of one column on equally spaced knots, one
    column dropped: the B-splines sum to one, which the intercept already spans."""
    from scipy.interpolate import BSpline

    low, high = float(x.min()), float(x.max())
    if high <= low:
        return np.zeros((len(x), 0))
    inner = np.linspace(low, high, n_splines - degree + 1)
    knots = np.concatenate([[low] * degree, inner, [high] * degree])
    basis = BSpline.design_matrix(x, knots, degree).toarray()
    basis -= basis.mean(0)
    return basis[:, :-1]


def cam_prune(x: np.ndarray, candidates: np.ndarray, alpha: float = 0.05, n_splines: int = 10,
              degree: int = 3) -> np.ndarray:
    """CAM pruning: keep candidate ``i -> j`` when ``x_i``'s spline block is significant (Wald F-test
    at level ``alpha``) in the additive regression of ``x_j`` on all its candidates.

    The number of splines drops (not below ``degree + 1``) so that each coefficient has at least
    three rows; a regression without residual degrees of freedom keeps all its candidates.
    """
    from scipy.stats import f as f_distribution

    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    graph = np.zeros((d, d), dtype=np.int8)
    for child in range(d):
        parents = np.flatnonzero(candidates[:, child])
        if parents.size == 0:
            continue
        splines = int(min(n_splines, max(degree + 1, n // (3 * parents.size))))
        blocks = [_spline_block(x[:, p], splines, degree) for p in parents]
        design = np.column_stack([np.ones(n), *blocks])
        gram_inv = np.linalg.pinv(design.T @ design)
        beta = gram_inv @ (design.T @ x[:, child])
        residual = x[:, child] - design @ beta
        dof = n - np.linalg.matrix_rank(design)
        if dof < 1:
            graph[parents, child] = 1
            continue
        sigma2 = float(residual @ residual) / dof
        start = 1
        for p, block in zip(parents, blocks):
            columns = slice(start, start + block.shape[1])
            start += block.shape[1]
            cov = gram_inv[columns, columns]
            q = np.linalg.matrix_rank(cov)
            if q == 0 or sigma2 <= 0:
                graph[p, child] = int(q > 0)
                continue
            wald = float(beta[columns] @ np.linalg.pinv(cov) @ beta[columns]) / (q * sigma2)
            graph[p, child] = int(f_distribution.sf(wald, q, dof) < alpha)
    return graph


def das(data: np.ndarray, *, eta_g: float = 0.001, eta_h: float = 0.001, alpha: float = 0.05,
        das_alpha: float = 0.05, n_splines: int = 10, spline_degree: int = 3, min_parents: int = 5,
        max_parents: int = 20) -> MethodOutput:
    """DAS: SCORE's order, Hessian-based candidate edges, CAM pruning; a DAG (see the module docstring).

    Options
    -------
    eta_g, eta_h : float
        Ridge terms of the Stein score and Hessian estimators.
    alpha : float
        Level of CAM pruning's F-tests (a candidate stays when its p-value is below it).
    das_alpha : float
        Level of the DAS step's Welch t-tests on the Hessian's off-diagonal entries.
    n_splines, spline_degree : int
        B-splines per parent in CAM pruning (lowered at small ``n`` per parent), and their degree.
    min_parents : int
        Candidates per node kept by the DAS step without a test (the strongest ones).
    max_parents : int
        Most candidates per node that the DAS step passes on to CAM pruning.

    Extras
    ------
    causal_order : list of int
        SCORE's topological order, causes first.
    candidate_graph : (d, d) int8 array
        The DAS step's edges, before CAM pruning.
    """
    eta_g = check_real(eta_g, "eta_g", 0.0, strict=True)
    eta_h = check_real(eta_h, "eta_h", 0.0, strict=True)
    alpha = check_level(alpha, "alpha")
    das_alpha = check_level(das_alpha, "das_alpha")
    spline_degree = check_count(spline_degree, "spline_degree", 1)
    n_splines = check_count(n_splines, "n_splines", spline_degree + 1)
    min_parents = check_count(min_parents, "min_parents", 0)
    max_parents = check_count(max_parents, "max_parents", 1)
    if min_parents > max_parents:
        raise ValueError(f"min_parents must be <= max_parents, got {min_parents} > {max_parents}")
    x = np.ascontiguousarray(data, dtype=np.float64)
    order = score_order(x, eta_g, eta_h)
    candidates = _candidates(stein_hessian(x, eta_g, eta_h), order, min_parents, max_parents, das_alpha)
    graph = cam_prune(x, candidates, alpha, n_splines, spline_degree)
    return MethodOutput(graph=graph, extras={"causal_order": order,
                                             "candidate_graph": candidates.astype(np.int8)})
