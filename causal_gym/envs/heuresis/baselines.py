"""Heuresis algorithm-only baselines: agents that submit an algorithm's output without weighing any evidence.

They are the references of the papers played as agents, so the runner and the reports treat them
like any other agent (one run store, the same scores and traces):

- ``AlgorithmAgent()`` submits the starting working graph at once. In the guided Heuresis condition
  that graph is PC-KCI's output, so its scores are PC-KCI's (the ``BCA_g`` reference); the episode
  costs one turn.
- ``AlgorithmAgent(algorithm="C")`` runs one entry of the masked menu and submits its output
  (two turns; an output the env rejects because no DAG extends it is submitted once more with its
  undirected edges oriented along its arrows, same adjacencies; one with a directed cycle is
  submitted unchanged and the env rescues the working graph: a truncated episode).
  Labels map to algorithms through a permutation drawn from the episode's seed, so over many
  episodes this is "one menu algorithm chosen blindly"; the final info's
  ``scores["algorithm_slots"]`` says which algorithm it was.

Both speak only through the public tools (``run_algorithm``, ``submit``), as an LLM would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from causal_gym.graphs import directed_cycle, orient_along_arrows
from causal_gym.harness.agent import TaskSpec, typed_action
from causal_gym.harness.working_graph import format_edge_list, parse_edge_list

__all__ = ["AlgorithmAgent", "guided_heuresis", "menu_labels"]


def _tool_schemas(task: TaskSpec) -> dict[str, Mapping[str, Any]]:
    return {spec["function"]["name"]: spec["function"] for spec in task.tool_specs}


def menu_labels(task: TaskSpec) -> tuple[str, ...]:
    """The masked labels ``run_algorithm`` offers in ``task`` (its schema's choices; none without the tool):
    an agent learns the menu's length from the task, as an LLM does, not from a constant."""
    run_algorithm = _tool_schemas(task).get("run_algorithm", {})
    return tuple(run_algorithm.get("parameters", {}).get("properties", {}).get("algorithm", {}).get("enum", ()))


def guided_heuresis(task: TaskSpec) -> bool:
    """Whether ``task`` is the guided Heuresis condition (``TaskSpec.condition``, set by the env)."""
    return task.condition.get("benchmark") == "heuresis" and task.condition.get("guided") is True


def _extendable(edges: str, d: int) -> str:
    """An answer the env rejected because no DAG extends it (an algorithm's PDAG can be such, FCI's
    circle marks read as undirected edges often are), with its undirected edges oriented along its
    arrows: the same adjacencies and arrows, now a DAG. One with a directed cycle goes back unchanged,
    and the env then rescues the working graph and marks the episode truncated."""
    graph = parse_edge_list(edges, d)
    return edges if directed_cycle(graph) is not None else format_edge_list(orient_along_arrows(graph))


class AlgorithmAgent:
    """Submit the guided start (PC-KCI's output) or one menu algorithm's output, untouched.

    Parameters
    ----------
    algorithm : str or None
        A menu label (``"A"`` .. ``"G"`` in Heuresis) to run and submit; None submits the starting
        working graph, which only the guided condition makes an algorithm's output (unguided
        tasks are refused: their start is the complete graph).

    Examples
    --------
    >>> import gymnasium as gym, causal_gym
    >>> from causal_gym.eval import rollout
    >>> env = gym.make("Heuresis-lg-guided-v0", d=4, n=100)
    >>> record = rollout(env, AlgorithmAgent(), seed=0, options={"instance": 0})
    >>> record.steps, record.final_info["submission_source"]
    (1, 'agent')
    """

    def __init__(self, algorithm: str | None = None) -> None:
        if algorithm is not None and not isinstance(algorithm, str):
            raise ValueError(f"algorithm must be a menu label (a string) or None, got {algorithm!r}")
        self.algorithm = algorithm
        self._task: TaskSpec | None = None

    def reset(self, task: TaskSpec) -> None:
        """Check the task offers what the baseline needs; refuse unguided tasks when ``algorithm`` is None."""
        schemas = _tool_schemas(task)
        if "submit" not in schemas:
            raise ValueError(f"AlgorithmAgent needs a task with a 'submit' tool; {task.env_id} has {sorted(schemas)}")
        if self.algorithm is None:
            if not guided_heuresis(task):
                raise ValueError(
                    f"AlgorithmAgent() submits the guided start (PC-KCI's output), but {task.env_id} does not start "
                    f"from an algorithm's output; pass algorithm= one of its menu labels {list(menu_labels(task))} to run "
                    "one menu entry instead"
                )
        else:
            labels = menu_labels(task)
            if self.algorithm not in labels:
                raise ValueError(f"unknown algorithm {self.algorithm!r} for {task.env_id}; choose one of {list(labels)}")
        self._task = task
        self._ran = False
        self._edges: str | None = None

    def act(self, observation: Any, info: Mapping[str, Any]) -> dict[str, Any]:
        """Run the algorithm (first step), then submit its edge list; or submit the working graph at once."""
        if self._task is None:
            raise RuntimeError("AlgorithmAgent.act() called before reset(task)")
        if self.algorithm is not None and not self._ran:
            self._ran = True
            return typed_action(self._task, "run_algorithm", algorithm=self.algorithm)
        if self._edges is None:
            edges = (info.get("result") or {}).get("edges") if self.algorithm is not None else None
            # A refused run (no algorithm budget) leaves no edges: the working graph is submitted instead.
            self._edges = "" if edges is None else edges or "none"
        elif self._edges not in ("", "none"):
            self._edges = _extendable(self._edges, int(np.shape(observation["working_graph"])[0]))
        return typed_action(self._task, "submit", edges=self._edges)
