"""Evidence for the direction of an edge at an intervened node, from the known targets (GIES's principle).

An intervention on ``t`` changes ``t``'s own mechanism and no other node's. So for a pair ``t``, ``i``
adjacent in a DAG, with ``t`` intervened on in some rows: if ``t -> i``, the conditional of ``x_i``
given its parents and ``x_t``, fit on the observational rows, still describes ``x_i`` in the rows
that intervene on ``t``; if ``i -> t``, ``t`` is no ancestor of ``i``, so the conditional of
``x_i`` given its other parents alone does. The log-likelihood ratio of the two fitted conditionals
over those rows is evidence for ``t -> i`` (positive) or ``i -> t`` (negative); it holds for hard and
soft interventions alike, as it reads only the mechanism of the node not intervened on. This is
what separates the directions within GIES's interventional equivalence class.

The conditionals are Gaussian regressions on a few features of each parent (the value and three
``tanh`` steps, so saturating mechanisms are not forced to be lines), and only rows whose ``x_t``
lies within the observational 1%-99% range of ``x_t`` are scored (a regression is not asked to
extrapolate to an intervention value it never saw). The rule was chosen on draws of the prior's
evaluation stream (:mod:`.prior`), not on any benchmark: see docs/results/amortized.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["direction_evidence"]


FEATURES = 4
"""Regression features per parent: its z-scored value and three ``tanh`` steps of it."""


def _features(x: np.ndarray) -> np.ndarray:
    """An intercept, then :data:`FEATURES` columns per column of ``x`` (z-scored), column by column."""
    steps = np.stack([x, np.tanh(x), np.tanh(2 * x - 1), np.tanh(2 * x + 1)], axis=2)
    return np.column_stack([np.ones(len(x)), steps.reshape(len(x), -1)])


class _Regressions:
    """Least-squares regressions of one column on the features of others, fit on the observational
    rows through their Gram matrix (computed once, so each fit is a small solve)."""

    def __init__(self, features: np.ndarray, observational: np.ndarray, x: np.ndarray) -> None:
        seen = features[observational]
        self.n = len(seen)
        self.gram = seen.T @ seen
        self.cross = seen.T @ x[observational]  # (features, d)
        self.squares = (x[observational] ** 2).sum(axis=0)

    def log_likelihood(self, i: int, parents: list[int], new_features: np.ndarray, new_y: np.ndarray) -> float:
        """Gaussian log-likelihood of ``new_y`` under the regression of column ``i`` on ``parents``
        (residual variance that of the fit); ``new_features`` are the rows' :func:`_features`."""
        cols = np.r_[0, [1 + FEATURES * k + f for k in parents for f in range(FEATURES)]].astype(int)
        gram, cross = self.gram[np.ix_(cols, cols)], self.cross[cols, i]
        coef = np.linalg.lstsq(gram, cross, rcond=None)[0]
        variance = max(float(self.squares[i] - 2 * coef @ cross + coef @ gram @ coef) / self.n, 1e-12)
        residual = new_y - new_features[:, cols] @ coef
        return float(np.sum(-0.5 * np.log(2 * np.pi * variance) - 0.5 * residual**2 / variance))


def direction_evidence(data: np.ndarray, mask: np.ndarray, graph: np.ndarray) -> np.ndarray:
    """Log-likelihood evidence for each edge of ``graph`` with an intervened endpoint, ``nan`` elsewhere.

    Parameters
    ----------
    data : ndarray of shape (n, d)
    mask : ndarray of shape (n, d)
        ``mask[r, j]`` true when node ``j`` is intervened on in row ``r``; observational rows have none.
    graph : ndarray of shape (d, d)
        A DAG (``graph[i, j]`` for ``i -> j``) whose parents the conditionals use; its adjacencies
        are the pairs scored, whatever way each points.

    Returns
    -------
    ndarray of shape (d, d)
        Antisymmetric: ``[a, b] > 0`` favours ``a -> b`` over ``b -> a`` by that many nats, summed
        over the endpoints intervened on in at least two rows that do not also intervene on the other
        (each scored on the rows intervening on it alone, as above). ``nan`` for pairs not adjacent
        in ``graph``, or with no such endpoint, or too few observational rows to fit the regressions
        (fewer than twice their coefficients).
    """
    x = np.asarray(data, dtype=float)
    x = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-12)
    hit = np.asarray(mask).astype(bool)
    g = np.asarray(graph).astype(bool)
    d = x.shape[1]
    observational = np.asarray(~hit.any(axis=1))
    evidence = np.full((d, d), np.nan)
    targets = np.flatnonzero(hit.any(axis=0))
    if targets.size == 0 or not observational.any():
        return evidence
    features = _features(x)
    fits = _Regressions(features, observational, x)
    for t in targets:
        low, high = np.quantile(x[observational, t], [0.01, 0.99])
        for i in np.flatnonzero(g[t] | g[:, t]):
            rows = hit[:, t] & ~hit[:, i] & (x[:, t] >= low) & (x[:, t] <= high)
            others = [int(k) for k in np.flatnonzero(g[:, i]) if k != t]
            with_t = [*others, int(t)]
            if rows.sum() < 2 or fits.n < 2 * (1 + FEATURES * len(with_t)):
                continue
            nats = (fits.log_likelihood(i, with_t, features[rows], x[rows, i])
                    - fits.log_likelihood(i, others, features[rows], x[rows, i]))
            for a, b, value in ((t, i, nats), (i, t, -nats)):
                evidence[a, b] = value if np.isnan(evidence[a, b]) else evidence[a, b] + value
    return evidence
