"""A partial-correlation skeleton: the method a causal-discovery researcher writes in ten lines."""

from __future__ import annotations

import numpy as np
from scipy import stats


def partial_correlation_skeleton(data: np.ndarray, *, mask: np.ndarray | None = None,
                                 alpha: float = 0.01) -> np.ndarray:
    """``i -- j`` unless ``X_i`` and ``X_j`` are independent given all other variables.

    Fisher's z-test of each partial correlation (from the inverse correlation matrix) at level
    ``alpha``. Linear Gaussian data give the moral graph of the DAG: the skeleton plus an edge
    between the parents of each collider. Returns the causal_gym encoding: undirected edges, both
    entries 1.
    """
    n, d = data.shape
    precision = np.linalg.inv(np.corrcoef(data, rowvar=False))
    partial = -precision / np.sqrt(np.outer(np.diag(precision), np.diag(precision)))
    z = np.arctanh(np.clip(partial, -0.999999, 0.999999)) * np.sqrt(max(n - d - 1, 1))
    graph = (2 * stats.norm.sf(np.abs(z)) < alpha).astype(np.int8)
    np.fill_diagonal(graph, 0)
    return graph
