"""verifiers' plugin id for causal_gym. verifiers imports an environment by a top-level module name, so this
package serves both of verifiers 0.3.1's command lines:

- ``eval causal-gym-verifiers --env.taskset.gym-id ...`` (v1) finds the taskset, harness and env classes
  of :mod:`causal_gym.integrations.verifiers`, re-exported here;
- ``vf-eval causal_gym_verifiers -a '{"gym_id": ...}'`` (classic) calls :func:`load_environment`, the
  classic environment of :mod:`causal_gym.integrations.verifiers_classic`.
"""

from typing import Any

from causal_gym.integrations.verifiers import CausalGymEnv, CausalGymHarness, CausalGymTaskset

__all__ = ["CausalGymEnv", "CausalGymHarness", "CausalGymTaskset", "load_environment"]


def load_environment(**env_args: Any) -> Any:
    """The classic verifiers environment (:func:`causal_gym.integrations.verifiers_classic.load_environment`)."""
    from causal_gym.integrations.verifiers_classic import load_environment as load

    return load(**env_args)
