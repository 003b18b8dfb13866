"""Train SB3 agents on a scarce intervention-design variant through the standard route only.

The route is the one any RL user takes (README, "The standard RL route"):
:class:`~causal_gym.envs.design.sb3.DesignSB3VecEnv` with ``action="discrete"`` (``value_grid=(1.0,)``:
observe, or one of the ``d`` nodes set to ``+value_bound``) and ``observation="summary"`` (the
posterior's edge marginals the env computes for its reward, each node's share of the experiments,
the budget left). The policy is SB3's own ``MlpPolicy`` (``--policy mlp``) or
:class:`~causal_gym.envs.design.policy.NodePairPolicy` (``--policy pair``: the same observation read
as a graph by shared pair networks, so what it learns about one node applies to all). No hand-made
features, no copy of the hidden SCM, no lookahead: what it learns comes from the env's observations
and dense rewards alone.

``--env-id`` (alias ``--id``; default ``lg10-T3``) trains on any design id: on a batch id
(``targets_per_step`` k > 1) the route's action is ``action="multidiscrete"`` (k designs per step,
``NodePairPolicy`` draws them without replacement), and on a cost id the pair policy is told the
id's ``node_costs``. Curves and comparisons read ``net_gain``, the return net of the node costs
(equal to ``gain`` on ids without costs).

Per seed: ``--algo ppo`` (on-policy) or ``--algo dqn`` (off-policy; SAC needs a continuous action
and the choice here is discrete), ``--timesteps`` env steps on the ``train`` stream, and every
``--eval-every`` steps the deterministic policy plays the first ``--dev`` instances of the ``dev``
suite. ``curve.csv`` gets one row per evaluation (env steps, wall and CPU seconds, the mean return
of the training episodes since the last row, the dev return), with round-robin's dev return as the
reference; ``curve-<algo>-<policy>.png`` plots every seed. Each seed's model goes to
``<out>/<algo>-<policy>-seed<k>.zip``.

``--evaluate`` plays every saved model (of ``--out``, or ``--models``), deterministically, on test instances
``--first .. --first + --test - 1`` (default from 0) of
the training id and of its out-of-distribution relatives (``--eval-ids``), one row per episode in the
CSV format of ``examples/design_baselines.py`` (agent ``<algo>-<policy>-seed<k>``, with the CPU seconds of the
policy's decisions and 0 posterior evaluations of its own), and with ``--baselines CSV`` (that
script's output on the same ids) prints the paired differences against every baseline, per seed and,
per algorithm and policy, for the per-episode mean over its seeds.

Usage::

    python examples/train_design_sb3.py --seeds 0 1 2 --timesteps 250000 --out runs/design-sb3
    python examples/train_design_sb3.py --policy pair --seeds 0 1 2 --timesteps 250000 --out runs/design-sb3
    python examples/train_design_sb3.py --out runs/design-sb3 --evaluate --baselines baselines_T3.csv
    python examples/train_design_sb3.py --evaluate --models examples/results/design/sb3 --out runs/shipped \
        --baselines examples/results/design/sb3/baselines_T3.csv
    python examples/train_design_sb3.py --env-id InterventionDesign-lg10-T5-costs-v0 --policy pair --seeds 0 \
        --timesteps 200000 --eval-every 20000 --out runs/design-costs
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from _design_common import Curve, play_batch, write_csv  # noqa: E402  (the script's folder is on sys.path)
from stable_baselines3 import DQN, PPO  # noqa: E402
from stable_baselines3.common.base_class import BaseAlgorithm  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.policy import NodePairPolicy  # noqa: E402
from causal_gym.envs.design.sb3 import DesignSB3VecEnv  # noqa: E402
from causal_gym.metrics import bootstrap_interval, paired_bootstrap  # noqa: E402

TRAIN_ID = "InterventionDesign-lg10-T3-v0"
EVAL_IDS = ("InterventionDesign-lg10-T3-v0", "InterventionDesign-sf10-T3-v0", "InterventionDesign-gumbel10-T3-v0")
ROUTE = {"action": "discrete", "value_grid": (1.0,), "observation": "summary"}
"""The env keywords of the route: the agent's whole interface (batch designs take ``action="multidiscrete"``)."""
RETURN = "net_gain"
"""The return every curve and comparison reads: the gain net of node costs (the gain itself without costs)."""
METRICS = ("gain", "net_gain", "truth_gain", "information_gain", "expected_shd", "auprc", "map_f1")
ALGOS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "dqn": DQN}
POLICIES = ("mlp", "pair")


def route(env_id: str) -> dict[str, Any]:
    """The route's keywords on ``env_id``: ``action="multidiscrete"`` (``MultiDiscrete([d + 1, 1] * k)``) for batch designs."""
    batch = int(gym.spec(env_id).kwargs.get("targets_per_step", 1)) > 1
    return {**ROUTE, "action": "multidiscrete"} if batch else dict(ROUTE)


def played(env_id: str, split: str, count: int, choose: Callable[[np.ndarray, int], np.ndarray],
           first: int = 0) -> tuple[dict[str, np.ndarray], float]:
    """Instances ``first .. first + count - 1`` of ``split`` played by ``choose(observations, step)``: final scores and its CPU seconds."""
    venv = DesignSB3VecEnv(env_id, count, options={"split": split, "instance": first}, **route(env_id))
    return play_batch(venv, venv.env.unwrapped.setting.budget, choose)


def play(model: BaseAlgorithm, env_id: str, split: str, count: int, first: int = 0) -> tuple[dict[str, np.ndarray], float]:
    """The deterministic policy on instances ``first .. first + count - 1`` of ``split``: final scores and policy CPU seconds."""
    return played(env_id, split, count, lambda obs, step: model.predict(obs, deterministic=True)[0], first)


def round_robin_actions(env_id: str, step: int, count: int) -> np.ndarray:
    """Round-robin's actions at ``step`` on the route: nodes ``step k, ..., step k + k - 1`` (mod ``d``) at ``+value_bound``."""
    kwargs = gym.spec(env_id).kwargs
    d, k = int(kwargs.get("d", 10)), int(kwargs.get("targets_per_step", 1))
    if k == 1:
        return np.full(count, 1 + step % d)  # Discrete: 0 observes, 1 + i is node i
    nodes = (step * k + np.arange(k)) % d
    return np.tile(np.stack([nodes, np.zeros(k, dtype=int)], axis=1).reshape(-1), (count, 1))


def round_robin_dev(env_id: str, count: int) -> float:
    """Round-robin's mean dev return (nodes 0, 1, ... at ``+value_bound``): the curve's reference line."""
    scores, _ = played(env_id, "dev", count, lambda obs, step: round_robin_actions(env_id, step, count))
    return float(np.mean(scores[RETURN]))


def curve(args: argparse.Namespace, seed: int, rows: list[dict[str, Any]]) -> Curve:
    """Every ``--eval-every`` env steps: the dev return of the deterministic policy, a row of the curve."""

    def dev(model: BaseAlgorithm) -> dict[str, Any]:
        return {"dev_return": float(np.mean(play(model, args.id, "dev", args.dev)[0][RETURN]))}

    def report(row: dict[str, Any]) -> None:
        print(f"seed {seed} steps {row['env_steps']:>7} wall {row['wall_s']:>7.0f}s "
              f"train {row['train_return']:6.3f} dev {row['dev_return']:6.3f}", flush=True)

    return Curve(args.n_envs, args.eval_every, {"algo": args.algo, "policy": args.policy, "seed": seed}, dev, rows,
                 report, max_wall_s=60 * args.max_minutes)


def make_model(args: argparse.Namespace, seed: int) -> BaseAlgorithm:
    venv = DesignSB3VecEnv(args.id, args.n_envs, seed=seed, **route(args.id))
    if args.policy == "pair":
        if args.algo != "ppo":
            raise SystemExit("--policy pair is an actor-critic policy: use it with --algo ppo")
        policy: Any = NodePairPolicy
        costs = gym.spec(args.id).kwargs.get("node_costs")  # public: the id's documented costs
        policy_kwargs: dict[str, Any] = {"hidden": args.hidden, "node_costs": None if costs is None else tuple(costs)}
    else:
        policy, policy_kwargs = "MlpPolicy", {"net_arch": [args.hidden, args.hidden]}
    if args.algo == "ppo":
        budget = int(gym.spec(args.id).kwargs.get("budget", 10))
        return PPO(policy, venv, n_steps=args.rollout_episodes * budget, batch_size=args.batch_size,
                   n_epochs=10, gamma=args.gamma, gae_lambda=0.95, learning_rate=args.lr, ent_coef=args.ent_coef,
                   policy_kwargs=policy_kwargs, seed=seed, device="cpu", verbose=0)
    return DQN(policy, venv, learning_rate=args.lr, buffer_size=100_000, learning_starts=2_000,
               batch_size=args.batch_size, gamma=args.gamma, train_freq=1, gradient_steps=1,
               target_update_interval=1_000, exploration_fraction=0.3, exploration_final_eps=0.05,
               policy_kwargs=policy_kwargs, seed=seed, device="cpu", verbose=0)


def train(args: argparse.Namespace, out: Path) -> None:
    torch.set_num_threads(1)
    reference = round_robin_dev(args.id, args.dev)
    print(f"round-robin on the first {args.dev} dev instances of {args.id}: {reference:.3f}")
    rows: list[dict[str, Any]] = []
    for seed in args.seeds:
        model = make_model(args, seed)
        model.learn(args.timesteps, callback=curve(args, seed, rows))
        name = f"{args.algo}-{args.policy}"
        model.save(out / f"{name}-seed{seed}.zip")
        write_csv(out / f"curve-{name}.csv", rows)
    plot(rows, out / f"curve-{name}.png", reference, args)


def plot(rows: list[dict[str, Any]], path: Path, reference: float, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for seed in sorted({r["seed"] for r in rows}):
        mine = [r for r in rows if r["seed"] == seed]
        ax.plot([r["env_steps"] for r in mine], [r["dev_return"] for r in mine], marker=".", label=f"seed {seed}")
    ax.axhline(reference, color="k", linestyle="--", label="round-robin")
    ax.set_xlabel("env steps")
    ax.set_ylabel(f"dev return, {RETURN} ({args.dev} instances)")
    policy = "MlpPolicy" if args.policy == "mlp" else "NodePairPolicy"
    ax.set_title(f"SB3 {args.algo.upper()}, {policy} on {args.id}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def evaluate(args: argparse.Namespace, out: Path) -> None:
    rows: list[dict[str, Any]] = []
    source = Path(args.models) if args.models else out
    models = sorted(source.glob("*-seed*.zip"))
    if not models:
        raise SystemExit(f"no saved model in {source}: train first")
    for path in models:
        algo = path.stem.split("-")[0]
        model = ALGOS[algo].load(path, device="cpu")
        for env_id in args.eval_ids:
            scores, thinking = play(model, env_id, "test", args.test, args.first)
            rows += [{"env_id": env_id, "agent": path.stem, "instance": args.first + k,
                      **{m: float(scores[m][k]) for m in METRICS}, "seconds": thinking / args.test,
                      "evaluations": 0} for k in range(args.test)]
    write_csv(out / "eval.csv", rows)
    baselines: list[dict[str, Any]] = []
    if args.baselines:
        with (gzip.open(args.baselines, "rt") if args.baselines.endswith(".gz") else open(args.baselines)) as handle:
            baselines = [{**r, "instance": int(r["instance"]), RETURN: float(r.get(RETURN) or r["gain"])}
                         for r in csv.DictReader(handle)]
    agents = sorted({r["agent"] for r in rows})
    for env_id in args.eval_ids:
        print(f"\n{env_id}: test instances {args.first}..{args.first + args.test - 1}, return ({RETURN}) mean [95% bootstrap interval]")
        gains = {name: by_instance(rows + baselines, env_id, name, args.first, args.test) for name in
                 agents + sorted({r["agent"] for r in baselines if r["env_id"] == env_id})}
        gains = {name: g for name, g in gains.items() if g is not None}
        learned = list(agents)
        for group in sorted({a.rsplit("-seed", 1)[0] for a in agents}):  # per episode, the mean over a run's seeds
            seeds = [a for a in agents if a.rsplit("-seed", 1)[0] == group]
            learned.append(f"{group} (mean of {len(seeds)} seeds)")
            gains[learned[-1]] = np.mean([gains[a] for a in seeds], axis=0)
        for name, g in gains.items():
            mean, low, high = bootstrap_interval(g)
            print(f"  {name:<30}{mean:7.2f} [{low:5.2f}, {high:5.2f}]")
        for name in learned:
            for other in gains:
                if other not in learned:
                    diff = paired_bootstrap(gains[name], gains[other])
                    print(f"  {name} - {other}: {diff[0]:+.2f} [{diff[1]:+.2f}, {diff[2]:+.2f}]")


def by_instance(rows: list[dict[str, Any]], env_id: str, agent: str, first: int, count: int) -> np.ndarray | None:
    """The returns of ``agent`` on instances ``first .. first + count - 1`` in order, or None if it did not play them all."""
    gains = {int(r["instance"]): float(r[RETURN]) for r in rows if r["env_id"] == env_id and r["agent"] == agent}
    wanted = range(first, first + count)
    if not all(k in gains for k in wanted):
        return None
    return np.array([gains[k] for k in wanted])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--id", "--env-id", dest="id", default=TRAIN_ID, help="the design id to train on")
    parser.add_argument("--algo", choices=sorted(ALGOS), default="ppo")
    parser.add_argument("--policy", choices=POLICIES, default="mlp")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=150_000)
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--rollout-episodes", type=int, default=16, help="ppo: episodes per env per rollout")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=None, help="default: 128 (mlp), 64 (pair)")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=1.0, help="the return is the sum of the step gains")
    parser.add_argument("--ent-coef", type=float, default=0.01, help="ppo")
    parser.add_argument("--eval-every", type=int, default=10_000)
    parser.add_argument("--dev", type=int, default=200)
    parser.add_argument("--max-minutes", type=float, default=60.0, help="per seed")
    parser.add_argument("--evaluate", action="store_true", help="evaluate the models saved in --out (or --models)")
    parser.add_argument("--models", default=None, help="--evaluate: the folder of the models (default: --out)")
    parser.add_argument("--plot", action="store_true",
                        help="redraw curve-<algo>-<policy>.png from the CSV in --out (e.g. seeds trained apart, rows merged)")
    parser.add_argument("--eval-ids", nargs="+", default=None,
                        help=f"default: {' '.join(EVAL_IDS)} for {TRAIN_ID}, else --id")
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="--evaluate: the first test instance")
    parser.add_argument("--baselines", default=None, help="CSV of examples/design_baselines.py on --eval-ids")
    parser.add_argument("--out", default="runs/design-sb3")
    args = parser.parse_args()
    args.hidden = args.hidden or (128 if args.policy == "mlp" else 64)
    args.eval_ids = args.eval_ids or (list(EVAL_IDS) if args.id == TRAIN_ID else [args.id])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.evaluate:
        evaluate(args, out)
    elif args.plot:
        with open(out / f"curve-{args.algo}-{args.policy}.csv") as handle:
            rows = [{**r, "seed": int(r["seed"]), "env_steps": int(r["env_steps"]), "dev_return": float(r["dev_return"])}
                    for r in csv.DictReader(handle)]
        plot(rows, out / f"curve-{args.algo}-{args.policy}.png", round_robin_dev(args.id, args.dev), args)
    else:
        train(args, out)


if __name__ == "__main__":
    main()
