"""Env steps per second of the intervention-design envs, posterior off and on, against CartPole in the same run.

Configurations (each timed for ``--seconds`` after a warm-up, ``--repeats`` rounds visiting them
in turn, the median reported; actions are drawn before timing, so only the env is measured):

- ``CartPole-v1``: one ``gym.make`` env (the reference: Gymnasium's cheapest classic env);
- ``design single, reward on``: ``gym.make("InterventionDesign-lg10-v0")`` (the ``"confidence"``
  reward paid every step: BGe scores, Koivisto's DP, the entropy and the highest-scoring DAG after
  every step, the trajectory and the scores at the end);
- ``design vector B, posterior off / reward on``: ``gym.make_vec(..., num_envs=B,
  vectorization_mode="vector_entry_point")`` with ``reward="none"`` / ``"confidence"``; a vector step
  counts ``B`` env steps, resets (every ``budget`` steps) and final scores included;
- ``... reward on, sparse``: ``sparse=True``, the same reward paid once at the end (the posterior is
  computed at the start and the end of an episode only);
- ``design vector B=4, d=20 capped, reward on``: ``InterventionDesign-lg20-T3-v0`` (at most 4
  parents; about a second per posterior), timed for one episode of 3 steps;
- ``... reward on, log-space DP``: the same with every posterior forced through the log-space DP
  (the path before the linear-space one of :func:`~causal_gym.stats.graph_posterior.edge_posterior`,
  and its fallback): the reference of the linear DP, in the same run. It shares the compiled local
  scores and subset sums, so the ratio is the linear DP's share of the speed-up, not all of it;
  the whole is measured against an older checkout run the same way (README).

The headline is the reward-on rate at ``B = --posterior-batch``; issue 31's goal is >= 5,000
env-steps/s on one core. The table prints env-steps/s, microseconds per env-step, the ratio to
CartPole, and env-steps per CPU-second of this process (``time.process_time``): on a shared
machine the wall-clock rates follow the load of the moment, the CPU-time ones much less.

Usage: python benchmarks/design_speed.py [--seconds 2] [--repeats 3] [--batch 256] [--posterior-batch 16] [--d20]
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
from causal_gym.stats import graph_posterior  # noqa: E402

ENV_ID = "InterventionDesign-lg10-v0"


def single(env_id: str, **kwargs) -> Callable[[float], tuple[float, float]]:
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(1000)]

    def run(seconds: float) -> tuple[float, float]:
        env.reset(seed=0)
        steps, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds:
            for a in actions[:100]:
                _, _, terminated, truncated, _ = env.step(a)
                steps += 1
                if terminated or truncated:
                    env.reset()
        return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)

    return run


def vector(batch: int, reward: str, env_id: str = ENV_ID, **kwargs) -> Callable[[float], tuple[float, float]]:
    env = gym.make_vec(env_id, num_envs=batch, vectorization_mode="vector_entry_point", reward=reward, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(20)]

    def run(seconds: float) -> tuple[float, float]:
        env.reset(seed=0)
        steps, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds:
            for a in actions:
                env.step(a)
                steps += batch
                if time.perf_counter() - start >= seconds:
                    break
        return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)

    return run


class _LogSpaceOnly:
    """While active, every posterior takes the log-space DP (the path before the linear one): the in-run reference."""

    def __enter__(self) -> None:
        self._linear = graph_posterior._linear_dp

        def declined(beta: np.ndarray, d: int, work: bool = False, columns: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            m = beta.shape[0]
            return np.empty(beta.shape), np.empty(m), np.zeros(m, dtype=bool), np.empty(m)

        graph_posterior._linear_dp = declined

    def __exit__(self, *exc: object) -> None:
        graph_posterior._linear_dp = self._linear


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--posterior-batch", type=int, default=16)
    parser.add_argument("--d20", action="store_true", help="also time the d = 20 capped env (slow: ~10 s a round)")
    args = parser.parse_args()
    reward_on = f"design vector B={args.posterior_batch}, reward on"
    log_only = f"design vector B={args.posterior_batch}, reward on, log-space DP"
    configs = {
        "CartPole-v1 (single)": single("CartPole-v1"),
        "design single, reward on": single(ENV_ID),
        f"design vector B={args.batch}, posterior off": vector(args.batch, "none"),
        reward_on: vector(args.posterior_batch, "confidence"),
        f"design vector B={4 * args.posterior_batch}, reward on": vector(4 * args.posterior_batch, "confidence"),
        log_only: vector(args.posterior_batch, "confidence"),
        f"design vector B={4 * args.posterior_batch}, reward on, sparse": vector(4 * args.posterior_batch, "confidence",
                                                                                 sparse=True),
    }
    if args.d20:
        configs["design vector B=4, d=20 capped, reward on"] = vector(4, "confidence", "InterventionDesign-lg20-T3-v0")

    def timed(name: str, seconds: float) -> tuple[float, float]:
        if name != log_only:
            return configs[name](seconds)
        with _LogSpaceOnly():
            return configs[name](seconds)

    for name in configs:
        timed(name, 0.5)  # warm-up
    rates: dict[str, list[float]] = {name: [] for name in configs}
    cpu_rates: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(args.repeats):
        for name in configs:
            wall, cpu = timed(name, args.seconds)
            rates[name].append(wall)
            cpu_rates[name].append(cpu)
    reference = statistics.median(rates["CartPole-v1 (single)"])
    headline = statistics.median(rates[reward_on])
    print(f"reward on (confidence every step, B={args.posterior_batch}, d=10): {headline:,.0f} env-steps/s = "
          f"{headline / reference:.3f}x CartPole; {headline / statistics.median(rates[log_only]):.2f}x the log-space "
          f"DP; {statistics.median(cpu_rates[reward_on]):,.0f} per CPU-second; goal of issue 31: 5,000\n")
    print(f"{'configuration':<48}{'env-steps/s':>14}{'us/env-step':>14}{'vs CartPole':>13}{'per CPU-s':>12}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:<48}{rate:14,.0f}{1e6 / rate:14.1f}{rate / reference:13.3f}{statistics.median(cpu_rates[name]):12,.0f}")
    print(f"(median of {args.repeats} rounds of {args.seconds:g} s; numpy {np.__version__}, one BLAS thread)")


if __name__ == "__main__":
    main()
