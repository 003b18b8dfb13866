"""Train AlterNet (:mod:`causal_gym.discovery.amortized`) on its declared prior; resumable, on a GPU when there is one.

Step ``t`` draws one ``d`` (probability 3/4 uniform on 5..20, else on 21..50: equivariance carries
the weights to any ``d``, and small graphs are cheap) and one ``n`` (log-uniform on the prior's
range), then ``batch(d) = clip(round(240 / d), 4, 32)`` fresh datasets of the ``train`` seed stream
(:func:`causal_gym.discovery.amortized.prior.draw`; dataset ``k`` of run seed ``s`` is seed
``s * 10**9 + k``), and takes one AdamW step on the binary cross-entropy of the edge logits against
the true DAG (off-diagonal pairs, mean per dataset). No dataset is seen twice. The learning rate
warms up over 300 steps and follows a cosine to a tenth of ``--lr`` at ``--steps``.

Worker processes (``--workers``, default: every core but the trainer's, at least one) draw the
batches ahead of the trainer, so drawing costs no trainer time. Every ``--eval-every`` steps the
network scores a fixed dev set (the ``dev`` stream: 60 datasets, 20 each at d = 10, 20, 30; F1 of
the graph the method returns, :func:`~causal_gym.discovery.amortized.network.orient`) and
the row goes to ``alternet.curve.csv`` / ``alternet.curve.png``; the trainer state (``state.pt``:
weights, optimizer, step, curve, CPU seconds) is saved then and every ``--save-every`` steps, and
a rerun with the same ``--out`` resumes from it (the card lists each session's command and first
step: a resumed run may change ``--steps``, ``--rows`` or ``--threads``, not the network). The checkpoint (``alternet.pt``: weights, the rows
the network reads, the threshold that maximises mean dev F1) and its card (``alternet.card.json``:
prior, training schedule, seed, steps, datasets seen, wall and CPU seconds, device, dev scores,
command) are rewritten at every evaluation. To ship them, copy ``alternet.pt``,
``alternet.card.json`` and ``alternet.curve.csv`` into ``causal_gym/discovery/amortized/``.

Usage::

    python examples/train_amortized.py --out runs/alternet                  # the shipped run's settings
    python examples/train_amortized.py --out runs/alternet --steps 300 --eval-every 100   # a smoke run
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
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from causal_gym._workers import stop_pool, worker_pool  # noqa: E402
from causal_gym.discovery.amortized.network import AlterNet, Inputs, inputs, orient  # noqa: E402
from causal_gym.discovery.amortized.prior import PRIOR, STREAMS, draw  # noqa: E402
from causal_gym.metrics import directed_edge_scores, edge_average_precision  # noqa: E402

PREFETCH = 6  # batches drawn ahead per worker
SMALL_D = (5, 20)  # drawn with probability 3/4; else LARGE_D
LARGE_D = (21, 50)
DEV_DIMS = (10, 20, 30)  # the dev set: --dev-per-d datasets at each
THRESHOLDS = np.round(np.arange(0.2, 0.81, 0.05), 2)
GRAPH = ("pairs with p_ij + p_ji above the threshold, oriented into a DAG (network.orient): directions in decreasing "
         "probability, each kept unless it closes a directed cycle, so the thresholded graph whenever that is acyclic")


def step_shape(seed: int, step: int) -> tuple[int, int, int]:
    """``(d, n, batch)`` of training step ``step``: a pure function, so a resumed run draws the same."""
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(STREAMS["train"], 0, step)))
    low, high = SMALL_D if gen.random() < 0.75 else LARGE_D
    d = int(gen.integers(low, high + 1))
    n = int(np.exp(gen.uniform(np.log(PRIOR.n[0]), np.log(PRIOR.n[1] + 1))))
    return d, n, int(np.clip(round(240 / d), 4, 32))


def make_batch(seeds: range, d: int, n: int, rows: int) -> tuple[dict[str, np.ndarray], float]:
    """The stacked inputs and true graphs of datasets ``seeds`` (train stream), and this call's CPU seconds.

    Runs in a worker; a pure function of its arguments, so the data do not depend on which process draws.
    """
    start = time.process_time()
    torch.set_num_threads(1)
    items, graphs = [], []
    for seed in seeds:
        sample = draw(seed, stream="train", d=d, n=n)
        items.append(inputs(sample.data, sample.mask, rows))
        graphs.append(sample.graph)
    batch = Inputs.stack(items)
    arrays = {k: getattr(batch, k).numpy() for k in ("rows", "mask", "node", "pair")}
    arrays["graph"] = np.stack(graphs).astype(np.float32)
    return arrays, time.process_time() - start


def dev_set(rows: int, per_d: int) -> list[tuple[Inputs, np.ndarray]]:
    out = []
    for d in DEV_DIMS:
        for k in range(per_d):
            sample = draw(d * 1000 + k, stream="dev", d=d)
            out.append((inputs(sample.data, sample.mask, rows), sample.graph))
    return out


def evaluate(net: AlterNet, dev: list[tuple[Inputs, np.ndarray]], device: torch.device) -> dict[str, float]:
    """Mean dev AUPRC, directed F1 at 0.5 and at the best threshold of :data:`THRESHOLDS` (which it names)."""
    net.eval()
    aps, f1s = [], np.zeros((len(dev), THRESHOLDS.size))
    with torch.no_grad():
        for k, (x, graph) in enumerate(dev):
            p = torch.sigmoid(net(x.to(device))[0]).cpu().numpy().astype(float)
            np.fill_diagonal(p, 0.0)
            aps.append(edge_average_precision(graph, p))
            f1s[k] = [directed_edge_scores(graph, orient(p, t)).f1 for t in THRESHOLDS]
    net.train()
    best = int(np.argmax(f1s.mean(axis=0)))
    half = int(np.flatnonzero(THRESHOLDS == 0.5)[0])
    return {"dev_auprc": float(np.mean(aps)), "dev_f1_at_0.5": float(f1s[:, half].mean()),
            "dev_f1_best": float(f1s[:, best].mean()), "threshold": float(THRESHOLDS[best])}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [r["step"] for r in rows]
    for key in ("train_loss", "dev_auprc", "dev_f1_best"):
        ax.plot(steps, [r[key] for r in rows], marker=".", label=key)
    ax.set_xlabel("step")
    ax.legend()
    ax.set_title("AlterNet on its prior (dev: d = 10, 20, 30)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def learning_rate(step: int, steps: int, lr: float) -> float:
    if step < 300:
        return lr * (step + 1) / 300
    progress = min(1.0, (step - 300) / max(1, steps - 300))
    return lr * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * progress)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--rows", type=int, default=128, help="rows the attention stack reads per dataset")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2, help="pairs of (variables, rows) attention blocks")
    parser.add_argument("--relational", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--dev-per-d", type=int, default=20, help="dev datasets at each of d = 10, 20, 30")
    parser.add_argument("--save-every", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default 1 on a CPU)")
    parser.add_argument("--workers", type=int, default=None, help="data processes (default: cores - 1, at least 1)")
    parser.add_argument("--device", default="auto", help="auto (cuda when available), cpu or cuda")
    parser.add_argument("--max-minutes", type=float, default=float("inf"), help="stop (resumably) after this long")
    parser.add_argument("--out", type=Path, default=Path("runs/alternet"))
    args = parser.parse_args()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    threads = args.threads or 1
    torch.set_num_threads(threads)
    workers = args.workers or max(1, (os.cpu_count() or 2) - (1 if device.type == "cpu" else 0) - (threads - 1))
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    net = AlterNet(width=args.width, layers=args.layers, relational=args.relational).to(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    state_path = args.out / "state.pt"
    state: dict[str, Any] = {"step": 0, "seen": 0, "curve": [], "losses": [], "trainer_cpu": 0.0, "worker_cpu": 0.0,
                             "wall": 0.0, "args": {k: str(v) for k, v in vars(args).items()}}
    if state_path.exists():
        saved = torch.load(state_path, map_location=device, weights_only=False)
        if saved["hyper"] != net.hyper:
            raise SystemExit(f"{state_path} holds a network of {saved['hyper']}, not {net.hyper}: use another --out")
        net.load_state_dict(saved["weights"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["state"]
        print(f"resuming at step {state['step']} ({state['seen']} datasets seen)", flush=True)
    command = "python examples/train_amortized.py " + " ".join(sys.argv[1:])
    state.setdefault("sessions", []).append({"from_step": state["step"], "command": command})
    dev = dev_set(args.rows, args.dev_per_d)
    pool = worker_pool(workers)
    queue: deque[tuple[int, Future[tuple[dict[str, np.ndarray], float]]]] = deque()
    first_seen = state["seen"]
    planned = {"next": state["step"], "seen": first_seen}

    def submit() -> None:
        step = planned["next"]
        d, n, batch = step_shape(args.seed, step)
        start = args.seed * 10**9 + planned["seen"]
        queue.append((batch, pool.submit(make_batch, range(start, start + batch), d, n, args.rows)))
        planned["next"] += 1
        planned["seen"] += batch

    def save() -> None:
        torch.save({"hyper": net.hyper, "weights": net.state_dict(), "optimizer": optimizer.state_dict(),
                    "state": state}, state_path.with_suffix(".tmp"))
        os.replace(state_path.with_suffix(".tmp"), state_path)

    for _ in range(min(PREFETCH * workers, args.steps - state["step"])):
        submit()
    wall0, cpu0 = time.perf_counter() - state["wall"], time.process_time() - state["trainer_cpu"]
    session_start = time.perf_counter()
    stopped = False
    while state["step"] < args.steps:
        batch_size, future = queue.popleft()
        arrays, worker_seconds = future.result()
        if planned["next"] < args.steps:
            submit()
        graph = torch.from_numpy(arrays.pop("graph")).to(device)
        x = Inputs(*(torch.from_numpy(arrays[k]) for k in ("rows", "mask", "node", "pair"))).to(device)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(state["step"], args.steps, args.lr)
        logits = net(x)
        off = ~torch.eye(graph.shape[1], dtype=torch.bool, device=device)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, off], graph[:, off])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        state["step"] += 1
        state["seen"] += batch_size
        state["worker_cpu"] += worker_seconds
        state["losses"] = (state["losses"] + [loss.item()])[-args.eval_every:]
        state["wall"] = time.perf_counter() - wall0
        state["trainer_cpu"] = time.process_time() - cpu0
        stopped = time.perf_counter() - session_start > args.max_minutes * 60
        if state["step"] % args.eval_every == 0 or state["step"] == args.steps or stopped:
            row = {"step": state["step"], "datasets_seen": state["seen"], "wall_s": round(state["wall"], 1),
                   "cpu_hours": round((state["trainer_cpu"] + state["worker_cpu"]) / 3600, 3),
                   "lr": learning_rate(state["step"] - 1, args.steps, args.lr),
                   "train_loss": float(np.mean(state["losses"])), **evaluate(net, dev, device)}
            state["curve"].append(row)
            print(row, flush=True)
            write_outputs(args, net, state, row, device, threads, workers)
            save()
        elif state["step"] % args.save_every == 0:
            save()
        if stopped:
            break
    stop_pool(pool)
    print("stopped by --max-minutes (rerun to resume)" if stopped and state["step"] < args.steps else "done", flush=True)


def write_outputs(args: argparse.Namespace, net: AlterNet, state: dict[str, Any], row: dict[str, Any],
                  device: torch.device, threads: int, workers: int) -> None:
    """The curve (CSV and PNG), the checkpoint and its card, as of ``row``."""
    curve = state["curve"]
    with open(args.out / "alternet.curve.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(curve[-1]))
        writer.writeheader()
        writer.writerows(curve)
    plot(curve, args.out / "alternet.curve.png")
    weights = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    torch.save({"hyper": net.hyper, "weights": weights, "max_rows": args.rows, "threshold": row["threshold"]},
               args.out / "alternet.pt")
    card = {
        "model": "AlterNet (causal_gym.discovery.amortized.network)", "hyper": net.hyper,
        "parameters": sum(p.numel() for p in net.parameters()),
        "max_rows": args.rows, "threshold": row["threshold"], "graph": GRAPH,
        "input": "columns z-scored over all rows (so raw variances are not seen); mask as a second channel",
        "prior": PRIOR.to_dict(), "arena_coverage": PRIOR.arena_coverage(),
        "training": {"d": f"probability 3/4 uniform on {SMALL_D[0]}..{SMALL_D[1]}, else on {LARGE_D[0]}..{LARGE_D[1]}",
                     "n": "log-uniform on the prior's range, one per step", "batch": "clip(round(240 / d), 4, 32)",
                     "seed_stream": "train", "dataset_seeds": f"{args.seed} * 10**9 + k, k = 0..{state['seen'] - 1}",
                     "optimizer": "AdamW, weight decay 1e-4, gradient norm clipped at 1", "lr": args.lr,
                     "schedule": "300 warm-up steps, cosine to lr / 10 at the planned steps"},
        "steps": state["step"], "planned_steps": args.steps, "datasets_seen": state["seen"], "seed": args.seed,
        "wall_seconds": round(state["wall"], 1),
        "cpu_hours": {"trainer": round(state["trainer_cpu"] / 3600, 3), "data_workers": round(state["worker_cpu"] / 3600, 3)},
        "device": str(device), "torch_threads": threads, "data_workers": workers,
        "dev": {"stream": "dev", "datasets": {str(d): args.dev_per_d for d in DEV_DIMS}, "auprc": row["dev_auprc"],
                "f1_at_0.5": row["dev_f1_at_0.5"], "f1_at_threshold": row["dev_f1_best"]},
        "command": state["sessions"][-1]["command"],
        "sessions": state["sessions"],
    }
    (args.out / "alternet.card.json").write_text(json.dumps(card, indent=2) + "\n")


if __name__ == "__main__":
    main()
