"""One conformance suite over every registered id, as scikit-learn's ``check_estimator`` runs over
every estimator: the public checks of :mod:`causal_gym.testing` -- what DESIGN.md promises of every
env (the rules CONTRIBUTING.md lists), checked on each id built with its spec's ``small_kwargs``, and
every benchmark spec registered, complete and with its flags (``takes_seal``, ``takes_seed``) true of
the code they describe -- and the method checks over a few of the built-in methods.

A third-party package runs the same checks in its CI (``examples/plugin/tests``); a new benchmark's
ids join this suite through their spec alone. Its ids are those ``causal-gym list`` prints (a test
compares the two).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import causal_gym  # noqa: F401 -- registers the ids
from causal_gym.envs.benchmark import benchmarks
from causal_gym.envs.registration import env_descriptions
from causal_gym.testing import parametrize_with_checks

ROOT = Path(__file__).resolve().parents[1]
IDS = sorted(env_descriptions())

FAST_METHODS = ("pc", "ges_fast", "gies_fast", "direct_lingam", "random_regress", "igsp")
"""Built-in methods the method checks run on (quick at d <= 6): the checker's checks hold for real methods."""

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def test_the_suite_covers_every_id_that_causal_gym_list_prints():
    listing = subprocess.run([sys.executable, "-c", "from causal_gym.cli import main; main(['list'])"],
                             capture_output=True, text=True, check=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    listed = [line.split()[0] for line in listing.splitlines() if line.strip()]
    assert len(IDS) == len(listed) and set(IDS) == set(listed)
    assert len(IDS) >= 40
    assert {entry.id for spec in benchmarks() for entry in spec.envs} == set(IDS)


@parametrize_with_checks(benchmarks=benchmarks(), methods=FAST_METHODS)
def test_conformance(target, check):
    check(target)
