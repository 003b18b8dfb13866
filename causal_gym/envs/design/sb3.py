"""Stable-Baselines3's ``VecEnv`` over the batched design env: the standard route for SB3 agents.

Needs the ``rl`` extra (Stable-Baselines3). :class:`DesignSB3VecEnv` is
:class:`~causal_gym.envs.sb3_vec.BatchedSB3VecEnv` on a design id, checked to be one; over
:class:`~causal_gym.envs.design.vector.InterventionDesignVectorEnv` it changes nothing the agent
sees or does beyond the format:

- actions: the env's own space (``action="box" | "discrete" | "multidiscrete"``,
  :class:`~causal_gym.envs.design.batch.DesignInterface`);
- observations: ``observation="summary"`` is already one normalised ``Box(0, 1)`` vector (for
  ``MlpPolicy``); the ``"rows"`` Dict gets every entry flattened to 1-D (SB3's ``MultiInputPolicy``
  takes a Dict of 1-D ``Box`` and ``MultiBinary`` entries). Its ``data`` is unbounded: normalise it
  with SB3's ``VecNormalize(venv, norm_obs_keys=["data"])``;
- autoreset: the batched env resets on the step after an episode's end (Gymnasium's ``NEXT_STEP``);
  SB3 expects the reset observation together with the ``done`` flag, so the adapter takes that
  extra step at once and puts the final observation in ``info["terminal_observation"]`` (every
  episode of the batch ends at the same step). The last batch's scores are in :attr:`last_scores`.

Same instances as the single env: with ``options={"instance": k}`` (the ``test`` suite, or
``{"split": "dev", "instance": k}``) the batch plays instances ``k .. k + B - 1``, exactly those
:class:`~causal_gym.envs.design.env.InterventionDesignEnv` plays with ``options={"instance": k + b}``,
and its observations and rewards equal the single env's step for step (``tests/test_design_sb3.py``);
each later batch moves on by ``B``. On the ``train`` stream a batch is drawn from one entropy
(:func:`~causal_gym.envs.design.world.train_entropy`), so seeded train episodes differ from the
single env's. Nothing of the hidden SCM is shown before an episode ends (the env's observations
only).
"""

from __future__ import annotations

from typing import Any

from causal_gym.envs.design.spec import SETTINGS_BY_ID
from causal_gym.envs.sb3_vec import BatchedSB3VecEnv

__all__ = ["DesignSB3VecEnv"]


class DesignSB3VecEnv(BatchedSB3VecEnv):
    """SB3's ``VecEnv`` over ``num_envs`` design episodes in one numpy batch (see the module docstring).

    Parameters
    ----------
    env_id : str
        A design id (``InterventionDesign-*-v0``).
    num_envs, seed, options, **kwargs
        As :class:`~causal_gym.envs.sb3_vec.BatchedSB3VecEnv` (``kwargs``: the env's ``action=``,
        ``observation=``, ``budget=``, ...).
    """

    def __init__(self, env_id: str, num_envs: int, seed: int | None = None, options: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        if env_id not in SETTINGS_BY_ID:
            raise ValueError(f"{env_id!r} is not a design id; one of {sorted(SETTINGS_BY_ID)}")
        super().__init__(env_id, num_envs, seed, options, **kwargs)
