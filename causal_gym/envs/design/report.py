"""The intervention-design tables of ``causal-gym report`` (see :mod:`causal_gym.envs.benchmark`).

One table: per setting and agent, the episodes played and, with 95% bootstrap intervals over
instances, the return of each reward mode (``gain``: ``"confidence"``, the posterior's expected
correct entries; ``truth_gain``: ``"truth"``, CAASL's; ``information_gain``: the entropy
reduction), the final expected SHD, the posterior's edge AUPRC and the best DAG's F1.
"""

from __future__ import annotations

from typing import Any

from causal_gym.envs.benchmark import ReportOptions
from causal_gym.envs.design.env import VALUE_BOUND
from causal_gym.envs.design.world import DesignSetting
from causal_gym.tables import ReportTable, build_table, column, interval, interval_cells, played

__all__ = ["episode_columns", "report_tables"]

_SETTING_KEYS = ("d", "graph", "expected_degree", "noise", "n_observational", "budget", "rows_per_step", "max_parents")
_METRICS = ("gain", "truth_gain", "information_gain", "expected_shd", "auprc", "map_f1")


def episode_columns(params: dict[str, Any], line: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """The setting's name and size, and the final scores.

    The name adds ``-vb<bound>`` for a value bound other than the default, ``-x<k>`` for batch designs
    of ``k`` and ``-costs`` with node costs, so that variants sharing instances stay apart.
    """
    setting = DesignSetting(**{key: params[key] for key in _SETTING_KEYS if key in params})
    name = setting.name
    bound = params.get("value_bound", VALUE_BOUND)
    if bound != VALUE_BOUND:
        name += f"-vb{bound:g}"
    if params.get("targets_per_step", 1) != 1:
        name += f"-x{params['targets_per_step']}"
    if params.get("node_costs") is not None:
        name += "-costs"
    return {"setting": name, "d": setting.d, "expected_degree": setting.expected_degree,
            "scores": line.get("scores") or {}}


def report_tables(frame: Any, options: ReportOptions) -> list[ReportTable]:
    """The design table (empty when no design episode was played)."""
    rows = []
    mine = played(frame, "design")
    for (setting, agent), group in mine.groupby(["setting", "agent"], sort=True):
        row: dict[str, Any] = {"setting": setting, "agent": agent, "episodes": len(group)}
        for name in _METRICS:
            values = column(group, f"score.{name}")
            row.update(interval_cells(name, interval(values[values == values])))
        rows.append(row)
    return [ReportTable("design", "Intervention design -- return and posterior quality by agent (95% intervals)",
                        build_table(rows))]
