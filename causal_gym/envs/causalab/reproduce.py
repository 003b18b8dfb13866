"""Reproduce CausaLab's Table 7 with the three scripted baselines on the published suites.

Usage
-----
    causal-gym reproduce causalab --quick      # 3node, 4node, 4node-freqparent; 10 instances each (the default)
    causal-gym reproduce causalab --full       # every published setting, 50 instances each
    causal-gym reproduce causalab --settings 4node,4node-quad --instances 20 --workers 2

The baselines (:mod:`causal_gym.envs.causalab.baselines`, registry names ``causalab-observe``,
``causalab-random``, ``causalab-systematic``) play every instance of each setting's test suite
through :func:`causal_gym.harness.rollout.rollout`, with the seeds ``causal-gym run`` gives the
same episodes (``--workers`` > 1: in a process pool). The table is
:func:`causal_gym.envs.causalab.report.causalab_agent_table`, the one ``causal-gym report`` prints
for run stores of the same episodes (``causal-gym run --env CausaLab-4node-v0 --agent
causalab-systematic --episodes 50 --out DIR`` keeps them). The paper reports LLM agents only, so
its GPT-5-mini rows of the main suites are printed below ours as context, not as targets. A
setting without a registered id of its own plays through the id with its node count and
``setting=<name>`` (e.g. ``CausaLab-4node-v0`` with ``setting="4node-hidden-n2"``). The full run
(every setting x 50 instances x 3 agents) takes well under a minute on one core.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from causal_gym._files import write_atomic
from causal_gym._validation import check_count
from causal_gym._workers import process_pool
from causal_gym.envs.benchmark import load
from causal_gym.envs.causalab.report import causalab_agent_table, episode_columns
from causal_gym.envs.causalab.spec import SPEC
from causal_gym.envs.causalab.suites import SETTINGS, SUITE_SIZE
from causal_gym.envs.reproduce_args import add_common_reproduce_args, reproduce_parser, tables_to
from causal_gym.harness.rollout import episode_seeds, rollout
from causal_gym.tables import build_table, format_table, score_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BASELINES",
    "QUICK_SETTINGS",
    "QUICK_INSTANCES",
    "PAPER_TABLE7",
    "env_for",
    "play_baselines",
    "print_table",
    "build_parser",
    "main",
]

BASELINES = ("causalab-observe", "causalab-random", "causalab-systematic")
"""Registry names of the scripted CausaLab agents, in print order."""

QUICK_SETTINGS = ("3node", "4node", "4node-freqparent")
"""Settings of ``--quick``."""

QUICK_INSTANCES = 10
"""Instances per setting of ``--quick`` (the full run plays the whole suite, :data:`SUITE_SIZE`)."""

# Table 7 of the paper, GPT-5-mini on the main suites: accuracy (share), root F1, all-edge F1, SHD,
# freq-edge F1, freq-weight F1.
PAPER_TABLE7 = {
    "3node": {"accuracy": 0.90, "root_f1": 0.727, "edge_f1": 0.889, "shd": 0.458, "freq_edge_f1": 0.907,
              "freq_weight_f1": 0.890},
    "4node": {"accuracy": 0.48, "root_f1": 0.559, "edge_f1": 0.793, "shd": 1.766, "freq_edge_f1": 0.812,
              "freq_weight_f1": 0.589},
    "5node": {"accuracy": 0.18, "root_f1": 0.413, "edge_f1": 0.697, "shd": 3.543, "freq_edge_f1": 0.687,
              "freq_weight_f1": 0.468},
    "6node": {"accuracy": 0.24, "root_f1": 0.379, "edge_f1": 0.628, "shd": 5.490, "freq_edge_f1": 0.679,
              "freq_weight_f1": 0.455},
    "7node": {"accuracy": 0.16, "root_f1": 0.353, "edge_f1": 0.519, "shd": 7.511, "freq_edge_f1": 0.585,
              "freq_weight_f1": 0.418},
}


def env_for(setting: str) -> tuple[str, dict[str, Any]]:
    """The env id and ``gym.make`` keyword arguments that play ``setting``.

    Examples
    --------
    >>> env_for("4node-quad")
    ('CausaLab-4node-quad-v0', {})
    >>> env_for("4node-hidden-n2")
    ('CausaLab-4node-v0', {'setting': '4node-hidden-n2'})
    """
    from causal_gym.envs.causalab.spec import SETTINGS_BY_ID

    if setting not in SETTINGS:
        raise ValueError(f"unknown CausaLab setting {setting!r}; choose from {', '.join(SETTINGS)}")
    own = [env_id for env_id, name in SETTINGS_BY_ID.items() if name == setting]
    if own:
        return own[0], {}
    return f"CausaLab-{SETTINGS[setting].n_nodes}node-v0", {"setting": setting}


def _play(agent: str, setting: str, instance: int) -> dict[str, Any]:
    """One episode of ``agent`` on test instance ``instance`` of ``setting``, as its row of Table 7.

    Played as ``causal-gym run`` plays it (base seed 0, :func:`causal_gym.harness.rollout.episode_seeds`),
    so the table is the one ``causal-gym report`` builds from the same episodes.
    """
    env_id, env_kwargs = env_for(setting)
    env_seed, agent_seed = episode_seeds(0, env_id, instance, 0)
    factory = load(SPEC.agents[agent].path)
    seeded = "seed" in inspect.signature(factory).parameters
    env = gym.make(env_id, **env_kwargs)
    try:
        record = rollout(env, factory(**({"seed": agent_seed} if seeded else {})), seed=env_seed,
                         options={"split": "test", "instance": instance})
        assert env.spec is not None  # gym.make sets it
        params = dict(env.spec.kwargs)
    finally:
        env.close()
    columns = episode_columns(params, {"env_id": env_id}, record.final_info)
    return {
        "benchmark": SPEC.name,
        "setting": columns["setting"],
        "agent": agent,
        "status": record.status,
        "finished": record.status == "finished",
        **score_columns(columns["scores"]),
    }


def _played(tasks: Sequence[tuple[str, str, int]], workers: int) -> Iterator[dict[str, Any]]:
    """The rows of ``tasks`` in task order: here, or in ``workers`` fresh processes (a fork of a
    process running BLAS threads can deadlock), each on one BLAS thread."""
    if workers == 1:
        yield from (_play(*task) for task in tasks)
        return
    with process_pool(min(workers, len(tasks))) as pool:
        yield from pool.map(_play, *zip(*tasks))


def play_baselines(
    settings: Sequence[str],
    instances: int,
    agents: Sequence[str] = BASELINES,
    workers: int = 1,
    progress: bool = True,
) -> pd.DataFrame:
    """Play ``agents`` on test instances ``0 .. instances - 1`` of every setting; one row per episode.

    ``workers > 1`` plays the episodes in a pool of fresh (spawned) processes with one BLAS
    thread each; the rows, and so the table, do not depend on ``workers``. ``progress`` prints a
    line per (agent, setting) on stderr.
    """
    if isinstance(instances, bool) or not isinstance(instances, int) or not 1 <= instances <= SUITE_SIZE:
        raise ValueError(f"instances must be an integer in 1..{SUITE_SIZE}, got {instances!r}")
    check_count(workers, "workers", 1)
    groups = [(agent, setting) for agent in agents for setting in settings]
    tasks = [(agent, setting, k) for agent, setting in groups for k in range(instances)]
    start = time.perf_counter()
    rows = []
    for row in _played(tasks, workers):
        rows.append(row)
        if progress and len(rows) % instances == 0:
            agent, setting = groups[len(rows) // instances - 1]
            print(f"{agent} {setting}: {instances} episode(s) ({time.perf_counter() - start:.0f} s)", file=sys.stderr,
                  flush=True)
    return build_table(rows)


def print_table(episodes: pd.DataFrame) -> pd.DataFrame:
    """Table 7 of the baselines' episodes, then the paper's GPT-5-mini rows of the settings present."""
    table = causalab_agent_table(episodes)
    print("\nTable 7 -- scripted baselines on the published suites (accuracy with a 95% bootstrap interval over "
          "episodes)")
    print(format_table(table))
    paper = [(s, PAPER_TABLE7[s]) for s in dict.fromkeys(table["setting"]) if s in PAPER_TABLE7]
    if paper:
        print("\nPaper, GPT-5-mini (Table 7; an LLM agent, context only)")
        names = list(paper[0][1])
        print(f"{'setting':9} " + " ".join(f"{name:>14}" for name in names))
        for setting, row in paper:
            print(f"{setting:9} " + " ".join(f"{row[name]:>14.3f}" for name in names))
    return table


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``causal-gym reproduce causalab`` (the shared grammar of :mod:`causal_gym.envs.reproduce_args`)."""
    parser = reproduce_parser(prog, __doc__)
    add_common_reproduce_args(
        parser, quick=f"{', '.join(QUICK_SETTINGS)} with {QUICK_INSTANCES} instances each",
        full=f"every published setting with its {SUITE_SIZE}-instance test suite",
        instances=f"test instances per setting (default: quick {QUICK_INSTANCES}, full {SUITE_SIZE})",
        out="the episodes as episodes.csv and Table 7 as table7.csv")
    parser.add_argument("--settings", help="comma-separated settings (default: quick "
                        f"{','.join(QUICK_SETTINGS)}; full every published one)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> None:
    """Parse ``argv`` (default: sys.argv), run the baselines and print the table."""
    args = build_parser(prog).parse_args(argv)
    if args.settings:
        settings = tuple(filter(None, (s.strip() for s in args.settings.split(","))))
    else:
        settings = QUICK_SETTINGS if args.quick else tuple(SETTINGS)
    for setting in settings:
        env_for(setting)  # unknown names fail before any episode
    instances = args.instances if args.instances is not None else (QUICK_INSTANCES if args.quick else SUITE_SIZE)
    start = time.perf_counter()
    with tables_to(args.out):
        episodes = play_baselines(settings, instances, workers=args.workers, progress=not args.quiet)
        table = print_table(episodes)
        print(f"\n{len(settings)} setting(s) x {instances} instance(s) x {len(BASELINES)} agents; "
              f"{time.perf_counter() - start:.0f} s")
    if args.out:
        write_atomic(Path(args.out) / "episodes.csv", episodes.to_csv(index=False))
        write_atomic(Path(args.out) / "table7.csv", table.to_csv(index=False))
    if args.json:
        output = {"episodes": episodes.to_dict(orient="records"), "table": table.to_dict(orient="records")}
        write_atomic(args.json, json.dumps(output, indent=1, default=str))


if __name__ == "__main__":
    main()
