"""Reset latency on the Heuresis train stream, with and without the background prefetcher.

Each episode is stood in for by ``--episode-seconds`` of idle time (an LLM turn loop or an RL
rollout waiting on its policy); every reset meets a fresh train instance, so without the
prefetcher each one runs PC-KCI. Both runs use their own empty cache and the same seed (the same
instances). The first reset has nothing prefetched and is reported apart.

Usage: python benchmarks/heuresis_prefetch.py [--family wild] [--episodes 6] [--episode-seconds 10] [--d 10] [--n 600]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import gymnasium as gym

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym import _cache
from causal_gym.envs.heuresis.env import load_instance


def latencies(family: str, prefetch: int, episodes: int, pause: float, d: int, n: int) -> list[float]:
    os.environ[_cache.CACHE_ENV] = tempfile.mkdtemp(prefix="prefetch-bench-")
    load_instance.cache_clear()
    env = gym.make(f"Heuresis-{family}-v0", split="train", d=d, n=n, prefetch=prefetch)
    out = []
    for k in range(episodes):
        start = time.perf_counter()
        env.reset(seed=0 if k == 0 else None)
        out.append(time.perf_counter() - start)
        time.sleep(pause)
    env.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="wild")
    parser.add_argument("--episodes", type=int, default=6)
    parser.add_argument("--episode-seconds", type=float, default=10.0)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    args = parser.parse_args()
    print(f"Heuresis-{args.family} train stream, d={args.d}, n={args.n}, {args.episodes} resets, "
          f"{args.episode_seconds:g} s per episode")
    rows = {}
    for prefetch in (0, 2):
        times = latencies(args.family, prefetch, args.episodes, args.episode_seconds, args.d, args.n)
        rows[prefetch] = statistics.median(times[1:])
        print(f"prefetch={prefetch}: first reset {times[0]:.2f} s; later resets median {rows[prefetch]:.3f} s, "
              f"max {max(times[1:]):.3f} s")
    print(f"steady-state reset latency, prefetch 2 vs off: {rows[2] / rows[0]:.3f}x "
          f"({rows[0] / max(rows[2], 1e-9):.0f}x faster)")


if __name__ == "__main__":
    main()
