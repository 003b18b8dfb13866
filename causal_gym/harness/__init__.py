"""The working-graph episode machinery shared by the environments (tools, budgets, record, code tool).

A benchmark env subclasses :class:`ToolEnv` and supplies its data-specific tools; the base class
handles the typed action / JSON tool-call duality, budgets, the last-turn submit, the call record
and scoring on the Meek-completed submitted graph.
"""

from causal_gym.harness.budgets import Budget, Budgets
from causal_gym.harness.record import CallRecord, EpisodeLog
from causal_gym.harness.sandbox import CodeResult, SandboxLimits, run_code
from causal_gym.harness.tool_env import SUBMISSION_SOURCES, ToolEnv, ToolResult
from causal_gym.harness.toolbox import ActionField, Tool, ToolCall, Toolbox, ToolError
from causal_gym.harness.working_graph import (
    RELATIONS,
    format_edge_list,
    parse_edge_list,
    relation_of,
    render_ansi,
    render_rgb,
    set_relation,
)

__all__ = [
    "RELATIONS",
    "SUBMISSION_SOURCES",
    "ActionField",
    "Budget",
    "Budgets",
    "CallRecord",
    "CodeResult",
    "EpisodeLog",
    "SandboxLimits",
    "Tool",
    "ToolCall",
    "ToolEnv",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "format_edge_list",
    "parse_edge_list",
    "relation_of",
    "render_ansi",
    "render_rgb",
    "run_code",
    "set_relation",
]
