"""The intervention-design results table from per-episode CSVs: means and paired differences with 95% intervals.

Reads CSVs (or ``.csv.gz``) in the format of ``examples/design_baselines.py`` (``env_id``, ``agent``, ``instance``, the
scores, ``evaluations``; optionally ``setting``, which then names the setting instead of the id),
as written by that script, ``examples/train_design_sb3.py --evaluate``, ``examples/train_design_mix.py
--evaluate`` and ``examples/train_design_caasl.py --evaluate``. Agents named ``<name>-seed<k>`` are
learned runs: their row is the per-instance mean over the seeds (the seeds' own means in brackets
after the name), so its interval is over SCMs; ``--per-seed`` gives each seed its own row instead. Per setting and agent: the mean return of the chosen
``--metric`` (``gain``: the ``"confidence"`` reward's return; ``truth_gain``: CAASL's ``"truth"``;
``information_gain``), its 95% bootstrap interval, the posterior evaluations per decision, and the
paired difference against each ``--versus`` agent (same instances). Only instances every listed
agent played are kept, and the table says how many.

Usage::

    python examples/design_table.py runs/table/baselines.csv runs/table/shipped/eval.csv \\
        --versus round-robin uncertainty greedy-168 --out table.md
"""

from __future__ import annotations

import argparse
import csv
import gzip
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from causal_gym.metrics import bootstrap_interval, paired_bootstrap

SEED = re.compile(r"^(?P<group>.+)-seed(?P<seed>\d+)$")


def load(paths: list[str]) -> dict[str, dict[str, dict[int, dict[str, float]]]]:
    """``table[setting][agent][instance]`` -> the row's numbers."""
    table: dict[str, dict[str, dict[int, dict[str, float]]]] = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as handle:
            for row in csv.DictReader(handle):
                where = row.get("setting") or row["env_id"]
                numbers = {k: float(v) for k, v in row.items() if k not in ("env_id", "setting", "agent", "instance")}
                table[where][row["agent"]][int(row["instance"])] = numbers
    return table


def grouped(agents: dict[str, dict[int, dict[str, float]]], metric: str, budget: int, merge_seeds: bool = True
            ) -> dict[str, tuple[dict[int, float], float, list[float]]]:
    """Per agent (learned seeds merged unless ``merge_seeds`` is false): per-instance metric, evaluations per
    decision and the seeds' means.

    Decisions per episode: a row's ``decisions`` column, else ``budget``.
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for agent in agents:
        match = SEED.match(agent) if merge_seeds else None
        groups[match["group"] if match else agent].append(agent)
    out = {}
    for group, members in groups.items():
        common = set.intersection(*(set(agents[a]) for a in members))
        values = {k: float(np.mean([agents[a][k][metric] for a in members])) for k in common}
        evaluations = float(np.mean([agents[a][k].get("evaluations", 0.0) / agents[a][k].get("decisions", budget)
                                     for a in members for k in common]))
        seed_means = [float(np.mean([agents[a][k][metric] for k in common])) for a in members] if len(members) > 1 else []
        out[group] = (values, evaluations, seed_means)
    return out


def cell(mean: float, low: float, high: float, sign: bool = False) -> str:
    fmt = "{:+.2f}" if sign else "{:.2f}"
    return f"{fmt.format(mean)} [{fmt.format(low)}, {fmt.format(high)}]"


def expand(agent: str, groups: Mapping[str, object]) -> list[str]:
    """The rows ``--agents`` names by ``agent``: itself, or with ``--per-seed`` its learned seeds (``<agent>-seed<k>``)."""
    if agent in groups:
        return [agent]
    seeds = [g for g in groups if (match := SEED.match(g)) and match["group"] == agent]
    return sorted(seeds, key=lambda g: int(SEED.match(g)["seed"]))  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--metric", default="gain")
    parser.add_argument("--versus", nargs="+", default=["round-robin", "uncertainty", "greedy-168"])
    parser.add_argument("--budget", type=int, default=3,
                        help="decisions per episode where a CSV has no decisions column (evaluations are per episode)")
    parser.add_argument("--agents", nargs="+", default=None, help="rows in this order (default: all); with --per-seed a learned name lists its seeds")
    parser.add_argument("--per-seed", action="store_true", help="one row per learned seed, not their per-SCM mean")
    parser.add_argument("--out", default=None, help="also write the markdown here")
    args = parser.parse_args()
    lines = []
    for setting, agents in sorted(load(args.csv).items()):
        groups = grouped(agents, args.metric, args.budget, merge_seeds=not args.per_seed)
        order = [row for a in (args.agents or sorted(groups)) for row in expand(a, groups)]
        versus = [v for v in args.versus if v in groups]
        common = sorted(set.intersection(*(set(groups[a][0]) for a in order))) if order else []
        if not common:
            continue
        lines += [f"\n**{setting}** ({len(common)} test SCMs, instances {common[0]}..{common[-1]}; "
                  f"return = `{args.metric}`, mean [95% bootstrap interval])\n",
                  "| agent | evaluations / decision | return | " + " | ".join(f"− {v}" for v in versus) + " |",
                  "|---|---|---|" + "---|" * len(versus)]
        for agent in order:
            values, evaluations, seed_means = groups[agent]
            x = np.array([values[k] for k in common])
            name = agent + (f" ({len(seed_means)} seeds: {', '.join(f'{m:.2f}' for m in seed_means)})"
                            if seed_means else "")
            diffs = []
            for other in versus:
                if other == agent:
                    diffs.append("")
                    continue
                y = np.array([groups[other][0][k] for k in common])
                diffs.append(cell(*paired_bootstrap(x, y), sign=True))
            lines.append(f"| {name} | {evaluations:.0f} | {cell(*bootstrap_interval(x))} | "
                         + " | ".join(diffs) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text.lstrip() + "\n")


if __name__ == "__main__":
    main()
