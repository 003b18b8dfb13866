"""How a design episode plays and is scored, for a batch of episodes at once (numpy, no Python loop over episodes).

:class:`DesignBatch` holds the state of ``B`` episodes that start together and last the same
``budget`` steps: the padded data with its intervention mask, the rows filled, the budget left,
the BGe sufficient statistics of every episode and its exact edge posterior. The single env
(:mod:`causal_gym.envs.design.env`) plays a batch of one; the vector env
(:mod:`causal_gym.envs.design.vector`) a batch of ``num_envs``. Both decode actions, build
observations and score through this class, so they agree to the bit.

Actions
-------
An action is a point of ``[-1, 1]^2``: the first coordinate picks the target among ``d + 1``
equal bins (bin ``d``, the right end, is an observational row: no intervention), the second
scales the value, ``value = a[1] * value_bound``. Finite points outside the box are clipped
into it (as a policy's Gaussian may propose); a non-finite point is an invalid action: it
costs its step, yields no row and leaves the posterior unchanged (the info says why).

Rewards (``reward=``)
---------------------
Each is the change, after a step, of one quantity of the exact posterior (a ``metric``):

- ``"confidence"`` (default; ``"dense"`` is its old name): the posterior's expected number of
  correct entries of its own Bayes-optimal directed adjacency matrix, ``sum_{i != j} max(p_ij, 1 -
  p_ij)`` (:func:`~causal_gym.stats.graph_posterior.expected_correct_entries`): how sure the
  posterior is of itself. No truth enters it.
- ``"truth"``: CAASL's reward (Annadani et al. 2024) with the exact posterior in place of AVICI's
  amortised one: the posterior's expected number of entries that agree with the *true* graph,
  ``sum_{i != j} [A*_ij p_ij + (1 - A*_ij)(1 - p_ij)]`` (at most ``d (d - 1)``). It is a training
  reward the env computes from the hidden SCM, as CAASL's simulator does; the observations never
  hold the truth, but the rewards are a function of it, so an agent under evaluation should not be
  shown them (the runner and the agent protocol never pass rewards to an agent).
- ``"information_gain"``: the reduction of the entropy of the exact posterior over (order, DAG)
  pairs (:attr:`~causal_gym.stats.graph_posterior.GraphPosterior.entropy`, nats). Its expectation
  under the posterior predictive is the expected information gain about the DAG itself; a realised
  step differs from the reduction of the DAG entropy by the change of ``E[log #linear extensions]``
  (graph_posterior's docstring, "Entropy of the posterior").
- ``"none"``: no posterior at all (reward 0, no posterior scores at the end): for throughput
  measurements and for learners that bring their own reward.

``sparse=True`` pays a mode's whole return (final value minus the value on the observational
batch) at the last step, 0 before; without an observation that shows the posterior, it is then
computed twice per episode only.

Metrics: after every step whose posterior is computed, the info holds ``metrics`` of that posterior
alone (:data:`POSTERIOR_METRICS`: ``confidence``, ``entropy``, ``expected_shd``); the final info
holds each episode's ``trajectory``, those and the truth-based :data:`TRUTH_METRICS` (``truth``,
and the F1 and SHD of the highest-scoring DAG, ``map_f1``, ``map_shd``) at the observational batch
and after every step (NaN where no posterior was computed). Nothing derived from the truth appears
before the end.

Posterior: BGe local scores (default hyperparameters of
:func:`~causal_gym.stats.graph_posterior.bge_local_scores`), intervened cells left out of their
node's scores (Cooper & Yoo 1999), the order-modular prior with the ``"size"`` parent-set prior,
Koivisto's DP (:func:`~causal_gym.stats.graph_posterior.edge_posterior`). It is exact for the
linear-Gaussian variants and a misspecified (Gaussian) model for the non-Gaussian ones, as in
CAASL's out-of-distribution tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.envs.design.world import DesignSetting, Instances
from causal_gym.metrics import edge_average_precision
from causal_gym.stats.graph_posterior import (
    BGeStats,
    expected_correct_entries,
    expected_shd,
    posterior_summary,
)

__all__ = ["REWARDS", "ACTIONS", "OBSERVATIONS", "POSTERIOR_METRICS", "TRUTH_METRICS", "DesignBatch",
           "DesignInterface", "check_node_costs", "check_reward", "decode_actions", "encode_action", "graph_scores", "summary_vector",
           "truth_agreement"]

REWARDS = ("confidence", "truth", "information_gain", "none")
"""Reward modes (see the module docstring); ``"dense"`` is accepted as ``"confidence"``'s old name."""

_ALIASES = {"dense": "confidence"}

POSTERIOR_METRICS = ("confidence", "entropy", "expected_shd")
"""Per-step metrics of the posterior alone (in every step's info where the posterior is computed)."""

TRUTH_METRICS = ("truth", "map_f1", "map_shd")
"""Per-step metrics against the hidden graph (only in the final info's ``trajectory``)."""


def check_reward(reward: object, sparse: object = False) -> tuple[str, bool]:
    """``(mode, sparse)`` of the env's ``reward=`` and ``sparse=`` arguments, the mode's canonical name.

    Raises
    ------
    ValueError
        An unknown mode, the removed ``"sparse"`` mode (now ``sparse=True``), or ``sparse`` with ``"none"``.
    """
    if reward == "sparse":
        raise ValueError("reward='sparse' is now a switch: use reward='confidence', sparse=True "
                         "(or sparse=True with 'truth' or 'information_gain')")
    mode = check_choice(_ALIASES.get(reward, reward) if isinstance(reward, str) else reward, REWARDS, "reward")
    if not isinstance(sparse, (bool, np.bool_)):
        raise ValueError(f"sparse must be True or False, got {sparse!r}")
    if sparse and mode == "none":
        raise ValueError("sparse=True pays the return at the last step; reward='none' has none")
    return mode, bool(sparse)


def check_node_costs(costs: object, d: int) -> np.ndarray | None:
    """``node_costs`` as a float array of ``d`` finite non-negative costs (None stays None).

    Raises
    ------
    ValueError
        Anything else.
    """
    if costs is None:
        return None
    c = np.asarray(costs, dtype=np.float64) if not isinstance(costs, (str, bytes)) else np.array([])
    if c.shape != (d,) or not np.isfinite(c).all() or (c < 0).any():
        raise ValueError(f"node_costs must be {d} finite non-negative numbers (one per node), got {costs!r}")
    return c


def graph_scores(truth: np.ndarray, guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed-edge F1 and SHD of DAG guesses against true DAGs, batched: ``(...,)`` each from ``(..., d, d)``.

    :func:`causal_gym.metrics.directed_edge_scores` and :func:`causal_gym.metrics.shd` over leading
    axes (the same conventions: an empty guess of an empty truth has F1 1).
    """
    t, e = np.asarray(truth).astype(bool), np.asarray(guess).astype(bool)
    tp = (t & e).sum(axis=(-2, -1))
    fp = (e & ~t).sum(axis=(-2, -1))
    fn = (t & ~e).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), (fn == 0).astype(float))
        recall = np.where(tp + fn > 0, tp / (tp + fn), (fp == 0).astype(float))
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    differs = t != e
    d = t.shape[-1]
    upper = np.triu(np.ones((d, d), dtype=bool), 1)
    return f1, ((differs | np.swapaxes(differs, -1, -2)) & upper).sum(axis=(-2, -1)).astype(float)


def truth_agreement(edge_probs: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """The posterior's expected number of off-diagonal entries equal to the true graph's (CAASL's), ``(...,)``."""
    p = np.asarray(edge_probs, dtype=np.float64)
    a = np.asarray(truth).astype(bool)
    off = ~np.eye(p.shape[-1], dtype=bool)
    return np.where(a, p, 1.0 - p)[..., off].sum(axis=-1)


ACTIONS = ("box", "discrete", "multidiscrete")
"""Action spaces (see :class:`DesignInterface`)."""

OBSERVATIONS = ("rows", "summary")
"""Observations (see :class:`DesignInterface`)."""


@dataclass(frozen=True)
class DesignInterface:
    """How an agent acts on and sees a design episode (the episode itself is the :class:`DesignSetting`).

    Actions (``action=``)
    ---------------------
    - ``"box"``: ``Box(-1, 1, (2,))``, a target bin and a scaled value (the module docstring).
    - ``"discrete"``: ``Discrete(1 + d * G)`` over the ``G`` values of ``value_grid`` (fractions of
      ``value_bound``): ``0`` is an observational row, ``1 + t * G + g`` plays
      ``do(x_t = value_grid[g] * value_bound)``. The choice set of
      :class:`~causal_gym.envs.design.baselines.GreedyDesigner` with the same grid.
    - ``"multidiscrete"``: ``MultiDiscrete([d + 1, G])``: ``[t, g]`` as above, ``t = d`` observes
      (its value index is ignored).

    Batch designs (``targets=k > 1``): each step plays ``k`` designs at once, the step's rows split
    evenly between them (``rows_per_step`` a multiple of ``k``): the box is ``Box(-1, 1, (k, 2))``,
    one row per design, and ``"multidiscrete"`` is the flat ``MultiDiscrete([d + 1, G] * k)``
    (SB3 takes only one-dimensional ones); ``"discrete"`` has no batch form. Designs may repeat a node.

    An integer outside the space costs its step and adds no row, like a non-finite box action (in a
    batch design, one invalid design voids the whole step).

    Observations (``observation=``)
    -------------------------------
    - ``"rows"``: the Dict of the rows so far (the env's docstring), plus ``edge_probs`` with
      ``observe_posterior``. Unbounded: normalise it with SB3's ``VecNormalize``.
    - ``"summary"``: one ``Box(0, 1, (d (d - 1) + d + 1,))`` ``float32`` vector, normalised by
      construction: the posterior's edge marginals ``P(i -> j)`` off the diagonal (row-major),
      each node's share of the experiment rows that intervened on it, and the share of the budget
      left. The posterior is a function of the rows, so it reveals nothing the data do not; it is
      what the reward is computed from (needs a posterior: not with ``reward="none"``).
    """

    action: str = "box"
    value_grid: Sequence[float] = (-1.0, 1.0)  # kept as a tuple
    observation: str = "rows"
    observe_posterior: bool = False
    targets: int = 1

    def __post_init__(self) -> None:
        check_choice(self.action, ACTIONS, "action")
        check_count(self.targets, "targets_per_step", 1)
        if self.targets > 1 and self.action == "discrete":
            raise ValueError("action='discrete' plays one design per step; with targets_per_step > 1 use "
                             "'box' or 'multidiscrete'")
        check_choice(self.observation, OBSERVATIONS, "observation")
        grid = self.value_grid
        if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
            raise ValueError(f"value_grid must be a non-empty sequence of fractions of value_bound, got {grid!r}")
        values = tuple(check_real(v, "value_grid member", -1.0) for v in grid)
        if max(values) > 1.0 or len(set(values)) != len(values):
            raise ValueError(f"value_grid must hold distinct fractions of value_bound in [-1, 1], got {values}")
        object.__setattr__(self, "value_grid", values)
        object.__setattr__(self, "observe_posterior", bool(self.observe_posterior))

    @property
    def needs_posterior(self) -> bool:
        """Whether the observation shows the posterior (so it is recomputed after every step)."""
        return self.observe_posterior or self.observation == "summary"

    def action_space(self, d: int) -> spaces.Space:
        """The action space of one episode on ``d`` nodes."""
        if self.action == "box":
            return spaces.Box(-1.0, 1.0, self.action_shape(), np.float32)
        if self.action == "discrete":
            return spaces.Discrete(1 + d * len(self.value_grid))
        return spaces.MultiDiscrete(np.tile([d + 1, len(self.value_grid)], self.targets))

    def action_shape(self) -> tuple[int, ...]:
        """The shape of one episode's action."""
        if self.action == "discrete":
            return ()
        if self.action == "multidiscrete":
            return (2 * self.targets,)
        return (2,) if self.targets == 1 else (self.targets, 2)

    def observation_space(self, setting: DesignSetting) -> spaces.Space:
        """The observation of one episode (see the class docstring)."""
        rows, d = setting.max_rows, setting.d
        if self.observation == "summary":
            return spaces.Box(0.0, 1.0, (d * (d - 1) + d + 1,), np.float32)
        keys = {
            "data": spaces.Box(-np.inf, np.inf, (rows, d), np.float32),
            "intervention_mask": spaces.MultiBinary((rows, d)),
            "filled": spaces.MultiBinary(rows),
            "budget_left": spaces.Box(0.0, float(setting.budget), (1,), np.float32),
        }
        if self.observe_posterior:
            keys["edge_probs"] = spaces.Box(0.0, 1.0, (d, d), np.float32)
        return spaces.Dict(keys)

    def encode(self, target: int | None, grid_index: int, d: int) -> int | np.ndarray:
        """The discrete action playing ``do(x_target = value_grid[grid_index] * value_bound)`` (None: observe).

        Examples
        --------
        >>> face = DesignInterface("discrete", (-1.0, 1.0))
        >>> face.encode(None, 0, d=10), face.encode(3, 1, d=10)
        (0, 8)
        >>> face.decode(np.array([0, 8]), 10, 5.0)
        (array([-1,  3]), array([0., 5.]), array([ True,  True]))
        """
        if self.action == "box":
            raise ValueError("encode builds discrete actions; for the box use encode_action")
        if target is not None and not 0 <= int(target) < d:
            raise ValueError(f"target must be None or a node in 0..{d - 1}, got {target!r}")
        if not 0 <= int(grid_index) < len(self.value_grid):
            raise ValueError(f"grid_index must be in 0..{len(self.value_grid) - 1}, got {grid_index!r}")
        if self.action == "multidiscrete":
            return np.array([d if target is None else int(target), int(grid_index)], dtype=np.int64)
        return 0 if target is None else 1 + int(target) * len(self.value_grid) + int(grid_index)

    def decode(self, actions: np.ndarray, d: int, value_bound: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(targets, values, valid)`` of a batch of actions; target ``-1`` is an observational row.

        ``targets`` and ``values`` are ``(B,)``, or ``(B, k)`` for batch designs; ``valid`` is ``(B,)``.

        Raises
        ------
        ValueError
            If ``actions`` is not a batch of this interface's actions (shape ``(B,) + action_shape()``,
            integers for the discrete spaces).
        """
        if self.targets > 1:
            a = np.asarray(actions)
            if a.shape[1:] != self.action_shape():
                raise ValueError(f"batch-design actions must have shape (B,) + {self.action_shape()}, got {a.shape}")
            single = DesignInterface(self.action, self.value_grid, self.observation, self.observe_posterior)
            targets, values, valid = single.decode(a.reshape(-1, 2), d, value_bound)
            b = a.shape[0]
            return (targets.reshape(b, self.targets), values.reshape(b, self.targets),
                    np.asarray(valid.reshape(b, -1).all(axis=1)))
        if self.action == "box":
            return decode_actions(actions, d, value_bound)
        a = np.asarray(actions)
        if a.dtype.kind not in "iu" or a.shape[1:] != self.action_shape() or a.ndim != 1 + len(self.action_shape()):
            raise ValueError(f"{self.action} actions must be integers of shape (B,){' + (2,)' * (self.action == 'multidiscrete')}, "
                             f"got shape {a.shape}, dtype {a.dtype}")
        grid = np.asarray(self.value_grid) * value_bound
        size = len(self.value_grid)
        a = a.astype(np.int64)
        if self.action == "discrete":
            valid = (a >= 0) & (a < 1 + d * size)
            code = np.where(valid, a, 0) - 1
            targets, grid_index = np.where(code < 0, -1, code // size), np.maximum(code, 0) % size
        else:
            valid = (a[:, 0] >= 0) & (a[:, 0] <= d) & (a[:, 1] >= 0) & (a[:, 1] < size)
            targets = np.where(valid & (a[:, 0] < d), a[:, 0], -1)
            grid_index = np.where(valid, a[:, 1], 0)
        values = np.where(targets >= 0, grid[grid_index], 0.0)
        return targets, values, valid

    def invalid_text(self) -> str:
        """What the info says after an invalid action."""
        what = ("a finite point of [-1, 1]^2" if self.action == "box"
                else "an index of the action space" if self.action == "discrete" else "[target in 0..d, value index]")
        return f"invalid action: it must be {what}; the step was spent, no row added"


def summary_vector(edge_probs: np.ndarray, intervened_rows: np.ndarray, budget_left: np.ndarray, budget: int,
                   rows_per_step: int) -> np.ndarray:
    """The ``observation="summary"`` vector of episodes (leading axes kept), from what the rows observation shows too.

    ``edge_probs (..., d, d)``, ``intervened_rows (..., d)`` (how many rows intervened on each
    node), ``budget_left (..., 1)``: the off-diagonal marginals row-major, each node's share of the
    budget's experiment rows, the share of the budget left (:class:`DesignInterface`), ``float32``.
    So a policy trained on summaries can play from the rows observation with ``observe_posterior``.
    """
    probs = np.asarray(edge_probs, dtype=np.float64)
    probs = np.clip(probs[..., ~np.eye(probs.shape[-1], dtype=bool)], 0.0, 1.0)
    share = np.asarray(intervened_rows, dtype=np.float64) / (budget * rows_per_step)
    left = np.asarray(budget_left, dtype=np.float64) / budget
    return np.concatenate([probs, share, left], axis=-1).astype(np.float32)


def decode_actions(actions: np.ndarray, d: int, value_bound: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(targets, values, valid)`` of ``(B, 2)`` actions; target ``-1`` is an observational row.

    Raises
    ------
    ValueError
        If ``actions`` is not a real array of shape ``(B, 2)``.
    """
    a = np.asarray(actions)
    if a.ndim != 2 or a.shape[1] != 2 or a.dtype.kind not in "iuf":
        raise ValueError(f"actions must be real points of [-1, 1]^2, shape (B, 2); got shape {a.shape}, dtype {a.dtype}")
    a = a.astype(np.float64)
    valid = np.isfinite(a).all(axis=1)
    a = np.clip(np.where(valid[:, None], a, 0.0), -1.0, 1.0)
    targets = np.minimum(np.floor((a[:, 0] + 1.0) / 2.0 * (d + 1)).astype(np.int64), d)
    targets = np.where(targets == d, -1, targets)
    return targets, a[:, 1] * value_bound, valid


def encode_action(target: int | None, value: float, d: int, value_bound: float) -> np.ndarray:
    """The action playing ``do(x_target = value)`` (``target=None``: an observational row).

    The centre of the target's bin, the value divided by ``value_bound`` (clipped to the box).

    Examples
    --------
    >>> a = encode_action(3, 2.5, d=10, value_bound=5.0)
    >>> decode_actions(a[None], 10, 5.0)[:2]
    (array([3]), array([2.5]))
    """
    index = d if target is None else int(target)
    if not 0 <= index <= d:
        raise ValueError(f"target must be None or a node in 0..{d - 1}, got {target!r}")
    position = (index + 0.5) / (d + 1) * 2.0 - 1.0
    return np.array([position, np.clip(value / value_bound, -1.0, 1.0)], dtype=np.float32)


_POSTERIOR_CHUNK = 16
"""Episodes per posterior call: larger batches spend more per episode (at B=64, d=10, measured ~2,800 page faults
and 1.6 ms of system time per 16 episodes per step, none at 16: their arrays no longer fit the allocator's reuse)."""


def _posterior(stats: BGeStats, max_parents: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge marginals ``(B, d, d)``, entropies ``(B,)`` and highest-scoring DAGs ``(B, d, d)`` of every episode.

    In chunks of :data:`_POSTERIOR_CHUNK` episodes; ``max_parents`` caps the parent sets.
    """
    b = stats.count.shape[0]
    if b <= _POSTERIOR_CHUNK:
        return posterior_summary(stats, max_parents=max_parents)
    parts = [_posterior(BGeStats(stats.count[k], stats.mean[k], stats.scatter[k]), max_parents)
             for k in (slice(i, i + _POSTERIOR_CHUNK) for i in range(0, b, _POSTERIOR_CHUNK))]
    probs, entropy, best = (np.concatenate(arrays) for arrays in zip(*parts))
    return probs, entropy, best


class DesignBatch:
    """The state of ``B`` design episodes played in lockstep (see the module docstring).

    Parameters
    ----------
    setting : DesignSetting
    value_bound : float
        Largest intervention value in absolute terms.
    reward : {"confidence", "truth", "information_gain", "none"}
        A canonical mode (:func:`check_reward`).
    interface : DesignInterface, optional
        The action and observation spaces (default: the box and the rows). An observation that
        shows the posterior keeps it current after every step, whatever the reward mode.
    sparse : bool, default False
        Pay the return at the last step only.
    node_costs : (d,) array, optional
        Cost of each intervention on each node, taken from the reward of the step that plays it
        (observing is free; with ``sparse``, the episode's total at the end).

    Raises
    ------
    ValueError
        An observation showing the posterior with ``reward="none"`` (that mode computes no posterior),
        or ``rows_per_step`` not a multiple of the interface's designs per step.
    """

    def __init__(self, setting: DesignSetting, value_bound: float, reward: str,
                 interface: DesignInterface | None = None, sparse: bool = False,
                 node_costs: np.ndarray | None = None) -> None:
        self.interface = DesignInterface() if interface is None else interface
        if setting.rows_per_step % self.interface.targets:
            raise ValueError(f"rows_per_step ({setting.rows_per_step}) must be a multiple of targets_per_step "
                             f"({self.interface.targets}): the rows are split evenly between the designs")
        self.node_costs = None if node_costs is None else np.asarray(node_costs, dtype=np.float64)
        self.reward, self.sparse = check_reward(reward, sparse)
        if self.interface.needs_posterior and self.reward == "none":
            raise ValueError("observe_posterior needs a posterior (so does observation='summary'): "
                             "use a reward mode other than 'none'")
        self.setting = setting
        self.value_bound = value_bound
        self._per_step = not self.sparse or self.interface.needs_posterior  # posterior recomputed after every step
        self.instances: Instances | None = None

    def start(self, instances: Instances) -> None:
        """Start one episode per instance: the observational batch is the first rows."""
        s = self.setting
        b, n0, d = len(instances), s.n_observational, s.d
        self.instances = instances
        self.data = np.zeros((b, s.max_rows, d))
        self.data[:, :n0] = instances.observational
        self.mask = np.zeros((b, s.max_rows, d), dtype=np.int8)
        self.filled = np.zeros((b, s.max_rows), dtype=np.int8)
        self.filled[:, :n0] = 1
        self.rows = np.full(b, n0)
        self.used = 0
        self.spent = np.zeros(b)  # the costs of the interventions played
        self.stats: BGeStats | None = None
        self.edge_probs: np.ndarray | None = None
        self.computed = False  # whether the last step recomputed the posterior (its metrics are then in the info)
        self._confidence_of: tuple[np.ndarray | None, np.ndarray] = (None, np.empty(0))  # (posterior, its confidence)
        self._path: dict[str, np.ndarray] | None = None  # the trajectory, once computed after the last step
        if self.reward != "none":
            self.stats = BGeStats.from_data(instances.observational)
            self.edge_probs, self.entropy, self.best = _posterior(self.stats, self.setting.max_parents)
            steps = s.budget + 1  # the observational batch, then after every step
            self._probs_seen = np.full((b, steps, d, d), np.nan)
            self._best_seen = np.zeros((b, steps, d, d), dtype=np.int8)
            self._entropy_seen = np.full((b, steps), np.nan)
            self._keep(0)
            self.start_value = self._value()
            self.value = self.start_value.copy()

    @property
    def done(self) -> bool:
        return self.used >= self.setting.budget

    def _keep(self, step: int) -> None:
        """Remember the current posteriors as those after ``step`` experiments (for the trajectory)."""
        self._probs_seen[:, step] = self.edge_probs
        self._best_seen[:, step] = self.best
        self._entropy_seen[:, step] = self.entropy
        self.computed = True

    def _confidence(self) -> np.ndarray:
        """``expected_correct_entries`` of the current posterior ``(B,)``, computed once per posterior (reward and metrics)."""
        seen, value = self._confidence_of
        if seen is not self.posterior:
            value = np.asarray(expected_correct_entries(self.posterior)).reshape(-1)
            self._confidence_of = (self.posterior, value)
        return value.copy()

    def _value(self) -> np.ndarray:
        """The quantity whose change the reward pays, per episode ``(B,)``."""
        if self.reward == "confidence":
            return self._confidence()
        if self.reward == "truth":
            return truth_agreement(self.posterior, self.started.adjacency)
        return -self.entropy

    @property
    def started(self) -> Instances:
        """The instances of the episodes in play (RuntimeError before :meth:`start`)."""
        if self.instances is None:
            raise RuntimeError("call reset() first")
        return self.instances

    @property
    def posterior(self) -> np.ndarray:
        """The current edge posterior (RuntimeError with ``reward="none"``, which computes none)."""
        if self.edge_probs is None:
            raise RuntimeError("reward='none' computes no posterior")
        return self.edge_probs

    def play(self, actions: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One experiment per episode; returns the rewards ``(B,)`` and the step's design per episode.

        Raises
        ------
        ValueError
            For actions of the wrong shape or dtype.
        RuntimeError
            Before :meth:`start` or after the last step.
        """
        if self.instances is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise RuntimeError("the episode has ended; call reset() to start a new one")
        s, instances = self.setting, self.instances
        b, k = len(instances), s.rows_per_step
        targets, values, valid = self.interface.decode(actions, s.d, self.value_bound)
        if len(targets) != b:
            raise ValueError(f"expected {b} actions, got {len(targets)}")
        designs = targets.reshape(b, -1), values.reshape(b, -1)  # (B, K): the step's designs
        per = k // designs[0].shape[1]  # rows of each design
        played = np.flatnonzero(valid)
        self.computed = False
        cost = np.zeros(b)
        if played.size:
            row_targets = np.repeat(designs[0][played], per, axis=1)  # (m, k): each row's target
            new = np.concatenate([
                instances.rows(played, np.broadcast_to(self.used * k + i * per + np.arange(per), (played.size, per)),
                               designs[0][played, i], designs[1][played, i])
                for i in range(designs[0].shape[1])], axis=1)
            slots = self.rows[played, None] + np.arange(k)
            self.data[played[:, None], slots] = new
            self.filled[played[:, None], slots] = 1
            hit = row_targets >= 0
            self.mask[np.broadcast_to(played[:, None], hit.shape)[hit], slots[hit], row_targets[hit]] = 1
            self.rows[played] += k
            if self.node_costs is not None:
                chosen = designs[0][played]
                cost[played] = np.where(chosen >= 0, self.node_costs[np.maximum(chosen, 0)], 0.0).sum(axis=1)
                self.spent += cost
            if self.stats is not None:
                self._update(self.stats, played, new, row_targets)
        self.used += 1
        rewards = np.zeros(b)
        if self.stats is not None:
            if self.done and not self._per_step:
                self.edge_probs, self.entropy, self.best = _posterior(self.stats, self.setting.max_parents)
            if self._per_step or self.done:
                self._keep(self.used)
            if not self.sparse or self.done:
                value = self._value()
                rewards = value - (self.start_value if self.sparse else self.value)
                self.value = value
        if self.reward != "none":
            rewards -= self.spent if self.sparse and self.done else (0.0 if self.sparse else cost)
        return rewards, {"target": targets, "value": values, "valid": valid, "cost": cost}

    def _update(self, stats: BGeStats, played: np.ndarray, new: np.ndarray, targets: np.ndarray) -> None:
        """Add the new rows ``(m, k, d)`` with their targets ``(m, k)`` to ``stats``, of the episodes that played."""
        everyone = played.size == len(stats.count)  # the usual case: no copies of the untouched episodes
        part = stats if everyone else BGeStats(stats.count[played], stats.mean[played], stats.scatter[played])
        for r in range(new.shape[1]):
            intervened = targets[:, r, None] == np.arange(self.setting.d)  # -1 (observe) matches no node
            part = part.add_row(new[:, r], intervened)
        if everyone:
            self.stats = part
        else:
            count, mean, scatter = stats.count.copy(), stats.mean.copy(), stats.scatter.copy()
            count[played], mean[played], scatter[played] = part.count, part.mean, part.scatter
            self.stats = BGeStats(count, mean, scatter)
        if self._per_step:
            if everyone:
                self.edge_probs, self.entropy, self.best = _posterior(part, self.setting.max_parents)
            else:
                probs, entropy, best = self.posterior.copy(), self.entropy.copy(), self.best.copy()
                probs[played], entropy[played], best[played] = _posterior(part, self.setting.max_parents)
                self.edge_probs, self.entropy, self.best = probs, entropy, best

    def observation(self, b: int | None = None) -> np.ndarray | dict[str, np.ndarray]:
        """The observation of episode ``b``, or of all (leading axis ``B``) when None: the summary
        vector or the dict of rows, as the interface says."""
        s = self.setting
        left = np.full((len(self.started), 1), s.budget - self.used, dtype=np.float32)
        if self.interface.observation == "summary":
            vector = summary_vector(self.posterior, self.mask[:, s.n_observational:].sum(axis=1), left,
                                    s.budget, s.rows_per_step)
            return vector if b is None else vector[b]
        obs: dict[str, np.ndarray] = {"data": self.data.astype(np.float32), "intervention_mask": self.mask.copy(),
               "filled": self.filled.copy(), "budget_left": left}
        if self.interface.observe_posterior:
            obs["edge_probs"] = self.posterior.astype(np.float32)
        return obs if b is None else {key: value[b] for key, value in obs.items()}

    def metrics(self) -> dict[str, np.ndarray]:
        """:data:`POSTERIOR_METRICS` of every episode's current posterior, ``(B,)`` each (none of the truth)."""
        return {"confidence": self._confidence(),
                "entropy": self.entropy.copy(),
                "expected_shd": np.asarray(expected_shd(self.posterior)).reshape(-1)}

    def trajectory(self) -> dict[str, np.ndarray]:
        """Every metric after 0, 1, ..., ``budget`` experiments, ``(B, budget + 1)`` each (only after the last step).

        NaN where no posterior was computed (``sparse=True`` without an observed posterior).
        Empty with ``reward="none"``.
        """
        if self.stats is None:
            return {}
        path = self._path
        if path is None:
            probs, truth = self._probs_seen, self.started.adjacency[:, None]
            seen = ~np.isnan(self._entropy_seen)
            f1, distance = graph_scores(truth, self._best_seen)
            nan = np.where(seen, 0.0, np.nan)
            path = {"confidence": np.asarray(expected_correct_entries(np.nan_to_num(probs))) + nan,
                    "entropy": self._entropy_seen.copy(),
                    "expected_shd": np.asarray(expected_shd(np.nan_to_num(probs))) + nan,
                    "truth": truth_agreement(probs, truth),
                    "map_f1": f1 + nan, "map_shd": distance + nan}
            if self.done:  # final: kept for the other caller of the last step (final_scores and the info both ask)
                self._path = path
        return {name: values.copy() for name, values in path.items()}

    def final_scores(self) -> dict[str, np.ndarray]:
        """Every episode's scores against its hidden graph, ``(B,)`` each (only after the last step).

        The final values and gains over the observational batch of the three rewards' quantities:
        ``expected_correct`` and ``gain`` (``"confidence"``; ``cost``, the interventions' costs, and
        ``net_gain = gain - cost``, its return with node costs), ``truth`` and ``truth_gain``,
        ``entropy`` and ``information_gain``; ``expected_shd``, ``auprc`` of the edge posterior;
        ``correct``, ``shd`` and ``f1`` of the Bayes-optimal adjacency (``P(i -> j) > 1/2``);
        ``map_f1`` and ``map_shd`` of the highest-scoring DAG
        (:func:`~causal_gym.stats.graph_posterior.best_dag`). Empty with ``reward="none"``.
        """
        if self.stats is None:
            return {}
        path = self.trajectory()
        truth, probs = self.started.adjacency, self.posterior
        guess = np.asarray(probs > 0.5).astype(np.int8)
        off = ~np.eye(self.setting.d, dtype=bool)
        f1, distance = graph_scores(truth, guess)
        auprc = [edge_average_precision(t, p) if t[off].any() and not t[off].all() else np.nan
                 for t, p in zip(truth, probs)]
        return {
            "expected_correct": path["confidence"][:, -1],
            "gain": path["confidence"][:, -1] - path["confidence"][:, 0],
            "cost": self.spent.copy(),
            "net_gain": path["confidence"][:, -1] - path["confidence"][:, 0] - self.spent,
            "truth": path["truth"][:, -1],
            "truth_gain": path["truth"][:, -1] - path["truth"][:, 0],
            "entropy": path["entropy"][:, -1],
            "information_gain": path["entropy"][:, 0] - path["entropy"][:, -1],
            "expected_shd": path["expected_shd"][:, -1],
            "auprc": np.array(auprc, dtype=float),
            "correct": (guess == truth)[:, off].sum(axis=1).astype(float),
            "shd": distance,
            "f1": f1,
            "map_f1": path["map_f1"][:, -1],
            "map_shd": path["map_shd"][:, -1],
        }

    def design(self, b: int, step: dict[str, np.ndarray]) -> dict[str, Any]:
        """Episode ``b``'s design of the last step, as its info reports it (lists for batch designs)."""
        targets, values = np.atleast_1d(step["target"][b]), np.atleast_1d(step["value"][b])
        chosen = [None if t < 0 else int(t) for t in targets]
        info: dict[str, Any] = {"target": chosen[0] if len(chosen) == 1 else chosen,
                                "value": float(values[0]) if len(values) == 1 else [float(v) for v in values],
                                "budget_left": self.setting.budget - self.used}
        if self.node_costs is not None:
            info["cost"] = float(step["cost"][b])
        if not step["valid"][b]:
            info["error"] = self.interface.invalid_text()
            info["target"], info["value"] = None, None
        return info
