"""Scripted CausaLab agents: regression on observations, random interventions, a systematic experimenter.

All three play through the public tools, as an LLM would, and read only the observation: the
records, the manipulator readings, which columns are in the graph and, in the reactor phase, the
reactor readings. Each states its hypothesis in the DSL with every call that can carry one.

- :class:`ObservationRegressionAgent` fits the frequency on the records available at the start
  (prior records, Golden chain, the manipulator's start state), enters the reactor and predicts.
- :class:`RandomInterventionAgent` spends the whole intervention budget on random settings first
  and fits the frequency on every record collected.
- :class:`SystematicExperimenter` shifts every property once, reads the total effects off the
  readings, solves them for the direct effects (exact in the linear family; in the quadratic
  family it spends the rest of the budget on spread-out settings and fits every node's curves by
  least squares), verifies its frequency equation on every record, enters the reactor and predicts.

The regression fit (:func:`fit_frequency`) is least squares on the properties (and their squares
in the quadratic family). With fewer records than unknowns it takes numpy's minimum-norm solution,
which reproduces every record but extrapolates poorly — that is the point of the baseline.
Coefficients below a small threshold are taken as noise and dropped, and the rest refitted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from causal_gym.envs.causalab.env import COLUMNS, FREQ_PARENT_NOTE, SOURCES
from causal_gym.envs.causalab.world import FREQ, MAX_TARGET, PROPERTIES
from causal_gym.harness.agent import TaskSpec, typed_action

__all__ = [
    "SHIFT",
    "SPREAD",
    "fit_frequency",
    "hypothesis_json",
    "ObservationRegressionAgent",
    "RandomInterventionAgent",
    "SystematicExperimenter",
]

SHIFT = 10.0
"""How far :class:`SystematicExperimenter` moves each property from its current reading."""

SPREAD = (95.0, 5.0, 50.0, 80.0, 20.0, 65.0, 35.0)
"""Setpoints of :class:`SystematicExperimenter`'s extra quadratic-family experiments: spread over the
crystals' range 0..100 so that every curve is seen far from its vertex on both sides."""

_CURVATURE = 0.004
"""A fitted quadratic term counts as an edge when its curvature exceeds this: half the smallest
curvature of the family (0.008); fits from 2-decimal readings are off by far less."""

_NOISE = {1: 0.01, 2: 1e-4}
"""Fitted coefficients of this size or smaller (by power of the term) count as zero."""
_DIGITS = 6
_WRITTEN_DIGITS = 9
"""Decimals of a coefficient written into a hypothesis: at 6, the rounding of a quadratic term's
``c2`` alone moves a prediction by up to 0.005 Hz at readings near 100."""
_EXACT = 1e-6
_POOL = list(PROPERTIES)
_FREQ_COLUMN = COLUMNS.index(FREQ)


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------


def _clean(x: float) -> float | int:
    """``x`` to 9 decimals, as an int when it is one (so hypotheses read like the lab's integers)."""
    value = round(float(x), _WRITTEN_DIGITS)
    return int(round(value)) if abs(value - round(value)) < _EXACT else value


def fit_frequency(
    values: np.ndarray, frequency: np.ndarray, names: Sequence[str], quadratic: bool = False
) -> tuple[float, dict[str, tuple[float, ...]]]:
    """Least-squares frequency equation ``f = base + sum_p (c_p2 p^2 +) c_p p`` on the given rows.

    Parameters
    ----------
    values : (k, m) array
        Property readings, columns in ``names`` order.
    frequency : (k,) array
    names : sequence of str
    quadratic : bool
        Also fit a squared term per property.

    Returns
    -------
    base : float
    coefficients : dict
        Property -> ``(c,)`` or ``(c2, c1)`` for the properties kept (some coefficient above the
        noise threshold after a refit on the kept ones). With no rows, base 0 and no terms.
    """
    x = np.asarray(values, dtype=float).reshape(len(frequency), len(names))
    y = np.asarray(frequency, dtype=float)
    if y.size == 0:
        return 0.0, {}
    kept = list(range(len(names)))
    while True:  # fit, drop the noise terms, refit until nothing more is dropped
        columns: list[np.ndarray] = [np.ones(len(y))]
        for j in kept:
            columns += [x[:, j] ** 2, x[:, j]] if quadratic else [x[:, j]]
        beta = np.linalg.lstsq(np.column_stack(columns), y, rcond=None)[0]
        width = 2 if quadratic else 1
        terms = {j: tuple(beta[1 + width * k: 1 + width * (k + 1)]) for k, j in enumerate(kept)}
        significant = [j for j, c in terms.items() if abs(c[-1]) > _NOISE[1] or (quadratic and abs(c[0]) > _NOISE[2])]
        if significant == kept:
            break
        kept = significant
    return float(beta[0]), {names[j]: terms[j] for j in kept}


def _fit_curves(
    rows: np.ndarray, y: np.ndarray, candidates: Sequence[str], segment: np.ndarray
) -> tuple[dict[str, tuple[float, float]], np.ndarray]:
    """Least squares of ``y`` on one intercept per segment plus ``c2 p^2 + c1 p`` per candidate.

    Candidates whose curvature is at most :data:`_CURVATURE` are dropped and the fit repeated.
    Returns the kept ``{candidate: (c2, c1)}`` and the intercepts by segment.
    """
    segments = np.unique(segment, return_inverse=True)[1]
    kept = list(candidates)
    while True:
        columns = [(segments == s).astype(float) for s in range(int(segments.max()) + 1)]
        for p in kept:
            x = rows[:, COLUMNS.index(p)]
            columns += [x * x, x]
        beta = np.linalg.lstsq(np.column_stack(columns), y, rcond=None)[0]
        n = len(columns) - 2 * len(kept)
        terms = {p: (float(beta[n + 2 * k]), float(beta[n + 2 * k + 1])) for k, p in enumerate(kept)}
        significant = [p for p in kept if abs(terms[p][0]) > _CURVATURE]
        if significant == kept:
            return terms, beta[:n]
        kept = significant


def hypothesis_json(
    edges: Sequence[tuple[str, str]], base: float, coefficients: Mapping[str, Sequence[float]]
) -> str:
    """The DSL hypothesis: one edge per frequency term, then the given edges in order.

    ``coefficients`` maps a parent of the frequency to ``(c,)`` (linear) or ``(c2, c1)``
    (quadratic); zero coefficients are left out of the equation (the DSL forbids them, and it
    has no zero ``base`` either: one is written as 1e-9). A given edge that would close a
    directed cycle is dropped, so noisy estimates still make a valid hypothesis; give the most
    trusted edges first.
    """
    terms, values = ["base"], {"base": _clean(base) or 10.0 ** -_WRITTEN_DIGITS}
    parents = []
    for p, c in coefficients.items():
        named = {f"c_{p}": c[0]} if len(c) == 1 else {f"c_{p}_2": c[0], f"c_{p}_1": c[1]}
        named = {k: _clean(v) for k, v in named.items()}
        if not any(named.values()):
            continue
        if len(c) == 2 and not all(named.values()):  # keep both quadratic terms non-zero
            named = {k: (v or 10.0 ** -_WRITTEN_DIGITS) for k, v in named.items()}
        parents.append(p)
        values.update(named)
        terms += [f"{k}*{p}^2" if k.endswith("_2") else f"{k}*{p}" for k in named]
    claimed = [(p, FREQ) for p in parents]
    for a, b in edges:
        if b != FREQ and (a, b) not in claimed and not _reaches(claimed, b, a):
            claimed.append((a, b))
    return json.dumps({
        "edges": [{"from": a, "to": b} for a, b in claimed],
        "freq_equation": f"{FREQ} = " + " + ".join(terms),
        "coefficients": values,
    })


def _reaches(edges: Sequence[tuple[str, str]], start: str, goal: str) -> bool:
    """Whether a directed path leads from ``start`` to ``goal``."""
    seen, frontier = {start}, [start]
    while frontier:
        node = frontier.pop()
        if node == goal:
            return True
        for a, b in edges:
            if a == node and b not in seen:
                seen.add(b)
                frontier.append(b)
    return False


def _predict(base: float, coefficients: Mapping[str, Sequence[float]], reading: Mapping[str, float]) -> float:
    total = base
    for p, c in coefficients.items():
        x = reading[p]
        total += c[0] * x * x + c[1] * x if len(c) == 2 else c[0] * x
    return float(np.clip(total, 0.0, MAX_TARGET))


def _graph_names(observation: Mapping[str, Any]) -> list[str]:
    """The properties of the episode (pool order)."""
    return [p for p, inside in zip(_POOL, observation["in_graph"][: len(_POOL)]) if inside]


def _records(observation: Mapping[str, Any]) -> np.ndarray:
    return np.asarray(observation["records"])[np.asarray(observation["record_mask"], dtype=bool)]


def _is_quadratic(task: TaskSpec) -> bool:
    """Whether the task's hypothesis schema names quadratic coefficients (``c_<property>_2``)."""
    for spec in task.tool_specs:
        hypothesis = spec["function"]["parameters"]["properties"].get("hypothesis", {})
        names = hypothesis.get("properties", {}).get("coefficients", {}).get("properties", {})
        if any(name.endswith("_2") for name in names):
            return True
    return False


def _intervene(task: TaskSpec, node: str, value: float) -> dict[str, Any]:
    """The typed ``intervene`` action: its ``property`` field indexes the whole pool, while the tool
    schema's enum lists only the episode's properties (so :func:`typed_action` cannot index it)."""
    action = typed_action(task, "intervene", value=value)
    action["property"] = np.int64(_POOL.index(node))
    return action


def _check_task(task: TaskSpec, who: str) -> None:
    names = {spec["function"]["name"] for spec in task.tool_specs}
    needed = {"intervene", "enter_reactor", "submit", "verify", "give_up"}
    if not needed <= names:
        raise ValueError(f"{who} plays CausaLab tasks (tools {sorted(needed)}); {task.env_id} has {sorted(names)}")


class _RegressionAgent:
    """Shared ending: fit on the records, enter the reactor stating the fit, predict, give up after a miss."""

    def __init__(self) -> None:
        self._task: TaskSpec | None = None

    def reset(self, task: TaskSpec) -> None:
        _check_task(task, type(self).__name__)
        self._task = task
        self._quadratic = _is_quadratic(task)
        self._fit: tuple[float, dict[str, tuple[float, ...]]] | None = None
        self._submitted = False

    def _task_or_raise(self) -> TaskSpec:
        if self._task is None:
            raise RuntimeError(f"{type(self).__name__}.act() called before reset(task)")
        return self._task

    def _conclude(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        task = self._task_or_raise()
        names = _graph_names(observation)
        if self._fit is None:
            rows = _records(observation)
            columns = [COLUMNS.index(p) for p in names]
            self._fit = fit_frequency(rows[:, columns], rows[:, _FREQ_COLUMN], names, self._quadratic)
            self._hypothesis = hypothesis_json([], *self._fit)
        if not int(observation["reactor_visible"]):
            return typed_action(task, "enter_reactor", hypothesis=self._hypothesis)
        if self._submitted:
            return typed_action(task, "give_up", hypothesis=self._hypothesis)
        self._submitted = True
        reading = dict(zip(COLUMNS, np.asarray(observation["reactor"], dtype=float)))
        return typed_action(task, "submit", frequency=_predict(*self._fit, reading), hypothesis=self._hypothesis)


# ---------------------------------------------------------------------------------------------
# the agents
# ---------------------------------------------------------------------------------------------


class ObservationRegressionAgent(_RegressionAgent):
    """Fit the frequency on the records given at the start, enter the reactor, predict once.

    The fit uses every record in the first observation (prior records, the Golden chain, the
    manipulator's start state) and :func:`fit_frequency` (minimum-norm least squares when the
    records are fewer than the unknowns). The hypothesis claims exactly the fitted terms as
    edges into the frequency. After a wrong prediction it gives up.

    Examples
    --------
    >>> import gymnasium as gym, causal_gym
    >>> from causal_gym.eval import rollout
    >>> record = rollout(gym.make("CausaLab-3node-v0"), ObservationRegressionAgent(), seed=0, options={"instance": 0})
    >>> record.steps <= 3 and record.final_info["end_reason"] in ("success", "give_up")
    True
    """

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        """Enter the reactor stating the fit, then submit its prediction, then give up."""
        return self._conclude(observation)


class RandomInterventionAgent(_RegressionAgent):
    """Spend the whole intervention budget on random settings, then fit the frequency on every record.

    Each intervention sets a property of the graph drawn uniformly to an integer drawn uniformly
    from 0..100 (the range of the crystals' own values). Then it plays as
    :class:`ObservationRegressionAgent` on all records, the manipulator readings included.

    Parameters
    ----------
    seed : int
        Seeds the choices; episode ``k`` of the agent uses ``SeedSequence([seed, k])``.
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self._episode = 0

    def reset(self, task: TaskSpec) -> None:
        super().reset(task)
        self._rng = np.random.default_rng(np.random.SeedSequence([self.seed, self._episode]))
        self._episode += 1

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        """A random intervention while the budget lasts, then the regression ending."""
        task = self._task_or_raise()
        if int(observation["lab_phase"]) == 0 and info["budgets_remaining"]["interventions"] > 0:
            node = str(self._rng.choice(_graph_names(observation)))
            return _intervene(task, node, float(self._rng.integers(0, 101)))
        return self._conclude(observation)


class SystematicExperimenter:
    """Shift every property once, solve for the direct effects, verify, enter the reactor and predict.

    The plan (exact in the linear family without a hidden disturbance):

    1. **Experiments.** Every property ``X`` is set to its current reading + :data:`SHIFT`, one at a
       time. Each intervention's change of the readings, divided by the change of ``X``, is the
       row of total effects ``T[X, :]``. A Golden chain is used the same way (each chain record
       against the record before it), so the Golden variant needs no intervention.
    2. **Direct effects.** With the frequency marginalised out, the properties form a linear
       system whose total effects are ``T_C = (I - E)^-1``, so the direct effects are
       ``E = I - T_C^-1`` and the frequency's coefficients ``c = T_C^-1 T[:, f]``.
    3. **Frequency as a cause** (only when the task says the frequency may influence other
       properties, :data:`~causal_gym.envs.causalab.env.FREQ_PARENT_NOTE`). The frequency has
       no noise of its own, so an edge ``f -> Z`` with weight ``b`` shows in ``E`` as edges from
       every parent ``p`` of the frequency with weight ``b * c_p``. For every property that is
       not an ancestor of the frequency, the agent picks the ``b`` (0 or a ratio
       ``E[p, Z] / c_p``) that explains ``Z`` with the fewest edges; ties keep ``b = 0``. This
       is parsimony, not identification: every such reading fits every record equally well,
       so the FreqParent structure is identified only with the frequency marginalised out.
    4. **Base and check.** ``base`` is the frequency minus ``sum c_p p`` on the start state; the
       hypothesis is checked with ``verify`` on every record. If it fails (a hidden disturbance,
       the quadratic family, too small a budget) the frequency is refitted by least squares on
       every record (:func:`fit_frequency`) and the structure from step 2 is kept.
    5. Enter the reactor, submit ``base + sum c_p p`` on its readings; give up after a miss.

    In the quadratic family the readings' changes are not proportional to the shift, so steps 2-4
    are replaced by least squares once the whole budget is spent: after the shifts of step 1, every
    property is set in turn to the values of :data:`SPREAD` (staggered by property). Each node is then
    fitted as ``intercept + sum_p (c2 p^2 + c1 p)`` over the properties its own shift did not move
    (its non-descendants); a property's intercept is its exogenous term, which changes with every
    intervention on it, so it gets one intercept per stretch between those interventions (fitted on
    the manipulator readings), the frequency a single one (fitted on every record). A term is an edge
    when its curvature exceeds half the family's smallest (0.004); the rest are dropped and the fit
    repeated.
    """

    def __init__(self) -> None:
        self._task: TaskSpec | None = None

    def reset(self, task: TaskSpec) -> None:
        _check_task(task, "SystematicExperimenter")
        self._task = task
        self._quadratic = _is_quadratic(task)
        self._freq_children = FREQ_PARENT_NOTE in task.description
        self._names: list[str] | None = None
        self._queue: list[str] = []
        self._target: str  # the property of the intervention in flight (with _previous)
        self._previous: np.ndarray | None = None
        self._effects: dict[str, np.ndarray] = {}
        self._freq: dict[str, tuple[float, ...]]  # the frequency equation's terms once fitted
        self._hypothesis = ""
        self._stage = "experiment"
        self._spread = 0

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        """The next call of the plan (see the class docstring)."""
        task = self._task
        if task is None:
            raise RuntimeError("SystematicExperimenter.act() called before reset(task)")
        reading = np.asarray(observation["manipulator"], dtype=float)
        if self._names is None:
            self._names = _graph_names(observation)
            self._queue = list(self._names)
            self._golden_effects(observation)
            self._queue = [p for p in self._queue if p not in self._effects]
        elif self._stage == "experiment" and self._previous is not None:
            self._record_effect(self._target, self._previous, reading)
        budget_left = info["budgets_remaining"]["interventions"]
        if self._stage == "experiment" and budget_left > 0 and int(observation["lab_phase"]) == 0:
            if self._queue:
                self._target = self._queue.pop(0)
                self._previous = reading
                return _intervene(task, self._target, float(reading[COLUMNS.index(self._target)] + SHIFT))
            if self._quadratic and self._names:  # spend the rest of the budget on spread-out settings
                m, k = len(self._names), self._spread
                self._spread += 1
                self._previous = None
                return _intervene(task, self._names[k % m], SPREAD[(k // m + k % m) % len(SPREAD)])
        if self._stage == "experiment":
            self._stage = "verify"
            self._solve(observation)
            return typed_action(task, "verify", hypothesis=self._hypothesis)
        if self._stage == "verify":
            self._stage = "reactor"
            if not self._quadratic and not info.get("result", {}).get("verify", {}).get("ok", False):
                self._refit(observation)
            if not int(observation["reactor_visible"]):
                return typed_action(task, "enter_reactor", hypothesis=self._hypothesis)
        if self._stage == "reactor" and int(observation["reactor_visible"]):
            self._stage = "submitted"
            reactor = dict(zip(COLUMNS, np.asarray(observation["reactor"], dtype=float)))
            return typed_action(task, "submit", frequency=_predict(self._base, self._freq, reactor),
                                hypothesis=self._hypothesis)
        return typed_action(task, "give_up", hypothesis=self._hypothesis)

    # -- experiments -------------------------------------------------------------------------------

    def _record_effect(self, target: str, before: np.ndarray, after: np.ndarray) -> None:
        change = after - before
        moved = change[COLUMNS.index(target)]
        if abs(moved) > _EXACT and target not in self._effects:
            self._effects[target] = change / moved

    def _golden_effects(self, observation: Mapping[str, Any]) -> None:
        """Total effects from the Golden chain: each chain record against the record before it."""
        mask = np.asarray(observation["record_mask"], dtype=bool)
        rows = np.asarray(observation["records"])[mask]
        sources = np.asarray(observation["record_source"])[mask]
        targets = np.asarray(observation["record_target"])[mask]
        golden = SOURCES.index("golden")
        for k in np.flatnonzero(sources == golden):
            if k == 0:
                continue
            previous = rows[k - 1] if sources[k - 1] == golden else rows[0]
            self._record_effect(_POOL[int(targets[k]) - 1], previous, rows[k])

    # -- inference ---------------------------------------------------------------------------------

    def _solve(self, observation: Mapping[str, Any]) -> None:
        if self._quadratic:
            self._solve_quadratic(observation)
            return
        names = self._names or []
        columns = [COLUMNS.index(p) for p in names]
        start = np.asarray(observation["manipulator"], dtype=float)
        edges: list[tuple[str, str]] = []
        total = np.array([self._effects[p] for p in names]) if all(p in self._effects for p in names) else None
        # total effects are unit-triangular up to order in an undisturbed lab; a disturbance can break that
        if names and total is not None and abs(np.linalg.det(total[:, columns])) > _EXACT:
            inverse = np.linalg.inv(total[:, columns])
            direct = np.round(np.eye(len(names)) - inverse, _DIGITS)
            freq = np.round(inverse @ total[:, _FREQ_COLUMN], _DIGITS)
            edges = self._with_frequency_children(names, direct, freq)
            self._freq = {p: (float(c),) for p, c in zip(names, freq) if abs(c) > _EXACT}
            self._base = float(start[_FREQ_COLUMN] - sum(c[0] * start[COLUMNS.index(p)] for p, c in self._freq.items()))
        else:
            rows = _records(observation)
            self._base, self._freq = fit_frequency(rows[:, columns], rows[:, _FREQ_COLUMN], names, self._quadratic)
        self._edges = edges
        self._hypothesis = hypothesis_json(edges, self._base, self._freq)

    def _solve_quadratic(self, observation: Mapping[str, Any]) -> None:
        """Fit every node's curves on its non-descendants (see the class docstring)."""
        names = self._names or []
        mask = np.asarray(observation["record_mask"], dtype=bool)
        rows = np.asarray(observation["records"])[mask]
        manipulator = np.asarray(observation["record_source"])[mask] == SOURCES.index("manipulator")
        set_column = np.asarray(observation["record_target"])[mask] - 1  # pool index of the set property, -1: none

        def non_descendants(node: str) -> list[str]:
            moved = self._effects.get(node)
            return [p for p in names if p != node and (moved is None or abs(moved[COLUMNS.index(p)]) <= _EXACT)]

        edges: list[tuple[float, tuple[str, str]]] = []
        for node in names:
            j = COLUMNS.index(node)
            segment = np.cumsum(set_column[manipulator] == j)  # a new exogenous term after each setting of node
            terms, _ = _fit_curves(rows[manipulator], rows[manipulator, j], non_descendants(node), segment)
            edges += [(abs(c[0]), (p, node)) for p, c in terms.items()]
        terms, intercept = _fit_curves(rows, rows[:, _FREQ_COLUMN], names, np.zeros(len(rows), dtype=int))
        self._base, self._freq = float(intercept[0]), dict(terms)
        self._edges = [edge for _, edge in sorted(edges, key=lambda we: -we[0])]
        self._hypothesis = hypothesis_json(self._edges, self._base, self._freq)

    def _with_frequency_children(self, names: list[str], direct: np.ndarray, freq: np.ndarray) -> list[tuple[str, str]]:
        """Edges among the properties, with ``f -> Z`` where it explains ``Z`` with fewer edges."""
        m = len(names)
        parents = [j for j in range(m) if abs(freq[j]) > _EXACT]
        reach = (np.abs(direct) > _EXACT).astype(int)  # reach[i, j]: a path i -> ... -> j
        for _ in range(m):
            reach = np.minimum(reach + reach @ reach, 1)
        ancestors_of_f = {i for i in range(m) if i in parents or any(reach[i, j] for j in parents)}
        weighted: list[tuple[float, tuple[str, str]]] = []
        for z in range(m):
            column = direct[:, z].copy()
            if self._freq_children and z not in ancestors_of_f and parents:
                candidates = [0.0] + [column[p] / freq[p] for p in parents if abs(column[p]) > _EXACT]
                scored = [(np.count_nonzero(np.abs(column - b * freq) > _EXACT) + (b != 0), k, b)
                          for k, b in enumerate(candidates)]
                _, _, b = min(scored)
                if b != 0:
                    column = np.round(column - b * freq, _DIGITS)
                    weighted.append((abs(b), (FREQ, names[z])))
            weighted += [(abs(column[i]), (names[i], names[z])) for i in range(m) if i != z and abs(column[i]) > _EXACT]
        # strongest first: if a disturbance makes the estimates cyclic, the weakest edges give way
        return [edge for _, edge in sorted(weighted, key=lambda we: -we[0])]

    def _refit(self, observation: Mapping[str, Any], parents: list[str] | None = None) -> None:
        """Least-squares frequency equation on every record, keeping the structure among properties."""
        names = parents if parents is not None else (self._names or [])
        rows = _records(observation)
        self._base, self._freq = fit_frequency(
            rows[:, [COLUMNS.index(p) for p in names]], rows[:, _FREQ_COLUMN], names, self._quadratic
        )
        self._hypothesis = hypothesis_json(getattr(self, "_edges", []), self._base, self._freq)
