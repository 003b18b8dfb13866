"""The shared agent interface: ``reset(task)`` once per episode, then ``act(observation, info)``.

Scripted baselines, LLM agents and wrapped RL policies all implement :class:`Agent`, so the
evaluation runner treats them alike. The :class:`TaskSpec` is everything an agent may know about
the task before the first observation: the task text, the tool schemas (for LLM tool calling),
the spaces (for RL policies), the budgets, a structured description of the condition and the
benchmark's optional prompt texts. The protocol lives below the environments so that each
benchmark's own baselines can implement it; :mod:`causal_gym.agents` re-exports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from causal_gym.harness.contracts import DescribesTask, HasBudgets, OffersPrompts, OffersTools, StatesCondition

__all__ = ["Agent", "TaskSpec", "task_spec", "typed_action"]


@dataclass(frozen=True)
class TaskSpec:
    """What an agent is told about a task before the episode starts.

    Attributes
    ----------
    env_id:
        The Gymnasium id of the environment (``"unregistered"`` for an env built directly).
    description:
        The task statement shown to the agent (LLM agents put it in the system prompt).
    tool_specs:
        OpenAI-style tool schemas (``{"type": "function", "function": {...}}``); empty for envs
        without a tool interface.
    observation_space, action_space:
        The env's spaces, for policies that act on typed observations.
    budgets:
        Named limits of the episode (turns, tests, algorithm calls, ...), as the env reports them.
    condition:
        What the task is, as data rather than prose (the env's ``task_condition()``), e.g.
        ``{"benchmark": "heuresis", "family": "wild", "guided": True}``; agents that play one
        condition only check it here.
    prompts:
        Optional prompt texts the benchmark offers LLM agents (the env's ``agent_prompts()``), e.g.
        Heuresis's ``"level_1".."level_3"`` and ``"target_cpdag"`` / ``"target_dag"``.
    """

    env_id: str
    description: str
    observation_space: gym.Space
    action_space: gym.Space
    tool_specs: tuple[Mapping[str, Any], ...] = ()
    budgets: Mapping[str, float | None] = field(default_factory=dict)
    condition: Mapping[str, Any] = field(default_factory=dict)
    prompts: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class Agent(Protocol):
    """Anything that can play an episode: ``reset`` with the task, then ``act`` each step.

    An agent may also define ``bind(env)`` (:class:`~causal_gym.harness.contracts.BindsEnv`);
    :func:`causal_gym.eval.rollout` calls it before
    ``reset`` on every episode. Agents that produce JSON tool calls (the LLM agent) use it to get
    the env's ``parse_tool_call``, which turns a call into the typed action or an error result.
    """

    def reset(self, task: TaskSpec) -> None:
        """Prepare for a new episode of ``task`` (clear memory, build prompts, ...)."""

    def act(self, observation: Any, info: Mapping[str, Any]) -> Any:
        """Return an action valid for ``task.action_space`` given the latest observation and info."""


def task_spec(env: gym.Env) -> TaskSpec:
    """Build the :class:`TaskSpec` of an environment.

    Envs may provide ``task_description()``, ``tool_specs()``, ``budgets()``,
    ``task_condition()`` and ``agent_prompts()`` on their unwrapped instance (the protocols of
    :mod:`causal_gym.harness.contracts`); where one is missing
    the spec falls back to the class docstring's first paragraph, no tools, no budgets, an empty
    condition and no prompts.
    """
    base = env.unwrapped
    spec_id = env.spec.id if env.spec is not None else "unregistered"
    if isinstance(base, DescribesTask):
        description = base.task_description()
    else:
        description = (type(base).__doc__ or type(base).__name__).strip().split("\n\n")[0]
    tools = tuple(base.tool_specs()) if isinstance(base, OffersTools) else ()
    budgets = dict(base.budgets()) if isinstance(base, HasBudgets) else {}
    condition = dict(base.task_condition()) if isinstance(base, StatesCondition) else {}
    prompts = dict(base.agent_prompts()) if isinstance(base, OffersPrompts) else {}
    return TaskSpec(
        env_id=spec_id,
        description=description,
        observation_space=env.observation_space,
        action_space=env.action_space,
        tool_specs=tools,
        budgets=budgets,
        condition=condition,
        prompts=prompts,
    )


def typed_action(task: TaskSpec, tool: str, **arguments: Any) -> dict[str, Any]:
    """The typed action calling ``tool``, built from the task's action space and tool schemas.

    Scripted agents write arguments as in JSON: choices and variables as their strings
    (``"X3"``), numbers as numbers, texts as strings. Fields the tool does not use stay at their
    empty value. Raises ``ValueError`` for an unknown tool or a value outside a choice's options.
    """
    schemas = {s["function"]["name"]: s["function"]["parameters"]["properties"] for s in task.tool_specs}
    if tool not in schemas:
        raise ValueError(f"unknown tool {tool!r}; the task has {list(schemas)}")
    if not isinstance(task.action_space, gym.spaces.Dict):
        raise ValueError(f"typed_action needs a tool env's Dict action space, got {task.action_space}")
    action: dict[str, Any] = {"tool": np.int64(list(schemas).index(tool))}
    fields: Mapping[str, Any] = task.action_space.spaces  # Text, Box, Discrete or MultiBinary entries
    for key, space in fields.items():
        if key == "tool":
            continue
        value = arguments.get(key)
        if isinstance(space, gym.spaces.Text):
            action[key] = value or ""
        elif value is None:
            action[key] = np.zeros(space.shape, dtype=space.dtype)[()]
        elif isinstance(space, gym.spaces.Box):
            action[key] = np.full(space.shape, value, dtype=space.dtype)
        else:
            options = schemas[tool][key]["enum"]
            if len(options) != space.n:  # e.g. an enum narrowed to one episode's names: no index map
                raise ValueError(f"argument {key!r} of {tool!r}: its schema lists {len(options)} options but the "
                                 f"typed field has {space.n}, so a name does not give its index; set it directly")
            if value not in options:
                raise ValueError(f"argument {key!r} of {tool!r} must be one of {options}, got {value!r}")
            action[key] = np.int64(options.index(value))
    return action
