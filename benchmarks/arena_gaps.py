"""Where CausalArena's synthetic Table 9 gaps come from: the two diagnostics the README cites.

1. PC's orientations (``--store``): every PC answer of a ``causal-gym reproduce arena`` run store
   is re-scored with its skeleton oriented five ways -- as PC returned it (then the env's random
   orientation of undirected edges, i.e. the table's score), every edge at random, only the
   arrows of unshielded colliders kept (the rest at random), and two misreadings of the returned
   matrix: every arrow reversed (a transposed reading) and every edge in both directions. The
   paper's PC cells sit at the "random" level at d = 20 and 30.
2. DirectLiNGAM's pruning (``--lingam d``): lingam's adaptive-lasso weights on the obs splits of
   every pool configuration at ``d``, scored with ``|w| > t`` for several ``t``, overall and
   on the configurations with the outlier stressor (the paper's LiNGAM collapses there, Table 11).

Usage:
    python benchmarks/arena_gaps.py --store runs/arena-full/synthetic
    python benchmarks/arena_gaps.py --lingam 10
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import numpy as np

from causal_gym.metrics import directed_edge_scores, shd

DRAWS = 10
"""Random orientations averaged per answer."""


def _orient_at_random(pairs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each unordered pair of the symmetric boolean ``pairs`` as one arrow of random direction."""
    upper = np.triu(pairs, 1)
    coin = rng.random(pairs.shape) < 0.5
    return (upper & coin) | (upper & ~coin).T


def collider_arrows(graph: np.ndarray) -> np.ndarray:
    """The arrows ``i -> j`` of ``graph`` (directed where ``graph[i, j]`` and not ``graph[j, i]``)
    that take part in an unshielded collider ``i -> j <- k`` with ``i`` and ``k`` not adjacent."""
    skeleton = graph | graph.T
    directed = graph & ~graph.T
    arrows = np.zeros_like(directed)
    for j in range(len(graph)):
        parents = np.flatnonzero(directed[:, j])
        for i in parents:
            arrows[i, j] = any(k != i and not skeleton[i, k] for k in parents)
    return arrows


def pc_orientations(store: Path, seed: int = 0) -> dict[tuple[str, str], list[tuple[float, int]]]:
    """(d, convention) -> the (F1, SHD) of every finished PC answer of the store."""
    rng = np.random.default_rng(seed)
    latest = {}
    with open(store / "episodes.jsonl", encoding="utf-8") as stream:
        for text in stream:
            line = json.loads(text)
            latest[(line["variant"], line["instance"])] = line
    out: dict[tuple[str, str], list[tuple[float, int]]] = collections.defaultdict(list)
    for (variant, _), line in sorted(latest.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        if not variant.endswith("/pc") or "/obs/" not in variant or line["status"] != "finished":
            continue
        final = line["record"]["final_info"]
        graph = np.array(final["submitted_graph"], dtype=bool)
        truth = np.array(final["true_adjacency"], dtype=np.int8)
        scored = np.array(final["oriented_graph"], dtype=np.int8)
        d = variant.split("/")[0]
        out[(d, "as returned")].append((directed_edge_scores(truth, scored).f1, shd(truth, scored)))
        skeleton, colliders = graph | graph.T, collider_arrows(graph)
        undirected, arrows = graph & graph.T, graph & ~graph.T
        both = skeleton.astype(np.int8)
        out[(d, "both directions")].append((directed_edge_scores(truth, both).f1, shd(truth, both)))
        kept_and_random = {  # the arrows kept as they are, and the pairs oriented at random
            "all at random": (np.zeros_like(graph), skeleton),
            "colliders kept": (colliders, skeleton & ~(colliders | colliders.T)),
            "arrows reversed": (arrows.T, undirected),
        }
        for name, (kept, at_random) in kept_and_random.items():
            draws = []
            for _ in range(DRAWS):
                answer = (kept | _orient_at_random(at_random, rng)).astype(np.int8)
                draws.append((directed_edge_scores(truth, answer).f1, shd(truth, answer)))
            out[(d, name)].append(tuple(np.mean(draws, axis=0)))
    return out


def lingam_thresholds(d: int, thresholds: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.5)) -> None:
    """Print DirectLiNGAM's F1 / precision / recall at each ``|w|`` threshold on the obs splits of
    every configuration at ``d``, overall and on the outlier configurations."""
    import gymnasium as gym

    from causal_gym.discovery import run
    from causal_gym.envs.arena.baselines import standardize_columns
    from causal_gym.envs.arena.pool import DIMENSIONS, PER_BLOCK, pool_slot

    env = gym.make("CausalArena-synthetic-v0", d=d, split="obs", replicate=0, accept_cycles=True).unwrapped
    cells: dict[tuple[float, str], list[tuple[float, float, float]]] = collections.defaultdict(list)
    for k in range(10 * PER_BLOCK):
        family, position = divmod(k, PER_BLOCK)
        slot = pool_slot((family * len(DIMENSIONS) + DIMENSIONS.index(d)) * PER_BLOCK + position)
        obs, _ = env.reset(seed=0, options={"instance": k})
        real = np.flatnonzero(np.asarray(obs["variables"], dtype=bool))
        weights = run("direct_lingam", standardize_columns(np.asarray(obs["data"], float)[:, real])).extras["weights"]
        for t in thresholds:
            env.reset(seed=0, options={"instance": k})
            answer = np.zeros((len(obs["variables"]),) * 2, dtype=np.int8)
            answer[np.ix_(real, real)] = np.abs(weights) > t
            scores = env.step(answer)[4]["scores"]
            row = (scores["f1"], scores["precision"], scores["recall"])
            cells[(t, "all")].append(row)
            if "outliers" in slot.stressors:
                cells[(t, "outliers")].append(row)
    print(f"DirectLiNGAM at d = {d}, |w| > t (F1 / precision / recall; n configurations)")
    for (t, subset), rows in sorted(cells.items()):
        f1, precision, recall = np.mean(rows, axis=0)
        print(f"  t = {t:.1f} {subset:9} {f1:.3f} / {precision:.3f} / {recall:.3f}  (n = {len(rows)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="a synthetic run store of `causal-gym reproduce arena`")
    parser.add_argument("--lingam", type=int, help="run the DirectLiNGAM threshold scan at this d")
    args = parser.parse_args()
    if args.store is None and args.lingam is None:
        parser.error("give --store and/or --lingam")
    if args.store is not None:
        print("PC's answers re-oriented (mean directed F1 / SHD)")
        for (d, name), rows in sorted(pc_orientations(args.store).items()):
            f1, distance = np.mean(rows, axis=0)
            print(f"  {d:4} {name:15} {f1:.3f} / {distance:6.1f}  (n = {len(rows)})")
    if args.lingam is not None:
        lingam_thresholds(args.lingam)


if __name__ == "__main__":
    main()
