"""Agents by name, so a run configuration can say which agent to build in any worker process.

A run store records the agent as a name and keyword arguments; every worker (a local process,
a Ray task) rebuilds it with :func:`make_agent`. Names are the entries of :data:`AGENTS` or an
import path ``"package.module:Factory"`` for agents outside causal_gym. Each entry is an import
path too, so nothing is imported until an agent is built (the LLM agent's module may even be
absent from an installation).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from causal_gym.agents.base import Agent

__all__ = ["AGENTS", "AgentEntry", "agent_factory", "make_agent"]


@dataclass(frozen=True)
class AgentEntry:
    """A registered agent: where its factory lives, what it is, and the extra that installs its needs."""

    path: str
    description: str
    extra: str | None = None


AGENTS = MappingProxyType({
    "random": AgentEntry("causal_gym.agents.base:RandomAgent", "uniform random actions, the floor (seeded)"),
    "router": AgentEntry(
        "causal_gym.agents.router:RouterAgent", "the Heuresis Appendix-E router, through the tools (guided only, seeded)"
    ),
    "pc-kci": AgentEntry(
        "causal_gym.agents.baselines:AlgorithmAgent", "submits the guided start, PC-KCI's output (guided only)"
    ),
    "algorithm": AgentEntry(
        "causal_gym.agents.baselines:AlgorithmAgent",
        "runs menu entry algorithm='A'..'G' and submits its output (without it: as pc-kci)",
    ),
    "causalab-observe": AgentEntry(
        "causal_gym.envs.causalab.baselines:ObservationRegressionAgent",
        "CausaLab: least-squares frequency fit on the records given at the start, then predict",
    ),
    "causalab-random": AgentEntry(
        "causal_gym.envs.causalab.baselines:RandomInterventionAgent",
        "CausaLab: random interventions with the whole budget, then a least-squares fit (seeded)",
    ),
    "causalab-systematic": AgentEntry(
        "causal_gym.envs.causalab.baselines:SystematicExperimenter",
        "CausaLab: shift every property once, solve for the direct effects, verify, predict",
    ),
    "arena-method": AgentEntry(
        "causal_gym.envs.arena.baselines:MethodAgent",
        "CausalArena submit mode: a discovery-menu method answers (method='pc'|'ges'|'gies'|...)",
    ),
    "llm": AgentEntry(
        "causal_gym.agents.llm:LLMAgent",
        "LLM over an OpenAI-compatible endpoint (model=..., base_url=...)",
        extra="llm",
    ),
    "sb3": AgentEntry(
        "causal_gym.agents.rl:load_sb3_agent",
        "a trained Stable-Baselines3 model (path=..., env_id=..., algorithm=a key of causal_gym.agents.rl.ALGORITHMS)",
        extra="rl",
    ),
})
"""Registered agent names -> :class:`AgentEntry`."""


def agent_factory(name: str) -> Callable[..., Agent]:
    """The class or factory behind ``name`` (a key of :data:`AGENTS` or ``"module:attr"``), imported now.

    Raises
    ------
    ValueError
        For an unknown name or a path that does not resolve.
    ModuleNotFoundError
        When the agent's module, or a package it needs, is not installed (the message says which).
    """
    if not isinstance(name, str):
        raise ValueError(f"agent name must be a string, got {name!r}")
    entry = AGENTS.get(name)
    if entry is None and ":" not in name:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)} or give 'package.module:Factory'")
    path = entry.path if entry is not None else name
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            if entry is None:
                raise ValueError(f"agent {name!r}: no module {module_name!r}") from exc
            raise ModuleNotFoundError(
                f"agent {name!r} lives in {module_name}, which this installation of causal_gym does not have",
                name=missing,
            ) from exc
        if entry is not None and entry.extra is not None:
            raise ModuleNotFoundError(
                f"agent {name!r} needs the package {missing!r}: pip install 'causal-gym[{entry.extra}]'", name=missing
            ) from exc
        raise
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"agent {name!r}: {module_name} has no callable {attribute!r}")
    return factory


def make_agent(name: str, **kwargs: Any) -> Agent:
    """Build the agent registered as ``name`` with keyword arguments ``kwargs``.

    Examples
    --------
    >>> agent = make_agent("random", seed=3)
    >>> type(agent).__name__, agent.seed
    ('RandomAgent', 3)

    Raises
    ------
    ValueError
        Unknown name, or arguments the agent does not take (the message lists those it does).
    TypeError
        When the factory returns something without ``reset`` and ``act``.
    """
    factory = agent_factory(name)
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError as exc:
        accepted = ", ".join(inspect.signature(factory).parameters) or "none"
        raise ValueError(f"agent {name!r} does not accept {sorted(kwargs)} ({exc}); its arguments: {accepted}") from None
    agent = factory(**kwargs)
    if not isinstance(agent, Agent):
        raise TypeError(f"agent {name!r} built a {type(agent).__name__}, which lacks reset(task) and act(observation, info)")
    return agent
