"""One design policy across sizes and families: PPO on a mix of d and noise families, evaluated zero-shot.

The policy is :class:`~causal_gym.envs.design.policy.NodePairPolicy` on the standard route
(``action="discrete"``, ``value_grid=(1.0,)``: observe or a node at ``+value_bound``;
``observation="summary"``: the posterior's edge marginals, each node's share of the experiments,
the budget left; the ``"confidence"`` reward). Its weights do not depend on ``d``, so one network
plays every size; SB3's PPO, though, keeps one rollout buffer of one observation shape. So each
training setting gets its own PPO (its own env, buffer and counters) and all share one set of
weights and one Adam state: before a rollout the setting's PPO loads them, after its update they
are copied back (:class:`SharedWeights`). The settings are visited in a shuffled order each round,
one rollout each.

Training mix (:data:`TRAIN_SETTINGS`): d in {6, 8, 10, 12}, Erdős–Rényi and scale-free graphs,
Gaussian and Gumbel noise, ``expected_degree = min(4, (d - 1) / 2)``, 50 observational rows,
T = 3 experiments. Held out (:data:`EVAL_SETTINGS`): sizes 5, 7, 9, 14, 16 and 20 (ER, Gaussian;
d = 20 with the posterior and the instances capped at 4 parents), and the families never trained on:
Laplace and uniform noise, and a per-instance mix of all four (``noise="mixed"``), at d = 10.

Per seed (``--seeds``): ``--timesteps`` env steps over the mix; every ``--eval-every`` steps the
deterministic policy plays the first ``--dev`` instances of the ``dev`` suite of each of
:data:`CURVE_SETTINGS`; ``curve-mix.csv`` and ``curve-mix.png`` (round-robin's dev return as the
reference). The shared weights go to ``<out>/mix-pair-seed<k>.zip`` (a PPO zip of the d = 10 setting,
whose policy plays any d through :func:`choose`) at every curve point, so a run killed from outside
keeps the policy of its last point; ``--max-minutes`` is checked between rounds of the mix.

``--evaluate`` plays every ``mix-pair-seed*.zip`` of ``--out`` (or ``--models``) on test instances
``--first .. --first + --test - 1`` of each of ``--eval`` (names of :data:`EVAL_SETTINGS` and
:data:`TRAIN_SETTINGS`; d = 20 on its first ``--test-d20``), writing rows in the CSV format of
``examples/design_baselines.py`` (``setting`` column: the setting's name) to ``eval-mix.csv``.
``--shortlist M`` (M > 1) plays each policy as the proposer of a greedy lookahead instead
(:class:`~causal_gym.envs.design.policy_designer.PolicyDesigner`): the best of its M best designs by
``shortlist_samples`` predictive outcomes each, at most a tenth of full greedy's posterior
evaluations (agent ``mix-pair-shortlistM-seed<k>``).
``--split dev`` plays dev instances (to choose M; ``--first 0``).

Usage::

    python examples/train_design_mix.py --seeds 0 1 2 --timesteps 150000 --out runs/design-mix
    python examples/train_design_mix.py --evaluate --out runs/design-mix --first 400 --test 200
    python examples/train_design_mix.py --evaluate --out runs/design-mix --first 400 --test 200 --shortlist 2
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
import torch  # noqa: E402
from _design_common import play_batch, write_csv  # noqa: E402  (the script's folder is on sys.path)
from stable_baselines3 import PPO  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.envs.design.baselines import GreedyDesigner, shortlist_samples  # noqa: E402
from causal_gym.envs.design.policy import NodePairPolicy  # noqa: E402
from causal_gym.envs.design.policy_designer import PolicyDesigner  # noqa: E402
from causal_gym.envs.design.sb3 import DesignSB3VecEnv  # noqa: E402
from causal_gym.envs.design.spec import SETTINGS_BY_ID  # noqa: E402
from causal_gym.envs.design.world import DesignSetting  # noqa: E402
from causal_gym.harness.rollout import rollout  # noqa: E402

BASE_ID = "InterventionDesign-lg10-T3-v0"
ROUTE = {"action": "discrete", "value_grid": (1.0,), "observation": "summary"}
METRICS = ("gain", "truth_gain", "information_gain", "expected_shd", "auprc", "map_f1")


def degree(d: int) -> float:
    """The expected degree of the study at ``d`` nodes: 4, or ``(d - 1) / 2`` where 4 would be too dense."""
    return min(4.0, (d - 1) / 2)


def setting(d: int, graph: str = "er", noise: str = "gaussian") -> dict[str, Any]:
    """The env keywords of one setting of the study (T = 3; a cap of 4 parents above d = 16)."""
    kwargs: dict[str, Any] = {"d": d, "graph": graph, "noise": noise, "expected_degree": degree(d), "budget": 3}
    if d > 16:
        kwargs["max_parents"] = 4
    return kwargs


def name_of(kwargs: dict[str, Any]) -> str:
    keys = ("d", "graph", "expected_degree", "noise", "budget", "max_parents")
    return DesignSetting(**{k: kwargs[k] for k in keys if k in kwargs}).name


TRAIN_SETTINGS = [setting(d, g, n) for d in (6, 8, 10, 12) for g in ("er", "sf") for n in ("gaussian", "gumbel")]
EVAL_SETTINGS = [setting(d) for d in (5, 7, 9, 14, 16, 20)] + [setting(10, "er", n) for n in ("laplace", "uniform", "mixed")]
CURVE_SETTINGS = [setting(10), setting(14)]
SETTINGS = {name_of(s): s for s in TRAIN_SETTINGS + EVAL_SETTINGS}


def choose(policy: NodePairPolicy, obs: np.ndarray) -> np.ndarray:
    """The deterministic action of ``policy``'s network for summary observations of any ``d``."""
    with torch.no_grad():
        return policy.mlp_extractor.forward_actor(torch.as_tensor(obs)).argmax(dim=1).numpy()


def play(policy: NodePairPolicy, kwargs: dict[str, Any], split: str, first: int, count: int
         ) -> tuple[dict[str, np.ndarray], float]:
    """Instances ``first ..`` of ``split`` played by the policy in one batch: final scores and its CPU seconds."""
    venv = DesignSB3VecEnv(BASE_ID, count, options={"split": split, "instance": first}, **ROUTE, **kwargs)
    return play_batch(venv, kwargs["budget"], lambda obs, step: choose(policy, obs))


def round_robin(kwargs: dict[str, Any], split: str, first: int, count: int) -> float:
    """Round-robin's mean return (nodes 0, 1, 2 at ``+value_bound``)."""
    venv = DesignSB3VecEnv(BASE_ID, count, options={"split": split, "instance": first}, **ROUTE, **kwargs)
    scores, _ = play_batch(venv, kwargs["budget"], lambda obs, step: np.full(count, 1 + step % kwargs["d"]))
    return float(np.mean(scores["gain"]))


class SharedWeights:
    """One PPO per setting, one set of weights and one Adam state among them (module docstring)."""

    def __init__(self, args: argparse.Namespace, seed: int) -> None:
        self.models = [
            PPO(NodePairPolicy, DesignSB3VecEnv(BASE_ID, args.n_envs, seed=seed * 1000 + k, **ROUTE, **kwargs),
                n_steps=args.rollout_episodes * kwargs["budget"], batch_size=args.batch_size, n_epochs=10,
                gamma=1.0, gae_lambda=0.95, learning_rate=args.lr, ent_coef=args.ent_coef,
                policy_kwargs={"hidden": args.hidden}, seed=seed, device="cpu", verbose=0)
            for k, kwargs in enumerate(TRAIN_SETTINGS)
        ]
        self.weights = self.models[0].policy.state_dict()
        self.adam = self.models[0].policy.optimizer.state_dict()
        self.rng = np.random.default_rng(seed)
        self.steps = 0

    def round(self) -> None:
        """One rollout and update of every setting, in a shuffled order."""
        for k in self.rng.permutation(len(self.models)):
            model = self.models[k]
            model.policy.load_state_dict(self.weights)
            model.policy.optimizer.load_state_dict(self.adam)
            rollout = model.n_steps * model.n_envs
            model.learn(rollout, reset_num_timesteps=False)
            self.weights = {key: value.clone() for key, value in model.policy.state_dict().items()}
            self.adam = model.policy.optimizer.state_dict()
            self.steps += rollout

    def policy(self) -> NodePairPolicy:
        """The shared weights in the d = 10 setting's policy."""
        model = self.models[TRAIN_SETTINGS.index(setting(10))]
        model.policy.load_state_dict(self.weights)
        return model.policy

    def save(self, path: Path) -> None:
        self.policy()
        self.models[TRAIN_SETTINGS.index(setting(10))].save(path)


def train(args: argparse.Namespace, out: Path) -> None:
    torch.set_num_threads(1)
    references = {name_of(s): round_robin(s, "dev", 0, args.dev) for s in CURVE_SETTINGS}
    print("round-robin dev returns:", references, flush=True)
    curve = out / "curve-mix.csv"
    rows: list[dict[str, Any]] = []
    if curve.exists():  # resumable: seeds already in the curve are done
        with open(curve) as handle:
            rows = list(csv.DictReader(handle))
    done = {int(r["seed"]) for r in rows if r.get("final") == "1"}
    for seed in args.seeds:
        if seed in done and (out / f"mix-pair-seed{seed}.zip").exists():
            print(f"seed {seed}: done", flush=True)
            continue
        rows = [r for r in rows if int(r["seed"]) != seed]
        shared = SharedWeights(args, seed)
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        next_at = 0
        while True:
            final = shared.steps >= args.timesteps or time.perf_counter() - start_wall > 60 * args.max_minutes
            if shared.steps >= next_at or final:
                policy = shared.policy()
                row: dict[str, Any] = {"seed": seed, "env_steps": shared.steps,
                                       "wall_s": round(time.perf_counter() - start_wall, 1),
                                       "cpu_s": round(time.process_time() - start_cpu, 1), "final": int(final)}
                for kwargs in CURVE_SETTINGS:
                    scores, _ = play(policy, kwargs, "dev", 0, args.dev)
                    row[f"dev_{name_of(kwargs)}"] = float(np.mean(scores["gain"]))
                rows.append(row)
                shared.save(out / f"mix-pair-seed{seed}.zip")  # a run killed from outside keeps its last policy
                write_csv(curve, rows)
                print(row, flush=True)
                next_at = shared.steps + args.eval_every
            if final:
                break
            shared.round()
    plot(rows, out / "curve-mix.png", references)


def plot(rows: list[dict[str, Any]], path: Path, references: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(references)
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5))
    for ax, name in zip(np.atleast_1d(axes), names):
        for seed in sorted({int(r["seed"]) for r in rows}):
            mine = [r for r in rows if int(r["seed"]) == seed]
            ax.plot([int(r["env_steps"]) for r in mine], [float(r[f"dev_{name}"]) for r in mine], marker=".",
                    label=f"seed {seed}")
        ax.axhline(references[name], color="k", linestyle="--", label="round-robin")
        ax.set_xlabel("env steps (all settings of the mix)")
        ax.set_ylabel("dev return (confidence)")
        ax.set_title(f"PPO NodePairPolicy on the mix; dev {name}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def evaluate(args: argparse.Namespace, out: Path) -> None:
    source = Path(args.models) if args.models else out
    models = sorted(source.glob("mix-pair-seed*.zip"))
    if not models:
        raise SystemExit(f"no mix-pair-seed*.zip in {source}: train first")
    path = out / "eval-mix.csv"
    rows: list[dict[str, Any]] = []
    if path.exists():  # resumable: (agent, setting) pairs already played are kept
        with open(path) as handle:
            rows = list(csv.DictReader(handle))
    played = {(r["agent"], r["setting"] or r["env_id"]) for r in rows}  # registered ids have no setting name
    for model_path in models:
        policy = PPO.load(model_path, device="cpu").policy
        agent = model_path.stem
        if args.shortlist > 1:  # mix-pair-seed0 -> mix-pair-shortlist2-seed0: design_table groups the seeds
            head, _, seed = agent.rpartition("-seed")
            agent = f"{head}-shortlist{args.shortlist}-seed{seed}"
        for name in args.eval:
            if (agent, name) in played:
                continue
            registered = name in SETTINGS_BY_ID  # an id: its own keywords over the base id's
            kwargs = {"budget": 3, **SETTINGS_BY_ID[name]} if registered else SETTINGS[name]
            count = args.test_d20 if kwargs.get("d", 10) > 16 else args.test
            start = time.perf_counter()
            if args.shortlist > 1:
                new = play_shortlisted(policy, kwargs, args.split, args.first, count, args.shortlist)
            else:
                scores, thinking = play(policy, kwargs, args.split, args.first, count)
                new = [{m: round(float(scores[m][k]), 6) for m in METRICS} | {"seconds": round(thinking / count, 6),
                                                                               "evaluations": 0}
                       for k in range(count)]
            rows += [{"env_id": name if registered else BASE_ID, "setting": "" if registered else name,
                      "agent": agent, "instance": args.first + k, **row} for k, row in enumerate(new)]
            write_csv(path, rows)
            print(f"{agent} {name}: return {np.mean([r['gain'] for r in new]):.3f} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)


def play_shortlisted(policy: NodePairPolicy, kwargs: dict[str, Any], split: str, first: int, count: int,
                     shortlist: int) -> list[dict[str, Any]]:
    """Instances ``first ..`` of ``split`` played by the greedy lookahead over the policy's ``shortlist`` best designs
    (:class:`PolicyDesigner` as its proposer, ``shortlist_samples`` outcomes each), one rollout at a time."""
    env = gym.make(BASE_ID, observe_posterior=True, **kwargs)
    designer = GreedyDesigner(samples=shortlist_samples(kwargs["d"], shortlist), value_grid=(1.0,),
                              proposer=PolicyDesigner(policy), shortlist=shortlist)
    rows = []
    for k in range(first, first + count):
        start = time.process_time()
        scores = rollout(env, designer, options={"split": split, "instance": k}).final_info["scores"]
        rows.append({m: round(float(scores[m]), 6) for m in METRICS}
                    | {"seconds": round(time.process_time() - start, 6), "evaluations": designer.evaluations})
        designer.evaluations = 0
    env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=150_000)
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--rollout-episodes", type=int, default=4, help="episodes per env per rollout")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--eval-every", type=int, default=15_000)
    parser.add_argument("--dev", type=int, default=100)
    parser.add_argument("--max-minutes", type=float, default=60.0, help="per seed")
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--models", default=None)
    parser.add_argument("--eval", nargs="+", default=[name_of(s) for s in EVAL_SETTINGS] + [name_of(setting(10))],
                        choices=sorted(SETTINGS) + sorted(SETTINGS_BY_ID),
                        help="setting names of the study, or registered design ids (played with budget 3 unless set)")
    parser.add_argument("--split", default="test", choices=["dev", "test"],
                        help="with --evaluate: dev instances to choose variants, test ones to report")
    parser.add_argument("--first", type=int, default=400)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--test-d20", type=int, default=50)
    parser.add_argument("--shortlist", type=int, default=1,
                        help="with --evaluate: > 1 plays the policy's best M designs through a greedy lookahead "
                             "(PolicyDesigner), at most a tenth of full greedy's posterior evaluations")
    parser.add_argument("--out", default="runs/design-mix")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.evaluate:
        evaluate(args, out)
    else:
        train(args, out)


if __name__ == "__main__":
    main()
