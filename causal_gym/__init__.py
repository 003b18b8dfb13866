"""causal_gym: Gymnasium environments for causal discovery.

Importing the package registers every environment id with Gymnasium, so
``gym.make("Heuresis-wild-v0")`` works after ``import causal_gym`` (and
``gym.make("causal_gym:Heuresis-wild-v0")`` works without it). Heavy dependencies
(causal-learn, lingam, torch, ray, openai) are imported lazily by the functions that use them,
so ``import causal_gym`` stays fast.
"""

from __future__ import annotations

from causal_gym.envs.registration import register_envs

__version__ = "0.1.0"

register_envs()

__all__ = ["__version__"]
