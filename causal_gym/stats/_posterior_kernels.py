"""Compiled inner loops of the exact graph posterior (:mod:`causal_gym.stats.graph_posterior`).

Why numba: the dense reward of the intervention-design env recomputes a d = 10 posterior after
every step, and in numpy its many small array operations (a few thousand entries each) cost more
in call overhead and temporaries than in arithmetic. These loops do the same sums with no
temporaries, the linear DP's along the batch (issue 31: the reward at RL speed). The derivations, the data layout and
the guards live in ``graph_posterior``'s docstrings; these functions only implement them.

Tables larger than the cache (d = 16, the capped d = 17-20: tens of MB per member) are read as
streams: the passes between the members-first and the codes-first layouts go by blocks of codes,
and the sums over orders read each node's subset sums from a copy sorted by set size, so memory is
swept once rather than a random cache line per read (issue 47: d = 20 twice as fast).

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
    independent columns (one column per node of every batch member); two bits per pass over the
    array (the same additions as one bit after the other, in the same order).
    """
    n, k = x.shape
    b = 0
    while b + 1 < q:
        step = 1 << b
        for base in range(0, n, 4 * step):
            for i in range(base, base + step):
                for c in range(k):
                    x0, x1, x2, x3 = x[i, c], x[i + step, c], x[i + 2 * step, c], x[i + 3 * step, c]
                    if upward:
                        x0, x2 = x0 + x1, x2 + x3
                        x[i, c], x[i + step, c] = x0 + x2, x1 + x3
                        x[i + 2 * step, c] = x2
                    else:
                        x1, x3 = x1 + x0, x3 + x2
                        x[i + step, c], x[i + 2 * step, c], x[i + 3 * step, c] = x1, x2 + x0, x3 + x1
        b += 2
    if b < q:
        step = 1 << b
        for i in range(step):
            for c in range(k):
                if upward:
                    x[i, c] += x[i + step, c]
                else:
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
    """The next larger integer with as many set bits as ``x > 0`` (Gosper's hack, a shift for its division)."""
    low = x & -x
    ripple = x + low
    return (((ripple ^ x) >> 2) >> _bit_index(low)) | ripple


_BLOCK_NUMBERS = 1 << 15
"""Numbers (256 KB) per block of codes in the passes between the members-first ``(m, d, 2^(d-1))`` and the codes-first
layout: a block's rows stay in cache over all ``(member, node)`` pairs, so memory is swept once, not once per pair
(20 sweeps of 84 MB at d = 20); at d = 10 and 16 members a block is 204 codes."""


@njit(cache=True)
def _code_block(n: int, d: int, m: int) -> int:
    """Codes per block: all of them while the table fits in the cache (2 MB), else blocks of 256 KB."""
    return n if n * d * m <= _BLOCK_NUMBERS * 8 else max(16, _BLOCK_NUMBERS // (d * m))


@njit(cache=True)
def _to_codes_first(x: np.ndarray, out: np.ndarray) -> None:
    """``out[c, j, b] = x[b, j, c]`` for ``x (m, d, n)``, by blocks of :func:`_code_block` codes."""
    m, d, n = x.shape
    block = _code_block(n, d, m)
    for first in range(0, n, block):
        last = min(first + block, n)
        for b in range(m):
            for j in range(d):
                for c in range(first, last):
                    out[c, j, b] = x[b, j, c]


@njit(cache=True)
def _by_size(alpha: np.ndarray, size: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[j, r, b] = alpha[c, j, b]`` with ``r`` the rank of code ``c`` by (number of parents, code); returns the
    first rank of each size ``(d + 1,)``.

    The sums over orders read ``alpha_j`` at the codes of one size at a time, in increasing order:
    in this layout each such read is the next number of one row (a stream the cache can prefetch),
    not a random line of the whole table (at d = 20, 84 MB: a cache miss for almost every read).
    """
    n, d, m = alpha.shape
    start = np.zeros(d + 1, dtype=np.int64)
    for c in range(n):
        start[size[c] + 1] += 1
    for k in range(d):
        start[k + 1] += start[k]
    rank = start.copy()
    for c in range(n):
        r = rank[size[c]]
        rank[size[c]] += 1
        for j in range(d):
            for b in range(m):
                out[j, r, b] = alpha[c, j, b]
    return start


@njit(cache=True, error_model="numpy")
def _sums_over_orders(alpha: np.ndarray, size: np.ndarray, sorted_alpha: np.ndarray, forward: np.ndarray,
                      backward: np.ndarray, log_f: np.ndarray, log_b: np.ndarray) -> None:
    """The sums over orders in linear space for ``m`` members at once, each level divided by its maximum.

    ``alpha (2^(d-1), d, m)``; ``size[c]`` the number of parents of code ``c``; ``sorted_alpha``
    work space of ``alpha``'s size (:func:`_by_size`); ``forward`` and ``backward`` ``(2^d, m)``;
    ``log_f`` and ``log_b`` ``(d + 1, m)``: the log scale per set size. ``F(S) = sum_{j in S}
    F(S - j) alpha_j(S - j)`` over the sets ``S`` of ``k`` members, and with them ``B(S') =
    sum_{j not in S'} alpha_j(S') B(S' + j)`` over their complements ``S'`` (the same ``j``: the
    members of ``S``), so a level reads only the level before it. Every update runs over the ``m``
    members (the last axis).

    A table larger than the cache is first copied by size (:func:`_by_size`): the sets ``S`` of a
    level come in increasing order, so for each ``j`` the codes of ``S - j`` rise through the codes
    of ``k - 1`` parents and those of ``S'`` fall through the codes of ``d - k``: each node's reads
    walk its row of the copy, one number after the other, instead of a random line of the table.
    """
    n, d, m = alpha.shape
    full = (1 << d) - 1
    sort = _code_block(n, d, m) < n  # larger than the cache
    start = _by_size(alpha, size, sorted_alpha) if sort else np.zeros(d + 1, dtype=np.int64)
    rise = np.empty(d, dtype=np.int64)  # per node: the rank of the next code of S - j (forward), of S' (backward)
    fall = np.empty(d, dtype=np.int64)
    forward[0] = 1.0
    backward[full] = 1.0
    log_f[0] = 0.0
    log_b[d] = 0.0
    sets = np.empty(max(1, (1 << d) // 2 + 1), dtype=np.int64)  # the sets of one size (at most C(d, d/2))
    top_f = np.empty(m)
    top_b = np.empty(m)
    for k in range(1, d + 1):
        top_f[:] = 0.0
        top_b[:] = 0.0
        rise[:] = start[k - 1]
        fall[:] = start[d - k + 1] - 1
        count = 0
        subset = (1 << k) - 1
        while subset <= full:
            co = full ^ subset
            for b in range(m):
                forward[subset, b] = 0.0
                backward[co, b] = 0.0
            bits = subset
            while bits:
                low = bits & -bits
                j = _bit_index(low)
                rest = subset ^ low
                more = co | low
                if sort:
                    ahead, behind = sorted_alpha[j, rise[j]], sorted_alpha[j, fall[j]]
                    rise[j] += 1
                    fall[j] -= 1
                else:
                    ahead, behind = alpha[_code_of(rest, j), j], alpha[_code_of(co, j), j]
                for b in range(m):
                    forward[subset, b] += forward[rest, b] * ahead[b]
                    backward[co, b] += behind[b] * backward[more, b]
                bits ^= low
            for b in range(m):
                top_f[b] = max(top_f[b], forward[subset, b])
                top_b[b] = max(top_b[b], backward[co, b])
            sets[count] = subset
            count += 1
            if subset == full:
                break
            subset = _next_of_size(subset)
        for i in range(count):
            for b in range(m):
                forward[sets[i], b] /= top_f[b]
                backward[full ^ sets[i], b] /= top_b[b]
        for b in range(m):
            log_f[k, b] = log_f[k - 1, b] + np.log(top_f[b])
            log_b[d - k, b] = log_b[d - k + 1, b] + np.log(top_b[b])


@njit(cache=True, error_model="numpy")
def linear_dp(ratio: np.ndarray, beta: np.ndarray, top: np.ndarray, size: np.ndarray, normal: float,
              max_log_weight: float, work: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Koivisto's DP in linear space: ``(parent-set posterior (m, d, 2^(d-1)), log F(V) (m,), held (m,), E (m,))``.

    ``ratio (m, d, 2^(d-1))`` is ``beta_j`` of each of ``m`` members divided by its maximum (its
    ``exp`` taken by the caller, in numpy's vectorised ``exp``), overwritten by the posterior
    (one large array fewer: each costs page faults); ``beta`` and ``top (m, d)`` its log and the
    maxima it was divided by (``-inf`` allowed in ``beta``); ``size[c]`` is the number of parents in
    code ``c``. ``E = sum_j sum_P P(Pa_j = P) (beta_j(P) - top_j)``, the expectation in
    ``graph_posterior._order_dag_entropy`` (terms of zero probability skipped).
    ``work`` holds at least ``(2 d 2^(d-1) + 2^(d+1)) m`` numbers of scratch space, overwritten (the
    caller may reuse it across calls: a compiled function holds the GIL throughout).
    The scaling and the held test are those of ``graph_posterior._linear_dp``; ``log F(V)`` is the
    log of the product of the level maxima.
    """
    m, d, n = ratio.shape
    q = d - 1
    held = np.ones(m, dtype=np.bool_)
    used = n * d * m
    alpha = work[:used].reshape((n, d, m))  # codes first, members last: every loop below runs over the members
    _to_codes_first(ratio, alpha)
    zeta_columns(alpha.reshape((n, d * m)), q, False)
    for j in range(d):  # alpha_j(U) >= alpha_j(empty set) = ratio_j(empty set): the smallest
        for b in range(m):
            if not alpha[0, j, b] > normal:
                held[b] = False
    forward = work[used : used + (m << d)].reshape((1 << d, m))
    backward = work[used + (m << d) : used + (2 * m << d)].reshape((1 << d, m))
    log_f = np.empty((d + 1, m))
    log_b = np.empty((d + 1, m))
    _sums_over_orders(alpha, size, work[used + (2 * m << d) : 2 * used + (2 * m << d)].reshape((d, n, m)),
                      forward, backward, log_f, log_b)
    smallest = np.full(m, np.inf)
    for s in range(1 << d):
        for b in range(m):
            smallest[b] = min(smallest[b], forward[s, b], backward[s, b])
    for b in range(m):
        if not smallest[b] > normal or not np.isfinite(log_f[d, b]) or not np.isfinite(log_b[0, b]):
            held[b] = False  # an underflow, or a level of zeros (then 0 / 0 = NaN and its log -inf)
    weight = np.empty((d, m))
    for u in range(d):  # sets U of u members: w(u) = exp(sF(u) + sB(u + 1) - sF(d))
        for b in range(m):
            log_weight = log_f[u, b] + log_b[u + 1, b] - log_f[d, b]
            if not abs(log_weight) < max_log_weight:
                held[b] = False
                log_weight = min(max(log_weight, -max_log_weight), max_log_weight)
            weight[u, b] = math.exp(log_weight)
    below = alpha  # alpha is no longer needed: reuse its memory
    block = _code_block(n, d, m)
    for first in range(0, n, block):  # a block of codes at a time: its rows of below stay in cache over j
        last = min(first + block, n)
        for j in range(d):
            low = (1 << j) - 1
            for c in range(first, last):
                subset = (c & low) | ((c & ~low) << 1)
                family = subset | (1 << j)
                p = size[c]
                for b in range(m):
                    below[c, j, b] = forward[subset, b] * backward[family, b] * weight[p, b]
    zeta_columns(below.reshape((n, d * m)), q, True)
    parent_set = ratio  # written in place of the ratios it reads, entry by entry
    mass = np.zeros((m, d))
    term = np.zeros((m, d))
    for first in range(0, n, block):  # blocks as above; each (b, j) still sums its codes in order
        last = min(first + block, n)
        for b in range(m):
            for j in range(d):
                shift = top[b, j]
                total, expectation = mass[b, j], term[b, j]
                for c in range(first, last):
                    value = ratio[b, j, c] * below[c, j, b]
                    parent_set[b, j, c] = value
                    total += value
                    # an excluded set (beta = -inf) has value 0: the max keeps 0 * -inf from giving NaN, branch-free
                    expectation += value * max(beta[b, j, c] - shift, -1e300)
                mass[b, j], term[b, j] = total, expectation
    expected = np.zeros(m)
    for b in range(m):
        for j in range(d):
            expected[b] += term[b, j]
            if not abs(mass[b, j] - 1.0) < 1e-9:  # also false for NaN or infinite entries
                held[b] = False
    return parent_set, log_f[d].copy(), held, expected


_PIVOT_BLOCK = 16
"""Inputs per pass of :func:`principal_pivots`: their work arrays stay in cache (at m = 10, 16 inputs take 440 KB;
measured 1.3x faster per input than one at a time, and 3x slower with 96 together)."""


@njit(cache=True, error_model="numpy")
def principal_pivots(r: np.ndarray, out: np.ndarray) -> None:
    """The pivots of the principal-minor recursion of SPD matrices ``r (G, m, m)``, into ``out (G, 2^m)``; ``[:, 0] = 1``.

    Griffin & Tsatsomeros (``graph_posterior``'s docstring): at level ``k`` the ``2^k`` Schur
    complements of size ``m - k``, one per choice among the first ``k`` indices; leaving index
    ``k`` out drops its row and column, keeping it takes the Schur complement on it, whose pivot
    is the ratio ``det r[S + k] / det r[S]``, stored at ``S + k``. Only lower triangles are kept
    (the matrices are symmetric), and entry ``(a, c)`` of all ``2^k`` matrices of a level and of
    a block of :data:`_PIVOT_BLOCK` inputs is one contiguous run (inputs innermost), so every
    update runs along a row of ``2^k`` blocks, long from the first level on.
    """
    total, m = r.shape[0], r.shape[1]
    largest = 1
    for k in range(m):
        largest = max(largest, (1 << k) * (m - k) * (m - k))
    current = np.empty(largest * _PIVOT_BLOCK)
    following = np.empty(largest * _PIVOT_BLOCK)
    scaled = np.empty(largest * _PIVOT_BLOCK)
    for first in range(0, total, _PIVOT_BLOCK):
        count = min(_PIVOT_BLOCK, total - first)
        for g in range(count):
            out[first + g, 0] = 1.0
        for a in range(m):
            for c in range(a + 1):
                for g in range(count):
                    current[(a * m + c) * count + g] = r[first + g, a, c]
        for k in range(m):
            matrices = 1 << k
            half = matrices * count  # matrix s of input g: entry (a, c) at (a width + c) half + s count + g
            width = m - k
            inner = width - 1
            for g in range(count):
                for s in range(matrices):
                    out[first + g, matrices + s] = current[s * count + g]
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


@njit(cache=True)
def _max_over_subsets(x: np.ndarray, q: int) -> None:
    """In place: the maximum over subsets of the ``q``-bit codes of the rows of ``x (2^q, k)``, two bits per pass.

    The layout and passes of :func:`zeta_columns` with ``max`` for ``+`` (exact, so in any order);
    written as comparisons that hold no NaN, which the compiler turns into vector instructions.
    """
    n, k = x.shape
    b = 0
    while b + 1 < q:
        step = 1 << b
        for base in range(0, n, 4 * step):
            for i in range(base, base + step):
                r0, r1, r2, r3 = x[i], x[i + step], x[i + 2 * step], x[i + 3 * step]
                for c in range(k):
                    x0, x1, x2, x3 = r0[c], r1[c], r2[c], r3[c]
                    y1 = x1 if x1 >= x0 else x0
                    y2 = x2 if x2 >= x0 else x0
                    y3 = x3 if x3 >= x2 else x2
                    y3 = y3 if y3 >= y1 else y1
                    r1[c], r2[c], r3[c] = y1, y2, y3
        b += 2
    if b < q:
        step = 1 << b
        for i in range(step):
            r0, r1 = x[i], x[i + step]
            for c in range(k):
                r1[c] = r1[c] if r1[c] >= r0[c] else r0[c]


@njit(cache=True)
def best_parents(beta: np.ndarray, best: np.ndarray) -> np.ndarray:
    """The ``d``-bit parent masks ``(m, d)`` of the DAGs maximising ``sum_j beta[b, j, pa(j)]`` (``beta (m, d, 2^(d-1))``, log scale).

    Silander & Myllymäki's recursion as ``graph_posterior.best_dag`` describes it, the first two
    passes along the batch (members last, as in :func:`linear_dp`): the best parent set of ``j``
    within every ``U`` (a running maximum over subsets), the best score of a DAG on every subset;
    then each member's sinks from the full set back, and the sink's parents among the nodes left
    (its submasks, largest code first, so that ties go to the smaller code). Ties between sinks go
    to the smaller node index. ``best`` is work space of ``2^(d-1) d m`` numbers (overwritten).
    """
    m, d, n = beta.shape
    q = d - 1
    full = (1 << d) - 1
    best = best[: n * d * m].reshape((n, d, m))  # best[U, j, b] = max over P ⊆ U of beta[b, j, P]
    _to_codes_first(beta, best)
    _max_over_subsets(best.reshape((n, d * m)), q)
    top = np.empty((1 << d, m))  # the best score of a DAG on each subset
    top[0] = 0.0
    for subset in range(1, full + 1):  # subset - j < subset: every set after its subsets
        for b in range(m):
            top[subset, b] = -np.inf
        bits = subset
        while bits:
            low = bits & -bits
            j = _bit_index(low)
            rest = subset ^ low
            code = _code_of(rest, j)
            for b in range(m):
                top[subset, b] = max(top[subset, b], top[rest, b] + best[code, j, b])
            bits ^= low
    parents = np.zeros((m, d), dtype=np.int64)
    for b in range(m):
        remaining = full
        for _ in range(d):
            sink, sink_value = -1, -np.inf
            for j in range(d):
                if (remaining >> j) & 1:
                    rest = remaining ^ (1 << j)
                    value = top[rest, b] + best[_code_of(rest, j), j, b]
                    if sink == -1 or value > sink_value:
                        sink, sink_value = j, value
            remaining ^= 1 << sink
            allowed = _code_of(remaining, sink)
            choice, choice_value = 0, beta[b, sink, 0]
            sub = allowed
            while sub:  # every non-empty submask, from the largest code down
                if beta[b, sink, sub] >= choice_value:
                    choice, choice_value = sub, beta[b, sink, sub]
                sub = (sub - 1) & allowed
            if beta[b, sink, 0] >= choice_value:
                choice = 0
            low = (1 << sink) - 1
            parents[b, sink] = (choice & low) | ((choice & ~low) << 1)
    return parents


@njit(cache=True)
def distinct_nodes(count: np.ndarray, mean: np.ndarray, scatter: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(kept, source)`` of ``graph_posterior._distinct_nodes`` from ``count (M, d)``, ``mean (M, d, d)``, ``scatter (M, d, d, d)``.

    Node ``j`` of member ``b`` joins the group of the first node ``i < j`` of ``b`` whose
    statistics are equal (exactly), else starts its own; each comparison stops at the first
    difference.
    """
    m, d = count.shape
    kept = np.empty(m * d, dtype=np.int64)
    source = np.empty(m * d, dtype=np.int64)
    groups = 0
    for b in range(m):
        for j in range(d):
            first = j
            for i in range(j):
                if kept[source[b * d + i]] != b * d + i or count[b, i] != count[b, j]:
                    continue  # only the first node of each group (equality is transitive)
                same = True
                for x in range(d):
                    if mean[b, i, x] != mean[b, j, x]:
                        same = False
                        break
                if same:
                    for x in range(d):
                        for y in range(d):
                            if scatter[b, i, x, y] != scatter[b, j, x, y]:
                                same = False
                                break
                        if not same:
                            break
                if same:
                    first = i
                    break
            if first == j:
                kept[groups] = b * d + j
                source[b * d + j] = groups
                groups += 1
            else:
                source[b * d + j] = source[b * d + first]
    return kept[:groups].copy(), source


@njit(cache=True, error_model="numpy")
def assemble_scores(logdet: np.ndarray, source: np.ndarray, constant: np.ndarray, a: np.ndarray,
                    size: np.ndarray, prior: np.ndarray, out: np.ndarray) -> np.ndarray:
    """BGe local scores plus a log prior, ``(M, d, 2^(d-1))``, from the principal log-determinants of each group.

    ``logdet (G, 2^d)`` of the distinct ``R``; ``source (M d,)``: the group of each node;
    ``constant`` and ``a`` ``(M, d, d)``: the score's constant and exponent per node and number of
    parents; ``prior (d, 2^(d-1))`` is added after the score (zeros: the scores alone, bit for bit).
    ``score(j, P) = constant + a log det R[P, P] - (a + 1/2) log det R[P + j, P + j]``. ``out``
    holds at least ``M d 2^(d-1)`` numbers; the result is a view of its first ones.
    """
    m, d = constant.shape[0], constant.shape[1]
    n = 1 << (d - 1)
    scores = out[: m * d * n].reshape((m, d, n))
    for b in range(m):
        for j in range(d):
            table = logdet[source[b * d + j]]
            low = (1 << j) - 1
            for c in range(n):
                parents = (c & low) | ((c & ~low) << 1)
                p = size[c]
                scores[b, j, c] = (constant[b, j, p] + a[b, j, p] * table[parents]
                                   - (a[b, j, p] + 0.5) * table[parents | (1 << j)]) + prior[j, c]
    return scores
