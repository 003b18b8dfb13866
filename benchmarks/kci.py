"""PC-KCI: causal_gym's PC (``run("pc", test="kci")``) against causal-learn's, same process.

For each of ``--datasets`` random nonlinear datasets (Erdős–Rényi DAG with about d edges,
per-node tanh / sin / quadratic mechanism of a random linear combination of the parents, Gaussian
noise, columns standardised) it runs both and prints whether the skeletons, the separating sets
(per deleted pair, the nodes in causal-learn's recorded sets vs ours) and the final graphs are
identical, both wall times and causal-learn's time divided by ours. A summary line gives the mean
ratio. Seeds are fixed (``--seed``), so reruns see the same data.

BLAS threads are capped with threadpoolctl (``--threads``, default 1) for both sides, so the
ratio does not depend on how many cores the machine has free.

Usage: python benchmarks/kci.py [--datasets 10] [--n 600] [--d 10] [--seed 0] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from causal_gym.discovery import run
from causal_gym.graphs import from_causallearn

ALPHA = 0.05


def simulate(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Nonlinear additive-noise data over a random DAG with expected degree 2."""
    upper = np.triu(rng.random((d, d)) < 2.0 / (d - 1), 1)  # nodes 0..d-1 in causal order
    mechanisms = (np.tanh, np.sin, lambda z: 0.5 * z**2)
    x = np.zeros((n, d))
    for j in range(d):
        parents = np.flatnonzero(upper[:, j])
        weights = rng.uniform(0.5, 1.5, parents.size) * rng.choice([-1.0, 1.0], parents.size)
        signal = mechanisms[rng.integers(3)](x[:, parents] @ weights) if parents.size else 0.0
        x[:, j] = signal + rng.uniform(0.3, 0.7) * rng.normal(size=n)
    perm = rng.permutation(d)  # anonymous column order
    x = x[:, perm]
    return (x - x.mean(0)) / x.std(0)


def sepset_nodes_ours(sepsets: dict) -> dict[tuple[int, int], frozenset[int]]:
    return {pair: frozenset().union(*map(frozenset, sets)) for pair, sets in sepsets.items()}


def sepset_nodes_causallearn(cg, d: int) -> dict[tuple[int, int], frozenset[int]]:
    return {
        (i, j): frozenset(int(v) for s in cg.sepset[i, j] for v in s)
        for i in range(d) for j in range(i + 1, d) if cg.sepset[i, j] is not None
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both implementations")
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=args.threads):
        compare(args)


def compare(args: argparse.Namespace) -> None:
    """Run both PCs on each dataset; print one comparison line per dataset and a summary."""
    from causallearn.search.ConstraintBased.PC import pc

    seeds = np.random.SeedSequence(args.seed).spawn(args.datasets)
    ratios, all_same = [], True
    print(f"PC-KCI, n={args.n}, d={args.d}, alpha={ALPHA}, {args.threads} BLAS thread(s): causal_gym vs causal-learn")
    for k, seed in enumerate(seeds):
        x = simulate(np.random.default_rng(seed), args.n, args.d)
        start = time.perf_counter()
        ours = run("pc", x, test="kci", alpha=ALPHA)
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        cg = pc(x, ALPHA, "kci", stable=True, uc_rule=0, uc_priority=2, show_progress=False)
        t_cl = time.perf_counter() - start
        theirs = from_causallearn(cg.G)
        same_skeleton = np.array_equal(ours.graph | ours.graph.T, theirs | theirs.T)
        same_sepsets = sepset_nodes_ours(ours.extras["sepsets"]) == sepset_nodes_causallearn(cg, args.d)
        same_graph = np.array_equal(ours.graph, theirs)
        all_same &= same_skeleton and same_sepsets and same_graph
        ratios.append(t_cl / t_ours)
        print(
            f"dataset {k}: skeleton {'same' if same_skeleton else 'DIFFERENT'}, "
            f"sepsets {'same' if same_sepsets else 'DIFFERENT'}, graph {'same' if same_graph else 'DIFFERENT'}; "
            f"edges {int(np.triu(ours.graph | ours.graph.T).sum())}, tests requested {ours.n_tests} "
            f"(computed {ours.extras['n_computed']}); ours {t_ours:.2f} s, causal-learn {t_cl:.2f} s, "
            f"ratio {t_cl / t_ours:.1f}x"
        )
    print(
        f"summary: {args.datasets} datasets, all identical: {all_same}; mean time ratio "
        f"(causal-learn / ours) {np.mean(ratios):.1f}x (min {np.min(ratios):.1f}x, max {np.max(ratios):.1f}x)"
    )


if __name__ == "__main__":
    main()
