"""Stable-Baselines3's ``VecEnv`` over the batched design env: the standard route for SB3 agents.

Needs the ``rl`` extra (Stable-Baselines3); nothing else in causal_gym imports this module except
:mod:`causal_gym.envs.design.learned`.

:class:`~causal_gym.envs.design.vector.InterventionDesignVectorEnv` is a Gymnasium ``VectorEnv``,
which SB3 does not take. :class:`DesignSB3VecEnv` adapts it and changes nothing the agent sees or
does beyond the format:

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

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

__all__ = ["DesignSB3VecEnv"]


def _flat(space: spaces.Space) -> spaces.Space:
    if isinstance(space, spaces.Box):
        return spaces.Box(space.low.reshape(-1), space.high.reshape(-1), dtype=space.dtype)
    return spaces.MultiBinary(int(np.prod(space.shape)))


class DesignSB3VecEnv(VecEnv):
    """SB3's ``VecEnv`` over ``num_envs`` design episodes in one numpy batch (see the module docstring).

    Parameters
    ----------
    env_id : str
        A design id (``InterventionDesign-*-v0``).
    num_envs : int
        Episodes per batch.
    seed : int, optional
        Seeds the train stream at the first reset.
    options : dict, optional
        Reset options of every reset, e.g. ``{"instance": 0}`` to play the test suite from instance 0.
    **kwargs
        The env's keywords (``action=``, ``observation=``, ``budget=``, ...), passed to ``gym.make_vec``.
    """

    def __init__(self, env_id: str, num_envs: int, seed: int | None = None, options: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        self.env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)
        self.render_mode = None
        single = self.env.unwrapped.single_observation_space
        if isinstance(single, spaces.Dict):
            single = spaces.Dict({key: _flat(space) for key, space in single.spaces.items()})
        super().__init__(num_envs, single, self.env.unwrapped.single_action_space)
        self._seed = seed
        self._reset_options_given = options
        self._actions: np.ndarray | None = None
        self.last_scores: dict[str, np.ndarray] = {}

    def observe(self, obs: Any) -> Any:
        """The batched env's observation in this adapter's space."""
        if isinstance(obs, dict):
            return {key: value.reshape(self.num_envs, -1) for key, value in obs.items()}
        return obs

    def encode(self, actions: np.ndarray) -> np.ndarray:
        """The batched env's actions for this adapter's (the env's own: unchanged)."""
        return np.asarray(actions)

    def reset(self, options: dict[str, Any] | None = None) -> Any:
        """Reset the batch (``options`` as the env's; default: those given at construction)."""
        obs, _ = self.env.reset(seed=self._seed, options=options if options is not None else self._reset_options_given)
        self._seed = None
        return self.observe(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = self.encode(actions)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminated, truncated, info = self.env.step(self._actions)
        done = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if "error" in info:
            for k in np.flatnonzero(info["_error"]):
                infos[k]["error"] = str(info["error"][k])
        if done.all():
            final = self.observe(obs)
            self.last_scores = info.get("scores", {})
            for k in range(self.num_envs):
                infos[k]["terminal_observation"] = (final[k] if not isinstance(final, dict)
                                                    else {key: value[k] for key, value in final.items()})
            obs, *_ = self.env.step(self._actions)  # the autoreset
        return self.observe(obs), rewards.astype(np.float32), done, infos

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        raise NotImplementedError(f"{type(self).__name__} steps one batch; it has no sub-env objects")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seed = seed
        return [seed] * self.num_envs
