"""Fisher-z partial-correlation test, numerically identical to causal-learn's ``fisherz``.

The p-value of ``x _||_ y | S`` comes from the inverse of the correlation sub-matrix over
``[x, y, *S]`` (with ``x < y`` and ``S`` sorted, the order causal-learn uses, so that even the
rounding matches): the partial correlation ``r = -P[0, 1] / sqrt(|P[0, 0] P[1, 1]|)`` is clipped
just inside ``(-1, 1)``, turned into Fisher's ``z = atanh(r)`` and scaled by
``sqrt(n - |S| - 3)``; the p-value is two-sided under the standard normal. The correlation matrix
is computed once per dataset, each test only inverts a ``(|S| + 2)``-square sub-matrix.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["correlation_matrix", "fisherz_pvalue"]

_R_CLIP = 1.0 - np.finfo(float).eps


def correlation_matrix(data: np.ndarray) -> np.ndarray:
    """Pearson correlation matrix of the columns of an ``(n, d)`` array (``np.corrcoef`` of ``data.T``)."""
    return np.corrcoef(data.T)


def fisherz_pvalue(corr: np.ndarray, n: int, x: int, y: int, cond: tuple[int, ...]) -> float:
    """Two-sided Fisher-z p-value for ``x _||_ y | cond`` from a precomputed correlation matrix.

    Parameters
    ----------
    corr : ndarray of shape (d, d)
        Correlation matrix of the data (:func:`correlation_matrix`).
    n : int
        Number of samples behind ``corr``.
    x, y : int
        Tested variables, ``x < y`` (the order fixes the rounding; the test is symmetric).
    cond : tuple of int
        Sorted conditioning set, disjoint from ``{x, y}``.

    Raises
    ------
    ValueError
        If the correlation sub-matrix is exactly singular, or ``n < |cond| + 3`` (the statistic's
        degrees of freedom would be negative).
    """
    dof = n - len(cond) - 3
    if dof < 0:
        raise ValueError(
            f"Fisher-z with {len(cond)} conditioning variables needs at least {len(cond) + 3} samples, got {n}"
        )
    index = [x, y, *cond]
    try:
        precision = np.linalg.inv(corr[np.ix_(index, index)])
    except np.linalg.LinAlgError:
        raise ValueError(
            f"the correlation matrix of variables {index} is singular (collinear columns); Fisher-z is undefined"
        ) from None
    r = -precision[0, 1] / math.sqrt(abs(precision[0, 0] * precision[1, 1]))
    if abs(r) >= 1:
        # a deterministic relation (or tiny n) gives |r| = 1 up to rounding; keep atanh finite
        r = _R_CLIP * np.sign(r)
    z = 0.5 * math.log((1 + r) / (1 - r))
    statistic = math.sqrt(dof) * abs(z)
    from scipy.special import ndtr

    return float(2 * (1 - ndtr(abs(statistic))))
