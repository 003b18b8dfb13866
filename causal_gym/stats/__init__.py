"""Evidence primitives: conditional-independence tests, strength grades, verdict stability.

- :class:`CITester` runs Fisher-z or KCI tests on one dataset with causal-learn's exact p-values,
  caches them and counts calls (:mod:`causal_gym.stats.tester`); KCI shares kernel factors and
  residual makers across tests (:mod:`causal_gym.stats.kci`).
- :func:`verdict`, :func:`strength_grade` and :data:`GRADES` turn a p-value into words
  (:mod:`causal_gym.stats.grades`).
- :func:`verdict_stability` reruns a test on subsamples (:mod:`causal_gym.stats.stability`).
- :func:`local_scores` (BGe, observational and hard-interventional rows) and
  :func:`edge_posterior` (exact edge marginals under an order-modular prior) make the exact
  graph posterior of :mod:`causal_gym.stats.graph_posterior`, with :class:`BGeStats` for
  row-by-row updates and :func:`expected_correct_entries` / :func:`posterior_scores` to score it.
"""

from __future__ import annotations

from causal_gym.stats.grades import GRADES, strength_grade, verdict
from causal_gym.stats.graph_posterior import (
    BGeStats,
    GraphPosterior,
    PosteriorScores,
    bayes_optimal_graph,
    bge_local_scores,
    edge_posterior,
    expected_correct_entries,
    expected_shd,
    local_scores,
    posterior_scores,
)
from causal_gym.stats.stability import verdict_stability
from causal_gym.stats.tester import TEST_OPTIONS, CITester

__all__ = [
    "CITester",
    "TEST_OPTIONS",
    "GRADES",
    "strength_grade",
    "verdict",
    "verdict_stability",
    "BGeStats",
    "GraphPosterior",
    "PosteriorScores",
    "local_scores",
    "bge_local_scores",
    "edge_posterior",
    "bayes_optimal_graph",
    "expected_correct_entries",
    "expected_shd",
    "posterior_scores",
]
