"""ges_fast / gies_fast against causal-learn's GES and the gies package, same process, same data.

Each case draws a linear-Gaussian SCM on an Erdős–Rényi DAG (``--degree`` expected degree) and
``--n`` observational rows; the GIES cases add ``--n-int`` rows under a uniform hard intervention
on each of ``--targets`` random single nodes (the mask marks them). Every case runs ours and the
reference on the same data and prints both wall times, reference / ours, and whether the graphs
and total scores agree; ``d=100`` runs ours alone (causal-learn would take hours). Seeds are
fixed (``--seed``), so reruns see the same data.

BLAS is capped at one thread (environment variables before numpy loads, threadpoolctl after the
references' libraries are imported), so the ratio does not depend on the machine's free cores.

The ``xges:d`` cases put XGES beside them on the same data: ``xges`` with our score, ``xges``
with the package's numba score (its one-off compilation timed apart, on a warm-up fit, before
the first case) and causal-learn's GES, each as reference / ours (ours = ``ges_fast``); a negative
score difference (ours - reference) means XGES found a higher-scoring class.

Usage: python benchmarks/ges.py [--n 1000] [--degree 2] [--n-int 200] [--targets 5] [--seed 0]
       [--cases ges:20,ges:50,gies:20,gies:30,ours:100,xges:20,xges:50]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from causal_gym import scm  # noqa: E402
from causal_gym.discovery import run  # noqa: E402


def simulate(d: int, args: argparse.Namespace, interventional: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Data (and a mask for the GIES cases) from one seeded linear-Gaussian SCM."""
    rng = np.random.default_rng([args.seed, d, interventional])
    model = scm.SCM.random(scm.erdos_renyi_dag(d, args.degree, rng=rng), mechanism="linear", rng=rng)
    parts = [model.sample(args.n, rng=rng)]
    masks = [np.zeros((args.n, d), dtype=bool)]
    if interventional:
        for target in rng.choice(d, size=min(args.targets, d), replace=False).tolist():
            parts.append(model.sample(args.n_int, rng=rng, interventions=[scm.HardDo(target, low=-2.0, high=2.0)]))
            block = np.zeros((args.n_int, d), dtype=bool)
            block[:, target] = True
            masks.append(block)
    return np.vstack(parts), (np.vstack(masks) if interventional else None)


def timed(method: str, data: np.ndarray, mask: np.ndarray | None, **options: object) -> tuple[float, np.ndarray, float]:
    start = time.perf_counter()
    result = run(method, data, mask=mask, **options)
    return time.perf_counter() - start, result.graph, result.extras["score"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--degree", type=float, default=2.0)
    parser.add_argument("--n-int", type=int, default=200)
    parser.add_argument("--targets", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", default="ges:20,ges:50,gies:20,gies:30,ours:100,xges:20,xges:50")
    args = parser.parse_args()

    import causallearn.search.ScoreBased.GES  # noqa: F401  (load every BLAS before capping it)
    import gies  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    print(f"n={args.n} observational rows, expected degree {args.degree}; GIES cases add "
          f"{args.targets} single-node hard interventions x {args.n_int} rows")
    print(f"{'case':<22} {'d':>4} {'edges':>6} {'ours [s]':>9} {'reference [s]':>14} {'ratio':>8}  same graph / score diff")
    if any(case.startswith("xges:") for case in args.cases.split(",")):
        warm = np.random.default_rng(0).normal(size=(200, 3))
        compile_seconds = timed("xges", warm, None, scorer="numba")[0]
        print(f"xges numba scorer: first fit in this process {compile_seconds:.1f} s (compilation; not in the rows)")
    for case in args.cases.split(","):
        kind, d_text = case.split(":")
        if kind == "xges":
            xges_rows(int(d_text), args)
            continue
        d = int(d_text)
        data, mask = simulate(d, args, interventional=kind == "gies")
        ours_name = "gies_fast" if kind == "gies" else "ges_fast"
        t_ours, graph, score = timed(ours_name, data, mask)
        edges = int(np.triu(graph | graph.T).sum())
        label = {"ges": "ges_fast vs causal-learn", "gies": "gies_fast vs gies", "ours": "ges_fast alone"}[kind]
        if kind == "ours":
            print(f"{label:<22} {d:>4} {edges:>6} {t_ours:>9.3f} {'-':>14} {'-':>8}")
            continue
        t_ref, ref_graph, ref_score = timed("ges" if kind == "ges" else "gies", data, mask)
        same = bool(np.array_equal(graph, ref_graph))
        print(f"{label:<22} {d:>4} {edges:>6} {t_ours:>9.3f} {t_ref:>14.2f} {t_ref / t_ours:>7.0f}x  "
              f"{same} / {score - ref_score:+.1e}", flush=True)


def xges_rows(d: int, args: argparse.Namespace) -> None:
    """ges_fast against XGES (our score, the package's numba score) and causal-learn's GES."""
    data, _ = simulate(d, args, interventional=False)
    t_ours, graph, score = timed("ges_fast", data, None)
    edges = int(np.triu(graph | graph.T).sum())
    for label, method, options in (("xges vs ges_fast", "xges", {}), ("xges-numba vs ges_fast", "xges", {"scorer": "numba"}),
                                   ("causal-learn vs ours", "ges", {})):
        t_ref, ref_graph, ref_score = timed(method, data, None, **options)
        same = bool(np.array_equal(graph, ref_graph))
        print(f"{label:<22} {d:>4} {edges:>6} {t_ours:>9.3f} {t_ref:>14.2f} {t_ref / t_ours:>7.0f}x  "
              f"{same} / {score - ref_score:+.1e}", flush=True)


if __name__ == "__main__":
    main()
