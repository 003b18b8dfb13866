"""The batched intervention-design env: ``num_envs`` episodes stepped in one numpy batch.

``gym.make_vec("InterventionDesign-lg10-v0", num_envs=B, vectorization_mode="vector_entry_point")``
builds it. Every episode lasts exactly ``budget`` steps, so the ``B`` episodes start and end
together; autoreset follows Gymnasium's default ``NEXT_STEP`` mode (the step after the last one
resets every episode, returns the new observations with reward 0 and ignores the actions).

Instances: on the ``train`` stream each reset draws a whole batch from one entropy
(:func:`~causal_gym.envs.design.world.train_entropy`, in vectorised numpy); with
``options={"instance": k}`` (``test``, or ``{"split": "dev", "instance": k}``) the batch is
instances ``k .. k + B - 1`` of the suite, exactly those the single env plays, and each
autoreset moves on to the next ``B`` (wrapping at the suite's end). Per-episode results of the
last step are in the info as arrays (``info["scores"][name]`` of shape ``(B,)``,
``info["trajectory"][name]`` of shape ``(B, budget + 1)``) with Gymnasium's ``"_"``-prefixed masks;
each step's posterior metrics as ``info["metrics"][name]`` ``(B,)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from causal_gym._validation import check_count, check_real
from causal_gym.envs.design.batch import DesignBatch, DesignInterface, check_node_costs, check_reward
from causal_gym.envs.design.env import VALUE_BOUND, resolve_split
from causal_gym.envs.design.world import (
    FIELDS,
    SUITE_SIZE,
    DesignSetting,
    Instances,
    instance_entropy,
    make_batch,
    make_instance,
    train_entropy,
)
from causal_gym.seal import Seal, resolve_seal

__all__ = ["InterventionDesignVectorEnv"]


def _concat(parts: list[Instances]) -> Instances:
    return Instances(*(np.concatenate([getattr(p, name) for p in parts]) for name in FIELDS))


class InterventionDesignVectorEnv(VectorEnv):
    """``num_envs`` intervention-design episodes in lockstep (see the module docstring).

    Parameters
    ----------
    num_envs : int
        Episodes per batch.
    d, graph, expected_degree, noise, n_observational, budget, rows_per_step, max_parents, value_bound, reward, sparse, observe_posterior, action, value_grid, targets_per_step, node_costs, observation, seal
        As :class:`~causal_gym.envs.design.env.InterventionDesignEnv`.
    render_mode : None
        Batched rendering is not offered.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        d: int = 10,
        graph: str = "er",
        expected_degree: float = 6.0,
        noise: str = "gaussian",
        n_observational: int = 50,
        budget: int = 10,
        rows_per_step: int = 1,
        max_parents: int | None = None,
        value_bound: float = VALUE_BOUND,
        reward: str = "confidence",
        sparse: bool = False,
        observe_posterior: bool = False,
        action: str = "box",
        value_grid: Sequence[float] = (-1.0, 1.0),
        targets_per_step: int = 1,
        node_costs: Sequence[float] | None = None,
        observation: str = "rows",
        seal: Seal | str | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.num_envs = check_count(num_envs, "num_envs", 1)
        self.setting = DesignSetting(d, graph, expected_degree, noise, n_observational, budget, rows_per_step,
                                     max_parents)
        self.value_bound = check_real(value_bound, "value_bound", 0.0)
        if self.value_bound == 0.0:
            raise ValueError("value_bound must be positive")
        self.reward_mode, self.sparse = check_reward(reward, sparse)
        if render_mode is not None:
            raise ValueError("the batched design env does not render; use InterventionDesignEnv for 'ansi'")
        self.render_mode = None
        self.seal = resolve_seal(seal)
        self.interface = DesignInterface(action, value_grid, observation, observe_posterior, targets_per_step)
        self.node_costs = check_node_costs(node_costs, self.setting.d)
        self.single_observation_space = self.interface.observation_space(self.setting)
        self.single_action_space = self.interface.action_space(self.setting.d)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._batch = DesignBatch(self.setting, self.value_bound, self.reward_mode, self.interface, self.sparse,
                                  self.node_costs)
        self._split: str = "train"
        self._next: int | None = None
        self._needs_reset = False

    def _draw(self) -> Instances:
        if self._next is None:
            draw = int(self.np_random.integers(2**63))
            return make_batch(self.setting, train_entropy(self.setting, draw, self.seal), self.num_envs)
        indices = (self._next + np.arange(self.num_envs)) % SUITE_SIZE
        self._next = int((self._next + self.num_envs) % SUITE_SIZE)
        return _concat([make_instance(self.setting, instance_entropy(self.setting, self._split, int(k), self.seal))
                        for k in indices])

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray | dict[str, np.ndarray], dict[str, Any]]:
        """Start ``num_envs`` episodes (see the module docstring).

        ``seed`` is one int for the batch (a list is not supported: the batch shares one stream).

        Raises
        ------
        ValueError
            On bad options or a list of seeds.
        """
        if isinstance(seed, (list, tuple)):
            raise ValueError("InterventionDesignVectorEnv takes one int seed for the whole batch, not a list")
        super().reset(seed=seed)
        self._split, index = resolve_split(options)
        if self._split == "train" and index is not None:
            raise ValueError("the batched env plays the train stream without instance indices; "
                             "use the single env for a named train instance")
        self._next = None if self._split == "train" else (index or 0)
        self._batch.start(self._draw())
        self._needs_reset = False
        return self._batch.observation(), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray | dict[str, np.ndarray], np.ndarray, np.ndarray,
                                                  np.ndarray, dict[str, Any]]:
        """One experiment in every episode (or the autoreset after the last one).

        Raises
        ------
        ValueError
            For actions not of shape ``(num_envs,) + single action shape``.
        """
        b = self.num_envs
        if self._needs_reset:
            self._batch.start(self._draw())
            self._needs_reset = False
            return (self._batch.observation(), np.zeros(b), np.zeros(b, dtype=bool), np.zeros(b, dtype=bool), {})
        a = np.asarray(actions)
        shape = (b, *self.interface.action_shape())
        if a.shape != shape:
            raise ValueError(f"actions must have shape {shape}, got {a.shape}")
        rewards, design = self._batch.play(a)
        done = self._batch.done
        info: dict[str, Any] = {}
        if not design["valid"].all():
            info["error"] = np.where(design["valid"], "", self.interface.invalid_text())
            info["_error"] = ~design["valid"]
        everyone = np.ones(b, dtype=bool)
        if self._batch.computed:
            info["metrics"], info["_metrics"] = self._batch.metrics(), everyone
        if done:
            scores = self._batch.final_scores()
            if scores:
                info["scores"], info["_scores"] = scores, everyone
                info["trajectory"], info["_trajectory"] = self._batch.trajectory(), everyone
            info["adjacency"], info["_adjacency"] = self._batch.started.adjacency.copy(), everyone
            self._needs_reset = True
        terminated = np.full(b, done)
        return self._batch.observation(), rewards, terminated, np.zeros(b, dtype=bool), info
