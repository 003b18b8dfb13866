"""Env steps per second of the RL-ready envs: 1, 2 and 4 envs, synchronous vs asynchronous vector envs.

Two workloads, each built with ``gym.make_vec(id, num_envs, vectorization_mode=...)`` and the
SB3 wrappers of :mod:`causal_gym.envs.wrappers` applied to every sub-env:

- ``planner``: ``CausaLab-planner-4node-v0`` (3-step episodes; each ends with the estimator, the
  reactor prediction and the lab's scoring), uniformly random actions;
- ``heuresis``: ``Heuresis-lg-v0`` with ``d=5, n=200``, actions drawn uniformly from the
  :class:`~causal_gym.envs.wrappers.FlattenDictActions` catalogue restricted to ``--heuresis-tools``
  (by default the cheap ones: edits, Fisher-z/KCI tests, summaries, submit; calls the budgets
  refuse are cheap errors). The PC-KCI references of the 32 test instances are computed (and
  disk-cached) before timing.

The planner also runs ``batched`` (``vectorization_mode="vector_entry_point"``:
:class:`~causal_gym.envs.causalab.planner_vector.CausaLabPlannerVectorEnv`, every episode in one
process, no wrappers) at ``--batched-envs`` episodes; its ratio is to the same single sync env.

Every configuration steps for ``--seconds`` after a one-second warm-up, in ``--repeats`` rounds
that visit the configurations in turn (so a change of machine load hits all of them alike); the
table gives the median env steps per second (all sub-envs together) and its ratio to the single
synchronous env of the same workload. Async sub-envs run in worker processes (one per env), so on
a machine with c free cores the ceiling of the ratio is about c.

Usage: python benchmarks/rl.py [--seconds 3] [--repeats 3] [--envs 1 2 4] [--batched-envs 16 64]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per process, as the vector workers

import gymnasium as gym  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.wrappers import DropText, FlatDictObservation, FlattenDictActions  # noqa: E402

HEURESIS = {"d": 5, "n": 200}
CHEAP_TOOLS = ("set_edge", "submit", "ci_test", "summarize")


def workloads(heuresis_tools: Sequence[str]) -> dict[str, tuple[str, dict[str, Any], list[Callable[[gym.Env], gym.Env]]]]:
    """Workload name -> (env id, env keyword arguments, wrappers applied to each sub-env)."""
    return {
        "planner": ("CausaLab-planner-4node-v0", {}, [FlatDictObservation]),
        "heuresis": ("Heuresis-lg-v0", HEURESIS,
                     [functools.partial(FlattenDictActions, tools=tuple(heuresis_tools)), DropText, FlatDictObservation]),
    }


def warm_heuresis_cache() -> None:
    """Compute the PC-KCI reference of every test instance once, so timing sees cached resets."""
    env = gym.make("Heuresis-lg-v0", **HEURESIS)
    for k in range(32):
        env.reset(seed=k, options={"instance": k})
    env.close()


def steps_per_second(env_id: str, kwargs: dict[str, Any], wrappers: list[Any], num_envs: int, mode: str,
                     seconds: float) -> float:
    if mode == "batched":
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)
    else:
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, wrappers=wrappers, **kwargs)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    try:
        for budget in (1.0, seconds):  # warm-up, then the timed run
            steps, start = 0, time.perf_counter()
            while time.perf_counter() - start < budget:
                envs.step(envs.action_space.sample())
                steps += num_envs
        return steps / (time.perf_counter() - start)
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per configuration and round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over all configurations")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--batched-envs", type=int, nargs="+", default=[16, 64],
                        help="episodes per batch of the workloads with a batched env")
    parser.add_argument("--workloads", nargs="+", default=["planner", "heuresis"], choices=["planner", "heuresis"])
    parser.add_argument("--heuresis-tools", nargs="+", default=list(CHEAP_TOOLS))
    args = parser.parse_args()
    if "heuresis" in args.workloads:
        warm_heuresis_cache()
    configs = [(name, n, mode) for name in args.workloads for n in args.envs for mode in ("sync", "async")]
    configs += [(name, n, "batched") for name in args.workloads for n in args.batched_envs
                if gym.spec(workloads(args.heuresis_tools)[name][0]).vector_entry_point]
    rates: dict[tuple[str, int, str], list[float]] = {c: [] for c in configs}
    print(f"cores: {os.cpu_count()}, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for _ in range(args.repeats):
        for name, n, mode in configs:
            env_id, kwargs, wrappers = workloads(args.heuresis_tools)[name]
            rates[(name, n, mode)].append(steps_per_second(env_id, kwargs, wrappers, n, mode, args.seconds))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'workload':<10} {'envs':>4} {'mode':<7} {'steps/s':>9} {'ratio':>6}   (median of {args.repeats})")
    for name, n, mode in configs:
        rate = statistics.median(rates[(name, n, mode)])
        reference = statistics.median(rates[(name, args.envs[0], "sync")])
        print(f"{name:<10} {n:>4} {mode:<7} {rate:>9.1f} {rate / reference:>6.2f}")


if __name__ == "__main__":
    main()
