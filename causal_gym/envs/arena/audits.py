"""CausalArena's release audits for synthetic SCMs (Appendix A.2), as pure functions.

Every audit returns an :class:`AuditResult`: the checks it ran and one :class:`AuditFailure`
per violated rule, with a stable ``check`` code (the key of the pool's rejection table), a
readable ``detail`` and the offending nodes, pairs or rows in ``items``.

=====================================  =======================================================
check (code)                           rule
=====================================  =======================================================
graph: ``acyclic``                     only directed edges, no directed cycle
graph: ``no_isolated``                 every variable has at least one edge
graph: ``min_depth``                   longest directed path has >= 3 nodes for chain, tree,
                                       small-world and scale-free graphs, >= 2 otherwise
graph: ``min_edges``                   at least ``ceil(0.8 d)`` directed edges
graph: ``in_degree_cap``               (when a cap is given) no node above the cap
data: ``finite``                       no NaN or infinite value
data: ``constant_column``              no column with a single value
data: ``near_constant_column``         no continuous column with std <= 1e-8 (1 + ``|mean|``) or
                                       one value on more than 99% of rows
data: ``dominant_category``            no discrete column with a category on > 99% of rows
data: ``boundary_mass``                continuous columns: at most 10% of rows exactly at the
                                       column's minimum or maximum (an explicit clip)
data: ``near_duplicate_pair``          no pair of columns with ``|corr| > 0.99``
int: ``mask_consistent``               mask is boolean ``(n, d)``, masks only pool targets
int: ``targets_affected``              every pool target is masked on at least one row
int: ``target_changed``                every target's value differs from its observational
                                       counterpart on at least one of its rows
int: ``descendants_regenerated``       every child of a target changes on at least one of the
                                       target's rows; non-descendants and observational rows
                                       equal their counterpart
=====================================  =======================================================

Choices where the paper is silent: *depth* counts the nodes on the longest directed path (a
two-stage bipartite graph has depth 2, so "depth 2" means "has an edge"); a column is
*discrete* when its 20 most frequent values cover at least 90% of the rows (so 5% imputed,
jittered entries do not make a binary variable continuous); *boundary mass* is measured as exact ties at
the column's extremes, which is what an explicit clip leaves and what continuous data never has
by chance. The interventional checks compare the shipped rows with their *observational
counterpart*: the same sample call replayed without interventions (the causal_gym SCM draws all
noise before intervention values, so the two share every noise value).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from causal_gym._validation import check_adjacency, check_count, check_real
from causal_gym.graphs import descendants, is_dag, topological_order

__all__ = [
    "DEEP_FAMILIES",
    "DATA_CHECKS",
    "AuditFailure",
    "AuditResult",
    "min_depth_for",
    "graph_depth",
    "min_edges_for",
    "audit_graph",
    "audit_data",
    "audit_new_column",
    "audit_interventional",
]

DEEP_FAMILIES = frozenset({"chain", "tree", "small_world", "scale_free"})
"""Graph families audited for depth >= 3 (Appendix A.2); every other family needs depth >= 2."""

DATA_CHECKS = (
    "finite", "constant_column", "near_constant_column", "dominant_category", "boundary_mass", "near_duplicate_pair"
)
"""The dataset-level checks, in the order they run."""

DISCRETE_MAX_LEVELS = 20
DISCRETE_COVERAGE = 0.9
"""A column is audited as discrete when its 20 most frequent values cover at least 90% of the
rows (a discrete variable with a few imputed, jittered entries stays discrete)."""


@dataclass(frozen=True)
class AuditFailure:
    """One violated rule: its check code, a readable detail and the offending items."""

    check: str
    detail: str
    items: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        items = [list(i) if isinstance(i, tuple) else i for i in self.items]
        return {"check": self.check, "detail": self.detail, "items": items}


@dataclass(frozen=True)
class AuditResult:
    """The checks an audit ran and the failures it found (``passed`` when there are none)."""

    checks: tuple[str, ...]
    failures: tuple[AuditFailure, ...] = field(default=())

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return not self.failures

    @property
    def reasons(self) -> tuple[str, ...]:
        """Distinct failed check codes, in the order the checks ran."""
        failed = {f.check for f in self.failures}
        return tuple(c for c in self.checks if c in failed)

    def __add__(self, other: AuditResult) -> AuditResult:
        return AuditResult(self.checks + other.checks, self.failures + other.failures)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {"passed": self.passed, "checks": list(self.checks), "failures": [f.to_dict() for f in self.failures]}


def min_depth_for(family: str | None) -> int:
    """Minimum depth (nodes on the longest directed path) the audit demands of a graph family."""
    return 3 if family in DEEP_FAMILIES else 2


def min_edges_for(d: int) -> int:
    """``ceil(0.8 d)``, the minimum number of directed edges of a ``d``-variable graph."""
    return math.ceil(0.8 * check_count(d, "d"))


def graph_depth(adjacency: object) -> int:
    """Number of nodes on the longest directed path of a DAG (1 for a graph without edges).

    Raises
    ------
    ValueError
        If ``adjacency`` is not a DAG in causal_gym's encoding.

    Examples
    --------
    >>> import numpy as np
    >>> graph_depth(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]]))
    3
    """
    a = check_adjacency(adjacency, "adjacency").astype(bool)
    level = np.ones(a.shape[0], dtype=np.int64)
    for j in topological_order(a.astype(np.int8)):
        parents = np.flatnonzero(a[:, j])
        if parents.size:
            level[j] = level[parents].max() + 1
    return int(level.max()) if level.size else 0


def audit_graph(
    adjacency: object,
    *,
    family: str | None = None,
    min_depth: int | None = None,
    in_degree_cap: int | None = None,
) -> AuditResult:
    """Graph-level audits: acyclic, no isolated variable, minimum depth, ``>= ceil(0.8 d)`` edges.

    Parameters
    ----------
    adjacency : array_like, shape (d, d)
        Candidate graph in causal_gym's encoding.
    family : str, optional
        Graph family name; sets the minimum depth (:func:`min_depth_for`) unless ``min_depth``
        is given.
    min_depth : int, optional
        Explicit minimum depth.
    in_degree_cap : int, optional
        When given, also check that no node has more parents.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> import numpy as np
    >>> audit_graph(np.zeros((3, 3), dtype=np.int8)).reasons
    ('no_isolated', 'min_depth', 'min_edges')
    """
    a = check_adjacency(adjacency, "adjacency").astype(bool)
    d = a.shape[0]
    depth_needed = min_depth_for(family) if min_depth is None else check_count(min_depth, "min_depth")
    checks = ["acyclic", "no_isolated", "min_depth", "min_edges"]
    failures: list[AuditFailure] = []
    directed = a & ~a.T
    dag = is_dag(a.astype(np.int8))
    if not dag:
        failures.append(AuditFailure("acyclic", "graph has undirected edges or a directed cycle"))
    isolated = np.flatnonzero(~(a | a.T).any(axis=0))
    if isolated.size:
        failures.append(AuditFailure("no_isolated", f"{isolated.size} isolated variable(s)", tuple(isolated.tolist())))
    if dag:
        depth = graph_depth(a.astype(np.int8))
        if depth < depth_needed:
            failures.append(AuditFailure("min_depth", f"depth {depth} < {depth_needed}"))
    else:
        failures.append(AuditFailure("min_depth", "depth undefined for a graph that is not a DAG"))
    edges, needed = int(directed.sum()), min_edges_for(d)
    if edges < needed:
        failures.append(AuditFailure("min_edges", f"{edges} directed edges < ceil(0.8 d) = {needed}"))
    if in_degree_cap is not None:
        cap = check_count(in_degree_cap, "in_degree_cap")
        checks.append("in_degree_cap")
        over = np.flatnonzero(directed.sum(axis=0) > cap)
        if over.size:
            detail = f"{over.size} node(s) with more than {cap} parents"
            failures.append(AuditFailure("in_degree_cap", detail, tuple(over.tolist())))
    return AuditResult(tuple(checks), tuple(failures))


def _data_matrix(data: object, name: str) -> np.ndarray:
    arr = np.asarray(data)
    if arr.dtype.kind not in "iuf" or arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(
            f"{name} must be a real (n, d) matrix with n >= 2 and d >= 1, got dtype {arr.dtype}, shape {arr.shape}"
        )
    return arr.astype(np.float64, copy=False)


def _column_problem(column: np.ndarray, category_share: float, boundary_share: float) -> str | None:
    """The first single-column check a column fails (None when it passes them all)."""
    if not np.isfinite(column).all():
        return "finite"
    _, counts = np.unique(column, return_counts=True)
    share = float(counts.max() / column.size)
    if counts.size == 1:
        return "constant_column"
    if np.sort(counts)[-DISCRETE_MAX_LEVELS:].sum() >= DISCRETE_COVERAGE * column.size:
        return "dominant_category" if share > category_share else None
    if column.std() <= 1e-8 * (1.0 + abs(column.mean())) or share > category_share:
        return "near_constant_column"
    at_bounds = (np.count_nonzero(column == column.min()) + np.count_nonzero(column == column.max())) / column.size
    return "boundary_mass" if at_bounds > boundary_share else None


def _unit_columns(X: np.ndarray) -> np.ndarray:
    """Columns centred and scaled to unit norm (their inner products are correlations)."""
    Z = X - X.mean(axis=0)
    return Z / np.sqrt((Z * Z).sum(axis=0))


def audit_data(
    data: object,
    *,
    max_abs_corr: float = 0.99,
    category_share: float = 0.99,
    boundary_share: float = 0.10,
) -> AuditResult:
    """Dataset-level audits of an ``(n, d)`` sample (Appendix A.2).

    Parameters
    ----------
    data : array_like, shape (n, d)
        The sample as shipped (after any observation stressor).
    max_abs_corr : float
        Largest allowed absolute Pearson correlation of two columns (paper: 0.99).
    category_share : float
        Largest allowed share of one value in a discrete column, and of one value in a
        continuous column before it counts as near-constant (paper: 99%).
    boundary_share : float
        Largest allowed share of rows at a continuous column's minimum or maximum (paper: 10%).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> audit_data(X).passed, audit_data(np.c_[X, 2 * X[:, 0]]).reasons
    (True, ('near_duplicate_pair',))
    """
    X = _data_matrix(data, "data")
    max_abs_corr = check_real(max_abs_corr, "max_abs_corr", minimum=0.0)
    category_share = check_real(category_share, "category_share", minimum=0.0)
    boundary_share = check_real(boundary_share, "boundary_share", minimum=0.0)
    d = X.shape[1]
    checks = DATA_CHECKS
    found: dict[str, list[Any]] = {c: [] for c in checks}
    for j in range(d):
        problem = _column_problem(X[:, j], category_share, boundary_share)
        if problem is not None:
            found[problem].append(j)
    # boundary-mass columns are genuine variables and still take part in the duplicate check
    skip = set(found["finite"] + found["constant_column"] + found["near_constant_column"] + found["dominant_category"])
    columns = np.array([j for j in range(d) if j not in skip], dtype=np.int64)
    if columns.size > 1:
        Z = _unit_columns(X[:, columns])
        i, k = np.nonzero(np.triu(np.abs(Z.T @ Z) > max_abs_corr, k=1))
        found["near_duplicate_pair"] = [(int(columns[a]), int(columns[b])) for a, b in zip(i, k)]
    details = {
        "finite": "column(s) with NaN or infinite values",
        "constant_column": "constant column(s)",
        "near_constant_column": f"continuous column(s) with ~zero spread or a value on > {category_share:.0%} of rows",
        "dominant_category": f"discrete column(s) with one category on > {category_share:.0%} of rows",
        "boundary_mass": f"continuous column(s) with > {boundary_share:.0%} of rows at an extreme value",
        "near_duplicate_pair": f"column pair(s) with |corr| > {max_abs_corr}",
    }
    failures = tuple(
        AuditFailure(c, f"{len(found[c])} {details[c]}", tuple(found[c])) for c in checks if found[c]
    )
    return AuditResult(checks, failures)


def audit_new_column(
    column: object,
    previous: object,
    *,
    max_abs_corr: float = 0.99,
    category_share: float = 0.99,
    boundary_share: float = 0.10,
) -> AuditResult:
    """The dataset checks for one new column against the columns already accepted.

    Lets a generator check a variable as soon as it is built (``O(n d)`` instead of the full
    ``O(n d^2)`` correlation matrix); :func:`audit_data` on the finished matrix runs the same
    single-column checks and the same pair check.

    Parameters
    ----------
    column : array_like, shape (n,)
    previous : array_like, shape (n, p)
        Accepted columns (``p`` may be 0); they should pass the single-column checks.
    max_abs_corr, category_share, boundary_share : float
        As in :func:`audit_data`.

    Returns
    -------
    AuditResult
    """
    x = np.asarray(column, dtype=np.float64)
    P = np.asarray(previous, dtype=np.float64)
    if x.ndim != 1 or P.ndim != 2 or P.shape[0] != x.size:
        raise ValueError(f"column must have shape (n,) and previous (n, p), got {x.shape} and {P.shape}")
    checks = DATA_CHECKS
    problem = _column_problem(x, category_share, boundary_share)
    if problem is not None and problem != "boundary_mass":
        return AuditResult(checks, (AuditFailure(problem, f"new column fails {problem}"),))
    failures = [] if problem is None else [AuditFailure(problem, "new column fails boundary_mass")]
    if P.shape[1]:
        corr = np.abs(_unit_columns(P).T @ _unit_columns(x[:, None]))[:, 0]
        close = np.flatnonzero(corr > max_abs_corr)
        if close.size:
            detail = f"|corr| > {max_abs_corr} with column(s) {close.tolist()}"
            failures.append(AuditFailure("near_duplicate_pair", detail, tuple(close.tolist())))
    return AuditResult(checks, tuple(failures))


def _unequal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise 'differs', treating two NaNs as equal."""
    return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def audit_interventional(
    scm: object,
    data: object,
    mask: object,
    targets: Iterable[int],
    counterfactual: object | None = None,
    *,
    ignore_columns: Sequence[int] | None = None,
) -> AuditResult:
    """Audits of an observational+interventional sample (Appendix A.2).

    Parameters
    ----------
    scm : object
        Anything with ``d`` and ``graph`` (the DAG over the shipped columns): an SCM or an
        :class:`~causal_gym.envs.arena.synthetic.ArenaSCM`.
    data : array_like, shape (n, d)
        The shipped rows, observational and interventional.
    mask : array_like of bool, shape (n, d)
        ``mask[r, j]`` is True when row ``r`` intervenes on variable ``j``.
    targets : iterable of int
        The SCM's intervention target pool.
    counterfactual : array_like, shape (n, d), optional
        Row ``r`` replayed with the same seed and no intervention (for observational rows, the
        row itself). Needed for ``target_changed`` and ``descendants_regenerated``; without it
        only the mask checks run (``checks`` of the result says which ran).
    ignore_columns : sequence of int, optional
        Columns changed on interventional rows by a data-level stressor rather than by the SCM,
        exempt from the counterpart comparison. Default: ``scm.shifted_columns`` when the SCM
        has that attribute (an ArenaSCM with the distribution-shift stressor), else none.

    Returns
    -------
    AuditResult
    """
    d = check_count(getattr(scm, "d", None), "scm.d")
    graph = check_adjacency(getattr(scm, "graph", None), "scm.graph", d=d)
    X = _data_matrix(data, "data")
    pool = tuple(sorted({check_count(t, "target", minimum=0) for t in targets}))
    if pool and pool[-1] >= d:
        raise ValueError(f"targets must be variables 0..{d - 1}, got {list(pool)}")
    M = np.asarray(mask)
    checks = ["mask_consistent", "targets_affected"]
    failures: list[AuditFailure] = []
    if M.shape != X.shape or M.dtype.kind not in "bui" or not np.isin(M, (0, 1)).all():
        detail = f"mask must be a 0/1 matrix of shape {X.shape}, got {M.dtype} {M.shape}"
        failures.append(AuditFailure("mask_consistent", detail))
        return AuditResult(tuple(checks), tuple(failures))
    M = M.astype(bool)
    outside = sorted(set(np.flatnonzero(M.any(axis=0)).tolist()) - set(pool))
    if outside:
        failures.append(AuditFailure("mask_consistent", f"mask marks non-target variable(s) {outside}", tuple(outside)))
    unused = [t for t in pool if not M[:, t].any()]
    if unused:
        detail = f"target(s) {unused} have no interventional row"
        failures.append(AuditFailure("targets_affected", detail, tuple(unused)))
    if counterfactual is None:
        return AuditResult(tuple(checks), tuple(failures))
    C = _data_matrix(counterfactual, "counterfactual")
    if C.shape != X.shape:
        raise ValueError(f"counterfactual must have shape {X.shape}, got {C.shape}")
    checks += ["target_changed", "descendants_regenerated"]
    if ignore_columns is None:
        ignore_columns = getattr(scm, "shifted_columns", ())
    ignored = np.zeros(d, dtype=bool)
    ignored[[check_count(c, "ignore_columns member", minimum=0) for c in ignore_columns]] = True
    differs = _unequal(X, C)
    unchanged = [t for t in pool if M[:, t].any() and not differs[M[:, t], t].any()]
    if unchanged:
        detail = f"target(s) {unchanged} equal their counterpart on every row"
        failures.append(AuditFailure("target_changed", detail, tuple(unchanged)))
    stale = []
    for t in pool:
        rows = M[:, t]
        for c in np.flatnonzero(graph[t] & ~graph[:, t]):
            free = rows & ~M[:, c]
            if free.any() and not ignored[c] and not differs[free, c].any():
                stale.append((t, int(c)))
    if stale:
        detail = f"{len(stale)} (target, child) pair(s) where the child never changed"
        failures.append(AuditFailure("descendants_regenerated", detail, tuple(stale)))
    observational = ~M.any(axis=1)
    if differs[observational].any():
        rows = np.flatnonzero(observational & differs.any(axis=1))
        detail = f"{rows.size} observational row(s) differ from their counterpart"
        failures.append(AuditFailure("descendants_regenerated", detail, tuple(rows[:20].tolist())))
    moved = []
    for key in {tuple(np.flatnonzero(r)) for r in M[~observational]}:
        rows = (M == np.isin(np.arange(d), key)).all(axis=1)
        allowed = np.zeros(d, dtype=bool)
        allowed[list(key)] = True
        allowed[list(descendants(graph, key))] = True
        bad = np.flatnonzero(differs[rows].any(axis=0) & ~allowed & ~ignored)
        moved += [(key, int(b)) for b in bad]
    if moved:
        detail = f"{len(moved)} non-descendant column(s) changed under intervention"
        failures.append(AuditFailure("descendants_regenerated", detail, tuple(moved)))
    return AuditResult(tuple(checks), tuple(failures))
