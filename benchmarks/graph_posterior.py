"""Exact graph posterior: milliseconds per posterior update, as an intervention-design env steps.

An episode starts from ``--n0`` observational rows of a random linear-Gaussian SCM
(Erdős–Rényi DAG, expected degree 2) and then takes ``--steps`` steps; each step adds ONE row,
observational or under ``do(j)`` for a random node ``j`` (half each). A posterior update is
``BGeStats.add_row`` (Welford: a rank-1 change of each node's scatter matrix; a do(j) row
leaves ``j``'s statistics alone) + ``bge_local_scores`` + ``edge_posterior`` +
``expected_correct_entries`` (the reward's ingredient). The table reports, per ``d``, the
median ms per env-step for one environment and for a batch of ``--batch`` environments updated
with one call (ms per environment), and which share goes to the local scores.

References timed in the same run:
- brute force at d = 3, 4, 5: the edge marginals by enumerating every DAG (all parent-set
  choices, acyclicity check, linear extensions counted over all d! orders), weighted by
  extensions x parent-set prior x exp(total score); ratio = brute force / DP on the same scores;
- naive local scores at d = 10: a loop over nodes and parent sets with ``np.linalg.slogdet`` on
  each sub-matrix (the textbook way); ratio = naive / ours, and the largest difference.

Capped posteriors to d = 20: with at most ``--cap`` parents per node (default 3) only those sets
are scored (``bge_local_scores(max_parents=K)``), which lets the DP run above 16 nodes. The last
table times one posterior (scores + DP) at
d = 10, 15, 20 (``--n0`` + d rows, half of them do(j) rows): the one-time index tables of the DP, the
scores, the DP, the peak memory numpy allocated during one posterior (tracemalloc: it does not see the
compiled kernels' work arrays) beside the tables' size, and the process's peak resident memory so far
(which does); at d <= 16 the capped result is compared with today's path (all sets scored, then the
cap applied).

BLAS threads are capped (``--threads``, default 1). Target: <= 2 ms per env-step at d = 10.

Usage: python benchmarks/graph_posterior.py [--n0 50] [--steps 60] [--batch 16] [--seed 0] [--threads 1]
       [--cap 3] [--capped-only]
"""

from __future__ import annotations

import argparse
import itertools
import math
import resource
import statistics
import time
import tracemalloc

import numpy as np

from causal_gym import scm
from causal_gym.stats import graph_posterior as gp


def episode(d: int, n0: int, steps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n0 + steps`` rows and their intervention mask; step rows are do(j) with probability 1/2."""
    model = scm.SCM.random(scm.erdos_renyi_dag(d, 2.0, rng=rng), "linear", rng=rng)
    rows, masks = [model.sample(n0, rng=rng)], [np.zeros((n0, d), dtype=bool)]
    for _ in range(steps):
        mask = np.zeros((1, d), dtype=bool)
        if rng.random() < 0.5:
            target = int(rng.integers(d))
            mask[0, target] = True
            rows.append(model.sample(1, rng=rng, interventions=[scm.HardDo(target, value=float(rng.normal(0, 2)))]))
        else:
            rows.append(model.sample(1, rng=rng))
        masks.append(mask)
    return np.vstack(rows), np.vstack(masks)


def time_steps(data: np.ndarray, mask: np.ndarray, n0: int) -> tuple[list[float], list[float]]:
    """Per-step wall times (ms) of the whole update and of its local-score part.

    ``data`` is ``(n, d)`` or a batch ``(B, n, d)``; rows after the first ``n0`` arrive one per step.
    """
    stats = gp.BGeStats.from_data(data[..., :n0, :], mask[..., :n0, :])
    total, scoring = [], []
    for r in range(n0, data.shape[-2]):
        start = time.perf_counter()
        stats = stats.add_row(data[..., r, :], mask[..., r, :])
        scores = gp.bge_local_scores(stats)
        middle = time.perf_counter()
        gp.expected_correct_entries(gp.edge_posterior(scores).edge_probs)
        end = time.perf_counter()
        total.append((end - start) * 1e3)
        scoring.append((middle - start) * 1e3)
    return total, scoring


def brute_force(scores: np.ndarray) -> np.ndarray:
    """Edge marginals by enumerating every DAG (no DP), same prior as ``edge_posterior``.

    Candidates are all choices of one parent set per node (``2^(d(d-1))`` graphs); the acyclic
    ones are those that repeated source removal empties; each DAG's linear extensions are counted
    over all ``d!`` orders. Vectorised over the candidates, so d = 5 (about a million) takes seconds.
    """
    d = scores.shape[0]
    q = d - 1
    choice = np.indices((1 << q,) * d).reshape(d, -1).T  # parent-set code of every node
    full = choice.copy()  # the same sets as d-bit masks: insert a 0 bit at position j
    for j in range(d):
        low = choice[:, j] & ((1 << j) - 1)
        full[:, j] = low | ((choice[:, j] - low) << 1)
    a = ((full[:, None, :] >> np.arange(d)[None, :, None]) & 1).astype(np.int64)  # a[g, i, j]: i -> j
    alive = np.ones((len(a), d), dtype=np.int64)
    for _ in range(d):
        alive = alive * (np.einsum("gi,gij->gj", alive, a) > 0)
    keep = ~alive.any(axis=1)
    a, choice = a[keep], choice[keep]
    extensions = np.zeros(len(a))
    for order in itertools.permutations(range(d)):
        extensions += ~np.tril(a[:, order][:, :, order]).any(axis=(1, 2))
    log_rho = np.array([-math.log(math.comb(d - 1, k)) for k in range(d)])
    log_w = np.log(extensions) + (scores[np.arange(d), choice] + log_rho[a.sum(axis=1)]).sum(axis=1)
    w = np.exp(log_w - log_w.max())
    return np.einsum("g,gij->ij", w, a) / w.sum()


def naive_local_scores(data: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """BGe local scores with one slogdet per node and parent set (the loop our recursion replaces)."""
    from scipy.special import gammaln

    n_rows, d = data.shape
    alpha_mu, alpha_w = 1.0, d + 2.0
    t = alpha_mu * (alpha_w - d - 1) / (alpha_mu + 1)
    out = np.empty((d, 1 << (d - 1)))
    for j in range(d):
        rows = data[~mask[:, j]]
        n = rows.shape[0]
        mean = rows.mean(axis=0)
        centred = rows - mean
        r = t * np.eye(d) + centred.T @ centred + n * alpha_mu / (n + alpha_mu) * np.outer(mean, mean)
        others = [i for i in range(d) if i != j]
        for code in range(1 << (d - 1)):
            parents = [others[b] for b in range(d - 1) if code >> b & 1]
            p = len(parents)
            family = parents + [j]
            a = (n + alpha_w - d + p) / 2
            log_det_p = np.linalg.slogdet(r[np.ix_(parents, parents)])[1] if p else 0.0
            log_det_f = np.linalg.slogdet(r[np.ix_(family, family)])[1]
            out[j, code] = (
                0.5 * math.log(alpha_mu / (n + alpha_mu)) - n / 2 * math.log(math.pi)
                + gammaln(a + 0.5) - gammaln((alpha_w - d + p + 1) / 2) + (alpha_w - d + 2 * p + 1) / 2 * math.log(t)
                + a * log_det_p - (a + 0.5) * log_det_f
            )
    return out


def best_of(f, repeats: int) -> float:
    f()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n0", type=int, default=50)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads")
    parser.add_argument("--cap", type=int, default=3, help="parent-set cap of the d = 10/15/20 table")
    parser.add_argument("--capped-only", action="store_true", help="only the capped table")
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=args.threads):
        if not args.capped_only:
            run(args)
        capped(args)


def capped(args: argparse.Namespace) -> None:
    """One capped posterior at d = 10, 15, 20: time and memory (see the module docstring)."""
    rng = np.random.default_rng(args.seed)
    k = args.cap
    print(f"\none posterior with at most {k} parents per node (n = {args.n0} + d rows, half of them do(j))")
    print(f"{'d':>3} {'tables s':>9} {'tables MB':>10} {'scores ms':>10} {'DP ms':>9} {'peak MB':>8} "
          f"{'max RSS MB':>11} {'vs uncapped path':>17}")
    for d in (10, 15, 20):
        data, mask = episode(d, args.n0, d, rng)
        start = time.perf_counter()
        tables = gp._tables(d)
        built = time.perf_counter() - start
        size = sum(v.nbytes for v in tables.values())
        stats = gp.BGeStats.from_data(data, mask)
        gp.edge_posterior(gp.bge_local_scores(stats, max_parents=k))  # warm caches (prior mass)
        tracemalloc.start()
        start = time.perf_counter()
        scores = gp.bge_local_scores(stats, max_parents=k)
        middle = time.perf_counter()
        probs = gp.edge_posterior(scores).edge_probs
        end = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux
        if d <= gp.MAX_UNCAPPED_NODES:
            full = gp.bge_local_scores(stats)
            today = gp.edge_posterior(np.where(tables["size"] > k, -np.inf, full)).edge_probs
            check = f"max |diff| {np.abs(today - probs).max():.1e}"
        else:
            check = "(uncapped: too large)"
        print(f"{d:>3} {built:>9.1f} {size / 1e6:>10.0f} {(middle - start) * 1e3:>10.1f} {(end - middle) * 1e3:>9.0f} "
              f"{peak / 1e6:>8.0f} {rss:>11.0f} {check:>17}")


def run(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    print(f"posterior update per env-step (n = {args.n0} + t rows, {args.steps} steps, half of them do(j) rows), "
          f"{args.threads} BLAS thread(s); median ms")
    print(f"{'d':>3} {'1 env':>9} {'of which scores':>16} {f'batch {args.batch}, per env':>20}")
    for d in (6, 8, 10, 12):
        data, mask = episode(d, args.n0, args.steps, rng)
        total, scoring = time_steps(data, mask, args.n0)
        batch = [episode(d, args.n0, args.steps, rng) for _ in range(args.batch)]
        batched, _ = time_steps(np.stack([b[0] for b in batch]), np.stack([b[1] for b in batch]), args.n0)
        print(f"{d:>3} {statistics.median(total):>9.3f} {statistics.median(scoring):>16.3f} "
              f"{statistics.median(batched) / args.batch:>20.3f}")

    print("\nbrute force over all DAGs vs the DP (same BGe scores; best of repeats, ms)")
    for d in (3, 4, 5):
        data, mask = episode(d, args.n0, 10, rng)
        scores = gp.local_scores(data, mask)
        t_dp = best_of(lambda: gp.edge_posterior(scores), 20)
        t_bf = best_of(lambda: brute_force(scores), 1 if d == 5 else 5)
        gap = np.abs(brute_force(scores) - gp.edge_posterior(scores).edge_probs).max()
        print(f"d={d}: DP {t_dp:.3f} ms, brute force {t_bf:.1f} ms, ratio {t_bf / t_dp:,.0f}x, max |diff| {gap:.1e}")

    print("\nnaive loop-based local scores vs ours at d=10 (best of repeats, ms)")
    data, mask = episode(10, args.n0, args.steps, rng)
    t_ours = best_of(lambda: gp.local_scores(data, mask), 20)
    t_naive = best_of(lambda: naive_local_scores(data, mask), 2)
    gap = np.abs(naive_local_scores(data, mask) - gp.local_scores(data, mask)).max()
    print(f"d=10, n={data.shape[0]}: ours {t_ours:.3f} ms, naive {t_naive:.1f} ms, ratio {t_naive / t_ours:,.0f}x, "
          f"max |diff| {gap:.1e}")


if __name__ == "__main__":
    main()
