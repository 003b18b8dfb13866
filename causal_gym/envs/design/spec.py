"""Intervention design as causal_gym lists it: ids and baselines.

Literals only (see :mod:`causal_gym.envs.benchmark`).

Ids
---
- ``InterventionDesign-lg10-v0``: CAASL's setting (Annadani et al. 2024): d = 10 ER graphs with
  expected degree 6 (30 expected edges), linear-Gaussian, 50 observational rows, 10 single-row
  hard interventions.
- ``InterventionDesign-sf10-v0``: the same on scale-free (Barabási–Albert) graphs.
- ``InterventionDesign-gumbel10-v0``: ER graphs with skewed (Gumbel) noise: the Gaussian
  posterior is misspecified.
- ``InterventionDesign-lg12-v0``: d = 12, 12 interventions (the DP costs about 3x d = 10).

Scarce variants, where a fixed sweep is clearly worse than choosing (CAASL's setting above stays
the reference; ``examples/design_baselines.py`` measures greedy - round-robin on each, README):

- ``InterventionDesign-lg10-T3-v0``: ``lg10`` with 3 experiments (fewer than ``d``: which nodes to
  spend them on is the decision).
- ``InterventionDesign-lg10-T5-v0``: ``lg10`` with 5 experiments.
- ``InterventionDesign-lg10-T5-bounded-v0``: 5 experiments with ``|value| <= 2`` (about two
  standard deviations of a variable instead of five): a weak intervention only pays where the data
  leave the direction open.

- ``InterventionDesign-sf10-T3-v0``, ``InterventionDesign-gumbel10-T3-v0``: ``sf10`` and ``gumbel10``
  with 3 experiments: out-of-distribution tests of a policy trained on ``lg10-T3``.

Richer designs and sizes:

- ``InterventionDesign-lg10-B2x2-v0``: 2 experiments, each a batch of 2 designs with a row each
  (``targets_per_step=2``): which nodes go together is the decision, with no feedback within a batch.
- ``InterventionDesign-lg10-B1x3-v0``: 1 experiment, a batch of 3 designs with a row each: the whole
  design chosen at once, with no feedback at all.
- ``InterventionDesign-lg10-T5-costs-v0``: ``lg10-T5`` where intervening on an odd node costs 2 and on
  an even node 0.5, taken from the reward (``node_costs``; the return is ``net_gain``).
- ``InterventionDesign-lg20-T3-v0``: d = 20, expected degree 4, at most 4 parents per node in the
  instances and in the posterior (exact for that capped prior; about a second per posterior).
- ``InterventionDesign-mixed10-T3-v0``: ``lg10-T3`` with each instance's noise family drawn from the
  four (``noise="mixed"``).

The variants share the instances (graphs, weights, observational rows) of their base id (``lg10``,
``sf10``, ``gumbel10``) instance by instance: the budget and the value bound do not enter the streams.

Every keyword of :class:`~causal_gym.envs.design.env.InterventionDesignEnv` can be passed to
``gym.make``; ``gym.make_vec(id, num_envs, vectorization_mode="vector_entry_point")`` builds the
batched :class:`~causal_gym.envs.design.vector.InterventionDesignVectorEnv`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from causal_gym.envs.benchmark import AgentEntry, BenchmarkSpec, EnvEntry

__all__ = ["SETTINGS_BY_ID", "SPEC"]

SETTINGS_BY_ID: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "InterventionDesign-lg10-v0": {},
    "InterventionDesign-sf10-v0": {"graph": "sf"},
    "InterventionDesign-gumbel10-v0": {"noise": "gumbel"},
    "InterventionDesign-lg12-v0": {"d": 12, "expected_degree": 6.0, "budget": 12},
    "InterventionDesign-lg10-T3-v0": {"budget": 3},
    "InterventionDesign-lg10-T5-v0": {"budget": 5},
    "InterventionDesign-lg10-T5-bounded-v0": {"budget": 5, "value_bound": 2.0},
    "InterventionDesign-sf10-T3-v0": {"graph": "sf", "budget": 3},
    "InterventionDesign-gumbel10-T3-v0": {"noise": "gumbel", "budget": 3},
    "InterventionDesign-lg10-B2x2-v0": {"budget": 2, "rows_per_step": 2, "targets_per_step": 2},
    "InterventionDesign-lg10-B1x3-v0": {"budget": 1, "rows_per_step": 3, "targets_per_step": 3},
    "InterventionDesign-lg10-T5-costs-v0": {"budget": 5, "node_costs": (0.5, 2.0) * 5},
    "InterventionDesign-lg20-T3-v0": {"d": 20, "expected_degree": 4.0, "max_parents": 4, "budget": 3},
    "InterventionDesign-mixed10-T3-v0": {"noise": "mixed", "budget": 3},
})
"""Id -> its keyword arguments (the rest are the env's defaults)."""

_TEXT = {
    "InterventionDesign-lg10-v0": "d=10 ER linear-Gaussian, 50 observational rows, 10 do-interventions (CAASL)",
    "InterventionDesign-sf10-v0": "d=10 scale-free linear-Gaussian, 50 observational rows, 10 do-interventions",
    "InterventionDesign-gumbel10-v0": "d=10 ER linear with Gumbel noise (posterior misspecified), 10 do-interventions",
    "InterventionDesign-lg12-v0": "d=12 ER linear-Gaussian, 50 observational rows, 12 do-interventions",
    "InterventionDesign-lg10-T3-v0": "lg10 with 3 do-interventions (fewer than d: the choice matters)",
    "InterventionDesign-lg10-T5-v0": "lg10 with 5 do-interventions (fewer than d: the choice matters)",
    "InterventionDesign-lg10-T5-bounded-v0": "lg10 with 5 do-interventions at |value| <= 2",
    "InterventionDesign-sf10-T3-v0": "sf10 with 3 do-interventions (lg10-T3's scale-free test)",
    "InterventionDesign-gumbel10-T3-v0": "gumbel10 with 3 do-interventions (lg10-T3's misspecified-noise test)",
    "InterventionDesign-lg10-B2x2-v0": "lg10 with 2 batch experiments of 2 designs each (one row per design)",
    "InterventionDesign-lg10-B1x3-v0": "lg10 with 1 batch experiment of 3 designs (one row per design; no feedback)",
    "InterventionDesign-lg10-T5-costs-v0": "lg10 with 5 do-interventions; odd nodes cost 2, even nodes 0.5",
    "InterventionDesign-lg20-T3-v0": "d=20 ER (degree 4, at most 4 parents: the capped exact posterior), 3 do-interventions",
    "InterventionDesign-mixed10-T3-v0": "lg10-T3 with a noise family drawn per instance (Gaussian, Gumbel, Laplace, uniform)",
}

SPEC = BenchmarkSpec(
    name="design",
    title="Intervention design",
    paper="CAASL (Annadani et al., NeurIPS 2024), its task with an exact posterior in place of the amortised one; "
    "no table of it is reproduced (the reward differs)",
    envs=tuple(
        EnvEntry(env_id, "causal_gym.envs.design.env:InterventionDesignEnv",
                 f"Intervention design (RL) -- {_TEXT[env_id]}; reward: exact-posterior gain",
                 dict(kwargs), vector_entry_point="causal_gym.envs.design.vector:InterventionDesignVectorEnv",
                 takes_seal=True, small_kwargs={"d": 4, "expected_degree": 2.0, "n_observational": 20, "budget": 5,
                                                **({"node_costs": (0.5, 2.0) * 2} if "node_costs" in kwargs else {})})
        for env_id, kwargs in SETTINGS_BY_ID.items()
    ),
    agents={
        "design-random": AgentEntry("causal_gym.envs.design.baselines:RandomDesigner",
                                    "Design: a uniformly random target and value each step (seeded)", takes_seed=True),
        "design-round-robin": AgentEntry("causal_gym.envs.design.baselines:RoundRobinDesigner",
                                         "Design: targets 0, 1, ..., d-1 in turn at +-value_bound"),
        "design-observe": AgentEntry("causal_gym.envs.design.baselines:ObservationalDesigner",
                                     "Design: observational rows only (no intervention)"),
        "design-uncertainty": AgentEntry("causal_gym.envs.design.baselines:UncertaintyDesigner",
                                         "Design: the untargeted node whose edges the posterior is least sure of, at +value_bound"),
        "design-uncertainty-cost": AgentEntry("causal_gym.envs.design.baselines:CostAwareUncertaintyDesigner",
                                              "Design: the uncertainty heuristic net of node costs; observes where "
                                              "no node is worth its cost"),
        "design-greedy": AgentEntry("causal_gym.envs.design.baselines:GreedyDesigner",
                                    "Design: one-step lookahead on the expected posterior gain (posterior-predictive samples)",
                                    takes_seed=True),
    },
    report="causal_gym.envs.design.report",
)
"""The intervention-design benchmark."""
