"""Train the amortized discovery network (:mod:`causal_gym.discovery.amortized`) on a declared arena prior.

Every step draws one ``d`` from the prior (:data:`causal_gym.envs.arena.prior.PRIORS`) and a batch of
fresh datasets of ``--rows`` rows with the arena's own generator, then takes one Adam step on the binary
cross-entropy of the edge logits against the true DAG (off-diagonal ordered pairs, ``A[i, j]`` for
``i -> j``). No dataset is seen twice. Every ``--eval-every`` steps the network scores a fixed dev
set (in-prior, d = 10, seeds disjoint from training): mean AUPRC and F1 at threshold 0.5 go to
``learning_curve.csv`` / ``learning_curve.png``. The checkpoint (``edgenet.pt``) and its training card
(``edgenet.card.json``: prior, steps, seed, wall time, datasets seen, final dev scores) go to ``--out``.

One process trains (one torch thread) while a worker process draws the next batches: about 0.45 s
per step on 2 quiet cores, so the defaults (15,000 steps) take about 2 hours; ``--max-minutes`` stops
early, and the card says so. To ship a new checkpoint, copy both files into
``causal_gym/discovery/amortized/``.

Usage::

    python examples/train_amortized.py --out runs/amortized                 # full setting
    python examples/train_amortized.py --max-minutes 70 --out runs/amortized  # the shipped checkpoint's run
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import deque
from concurrent.futures import Future
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from causal_gym._workers import stop_pool, worker_pool  # noqa: E402
from causal_gym.discovery.amortized.network import EdgeNet  # noqa: E402
from causal_gym.envs.arena.prior import PRIORS, draw  # noqa: E402
from causal_gym.metrics import directed_edge_scores, edge_average_precision  # noqa: E402

DEV_SEED = 10_000_000  # dev seeds start here; training seeds stay below it
PREFETCH = 4  # batches drawn ahead by the data worker


def standardize(x: np.ndarray) -> np.ndarray:
    """Column z-scores, as :class:`~causal_gym.discovery.amortized.EdgeNetMethod` applies at inference."""
    return (x - x.mean(axis=0)) / x.std(axis=0)


def datasets(prior_name: str, seeds: range, d: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Standardized datasets ``(batch, rows, d)`` and true graphs ``(batch, d, d)`` for ``seeds``.

    Rows are i.i.d., so ``rows`` rows are a subsample of a dataset of any ``n`` in the prior; fewer
    rows make a step cheaper (attention over samples is quadratic in them), and the network's mean
    over samples reads any ``n`` at inference. Runs in the data worker (a pure function of its
    arguments, so the data do not depend on which process draws them).
    """
    prior = PRIORS[prior_name]
    xs, gs = zip(*(draw(prior, s, d=d, n=rows)[:2] for s in seeds))
    return np.stack([standardize(x) for x in xs]).astype(np.float32), np.stack(gs).astype(np.float32)


def evaluate(net: EdgeNet, dev: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Mean AUPRC and F1 (threshold 0.5) over the dev set."""
    net.eval()
    aps, f1s = [], []
    with torch.no_grad():
        for x, g in dev:
            p = torch.sigmoid(net(torch.as_tensor(standardize(x), dtype=torch.float32)[None])[0]).numpy()
            np.fill_diagonal(p, 0.0)
            aps.append(edge_average_precision(g, p))
            f1s.append(directed_edge_scores(g, (p > 0.5).astype(np.int8)).f1)
    net.train()
    return {"dev_auprc": float(np.mean(aps)), "dev_f1": float(np.mean(f1s))}


def plot(rows: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [r["step"] for r in rows]
    for key in ("train_loss", "dev_auprc", "dev_f1"):
        ax.plot(steps, [r[key] for r in rows], marker="o", label=key)
    ax.set_xlabel("step")
    ax.legend()
    ax.set_title("EdgeNet on the arena prior (dev: in-prior, d = 10)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prior", default="core", choices=sorted(PRIORS))
    parser.add_argument("--steps", type=int, default=15000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--rows", type=int, default=128, help="training rows per dataset")
    parser.add_argument("--width", type=int, default=48)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dev", type=int, default=32)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the data worker takes another core)")
    parser.add_argument("--max-minutes", type=float, default=float("inf"))
    parser.add_argument("--out", type=Path, default=Path("runs/amortized"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = np.random.default_rng(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    dev = [draw(PRIORS[args.prior], DEV_SEED + i, d=10)[:2] for i in range(args.dev)]
    net = EdgeNet(width=args.width, layers=args.layers)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    rows: list[dict[str, float]] = []
    losses: list[float] = []
    start, seen, step, stopped_early = time.perf_counter(), 0, 0, False
    seed0 = args.seed * 1_000_000  # training seeds: seed0 + 0, 1, 2, ... (one fresh dataset each)
    prior = PRIORS[args.prior]
    # one worker process draws the next batches while this one trains (drawing is about half a step)
    pool = worker_pool(1)
    queue: deque[Future[tuple[np.ndarray, np.ndarray]]] = deque()

    def submit(k: int) -> None:
        d = int(gen.integers(prior.d[0], prior.d[1] + 1))
        first = seed0 + k * args.batch
        queue.append(pool.submit(datasets, args.prior, range(first, first + args.batch), d, args.rows))

    for k in range(min(PREFETCH, args.steps)):
        submit(k)
    for step in range(1, args.steps + 1):
        xs, gs = queue.popleft().result()
        if step + PREFETCH <= args.steps:
            submit(step + PREFETCH - 1)
        x, g = torch.from_numpy(xs), torch.from_numpy(gs)
        seen += args.batch
        logits = net(x)
        off = ~torch.eye(g.shape[1], dtype=torch.bool)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, off], g[:, off])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        out_of_time = time.perf_counter() - start > args.max_minutes * 60
        if step % args.eval_every == 0 or step == args.steps or out_of_time:
            row = {"step": step, "datasets_seen": seen, "wall_s": round(time.perf_counter() - start, 1),
                   "train_loss": float(np.mean(losses[-args.eval_every:])), **evaluate(net, dev)}
            rows.append(row)
            print(row, flush=True)
            with open(args.out / "learning_curve.csv", "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(row))
                writer.writeheader()
                writer.writerows(rows)
            plot(rows, args.out / "learning_curve.png")
            torch.save({"hyper": net.hyper, "weights": net.state_dict()}, args.out / "edgenet.pt")
            card = {
                "model": "EdgeNet (causal_gym.discovery.amortized.network)", "hyper": net.hyper,
                "prior": PRIORS[args.prior].to_dict(), "steps": step, "planned_steps": args.steps,
                "stopped_early": out_of_time and step < args.steps, "batch": args.batch, "training_rows": args.rows, "lr": args.lr,
                "seed": args.seed, "wall_seconds": row["wall_s"], "torch_threads": args.threads,
                "datasets_seen": seen, "dev": {"count": args.dev, "d": 10, "seeds_from": DEV_SEED,
                                              "auprc": row["dev_auprc"], "f1_at_0.5": row["dev_f1"]},
                "command": "python examples/train_amortized.py " + " ".join(sys.argv[1:]),
            }
            (args.out / "edgenet.card.json").write_text(json.dumps(card, indent=2) + "\n")
        if out_of_time:
            stopped_early = True
            break
    stop_pool(pool)
    print("stopped by --max-minutes" if stopped_early else "done", flush=True)


if __name__ == "__main__":
    main()
