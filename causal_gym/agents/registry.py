"""Agents by name, so a run configuration can say which agent to build in any worker process.

A run store records the agent as a name and keyword arguments; every worker (a local process,
a Ray task) rebuilds it with :func:`make_agent`. Names are the generic agents
(:data:`GENERIC_AGENTS`), each benchmark's agents (declared in its spec, :mod:`causal_gym.envs.benchmark`)
or an import path ``"package.module:Factory"`` for agents elsewhere. Each entry is an import path
too, so nothing is imported until an agent is built (the LLM agent's module may even be absent
from an installation).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from causal_gym._code import missing_extra
from causal_gym.envs.benchmark import AgentEntry, benchmarks
from causal_gym.harness.agent import Agent

__all__ = ["GENERIC_AGENTS", "AgentEntry", "agents", "agent_factory", "make_agent"]


GENERIC_AGENTS: Mapping[str, AgentEntry] = MappingProxyType({
    "random": AgentEntry("causal_gym.agents.random_agent:RandomAgent", "uniform random actions, the floor (seeded)",
                         takes_seed=True),
    "llm": AgentEntry(
        "causal_gym.agents.llm:LLMAgent",
        "LLM over an OpenAI-compatible endpoint (model=..., base_url=...)",
        extra="llm",
        takes_seed=True,
    ),
    "sb3": AgentEntry(
        "causal_gym.agents.rl:load_sb3_agent",
        "a trained Stable-Baselines3 model (path=..., env_id=..., algorithm=a key of causal_gym.agents.rl.ALGORITHMS)",
        extra="rl",
    ),
})
"""The agents of every benchmark: random, LLM, SB3."""


def agents() -> Mapping[str, AgentEntry]:
    """Every registered agent name: the generic ones, then each benchmark's (its ``SPEC.agents``).

    Raises
    ------
    ValueError
        If two benchmarks (or a benchmark and a generic agent) claim the same name.
    """
    found = dict(GENERIC_AGENTS)
    for spec in benchmarks():
        for name, entry in spec.agents.items():
            if name in found and found[name] != entry:
                raise ValueError(f"agent name {name!r} of benchmark {spec.name!r} is taken")
            found[name] = entry
    return MappingProxyType(found)


def agent_factory(name: str) -> Callable[..., Agent]:
    """The class or factory behind ``name`` (a key of :func:`agents` or ``"module:attr"``), imported now.

    Raises
    ------
    ValueError
        For an unknown name or a path that does not resolve.
    ModuleNotFoundError
        When the agent's module, or a package it needs, is not installed (the message says which;
        for a registered agent whose extra is missing, before anything is imported: the message is
        the ``pip install 'causal-gym[extra]'`` line).
    """
    if not isinstance(name, str):
        raise ValueError(f"agent name must be a string, got {name!r}")
    known = agents()
    entry = known.get(name)
    if entry is None and ":" not in name:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(known)} or give 'package.module:Factory'")
    path = entry.path if entry is not None else name
    if entry is not None and entry.extra is not None:  # stop before any episode, not in every one of them
        missing = missing_extra(entry.extra)
        if missing is not None:
            raise ModuleNotFoundError(
                f"agent {name!r} needs the package {missing!r}: pip install 'causal-gym[{entry.extra}]'", name=missing)
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


def make_agent(name: str, factory: Callable[..., Agent] | None = None, /, **kwargs: Any) -> Agent:
    """Build the agent registered as ``name`` with keyword arguments ``kwargs``.

    ``factory``, when given, is what ``name`` resolved to in another process (:func:`agent_factory`):
    a worker cannot resolve ``"__main__:Factory"`` itself, since it never runs the caller's
    ``__main__`` (:mod:`causal_gym._workers`), so the runner sends it such a factory by value.

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
    if factory is None:
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
