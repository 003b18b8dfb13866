"""The tool machinery shared by the environments: tools, budgets, record, evidence tools, code tool.

:class:`ToolEnv` is the step protocol of every tool env (typed action / JSON tool-call duality,
dispatch, budgets, the call record, action masks); :class:`WorkingGraphEnv` adds the working-graph
episode of Heuresis and CausalArena's tool mode (``set_edge``, the last-turn submit, scoring on
the Meek-completed submitted graph), whose data tools are :mod:`causal_gym.harness.data_tools`.
CausaLab subclasses :class:`ToolEnv` directly.
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
    sandbox_bounds,
    sandbox_in_use,
)
from causal_gym.harness.tool_env import ToolEnv, ToolResult
from causal_gym.harness.toolbox import ActionField, Tool, ToolActionSpace, Toolbox, ToolCall, ToolError
from causal_gym.harness.working_graph import (
    RELATIONS,
    format_edge_list,
    parse_edge_list,
    relation_of,
    render_ansi,
    render_rgb,
    set_relation,
)
from causal_gym.harness.working_graph_env import SUBMISSION_SOURCES, WorkingGraphEnv

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
    "ToolActionSpace",
    "ToolCall",
    "ToolEnv",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "WorkingGraphEnv",
    "check_sandbox_options",
    "format_edge_list",
    "parse_edge_list",
    "relation_of",
    "render_ansi",
    "render_rgb",
    "resolve_sandbox",
    "run_code",
    "sandbox_bounds",
    "sandbox_in_use",
    "set_relation",
]
