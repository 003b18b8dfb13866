"""verifiers' plugin id for causal_gym (``vf-eval causal-gym-verifiers --env.taskset.gym-id ...``): verifiers
imports a taskset by a top-level module name, so this package re-exports
:mod:`causal_gym.integrations.verifiers`."""

from causal_gym.integrations.verifiers import CausalGymEnv, CausalGymHarness, CausalGymTaskset

__all__ = ["CausalGymEnv", "CausalGymHarness", "CausalGymTaskset"]
