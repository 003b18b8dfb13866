"""run_code latency per call: the namespace backends (bwrap, unshare) vs the in-process "process" one.

Every backend runs the same three programs on Heuresis-sized data (600 x 10) in interleaved rounds,
so load on the machine affects all of them alike; the figure is the median wall time of a call
(interpreter start, numpy/scipy import, the program, teardown) and its ratio to ``"process"``.
Goal: a namespace backend costs at most 1.5 x the process backend.

A root caller whose interpreter lies in a home uid 65534 cannot traverse (pyenv's under a 0700
``/root``) also enters a private mount view (set up once per process) at each call; the first line
says whether this run does.

Usage: python benchmarks/sandbox.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from causal_gym.harness import SandboxUnavailable, namespaces, resolve_sandbox, run_code

PROGRAMS = {
    "print": "print(n, d)",
    "correlations": "print(np.corrcoef(X.T).round(2)[0])",
    "scipy.stats": "import scipy.stats\nprint(scipy.stats.kendalltau(X[:, 0], X[:, 1]).statistic)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    data = np.random.default_rng(0).normal(size=(600, 10))
    plan = namespaces.root_plan()
    view = os.geteuid() == 0 and bool(namespaces.reachable_view([*plan.binds, *plan.packages]))
    print(f"caller uid {os.geteuid()}; each namespace call enters a private mount view: {'yes' if view else 'no'}")
    backends = ["process"]
    for backend in ("bwrap", "unshare"):
        try:
            resolve_sandbox(backend)  # the one-off probe is not part of a call's cost
            backends.append(backend)
        except SandboxUnavailable as exc:
            print(f"{backend}: unavailable ({exc})")
    times: dict[tuple[str, str], list[float]] = {(b, p): [] for b in backends for p in PROGRAMS}
    for _ in range(args.rounds):
        for program, code in PROGRAMS.items():
            for backend in backends:
                start = time.perf_counter()
                result = run_code(code, data, sandbox=backend)
                times[backend, program].append(time.perf_counter() - start)
                if not result.ok:
                    raise RuntimeError(f"{backend} {program}: {result.error}")
    print(f"run_code, median of {args.rounds} calls (ms), ratio to the process backend (goal <= 1.5)")
    print(f"{'program':<14}" + "".join(f"{b:>22}" for b in backends))
    for program in PROGRAMS:
        base = statistics.median(times["process", program])
        cells = []
        for backend in backends:
            median = statistics.median(times[backend, program])
            cells.append(f"{1000 * median:12.1f} ({median / base:4.2f}x)")
        print(f"{program:<14}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
