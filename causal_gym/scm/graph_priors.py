"""Random DAG priors over a uniformly random causal order.

Both priors first draw the causal order as a uniform random permutation of the nodes and then
add edges only from earlier to later nodes, so the result is acyclic by construction and no node
index is favoured (the Heuresis generator names variables in random order for the same reason).

The density parameter is the expected degree ``k = 2 E / d`` (E the number of edges): ``k = 2``
gives about ``d`` edges. Both priors match the expected edge count ``d k / 2`` exactly.

- :func:`erdos_renyi_dag`: every ordered pair (earlier, later) is an edge independently with
  probability ``p = k / (d - 1)``.
- :func:`barabasi_albert_dag`: preferential attachment along the causal order, see its docstring.
"""

from __future__ import annotations

import numpy as np

from causal_gym._validation import as_generator, check_count, check_real

__all__ = ["erdos_renyi_dag", "barabasi_albert_dag", "place_in_order"]


def _check_prior(d: object, expected_degree: object) -> tuple[int, float]:
    d = check_count(d, "d")
    k = check_real(expected_degree, "expected_degree", minimum=0.0)
    if k > d - 1:
        raise ValueError(f"expected_degree must be <= d - 1 = {d - 1} (the complete DAG), got {k}")
    return d, k


def place_in_order(edges_by_position: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Map an adjacency over causal-order positions to node indices (node ``order[a]`` at ``a``)."""
    d = order.size
    adjacency = np.zeros((d, d), dtype=np.int8)
    adjacency[np.ix_(order, order)] = edges_by_position
    return adjacency


def erdos_renyi_dag(d: int, expected_degree: float = 2.0, *, rng: object) -> np.ndarray:
    """Draw an Erdős–Rényi DAG over a uniformly random causal order.

    Parameters
    ----------
    d : int
        Number of nodes (>= 1).
    expected_degree : float
        ``2 E[#edges] / d``, in ``[0, d - 1]``; each of the ``d (d - 1) / 2`` forward pairs is an
        edge with probability ``expected_degree / (d - 1)``.
    rng : int, SeedSequence or Generator
        Explicit source of randomness.

    Returns
    -------
    ndarray of int8, shape (d, d)
        DAG adjacency, ``A[i, j] = 1`` for ``i -> j``.

    Examples
    --------
    >>> A = erdos_renyi_dag(10, rng=0)
    >>> A.shape, A.dtype
    ((10, 10), dtype('int8'))
    """
    d, k = _check_prior(d, expected_degree)
    gen = as_generator(rng)
    order = gen.permutation(d)
    p = k / (d - 1) if d > 1 else 0.0
    forward = np.triu(gen.random((d, d)) < p, k=1)
    return place_in_order(forward, order)


def _attachments_per_node(d: int, k: float) -> float:
    """Mean attachment count ``m`` whose BA graph has exactly ``d k / 2`` expected edges.

    The node at causal position ``t`` attaches to ``min(M, t)`` earlier nodes, where ``M`` is
    ``floor(m)`` or ``floor(m) + 1`` (the latter with probability ``m - floor(m)``). The expected
    edge count ``sum_t E[min(M, t)]`` is piecewise linear and increasing in ``m``, so the ``m``
    that hits the target is found on the integer grid and interpolated exactly. It is a little
    above ``k / 2`` because the first nodes have fewer than ``m`` predecessors to attach to.
    """
    target = d * k / 2.0
    positions = np.arange(1, d)

    def edges(m_int: int) -> float:
        return float(np.minimum(m_int, positions).sum())

    m_floor = 0
    while edges(m_floor + 1) < target:
        m_floor += 1
    low, high = edges(m_floor), edges(m_floor + 1)
    return m_floor + (target - low) / (high - low)


def barabasi_albert_dag(d: int, expected_degree: float = 2.0, *, rng: object) -> np.ndarray:
    """Draw a Barabási–Albert (preferential attachment) DAG over a uniformly random causal order.

    Attachment rule: nodes arrive one at a time. The node arriving at step ``t`` (``t = 1 .. d-1``)
    draws an attachment count ``M_t`` in ``{floor(m), floor(m) + 1}`` (the larger with probability
    ``m - floor(m)``, so the mean is ``m``) and attaches to ``min(M_t, t)`` distinct earlier arrivals,
    drawn one at a time without replacement, each draw picking an earlier node not yet chosen with
    probability proportional to its current degree + 1 (degree = number of edges, in or out, before
    step ``t``; the + 1 lets nodes without edges be chosen). ``m`` is ``expected_degree / 2``
    corrected so that the expected number of edges is exactly ``d * expected_degree / 2`` (early
    nodes cannot attach ``m`` times): for ``d = 10`` and degree 2, ``m = 1.125``.

    Orientation: an edge points from the newer node to the older one, so the hubs (early, often
    chosen nodes) are sinks with many parents and the causal order is the reverse arrival order.
    This is the convention of the simulators the field uses for "scale-free" DAGs (igraph's
    directed Barabási graph as used by NOTEARS/DAGMA), and it matters: hubs as sources make an
    almost tree-like graph in which every node has one parent, an easier task for CI-based search.
    The arrival order is a uniformly random permutation, so the causal order is too.

    Parameters
    ----------
    d : int
        Number of nodes (>= 1).
    expected_degree : float
        ``2 E[#edges] / d``, in ``[0, d - 1]``.
    rng : int, SeedSequence or Generator
        Explicit source of randomness.

    Returns
    -------
    ndarray of int8, shape (d, d)
        DAG adjacency, ``A[i, j] = 1`` for ``i -> j``.

    Examples
    --------
    >>> A = barabasi_albert_dag(10, rng=0)
    >>> int(A.sum()) >= 9  # every node after the first gets at least one parent when m >= 1
    True
    """
    d, k = _check_prior(d, expected_degree)
    gen = as_generator(rng)
    order = gen.permutation(d)
    forward = np.zeros((d, d), dtype=bool)
    if d == 1:
        return place_in_order(forward, order)
    m = _attachments_per_node(d, k)
    m_floor = int(np.floor(m))
    degree = np.zeros(d)
    for t in range(1, d):
        count = min(m_floor + int(gen.random() < m - m_floor), t)
        if count == 0:
            continue
        weight = degree[:t] + 1.0
        chosen = gen.choice(t, size=count, replace=False, p=weight / weight.sum())
        forward[t, chosen] = True  # newer node -> older nodes (hubs become sinks)
        degree[chosen] += 1.0
        degree[t] += count
    # forward[a, b] = 1 only for a > b: reversing the positions turns it into a causal order.
    return place_in_order(forward[::-1, ::-1], order)
