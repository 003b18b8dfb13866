"""The working-graph episode machinery shared by the environments (tools, budgets, record, code tool).

A benchmark env subclasses :class:`ToolEnv` and supplies its data-specific tools; the base class
handles the typed action / JSON tool-call duality, budgets, the last-turn submit, the call record
and scoring on the Meek-completed submitted graph.
"""

from causal_gym.harness.budgets import Budget, Budgets
from causal_gym.harness.record import CallRecord, EpisodeLog
from causal_gym.harness.sandbox import (
    SANDBOXES,
    CodeResult,
    SandboxLimits,
    SandboxUnavailable,
    check_sandbox_options,
    resolve_sandbox,
    run_code,
    sandbox_in_use,
)
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
    "SANDBOXES",
    "SUBMISSION_SOURCES",
    "ActionField",
    "Budget",
    "Budgets",
    "CallRecord",
    "CodeResult",
    "EpisodeLog",
    "SandboxLimits",
    "SandboxUnavailable",
    "Tool",
    "ToolCall",
    "ToolEnv",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "check_sandbox_options",
    "format_edge_list",
    "parse_edge_list",
    "relation_of",
    "render_ansi",
    "render_rgb",
    "resolve_sandbox",
    "run_code",
    "sandbox_in_use",
    "set_relation",
]
