"""Evaluation: play agents on environments, keep complete episode records, resume interrupted runs."""

from causal_gym.eval.runner import RunConfig, RunSummary, run
from causal_gym.eval.store import RunStore
from causal_gym.harness.rollout import EpisodeRecord, rollout

__all__ = ["EpisodeRecord", "RunConfig", "RunStore", "RunSummary", "rollout", "run"]
