"""The CausaLab planner at RL speed: ``num_envs`` planner episodes stepped together.

``gym.make_vec("CausaLab-planner-4node-v0", num_envs=B, vectorization_mode="vector_entry_point")``
builds :class:`CausaLabPlannerVectorEnv`. It plays the task of
:class:`~causal_gym.envs.causalab.planner.CausaLabPlannerEnv` without the lab's tool machinery: each
episode is the world's own (:meth:`CausaLabEnv.make_episode
<causal_gym.envs.causalab.env.CausaLabEnv.make_episode>`, its own
:class:`~causal_gym.envs.causalab.world.Manipulator`), and the observations, the estimator, the
reactor prediction and the scores are computed from it directly, with the lab's functions
(:func:`~causal_gym.envs.causalab.planner.estimate_shift_mechanism`,
:func:`~causal_gym.envs.causalab.hypothesis.parse_hypothesis`,
:func:`~causal_gym.envs.causalab.scoring.hypothesis_metrics`,
:func:`~causal_gym.envs.causalab.scoring.task_success`).

Same episodes and traces as the single env, not only the same distribution: with ``seed=s`` episode
``b`` draws its episodes as the single env reset with ``seed=s + b`` does (Gymnasium's
``SyncVectorEnv`` convention), so the batch's observations and rewards equal ``gym.make_vec(id, B,
vectorization_mode="sync")``'s step for step, autoresets included (``tests/test_causalab_planner_vector.py``).
Generating an episode stays the world's per-episode code (about 0.2 ms): a numpy-vectorised draw
would be a second sampler of the lab's SCMs to keep in step with the first, for a small share of
the time. With ``options={"instance": k}`` (the test suite, or ``{"split": "train", "instance":
k}``) the batch plays instances ``k .. k + B - 1`` and each autoreset moves on by ``B`` (wrapping at
the test suite's end); ``SyncVectorEnv`` instead resets its members without options, so it matches
only the first batch then.

Every episode lasts exactly the intervention budget, so the episodes start and end together;
autoreset follows Gymnasium's ``NEXT_STEP`` mode. At the last step ``info["scores"]`` holds the
lab's final scores of each episode (``success``, ``abs_error`` and every mechanism metric of the
stated estimate) as arrays with Gymnasium's ``"_scores"`` mask; nothing about the hidden mechanism is
shown before.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from causal_gym._validation import check_count
from causal_gym.envs.causalab.env import draw_index
from causal_gym.envs.causalab.hypothesis import Hypothesis, parse_hypothesis
from causal_gym.envs.causalab.planner import (
    READING_SCALE,
    CausaLabPlannerEnv,
    MechanismEstimate,
    estimate_shift_mechanism,
)
from causal_gym.envs.causalab.scoring import hypothesis_metrics, task_success
from causal_gym.envs.causalab.suites import SUITE_SIZE
from causal_gym.envs.causalab.world import FREQ, PROPERTIES, Episode, Manipulator, Setting

__all__ = ["CausaLabPlannerVectorEnv"]


class _Running:
    """One episode of the batch: the world's episode, its manipulator and what has been read so far."""

    def __init__(self, episode: Episode) -> None:
        scm = episode.scm
        self.episode = episode
        self.slots = tuple(p for p in PROPERTIES if p in scm.properties)
        self.nodes = (*self.slots, FREQ)
        self.manipulator: Manipulator = episode.manipulator(False)
        self.readings = [self.read()]
        self.targets: list[int] = []

    def read(self) -> np.ndarray:
        values = self.manipulator.values
        return np.array([values[p] for p in self.nodes])

    def intervene(self, slot: int, value: float) -> np.ndarray:
        self.manipulator.intervene(self.slots[slot], value)
        self.readings.append(self.read())
        self.targets.append(slot)
        return self.readings[-1]

    def estimate(self, threshold: float) -> MechanismEstimate:
        records = np.array([[record.values[p] for p in self.nodes] for record in self.episode.prior_records])
        weights, base = estimate_shift_mechanism(np.array(self.readings), self.targets,
                                                 records.reshape(-1, len(self.nodes)), threshold)
        return MechanismEstimate(self.nodes, weights, base)


class CausaLabPlannerVectorEnv(VectorEnv):
    """``num_envs`` CausaLab planner episodes in lockstep (see the module docstring).

    Parameters
    ----------
    num_envs : int
        Episodes per batch.
    setting : str or Setting
        As :class:`~causal_gym.envs.causalab.planner.CausaLabPlannerEnv`.
    render_mode : None
        Batched rendering is not offered.
    **kwargs
        The planner env's other keywords (``intervention_budget``, ``reward``, ``shaping``, ``seal``,
        ...), validated by it.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, setting: str | Setting = "4node", render_mode: str | None = None,
                 **kwargs: Any) -> None:
        self.num_envs = check_count(num_envs, "num_envs", 1)
        if render_mode is not None:
            raise ValueError("the batched planner env does not render; use CausaLabPlannerEnv for 'ansi'")
        self.render_mode = None
        # the single env validates every argument and owns the lab whose episodes the batch plays
        self.template = CausaLabPlannerEnv(setting, **kwargs)
        self.budget, self.n_slots, self.value_grid = self.template.budget, self.template.n_slots, self.template.value_grid
        self.single_observation_space = self.template.observation_space
        self.single_action_space = self.template.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rngs: list[np.random.Generator] = []
        self._split = "train"
        self._next: int | None = None
        self._episodes: list[_Running] = []
        self._needs_reset = False
        # the batch's state, set by _start: readings now and before the last step, interventions per
        # slot, effects seen, slots shifted, interventions used
        self._readings: np.ndarray
        self._last: np.ndarray
        self._counts: np.ndarray
        self._effects: np.ndarray
        self._shifted: np.ndarray
        self._used: int

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start ``num_envs`` episodes (module docstring); ``seed`` an int (episode ``b`` gets ``seed + b``)
        or one seed per episode.

        Raises
        ------
        ValueError
            On bad options (the lab's), or a seed list of the wrong length.
        """
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} seeds, got {len(seed)}")
            seeds: list[int | None] = list(seed)
        else:
            seeds = [None if seed is None else seed + b for b in range(self.num_envs)]
        super().reset(seed=seed if isinstance(seed, int) else None)
        self._split, index = self.template.check_reset_options(options)
        self._next = index
        self._rngs = [seeding.np_random(s)[0] for s in seeds]
        self._start()
        return self._observation(), {}

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One intervention in every episode (or the autoreset after the last one).

        Raises
        ------
        ValueError
            For actions that are not ``num_envs`` integers of the single action space.
        RuntimeError
            Before ``reset``.
        """
        b = self.num_envs
        if not self._episodes:
            raise RuntimeError("call reset() before step()")
        if self._needs_reset:
            self._start()
            return self._observation(), np.zeros(b), np.zeros(b, dtype=bool), np.zeros(b, dtype=bool), {}
        a = np.asarray(actions)
        n = self.n_slots * len(self.value_grid)  # the single action space's size
        if a.shape != (b,) or a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= n:
            raise ValueError(f"actions must be {b} integers in 0..{n - 1}, got {actions!r}")
        slots, values = np.divmod(a.astype(np.int64), len(self.value_grid))
        rows = np.arange(b)
        before = self._readings[rows, slots]
        for k, running in enumerate(self._episodes):
            self._readings[k] = running.intervene(int(slots[k]), self.value_grid[int(values[k])])
        moved = self._readings[rows, slots] - before
        first = (moved != 0.0) & (self._shifted[rows, slots] == 0)
        hit = moved != 0.0
        self._effects[rows[hit], slots[hit]] = (self._readings[hit] - self._last[hit]) / moved[hit, None]
        self._shifted[rows[hit], slots[hit]] = 1
        self._counts[rows, slots] += 1
        self._last = self._readings.copy()
        self._used += 1
        rewards = np.where(first, self.template.shaping / self.n_slots, 0.0)
        info: dict[str, Any] = {}
        done = self._used >= self.budget
        if done:
            scores = [self._conclude(running) for running in self._episodes]
            rewards = rewards + np.array([s.pop("reward") for s in scores])
            info["scores"] = {name: np.array([s[name] for s in scores]) for name in scores[0]}
            info["_scores"] = np.ones(b, dtype=bool)
            self._needs_reset = True
        return self._observation(), rewards, np.full(b, done), np.zeros(b, dtype=bool), info

    def close_extras(self, **kwargs: Any) -> None:
        self.template.close()

    # -- internals ---------------------------------------------------------------------------------

    def _start(self) -> None:
        lab = self.template.lab
        if self._next is None:
            episodes = [lab.make_episode(self._split, draw_index(rng, self._split)) for rng in self._rngs]
        else:
            size = SUITE_SIZE if self._split == "test" else None
            indices = [(self._next + b) % size if size else self._next + b for b in range(self.num_envs)]
            self._next = (self._next + self.num_envs) % size if size else self._next + self.num_envs
            episodes = [lab.make_episode(self._split, k) for k in indices]
        self._episodes = [_Running(e) for e in episodes]
        m, b = self.n_slots, self.num_envs
        self._readings = np.array([running.readings[0] for running in self._episodes])
        self._last = self._readings.copy()
        self._counts = np.zeros((b, m))
        self._effects = np.zeros((b, m, m + 1))
        self._shifted = np.zeros((b, m), dtype=np.int8)
        self._used = 0
        self._needs_reset = False

    def _conclude(self, running: _Running) -> dict[str, float]:
        """The lab's ending of the single env: state the estimate, predict the reactor, score."""
        episode, scm, lab = running.episode, running.episode.scm, self.template.lab
        estimate = running.estimate(self.template.threshold)
        stated = parse_hypothesis(estimate.hypothesis(), scm.properties, scm.kind)
        final = stated if isinstance(stated, Hypothesis) and stated.edges else None
        prediction = estimate.predict({**episode.reactor.visible, **episode.decoys})
        success = task_success(prediction, episode.target, lab.success_tol, lab.success_rule)
        coefficients = {p: _linear(scm.coefficient(p, FREQ)) for p in scm.freq_parents()}
        metrics = hypothesis_metrics(set(scm.edges), coefficients, scm.properties, final, weight_tol=lab.weight_tol)
        reward = metrics["edge_f1"] + (float(success) if self.template.reward == "success+edge_f1" else 0.0)
        error = abs(prediction - episode.target) if math.isfinite(prediction) else math.nan
        return {"reward": reward, "success": float(success), "abs_error": error, **metrics}

    def _observation(self) -> dict[str, np.ndarray]:
        return {
            "readings": (self._readings / READING_SCALE).astype(np.float32),
            "shifted": self._shifted.copy(),
            "counts": (self._counts / self.budget).astype(np.float32),
            "effects": self._effects.astype(np.float32),
            "budget_remaining": np.full((self.num_envs, 1), 1.0 - self._used / self.budget, dtype=np.float32),
        }


def _linear(coefficient: float | tuple[float, float]) -> float:
    return float(coefficient[1]) if isinstance(coefficient, tuple) else float(coefficient)
