"""CausaLab scores: task success and the mechanism-recovery metrics of a hypothesis.

Pure functions on plain inputs: graphs are sets of ``(parent, child)`` name pairs, the true
frequency coefficients a ``{parent: coefficient}`` dict (for the quadratic family, the linear
coefficient ``c1`` of each parent), and the prediction a parsed
:class:`~causal_gym.envs.causalab.hypothesis.Hypothesis` or ``None`` (no hypothesis: an empty
claim).

Metrics (all sets compared with :func:`prf`)
--------------------------------------------
- all-edge P/R/F1 over directed ``(from, to)`` pairs and the directed SHD: unordered pairs whose
  relation differs, so a missing, an extra and a reversed edge each count 1;
- freq-edge P/R/F1: only the edges into the frequency;
- root-node P/R/F1: roots are the ancestors of the frequency without parents; nodes off every path
  into the frequency are excluded, on both sides;
- freq-weight P/R/F1: a predicted parent's linear coefficient is correct when it is within
  ``weight_tol`` (default :data:`WEIGHT_TOLERANCE`, 0.01) of the true one; precision divides by
  the number of predicted coefficients (``base`` excluded), recall by the number of true parents.

Why 0.01 and not the released code's 1e-6: every reading is rounded to 2 decimals, so a
coefficient estimated from data carries rounding error. Integer (linear) coefficients come out
exactly, but the quadratic family's linear coefficients have 6 decimals, and a least-squares fit
that is structurally exact and predicts every reading to within 0.014 Hz scores freq-weight F1
0.03 at 1e-6 (0.63 at 1e-4, 1.0 at 1e-3): the metric then measures luck, not recovery. 0.01 is
the tolerance the original's visualiser scored with, and it is far below the spacing of the
true coefficients (the linear ones are integers 1-3; the quadratic ones ``-2 c2 axis`` with
``c2`` in {0.008, 0.012, 0.016}).

Empty sets: both empty gives P = R = F1 = 1; an empty prediction of a non-empty truth gives 0,
as does a non-empty prediction of an empty truth — the rule of :mod:`causal_gym.metrics`.

Trajectories
------------
The final hypothesis of an episode is the last valid non-empty one (at least one edge). Per-step
curves use the same rule as of each step: a step without a hypothesis, with an invalid one
(a :class:`~causal_gym.envs.causalab.hypothesis.HypothesisError`) or with an empty one keeps the
last valid non-empty hypothesis so far (scored as ``None`` before the first), so the last point
of a curve is always the final hypothesis's score. The key ``stated`` says whether the step
contributed a hypothesis of its own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from causal_gym._validation import check_adjacency, check_choice, check_node, check_real
from causal_gym.envs.causalab.hypothesis import FREQ, Hypothesis, HypothesisError
from causal_gym.graphs import imec_size
from causal_gym.metrics import PRF

__all__ = [
    "PRF",
    "WEIGHT_TOLERANCE",
    "adjacency_from_edges",
    "directed_shd",
    "final_hypothesis",
    "freq_weight_scores",
    "hypothesis_metrics",
    "imec_size_for_targets",
    "prf",
    "root_nodes",
    "task_success",
    "trajectory",
]

WEIGHT_TOLERANCE = 0.01
"""Default absolute tolerance of the freq-weight metric (the original visualiser's; see above)."""

Edge = tuple[str, str]


def prf(pred: Collection[object], true: Collection[object]) -> PRF:
    """Precision, recall and F1 of a predicted set against the true set.

    Examples
    --------
    >>> prf({("a", "b")}, {("a", "b"), ("b", "c")})
    PRF(precision=1.0, recall=0.5, f1=0.6666666666666666)
    >>> prf(set(), set())
    PRF(precision=1.0, recall=1.0, f1=1.0)
    """
    p, t = set(pred), set(true)
    hits = len(p & t)
    precision = hits / len(p) if p else float(not t)
    recall = hits / len(t) if t else float(not p)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PRF(precision, recall, f1)


def directed_shd(pred_edges: Iterable[Edge], true_edges: Iterable[Edge]) -> int:
    """Structural Hamming distance between two directed graphs given as edge sets.

    Counts the unordered pairs ``{a, b}`` whose edges differ: missing, extra and reversed edges
    each cost 1 (equal to :func:`causal_gym.metrics.shd` on the adjacency encoding).
    """
    p, t = set(pred_edges), set(true_edges)

    def relation(edges: set[Edge], pair: tuple[str, str]) -> tuple[bool, bool]:
        a, b = pair
        return (a, b) in edges, (b, a) in edges

    pairs = {(min(e), max(e)) for e in p | t}
    return sum(relation(p, pair) != relation(t, pair) for pair in pairs)


def root_nodes(edges: Iterable[Edge], freq: str = FREQ) -> frozenset[str]:
    """Ancestors of ``freq`` that have no parents (nodes off every path into ``freq`` are excluded)."""
    parents: dict[str, set[str]] = {}
    for a, b in edges:
        parents.setdefault(b, set()).add(a)
    seen: set[str] = set()
    frontier = set(parents.get(freq, ()))
    while frontier:
        seen |= frontier
        frontier = {a for v in frontier for a in parents.get(v, ())} - seen
    return frozenset(v for v in seen if v != freq and not parents.get(v))


def freq_weight_scores(pred: Mapping[str, float], true: Mapping[str, float], tol: float = WEIGHT_TOLERANCE) -> PRF:
    """P/R/F1 of frequency coefficients: a predicted parent scores if its coefficient is within ``tol``.

    Parameters
    ----------
    pred, true : mapping of parent name to linear coefficient
        ``base`` is not part of either.
    tol : float, default :data:`WEIGHT_TOLERANCE` (0.01)
        Absolute tolerance (the original visualiser's; its scoring code used 1e-6, which data
        rounded to 2 decimals cannot reach in the quadratic family).
    """
    tol = check_real(tol, "tol", minimum=0.0)
    matched = {p for p, v in pred.items() if p in true and abs(v - true[p]) <= tol}
    # an unmatched coefficient is a miss on both sides, so tag it with the side it comes from
    return prf({(p, p in matched or "pred") for p in pred}, {(p, p in matched or "true") for p in true})


def _check_truth(
    true_edges: Iterable[Edge], true_coefficients: Mapping[str, float], properties: Sequence[str], freq: str
) -> set[Edge]:
    nodes = set(properties) | {freq}
    edges = set(true_edges)
    for e in edges:
        if not (isinstance(e, tuple) and len(e) == 2 and e[0] in nodes and e[1] in nodes and e[0] != e[1]):
            raise ValueError(f"true_edges must be (parent, child) pairs of distinct declared names, got {e!r}")
    parents = {a for a, b in edges if b == freq}
    if set(true_coefficients) != parents:
        raise ValueError(
            f"true_coefficients must have one entry per true parent of {freq} {sorted(parents)}, "
            f"got {sorted(true_coefficients)}"
        )
    return edges


def hypothesis_metrics(
    true_edges: Iterable[Edge],
    true_coefficients: Mapping[str, float],
    properties: Sequence[str],
    predicted: Hypothesis | None,
    *,
    freq: str = FREQ,
    weight_tol: float = WEIGHT_TOLERANCE,
) -> dict[str, float]:
    """Every mechanism-recovery metric of one hypothesis against the hidden SCM.

    Parameters
    ----------
    true_edges : iterable of (str, str)
    true_coefficients : mapping of parent name to float
        Linear coefficient of each true parent of ``freq`` (``c1`` in the quadratic family).
    properties : sequence of str
        The episode's property names (the frequency may be listed or not).
    predicted : Hypothesis or None
        None scores as an empty claim.
    freq : str
    weight_tol : float, default :data:`WEIGHT_TOLERANCE`

    Returns
    -------
    dict
        ``edge_precision``, ``edge_recall``, ``edge_f1``, ``shd``, ``freq_edge_precision``,
        ``freq_edge_recall``, ``freq_edge_f1``, ``root_precision``, ``root_recall``, ``root_f1``,
        ``freq_weight_precision``, ``freq_weight_recall``, ``freq_weight_f1``.

    Raises
    ------
    ValueError
        If the truth is inconsistent (undeclared names, coefficients not matching the parents) or
        the prediction is about another frequency node.
    """
    truth = _check_truth(true_edges, true_coefficients, properties, freq)
    if predicted is not None and (not isinstance(predicted, Hypothesis) or predicted.freq != freq):
        raise ValueError(f"predicted must be None or a Hypothesis about {freq!r}, got {predicted!r}")
    pred = set(predicted.edges) if predicted is not None else set()
    weights = predicted.linear_coefficients if predicted is not None else {}
    scores = {
        "edge": prf(pred, truth),
        "freq_edge": prf({e for e in pred if e[1] == freq}, {e for e in truth if e[1] == freq}),
        "root": prf(root_nodes(pred, freq), root_nodes(truth, freq)),
        "freq_weight": freq_weight_scores(weights, true_coefficients, weight_tol),
    }
    out = {f"{name}_{part}": float(getattr(s, part)) for name, s in scores.items() for part in PRF._fields}
    out["shd"] = float(directed_shd(pred, truth))
    return out


def _usable(step: object) -> Hypothesis | None:
    if step is None or isinstance(step, HypothesisError):
        return None
    if not isinstance(step, Hypothesis):
        raise ValueError(f"steps must hold Hypothesis, HypothesisError or None, got {type(step).__name__}")
    return step if step.edges else None


def final_hypothesis(steps: Iterable[Hypothesis | HypothesisError | None]) -> Hypothesis | None:
    """The last valid hypothesis with at least one edge, or None."""
    final = None
    for step in steps:
        final = _usable(step) or final
    return final


def trajectory(
    steps: Iterable[Hypothesis | HypothesisError | None],
    true_edges: Iterable[Edge],
    true_coefficients: Mapping[str, float],
    properties: Sequence[str],
    *,
    freq: str = FREQ,
    weight_tol: float = WEIGHT_TOLERANCE,
) -> list[dict[str, float]]:
    """Metrics after every step, carrying the last valid non-empty hypothesis forward.

    Each dict is :func:`hypothesis_metrics` of the hypothesis in force after that step plus
    ``stated`` (1.0 when the step itself gave a valid non-empty hypothesis). The hypothesis in
    force after the last step is :func:`final_hypothesis`, so the last dict without ``stated`` is
    that hypothesis's metrics.
    """
    truth = set(true_edges)
    current: Hypothesis | None = None
    scored: dict[str, float] | None = None  # the metrics of ``current``, recomputed only when it changes
    curve = []
    for step in steps:
        fresh = _usable(step)
        if scored is None or (fresh is not None and fresh != current):  # metrics are a function of the claim
            current = fresh or current
            scored = hypothesis_metrics(truth, true_coefficients, properties, current, freq=freq, weight_tol=weight_tol)
        curve.append({**scored, "stated": float(fresh is not None)})
    return curve


def adjacency_from_edges(edges: Iterable[Edge], nodes: Sequence[str]) -> np.ndarray:
    """The edge set as a causal_gym adjacency matrix with rows and columns in ``nodes`` order."""
    index = {v: k for k, v in enumerate(nodes)}
    if len(index) != len(nodes):
        raise ValueError(f"nodes has repeated names: {list(nodes)!r}")
    a = np.zeros((len(nodes), len(nodes)), dtype=np.int8)
    for e in edges:
        if not (isinstance(e, tuple) and len(e) == 2 and e[0] in index and e[1] in index and e[0] != e[1]):
            raise ValueError(f"edges must be (parent, child) pairs of distinct names in nodes, got {e!r}")
        a[index[e[0]], index[e[1]]] = 1
    return a


def imec_size_for_targets(true_adjacency: np.ndarray, targets: Iterable[int]) -> int:
    """Size of the interventional Markov equivalence class given the nodes the agent intervened on.

    Each CausaLab intervention sets one property, so the target family is the observational
    regime plus one singleton per distinct intervened node (repeats add nothing). Shift
    interventions are soft, not hard; with the targets known and observational data present the
    class is the same as for hard interventions on those targets (Hauser & Bühlmann 2012 for the
    hard case; Yang, Katcoff & Uhler 2018 show soft and hard targets give the same I-MEC), so
    :func:`causal_gym.graphs.imec_size` applies.

    Parameters
    ----------
    true_adjacency : (d, d) array
        The true DAG in causal_gym's encoding (see :func:`adjacency_from_edges`).
    targets : iterable of int
        Node indices intervened on, repeats allowed; empty gives the observational MEC size.
    """
    a = check_adjacency(true_adjacency, "true_adjacency")
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        raise ValueError(f"targets must be an iterable of node indices, got {targets!r}")
    distinct = tuple(sorted({check_node(t, a.shape[0], "targets member") for t in targets}))
    return _imec_size(a.shape[0], np.asarray(a, dtype=np.int8).tobytes(), distinct)


@functools.lru_cache(maxsize=1 << 16)
def _imec_size(d: int, adjacency: bytes, targets: tuple[int, ...]) -> int:
    """:func:`imec_size` memoised: every episode ends with one, and lab graphs of a few nodes repeat
    (543 DAGs on 4 nodes) while the Meek closure costs milliseconds."""
    dag = np.frombuffer(adjacency, dtype=np.int8).reshape(d, d)
    return imec_size(dag, [(t,) for t in targets])


def task_success(prediction: float, target: float, tol: float = 5.0, rule: str = "strict") -> bool:
    """Whether a reactor prediction activates the reactor.

    Parameters
    ----------
    prediction, target : float
        Submitted and true frequency (Hz).
    tol : float, default 5.0
    rule : {"strict", "original"}
        ``"strict"``: ``|prediction - target| < tol``. ``"original"`` reproduces the released
        code's integer truncation: ``int(prediction) == int(target)`` or
        ``|int(prediction) - target| < tol``.
    """
    check_choice(rule, ("strict", "original"), "rule")
    tol = check_real(tol, "tol", minimum=0.0)
    target = check_real(target, "target")
    if isinstance(prediction, bool) or not isinstance(prediction, (int, float, np.integer, np.floating)):
        raise ValueError(f"prediction must be a real number, got {prediction!r}")
    if not math.isfinite(prediction):
        return False
    if rule == "strict":
        return abs(prediction - target) < tol
    return int(prediction) == int(target) or abs(int(prediction) - target) < tol
