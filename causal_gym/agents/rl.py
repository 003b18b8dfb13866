"""RL policies as agents: a trained Stable-Baselines3 model behind the :class:`~causal_gym.agents.Agent` protocol.

A model is trained on a wrapped env (:func:`causal_gym.envs.wrappers.make_sb3_env`), but the
runner and :func:`causal_gym.eval.rollout` play the registered env itself. :class:`SB3Agent`
bridges the two with the training wrapper stack: it sends each raw observation through the
stack's observation wrappers (innermost first), asks the model, and maps the model's action back
through the stack's action wrappers (outermost first); with a
:class:`~causal_gym.envs.wrappers.FlattenDictActions` in the stack and a maskable model it passes
the action mask computed from the raw ``info``. Wrappers that neither transform observations nor
actions (Gymnasium's checkers, SB3's ``Monitor``) are skipped; any other wrapper that changes a
space is refused, since the agent could not reproduce it.

stable-baselines3 (and sb3-contrib for ``MaskablePPO``) are imported only when a model is loaded.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from causal_gym.envs.wrappers import FlattenDictActions
from causal_gym.harness.agent import TaskSpec

__all__ = ["ALGORITHMS", "SB3Agent", "load_sb3_agent"]

ALGORITHMS = {"ppo": "stable_baselines3:PPO", "maskable_ppo": "sb3_contrib:MaskablePPO", "a2c": "stable_baselines3:A2C",
              "dqn": "stable_baselines3:DQN"}
"""Algorithms :func:`load_sb3_agent` can load, by name -> ``module:class``."""


def _layers(wrapper: gym.Env) -> list[gym.Wrapper]:
    """The wrappers of a stack, outermost first, without the base env."""
    layers: list[gym.Wrapper] = []
    env = wrapper
    while isinstance(env, gym.Wrapper):
        layers.append(env)
        env = env.env
    return layers


class SB3Agent:
    """Play a trained SB3 model as an :class:`~causal_gym.agents.Agent` on the unwrapped task.

    Parameters
    ----------
    model : stable_baselines3 BaseAlgorithm
        Anything with ``predict(observation, deterministic=...)`` (``MaskablePPO`` also takes
        ``action_masks=``) and an ``observation_space``.
    wrapper : gym.Env, optional
        The wrapper stack the model was trained on (e.g. ``make_sb3_env(env_id)``); only its
        transforms are used, it is never stepped. None: the model acts on the env's own spaces
        (e.g. when ``rollout`` is given the wrapped env itself).
    deterministic : bool, default True
        Greedy actions (the evaluation convention) or samples from the policy.

    Raises
    ------
    ValueError
        If the stack holds a wrapper that changes a space without being an observation or action
        wrapper, or its final observation space differs from the model's.

    Examples
    --------
    >>> from stable_baselines3 import PPO
    >>> from causal_gym.envs.wrappers import make_sb3_env
    >>> from causal_gym.eval import rollout
    >>> import gymnasium as gym
    >>> wrapped = make_sb3_env("CausaLab-planner-3node-v0", flatten=True)
    >>> agent = SB3Agent(PPO("MlpPolicy", wrapped, seed=0), wrapped)
    >>> rollout(gym.make("CausaLab-planner-3node-v0"), agent, seed=0).steps
    2
    """

    def __init__(self, model: Any, wrapper: gym.Env | None = None, deterministic: bool = True) -> None:
        if not callable(getattr(model, "predict", None)):
            raise ValueError(f"model must have a predict() method (an SB3 algorithm), got {type(model).__name__}")
        if wrapper is not None and not isinstance(wrapper, gym.Env):
            raise ValueError(f"wrapper must be a gym.Env (the training wrapper stack) or None, got {wrapper!r}")
        self.model = model
        self.deterministic = bool(deterministic)
        layers = _layers(wrapper) if wrapper is not None else []
        for layer in layers:
            if isinstance(layer, (gym.ObservationWrapper, gym.ActionWrapper)):
                continue
            if layer.observation_space != layer.env.observation_space or layer.action_space != layer.env.action_space:
                raise ValueError(f"{type(layer).__name__} changes a space but is not an observation or action wrapper")
        self._observation_layers = [w for w in reversed(layers) if isinstance(w, gym.ObservationWrapper)]
        self._action_layers = [w for w in layers if isinstance(w, gym.ActionWrapper)]
        self._masker = next((w for w in layers if isinstance(w, FlattenDictActions)), None)
        if wrapper is not None and getattr(model, "observation_space", wrapper.observation_space) != wrapper.observation_space:
            raise ValueError("the model's observation space differs from the wrapper stack's; pass the stack it was "
                             "trained on")
        self._maskable = "action_masks" in inspect.signature(model.predict).parameters

    def reset(self, task: TaskSpec) -> None:
        """Nothing to prepare: the policy is stateless across steps (non-recurrent models)."""

    def act(self, observation: Any, info: Mapping[str, Any]) -> Any:
        """The model's action for the raw observation, as the raw env's action."""
        for layer in self._observation_layers:
            observation = layer.observation(observation)
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        if self._maskable and self._masker is not None:
            kwargs["action_masks"] = self._masker.masks_from_info(info)
        action, _ = self.model.predict(observation, **kwargs)
        if np.ndim(action) == 0 and np.asarray(action).dtype.kind in "iu":
            action = np.int64(action)  # a Discrete action as the scalar Gymnasium spaces hold
        for actor in self._action_layers:
            action = actor.action(action)
        return action


def load_sb3_agent(
    path: str, env_id: str, algorithm: str = "ppo", deterministic: bool = True, **make_kwargs: Any
) -> SB3Agent:
    """Load a saved SB3 model and its wrapper stack as an :class:`SB3Agent` (a factory for the runner).

    Parameters
    ----------
    path : str
        The ``.zip`` written by ``model.save``.
    env_id : str
        The registered id the model was trained on; the stack is rebuilt with
        ``make_sb3_env(env_id, **make_kwargs)``.
    algorithm : str, default "ppo"
        A key of :data:`ALGORITHMS`.
    deterministic : bool, default True
    **make_kwargs
        The keyword arguments of :func:`~causal_gym.envs.wrappers.make_sb3_env` used in training
        (``flatten``, ``number_grids``, env keywords, ...).

    Examples
    --------
    Through the runner: ``agent="causal_gym.agents.rl:load_sb3_agent"`` with
    ``agent_kwargs={"path": "runs/planner/model.zip", "env_id": "CausaLab-planner-4node-v0",
    "flatten": True}``.
    """
    import importlib

    from causal_gym.envs.wrappers import make_sb3_env

    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {sorted(ALGORITHMS)}")
    module, _, name = ALGORITHMS[algorithm].partition(":")
    cls = getattr(importlib.import_module(module), name)
    wrapper = make_sb3_env(env_id, **make_kwargs)
    return SB3Agent(cls.load(path, device="cpu"), wrapper, deterministic)
