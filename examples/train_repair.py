"""Train a Heuresis repair policy with MaskablePPO and compare it with PC-KCI and a scripted rule.

The policy plays :class:`causal_gym.envs.heuresis.repair.HeuresisRepairEnv` on a fixed pool of
train-split instances of one family (PC-KCI runs once per instance, disk-cached), then is evaluated
on the family's 32 test instances against

- PC-KCI itself (gain 0 by definition: the reward is the adjacency-F1 gain over PC-KCI),
- :class:`~causal_gym.envs.heuresis.repair.EmptySetKCIRule` (re-test every deletion with KCI
  given the empty set, restore the dependent ones),
- the ideal oracle (every wrongly deleted pair restored: the headroom),

with paired bootstrap 95% intervals over instances (:func:`causal_gym.metrics.paired_bootstrap`).

Policies (``--policy``): ``pairs`` (default) scores every candidate pair with one shared network
(a pair encoder applied to each row of the pair table, a pooled context, a per-pair slot score),
so what is learnt about one slot transfers to all; ``mlp`` is SB3's default MLP on the flat
observation, which must learn each of the 45 slots separately.

Writes to ``--out``: ``learning_curve.csv`` (one row per rollout: timesteps, wall time, mean gain,
episode length, recovered/harmful restorations of the train episodes finished in it),
``checkpoints/``, ``model.zip``, ``eval.csv`` (per test instance) and ``summary.json``.

    python examples/train_repair.py --family wild --timesteps 150000 --n-envs 8 --seed 0 --out runs/repair_wild

Needs the ``rl`` extra (torch, stable-baselines3, sb3-contrib).
"""

from __future__ import annotations

import argparse
import csv
import json
import operator
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="wild", help="Heuresis family (default: wild)")
    parser.add_argument("--timesteps", type=int, default=150_000, help="training steps (default: 150000)")
    parser.add_argument("--n-envs", type=int, default=8, help="environments in the DummyVecEnv (default: 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/repair"), help="output directory")
    parser.add_argument("--policy", choices=("pairs", "mlp"), default="pairs", help="policy network (default: pairs)")
    parser.add_argument("--train-instances", type=int, default=32, help="size of the train pool (default: 32)")
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--time-limit", type=float, default=None, help="stop training after this many seconds")
    parser.add_argument("--n-steps", type=int, default=256, help="rollout steps per env (default: 256)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.999)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--reward-scale", type=float, default=10.0,
                        help="training reward = scale * F1 gain (the logs report the unscaled gain)")
    parser.add_argument("--checkpoint-every", type=int, default=50_000, help="steps between checkpoints")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--eval-instances", type=int, default=32, help="test instances to evaluate on (default: 32)")
    return parser.parse_args(argv)


def make_env(args: argparse.Namespace, split: str = "train") -> Any:
    from causal_gym.envs.heuresis.repair import HeuresisRepairEnv

    return HeuresisRepairEnv(args.family, d=args.d, n=args.n, split=split, train_instances=args.train_instances)


def warm_train_pool(args: argparse.Namespace) -> float:
    """Run (or read from the disk cache) PC-KCI on every train-pool instance; return the seconds spent."""
    from causal_gym.envs.heuresis.env import load_instance

    start = time.perf_counter()
    for k in range(args.train_instances):
        load_instance(args.family, "train", k, args.d, args.n, 2.0)
    return time.perf_counter() - start


def curve_callback(path: Path, time_limit: float | None) -> Any:
    """An SB3 callback writing one learning-curve row per rollout from the finished episodes' scores."""
    from stable_baselines3.common.callbacks import BaseCallback

    fields = ["timesteps", "wall_s", "episodes", "mean_gain", "mean_length", "mean_recovered", "mean_harmful",
              "mean_restored"]

    class Curve(BaseCallback):
        def _on_training_start(self) -> None:
            self.start = time.perf_counter()
            self.episodes = 0
            self.rows: list[dict[str, float]] = []
            self.file = path.open("w", newline="")
            self.writer = csv.DictWriter(self.file, fields)
            self.writer.writeheader()

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "scores" in info:
                    s = info["scores"]
                    self.rows.append({"gain": s["f1_gain_over_pc"], "length": info["episode"]["l"],
                                      "recovered": s["recovered"], "harmful": s["harmful"]})
            return time_limit is None or time.perf_counter() - self.start < time_limit

        def _on_rollout_end(self) -> None:
            self.episodes += len(self.rows)
            mean = {k: float(np.mean([r[k] for r in self.rows])) if self.rows else float("nan")
                    for k in ("gain", "length", "recovered", "harmful")}
            self.writer.writerow({
                "timesteps": self.num_timesteps, "wall_s": round(time.perf_counter() - self.start, 1),
                "episodes": self.episodes, "mean_gain": round(mean["gain"], 4),
                "mean_length": round(mean["length"], 1), "mean_recovered": round(mean["recovered"], 3),
                "mean_harmful": round(mean["harmful"], 3),
                "mean_restored": round(mean["recovered"] + mean["harmful"], 3),
            })
            self.file.flush()
            self.rows = []

        def _on_training_end(self) -> None:
            self.file.close()

    return Curve()


def pair_policy() -> type:
    """A MaskablePPO policy that scores candidate slots with one network shared across pairs.

    The features extractor encodes each row of the pair table with a shared MLP (embedding
    ``h_i``), averages the filled rows and adds the global features (context ``c``); the action
    head gives decision, test and conditioning logits from ``c`` and the slot logit of pair ``i``
    from ``[h_i, c]`` plus a linear *evidence* term of the row. The value head is an MLP on all
    embeddings. Two exploration priors, both trainable: the decision logits start at (test 0.7,
    restore 0.15, keep 0.05, submit 0.1), and the evidence term starts at +2 per unit of test
    score (dependence) and -2 for a pair that is already an edge, so early restorations and
    re-tests go to pairs with evidence of dependence rather than to random slots.
    """
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    from causal_gym.envs.heuresis.repair import CONDITIONING, DECISIONS, GLOBAL_FEATURES, PAIR_FEATURES

    width = 64
    # exploration prior of the decision logits: mostly re-test at first, so that restorations can
    # meet test results (a uniform start submits after ~4 steps, before any evidence is gathered)
    prior = torch.log(torch.tensor([0.7, 0.15, 0.05, 0.1]))
    n_features, n_global = len(PAIR_FEATURES), len(GLOBAL_FEATURES)

    evidence_prior = torch.zeros(n_features)
    evidence_prior[[k for k, name in enumerate(PAIR_FEATURES) if name.endswith("_score")]] = 2.0
    evidence_prior[PAIR_FEATURES.index("restored")] = -2.0

    class PairEncoder(BaseFeaturesExtractor):
        def __init__(self, observation_space: Any) -> None:
            self.n_pairs = (observation_space.shape[0] - n_global) // n_features
            super().__init__(observation_space, features_dim=(self.n_pairs + 1) * width + self.n_pairs * n_features)
            self.pair = nn.Sequential(nn.Linear(n_features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
            self.context = nn.Sequential(nn.Linear(width + n_global, width), nn.ReLU())

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            table = obs[:, : self.n_pairs * n_features].reshape(-1, self.n_pairs, n_features)
            valid = table[..., :1]
            h = self.pair(table) * valid
            pooled = h.sum(dim=1) / valid.sum(dim=1).clamp(min=1.0)
            c = self.context(torch.cat([pooled, obs[:, self.n_pairs * n_features:]], dim=1))
            return torch.cat([h.flatten(1), c, table.flatten(1)], dim=1)

    class SlotHead(nn.Module):
        def __init__(self, n_pairs: int) -> None:
            super().__init__()
            self.n_pairs = n_pairs
            self.slot = nn.Sequential(nn.Linear(2 * width, width), nn.ReLU(), nn.Linear(width, 1))
            self.other = nn.Linear(width, len(DECISIONS) + 2 + len(CONDITIONING))
            self.evidence = nn.Linear(n_features, 1, bias=False)

        def forward(self, latent: torch.Tensor) -> torch.Tensor:
            split = self.n_pairs * width
            h = latent[:, :split].reshape(-1, self.n_pairs, width)
            c = latent[:, split : split + width]
            rows = latent[:, split + width :].reshape(-1, self.n_pairs, n_features)
            slots = self.slot(torch.cat([h, c[:, None, :].expand(-1, self.n_pairs, -1)], dim=2)).squeeze(2)
            slots = slots + self.evidence(rows).squeeze(2)
            other = self.other(c)
            return torch.cat([other[:, : len(DECISIONS)], slots, other[:, len(DECISIONS):]], dim=1)

    class PairPolicy(MaskableActorCriticPolicy):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.update(features_extractor_class=PairEncoder, net_arch={"pi": [], "vf": [width]})
            super().__init__(*args, **kwargs)

        def _build(self, lr_schedule: Any) -> None:
            super()._build(lr_schedule)
            self.action_net = SlotHead(self.features_extractor.n_pairs)
            for last in (self.action_net.slot[-1], self.action_net.other):
                nn.init.orthogonal_(last.weight, gain=0.01)
                nn.init.zeros_(last.bias)
            with torch.no_grad():
                self.action_net.other.bias[: len(DECISIONS)] = prior
                self.action_net.evidence.weight[0] = evidence_prior
            self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    return PairPolicy


def train(args: argparse.Namespace) -> tuple[Any, float]:
    import torch
    from gymnasium.wrappers import TransformReward
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(args.threads)
    scale = partial(operator.mul, args.reward_scale)
    venv = make_vec_env(lambda: TransformReward(make_env(args), scale), n_envs=args.n_envs, seed=args.seed,
                        vec_env_cls=DummyVecEnv)
    if args.policy == "pairs":
        policy, policy_kwargs = pair_policy(), {}
    else:
        policy, policy_kwargs = "MlpPolicy", {"net_arch": {"pi": [128, 128], "vf": [128, 128]}}
    model = MaskablePPO(
        policy, venv, learning_rate=args.learning_rate, n_steps=args.n_steps, batch_size=args.batch_size,
        gamma=args.gamma, ent_coef=args.ent_coef, seed=args.seed, device="cpu", verbose=0,
        policy_kwargs=policy_kwargs,
    )
    callbacks = CallbackList([
        curve_callback(args.out / "learning_curve.csv", args.time_limit),
        CheckpointCallback(max(1, args.checkpoint_every // args.n_envs), str(args.out / "checkpoints"), "repair"),
    ])
    start = time.perf_counter()
    model.learn(args.timesteps, callback=callbacks)
    seconds = time.perf_counter() - start
    model.save(args.out / "model.zip")
    return model, seconds


def play(env: Any, act: Any, instance: int) -> dict[str, Any]:
    """One test episode with ``act(observation) -> action``; its final scores."""
    obs, _ = env.reset(seed=instance, options={"split": "test", "instance": instance})
    done, steps = False, 0
    while not done:
        obs, _, terminated, truncated, info = env.step(act(obs))
        done, steps = terminated or truncated, steps + 1
    return {**info["scores"], "steps": steps}


def evaluate(model: Any, args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-instance rows and the summary on the family's test instances."""
    from causal_gym.envs.heuresis.env import load_instance
    from causal_gym.envs.heuresis.references import oracle_graph
    from causal_gym.envs.heuresis.repair import EmptySetKCIRule
    from causal_gym.metrics import paired_bootstrap

    env = make_env(args, split="test")
    rule = EmptySetKCIRule(env)
    rows = []
    for k in range(args.eval_instances):
        policy = play(env, lambda o: model.predict(o, action_masks=env.action_masks(), deterministic=True)[0], k)
        scripted = play(env, rule.act, k)
        instance, reference = load_instance(args.family, "test", k, args.d, args.n, 2.0)
        oracle_f1 = oracle_graph(instance, reference)[1]["f1"]
        rows.append({
            "instance": k, "pc_kci_f1": policy["pc_kci_f1"], "policy_f1": policy["adjacency_f1"],
            "rule_f1": scripted["adjacency_f1"], "oracle_f1": oracle_f1,
            "policy_gain": policy["f1_gain_over_pc"], "rule_gain": scripted["f1_gain_over_pc"],
            "oracle_gain": oracle_f1 - policy["pc_kci_f1"], "n_deleted": policy["n_deleted"],
            "n_wrong": policy["n_wrong_deletions"], "policy_recovered": policy["recovered"],
            "policy_harmful": policy["harmful"], "rule_recovered": scripted["recovered"],
            "rule_harmful": scripted["harmful"], "policy_steps": policy["steps"],
        })
    column = {key: np.array([r[key] for r in rows], dtype=float) for key in rows[0]}
    zeros = np.zeros(len(rows))

    def interval(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
        mean, low, high = paired_bootstrap(a, b, seed=args.seed)
        return {"mean": round(mean, 4), "ci95": [round(low, 4), round(high, 4)]}

    summary = {
        "family": args.family, "instances": len(rows),
        "mean_f1": {name: round(float(column[f"{name}_f1"].mean()), 4)
                    for name in ("pc_kci", "policy", "rule", "oracle")},
        "policy_minus_pc_kci": interval(column["policy_gain"], zeros),
        "rule_minus_pc_kci": interval(column["rule_gain"], zeros),
        "policy_minus_rule": interval(column["policy_gain"], column["rule_gain"]),
        "oracle_minus_pc_kci": interval(column["oracle_gain"], zeros),
        "policy_mean_recovered": round(float(column["policy_recovered"].mean()), 3),
        "policy_mean_harmful": round(float(column["policy_harmful"].mean()), 3),
        "rule_mean_recovered": round(float(column["rule_recovered"].mean()), 3),
        "rule_mean_harmful": round(float(column["rule_harmful"].mean()), 3),
        "mean_wrong_deletions": round(float(column["n_wrong"].mean()), 3),
    }
    return rows, summary


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    warm = warm_train_pool(args)
    print(f"train pool: {args.train_instances} {args.family} instances ready in {warm:.0f} s (PC-KCI, disk-cached)")
    model, seconds = train(args)
    print(f"trained {model.num_timesteps} steps in {seconds:.0f} s")
    rows, summary = evaluate(model, args)
    summary.update(policy=args.policy, train_seconds=round(seconds, 1), train_timesteps=int(model.num_timesteps),
                   train_pool_seconds=round(warm, 1))
    with (args.out / "eval.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{summary['family']}, {summary['instances']} test instances: mean adjacency F1 "
          + ", ".join(f"{name} {value:.3f}" for name, value in summary["mean_f1"].items()))
    print("paired differences of F1 gain, mean [95% bootstrap interval]:")
    for key in ("policy_minus_pc_kci", "rule_minus_pc_kci", "policy_minus_rule", "oracle_minus_pc_kci"):
        cell = summary[key]
        print(f"  {key.replace('_minus_', ' - '):<18} {cell['mean']:+.3f} [{cell['ci95'][0]:+.3f}, {cell['ci95'][1]:+.3f}]")
    print(f"wrong deletions per instance {summary['mean_wrong_deletions']:.2f}; recovered / harmful restorations: "
          f"policy {summary['policy_mean_recovered']:.2f} / {summary['policy_mean_harmful']:.2f}, "
          f"rule {summary['rule_mean_recovered']:.2f} / {summary['rule_mean_harmful']:.2f}")
    print(f"(all numbers in {args.out / 'summary.json'}; per instance in {args.out / 'eval.csv'})")


if __name__ == "__main__":
    main()
