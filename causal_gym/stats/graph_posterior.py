"""Exact posterior over DAGs for linear-Gaussian data: BGe local scores and Koivisto's DP.

Why one module of over 1,000 lines: about 180 of them are this derivation, which every function
implements, and the code shares one private data layout (the parent-set coding below, its index
tables and subset transforms) between the scores, the DP, the samplers and the predictive; split,
each part would import the others' internals.

What is computed
----------------
For ``d`` variables (``d <= MAX_NODES``) and data that may mix observational and hard-intervened
rows, :func:`edge_posterior` returns ``P(i -> j | data)`` for every ordered pair, exactly, from a
table of local scores (:func:`local_scores`). The posterior is the one of the *order-modular*
prior below; nothing is sampled.

Local scores: BGe
-----------------
The BGe score (Geiger & Heckerman 2002) in the corrected form of Kuipers, Moffa & Heckerman
(2014): a Normal-Wishart prior on the mean and precision of the joint Gaussian, with prior mean
``0``, ``alpha_mu`` pseudo-observations for the mean, ``alpha_w > d - 1`` degrees of freedom and
Wishart parameter ``T = t I`` (the precision ``W ~ Wishart(alpha_w, T^-1)``). The default
``t = alpha_mu (alpha_w - d - 1) / (alpha_mu + 1)`` makes the prior predictive covariance the
identity. From ``N`` rows with mean ``xbar`` and centred scatter ``S`` the posterior parameter is

    ``R = T + S + N alpha_mu / (N + alpha_mu) * xbar xbar^T``

and the local score of node ``j`` with parent set ``P`` (``p = |P|``, ``Y = P + {j}``,
``a = (N + alpha_w - d + p) / 2``) is

    ``score(j, P) = 1/2 log(alpha_mu / (N + alpha_mu)) - N/2 log(pi)
    + lgamma(a + 1/2) - lgamma((alpha_w - d + p + 1) / 2) + (alpha_w - d + 2p + 1) / 2 log(t)
    + a log det R[P, P] - (a + 1/2) log det R[Y, Y]``,

which is ``log p(data_Y) - log p(data_P)`` with the marginal likelihood of a variable subset of
size ``l`` computed with ``alpha_w - d + l`` degrees of freedom (the correction of Kuipers et
al.; Geiger & Heckerman's original exponents used ``alpha_w`` throughout). The total score of a
DAG, ``sum_j score(j, pa(j))``, is its log marginal likelihood and is score-equivalent:
Markov-equivalent DAGs score the same on observational data.

Interventional data (Cooper & Yoo 1999): a row in which node ``j`` was set by a hard
intervention says nothing about ``j``'s mechanism, so ``j``'s local scores use only the rows
where ``j`` is not intervened. Every node therefore has its own ``N_j`` and ``R_j``
(:class:`BGeStats`); an ``(n, d)`` boolean ``mask`` marks the intervened cells.

All ``2^d`` principal log-determinants of each ``R_j`` come from one recursion over the nodes
(the principal-minor algorithm of Griffin & Tsatsomeros 2006): deciding node ``k`` out drops its
row and column, deciding it in replaces the matrix by its Schur complement on ``k`` and adds the
log pivot. Level ``k`` holds ``2^k`` matrices of size ``d - k``, so the whole table costs
``O(2^d)`` flops per node (a compiled kernel, :mod:`causal_gym.stats._posterior_kernels`, then
one vectorised ``log`` of all pivots). ``R_j >= t I``, so every pivot is at least ``t``: no
pivoting is needed.

Layout of parent sets
---------------------
A table of local scores has shape ``(..., d, 2^(d-1))``: ``scores[..., j, c]`` is the score of
node ``j`` with the parent set coded by ``c``, whose bit ``b`` stands for node ``b`` if ``b < j``
and node ``b + 1`` otherwise (the nodes other than ``j`` in increasing order).
:func:`parent_set_masks` gives the ordinary ``d``-bit mask (bit ``i`` = node ``i``) of every
code. With ``max_parents=K`` the sets of more than ``K`` parents score ``-inf``.

A parent-set cap (Koivisto & Sood 2004's in-degree bound)
---------------------------------------------------------
With ``max_parents=K`` only the ``d C(d - 1, <= K)`` capped sets are scored, each from Cholesky
factors of its own sub-matrices (not from all ``2^d`` principal minors), and the DP's prior mass
is that of the capped prior (cached per ``d``, prior and ``K``). That is what lets the posterior
run above :data:`MAX_UNCAPPED_NODES` ``= 16`` nodes, where a cap of at most :data:`MAX_CAP` is
required, up to :data:`MAX_NODES` ``= 20``. The DP still sums over all ``2^d`` subsets (exact for
the capped prior); at d = 20 one posterior takes about a second and 1 GB of memory, with 170 MB of
index tables built once (``benchmarks/graph_posterior.py --capped-only``).

The prior: order-modular, not uniform over DAGs
-----------------------------------------------
Koivisto & Sood (2004) sum over node orders, which is exact only for a prior that factorises
over orders and parent sets: ``P(order, G) ∝ prod_j rho_j(pa(j))`` for every ``G`` consistent
with the order (a uniform prior over orders). The implied prior on DAGs is

    ``P(G) ∝ (number of linear extensions of G) * prod_j rho_j(pa(j))``,

so a DAG compatible with more orders (sparser, fewer chains: the empty graph has ``d!``) gets
more prior mass than under a uniform prior on DAGs, and Markov-equivalent DAGs need not have the
same prior, hence not the same posterior. This is the price of the ``O(d^2 2^d)`` exact DP.

The parent-set prior ``rho_j`` defaults to ``"size"``: ``rho_j(P) ∝ 1 / C(d - 1, |P|)``,
uniform over the in-degree and then uniform over the parent sets of that size (Koivisto & Sood's
choice, following Friedman & Koller 2003). The alternative ``"uniform"`` (``rho_j = 1``) puts
most mass on parent sets of size about ``(d - 1) / 2``, i.e. on dense graphs, which is a poor
default for the sparse SCMs of causal_gym's benchmarks.

The DP (Koivisto 2006)
----------------------
With ``beta_j(P) = rho_j(P) exp(score(j, P))``, in log space throughout:

1. ``alpha_j(U) = sum_{P ⊆ U} beta_j(P)`` for all ``U ⊆ V - {j}`` (fast zeta transform);
2. forward ``F(S) = sum_{j in S} F(S - {j}) alpha_j(S - {j})`` and backward
   ``B(S) = sum_{j not in S} alpha_j(S) B(S + {j})`` over the subsets by size;
   ``p(data) = F(V) = B(∅)``;
3. ``gamma_j(P) = sum_{P ⊆ U ⊆ V - {j}} F(U) B(U + {j})`` (superset zeta transform), and the
   posterior probability that ``j`` has exactly the parents ``P`` is
   ``beta_j(P) gamma_j(P) / p(data)``; summing it over the sets containing ``i`` gives
   ``P(i -> j | data)``.

First in linear space (:func:`_linear_dp`): each ``beta_j`` is exponentiated once relative to its
maximum, every level of the sums over orders is divided by its own maximum, and those scales,
carried as logs, factor out of every sum; then only additions and multiplications remain, in a
compiled kernel that runs every loop along the batch (:mod:`causal_gym.stats._posterior_kernels`).
Where anything would come near underflow (scores many hundreds of nats apart) that
batch member is redone in log space (:func:`_log_dp`): the two subset transforms run in linear
space on bands of at most 1300 nats of the log values (so nothing under- or overflows: exact up
to rounding however far apart the scores are); the sums over orders are
log-sum-exps over the ``C(d, k) x k`` terms of each subset size, forward and backward in one
pass. Every step is batched over leading axes.

Cost of one update
------------------
An intervention-design env adds one row per step: :meth:`BGeStats.add_row` is a rank-1 update
of each node's scatter matrix (skipped for the intervened node), but every principal minor of
every changed ``R_j`` changes with it, so the local scores are recomputed (``O(d 2^d)``) rather
than patched, one table per group of nodes that saw the same rows; then the DP (``O(d^2 2^d)``).
``benchmarks/graph_posterior.py`` measures about 0.25 ms per step at d = 10 on one core (0.11 ms
per env in a batch of 16), 0.7 ms at d = 12 (a batch is no faster per env there).

Predictions and their expected quality
--------------------------------------
Under entry-wise 0/1 loss the Bayes-optimal directed adjacency matrix predicts ``i -> j`` iff
``P(i -> j) > 1/2`` (:func:`bayes_optimal_graph`; no 2-cycles, since ``P(i -> j) + P(j -> i)
<= 1``, but it may hold longer cycles). :func:`expected_correct_entries` is its posterior
expected number of correct off-diagonal entries, ``sum_{i != j} max(p_ij, 1 - p_ij)``;
:func:`expected_shd` its expected SHD; :func:`posterior_scores` adds the edge AUPRC and the F1
of the prediction against a true DAG.

Entropy of the posterior
------------------------
The DP's posterior is over (order, DAG) pairs, ``P(order, G | data) = prod_j beta_j(pa(j)) / Z``
for ``G`` consistent with the order (``Z = F(V)``), so its entropy is exact in one pass over the
parent-set posteriors: ``H(order, G) = log Z - sum_j sum_P P(Pa_j = P) log beta_j(P)``
(:attr:`GraphPosterior.entropy`). The entropy of the DAG alone is not: given ``G`` the order is
uniform over ``G``'s linear extensions ``L(G)``, so ``H(G) = H(order, G) - E[log L(G)]``, between
``H(order, G) - log d!`` and ``H(order, G)``, and ``E[log L(G)]`` is no sum the DP can factor. The
*change* of ``H(order, G)`` after new data is nevertheless the right information gain in
expectation: the data depend on ``(order, G)`` only through ``G``, so the expected reduction of
either entropy under the posterior predictive is the same mutual information between the new rows
and the DAG (the change of ``E[log L(G)]`` averages to zero over the predictive, ``P(G | data)``
being a martingale). Realised reductions differ by the change of ``E[log L(G)]``;
``tests/test_graph_posterior.py`` checks both entropies against enumeration of every DAG.

Samples, the best DAG and the posterior predictive
--------------------------------------------------
:func:`sample_dags` draws DAGs exactly from the posterior of the order-modular prior: an order
from the back (the last node of ``S`` is ``j`` with probability ``F(S - {j}) alpha_j(S - {j}) /
F(S)``), then each node's parent set among its predecessors with probability proportional to
``beta_j(P)`` (Koivisto & Sood 2004). :func:`best_dag` is the mode of the joint (order, DAG)
posterior: the DAG maximising ``prod_j beta_j(pa(j))``, by the same recursion over subsets with
``max`` in place of sums (Silander & Myllymäki 2006). It is not in general the mode of
``P(G | data)``, which weighs each DAG by its number of linear extensions as well.

:func:`predictive_logpdf` and :func:`sample_predictive` give the BGe posterior predictive of a
new row under a given DAG, possibly with a hard intervention: node ``i``'s value given its
parents is the conditional of the multivariate t predictive of node ``i``'s rows, which is a
Student t with ``nu + p`` degrees of freedom (``nu = alpha_w + N_i - d + 1``), location
``mu_i + R_iP R_PP^-1 (x_P - mu_P)`` and squared scale ``(nu + delta) / (nu + p) * c (R_ii -
R_iP R_PP^-1 R_Pi)``, where ``mu = N_i xbar_i / (N_i + alpha_mu)``, ``c = (alpha_mu + N_i + 1)
/ ((alpha_mu + N_i) nu)`` and ``delta = (x_P - mu_P)^T R_PP^-1 (x_P - mu_P) / c``. Its log
density is exactly the change of node ``i``'s local score when the row is added (the test
suite checks this), so sampling it node by node in a topological order draws the exact
posterior predictive of the row given the DAG.

References
----------
Cooper & Yoo (1999), Causal discovery from a mixture of experimental and observational data, UAI.
Geiger & Heckerman (2002), Parameter priors for directed acyclic graphical models..., Ann. Stat.
Griffin & Tsatsomeros (2006), Principal minors, part I, Linear Algebra Appl.
Koivisto & Sood (2004), Exact Bayesian structure discovery in Bayesian networks, JMLR.
Koivisto (2006), Advances in exact Bayesian structure discovery in Bayesian networks, UAI.
Kuipers, Moffa & Heckerman (2014), Addendum on the scoring of Gaussian DAG models, Ann. Stat.
Silander & Myllymäki (2006), A simple approach for finding the globally optimal Bayesian network structure, UAI.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from functools import cache

import numpy as np

from causal_gym._validation import as_generator, check_adjacency, check_choice, check_count, check_real
from causal_gym.metrics import directed_edge_scores, edge_average_precision, shd
from causal_gym.stats import _posterior_kernels as kernels

__all__ = [
    "MAX_CAP",
    "MAX_NODES",
    "MAX_UNCAPPED_NODES",
    "PARENT_PRIORS",
    "BGeStats",
    "GraphPosterior",
    "PosteriorScores",
    "bge_local_scores",
    "local_scores",
    "parent_set_masks",
    "log_parent_prior",
    "edge_posterior",
    "posterior_summary",
    "bayes_optimal_graph",
    "expected_correct_entries",
    "expected_shd",
    "posterior_scores",
    "sample_dags",
    "best_dag",
    "predictive_logpdf",
    "sample_predictive",
]

MAX_NODES = 20
"""Largest ``d`` accepted: the DP holds ``O(d 2^d)`` numbers, ~50 MB of work arrays at 16, ~1 GB at 20."""

MAX_UNCAPPED_NODES = 16
"""Largest ``d`` whose local scores may cover every parent set; above it :func:`bge_local_scores` needs ``max_parents``."""

MAX_CAP = 4
"""Largest ``max_parents`` accepted above :data:`MAX_UNCAPPED_NODES` (the table of scored sets stays small)."""

PARENT_PRIORS = ("size", "uniform")
"""Parent-set priors of :func:`log_parent_prior` (see the module docstring)."""


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _check_d(d: int, name: str) -> int:
    if not 1 <= d <= MAX_NODES:
        raise ValueError(f"{name} has {d} variables; the exact posterior supports 1..{MAX_NODES}")
    return d


def _check_rows(data: object, mask: object, name: str = "data") -> tuple[np.ndarray, np.ndarray]:
    """``(..., n, d)`` finite float data and the matching boolean ``kept`` weights (not intervened)."""
    arr = np.asarray(data)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers (int or float dtype), got dtype {arr.dtype}")
    if arr.ndim < 2:
        raise ValueError(f"{name} must have shape (..., n_samples, n_variables), got shape {arr.shape}")
    _check_d(arr.shape[-1], name)
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if mask is None:
        return arr, np.ones(arr.shape, dtype=bool)
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise ValueError(f"mask must be a boolean array (True = intervened), got dtype {m.dtype}")
    if m.shape != arr.shape:
        raise ValueError(f"mask must have the shape of {name}, {arr.shape}, got {m.shape}")
    return arr, ~m


def _bge_hyper(d: int, alpha_mu: float, alpha_w: float | None, t: float | None) -> tuple[float, float, float]:
    alpha_mu = check_real(alpha_mu, "alpha_mu", 0.0, strict=True)
    alpha_w = float(d + 2) if alpha_w is None else check_real(alpha_w, "alpha_w", d - 1.0, strict=True)
    if t is None:
        if alpha_w <= d + 1:
            raise ValueError(
                f"the default t = alpha_mu (alpha_w - d - 1) / (alpha_mu + 1) needs alpha_w > d + 1 = {d + 1}, "
                f"got alpha_w={alpha_w}; pass t explicitly"
            )
        t = alpha_mu * (alpha_w - d - 1) / (alpha_mu + 1)
    else:
        t = check_real(t, "t", 0.0, strict=True)
    return alpha_mu, alpha_w, t


# ---------------------------------------------------------------------------------------------
# sufficient statistics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BGeStats:
    """Per-node sufficient statistics of the rows each node's local scores may use.

    Node ``j`` sees the rows where it is not intervened: ``count[..., j]`` of them, with mean
    ``mean[..., j, :]`` (over all ``d`` variables) and centred scatter matrix
    ``scatter[..., j, :, :]``. Leading axes, if any, index a batch of independent datasets.
    Build with :meth:`from_data`, extend by one row with :meth:`add_row` (Welford's update, a
    rank-1 change of each scatter matrix). Arrays are read-only.
    """

    count: np.ndarray
    mean: np.ndarray
    scatter: np.ndarray

    def __post_init__(self) -> None:
        count = np.asarray(self.count, dtype=np.float64)
        d = count.shape[-1] if count.ndim else 0
        lead = count.shape[:-1]
        expected = {"count": lead + (d,), "mean": lead + (d, d), "scatter": lead + (d, d, d)}
        for name, shape in expected.items():
            value = np.array(getattr(self, name), dtype=np.float64)  # a private, frozen copy
            if value.shape != shape:
                raise ValueError(f"{name} must have shape {shape} for count of shape {count.shape}, got {value.shape}")
            value.flags.writeable = False
            object.__setattr__(self, name, value)

    @property
    def d(self) -> int:
        return int(self.count.shape[-1])

    @classmethod
    def from_data(cls, data: np.ndarray, mask: np.ndarray | None = None) -> BGeStats:
        """Statistics of ``data`` of shape ``(..., n, d)``; ``mask[..., r, j]`` True = ``j`` intervened in row ``r``.

        ``n = 0`` is allowed (no evidence: every local score is then 0).
        """
        x, kept = _check_rows(data, mask)
        w = np.swapaxes(kept, -1, -2).astype(np.float64)  # (..., d, n): node j's row weights
        count = w.sum(axis=-1)
        total = w @ x  # (..., d, d)
        mean = np.divide(total, count[..., None], out=np.zeros_like(total), where=count[..., None] > 0)
        centred = x[..., None, :, :] - mean[..., :, None, :]  # (..., d, n, d)
        scatter = np.swapaxes(centred * w[..., None], -1, -2) @ centred
        # the nodes that see every row get one shared copy, equal bit for bit (a matrix product may
        # round its rows differently), so the local scores compute their table once (_distinct_nodes)
        every = np.all(kept, axis=-2)[..., None]  # (..., d, 1)
        if x.shape[-2] and every.any():
            shared_mean = x.mean(axis=-2)
            shared_centred = x - shared_mean[..., None, :]
            shared = np.swapaxes(shared_centred, -1, -2) @ shared_centred
            mean = np.where(every, shared_mean[..., None, :], mean)
            scatter = np.where(every[..., None], shared[..., None, :, :], scatter)
        return cls(count, mean, scatter)

    def add_row(self, row: np.ndarray, intervened: np.ndarray | None = None) -> BGeStats:
        """The statistics after one more row ``row`` of shape ``(..., d)``.

        ``intervened[..., j]`` True means ``j`` was set by intervention in this row, so ``j``'s
        statistics do not change. Returns a new object; ``self`` is unchanged.
        """
        x = np.asarray(row, dtype=np.float64)
        if x.shape != self.count.shape:
            raise ValueError(f"row must have shape {self.count.shape}, got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError("row contains NaN or infinite values")
        if intervened is None:
            kept = np.ones(x.shape, dtype=bool)
        else:
            flags = np.asarray(intervened)
            if flags.dtype != np.bool_ or flags.shape != x.shape:
                raise ValueError(f"intervened must be a boolean array of shape {x.shape}")
            kept = ~flags
        count = self.count + kept
        delta = x[..., None, :] - self.mean  # (..., d, d)
        step = np.where(kept[..., None], delta / np.maximum(count, 1)[..., None], 0.0)
        mean = self.mean + step
        rank_one = delta[..., :, None] * (x[..., None, :] - mean)[..., None, :]
        scatter = self.scatter + np.where(kept[..., None, None], rank_one, 0.0)
        return BGeStats(count, mean, scatter)

    def posterior_matrices(self, alpha_mu: float, t: float) -> np.ndarray:
        """``R_j = t I + S_j + N_j alpha_mu / (N_j + alpha_mu) mean_j mean_j^T`` for every node, ``(..., d, d, d)``."""
        shrink = self.count * alpha_mu / (self.count + alpha_mu)
        r = self.scatter + shrink[..., None, None] * self.mean[..., :, None] * self.mean[..., None, :]
        return r + t * np.eye(self.d)


# ---------------------------------------------------------------------------------------------
# BGe local scores
# ---------------------------------------------------------------------------------------------


@cache
def _tables(d: int) -> dict[str, np.ndarray]:
    """Index tables shared by the local scores and the DP (never written to)."""
    q = d - 1
    codes = np.arange(1 << q, dtype=np.int64)
    nodes = np.arange(d, dtype=np.int64)[:, None]
    low = codes & ((1 << nodes) - 1)
    expand = low | ((codes - low) << 1)  # (d, 2^q): insert a 0 bit at position j
    bits = ((codes[:, None] >> np.arange(q)) & 1).astype(np.float64)  # (2^q, q)
    size = bits.sum(axis=1).astype(np.int64)
    return {"expand": expand, "bits": bits, "size": size, "parent_of": _tables_parent_of(d)}


@cache
def _levels(d: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Index tables of the log-space sums over orders (:func:`_sums_over_orders`), built on first use.

    Level ``k``: forward ``F`` on the sets of size ``k`` (drop one member) and backward ``B`` on
    the sets of size ``d - k`` (add one non-member), both ``C(d, k) x k`` terms, read from and
    written to one array holding ``F`` then ``B`` (offset ``2^d``). About 1 GB at d = 20, which
    only the log-space DP (and :func:`sample_dags`) needs: the linear DP's kernel walks the
    subsets without tables.
    """
    q = d - 1
    nodes = np.arange(d, dtype=np.int64)[:, None]
    full = np.arange(1 << d, dtype=np.int64)
    low_full = full & ((1 << nodes) - 1)
    drop = low_full | ((full >> (nodes + 1)) << nodes)  # (d, 2^d): code of S - {j} for node j
    members = (full[:, None] >> np.arange(d)) & 1
    popcount = members.sum(axis=1)
    levels = []
    for k in range(1, d + 1):
        sets = np.flatnonzero(popcount == k)
        inside = np.nonzero(members[sets])[1].reshape(sets.size, k)
        co_sets = np.flatnonzero(popcount == d - k)
        outside = np.nonzero(1 - members[co_sets])[1].reshape(co_sets.size, k)
        read = np.stack([sets[:, None] - (1 << inside), (1 << d) + (co_sets[:, None] | (1 << outside))])
        alpha_at = np.stack([
            inside * (1 << q) + drop[inside, sets[:, None]],
            outside * (1 << q) + drop[outside, co_sets[:, None]],
        ])
        levels.append((np.stack([sets, (1 << d) + co_sets]), read, alpha_at))
    return levels


def parent_set_masks(d: int) -> np.ndarray:
    """``(d, 2^(d-1))`` array: the ``d``-bit mask (bit ``i`` = node ``i``) of parent set code ``c`` of node ``j``.

    >>> parent_set_masks(3)  # node 0: {}, {1}, {2}, {1,2}; node 1: {}, {0}, {2}, {0,2}; ...
    array([[0, 2, 4, 6],
           [0, 1, 4, 5],
           [0, 1, 2, 3]])
    """
    _check_d(check_count(d, "d"), "the graph")
    return _tables(d)["expand"].copy()


def _principal_logdets(r: np.ndarray, work: bool = False) -> np.ndarray:
    """``log det r[S, S]`` for every subset ``S`` (bit ``k`` = index ``k``) of SPD matrices ``(..., m, m)``.

    ``work=True``: the result lives in this thread's work space (:func:`_work`), valid until the next call.
    """
    m = r.shape[-1]
    flat = np.ascontiguousarray(r, dtype=np.float64).reshape(-1, m, m)
    shape = (flat.shape[0], 1 << m)
    logdet = _work("logdet", shape[0] * shape[1]).reshape(shape) if work else np.empty(shape)
    kernels.principal_pivots(flat, logdet)
    np.log(logdet, out=logdet)  # numpy's vectorised log, in place; log det r[S + k] = log det r[S] + log pivot
    for k in range(m):
        logdet[:, 1 << k : 2 << k] += logdet[:, : 1 << k]
    return logdet.reshape(*r.shape[:-2], 1 << m)


def _distinct_nodes(stats: BGeStats) -> tuple[np.ndarray, np.ndarray]:
    """Which nodes' statistics differ: ``(kept, source)`` over the flattened ``(..., d)`` nodes.

    Nodes that no row intervened on see the same rows, so their ``R_j`` are equal (bit for bit:
    :meth:`BGeStats.add_row` applies the same operations to each). ``kept`` indexes the first node
    of each group of equal statistics within a batch member; ``source[k]`` is the position in
    ``kept`` of node ``k``'s group. With ``T`` experiments there are at most ``T + 1`` groups.
    """
    d = stats.d
    return kernels.distinct_nodes(stats.count.reshape(-1, d), stats.mean.reshape(-1, d, d),
                                  stats.scatter.reshape(-1, d, d, d))


def bge_local_scores(
    stats: BGeStats,
    *,
    max_parents: int | None = None,
    alpha_mu: float = 1.0,
    alpha_w: float | None = None,
    t: float | None = None,
) -> np.ndarray:
    """BGe local scores ``(..., d, 2^(d-1))`` from sufficient statistics (layout: module docstring).

    Without a cap all ``2^d`` principal log-determinants of each ``R_j`` come from the
    principal-minor recursion (module docstring). With one, only the sets of at most
    ``max_parents`` parents are scored, each from the Cholesky factors of its own small
    sub-matrices (``d C(d - 1, <= K)`` sets: 23,200 at d = 20, K = 3); the others are ``-inf``.

    Parameters
    ----------
    stats : BGeStats
        Per-node statistics, possibly batched.
    max_parents : int, optional
        Parent sets larger than this score ``-inf`` (zero prior mass). Needed above
        :data:`MAX_UNCAPPED_NODES` nodes, at most :data:`MAX_CAP` there.
    alpha_mu : float, default 1
        Prior pseudo-count of the mean (prior mean 0).
    alpha_w : float, default d + 2
        Wishart degrees of freedom, ``> d - 1``.
    t : float, default alpha_mu (alpha_w - d - 1) / (alpha_mu + 1)
        Wishart parameter ``T = t I``.
    """
    return _prior_weighted_scores(stats, max_parents, alpha_mu, alpha_w, t, None)


def _prior_weighted_scores(stats: BGeStats, max_parents: int | None, alpha_mu: float, alpha_w: float | None,
                           t: float | None, parent_prior: str | None, work: bool = False) -> np.ndarray:
    """The table of :func:`bge_local_scores` plus the log parent prior (``parent_prior=None``: no prior).

    The prior is added after each score, in the compiled pass that assembles them, so the sum equals
    ``scores + log_parent_prior`` bit for bit. ``work=True``: the result lives in this thread's work
    space (:func:`_work`, uncapped only), valid until the next such call.
    """
    from scipy.special import gammaln

    d = stats.d
    _check_d(d, "stats")
    alpha_mu, alpha_w, t = _bge_hyper(d, alpha_mu, alpha_w, t)
    if max_parents is not None:
        max_parents = check_count(max_parents, "max_parents", minimum=0)
    if d > MAX_UNCAPPED_NODES and (max_parents is None or max_parents > MAX_CAP):
        raise ValueError(f"stats has {d} variables: above {MAX_UNCAPPED_NODES} the local scores need a parent-set "
                         f"cap, max_parents <= {MAX_CAP} (got {max_parents})")
    prior = _log_parent_prior(d, "uniform" if parent_prior is None else parent_prior)
    r = stats.posterior_matrices(alpha_mu, t)  # (..., d, d, d): node j's R_j
    n = stats.count[..., None]  # (..., d, 1)
    p = np.arange(d)  # parent-set sizes; the constants depend on the node only through n
    a = (n + alpha_w - d + p) / 2.0
    constant = (
        0.5 * (math.log(alpha_mu) - np.log(n + alpha_mu))
        - 0.5 * n * math.log(math.pi)
        + gammaln(a + 0.5)
        - gammaln((alpha_w - d + p + 1) / 2.0)
        + (alpha_w - d + 2 * p + 1) / 2.0 * math.log(t)
    )
    lead = stats.count.shape[:-1]
    if max_parents is None or max_parents >= d - 1:
        kept, source = _distinct_nodes(stats)  # one table per group of nodes that saw the same rows
        logdet = _principal_logdets(r.reshape(-1, d, d)[kept], work=True)
        entries = source.size << (d - 1)
        scores = kernels.assemble_scores(logdet, source, constant.reshape(-1, d, d), a.reshape(-1, d, d),
                                         _tables(d)["size"], prior, _work("scores", entries) if work else np.empty(entries))
        return scores.reshape(*lead, d, 1 << (d - 1))
    size, log_det_parents, log_det_family = _capped_logdets(r, max_parents)
    a = a[..., size]
    scores = constant[..., size] + a * log_det_parents - (a + 0.5) * log_det_family
    codes = _capped_sets(d, max_parents)[0]
    if parent_prior is not None:
        scores += prior[:, codes]
    out = np.full((*scores.shape[:-1], 1 << (d - 1)), -np.inf)
    out[..., codes] = scores
    return out


@cache
def _capped_sets(d: int, cap: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """The parent sets of at most ``cap`` members: codes (sorted by size), sizes, and members by size.

    ``codes`` has one entry per set (the same codes for every node); ``members[l]`` is ``(d,
    C(d - 1, l), l)``: node ``j``'s sets of size ``l`` as node indices, in the order of ``codes``.
    """
    q = d - 1
    parent_of = _tables_parent_of(d)
    codes, sizes, members = [], [], []
    for size in range(cap + 1):
        chosen = list(itertools.combinations(range(q), size))
        combos = np.array(chosen, dtype=np.int64).reshape(len(chosen), size)
        codes.append((1 << combos).sum(axis=1))
        sizes.append(np.full(len(combos), size))
        members.append(parent_of[:, combos])  # (d, C(q, size), size)
    return np.concatenate(codes), np.concatenate(sizes), tuple(members)


def _tables_parent_of(d: int) -> np.ndarray:
    """``(d, d - 1)``: bit ``b`` of node ``j``'s parent-set code stands for node ``parent_of[j, b]``."""
    q = d - 1
    return np.arange(q)[None, :] + (np.arange(q)[None, :] >= np.arange(d)[:, None])


def _capped_logdets(r: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sizes, ``log det R_j[P, P]`` and ``log det R_j[P + j, P + j]`` of the sets of at most ``cap`` parents.

    Log-determinants from Cholesky factors of the small sub-matrices (``R_j >= t I``: positive
    definite), one batched call per set size.
    """
    d = r.shape[-1]
    codes, sizes, members = _capped_sets(d, cap)
    nodes = np.arange(d)
    parents: list[np.ndarray] = []
    families: list[np.ndarray] = []
    for size, sets in enumerate(members):
        family = np.concatenate([sets, np.broadcast_to(nodes[:, None, None], (*sets.shape[:2], 1))], axis=2)
        for chosen, out in ((sets, parents), (family, families)):
            if chosen.shape[-1] == 0:
                out.append(np.zeros((*r.shape[:-3], d, sets.shape[1])))
                continue
            block = r[..., nodes[:, None, None, None], chosen[..., :, None], chosen[..., None, :]]
            diagonal = np.diagonal(np.linalg.cholesky(block), axis1=-2, axis2=-1)
            out.append(2.0 * np.log(diagonal).sum(axis=-1))
    return sizes, np.concatenate(parents, axis=-1), np.concatenate(families, axis=-1)


def local_scores(
    data: np.ndarray,
    mask: np.ndarray | None = None,
    max_parents: int | None = None,
    *,
    alpha_mu: float = 1.0,
    alpha_w: float | None = None,
    t: float | None = None,
) -> np.ndarray:
    """BGe local scores of every node and parent set, ``(..., d, 2^(d-1))``.

    Parameters
    ----------
    data : array of shape (n, d) or (..., n, d)
        Rows of linear-Gaussian data; leading axes are a batch of datasets of equal size.
    mask : bool array of the shape of data, optional
        ``mask[r, j]`` True when node ``j`` was set by a hard intervention in row ``r``; those
        rows are left out of ``j``'s scores (Cooper & Yoo 1999). None: all rows observational.
    max_parents, alpha_mu, alpha_w, t
        See :func:`bge_local_scores`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 1))
    >>> data = np.hstack([x, 2 * x + rng.normal(size=(200, 1))])
    >>> s = local_scores(data)
    >>> s.shape                          # node j, parent-set code c
    (2, 2)
    >>> bool(s[1, 1] > s[1, 0])          # Y scores better with X as parent
    True
    """
    return bge_local_scores(
        BGeStats.from_data(data, mask), max_parents=max_parents, alpha_mu=alpha_mu, alpha_w=alpha_w, t=t
    )


# ---------------------------------------------------------------------------------------------
# the DP over orders
# ---------------------------------------------------------------------------------------------


def log_parent_prior(d: int, kind: str = "size") -> np.ndarray:
    """Unnormalised log prior ``log rho_j(P)`` of every parent set, ``(d, 2^(d-1))`` (layout as the scores).

    ``"size"``: ``-log C(d - 1, |P|)`` (uniform over in-degrees, then over sets of that size);
    ``"uniform"``: 0.
    """
    _check_d(check_count(d, "d"), "the graph")
    check_choice(kind, PARENT_PRIORS, "parent prior")
    return _log_parent_prior(d, kind).copy()


@cache
def _log_parent_prior(d: int, kind: str) -> np.ndarray:
    size = _tables(d)["size"]
    if kind == "uniform":
        return np.zeros((d, size.size))
    log_binom = np.array([math.lgamma(d) - math.lgamma(k + 1) - math.lgamma(d - k) for k in range(d)])
    return np.broadcast_to(-log_binom[size], (d, size.size)).copy()


_BAND = 1300.0
"""Width in nats of one band of :func:`_zeta`: ``exp`` of ``+-650`` and sums of ``2^15`` such terms stay normal floats."""


def _linear_zeta(values: np.ndarray, q: int, upward: bool) -> np.ndarray:
    """Plain sums over subsets (or supersets) of non-negative ``values (..., 2^q)``: ``q`` passes of additions (compiled)."""
    columns = np.asarray(values, dtype=np.float64).reshape(-1, 1 << q).T.copy()  # codes down the rows
    kernels.zeta_columns(columns, q, upward)
    return columns.T.reshape(values.shape)


def _zeta(x: np.ndarray, q: int, upward: bool) -> np.ndarray:
    """Sums over subsets (``upward=False``) or supersets of each ``q``-bit code, last axis, in log space.

    ``log`` in, ``log`` out, exact up to rounding: the terms of each row are split into bands of
    :data:`_BAND` nats below the row's maximum; a band is exponentiated around its middle, so
    its values lie in ``[e^-650, e^650]`` and neither underflow nor overflow, summed in linear
    space (:func:`_linear_zeta`) and logged back; the bands are then combined with
    ``logaddexp``. Usually one band suffices, which is many times faster than ``logaddexp`` per
    bit. Every row needs a finite maximum; ``-inf`` entries are exact zeros.
    """
    top = x.max(axis=-1, keepdims=True)
    depth = top - x
    span = depth.max() if np.isfinite(x).all() else depth[np.isfinite(depth)].max()
    bands = int(span // _BAND) + 1
    out: np.ndarray | None = None
    for k in range(bands):
        shift = top - (k + 0.5) * _BAND
        if bands == 1:
            exponent = x - shift
        else:
            exponent = np.where((depth >= k * _BAND) & (depth < (k + 1) * _BAND), x - shift, -np.inf)
        with np.errstate(divide="ignore"):
            band = np.log(_linear_zeta(np.exp(exponent), q, upward)) + shift
        out = band if out is None else np.logaddexp(out, band)
    assert out is not None  # there is at least one band
    return out


@dataclass(frozen=True)
class GraphPosterior:
    """Result of :func:`edge_posterior` (leading axes: the batch of the scores, if any).

    Attributes
    ----------
    edge_probs : (..., d, d) array
        ``edge_probs[i, j] = P(i -> j | data)``; zero diagonal.
    parent_set_probs : (..., d, 2^(d-1)) array
        Posterior probability that node ``j`` has exactly the parent set coded by ``c``.
    log_evidence : (...) array
        ``log sum_G P(G) p(data | G)`` with the prior normalised over DAGs.
    entropy : (...) array
        Entropy in nats of the posterior over (order, DAG) pairs, the latent of the
        order-modular model (module docstring, "Entropy of the posterior").
    """

    edge_probs: np.ndarray
    parent_set_probs: np.ndarray
    log_evidence: np.ndarray
    entropy: np.ndarray


def _check_scores(scores: object) -> tuple[np.ndarray, int]:
    """A float table of local scores ``(..., d, 2^(d-1))`` and its ``d`` (see :func:`edge_posterior`)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim < 2:
        raise ValueError(f"scores must have shape (..., d, 2^(d-1)), got {s.shape}")
    d = _check_d(s.shape[-2], "scores")
    if s.shape[-1] != 1 << (d - 1):
        raise ValueError(f"scores for d={d} nodes must have 2^(d-1) = {1 << (d - 1)} columns, got {s.shape[-1]}")
    if not np.isfinite(s).all() and (np.isnan(s).any() or np.isposinf(s).any()):  # one pass when all finite
        raise ValueError("scores contains NaN or +inf")
    if not np.isfinite(s[..., 0]).all():
        raise ValueError("the empty parent set must have a finite score for every node")
    return s, d


def edge_posterior(scores: np.ndarray, *, parent_prior: str = "size") -> GraphPosterior:
    """Exact posterior edge marginals under the order-modular prior (Koivisto 2006).

    Parameters
    ----------
    scores : array (d, 2^(d-1)) or (..., d, 2^(d-1))
        Log local scores in the layout of :func:`local_scores` (any decomposable score works);
        ``-inf`` excludes a parent set, the empty set must be finite.
    parent_prior : {"size", "uniform"}
        ``rho_j`` of the module docstring; the order prior is uniform.

    Returns
    -------
    GraphPosterior

    Examples
    --------
    >>> import numpy as np
    >>> post = edge_posterior(np.zeros((3, 4)), parent_prior="uniform")  # no data
    >>> post.edge_probs  # i precedes j in half the orders, then i -> j in half the DAGs
    array([[0.  , 0.25, 0.25],
           [0.25, 0.  , 0.25],
           [0.25, 0.25, 0.  ]])
    """
    s, d = _check_scores(scores)
    q = d - 1
    batch = s.shape[:-2]
    check_choice(parent_prior, PARENT_PRIORS, "parent prior")
    beta = (s + _log_parent_prior(d, parent_prior)).reshape(-1, d, 1 << q)
    m = beta.shape[0]
    parent_set, edges, log_z, entropy, excluded = _dp_of_beta(beta, d)
    if excluded is None:
        excluded = np.isneginf(beta)
    cap = _size_cap(excluded, d) if excluded.any() else d - 1
    log_prior_z: float | np.ndarray
    if cap is not None:  # no set excluded, or exactly those above a size cap: the prior's mass is cached
        log_prior_z = _log_prior_normaliser(d, parent_prior, cap)
    else:
        prior = np.where(excluded, -np.inf, _log_parent_prior(d, parent_prior))
        log_prior_z = _sums_over_orders(_zeta(prior, q, upward=False).reshape(m, d << q), d)[0][:, -1]
    return GraphPosterior(
        edges.reshape(*batch, d, d),
        parent_set.reshape(*batch, d, 1 << q),
        (log_z - log_prior_z).reshape(batch),
        entropy.reshape(batch),
    )


def _dp_of_beta(beta: np.ndarray, d: int, work: bool = False, columns: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(parent-set posterior, edge marginals (m, d, d), log Z, entropy, excluded or None)`` of ``beta (m, d, 2^(d-1))``.

    The linear DP, the log-space DP for the members it cannot hold, the edge marginals summed from
    the parent-set posterior. ``excluded`` (``beta == -inf``) is returned when it was needed, else None.
    ``work`` and ``columns``: as :func:`_linear_dp`.
    """
    q, m = d - 1, beta.shape[0]
    parent_set, log_z, exact, entropy = _linear_dp(beta, d, work, columns)
    excluded = None
    if not exact.all():  # the few the linear pass cannot hold: the log-space DP, exact at any spread
        redo = np.flatnonzero(~exact)
        parent_set[redo], log_z[redo] = _log_dp(beta[redo], d)
        excluded = np.isneginf(beta)
        entropy[redo] = _order_dag_entropy(beta[redo], parent_set[redo], log_z[redo], excluded[redo])
    edges = np.zeros((m, d, d))
    if q:
        tables = _tables(d)
        marginal = parent_set @ tables["bits"]  # (m, d, q): P(parent_of[j, b] -> j)
        parent_of = tables["parent_of"]
        child = np.broadcast_to(np.arange(d)[:, None], parent_of.shape)
        edges[:, parent_of, child] = marginal
    return parent_set, edges, log_z, entropy, excluded


def posterior_summary(
    stats: BGeStats,
    *,
    max_parents: int | None = None,
    parent_prior: str = "size",
    alpha_mu: float = 1.0,
    alpha_w: float | None = None,
    t: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge marginals ``(..., d, d)``, entropy ``(...)`` and best DAG ``(..., d, d)`` of every dataset of ``stats``.

    What :func:`edge_posterior` and :func:`best_dag` return from :func:`bge_local_scores`' table
    (the same numbers), in one pass that builds the prior-weighted scores once and shares them: for
    callers that recompute a posterior after every row, such as the intervention-design env.

    Parameters
    ----------
    stats : BGeStats
        Per-node statistics, possibly batched.
    max_parents, alpha_mu, alpha_w, t
        See :func:`bge_local_scores`.
    parent_prior : {"size", "uniform"}

    Returns
    -------
    edge_probs : (..., d, d) array
        As :attr:`GraphPosterior.edge_probs`.
    entropy : (...) array
        As :attr:`GraphPosterior.entropy`.
    best : (..., d, d) int8 array
        As :func:`best_dag`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(100, 1))
    >>> stats = BGeStats.from_data(np.hstack([x, 2 * x + rng.normal(size=(100, 1))]))
    >>> probs, entropy, best = posterior_summary(stats)
    >>> bool(probs[0, 1] + probs[1, 0] > 0.99), int(best.sum())  # an edge, its direction unknown
    (True, 1)
    """
    check_choice(parent_prior, PARENT_PRIORS, "parent prior")
    beta = _prior_weighted_scores(stats, max_parents, alpha_mu, alpha_w, t, parent_prior, work=True)
    d, lead = stats.d, stats.count.shape[:-1]
    beta = beta.reshape(-1, d, 1 << (d - 1))
    capped = max_parents is not None and max_parents < d - 1
    _, edges, _, entropy, _ = _dp_of_beta(beta, d, work=True,
                                          columns=_capped_sets(d, max_parents)[0] if capped else None)
    best = _adjacency_of(kernels.best_parents(beta, _work("best", beta.size)))
    return edges.reshape(*lead, d, d), entropy.reshape(lead), best.reshape(*lead, d, d)


def _order_dag_entropy(beta: np.ndarray, parent_set: np.ndarray, log_z: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """``H = log Z - sum_j sum_P P(Pa_j = P) log beta_j(P)`` for ``m`` members (module docstring), ``(m,)``.

    Each ``beta_j`` is taken relative to its maximum ``c_j`` (the posterior of each node's parent set
    sums to 1, so ``sum_j c_j`` moves to ``log Z``): the terms then stay near the entropy's size
    instead of cancelling at the size of the scores.
    """
    top = beta.max(axis=-1)  # (m, d)
    centred = np.where(excluded, 0.0, beta - top[..., None])
    expected = np.einsum("mjc,mjc->m", parent_set, centred)
    return log_z - top.sum(axis=-1) - expected


_NORMAL = 1e-250
"""Smallest value the linear DP keeps (far above the subnormals): below it an episode goes to the log-space DP."""

_MAX_LOG_WEIGHT = 575.0
"""Largest ``|log|`` of a size weight of the linear DP (``exp`` of it stays normal with room to spare)."""


_DP_CHUNK_ENTRIES = 16 * 10 * 512
"""Entries of ``beta`` per call of the linear DP kernel, so that its work arrays stay in cache (16 members at d = 10,
measured faster than 8 or 32; 3 at d = 12)."""


_WORK_KEPT = 1 << 21
"""Largest work array (numbers, 16 MB) that :func:`_work` keeps between calls (d = 10: 82,000 per 16 members)."""

_work_arrays = threading.local()


def _work(name: str, entries: int) -> np.ndarray:
    """A flat work array of ``entries`` numbers, kept between calls per thread and ``name``.

    A new large array each step costs page faults (the allocator hands freed ones back to the system
    and faults them in again: at d = 10 a third of a posterior's time), so the arrays of the
    posterior's passes are reused. Nothing a public function returns may live in one. Above
    :data:`_WORK_KEPT` numbers a fresh array.
    """
    if entries > _WORK_KEPT:
        return np.empty(entries)
    pool = _work_arrays.__dict__.setdefault("pool", {})
    held = pool.get(name)
    if held is None or held.size < entries:
        held = pool[name] = np.empty(entries)
    return held[:entries]


def _linear_dp(beta: np.ndarray, d: int, work: bool = False,
               columns: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Koivisto's DP in linear space: ``(parent-set posterior, log Z, held, entropy)`` of ``beta (m, d, 2^(d-1))``.

    Compiled (:func:`~causal_gym.stats._posterior_kernels.linear_dp`: loops along the batch, no
    index tables) and as exact as :func:`_log_dp` where it holds: it exponentiates once
    (``beta_j`` relative to its maximum ``c_j``) and then only adds and multiplies. The scales
    factor out of every sum: ``F(S)`` carries ``exp(sum_{k in S} c_k)``, ``B(S)`` carries
    ``exp(sum_{k not in S} c_k)``, and each level of the sums over orders is divided by its
    maximum, whose log is carried per set size. So ``F(V) = 1`` after scaling, and
    ``P(Pa_j = P) = beta~_j(P) * sum_{U >= P} F~(U) B~(U + j) w(|U|)`` with
    ``w(u) = exp(sF(u) + sB(u + 1) - sF(d))``. An episode is *held* when no value it needs fell
    below :data:`_NORMAL` (nothing underflowed), its weights are finite and each node's
    parent-set posterior sums to 1 within 1e-9; the others are redone by :func:`_log_dp`.
    The entropy of the held ones comes from the same pass (:func:`_order_dag_entropy`'s sum, with
    ``log Z - sum_j c_j = log F~(V)``). ``work=True``: the parent-set posterior lives in this
    thread's work space (:func:`_work`), valid until the next such call. ``columns``: the codes
    outside which every ``beta`` is ``-inf`` (a parent-set cap), so that only they are exponentiated.
    """
    ratio = (_work("ratio", beta.size) if work else np.empty(beta.size)).reshape(beta.shape)
    if columns is None:
        top_score = beta.max(axis=-1)  # (m, d): c_j
        np.subtract(beta, top_score[..., None], out=ratio)
        np.exp(ratio, out=ratio)  # in place
    else:  # exp(-inf) = 0 exactly: the same numbers, without a pass over the excluded sets (99% at d = 20, K = 4)
        scored = beta[..., columns]
        top_score = scored.max(axis=-1)
        ratio.fill(0.0)
        ratio[..., columns] = np.exp(scored - top_score[..., None])
    size = _tables(d)["size"]
    chunk = max(1, _DP_CHUNK_ENTRIES // (d << (d - 1)))
    scratch = _work("dp", ((d << d) + (2 << d)) * min(chunk, len(ratio)))
    parts = [kernels.linear_dp(ratio[i : i + chunk], beta[i : i + chunk], top_score[i : i + chunk], size, _NORMAL,
                               _MAX_LOG_WEIGHT, scratch)
             for i in range(0, max(len(ratio), 1), chunk)]
    # the kernel writes each chunk's parent-set posterior in place of its ratios: ratio holds them all
    log_f, held, expected = (np.concatenate([part[k] for part in parts]) for k in (1, 2, 3))
    return ratio, top_score.sum(axis=1) + log_f, held, log_f - expected


def _log_dp(beta: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Koivisto's DP in log space: ``(parent-set posterior, log Z)`` of ``beta (m, d, 2^(d-1))``, exact at any spread."""
    q, m = d - 1, beta.shape[0]
    alpha = _zeta(beta, q, upward=False).reshape(m, d << q)
    forward, backward = _sums_over_orders(alpha, d)
    expand = _tables(d)["expand"]
    log_z = forward[:, -1]
    below = forward[:, expand] + backward[:, expand | (1 << np.arange(d))[:, None]]
    gamma = _zeta(below, q, upward=True)
    return np.exp(beta + gamma - log_z[:, None, None]), log_z


def _sums_over_orders(alpha: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``log F(S)`` and ``log B(S)`` for all ``2^d`` subsets from ``log alpha`` of shape ``(m, d 2^(d-1))``.

    ``alpha >= beta(empty set)`` is finite, so every term is finite and the log-sum-exp needs
    no guard against ``-inf``.
    """
    both = np.empty((alpha.shape[0], 2 << d))
    both[:, 0] = 0.0  # F(empty set)
    both[:, -1] = 0.0  # B(V)
    for write, read, alpha_at in _levels(d):
        terms = both[:, read] + alpha[:, alpha_at]  # (m, 2, C(d, k), k)
        top = terms.max(axis=-1)
        both[:, write] = np.log(np.exp(terms - top[..., None]).sum(axis=-1)) + top
    return both[:, : 1 << d], both[:, 1 << d :]


def _size_cap(excluded: np.ndarray, d: int) -> int | None:
    """``K`` when ``excluded`` ``(m, d, 2^(d-1))`` marks exactly the sets of more than ``K`` parents everywhere, else None."""
    size = _tables(d)["size"]
    cap = int(size[~excluded[0, 0]].max())
    return cap if np.array_equal(excluded, np.broadcast_to(size > cap, excluded.shape)) else None


@cache
def _log_prior_normaliser(d: int, parent_prior: str, cap: int) -> float:
    """``log sum_{order, G} prod_j rho_j(pa(j))`` over DAGs of at most ``cap`` parents per node: the prior's total mass."""
    prior = np.where(_tables(d)["size"] > cap, -np.inf, _log_parent_prior(d, parent_prior))[None]
    _, log_z, held, _ = _linear_dp(prior, d)  # the prior's weights lie within 12 nats of each other: held
    return float(log_z[0] if held[0] else _log_dp(prior, d)[1][0])


# ---------------------------------------------------------------------------------------------
# predictions and their expected quality
# ---------------------------------------------------------------------------------------------


def _check_edge_probs(edge_probs: object) -> np.ndarray:
    p = np.asarray(edge_probs, dtype=np.float64)
    if p.ndim < 2 or p.shape[-1] != p.shape[-2]:
        raise ValueError(f"edge_probs must have shape (..., d, d), got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any() or (p > 1 + 1e-9).any():
        raise ValueError("edge_probs must hold probabilities in [0, 1]")
    return p


def bayes_optimal_graph(edge_probs: np.ndarray) -> np.ndarray:
    """The entry-wise Bayes-optimal directed adjacency matrix: ``i -> j`` iff ``P(i -> j) > 1/2`` (int8).

    It has no 2-cycle but may contain longer directed cycles; it is the prediction whose
    expected number of correct entries :func:`expected_correct_entries` returns.
    """
    p = _check_edge_probs(edge_probs)
    out = (p > 0.5).astype(np.int8)
    d = p.shape[-1]
    out[..., np.arange(d), np.arange(d)] = 0
    return out


def expected_correct_entries(edge_probs: np.ndarray) -> np.ndarray | float:
    """Posterior expected number of correct off-diagonal entries of :func:`bayes_optimal_graph`.

    ``sum_{i != j} max(p_ij, 1 - p_ij)``, between ``d (d - 1) / 2`` and ``d (d - 1)``.
    """
    p = _check_edge_probs(edge_probs)
    d = p.shape[-1]
    off = ~np.eye(d, dtype=bool)
    out = np.maximum(p, 1.0 - p)[..., off].sum(axis=-1)
    return float(out) if out.ndim == 0 else out


def expected_shd(edge_probs: np.ndarray) -> np.ndarray | float:
    """Posterior expected SHD of :func:`bayes_optimal_graph` (each unordered pair costs 1 unless right).

    A pair ``{i, j}`` of a DAG is in one of three exclusive states with probabilities ``p_ij``,
    ``p_ji`` and ``1 - p_ij - p_ji``; the prediction pays the probability of the other two.
    """
    p = _check_edge_probs(edge_probs)
    d = p.shape[-1]
    i, j = _upper_pairs(d)
    forward, reverse = p[..., i, j], p[..., j, i]
    right = np.where(forward > 0.5, forward, np.where(reverse > 0.5, reverse, 1.0 - forward - reverse))
    out = (1.0 - right).sum(axis=-1)
    return float(out) if out.ndim == 0 else out


@cache
def _upper_pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(d, 1)``, built once per ``d`` (the design env asks after every step)."""
    i, j = np.triu_indices(d, 1)
    i.flags.writeable = j.flags.writeable = False
    return i, j


@dataclass(frozen=True)
class PosteriorScores:
    """How good a posterior is against the true DAG (:func:`posterior_scores`).

    ``expected_correct`` and ``expected_shd`` need no truth (posterior expectations);
    ``correct``, ``shd`` and ``f1`` score :func:`bayes_optimal_graph` against the truth;
    ``auprc`` ranks the ordered pairs by ``P(i -> j)`` (NaN when the true DAG has no edge).
    """

    expected_correct: float
    expected_shd: float
    correct: int
    shd: int
    f1: float
    auprc: float


def posterior_scores(edge_probs: np.ndarray, true_dag: np.ndarray) -> PosteriorScores:
    """Expected and realised quality of the edge posterior of one graph against ``true_dag``."""
    p = _check_edge_probs(edge_probs)
    if p.ndim != 2:
        raise ValueError(f"posterior_scores takes one (d, d) posterior, got shape {p.shape}")
    truth = check_adjacency(true_dag, "true_dag", d=p.shape[0])
    guess = bayes_optimal_graph(p)
    off = ~np.eye(p.shape[0], dtype=bool)
    has_edges = truth.any() and not truth[off].all()
    return PosteriorScores(
        expected_correct=float(expected_correct_entries(p)),
        expected_shd=float(expected_shd(p)),
        correct=int((guess == truth)[off].sum()),
        shd=shd(truth, guess),
        f1=directed_edge_scores(truth, guess).f1,
        auprc=edge_average_precision(truth, p) if has_edges else math.nan,
    )


# ---------------------------------------------------------------------------------------------
# DAG samples and the best DAG
# ---------------------------------------------------------------------------------------------


def _single_table(scores: object, parent_prior: str) -> tuple[np.ndarray, int]:
    """``log beta`` ``(d, 2^(d-1))`` of the scores of one dataset."""
    s, d = _check_scores(scores)
    if s.ndim != 2:
        raise ValueError(f"this takes the scores of one dataset, shape (d, 2^(d-1)), got {s.shape}")
    check_choice(parent_prior, PARENT_PRIORS, "parent prior")
    return s + _log_parent_prior(d, parent_prior), d


def _code_without(masks: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The parent-set code of node ``nodes`` for ``d``-bit ``masks`` that do not hold it (bit removed)."""
    low = masks & ((1 << nodes) - 1)
    return low | ((masks >> (nodes + 1)) << nodes)


def _adjacency_of(parent_masks: np.ndarray) -> np.ndarray:
    """``(..., d, d)`` int8 adjacency from the ``d``-bit parent mask of every node ``(..., d)``."""
    d = parent_masks.shape[-1]
    return ((parent_masks[..., None, :] >> np.arange(d)[:, None]) & 1).astype(np.int8)


def sample_dags(scores: np.ndarray, size: int, *, rng: object, parent_prior: str = "size") -> np.ndarray:
    """Exact draws from the posterior over DAGs of the order-modular prior (module docstring).

    Parameters
    ----------
    scores : array (d, 2^(d-1))
        Log local scores of one dataset (layout of :func:`local_scores`).
    size : int
        Number of DAGs.
    rng : int, SeedSequence or Generator
        Source of randomness (Gumbel-max draws).
    parent_prior : {"size", "uniform"}

    Returns
    -------
    (size, d, d) int8 array
        ``dags[k, i, j] = 1`` for ``i -> j`` in draw ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> dags = sample_dags(np.zeros((3, 4)), 2000, rng=0, parent_prior="uniform")
    >>> bool(abs(dags[:, 0, 1].mean() - 0.25) < 0.03)  # P(0 -> 1) = 1/4 with no data
    True
    """
    beta, d = _single_table(scores, parent_prior)
    size = check_count(size, "size")
    gen = as_generator(rng)
    q = d - 1
    alpha = _zeta(beta[None], q, upward=False)[0]  # (d, 2^q)
    forward = _sums_over_orders(alpha.reshape(1, d << q), d)[0][0]  # (2^d,)
    nodes = np.arange(d)
    draws = np.arange(size)
    remaining = np.full(size, (1 << d) - 1, dtype=np.int64)
    before = np.zeros((size, d), dtype=np.int64)  # d-bit mask of each node's predecessors
    for _ in range(d):  # the order from the back: the last node of the remaining set, by its weight
        inside = ((remaining[:, None] >> nodes) & 1).astype(bool)
        rest = remaining[:, None] & ~(1 << nodes)  # S - {j} for every j
        logits = np.where(inside, forward[rest] + alpha[nodes, _code_without(rest, nodes)], -np.inf)
        last = np.argmax(logits + gen.gumbel(size=logits.shape), axis=1)
        before[draws, last] = rest[draws, last]
        remaining = rest[draws, last]
    expand = _tables(d)["expand"]  # (d, 2^q) d-bit masks
    allowed = (expand[None] & ~before[:, :, None]) == 0
    logits = np.where(allowed, beta[None], -np.inf)
    choice = np.argmax(logits + gen.gumbel(size=logits.shape), axis=2)  # (size, d)
    return _adjacency_of(expand[nodes, choice])


def best_dag(scores: np.ndarray, *, parent_prior: str = "size") -> np.ndarray:
    """The DAG maximising ``prod_j rho_j(pa(j)) exp(score(j, pa(j)))``: the mode of the joint (order, DAG) posterior.

    Found exactly by the recursion over subsets of Silander & Myllymäki (2006): the best parent
    set of ``j`` within every ``U`` (a running maximum over subsets), then the best sink of every
    subset, then back from the full set. Ties go to the smaller node index and parent-set code.
    ``scores`` may carry leading batch axes ``(..., d, 2^(d-1))``; the result is ``(..., d, d)`` int8.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.zeros((2, 2))
    >>> scores[1, 1] = 5.0  # node 1 with parent {0} scores best
    >>> best_dag(scores).tolist()
    [[0, 1], [0, 0]]
    """
    s, d = _check_scores(scores)
    check_choice(parent_prior, PARENT_PRIORS, "parent prior")
    beta = (s + _log_parent_prior(d, parent_prior)).reshape(-1, d, 1 << (d - 1))
    parents = kernels.best_parents(np.ascontiguousarray(beta), np.empty(beta.size))
    return _adjacency_of(parents).reshape(*s.shape[:-2], d, d)


# ---------------------------------------------------------------------------------------------
# the posterior predictive of a new row under a DAG
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Predictive:
    """Per-node ingredients of the conditional t predictives (module docstring), from one dataset."""

    mean: np.ndarray  # (d, d): node i's posterior mean vector mu
    r: np.ndarray  # (d, d, d): node i's R
    nu: np.ndarray  # (d,)
    c: np.ndarray  # (d,)

    @classmethod
    def of(cls, stats: BGeStats, alpha_mu: float, alpha_w: float | None, t: float | None) -> _Predictive:
        if not isinstance(stats, BGeStats) or stats.count.ndim != 1:
            raise ValueError("the predictive takes the BGeStats of one dataset (no batch axes)")
        d = _check_d(stats.d, "stats")
        alpha_mu, alpha_w, t = _bge_hyper(d, alpha_mu, alpha_w, t)
        n = stats.count
        nu = alpha_w + n - d + 1
        return cls(
            mean=(n / (n + alpha_mu))[:, None] * stats.mean,
            r=stats.posterior_matrices(alpha_mu, t),
            nu=nu,
            c=(alpha_mu + n + 1) / ((alpha_mu + n) * nu),
        )

    def conditional(self, node: int, parents: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Location ``(m,)``, squared scale ``(m,)`` and degrees of freedom of ``node`` given ``rows[:, parents]``."""
        r, mu, c, nu = self.r[node], self.mean[node], self.c[node], self.nu[node]
        p = parents.size
        if p == 0:
            return np.full(rows.shape[0], mu[node]), np.full(rows.shape[0], c * r[node, node]), float(nu)
        r_pp = r[np.ix_(parents, parents)]
        r_pi = r[parents, node]
        coef = np.linalg.solve(r_pp, r_pi)
        dev = rows[:, parents] - mu[parents]
        delta = np.einsum("mp,pm->m", dev, np.linalg.solve(r_pp, dev.T)) / c
        scale2 = (nu + delta) / (nu + p) * c * (r[node, node] - r_pi @ coef)
        return mu[node] + dev @ coef, scale2, float(nu + p)


def _check_dag_for(dag: object, d: int, name: str = "dag") -> np.ndarray:
    from causal_gym.graphs import is_dag

    a = check_adjacency(dag, name, d=d)
    if not is_dag(a):
        raise ValueError(f"{name} must be a DAG (directed edges only, no cycle)")
    return a


def predictive_logpdf(
    stats: BGeStats,
    dag: np.ndarray,
    rows: np.ndarray,
    intervened: np.ndarray | None = None,
    *,
    alpha_mu: float = 1.0,
    alpha_w: float | None = None,
    t: float | None = None,
) -> np.ndarray:
    """Log density of each of ``rows`` ``(m, d)`` as the next row, under ``dag`` and the BGe posterior of ``stats``.

    Each row is scored on its own (not one after the other). Nodes marked in ``intervened``
    ``(m, d)`` contribute nothing (their mechanism did not produce the value). The value for
    node ``i`` equals the change of ``i``'s BGe local score when the row joins its data.
    """
    pred = _Predictive.of(stats, alpha_mu, alpha_w, t)
    d = stats.d
    a = _check_dag_for(dag, d)
    x, kept = _check_rows(rows, intervened, "rows")
    if x.ndim != 2:
        raise ValueError(f"rows must have shape (m, d), got {x.shape}")
    from scipy.special import gammaln

    total = np.zeros(x.shape[0])
    for node in range(d):
        loc, scale2, df = pred.conditional(node, np.flatnonzero(a[:, node]), x)
        z2 = (x[:, node] - loc) ** 2 / (df * scale2)
        log_density = (gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * np.log(df * math.pi * scale2)
                       - (df + 1) / 2 * np.log1p(z2))
        total += np.where(kept[:, node], log_density, 0.0)
    return total


def sample_predictive(
    stats: BGeStats,
    dags: np.ndarray,
    targets: np.ndarray,
    values: np.ndarray,
    *,
    rng: object,
    alpha_mu: float = 1.0,
    alpha_w: float | None = None,
    t: float | None = None,
) -> np.ndarray:
    """One predictive row per DAG and candidate design: ``(K, C, d)``.

    Nodes are drawn in a topological order of each DAG from their conditional t predictives
    given the parents' drawn (or set) values.

    Parameters
    ----------
    stats : BGeStats
        Statistics of the data so far (one dataset).
    dags : (K, d, d) array
        DAGs to sample under (e.g. from :func:`sample_dags`).
    targets : (C,) ints
        Node set by a hard intervention in candidate ``c``, or ``-1`` for an observational row.
    values : (C,) floats
        The value it is set to (ignored for ``-1``).
    rng : int, SeedSequence or Generator
        Draws are made node by node, each node's ``C`` draws at once, so candidates share
        nothing but may be compared draw by draw.
    """
    pred = _Predictive.of(stats, alpha_mu, alpha_w, t)
    d = stats.d
    graphs = np.asarray(dags)
    if graphs.ndim != 3 or graphs.shape[1:] != (d, d):
        raise ValueError(f"dags must have shape (K, {d}, {d}), got {graphs.shape}")
    target = np.asarray(targets)
    value = np.asarray(values, dtype=np.float64)
    if target.ndim != 1 or target.dtype.kind not in "iu" or value.shape != target.shape:
        raise ValueError("targets must be a 1-d integer array and values a float array of the same shape")
    if ((target < -1) | (target >= d)).any() or not np.isfinite(value).all():
        raise ValueError(f"targets must lie in -1..{d - 1} and values be finite")
    gen = as_generator(rng)
    from causal_gym.graphs import topological_order

    out = np.zeros((graphs.shape[0], target.size, d))
    for k, dag in enumerate(graphs):
        a = _check_dag_for(dag, d, "dags[k]")
        rows = out[k]
        for node in topological_order(a):
            loc, scale2, df = pred.conditional(node, np.flatnonzero(a[:, node]), rows)
            draw = loc + np.sqrt(scale2) * gen.standard_t(df, size=target.size)
            rows[:, node] = np.where(target == node, value, draw)
    return out
