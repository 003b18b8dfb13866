"""A labelled baseline: fitted Q iteration that distils the greedy lookahead through privileged copies of the SCM.

This is *not* RL from the env's interface (that is ``examples/train_design_sb3.py``: SB3 on the
standard route). The policy is :class:`~causal_gym.envs.design.learned.PairScorerPolicy`: one
shared network scores every node from the features of its node pairs (the posterior's edge and
path probabilities, correlations, intervention counts:
:func:`~causal_gym.envs.design.learned.design_features`) and the node with the best score is set
to ``+value_bound``. It plays ``InterventionDesign-lg10-v0`` through
:class:`~causal_gym.envs.design.learned.DesignVecEnv` (``--n-envs`` episodes per numpy step).
Each round plays ``--episodes-per-round`` batches of train episodes with the current policy
(uniformly random targets in the first round, then an ``--epsilon`` share of random ones), records
in every visited state what *each* target would have earned (``DesignVecEnv.lookahead``, which
steps copies of the hidden SCMs: the simulator's privilege on the train stream) and the features
after it, then regresses the scores on ``r_k + --gamma * max Q_previous(s'_k)`` over all rounds'
states. The result is saved as an SB3 model (``model.zip``, the PPO class with this policy) and
decides from the observation alone.

Learning curve: after every round the deterministic policy plays the first ``--dev`` instances of
the ``dev`` suite; ``learning_curve.csv`` and ``learning_curve.png`` record env steps, wall time,
the mean return of the training episodes since the last row and the dev return. At the end the
policy plays test instances ``0 .. --test - 1`` of ``InterventionDesign-lg10-v0`` (in distribution)
and of the scale-free, Gumbel-noise and d = 12 ids (out of distribution; the same network scores
12 nodes); per-episode rows go to ``eval.csv`` in the format of ``examples/design_baselines.py``,
and with ``--baselines CSV`` (that script's output) the paired differences against each baseline
are printed.

Usage::

    python examples/train_design.py --rounds 6 --episodes-per-round 30 --n-envs 32 --out runs/design
    python examples/train_design.py --out runs/design --evaluate-only --baselines design_baselines.csv
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.learned import (  # noqa: E402
    DesignVecEnv,
    PairScorer,
    PairScorerPolicy,
    fit_scorer,
    q_targets,
)
from causal_gym.metrics import bootstrap_interval, paired_bootstrap  # noqa: E402

TRAIN_ID = "InterventionDesign-lg10-v0"
EVAL_IDS = ("InterventionDesign-lg10-v0", "InterventionDesign-sf10-v0", "InterventionDesign-gumbel10-v0",
            "InterventionDesign-lg12-v0")
METRICS = ("gain", "expected_shd", "auprc", "map_f1")


def choose(scorer: PairScorer, features: np.ndarray) -> np.ndarray:
    """The node with the best score in every episode (the deterministic policy).

    The scorer is called directly (not ``model.predict``, which checks the training observation's
    width), so a model trained at one ``d`` plays any other.
    """
    with torch.no_grad():
        return scorer.forward_actor(torch.as_tensor(features)).argmax(dim=1).numpy()


def evaluate(scorer: PairScorer, env_id: str, split: str, count: int) -> dict[str, np.ndarray]:
    """Per-instance final scores of the deterministic policy on instances ``0 .. count - 1`` of ``split``."""
    venv = DesignVecEnv(env_id, count)
    features = venv.reset(options={"split": split, "instance": 0})
    for _ in range(venv.budget):
        targets = choose(scorer, features)
        venv.step_async(targets)
        features, _, done, _ = venv.step_wait()
    assert done.all()
    venv.close()
    return venv.last_scores


class Curve:
    """The learning curve's rows: dev return of the deterministic policy, mean training return since the last row."""

    def __init__(self, dev: int, path: Path) -> None:
        self.dev, self.path = dev, path
        self.rows: list[dict[str, float]] = []
        self.start = time.perf_counter()

    def record(self, scorer: PairScorer, steps: int, returns: list[float]) -> None:
        dev = evaluate(scorer, TRAIN_ID, "dev", self.dev)
        row = {"timesteps": steps, "wall_s": round(time.perf_counter() - self.start, 1),
               "train_return": float(np.mean(returns)) if returns else float("nan"),
               "dev_return": float(np.mean(dev["gain"])), "dev_map_f1": float(np.mean(dev["map_f1"]))}
        self.rows.append(row)
        print(row, flush=True)
        with open(self.path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(row))
            writer.writeheader()
            writer.writerows(self.rows)


def collect(venv: DesignVecEnv, scorer: PairScorer | None, batches: int, epsilon: float,
            rng: np.random.Generator, with_after: bool) -> tuple[dict[str, np.ndarray], list[float]]:
    """Play ``batches`` batches of train episodes; every visited state with every target's lookahead.

    ``scorer=None`` plays uniformly random targets, otherwise the best-scored node with an
    ``epsilon`` share of random ones. Returns the arrays (features, rewards, features after,
    last-step flags) and the episodes' returns.
    """
    parts: dict[str, list[np.ndarray]] = {"features": [], "rewards": [], "after": [], "last": []}
    returns: list[float] = []
    features = venv.reset()
    for _ in range(batches):
        total = np.zeros(venv.num_envs)
        for step in range(venv.budget):
            rewards, after = venv.lookahead(with_features=with_after)
            parts["features"].append(features)
            parts["rewards"].append(rewards.astype(np.float32))
            if with_after:  # the features after each target, for gamma > 0 only
                parts["after"].append(after.astype(np.float16))  # halves the memory; features are in [0, 1]
            parts["last"].append(np.full(venv.num_envs, step == venv.budget - 1))
            random = rng.integers(venv.d, size=venv.num_envs)
            if scorer is None:
                targets = random
            else:
                targets = np.where(rng.random(venv.num_envs) < epsilon, random, choose(scorer, features))
            venv.step_async(targets)
            features, reward, _, _ = venv.step_wait()
            total += reward
        returns.extend(total.tolist())
    return {name: np.concatenate(arrays) for name, arrays in parts.items() if arrays}, returns


def train_fqi(args: argparse.Namespace, curve: Curve) -> PairScorer:
    """Fitted Q iteration (see the module docstring); the scorer of the last round."""
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    venv = DesignVecEnv(TRAIN_ID, args.n_envs, args.seed)
    scorer, previous = PairScorer(args.hidden), None
    data: dict[str, np.ndarray] = {}
    for round_ in range(args.rounds):
        new, returns = collect(venv, previous, args.episodes_per_round, args.epsilon, rng, args.gamma != 0.0)
        data = new if not data else {name: np.concatenate([data[name], new[name]]) for name in data}
        targets = q_targets(previous, data["rewards"], data.get("after"), data["last"], gamma=args.gamma)
        loss = fit_scorer(scorer, data["features"], targets, epochs=args.epochs, lr=args.lr, seed=args.seed + round_)
        print(f"round {round_ + 1}/{args.rounds}: {len(targets)} states, loss {loss:.4f}", flush=True)
        curve.record(scorer, len(data["last"]), returns)
        previous = copy.deepcopy(scorer)
        if time.perf_counter() - curve.start > args.max_minutes * 60:
            print("stopped by --max-minutes", flush=True)
            break
    venv.close()
    return scorer


def as_sb3_model(scorer: PairScorer, args: argparse.Namespace) -> PPO:
    """A PPO model whose policy carries ``scorer``: saved, loaded and fine-tuned like any SB3 model."""
    model = PPO(PairScorerPolicy, DesignVecEnv(TRAIN_ID, 1, args.seed), policy_kwargs={"hidden": args.hidden},
                seed=args.seed, verbose=0)
    model.policy.mlp_extractor.load_state_dict(scorer.state_dict())
    return model


def plot(rows: list[dict[str, float]], path: Path, references: dict[str, float], algo: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [r["timesteps"] for r in rows]
    ax.plot(steps, [r["dev_return"] for r in rows], marker="o", label=f"{algo}, dev (deterministic)")
    ax.plot(steps, [r["train_return"] for r in rows], alpha=0.6, label=f"{algo}, train episodes")
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
    parser.add_argument("--max-minutes", type=float, default=60.0, help="stop training after this wall time")
    parser.add_argument("--n-envs", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--rounds", type=int, default=6, help="collection-and-fit rounds")
    parser.add_argument("--episodes-per-round", type=int, default=30, help="batches of --n-envs episodes")
    parser.add_argument("--epsilon", type=float, default=0.2, help="share of random targets after round 1")
    parser.add_argument("--gamma", type=float, default=1.0, help="0 regresses the one-step gains alone")
    parser.add_argument("--epochs", type=int, default=20, help="regression epochs per round")
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
        curve = Curve(args.dev, out / "learning_curve.csv")
        model = as_sb3_model(train_fqi(args, curve), args)
        steps = int(curve.rows[-1]["timesteps"])
        print(f"\ntraining (fitted Q): {steps} env steps in {time.perf_counter() - curve.start:.0f} s")
        model.save(out / "model.zip")
        curve_rows = curve.rows
    report(model.policy.mlp_extractor, out, args.test, args.baselines, curve_rows, "fqi")


def report(scorer: PairScorer, out: Path, test: int, baselines_csv: str | None, curve_rows: list[dict[str, float]],
           algo: str) -> None:
    """Evaluate on the test suites, write ``eval.csv``, print intervals and pairings, draw the curve."""
    rows = []
    for env_id in EVAL_IDS:
        scores = evaluate(scorer, env_id, "test", test)
        rows += [{"env_id": env_id, "agent": algo, "instance": k, **{m: float(scores[m][k]) for m in METRICS}}
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
        print(f"{env_id}, {algo} on {len(mine)} test instances: " + "; ".join(cells))
        for name in sorted({b["agent"] for b in baselines if b["env_id"] == env_id}):
            theirs = {int(b["instance"]): float(b["gain"]) for b in baselines
                      if b["env_id"] == env_id and b["agent"] == name}
            paired = [(r["gain"], theirs[r["instance"]]) for r in mine if r["instance"] in theirs]
            a, b = np.array(paired).T
            diff = paired_bootstrap(a, b)
            print(f"  return, {algo} - {name}: {diff[0]:+.3f} [{diff[1]:+.3f}, {diff[2]:+.3f}] over {len(a)} instances")
            if env_id == TRAIN_ID:
                references[name] = float(np.mean(b))
    plot(curve_rows, out / "learning_curve.png", references, algo)


if __name__ == "__main__":
    main()
