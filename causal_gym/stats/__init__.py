"""Evidence primitives: conditional-independence tests, strength grades, verdict stability.

- :class:`CITester` runs Fisher-z or KCI tests on one dataset with causal-learn's exact p-values,
  caches them and counts calls (:mod:`causal_gym.stats.tester`); KCI shares kernel factors and
  residual makers across tests (:mod:`causal_gym.stats.kci`).
- :func:`verdict`, :func:`strength_grade` and :data:`GRADES` turn a p-value into words
  (:mod:`causal_gym.stats.grades`).
- :func:`verdict_stability` reruns a test on subsamples (:mod:`causal_gym.stats.stability`).
"""

from __future__ import annotations

from causal_gym.stats.grades import GRADES, strength_grade, verdict
from causal_gym.stats.stability import verdict_stability
from causal_gym.stats.tester import TEST_OPTIONS, CITester

__all__ = ["CITester", "TEST_OPTIONS", "GRADES", "strength_grade", "verdict", "verdict_stability"]
