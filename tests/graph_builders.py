"""Hand-built graphs for tests, in causal_gym's encoding (written out edge by edge, so independent of graphs.py)."""

import numpy as np


def graph(d: int, directed: tuple = (), undirected: tuple = ()) -> np.ndarray:
    """A d×d int8 graph with the given directed (i, j) = i→j and undirected (i, j) = i—j edges."""
    a = np.zeros((d, d), dtype=np.int8)
    for i, j in directed:
        a[i, j] = 1
    for i, j in undirected:
        a[i, j] = a[j, i] = 1
    return a
