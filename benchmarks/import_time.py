"""Measure ``import causal_gym`` wall time in fresh interpreters (goal: < 1 s), next to numpy's.

Usage: python benchmarks/import_time.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CODE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def measure(module: str, repeats: int) -> float:
    times = [
        float(subprocess.run([sys.executable, "-c", CODE.format(module=module)], check=True,
                             capture_output=True, text=True).stdout)
        for _ in range(repeats)
    ]
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ours = measure("causal_gym", args.repeats)
    numpy_alone = measure("numpy", args.repeats)
    gymnasium_alone = measure("gymnasium", args.repeats)
    print(f"import causal_gym: {ours:.3f} s (median of {args.repeats}; goal < 1 s)")
    print(f"import numpy:      {numpy_alone:.3f} s  -> ratio {ours / numpy_alone:.1f}x")
    print(f"import gymnasium:  {gymnasium_alone:.3f} s  -> ratio {ours / gymnasium_alone:.1f}x")


if __name__ == "__main__":
    main()
