"""Heuresis reports: paper Tables 3, 4, 6, 8, 11, 13 and Figure 6, rebuilt from run stores.

The report module of the Heuresis benchmark (see :mod:`causal_gym.envs.benchmark`): its episode
columns for :func:`causal_gym.eval.report.load_runs`, its tables and its figure. Every table takes
the episode frame and uses its Heuresis episodes that ended in the env (those with a final info:
not failed, interrupted or timed out, which the outcome table counts); the interval conventions are
those of :mod:`causal_gym.tables`. :func:`episode_columns` refuses a line whose scores, trace or
final info these tables could not read, so the report skips it by name instead of failing.

Tables
------
- :func:`heuresis_agent_table` (Table 6): adjacency F1 and the residual gain over the family's
  best chosen algorithm, over all episodes and over finished episodes, with the truncation rate;
- :func:`heuresis_headroom_table` (Table 3): BCA_g, BCA_phi and the oracle on the instances the
  agent played, both headrooms, the gain ``Delta^s = F1(A) - F1(BCA_g)``, the residual gain
  ``Delta^r = F1(A) - F1(BCA_phi)`` and the share of the repair headroom it closes
  (``Delta^r / H^r``, our addition);
- :func:`heuresis_guided_table` (Table 8): precision and recall of restoring PC-KCI's wrong
  deletions, the paired gain over PC-KCI, the drill-down counts, and the paired gain over the same
  agent's unguided episodes on the same instances;
- :func:`heuresis_floor_table` (Table 11): the trivial floors on the instances present;
- :func:`heuresis_repeat_table` (Table 13): per run and repeat, the last-turn setting, the
  episodes that reached a budget limit and how many of those the agent still submitted;
- :func:`heuresis_behaviour_table` (§4.3 and Table 4): tool calls, shortcut rate, distinct
  algorithms, merge* and unsupported restorations, tool-choice mutual information;
- :func:`plot_residual_gain` (Figure 6).

Conventions
-----------
- Views. *All*: every episode that ended in the env. *Finished*: status ``"finished"`` (the agent
  submitted before any limit was reached). The truncation rate is the share of the non-failed
  episodes that are not finished (``"truncated"``: a limit was reached but the agent submitted;
  ``"rescued"``: the env submitted for it). The paper's finished view also keeps the episodes
  whose agent submitted in the last turn; ours is stricter, and Table 13 gives the counts between.
- References (:func:`heuresis_references`): BCA_g and BCA_phi are chosen on ``dev`` development
  instances of every family (BCA_g is defined across all six), generated with the run's ``d``,
  ``n`` and ``expected_degree``, then scored on the instances the runs played. The menu leaves
  RESIT out by default (as ``causal-gym reproduce heuresis --quick``; it is never the best chosen
  algorithm in the paper and costs about 4.5 s per d=10 instance). Every reference run is cached
  on disk; a cold cache costs about 1.6 s per d=10 instance (``dev`` x 6 of them).
- The last-turn setting (Table 13) is always ``"retry"``: the working-graph harness gives every
  episode one submit-only last turn with one retry after a rejected edge list.
- Episodes of the repair-policy RL ids (``HeuresisRepair-*``) are not in these tables: the report
  counts them as benchmark ``"other"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from causal_gym._files import OutputFolder
from causal_gym._validation import check_instance_option
from causal_gym.envs.benchmark import ReportOptions
from causal_gym.envs.heuresis.instances import DEFAULT_D, DEFAULT_EXPECTED_DEGREE, DEFAULT_N, split_size
from causal_gym.envs.heuresis.spec import FAMILIES, SPEC
from causal_gym.seal import Seal
from causal_gym.tables import (
    ReportTable,
    build_table,
    check_finite,
    error_bars,
    figure_png,
    in_order,
    interval,
    interval_cells,
    is_missing,
    joined_labels,
    mean,
    new_figure,
    paired_interval,
    per_unit,
    played,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "POSITION",
    "LAST_TURN",
    "FLOORS",
    "HeuresisReferences",
    "episode_columns",
    "heuresis_references",
    "heuresis_agent_table",
    "heuresis_headroom_table",
    "heuresis_guided_table",
    "heuresis_floor_table",
    "heuresis_repeat_table",
    "heuresis_behaviour_table",
    "plot_residual_gain",
    "report_tables",
    "write_figures",
]

POSITION = 1
"""Heuresis tables come first in a report of several benchmarks (the papers' order)."""

LAST_TURN = "retry"
"""The last-turn setting of every working-graph episode (Table 13's column): one submit-only turn
after a limit, with one retry after a rejected edge list."""

FLOORS = ("empty", "complete", "pc_kci", "random_restoration", "oracle")
"""The trivial floors of Table 11, as :func:`causal_gym.envs.heuresis.references.trivial_floors` names them."""

F1 = "score.adjacency_f1"
_WORKING_GRAPH_IDS = frozenset(entry.id for entry in SPEC.envs if entry.entry_point.endswith(":HeuresisEnv"))


def episode_columns(params: Mapping[str, Any], line: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any] | None:
    """Family, condition and instance shape of a Heuresis episode (None for the repair-policy ids).

    ``params`` (the registered kwargs with the run's ``env_kwargs``) always name the family and
    the condition; ``d``, ``n`` and ``expected_degree`` default to the paper's instance shape. A run
    without a split (``RunConfig(split=None)``) played the env's own: the final info names it.
    """
    if line["env_id"].rsplit(":", 1)[-1] not in _WORKING_GRAPH_IDS:
        return None
    columns = {
        "setting": params["family"],
        "condition": "guided" if params["guided"] else "unguided",
        "d": int(params.get("d", DEFAULT_D)),
        "n": int(params.get("n", DEFAULT_N)),
        "expected_degree": float(params.get("expected_degree", DEFAULT_EXPECTED_DEGREE)),
    }
    if info:
        _check_readable(line, info, columns["d"], params["guided"])
        split = line.get("split") or info["scores"]["instance"].get("split")
        check_instance_option(line["instance"], split_size(split), "a Heuresis split")  # references need it
        columns["split"] = split
    return columns


def _check_readable(line: Mapping[str, Any], info: Mapping[str, Any], d: int, guided: bool) -> None:
    """Raise ``ValueError`` when the tables could not read the episode: the scores they average must be
    finite numbers, and the behaviour table's readers must read the trace and the final info."""
    from causal_gym.envs.heuresis.analysis import distinct_algorithms, shortcut

    guided_scores = ("pc_kci_f1", "restoration_precision", "restoration_recall", *_DRILL_DOWN) if guided else ()
    check_finite(line.get("scores") or {}, ("adjacency_f1", *guided_scores))  # the paired intervals need them

    env_record = (line.get("record") or {}).get("env_record") or {}
    calls = env_record.get("calls") or []
    try:
        shortcut(calls, info)
        distinct_algorithms(calls)
        family = info["scores"]["instance"]["family"]
        shape = np.shape(info["completed_graph"])
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"the trace or the final info cannot be read ({type(exc).__name__}: {exc})") from None
    if shape != (d, d) or not isinstance(family, str):
        raise ValueError(f"final_info['completed_graph'] has shape {shape} for d = {d}, or the family is not a string")


def _heuresis(frame: pd.DataFrame) -> pd.DataFrame:
    return played(frame, SPEC.name)


def _by_family(group: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(family, rows)`` in the papers' family order, then ``("all", group)`` when several are present."""
    families = in_order(group["setting"], FAMILIES)
    for family in families:
        yield family, group[group["setting"] == family]
    if len(families) > 1:
        yield "all", group


def _check_seal(episodes: pd.DataFrame, seal: Seal | None) -> None:
    """Refuse sealed episodes whose seal is not the one given (their instances cannot be rebuilt)."""
    fingerprints = sorted({f for f in episodes["seal"] if not is_missing(f)})
    wanted = None if seal is None else seal.fingerprint
    foreign = [f for f in fingerprints if f != wanted]
    if foreign:
        raise ValueError(
            f"episodes were played under seal(s) {foreign}; their references need that seal "
            f"(pass seal=Seal.from_file(...), or --seal-file on the command line){'' if wanted is None else f'; got {wanted}'}"
        )


# ---------------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeuresisReferences:
    """Reference scores of the Heuresis instances in a frame.

    Attributes
    ----------
    units : mapping
        ``unit`` (the frame's column) -> ``{"bca_g", "bca_phi"`` (menu labels), ``"f1_bca_g"``,
        ``"f1_bca_phi"``, ``"f1_oracle"``, ``"floors"`` (Table 11, by name)``}``.
    dev : int or None
        Development instances per family the best chosen algorithms were chosen on.
    labels : tuple of str
        The menu they were chosen from.
    """

    units: Mapping[str, Mapping[str, Any]]
    dev: int | None
    labels: tuple[str, ...]

    def attach(self, episodes: pd.DataFrame) -> pd.DataFrame:
        """``episodes`` with ``ref.*`` columns (labels, F1s, floors) looked up by ``unit``.

        Raises
        ------
        ValueError
            When an episode's instance has no reference (compute them for the same frame).
        """
        missing = sorted(set(episodes["unit"]) - set(self.units))
        if missing:
            raise ValueError(f"no references for instance(s) {missing[:3]}; compute heuresis_references on this frame")
        out = episodes.copy()
        keys = ("bca_g", "bca_phi", "f1_bca_g", "f1_bca_phi", "f1_oracle")
        for key in keys:
            out[f"ref.{key}"] = [self.units[u][key] for u in out["unit"]]
        for floor in FLOORS:
            out[f"ref.floor.{floor}"] = [self.units[u]["floors"][floor] for u in out["unit"]]
        return out


def heuresis_references(
    frame: pd.DataFrame,
    *,
    dev: int | None = None,
    labels: Sequence[str] | None = None,
    workers: int = 1,
    progress: bool = False,
    seal: Seal | None = None,
) -> HeuresisReferences:
    """Best chosen algorithms (chosen on dev instances), oracle, PC-KCI and floors for every Heuresis instance played.

    Parameters
    ----------
    frame : DataFrame
        From :func:`causal_gym.eval.report.load_runs`; only its non-failed Heuresis episodes are used.
    dev : int, optional
        Development instances per family for choosing BCA_g and BCA_phi (the paper's 100). Each
        family is generated with the run's ``d``, ``n`` and ``expected_degree``. None (default):
        the published choice (:data:`~causal_gym.envs.heuresis.references.PUBLISHED_CHOICE`) for
        open episodes of the default shape and menu, so that a report computes references for the
        instances played only; other episodes then need ``dev``.
    labels : sequence of str, optional
        Menu entries to choose from; default the menu without RESIT (``anm``).
    workers : int
        Processes of :func:`causal_gym.envs.heuresis.references.collect_rows`.
    progress : bool
        Progress display while references are computed (they are cached on disk).
    seal : Seal, optional
        The seal of sealed episodes (their instances, dev ones included, exist only under it).

    Raises
    ------
    ValueError
        When episodes were played under a seal other than ``seal`` (or ``seal`` is missing).
    """
    from causal_gym.envs.heuresis.references import MENU, PUBLISHED_CHOICE, best_chosen_algorithms, collect_rows

    if dev is not None and (isinstance(dev, bool) or not isinstance(dev, int) or dev < 1):
        raise ValueError(f"dev must be None or a positive number of development instances per family, got {dev!r}")
    labels = tuple(label for label in MENU if label != "anm") if labels is None else tuple(labels)
    if not labels:
        raise ValueError("labels must name at least one menu algorithm to choose the best chosen algorithms from")
    episodes = _heuresis(frame)
    units: dict[str, dict[str, Any]] = {}
    if episodes.empty:
        return HeuresisReferences(units, dev, labels)
    _check_seal(episodes, seal)
    for (d, n, degree, sealed), group in episodes.groupby(["d", "n", "expected_degree", "seal"], dropna=False):
        shape: dict[str, Any] = {"d": int(d), "n": int(n), "expected_degree": float(degree),
                 "seal": None if is_missing(sealed) else seal}
        if dev is None:
            published = is_missing(sealed) and tuple(labels) == PUBLISHED_CHOICE["labels"] and all(
                shape[key] == value for key, value in PUBLISHED_CHOICE["shape"].items())
            if not published:
                raise ValueError(
                    f"the best chosen algorithms of d={shape['d']}, n={shape['n']}, expected degree "
                    f"{shape['expected_degree']:g}{', sealed' if shape['seal'] is not None else ''} or this menu are not "
                    "published: choose them on development instances (--dev N; the paper uses 100)"
                )
            bca_g, bca_phi = PUBLISHED_CHOICE["bca_g"], dict(PUBLISHED_CHOICE["bca_phi"])
        else:
            dev_rows = collect_rows(FAMILIES, "dev", range(dev), labels=labels, workers=workers, progress=progress,
                                    **shape)
            # the rows always hold both PC variants (the oracle and the router need them); choose among `labels`
            bca_g, bca_phi = best_chosen_algorithms([{**row, "menu": {k: row["menu"][k] for k in labels}}
                                                     for row in dev_rows])
        for (family, split), group_of in group.groupby(["setting", "split"]):
            unit_of = {int(k): unit for k, unit in zip(group_of["instance"], group_of["unit"])}
            rows = collect_rows((family,), split, sorted(unit_of), labels=labels, workers=workers, progress=progress,
                                **shape)
            for row in rows:
                phi = bca_phi.get(family, bca_g)
                units[unit_of[row["index"]]] = {
                    "bca_g": bca_g,
                    "bca_phi": phi,
                    "f1_bca_g": row["menu"][bca_g]["f1"],
                    "f1_bca_phi": row["menu"][phi]["f1"],
                    "f1_oracle": row["oracle"]["f1"],
                    "floors": dict(row["floors"]),
                }
    return HeuresisReferences(units, dev, labels)


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def _residual_cells(group: pd.DataFrame, suffix: str) -> dict[str, float]:
    per = per_unit(group, [F1, "ref.f1_bca_phi"])
    return {
        f"f1{suffix}": mean(per[F1]),
        **interval_cells(f"delta_r{suffix}", paired_interval(per[F1], per["ref.f1_bca_phi"])),
    }


def heuresis_agent_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 6: per agent, condition and family (and ``all``), adjacency F1 and ``Delta^r`` vs BCA_phi.

    Columns: ``episodes``, ``instances``, ``bca_phi``, ``f1``, ``delta_r`` (paired interval over
    instances), ``finished`` (episodes), ``f1_finished``, ``delta_r_finished``,
    ``truncation_rate``.
    """
    if _heuresis(frame).empty:
        return build_table([])
    episodes = references.attach(_heuresis(frame))
    rows = []
    for (agent, condition), group in episodes.groupby(["agent", "condition"]):
        for family, rows_of in _by_family(group):
            finished = rows_of[rows_of["finished"]]
            rows.append({
                "agent": agent,
                "condition": condition,
                "family": family,
                "episodes": len(rows_of),
                "instances": rows_of["unit"].nunique(),
                "bca_phi": joined_labels(rows_of["ref.bca_phi"]),
                **_residual_cells(rows_of, ""),
                "finished": len(finished),
                **_residual_cells(finished, "_finished"),
                "truncation_rate": 1.0 - float(rows_of["finished"].mean()),
            })
    return build_table(rows)


def heuresis_headroom_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 3: references, headrooms and the agent's gains, on the instances each agent played.

    Columns: ``instances``, ``bca_g``, ``bca_phi``, ``f1_bca_g``, ``f1_bca_phi``, ``f1_oracle``,
    ``h_s = F1(BCA_phi) - F1(BCA_g)`` and ``h_r = F1(oracle) - F1(BCA_phi)`` (paired
    intervals), ``f1``, ``delta_s = F1(A) - F1(BCA_g)``, ``delta_r = F1(A) - F1(BCA_phi)``
    (paired intervals) and ``closed = delta_r / h_r`` (NaN when ``h_r <= 0``). All episodes.
    """
    if _heuresis(frame).empty:
        return build_table([])
    episodes = references.attach(_heuresis(frame))
    columns = [F1, "ref.f1_bca_g", "ref.f1_bca_phi", "ref.f1_oracle"]
    rows = []
    for (agent, condition), group in episodes.groupby(["agent", "condition"]):
        for family, rows_of in _by_family(group):
            per = per_unit(rows_of, columns)
            agent_f1, g, phi, oracle = (per[c] for c in columns)
            h_r = paired_interval(oracle, phi)
            delta_r = paired_interval(agent_f1, phi)
            rows.append({
                "agent": agent,
                "condition": condition,
                "family": family,
                "instances": len(per),
                "bca_g": joined_labels(rows_of["ref.bca_g"]),
                "bca_phi": joined_labels(rows_of["ref.bca_phi"]),
                "f1_bca_g": mean(g),
                "f1_bca_phi": mean(phi),
                "f1_oracle": mean(oracle),
                **interval_cells("h_s", paired_interval(phi, g)),
                **interval_cells("h_r", h_r),
                "f1": mean(agent_f1),
                **interval_cells("delta_s", paired_interval(agent_f1, g)),
                **interval_cells("delta_r", delta_r),
                "closed": delta_r[0] / h_r[0] if h_r[0] > 0 else math.nan,
            })
    return build_table(rows)


GLOSSARY = {
    "episodes": "episodes played (all statuses but failed)",
    "instances": "distinct instances among them",
    "bca_g": "best chosen algorithm over all families (mean dev F1 of the menu)",
    "bca_phi": "best chosen algorithm of the family (mean dev F1 on it)",
    "f1": "mean adjacency F1 of the agent's Meek-completed answer [95% interval]",
    "f1_bca_g": "mean adjacency F1 of BCA_g on the same instances",
    "f1_bca_phi": "mean adjacency F1 of BCA_phi on the same instances",
    "f1_oracle": "mean adjacency F1 of the ideal oracle (PC-KCI with exactly its wrong deletions restored)",
    "h_s": "selection headroom H^s = F1(BCA_phi) - F1(BCA_g), paired over instances",
    "h_r": "repair headroom H^r = F1(oracle) - F1(BCA_phi), paired over instances",
    "delta_s": "gain Delta^s = F1(agent) - F1(BCA_g), paired over instances",
    "delta_r": "residual gain Delta^r = F1(agent) - F1(BCA_phi), paired over instances",
    "closed": "share of the repair headroom closed, Delta^r / H^r",
    "finished": "episodes that ended with the agent's own submit",
    "truncation_rate": "share of episodes that did not (a budget ran out and the working graph was rescued)",
    "f1_finished": "f1 on finished episodes only",
    "delta_r_finished": "delta_r on finished episodes only",
    "precision": "of the deleted pairs the agent restored, the share PC-KCI had deleted wrongly",
    "recall": "of PC-KCI's wrong deletions, the share the agent restored",
    "gain_over_pc": "F1(agent) - F1(PC-KCI), paired over instances",
    "n_wrong_deletions": "PC-KCI's wrong deletions (deleted pairs adjacent in the truth), mean",
    "recovered": "wrongly deleted pairs that are edges again, mean",
    "harmful": "rightly deleted pairs that are edges again, mean",
    "pc_edges_dropped": "PC-KCI's edges missing from the answer, mean",
    "reoriented": "pairs adjacent in both with another orientation, mean",
    "paired_unguided": "instances the same agent also played unguided",
    "guided_minus_unguided": "F1(guided) - F1(unguided) of the agent, paired over those instances",
    "last_turn": "what the agent may do after a budget runs out",
    "reached_limit": "episodes in which a budget ran out (turns, tests, algorithm calls or wall time)",
    "submitted_after_limit": "of those, episodes the agent still submitted in its last turn (the rest were rescued)",
    "calls": "tool calls per episode, mean",
    "errors": "tool calls answered with an error, per episode",
    "shortcut_rate": "share of episodes whose answer is within SHD 1 of the first PC variant's output it ran",
    "distinct_algorithms": "distinct menu algorithms called per episode, mean",
    "merge_k": "merge*: the k of the best k-vote merge of the algorithms the agent called (hindsight)",
    "merge_f1": "merge*: F1 of that merge added to PC-KCI's output",
    "restored_true": "true edges PC-KCI missed that the answer has",
    "unsupported": "of those, edges no algorithm the agent called proposed",
    "unsupported_share": "unsupported / restored_true",
    "tool_mi_bits": "mutual information (bits) between the family and the tool called",
    **{name: f"floor {name}: mean adjacency F1 [95% interval]" for name in FLOORS},
}
"""What the Heuresis report's columns mean (the legend under each table)."""

_DRILL_DOWN = ("n_wrong_deletions", "recovered", "harmful", "pc_edges_dropped", "reoriented")


def heuresis_guided_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 8: the guided condition's repair of PC-KCI's deletion log, all episodes.

    Columns: ``episodes``, ``instances``, ``precision`` and ``recall`` of restoring the wrongly
    deleted pairs (the env's per-episode ``restoration_precision`` / ``_recall``, averaged, with
    intervals), ``gain_over_pc`` (paired: the agent's F1 minus PC-KCI's on the instance), the mean
    drill-down counts (``n_wrong_deletions``, ``recovered``, ``harmful``, ``pc_edges_dropped``,
    ``reoriented``), ``paired_unguided`` (instances where the same agent also played unguided)
    and ``guided_minus_unguided`` (paired over those instances).
    """
    episodes = _heuresis(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty:
        return build_table(rows)
    guided = episodes[episodes["condition"] == "guided"]
    drill = [f"score.{name}" for name in _DRILL_DOWN]
    for agent, group in guided.groupby("agent"):
        unguided = episodes[(episodes["condition"] == "unguided") & (episodes["agent"] == agent)]
        for family, rows_of in _by_family(group):
            per = per_unit(rows_of, ["score.restoration_precision", "score.restoration_recall", F1,
                                     "score.pc_kci_f1", *drill])
            alone = unguided if family == "all" else unguided[unguided["setting"] == family]
            other = per_unit(alone, [F1])[F1]
            common = per.index.intersection(other.index)
            rows.append({
                "agent": agent,
                "family": family,
                "episodes": len(rows_of),
                "instances": len(per),
                **interval_cells("precision", interval(per["score.restoration_precision"])),
                **interval_cells("recall", interval(per["score.restoration_recall"])),
                **interval_cells("gain_over_pc", paired_interval(per[F1], per["score.pc_kci_f1"])),
                **{name: mean(per[f"score.{name}"]) for name in _DRILL_DOWN},
                "paired_unguided": len(common),
                **interval_cells("guided_minus_unguided", paired_interval(per.loc[common, F1], other.loc[common])),
            })
    return build_table(rows)


def heuresis_floor_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 11: the trivial floors (adjacency F1) per family, over the distinct instances played."""
    episodes = _heuresis(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty:
        return build_table(rows)
    instances = references.attach(episodes.drop_duplicates("unit"))
    for family in in_order(instances["setting"], FAMILIES):
        rows_of = instances[instances["setting"] == family]
        row: dict[str, Any] = {"family": family, "instances": len(rows_of)}
        for floor in FLOORS:
            row.update(interval_cells(floor, interval(rows_of[f"ref.floor.{floor}"])))
        rows.append(row)
    return build_table(rows)


def heuresis_repeat_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 13: per agent, condition, family, run and repeat, the limit counts and both views.

    Columns: ``last_turn`` (:data:`LAST_TURN`), ``episodes``, ``reached_limit`` (a budget ran
    out: turns, tests, algorithm calls or wall time), ``submitted_after_limit`` (of those, the
    agent still submitted in the last turn; the rest were rescued), ``f1``, ``delta_r``,
    ``finished``, ``f1_finished``, ``delta_r_finished``.
    """
    if _heuresis(frame).empty:
        return build_table([])
    episodes = references.attach(_heuresis(frame))
    rows = []
    keys = ["agent", "condition", "setting", "run", "repeat"]
    order = {family: k for k, family in enumerate(in_order(episodes["setting"], FAMILIES))}
    groups = sorted(episodes.groupby(keys), key=lambda item: (item[0][0], item[0][1], order[item[0][2]], *item[0][3:]))
    for (agent, condition, family, run, repeat), group in groups:
        limit = group["truncated_reason"].fillna("").astype(str).str.startswith("budget_exhausted")
        finished = group[group["finished"]]
        rows.append({
            "agent": agent,
            "condition": condition,
            "family": family,
            "run": run,
            "repeat": int(repeat),
            "last_turn": LAST_TURN,
            "episodes": len(group),
            "reached_limit": int(limit.sum()),
            "submitted_after_limit": int((limit & (group["status"] == "truncated")).sum()),
            **_residual_cells(group, ""),
            "finished": len(finished),
            **_residual_cells(finished, "_finished"),
        })
    return build_table(rows)


@lru_cache(maxsize=256)
def _truth(
    family: str, split: str, index: int, d: int, n: int, degree: float, seal: Seal | None
) -> tuple[np.ndarray, np.ndarray]:
    """The hidden DAG of an instance and PC-KCI's output on it (cached on disk by the references)."""
    from causal_gym.envs.heuresis.instances import make_instance
    from causal_gym.envs.heuresis.references import pc_kci_reference

    instance = make_instance(family, split, index, d=d, n=n, expected_degree=degree, seal=seal)
    return instance.hidden.dag, pc_kci_reference(instance).graph


def _attribution(row: Any, seal: Seal | None) -> dict[str, Any]:
    """Per-episode inputs of the behaviour table: shortcut, algorithms, merge inputs, restorations."""
    from causal_gym.envs.heuresis.analysis import (
        MergeEpisode,
        algorithm_outputs,
        distinct_algorithms,
        shortcut,
        unsupported_restorations,
    )

    calls, info = row.calls or [], row.final_info
    dag, pc = _truth(row.setting, row.split, int(row.instance), int(row.d), int(row.n), float(row.expected_degree),
                     None if is_missing(row.seal) else seal)
    outputs = algorithm_outputs(calls, info)
    submitted = np.asarray(info["completed_graph"], dtype=np.int8)
    adjacent, truth, pc_adjacent = (g.astype(bool) | g.T.astype(bool) for g in (submitted, dag, pc))
    return {
        "calls": len(calls),
        "errors": sum(not call["ok"] for call in calls),
        "shortcut": shortcut(calls, info),
        "distinct": distinct_algorithms(calls),
        "merge": MergeEpisode([g for name, g in outputs if name != "pc_kci"], dag, pc),
        "restored_true": int(np.count_nonzero(np.triu(adjacent & truth & ~pc_adjacent, 1))),
        "unsupported": unsupported_restorations(submitted, pc, [g for _, g in outputs], dag),
    }


def heuresis_behaviour_table(frame: pd.DataFrame, seal: Seal | None = None) -> pd.DataFrame:
    """Behaviour statistics (§4.3) and trace attribution (Table 4), all episodes that ended in the env.

    Columns: ``episodes``, ``calls`` and ``errors`` (means per episode), ``shortcut_rate``,
    ``distinct_algorithms`` (mean), ``merge_k`` and ``merge_f1`` (merge*: the k-vote merge of
    the algorithms the agent called, PC-KCI excluded, added to PC-KCI's output, ``k`` chosen per
    family in hindsight; on ``all`` rows the episode-weighted mean of the family values), ``f1``
    (the agent's, for comparison), ``restored_true`` (true edges PC-KCI missed that the final
    graph has), ``unsupported`` (of those, proposed by no called algorithm),
    ``unsupported_share`` and, on ``all`` rows, ``tool_mi_bits`` (mutual information between the
    family and the tool called).
    """
    from causal_gym.envs.heuresis.analysis import best_k_merge, tool_choice_mutual_information

    episodes = _heuresis(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty:
        return build_table(rows)
    for (agent, condition), group in episodes.groupby(["agent", "condition"]):
        stats = {index: _attribution(row, seal) for index, row in zip(group.index, group.itertuples())}
        merged: dict[str, tuple[float, int]] = {}  # family -> (merge* F1, episodes)
        for family, rows_of in _by_family(group):
            mine = [stats[i] for i in rows_of.index]
            k: float  # merge*'s k (NaN on the row of all families)
            if family != "all":
                k, f1 = best_k_merge([s["merge"] for s in mine])
                merged[family] = (f1, len(mine))
            else:
                k = math.nan
                f1 = sum(value * count for value, count in merged.values()) / sum(c for _, c in merged.values())
            restored = sum(s["restored_true"] for s in mine)
            unsupported = sum(s["unsupported"] for s in mine)
            rows.append({
                "agent": agent,
                "condition": condition,
                "family": family,
                "episodes": len(mine),
                "calls": mean([s["calls"] for s in mine]),
                "errors": mean([s["errors"] for s in mine]),
                "shortcut_rate": mean([s["shortcut"] for s in mine]),
                "distinct_algorithms": mean([s["distinct"] for s in mine]),
                "merge_k": k,
                "merge_f1": f1,
                "f1": mean(rows_of[F1]),
                "restored_true": restored,
                "unsupported": unsupported,
                "unsupported_share": unsupported / restored if restored else math.nan,
                "tool_mi_bits": (
                    tool_choice_mutual_information((c or [], i) for c, i in zip(rows_of["calls"], rows_of["final_info"]))
                    if family == "all" else math.nan
                ),
            })
    return build_table(rows)


# ---------------------------------------------------------------------------------------------
# the figure and the report
# ---------------------------------------------------------------------------------------------


def plot_residual_gain(headroom: pd.DataFrame) -> Any:
    """Figure 6: ``Delta^r`` per agent on every family, against the two headrooms.

    One panel per family of :func:`heuresis_headroom_table` (the ``all`` rows are left out): a bar
    per agent and condition with its 95% interval (orange), a red marker at the repair headroom
    ``H^r`` (the oracle's level) and a green one at ``-H^s`` (BCA_g's level) beside the bar; 0 is
    BCA_phi. About 550 px per panel. Returns the matplotlib Figure.
    """
    families = [f for f in headroom["family"].unique() if f != "all"]
    if not families:
        raise ValueError("plot_residual_gain needs at least one family row of heuresis_headroom_table")
    figure, axes = new_figure(4.6, 3.4, len(families), min(3, len(families)))
    for axis, family in zip(axes, families):
        rows = headroom[headroom["family"] == family]
        x = np.arange(len(rows))
        gain = rows["delta_r"].to_numpy(dtype=float)
        # as nested lists: matplotlib warns about a (2, 1) array (one bar) but reads the lists the same way
        yerr = error_bars(rows, "delta_r").tolist()
        axis.bar(x, gain, width=0.45, yerr=yerr, color="tab:blue", ecolor="tab:orange", capsize=4,
                 error_kw={"elinewidth": 1.5}, label="Δʳ (agent, 95% interval in orange)")
        # the references stand beside the bar, so neither hides behind it or behind the interval
        axis.scatter(x + 0.34, rows["h_r"].to_numpy(dtype=float), marker="v", s=36, color="tab:red", zorder=3,
                     label="Hʳ (oracle's level)")
        axis.scatter(x + 0.34, -rows["h_s"].to_numpy(dtype=float), marker="^", s=36, color="tab:green", zorder=3,
                     label="−Hˢ (BCA_g's level)")
        axis.axhline(0.0, color="black", linewidth=0.8)
        axis.set_xticks(x, [f"{a}\n{c}" for a, c in zip(rows["agent"], rows["condition"])], fontsize=7)
        axis.set_xlim(-0.6, len(rows) - 0.2)
        axis.set_title(family)
        axis.set_ylabel("adjacency F1 − F1(BCA_φ)")
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=8)
    return figure


def report_tables(frame: pd.DataFrame, options: ReportOptions) -> list[ReportTable]:
    """Tables 6, 3, 8, 11, 13 and 4 of the frame's Heuresis episodes (none without any).

    The references are computed once for all of them (:func:`heuresis_references` with
    ``options.dev``, ``labels``, ``workers``, ``progress`` and ``seal``).
    """
    if _heuresis(frame).empty:
        return []
    from causal_gym.envs.heuresis.references import MENU

    labels = tuple(MENU) if options.labels is None and options.full_menu else options.labels
    refs = heuresis_references(frame, dev=options.dev, labels=labels, workers=options.workers,
                               progress=options.progress, seal=options.seal)
    chosen = ("the published choice on 100 dev instances per family" if refs.dev is None
              else f"chosen on {refs.dev} dev instances per family")
    return [
        ReportTable("heuresis_agents", "Heuresis (Table 6) -- adjacency F1 and the residual gain over BCA_phi "
                    f"({chosen}), all episodes and finished only, 95% paired bootstrap over instances",
                    heuresis_agent_table(frame, refs), GLOSSARY),
        ReportTable("heuresis_headroom", "Heuresis (Table 3) -- references, headrooms H^s and H^r, gain Delta^s over "
                    "BCA_g and residual gain Delta^r over BCA_phi, on the instances each agent played",
                    heuresis_headroom_table(frame, refs), GLOSSARY),
        ReportTable("heuresis_guided", "Heuresis (Table 8) -- guided condition: restoring PC-KCI's wrong deletions, "
                    "gain over PC-KCI and over the agent's own unguided episodes", heuresis_guided_table(frame),
                    GLOSSARY),
        ReportTable("heuresis_floors", "Heuresis (Table 11) -- trivial floors, adjacency F1 on the instances played",
                    heuresis_floor_table(frame, refs), GLOSSARY),
        ReportTable("heuresis_repeats", "Heuresis (Table 13) -- per run and repeat: last-turn setting, episodes that "
                    "reached a budget limit / still submitted, both views", heuresis_repeat_table(frame, refs), GLOSSARY),
        ReportTable("heuresis_behaviour", "Heuresis (Section 4.3, Table 4) -- tool calls, shortcut rate, distinct "
                    "algorithms, merge*, unsupported restorations, tool-choice mutual information",
                    heuresis_behaviour_table(frame, options.seal), GLOSSARY),
    ]


def write_figures(tables: Sequence[ReportTable], out: OutputFolder) -> list[Path]:
    """``heuresis_residual_gain.png`` (Figure 6) when ``tables`` hold a headroom table with a family row."""
    headroom = next((table.frame for table in tables if table.name == "heuresis_headroom"), None)
    if headroom is None or not (headroom["family"] != "all").any():
        return []
    return [out.write("heuresis_residual_gain.png", figure_png(plot_residual_gain(headroom)))]
