"""CausaLab as causal_gym lists it: ids, agents, the reproduce entry point and the report module.

Literals only (see :mod:`causal_gym.envs.benchmark`).

Ids
---
``CausaLab-{3..7}node-v0`` (linear, 2 prior records, 4(n-1) interventions),
``CausaLab-4node-quad-v0`` (hard-quadratic), ``CausaLab-4node-hidden-v0`` (the ``4node-hidden-n1``
setting; ``hidden={"count": 2, "values": (-50, 0, 50), "freqnode": True}`` or
``setting="4node-hidden-freqnode-n2"`` pick another hidden variant),
``CausaLab-{4,6}node-freqparent-v0`` and ``CausaLab-{4,6}node-golden-v0``. Every keyword of
:class:`~causal_gym.envs.causalab.env.CausaLabEnv` can be passed to ``gym.make`` (``setting`` for
any published setting, e.g. the scaling grid ``"4node-3o12i"``). No ``max_episode_steps``: the
env's own step limit truncates and still writes the final info.

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

from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry, InspectTask

__all__ = ["SETTINGS_BY_ID", "PLANNER_SETTINGS_BY_ID", "SPEC"]

SETTINGS_BY_ID: Mapping[str, str] = MappingProxyType({
    **{f"CausaLab-{n}node-v0": f"{n}node" for n in range(3, 8)},
    "CausaLab-4node-quad-v0": "4node-quad",
    "CausaLab-4node-hidden-v0": "4node-hidden-n1",
    **{f"CausaLab-{n}node-{variant}-v0": f"{n}node-{variant}" for variant in ("freqparent", "golden") for n in (4, 6)},
})
"""CausaLab id -> its default setting (a key of :data:`causal_gym.envs.causalab.suites.SETTINGS`,
literal here so listing imports nothing; a test checks they exist)."""

PLANNER_SETTINGS_BY_ID: Mapping[str, str] = MappingProxyType(
    {f"CausaLab-planner-{n}node-v0": f"{n}node" for n in (3, 4, 5)}
)
"""CausaLab planner id -> its default setting."""

_TEXT = {
    **{f"{n}node": f"{n} nodes, linear equations, shift interventions on a manipulator crystal" for n in range(3, 8)},
    "4node-quad": "4 nodes, hard-quadratic equations",
    "4node-hidden-n1": "4 nodes, a hidden disturbance on the manipulator (default: one affected node, h in {-5, 0, 5})",
    "4node-freqparent": "4 nodes, the frequency may cause other properties",
    "6node-freqparent": "6 nodes, the frequency may cause other properties",
    "4node-golden": "4 nodes, an offline Golden intervention chain instead of online interventions",
    "6node-golden": "6 nodes, an offline Golden intervention chain instead of online interventions",
}

_REPRODUCES = {f"{n}node": ("Table 7",) for n in range(3, 8)}
"""The settings whose rows the paper's Table 7 prints (its GPT-5-mini agent; our scripted baselines and
any agent's run store give the same columns); the variants' suites are the paper's, their tables ours."""

SPEC = BenchmarkSpec(
    name="causalab",
    title="CausaLab",
    paper="the CausaLab paper and its released suites",
    envs=tuple(
        EnvEntry(env_id, "causal_gym.envs.causalab.env:CausaLabEnv", f"CausaLab -- {_TEXT[setting]}",
                 {"setting": setting}, takes_seal=True, reproduces=_REPRODUCES.get(setting, ()))
        for env_id, setting in SETTINGS_BY_ID.items()
    ) + tuple(
        EnvEntry(
            env_id,
            "causal_gym.envs.causalab.planner:CausaLabPlannerEnv",
            f"CausaLab planner (RL) -- {setting[0]} nodes: choose the shift interventions; a fixed least-squares "
            "estimator infers the graph; reward: its all-edge F1",
            {"setting": setting},
            vector_entry_point="causal_gym.envs.causalab.planner_vector:CausaLabPlannerVectorEnv",
            takes_seal=True,
        )
        for env_id, setting in PLANNER_SETTINGS_BY_ID.items()
    ),
    agents={
        "causalab-observe": AgentEntry(
            "causal_gym.envs.causalab.baselines:ObservationRegressionAgent",
            "CausaLab: least-squares frequency fit on the records given at the start, then predict",
        ),
        "causalab-random": AgentEntry(
            "causal_gym.envs.causalab.baselines:RandomInterventionAgent",
            "CausaLab: random interventions with the whole budget, then a least-squares fit (seeded)",
            takes_seed=True,
        ),
        "causalab-systematic": AgentEntry(
            "causal_gym.envs.causalab.baselines:SystematicExperimenter",
            "CausaLab: shift every property once, solve for the direct effects, verify, predict",
        ),
    },
    reproduce="causal_gym.envs.causalab.reproduce:main",
    report="causal_gym.envs.causalab.report",
    inspect_tasks=(
        InspectTask(
            "causalab",
            "CausaLab crystal-laboratory episodes of one ``setting`` (``CausaLab-<setting>-v0``).",
            {"setting": "4node"},
            {(setting,): env_id for env_id, setting in SETTINGS_BY_ID.items()},
        ),
    ),
)
"""The CausaLab benchmark."""
