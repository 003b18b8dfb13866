"""The Heuresis prompt variants (paper §5.4): prompt levels and stated targets, offered to LLM agents.

The env's task statement is the neutral prompt (level 0). Level ``k`` adds the texts of levels
``1..k``: the scoring statement (and, in the agent, the remaining budgets after each result); a
warning that CI tests and algorithms fail under nonlinear or heteroscedastic mechanisms; PC's
deletion rule. A stated target asks for a CPDAG or a DAG. The wording is ours. The env hands these
to agents as ``TaskSpec.prompts`` (``"level_1"``.. ``"level_3"``, ``"target_cpdag"``,
``"target_dag"``), so the generic LLM agent holds no benchmark's texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["PROMPT_LEVEL_TEXTS", "TARGET_TEXTS", "agent_prompts"]

PROMPT_LEVEL_TEXTS: tuple[str, ...] = (
    "",
    "Scoring: the submitted graph, after completion with Meek's rules, is compared with the true causal graph "
    "by the F1 score of its adjacencies (the main score) and by the normalised structural Hamming distance. "
    "After each result you are told how much of every budget remains.",
    "Caution: the usual algorithms and the Fisher-z test assume linear relations and a constant noise scale. "
    "When mechanisms are nonlinear or the noise scale depends on the causes, a CI test can miss a real "
    "dependence, and algorithms built on such tests then delete true edges.",
    "How PC decides: it deletes the edge between two variables as soon as one CI test, given some subset of "
    "their neighbours, reports independence, and it never reconsiders a deletion; one missed dependence is "
    "enough to lose a true edge.",
)
"""Text added to the system prompt at each prompt level; level ``k`` adds entries ``1..k`` (level 0
is the env's neutral task statement alone)."""

TARGET_TEXTS: Mapping[str, str] = MappingProxyType({
    "none": "",
    "cpdag": "Target: submit the equivalence class (CPDAG) of the true graph: orient an edge only where the data "
    "determine its direction and leave the other edges undirected.",
    "dag": "Target: submit a DAG: give every edge a direction.",
})
"""Text added to the system prompt for each stated target."""


def agent_prompts() -> dict[str, str]:
    """The texts as ``TaskSpec.prompts`` carries them."""
    prompts = {f"level_{k}": text for k, text in enumerate(PROMPT_LEVEL_TEXTS) if k}
    prompts.update({f"target_{name}": text for name, text in TARGET_TEXTS.items() if text})
    return prompts
