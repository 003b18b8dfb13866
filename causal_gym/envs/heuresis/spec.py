"""Heuresis as causal_gym lists it: ids, agents, the reproduce entry point and the report module.

Literals only (see :mod:`causal_gym.envs.benchmark`): importing this module imports nothing of the
benchmark itself.

Ids
---
``Heuresis-{family}-v0`` (unguided: the working graph starts complete) and
``Heuresis-{family}-guided-v0`` (it starts from PC-KCI's output, with PC-KCI's deletion log shown),
for the six families; every keyword of :class:`~causal_gym.envs.heuresis.env.HeuresisEnv` can be
passed to ``gym.make`` (``d``, ``n``, ``split``, ``budgets``, ``reward``, ``seal``, ...). No
``max_episode_steps`` is registered: the env ends every episode itself (turn budget, then one last
turn and at most one retry), so a ``TimeLimit`` wrapper could only cut an episode before its graph
is submitted and scored.

``HeuresisRepair-{family}-v0``: the repair-policy RL task
(:class:`~causal_gym.envs.heuresis.repair.HeuresisRepairEnv`) over the guided env: flat
MultiDiscrete actions (decision, deleted pair, test, conditioning set) with ``action_masks()``;
reward = adjacency-F1 gain over PC-KCI at submission.
"""

from __future__ import annotations

from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry, InspectTask

__all__ = ["FAMILIES", "SPEC", "env_id"]

FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
"""The families, as :data:`causal_gym.envs.heuresis.families.FAMILIES` (literal here so listing imports
nothing heavy; a test checks the two agree)."""

_FAMILY_DATA = {
    "lg": "linear-Gaussian mechanisms",
    "anm": "MLP mechanisms with additive Gaussian noise",
    "hetero": "MLP mechanisms with input-dependent noise",
    "wild": "a per-variable mix of linear, MLP, heteroscedastic, quadratic, abs, Fourier and t3-noise mechanisms",
    "mixed": "a per-variable mix of linear, MLP and heteroscedastic MLP mechanisms",
    "gauntlet": "a per-variable mix of piecewise, sigmoid, heteroscedastic sigmoid, quadratic, abs and Fourier maps",
}


def env_id(family: str, guided: bool) -> str:
    """``Heuresis-{family}[-guided]-v0``."""
    return f"Heuresis-{family}{'-guided' if guided else ''}-v0"


_TABLES = ("Table 2", "Table 3", "Table 4", "Table 6", "Table 11", "Table 13", "Figure 6")
"""What the paper's tables and figures rebuild from episodes of either condition: Table 2 (PC-KCI's
difficulty), 3 and 11 (references and floors) by ``causal-gym reproduce heuresis``; 3, 4, 6, 11, 13
and Figure 6 from agents' run stores by ``causal-gym report``; guided runs add Table 8."""

_GUIDED_TABLES = (*_TABLES[:4], "Table 8", *_TABLES[4:])

_ENV = "causal_gym.envs.heuresis.env:HeuresisEnv"
_REPAIR = "causal_gym.envs.heuresis.repair:HeuresisRepairEnv"

SPEC = BenchmarkSpec(
    name="heuresis",
    title="Heuresis",
    paper="the Heuresis paper",
    envs=tuple(
        EnvEntry(
            env_id(family, guided),
            _ENV,
            f"Heuresis {'guided (start: PC-KCI output + deletion log)' if guided else 'unguided (start: complete graph)'}"
            f" -- {_FAMILY_DATA[family]}",
            {"family": family, "guided": guided},
            takes_seal=True,
            small_kwargs={"d": 4, "n": 60},
            reproduces=_GUIDED_TABLES if guided else _TABLES,
        )
        for guided in (False, True)
        for family in FAMILIES
    ) + tuple(
        EnvEntry(
            f"HeuresisRepair-{family}-v0",
            _REPAIR,
            f"Heuresis repair policy (RL) -- {family}: choose which of PC-KCI's deletions to re-test and restore; "
            "reward: adjacency-F1 gain over PC-KCI",
            {"family": family},
            takes_seal=True,
            small_kwargs={"d": 4, "n": 60},
        )
        for family in FAMILIES
    ),
    agents={
        "router": AgentEntry(
            "causal_gym.envs.heuresis.router:RouterAgent",
            "the Heuresis Appendix-E router, through the tools (guided only, seeded)",
            takes_seed=True,
        ),
        "pc-kci": AgentEntry(
            "causal_gym.envs.heuresis.baselines:AlgorithmAgent", "submits the guided start, PC-KCI's output (guided only)"
        ),
        "algorithm": AgentEntry(
            "causal_gym.envs.heuresis.baselines:AlgorithmAgent",
            "runs menu entry algorithm='A'..'G' and submits its output (without it: as pc-kci)",
        ),
    },
    reproduce="causal_gym.envs.heuresis.reproduce:main",
    report="causal_gym.envs.heuresis.report",
    inspect_tasks=(
        InspectTask(
            "heuresis",
            "Heuresis repair episodes of one mechanism ``family`` (``Heuresis-<family>[-guided]-v0``).",
            {"family": "wild", "guided": False},
            {(family, guided): env_id(family, guided) for family in FAMILIES for guided in (False, True)},
            agent_options=("prompt_level", "stated_target"),
        ),
    ),
)
"""The Heuresis benchmark."""
