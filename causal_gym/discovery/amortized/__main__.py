"""Score the first ``k`` datasets of an ``.npz`` file after one load: the process a nested-``k`` timing runs.

Usage: ``python -m causal_gym.discovery.amortized NAME FILE K``. ``FILE`` holds arrays ``arr_0``,
``arr_1``, ... (``numpy.savez`` order); prints one JSON line: the load seconds and the per-graph
inference seconds. The parent times the whole process, so the interpreter start and the imports a
user pays before the first graph count in the fitted load (:mod:`causal_gym.envs.arena.load_split`).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from causal_gym.discovery.amortized import load


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit("usage: python -m causal_gym.discovery.amortized NAME FILE K")
    name, path, k = argv[0], argv[1], int(argv[2])
    with np.load(path) as archive:
        if not 1 <= k <= len(archive.files):
            raise SystemExit(f"K must lie in 1..{len(archive.files)} (datasets in {path}), got {k}")
        datasets = [archive[f"arr_{i}"] for i in range(k)]
    method = load(name)
    results = method.run_many(datasets)
    print(json.dumps({"load_seconds": method.load_seconds, "infer_seconds": [r.infer_seconds for r in results]}))


if __name__ == "__main__":
    main(sys.argv[1:])
