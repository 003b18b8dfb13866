"""The Gaussian BIC of a DAG from covariance blocks, observational and interventional.

A linear-Gaussian DAG model's maximised log-likelihood splits into one term per node, and each
term needs only the residual variance of the node regressed on its parents::

    s(k, pa) = -n_k / 2 * (1 + log sigma2(k | pa)) - lambda * (|pa| + 1),
    sigma2(k | pa) = S[k, k] - S[k, pa] S[pa, pa]^-1 S[pa, k],

with ``S`` a (maximum-likelihood, ``1/n``) covariance matrix and ``lambda`` the penalty per
free parameter (``|pa|`` weights and one variance). So the data are read once, into covariance
matrices, and every later local score is a Cholesky factorisation of a ``(|pa|+1)``-square block.

Two readings of the data share the class:

- observational (:meth:`GaussianBIC.from_data`): one covariance, ``n_k = n`` and
  ``lambda = penalty * log n``. With ``penalty=0.5`` this is causal-learn's ``local_score_BIC``
  (``causallearn.score.LocalScoreFunction``, version 0.1.4): covariance with ``ddof=0``, not
  correlation, likelihood ``-n/2 (1 + log sigma2)``, penalty ``lambda_value (|pa|+1) log n``.
- interventional (:meth:`GaussianBIC.from_environments`): Hauser & Bühlmann's (2012) score as the
  ``gies`` package computes it (``gies/scores/gauss_int_l0_pen.py``, 0.0.3). Node ``k`` is
  scored only on the rows of environments that do not target it (a hard intervention cuts it from
  its parents there), each environment centred on its own mean, their covariances pooled weighted
  by row count; ``n_k`` is the number of those rows and ``lambda = penalty * log N`` with ``N``
  all rows. With a single observational environment it coincides with the observational score.

Deterministic relations. Data with an exact linear relation among columns (a formula node
computed from its parents without noise) make some residual variance zero and the likelihood
unbounded; by default such data are refused with an error naming the column. ``ridge > 0`` scores
``S + ridge * diag(S)`` instead (every variance inflated by the factor ``1 + ridge``, so the score
stays invariant to rescaling a column): each residual variance is then at least about ``ridge``
times the node's variance, a deterministic parent set earns a large but finite gain of about
``n/2 log(1/ridge)``, and the search goes on. On data without such relations a tiny ridge changes
the scores by about ``n * ridge`` and the graphs not at all.

Local scores are cached by ``(node, parent set)``; :meth:`GaussianBIC.insert_gains` scores adding
each of many candidate parents to one parent set at once (one factorisation, then rank-one
updates in numpy), which is what the forward phase of GES spends its time on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from causal_gym._validation import check_real

__all__ = ["GaussianBIC", "COLLINEARITY_TOLERANCE"]

COLLINEARITY_TOLERANCE = 1e-10
"""Smallest accepted share of a column's variance left unexplained by the columns before it.

Below it the column is (numerically) a linear combination of others: its residual variance on
those parents is zero, the likelihood is unbounded, and no BIC comparison means anything.
"""


def _check_full_rank(cov: np.ndarray, where: str) -> None:
    """Raise a ValueError naming a column that is a linear combination of earlier ones."""
    var = np.diagonal(cov)
    flat = np.flatnonzero(var <= 0)
    if flat.size:
        raise ValueError(f"column {int(flat[0])} has no variance {where}; the Gaussian BIC needs every column to vary")
    scale = np.sqrt(var)
    corr = cov / np.outer(scale, scale)
    try:
        unexplained = np.diagonal(np.linalg.cholesky(corr)) ** 2
        if unexplained.min() >= COLLINEARITY_TOLERANCE:
            return
    except np.linalg.LinAlgError:
        pass
    # Error path only: find the first column explained by the columns before it.
    for k in range(1, corr.shape[0]):
        coef = np.linalg.lstsq(corr[:k, :k], corr[:k, k], rcond=None)[0]
        if 1.0 - corr[:k, k] @ coef < COLLINEARITY_TOLERANCE:
            others = np.flatnonzero(np.abs(coef) > 1e-8).tolist()
            raise ValueError(
                f"column {k} is (numerically) a linear combination of column(s) {others} {where}; the "
                "Gaussian BIC is unbounded on collinear data: drop or merge the duplicated columns"
            )
    raise ValueError(f"the covariance matrix {where} is singular; drop collinear columns")


class GaussianBIC:
    """Decomposable Gaussian BIC with a local-score cache (higher is better).

    Build it with :meth:`from_data` or :meth:`from_environments`; the constructor takes the
    sufficient statistics directly.

    Parameters
    ----------
    covariances : (m, d, d) array
        Distinct maximum-likelihood covariance matrices.
    group : (d,) int array
        ``covariances[group[k]]`` is the matrix node ``k`` is scored on.
    counts : (d,) array
        ``n_k``, the number of rows behind node ``k``'s matrix.
    parameter_cost : float
        ``lambda``, the penalty per free parameter in score units (``penalty * log N``).
    ridge : float
        Relative variance floor: every matrix is scored as ``S + ridge * diag(S)`` (module
        docstring); 0 scores ``S`` itself and refuses collinear data.

    Raises
    ------
    ValueError
        If some matrix has a column without variance or collinear columns.
    """

    def __init__(self, covariances: np.ndarray, group: np.ndarray, counts: np.ndarray, parameter_cost: float,
                 ridge: float = 0.0) -> None:
        ridge = check_real(ridge, "ridge", 0.0)
        self._cov = np.array(covariances, dtype=np.float64)
        if ridge:
            for cov in self._cov:
                cov[np.diag_indices_from(cov)] *= 1.0 + ridge
        self._group = np.asarray(group, dtype=np.intp)
        self._count = np.asarray(counts, dtype=np.float64)
        self.parameter_cost = float(parameter_cost)
        self.d = self._cov.shape[1]
        for g, cov in enumerate(self._cov):
            nodes = np.flatnonzero(self._group == g).tolist()
            where = "in the data" if self._cov.shape[0] == 1 else f"in the rows that score node(s) {nodes}"
            _check_full_rank(cov, where)
        self._cache: dict[tuple[int, frozenset[int]], float] = {}

    @classmethod
    def from_data(cls, data: np.ndarray, penalty: float = 0.5, ridge: float = 0.0) -> GaussianBIC:
        """Observational BIC: one covariance (``ddof=0``), ``lambda = penalty * log n``."""
        penalty = check_real(penalty, "penalty", 0.0, strict=True)
        n, d = data.shape
        centred = data - data.mean(axis=0)
        cov = centred.T @ centred / n
        return cls(cov[None], np.zeros(d, dtype=np.intp), np.full(d, float(n)), penalty * np.log(n), ridge)

    @classmethod
    def from_environments(
        cls, blocks: Sequence[np.ndarray], targets: Sequence[Sequence[int]], penalty: float = 0.5, ridge: float = 0.0
    ) -> GaussianBIC:
        """Interventional BIC of Hauser & Bühlmann over environments (row blocks and their targets).

        Node ``k`` uses the pooled within-environment covariance of the environments that do not
        target ``k``; nodes with the same such set of environments share one matrix.

        Raises
        ------
        ValueError
            If some node is a target in every environment (the family is not conservative: the
            node's mechanism is never observed), or on collinear data.
        """
        penalty = check_real(penalty, "penalty", 0.0, strict=True)
        d = blocks[0].shape[1]
        sizes = np.array([b.shape[0] for b in blocks], dtype=np.float64)
        scatters = []
        for b in blocks:
            centred = b - b.mean(axis=0)
            scatters.append(centred.T @ centred)
        untargeted = np.ones((len(blocks), d), dtype=bool)
        for e, t in enumerate(targets):
            untargeted[e, list(t)] = False
        never = np.flatnonzero(~untargeted.any(axis=0))
        if never.size:
            raise ValueError(f"node(s) {never.tolist()} are targets in every environment; the family is not conservative")
        patterns, group = np.unique(untargeted.T, axis=0, return_inverse=True)
        covs = np.stack([sum(s for s, keep in zip(scatters, p) if keep) / sizes[p].sum() for p in patterns])
        counts = (untargeted.T * sizes).sum(axis=1)
        return cls(covs, group.reshape(-1), counts, penalty * np.log(sizes.sum()), ridge)

    def covariance(self, node: int) -> np.ndarray:
        """The covariance matrix node ``node`` is scored on (read-only view)."""
        view = self._cov[self._group[node]].view()
        view.flags.writeable = False
        return view

    def local(self, node: int, parents: Iterable[int]) -> float:
        """``s(node, parents)``, cached by ``(node, frozenset(parents))``."""
        key = (node, frozenset(parents))
        value = self._cache.get(key)
        if value is None:
            value = self._compute(node, sorted(key[1]))
            self._cache[key] = value
        return value

    def _compute(self, node: int, parents: list[int]) -> float:
        cov = self._cov[self._group[node]]
        if parents:
            idx = parents + [node]
            # The last diagonal entry of the Cholesky factor of the (parents, node) block is the
            # residual standard deviation of the node given its parents.
            resid = np.linalg.cholesky(cov[np.ix_(idx, idx)])[-1, -1] ** 2
        else:
            resid = cov[node, node]
        n = self._count[node]
        return float(-0.5 * n * (1.0 + np.log(resid)) - self.parameter_cost * (len(parents) + 1))

    def insert_gains(self, node: int, base: Sequence[int], candidates: np.ndarray) -> np.ndarray:
        """``s(node, base + {x}) - s(node, base)`` for every ``x`` in ``candidates``, vectorised.

        With ``beta = S[base, base]^-1 S[base, :]`` the partial covariances given ``base`` are
        ``S - S[:, base] beta``; adding ``x`` multiplies the node's residual variance by
        ``1 - rho^2``, ``rho`` their partial correlation. One solve serves all candidates, where
        scoring each separately would factorise one block per candidate.
        """
        cov = self._cov[self._group[node]]
        cols = np.concatenate(([node], candidates))
        if len(base):
            b = list(base)
            rows = cov[b]
            cross = rows[:, cols]
            # numpy's solve rather than scipy's triangular one: scipy's bundled BLAS can spin up
            # threads on every tiny call (milliseconds each) unless the caller has capped them.
            beta = np.linalg.solve(rows[:, b], cross)
            partial = cov[node, cols] - cross[:, 0] @ beta
            var = cov[cols, cols] - np.einsum("ij,ij->j", cross, beta)
        else:
            partial = cov[node, cols]
            var = cov[cols, cols]
        rho2 = partial[1:] ** 2 / (var[0] * var[1:])
        return -0.5 * self._count[node] * np.log1p(-rho2) - self.parameter_cost

    def total(self, dag: np.ndarray) -> float:
        """Score of a DAG (``dag[i, j]`` nonzero for ``i -> j``): the sum of its local scores."""
        b = np.asarray(dag, dtype=bool)
        return float(sum(self.local(k, np.flatnonzero(b[:, k]).tolist()) for k in range(self.d)))
