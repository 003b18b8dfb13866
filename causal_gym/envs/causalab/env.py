"""The CausaLab environment: intervene on a manipulator crystal, then predict a reactor's frequency.

:class:`CausaLabEnv` is a :class:`~causal_gym.harness.tool_env.ToolEnv` (the step protocol shared
by every causal_gym tool env) whose episode is the lab: the manipulator and reactor phases, the
hypothesis every step carries, and the final info scored against the hidden SCM.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_choice, check_count, check_instance_option, check_real, check_reset_options
from causal_gym.envs.causalab.hypothesis import (
    READING_ROUNDING,
    VERIFY_SLACK,
    Hypothesis,
    HypothesisError,
    hypothesis_schema,
    parse_hypothesis,
    reproduces,
    verify,
)
from causal_gym.envs.causalab.scoring import (
    WEIGHT_TOLERANCE,
    final_hypothesis,
    imec_size_for_targets,
    task_success,
    trajectory,
)
from causal_gym.envs.causalab.suites import SETTINGS, SPLITS, SUITE_SIZE, episode_seed
from causal_gym.envs.causalab.world import (
    DECOY_READINGS,
    FREQ,
    FREQ_LABEL,
    MAX_TARGET,
    PROPERTIES,
    Episode,
    HiddenSpec,
    Manipulator,
    Setting,
    make_episode,
)
from causal_gym.harness.budgets import Budgets
from causal_gym.harness.tool_env import ERROR_PREFIX, Outcome, ToolEnv, ToolResult
from causal_gym.harness.toolbox import TEXT_CHARSET, ActionField, Tool, Toolbox, ToolCall, ToolError, display_text
from causal_gym.seal import Seal, keyed_entropy, opaque_id, resolve_seal

__all__ = [
    "COLUMNS",
    "TOOLS",
    "REWARDS",
    "SUCCESS_RULES",
    "BUDGET_NAMES",
    "SOURCES",
    "VALUE_BOUND",
    "VALUE_GRID",
    "DEFAULT_NUMBER_GRIDS",
    "FREQ_PARENT_NOTE",
    "CausaLabEnv",
    "draw_index",
]

COLUMNS = (*PROPERTIES, FREQ)
"""Columns of every value vector of the observation: the 8 pool properties, then the frequency."""

TOOLS = ("intervene", "enter_reactor", "submit", "verify", "hypothesize", "give_up")
"""Tool names in the order of the typed action's ``"tool"`` index."""

REWARDS = ("success", "edge_f1", "success+edge_f1")
"""Final-step rewards: task success (1/0), the final hypothesis's all-edge F1, or their sum."""

SUCCESS_RULES = ("strict", "original")
"""See :func:`causal_gym.envs.causalab.scoring.task_success`."""

BUDGET_NAMES = ("interventions", "steps", "submissions")
"""Budgets of an episode, in the order of the ``"budgets_remaining"`` observation."""

SOURCES = ("prior", "golden", "manipulator")
"""Where a record comes from (the ``"record_source"`` observation): an observed crystal, a step of
the Golden intervention chain, or a reading of the manipulator (its start state or an
intervention's result)."""

VALUE_BOUND = 1e4
"""Intervention setpoints lie in ``[-VALUE_BOUND, VALUE_BOUND]``."""

VALUE_GRID = (0.0, 25.0, 50.0, 75.0, 100.0)
"""Default setpoints of an intervention: absolute values spanning the crystals' own range 0..100.
The ``value`` field declares it as its grid (the RL wrappers' catalogue) and the planner
(:mod:`causal_gym.envs.causalab.planner`) plays it by default."""

FREQ_PARENT_NOTE = "The resonance frequency may itself influence other properties."
"""The sentence of the task statement that tells an agent it plays the FreqParent variant."""

MANIPULATOR_PHASE, REACTOR_PHASE, LAB_DONE = 0, 1, 2
_POOL_INDEX = {p: k for k, p in enumerate(PROPERTIES)}
_TRAIN_DRAWS = 2**31 - 1  # train-stream indices a seed can draw

_HYPOTHESIS_HELP = (
    # Short: every tool carries this field, and the task statement explains hypotheses with an example.
    "Optional: your current hypothesis (see the task statement); the call runs even if it is invalid, "
    "and the result says what to fix."
)

_FIELDS = (
    ActionField("property", "choice", "The crystal property to set (must be one of this episode's properties).",
                tuple(PROPERTIES)),
    ActionField("value", "number", "The value to set the property to.", bounds=(-VALUE_BOUND, VALUE_BOUND),
                grid=VALUE_GRID),
    ActionField("frequency", "number", "Predicted resonance frequency of the reactor crystal, in Hz.",
                bounds=(0.0, MAX_TARGET)),
    # The example (no edges, a constant frequency) is valid in every setting: what masked sampling sends.
    ActionField("hypothesis", "text", _HYPOTHESIS_HELP,
                examples=('{"edges": [], "freq_equation": "base", "coefficients": {"base": 1}}',)),
)

DEFAULT_NUMBER_GRIDS: Mapping[str, tuple[float, ...]] = MappingProxyType({f.name: f.grid for f in _FIELDS if f.grid})
"""The grids CausaLab's number fields declare, which :func:`causal_gym.envs.wrappers.make_sb3_env`
enumerates when none are passed: ``value`` -> :data:`VALUE_GRID`. ``frequency`` has none, so
``submit`` is left out of an RL catalogue unless a grid is passed."""

_COLUMNS_NOTE = (
    f"Value arrays of the observation (records, manipulator, reactor) have the columns {', '.join(COLUMNS)}, "
    "in this order; a column that is not a property of the episode is 0 (in the reactor: its decoy reading, if any)."
)

_TOOLS = (
    Tool("intervene", "Set one property of the manipulator crystal to a value and read every property of the "
         f"crystal afterwards (manipulator phase only). {_COLUMNS_NOTE}", ("property", "value", "hypothesis"),
         ("property", "value"), "interventions"),
    Tool("enter_reactor", "Leave the manipulator for good and move to the reactor: its properties (not its "
         f"frequency) are shown. {_COLUMNS_NOTE}", ("hypothesis",)),
    Tool("submit", "Submit a prediction of the reactor crystal's resonance frequency (reactor phase only).",
         ("frequency", "hypothesis"), ("frequency",), "submissions"),
    Tool("verify", "Check the frequency equation of a hypothesis against every record collected so far.",
         ("hypothesis",), ("hypothesis",)),
    Tool("hypothesize", "State a hypothesis without doing anything else.", ("hypothesis",), ("hypothesis",)),
    Tool("give_up", "End the episode without a (further) prediction.", ("hypothesis",)),
)


def _fmt(value: float) -> str:
    return f"{value:.2f}"


def _resolve_setting(setting: str | Setting) -> tuple[str, Setting]:
    """The setting and the name of a published setting over the same graph family (for its seeds)."""
    if isinstance(setting, str):
        return check_choice(setting, SETTINGS, "setting"), SETTINGS[setting]
    if not isinstance(setting, Setting):
        raise ValueError(f"setting must be a name in SETTINGS or a Setting, got {setting!r}")
    same = [name for name, s in SETTINGS.items() if s == setting]
    key = (setting.n_nodes, setting.freq_parent)
    family = [name for name, s in SETTINGS.items() if (s.n_nodes, s.freq_parent) == key]
    if not same and not family:
        raise ValueError(
            f"no published suite shares the graph family (n_nodes={setting.n_nodes}, freq_parent="
            f"{setting.freq_parent}) of this Setting, so its episodes have no seeds; use n_nodes 3-7 "
            "(freq_parent with 4 or 6)"
        )
    return (same or family)[0], setting


def _hidden_spec(hidden: HiddenSpec | Mapping[str, Any]) -> HiddenSpec:
    if isinstance(hidden, HiddenSpec):
        return hidden
    if not isinstance(hidden, Mapping):
        raise ValueError(f"hidden must be a HiddenSpec or a dict of its fields, got {hidden!r}")
    known = {f.name for f in dataclasses.fields(HiddenSpec)}
    if set(hidden) - known:
        raise ValueError(f"hidden has unknown keys {sorted(set(hidden) - known)}; valid: {sorted(known)}")
    values = dict(hidden)
    if "values" in values:
        values["values"] = tuple(values["values"])
    return HiddenSpec(**values)



@functools.lru_cache(maxsize=1024)
def _parse_text(text: str, properties: tuple[str, ...], kind: str) -> Hypothesis | HypothesisError:
    """:func:`parse_hypothesis` memoised: its results are immutable, and agents restate the same
    hypothesis call after call (the planner twice per episode)."""
    return parse_hypothesis(text, properties, kind)

def draw_index(rng: np.random.Generator, split: str) -> int:
    """The episode a reset without ``instance`` plays on ``split``, drawn from the env's generator.

    Both streams are drawn whatever the split, so the generator advances alike on either.
    """
    drawn = {"test": int(rng.integers(SUITE_SIZE)), "train": int(rng.integers(_TRAIN_DRAWS))}
    return drawn[split]


class CausaLabEnv(ToolEnv):
    """CausaLab: find the hidden mechanism of a crystal by intervening on it, then predict a reactor crystal.

    ## Description

    The re-implementation of the CausaLab benchmark (spec ``shared/specs/causalab.md``). A hidden
    structural causal model links ``n - 1`` crystal properties (drawn from the pool of
    :data:`~causal_gym.envs.causalab.world.PROPERTIES`) and the target ``resonanceFreq``; every
    edge adds ``c * parent`` (linear family, integer ``c`` in 1..3) or ``c2 * p**2 + c1 * p``
    (hard-quadratic family) to its child. Three kinds of crystal share the mechanism and differ
    only in their exogenous terms:

    - *prior records*: observed crystals, every property and the frequency (Golden: two bootstrap
      records followed by an offline intervention chain);
    - the *manipulator*: a crystal whose properties the agent sets (shift interventions: the set
      property shows the value and keeps following its own parents afterwards; descendants are
      recomputed; settings accumulate). Its start state is shown for free;
    - the *reactor*: a crystal whose properties are shown once the agent enters the reactor phase
      and whose frequency the agent predicts.

    The manipulator phase comes first; ``enter_reactor`` moves to the reactor phase for good.
    With a hidden disturbance (the ``4node-hidden-*`` settings) a hidden ``h``, redrawn after
    every intervention, shifts what the manipulator *displays* on some nodes; records, the
    reactor and the target are unaffected. In the reactor dialog, constant decoy readings
    (:data:`~causal_gym.envs.causalab.world.DECOY_READINGS`) are shown for pool properties that
    are not in the graph (``decoys``, on by default as in the original).

    Every tool carries an optional ``hypothesis`` in the CausaLab DSL
    (:mod:`causal_gym.envs.causalab.hypothesis`): a claimed graph and the frequency equation
    with its coefficients. Whatever hypothesis a step carries is the agent's current hypothesis;
    an invalid one does not void the call (the call runs, its result says what is wrong). It is
    scored after the episode against the hidden SCM, step by step (:mod:`.scoring`).

    | Tool            | Arguments                | Does                                              | Cost |
    |-----------------|--------------------------|---------------------------------------------------|------|
    | ``intervene``   | ``property``, ``value``  | sets a manipulator property, shows all readings   | 1 intervention |
    | ``enter_reactor`` | --                     | locks the manipulator, shows the reactor          | -- |
    | ``submit``      | ``frequency``            | predicts the reactor's frequency                  | 1 submission |
    | ``verify``      | ``hypothesis``           | checks its frequency equation on every record so far | -- |
    | ``hypothesize`` | ``hypothesis``           | states a hypothesis, nothing else                 | -- |
    | ``give_up``     | --                       | ends the episode                                  | -- |

    Every call (also a rejected one) costs one step. ``intervene`` works only in the manipulator
    phase, on a property of this episode, with interventions left; ``submit`` only in the reactor
    phase. A call that breaks these rules returns an error and costs only its step. "Records so
    far" for ``verify`` are the prior (and Golden) records plus every manipulator reading: the
    start state and each intervention's result, as displayed.

    ## Action Space

    A ``Dict`` (see :mod:`causal_gym.harness.toolbox`): ``"tool"`` ``Discrete(6)`` in the order of
    :data:`TOOLS`, ``"property"`` ``Discrete(8)`` (pool order), ``"value"``
    ``Box(-1e4, 1e4, (1,))``, ``"frequency"`` ``Box(0, 1e4, (1,))`` and ``"hypothesis"``
    ``Text`` (empty: no hypothesis). A tool ignores the fields it does not use. LLM agents use
    :meth:`tool_specs` (after ``reset`` the ``hypothesis`` argument carries the episode's JSON
    schema, :func:`~causal_gym.envs.causalab.hypothesis.hypothesis_schema`) and
    :meth:`parse_tool_call`, which returns the typed action or a
    :class:`~causal_gym.harness.ToolError`; stepping with a ``ToolError`` plays an invalid action
    (one step, nothing else), so malformed calls come back as error messages. A non-numeric or
    out-of-range value or frequency is such an invalid action. The step protocol (dispatch,
    budgets, the record) is that of every causal_gym tool env,
    :class:`~causal_gym.harness.tool_env.ToolEnv`; ``value`` declares :data:`VALUE_GRID` as its
    grid for RL wrappers that enumerate actions.

    ## Observation Space

    Value vectors have the 9 columns of :data:`COLUMNS` (the pool, then the frequency); columns
    of properties not in the graph are 0. ``R = n_prior_records + golden chain cap + 1 +
    intervention_budget`` is the largest number of records an episode can collect.

    | Key                   | Space                        | Meaning |
    |-----------------------|------------------------------|---------|
    | ``records``           | ``Box(-inf, inf, (R, 9))``   | every record so far (see below); empty rows 0 |
    | ``record_mask``       | ``MultiBinary(R)``           | 1 for the rows that hold a record |
    | ``record_source``     | ``MultiDiscrete([3] * R)``   | index into :data:`SOURCES` (0 for empty rows) |
    | ``record_target``     | ``MultiDiscrete([9] * R)``   | 0: none; ``k + 1``: pool property ``k`` was set |
    | ``in_graph``          | ``MultiBinary(9)``           | columns that are nodes of the episode's graph |
    | ``manipulator``       | ``Box(-inf, inf, (9,))``     | current manipulator readings, as displayed |
    | ``reactor``           | ``Box(-inf, inf, (9,))``     | reactor readings and decoys once visible, else 0 |
    | ``reactor_visible``   | ``Discrete(2)``              | 1 from ``enter_reactor`` on |
    | ``budgets_remaining`` | ``Box(0, 1, (3,), float32)`` | share left of interventions, steps, submissions |
    | ``lab_phase``         | ``Discrete(3)``              | 0 manipulator, 1 reactor, 2 done |
    | ``phase``             | ``Discrete(3)``              | tool-env convention: 0 running, 2 done |
    | ``last_result``       | ``Text(text_max_length)``    | last result; after ``reset`` the start message |
    | ``last_ok``           | ``Discrete(2)``              | 0 after an error or a rejected call |

    Records are in order: prior records, the Golden chain, then the manipulator readings (start
    state, then one per intervention). The reactor's frequency column is always 0. A budget share
    is 0 when the budget itself is 0. ``phase`` follows the convention of the other causal_gym
    tool envs (which the LLM agent reads); its value 1, a harness "last turn", never occurs here.

    ``info`` holds ``"phase"``, ``"lab_phase"``, ``"budgets_remaining"`` (absolute amounts),
    ``"action_mask"`` (a ``Dict.sample`` mask: the tools valid in this phase with the budgets
    left, and the properties of this episode) and, after a step, ``"result"`` (the structured
    result, with ``"hypothesis"``: whether the step stated one and whether it was valid). The info
    of ``reset`` adds ``"instance"`` (setting, split, index; not ``"episode"``, which RL libraries use for episode statistics).

    ## Rewards

    0 on every step but the last, where it is (``reward=``) 1.0 on success else 0.0
    (``"success"``, default), the all-edge F1 of the final hypothesis (``"edge_f1"``), or their
    sum (``"success+edge_f1"``).

    ## Starting State

    ``reset(seed=, options=)`` draws a test index and a train index from ``self.np_random``
    (both always, so the streams do not depend on the options) and plays:

    - ``options={"split": "test", "instance": k}`` (or just ``{"instance": k}``): episode ``k``
      of the setting's 50-episode suite (:func:`causal_gym.envs.causalab.suites.suite`);
    - ``{"split": "train", "instance": k}``: train-stream episode ``k`` (disjoint from the test
      suite); without ``"instance"`` the drawn index of the split;
    - no options: a train-stream episode drawn from the seed, so RL loops and ``check_env`` never
      replay the test suite.

    The episode (graph, equations, records, crystals, hidden draws) is a pure function of the
    setting and the index (:func:`causal_gym.envs.causalab.world.make_episode`).

    ## Episode End

    ``terminated``: a successful submission (``|prediction - target| < success_tol``; rule
    ``success_rule``), a wrong submission when none is left (``max_submissions``, default 2: the
    original effectively allowed two), or ``give_up``. ``truncated``: the step limit
    (``step_limit``, default ``2 * intervention_budget + 24``, the original's allowance of env
    calls) ran out first, or ``max_consecutive_errors`` rejected calls in a row (default 5; None:
    no such stop, as in the original, where a run of errors only used steps). The final info holds

    - ``scores``: the flat numeric summary the run store keeps (success as 0/1, abs_error, the
      final hypothesis's metrics, imec_size, budget_used_at_commit);
    - ``success``, ``prediction`` (last submitted, or NaN), ``target``, ``abs_error`` (NaN without a
      prediction),
      ``submissions`` (every submitted value), ``end_reason`` (``"success"``,
      ``"out_of_submissions"``, ``"give_up"``, ``"step_limit"``, ``"consecutive_errors"``);
    - ``metrics``: :func:`~causal_gym.envs.causalab.scoring.hypothesis_metrics` of the final
      hypothesis (the last valid one with an edge; None scores as an empty claim) and
      ``final_hypothesis`` (its JSON, or ``{}``);
    - ``trajectory``: the metrics after every step (:func:`~.scoring.trajectory`);
    - ``imec_size``: size of the interventional MEC of the true DAG given the properties
      intervened on in the agent's data (its own interventions and the Golden chain);
    - ``budget_used_at_commit``: interventions used when the agent entered the reactor (or by the
      end, if it never did); ``final_reproduces``: whether the final hypothesis reproduces every
      record the agent collected (:func:`~.hypothesis.reproduces`; None without one);
      ``n_invalid_hypotheses``, ``n_hypotheses`` (steps that stated a valid one);
    - ``truth``: the episode with its hidden SCM (:meth:`Episode.to_dict`), for analysis.

    Nothing derived from the truth appears before: observations, non-final infos, results and the
    record hold only displayed readings (the hidden ``h`` included only as it moves the display).

    ## Arguments

    | Parameter            | Default        | Description |
    |----------------------|----------------|-------------|
    | ``setting``          | ``"4node"``    | a name in :data:`~.suites.SETTINGS` or a :class:`Setting` |
    | ``n_prior_records``  | None           | override (the scaling grids ``XoYi``) |
    | ``intervention_budget`` | None        | override |
    | ``hidden``           | None           | override the hidden disturbance (see below) |
    | ``decoys``           | None           | override the setting's decoy readings |
    | ``step_limit``       | None           | steps per episode; None: ``2 * intervention_budget + 24`` |
    | ``max_consecutive_errors`` | 5        | rejected calls in a row that end the episode (truncated); None: no limit |
    | ``success_tol``      | 5.0            | Hz |
    | ``success_rule``     | ``"strict"``   | or ``"original"`` (the released code's integer truncation) |
    | ``weight_tol``       | 0.01           | tolerance of the frequency-weight metric (:data:`~.scoring.WEIGHT_TOLERANCE`) |
    | ``max_submissions``  | 2              | |
    | ``oracle_chains``    | False          | Oracle control: interventions also list the changed chains |
    | ``reward``           | ``"success"``  | one of :data:`REWARDS` |
    | ``render_mode``      | None           | ``"ansi"`` |
    | ``text_max_length``  | 8000           | longest text argument and result shown |
    | ``seal``             | None           | a :class:`~causal_gym.seal.Seal` (or its secret) keying every episode stream; None reads ``CAUSAL_GYM_SEAL`` (unset: open suites); :data:`causal_gym.seal.OPEN` forces open. Under a seal ``info["instance"]`` holds an opaque ``"id"`` instead of the index |

    ``hidden`` is a :class:`HiddenSpec` or a dict of its fields (``count``, ``values``,
    ``freqnode``, ``edge_weight``). Overrides keep the setting's graphs: seeds depend only on the
    node count and the FreqParent flag (:func:`causal_gym.envs.causalab.suites.episode_seed`).

    ```python
    >>> import gymnasium as gym, causal_gym
    >>> env = gym.make("CausaLab-4node-v0")
    >>> obs, info = env.reset(seed=0, options={"instance": 3})
    >>> int(obs["record_mask"].sum()), env.unwrapped.budgets()["interventions"]
    (3, 12.0)

    ```

    ## Vectorized environment

    ``gym.make_vec("CausaLab-4node-v0", num_envs=4)``; episodes have different lengths and
    autoreset.

    ## Version History

    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        setting: str | Setting = "4node",
        *,
        n_prior_records: int | None = None,
        intervention_budget: int | None = None,
        hidden: HiddenSpec | Mapping[str, Any] | None = None,
        decoys: bool | None = None,
        step_limit: int | None = None,
        max_consecutive_errors: int | None = 5,
        success_tol: float = 5.0,
        success_rule: str = "strict",
        weight_tol: float = WEIGHT_TOLERANCE,
        max_submissions: int = 2,
        oracle_chains: bool = False,
        reward: str = "success",
        render_mode: str | None = None,
        text_max_length: int = 8000,
        seal: Seal | str | None = None,
    ) -> None:
        self.setting_name, base = _resolve_setting(setting)
        self.seal = resolve_seal(seal)
        changes: dict[str, Any] = {}
        if n_prior_records is not None:
            changes["n_prior_records"] = check_count(n_prior_records, "n_prior_records", 0)
        if intervention_budget is not None:
            changes["intervention_budget"] = check_count(intervention_budget, "intervention_budget", 0)
        if hidden is not None:
            changes["hidden"] = _hidden_spec(hidden)
        if decoys is not None:
            if not isinstance(decoys, (bool, np.bool_)):
                raise ValueError(f"decoys must be True, False or None, got {decoys!r}")
            changes["decoys"] = bool(decoys)
        self.setting: Setting = dataclasses.replace(base, **changes) if changes else base
        budget = int(self.setting.intervention_budget)  # type: ignore[arg-type]
        self.step_limit = check_count(step_limit, "step_limit", 1) if step_limit is not None else 2 * budget + 24
        self.success_tol = check_real(success_tol, "success_tol", 0.0, strict=True)
        self.success_rule = check_choice(success_rule, SUCCESS_RULES, "success_rule")
        self.weight_tol = check_real(weight_tol, "weight_tol", 0.0)
        self.max_submissions = check_count(max_submissions, "max_submissions", 1)
        if not isinstance(oracle_chains, (bool, np.bool_)):
            raise ValueError(f"oracle_chains must be True or False, got {oracle_chains!r}")
        self.oracle_chains = bool(oracle_chains)
        self.reward = check_choice(reward, REWARDS, "reward")
        text_max_length = check_count(text_max_length, "text_max_length", 1)
        super().__init__(
            Toolbox(_TOOLS, _FIELDS, d=len(COLUMNS), text_max_length=text_max_length),
            budget_names=BUDGET_NAMES,
            step_budget="steps",
            max_consecutive_errors=max_consecutive_errors,
            render_mode=render_mode,
        )
        golden_cap = self.setting.golden_max_length if self.setting.golden else 0
        self.max_records = self.setting.n_prior_records + golden_cap + 1 + budget
        r, c = self.max_records, len(COLUMNS)
        self.observation_space = spaces.Dict(
            {
                "records": spaces.Box(-np.inf, np.inf, (r, c), dtype=np.float64),
                "record_mask": spaces.MultiBinary(r),
                "record_source": spaces.MultiDiscrete(np.full(r, len(SOURCES))),
                "record_target": spaces.MultiDiscrete(np.full(r, len(PROPERTIES) + 1)),
                "in_graph": spaces.MultiBinary(c),
                "manipulator": spaces.Box(-np.inf, np.inf, (c,), dtype=np.float64),
                "reactor": spaces.Box(-np.inf, np.inf, (c,), dtype=np.float64),
                "reactor_visible": spaces.Discrete(2),
                "budgets_remaining": spaces.Box(0.0, 1.0, (len(BUDGET_NAMES),), dtype=np.float32),
                "lab_phase": spaces.Discrete(3),
                "phase": spaces.Discrete(3),
                "last_result": spaces.Text(self.toolbox.text_max_length, min_length=0, charset=TEXT_CHARSET),
                "last_ok": spaces.Discrete(2),
            },
            sort_keys=False,
        )
        self._episode: Episode | None = None
        self._arrays: tuple[Any, ...] | None = None  # see _record_arrays

    # -- the public interface ------------------------------------------------------------------

    def check_reset_options(self, options: Any) -> tuple[str, int | None]:
        """Validate ``reset`` options without building the episode: ``(split, index)``, the index
        None when none is named. The split defaults to ``test`` with an instance, else ``train``.

        Raises
        ------
        ValueError
            Options that are not a dict, unknown keys, an unknown split, or an index outside the
            50-episode test suite.
        """
        options = check_reset_options(options, ("split", "instance"))
        split = check_choice(options.get("split", "test" if "instance" in options else "train"), SPLITS, "split")
        if "instance" not in options:
            return split, None
        size = SUITE_SIZE if split == "test" else None
        return split, check_instance_option(options["instance"], size, "the test suite")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode (see *Starting State* in the class docstring).

        Raises
        ------
        ValueError
            On an unknown option, split, or an instance outside the test suite.
        """
        super().reset(seed=seed)
        split, chosen = self.check_reset_options(options)
        index = draw_index(self.np_random, split) if chosen is None else chosen
        episode = self.make_episode(split, index)
        self._episode = episode
        self._where = {"setting": self.setting_name, "split": split, "index": index}
        self._scm = episode.scm
        # the episode's fixed masks (observations and infos get copies)
        self._in_graph = np.array([name in self._scm.properties for name in COLUMNS], dtype=np.int8)
        self._property_mask = np.array([p in self._scm.controllable for p in PROPERTIES], dtype=np.int8)
        self._manipulator: Manipulator = episode.manipulator(self.oracle_chains)
        self._rows: list[tuple[dict[str, float], int, str | None]] = []
        self._arrays = None
        for record in episode.prior_records:
            self._rows.append((dict(record.values), 0, None))
        for record in episode.golden_chain:
            self._rows.append((dict(record.values), 1, record.intervention[0] if record.intervention else None))
        self._rows.append((self._manipulator.values, 2, None))
        self._start_episode(Budgets(dict(zip(BUDGET_NAMES, self.budgets().values()))))
        self._steps: list[Hypothesis | HypothesisError | None] = []
        self._lab_phase = MANIPULATOR_PHASE
        self._targets: list[str] = [t for _, source, t in self._rows if source == 1 and t is not None]
        self._submissions: list[float] = []
        self._success = False
        self._commit_used: float | None = None
        self._last_text = self._start_message()
        observation = self._observation()
        if self.seal is not None:  # an opaque id: a hash of what the agent is shown anyway
            del self._where["index"]
            self._where["id"] = opaque_id(observation["records"], observation["manipulator"])
        info = self._info()
        info["instance"] = dict(self._where)
        return observation, info

    def make_episode(self, split: str, index: int) -> Episode:
        """Episode ``index`` of ``split`` in this env's setting, keyed by its seal: what ``reset`` plays.

        The hidden episode, for the benchmark's own batched envs (the planner's vector env); never
        part of what an agent sees.
        """
        entropy = keyed_entropy(self.seal, "causalab", episode_seed(self.setting_name, index, split))
        return make_episode(entropy, self.setting)

    def _truth(self, episode: Episode) -> dict[str, Any]:
        """The hidden episode for the final info; under a seal without its keyed entropy."""
        truth = episode.to_dict()
        if self.seal is not None:
            truth["seed"] = None
        return truth

    def tool_specs(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of every tool.

        After ``reset`` the ``hypothesis`` argument is described by the episode's JSON schema
        (:func:`~causal_gym.envs.causalab.hypothesis.hypothesis_schema`), which
        :meth:`parse_tool_call` accepts as an object or as a JSON string, and ``property`` lists
        only the episode's properties (in pool order; before ``reset``, the whole pool). The
        descriptions of ``intervene`` and ``enter_reactor`` give the column order of the
        observation's value arrays (:data:`COLUMNS`).
        """
        schemas = super().tool_specs()
        if self._episode is None:
            return schemas
        schema = hypothesis_schema(self._scm.properties, self._scm.kind)
        controllable = [p for p in PROPERTIES if p in self._scm.controllable]
        for spec in schemas:
            properties = spec["function"]["parameters"]["properties"]
            if "hypothesis" in properties:
                properties["hypothesis"] = {**schema, "description": _HYPOTHESIS_HELP}
            if "property" in properties:
                properties["property"] = {**properties["property"], "enum": controllable}
        return schemas

    def parse_tool_call(self, name: Any, arguments: Any) -> dict[str, Any] | ToolError:
        """Convert an LLM tool call to the typed action, or to the ``ToolError`` to step with.

        A ``hypothesis`` given as a JSON object is carried as its JSON text.
        """
        if isinstance(arguments, str) and arguments.strip():
            try:
                loaded = json.loads(arguments)
            except (ValueError, RecursionError):
                loaded = None
            if isinstance(loaded, dict):
                arguments = loaded
        if isinstance(arguments, Mapping) and isinstance(arguments.get("hypothesis"), (dict, list)):
            try:
                arguments = {**arguments, "hypothesis": json.dumps(arguments["hypothesis"])}
            except (TypeError, ValueError, RecursionError):
                pass  # the toolbox reports the argument as not a string
        return super().parse_tool_call(name, arguments)

    def budgets(self) -> dict[str, float | None]:
        """Budget limits of the episode: interventions, steps, submissions (the same for every episode,
        so known before ``reset``; there is no wall-time limit)."""
        return {
            "interventions": float(self.setting.intervention_budget),  # type: ignore[arg-type]  # an int once built
            "steps": float(self.step_limit),
            "submissions": float(self.max_submissions),
        }

    def task_description(self) -> str:
        """The task statement for LLM agents: the lab, the properties, the budgets, the DSL and the rules."""
        setting = self.setting
        if self._episode is None:
            listing = f"{setting.n_nodes - 1} crystal properties (named when an episode starts)"
            x, other = "density", "ph"
        else:
            names = self._scm.controllable
            listing = ", ".join(f"{p} ({PROPERTIES[p]})" for p in names)
            x, other = names[0], names[-1]
        if setting.kind == "quadratic":
            equation = f"{FREQ} = base + c_{x}_2*{x}^2 + c_{x}_1*{x}"
            coefficients = {"base": 120.5, f"c_{x}_2": 0.012, f"c_{x}_1": -1.2}
            form = ("each causal influence is a quadratic term c2*p^2 + c1*p of the parent p added to the child; "
                    "a property with parents also has its own crystal-specific base value")
        else:
            equation = f"{FREQ} = base + c_{x}*{x}"
            coefficients = {"base": 20, f"c_{x}": 2}
            form = ("each causal influence adds a constant multiple of the parent to the child; a property with "
                    "parents also has its own crystal-specific base value")
        edges = [{"from": other, "to": x}] if other != x else []
        example = json.dumps({"edges": [*edges, {"from": x, "to": FREQ}], "freq_equation": equation,
                              "coefficients": coefficients})
        parts = [
            "You work in a crystal laboratory. Every crystal has these properties: "
            f"{listing}, and a resonance frequency resonanceFreq ({FREQ_LABEL}). One hidden causal mechanism, "
            f"shared by every crystal, links the properties to each other and to the frequency: {form}. Crystals "
            "differ only in those base values. Every reading is shown rounded to 2 decimals.",
        ]
        if setting.freq_parent:
            parts.append(FREQ_PARENT_NOTE)
        if setting.golden:
            parts.append(
                f"You get {setting.n_prior_records} prior records of observed crystals, then a chain of intervention "
                "records: the first one starts from the state of prior record 1, and each record shows every reading "
                "of that crystal after the named property was set to the given value, continuing from the record "
                "before. You cannot intervene yourself."
            )
        else:
            parts.append(
                f"You get {setting.n_prior_records} prior records: observed crystals with every property and the "
                "frequency."
            )
        parts.append(
            "Manipulator phase: the property manipulator holds one crystal; its readings are shown for free. "
            f"intervene sets one property to a value (budget: {setting.intervention_budget} interventions). The set "
            "property shows that value and still moves with its own causes afterwards; everything it influences is "
            "recomputed, and settings accumulate. Reactor phase: enter_reactor locks the manipulator for good and "
            "shows the properties of the reactor crystal, whose frequency is hidden. Predict it with submit."
            + (" The reactor also shows constant decoy readings for some pool properties that are not properties of "
               "this crystal (" + ", ".join(f"{p} {v:g}" for p, v in DECOY_READINGS.items()) + " when absent): they "
               "play no part in the mechanism." if setting.decoys else "")
        )
        tol = f"{self.success_tol:g} Hz"
        rule = (f"|prediction - true frequency| < {tol}" if self.success_rule == "strict" else
                f"int(prediction) == int(true frequency) or |int(prediction) - true frequency| < {tol}")
        parts.append(
            f"Success: the reactor activates when {rule}. You have {self.max_submissions} submission(s) (predictions "
            f"from 0 to {MAX_TARGET:g} Hz); the episode ends on success, after the last submission, on give_up, or "
            f"after {self.step_limit} steps. Every tool call, also a rejected one, is a step."
            + ("" if self.max_consecutive_errors is None else
               f" {self.max_consecutive_errors} rejected calls in a row also end the episode.")
        )
        parts.append(
            "Hypotheses: every tool takes an optional 'hypothesis': your current claim about the mechanism, as JSON "
            f"{example}. "
            "Edges are directed (from cause to effect) over the properties and resonanceFreq; freq_equation has "
            "'base' plus one term per parent of resonanceFreq in edges, joined by '+', and coefficients gives "
            "'base' and every coefficient used (non-zero numbers; signs go into the values). Your hypotheses are "
            "scored against the true mechanism (edges; a frequency coefficient counts as found within "
            f"{self.weight_tol:g} of the true one{', the linear c_X_1 only' if setting.kind == 'quadratic' else ''}). "
            "verify checks a hypothesis's frequency equation against every record so far (prior records and all "
            f"manipulator readings): a record passes when the prediction is within {READING_ROUNDING + VERIFY_SLACK:g} Hz of "
            "its frequency (half a unit of the rounding, plus as much slack for estimated coefficients); "
            "hypothesize only states one."
        )
        return "\n\n".join(parts)

    def _render(self) -> str:
        """A records table, the manipulator, the reactor and the phase, as text (``"ansi"``)."""
        names = (*self._scm.controllable, FREQ)
        width = max(10, *(len(n) for n in names))
        header = f"{'#':>3} {'source':<12} {'set':<14}" + "".join(f"{n:>{width + 1}}" for n in names)
        lines = [header]
        for k, (values, source, target) in enumerate(self._rows):
            cells = "".join(f"{_fmt(values[n]):>{width + 1}}" for n in names)
            lines.append(f"{k:>3} {SOURCES[source]:<12} {target or '':<14}{cells}")
        manipulator = ", ".join(f"{n}={_fmt(v)}" for n, v in self._manipulator.values.items())
        phase = ("manipulator", "reactor", "done")[self._lab_phase]
        reactor = "hidden"
        if self._lab_phase != MANIPULATOR_PHASE:
            reactor = ", ".join(f"{n}={_fmt(v)}" for n, v in self._reactor_readings().items())
        return (f"{chr(10).join(lines)}\nmanipulator: {manipulator}\nreactor: {reactor}\n"
                f"lab phase: {phase}; {self._remaining_text()}\n")

    def state_summary(self) -> str:
        """Every record, the manipulator, the reactor, the lab phase and the budgets left: the
        text rendering (see :meth:`ToolEnv.state_summary`)."""
        self._require_episode()
        return self._render()

    # -- the step -------------------------------------------------------------------------------

    def _open_step(self, call: ToolCall | ToolError) -> Outcome:
        """Read the step's hypothesis, run the tool, and say in the result whether the hypothesis was valid.

        The hypothesis is the agent's current claim whatever the tool; only ``verify`` and
        ``hypothesize``, whose subject it is, receive it (parsed) as their argument.
        """
        if isinstance(call, ToolError):
            self._steps.append(None)
            return super()._open_step(call)
        stated = self._read_hypothesis(call.arguments["hypothesis"])
        arguments = {key: value for key, value in call.arguments.items() if key != "hypothesis"}
        if "hypothesis" in self.toolbox.tool(call.tool).required:
            arguments["hypothesis"] = stated
        outcome = self._run_tool(call.tool, arguments)
        self._annotate(call, stated, outcome)
        self._steps.append(stated)
        return outcome

    def _on_exhausted(self, outcome: Outcome, exhausted: list[str]) -> None:
        """The step limit ends the episode (truncated); the other budgets only bar their tools."""
        if "steps" in exhausted:
            outcome.end = "step_limit"
            outcome.text += f"\nThe step limit ({self.step_limit}) is reached; the episode is over."

    def _on_error_limit(self, outcome: Outcome) -> None:
        """A silent or confused agent stops here instead of burning every step (truncated)."""
        outcome.end = "consecutive_errors"
        outcome.text += f"\n{self._consecutive_errors} rejected calls in a row; the episode is over."

    # -- tools -----------------------------------------------------------------------------------

    def _tool_intervene(self, property: str, value: float) -> ToolResult:
        node, value = property, float(value)
        if self._lab_phase != MANIPULATOR_PHASE:
            return ToolResult(ERROR_PREFIX + "the manipulator is locked: you are in the reactor phase", ok=False)
        if node not in self._scm.controllable:
            return ToolResult(ERROR_PREFIX + f"{node} is not a property of this crystal; the properties are "
                              f"{', '.join(self._scm.controllable)} (no intervention was used)", ok=False)
        cost = self._declared_cost("intervene")
        if not self._affordable(cost):
            return ToolResult(ERROR_PREFIX + "no interventions left; enter the reactor when you are ready", ok=False)
        result = self._manipulator.intervene(node, value)
        values = dict(result.values)
        self._rows.append((values, 2, node))
        self._targets.append(node)
        left = self._remaining()["interventions"] - cost["interventions"]
        readings = ", ".join(f"{n}={_fmt(v)}" for n, v in values.items())
        text = f"Set {node} to {_fmt(value)}. Manipulator readings: {readings}. Interventions left: {left:g}."
        data: dict[str, Any] = {"property": node, "value": value, "values": values, "changed": list(result.changed),
                                "interventions_left": left}
        if result.chains is not None:
            data["chains"] = [list(c) for c in result.chains]
            shown = "; ".join(" -> ".join(c) for c in result.chains) or "none"
            text += f" Changed causal chains to the frequency: {shown}."
        return ToolResult(text, data, cost)

    def _tool_enter_reactor(self) -> ToolResult:
        if self._lab_phase != MANIPULATOR_PHASE:
            return ToolResult(ERROR_PREFIX + "you are already in the reactor phase", ok=False)
        self._lab_phase = REACTOR_PHASE
        self._commit_used = self._used("interventions")
        readings = self._reactor_readings()
        shown = ", ".join(f"{n}={_fmt(v)}" for n, v in readings.items())
        return ToolResult(
            f"The manipulator is locked. Reactor crystal readings: {shown}. Its resonance frequency is unknown; "
            f"submit your prediction ({self._remaining()['submissions']:g} submission(s)).",
            {"reactor": readings},
        )

    def _tool_submit(self, frequency: float) -> ToolResult:
        if self._lab_phase != REACTOR_PHASE:
            return ToolResult(ERROR_PREFIX + "enter the reactor (enter_reactor) before submitting a prediction",
                              ok=False)
        value = float(frequency)
        # A wrong submission with none left ends the episode, so one is always left here.
        cost = self._declared_cost("submit")
        self._submissions.append(value)
        target = self._episode.target  # type: ignore[union-attr]
        success = task_success(value, target, self.success_tol, self.success_rule)
        left = self._remaining()["submissions"] - cost["submissions"]
        data = {"frequency": value, "activated": success, "submissions_left": left}
        if success:
            self._success = True
            return ToolResult(f"Submitted {_fmt(value)} Hz: the reactor activated. Success.", data, cost,
                              end="success")
        if left <= 0:
            return ToolResult(f"Submitted {_fmt(value)} Hz: the reactor did not activate. No submissions left; "
                              "the episode is over.", data, cost, ok=False, end="out_of_submissions")
        return ToolResult(f"Submitted {_fmt(value)} Hz: the reactor did not activate. Submissions left: {left:g}.",
                          data, cost, ok=False)

    def _tool_verify(self, hypothesis: Hypothesis | HypothesisError | None) -> ToolResult:
        if not isinstance(hypothesis, Hypothesis):
            return ToolResult(ERROR_PREFIX + "nothing to verify: the hypothesis is invalid", ok=False)
        result = verify(hypothesis, [values for values, _, _ in self._rows])
        data = {"ok": result.ok, "n_records": result.n_records, "max_abs_error": result.max_abs_error,
                "worst_record_index": result.worst_record_index}
        return ToolResult(f"Verify: {result.message}.", {"verify": data})

    def _tool_hypothesize(self, hypothesis: Hypothesis | HypothesisError | None) -> ToolResult:
        if not isinstance(hypothesis, Hypothesis):
            return ToolResult(ERROR_PREFIX + "the hypothesis was not recorded", ok=False)
        return ToolResult("Hypothesis noted.")

    def _tool_give_up(self) -> ToolResult:
        return ToolResult("You gave up; the episode is over.", end="give_up")

    # -- hypotheses --------------------------------------------------------------------------------

    def _read_hypothesis(self, text: str) -> Hypothesis | HypothesisError | None:
        if not text.strip():
            return None
        return _parse_text(text, self._scm.properties, self._scm.kind)

    def _annotate(self, call: ToolCall, stated: Hypothesis | HypothesisError | None, outcome: Outcome) -> None:
        """Add the hypothesis's status to the result: the agent learns what to fix, the record its validity."""
        status: dict[str, Any] = {"stated": stated is not None, "valid": None, "error": None}
        if isinstance(stated, HypothesisError):
            status.update(valid=False, error=stated.message)
            outcome.text += f"\n[{stated.message}]"
        elif stated is not None:
            status["valid"] = True
            if call.tool != "hypothesize":
                outcome.text += f"\n[hypothesis recorded: {len(stated.edges)} edge(s)]"
        outcome.data["hypothesis"] = status

    # -- ending ------------------------------------------------------------------------------------

    def _finish(self, outcome: Outcome) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        episode, scm = self._episode, self._scm
        assert episode is not None
        self._lab_phase = LAB_DONE
        if self._commit_used is None:
            self._commit_used = self._used("interventions")
        true_edges = set(scm.edges)
        true_coefficients = {p: self._linear_coefficient(p) for p in scm.freq_parents()}
        final = final_hypothesis(self._steps)
        curve = trajectory(self._steps, true_edges, true_coefficients, scm.properties, weight_tol=self.weight_tol)
        metrics = {k: v for k, v in curve[-1].items() if k != "stated"}  # the final hypothesis's (see trajectory)
        index = {p: k for k, p in enumerate(scm.properties)}
        prediction = self._submissions[-1] if self._submissions else None
        records = [values for values, _, _ in self._rows]
        info = self._info(outcome.data)
        imec = imec_size_for_targets(scm.adjacency(), [index[t] for t in self._targets])
        # NaN / {} rather than None when nothing was submitted or hypothesised: a vector env stacks final
        # infos into typed arrays and cannot mix None with floats or dicts (the record stores NaN as null).
        error = math.nan if prediction is None else abs(prediction - episode.target)
        info.update(
            scores={"success": float(self._success), "abs_error": error, **metrics, "imec_size": imec,
                    "budget_used_at_commit": self._commit_used},
            success=self._success,
            prediction=math.nan if prediction is None else prediction,
            submissions=list(self._submissions),
            target=episode.target,
            abs_error=error,
            end_reason=outcome.end,
            metrics=metrics,
            final_hypothesis={} if final is None else final.to_dict(),
            trajectory=curve,
            imec_size=imec,
            budget_used_at_commit=self._commit_used,
            final_reproduces=None if final is None else reproduces(final, records),
            n_hypotheses=sum(isinstance(s, Hypothesis) for s in self._steps),
            n_invalid_hypotheses=sum(isinstance(s, HypothesisError) for s in self._steps),
            record=self._log.summary(),
            truth=self._truth(episode),
            instance=dict(self._where),
            seal=None if self.seal is None else self.seal.fingerprint,
        )
        if self.reward == "success":
            reward = float(self._success)
        elif self.reward == "edge_f1":
            reward = metrics["edge_f1"]
        else:
            reward = float(self._success) + metrics["edge_f1"]
        truncated = outcome.end in ("step_limit", "consecutive_errors")
        return self._observation(), reward, not truncated, truncated, info

    def _linear_coefficient(self, parent: str) -> float:
        c = self._scm.coefficient(parent, FREQ)
        return float(c[1]) if isinstance(c, tuple) else float(c)

    # -- observation and info ----------------------------------------------------------------------

    def _used(self, name: str) -> float:
        return float(self._budgets.used()[name])

    def _remaining(self) -> dict[str, float]:
        remaining = self._budgets.remaining()
        return {name: float(remaining[name]) for name in BUDGET_NAMES}

    def _reactor_readings(self) -> dict[str, float]:
        assert self._episode is not None
        return {**self._episode.reactor.visible, **self._episode.decoys}

    def _vector(self, values: Mapping[str, float]) -> np.ndarray:
        return np.array([float(values.get(name, 0.0)) for name in COLUMNS], dtype=np.float64)

    def _start_message(self) -> str:
        names = (*self._scm.controllable, FREQ)
        lines = [f"Properties: {', '.join(self._scm.controllable)}; target: {FREQ}."]
        if self._rows[:-1]:
            lines.append("Records (" + ", ".join(names) + "):")
            for k, (values, source, target) in enumerate(self._rows[:-1]):
                tag = f"set {target}" if source == 1 else "observed"
                lines.append(f"  {k + 1}. {tag}: " + ", ".join(_fmt(values[n]) for n in names))
        else:
            lines.append("No prior records.")
        readings = ", ".join(f"{n}={_fmt(v)}" for n, v in self._manipulator.values.items())
        lines.append(f"Manipulator readings: {readings}.")
        budgets = self._remaining()
        lines.append(
            f"Budgets: {budgets['interventions']:g} interventions, {budgets['steps']:g} steps, "
            f"{budgets['submissions']:g} submissions."
        )
        return "\n".join(lines)

    def _record_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Records, mask, sources and targets of the observation, filled in as rows arrive (rows are
        only ever appended, and each holds its own dict), so a step converts only its new rows."""
        arrays = self._arrays
        if arrays is None or arrays[0] is not self._rows:
            r, c = self.max_records, len(COLUMNS)
            arrays = self._arrays = (self._rows, [0], (np.zeros((r, c), dtype=np.float64), np.zeros(r, dtype=np.int8),
                                                       np.zeros(r, dtype=np.int64), np.zeros(r, dtype=np.int64)))
        rows, filled, (records, mask, source, target) = arrays
        for k in range(filled[0], len(rows)):
            values, origin, node = rows[k]
            records[k] = self._vector(values)
            mask[k] = 1
            source[k] = origin
            target[k] = 0 if node is None else _POOL_INDEX[node] + 1
        filled[0] = len(rows)
        return records.copy(), mask.copy(), source.copy(), target.copy()

    def _observation(self) -> dict[str, Any]:
        c = len(COLUMNS)
        records, mask, source, target = self._record_arrays()
        visible = self._lab_phase != MANIPULATOR_PHASE
        budgets = self._budgets.fractions()[: len(BUDGET_NAMES)]
        return {
            "records": records,
            "record_mask": mask,
            "record_source": source,
            "record_target": target,
            "in_graph": self._in_graph.copy(),
            "manipulator": self._vector(self._manipulator.values),
            "reactor": self._vector(self._reactor_readings()) if visible else np.zeros(c, dtype=np.float64),
            "reactor_visible": np.int64(visible),
            "budgets_remaining": budgets.astype(np.float32),
            "lab_phase": np.int64(self._lab_phase),
            "phase": np.int64(self._open_phase),
            "last_result": display_text(self._last_text, self.toolbox.text_max_length),
            "last_ok": np.int64(self._last_ok),
        }

    def _phase_info(self) -> dict[str, Any]:
        return {"lab_phase": self._lab_phase}

    def _action_masks(self) -> dict[str, np.ndarray]:
        """The tools valid in this lab phase with the budgets left, and the properties of this episode."""
        remaining = self._remaining()
        tools = np.zeros(len(TOOLS), dtype=np.int8)
        if self._lab_phase == MANIPULATOR_PHASE:
            allowed = ["enter_reactor", "verify", "hypothesize", "give_up"]
            if remaining["interventions"] > 0:
                allowed.append("intervene")
        elif self._lab_phase == REACTOR_PHASE:
            allowed = ["submit", "verify", "hypothesize", "give_up"]
        else:
            allowed = []
        for name in allowed:
            tools[TOOLS.index(name)] = 1
        return {"tool": tools, "property": self._property_mask.copy()}
