"""CausalArena analyses over scored rows (Sections 5-6): slices, interactions, win rates, runtime.

Inputs are lists of plain dict rows, as :func:`causal_gym.envs.arena.scoring.evaluate` and
:func:`~causal_gym.envs.arena.scoring.average_replicates` produce them; outputs are lists of
dict rows too (``pandas.DataFrame(rows)`` turns either into a table). Analyses that compare
units expect one row per unit and method, i.e. replicate-averaged rows, as in the paper.

- :func:`slice_scores`: mean and spread of a metric per method and factor category (Eq. 6).
- :func:`interaction_scores`: the double-centred score of Eq. (7),
  ``I[m, c] = F[m, c] - F[m, .] - F[., c] + F[., .]``, where ``F[m, c]`` is method ``m``'s mean on
  category ``c`` and the dotted terms are unweighted means of that method x category table over
  categories, over methods, and over both. Rows and columns of ``I`` sum to zero.
- :func:`win_rates`: pairwise win rates (Figures 1 and 19). On every unit both methods scored,
  the pair is compared on F1 (higher wins) and on SHD (lower wins) separately; a tie scores 0.5
  for each. Values within ``tie_tolerance`` of each other tie (default 0: exact equality, which
  is what identical replicate-averaged scores give). The pooled rate is the wins of both metrics
  over the number of comparisons of both metrics. A unit where either method has no score for a
  metric (failed, unsupported) is left out of that metric's comparisons and counted in
  ``n_skipped``.
- :func:`overall_win_rates`: each method's wins pooled over all opponents.
- :func:`paired_differences`: one method against each other one on the units both scored: the mean
  per-unit difference of each metric with a 95% paired bootstrap interval over those units
  (:func:`causal_gym.tables.paired_interval`, i.e. :func:`causal_gym.metrics.paired_bootstrap`) --
  how a method of your own compares with the paper's.
- :func:`runtime_summary`: runtime per graph over successful runs, with status counts.
- :func:`exposure_scores`: the pretraining-exposure check (Eq. 8, Fig. 15): a method's F1 on the
  categories its training prior covers (ID) and on the others (OOD), per factor axis, relative to
  the mean of a reference group of methods on the same slice, with bootstrap intervals over units.

A row whose metric is None (a failed or unsupported run) is never silently used as a score: it
is left out of means and counted as missing.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from causal_gym._validation import check_real

__all__ = ["slice_scores", "interaction_scores", "win_rates", "overall_win_rates", "paired_differences",
           "runtime_summary", "exposure_scores", "EXPOSURE_COLUMNS"]

Row = Mapping[str, Any]


def _sort_key(value: object) -> tuple[str, Any]:
    """Orders mixed category labels deterministically (numbers numerically, strings alphabetically)."""
    return (type(value).__name__, value)


def _column(rows: Sequence[Row], key: str) -> list[Any]:
    missing = [i for i, row in enumerate(rows) if key not in row]
    if missing:
        raise ValueError(f"rows {missing[:5]} lack the column {key!r}")
    return [row[key] for row in rows]


def slice_scores(
    rows: Iterable[Row], factor: str, metric: str = "f1", *, method_key: str = "method"
) -> list[dict[str, Any]]:
    """Mean, standard deviation (ddof 1; None for one value) and counts of ``metric`` per method and category.

    Returns
    -------
    list of dict
        ``{"method", "factor", "category", "mean", "std", "n", "n_missing"}``, sorted by method
        then category; ``mean`` is None when every row of the cell is missing.
    """
    rows = list(rows)
    cells: dict[tuple[Any, Any], list[Any]] = {}
    for method, category, value in zip(_column(rows, method_key), _column(rows, factor), _column(rows, metric)):
        cells.setdefault((method, category), []).append(value)
    out = []
    for (method, category), values in sorted(cells.items(), key=lambda item: tuple(map(_sort_key, item[0]))):
        present = np.array([v for v in values if v is not None], dtype=float)
        out.append({
            "method": method,
            "factor": factor,
            "category": category,
            "mean": float(present.mean()) if present.size else None,
            "std": float(present.std(ddof=1)) if present.size > 1 else None,
            "n": int(present.size),
            "n_missing": len(values) - int(present.size),
        })
    return out


def interaction_scores(
    rows: Iterable[Row], factor: str, metric: str = "f1", *, method_key: str = "method"
) -> list[dict[str, Any]]:
    """Double-centred interaction ``I[m, c]`` of every method and category (Eq. 7).

    Returns
    -------
    list of dict
        ``{"method", "category", "score", "interaction"}`` where ``score`` is ``F[m, c]``.

    Raises
    ------
    ValueError
        If some (method, category) cell has no score: double-centring needs a complete table.
    """
    cells = slice_scores(rows, factor, metric, method_key=method_key)
    methods = sorted({c["method"] for c in cells}, key=_sort_key)
    categories = sorted({c["category"] for c in cells}, key=_sort_key)
    table = np.full((len(methods), len(categories)), np.nan)
    for cell in cells:
        if cell["mean"] is not None:
            table[methods.index(cell["method"]), categories.index(cell["category"])] = cell["mean"]
    empty = [(methods[i], categories[j]) for i, j in np.argwhere(np.isnan(table)).tolist()]
    if empty:
        raise ValueError(f"no {metric!r} score for (method, {factor}) cells {empty[:5]}; interactions need every cell")
    interaction = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
    return [
        {"method": m, "category": c, "score": float(table[i, j]), "interaction": float(interaction[i, j])}
        for (i, m), (j, c) in itertools.product(enumerate(methods), enumerate(categories))
    ]


def _unit_scores(rows: Sequence[Row], unit_keys: Sequence[str], method_key: str) -> dict[Any, dict[Any, Row]]:
    by_unit: dict[Any, dict[Any, Row]] = {}
    for row in rows:
        missing = [k for k in (*unit_keys, method_key) if k not in row]
        if missing:
            raise ValueError(f"row lacks {missing}: {dict(row)!r}")
        unit = tuple(row[k] for k in unit_keys)
        methods = by_unit.setdefault(unit, {})
        if row[method_key] in methods:
            raise ValueError(
                f"two rows for method {row[method_key]!r} on unit {unit}; average replicates first "
                "(scoring.average_replicates)"
            )
        methods[row[method_key]] = row
    return by_unit


def win_rates(
    rows: Iterable[Row],
    *,
    unit_keys: Sequence[str] = ("unit", "protocol"),
    method_key: str = "method",
    tie_tolerance: float = 0.0,
) -> list[dict[str, Any]]:
    """Pairwise win rates of every ordered method pair on F1 and SHD (rules in the module docstring).

    Parameters
    ----------
    rows : iterable of dict
        One row per unit and method with ``"f1"`` and ``"shd"`` (None when missing).
    unit_keys : sequence of str
        Columns that identify a unit (an SCM or dataset under one split).
    method_key : str
        Column naming the method.
    tie_tolerance : float
        Differences up to this size are ties.

    Returns
    -------
    list of dict
        ``{"method", "opponent", "f1_wins", "f1_comparisons", "shd_wins", "shd_comparisons",
        "wins", "comparisons", "win_rate", "win_rate_f1", "win_rate_shd", "n_skipped"}``; rates
        are None without comparisons. ``method`` vs ``opponent`` and the reverse sum to 1.
    """
    tolerance = check_real(tie_tolerance, "tie_tolerance", 0.0)
    by_unit = _unit_scores(list(rows), unit_keys, method_key)
    methods = sorted({m for unit in by_unit.values() for m in unit}, key=_sort_key)
    out = []
    for a, b in itertools.permutations(methods, 2):
        tally = {"f1": [0.0, 0], "shd": [0.0, 0]}
        skipped = 0
        for unit in by_unit.values():
            if a not in unit or b not in unit:
                continue
            for metric, sign in (("f1", 1.0), ("shd", -1.0)):
                x, y = unit[a].get(metric), unit[b].get(metric)
                if x is None or y is None:
                    skipped += 1
                    continue
                diff = sign * (x - y)
                tally[metric][0] += 0.5 if abs(diff) <= tolerance else float(diff > 0)
                tally[metric][1] += 1
        wins = tally["f1"][0] + tally["shd"][0]
        comparisons = tally["f1"][1] + tally["shd"][1]
        out.append({
            "method": a,
            "opponent": b,
            "f1_wins": tally["f1"][0],
            "f1_comparisons": tally["f1"][1],
            "shd_wins": tally["shd"][0],
            "shd_comparisons": tally["shd"][1],
            "wins": wins,
            "comparisons": comparisons,
            "win_rate": wins / comparisons if comparisons else None,
            "win_rate_f1": tally["f1"][0] / tally["f1"][1] if tally["f1"][1] else None,
            "win_rate_shd": tally["shd"][0] / tally["shd"][1] if tally["shd"][1] else None,
            "n_skipped": skipped,
        })
    return out


def overall_win_rates(pairwise: Iterable[Row]) -> list[dict[str, Any]]:
    """Each method's wins over all opponents divided by its comparisons (the bars of Figure 1).

    Takes :func:`win_rates` output; returns ``{"method", "wins", "comparisons", "win_rate"}``
    sorted by decreasing win rate (methods without comparisons last).
    """
    totals: dict[Any, list[float]] = {}
    for row in pairwise:
        total = totals.setdefault(row["method"], [0.0, 0])
        total[0] += row["wins"]
        total[1] += row["comparisons"]
    out = [
        {"method": m, "wins": w, "comparisons": c, "win_rate": w / c if c else None} for m, (w, c) in totals.items()
    ]
    return sorted(out, key=lambda r: (r["win_rate"] is None, -(r["win_rate"] or 0.0), _sort_key(r["method"])))


def paired_differences(
    rows: Iterable[Row],
    method: Any,
    opponents: Sequence[Any] | None = None,
    *,
    metrics: Sequence[str] = ("f1", "shd"),
    unit_keys: Sequence[str] = ("unit", "protocol"),
    method_key: str = "method",
) -> list[dict[str, Any]]:
    """``method`` against each opponent, paired by unit: per metric, the mean of ``method``'s score
    minus the opponent's over the units where both have one, with a 95% paired bootstrap interval.

    Parameters
    ----------
    rows : iterable of dict
        One row per unit and method (replicate-averaged) holding ``metrics`` (None when missing).
    method : str
        The method compared.
    opponents : sequence, optional
        The methods it is compared with (default: every other method of the rows).
    metrics : sequence of str
        Score columns (F1: higher is better; SHD: lower is better -- the sign is the difference's).

    Returns
    -------
    list of dict
        One per opponent: ``method``, ``opponent`` and, per metric ``m``: ``m`` and ``m_opponent``
        (their means on the paired units), ``m_difference``, ``m_low``, ``m_high`` (None without
        paired units; the bounds also below two) and ``m_units`` (how many units were paired).

    Examples
    --------
    >>> rows = [{"unit": u, "protocol": "obs", "method": m, "f1": f1, "shd": 1.0}
    ...         for u, (a, b) in enumerate([(0.5, 0.4), (0.7, 0.5), (0.6, 0.6)]) for m, f1 in (("mine", a), ("pc", b))]
    >>> (row,) = paired_differences(rows, "mine")
    >>> row["opponent"], round(row["f1_difference"], 3), row["f1_units"], row["shd_difference"]
    ('pc', 0.1, 3, 0.0)
    """
    from causal_gym.tables import paired_interval

    by_unit = _unit_scores(list(rows), unit_keys, method_key)
    if opponents is None:
        opponents = sorted({m for unit in by_unit.values() for m in unit if m != method}, key=_sort_key)
    out = []
    for opponent in opponents:
        row: dict[str, Any] = {"method": method, "opponent": opponent}
        for metric in metrics:
            pairs = [(unit[method][metric], unit[opponent][metric]) for unit in by_unit.values()
                     if method in unit and opponent in unit
                     and unit[method].get(metric) is not None and unit[opponent].get(metric) is not None]
            mine, theirs = [a for a, _ in pairs], [b for _, b in pairs]
            estimate, low, high = paired_interval(mine, theirs) if pairs else (None, None, None)
            row.update({
                metric: float(np.mean(mine)) if pairs else None,
                f"{metric}_opponent": float(np.mean(theirs)) if pairs else None,
                f"{metric}_difference": estimate,
                f"{metric}_low": None if low is None or np.isnan(low) else low,
                f"{metric}_high": None if high is None or np.isnan(high) else high,
                f"{metric}_units": len(pairs),
            })
        out.append(row)
    return out


def runtime_summary(rows: Iterable[Row], by: Sequence[str] = ("method",)) -> list[dict[str, Any]]:
    """Runtime per graph (seconds) over successful runs, grouped by ``by`` (e.g. method and d).

    Returns
    -------
    list of dict
        ``{*by, "n_runs", "n_ok", "statuses", "mean", "median", "std", "min", "max", "total"}``
        (statistics None when no run succeeded; ``std`` with ddof 1, None for one run).
    """
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        missing = [k for k in (*by, "status", "runtime") if k not in row]
        if missing:
            raise ValueError(f"row lacks {missing}: {dict(row)!r}")
        groups.setdefault(tuple(row[k] for k in by), []).append(row)
    out = []
    for key in sorted(groups, key=lambda k: tuple(_sort_key(v) for v in k)):
        group = groups[key]
        times = np.array([r["runtime"] for r in group if r["status"] == "ok" and r["runtime"] is not None], dtype=float)
        statuses: dict[str, int] = {}
        for r in group:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        stats = {
            "mean": float(times.mean()) if times.size else None,
            "median": float(np.median(times)) if times.size else None,
            "std": float(times.std(ddof=1)) if times.size > 1 else None,
            "min": float(times.min()) if times.size else None,
            "max": float(times.max()) if times.size else None,
            "total": float(times.sum()) if times.size else None,
        }
        out.append({**dict(zip(by, key)), "n_runs": len(group), "n_ok": int(times.size), "statuses": statuses, **stats})
    return out


EXPOSURE_COLUMNS: Mapping[str, str] = {"graph_family": "graph_family", "mechanism": "mechanisms", "noise": "noises",
                                       "root": "roots"}
"""Exposure axis -> the row column holding a unit's categories on it (one name, or a list: a unit counts
in every category present in its SCM, as in the paper)."""


def exposure_scores(
    rows: Iterable[Row],
    method: str,
    coverage: Mapping[str, Collection[str]],
    reference: Sequence[str],
    metric: str = "f1",
    *,
    columns: Mapping[str, str] = EXPOSURE_COLUMNS,
    unit_key: str = "unit",
    method_key: str = "method",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """How far ``method`` leads a reference group on the categories its prior covers (ID) and on the rest (OOD).

    Per axis (a key of ``columns``, e.g. graph family, mechanism, noise, root family), a category's score
    is a method's mean ``metric`` over the units in that category; ID (OOD) is the unweighted mean over
    the categories present that ``coverage[axis]`` lists (does not list). With ``F`` the method's and
    ``Fref`` the reference methods' mean, the relative gain is ``(F - Fref) / Fref`` (the paper's Eq. 8);
    ``gap`` is the ID gain minus the OOD gain (positive: the lead shrinks outside the prior). The last
    row, axis ``"mean"``, averages the OOD gains and gaps over the axes where both exist.

    Only units where ``method`` and every reference method have a score count (paired). Intervals are
    percentile intervals of a bootstrap over those units (``n_boot`` draws, seeded); a draw in which a
    slice is empty leaves that quantity out of that draw. Rows must be one per unit and method
    (average replicates first).

    Returns
    -------
    list of dict
        Per axis: ``axis``, ``id_categories``, ``ood_categories`` (present in the units), ``f1_id``,
        ``f1_ood``, ``reference_id``, ``reference_ood``, ``gain_id``, ``gain_ood``, ``gap`` (None where
        a slice is empty or its reference mean is 0) and ``*_interval`` ``[low, high]`` for the last three;
        then the ``"mean"`` row; every row also has ``n_units``.
    """
    rows = list(rows)
    if not reference or method in reference:
        raise ValueError(f"reference must name methods other than {method!r}, got {list(reference)!r}")
    if n_boot < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"n_boot must be >= 1 and level in (0, 1), got {n_boot}, {level}")
    unknown = sorted(set(coverage) - set(columns))
    if unknown:
        raise ValueError(f"coverage names axes {unknown} that columns does not map")
    names = [method, *reference]
    by_unit = _unit_scores([r for r in rows if r.get(method_key) in names], [unit_key], method_key)
    units = sorted((u for u, cell in by_unit.items()
                    if all(m in cell and cell[m].get(metric) is not None for m in names)), key=_sort_key)
    if not units:
        raise ValueError(f"no unit has a {metric!r} score for {method!r} and every reference method {list(reference)}")
    scores = np.array([[by_unit[u][m][metric] for u in units] for m in names], dtype=float)  # (methods, units)
    weights = np.vstack([np.ones(len(units)), np.random.default_rng(seed).multinomial(
        len(units), np.full(len(units), 1.0 / len(units)), size=n_boot)], dtype=np.float64)  # row 0: the data itself
    tail = 100 * (1 - level) / 2

    def summary(values: np.ndarray) -> tuple[float | None, list[float] | None]:
        point = None if np.isnan(values[0]) else float(values[0])
        draws = values[1:][~np.isnan(values[1:])]
        return point, (None if point is None or not draws.size
                       else [float(np.percentile(draws, tail)), float(np.percentile(draws, 100 - tail))])

    out, gains_ood, gaps = [], [], []
    for axis, covered in coverage.items():
        column = columns[axis]
        labels = [by_unit[u][method][column] for u in units]
        labels = [[x] if isinstance(x, str) else list(x or ()) for x in labels]
        categories = sorted({c for unit_labels in labels for c in unit_labels})
        member = np.array([[c in unit_labels for c in categories] for unit_labels in labels], dtype=float)
        counts = weights @ member  # (draws, categories)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # empty slices are NaN, by design
            per_category = np.einsum("bu,mu,uc->bmc", weights, scores, member) / counts[:, None, :]
            inside = np.isin(categories, list(covered))
            f_id, f_ood = (np.nanmean(per_category[:, :, chosen], axis=2) if chosen.any()
                           else np.full(per_category.shape[:2], np.nan) for chosen in (inside, ~inside))
            ref_id, ref_ood = f_id[:, 1:].mean(axis=1), f_ood[:, 1:].mean(axis=1)
            gain_id = np.where(ref_id > 0, (f_id[:, 0] - ref_id) / ref_id, np.nan)
            gain_ood = np.where(ref_ood > 0, (f_ood[:, 0] - ref_ood) / ref_ood, np.nan)
        gap = gain_id - gain_ood
        row: dict[str, Any] = {"axis": axis, "n_units": len(units),
                               "id_categories": [c for c, i in zip(categories, inside) if i],
                               "ood_categories": [c for c, i in zip(categories, inside) if not i]}
        for key, values in (("f1_id", f_id[:, 0]), ("f1_ood", f_ood[:, 0]), ("reference_id", ref_id),
                            ("reference_ood", ref_ood)):
            row[key] = summary(values)[0]
        for key, values in (("gain_id", gain_id), ("gain_ood", gain_ood), ("gap", gap)):
            row[key], row[f"{key}_interval"] = summary(values)
        out.append(row)
        if row["gain_ood"] is not None and row["gap"] is not None:
            gains_ood.append(gain_ood)
            gaps.append(gap)
    mean: dict[str, Any] = {"axis": "mean", "n_units": len(units), "axes": [r["axis"] for r in out
                                                                               if r["gap"] is not None]}
    for key, parts in (("gain_ood", gains_ood), ("gap", gaps)):
        if parts:
            mean[key], mean[f"{key}_interval"] = summary(np.mean(parts, axis=0))
        else:
            mean[key], mean[f"{key}_interval"] = None, None
    out.append(mean)
    return out
