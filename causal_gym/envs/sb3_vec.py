"""Stable-Baselines3's ``VecEnv`` over a batched env: the standard route for SB3 agents at batch speed.

Needs the ``rl`` extra (Stable-Baselines3). An id registered with a ``vector_entry_point`` (the
design ids, the CausaLab planner ids) has a Gymnasium ``VectorEnv`` that steps all its episodes in
one batch, which SB3 does not take. :class:`BatchedSB3VecEnv` adapts it and changes nothing the
agent sees or does beyond the format:

- actions: the env's own space;
- observations: a ``Box`` passes unchanged (for ``MlpPolicy``); a ``Dict`` gets every entry
  flattened to 1-D (SB3's ``MultiInputPolicy`` takes a Dict of 1-D ``Box`` and ``MultiBinary``
  entries). Unbounded entries want SB3's ``VecNormalize``;
- autoreset: the batched envs reset on the step after an episode's end (Gymnasium's
  ``NEXT_STEP``) and their episodes end together; SB3 expects the reset observation together with
  the ``done`` flag, so the adapter takes that extra step at once and puts the final observation
  in ``info["terminal_observation"]``. The last batch's scores (``info["scores"]`` of the batched
  env) are in :attr:`~BatchedSB3VecEnv.last_scores`.

Which episodes a batch plays is the batched env's (its module docstring says how they relate to
the single env's). Nothing of the hidden truth is shown before an episode ends (the env's
observations only).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

__all__ = ["BatchedSB3VecEnv"]


def _flat(space: spaces.Space) -> spaces.Space:
    if isinstance(space, spaces.Box):
        return spaces.Box(space.low.reshape(-1), space.high.reshape(-1), dtype=space.dtype)
    if isinstance(space, spaces.MultiBinary):
        return spaces.MultiBinary(int(np.prod(space.shape)))
    raise ValueError(f"BatchedSB3VecEnv flattens Dict entries of Box and MultiBinary spaces only, got {space}")


class BatchedSB3VecEnv(VecEnv):
    """SB3's ``VecEnv`` over an id's batched env (``num_envs`` episodes in one batch; module docstring).

    Parameters
    ----------
    env_id : str
        An id registered with a ``vector_entry_point`` (``gym.spec(env_id).vector_entry_point``).
    num_envs : int
        Episodes per batch.
    seed : int, optional
        Seeds the train stream at the first reset.
    options : dict, optional
        Reset options of every reset, e.g. ``{"instance": 0}`` to play the test suite from instance 0.
    **kwargs
        The env's keywords, passed to ``gym.make_vec``.
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
        if done.any() and not done.all():
            raise RuntimeError(f"{type(self).__name__} needs episodes that end together; "
                               f"{int(done.sum())} of {self.num_envs} ended")
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
        return [getattr(self, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        raise NotImplementedError(f"{type(self).__name__} steps one batch; it has no sub-env objects")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seed = seed
        return [seed] * self.num_envs
