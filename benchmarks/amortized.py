"""AlterNet against PC, GES, IGSP and GIES on data from generators it never trained on; its time per graph.

Data come from :mod:`causal_gym.scm` (``SCM.random`` on ``erdos_renyi_dag`` / ``barabasi_albert_dag``,
expected degree 2), code written apart from the training prior (:mod:`causal_gym.discovery.amortized.prior`)
and never used by it; seeds are this script's own. Cells, ``--graphs`` graphs each, n = 1000:

- ``lg-er``, ``lg-sf``: linear Gaussian (the library's defaults: weights ``+-U[0.5, 2]``, noise
  scales ``U[0.5, 2]``), Erdos-Renyi or scale-free, d = 10 and 30;
- ``mlp-er``: the library's random tanh MLP mechanism (10 hidden units), Gaussian noise, d = 10 and 30;
- ``lg-er+int``, ``mlp-er+int``: the same SCMs played twice, 1,000 observational rows (``obs``) and 800
  observational plus 200 interventional rows (``obs+int``: a target pool of ``ceil(d / 2)`` nodes,
  one target per row, balanced, a hard do uniform between the target's observational 10th and 90th
  percentiles, as the arena's protocol), each method with the mask where it takes one.

Directed-edge F1 (:func:`~causal_gym.metrics.directed_edge_scores`: an undirected CPDAG edge claims
both directions), mean over graphs, and paired bootstrap intervals (95%) of AlterNet minus GES, PC
and the best classical method of the cell. Every method sees the raw columns; AlterNet standardizes
them itself, so it cannot read their variances (varsortability), only scale-free cues.

Speed: seconds per graph at d = 30, n = 1,000 (lg-er) after one load, AlterNet and PC in this
process on the same data with one torch / BLAS thread, wall and CPU (the machine is shared: CPU
seconds are what a quiet core would take), and their ratio.

Baseline graphs are cached in ``--cache`` (a JSON file keyed by cell, seed and method), so a rerun with
another checkpoint recomputes only AlterNet's.

With a mask AlterNet orients the pairs at intervened nodes by the intervened rows as well
(``invariance``, its default; ``--no-invariance`` turns it off; observational cells are the same either way).

Usage: python benchmarks/amortized.py [--graphs 20] [--timing 10] [--checkpoint PATH] [--cache FILE]
       [--cells lg-er,...] [--dims 10,30] [--seed 0] [--no-invariance]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from causal_gym.discovery import run  # noqa: E402
from causal_gym.discovery.amortized import load  # noqa: E402
from causal_gym.metrics import directed_edge_scores, paired_bootstrap  # noqa: E402
from causal_gym.scm import SCM, HardDo  # noqa: E402
from causal_gym.scm.graph_priors import barabasi_albert_dag, erdos_renyi_dag  # noqa: E402

N = 1000
OBS_METHODS = ("pc", "ges_fast", "igsp")
INT_METHODS = ("gies_fast", "igsp")
NAMES = {"pc": "PC", "ges_fast": "GES", "igsp": "IGSP", "gies_fast": "GIES", "alternet": "AlterNet"}


def scm_of(cell: str, d: int, seed: int) -> SCM:
    """The cell's SCM ``seed`` (``SeedSequence((seed, d, cell))``: its own stream per cell and d)."""
    gen = np.random.default_rng(np.random.SeedSequence([seed, d, sum(map(ord, cell))]))
    graph = (barabasi_albert_dag if cell.startswith("lg-sf") else erdos_renyi_dag)(d, 2.0, rng=gen)
    return SCM.random(graph, "mlp" if cell.startswith("mlp") else "linear", rng=gen, noise="gaussian")


def datasets(cell: str, d: int, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray]]:
    """``split -> (data, mask, truth)``: ``obs`` always, ``obs+int`` for the interventional cells."""
    scm = scm_of(cell, d, seed)
    gen = np.random.default_rng(np.random.SeedSequence([seed, d, sum(map(ord, cell)), 1]))
    truth = scm.graph
    out: dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray]] = {"obs": (scm.sample(N, gen), None, truth)}
    if cell.endswith("+int"):
        observational = scm.sample(800, gen)
        pool = gen.choice(d, size=int(np.ceil(d / 2)), replace=False)
        targets = pool[gen.permutation(np.arange(200) % pool.size)]
        rows, mask = [observational], [np.zeros((800, d), dtype=bool)]
        for target in pool:
            k = int((targets == target).sum())
            low, high = np.quantile(observational[:, target], [0.1, 0.9])
            rows.append(scm.sample(k, gen, [HardDo(int(target), low=float(low), high=float(high))]))
            block = np.zeros((k, d), dtype=bool)
            block[:, target] = True
            mask.append(block)
        out["obs+int"] = (np.vstack(rows), np.vstack(mask), truth)
    return out


def score(truth: np.ndarray, graph: np.ndarray) -> float:
    return float(directed_edge_scores(truth, graph).f1)


def accuracy(method, cell: str, d: int, seeds: range, cache: dict[str, float], cache_path: Path | None) -> None:  # noqa: ANN001
    splits = ("obs", "obs+int") if cell.endswith("+int") else ("obs",)
    classical = INT_METHODS if cell.endswith("+int") else OBS_METHODS
    table: dict[str, dict[str, list[float]]] = {s: {m: [] for m in (*classical, "alternet")} for s in splits}
    reoriented = dict.fromkeys(splits, 0)  # graphs whose thresholded pairs held a cycle (see network.orient)
    turned = dict.fromkeys(splits, 0)  # pairs the intervened rows turned (AlterNetMethod's invariance)
    for seed in seeds:
        for split, (data, mask, truth) in datasets(cell, d, seed).items():
            for name in classical:
                key = f"{cell}/d{d}/{seed}/{split}/{name}"
                if key not in cache:
                    cache[key] = score(truth, run(name, data, mask=mask).graph if mask is not None
                                       else run(name, data).graph)
                table[split][name].append(cache[key])
            result = method.run(data, mask)
            table[split]["alternet"].append(score(truth, result.graph))
            reoriented[split] += result.extras["reversed_edges"] > 0
            turned[split] += result.extras["invariance_turned"]
        if cache_path is not None:
            cache_path.write_text(json.dumps(cache))
    for split in splits:
        cells = table[split]
        ours = np.array(cells["alternet"])
        best = max(classical, key=lambda m: np.mean(cells[m]))
        means = " | ".join(f"{NAMES[m]} {np.mean(v):.2f} ± {np.std(v):.2f}" for m, v in cells.items())
        diffs = [f"- {NAMES[m]} {paired(ours, cells[m])}" for m in dict.fromkeys(
            [m for m in ("ges_fast", "pc", "gies_fast") if m in cells] + [best])]
        print(f"{cell:>10} d={d:<2} {split:7} ({len(ours)} graphs): {means} | AlterNet {' '.join(diffs)} "
              f"(best classical: {NAMES[best]}; AlterNet reoriented a cycle in {reoriented[split]}"
              + (f", turned {turned[split]} pairs by the intervened rows" if split == "obs+int" else "") + ")", flush=True)
    if len(splits) == 2:
        gain = {m: np.array(table["obs+int"][m]) - np.array(table["obs"][m]) for m in (*classical, "alternet")}
        print(f"{'':>10} d={d:<2} obs+int - obs: " + " | ".join(
            f"{NAMES[m]} {paired(g, np.zeros_like(g))}" for m, g in gain.items()), flush=True)


def paired(a: np.ndarray, b: np.ndarray) -> str:
    mean, low, high = paired_bootstrap(np.asarray(a), np.asarray(b), seed=0)
    return f"{mean:+.2f} [{low:+.2f}, {high:+.2f}]"


def speed(method, d: int, seeds: range) -> None:  # noqa: ANN001
    wall, cpu, pc_wall, pc_cpu = [], [], [], []
    for seed in seeds:
        data = datasets("lg-er", d, seed)["obs"][0]
        start, start_cpu = time.perf_counter(), time.process_time()
        method.infer(data)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        start, start_cpu = time.perf_counter(), time.process_time()
        run("pc", data, test="fisherz", alpha=0.05)
        pc_wall.append(time.perf_counter() - start)
        pc_cpu.append(time.process_time() - start_cpu)
    print(f"d={d}, n={N}: seconds per graph after load (mean of {len(seeds)}), AlterNet wall {np.mean(wall):.3f} "
          f"CPU {np.mean(cpu):.3f} | PC wall {np.mean(pc_wall):.3f} CPU {np.mean(pc_cpu):.3f} | "
          f"PC / AlterNet (CPU) {np.mean(pc_cpu) / np.mean(cpu):.1f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graphs", type=int, default=20)
    parser.add_argument("--timing", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--cache", type=Path, default=None, help="JSON file of baseline scores (read and extended)")
    parser.add_argument("--cells", default="lg-er,lg-sf,mlp-er,lg-er+int,mlp-er+int")
    parser.add_argument("--dims", default="10,30")
    parser.add_argument("--no-invariance", action="store_true",
                        help="AlterNet without its interventional orientation (the network's directions alone)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cache = json.loads(args.cache.read_text()) if args.cache is not None and args.cache.exists() else {}
    method = load("alternet", args.checkpoint, invariance=not args.no_invariance)
    print(f"AlterNet load: {method.load_seconds:.3f} s (once)", flush=True)
    seeds = range(args.seed, args.seed + args.graphs)
    for cell in args.cells.split(","):
        for d in map(int, args.dims.split(",")):
            accuracy(method, cell, d, seeds, cache, args.cache)
    if args.timing:
        speed(method, 30, range(args.seed, args.seed + args.timing))


if __name__ == "__main__":
    main()
