"""CausalArena as causal_gym lists it: ids, agents, the reproduce entry point and the report module.

Literals only (see :mod:`causal_gym.envs.benchmark`).

Ids
---
``CausalArena-{synthetic,formula,semantic,real}-v0``: the entry point
:func:`causal_gym.envs.arena.env.make_arena_env` builds the submit-mode env (one step: a directed
adjacency answer); every keyword of :class:`~causal_gym.envs.arena.env.CausalArenaEnv` can be
passed (``d``, ``split``, ``factors``, ``replicate``, ``n_obs``, ``n_int``, ``seal``, ...).
``mode="tools"`` there is deprecated (it warns and builds the tool env).

``CausalArena-{synthetic,formula,semantic,real}-tools-v0``: the working-graph tool env
:class:`~causal_gym.envs.arena.tool_env.CausalArenaToolEnv`, with the same keywords plus its own
(``budgets``, ``menu``, ``start``, ...).
"""

from __future__ import annotations

from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry, InspectTask

__all__ = ["SOURCES", "SPEC"]

SOURCES = ("synthetic", "formula", "semantic", "real")
"""As :data:`causal_gym.envs.arena.catalogue.SOURCES` (literal here so listing imports nothing; a test
checks the two agree)."""

# The counts and variable ranges are the catalogues' (tests/test_readme.py recomputes them).
_TEXT = {
    "synthetic": "synthetic factor-grid SCMs (1,000-config pool; d=10 by default, kwargs d, factors, split obs/obs+int)",
    "formula": "30 formula-grounded scientific scenarios (16-25 variables, padded to 25)",
    "semantic": "30 semantic operational scenarios (17-20 named process variables, padded to 20)",
    "real": "the Sachs table (obs only) and semi-synthetic SCMs on 5 bnlearn structures (8-37 variables, padded to 37)",
}

_SMALL = {source: {"n_obs": 80} for source in SOURCES} | {"semantic": {"split": "obs+int", "n_obs": 80, "n_int": 30}}
# the semantic scenarios play with interventions: the conformance suite's small setting keeps some

_REPRODUCES = {
    "synthetic": ("Table 2", "Table 4", "Table 7", "Table 8", "Table 9", "Table 10", "Table 11", "Table 18",
                  "Figure 8", "Figure 15", "Figure 19"),
    "formula": ("Table 2",),
    "semantic": ("Table 2",),
}
"""What ``causal-gym reproduce arena`` rebuilds from the submit-mode ids' episodes (its docstring says which
option plays which table); the real source has no per-method cells in the paper, and tool mode is ours."""

SPEC = BenchmarkSpec(
    name="arena",
    title="CausalArena",
    paper="the CausalArena paper",
    envs=tuple(
        EnvEntry(f"CausalArena-{source}-v0", "causal_gym.envs.arena.env:make_arena_env",
                 f"CausalArena -- {_TEXT[source]}", {"source": source}, takes_seal=True,
                 small_kwargs=_SMALL[source], reproduces=_REPRODUCES.get(source, ()))
        for source in SOURCES
    ) + tuple(
        EnvEntry(f"CausalArena-{source}-tools-v0", "causal_gym.envs.arena.tool_env:CausalArenaToolEnv",
                 f"CausalArena tool mode (working graph, evidence tools) -- {_TEXT[source]}",
                 {"source": source}, takes_seal=True, small_kwargs=_SMALL[source])
        for source in SOURCES
    ),
    agents={
        "arena-method": AgentEntry(
            "causal_gym.envs.arena.baselines:MethodAgent",
            "CausalArena submit mode: a discovery method answers (method='pc'|'gies_fast'|...|'package.module:function')",
            method_arguments=("method",),
        ),
    },
    reproduce="causal_gym.envs.arena.reproduce:main",
    reproduce_takes_runner=True,
    report="causal_gym.envs.arena.report",
    inspect_tasks=(
        InspectTask(
            "causal_arena",
            "CausalArena episodes of one SCM ``source`` in tool mode (``CausalArena-<source>-tools-v0``).",
            {"source": "synthetic"},
            {(source,): f"CausalArena-{source}-tools-v0" for source in SOURCES},
            agent_options=("prompt_level",),
        ),
    ),
)
"""The CausalArena benchmark."""
