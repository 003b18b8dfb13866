"""The optional methods an env (or an agent) may offer the machinery, as typed protocols.

An env is any ``gymnasium.Env``; what it adds for agents, the runner and the report is optional
and each piece is one protocol here, checked with ``isinstance`` on the unwrapped env, so a new
benchmark sees in one place what the machinery reads and with which types:

- :class:`DescribesTask`, :class:`OffersTools`, :class:`HasBudgets`, :class:`StatesCondition`,
  :class:`OffersPrompts`: what :func:`causal_gym.harness.agent.task_spec` tells the agent;
- :class:`Records`: the call record the runner stores with each episode;
- :class:`ChecksResetOptions`: the runner validates reset options before any episode runs, so an
  instance beyond the split fails once, up front;
- :class:`ParsesToolCalls`: a tool env's converter of an LLM's JSON tool call to its typed action
  (what the LLM agent and the framework adapters play through);
- :class:`BindsEnv`: an agent that needs the env itself before ``reset`` (the LLM agent takes the
  env's tool-call converter).

:class:`causal_gym.harness.tool_env.ToolEnv` implements :class:`OffersTools`, :class:`ParsesToolCalls`,
:class:`HasBudgets` and :class:`Records` for every tool env.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

__all__ = [
    "BindsEnv",
    "ChecksResetOptions",
    "DescribesTask",
    "HasBudgets",
    "OffersPrompts",
    "OffersTools",
    "ParsesToolCalls",
    "Records",
    "StatesCondition",
]


@runtime_checkable
class DescribesTask(Protocol):
    """An env with its own task statement (default: the class docstring's first paragraph)."""

    def task_description(self) -> str:
        """The task as the agent reads it."""


@runtime_checkable
class OffersTools(Protocol):
    """A tool-calling env: its OpenAI-style tool schemas."""

    def tool_specs(self) -> Sequence[Mapping[str, Any]]:
        """``{"type": "function", "function": {...}}`` per tool."""


@runtime_checkable
class HasBudgets(Protocol):
    """An env with named episode limits."""

    def budgets(self) -> Mapping[str, float | None]:
        """Budget name -> its size (None: unlimited)."""


@runtime_checkable
class StatesCondition(Protocol):
    """An env that says what its task is as data."""

    def task_condition(self) -> Mapping[str, Any]:
        """E.g. ``{"benchmark": "heuresis", "family": "wild", "guided": True}``."""


@runtime_checkable
class OffersPrompts(Protocol):
    """An env with optional prompt texts for LLM agents."""

    def agent_prompts(self) -> Mapping[str, str]:
        """Prompt name -> text."""


@runtime_checkable
class Records(Protocol):
    """An env that keeps a record of the episode's calls."""

    def record(self) -> Any:
        """The record so far (JSON-convertible)."""


@runtime_checkable
class ChecksResetOptions(Protocol):
    """An env that validates ``reset`` options without resetting."""

    def check_reset_options(self, options: Any) -> Any:
        """Raise ``ValueError`` for options ``reset`` would refuse."""


@runtime_checkable
class ParsesToolCalls(Protocol):
    """A tool env that converts a JSON tool call to its typed action."""

    def parse_tool_call(self, name: Any, arguments: Any) -> Any:
        """The typed action of the call, or the ``ToolError`` to step with."""


@runtime_checkable
class BindsEnv(Protocol):
    """An agent that needs the env before ``reset`` (called on every episode)."""

    def bind(self, env: gym.Env) -> None:
        """Take what the agent needs from ``env``."""
