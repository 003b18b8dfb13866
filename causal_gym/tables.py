"""The benchmark-neutral core of report tables: intervals as cells, per-instance means, formatting, figures.

Every benchmark builds its paper tables from the episode frame of
:func:`causal_gym.eval.report.load_runs` (one row per episode) with these helpers, so the
conventions below hold in every table. The helpers know the frame's shared columns only:
``benchmark``, ``status``, ``unit`` (the instance's identity) and ``score.<name>``.

Conventions
-----------
- The bootstrap unit is the instance: a score on an instance is the mean over its episodes there
  (:func:`per_unit`), and a paired interval pairs two scores on the same instance.
- Intervals: 95% percentile bootstrap, 10 000 resamples, seed 0 unless given
  (:func:`causal_gym.metrics.bootstrap_interval`, :func:`~causal_gym.metrics.paired_bootstrap`);
  with one value the bounds are NaN, with none all three are. An interval is three columns
  ``x``, ``x_low``, ``x_high`` (:func:`interval_cells`); :func:`format_table` prints them as
  ``x [low, high]``.

pandas and matplotlib are imported inside the functions that need them
(``pip install 'causal-gym[report]'``), so benchmarks import this module at no cost.
"""

from __future__ import annotations

import importlib
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from causal_gym.metrics import bootstrap_interval, paired_bootstrap

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ReportTable",
    "require",
    "figure_png",
    "build_table",
    "played",
    "score_columns",
    "check_fields",
    "check_finite",
    "interval",
    "paired_interval",
    "interval_cells",
    "per_unit",
    "column",
    "mean",
    "joined_labels",
    "is_missing",
    "in_order",
    "format_table",
    "markdown_table",
    "new_figure",
    "error_bars",
]

SEED = 0
"""Seed of every report interval, so a table is the same each time it is built."""


def require(module: str) -> Any:
    """Import ``module`` or explain which extra installs it.

    Raises
    ------
    ModuleNotFoundError
        Naming ``pip install 'causal-gym[report]'``.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"causal_gym reports need {module.split('.')[0]}: pip install 'causal-gym[report]'", name=exc.name
        ) from exc


@dataclass(frozen=True)
class ReportTable:
    """One table of a report.

    Attributes
    ----------
    name : str
        File stem (``<name>.csv``) and identity.
    title : str
        The caption printed above it.
    frame : pandas.DataFrame
        The rows; intervals as ``x``, ``x_low``, ``x_high`` columns.
    legend : mapping
        What columns mean, printed under the table: ``{column: meaning}``. Give the benchmark's
        whole glossary; only the columns the frame has are shown (``x`` covers ``x_low``/``x_high``).
    """

    name: str
    title: str
    frame: pd.DataFrame
    legend: Mapping[str, str] = field(default_factory=dict)

    def legend_lines(self) -> list[str]:
        """``"column: meaning"`` for each legend column the frame has, in the frame's order."""
        present = [c for c in self.frame.columns if c in self.legend]
        return [f"{column}: {self.legend[column]}" for column in present]


def build_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A table from its rows (columns in the order the rows first name them)."""
    return require("pandas").DataFrame.from_records(rows)


def played(frame: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """The episodes of ``benchmark`` that ended in the env: not failed, and with a final info (a timeout or
    an interruption leaves none). They are the ones with scores; the outcome table counts the others."""
    if frame.empty or "benchmark" not in frame:
        return frame.iloc[0:0]
    ended = frame["status"] != "failed"
    if "final_info" in frame:
        ended &= np.array([isinstance(info, Mapping) for info in frame["final_info"]], dtype=bool)
    return frame[(frame["benchmark"] == benchmark) & ended]


def check_fields(record: Mapping[str, Any], fields: Mapping[str, tuple[Any, ...]]) -> None:
    """Check the types of the fields of a JSON ``record`` that a report reads; raise ``ValueError`` naming
    the first wrong one.

    ``fields`` maps a dotted path (``"record.final_info.scores"``; ``*`` stands for every item of a
    list or every value of an object) to the accepted types: JSON's ``str``, ``int``, ``float`` (an
    integer is accepted too, if a float can hold it), ``bool`` (only where listed: it is no number
    here), ``list``, ``dict``, and ``None`` for null. A path whose value is missing or null is not
    checked further (the report reads it as absent); list a container before its fields.

    Examples
    --------
    >>> check_fields({"record": {"final_info": [1]}}, {"record": (dict, None), "record.final_info": (dict, None)})
    Traceback (most recent call last):
    ...
    ValueError: record.final_info is a list, expected dict or null
    >>> check_fields({"usage": {"cost": 10**400}}, {"usage.cost": (float, None)})
    Traceback (most recent call last):
    ...
    ValueError: usage.cost is an int too large for a float
    """
    for path, kinds in fields.items():
        for where, value in _field_values(record, path.split(".")):
            if value is None:
                if None not in kinds:
                    raise ValueError(f"{where} is null, expected {_kind_names(kinds)}")
            elif isinstance(value, bool):
                if bool not in kinds:
                    raise ValueError(f"{where} is a bool, expected {_kind_names(kinds)}")
            elif isinstance(value, int) and float in kinds and int not in kinds:
                try:
                    float(value)
                except OverflowError:
                    raise ValueError(f"{where} is an int too large for a float") from None
            elif not isinstance(value, tuple(k for k in kinds if k is not None and k is not bool)):
                raise ValueError(f"{where} is a {type(value).__name__}, expected {_kind_names(kinds)}")


def check_finite(scores: Mapping[str, Any], names: Sequence[str]) -> None:
    """Raise ``ValueError`` unless every one of ``names`` in ``scores`` is a finite number (or a bool): the values a
    bootstrap interval resamples (a missing one is NaN there, and NaN refuses to be resampled).

    Examples
    --------
    >>> check_finite({"f1": 0.5, "shd": None}, ("f1",))
    >>> check_finite({"f1": float("nan")}, ("f1",))
    Traceback (most recent call last):
    ...
    ValueError: 'f1' must be a finite number, got nan
    """
    for name in names:
        value = scores.get(name)
        try:
            finite = isinstance(value, (int, float)) and math.isfinite(value)  # a bool counts as 0 or 1
        except OverflowError:  # an int no float can hold
            finite = False
        if not finite:
            raise ValueError(f"{name!r} must be a finite number, got {str(value)[:80]}")


def _kind_names(kinds: tuple[Any, ...]) -> str:
    return " or ".join("null" if k is None else k.__name__ for k in kinds)


def _field_values(record: Any, steps: list[str]) -> list[tuple[str, Any]]:
    """``(path, value)`` of every value at ``steps`` below ``record`` (``*`` fans out); missing ones are left out."""
    found: list[tuple[str, Any]] = [("", record)]
    for step in steps:
        below: list[tuple[str, Any]] = []
        for where, value in found:
            if value is None:
                continue
            if step == "*":
                items = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
                below.extend((f"{where}[{key!r}]", item) for key, item in items)
            elif isinstance(value, Mapping):
                if step in value:
                    below.append((f"{where}.{step}" if where else step, value[step]))
            else:
                raise ValueError(f"{where} is a {type(value).__name__}, expected an object with {step!r}")
        found = below
    return found


def score_columns(scores: Mapping[str, Any], prefix: str = "score") -> dict[str, float]:
    """Numeric and boolean leaves of a nested mapping as ``prefix.key.subkey`` float columns.

    Examples
    --------
    >>> score_columns({"f1": 0.5, "solved": True, "slots": {"A": "pc"}, "sub": {"k": 2}})
    {'score.f1': 0.5, 'score.solved': 1.0, 'score.sub.k': 2.0}
    """
    out: dict[str, float] = {}
    for key, item in scores.items():
        name = f"{prefix}.{key}"
        if isinstance(item, Mapping):
            out.update(score_columns(item, name))
        elif isinstance(item, (bool, int, float)):
            out[name] = float(item)
    return out


# ---------------------------------------------------------------------------------------------
# intervals and per-instance aggregation
# ---------------------------------------------------------------------------------------------


def interval(values: Iterable[float], seed: int = SEED) -> tuple[float, float, float]:
    """``(mean, low, high)``: bootstrap interval of the mean; NaN bounds below two values.

    Examples
    --------
    >>> interval([0.5])
    (0.5, nan, nan)
    >>> est, low, high = interval([0.2, 0.4, 0.9])
    >>> low <= est <= high
    True
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    if x.size == 1:
        return float(x[0]), math.nan, math.nan
    return bootstrap_interval(x, seed=seed)


def paired_interval(a: Iterable[float], b: Iterable[float], seed: int = SEED) -> tuple[float, float, float]:
    """``(mean(a - b), low, high)``: paired bootstrap over instances; NaN bounds below two pairs."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2:
        return interval(x - y, seed)
    return paired_bootstrap(x, y, seed=seed)


def interval_cells(name: str, triple: tuple[float, float, float]) -> dict[str, float]:
    """The three columns ``name``, ``name_low``, ``name_high`` of an interval."""
    return {name: triple[0], f"{name}_low": triple[1], f"{name}_high": triple[2]}


def per_unit(group: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per-instance means of ``columns`` (the bootstrap unit), indexed by ``unit``."""
    return group.groupby("unit")[list(columns)].mean()


def column(group: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as floats, all NaN when no episode reported it."""
    return group[name].to_numpy(dtype=float) if name in group else np.full(len(group), math.nan)


def mean(values: Iterable[float]) -> float:
    """The mean as a float, NaN for no values."""
    x = np.asarray(values, dtype=float)
    return float(x.mean()) if x.size else math.nan


def joined_labels(values: Iterable[Any]) -> str:
    """The distinct values, sorted and comma-joined (``"ges,pc_kci"``): one cell for a group's choices."""
    return ",".join(sorted(set(map(str, values))))


def is_missing(value: Any) -> bool:
    """True for None and NaN (a cell no episode filled)."""
    return value is None or (isinstance(value, float) and np.isnan(value))


def in_order(values: Iterable[str], order: Sequence[str]) -> list[str]:
    """The distinct ``values`` in the papers' ``order``, then those it does not list, sorted.

    Examples
    --------
    >>> in_order(["wild", "x", "lg", "wild"], ("lg", "anm", "wild"))
    ['lg', 'wild', 'x']
    """
    present = set(values)
    return [v for v in order if v in present] + sorted(present - set(order))


# ---------------------------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------------------------


def _is_interval(columns: Sequence[str], name: str) -> bool:
    return f"{name}_low" in columns and f"{name}_high" in columns


def _text(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}f}"
    return str(value)


COUNT_COLUMNS = frozenset({"d", "n", "episodes", "instances", "finished", "repeat", "replicate", "index"})
"""Columns that hold counts or sizes: printed without decimals when every value is a whole number."""


def _whole_numbers(column: pd.Series) -> bool:
    if column.dtype.kind != "f":
        return False
    values = column.to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite))) and bool(np.all(np.abs(finite) < 2**53))


def _string_cells(table: pd.DataFrame, digits: int) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headers, cell strings and right-alignment flags, with each interval folded into one column."""
    columns = list(table.columns)
    hidden = {f"{c}{s}" for c in columns if _is_interval(columns, c) for s in ("_low", "_high")}
    shown = [c for c in columns if c not in hidden]
    # counts and sizes made float by a NaN (another benchmark's rows) print as the integers they are
    whole = {c for c in shown if c in COUNT_COLUMNS and _whole_numbers(table[c])}
    cells = []
    for record in table.itertuples(index=False, name=None):
        value = dict(zip(columns, record))
        line = []
        for c in shown:
            text = _text(value[c], 0 if c in whole else digits)
            if _is_interval(columns, c) and text != "-":
                low, high = _text(value[f"{c}_low"], digits), _text(value[f"{c}_high"], digits)
                if "-" not in (low, high):
                    text += f" [{low}, {high}]"
            line.append(text)
        cells.append(line)
    numeric = [_is_interval(columns, c) or table[c].dtype.kind in "iuf" for c in shown]
    return shown, cells, numeric


def format_table(table: pd.DataFrame, digits: int = 3) -> str:
    """The table as aligned plain text: intervals as ``x [low, high]``, NaN as ``-``, floats to ``digits``.

    Examples
    --------
    >>> import pandas as pd
    >>> print(format_table(pd.DataFrame({"agent": ["a"], "f1": [0.5], "f1_low": [0.4], "f1_high": [0.6]})))
    agent                    f1
    a      0.500 [0.400, 0.600]
    >>> print(format_table(pd.DataFrame({"d": [10.0, float("nan")], "f1": [1.0, 1.0]})))
     d     f1
    10  1.000
     -  1.000
    """
    if table.empty:
        return "(no rows)"
    headers, cells, numeric = _string_cells(table, digits)
    widths = [max(len(h), *(len(line[k]) for line in cells)) for k, h in enumerate(headers)]

    def join(items: Sequence[str]) -> str:
        parts = [s.rjust(w) if right else s.ljust(w) for s, w, right in zip(items, widths, numeric)]
        return "  ".join(parts).rstrip()

    return "\n".join([join(headers), *(join(line) for line in cells)])


def markdown_table(table: pd.DataFrame, digits: int = 3) -> str:
    """The table as a GitHub-flavoured Markdown table (cells as in :func:`format_table`)."""
    if table.empty:
        return "(no rows)"
    headers, cells, numeric = _string_cells(table, digits)

    def row(items: Sequence[str]) -> str:
        return "| " + " | ".join(s.replace("|", "\\|") for s in items) + " |"

    rule = "|" + "|".join("---:" if right else ":---" for right in numeric) + "|"
    return "\n".join([row(headers), rule, *(row(line) for line in cells)])


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------


def new_figure(width: float, height: float, panels: int, columns: int) -> tuple[Any, list[Any]]:
    """A matplotlib Figure with ``panels`` axes of ``width`` x ``height`` inches, ``columns`` per row.

    Drawn by the Agg canvas: no pyplot, no global backend switch in the caller's process.
    """
    figure_module = require("matplotlib.figure")
    agg = require("matplotlib.backends.backend_agg")
    rows = math.ceil(panels / columns)
    figure = figure_module.Figure(figsize=(width * columns, height * rows), layout="constrained")
    agg.FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def figure_png(figure: Any) -> bytes:
    """``figure`` as PNG bytes at 120 dpi (a report module's ``write_figures`` writes them into its folder)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    return buffer.getvalue()


def error_bars(table: pd.DataFrame, name: str) -> np.ndarray:
    """``(2, rows)`` distances from the estimate ``name`` to its interval bounds (0 where NaN)."""
    estimate = table[name].to_numpy(dtype=float)
    low = np.nan_to_num(estimate - table[f"{name}_low"].to_numpy(dtype=float))
    high = np.nan_to_num(table[f"{name}_high"].to_numpy(dtype=float) - estimate)
    return np.vstack([low, high])
