"""An OpenEnv server for any tool env: ``causal-gym serve --env ID``.

OpenEnv (``openenv-core``) serves an ``Environment`` (``reset`` / ``step`` / ``state``) over HTTP and a
WebSocket per session; its ``EnvClient`` (and ``GenericEnvClient``) plays it. :func:`make_app` builds that
app with OpenEnv's own factory (``create_app``) around :class:`ToolSessionEnvironment`: one
:class:`~causal_gym.integrations.core.ToolSession` per WebSocket session, so concurrent sessions are
independent episodes, each with its own env.

- ``reset(**row)`` takes an :class:`~causal_gym.integrations.core.EpisodeRef` row (``seed``,
  ``instance``, ``split``, ``repeat``; a TRL dataset row works as it is): the same seeds as
  ``causal-gym run --seed`` gives that episode, so every member of a GRPO group that resets with one
  row plays one instance. A row naming another env id or other env kwargs is refused.
- Actions are OpenEnv's MCP-style ``CallToolAction`` (``tool_name``, ``arguments``): one tool call
  per step, validated by the env's converter (a malformed call is the env's invalid action and its
  error text comes back; the episode goes on).
- Observations carry the result text, the tools offered now (only ``submit`` in the last turn), the
  step's reward and ``done``; the system prompt and first message at reset; the final numeric
  ``scores`` once the episode has ended, and nothing else of the env's info (the truth stays hidden).
- A step that raises (the env's scorer, a sandbox, the machine) ends the episode as a ``failure``:
  ``done`` with reward None, never a reward of 0 a trainer would learn from; the exception goes to
  the server's log, only its type to the client (its text may quote the instance).
- ``tool_timeout`` bounds one step (the env's work; the step that ends the episode includes its
  scoring, so there is no separate scorer budget here; the model's time is the client's). A step
  past it ends the episode as a ``failure`` naming the budget, on time: its thread is abandoned
  and closes the env when it returns.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.env_server.types import Observation, State
from pydantic import Field

from causal_gym.integrations._threads import BudgetTimeout, GuardedSession, check_budget
from causal_gym.integrations.core import EpisodeRef, ToolSession

__all__ = ["ToolObservation", "ToolSessionEnvironment", "make_app"]

_LOG = logging.getLogger(__name__)


class ToolObservation(Observation):
    """What the agent sees after a reset or a tool call."""

    text: str = Field(default="", description="The tool's result (at reset: the episode's first message)")
    system_prompt: str = Field(default="", description="The system prompt our LLM agent sends (at reset only)")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas offered now")
    last_turn: bool = Field(default=False, description="Only 'submit' is accepted now")
    scores: dict[str, float] = Field(default_factory=dict, description="Final numeric scores (once done)")
    failure: str = Field(default="", description="Why the episode ended unscored (a failed step), if it did")


class ToolSessionEnvironment(Environment):
    """One tool env episode per session, played one tool call per step (see the module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, prompt_level: int = 0,
                 tool_timeout: float | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.prompt_level = prompt_level
        self.tool_timeout = check_budget(tool_timeout, "tool_timeout")
        self.guard: GuardedSession | None = None
        self.failure = ""
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **row: Any) -> ToolObservation:
        """Start the episode of ``row`` (its base ``seed``, ``instance``, ``split``, ``repeat``)."""
        row = {"env_id": self.env_id, "env_kwargs": self.env_kwargs, **row, "seed": 0 if seed is None else seed}
        ref = EpisodeRef.from_row(row)
        if ref.env_id != self.env_id or dict(ref.env_kwargs) != self.env_kwargs:
            raise ValueError(f"this server plays {self.env_id} with env kwargs {self.env_kwargs}; "
                             f"the row names {ref.env_id} with {dict(ref.env_kwargs)}")
        self.close()
        self.failure = ""
        self.guard = GuardedSession(ToolSession(ref, prompt_level=self.prompt_level))
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation(self.guard.session.first_message, 0.0,
                                 system_prompt=self.guard.session.system_prompt)

    @property
    def session(self) -> ToolSession | None:
        """The episode's :class:`~causal_gym.integrations.core.ToolSession` (None before reset)."""
        return None if self.guard is None else self.guard.session

    def step(self, action: CallToolAction, **kwargs: Any) -> ToolObservation:
        """Play one tool call."""
        guard = self.guard
        if guard is None:
            raise RuntimeError("reset() has not been called")
        if self.failure:
            return ToolObservation(text=self.failure, failure=self.failure, done=True, reward=None)
        session = guard.session
        was_last_turn = session.last_turn
        steps = session.steps
        try:
            text = guard.call_sync(lambda: session.call(action.tool_name, action.arguments), self.tool_timeout,
                                   "the env step (tool_timeout)")
        except BudgetTimeout as exc:
            self.failure = f"{exc}; the episode ends unscored"
            return ToolObservation(text=self.failure, failure=self.failure, done=True, reward=None)
        except Exception as exc:  # noqa: BLE001 -- a failed step voids the episode, it does not score 0
            _LOG.exception("%s: a step failed; the episode ends unscored", self.env_id)
            self.failure = f"the env failed ({type(exc).__name__}); the episode ends unscored"
            return ToolObservation(text=self.failure, failure=self.failure, done=True, reward=None)
        self._state.step_count += 1
        text = "\n\n".join((text, *session.last_turn_notice(was_last_turn)))
        return self._observation(text, session.last_reward if session.steps > steps else 0.0)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        if self.guard is not None:
            self.guard.close()  # now, or when a step abandoned at its timeout returns
            self.guard = None

    def _observation(self, text: str, reward: float, system_prompt: str = "") -> ToolObservation:
        session = self.session
        assert session is not None
        return ToolObservation(text=text, system_prompt=system_prompt, tools=session.tools_now(),
                               last_turn=session.last_turn, scores=session.scores, reward=reward,
                               done=session.done)


def make_app(env_id: str, env_kwargs: Mapping[str, Any] | None = None, *, prompt_level: int = 0,
             max_sessions: int = 256, tool_timeout: float | None = None) -> Any:
    """OpenEnv's FastAPI app serving ``env_id`` with up to ``max_sessions`` concurrent WebSocket sessions.

    ``tool_timeout`` (seconds, None: no budget) bounds each step (module docstring).

    Raises
    ------
    ValueError
        If ``env_id`` is not a tool env with a ``submit`` tool or ``env_kwargs`` do not fit it
        (checked here, by one probe episode, before anything is served), or ``tool_timeout`` is not
        a positive real.
    """
    tool_timeout = check_budget(tool_timeout, "tool_timeout")
    ToolSession(EpisodeRef(env_id, env_kwargs=dict(env_kwargs or {}))).close()
    factory = functools.partial(ToolSessionEnvironment, env_id, dict(env_kwargs or {}), prompt_level, tool_timeout)
    return create_app(factory, CallToolAction, ToolObservation, env_name=env_id, max_concurrent_envs=max_sessions)
