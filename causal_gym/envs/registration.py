"""Every causal_gym environment id, registered with Gymnasium by :func:`register_envs`.

``import causal_gym`` calls :func:`register_envs`, so ``gym.make("Heuresis-wild-v0")`` works after
the import and ``gym.make("causal_gym:Heuresis-wild-v0")`` works in a fresh interpreter (Gymnasium
imports the module named before the colon). Entry points are strings, so registering imports no
environment module: the first ``gym.make`` of an id loads it.

Heuresis ids
------------
``Heuresis-{family}-v0`` (unguided: the working graph starts complete) and
``Heuresis-{family}-guided-v0`` (it starts from PC-KCI's output, with PC-KCI's deletion log
shown), for the six families. Every keyword of
:class:`~causal_gym.envs.heuresis.env.HeuresisEnv` can be passed to ``gym.make`` (``d``, ``n``,
``split``, ``budgets``, ``reward``, ...). No ``max_episode_steps`` is registered: the env ends
every episode itself (turn budget, then one last turn and at most one retry), so a ``TimeLimit``
wrapper would only be able to cut an episode before its graph is submitted and scored.

CausaLab ids
------------
``CausaLab-{3..7}node-v0`` (linear, 2 prior records, 4(n-1) interventions),
``CausaLab-4node-quad-v0`` (hard-quadratic), ``CausaLab-4node-hidden-v0`` (the ``4node-hidden-n1``
setting; ``hidden={"count": 2, "values": (-50, 0, 50), "freqnode": True}`` or
``setting="4node-hidden-freqnode-n2"`` pick another hidden variant),
``CausaLab-{4,6}node-freqparent-v0`` and ``CausaLab-{4,6}node-golden-v0``. Every keyword of
:class:`~causal_gym.envs.causalab.env.CausaLabEnv` can be passed to ``gym.make`` (``setting`` for
any published setting, e.g. the scaling grid ``"4node-3o12i"``). No ``max_episode_steps``: the
env's own step limit truncates and still writes the final info.

CausalArena ids
---------------
``CausalArena-{synthetic,formula,semantic,real}-v0``: the entry point
:func:`causal_gym.envs.arena.env.make_arena_env` builds the submit-mode env (one step: a directed
adjacency answer) or, with ``mode="tools"``, the working-graph tool env; every keyword of
:class:`~causal_gym.envs.arena.env.CausalArenaEnv` / ``CausalArenaToolEnv`` can be passed
(``d``, ``split``, ``factors``, ``replicate``, ``n_obs``, ``n_int``, ``mode``, ...).

Heuresis repair ids
-------------------
``HeuresisRepair-{family}-v0``: the repair-policy RL task
(:class:`~causal_gym.envs.heuresis.repair.HeuresisRepairEnv`) over the guided env: flat
MultiDiscrete actions (decision, deleted pair, test, conditioning set) with ``action_masks()``;
reward = adjacency-F1 gain over PC-KCI at submission.

CausaLab planner ids
--------------------
``CausaLab-planner-{3,4,5}node-v0``: the intervention-planner RL task
(:class:`~causal_gym.envs.causalab.planner.CausaLabPlannerEnv`) over the linear ``{n}node``
settings; a policy spends the intervention budget (default ``n - 1``, one per property), a fixed
estimator infers the graph. Every keyword of the planner env can be passed to ``gym.make``
(``intervention_budget``, ``value_grid``, ``reward``, ``shaping``, ...). Episodes last exactly the
intervention budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import gymnasium as gym

__all__ = [
    "HEURESIS_FAMILIES",
    "CAUSALAB_SETTINGS",
    "CAUSALAB_PLANNER_SETTINGS",
    "ARENA_SOURCES",
    "ENV_DESCRIPTIONS",
    "register_envs",
]

HEURESIS_FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
"""The Heuresis families, as :data:`causal_gym.envs.heuresis.families.FAMILIES` (kept literal here
so registering imports nothing heavy; a test checks the two agree)."""

_HEURESIS_ENTRY_POINT = "causal_gym.envs.heuresis.env:HeuresisEnv"
_CAUSALAB_ENTRY_POINT = "causal_gym.envs.causalab.env:CausaLabEnv"
_CAUSALAB_PLANNER_ENTRY_POINT = "causal_gym.envs.causalab.planner:CausaLabPlannerEnv"
_HEURESIS_REPAIR_ENTRY_POINT = "causal_gym.envs.heuresis.repair:HeuresisRepairEnv"
_ARENA_ENTRY_POINT = "causal_gym.envs.arena.env:make_arena_env"

ARENA_SOURCES = ("synthetic", "formula", "semantic", "real")
"""As :data:`causal_gym.envs.arena.env.SOURCES` (kept literal so registering imports nothing; a test
checks the two agree)."""

_ARENA_TEXT = {
    "synthetic": "synthetic factor-grid SCMs (1,000-config pool; d=10 by default, kwargs d, factors, split obs/obs+int, "
    "mode submit/tools)",
    "formula": "14 formula-grounded scientific scenarios (12-17 variables, padded to 17)",
    "semantic": "6 semantic operational scenarios (18 named process variables)",
    "real": "the Sachs table (obs only) and semi-synthetic SCMs on 5 bnlearn structures (8-37 variables, padded to 37)",
}

CAUSALAB_SETTINGS: Mapping[str, str] = MappingProxyType({
    **{f"CausaLab-{n}node-v0": f"{n}node" for n in range(3, 8)},
    "CausaLab-4node-quad-v0": "4node-quad",
    "CausaLab-4node-hidden-v0": "4node-hidden-n1",
    **{f"CausaLab-{n}node-{variant}-v0": f"{n}node-{variant}" for variant in ("freqparent", "golden") for n in (4, 6)},
})
"""CausaLab id -> its default setting (a key of :data:`causal_gym.envs.causalab.suites.SETTINGS`,
kept literal here so registering imports nothing; a test checks they exist)."""

CAUSALAB_PLANNER_SETTINGS: Mapping[str, str] = MappingProxyType(
    {f"CausaLab-planner-{n}node-v0": f"{n}node" for n in (3, 4, 5)}
)
"""CausaLab planner id -> its default setting (a key of :data:`causal_gym.envs.causalab.suites.SETTINGS`)."""

_CAUSALAB_TEXT = {
    **{f"{n}node": f"{n} nodes, linear equations, shift interventions on a manipulator crystal" for n in range(3, 8)},
    "4node-quad": "4 nodes, hard-quadratic equations",
    "4node-hidden-n1": "4 nodes, a hidden disturbance on the manipulator (default: one affected node, h in {-5, 0, 5})",
    "4node-freqparent": "4 nodes, the frequency may cause other properties",
    "6node-freqparent": "6 nodes, the frequency may cause other properties",
    "4node-golden": "4 nodes, an offline Golden intervention chain instead of online interventions",
    "6node-golden": "6 nodes, an offline Golden intervention chain instead of online interventions",
}

_FAMILY_DATA = {
    "lg": "linear-Gaussian mechanisms",
    "anm": "MLP mechanisms with additive Gaussian noise",
    "hetero": "MLP mechanisms with input-dependent noise",
    "wild": "a per-variable mix of linear, MLP, heteroscedastic, quadratic, abs, Fourier and t3-noise mechanisms",
    "mixed": "a per-variable mix of linear, MLP and heteroscedastic MLP mechanisms",
    "gauntlet": "a per-variable mix of piecewise, sigmoid, heteroscedastic sigmoid, quadratic, abs and Fourier maps",
}


def _heuresis_id(family: str, guided: bool) -> str:
    return f"Heuresis-{family}{'-guided' if guided else ''}-v0"


ENV_DESCRIPTIONS: Mapping[str, str] = MappingProxyType({
    _heuresis_id(family, guided): (
        f"Heuresis {'guided (start: PC-KCI output + deletion log)' if guided else 'unguided (start: complete graph)'}"
        f" -- {_FAMILY_DATA[family]}"
    )
    for guided in (False, True)
    for family in HEURESIS_FAMILIES
} | {
    env_id: f"CausaLab -- {_CAUSALAB_TEXT[setting]}"
    for env_id, setting in CAUSALAB_SETTINGS.items()
} | {
    f"HeuresisRepair-{family}-v0": f"Heuresis repair policy (RL) -- {family}: choose which of PC-KCI's deletions to "
    "re-test and restore; reward: adjacency-F1 gain over PC-KCI"
    for family in HEURESIS_FAMILIES
} | {
    env_id: f"CausaLab planner (RL) -- {setting[0]} nodes: choose the shift interventions; a fixed "
    "least-squares estimator infers the graph; reward: its all-edge F1"
    for env_id, setting in CAUSALAB_PLANNER_SETTINGS.items()
} | {
    f"CausalArena-{source}-v0": f"CausalArena -- {_ARENA_TEXT[source]}" for source in ARENA_SOURCES
})
"""Registered id -> one-line description (what ``causal-gym list`` prints)."""


def register_envs() -> None:
    """Register every id of :data:`ENV_DESCRIPTIONS` with Gymnasium; ids already registered are kept.

    Idempotent: calling it again (or importing ``causal_gym`` twice) changes nothing.
    """
    for guided in (False, True):
        for family in HEURESIS_FAMILIES:
            env_id = _heuresis_id(family, guided)
            if env_id not in gym.registry:
                gym.register(
                    env_id,
                    entry_point=_HEURESIS_ENTRY_POINT,
                    kwargs={"family": family, "guided": guided},
                    max_episode_steps=None,
                )
    for env_id, setting in CAUSALAB_SETTINGS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=_CAUSALAB_ENTRY_POINT, kwargs={"setting": setting}, max_episode_steps=None)
    for source in ARENA_SOURCES:
        env_id = f"CausalArena-{source}-v0"
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=_ARENA_ENTRY_POINT, kwargs={"source": source}, max_episode_steps=None)
    for family in HEURESIS_FAMILIES:
        env_id = f"HeuresisRepair-{family}-v0"
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=_HEURESIS_REPAIR_ENTRY_POINT, kwargs={"family": family}, max_episode_steps=None)
    for env_id, setting in CAUSALAB_PLANNER_SETTINGS.items():
        if env_id not in gym.registry:
            gym.register(
                env_id, entry_point=_CAUSALAB_PLANNER_ENTRY_POINT, kwargs={"setting": setting}, max_episode_steps=None
            )
