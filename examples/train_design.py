"""Train a PPO intervention designer on the batched design env, with a learning curve and held-out and OOD evaluation.

The policy plays ``InterventionDesign-lg10-v0`` through the batched
:class:`~causal_gym.envs.design.vector.InterventionDesignVectorEnv` (``--n-envs`` episodes per
numpy step, dense reward: the exact posterior's gain after every intervention), adapted here to
SB3's ``VecEnv`` interface (:class:`DesignVecEnv`; SB3 has no adapter for Gymnasium vector envs).

What the policy sees (:func:`features`, computed from the observation only): how often each
node has been intervened on (``d``), the budget left, and the absolute correlations of the
rows so far (``d (d - 1) / 2``). It acts in the env's box: target bin and value.

Learning curve: every ``--eval-every`` timesteps the deterministic policy plays the first
``--dev`` instances of the ``dev`` suite (one batched episode); ``learning_curve.csv`` and
``learning_curve.png`` record timesteps, wall time, the mean training return of the last
rollouts and the dev return. At the end the policy plays test instances ``0 .. --test - 1`` of
``InterventionDesign-lg10-v0`` (in distribution) and of the scale-free and Gumbel-noise ids
(out of distribution); per-episode rows go to ``eval.csv`` in the format of
``examples/design_baselines.py``, and with ``--baselines CSV`` (that script's output) the
paired differences against each baseline are printed.

Usage::

    python examples/train_design.py --timesteps 300000 --n-envs 32 --out runs/design
    python examples/train_design.py --out runs/design --evaluate-only --baselines design_baselines.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium import spaces  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.metrics import bootstrap_interval, paired_bootstrap  # noqa: E402

TRAIN_ID = "InterventionDesign-lg10-v0"
EVAL_IDS = ("InterventionDesign-lg10-v0", "InterventionDesign-sf10-v0", "InterventionDesign-gumbel10-v0")
METRICS = ("gain", "expected_shd", "auprc", "map_f1")


def features(obs: dict[str, np.ndarray], budget: int) -> np.ndarray:
    """``(B, d + 1 + d (d - 1) / 2)`` float32 features of a batch of observations (see the module docstring)."""
    data = obs["data"].astype(np.float64)
    filled = obs["filled"].astype(np.float64)
    mask = obs["intervention_mask"].astype(np.float64)
    d = data.shape[-1]
    counts = mask.sum(axis=1) / budget
    n = filled.sum(axis=1, keepdims=True)
    mean = (data * filled[..., None]).sum(axis=1) / n
    centred = (data - mean[:, None, :]) * filled[..., None]
    cov = np.einsum("bri,brj->bij", centred, centred) / n[..., None]
    sd = np.sqrt(np.maximum(np.diagonal(cov, axis1=1, axis2=2), 1e-12))
    corr = np.abs(cov / sd[:, :, None] / sd[:, None, :])
    i, j = np.triu_indices(d, 1)
    left = obs["budget_left"].astype(np.float64) / budget
    return np.concatenate([counts, left, corr[:, i, j]], axis=1).astype(np.float32)


class DesignVecEnv(VecEnv):
    """SB3's ``VecEnv`` over the batched design env, observing :func:`features`.

    The batched env autoresets on the step after an episode's end (Gymnasium's ``NEXT_STEP``);
    SB3 expects the reset observation with the ``done`` flag, so the adapter takes that extra
    step at once and puts the final features in ``info["terminal_observation"]``.
    """

    def __init__(self, env_id: str, num_envs: int, seed: int, **kwargs: Any) -> None:
        self.env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)
        self.budget = self.env.unwrapped.setting.budget
        d = self.env.unwrapped.setting.d
        size = d + 1 + d * (d - 1) // 2
        super().__init__(num_envs, spaces.Box(-np.inf, np.inf, (size,), np.float32), self.env.single_action_space)
        self._seed: int | None = seed
        self._actions: np.ndarray | None = None
        self.last_scores: dict[str, np.ndarray] = {}

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        return features(obs, self.budget)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.float32)

    def step_wait(self):
        obs, rewards, terminated, truncated, info = self.env.step(self._actions)
        done = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.all():
            final = features(obs, self.budget)
            self.last_scores = info.get("scores", {})
            for k in range(self.num_envs):
                infos[k]["terminal_observation"] = final[k]
            obs, *_ = self.env.step(self._actions)  # the autoreset
        return features(obs, self.budget), rewards.astype(np.float32), done, infos

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self, attr_name)] * self.num_envs

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name, *args, indices=None, **kwargs):
        raise NotImplementedError("DesignVecEnv has no sub-env objects")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * self.num_envs

    def seed(self, seed=None):
        self._seed = seed
        return [seed] * self.num_envs


def evaluate(model: PPO, env_id: str, split: str, count: int) -> dict[str, np.ndarray]:
    """Per-instance final scores of the deterministic policy on instances ``0 .. count - 1`` of ``split``."""
    env = gym.make_vec(env_id, num_envs=count, vectorization_mode="vector_entry_point")
    budget = env.unwrapped.setting.budget
    obs, _ = env.reset(seed=0, options={"split": split, "instance": 0})
    for _ in range(budget):
        action, _ = model.predict(features(obs, budget), deterministic=True)
        obs, _, terminated, _, info = env.step(action)
    assert terminated.all()
    return info["scores"]


class LearningCurve(BaseCallback):
    """Every ``every`` timesteps: dev return of the deterministic policy, mean training return since the last row."""

    def __init__(self, every: int, dev: int, path: Path, max_seconds: float) -> None:
        super().__init__()
        self.every, self.dev, self.path, self.max_seconds = every, dev, path, max_seconds
        self.rows: list[dict[str, float]] = []
        self.start = time.perf_counter()
        self.next = 0
        self.returns: list[float] = []
        self.running = None

    def _on_step(self) -> bool:
        rewards = self.locals["rewards"]
        self.running = rewards if self.running is None else self.running + rewards
        if self.locals["dones"].all():
            self.returns.extend(self.running.tolist())
            self.running = None
        if self.num_timesteps >= self.next:
            self.record()
            self.next += self.every
        return time.perf_counter() - self.start < self.max_seconds

    def record(self) -> None:
        dev = evaluate(self.model, TRAIN_ID, "dev", self.dev)
        row = {"timesteps": self.num_timesteps, "wall_s": round(time.perf_counter() - self.start, 1),
               "train_return": float(np.mean(self.returns)) if self.returns else float("nan"),
               "dev_return": float(np.mean(dev["gain"])), "dev_map_f1": float(np.mean(dev["map_f1"]))}
        self.returns = []
        self.rows.append(row)
        print(row, flush=True)
        with open(self.path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(row))
            writer.writeheader()
            writer.writerows(self.rows)


def plot(rows: list[dict[str, float]], path: Path, references: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [r["timesteps"] for r in rows]
    ax.plot(steps, [r["dev_return"] for r in rows], marker="o", label="PPO, dev (deterministic)")
    ax.plot(steps, [r["train_return"] for r in rows], alpha=0.6, label="PPO, train episodes")
    for (name, value), style in zip(references.items(), (":", "--", "-.", (0, (1, 3)))):
        ax.axhline(value, linestyle=style, color="grey", label=f"{name} (test)")
    ax.set_xlabel("env steps")
    ax.set_ylabel("return: gain in expected correct entries")
    ax.set_title(TRAIN_ID)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=300_000)
    parser.add_argument("--max-minutes", type=float, default=60.0, help="stop training after this wall time")
    parser.add_argument("--n-envs", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=20_000)
    parser.add_argument("--dev", type=int, default=100)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--baselines", default=None, help="CSV of examples/design_baselines.py to pair with")
    parser.add_argument("--out", default="runs/design")
    parser.add_argument("--evaluate-only", action="store_true", help="evaluate the model saved in --out")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.evaluate_only:
        model = PPO.load(out / "model.zip")
        with open(out / "learning_curve.csv", newline="") as handle:
            curve_rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]
    else:
        venv = DesignVecEnv(TRAIN_ID, args.n_envs, args.seed)
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=512, n_epochs=5, learning_rate=3e-4, gamma=1.0,
                    gae_lambda=0.95, ent_coef=0.0, policy_kwargs={"net_arch": [128, 128]}, seed=args.seed, verbose=0)
        curve = LearningCurve(args.eval_every, args.dev, out / "learning_curve.csv", args.max_minutes * 60)
        start = time.perf_counter()
        model.learn(args.timesteps, callback=curve)
        curve.record()
        print(f"\ntraining: {model.num_timesteps} env steps in {time.perf_counter() - start:.0f} s")
        model.save(out / "model.zip")
        curve_rows = curve.rows
    report(model, out, args.test, args.baselines, curve_rows)


def report(model: PPO, out: Path, test: int, baselines_csv: str | None, curve_rows: list[dict[str, float]]) -> None:
    """Evaluate on the test suites, write ``eval.csv``, print intervals and pairings, draw the curve."""
    rows = []
    for env_id in EVAL_IDS:
        scores = evaluate(model, env_id, "test", test)
        rows += [{"env_id": env_id, "agent": "ppo", "instance": k, **{m: float(scores[m][k]) for m in METRICS}}
                 for k in range(test)]
    with open(out / "eval.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    baselines: list[dict[str, str]] = []
    if baselines_csv:
        with open(baselines_csv, newline="") as handle:
            baselines = list(csv.DictReader(handle))
    references = {}
    for env_id in EVAL_IDS:
        mine = [r for r in rows if r["env_id"] == env_id]
        cells = []
        for m in METRICS:
            mean, low, high = bootstrap_interval(np.array([r[m] for r in mine]))
            cells.append(f"{m} {mean:.3f} [{low:.3f}, {high:.3f}]")
        print(f"{env_id}, PPO on {len(mine)} test instances: " + "; ".join(cells))
        for name in sorted({b["agent"] for b in baselines if b["env_id"] == env_id}):
            theirs = {int(b["instance"]): float(b["gain"]) for b in baselines
                      if b["env_id"] == env_id and b["agent"] == name}
            paired = [(r["gain"], theirs[r["instance"]]) for r in mine if r["instance"] in theirs]
            a, b = np.array(paired).T
            diff = paired_bootstrap(a, b)
            print(f"  return, PPO - {name}: {diff[0]:+.3f} [{diff[1]:+.3f}, {diff[2]:+.3f}] over {len(a)} instances")
            if env_id == TRAIN_ID:
                references[name] = float(np.mean(b))
    plot(curve_rows, out / "learning_curve.png", references)


if __name__ == "__main__":
    main()
