"""Agents that play causal_gym environments: one protocol for scripted, LLM and RL agents.

This is ``causal_gym.agents`` — a subpackage, deliberately not a top-level ``agents`` package,
which would collide with the OpenAI Agents SDK's ``agents`` module.
"""

from causal_gym.agents.base import Agent, RandomAgent, TaskSpec, task_spec, typed_action
from causal_gym.agents.baselines import AlgorithmAgent
from causal_gym.agents.registry import make_agent
from causal_gym.agents.router import RouterAgent

__all__ = ["Agent", "AlgorithmAgent", "RandomAgent", "RouterAgent", "TaskSpec", "make_agent", "task_spec", "typed_action"]
