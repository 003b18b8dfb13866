"""Train a PPO intervention designer on the batched design env, with a learning curve and held-out and OOD evaluation.

The policy (:class:`~causal_gym.envs.design.learned.NodeScorerPolicy`: one shared network scores
every node from its posterior features, :func:`~causal_gym.envs.design.learned.node_features`)
plays ``InterventionDesign-lg10-v0`` through the batched env adapted to SB3's ``VecEnv``
(:class:`~causal_gym.envs.design.learned.DesignVecEnv`: ``--n-envs`` episodes per numpy step,
dense reward = the exact posterior's gain after every intervention, action = a target node set to
``+value_bound``).

Learning curve: every ``--eval-every`` timesteps the deterministic policy plays the first
``--dev`` instances of the ``dev`` suite (one batched episode); ``learning_curve.csv`` and
``learning_curve.png`` record timesteps, wall time, the mean training return of the last
rollouts and the dev return. At the end the policy plays test instances ``0 .. --test - 1`` of
``InterventionDesign-lg10-v0`` (in distribution) and of the scale-free, Gumbel-noise and d = 12
ids (out of distribution; the same network scores 12 nodes); per-episode rows go to ``eval.csv``
in the format of ``examples/design_baselines.py``, and with ``--baselines CSV`` (that script's
output) the paired differences against each baseline are printed.

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

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.learned import DesignVecEnv, PairScorerPolicy  # noqa: E402
from causal_gym.metrics import bootstrap_interval, paired_bootstrap  # noqa: E402

TRAIN_ID = "InterventionDesign-lg10-v0"
EVAL_IDS = ("InterventionDesign-lg10-v0", "InterventionDesign-sf10-v0", "InterventionDesign-gumbel10-v0",
            "InterventionDesign-lg12-v0")
METRICS = ("gain", "expected_shd", "auprc", "map_f1")


def evaluate(model: PPO, env_id: str, split: str, count: int) -> dict[str, np.ndarray]:
    """Per-instance final scores of the deterministic policy on instances ``0 .. count - 1`` of ``split``.

    The policy's network is called directly (not ``model.predict``, which checks the training
    observation's width), so a model trained at one ``d`` plays any other.
    """
    venv = DesignVecEnv(env_id, count)
    features = venv.reset(options={"split": split, "instance": 0})
    for _ in range(venv.budget):
        with torch.no_grad():
            targets = model.policy.get_distribution(torch.as_tensor(features)).mode().numpy()
        venv.step_async(targets)
        features, _, done, _ = venv.step_wait()
    assert done.all()
    venv.close()
    return venv.last_scores


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
    colours = {"greedy": "tab:red", "round-robin": "tab:green", "random": "tab:purple", "observe": "grey"}
    for name, value in references.items():
        ax.axhline(value, linestyle="--", color=colours.get(name, "black"), label=f"{name} (test)")
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
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--ent-coef", type=float, default=0.01)
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
        model = PPO(PairScorerPolicy, venv, n_steps=40, batch_size=320, n_epochs=10, learning_rate=args.lr,
                    gamma=1.0, gae_lambda=0.95, ent_coef=args.ent_coef, policy_kwargs={"hidden": 64},
                    seed=args.seed, verbose=0)
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
