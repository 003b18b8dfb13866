"""The CausaLab intervention-planner task: an RL policy plans the experiments, a fixed estimator infers.

Reads top-down: the estimator (:func:`estimate_shift_mechanism`, :class:`MechanismEstimate`), the
environment (:class:`CausaLabPlannerEnv`, a :class:`~causal_gym.envs.causalab.env.CausaLabEnv`
driven through its public tools) and two reference planners (:class:`RandomPlanner`,
:class:`RoundRobinPlanner`).

The estimator
-------------
Under the lab's shift semantics an intervention on property ``k`` changes only ``k``'s exogenous
term; every other node keeps its own and is recomputed from its parents. So between two
consecutive manipulator readings, for every node ``j`` that was not the target,

    Δx_j = Σ_p c_pj Δx_p        (exact up to the 2-decimal display rounding).

:func:`estimate_shift_mechanism` solves this per node by least squares over the consecutive
differences of the manipulator readings:

1. for each property ``j``: the transitions whose target is not ``j``; regressors the changes of
   every other property. The frequency is never a candidate parent: outside the FreqParent
   variant it has no children, and in it the frequency (which has no exogenous term) is a linear
   function of its parents, so a ``frequency -> Z`` edge cannot be told apart from edges out of
   those parents by this regression;
2. for the frequency: every transition; regressors the changes of every property;
3. numpy's minimum-norm least squares (``lstsq``, default cutoff); a node with no usable
   transition gets no parents;
4. an edge ``p -> j`` for every coefficient with ``|c| >`` ``threshold`` (default 0.5, half the
   smallest coefficient magnitude of the lab's linear family);
5. the kept edges are added strongest first, skipping any that would close a directed cycle;
6. the frequency's intercept is the mean of ``f - Σ c_p x_p`` over every record (prior records
   and manipulator readings): the frequency has no exogenous term, so the intercept is shared
   by every crystal.

When every property has been shifted once by a non-zero amount, each regression has exactly
the total-effect rows it needs (a principal submatrix of a unit-triangular matrix), so the
linear graph and coefficients are recovered exactly (``tests/test_rl_wrappers.py`` checks this on
the 3-, 4- and 5-node test suites). With a property never shifted, the regressions of the others
are underdetermined and the minimum-norm solution spreads effects over collinear candidates:
that is what planning has to avoid. The estimator assumes the linear family and no hidden
disturbance; the planner refuses the quadratic family, and on the hidden-disturbance and
FreqParent settings it runs but is misspecified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_choice, check_real
from causal_gym.envs.causalab.baselines import hypothesis_json
from causal_gym.envs.causalab.env import COLUMNS, SOURCES, VALUE_BOUND, VALUE_GRID, CausaLabEnv
from causal_gym.envs.causalab.suites import SETTINGS
from causal_gym.envs.causalab.world import FREQ, MAX_TARGET, PROPERTIES, HiddenSpec, Setting
from causal_gym.graphs import greedy_dag
from causal_gym.harness.agent import TaskSpec
from causal_gym.harness.record import EpisodeLog
from causal_gym.harness.toolbox import ToolCall
from causal_gym.seal import Seal

__all__ = [
    "VALUE_GRID",
    "THRESHOLD",
    "PLANNER_REWARDS",
    "READING_SCALE",
    "MechanismEstimate",
    "estimate_shift_mechanism",
    "CausaLabPlannerEnv",
    "RandomPlanner",
    "RoundRobinPlanner",
]

THRESHOLD = 0.5
"""Default edge threshold of the estimator: half the smallest ``|coefficient|`` of the linear family."""

PLANNER_REWARDS = ("edge_f1", "success+edge_f1")
"""Final rewards: the all-edge F1 of the estimated graph, or that plus the prediction's success (1/0)."""

READING_SCALE = 100.0
"""Readings are divided by this in the observation (the crystals' exogenous range is 0..100)."""

_MANIPULATOR = SOURCES.index("manipulator")
_POOL = tuple(PROPERTIES)


# ---------------------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------------------


def _acyclic_support(weights: np.ndarray, threshold: float) -> np.ndarray:
    """``weights`` kept where ``|w| > threshold``, strongest first, dropping edges that close a cycle."""
    strength = np.abs(weights)
    return np.where(greedy_dag(strength, strength > threshold).astype(bool), weights, 0.0)


def estimate_shift_mechanism(
    readings: np.ndarray,
    targets: Sequence[int] | np.ndarray,
    records: np.ndarray | None = None,
    threshold: float = THRESHOLD,
) -> tuple[np.ndarray, float]:
    """Direct effects and frequency intercept from a sequence of shift interventions (module docstring).

    Parameters
    ----------
    readings : (K + 1, m + 1) array
        Manipulator readings in order: the start state, then the state after each intervention.
        Columns: the ``m`` properties, then the frequency (last).
    targets : (K,) ints in ``0 .. m - 1``
        The property set by each intervention.
    records : (P, m + 1) array, optional
        Further records of other crystals (same columns), used only for the intercept.
    threshold : float, default :data:`THRESHOLD`
        Coefficients with ``|c| <= threshold`` are no edge.

    Returns
    -------
    weights : (m + 1, m + 1) array
        ``weights[i, j]`` the estimated direct effect of node ``i`` on node ``j`` (0: no edge); the
        support is a DAG and the frequency row is 0.
    base : float
        Intercept of the frequency equation.

    Raises
    ------
    ValueError
        On shapes that do not match, non-finite values, or targets out of range.

    Examples
    --------
    >>> readings = np.array([[10., 5., 40.], [20., 25., 80.], [20., 35., 100.]])  # x0 -> x1 (2), x1 -> f (2)
    >>> weights, base = estimate_shift_mechanism(readings, [0, 1])
    >>> np.round(weights, 6).tolist(), round(base, 6)
    ([[0.0, 2.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]], 30.0)
    """
    x = np.asarray(readings, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2 or not np.isfinite(x).all():
        raise ValueError(f"readings must be a finite (K + 1, m + 1) array with m >= 1, got shape {x.shape}")
    t = np.asarray(targets)
    m = x.shape[1] - 1
    if t.shape != (x.shape[0] - 1,) or (t.size and (t.dtype.kind not in "iu" or t.min() < 0 or t.max() >= m)):
        raise ValueError(f"targets must hold {x.shape[0] - 1} property indices in 0..{m - 1}, got {targets!r}")
    extra = np.empty((0, m + 1)) if records is None else np.asarray(records, dtype=float)
    if extra.ndim != 2 or extra.shape[1] != m + 1 or not np.isfinite(extra).all():
        raise ValueError(f"records must be a finite (P, {m + 1}) array, got shape {extra.shape}")
    threshold = check_real(threshold, "threshold", minimum=0.0)
    change = np.diff(x, axis=0)
    weights = np.zeros((m + 1, m + 1))
    for j in range(m + 1):
        rows = t != j
        parents = np.array([i for i in range(m) if i != j], dtype=np.intp)
        if not rows.any() or parents.size == 0:
            continue
        design = change[rows][:, parents]
        weights[parents, j] = np.linalg.lstsq(design, change[rows, j], rcond=None)[0]
    weights = _acyclic_support(weights, threshold)
    rows = np.vstack([extra, x])
    base = float(np.mean(rows[:, m] - rows[:, :m] @ weights[:m, m]))
    return weights, base


@dataclass(frozen=True)
class MechanismEstimate:
    """The estimator's claim about one episode: named nodes, direct effects and the frequency intercept.

    Attributes
    ----------
    nodes : tuple of str
        The episode's properties (pool order), then the frequency.
    weights : (k, k) array
        ``weights[i, j]``: estimated direct effect of ``nodes[i]`` on ``nodes[j]`` (0: no edge).
    base : float
        Intercept of the frequency equation.
    """

    nodes: tuple[str, ...]
    weights: np.ndarray
    base: float

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """Directed edges ``(parent, child)`` of the estimated graph."""
        return tuple((self.nodes[i], self.nodes[j]) for i, j in np.argwhere(self.weights != 0))

    def freq_coefficients(self) -> dict[str, float]:
        """Estimated parent -> coefficient of the frequency equation."""
        f = self.nodes.index(FREQ)
        return {self.nodes[i]: float(self.weights[i, f]) for i in np.flatnonzero(self.weights[:, f])}

    def predict(self, readings: Mapping[str, float]) -> float:
        """The frequency predicted for a crystal's readings, clipped to the submittable ``[0, MAX_TARGET]``."""
        total = self.base + sum(c * float(readings[p]) for p, c in self.freq_coefficients().items())
        return float(np.clip(total, 0.0, MAX_TARGET))

    def hypothesis(self) -> str:
        """The estimate in the CausaLab hypothesis DSL (JSON text)."""
        coefficients = {p: (c,) for p, c in self.freq_coefficients().items()}
        others = [e for e in self.edges if e[1] != FREQ]
        return hypothesis_json(others, self.base, coefficients)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form: edges, frequency coefficients and intercept."""
        return {"edges": [list(e) for e in self.edges], "freq_coefficients": self.freq_coefficients(),
                "base": self.base}


# ---------------------------------------------------------------------------------------------
# the environment
# ---------------------------------------------------------------------------------------------


class CausaLabPlannerEnv(gym.Env):
    """CausaLab intervention planning: choose every shift intervention; a fixed estimator does the rest.

    ## Description

    A reduction of :class:`~causal_gym.envs.causalab.env.CausaLabEnv` to its experimental-design
    core, for RL. The policy spends the whole intervention budget of a CausaLab episode, one
    intervention per step: which property of the manipulator crystal to set and to which value of
    a fixed grid. After the last intervention a fixed, documented estimator
    (:func:`estimate_shift_mechanism`, module docstring) infers the graph and the frequency
    equation from the manipulator readings; the env enters the reactor and submits the
    estimator's prediction, stating the estimate as the hypothesis. The reward is the all-edge F1
    of the estimated graph. Every step is played through the lab's public tools
    (``intervene``, ``enter_reactor``, ``submit``), so the world, the manipulator and the scoring
    are the lab's own.

    ## Action Space

    ``Discrete(m * G)`` with ``m = n_nodes - 1`` property *slots* and ``G = len(value_grid)``:
    action ``a`` sets slot ``a // G`` to ``value_grid[a % G]``. Slot ``s`` is the ``s``-th
    property of the episode in pool order (:data:`~causal_gym.envs.causalab.world.PROPERTIES`);
    which property that is changes from episode to episode (it is a name, with no causal meaning).
    Every action is valid. Setting a property to the value it already shows moves nothing and
    wastes the intervention. Default grid: :data:`VALUE_GRID`.

    ## Observation Space

    | Key                | Space                          | Meaning |
    |--------------------|--------------------------------|---------|
    | ``readings``       | ``Box(-inf, inf, (m + 1,))``   | current manipulator readings / :data:`READING_SCALE` (slots, then the frequency) |
    | ``shifted``        | ``MultiBinary(m)``             | 1 for slots moved by a non-zero amount at least once |
    | ``counts``         | ``Box(0, 1, (m,))``            | interventions on each slot / budget |
    | ``effects``        | ``Box(-inf, inf, (m, m + 1))`` | per slot, the change of every reading divided by the slot's own change at its latest non-zero shift (total effects; 0 before) |
    | ``budget_remaining`` | ``Box(0, 1, (1,))``          | share of the intervention budget left |

    All ``float32``. Nothing derived from the hidden mechanism appears before the episode ends.

    ## Rewards

    0 on every step but the last, where it is (``reward=``) the all-edge F1 of the estimate
    (``"edge_f1"``, default) or that plus 1 when the predicted reactor frequency activates the
    reactor (``"success+edge_f1"``). With ``shaping > 0`` each intervention that moves a slot
    for the first time adds ``shaping / m``: the potential ``shaping * (shifted slots / m)``
    with discount 1, truth-free; each such step adds one independent total-effect row to the
    estimator's design (so at most ``shaping`` per episode). Off by default.

    ## Starting State

    As :class:`~causal_gym.envs.causalab.env.CausaLabEnv`: without options a train-stream
    episode (:func:`~causal_gym.envs.causalab.suites.train_episode`, disjoint from the test
    suites) drawn from the seed; ``options={"instance": k}`` test-suite episode ``k``;
    ``{"split": "train", "instance": k}`` train episode ``k``.

    ## Episode End

    ``terminated`` after the budget's last intervention (exactly ``budget`` steps); never
    truncated. The final info is the lab's final info (``metrics``, ``success``, ``prediction``,
    ``target``, ``truth``, ``imec_size``, ...; ``final_hypothesis`` is ``{}`` rather than None when
    the estimate has no edge, so vector envs can stack it) plus ``"estimate"``
    (:meth:`MechanismEstimate.to_dict`) and ``"hypothesis"`` (the DSL text stated). Each
    step's info holds ``"slot"``, ``"property"``, ``"value"`` and ``"moved"`` (the change the
    target showed).

    ## Arguments

    | Parameter             | Default         | Description |
    |-----------------------|-----------------|-------------|
    | ``setting``           | ``"4node"``     | a linear, non-Golden name in :data:`~causal_gym.envs.causalab.suites.SETTINGS` or such a ``Setting`` |
    | ``intervention_budget`` | None          | None: ``n_nodes - 1`` (see below); an int overrides (same graphs) |
    | ``n_prior_records``   | None            | override |
    | ``hidden``            | None            | override (the estimator is then misspecified) |
    | ``value_grid``        | :data:`VALUE_GRID` | setpoints, each in ``[-1e4, 1e4]`` |
    | ``threshold``         | :data:`THRESHOLD` | the estimator's edge threshold |
    | ``reward``            | ``"edge_f1"``   | one of :data:`PLANNER_REWARDS` |
    | ``shaping``           | 0.0             | weight of the coverage shaping term |
    | ``success_tol``       | 5.0             | Hz, as the lab |
    | ``render_mode``       | None            | ``"ansi"`` (the lab's rendering) |
    | ``seal``              | None            | seals the lab's episode streams (as :class:`CausaLabEnv`) |

    The default budget is ``n_nodes - 1``, one intervention per property: the smallest budget
    under which the estimator can be exact, and the published scaling grids' smallest online
    budgets (``4node-XoYi`` with 3, ``6node-XoYi`` with 5 interventions). At the lab's own
    budget ``4 (n_nodes - 1)`` planning is moot: a uniformly random planner already recovers the
    graph exactly on all 50 episodes of the 4-node test suite (all-edge F1 1.0), because random
    choices shift every property at least once almost surely. The graphs, records and crystals do
    not depend on the budget (:func:`~causal_gym.envs.causalab.suites.episode_seed`).

    ```python
    >>> import gymnasium as gym, causal_gym
    >>> env = gym.make("CausaLab-planner-4node-v0")
    >>> obs, info = env.reset(seed=0, options={"instance": 0})
    >>> env.action_space, obs["readings"].shape
    (Discrete(15), (4,))

    ```

    ## Vectorized environment

    ``gym.make_vec("CausaLab-planner-4node-v0", num_envs=4)``: fixed episode length, autoreset.

    ## Version History

    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        setting: str | Setting = "4node",
        *,
        intervention_budget: int | None = None,
        n_prior_records: int | None = None,
        hidden: HiddenSpec | Mapping[str, Any] | None = None,
        value_grid: Sequence[float] = VALUE_GRID,
        threshold: float = THRESHOLD,
        reward: str = "edge_f1",
        shaping: float = 0.0,
        success_tol: float = 5.0,
        render_mode: str | None = None,
        seal: Seal | str | None = None,
    ) -> None:
        self.reward = check_choice(reward, PLANNER_REWARDS, "reward")
        if intervention_budget is None:
            chosen = setting if isinstance(setting, Setting) else SETTINGS[check_choice(setting, SETTINGS, "setting")]
            intervention_budget = chosen.n_nodes - 1
        self.lab = CausaLabEnv(
            setting, intervention_budget=intervention_budget, n_prior_records=n_prior_records, hidden=hidden,
            success_tol=success_tol, max_submissions=1, reward=self.reward, render_mode=render_mode, seal=seal,
        )
        if self.lab.setting.golden or self.lab.setting.intervention_budget < 1:  # type: ignore[operator]
            raise ValueError("the planner needs an intervention budget of at least 1 and online interventions "
                             "(not a Golden setting)")
        if self.lab.setting.kind != "linear":
            raise ValueError("the planner's estimator is linear: use a setting of the linear family")
        if isinstance(value_grid, (str, bytes)) or not isinstance(value_grid, Sequence) or not value_grid:
            raise ValueError(f"value_grid must be a non-empty sequence of numbers, got {value_grid!r}")
        grid = tuple(check_real(v, "value_grid member") for v in value_grid)
        if len(set(grid)) != len(grid) or max(map(abs, grid)) > VALUE_BOUND:
            raise ValueError(f"value_grid must hold distinct values in [-{VALUE_BOUND:g}, {VALUE_BOUND:g}], got {grid}")
        self.value_grid = grid
        self.threshold = check_real(threshold, "threshold", minimum=0.0)
        self.shaping = check_real(shaping, "shaping", minimum=0.0)
        self.render_mode = render_mode
        self.budget = int(self.lab.setting.intervention_budget)  # type: ignore[arg-type]  # an int once built
        self.n_slots = m = self.lab.setting.n_nodes - 1
        self.action_space = spaces.Discrete(m * len(grid))
        self.observation_space = spaces.Dict(
            {
                "readings": spaces.Box(-np.inf, np.inf, (m + 1,), dtype=np.float32),
                "shifted": spaces.MultiBinary(m),
                "counts": spaces.Box(0.0, 1.0, (m,), dtype=np.float32),
                "effects": spaces.Box(-np.inf, np.inf, (m, m + 1), dtype=np.float32),
                "budget_remaining": spaces.Box(0.0, 1.0, (1,), dtype=np.float32),
            },
            sort_keys=False,
        )
        self._lab_obs: dict[str, Any] | None = None

    # -- the public interface ------------------------------------------------------------------

    def check_reset_options(self, options: Any) -> tuple[str, int | None]:
        """Validate ``reset`` options without building the episode (they are the lab's)."""
        return self.lab.check_reset_options(options)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a lab episode (see *Starting State*); options are the lab's."""
        super().reset(seed=seed)
        self._lab_obs, lab_info = self.lab.reset(seed=seed, options=options)
        in_graph = np.asarray(self._lab_obs["in_graph"][: len(_POOL)], dtype=bool)
        self.slots = tuple(p for p, inside in zip(_POOL, in_graph) if inside)
        self._columns = [COLUMNS.index(p) for p in (*self.slots, FREQ)]
        self._counts = np.zeros(self.n_slots)
        self._effects = np.zeros((self.n_slots, self.n_slots + 1))
        self._shifted = np.zeros(self.n_slots, dtype=np.int8)
        self._used = 0
        return self._observation(), {"instance": lab_info["instance"], "slots": list(self.slots)}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play one intervention; after the last one, estimate, predict and score.

        Raises
        ------
        ValueError
            If ``action`` is not an element of ``action_space``.
        RuntimeError
            Before ``reset`` or after the episode ended.
        """
        if self._lab_obs is None:
            raise RuntimeError("call reset() before step()")
        if self._used >= self.budget:
            raise RuntimeError("the episode has ended; call reset() to start a new one")
        index = np.asarray(action)
        n = self.n_slots * len(self.value_grid)  # the action space's size
        if index.shape != () or index.dtype.kind not in "iu" or not 0 <= int(index) < n:
            raise ValueError(f"action must be an integer in 0..{n - 1}, got {action!r}")
        slot, position = divmod(int(index), len(self.value_grid))
        value = self.value_grid[position]
        before = self._readings()
        self._lab_obs, _, _, _, lab_info = self.lab.step(self._lab_action("intervene", property=self.slots[slot],
                                                                          value=value))
        if not lab_info["result"].get("values"):
            raise RuntimeError(f"the lab refused a planner intervention: {self._lab_obs['last_result']}")
        after = self._readings()
        moved = float(after[slot] - before[slot])
        first = moved != 0.0 and not self._shifted[slot]
        if moved != 0.0:
            self._effects[slot] = (after - before) / moved
            self._shifted[slot] = 1
        self._counts[slot] += 1
        self._used += 1
        reward = self.shaping / self.n_slots if first else 0.0
        info: dict[str, Any] = {"slot": slot, "property": self.slots[slot], "value": value, "moved": moved}
        if self._used < self.budget:
            return self._observation(), reward, False, False, info
        final_reward, final = self._conclude()
        return self._observation(), reward + final_reward, True, False, {**final, **info}

    def estimate(self) -> MechanismEstimate:
        """The estimator on the readings so far (what the episode's end will state)."""
        if self._lab_obs is None:
            raise RuntimeError("no episode yet: call reset() first")
        obs = self._lab_obs
        mask = np.asarray(obs["record_mask"], dtype=bool)
        rows = np.asarray(obs["records"])[mask][:, self._columns]
        source = np.asarray(obs["record_source"])[mask]
        target = np.asarray(obs["record_target"])[mask]
        manipulator = source == _MANIPULATOR
        slot_of = {_POOL.index(p) + 1: s for s, p in enumerate(self.slots)}
        targets = np.array([slot_of[int(k)] for k in target[manipulator][1:]], dtype=np.int64)
        weights, base = estimate_shift_mechanism(rows[manipulator], targets, rows[~manipulator], self.threshold)
        return MechanismEstimate((*self.slots, FREQ), weights, base)

    def render(self) -> str | np.ndarray | None:
        """The lab's text rendering (``"ansi"``)."""
        return self.lab.render()

    def record(self) -> EpisodeLog:
        """The lab's call record of the current (or last) episode."""
        return self.lab.record()

    def budgets(self) -> dict[str, float]:
        """The episode's limits: the intervention budget (one intervention per step)."""
        return {"interventions": float(self.budget)}

    def task_description(self) -> str:
        """The task statement: what an action does and what is rewarded."""
        return (
            f"Plan the {self.budget} shift interventions of a CausaLab episode with {self.n_slots} crystal properties. "
            f"Each step sets one property slot to one of the values {list(self.value_grid)}. After the last "
            "intervention a fixed least-squares estimator infers the causal graph from the manipulator readings; "
            f"the reward is the all-edge F1 of that graph{' plus the prediction success' if '+' in self.reward else ''}."
        )

    # -- internals ---------------------------------------------------------------------------------

    def _lab_action(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.lab.toolbox.encode(ToolCall(tool, arguments))

    def _readings(self) -> np.ndarray:
        if self._lab_obs is None:
            raise RuntimeError("call reset() first")
        return np.asarray(self._lab_obs["manipulator"], dtype=np.float64)[self._columns]

    def _conclude(self) -> tuple[float, dict[str, Any]]:
        """Enter the reactor and submit the estimator's prediction, stating the estimate on both calls."""
        estimate = self.estimate()
        hypothesis = estimate.hypothesis()
        obs, _, terminated, truncated, info = self.lab.step(self._lab_action("enter_reactor", hypothesis=hypothesis))
        if terminated or truncated:
            raise RuntimeError(f"the lab ended before the prediction: {info.get('end_reason')}")
        reactor = dict(zip(COLUMNS, np.asarray(obs["reactor"], dtype=float)))
        self._lab_obs, reward, terminated, truncated, info = self.lab.step(
            self._lab_action("submit", frequency=estimate.predict(reactor), hypothesis=hypothesis)
        )
        if not terminated or truncated:
            raise RuntimeError("the lab did not end on the planner's only submission")
        return float(reward), {**info, "estimate": estimate.to_dict(), "hypothesis": hypothesis}

    def _observation(self) -> dict[str, Any]:
        return {
            "readings": (self._readings() / READING_SCALE).astype(np.float32),
            "shifted": self._shifted.copy(),
            "counts": (self._counts / self.budget).astype(np.float32),
            "effects": self._effects.astype(np.float32),
            "budget_remaining": np.array([1.0 - self._used / self.budget], dtype=np.float32),
        }


# ---------------------------------------------------------------------------------------------
# reference planners
# ---------------------------------------------------------------------------------------------


class RandomPlanner:
    """Uniformly random interventions: slot and grid value drawn uniformly at every step.

    Parameters
    ----------
    seed : int
        Episode ``k`` of the agent draws from ``SeedSequence([seed, k])``.
    """

    def __init__(self, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self._episode = 0
        self._n: int | None = None

    def reset(self, task: TaskSpec) -> None:
        if not isinstance(task.action_space, spaces.Discrete):
            raise ValueError(f"RandomPlanner plays Discrete planner actions, got {task.action_space}")
        self._n = int(task.action_space.n)
        self._rng = np.random.default_rng(np.random.SeedSequence([self.seed, self._episode]))
        self._episode += 1

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> int:
        """A uniformly random action."""
        if self._n is None:
            raise RuntimeError("RandomPlanner.act() called before reset(task)")
        return int(self._rng.integers(self._n))


class RoundRobinPlanner:
    """Slots in turn (0, 1, ..., m - 1, 0, ...), each set to the grid value farthest from its current reading.

    With a budget of at least ``m`` every property is shifted once by at least half the grid's
    span, which is the design under which the estimator is exact in the linear family.

    Parameters
    ----------
    value_grid : sequence of float
        The planner env's grid (default :data:`VALUE_GRID`).
    """

    def __init__(self, value_grid: Sequence[float] = VALUE_GRID) -> None:
        self.value_grid = np.array([check_real(v, "value_grid member") for v in value_grid])
        if self.value_grid.size == 0:
            raise ValueError("value_grid must not be empty")
        self._m: int | None = None

    def reset(self, task: TaskSpec) -> None:
        n = getattr(task.action_space, "n", None)
        if n is None or int(n) % self.value_grid.size:
            raise ValueError(f"{task.action_space} is not a planner action space over {self.value_grid.size} values")
        self._m = int(n) // self.value_grid.size
        self._step = 0

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> int:
        """The next slot, at the grid value farthest from its reading."""
        if self._m is None:
            raise RuntimeError("RoundRobinPlanner.act() called before reset(task)")
        slot = self._step % self._m
        self._step += 1
        reading = float(observation["readings"][slot]) * READING_SCALE
        return slot * self.value_grid.size + int(np.argmax(np.abs(self.value_grid - reading)))
