"""Reports: the papers' tables and figures, rebuilt from run stores.

:func:`load_runs` reads run stores (:mod:`causal_gym.eval.store`) into one pandas frame with a
row per episode; the table functions derive the papers' tables from it, and :func:`write_report`
writes them as CSV, one Markdown file and PNG figures. pandas and matplotlib are imported only
here, inside the functions: ``pip install 'causal-gym[report]'``.

Tables
------
Heuresis (paper Tables 3, 4, 6, 8, 11, 13 and Figure 6):

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
- :func:`arena_agent_table`, :func:`arena_slice_table`: CausalArena scores by source, split, d and
  agent, and slices by a factor (graph family, difficulty, ...).
- :func:`tool_call_table`: mean calls per tool for every benchmark.

CausaLab (paper Table 7, Figure 10 and Figure 14): :func:`causalab_agent_table` and
:func:`causalab_trajectories` (mean metric of the hypothesis in force after each step).

Conventions
-----------
- Views. *All*: every episode that did not fail. *Finished*: status ``"finished"`` (the agent
  submitted before any limit was reached). The truncation rate is the share of the non-failed
  episodes that are not finished (``"truncated"``: a limit was reached but the agent submitted;
  ``"rescued"``: the env submitted for it). Failed episodes (exceptions) have no scores and
  appear only in the ``failed`` counts. The paper's finished view also keeps the episodes whose
  agent submitted in the last turn; ours is stricter, and Table 13 gives the counts between.
- Intervals. The unit is the instance: an agent's score on an instance is the mean over its
  episodes there (repeats, or runs of the same agent label), and a paired interval pairs it with
  the reference on the same instance. 95% percentile bootstrap, 10 000 resamples, seed 0
  (:func:`causal_gym.metrics.bootstrap_interval`, :func:`~causal_gym.metrics.paired_bootstrap`);
  with fewer than two instances the bounds are NaN. Table 7 (CausaLab) averages over episodes.
  An interval is three columns ``x``, ``x_low``, ``x_high``; :func:`format_table` prints them as
  ``x [low, high]``.
- Agents are labelled by their registry name and their keyword arguments other than ``seed``
  (``algorithm(algorithm=B)``), so episodes of one agent in several run stores pool.
- Heuresis references (:func:`heuresis_references`): BCA_g and BCA_phi are chosen on ``dev``
  development instances of every family (BCA_g is defined across all six), generated with the
  run's ``d``, ``n`` and ``expected_degree``, then scored on the instances the runs played. The
  menu leaves RESIT out by default (as ``causal-gym reproduce heuresis --quick``; it is never the
  best chosen algorithm in the paper and costs about 4.5 s per d=10 instance). Every reference run
  is cached on disk; a cold cache costs about 1.6 s per d=10 instance (``dev`` x 6 of them).
- The last-turn setting (Table 13) is always ``"retry"``: the working-graph harness gives every
  episode one submit-only last turn with one retry after a rejected edge list.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from causal_gym.eval.store import RunStore
from causal_gym.metrics import bootstrap_interval, paired_bootstrap
from causal_gym.seal import Seal

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LAST_TURN",
    "FLOORS",
    "TRAJECTORY_METRICS",
    "ReportTable",
    "HeuresisReferences",
    "agent_label",
    "load_runs",
    "heuresis_references",
    "heuresis_agent_table",
    "heuresis_headroom_table",
    "heuresis_guided_table",
    "heuresis_floor_table",
    "heuresis_repeat_table",
    "heuresis_behaviour_table",
    "tool_call_table",
    "arena_agent_table",
    "arena_slice_table",
    "causalab_agent_table",
    "causalab_trajectories",
    "plot_residual_gain",
    "plot_trajectories",
    "report_tables",
    "format_table",
    "markdown_table",
    "write_tables",
    "write_report",
]

LAST_TURN = "retry"
"""The last-turn setting of every working-graph episode (Table 13's column): one submit-only turn
after a limit, with one retry after a rejected edge list."""

FLOORS = ("empty", "complete", "pc_kci", "random_restoration", "oracle")
"""The trivial floors of Table 11, as :func:`causal_gym.envs.heuresis.references.trivial_floors` names them."""

TRAJECTORY_METRICS = ("edge_f1", "freq_edge_f1", "root_f1", "freq_weight_f1", "shd")
"""CausaLab metrics followed step by step (:func:`causalab_trajectories`)."""

F1 = "score.adjacency_f1"
_SEED = 0
_BENCHMARKS = {"Heuresis-": "heuresis", "CausaLab-": "causalab", "CausalArena-": "arena"}
_OBJECT_COLUMNS = ("tool_counts", "calls", "final_info", "trajectory", "factors")
_CAUSALAB_SCORES = (
    "success", "prediction", "target", "abs_error", "imec_size", "budget_used_at_commit",
    "n_hypotheses", "n_invalid_hypotheses",
)


def _require(module: str) -> Any:
    """Import ``module`` or explain which extra installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"causal_gym reports need {module.split('.')[0]}: pip install 'causal-gym[report]'", name=exc.name
        ) from exc


def _pd() -> Any:
    return _require("pandas")


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
    """

    name: str
    title: str
    frame: pd.DataFrame


# ---------------------------------------------------------------------------------------------
# loading run stores
# ---------------------------------------------------------------------------------------------


def agent_label(name: str, kwargs: Mapping[str, Any]) -> str:
    """The agent's name with its keyword arguments other than ``seed`` (credentials left out).

    Examples
    --------
    >>> agent_label("algorithm", {"algorithm": "B", "seed": 3})
    'algorithm(algorithm=B)'
    >>> agent_label("random", {"seed": 7})
    'random'
    """
    shown = {k: v for k, v in sorted(kwargs.items()) if k not in ("seed", "base_url") and v != "<redacted>"}
    return name if not shown else f"{name}(" + ", ".join(f"{k}={v}" for k, v in shown.items()) + ")"


def _benchmark(env_id: str) -> str:
    bare = env_id.rsplit(":", 1)[-1]
    return next((name for prefix, name in _BENCHMARKS.items() if bare.startswith(prefix)), "other")


def _env_params(env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The registered keyword arguments of ``env_id`` updated with the run's ``env_kwargs``."""
    import gymnasium as gym

    try:  # "causal_gym:Heuresis-lg-v0" is registered as "Heuresis-lg-v0"
        spec = gym.spec(env_id.rsplit(":", 1)[-1])
    except gym.error.Error:
        return dict(env_kwargs)
    return {**spec.kwargs, **env_kwargs}


@lru_cache(maxsize=1)
def _heuresis_defaults() -> dict[str, Any]:
    from causal_gym.envs.heuresis.env import HeuresisEnv

    parameters = inspect.signature(HeuresisEnv.__init__).parameters
    return {name: parameters[name].default for name in ("family", "guided", "d", "n", "expected_degree")}


def _flatten(value: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """Numeric and boolean leaves of a nested mapping as ``prefix.key.subkey`` columns."""
    out: dict[str, float] = {}
    for key, item in value.items():
        name = f"{prefix}.{key}"
        if isinstance(item, Mapping):
            out.update(_flatten(item, name))
        elif isinstance(item, (bool, int, float)):
            out[name] = float(item)
    return out


def _causalab_scores(info: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar outcome of a CausaLab episode: task success, the final hypothesis's metrics, diagnostics."""
    scores = {key: info.get(key) for key in _CAUSALAB_SCORES}
    scores.update(info.get("metrics") or {})
    reproduces = info.get("final_reproduces")
    scores["final_reproduces"] = None if reproduces is None else float(reproduces)
    used = info.get("budget_used_at_commit")
    left = (info.get("budgets_remaining") or {}).get("interventions")
    # Interventions stop at the commit, so what is left at the end is what was left at the commit.
    scores["commit_budget"] = None if used is None or left is None else used + left
    return {key: value for key, value in scores.items() if value is not None}


def _usage(usage: Any) -> dict[str, float]:
    usage = usage if isinstance(usage, Mapping) else {}
    return {
        "tokens": usage.get("total_tokens"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cost": usage.get("cost"),
    }


def _episode_row(run: str, config: Mapping[str, Any], line: Mapping[str, Any]) -> dict[str, Any]:
    env_id = line["env_id"]
    benchmark = _benchmark(env_id)
    params = _env_params(env_id, config.get("env_kwargs") or {})
    record = line.get("record") or {}
    info = record.get("final_info") or {}
    env_record = record.get("env_record") or {}
    summary = env_record.get("summary") if isinstance(env_record, Mapping) else None
    row: dict[str, Any] = {
        "run": run,
        "env_id": env_id,
        "benchmark": benchmark,
        "setting": None,
        "condition": None,
        "split": line.get("split"),
        "instance": line.get("instance"),
        "repeat": line.get("repeat"),
        "agent": agent_label(line.get("agent", "?"), line.get("agent_kwargs") or {}),
        "agent_name": line.get("agent"),
        "status": line["status"],
        "finished": line["status"] == "finished",
        "truncated_reason": info.get("truncated_reason"),
        "submission_source": info.get("submission_source"),
        "end_reason": info.get("end_reason"),
        "reward": line.get("reward"),
        "steps": line.get("steps"),
        "wall_time": line.get("wall_time"),
        **_usage(line.get("usage")),
        "d": None,
        "n": None,
        "expected_degree": None,
        "seal": line.get("seal", config.get("seal")),
        "sandbox": info.get("sandbox"),
    }
    scores = line.get("scores") or {}
    if benchmark == "heuresis":
        defaults = _heuresis_defaults()
        values = {key: params.get(key, default) for key, default in defaults.items()}
        row.update(setting=values["family"], condition="guided" if values["guided"] else "unguided",
                   d=int(values["d"]), n=int(values["n"]), expected_degree=float(values["expected_degree"]))
    elif benchmark == "causalab":
        row["setting"] = (info.get("instance") or {}).get("setting", params.get("setting"))
        scores = _causalab_scores(info) if info else {}
    elif benchmark == "arena":
        source = params.get("source", "synthetic")
        row.update(setting=source, condition=params.get("split", "obs"),
                   d=int(params.get("d", 10)) if source == "synthetic" else None)
    identity = [row["setting"], row["split"], row["instance"], row["d"], row["n"], row["expected_degree"], row["seal"]]
    row["unit"] = "|".join(str(part) for part in identity if part is not None)
    row.update(_flatten(scores, "score"))
    row["tool_counts"] = (summary or info.get("record") or {}).get("tool_counts") if line["status"] != "failed" else None
    row["calls"] = env_record.get("calls") if isinstance(env_record, Mapping) else None
    row["final_info"] = info or None
    row["trajectory"] = info.get("trajectory")
    row["factors"] = info.get("factors")
    return row


def load_runs(*dirs: str | Path) -> pd.DataFrame:
    """One row per episode of the given run stores (the last line per episode key).

    Columns: ``run`` (the directory as given), ``env_id``, ``benchmark`` (``heuresis``,
    ``causalab``, ``arena`` or ``other``), ``setting`` (Heuresis family or CausaLab setting),
    ``condition`` (Heuresis: ``guided`` / ``unguided``), ``split``, ``instance``, ``repeat``,
    ``agent`` (:func:`agent_label`), ``agent_name``, ``status``, ``finished``,
    ``truncated_reason``, ``submission_source``, ``end_reason``, ``reward``, ``steps``,
    ``wall_time``, ``tokens``, ``prompt_tokens``, ``completion_tokens``, ``cost``, Heuresis ``d``,
    ``n``, ``expected_degree``, ``unit`` (the instance's identity, for pairing), the scores
    flattened as ``score.<name>`` (Heuresis: the env's ``scores``; CausaLab: success, the final
    hypothesis's metrics, ``imec_size``, ``budget_used_at_commit``, ``commit_budget``,
    ``final_reproduces``, ...), and the objects ``tool_counts``, ``calls`` (the call record),
    ``final_info`` and ``trajectory`` (CausaLab).

    Raises
    ------
    ValueError
        No directory given, or one that holds no run store.
    ModuleNotFoundError
        pandas is missing (``pip install 'causal-gym[report]'``).
    """
    pd = _pd()
    if not dirs:
        raise ValueError("load_runs needs at least one run store directory")
    rows = []
    for directory in dirs:
        store = RunStore(directory)
        content = store.read_config()
        if content is None:
            raise ValueError(f"{directory} is not a run store (it has no run.json); pass directories written by "
                             "causal-gym run or causal_gym.eval.run")
        rows.extend(_episode_row(str(directory), content["config"], line) for line in store.latest().values())
    frame = pd.DataFrame.from_records(rows)
    if frame.empty:
        return frame
    for name in _OBJECT_COLUMNS:
        frame[name] = frame[name].astype(object)
    return frame


# ---------------------------------------------------------------------------------------------
# intervals and grouping
# ---------------------------------------------------------------------------------------------


def _interval(values: Any) -> tuple[float, float, float]:
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    if x.size == 1:
        return float(x[0]), math.nan, math.nan
    return bootstrap_interval(x, seed=_SEED)


def _paired(a: Any, b: Any) -> tuple[float, float, float]:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2:
        return _interval(x - y)
    return paired_bootstrap(x, y, seed=_SEED)


def _cells(name: str, triple: tuple[float, float, float]) -> dict[str, float]:
    return {name: triple[0], f"{name}_low": triple[1], f"{name}_high": triple[2]}


def _per_unit(group: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per-instance means of ``columns`` (the bootstrap unit)."""
    return group.groupby("unit")[list(columns)].mean()


def _column(group: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as floats, all NaN when no episode reported it."""
    return group[name].to_numpy(dtype=float) if name in group else np.full(len(group), math.nan)


def _mean(values: Any) -> float:
    x = np.asarray(values, dtype=float)
    return float(x.mean()) if x.size else math.nan


def _family_order(families: Any) -> list[str]:
    from causal_gym.envs.heuresis.families import FAMILIES

    present = set(families)
    return [f for f in FAMILIES if f in present] + sorted(present - set(FAMILIES))


def _by_family(group: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(family, rows)`` in the papers' family order, then ``("all", group)`` when several are present."""
    families = _family_order(group["setting"])
    for family in families:
        yield family, group[group["setting"] == family]
    if len(families) > 1:
        yield "all", group


def _labels(values: Any) -> str:
    return ",".join(sorted(set(map(str, values))))


def _missing(value: Any) -> bool:
    """True for None / NaN (a missing seal fingerprint)."""
    return value is None or (isinstance(value, float) and np.isnan(value))


def _check_seal(episodes: pd.DataFrame, seal: Seal | None) -> None:
    """Refuse sealed episodes whose seal is not the one given (their instances cannot be rebuilt)."""
    fingerprints = sorted({f for f in episodes["seal"] if not _missing(f)})
    wanted = None if seal is None else seal.fingerprint
    foreign = [f for f in fingerprints if f != wanted]
    if foreign:
        raise ValueError(
            f"episodes were played under seal(s) {foreign}; their references need that seal "
            f"(pass seal=Seal.from_file(...), or --seal-file on the command line){'' if wanted is None else f'; got {wanted}'}"
        )


def _heuresis(frame: pd.DataFrame) -> pd.DataFrame:
    """The non-failed Heuresis episodes."""
    if frame.empty or "benchmark" not in frame:
        return frame
    return frame[(frame["benchmark"] == "heuresis") & (frame["status"] != "failed")]


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return _pd().DataFrame.from_records(rows)


# ---------------------------------------------------------------------------------------------
# Heuresis references
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeuresisReferences:
    """Reference scores of the Heuresis instances in a frame.

    Attributes
    ----------
    units : mapping
        ``unit`` (the frame's column) -> ``{"bca_g", "bca_phi"`` (menu labels), ``"f1_bca_g"``,
        ``"f1_bca_phi"``, ``"f1_oracle"``, ``"floors"`` (Table 11, by name)``}``.
    dev : int
        Development instances per family the best chosen algorithms were chosen on.
    labels : tuple of str
        The menu they were chosen from.
    """

    units: Mapping[str, Mapping[str, Any]]
    dev: int
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
    dev: int = 100,
    labels: Sequence[str] | None = None,
    workers: int = 1,
    progress: bool = False,
    seal: Seal | None = None,
) -> HeuresisReferences:
    """Best chosen algorithms (chosen on dev instances), oracle, PC-KCI and floors for every Heuresis instance played.

    Parameters
    ----------
    frame : DataFrame
        From :func:`load_runs`; only its non-failed Heuresis episodes are used.
    dev : int, default 100
        Development instances per family for choosing BCA_g and BCA_phi (the paper's 100). Each
        family is generated with the run's ``d``, ``n`` and ``expected_degree``.
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
    from causal_gym.envs.heuresis.families import FAMILIES
    from causal_gym.envs.heuresis.references import MENU, best_chosen_algorithms, collect_rows

    if isinstance(dev, bool) or not isinstance(dev, int) or dev < 1:
        raise ValueError(f"dev must be a positive number of development instances per family, got {dev!r}")
    labels = tuple(label for label in MENU if label != "anm") if labels is None else tuple(labels)
    if not labels:
        raise ValueError("labels must name at least one menu algorithm to choose the best chosen algorithms from")
    episodes = _heuresis(frame)
    units: dict[str, dict[str, Any]] = {}
    if episodes.empty:
        return HeuresisReferences(units, dev, labels)
    _check_seal(episodes, seal)
    for (d, n, degree, sealed), group in episodes.groupby(["d", "n", "expected_degree", "seal"], dropna=False):
        shape = {"d": int(d), "n": int(n), "expected_degree": float(degree),
                 "seal": None if _missing(sealed) else seal}
        dev_rows = collect_rows(FAMILIES, "dev", range(dev), labels=labels, workers=workers, progress=progress, **shape)
        # the rows always hold both PC variants (the oracle and the router need them); choose among `labels` only
        bca_g, bca_phi = best_chosen_algorithms([{**row, "menu": {k: row["menu"][k] for k in labels}} for row in dev_rows])
        for (family, split), played in group.groupby(["setting", "split"]):
            unit_of = {int(k): unit for k, unit in zip(played["instance"], played["unit"])}
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
# Heuresis tables
# ---------------------------------------------------------------------------------------------


def _residual_cells(group: pd.DataFrame, suffix: str) -> dict[str, float]:
    per = _per_unit(group, [F1, "ref.f1_bca_phi"])
    return {
        f"f1{suffix}": _mean(per[F1]),
        **_cells(f"delta_r{suffix}", _paired(per[F1], per["ref.f1_bca_phi"])),
    }


def heuresis_agent_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 6: per agent, condition and family (and ``all``), adjacency F1 and ``Delta^r`` vs BCA_phi.

    Columns: ``episodes``, ``instances``, ``bca_phi``, ``f1``, ``delta_r`` (paired interval over
    instances), ``finished`` (episodes), ``f1_finished``, ``delta_r_finished``,
    ``truncation_rate``.
    """
    if _heuresis(frame).empty:
        return _table([])
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
                "bca_phi": _labels(rows_of["ref.bca_phi"]),
                **_residual_cells(rows_of, ""),
                "finished": len(finished),
                **_residual_cells(finished, "_finished"),
                "truncation_rate": 1.0 - float(rows_of["finished"].mean()),
            })
    return _table(rows)


def heuresis_headroom_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 3: references, headrooms and the agent's gains, on the instances each agent played.

    Columns: ``instances``, ``bca_g``, ``bca_phi``, ``f1_bca_g``, ``f1_bca_phi``, ``f1_oracle``,
    ``h_s = F1(BCA_phi) - F1(BCA_g)`` and ``h_r = F1(oracle) - F1(BCA_phi)`` (paired
    intervals), ``f1``, ``delta_s = F1(A) - F1(BCA_g)``, ``delta_r = F1(A) - F1(BCA_phi)``
    (paired intervals) and ``closed = delta_r / h_r`` (NaN when ``h_r <= 0``). All episodes.
    """
    if _heuresis(frame).empty:
        return _table([])
    episodes = references.attach(_heuresis(frame))
    columns = [F1, "ref.f1_bca_g", "ref.f1_bca_phi", "ref.f1_oracle"]
    rows = []
    for (agent, condition), group in episodes.groupby(["agent", "condition"]):
        for family, rows_of in _by_family(group):
            per = _per_unit(rows_of, columns)
            agent_f1, g, phi, oracle = (per[c] for c in columns)
            h_r = _paired(oracle, phi)
            delta_r = _paired(agent_f1, phi)
            rows.append({
                "agent": agent,
                "condition": condition,
                "family": family,
                "instances": len(per),
                "bca_g": _labels(rows_of["ref.bca_g"]),
                "bca_phi": _labels(rows_of["ref.bca_phi"]),
                "f1_bca_g": _mean(g),
                "f1_bca_phi": _mean(phi),
                "f1_oracle": _mean(oracle),
                **_cells("h_s", _paired(phi, g)),
                **_cells("h_r", h_r),
                "f1": _mean(agent_f1),
                **_cells("delta_s", _paired(agent_f1, g)),
                **_cells("delta_r", delta_r),
                "closed": delta_r[0] / h_r[0] if h_r[0] > 0 else math.nan,
            })
    return _table(rows)


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
        return _table(rows)
    guided = episodes[episodes["condition"] == "guided"]
    drill = [f"score.{name}" for name in _DRILL_DOWN]
    for agent, group in guided.groupby("agent"):
        unguided = episodes[(episodes["condition"] == "unguided") & (episodes["agent"] == agent)]
        for family, rows_of in _by_family(group):
            per = _per_unit(rows_of, ["score.restoration_precision", "score.restoration_recall", F1,
                                      "score.pc_kci_f1", *drill])
            alone = unguided if family == "all" else unguided[unguided["setting"] == family]
            other = _per_unit(alone, [F1])[F1]
            common = per.index.intersection(other.index)
            rows.append({
                "agent": agent,
                "family": family,
                "episodes": len(rows_of),
                "instances": len(per),
                **_cells("precision", _interval(per["score.restoration_precision"])),
                **_cells("recall", _interval(per["score.restoration_recall"])),
                **_cells("gain_over_pc", _paired(per[F1], per["score.pc_kci_f1"])),
                **{name: _mean(per[f"score.{name}"]) for name in _DRILL_DOWN},
                "paired_unguided": len(common),
                **_cells("guided_minus_unguided", _paired(per.loc[common, F1], other.loc[common])),
            })
    return _table(rows)


def heuresis_floor_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 11: the trivial floors (adjacency F1) per family, over the distinct instances played."""
    episodes = _heuresis(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty:
        return _table(rows)
    instances = references.attach(episodes.drop_duplicates("unit"))
    for family in _family_order(instances["setting"]):
        rows_of = instances[instances["setting"] == family]
        row: dict[str, Any] = {"family": family, "instances": len(rows_of)}
        for floor in FLOORS:
            row.update(_cells(floor, _interval(rows_of[f"ref.floor.{floor}"])))
        rows.append(row)
    return _table(rows)


def heuresis_repeat_table(frame: pd.DataFrame, references: HeuresisReferences) -> pd.DataFrame:
    """Table 13: per agent, condition, family, run and repeat, the limit counts and both views.

    Columns: ``last_turn`` (:data:`LAST_TURN`), ``episodes``, ``reached_limit`` (a budget ran
    out: turns, tests, algorithm calls or wall time), ``submitted_after_limit`` (of those, the
    agent still submitted in the last turn; the rest were rescued), ``f1``, ``delta_r``,
    ``finished``, ``f1_finished``, ``delta_r_finished``.
    """
    if _heuresis(frame).empty:
        return _table([])
    episodes = references.attach(_heuresis(frame))
    rows = []
    keys = ["agent", "condition", "setting", "run", "repeat"]
    order = {family: k for k, family in enumerate(_family_order(episodes["setting"]))}
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
    return _table(rows)


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
                     None if _missing(row.seal) else seal)
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
    """Behaviour statistics (§4.3) and trace attribution (Table 4), all episodes.

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
        return _table(rows)
    for (agent, condition), group in episodes.groupby(["agent", "condition"]):
        stats = {index: _attribution(row, seal) for index, row in zip(group.index, group.itertuples())}
        merged: dict[str, tuple[float, int]] = {}  # family -> (merge* F1, episodes)
        for family, rows_of in _by_family(group):
            mine = [stats[i] for i in rows_of.index]
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
                "calls": _mean([s["calls"] for s in mine]),
                "errors": _mean([s["errors"] for s in mine]),
                "shortcut_rate": _mean([s["shortcut"] for s in mine]),
                "distinct_algorithms": _mean([s["distinct"] for s in mine]),
                "merge_k": k,
                "merge_f1": f1,
                "f1": _mean(rows_of[F1]),
                "restored_true": restored,
                "unsupported": unsupported,
                "unsupported_share": unsupported / restored if restored else math.nan,
                "tool_mi_bits": (
                    tool_choice_mutual_information((c or [], i) for c, i in zip(rows_of["calls"], rows_of["final_info"]))
                    if family == "all" else math.nan
                ),
            })
    return _table(rows)


def integrity_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Episodes per run, seal and code-tool sandbox (``process``: agent code was not isolated)."""
    if frame.empty:
        return frame.iloc[0:0]
    labelled = frame.assign(
        seal=[("open" if _missing(f) else f) for f in frame["seal"]],
        sandbox=[("none (no code tool)" if _missing(b) else b) for b in frame["sandbox"]],
    )
    rows = [
        {"run": run, "agent": agent, "seal": seal, "sandbox": sandbox,
         "isolated": "no" if sandbox == "process" else "yes", "episodes": len(group)}
        for (run, agent, seal, sandbox), group in labelled.groupby(["run", "agent", "seal", "sandbox"])
    ]
    return _table(rows)


def tool_call_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean calls per episode, in total and per tool, by benchmark, setting, condition and agent (non-failed)."""
    if frame.empty:
        return _table([])
    played = frame[frame["status"] != "failed"]
    rows = []
    keys = ["benchmark", "setting", "condition", "agent"]
    for key, group in played.groupby(keys, dropna=False, sort=True):
        counts = [c or {} for c in group["tool_counts"]]
        tools = sorted({tool for c in counts for tool in c})
        row = {name: (None if isinstance(value, float) and math.isnan(value) else value) for name, value in zip(keys, key)}
        row["episodes"] = len(group)
        row["calls"] = _mean([sum(c.values()) for c in counts])
        row.update({f"calls.{tool}": _mean([c.get(tool, 0) for c in counts]) for tool in tools})
        rows.append(row)
    table = _table(rows)
    per_tool = sorted(c for c in table.columns if c.startswith("calls."))
    return table[[c for c in table.columns if not c.startswith("calls.")] + per_tool]


# ---------------------------------------------------------------------------------------------
# CausaLab
# ---------------------------------------------------------------------------------------------


def _causalab(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty or "benchmark" not in frame:
        return frame
    return frame[(frame["benchmark"] == "causalab") & (frame["status"] != "failed")]


def _setting_order(settings: Any) -> list[str]:
    from causal_gym.envs.causalab.suites import SETTINGS

    present = set(settings)
    return [s for s in SETTINGS if s in present] + sorted(present - set(SETTINGS))


_TABLE7 = ("root_f1", "edge_precision", "edge_recall", "edge_f1", "shd", "freq_edge_f1", "freq_weight_f1", "imec_size",
           "budget_used_at_commit")


def _arena(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty or "benchmark" not in frame:
        return frame.iloc[0:0]
    return frame[(frame["benchmark"] == "arena") & (frame["status"] != "failed")]


_ARENA_METRICS = ("precision", "recall", "shd", "nshd", "sid", "cpdag_shd", "adjacency_f1")


def arena_agent_table(frame: pd.DataFrame) -> pd.DataFrame:
    """CausalArena: per source, split, d and agent, directed F1 (95% bootstrap over instances) and the
    other submit-mode metrics (means); the paper's F1-vs-d comparison reads off the ``d`` column."""
    episodes = _arena(frame)
    rows: list[dict[str, Any]] = []
    keys = ["setting", "condition", "d", "agent"]
    for (source, split, d, agent), group in episodes.groupby(keys, dropna=False, sort=True):
        rows.append({
            "source": source, "split": split, "d": d, "agent": agent, "episodes": len(group),
            **_cells("f1", _interval(_per_unit(group, ["score.f1"])["score.f1"])),
            **{name: _mean(_column(group, f"score.{name}")) for name in _ARENA_METRICS},
        })
    return _table(rows)


def arena_slice_table(frame: pd.DataFrame, factor: str = "graph_family") -> pd.DataFrame:
    """CausalArena slices: mean directed F1 per agent and value of ``factor`` (a key of the final
    info's ``factors``, e.g. ``graph_family``, ``difficulty``, ``root_dependency``), over the
    episodes that carry it."""
    episodes = _arena(frame)
    rows: list[dict[str, Any]] = []
    if episodes.empty:
        return _table(rows)
    values = [(f or {}).get(factor) for f in episodes["factors"]]
    tagged = episodes.assign(slice=[v if isinstance(v, str) else None for v in values]).dropna(subset=["slice"])
    for (agent, value), group in tagged.groupby(["agent", "slice"], sort=True):
        rows.append({"agent": agent, factor: value, "episodes": len(group), "f1": _mean(_column(group, "score.f1"))})
    return _table(rows)


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
        return _table(rows)
    for setting in _setting_order(episodes["setting"]):
        for agent, group in episodes[episodes["setting"] == setting].groupby("agent"):
            budget = _column(group, "score.commit_budget")
            used = _column(group, "score.budget_used_at_commit")
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(budget > 0, used / budget, np.nan)
            rows.append({
                "setting": setting,
                "agent": agent,
                "episodes": len(group),
                **_cells("accuracy", _interval(_column(group, "score.success"))),
                **{name: _mean(_column(group, f"score.{name}")) for name in _TABLE7},
                "commit_share": float(np.nanmean(share)) if np.isfinite(share).any() else math.nan,
                "consistent": float(np.mean(_column(group, "score.final_reproduces") == 1.0)),
                "truncation_rate": 1.0 - float(group["finished"].mean()),
            })
    return _table(rows)


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
    if episodes.empty:
        return _table(rows)
    for setting in _setting_order(episodes["setting"]):
        for agent, group in episodes[episodes["setting"] == setting].groupby("agent"):
            curves = [c for c in group["trajectory"] if c]
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
    return _table(rows)


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------


def _figure(width: float, height: float, panels: int, columns: int) -> tuple[Any, list[Any]]:
    """A matplotlib Figure drawn by the Agg canvas (no pyplot, no global backend switch)."""
    figure_module = _require("matplotlib.figure")
    agg = _require("matplotlib.backends.backend_agg")
    rows = math.ceil(panels / columns)
    figure = figure_module.Figure(figsize=(width * columns, height * rows), layout="constrained")
    agg.FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def _error_bars(table: pd.DataFrame, name: str) -> np.ndarray:
    estimate = table[name].to_numpy(dtype=float)
    low = np.nan_to_num(estimate - table[f"{name}_low"].to_numpy(dtype=float))
    high = np.nan_to_num(table[f"{name}_high"].to_numpy(dtype=float) - estimate)
    return np.vstack([low, high])


def plot_residual_gain(headroom: pd.DataFrame, path: str | Path) -> Path:
    """Figure 6: ``Delta^r`` per agent on every family, against the two headrooms.

    One panel per family of :func:`heuresis_headroom_table` (the ``all`` rows are left out): a bar
    per agent and condition with its 95% interval, a black tick at the repair headroom ``H^r``
    (the oracle's level) and a grey tick at ``-H^s`` (BCA_g's level); 0 is BCA_phi.
    """
    families = [f for f in headroom["family"].unique() if f != "all"]
    if not families:
        raise ValueError("plot_residual_gain needs at least one family row of heuresis_headroom_table")
    figure, axes = _figure(3.2, 3.0, len(families), min(3, len(families)))
    for axis, family in zip(axes, families):
        rows = headroom[headroom["family"] == family]
        x = np.arange(len(rows))
        gain = rows["delta_r"].to_numpy(dtype=float)
        # as nested lists: matplotlib warns about a (2, 1) array (one bar) but reads the lists the same way
        yerr = _error_bars(rows, "delta_r").tolist()
        axis.bar(x, gain, yerr=yerr, color="tab:blue", capsize=3, label="Δʳ (agent)")
        axis.scatter(x, rows["h_r"].to_numpy(dtype=float), marker="_", s=400, color="black", zorder=3,
                     label="Hʳ (oracle)")
        axis.scatter(x, -rows["h_s"].to_numpy(dtype=float), marker="_", s=400, color="grey", zorder=3,
                     label="−Hˢ (BCA_g)")
        axis.axhline(0.0, color="black", linewidth=0.8)
        axis.set_xticks(x, [f"{a}\n{c}" for a, c in zip(rows["agent"], rows["condition"])], fontsize=7)
        axis.set_title(family)
        axis.set_ylabel("adjacency F1 − F1(BCA_φ)")
    axes[0].legend(fontsize=7, loc="best")
    path = Path(path)
    figure.savefig(path, dpi=120)
    return path


def plot_trajectories(curves: pd.DataFrame, path: str | Path, setting: str) -> Path:
    """Mean recovery metrics of the hypothesis in force after each step, one line per agent."""
    rows = curves[curves["setting"] == setting]
    if rows.empty:
        raise ValueError(f"no trajectory rows for setting {setting!r}")
    metrics = [m for m in TRAJECTORY_METRICS if m != "shd"]
    figure, axes = _figure(3.2, 2.6, len(metrics), 2)
    for axis, metric in zip(axes, metrics):
        for agent, line in rows.groupby("agent"):
            axis.plot(line["step"], line[metric], marker=".", label=agent)
        axis.set_title(metric)
        axis.set_xlabel("step")
        axis.set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=7)
    figure.suptitle(f"CausaLab {setting}")
    path = Path(path)
    figure.savefig(path, dpi=120)
    return path


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------


def report_tables(
    frame: pd.DataFrame,
    *,
    dev: int = 100,
    labels: Sequence[str] | None = None,
    workers: int = 1,
    progress: bool = False,
    seal: Seal | None = None,
) -> list[ReportTable]:
    """Every table the frame's episodes support, in print order (empty tables left out).

    ``dev``, ``labels``, ``workers``, ``progress`` and ``seal`` go to :func:`heuresis_references`,
    which runs only when the frame has Heuresis episodes. The first table lists the runs by seal
    and by the sandbox their agent code ran in, so runs that were not isolated stand out.
    """
    tables: list[tuple[str, str, pd.DataFrame]] = [
        ("integrity", "Runs by seal (fingerprint; open = published splits) and code-tool sandbox "
         "(process = agent code ran without OS isolation)", integrity_table(frame)),
    ]
    if not _heuresis(frame).empty:
        refs = heuresis_references(frame, dev=dev, labels=labels, workers=workers, progress=progress, seal=seal)
        chosen = f"chosen on {refs.dev} dev instances per family"
        tables += [
            ("heuresis_agents", "Heuresis (Table 6) -- adjacency F1 and the residual gain over BCA_phi "
             f"({chosen}), all episodes and finished only, 95% paired bootstrap over instances",
             heuresis_agent_table(frame, refs)),
            ("heuresis_headroom", "Heuresis (Table 3) -- references, headrooms H^s and H^r, gain Delta^s over "
             "BCA_g and residual gain Delta^r over BCA_phi, on the instances each agent played",
             heuresis_headroom_table(frame, refs)),
            ("heuresis_guided", "Heuresis (Table 8) -- guided condition: restoring PC-KCI's wrong deletions, gain "
             "over PC-KCI and over the agent's own unguided episodes", heuresis_guided_table(frame)),
            ("heuresis_floors", "Heuresis (Table 11) -- trivial floors, adjacency F1 on the instances played",
             heuresis_floor_table(frame, refs)),
            ("heuresis_repeats", "Heuresis (Table 13) -- per run and repeat: last-turn setting, episodes that "
             "reached a budget limit / still submitted, both views", heuresis_repeat_table(frame, refs)),
            ("heuresis_behaviour", "Heuresis (Section 4.3, Table 4) -- tool calls, shortcut rate, distinct "
             "algorithms, merge*, unsupported restorations, tool-choice mutual information",
             heuresis_behaviour_table(frame, seal)),
        ]
    if not _causalab(frame).empty:
        tables += [
            ("causalab_agents", "CausaLab (Table 7) -- task accuracy, recovery metrics of the final hypothesis, "
             "IMEC size and early-commitment diagnostics", causalab_agent_table(frame)),
            ("causalab_trajectories", "CausaLab (Figure 10) -- mean metric of the hypothesis in force after each step",
             causalab_trajectories(frame)),
        ]
    if not _arena(frame).empty:
        tables += [
            ("arena_agents", "CausalArena -- directed F1 (95% bootstrap over instances), precision, recall, SHD, "
             "nSHD, SID by source, split, d and agent", arena_agent_table(frame)),
            ("arena_graph_families", "CausalArena -- mean directed F1 by graph family (synthetic)",
             arena_slice_table(frame, "graph_family")),
        ]
    tables.append(("tool_calls", "Tool calls per episode (means)", tool_call_table(frame)))
    return [ReportTable(name, title, table) for name, title, table in tables if not table.empty]


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


def _string_cells(table: pd.DataFrame, digits: int) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headers, cell strings and right-alignment flags, with each interval folded into one column."""
    columns = list(table.columns)
    hidden = {f"{c}{s}" for c in columns if _is_interval(columns, c) for s in ("_low", "_high")}
    shown = [c for c in columns if c not in hidden]
    cells = []
    for record in table.itertuples(index=False, name=None):
        value = dict(zip(columns, record))
        line = []
        for c in shown:
            text = _text(value[c], digits)
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


def write_tables(tables: Sequence[ReportTable], out_dir: str | Path, episodes: pd.DataFrame | None = None) -> list[Path]:
    """Write each table as ``<name>.csv``, all of them in ``report.md``, and the figures as PNG.

    Figures: ``heuresis_residual_gain.png`` (from the ``heuresis_headroom`` table) and
    ``causalab_trajectories_<setting>.png`` per setting. ``episodes``, when given, is written as
    ``episodes.csv`` without its object columns.

    Returns
    -------
    list of Path
        Every file written, in order.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections = []
    for table in tables:
        path = out / f"{table.name}.csv"
        table.frame.to_csv(path, index=False)
        written.append(path)
        sections.append(f"## {table.title}\n\n{markdown_table(table.frame)}\n")
    if episodes is not None:
        path = out / "episodes.csv"
        episodes.drop(columns=[c for c in _OBJECT_COLUMNS if c in episodes]).to_csv(path, index=False)
        written.append(path)
    report = out / "report.md"
    report.write_text("# causal_gym report\n\n" + "\n".join(sections), encoding="utf-8")
    written.append(report)
    named = {table.name: table.frame for table in tables}
    if "heuresis_headroom" in named and (named["heuresis_headroom"]["family"] != "all").any():
        written.append(plot_residual_gain(named["heuresis_headroom"], out / "heuresis_residual_gain.png"))
    if "causalab_trajectories" in named:
        curves = named["causalab_trajectories"]
        for setting in curves["setting"].unique():
            written.append(plot_trajectories(curves, out / f"causalab_trajectories_{setting}.png", setting))
    return written


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    dev: int = 100,
    labels: Sequence[str] | None = None,
    workers: int = 1,
    progress: bool = False,
    seal: Seal | None = None,
) -> list[Path]:
    """Load ``run_dirs``, build every table (:func:`report_tables`) and write them (:func:`write_tables`).

    Returns
    -------
    list of Path
        The CSV files, ``episodes.csv``, ``report.md`` and the PNG figures.
    """
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    frame = load_runs(*run_dirs)
    tables = report_tables(frame, dev=dev, labels=labels, workers=workers, progress=progress, seal=seal)
    return write_tables(tables, out_dir, frame)
