"""Heuresis: repair episodes over a working graph on anonymous data from six mechanism families.

Reads top-down: :mod:`.families` (what generates an instance), :mod:`.instances` (the instances and
their hidden record), :mod:`.references` (best chosen algorithms, ideal oracle, headroom, router).
"""

from causal_gym.envs.heuresis.env import DEFAULT_BUDGETS, REWARDS, HeuresisEnv

__all__ = ["DEFAULT_BUDGETS", "REWARDS", "HeuresisEnv"]
