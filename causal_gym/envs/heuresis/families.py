"""The six Heuresis mechanism families (paper §4.1, Table 2, Appendix C), written as data.

A family is a menu of node kinds. Every variable draws one kind uniformly at random,
independently of the other variables (Definition 2 of the paper); a kind fixes the registered
mechanism (:mod:`causal_gym.scm.mechanisms`), its configuration, the noise law and the range of
the noise scale ``sigma ~ U[low, high]``. :func:`recipe_chooser` compiles a family into the
chooser that :meth:`causal_gym.scm.SCM.random` calls once per node.

==========  =================================================================================
family      node kinds (each drawn with equal probability)
==========  =================================================================================
lg          linear
anm         mlp
hetero      mlp_hetero
wild        linear, mlp, mlp_hetero, quadratic*, abs*, fourier*, linear_t3  (* standardised)
mixed       linear, mlp, mlp_hetero
gauntlet    piecewise, sigmoid, sigmoid_hetero, quadratic, abs, fourier
==========  =================================================================================

Noise scales (Appendix C): linear nodes of lg and mixed ``U[0.5, 2]``; MLP nodes and the linear
nodes of wild (Gaussian and t3) ``U[0.5, 1.5]``; the scalar maps of wild ``U[0.15, 0.35]``;
every node of gauntlet ``U[0.15, 0.40]``. Linear weights are ``±U[0.5, 2]``; MLPs have 10 tanh
units; in wild the scalar maps are standardised to unit variance on the SCM's own distribution.

Choices where the paper is silent (each is a value in the tables below, so it can be changed):

- MLP with input-dependent noise: Appendix C states ``eps ~ N(0, 1)`` with the scale carried by
  ``g = softplus(MLP) + 0.2``, so these nodes get ``sigma = 1`` rather than the ``U[0.5, 1.5]``
  of the additive MLP nodes.
- gauntlet's ``U[0.15, 0.40]`` applies to every gauntlet node, including ``eps`` of
  ``sigmoid_hetero`` (whose scale is then ``sigma (softplus(b z) + 0.2)``).
- linear-t3 noise is Student-t with 3 degrees of freedom rescaled to unit variance, times sigma.
- Roots: a root node is its noise. In gauntlet roots are ``N(0, 1)`` (Appendix C). Elsewhere a
  root draws its kind like every other node and takes that kind's noise law and sigma range --
  the reading of "each variable draws its own mechanism" in which the family has no separate
  root rule: lg roots are ``N(0, sigma^2)``, ``sigma ~ U[0.5, 2]``; anm roots ``U[0.5, 1.5]``;
  hetero roots ``N(0, 1)``; a wild root that draws a map gets ``U[0.15, 0.35]`` and one that
  draws linear-t3 is scaled t3. (Columns are standardised afterwards, so a root's own scale
  matters only through its children.)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym._validation import check_choice
from causal_gym.scm import NodeRecipe
from causal_gym.scm.model import RecipeChooser

__all__ = ["FAMILIES", "FAMILY_SPECS", "NODE_KINDS", "family_kinds", "recipe_chooser"]

FAMILIES: tuple[str, ...] = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
"""Family names, in the paper's order (the index is the family id used in instance seeds)."""

_LINEAR_LG = (0.5, 2.0)
_MLP = (0.5, 1.5)
_UNIT = (1.0, 1.0)
_WILD_MAP = (0.15, 0.35)
_GAUNTLET = (0.15, 0.40)


def _kind(mechanism: str, sigma_range: tuple[float, float], noise: str = "gaussian",
          mechanism_config: Mapping[str, Any] | None = None,
          noise_config: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType({
        "mechanism": mechanism,
        "noise": noise,
        "sigma_range": sigma_range,
        "mechanism_config": MappingProxyType(dict(mechanism_config or {})),
        "noise_config": MappingProxyType(dict(noise_config or {})),
    })


_STANDARDISED = {"standardize_map": True}

NODE_KINDS: Mapping[str, Mapping[str, Mapping[str, Any]]] = MappingProxyType({
    "lg": MappingProxyType({"linear": _kind("linear", _LINEAR_LG)}),
    "anm": MappingProxyType({"mlp": _kind("mlp", _MLP)}),
    "hetero": MappingProxyType({"mlp_hetero": _kind("mlp_hetero", _UNIT)}),
    "wild": MappingProxyType({
        "linear": _kind("linear", _MLP),
        "mlp": _kind("mlp", _MLP),
        "mlp_hetero": _kind("mlp_hetero", _UNIT),
        "quadratic": _kind("quadratic", _WILD_MAP, mechanism_config=_STANDARDISED),
        "abs": _kind("abs", _WILD_MAP, mechanism_config=_STANDARDISED),
        "fourier": _kind("fourier", _WILD_MAP, mechanism_config=_STANDARDISED),
        "linear_t3": _kind("linear", _MLP, noise="student_t", noise_config={"df": 3.0}),
    }),
    "mixed": MappingProxyType({
        "linear": _kind("linear", _LINEAR_LG),
        "mlp": _kind("mlp", _MLP),
        "mlp_hetero": _kind("mlp_hetero", _UNIT),
    }),
    "gauntlet": MappingProxyType({
        name: _kind(name, _GAUNTLET)
        for name in ("piecewise", "sigmoid", "sigmoid_hetero", "quadratic", "abs", "fourier")
    }),
})
"""``NODE_KINDS[family][kind]``: mechanism, noise, sigma_range, mechanism_config, noise_config."""

FAMILY_SPECS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    family: MappingProxyType({
        "kinds": NODE_KINDS[family],
        # None: a root draws its kind like any node and is that kind's noise (module docstring).
        "root": _kind("linear", _UNIT) if family == "gauntlet" else None,
    })
    for family in FAMILIES
})
"""``FAMILY_SPECS[family]``: ``{"kinds": NODE_KINDS[family], "root": kind or None}``."""


def family_kinds(family: str) -> tuple[str, ...]:
    """The node kinds a variable of ``family`` draws from, in table order."""
    return tuple(NODE_KINDS[check_choice(family, FAMILIES, "family")])


def _recipe(kind: Mapping[str, Any]) -> NodeRecipe:
    return NodeRecipe(
        mechanism=kind["mechanism"],
        noise=kind["noise"],
        sigma_range=kind["sigma_range"],
        mechanism_config=dict(kind["mechanism_config"]),
        noise_config=dict(kind["noise_config"]),
    )


def recipe_chooser(family: str) -> RecipeChooser:
    """Compile ``family`` into the per-node chooser of :meth:`causal_gym.scm.SCM.random`.

    Every node, roots included, consumes one uniform draw of its kind from the SCM's generator
    (so the kind stream does not depend on the graph's root pattern); a root then uses the
    family's root rule when it has one.

    Examples
    --------
    >>> import numpy as np
    >>> from causal_gym.scm import SCM, erdos_renyi_dag
    >>> scm = SCM.random(erdos_renyi_dag(6, rng=0), recipe_chooser("gauntlet"), rng=1)
    >>> {spec.mechanism for j, spec in enumerate(scm.nodes) if scm.parents(j)} <= set(family_kinds("gauntlet"))
    True
    """
    spec = FAMILY_SPECS[check_choice(family, FAMILIES, "family")]
    recipes = tuple(_recipe(kind) for kind in spec["kinds"].values())
    root = None if spec["root"] is None else _recipe(spec["root"])

    def choose(node: int, n_parents: int, rng: np.random.Generator) -> NodeRecipe:
        recipe = recipes[int(rng.integers(len(recipes)))]
        return root if n_parents == 0 and root is not None else recipe

    return choose
