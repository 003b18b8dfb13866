"""Env steps per second of the intervention-design envs, posterior off and on, against CartPole in the same run.

Configurations (each timed for ``--seconds`` after a warm-up, ``--repeats`` rounds visiting them
in turn, the median reported; actions are drawn before timing, so only the env is measured):

- ``CartPole-v1``: one ``gym.make`` env (the reference: Gymnasium's cheapest classic env);
- ``design single, posterior on``: ``gym.make("InterventionDesign-lg10-v0")`` (dense reward:
  BGe scores and Koivisto's DP after every step);
- ``design vector B, posterior off / on``: ``gym.make_vec(..., num_envs=B,
  vectorization_mode="vector_entry_point")`` with ``reward="none"`` / ``"dense"``; a vector step
  counts ``B`` env steps, resets (every ``budget`` steps) included.

Goals of issue 15: >= 50,000 env-steps/s on one core with the posterior off; the posterior <=
2 ms per env-step at d = 10. The table prints env-steps/s, microseconds per env-step and the
ratio to CartPole.

Usage: python benchmarks/design_speed.py [--seconds 2] [--repeats 3] [--batch 256] [--posterior-batch 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)

ENV_ID = "InterventionDesign-lg10-v0"


def single(env_id: str, **kwargs) -> Callable[[float], float]:
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(1000)]

    def run(seconds: float) -> float:
        env.reset(seed=0)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in actions[:100]:
                _, _, terminated, truncated, _ = env.step(a)
                steps += 1
                if terminated or truncated:
                    env.reset()
        return steps / (time.perf_counter() - start)

    return run


def vector(batch: int, reward: str) -> Callable[[float], float]:
    env = gym.make_vec(ENV_ID, num_envs=batch, vectorization_mode="vector_entry_point", reward=reward)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(20)]

    def run(seconds: float) -> float:
        env.reset(seed=0)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in actions:
                env.step(a)
                steps += batch
        return steps / (time.perf_counter() - start)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--posterior-batch", type=int, default=16)
    args = parser.parse_args()
    configs = {
        "CartPole-v1 (single)": single("CartPole-v1"),
        "design single, posterior on": single(ENV_ID),
        f"design vector B={args.batch}, posterior off": vector(args.batch, "none"),
        f"design vector B={args.posterior_batch}, posterior on": vector(args.posterior_batch, "dense"),
    }
    for run in configs.values():
        run(0.5)  # warm-up
    rates: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(args.repeats):
        for name, run in configs.items():
            rates[name].append(run(args.seconds))
    reference = statistics.median(rates["CartPole-v1 (single)"])
    print(f"{'configuration':<40}{'env-steps/s':>14}{'us/env-step':>14}{'vs CartPole':>13}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:<40}{rate:14,.0f}{1e6 / rate:14.1f}{rate / reference:13.2f}")
    print(f"(median of {args.repeats} rounds of {args.seconds:g} s; numpy {np.__version__}, one BLAS thread)")


if __name__ == "__main__":
    main()
