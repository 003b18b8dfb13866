"""What the design training scripts share: a batch of episodes played by a chooser, a learning-curve callback, CSV rows.

Example glue for ``train_design_sb3.py``, ``train_design_mix.py`` and ``train_design_caasl.py``
(run as scripts, their folder is on ``sys.path``, so they import this module by name); it is not
part of the library.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback


def play_batch(venv: Any, steps: int, choose: Callable[[Any, int], np.ndarray]) -> tuple[dict[str, np.ndarray], float]:
    """Play ``steps`` steps of ``venv`` (an SB3 vector env of the design adapters, with ``last_scores``), actions
    ``choose(observations, step)``; close it. Returns every episode's final scores and the CPU seconds of the choices."""
    obs = venv.reset()
    thinking = 0.0
    for step in range(steps):
        start = time.process_time()
        actions = choose(obs, step)
        thinking += time.process_time() - start
        obs, _, _, _ = venv.step(actions)
    venv.close()
    return dict(venv.last_scores), thinking


class Curve(BaseCallback):
    """Every ``every`` env steps a row of the learning curve, and the end of training past a time limit.

    A row is ``head``, then the env steps, wall and CPU seconds since the start, the mean return of
    the training episodes finished since the last row, then ``dev(model)`` (the dev numbers of the
    policy); it is appended to ``rows`` and handed to ``report``. Training stops after
    ``max_wall_s`` seconds of wall time or ``max_cpu_s`` of this process's CPU time (None: no limit).
    """

    def __init__(self, n_envs: int, every: int, head: dict[str, Any], dev: Callable[[BaseAlgorithm], dict[str, Any]],
                 rows: list[dict[str, Any]], report: Callable[[dict[str, Any]], None], *,
                 max_wall_s: float | None = None, max_cpu_s: float | None = None) -> None:
        super().__init__()
        self.every, self.head, self.dev, self.rows, self.report = every, head, dev, rows, report
        self.max_wall_s, self.max_cpu_s = max_wall_s, max_cpu_s
        self.next_at = 0
        self.returns: list[float] = []
        self.episode = np.zeros(n_envs)
        self.start_wall, self.start_cpu = time.perf_counter(), time.process_time()

    def _on_training_start(self) -> None:
        self.record()

    def _on_step(self) -> bool:
        self.episode += self.locals["rewards"]
        for k in np.flatnonzero(self.locals["dones"]):
            self.returns.append(float(self.episode[k]))
            self.episode[k] = 0.0
        if self.num_timesteps >= self.next_at:
            self.record()
        wall_ok = self.max_wall_s is None or time.perf_counter() - self.start_wall < self.max_wall_s
        cpu_ok = self.max_cpu_s is None or time.process_time() - self.start_cpu < self.max_cpu_s
        return wall_ok and cpu_ok

    def record(self) -> None:
        dev = self.dev(self.model)  # the seconds of the row include this evaluation
        row = {**self.head, "env_steps": self.num_timesteps, "wall_s": round(time.perf_counter() - self.start_wall, 1),
               "cpu_s": round(time.process_time() - self.start_cpu, 1),
               "train_return": float(np.mean(self.returns)) if self.returns else float("nan"), **dev}
        self.rows.append(row)
        self.report(row)
        self.returns = []
        self.next_at = self.num_timesteps + self.every


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` (dicts with the same keys) as a CSV file with a header."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
