"""Executable structural causal models: graph priors, mechanism and noise families,
interventions and seeded, vectorised sampling.

>>> from causal_gym.scm import SCM, Shift, barabasi_albert_dag
>>> scm = SCM.random(barabasi_albert_dag(10, rng=0), "linear", rng=1)
>>> scm.sample(600, rng=2, interventions=[Shift(0, delta=1.0)]).shape
(600, 10)

Mechanism and noise families are registries: a benchmark adds its own with
``@register_mechanism("name")`` / ``@register_noise("name")`` (see :mod:`.mechanisms`, :mod:`.noise`).
"""

from __future__ import annotations

from causal_gym.scm.graph_priors import barabasi_albert_dag, erdos_renyi_dag, place_in_order
from causal_gym.scm.interventions import (
    HardDo,
    HiddenDisturbance,
    Intervention,
    ParameterShift,
    Shift,
    Soft,
    intervention_from_dict,
)
from causal_gym.scm.mechanisms import (
    Mechanism,
    combine,
    get_mechanism,
    mechanism_names,
    register_mechanism,
    signed_uniform,
    softplus,
    unit_direction,
)
from causal_gym.scm.model import FORMAT_VERSION, SCM, NodeRecipe, NodeSpec, RecipeChooser
from causal_gym.scm.noise import NoiseFamily, get_noise, noise_names, register_noise
from causal_gym.scm.transforms import standardize

__all__ = [
    "SCM",
    "NodeSpec",
    "NodeRecipe",
    "RecipeChooser",
    "FORMAT_VERSION",
    "erdos_renyi_dag",
    "barabasi_albert_dag",
    "place_in_order",
    "Mechanism",
    "register_mechanism",
    "get_mechanism",
    "mechanism_names",
    "combine",
    "signed_uniform",
    "softplus",
    "unit_direction",
    "NoiseFamily",
    "register_noise",
    "get_noise",
    "noise_names",
    "HardDo",
    "Shift",
    "Soft",
    "ParameterShift",
    "HiddenDisturbance",
    "Intervention",
    "intervention_from_dict",
    "standardize",
]
