"""Column standardisation of sampled data."""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_data

__all__ = ["standardize"]


def standardize(data: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centre every column to mean 0 and scale it to (population) standard deviation 1.

    Heuresis standardises every column of an instance so that marginal variances stop revealing
    the causal order (varsortability).

    Parameters
    ----------
    data : array_like, shape (n, d)
        At least two rows, finite, no constant column.

    Returns
    -------
    standardized : ndarray, shape (n, d)
    mean, std : ndarray, shape (d,)
        The constants, so that ``standardized * std + mean`` recovers ``data``.

    Raises
    ------
    ValueError
        On non-finite values or a constant column (it cannot be scaled to unit variance).

    Examples
    --------
    >>> Xs, mean, std = standardize([[1.0, 10.0], [3.0, 30.0]])
    >>> Xs.tolist(), mean.tolist(), std.tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [2.0, 20.0], [1.0, 10.0])
    """
    X = check_data(data, "data", min_rows=2)
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    return (X - mean) / std, mean, std
