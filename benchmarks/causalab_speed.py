"""Env steps per second of the CausaLab envs, against CartPole measured in the same process.

Workloads (one env each, built with ``gym.make``, so Gymnasium's default wrappers are included;
resets and the final scoring are part of the timed work, the agents' own thinking is not):

- ``cartpole``: ``CartPole-v1``, uniformly random actions (the reference);
- ``lab-random``: ``CausaLab-4node-v0`` on its train stream, a random typed action each step: a
  tool the mask allows, one of the episode's properties, a setpoint of the value grid, a
  frequency in 0..500 Hz, no hypothesis (what an RL policy over the typed action sends);
- ``lab-systematic``: ``CausaLab-4node-v0``, the ``causalab-systematic`` baseline's episodes
  (every call carries a DSL hypothesis; verify, enter the reactor, submit);
- ``planner-{3,4,5}``: ``CausaLab-planner-{n}node-v0``, uniformly random actions.

Each workload steps for ``--seconds`` after a short warm-up, in ``--repeats`` rounds that visit the
workloads in turn (so a change of machine load hits all of them alike); the table gives the median
steps per second and its ratio to CartPole's median. ``--against DIR`` also runs the same rounds,
interleaved, in a subprocess whose ``PYTHONPATH`` is ``DIR`` (another checkout, e.g. the main
branch before an optimisation), and prints the speed-up of this checkout over that one per
workload, both directly and as the ratio of the two CartPole-relative figures (which cancels the
difference in machine load between the two processes).

Usage: python benchmarks/causalab_speed.py [--seconds 2] [--repeats 3] [--against /path/to/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gymnasium as gym
import numpy as np

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.agents import task_spec
from causal_gym.envs.causalab.baselines import SystematicExperimenter

GRID = (0.0, 25.0, 50.0, 75.0, 100.0)


class _Clock:
    """Sums the time spent inside env calls."""

    def __init__(self) -> None:
        self.total = 0.0

    def __call__(self, fn: Callable, *args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        self.total += time.perf_counter() - start
        return out


def cartpole(seconds: float) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)
    clock, steps = _Clock(), 0
    while clock.total < seconds:
        _, _, terminated, truncated, _ = clock(env.step, env.action_space.sample())
        steps += 1
        if terminated or truncated:
            clock(env.reset)
    return steps / clock.total


def lab_random(seconds: float) -> float:
    env = gym.make("CausaLab-4node-v0")
    rng = np.random.default_rng(0)
    clock, steps, done, episode = _Clock(), 0, True, 0
    while clock.total < seconds:
        if done:
            _, info = clock(env.reset, seed=episode)
            episode += 1
        mask = info["action_mask"]
        action = {
            "tool": np.int64(rng.choice(np.flatnonzero(mask["tool"]))),
            "property": np.int64(rng.choice(np.flatnonzero(mask["property"]))),
            "value": np.array([rng.choice(GRID)]),
            "frequency": np.array([rng.uniform(0.0, 500.0)]),
            "hypothesis": "",
        }
        _, _, terminated, truncated, info = clock(env.step, action)
        steps += 1
        done = terminated or truncated
    return steps / clock.total


def lab_systematic(seconds: float) -> float:
    env = gym.make("CausaLab-4node-v0")
    clock, steps, episode = _Clock(), 0, 0
    while clock.total < seconds:
        observation, info = clock(env.reset, seed=episode)
        episode += 1
        agent = SystematicExperimenter()
        agent.reset(task_spec(env))
        done = False
        while not done:
            observation, _, terminated, truncated, info = clock(env.step, agent.act(observation, info))
            steps += 1
            done = terminated or truncated
    return steps / clock.total


def planner(n_nodes: int) -> Callable[[float], float]:
    def run(seconds: float) -> float:
        env = gym.make(f"CausaLab-planner-{n_nodes}node-v0")
        env.action_space.seed(0)
        clock, steps, done, episode = _Clock(), 0, True, 0
        while clock.total < seconds:
            if done:
                clock(env.reset, seed=episode)
                episode += 1
            _, _, terminated, truncated, _ = clock(env.step, env.action_space.sample())
            steps += 1
            done = terminated or truncated
        return steps / clock.total

    return run


WORKLOADS: dict[str, Callable[[float], float]] = {
    "cartpole": cartpole,
    "lab-random": lab_random,
    "lab-systematic": lab_systematic,
    **{f"planner-{n}": planner(n) for n in (3, 4, 5)},
}


def one_round(seconds: float) -> dict[str, float]:
    """Steps per second of every workload, after a warm-up of a tenth of ``seconds``."""
    out = {}
    for name, run in WORKLOADS.items():
        run(seconds / 10)
        out[name] = run(seconds)
    return out


def _other(checkout: str, seconds: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": checkout}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json", "--seconds", str(seconds)],
                          env=env, capture_output=True, text=True, check=True, cwd=checkout)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per workload and round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds")
    parser.add_argument("--against", help="another checkout to measure in interleaved rounds (its PYTHONPATH)")
    parser.add_argument("--json", action="store_true", help="one round, printed as JSON (used by --against)")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(one_round(args.seconds)))
        return
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for k in range(args.repeats):
        ours.append(one_round(args.seconds))
        if args.against:
            theirs.append(_other(args.against, args.seconds))
        print(f"round {k + 1}/{args.repeats} done", file=sys.stderr, flush=True)

    def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
        return {name: statistics.median(r[name] for r in rounds) for name in WORKLOADS}

    here = medians(ours)
    header = f"{'workload':16s} {'steps/s':>10s} {'x CartPole':>11s}"
    if theirs:
        there = medians(theirs)
        header += f" {'other steps/s':>14s} {'other x CP':>11s} {'speed-up':>9s} {'speed-up (CP-relative)':>23s}"
    print(header)
    for name in WORKLOADS:
        line = f"{name:16s} {here[name]:10.0f} {here[name] / here['cartpole']:11.4f}"
        if theirs:
            relative = (here[name] / here["cartpole"]) / (there[name] / there["cartpole"])
            line += (f" {there[name]:14.0f} {there[name] / there['cartpole']:11.4f} {here[name] / there[name]:9.2f}"
                     f" {relative:23.2f}")
        print(line)


if __name__ == "__main__":
    main()
