"""Evaluation: play agents on environments and keep complete episode records."""

from causal_gym.eval.rollout import EpisodeRecord, rollout

__all__ = ["EpisodeRecord", "rollout"]
