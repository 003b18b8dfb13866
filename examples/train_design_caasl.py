"""Train a CAASL-style design learner: PPO over continuous per-node scores and values, reading the raw rows only.

The interface and the policy are :mod:`causal_gym.envs.design.rows`: the observation is the padded
data, its intervention mask, the rows filled and the budget left (no posterior, no truth); the
action is a score and a value per node (the best-scoring node is set to its value times the
bound); the policy alternates attention over the rows and over the nodes (CAASL's encoder, small),
so it is equivariant in the nodes. CAASL trains with SAC; this uses SB3's PPO on the same
continuous actions (one Gaussian per node and kind). It plays ``InterventionDesign-lg10-T3-v0``
with the env's ``--reward`` (default ``"confidence"``, the reward of the posterior-reading policies
it is compared with; ``"truth"`` is CAASL's).

Per seed: ``--timesteps`` env steps on the ``train`` stream (or ``--max-cpu-minutes`` of this
process's CPU time, whichever comes first), and every ``--eval-every`` steps the
deterministic policy (the scores' and values' means) plays the first ``--dev`` ``dev`` instances;
``curve-caasl.csv`` (env steps, wall and CPU seconds, train and dev return) and ``curve-caasl.png``
with round-robin's dev return. Models go to ``<out>/caasl-rows-seed<k>.zip``; a run resumes from
the seeds already saved. ``--device auto`` trains on a GPU when torch sees one.

``--evaluate`` plays every saved model on test instances ``--first .. --first + --test - 1`` of
``--eval-ids``, rows in the CSV format of ``examples/design_baselines.py`` in ``eval-caasl.csv``.

Usage::

    python examples/train_design_caasl.py --seeds 0 1 2 --timesteps 40000 --out runs/design-caasl
    python examples/train_design_caasl.py --hidden 64 --blocks 3 --heads 4 --timesteps 500000 --device auto  # a GPU
    python examples/train_design_caasl.py --evaluate --out runs/design-caasl --first 400 --test 200
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _design_common import Curve, play_batch, write_csv  # noqa: E402  (the script's folder is on sys.path)
from stable_baselines3 import PPO  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.rows import RowAttentionPolicy, RowsVecEnv  # noqa: E402

TRAIN_ID = "InterventionDesign-lg10-T3-v0"
EVAL_IDS = ("InterventionDesign-lg10-T3-v0", "InterventionDesign-sf10-T3-v0", "InterventionDesign-gumbel10-T3-v0")
METRICS = ("gain", "truth_gain", "information_gain", "expected_shd", "auprc", "map_f1")


def play(model: PPO | None, env_id: str, split: str, first: int, count: int, reward: str
         ) -> tuple[dict[str, np.ndarray], float]:
    """Instances ``first ..`` of ``split``, deterministic policy (None: round-robin at +bound): scores, CPU seconds."""
    venv = RowsVecEnv(env_id, count, options={"split": split, "instance": first}, reward=reward)

    def choose(obs: Any, step: int) -> np.ndarray:
        if model is not None:
            return model.predict(obs, deterministic=True)[0]
        actions = np.full((count, 2 * venv.d), -1.0, dtype=np.float32)
        actions[:, step % venv.d] = 1.0
        actions[:, venv.d:] = 1.0
        return actions

    return play_batch(venv, venv.budget, choose)


def curve(args: argparse.Namespace, seed: int, rows: list[dict[str, Any]], path: Path) -> Curve:
    """Every ``--eval-every`` env steps: the dev returns of the deterministic policy, a row of the curve (saved)."""

    def dev(model: PPO) -> dict[str, Any]:
        scores, _ = play(model, TRAIN_ID, "dev", 0, args.dev, args.reward)
        return {"dev_return": float(np.mean(scores["gain"])), "dev_truth_gain": float(np.mean(scores["truth_gain"]))}

    def report(row: dict[str, Any]) -> None:
        write_csv(path, rows)
        print(row, flush=True)

    return Curve(args.n_envs, args.eval_every, {"seed": seed}, dev, rows, report, max_cpu_s=60 * args.max_cpu_minutes)


def train(args: argparse.Namespace, out: Path) -> None:
    torch.set_num_threads(args.threads)
    reference = float(np.mean(play(None, TRAIN_ID, "dev", 0, args.dev, args.reward)[0]["gain"]))
    print(f"round-robin on the first {args.dev} dev instances: {reference:.3f}", flush=True)
    path = out / "curve-caasl.csv"
    rows: list[dict[str, Any]] = []
    if path.exists():
        with open(path) as handle:
            rows = [{**r, "seed": int(r["seed"])} for r in csv.DictReader(handle)]
    for seed in args.seeds:
        if (out / f"caasl-rows-seed{seed}.zip").exists():
            print(f"seed {seed}: done", flush=True)
            continue
        rows = [r for r in rows if r["seed"] != seed]
        venv = RowsVecEnv(TRAIN_ID, args.n_envs, seed=seed, reward=args.reward)
        model = PPO(RowAttentionPolicy, venv, n_steps=args.rollout_episodes * venv.budget, batch_size=args.batch_size,
                    n_epochs=args.epochs, gamma=1.0, gae_lambda=0.95, learning_rate=args.lr, ent_coef=args.ent_coef,
                    policy_kwargs={"hidden": args.hidden, "blocks": args.blocks, "heads": args.heads, "log_std_init": -0.5},
                    seed=seed, device=args.device,
                    verbose=0)
        print(f"seed {seed}: device {model.device}, {sum(p.numel() for p in model.policy.parameters())} parameters",
              flush=True)
        model.learn(args.timesteps, callback=curve(args, seed, rows, path))
        model.save(out / f"caasl-rows-seed{seed}.zip")
    plot(rows, out / "curve-caasl.png", reference)


def plot(rows: list[dict[str, Any]], path: Path, reference: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for seed in sorted({int(r["seed"]) for r in rows}):
        mine = [r for r in rows if int(r["seed"]) == seed]
        ax.plot([int(r["env_steps"]) for r in mine], [float(r["dev_return"]) for r in mine], marker=".",
                label=f"seed {seed}")
    ax.axhline(reference, color="k", linestyle="--", label="round-robin")
    ax.set_xlabel("env steps")
    ax.set_ylabel("dev return (confidence)")
    ax.set_title(f"PPO, rows-only attention policy (CAASL-style) on {TRAIN_ID}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def evaluate(args: argparse.Namespace, out: Path) -> None:
    source = Path(args.models) if args.models else out
    models = sorted(source.glob("caasl-rows-seed*.zip"))
    if not models:
        raise SystemExit(f"no caasl-rows-seed*.zip in {source}: train first")
    rows: list[dict[str, Any]] = []
    for path in models:
        model = PPO.load(path, device="cpu")
        for env_id in args.eval_ids:
            scores, thinking = play(model, env_id, "test", args.first, args.test, args.reward)
            rows += [{"env_id": env_id, "agent": path.stem, "instance": args.first + k,
                      **{m: round(float(scores[m][k]), 6) for m in METRICS}, "seconds": round(thinking / args.test, 6),
                      "evaluations": 0} for k in range(args.test)]
            print(f"{path.stem} {env_id}: {np.mean(scores['gain']):.3f}", flush=True)
    write_csv(out / "eval-caasl.csv", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=60_000)
    parser.add_argument("--reward", default="confidence", choices=["confidence", "truth", "information_gain"])
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--rollout-episodes", type=int, default=8, help="episodes per env per rollout")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--blocks", type=int, default=1, help="row/node attention blocks (CAASL: more; a GPU: 2-4)")
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--eval-every", type=int, default=6_000)
    parser.add_argument("--dev", type=int, default=100)
    parser.add_argument("--max-cpu-minutes", type=float, default=20.0,
                        help="per seed: CPU minutes of this process (wall time follows the machine's load)")
    parser.add_argument("--device", default="auto", help="torch device; auto: a GPU when there is one")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--models", default=None)
    parser.add_argument("--eval-ids", nargs="+", default=list(EVAL_IDS))
    parser.add_argument("--first", type=int, default=400)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--out", default="runs/design-caasl")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.evaluate:
        evaluate(args, out)
    else:
        train(args, out)


if __name__ == "__main__":
    main()
