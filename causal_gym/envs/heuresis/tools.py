"""What only Heuresis adds to the shared data tools: the text of PC-KCI's deletion log.

The tools themselves (definitions, computations and the env mixin) are benchmark-neutral and live
in :mod:`causal_gym.harness.data_tools`, shared with CausalArena's tool mode. The guided condition
shows the agent PC-KCI's deletions (paper §4.2); :func:`deletion_log_text` is how it reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from causal_gym.harness.data_tools import set_text
from causal_gym.harness.working_graph import variable_name

__all__ = ["deletion_log_text"]


def deletion_log_text(log: Sequence[Any]) -> str:
    """PC-KCI's deletion log as the guided agent sees it: pair, conditioning set, test and grade.

    ``log`` holds :class:`causal_gym.discovery.DeletionRecord` s; their p-values are left out.
    """
    if not log:
        return "PC-KCI deleted no pair."
    lines = [f"PC-KCI deleted {len(log)} pairs (in deletion order):"]
    lines += [
        f"- {variable_name(r.x)}, {variable_name(r.y)}: {r.test} test given {set_text(r.cond)}, evidence: {r.grade}"
        for r in log
    ]
    return "\n".join(lines)
