"""Agents that play causal_gym environments: one protocol for scripted, LLM and RL agents.

This is ``causal_gym.agents`` — a subpackage, deliberately not a top-level ``agents`` package,
which would collide with the OpenAI Agents SDK's ``agents`` module. The protocol itself
(:class:`Agent`, :class:`TaskSpec`) lives in :mod:`causal_gym.harness.agent`, below the
environments, so that each benchmark's baselines (in its own folder) implement it; the generic
agents (random, LLM, SB3) live here, and :func:`make_agent` builds any of them by name.
An agent that waits on a server of its own wraps the wait in :func:`waiting`, so that in a threaded
run (``concurrency > 1``) the other episodes compute meanwhile, as the LLM agent does.
"""

from causal_gym._turns import waiting
from causal_gym.agents.random_agent import RandomAgent
from causal_gym.agents.registry import make_agent
from causal_gym.harness.agent import Agent, TaskSpec, task_spec, typed_action

__all__ = ["Agent", "RandomAgent", "TaskSpec", "make_agent", "task_spec", "typed_action", "waiting"]
