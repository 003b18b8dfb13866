"""The amortized EdgeNet against PC (Fisher z) on arena configurations, and inference time after one load.

Accuracy: ``--configs`` datasets at d = 10, n = 500 from the ``core`` prior (what the shipped
checkpoint trained on; dev seeds excluded, seeds from ``--seed``) and from ``out_of_prior`` (graph
families, mechanisms and noise laws it never saw). For each: EdgeNet's directed-edge F1 at its
threshold and its AUPRC (edge probabilities), PC's directed-edge F1 (undirected CPDAG edges count
both ways, :func:`~causal_gym.metrics.directed_edge_scores`) and both skeleton F1s. Means with a
paired bootstrap interval of EdgeNet - PC.

Speed: per-graph seconds at d = 10 / 30 / 100 (core prior, n = 500, ``--timing`` graphs each) of
EdgeNet's forward pass after its one load (load seconds printed apart), the same reading only
the first 128 rows (``max_rows=128``, the training row count), PC (Fisher z, alpha 0.05),
``ges_fast`` and causal-learn's ``ges`` (d <= 30 only: it takes far longer at 100), all in this
process on the same data, one BLAS / torch thread.

Usage: python benchmarks/amortized.py [--configs 30] [--timing 3] [--seed 20000000] [--checkpoint PATH]
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from causal_gym.discovery import run  # noqa: E402
from causal_gym.discovery.amortized import load  # noqa: E402
from causal_gym.envs.arena.prior import PRIORS, draw  # noqa: E402
from causal_gym.metrics import adjacency_scores, directed_edge_scores, edge_average_precision, paired_bootstrap  # noqa: E402


def accuracy(method, prior: str, seeds: range) -> None:
    rows = []
    for seed in seeds:
        data, truth, config = draw(PRIORS[prior], seed, d=10, n=500)
        if not truth.any():
            continue
        result = method.run(data)
        pc = run("pc", data, test="fisherz", alpha=0.05).graph
        rows.append((directed_edge_scores(truth, result.graph).f1, edge_average_precision(truth, result.probabilities),
                     directed_edge_scores(truth, pc).f1, adjacency_scores(truth, result.graph).f1,
                     adjacency_scores(truth, pc).f1))
    a = np.array(rows)
    mean, low, high = paired_bootstrap(a[:, 0], a[:, 2], seed=0)
    print(f"{prior:>13} d=10 n=500 ({len(a)} configs, seeds {seeds.start}..{seeds.stop - 1}): "
          f"EdgeNet F1 {a[:, 0].mean():.3f} AUPRC {a[:, 1].mean():.3f} | PC F1 {a[:, 2].mean():.3f} | "
          f"EdgeNet - PC F1 {mean:+.3f} [{low:+.3f}, {high:+.3f}] | skeleton F1 EdgeNet {a[:, 3].mean():.3f} PC {a[:, 4].mean():.3f}")


def speed(method, capped, d: int, seeds: range) -> None:
    times: dict[str, list[float]] = {"edgenet": [], "edgenet_128rows": [], "pc": [], "ges_fast": [], "ges": []}
    for seed in seeds:
        data, _, _ = draw(PRIORS["core"], seed, d=d, n=500)
        start = time.perf_counter()
        method.infer(data)
        times["edgenet"].append(time.perf_counter() - start)
        start = time.perf_counter()
        capped.infer(data)
        times["edgenet_128rows"].append(time.perf_counter() - start)
        times["pc"].append(run("pc", data, test="fisherz", alpha=0.05).runtime)
        times["ges_fast"].append(run("ges_fast", data).runtime)
        if d <= 30:
            times["ges"].append(run("ges", data).runtime)
    cells = " | ".join(f"{k} {np.mean(v):.3f}" for k, v in times.items() if v)
    print(f"d={d:>3}: seconds per graph (mean of {len(seeds)}) {cells} | PC / EdgeNet "
          f"{np.mean(times['pc']) / np.mean(times['edgenet']):.1f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", type=int, default=30)
    parser.add_argument("--timing", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20_000_000)
    parser.add_argument("--checkpoint", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    method = load("edgenet", args.checkpoint)
    print(f"EdgeNet load: {method.load_seconds:.3f} s (once)", flush=True)
    for prior in ("core", "out_of_prior"):
        accuracy(method, prior, range(args.seed, args.seed + args.configs))
    for d in (10, 30, 100):
        speed(method, load("edgenet", args.checkpoint, max_rows=128), d, range(args.seed, args.seed + args.timing))


if __name__ == "__main__":
    main()
