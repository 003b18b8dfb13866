"""Test-session settings: one BLAS thread per worker.

CI runs ``pytest -n 2`` on 2 cores; multi-threaded BLAS inside each worker oversubscribes the
machine and makes causal-learn's KCI (the reference in several tests) many times slower.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from threadpoolctl import threadpool_limits  # noqa: E402  (after the variables, before numpy work)

threadpool_limits(1)


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def isolated_cache(tmp_path_factory):
    """A fresh on-disk cache for one test module (PC-KCI runs and menu outputs are shared between its
    tests, never with the user's cache or another module), and an empty in-memory instance cache."""
    from causal_gym import _cache
    from causal_gym.envs.heuresis.env import load_instance

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_cache.CACHE_ENV, str(tmp_path_factory.mktemp("cache")))
        load_instance.cache_clear()
        yield
    load_instance.cache_clear()
