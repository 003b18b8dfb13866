"""Generated data are bit-identical whatever BLAS kernel or thread count the machine uses.

OpenBLAS picks its kernel from the CPU (``OPENBLAS_CORETYPE`` forces one); matrix products then
round differently. The generators combine parents without BLAS (``causal_gym.scm.combine``), so
the data, the cache keys derived from them and every text printed from them are the same.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from causal_gym.scm import combine

PROGRAM = """
import hashlib
import causal_gym.envs.arena.families, causal_gym.envs.arena.expressions
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.envs.arena.pool import pool_config
from causal_gym.envs.causalab.suites import suite
digest = hashlib.sha256()
for family in ("lg", "anm", "hetero", "wild", "mixed", "gauntlet"):
    digest.update(make_instance(family, "test", 1, d=8, n=300).data.tobytes())
for k in (0, 130, 650):
    digest.update(pool_config(k).sample(300, rng=2).tobytes())
digest.update(repr(suite("5node")[3].make().prior_records).encode())
print(digest.hexdigest())
"""


def _digest(**env: str) -> str:
    completed = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True,
                               env={**os.environ, **env})
    return completed.stdout.strip()


def test_the_same_data_under_every_blas_kernel_and_thread_count():
    kernels = {"Haswell", "Nehalem", "Prescott"}  # x86-64 kernels every modern CPU can run
    if os.uname().machine != "x86_64":
        pytest.skip("the OpenBLAS kernel names are x86-64's")
    digests = {_digest(OPENBLAS_CORETYPE=k, OPENBLAS_NUM_THREADS="1") for k in kernels}
    digests.add(_digest(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2"))
    assert len(digests) == 1, digests


def test_combine_is_the_matrix_product():
    rng = np.random.default_rng(0)
    columns = rng.normal(size=(500, 7))
    for weights in (rng.normal(size=7), rng.normal(size=(7, 5))):
        np.testing.assert_allclose(combine(columns, weights), columns @ weights, rtol=1e-12, atol=1e-12)
    assert combine(columns[:, :0], np.zeros(0)).shape == (500,)
