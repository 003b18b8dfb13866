"""Heuresis environment timings: reset after cache warm-up (goal < 50 ms), a KCI ``ci_test``, one
step of every tool.

The first pass over the instances fills the on-disk cache (PC-KCI per instance; the menu runs for
``run_algorithm``) and is reported separately; the timed resets then read the cache from disk in a
fresh env and from memory in the same one. Each tool is timed on its first call in a fresh
episode (``ci_test`` KCI also on a repeat, which reuses the tester's kernels).

Usage: python benchmarks/heuresis.py [--family wild] [--guided] [--instances 3] [--repeats 5] [--d 10] [--n 600]
"""

from __future__ import annotations

import argparse
import statistics
import time

from causal_gym.envs.heuresis import env as env_module
from causal_gym.envs.heuresis.env import HeuresisEnv

CALLS = [
    ("summarize", {}),
    ("ci_test", {"x": "X0", "y": "X1", "cond": ["X2", "X3"], "test": "fisherz"}),
    ("ci_test", {"x": "X0", "y": "X1", "cond": ["X2", "X3"], "test": "kci"}),
    ("ci_test", {"x": "X0", "y": "X1", "cond": ["X2", "X3"], "test": "kci"}),
    ("stability", {"x": "X0", "y": "X1", "cond": ["X2"], "test": "kci"}),
    ("fit_parents", {"x": "X0", "cond": ["X1", "X2", "X3"]}),
    ("probe_direction", {"x": "X0", "y": "X1"}),
    ("run_algorithm", {"algorithm": "A"}),
    ("run_code", {"code": "print(np.corrcoef(X.T).round(2)[0])"}),
    ("set_edge", {"x": "X0", "y": "X1", "relation": "none"}),
    ("submit", {}),
]


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:9.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--family", default="wild")
    parser.add_argument("--guided", action="store_true")
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    args = parser.parse_args()
    kwargs = {"family": args.family, "guided": args.guided, "d": args.d, "n": args.n,
              "budgets": {"algorithm_calls": None, "tests": None}}

    env = HeuresisEnv(**kwargs)
    start = time.perf_counter()
    for k in range(args.instances):
        env.reset(seed=k, options={"instance": k})
        env.step(env.parse_tool_call("run_algorithm", {"algorithm": "A"}))
    warm = time.perf_counter() - start

    from_disk, from_memory = [], []
    for _ in range(args.repeats):
        env_module.load_instance.cache_clear()
        fresh = HeuresisEnv(**kwargs)
        for k in range(args.instances):
            t = time.perf_counter()
            fresh.reset(seed=k, options={"instance": k})
            from_disk.append(time.perf_counter() - t)
            t = time.perf_counter()
            fresh.reset(seed=k, options={"instance": k})
            from_memory.append(time.perf_counter() - t)

    print(f"Heuresis {args.family}{' guided' if args.guided else ''}, d={args.d}, n={args.n}")
    print(f"{'warm-up (' + str(args.instances) + ' instances, PC-KCI + one menu run each)':<52}{_ms(warm)}")
    print(f"{'reset, instance from the disk cache (median)':<52}{_ms(statistics.median(from_disk))}   goal < 50 ms")
    print(f"{'reset, instance in memory (median)':<52}{_ms(statistics.median(from_memory))}")
    print()
    print(f"{'tool (first call in a fresh episode)':<52}{'median':>12}  over {args.repeats} episodes")
    times: dict[int, list[float]] = {k: [] for k in range(len(CALLS))}
    for repeat in range(args.repeats):
        episode = HeuresisEnv(**kwargs)
        k = repeat % args.instances  # the warm-up's seed: run_algorithm's "A" is already cached
        episode.reset(seed=k, options={"instance": k})
        for k, (name, arguments) in enumerate(CALLS):
            action = episode.parse_tool_call(name, arguments)
            t = time.perf_counter()
            obs, *_ = episode.step(action)
            times[k].append(time.perf_counter() - t)
            if not obs["last_ok"]:
                raise RuntimeError(f"{name} failed: {obs['last_result']}")
    seen: set[str] = set()
    for k, (name, arguments) in enumerate(CALLS):
        label = name + (f" ({arguments['test']})" if "test" in arguments else "")
        label += " repeat" if label in seen else ""
        seen.add(label)
        print(f"{label:<52}{_ms(statistics.median(times[k]))}")


if __name__ == "__main__":
    main()
