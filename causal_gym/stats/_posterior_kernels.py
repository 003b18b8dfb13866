"""Compiled inner loops of the exact graph posterior (:mod:`causal_gym.stats.graph_posterior`).

Why numba: the dense reward of the intervention-design env recomputes a d = 10 posterior after
every step, and in numpy its many small array operations (a few thousand entries each) cost more
in call overhead and temporaries than in arithmetic. These loops do the same sums once per batch
member with no temporaries (issue 31: the reward at RL speed). The derivations, the data layout and
the guards live in ``graph_posterior``'s docstrings; these functions only implement them.

Compiled on first use and cached on disk (``cache=True``), so a process pays the compilation
(seconds) only the first time the package is used on a machine. ``error_model="numpy"``: a
division by zero or the log of zero gives inf or NaN as in numpy (the held tests catch them)
rather than raising.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def zeta_columns(x: np.ndarray, q: int, upward: bool) -> None:
    """In place: sums over subsets (``upward=False``) or supersets of the ``q``-bit codes of the rows of ``x (2^q, k)``.

    The codes run down the rows so that every addition runs along a contiguous row of ``k``
    independent columns (one column per node of every batch member).
    """
    n, k = x.shape
    for b in range(q):
        step = 1 << b
        for base in range(0, n, 2 * step):
            for i in range(base, base + step):
                if upward:
                    for c in range(k):
                        x[i, c] += x[i + step, c]
                else:
                    for c in range(k):
                        x[i + step, c] += x[i, c]


@njit(cache=True)
def _code_of(subset: int, j: int) -> int:
    """Node ``j``'s parent-set code of the ``d``-bit ``subset`` (bit ``j`` removed, the bits above shifted down)."""
    low = subset & ((1 << j) - 1)
    return low | ((subset >> (j + 1)) << j)


_DE_BRUIJN = np.array([0, 1, 28, 2, 29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4, 8,
                       31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6, 11, 5, 10, 9], dtype=np.int64)
"""Bit index of a power of two ``2^j < 2^32``: ``_DE_BRUIJN[((2^j * 0x077CB531) mod 2^32) >> 27]``."""


@njit(cache=True)
def _bit_index(power: int) -> int:
    return _DE_BRUIJN[((power * 0x077CB531) & 0xFFFFFFFF) >> 27]


@njit(cache=True)
def _next_of_size(x: int) -> int:
    """The next larger integer with as many set bits as ``x > 0`` (Gosper's hack)."""
    low = x & -x
    ripple = x + low
    return (((ripple ^ x) >> 2) // low) | ripple


@njit(cache=True, error_model="numpy")
def _sums_over_orders(alpha: np.ndarray, d: int, forward: np.ndarray, backward: np.ndarray,
                      log_f: np.ndarray, log_b: np.ndarray) -> None:
    """The sums over orders in linear space, each level divided by its maximum (whose log is kept per set size).

    ``F(S) = sum_{j in S} F(S - j) alpha_j(S - j)`` over the sets ``S`` of ``k`` members, and
    with them ``B(S') = sum_{j not in S'} alpha_j(S') B(S' + j)`` over their complements ``S'``
    (the same ``j``: the members of ``S``), so a level reads only the level before it.
    """
    full = (1 << d) - 1
    forward[0] = 1.0
    backward[full] = 1.0
    log_f[0] = 0.0
    log_b[d] = 0.0
    for k in range(1, d + 1):
        top_f = 0.0
        top_b = 0.0
        subset = (1 << k) - 1
        while subset <= full:
            co = full ^ subset
            total_f = 0.0
            total_b = 0.0
            bits = subset
            while bits:
                low = bits & -bits
                j = _bit_index(low)
                rest = subset ^ low
                total_f += forward[rest] * alpha[j, _code_of(rest, j)]
                total_b += alpha[j, _code_of(co, j)] * backward[co | low]
                bits ^= low
            forward[subset] = total_f
            backward[co] = total_b
            top_f = max(top_f, total_f)
            top_b = max(top_b, total_b)
            if subset == full:
                break
            subset = _next_of_size(subset)
        subset = (1 << k) - 1
        while subset <= full:
            forward[subset] /= top_f
            backward[full ^ subset] /= top_b
            if subset == full:
                break
            subset = _next_of_size(subset)
        log_f[k] = log_f[k - 1] + np.log(top_f)
        log_b[d - k] = log_b[d - k + 1] + np.log(top_b)


@njit(cache=True, error_model="numpy")
def linear_dp(ratio: np.ndarray, size: np.ndarray, normal: float,
              max_log_weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Koivisto's DP in linear space: ``(parent-set posterior, log F(V), held)`` for each of ``ratio (m, d, 2^(d-1))``.

    ``ratio`` is ``beta_j`` divided by its maximum (``exp`` taken by the caller, in numpy's
    vectorised ``exp``); ``size[c]`` is the number of parents in code ``c``. The scaling and the
    held test are those of ``graph_posterior._linear_dp``; ``log F(V)`` is the log of the product
    of the level maxima.
    """
    m, d, n = ratio.shape
    q = d - 1
    columns = m * d
    alpha_all = np.empty((n, columns))  # alpha_j(U) of member b at [U, b d + j]
    for b in range(m):
        for j in range(d):
            for c in range(n):
                alpha_all[c, b * d + j] = ratio[b, j, c]
    zeta_columns(alpha_all, q, False)
    below = np.empty((n, columns))
    held = np.ones(m, dtype=np.bool_)
    log_evidence = np.empty(m)
    alpha = np.empty((d, n))
    forward = np.empty(1 << d)
    backward = np.empty(1 << d)
    log_f = np.empty(d + 1)  # log scale of F per set size
    log_b = np.empty(d + 1)  # log scale of B per set size
    weight = np.empty(d)
    for b in range(m):
        ok = True
        for j in range(d):
            for c in range(n):
                value = alpha_all[c, b * d + j]
                alpha[j, c] = value
                if not value > normal:
                    ok = False
        _sums_over_orders(alpha, d, forward, backward, log_f, log_b)
        for s in range(1 << d):
            if not (forward[s] > normal and backward[s] > normal):
                ok = False
        for u in range(d):  # sets U of u members: w(u) = exp(sF(u) + sB(u + 1) - sF(d))
            log_weight = log_f[u] + log_b[u + 1] - log_f[d]
            if not abs(log_weight) < max_log_weight:
                ok = False
                log_weight = min(max(log_weight, -max_log_weight), max_log_weight)
            weight[u] = math.exp(log_weight)
        for j in range(d):
            low = (1 << j) - 1
            for c in range(n):
                subset = (c & low) | ((c & ~low) << 1)
                below[c, b * d + j] = forward[subset] * backward[subset | (1 << j)] * weight[size[c]]
        log_evidence[b] = log_f[d]
        held[b] = ok
    zeta_columns(below, q, True)
    parent_set = np.empty((m, d, n))
    for b in range(m):
        for j in range(d):
            mass = 0.0
            for c in range(n):
                value = ratio[b, j, c] * below[c, b * d + j]
                parent_set[b, j, c] = value
                mass += value
            if not abs(mass - 1.0) < 1e-9:  # also false for NaN or infinite entries
                held[b] = False
    return parent_set, log_evidence, held


@njit(cache=True, error_model="numpy")
def principal_pivots(r: np.ndarray) -> np.ndarray:
    """The pivots of the principal-minor recursion of SPD matrices ``r (G, m, m)``: ``(G, 2^m)``, ``[:, 0] = 1``.

    Griffin & Tsatsomeros (``graph_posterior``'s docstring): at level ``k`` the ``2^k`` Schur
    complements of size ``m - k``, one per choice among the first ``k`` indices; leaving index
    ``k`` out drops its row and column, keeping it takes the Schur complement on it, whose pivot
    is the ratio ``det r[S + k] / det r[S]``, stored at ``S + k``. Only lower triangles are kept
    (the matrices are symmetric), and entry ``(a, c)`` of all ``2^k`` matrices of a level is one
    contiguous run, so the updates run along rows that grow as the matrices shrink.
    """
    count, m = r.shape[0], r.shape[1]
    out = np.empty((count, 1 << m))
    largest = 1
    for k in range(m):
        largest = max(largest, (1 << k) * (m - k) * (m - k))
    current = np.empty(largest)
    following = np.empty(largest)
    scaled = np.empty(largest)
    for g in range(count):
        out[g, 0] = 1.0
        for a in range(m):
            for c in range(a + 1):
                current[a * m + c] = r[g, a, c]
        for k in range(m):
            half = 1 << k  # matrix s of this level: entry (a, c) at (a width + c) half + s
            width = m - k
            inner = width - 1
            for s in range(half):
                out[g, half + s] = current[s]
            for c in range(inner):
                column = (c + 1) * width * half
                for s in range(half):
                    scaled[c * half + s] = current[column + s] / current[s]
            for a in range(inner):
                row = (a + 1) * width * half
                for c in range(a + 1):
                    read = ((a + 1) * width + c + 1) * half
                    write = (a * inner + c) * 2 * half
                    for s in range(half):
                        value = current[read + s]
                        following[write + s] = value  # index k left out: drop its row and column
                        following[write + half + s] = value - current[row + s] * scaled[c * half + s]  # kept
            current, following = following, current
    return out


@njit(cache=True)
def best_parents(beta: np.ndarray) -> np.ndarray:
    """The ``d``-bit parent masks of the DAG maximising ``sum_j beta[j, pa(j)]`` (``beta (d, 2^(d-1))``, log scale).

    Silander & Myllymäki's recursion as ``graph_posterior.best_dag`` describes it; ties go to the
    smaller node index and parent-set code.
    """
    d, n = beta.shape
    q = d - 1
    full = (1 << d) - 1
    best = beta.copy()  # best[j, U] = max over P ⊆ U of beta[j, P]
    for j in range(d):
        for b in range(q):
            step = 1 << b
            for base in range(0, n, 2 * step):
                for i in range(base, base + step):
                    best[j, i + step] = max(best[j, i + step], best[j, i])
    top = np.empty(1 << d)  # the best score of a DAG on each subset
    top[0] = 0.0
    for subset in range(1, full + 1):  # subset - j < subset: every set after its subsets
        value = -np.inf
        for j in range(d):
            if (subset >> j) & 1:
                rest = subset ^ (1 << j)
                value = max(value, top[rest] + best[j, _code_of(rest, j)])
        top[subset] = value
    parents = np.zeros(d, dtype=np.int64)
    remaining = full
    for _ in range(d):
        sink, sink_value = -1, -np.inf
        for j in range(d):
            if (remaining >> j) & 1:
                rest = remaining ^ (1 << j)
                value = top[rest] + best[j, _code_of(rest, j)]
                if sink == -1 or value > sink_value:
                    sink, sink_value = j, value
        remaining ^= 1 << sink
        low = (1 << sink) - 1
        choice, choice_value = 0, beta[sink, 0]
        for c in range(1, n):
            mask = (c & low) | ((c & ~low) << 1)
            if mask & ~remaining == 0 and beta[sink, c] > choice_value:
                choice, choice_value = c, beta[sink, c]
        parents[sink] = (choice & low) | ((choice & ~low) << 1)
    return parents


@njit(cache=True, error_model="numpy")
def assemble_scores(logdet: np.ndarray, source: np.ndarray, constant: np.ndarray, a: np.ndarray,
                    size: np.ndarray) -> np.ndarray:
    """BGe local scores ``(M, d, 2^(d-1))`` from the principal log-determinants of each group of equal nodes.

    ``logdet (G, 2^d)`` of the distinct ``R``; ``source (M d,)``: the group of each node;
    ``constant`` and ``a`` ``(M, d, d)``: the score's constant and exponent per node and number of
    parents. ``score(j, P) = constant + a log det R[P, P] - (a + 1/2) log det R[P + j, P + j]``.
    """
    m, d = constant.shape[0], constant.shape[1]
    n = 1 << (d - 1)
    out = np.empty((m, d, n))
    for b in range(m):
        for j in range(d):
            table = logdet[source[b * d + j]]
            low = (1 << j) - 1
            for c in range(n):
                parents = (c & low) | ((c & ~low) << 1)
                p = size[c]
                out[b, j, c] = (constant[b, j, p] + a[b, j, p] * table[parents]
                                - (a[b, j, p] + 0.5) * table[parents | (1 << j)])
    return out
