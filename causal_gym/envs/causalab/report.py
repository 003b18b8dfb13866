"""CausaLab reports: paper Table 7 and the step-by-step recovery curves (Figures 10 and 14).

The report module of the CausaLab benchmark (see :mod:`causal_gym.envs.benchmark`): the episode
columns of :func:`causal_gym.eval.report.load_runs` (the setting, and as scores the task success,
the final hypothesis's metrics and the early-commitment diagnostics), the tables and the figures.

- :func:`causalab_agent_table` (Table 7): per setting and agent, task accuracy and the final
  hypothesis's recovery metrics, averaged over episodes (the accuracy with a bootstrap interval
  over episodes: CausaLab has no instance pairing);
- :func:`causalab_trajectories` (Figure 10): the mean metric of the hypothesis in force after each
  step; :func:`plot_trajectories` draws it per setting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from causal_gym._files import OutputFolder, name_part
from causal_gym.envs.benchmark import ReportOptions
from causal_gym.envs.causalab.spec import SPEC
from causal_gym.tables import (
    ReportTable,
    build_table,
    check_fields,
    check_finite,
    column,
    figure_png,
    in_order,
    interval,
    interval_cells,
    mean,
    new_figure,
    played,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "POSITION",
    "TRAJECTORY_METRICS",
    "episode_columns",
    "episode_scores",
    "causalab_agent_table",
    "causalab_trajectories",
    "plot_trajectories",
    "report_tables",
    "write_figures",
]

POSITION = 2
"""CausaLab tables come after Heuresis's in a report of several benchmarks (the papers' order)."""

TRAJECTORY_METRICS = ("edge_f1", "freq_edge_f1", "root_f1", "freq_weight_f1", "shd")
"""CausaLab metrics followed step by step (:func:`causalab_trajectories`)."""

_SCORES = (
    "success", "prediction", "target", "abs_error", "imec_size", "budget_used_at_commit",
    "n_hypotheses", "n_invalid_hypotheses",
)
GLOSSARY = {
    "episodes": "episodes played",
    "accuracy": "share of episodes solved (reactor frequency within 5 Hz) [95% interval]",
    "root_f1": "F1 of the final hypothesis's root nodes",
    "edge_precision": "precision of the final hypothesis's edges (all edges)",
    "edge_recall": "recall of the final hypothesis's edges (all edges)",
    "edge_f1": "F1 of the final hypothesis's edges (all edges)",
    "shd": "directed structural Hamming distance of the final hypothesis",
    "freq_edge_f1": "F1 of the edges into the resonance frequency",
    "freq_weight_f1": "F1 of the frequency equation's coefficients (right within 0.01)",
    "imec_size": "interventional MEC size of the targets the agent intervened on (1: identified)",
    "budget_used_at_commit": "interventions used when the agent entered the reactor",
    "commit_share": "budget_used_at_commit over the intervention budget",
    "consistent": "share whose final hypothesis reproduces every record the agent collected",
    "truncation_rate": "share of episodes ended by the step limit",
    "step": "step of the episode (1-based)",
    "running": "share of episodes not over at that step",
    "stated": "share stating a valid hypothesis at that step, among the running ones",
}
"""What the CausaLab report's columns mean (the legend under each table)."""

_TABLE7 = ("root_f1", "edge_precision", "edge_recall", "edge_f1", "shd", "freq_edge_f1", "freq_weight_f1", "imec_size",
           "budget_used_at_commit")


def episode_scores(info: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar outcome of a CausaLab episode: task success, the final hypothesis's metrics, diagnostics.

    The env reports these in its final info, not as ``scores``; ``commit_budget`` is the
    intervention budget the agent had when it entered the reactor.
    """
    scores = {key: info.get(key) for key in _SCORES}
    scores.update(info.get("metrics") or {})
    reproduces = info.get("final_reproduces")
    scores["final_reproduces"] = None if reproduces is None else float(reproduces)
    used = info.get("budget_used_at_commit")
    left = (info.get("budgets_remaining") or {}).get("interventions")
    # Interventions stop at the commit, so what is left at the end is what was left at the commit.
    scores["commit_budget"] = None if used is None or left is None else used + left
    return {key: value for key, value in scores.items() if value is not None}


_NUMBER = (float, bool)
_INFO_FIELDS: dict[str, tuple[Any, ...]] = {
    "instance": (dict, None), "instance.setting": (str,),
    "metrics": (dict, None), "final_reproduces": (*_NUMBER, None),
    "budget_used_at_commit": (float, None), "budgets_remaining": (dict, None),
    "budgets_remaining.interventions": (float, None),
    "trajectory": (list, None), "trajectory.*": (dict,),
    **{f"trajectory.*.{name}": _NUMBER for name in (*TRAJECTORY_METRICS, "stated")},
}
"""The final-info fields the CausaLab tables read, and their types (:func:`causal_gym.tables.check_fields`)."""


def episode_columns(params: Mapping[str, Any], line: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
    """The setting played (the instance's, else the id's), the scores of :func:`episode_scores`
    and the ``trajectory`` (the metrics of the hypothesis in force after each step) when there is one.

    Raises ``ValueError`` for a final info the tables cannot read (the report skips the line)."""
    check_fields(info, _INFO_FIELDS)
    if info:
        check_finite(info, ("success",))  # the accuracy interval needs it; the other scores are plain means
    for step in info.get("trajectory") or ():
        missing = [name for name in (*TRAJECTORY_METRICS, "stated") if name not in step]
        if missing:
            raise ValueError(f"a trajectory step lacks {missing}")
    columns: dict[str, Any] = {
        "setting": (info.get("instance") or {}).get("setting", params.get("setting")),
        "scores": episode_scores(info) if info else {},
    }
    if info.get("trajectory") is not None:
        columns["trajectory"] = info["trajectory"]
    return columns


def _causalab(frame: pd.DataFrame) -> pd.DataFrame:
    return played(frame, SPEC.name)


def _setting_order(settings: Any) -> list[str]:
    from causal_gym.envs.causalab.suites import SETTINGS

    return in_order(settings, tuple(SETTINGS))


def causalab_agent_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7: per setting and agent, task accuracy and the final hypothesis's recovery metrics.

    Means over episodes: ``accuracy`` (share solved, with an interval over episodes),
    ``root_f1``, ``edge_precision`` / ``edge_recall`` / ``edge_f1`` (all edges), ``shd``
    (directed), ``freq_edge_f1``, ``freq_weight_f1``, ``imec_size``, ``budget_used_at_commit``
    (interventions used when the agent entered the reactor), ``commit_share`` (that over the
    intervention budget; NaN without a budget), ``consistent`` (share of episodes whose final
    hypothesis reproduces every record the agent collected; no final hypothesis counts as not
    consistent) and ``truncation_rate`` (the step limit ended the episode).
    """
    episodes = _causalab(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty:
        return build_table(rows)
    for setting in _setting_order(episodes["setting"]):
        for agent, group in episodes[episodes["setting"] == setting].groupby("agent"):
            budget = column(group, "score.commit_budget")
            used = column(group, "score.budget_used_at_commit")
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(budget > 0, used / budget, np.nan)
            rows.append({
                "setting": setting,
                "agent": agent,
                "episodes": len(group),
                **interval_cells("accuracy", interval(column(group, "score.success"))),
                **{name: mean(column(group, f"score.{name}")) for name in _TABLE7},
                "commit_share": float(np.nanmean(share)) if np.isfinite(share).any() else math.nan,
                "consistent": float(np.mean(column(group, "score.final_reproduces") == 1.0)),
                "truncation_rate": 1.0 - float(group["finished"].mean()),
            })
    return build_table(rows)


def causalab_trajectories(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean of each :data:`TRAJECTORY_METRICS` after every step, per setting and agent.

    An episode that ended before ``step`` counts with its final value (its final hypothesis stays
    in force), so the last point of a curve is the mean final-hypothesis score. Columns:
    ``setting``, ``agent``, ``step`` (1-based), ``episodes``, ``running`` (share of episodes not
    yet over at that step), ``stated`` (share stating a valid hypothesis at that step, among the
    running ones), then one column per metric.
    """
    episodes = _causalab(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty or "trajectory" not in episodes:
        return build_table(rows)
    for setting in _setting_order(episodes["setting"]):
        for agent, group in episodes[episodes["setting"] == setting].groupby("agent"):
            curves = [c for c in group["trajectory"] if isinstance(c, list) and c]
            if not curves:
                continue
            length = max(len(c) for c in curves)
            alive = np.array([[step < len(c) for step in range(length)] for c in curves])
            values = {}
            for name in (*TRAJECTORY_METRICS, "stated"):
                table = np.array([[c[min(step, len(c) - 1)][name] for step in range(length)] for c in curves])
                values[name] = table
            with np.errstate(invalid="ignore"):
                stated = np.where(alive, values["stated"], 0.0).sum(0) / alive.sum(0)
            for step in range(length):
                rows.append({
                    "setting": setting,
                    "agent": agent,
                    "step": step + 1,
                    "episodes": len(curves),
                    "running": float(alive[:, step].mean()),
                    "stated": float(stated[step]),
                    **{name: float(values[name][:, step].mean()) for name in TRAJECTORY_METRICS},
                })
    return build_table(rows)


def plot_trajectories(curves: pd.DataFrame, setting: str) -> Any:
    """Mean recovery metrics of the hypothesis in force after each step, one line per agent (a matplotlib Figure)."""
    rows = curves[curves["setting"] == setting]
    if rows.empty:
        raise ValueError(f"no trajectory rows for setting {setting!r}")
    metrics = [m for m in TRAJECTORY_METRICS if m != "shd"]
    figure, axes = new_figure(3.2, 2.6, len(metrics), 2)
    for axis, metric in zip(axes, metrics):
        for agent, line in rows.groupby("agent"):
            axis.plot(line["step"], line[metric], marker=".", label=agent)
        axis.set_title(metric)
        axis.set_xlabel("step")
        axis.set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=7)
    figure.suptitle(f"CausaLab {setting}")
    return figure


def report_tables(frame: pd.DataFrame, options: ReportOptions) -> list[ReportTable]:
    """Table 7 and the trajectories of the frame's CausaLab episodes (none without any; ``options`` unused)."""
    if _causalab(frame).empty:
        return []
    return [
        ReportTable("causalab_agents", "CausaLab (Table 7) -- task accuracy, recovery metrics of the final hypothesis, "
                    "IMEC size and early-commitment diagnostics", causalab_agent_table(frame), GLOSSARY),
        ReportTable("causalab_trajectories", "CausaLab (Figure 10) -- mean metric of the hypothesis in force after "
                    "each step", causalab_trajectories(frame), GLOSSARY),
    ]


def write_figures(tables: Sequence[ReportTable], out: OutputFolder) -> list[Path]:
    """``causalab_trajectories_<setting>.png`` for every setting of the trajectories table in ``tables``.

    The setting comes from the run store, which may be someone else's: it enters the file name only
    through :func:`causal_gym._files.name_part` (no separator, no leading dot)."""
    curves = next((table.frame for table in tables if table.name == "causalab_trajectories"), None)
    if curves is None:
        return []
    return [out.write(f"causalab_trajectories_{name_part(setting)}.png", figure_png(plot_trajectories(curves, setting)))
            for setting in curves["setting"].unique()]
