"""CausalArena synthetic generator: rejection table over a sample of the pool, generation and
sampling times.

For every graph family x dimension block of the 1,000-configuration pool, ``--per-block``
configurations (positions 0, 7, 14, 1, ...: a mix of clean, single, paired and dependent-root
slots; 20 = the whole pool) are built with their audits (resampling with the next seed on failure), and the counts of failed checks are printed
(:func:`causal_gym.envs.arena.pool.rejection_table`). Then one d = 100 SCM per graph family is
timed: ``generate`` and ``sample(1000)``, with and without the observation stressors (and high
noise), against a linear-Gaussian SCM on the same graph in the same process.

Usage: python benchmarks/arena_generator.py [--per-block 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

from causal_gym.envs.arena import pool
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES
from causal_gym.envs.arena.synthetic import ArenaConfig, generate
from causal_gym.scm import SCM

OBSERVATION_STRESSORS = ("high_noise", "feature_warping", "outliers", "missingness", "feature_corruption")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-block", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    # positions 0, 7, 14, 1, 8, ... of each block: clean, paired, single, ... and dependent roots
    positions = [(7 * i) % pool.PER_BLOCK for i in range(min(args.per_block, pool.PER_BLOCK))]
    table: Counter[str] = Counter()
    per_d = {}
    start = time.perf_counter()
    for d in pool.DIMENSIONS:  # one pass per d, so each configuration is built once
        part = pool.rejection_table(pool.pool_indices(f, d)[p] for f in GRAPH_FAMILIES for p in positions)
        per_d[d] = (part["attempts"], part["configs"])
        table.update(part)
    elapsed = time.perf_counter() - start
    configs = table["configs"]
    print(f"rejection table: {configs} pool configurations ({len(positions)} per family x d block), {elapsed:.1f} s")
    for key in sorted(table, key=lambda k: (k not in ("configs", "attempts", "rejected"), k)):
        print(f"  {key:36s} {table[key]:6d}")
    print("  attempts per accepted configuration by d: " + ", ".join(f"{d}: {a / c:.2f}" for d, (a, c) in per_d.items()))

    print(f"\nd = 100, n = 1000 (median of {args.repeats} samples); ratio = arena sample / linear-Gaussian SCM")
    print(f"  {'family':22s} {'generate':>9s} {'sample':>9s} {'+stressors':>11s} {'linear':>8s} {'ratio':>6s}")
    for family in GRAPH_FAMILIES:
        t0 = time.perf_counter()
        clean = generate(ArenaConfig(family, 100, seed=1))
        build = time.perf_counter() - t0
        stressed = generate(ArenaConfig(family, 100, seed=1, stressors=OBSERVATION_STRESSORS))
        linear = SCM.random(clean.graph, "linear", rng=0)
        sample, with_stressors, reference = (_median_time(m.sample, args.repeats) for m in (clean, stressed, linear))
        print(
            f"  {family:22s} {build:8.2f}s {1000 * sample:7.1f}ms {1000 * with_stressors:9.1f}ms "
            f"{1000 * reference:6.1f}ms {sample / reference:6.1f}"
        )


def _median_time(sample, repeats: int) -> float:
    runs = []
    for r in range(repeats):
        t0 = time.perf_counter()
        sample(1000, rng=r)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


if __name__ == "__main__":
    main()
