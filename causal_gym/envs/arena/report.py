"""CausalArena reports: submit-mode scores by source, split, d and agent, and slices by a factor.

The report module of the CausalArena benchmark (see :mod:`causal_gym.envs.benchmark`): the episode
columns of :func:`causal_gym.eval.report.load_runs` (source as ``setting``, split as ``condition``,
``d`` for synthetic SCMs, the instance's ``factors``) and the tables:

- :func:`arena_agent_table`: directed F1 with a 95% bootstrap interval over instances, and the
  other metrics' means (precision, recall, SHD, nSHD, SID, CPDAG SHD, adjacency F1);
- :func:`arena_slice_table`: mean directed F1 per agent and value of one factor of the instance
  (graph family, difficulty, ...);
- :func:`plot_f1_by_d`: the figure ``arena_f1_by_d.png``, directed F1 against d per agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from causal_gym._files import OutputFolder
from causal_gym.envs.arena.spec import SPEC
from causal_gym.envs.benchmark import ReportOptions
from causal_gym.tables import (
    ReportTable,
    build_table,
    check_finite,
    column,
    error_bars,
    figure_png,
    interval,
    interval_cells,
    mean,
    new_figure,
    per_unit,
    played,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["POSITION", "episode_columns", "arena_agent_table", "arena_slice_table", "report_tables",
           "plot_f1_by_d", "write_figures"]

POSITION = 3
"""CausalArena tables come after Heuresis's and CausaLab's in a report of several benchmarks."""

GLOSSARY = {
    "source": "synthetic factor grid, formula-grounded, semantic or real SCMs",
    "split": "obs: observational rows only; obs+int: with single-target hard interventions",
    "d": "variables (synthetic SCMs; the other sources fix their own)",
    "episodes": "episodes played",
    "f1": "directed-edge F1 of the answer (undirected edges oriented with the dataset's seed) [95% interval]",
    "precision": "directed-edge precision",
    "recall": "directed-edge recall",
    "shd": "structural Hamming distance to the true DAG",
    "nshd": "SHD / (d (d - 1))",
    "sid": "structural intervention distance",
    "cpdag_shd": "SHD between the answer's and the truth's CPDAGs",
    "adjacency_f1": "F1 of the skeleton",
    "graph_family": "the synthetic configuration's graph family",
}
"""What the CausalArena report's columns mean (the legend under each table)."""

_METRICS = ("precision", "recall", "shd", "nshd", "sid", "cpdag_shd", "adjacency_f1")


def episode_columns(params: Mapping[str, Any], line: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
    """Source, split, ``d`` (synthetic SCMs only: the other sources fix their variables) and the
    instance's ``factors`` when the final info has them."""
    source = params.get("source", "synthetic")
    columns: dict[str, Any] = {
        "setting": source,
        "condition": params.get("split", "obs"),
        "d": int(params.get("d", 10)) if source == "synthetic" else None,
    }
    if info.get("factors") is not None:
        columns["factors"] = info["factors"]
    if info:
        check_finite(line.get("scores") or {}, ("f1",))  # its interval needs it; the others are plain means
    return columns


def _arena(frame: pd.DataFrame) -> pd.DataFrame:
    return played(frame, SPEC.name)


def arena_agent_table(frame: pd.DataFrame) -> pd.DataFrame:
    """CausalArena: per source, split, d and agent, directed F1 (95% bootstrap over instances) and the
    other submit-mode metrics (means); the paper's F1-vs-d comparison reads off the ``d`` column."""
    episodes = _arena(frame)
    rows: list[dict[str, Any]] = []
    keys = ["setting", "condition", "d", "agent"]
    for (source, split, d, agent), group in episodes.groupby(keys, dropna=False, sort=True):
        rows.append({
            "source": source, "split": split, "d": d, "agent": agent, "episodes": len(group),
            **interval_cells("f1", interval(per_unit(group, ["score.f1"])["score.f1"])),
            **{name: mean(column(group, f"score.{name}")) for name in _METRICS},
        })
    return build_table(rows)


def arena_slice_table(frame: pd.DataFrame, factor: str = "graph_family") -> pd.DataFrame:
    """CausalArena slices: mean directed F1 per agent and value of ``factor`` (a key of the final
    info's ``factors``, e.g. ``graph_family``, ``difficulty``, ``root_dependency``), over the
    episodes that carry it."""
    episodes = _arena(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty or "factors" not in episodes:
        return build_table(rows)
    values = [f.get(factor) if isinstance(f, Mapping) else None for f in episodes["factors"]]
    tagged = episodes.assign(slice=[v if isinstance(v, str) else None for v in values]).dropna(subset=["slice"])
    for (agent, value), group in tagged.groupby(["agent", "slice"], sort=True):
        rows.append({"agent": agent, factor: value, "episodes": len(group), "f1": mean(column(group, "score.f1"))})
    return build_table(rows)


def report_tables(frame: pd.DataFrame, options: ReportOptions) -> list[ReportTable]:
    """The scores table and the graph-family slices of the frame's CausalArena episodes (``options`` unused)."""
    if _arena(frame).empty:
        return []
    return [
        ReportTable("arena_agents", "CausalArena -- directed F1 (95% bootstrap over instances), precision, recall, "
                    "SHD, nSHD, SID by source, split, d and agent", arena_agent_table(frame), GLOSSARY),
        ReportTable("arena_graph_families", "CausalArena -- mean directed F1 by graph family (synthetic)",
                    arena_slice_table(frame, "graph_family"), GLOSSARY),
    ]


def plot_f1_by_d(agents: pd.DataFrame) -> Any:
    """Directed F1 (95% interval) against d, a line per agent, a panel per split of the synthetic source
    (a matplotlib Figure)."""
    rows = agents[(agents["source"] == "synthetic") & agents["d"].notna()]
    if rows.empty:
        raise ValueError("plot_f1_by_d needs synthetic rows with a d (arena_agent_table)")
    splits = sorted(rows["split"].unique())
    figure, axes = new_figure(4.6, 3.4, len(splits), len(splits))
    for axis, split in zip(axes, splits):
        for agent, line in rows[rows["split"] == split].groupby("agent", sort=True):
            line = line.sort_values("d")
            axis.errorbar(line["d"].to_numpy(dtype=float), line["f1"].to_numpy(dtype=float),
                          yerr=error_bars(line, "f1"), marker="o", capsize=3, label=str(agent))
        axis.set_xlabel("d (variables)")
        axis.set_ylabel("directed F1")
        axis.set_title(f"synthetic, {split}")
        axis.set_ylim(0.0, 1.0)
    axes[0].legend(fontsize=7, loc="best")
    return figure


def write_figures(tables: Sequence[ReportTable], out: OutputFolder) -> list[Path]:
    """``arena_f1_by_d.png`` when the scores table has synthetic rows with a d."""
    agents = next((table.frame for table in tables if table.name == "arena_agents"), None)
    if agents is None or agents.empty or not ((agents["source"] == "synthetic") & agents["d"].notna()).any():
        return []
    return [out.write("arena_f1_by_d.png", figure_png(plot_f1_by_d(agents)))]
