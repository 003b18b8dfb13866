"""The intervention-design baselines on held-out SCMs, with 95% intervals.

Plays each baseline of :mod:`causal_gym.envs.design.baselines` on instances ``0 .. N-1`` of the ``test``
suite of each env id, and prints per (id, agent): the return (gain in the posterior's expected
correct entries over the observational batch), the final expected SHD, the posterior's edge
AUPRC and the best DAG's F1, each as a mean with a 95% percentile-bootstrap interval over
instances, and the paired difference of the return against every other agent's (same
instances, same exogenous noise: the env draws it before any action). Per-episode rows go to
``--out`` (CSV) so later runs can be paired with them. With both ``greedy`` and ``round-robin``
played, a last table gives per id greedy - round-robin (paired interval) and its share of each
one's return: how much choosing the experiments is worth in that setting.

Usage::

    python examples/design_baselines.py --instances 200 --workers 2 --out design_baselines.csv
    python examples/design_baselines.py --ids InterventionDesign-sf10-v0 --agents random round-robin
    python examples/design_baselines.py --ids InterventionDesign-lg10-T3-v0 InterventionDesign-lg10-T5-v0 \
        InterventionDesign-lg10-T5-bounded-v0 --agents random round-robin greedy --instances 200 --workers 2

``greedy-cheap`` is the greedy designer at its lowest compute (one posterior-predictive sample, each
node at ``+value_bound``, no "observe": ``d`` posterior evaluations per decision), the closest a
lookahead comes to a learned policy's single forward pass. ``greedy-11``, ``greedy-22``,
``greedy-88`` and ``greedy-168`` are the greedy designer at those posterior evaluations per decision
at d = 10 (1, 2 and 8 samples of each node at ``+value_bound`` or "observe"; 8 samples of each node at
``+-value_bound`` or "observe"); ``greedy`` takes ``--greedy-samples`` and ``--greedy-grid``.
``uncertainty`` intervenes on the not-yet-targeted node whose edges the posterior is least sure of
(it reads the posterior the env shows: no evaluation of its own); ``uncertainty-cost`` weighs that score
against the node's cost and observes where no node is worth its cost (``uncertainty-cost-0.5``: with
``settled=0.5`` in place of the default); ``uncertainty-shortlist2`` is the greedy lookahead over the
uncertainty heuristic's 2 best nodes (at ``+value_bound``), its samples set so a decision costs at most a
tenth of full greedy's ``(2 d + 1) x 8`` evaluations (the control of a learned policy that shortlists
for the lookahead, ``train_design_mix.py --shortlist``). Every agent plays the env with
``observe_posterior=True``, which changes nothing but the extra key of the observation.

Each row holds the return of every reward mode (``gain``: ``"confidence"``; ``truth_gain``: CAASL's
``"truth"``; ``information_gain``), whatever the env's own reward: they are all in the final scores.
``--first K`` plays instances ``K .. K + N - 1`` (default 0) of ``--split`` (``test``; ``dev`` to choose
variants); ``--env-kwargs`` overrides the ids' keywords (a ``setting`` column names the result).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.baselines import (  # noqa: E402
    CostAwareUncertaintyDesigner,
    GreedyDesigner,
    ObservationalDesigner,
    RandomDesigner,
    RoundRobinDesigner,
    UncertaintyDesigner,
    shortlist_samples,
)
from causal_gym.harness.rollout import rollout  # noqa: E402
from causal_gym.metrics import bootstrap_interval, paired_bootstrap  # noqa: E402

METRICS = ("gain", "net_gain", "truth_gain", "information_gain", "expected_shd", "auprc", "map_f1")
GREEDY = {"greedy-cheap": (1, (1.0,), False), "greedy-11": (1, (1.0,), True), "greedy-22": (2, (1.0,), True),
          "greedy-88": (8, (1.0,), True), "greedy-168": (8, (-1.0, 1.0), True)}
"""Named greedy designers: (samples, value grid, observe); the name is its posterior evaluations per decision at d = 10."""


def make_agent(name: str, greedy_samples: int, greedy_grid: tuple[float, ...], d: int = 10) -> Any:
    if name == "random":
        return RandomDesigner(seed=0)
    if name == "round-robin":
        return RoundRobinDesigner()
    if name == "observe":
        return ObservationalDesigner()
    if name == "greedy":
        return GreedyDesigner(samples=greedy_samples, value_grid=greedy_grid)
    if name == "uncertainty":
        return UncertaintyDesigner()
    if name == "uncertainty-cost":
        return CostAwareUncertaintyDesigner()
    if name.startswith("uncertainty-cost-"):
        try:
            settled = float(name.removeprefix("uncertainty-cost-"))
        except ValueError:
            raise ValueError(f"unknown agent {name!r}: uncertainty-cost-<share settled per row>, e.g. uncertainty-cost-0.6") from None
        return CostAwareUncertaintyDesigner(settled=settled)
    if name.startswith("uncertainty-shortlist"):
        try:
            shortlist = int(name.removeprefix("uncertainty-shortlist"))
        except ValueError:
            raise ValueError(f"unknown agent {name!r}: uncertainty-shortlist<M>, e.g. uncertainty-shortlist2") from None
        return GreedyDesigner(samples=shortlist_samples(d, shortlist), value_grid=(1.0,), proposer=UncertaintyDesigner(),
                              shortlist=shortlist)
    if name in GREEDY:
        samples, grid, observe = GREEDY[name]
        return GreedyDesigner(samples=samples, value_grid=grid, observe=observe)
    raise ValueError(f"unknown agent {name!r}")


def play(job: tuple[str, str, list[int], int, tuple[float, ...], str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Play ``agent`` on instances of ``env_id``; one row per episode."""
    env_id, name, instances, greedy_samples, greedy_grid, split, env_kwargs = job
    env = gym.make(env_id, observe_posterior=True, **env_kwargs)
    setting = env.unwrapped.setting.name if env_kwargs else ""  # the id names a registered setting
    decisions = env.unwrapped.setting.budget
    agent = make_agent(name, greedy_samples, greedy_grid, env.unwrapped.setting.d)
    rows = []
    for k in instances:
        start = time.perf_counter()
        record = rollout(env, agent, options={"split": split, "instance": k})
        scores = record.final_info["scores"]
        rows.append({"env_id": env_id, "setting": setting, "agent": name, "instance": k, **{m: round(scores[m], 6) for m in METRICS},
                     "seconds": time.perf_counter() - start, "decisions": decisions,
                     "evaluations": getattr(agent, "evaluations", 0)})
        if hasattr(agent, "evaluations"):
            agent.evaluations = 0
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", nargs="+", default=["InterventionDesign-lg10-v0"])
    parser.add_argument("--agents", nargs="+", default=["observe", "random", "round-robin", "greedy"])
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="the first instance")
    parser.add_argument("--split", default="test", choices=["dev", "test"], help="dev: to choose variants, test: to report")
    parser.add_argument("--greedy-samples", type=int, default=8)
    parser.add_argument("--greedy-grid", type=float, nargs="+", default=[-1.0, 1.0],
                        help="the greedy designer's values, as fractions of value_bound")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--env-kwargs", type=json.loads, default={},
                        help='JSON keywords for every id, e.g. \'{"d": 14, "expected_degree": 4}\' (rows name the setting)')
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    agents = list(args.agents)
    chunks = np.array_split(args.first + np.arange(args.instances), max(args.workers, 1) * 4)
    jobs = [(env_id, name, [int(k) for k in chunk], args.greedy_samples, tuple(args.greedy_grid), args.split,
             args.env_kwargs)
            for env_id in args.ids for name in agents for chunk in chunks if chunk.size]
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []

    def keep(part: list[dict[str, Any]]) -> None:  # each finished job goes to --out at once
        rows.extend(part)
        if args.out:
            with open(args.out, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)

    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            for future in as_completed([pool.submit(play, job) for job in jobs]):
                keep(future.result())
    else:
        for job in jobs:
            keep(play(job))
    wall = time.perf_counter() - start
    for env_id in args.ids:
        print(f"\n{env_id}: {args.split} instances {args.first}..{args.first + args.instances - 1}, mean [95% bootstrap interval]")
        header = f"{'agent':<12}" + "".join(f"{m:>24}" for m in METRICS) + f"{'evals/decision':>16}{'s/episode':>11}"
        print(header)
        by_agent = {}
        for name in agents:
            mine = sorted((r for r in rows if r["env_id"] == env_id and r["agent"] == name), key=lambda r: r["instance"])
            by_agent[name] = mine
            cells = []
            for m in METRICS:
                values = np.array([r[m] for r in mine], dtype=float)
                values = values[np.isfinite(values)]
                mean, low, high = bootstrap_interval(values)
                cells.append(f"{mean:8.3f} [{low:6.3f}, {high:6.3f}]")
            budget = args.env_kwargs.get("budget", gym.spec(env_id).kwargs.get("budget", 10))
            evals = np.mean([r["evaluations"] for r in mine]) / budget
            seconds = np.mean([r["seconds"] for r in mine])
            print(f"{name:<12}" + "".join(f"{c:>24}" for c in cells) + f"{evals:16.0f}{seconds:11.2f}")
        print("paired difference of the return, net of node costs (row - column):")
        for a in agents:
            for b in agents:
                if a < b:
                    diff = paired_bootstrap(np.array([r["net_gain"] for r in by_agent[a]]),
                                            np.array([r["net_gain"] for r in by_agent[b]]))
                    print(f"  {a} - {b}: {diff[0]:+.3f} [{diff[1]:+.3f}, {diff[2]:+.3f}]")
    if {"greedy", "round-robin"} <= set(agents):
        print("\ngreedy - round-robin: paired mean [95% bootstrap interval], as a share of each one's return")
        print(f"{'id':<40}{'T':>4}{'|value|':>8}{'round-robin':>12}{'greedy':>8}{'greedy - rr':>26}"
              f"{'% greedy':>10}{'% rr':>7}")
        for env_id in args.ids:
            gains = {name: np.array([r["net_gain"] for r in sorted((r for r in rows if r["env_id"] == env_id
                                                                  and r["agent"] == name), key=lambda r: r["instance"])])
                     for name in ("greedy", "round-robin")}
            diff = paired_bootstrap(gains["greedy"], gains["round-robin"])
            kwargs = gym.spec(env_id).kwargs
            greedy, robin = gains["greedy"].mean(), gains["round-robin"].mean()
            print(f"{env_id:<40}{kwargs.get('budget', 10):>4}{kwargs.get('value_bound', 5.0):>8g}{robin:>12.2f}"
                  f"{greedy:>8.2f}{f'{diff[0]:+.2f} [{diff[1]:+.2f}, {diff[2]:+.2f}]':>26}"
                  f"{100 * diff[0] / greedy:>9.0f}%{100 * diff[0] / robin:>6.0f}%")
    print(f"\nwall time {wall:.0f} s")


if __name__ == "__main__":
    main()
