"""Reports: the papers' tables and figures, rebuilt from run stores.

:func:`load_runs` reads run stores (:mod:`causal_gym.eval.store`) into one pandas frame with a
row per episode; :func:`report_tables` derives every table the episodes support, and
:func:`write_report` writes them as CSV, one Markdown file and PNG figures. pandas and matplotlib
are imported only inside the functions: ``pip install 'causal-gym[report]'``.

This module knows no benchmark. Each benchmark's report module (``report`` of its
:class:`~causal_gym.envs.benchmark.BenchmarkSpec`, e.g. :mod:`causal_gym.envs.heuresis.report`)
adds its columns to the episode rows and builds its paper tables and figures from its own
episodes; here are only the tables every run store has:

- :func:`integrity_table`: episodes per run, seal and code-tool sandbox, so runs that were not
  isolated stand out;
- :func:`outcome_table`: episodes per status (finished, truncated, rescued, timeout, failed,
  interrupted; timeouts also per limit: episode, agent, tool, scorer) and those whose model never
  called a tool, by benchmark, env and agent, so failures, timeouts and silent models never vanish
  from a report;
- :func:`tool_call_table`: mean calls per tool, by benchmark, setting, condition and agent.

Conventions
-----------
- Failed, interrupted and timed-out episodes have no scores and no reward; they appear in the
  integrity and outcome tables only (never averaged as zeros).
- Agents are labelled by their registry name and their keyword arguments other than ``seed``
  (``algorithm(algorithm=B)``), so episodes of one agent in several run stores pool.
- Intervals and per-instance means follow :mod:`causal_gym.tables`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from causal_gym._files import OutputFolder
from causal_gym.envs.benchmark import (
    BenchmarkSpec,
    ReportModule,
    ReportOptions,
    benchmark_of,
    benchmarks,
    figure_writer,
    load,
    report_position,
)
from causal_gym.eval.store import STATUSES, RunStore
from causal_gym.seal import Seal
from causal_gym.tables import (
    ReportTable,
    build_table,
    check_fields,
    is_missing,
    markdown_table,
    mean,
    require,
    score_columns,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "agent_label",
    "load_runs",
    "integrity_table",
    "outcome_table",
    "tool_call_table",
    "report_tables",
    "write_tables",
    "write_report",
]

OTHER = "other"
"""The ``benchmark`` of episodes no benchmark reports (ids of other packages, RL-only tasks)."""

_INSTANCE_COLUMNS = ("setting", "condition", "d", "n", "expected_degree")
_COUNT = (float, None)
_LINE_FIELDS: dict[str, tuple[Any, ...]] = {
    "split": (str, None),
    "seal": (str, None),
    "timeout": (str, None),
    "agent_kwargs.*": (str, int, float, bool, list, dict, None),
    "usage.total_tokens": _COUNT, "usage.prompt_tokens": _COUNT, "usage.completion_tokens": _COUNT, "usage.cost": _COUNT,
    "record.final_info": (dict, None),
    "record.final_info.truncated_reason": (str, None),
    "record.final_info.submission_source": (str, None),
    "record.final_info.end_reason": (str, None),
    "record.final_info.sandbox": (str, None),
    "record.final_info.record": (dict, None),
    "record.final_info.record.tool_counts": (dict, None),
    "record.final_info.record.tool_counts.*": (float,),
    "record.env_record": (dict, None),
    "record.env_record.summary": (dict, None),
    "record.env_record.summary.tool_counts": (dict, None),
    "record.env_record.summary.tool_counts.*": (float,),
    "record.env_record.calls": (list, None),
}
"""The fields of a store line that the generic report reads, beyond those the store checks
(:func:`causal_gym.eval.store.line_problem`), and their types (:func:`causal_gym.tables.check_fields`)."""
_OBJECT_COLUMNS = ("tool_counts", "calls", "final_info")
_TIMEOUTS = ("episode", "agent", "tool", "scorer")
"""The limits a ``"timeout"`` line can name (its ``timeout`` field; see :mod:`causal_gym.eval.store`)."""


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


def _env_params(env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The registered keyword arguments of ``env_id`` updated with the run's ``env_kwargs``."""
    import gymnasium as gym

    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return dict(env_kwargs)
    return {**spec.kwargs, **env_kwargs}


def _report_module(spec: BenchmarkSpec | None) -> ReportModule | None:
    if spec is None or spec.report is None:
        return None
    module = load(spec.report)
    if not isinstance(module, ReportModule):
        raise ValueError(f"benchmark {spec.name!r}: report module {spec.report!r} lacks episode_columns() or "
                         "report_tables() (see causal_gym.envs.benchmark.ReportModule)")
    return module


def _usage(usage: Any) -> dict[str, float]:
    usage = usage if isinstance(usage, Mapping) else {}
    return {
        "tokens": usage.get("total_tokens"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cost": usage.get("cost"),
        "never_called_a_tool": bool(usage.get("never_called_a_tool")),
    }


def _score_problem(scores: Mapping[str, Any]) -> str | None:
    """Why the score leaves cannot be report columns (a number too large for a float), or None."""
    pending: list[tuple[str, Any]] = [("scores", scores)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, Mapping):
            pending.extend((f"{where}.{key}", item) for key, item in value.items())
        elif isinstance(value, int) and not isinstance(value, bool):
            try:
                float(value)
            except OverflowError:
                return f"{where} is an int too large for a float"
    return None


def _episode_row(run: str, config: Mapping[str, Any], line: Mapping[str, Any]) -> dict[str, Any]:
    """The frame row of one store line; ``ValueError`` (or any error of a benchmark's
    ``episode_columns``) when the line holds a value the report cannot read."""
    check_fields(line, _LINE_FIELDS)
    problem = _score_problem(line.get("scores") or {})
    if problem is not None:
        raise ValueError(problem)
    env_id = line["env_id"]
    bare = env_id.rsplit(":", 1)[-1]  # "causal_gym:Heuresis-lg-v0" is registered as "Heuresis-lg-v0"
    spec = benchmark_of(bare)
    record = line.get("record") or {}
    info = record.get("final_info") or {}
    env_record = record.get("env_record") or {}
    summary = env_record.get("summary") if isinstance(env_record, Mapping) else None
    module = _report_module(spec)
    columns = {} if module is None else module.episode_columns(_env_params(bare, config.get("env_kwargs") or {}),
                                                               line, info)
    benchmark = OTHER if spec is None or columns is None else spec.name  # None: an id its report leaves out
    columns = dict(columns or {})
    scores = columns.pop("scores", line.get("scores") or {})
    problem = _score_problem(scores)
    if problem is not None:
        raise ValueError(problem)
    row: dict[str, Any] = {
        "run": run,
        "env_id": env_id,
        "benchmark": benchmark,
        "setting": columns.pop("setting", None),
        "condition": columns.pop("condition", None),
        "split": columns.pop("split", line.get("split")),  # a benchmark may know the split a run left to the env
        "instance": line.get("instance"),
        "repeat": line.get("repeat"),
        "agent": agent_label(line.get("agent", "?"), line.get("agent_kwargs") or {}),
        "agent_name": line.get("agent"),
        "status": line["status"],
        # which limit a timeout ran past; a line written before the per-call budgets is the episode's
        "timeout": (line.get("timeout") or "episode") if line["status"] == "timeout" else None,
        "finished": line["status"] == "finished",
        "truncated_reason": info.get("truncated_reason"),
        "submission_source": info.get("submission_source"),
        "end_reason": info.get("end_reason"),
        "reward": line.get("reward"),
        "steps": line.get("steps"),
        "wall_time": line.get("wall_time"),
        **_usage(line.get("usage")),
        **{name: columns.pop(name, None) for name in _INSTANCE_COLUMNS[2:]},
        "seal": line.get("seal", config.get("seal")),
        "sandbox": info.get("sandbox"),
    }
    identity = [row["setting"], row["split"], row["instance"], row["d"], row["n"], row["expected_degree"], row["seal"]]
    row["unit"] = "|".join(str(part) for part in identity if part is not None)
    row.update(score_columns(scores))
    row["tool_counts"] = (summary or info.get("record") or {}).get("tool_counts") if line["status"] != "failed" else None
    row["calls"] = env_record.get("calls") if isinstance(env_record, Mapping) else None
    row["final_info"] = info or None
    row.update(columns)
    return row


def _object_columns(frame: pd.DataFrame) -> list[str]:
    """The columns of records and traces (the generic ones, and a benchmark's mappings and lists)."""
    return [name for name in frame.columns if name in _OBJECT_COLUMNS
            or any(isinstance(value, (Mapping, list, tuple)) for value in frame[name])]


def load_runs(*dirs: str | Path) -> pd.DataFrame:
    """One row per episode of the given run stores (the last line per episode key).

    A line the report cannot read -- not JSON, not an episode line, or a field the report reads
    with the wrong type (:data:`_LINE_FIELDS`, and what each benchmark's ``episode_columns``
    checks) -- is skipped with a ``RuntimeWarning`` that names the store and the line or episode
    key; the skipped lines are listed in ``frame.attrs["skipped"]`` and as a table of the report.

    Columns: ``run`` (the directory as given), ``env_id``, ``benchmark`` (the name of the
    benchmark whose report covers the id, else ``other``), ``setting`` and ``condition`` (the
    benchmark's: Heuresis family and guided / unguided, CausaLab setting, CausalArena source and
    split), ``split``, ``instance``, ``repeat``, ``agent`` (:func:`agent_label`), ``agent_name``,
    ``status``, ``timeout`` (the limit a timeout ran past: episode, agent, tool or scorer; else
    None), ``finished``, ``truncated_reason``, ``submission_source``, ``end_reason``,
    ``reward``, ``steps``, ``wall_time``, ``tokens``, ``prompt_tokens``, ``completion_tokens``,
    ``cost``, ``never_called_a_tool`` (the LLM agent's flag; False for other agents), the instance shape ``d``, ``n``, ``expected_degree`` where the benchmark has one,
    ``seal``, ``sandbox``, ``unit`` (the instance's identity, for pairing), the scores flattened as
    ``score.<name>`` (the line's ``scores``, or those the benchmark derives from the final info),
    the objects ``tool_counts``, ``calls`` (the call record) and ``final_info``, then the
    benchmark's own columns (CausaLab ``trajectory``, CausalArena ``factors``).

    Raises
    ------
    ValueError
        No directory given, or one that holds no run store.
    ModuleNotFoundError
        pandas is missing (``pip install 'causal-gym[report]'``).
    """
    pd = require("pandas")
    if not dirs:
        raise ValueError("load_runs needs at least one run store directory")
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []

    def skip(run: str, where: str, problem: str) -> None:
        warnings.warn(f"{where}: {problem}; the report skips it", RuntimeWarning, stacklevel=3)
        skipped.append({"run": run, "line": where, "problem": problem})

    for directory in dirs:
        store = RunStore(directory)
        content = store.read_config()
        if content is None:
            raise ValueError(f"{directory} is not a run store (it has no run.json); pass directories written by "
                             "causal-gym run or causal_gym.eval.run")
        config = content["config"]
        try:
            check_fields(content, {"config": (dict,), "config.env_kwargs": (dict, None), "config.seal": (str, None)})
        except ValueError as exc:
            raise ValueError(f"{store.run_path}: {exc}") from None
        lines = store.latest(lambda number, problem: skip(str(directory), f"{store.episodes_path}, line {number}",
                                                          problem))
        for key, line in lines.items():
            try:
                rows.append(_episode_row(str(directory), config, line))
            except Exception as exc:  # noqa: BLE001 -- a line the report cannot read is named and skipped
                skip(str(directory), f"{store.episodes_path}, episode {key}", f"{type(exc).__name__}: {exc}")
    frame = pd.DataFrame.from_records(rows)
    frame.attrs["skipped"] = skipped
    if frame.empty:
        return frame
    for name in _object_columns(frame):
        frame[name] = frame[name].astype(object)
    return frame


# ---------------------------------------------------------------------------------------------
# the tables of every run store
# ---------------------------------------------------------------------------------------------


def integrity_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Episodes per run, seal and code-tool sandbox (``process``: agent code was not isolated)."""
    if frame.empty:
        return frame.iloc[0:0]
    labelled = frame.assign(
        seal=[("open" if is_missing(f) else f) for f in frame["seal"]],
        sandbox=[("none (no code tool)" if is_missing(b) else b) for b in frame["sandbox"]],
    )
    rows = [
        {"run": run, "agent": agent, "seal": seal, "sandbox": sandbox,
         "isolated": "no" if sandbox == "process" else "yes", "episodes": len(group)}
        for (run, agent, seal, sandbox), group in labelled.groupby(["run", "agent", "seal", "sandbox"])
    ]
    return build_table(rows)


def outcome_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Episodes per status and ``no tool call`` (the model never called a tool), by benchmark, env and agent.

    Every episode counts, failed and interrupted ones included: a run whose episodes all failed
    still shows up, as a row of failures.
    """
    if frame.empty:
        return build_table([])
    rows = []
    limits = [limit for limit in _TIMEOUTS if (frame["timeout"] == limit).any()]  # columns only for those seen
    for (benchmark, env_id, agent), group in frame.groupby(["benchmark", "env_id", "agent"], sort=True):
        row: dict[str, Any] = {"benchmark": benchmark, "env_id": env_id, "agent": agent, "episodes": len(group)}
        row.update({status: int((group["status"] == status).sum()) for status in STATUSES})
        row.update({f"timeout ({limit})": int((group["timeout"] == limit).sum()) for limit in limits})
        row["no tool call"] = int(group["never_called_a_tool"].sum())
        rows.append(row)
    return build_table(rows)


def tool_call_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean calls per episode, in total and per tool, by benchmark, setting, condition and agent (episodes
    with a record: not failed, interrupted or timed out, whose calls are not known)."""
    if frame.empty:
        return build_table([])
    played = frame[~frame["status"].isin(("failed", "interrupted", "timeout"))]
    rows = []
    keys = ["benchmark", "setting", "condition", "agent"]
    for key, group in played.groupby(keys, dropna=False, sort=True):
        counts = [c or {} for c in group["tool_counts"]]
        tools = sorted({tool for c in counts for tool in c})
        row = {name: (None if is_missing(value) else value) for name, value in zip(keys, key)}
        row["episodes"] = len(group)
        row["calls"] = mean([sum(c.values()) for c in counts])
        row.update({f"calls.{tool}": mean([c.get(tool, 0) for c in counts]) for tool in tools})
        rows.append(row)
    table = build_table(rows)
    per_tool = sorted(c for c in table.columns if c.startswith("calls."))
    return table[[c for c in table.columns if not c.startswith("calls.")] + per_tool]


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------


def _reports() -> list[tuple[BenchmarkSpec, ReportModule]]:
    """Every benchmark's report module, in report order (``POSITION``, then :func:`benchmarks` order)."""
    found = [(spec, module) for spec in benchmarks() if (module := _report_module(spec)) is not None]
    ranked = sorted(enumerate(found), key=lambda item: (report_position(item[1][1]), item[0]))
    return [pair for _, pair in ranked]


def report_tables(
    frame: pd.DataFrame,
    *,
    dev: int | None = None,
    labels: Sequence[str] | None = None,
    full_menu: bool = False,
    workers: int = 1,
    progress: bool = False,
    seal: Seal | None = None,
) -> list[ReportTable]:
    """Every table the frame's episodes support, in print order (empty tables left out).

    First the runs by seal and sandbox (:func:`integrity_table`), the episodes by status
    (:func:`outcome_table`) and the lines :func:`load_runs` skipped, then each benchmark's tables of
    its own episodes (its report module's ``report_tables``, given ``dev``, ``labels``, ``full_menu``,
    ``workers``, ``progress`` and ``seal`` as :class:`~causal_gym.envs.benchmark.ReportOptions`),
    last the tool calls (:func:`tool_call_table`).
    """
    options = ReportOptions(dev=dev, labels=None if labels is None else tuple(labels), full_menu=full_menu,
                            workers=workers, progress=progress, seal=seal)
    tables = [
        ReportTable("integrity", "Runs by seal (fingerprint; open = published splits) and code-tool sandbox "
                    "(process = agent code ran without OS isolation)", integrity_table(frame)),
        ReportTable("outcomes", "Episodes by status (failed: an exception, no scores; rescued: the env submitted "
                    "the working graph) and episodes whose model never called a tool", outcome_table(frame)),
        ReportTable("skipped", "Store lines the report could not read and left out (see load_runs)",
                    build_table(list(frame.attrs.get("skipped") or []))),
    ]
    present = set() if frame.empty else set(frame["benchmark"])
    for spec, module in _reports():
        if spec.name in present:
            tables += module.report_tables(frame[frame["benchmark"] == spec.name], options)
    tables.append(ReportTable("tool_calls", "Tool calls per episode (means)", tool_call_table(frame)))
    return [table for table in tables if not table.frame.empty]


def write_tables(
    tables: Sequence[ReportTable],
    out_dir: str | Path | OutputFolder,
    episodes: pd.DataFrame | None = None,
    *,
    within: Sequence[str | Path] = (),
) -> list[Path]:
    """Write each table as ``<name>.csv``, all of them in ``report.md``, and the figures as PNG.

    ``out_dir`` is opened once (a :class:`causal_gym._files.OutputFolder`, or one given) and every
    file is written by name inside it, atomically: a link planted under one of these names is
    replaced, never written through, and nothing is written outside the folder. ``within`` names
    the directories someone else controls, the run stores read (a received run directory): a
    component of ``out_dir`` below one of them is never followed through a link (the default
    ``DIR/report`` of ``causal-gym report DIR``), and a link there is refused.

    Figures come from each benchmark's ``write_figures`` (e.g. ``heuresis_residual_gain.png``,
    ``causalab_trajectories_<setting>.png``). ``episodes``, when given, is written as
    ``episodes.csv`` without its object columns.

    Returns
    -------
    list of Path
        Every file written, in order.

    Raises
    ------
    ValueError
        A component of ``out_dir`` below a ``within`` directory is a link or not a directory.
    """
    if not isinstance(out_dir, OutputFolder):
        with OutputFolder(out_dir, within=within) as folder:
            return write_tables(tables, folder, episodes)
    out = out_dir
    written: list[Path] = []
    sections = []
    for table in tables:
        written.append(out.write(f"{table.name}.csv", table.frame.to_csv(index=False)))
        legend = "".join(f"- {line}\n" for line in table.legend_lines())
        sections.append(f"## {table.title}\n\n{markdown_table(table.frame)}\n" + (f"\n{legend}" if legend else ""))
    if episodes is not None:
        written.append(out.write("episodes.csv", episodes.drop(columns=_object_columns(episodes)).to_csv(index=False)))
    written.append(out.write("report.md", "# causal_gym report\n\n" + "\n".join(sections)))
    for _, module in _reports():
        write_figures = figure_writer(module)
        if write_figures is not None:
            written.extend(write_figures(tables, out))
    return written


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    dev: int | None = None,
    labels: Sequence[str] | None = None,
    workers: int = 1,
    progress: bool = False,
    seal: Seal | None = None,
) -> list[Path]:
    """Load ``run_dirs``, build every table (:func:`report_tables`) and write them (:func:`write_tables`, with
    the run directories as ``within``: no link below one of them is followed to ``out_dir``).

    Returns
    -------
    list of Path
        The CSV files, ``episodes.csv``, ``report.md`` and the PNG figures.
    """
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    frame = load_runs(*run_dirs)
    tables = report_tables(frame, dev=dev, labels=labels, workers=workers, progress=progress, seal=seal)
    return write_tables(tables, out_dir, frame, within=run_dirs)
