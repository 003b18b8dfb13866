"""Scores that compare an estimated graph with the true one, and intervals over instances.

Pure functions: arrays in, numbers out. Graphs use the causal_gym encoding (see
:mod:`causal_gym.graphs`): ``A[i, j] = 1, A[j, i] = 0`` for ``i -> j`` and
``A[i, j] = A[j, i] = 1`` for ``i -- j``. Every function validates both graphs and requires the
same number of nodes.

Empty denominators
------------------
Precision, recall and F1 follow one rule (:class:`PRF`): an undefined ratio scores 1 when the
estimate is exactly right about it and 0 otherwise. Concretely, with ``tp``, ``fp``, ``fn``
counted over the items being scored (pairs, arrowheads or directed edges):

- precision = ``tp / (tp + fp)``; with nothing predicted it is 1 if the truth is empty too, else 0;
- recall = ``tp / (tp + fn)``; with an empty truth it is 1 if nothing was predicted, else 0;
- F1 = ``2 P R / (P + R)``, and 0 when ``P + R = 0``.

So an empty estimate of an empty truth scores P = R = F1 = 1 and an empty estimate of a non-empty
truth scores 0, as the CausaLab protocol requires; whenever both sides are non-empty the ratios
are the usual ones (causal-learn's ``AdjacencyConfusion`` / ``ArrowConfusion``). cdt and
scikit-learn's default map 0/0 to 0 instead, which would give a perfect empty answer F1 = 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from causal_gym._validation import check_adjacency
from causal_gym.graphs import dag_to_cpdag, descendants, is_dag, mec_dags, reachable

__all__ = [
    "PRF",
    "adjacency_scores",
    "arrowhead_scores",
    "directed_edge_scores",
    "shd",
    "shd_cpdag",
    "nshd",
    "sid",
    "sid_cpdag",
    "edge_auroc",
    "edge_average_precision",
    "bootstrap_interval",
    "paired_bootstrap",
]

_BOOTSTRAP_CHUNK = 1 << 20
"""Most resampled values held at once by the bootstrap (bounds memory for large samples)."""


class PRF(NamedTuple):
    """Precision, recall and F1 of a set of predicted items (see the module docstring for 0/0)."""

    precision: float
    recall: float
    f1: float


def _prf(truth: np.ndarray, predicted: np.ndarray) -> PRF:
    tp = int(np.count_nonzero(truth & predicted))
    fp = int(np.count_nonzero(predicted & ~truth))
    fn = int(np.count_nonzero(truth & ~predicted))
    precision = tp / (tp + fp) if tp + fp else float(fn == 0)
    recall = tp / (tp + fn) if tp + fn else float(fp == 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PRF(precision, recall, f1)


def _graph_pair(
    true: object, est: object, true_name: str = "true", est_name: str = "est"
) -> tuple[np.ndarray, np.ndarray]:
    """Validate two graphs over the same nodes; return them as boolean matrices."""
    t = check_adjacency(true, true_name)
    e = check_adjacency(est, est_name, d=t.shape[0])
    return t.astype(bool), e.astype(bool)


def _require_dag(graph: np.ndarray, name: str) -> None:
    if not is_dag(graph):
        kind = "undirected edges" if (graph & graph.T).any() else "a directed cycle"
        raise ValueError(f"{name} must be a DAG but has {kind}")


# ---------------------------------------------------------------------------------------------
# precision / recall / F1
# ---------------------------------------------------------------------------------------------


def adjacency_scores(true: np.ndarray, est: np.ndarray) -> PRF:
    """Precision, recall and F1 of the skeleton: adjacent unordered pairs, ignoring edge marks.

    Parameters
    ----------
    true, est : (d, d) array
        Graphs in the causal_gym encoding (DAGs, CPDAGs or any PDAG).

    Returns
    -------
    PRF

    Examples
    --------
    >>> import numpy as np
    >>> true = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2
    >>> est = np.array([[0, 0, 1], [1, 0, 0], [1, 0, 0]])   # 1 -> 0 -- 2
    >>> adjacency_scores(true, est)
    PRF(precision=0.5, recall=0.5, f1=0.5)
    """
    t, e = _graph_pair(true, est)
    upper = np.triu(np.ones_like(t), 1)
    return _prf((t | t.T) & upper, (e | e.T) & upper)


def arrowhead_scores(true: np.ndarray, est: np.ndarray) -> PRF:
    """Precision, recall and F1 of arrowheads.

    A directed edge ``i -> j`` puts an arrowhead at ``j`` for the pair ``(i, j)``; undirected
    edges carry none, so an estimate gets no credit (and no penalty on precision) for leaving an
    edge unoriented. Counts agree with causal-learn's ``ArrowConfusion`` (``tp``, ``fp``, ``fn``).
    """
    t, e = _graph_pair(true, est)
    return _prf(t & ~t.T, e & ~e.T)


def directed_edge_scores(true: np.ndarray, est: np.ndarray) -> PRF:
    """Precision, recall and F1 over ordered pairs: ``i -> j`` is a hit iff the truth has it.

    This is the metric of CausalArena computed on the adjacency matrices themselves: an entry
    ``A[i, j] = 1`` claims the edge ``i -> j``. An undirected edge ``i -- j`` therefore counts as
    both ``i -> j`` and ``j -> i`` (on either side); against a true ``i -> j`` it is one true
    positive and one false positive. Orient CPDAG outputs first when the protocol asks for DAG
    metrics, or use :func:`arrowhead_scores`, where undirected edges claim nothing.
    """
    t, e = _graph_pair(true, est)
    return _prf(t, e)


# ---------------------------------------------------------------------------------------------
# structural Hamming distance
# ---------------------------------------------------------------------------------------------


def shd(true: np.ndarray, est: np.ndarray) -> int:
    """Structural Hamming distance: unordered pairs whose relation differs.

    A pair ``{i, j}`` is in one of four relations: no edge, ``i -> j``, ``j -> i`` or ``i -- j``.
    It counts 1 when the two graphs disagree, so a missing, an extra and a reversed edge each cost
    1, as does an edge that is undirected in one graph and directed in the other. This is exactly
    causal-learn's ``causallearn.graph.SHD`` for graphs in this encoding, and works for DAGs,
    CPDAGs and any PDAG.

    Examples
    --------
    >>> import numpy as np
    >>> true = np.array([[0, 1, 1], [0, 0, 0], [0, 0, 0]])  # 0 -> 1, 0 -> 2
    >>> est = np.array([[0, 0, 1], [1, 0, 1], [1, 0, 0]])   # 1 -> 0, 1 -> 2, 0 -- 2
    >>> shd(true, est)  # reversed, extra, undirected
    3
    """
    t, e = _graph_pair(true, est)
    differs = t != e
    return int(np.count_nonzero(np.triu(differs | differs.T, 1)))


def shd_cpdag(true_dag: np.ndarray, est: np.ndarray) -> int:
    """SHD between the CPDAG of the true DAG and an estimated CPDAG (or PDAG).

    Equivalent to ``shd(dag_to_cpdag(true_dag), est)``: orientations that the data cannot
    decide are not held against the estimate. ``est`` is compared as given; to compare two DAGs up
    to Markov equivalence, pass ``dag_to_cpdag(est_dag)``.

    Raises
    ------
    ValueError
        If ``true_dag`` is not a DAG or the graphs differ in size.
    """
    t, _ = _graph_pair(true_dag, est, "true_dag")
    _require_dag(t, "true_dag")
    return shd(dag_to_cpdag(t), est)


def nshd(true: np.ndarray, est: np.ndarray) -> float:
    """SHD divided by ``d (d - 1)``, the normaliser used by CausalArena.

    The denominator counts ordered pairs while :func:`shd` counts unordered ones, so the value
    lies in ``[0, 0.5]``; it is kept for comparability with the published tables.

    Raises
    ------
    ValueError
        If the graphs have fewer than 2 nodes (the ratio is undefined).
    """
    t, e = _graph_pair(true, est)
    d = t.shape[0]
    if d < 2:
        raise ValueError(f"nshd needs at least 2 nodes, got d={d}")
    return shd(t, e) / (d * (d - 1))


# ---------------------------------------------------------------------------------------------
# structural intervention distance
# ---------------------------------------------------------------------------------------------


def _descendant_closure(g: np.ndarray) -> np.ndarray:
    """``C[a, b]`` True iff ``b`` is ``a`` or a descendant of ``a``."""
    closure = np.eye(g.shape[0], dtype=bool)
    for v in range(g.shape[0]):
        closure[v, list(descendants(g, v))] = True
    return closure


def _sid_row(g: np.ndarray, closure: np.ndarray, i: int, z: tuple[int, ...]) -> np.ndarray:
    """Targets ``j`` whose effect of ``do(x_i)`` is wrong when adjusting for ``z`` in the DAG ``g``.

    Characterisation of Peters & Bühlmann (2015) for ``z = Pa_H(i)``:

    - ``j`` in ``z``: the estimate claims no effect; wrong iff ``j`` descends from ``i``;
    - otherwise wrong iff ``z`` holds a descendant of some ``w != i`` on a directed path
      ``i -> ... -> j``, or ``z`` fails to d-separate ``i`` and ``j`` once the first edges of those
      paths (``i -> c`` with ``c`` an ancestor of ``j``) are removed.

    The d-separations for all ``j`` share one reachable-set search per start edge: walks leave
    ``i`` through a parent (back-door) or through one child ``c`` and never return to ``i``.
    ``j`` is d-connected in its own graph iff a back-door walk reaches it or a walk starting with
    ``i -> c`` reaches it for some child ``c`` that is not an ancestor of ``j``. Removing edges
    out of ``i`` could shrink the ancestors of ``z`` (which open colliders) only through a child
    with a descendant in ``z``; such pairs already fail the descendant condition.
    """
    d = g.shape[0]
    in_z = np.zeros(d, dtype=bool)
    in_z[list(z)] = True
    has_desc_in_z = np.any(closure[:, in_z], axis=1)

    # w (a descendant of i with a descendant in z) spoils every j it leads to: w then lies on a
    # directed path i -> ... -> w -> ... -> j.
    spoilers = closure[i] & has_desc_in_z
    spoilers[i] = False
    wrong = closure[spoilers].any(axis=0)

    # Reachable-set search over states (v, entered from a child) = v and (v, entered from a
    # parent) = d + v (Koller & Friedman 2009, Alg. 3.1): a non-collider passes unless it is in
    # z, a collider passes iff it is in z or an ancestor of a member of z.
    passes = ~in_z[:, None]
    step = np.zeros((2 * d, 2 * d), dtype=bool)
    step[:d, :d] = g.T & passes
    step[:d, d:] = g & passes
    step[d:, d:] = g & passes
    step[d:, :d] = g.T & has_desc_in_z[:, None]
    step[[i, d + i], :] = False
    step[:, [i, d + i]] = False

    def reached(start: list[int]) -> np.ndarray:
        states = np.zeros(2 * d, dtype=bool)
        states[start] = True
        states[list(reachable(step, tuple(start)))] = True
        return (states[:d] | states[d:]) & ~in_z

    connected = reached(np.flatnonzero(g[:, i]).tolist())
    for c in np.flatnonzero(g[i]).tolist():
        connected |= reached([d + c]) & ~closure[c]
    wrong |= connected
    wrong[in_z] = closure[i, in_z]
    wrong[i] = False
    return wrong


def sid(true_dag: np.ndarray, est_dag: np.ndarray) -> int:
    """Structural intervention distance (Peters & Bühlmann 2015).

    The number of ordered pairs ``(i, j)``, ``i != j``, for which the interventional
    distribution ``p(x_j | do(x_i))`` inferred from ``est_dag`` -- by adjusting for the parents
    of ``i`` in ``est_dag`` -- differs from the one implied by ``true_dag``. Unlike SHD it scores
    what a graph is used for: an extra edge consistent with the causal order costs nothing, a
    reversed edge near a source can spoil many effects. Not symmetric.

    Parameters
    ----------
    true_dag, est_dag : (d, d) array
        DAGs on the same nodes.

    Returns
    -------
    int
        Between 0 and ``d (d - 1)``.

    Raises
    ------
    ValueError
        If either graph is not a DAG (use :func:`sid_cpdag` for a CPDAG estimate).

    Examples
    --------
    >>> import numpy as np
    >>> chain = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2
    >>> sid(chain, np.zeros((3, 3), dtype=int))  # do(x_1) and do(x_2) are confounded
    3
    """
    g, h = _graph_pair(true_dag, est_dag, "true_dag", "est_dag")
    _require_dag(g, "true_dag")
    _require_dag(h, "est_dag")
    closure = _descendant_closure(g)
    wrong = [_sid_row(g, closure, i, tuple(np.flatnonzero(h[:, i]).tolist())) for i in range(g.shape[0])]
    return int(np.count_nonzero(wrong))


def sid_cpdag(true_dag: np.ndarray, est_cpdag: np.ndarray, limit: int | None = 10_000) -> tuple[int, int]:
    """Smallest and largest SID of the DAGs in the Markov equivalence class of ``est_cpdag``.

    The class is enumerated exactly with :func:`causal_gym.graphs.mec_dags` (``d <= 12``), so
    these are the attained extremes, not the looser per-node bounds of Peters & Bühlmann (2015),
    which combine parent sets that may not occur together in one member. A DAG passed as
    ``est_cpdag`` stands for its whole class.

    Parameters
    ----------
    true_dag : (d, d) array
        The true DAG.
    est_cpdag : (d, d) array
        A CPDAG (or a DAG, standing for its class) on the same nodes.
    limit : int or None, default 10_000
        Refuse classes with more members than this.

    Returns
    -------
    (int, int)
        ``(lower, upper)``.

    Raises
    ------
    ValueError
        If ``true_dag`` is not a DAG, ``est_cpdag`` is neither a CPDAG nor a DAG, ``d > 12`` or
        the class exceeds ``limit``.
    """
    g, h = _graph_pair(true_dag, est_cpdag, "true_dag", "est_cpdag")
    _require_dag(g, "true_dag")
    closure = _descendant_closure(g)
    # Members share most parent sets, so each (node, parent set) row is computed once.
    rows: dict[tuple[int, tuple[int, ...]], int] = {}
    totals = []
    for member in mec_dags(h, limit=limit):
        total = 0
        for i in range(g.shape[0]):
            key = (i, tuple(np.flatnonzero(member[:, i]).tolist()))
            if key not in rows:
                rows[key] = int(np.count_nonzero(_sid_row(g, closure, *key)))
            total += rows[key]
        totals.append(total)
    return min(totals), max(totals)


# ---------------------------------------------------------------------------------------------
# edge scores: AUROC and average precision
# ---------------------------------------------------------------------------------------------


def _edge_labels_and_scores(true: object, scores: object) -> tuple[np.ndarray, np.ndarray]:
    t = check_adjacency(true, "true")
    s = np.asarray(scores)
    d = t.shape[0]
    if s.dtype.kind not in "biuf":
        raise ValueError(f"scores must be a real-valued matrix, got dtype {s.dtype}")
    if s.shape != (d, d):
        raise ValueError(f"scores must have the shape of true, ({d}, {d}), got {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores contains NaN or infinite values")
    off_diagonal = ~np.eye(d, dtype=bool)
    labels = t[off_diagonal].astype(bool)
    if labels.all() or not labels.any():
        raise ValueError("true must have both edges and non-edges among ordered pairs for a ranking score")
    return labels, s[off_diagonal].astype(np.float64)


def edge_auroc(true: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of directed edge scores over the ordered pairs ``i != j``.

    ``scores[i, j]`` is higher when ``i -> j`` is more likely; the label of ``(i, j)`` is
    ``true[i, j]`` (so a true undirected edge is a positive both ways). Computed from ranks
    (Mann-Whitney), tied scores taking their average rank: the probability that a random true
    edge outscores a random non-edge, ties counting one half. Equals scikit-learn's
    ``roc_auc_score``.

    Raises
    ------
    ValueError
        If ``scores`` is not a finite ``(d, d)`` matrix, or every ordered pair (or none) is an
        edge of ``true``.
    """
    labels, s = _edge_labels_and_scores(true, scores)
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2
    ranks = average_rank[inverse]
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def edge_average_precision(true: np.ndarray, scores: np.ndarray) -> float:
    """Average precision of directed edge scores over the ordered pairs ``i != j``.

    ``AP = sum_k (R_k - R_{k-1}) P_k`` over the distinct score thresholds from the highest down,
    where ``P_k``, ``R_k`` are the precision and recall of predicting every pair scoring at least
    the k-th threshold (tied pairs enter together). This is scikit-learn's
    ``average_precision_score`` (a step-wise area, no interpolation). Labels as in
    :func:`edge_auroc`.

    Raises
    ------
    ValueError
        As :func:`edge_auroc`.
    """
    labels, s = _edge_labels_and_scores(true, scores)
    order = np.argsort(-s, kind="stable")
    s, labels = s[order], labels[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]
    tp = np.cumsum(labels)[last_of_tie]
    precision = tp / (last_of_tie + 1)
    recall = tp / tp[-1]
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


# ---------------------------------------------------------------------------------------------
# bootstrap intervals over instances
# ---------------------------------------------------------------------------------------------


def _check_sample(values: object, name: str) -> np.ndarray:
    x = np.asarray(values)
    if x.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {x.dtype}")
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per instance), got shape {x.shape}")
    if x.size < 2:
        raise ValueError(f"{name} needs at least 2 values to resample, got {x.size}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values; record failures explicitly instead")
    return x.astype(np.float64)


def bootstrap_interval(
    values: np.ndarray,
    n_boot: int = 10_000,
    level: float = 0.95,
    seed: int | np.random.SeedSequence = 0,
    statistic: Callable[..., np.ndarray] = np.mean,
) -> tuple[float, float, float]:
    """Percentile bootstrap interval of a statistic over instances.

    Instances are resampled with replacement ``n_boot`` times (an index matrix, drawn in chunks
    to bound memory); the interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles
    of the resampled statistic.

    Parameters
    ----------
    values : (n,) array
        One finite value per instance, ``n >= 2``.
    n_boot : int, default 10_000
        Number of resamples.
    level : float, default 0.95
        Coverage of the interval, in (0, 1).
    seed : int or numpy.random.SeedSequence, default 0
        Seeds the generator; the same seed gives the same interval.
    statistic : callable, default numpy.mean
        A reduction accepting ``axis=`` (``np.mean``, ``np.median``, ...).

    Returns
    -------
    (float, float, float)
        ``(estimate, low, high)``, the estimate being ``statistic(values)``.

    Examples
    --------
    >>> est, low, high = bootstrap_interval([0.2, 0.4, 0.5, 0.9], n_boot=1000)
    >>> low <= est <= high
    True
    """
    x = _check_sample(values, "values")
    if isinstance(n_boot, (bool, np.bool_)) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise ValueError(f"level must be a number strictly between 0 and 1, got {level!r}")
    if not callable(statistic):
        raise ValueError(f"statistic must be a callable reduction such as np.mean, got {statistic!r}")
    rng = np.random.default_rng(seed)
    n = x.size
    rows = max(1, _BOOTSTRAP_CHUNK // n)
    resampled = []
    for start in range(0, n_boot, rows):
        idx = rng.integers(0, n, size=(min(rows, n_boot - start), n))
        stats = np.asarray(statistic(x[idx], axis=1), dtype=np.float64)
        if stats.shape != (idx.shape[0],):
            raise ValueError("statistic must reduce a 2-D array along axis=1 to one value per row")
        resampled.append(stats)
    low, high = np.quantile(np.concatenate(resampled), [(1 - level) / 2, (1 + level) / 2])
    return float(statistic(x)), float(low), float(high)


def paired_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    n_boot: int = 10_000,
    level: float = 0.95,
    seed: int | np.random.SeedSequence = 0,
) -> tuple[float, float, float]:
    """Paired percentile bootstrap interval of ``mean(a - b)`` over instances.

    ``a[k]`` and ``b[k]`` are two methods' scores on instance ``k``; each resample draws
    instances, keeping both scores of a drawn instance, which is the bootstrap of the
    per-instance differences. Pairing removes the between-instance variance that two
    independent intervals would carry.

    Returns
    -------
    (float, float, float)
        ``(mean difference, low, high)``; identical inputs give ``(0.0, 0.0, 0.0)``.

    Raises
    ------
    ValueError
        If ``a`` and ``b`` differ in length, or either is not a finite 1-D sample of size >= 2.
    """
    x = _check_sample(a, "a")
    y = _check_sample(b, "b")
    if x.size != y.size:
        raise ValueError(f"a and b must be paired (same length), got {x.size} and {y.size}")
    return bootstrap_interval(x - y, n_boot=n_boot, level=level, seed=seed)
