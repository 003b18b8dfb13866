"""``InvarianceTester``: is a variable's (conditional) distribution the same in two regimes?

IGSP (Wang, Solus, Yang & Uhler 2017) orders arrows by invariance: an intervention on ``i`` that
leaves ``j``'s distribution unchanged says ``i`` is not an ancestor of ``j``. Under the linear
Gaussian model the conditional law of ``j`` given ``S`` is a regression (intercept, coefficients,
residual variance), so two regimes share it exactly when both agree. The test fits the regression
of ``j`` on ``S`` plus an intercept in each regime separately and combines, with a Bonferroni
correction (``p = min(1, 2 min(p_coef, p_var))``), two classical tests:

- coefficients (intercept included): the Wald statistic
  ``(b1 - b2)' (s1^2 (X1'X1)^-1 + s2^2 (X2'X2)^-1)^-1 (b1 - b2) / k`` against ``F(k, n1 + n2 - 2k)``
  (upper tail), ``k = |S| + 1``;
- residual variance: ``s1^2 / s2^2`` against ``F(n1 - k, n2 - k)``, two-sided.

These are the statistics of the Gaussian invariance test the IGSP authors used (the
``conditional_independence`` package's ``gauss_invariance_test``); the coefficient test here is
one-sided, as a Wald test is. A regime with at most ``k + 1`` rows has no residual degrees of
freedom to speak of and gives ``p = 1`` (no evidence of a change).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from causal_gym._validation import check_node, check_node_set

__all__ = ["InvarianceTester"]


class InvarianceTester:
    """Gaussian invariance tests between a reference regime and another, cached and counted.

    Parameters
    ----------
    reference, other : arrays of shape (n1, d) and (n2, d)
        Rows of the two regimes (say, observational rows and the rows of one intervention), over
        the same ``d`` variables. Validated by the caller (finite reals).

    Attributes
    ----------
    n_calls, n_computed : int
        Calls to :meth:`pvalue` (cache hits included) and distinct tests computed.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(400, 2)); b = rng.normal(size=(400, 2)); b[:, 1] += 1.0
    >>> tester = InvarianceTester(a, b)
    >>> tester.pvalue(0) > 0.05, tester.pvalue(1) < 1e-6
    (True, True)
    """

    def __init__(self, reference: np.ndarray, other: np.ndarray) -> None:
        if reference.ndim != 2 or other.ndim != 2 or reference.shape[1] != other.shape[1]:
            raise ValueError(f"both regimes need the same columns, got shapes {reference.shape} and {other.shape}")
        self.d = reference.shape[1]
        self._regimes = (np.column_stack([reference, np.ones(len(reference))]),
                         np.column_stack([other, np.ones(len(other))]))
        self._grams = tuple(x.T @ x for x in self._regimes)
        self._cache: dict[tuple[int, tuple[int, ...]], float] = {}
        self.n_calls = 0
        self.n_computed = 0

    def pvalue(self, j: int, cond: Iterable[int] = ()) -> float:
        """p-value of "``j`` given ``cond`` has the same Gaussian regression in both regimes"."""
        j = check_node(j, self.d, "j")
        cond_set = check_node_set(cond, self.d, "cond", exclude=(j,))
        key = (j, cond_set)
        self.n_calls += 1
        if key not in self._cache:
            self._cache[key] = self._compute(j, cond_set)
            self.n_computed += 1
        return self._cache[key]

    def _compute(self, j: int, cond: tuple[int, ...]) -> float:
        from scipy.stats import f as f_dist

        columns = [*cond, self.d]  # the regressors and the intercept column
        k = len(columns)
        fits = []
        for x, gram in zip(self._regimes, self._grams):
            n = x.shape[0]
            if n <= k + 1:
                return 1.0
            inverse = np.linalg.pinv(gram[np.ix_(columns, columns)], hermitian=True)
            coef = inverse @ gram[columns, j]
            residual = x[:, j] - x[:, columns] @ coef
            fits.append((n, coef, float(residual @ residual) / (n - k), inverse))
        (n1, b1, v1, g1), (n2, b2, v2, g2) = fits
        if v1 <= 0 or v2 <= 0:  # a variable exactly determined by cond in a regime: compare the variances only
            return 1.0 if v1 == v2 else 0.0
        diff = b1 - b2
        wald = float(diff @ np.linalg.pinv(v1 * g1 + v2 * g2, hermitian=True) @ diff) / k
        p_coef = float(f_dist.sf(wald, k, n1 + n2 - 2 * k))
        ratio = v1 / v2
        p_var = float(2 * min(f_dist.cdf(ratio, n1 - k, n2 - k), f_dist.sf(ratio, n1 - k, n2 - k)))
        return min(1.0, 2 * min(p_coef, p_var))
