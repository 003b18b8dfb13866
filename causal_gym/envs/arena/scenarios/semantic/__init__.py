"""Semantic operational scenario cards: named variables of running processes with edge rationales.

Each card (format: :mod:`causal_gym.envs.arena.grounded`) describes one operational process --
a production shift, an emergency-department shift, a day of an online shop -- whose variables
are settings a manager can change (``input`` with an intervention meaning), exogenous
conditions (``input`` without one), process steps with their own randomness (``process``),
accounting identities (``formula``: Little's law, funnel identities, balances) and terminal
measurements (``readout``). Process mechanisms are simple monotone expressions of the parents
(saturating, exponential or power responses) with additive noise for signed quantities and
multiplicative noise for positive ones; the noise family varies (Gaussian, Laplace, Student-t).
Every edge carries the operational reason why changing the parent moves the child.
"""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec
from causal_gym.envs.arena.scenarios.semantic import (
    cybersecurity,
    education,
    finance,
    government,
    healthcare,
    housing,
    manufacturing,
    operations,
    public_health,
    transportation,
    water,
)

__all__ = ["SEMANTIC_SCENARIOS"]

_FIRST_RELEASE = (
    manufacturing.INJECTION_MOLDING,
    healthcare.EMERGENCY_DEPARTMENT,
    operations.ONLINE_SHOP,
    operations.DISTRIBUTION_FEEDER,
    operations.IRRIGATED_MAIZE,
    operations.FULFILMENT_CENTRE,
)

_LIBRARY = tuple(
    getattr(module, name)
    for module in (cybersecurity, education, finance, government, housing, public_health, transportation, water)
    for name in module.__all__
)
"""The second release: three cards in each of the paper's operational domains that the first lacked."""

SEMANTIC_SCENARIOS: dict[str, ScenarioSpec] = {spec["name"]: spec for spec in _FIRST_RELEASE + _LIBRARY}
"""The semantic operational cards by name, the first release's 6 first (their instance indices are kept),
then the second release, module by module in the order of each module's ``__all__``."""
