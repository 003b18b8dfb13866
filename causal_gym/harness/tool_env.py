"""The base class of tool-calling episodes: :class:`ToolEnv`.

Every causal_gym env that an agent plays by calling tools -- Heuresis and CausalArena's tool mode
(through :class:`~causal_gym.harness.working_graph_env.WorkingGraphEnv`) and CausaLab -- shares
one step protocol, implemented here once:

- one :class:`~causal_gym.harness.toolbox.Toolbox` gives the typed action space, the OpenAI tool
  schemas (:meth:`ToolEnv.tool_specs`) and the converter of LLM tool calls
  (:meth:`ToolEnv.parse_tool_call`);
- a step decodes the action (a malformed one is an error message, never an exception), charges one
  unit of the env's step budget, dispatches the call to the handler ``_tool_<name>`` and charges
  what the handler's :class:`ToolResult` costs, all or nothing;
- every call goes to the record (:meth:`ToolEnv.record`): tool, arguments, result, cost, time;
- errors in a row are counted, and an env may end the episode at a limit; an exhausted budget is
  handed to the env, which may grant a *last turn* (phase :data:`LAST_TURN`) or end the episode;
- ``info`` carries the phase, the budgets left and ``"action_mask"``: per-key masks from public
  state, so that ``env.action_space.sample(mask=info["action_mask"])`` draws a call the env accepts
  (the space is a :class:`~causal_gym.harness.toolbox.ToolActionSpace`, which also keeps the
  rules between fields).

What a subclass adds is its episode: the instance, the observation, the handlers, how the episode
ends and what the final info holds.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from causal_gym._deadlines import call_budget
from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_count
from causal_gym.harness.budgets import Budgets
from causal_gym.harness.record import CallRecord, EpisodeLog
from causal_gym.harness.toolbox import Toolbox, ToolCall, ToolError

__all__ = ["OPEN", "LAST_TURN", "DONE", "ERROR_PREFIX", "ToolResult", "Outcome", "ToolEnv"]

OPEN, LAST_TURN, DONE = 0, 1, 2
"""Episode phases, as in the ``"phase"`` observation and info."""

ERROR_PREFIX = "error: "
"""How a result the agent should fix begins."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool handler returns.

    Attributes
    ----------
    text:
        The result shown to the agent (the ``"last_result"`` observation, cut to its limit).
    data:
        Structured result for the record and ``info["result"]`` (JSON-serialisable values).
    cost:
        Budget name -> amount, e.g. ``{"tests": 12}``; charged all-or-nothing after the call.
        Calls cost one unit of the step budget on top of this.
    ok:
        False when the call failed for a reason the agent should fix; it then counts towards the
        consecutive-error limit.
    end:
        None while the episode goes on; otherwise why it ends after this call, in the subclass's
        terms (read by its ``_finish``; e.g. CausaLab's ``"success"``).
    """

    text: str
    data: Mapping[str, Any] = field(default_factory=dict)
    cost: Mapping[str, float] = field(default_factory=dict)
    ok: bool = True
    end: Any = None


@dataclass
class Outcome:
    """One step's result before it is recorded; subclasses may add to it (a note, an ending).

    ``cost`` holds what was charged; ``end`` is None while the episode goes on, otherwise what the
    subclass's ``_finish`` needs to end it.
    """

    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    end: Any = None

    @classmethod
    def of(cls, result: ToolResult) -> Outcome:
        """The outcome of a handler's result, with copies of its data and cost."""
        return cls(result.ok, result.text, dict(result.data), dict(result.cost), result.end)


class ToolEnv(gym.Env):
    """Base class of the tool envs: one step = one tool call, under budgets, on the record.

    Parameters
    ----------
    toolbox : Toolbox
        Every tool of the env; each needs a handler ``_tool_<name>(**arguments) -> ToolResult``
        receiving the tool's fields (optional ones at their empty default).
    budget_names : sequence of str
        The budgets an episode charges (its :class:`~causal_gym.harness.budgets.Budgets` hold
        these, plus the wall time); every tool's ``cost_kind`` must be one of them.
    step_budget : str
        The budget every open-phase step draws one unit of (``"turns"``, ``"steps"``).
    max_consecutive_errors : int or None
        Errors in a row that end the episode (:meth:`_on_error_limit`); None: no limit.
    render_mode : str or None
        One of ``metadata["render_modes"]``.

    Subclass contract
    -----------------
    - ``reset`` draws the instance and calls :meth:`_start_episode` with the episode's budgets;
    - a handler ``_tool_<name>`` per tool; exceptions are programmer errors and propagate;
    - ``_observation()``, ``_finish(outcome)`` (the final 5-tuple, with the scores; it runs as the
      ``"scorer"`` call of :mod:`causal_gym._deadlines`) and ``_render()``;
    - optionally :meth:`_open_step` (to wrap the dispatch), :meth:`_on_exhausted` (a budget ran
      out), :meth:`_on_error_limit`, :meth:`_last_turn`, :meth:`_action_masks`,
      :meth:`_phase_info` and :meth:`_remaining`.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}
    action_space: gym.spaces.Dict  # the toolbox's typed action

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        budget_names: Sequence[str],
        step_budget: str,
        max_consecutive_errors: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if step_budget not in budget_names:
            raise ValueError(f"the step budget {step_budget!r} is not among the budgets {tuple(budget_names)}")
        for tool in toolbox.tools:
            if not callable(getattr(self, f"_tool_{tool.name}", None)):
                raise TypeError(f"{type(self).__name__} defines tool {tool.name!r} but no method _tool_{tool.name}")
            if tool.cost_kind is not None and tool.cost_kind not in budget_names:
                raise ValueError(f"tool {tool.name!r} draws on budget {tool.cost_kind!r}, which is not in "
                                 f"{tuple(budget_names)}")
        self.toolbox = toolbox
        self.step_budget = step_budget
        self.max_consecutive_errors = (
            None if max_consecutive_errors is None
            else check_count(max_consecutive_errors, "max_consecutive_errors", 1)
        )
        self.render_mode = render_mode
        self.action_space = toolbox.action_space()
        self._phase: int | None = None

    # -- the public interface ------------------------------------------------------------------

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play one action: a typed action (element of ``action_space``) or a ``ToolError``.

        Raises
        ------
        RuntimeError
            If called before ``reset`` or after the episode ended (loop errors, not agent input).
        """
        if self._phase is None:
            raise RuntimeError("call reset() before step()")
        if self._phase == DONE:
            raise RuntimeError("the episode has ended; call reset() to start a new one")
        start = time.perf_counter()
        self._step_count += 1
        call = action if isinstance(action, ToolError) else self.toolbox.decode(action)
        charged: Counter[str] = Counter()
        if self._phase == OPEN:
            # An open phase always has a step left: running out ends the phase (see _on_exhausted).
            self._budgets.charge(self.step_budget, 1)
            charged[self.step_budget] += 1
            outcome = self._open_step(call)
        else:
            outcome = self._last_turn(call)
        charged.update(outcome.cost)
        if outcome.end is None:
            self._after_call(outcome)
        tool: str | None
        if isinstance(call, ToolCall):
            tool, arguments = call.tool, call.to_dict()["arguments"]
        else:
            tool, arguments = call.tool, {"raw": call.raw}
        self._log.append(
            CallRecord(
                step=self._step_count,
                tool=tool,
                arguments=arguments,
                ok=outcome.ok,
                result_text=outcome.text,
                data=to_jsonable(outcome.data),
                cost={k: float(v) for k, v in charged.items()},
                wall_time=time.perf_counter() - start,
            )
        )
        self._last_text, self._last_ok = outcome.text, outcome.ok
        if outcome.end is None:
            return self._observation(), 0.0, False, False, self._info(outcome.data)
        self._phase = DONE
        with call_budget("scorer"):  # the scoring is charged to the runner's scorer budget, not the step's
            return self._finish(outcome)

    def tool_specs(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of every tool."""
        return self.toolbox.openai_schemas()

    def parse_tool_call(self, name: Any, arguments: Any) -> dict[str, Any] | ToolError:
        """Convert an LLM tool call to the typed action, or to the ``ToolError`` to step with."""
        call = self.toolbox.parse_tool_call(name, arguments)
        return call if isinstance(call, ToolError) else self.toolbox.encode(call)

    def record(self) -> EpisodeLog:
        """The call record of the current (or last) episode: tool, arguments, result, cost, wall time."""
        self._require_episode()
        return self._log

    def budgets(self) -> dict[str, float | None]:
        """Budget limits of the current episode, ``None`` = unlimited (``"wall_time"`` in seconds)."""
        self._require_episode()
        return self._budgets.limits()

    def render(self) -> str | np.ndarray | None:
        """The env's state in its ``render_mode`` (see the subclass); None, with a warning, without one."""
        if self.render_mode is None:
            modes = " or ".join(repr(m) for m in self.metadata["render_modes"])
            gym.logger.warn(f"render() called without a render_mode; pass render_mode={modes}")
            return None
        self._require_episode()
        return self._render()

    def state_summary(self) -> str:
        """The current state as short text, for an agent whose older turns were trimmed from its
        context: the budgets left (subclasses prepend their working state). It shows only what the
        agent has already been shown."""
        self._require_episode()
        return self._remaining_text()

    # -- the protocol --------------------------------------------------------------------------

    def _remaining_text(self) -> str:
        """``"remaining: turns 12, ..."`` over the limited budgets (unlimited ones are left out)."""
        left = [f"{name} {amount:g}" for name, amount in self._remaining().items() if math.isfinite(amount)]
        return "remaining: " + (", ".join(left) or "no limits")

    def _start_episode(self, budgets: Budgets) -> None:
        """Open an episode with these budgets: empty record, no errors, step 0, phase :data:`OPEN`."""
        self._budgets = budgets
        self._log = EpisodeLog()
        self._phase = OPEN
        self._step_count = 0
        self._consecutive_errors = 0
        self._last_text = ""
        self._last_ok = True

    def _require_episode(self) -> None:
        if self._phase is None:
            raise RuntimeError("no episode yet: call reset() first")

    @property
    def _open_phase(self) -> int:
        """The phase of the episode in play (:data:`OPEN`, :data:`LAST_TURN` or :data:`DONE`)."""
        if self._phase is None:
            raise RuntimeError("no episode yet: call reset() first")
        return self._phase

    def _open_step(self, call: ToolCall | ToolError) -> Outcome:
        """An open-phase step (its step unit is charged): an invalid action is an error, a call runs."""
        if isinstance(call, ToolError):
            return Outcome(False, ERROR_PREFIX + call.message)
        return self._run_tool(call.tool, call.arguments)

    def _run_tool(self, name: str, arguments: Mapping[str, Any]) -> Outcome:
        """Call the handler of tool ``name`` and charge its result's cost, or refuse the call if any
        budget would be overdrawn (then nothing is charged and the result is dropped)."""
        result = getattr(self, f"_tool_{name}")(**arguments)
        if not isinstance(result, ToolResult):
            raise TypeError(f"_tool_{name} must return a ToolResult, got {type(result).__name__}")
        cost = dict(result.cost)
        if not self._budgets.charge_all(cost):
            remaining = self._budgets.remaining()
            need = ", ".join(f"{k} {v:g} (remaining {remaining[k]:g})" for k, v in cost.items())
            return Outcome(
                False,
                f"{ERROR_PREFIX}refused: not enough budget for this call, which needs {need}; nothing was charged",
            )
        return Outcome.of(result)

    def _declared_cost(self, tool: str) -> dict[str, float]:
        """What one call of ``tool`` draws, as its :class:`~causal_gym.harness.toolbox.Tool` declares it."""
        spec = self.toolbox.tool(tool)
        return {} if spec.cost_kind is None else {spec.cost_kind: spec.cost}

    def _affordable(self, cost: Mapping[str, float]) -> bool:
        """Whether every budget covers ``cost`` now (handlers check before doing costly work)."""
        remaining = self._budgets.remaining()
        return all(amount <= remaining[name] for name, amount in cost.items())

    def _after_call(self, outcome: Outcome) -> None:
        """Count errors in a row and hand a reached limit to the subclass (only in the open phase)."""
        self._consecutive_errors = 0 if outcome.ok else self._consecutive_errors + 1
        if self._phase != OPEN:
            return
        if self.max_consecutive_errors is not None and self._consecutive_errors >= self.max_consecutive_errors:
            self._on_error_limit(outcome)
            return
        exhausted = self._budgets.exhausted()
        if exhausted:
            self._on_exhausted(outcome, exhausted)

    def _on_error_limit(self, outcome: Outcome) -> None:
        """End the episode after ``max_consecutive_errors`` errors in a row (set ``outcome.end``)."""
        raise NotImplementedError(f"{type(self).__name__} sets max_consecutive_errors but not _on_error_limit")

    def _on_exhausted(self, outcome: Outcome, exhausted: list[str]) -> None:
        """React to the budgets in ``exhausted`` having run out: end the episode, grant a last turn
        (phase :data:`LAST_TURN`) or carry on. The default carries on."""

    def _last_turn(self, call: ToolCall | ToolError) -> Outcome:
        """A step in phase :data:`LAST_TURN` (no step unit is charged); for envs that grant one."""
        raise NotImplementedError(f"{type(self).__name__} entered the last turn but has no _last_turn")

    # -- info ----------------------------------------------------------------------------------

    def _info(self, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
        masks = self._action_masks()
        info: dict[str, Any] = {
            "phase": self._phase,
            **self._phase_info(),
            "budgets_remaining": self._remaining(),
            "action_mask": {key: masks.get(key) for key in self.action_space.spaces},
        }
        if data is not None:
            info["result"] = to_jsonable(data)
        return info

    def _action_masks(self) -> dict[str, Any]:
        """Field name -> ``Dict.sample`` mask of the actions valid now; fields left out are free.

        The masks read public state only (phase, budgets, what the agent has been shown). The
        default allows, in the open phase, every tool whose declared cost the budgets cover."""
        mask = np.zeros(len(self.toolbox.tools), dtype=np.int8)
        if self._phase == OPEN:
            mask[:] = [self._affordable(self._declared_cost(tool.name)) for tool in self.toolbox.tools]
        return {"tool": mask}

    def _phase_info(self) -> dict[str, Any]:
        """Info entries that follow ``"phase"`` (e.g. CausaLab's lab phase)."""
        return {}

    def _remaining(self) -> dict[str, float]:
        """The ``"budgets_remaining"`` info: budget -> amount left (``inf`` when unlimited)."""
        return self._budgets.remaining()

    # -- the subclass's episode ----------------------------------------------------------------

    def _observation(self) -> dict[str, Any]:
        raise NotImplementedError

    def _finish(self, outcome: Outcome) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """The final step's observation, reward, terminated, truncated and info (the phase is DONE)."""
        raise NotImplementedError

    def _render(self) -> str | np.ndarray:
        raise NotImplementedError
