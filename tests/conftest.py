"""Test-session settings: one BLAS thread per worker.

CI runs ``pytest -n 2`` on 2 cores; multi-threaded BLAS inside each worker oversubscribes the
machine and makes causal-learn's KCI (the reference in several tests) many times slower.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from threadpoolctl import threadpool_limits  # noqa: E402  (after the variables, before numpy work)

threadpool_limits(1)
