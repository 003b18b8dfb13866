"""Fisher-z partial-correlation test, numerically identical to causal-learn's ``fisherz``.

The p-value of ``x _||_ y | S`` comes from the inverse of the correlation sub-matrix over
``[x, y, *S]`` (with ``x < y`` and ``S`` sorted, the order causal-learn uses, so that even the
rounding matches): the partial correlation ``r = -P[0, 1] / sqrt(|P[0, 0] P[1, 1]|)`` is clipped
just inside ``(-1, 1)``, turned into Fisher's ``z = atanh(r)`` and scaled by
``sqrt(n - |S| - 3)``; the p-value is two-sided under the standard normal. The correlation matrix
is computed once per dataset, each test only inverts a ``(|S| + 2)``-square sub-matrix.

Exactly singular sub-matrices (where causal-learn raises)
---------------------------------------------------------
A variable computed exactly as a linear combination of others (an accounting identity, a formula
node of a CausalArena card such as ``profit = revenue - costs``) makes some sub-matrices singular
in floating point; causal-learn's ``np.linalg.inv`` then raises and the whole PC run is lost, while
on a neighbouring matrix that rounding leaves invertible it returns the limit of the statistic.
We return that limit on every singular block instead of raising: ``x`` and ``y`` are regressed on
``S`` with a pseudo-inverse (collinear members of ``S`` add nothing), and

- if ``x`` or ``y`` is a linear function of ``S`` (residual variance below :data:`DETERMINED`),
  it is constant given ``S`` and so independent of the other: ``p = 1``, which is what the
  invertible neighbours give (a true statement about the distribution; that a deterministic node
  makes it unfaithful to the graph is the data's property, not the test's to hide);
- otherwise the partial correlation of the residuals goes through the usual statistic (a linear
  identity linking ``x`` and ``y`` given ``S`` gives ``|r| = 1``, hence ``p = 0``).

Invertible blocks keep causal-learn's arithmetic, so every p-value causal-learn returns is ours to the bit.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["DETERMINED", "correlation_matrix", "fisherz_pvalue"]

_R_CLIP = 1.0 - np.finfo(float).eps

DETERMINED = 1e-10
"""Residual variance (in correlation units) at or below which a variable of a singular block counts
as a linear function of the conditioning set."""


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
        If ``n < |cond| + 3`` (the statistic's degrees of freedom would be negative). An exactly
        singular sub-matrix does not raise (module docstring).

    Examples
    --------
    >>> x, y = np.random.default_rng(0).integers(-3, 4, size=(2, 40)).astype(float)
    >>> corr = correlation_matrix(np.column_stack([x, y, x + y]))
    >>> fisherz_pvalue(corr, 40, 0, 1, (2,))  # x and y determine each other given x + y
    0.0
    >>> fisherz_pvalue(corr, 40, 0, 2, (1,)) > 0.05  # ... and x + y is not independent of x given y
    False
    """
    dof = n - len(cond) - 3
    if dof < 0:
        raise ValueError(
            f"Fisher-z with {len(cond)} conditioning variables needs at least {len(cond) + 3} samples, got {n}"
        )
    index = [x, y, *cond]
    block = corr[np.ix_(index, index)]
    try:
        precision = np.linalg.inv(block)
    except np.linalg.LinAlgError:
        r = _singular_partial_correlation(block)
        if r is None:
            return 1.0
    else:
        r = -precision[0, 1] / math.sqrt(abs(precision[0, 0] * precision[1, 1]))
    if abs(r) >= 1:
        # a deterministic relation (or tiny n) gives |r| = 1 up to rounding; keep atanh finite
        r = _R_CLIP * np.sign(r)
    z = 0.5 * math.log((1 + r) / (1 - r))
    statistic = math.sqrt(dof) * abs(z)
    from scipy.special import ndtr

    return float(2 * (1 - ndtr(abs(statistic))))


def _singular_partial_correlation(block: np.ndarray) -> float | None:
    """Partial correlation of the first two variables of a singular correlation block given the rest,
    by least squares on the rest; ``None`` when either is a linear function of the rest."""
    residual = block[:2, :2]
    if block.shape[0] > 2:
        cross = block[2:, :2]
        residual = residual - cross.T @ np.linalg.pinv(block[2:, 2:], hermitian=True) @ cross
    if min(residual[0, 0], residual[1, 1]) <= DETERMINED:
        return None
    return float(residual[0, 1] / math.sqrt(residual[0, 0] * residual[1, 1]))
