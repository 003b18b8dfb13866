"""Resampling stability of a CI-test verdict.

A single p-value near ``alpha`` says little about how firm the verdict is. ``verdict_stability``
reruns the test on random subsamples and reports the share of them that call the pair
independent: near 1 or 0 the verdict is firm, near 0.5 it hinges on the sample.

Subsamples are drawn *without* replacement (a ``fraction`` of the rows each), not bootstrapped:
a bootstrap sample repeats rows, and repeated rows are at distance zero from each other, which
inflates kernel similarities (KCI sees spurious dependence) and makes Fisher-z count copies as
independent evidence. Subsampling keeps every resample a genuine sample of the distribution.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real
from typing import Any

import numpy as np

from causal_gym._validation import check_data
from causal_gym.stats.grades import check_alpha, verdict
from causal_gym.stats.tester import CITester, check_query, check_test_options

__all__ = ["verdict_stability"]


def verdict_stability(
    data: object,
    x: int,
    y: int,
    cond: Iterable[int] = (),
    test: str = "fisherz",
    alpha: float = 0.05,
    n_resamples: int = 20,
    fraction: float = 0.8,
    seed: int = 0,
    **options: Any,
) -> float:
    """Share of random subsamples on which ``x _||_ y | cond`` is judged independent.

    Each of the ``n_resamples`` subsamples holds ``round(fraction * n)`` distinct rows; the test
    (with ``options``, as in :class:`~causal_gym.stats.CITester`) runs on each and the verdict is
    ``p > alpha``. The result is deterministic for a given ``seed``. The cost is
    ``n_resamples`` tests.

    Parameters
    ----------
    data : array_like of shape (n, d)
        The samples.
    x, y : int
        The tested variables.
    cond : iterable of int
        The conditioning set.
    test : {"fisherz", "kci"}
        The CI test.
    alpha : float
        Significance level of each verdict, in ``(0, 1)``.
    n_resamples : int
        Number of subsamples (>= 1).
    fraction : float
        Share of the rows in each subsample, in ``(0, 1]``.
    seed : int
        Seed of the subsampling generator (non-negative).

    Returns
    -------
    float
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        On invalid data, nodes, test, option, ``alpha``, ``n_resamples``, ``fraction`` or
        ``seed``, when a subsample would have fewer than 3 rows, or when a subsample of
        discrete data happens to have a constant column.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> data = rng.normal(size=(300, 2))
    >>> verdict_stability(data, 0, 1, n_resamples=10) >= 0.7
    True
    """
    arr = check_data(data)
    n, d = arr.shape
    x, y, cond_set = check_query(x, y, cond, d)
    check_test_options(test, options)
    check_alpha(alpha)
    if isinstance(n_resamples, (bool, np.bool_)) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if isinstance(fraction, (bool, np.bool_)) or not isinstance(fraction, Real) or not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    size = int(round(fraction * n))
    if size < 3:
        raise ValueError(f"fraction={fraction} of {n} rows leaves {size} rows per subsample; at least 3 are needed")

    rng = np.random.default_rng(seed)
    independent = 0
    for _ in range(int(n_resamples)):
        rows = np.sort(rng.choice(n, size=size, replace=False))
        p = CITester(arr[rows], test, **options).pvalue(x, y, cond_set)
        independent += verdict(p, alpha) == "independent"
    return independent / int(n_resamples)
