"""Learning curves over seeds: each seed's curve, their mean and a 95% t-interval of the mean, reference lines.

Each seed's rows (``--x``, ``--y``) are interpolated linearly onto a common grid of ``--x`` (up to
the shortest seed's end), so seeds logged at different steps share one mean. Seeds come from a
``seed`` column, or one per CSV file when there is none. ``--reference NAME=VALUE`` draws a
horizontal line (e.g. round-robin's dev return). With ``--table`` the mean and interval at a few
points of the grid are printed, for the README.

Usage::

    python examples/plot_curves.py runs/design-mix/curve-mix.csv --x env_steps --y dev_er10-gaussian-deg4-T3 \\
        --reference round-robin=5.51 --out curve.png --title "PPO NodePairPolicy, the mix"
    python examples/plot_curves.py runs/planner/*/learning_curve.csv --x timesteps --y mean_edge_f1 --out planner.png
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict

import numpy as np
from scipy import stats


def curves(paths: list[str], x: str, y: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per seed: ``(x, y)`` sorted by ``x``."""
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for k, path in enumerate(paths):
        with open(path) as handle:
            for row in csv.DictReader(handle):
                if row.get(y, "") in ("", "nan"):
                    continue
                points[row.get("seed", str(k))].append((float(row[x]), float(row[y])))
    out = {}
    for seed, pts in points.items():
        pts.sort()
        out[seed] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return out


def band(per_seed: dict[str, tuple[np.ndarray, np.ndarray]], size: int = 50
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Grid, mean, and the 95% t-interval of the mean over seeds."""
    end = min(xs[-1] for xs, _ in per_seed.values())
    start = max(xs[0] for xs, _ in per_seed.values())
    grid = np.linspace(start, end, size)
    values = np.array([np.interp(grid, xs, ys) for xs, ys in per_seed.values()])
    mean = values.mean(axis=0)
    n = len(values)
    half = stats.t.ppf(0.975, n - 1) * values.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    return grid, mean, mean - half, mean + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--x", required=True)
    parser.add_argument("--y", required=True)
    parser.add_argument("--reference", nargs="*", default=[], help="NAME=VALUE horizontal lines")
    parser.add_argument("--xlabel", default=None)
    parser.add_argument("--ylabel", default=None)
    parser.add_argument("--title", default="")
    parser.add_argument("--table", action="store_true", help="print the mean and interval at 5 grid points")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_seed = curves(args.csv, args.x, args.y)
    if not per_seed:
        raise SystemExit(f"no rows with {args.x} and {args.y} in {args.csv}")
    grid, mean, low, high = band(per_seed)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for seed, (xs, ys) in sorted(per_seed.items()):
        ax.plot(xs, ys, linewidth=0.8, alpha=0.5, label=f"seed {seed}")
    ax.plot(grid, mean, color="C3", linewidth=2, label=f"mean of {len(per_seed)} seeds")
    ax.fill_between(grid, low, high, color="C3", alpha=0.2, label="95% interval of the mean")
    for item in args.reference:
        name, value = item.split("=")
        ax.axhline(float(value), color="k", linestyle="--", linewidth=1)
        ax.annotate(name, (grid[0], float(value)), fontsize=7, va="bottom")
    ax.set_xlabel(args.xlabel or args.x)
    ax.set_ylabel(args.ylabel or args.y)
    ax.set_title(args.title, fontsize=9)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    if args.table:
        for k in np.linspace(0, len(grid) - 1, 5).astype(int):
            print(f"{args.x} {grid[k]:>10.0f}: {mean[k]:.3f} [{low[k]:.3f}, {high[k]:.3f}]")


if __name__ == "__main__":
    main()
