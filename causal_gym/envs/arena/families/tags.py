"""The tag tables of A.1 (mechanisms, roots, noises, couplings) and the mixing-count rules."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from causal_gym._validation import check_choice, check_count

MECHANISM_TAGS: tuple[str, ...] = (
    "linear_additive",
    "polynomial_power",
    "multiplicative",
    "linear_interaction",
    "rational_ratio",
    "exp_log",
    "trig_periodic",
    "piecewise_threshold",
    "saturation_clip",
    "mixture_regime",
    "neural_random",
    "rff_gp",
    "activation_additive",
    "tree_based",
    "discrete_assignment",
    "aggregation_nonlinear",
)
"""The 16 mechanism tags of the paper's analyses (Table 12), in A.1's order."""

MECHANISM_FORMS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "linear_additive": ("linear",),
    "polynomial_power": ("arena_polynomial",),
    "multiplicative": ("arena_product", "arena_function_product"),
    "linear_interaction": ("arena_interaction",),
    "rational_ratio": ("arena_rational",),
    "exp_log": ("arena_explog",),
    "trig_periodic": ("arena_periodic",),
    "piecewise_threshold": ("arena_threshold",),
    "saturation_clip": ("arena_saturation",),
    "mixture_regime": ("arena_regime",),
    "neural_random": ("mlp",),
    "rff_gp": ("arena_rff",),
    "activation_additive": ("arena_activation",),
    "tree_based": ("arena_tree",),
    "discrete_assignment": ("arena_discretize",),
    "aggregation_nonlinear": ("arena_aggregate",),
})
"""Registered mechanism form(s) of every tag; a node of a two-form tag picks one uniformly."""

FORM_AMPLITUDE: Mapping[str, tuple[float, float]] = MappingProxyType({
    "arena_function_product": (0.4, 1.6),
    "arena_rff": (0.4, 2.5),
})
"""Forms with a paper output scale, drawn uniformly into the node's ``amplitude`` (else 1)."""

ROOT_FAMILIES: tuple[str, ...] = (
    "uniform",
    "gaussian",
    "truncated_gaussian",
    "lognormal",
    "gamma",
    "scaled_beta",
    "exponential",
    "gumbel",
    "bernoulli",
    "poisson",
    "ordinal",
    "mixture_gaussian",
    "multinomial",
    "zipf",
)
"""The 14 root distributions of A.1; root family ``x`` is the noise family ``arena_root_x``."""

NOISE_TAGS: tuple[str, ...] = (
    "gaussian",
    "uniform",
    "laplace",
    "student_t",
    "mult_lognormal",
    "heteroskedastic",
    "rff_heteroskedastic",
    "target_r2_gaussian",
    "mixture_outlier",
    "quantized",
    "censored",
    "beta",
    "exponential",
    "gumbel",
    "none",
)
"""The 15 structural-noise tags of A.1 (Table 13 plus the no-noise option)."""

COUPLINGS: tuple[str, ...] = (
    "additive", "multiplicative", "heteroskedastic", "rff_heteroskedastic", "quantized", "censored"
)
"""How a node's noise draw enters its value (see :func:`couple`)."""


def mixing_count_range(d: int) -> tuple[int, int]:
    """Active mechanism (and, separately, noise) families of a ``d``-variable SCM (A.1).

    2-4 at ``d = 10``, 3-5 at 20, 4-6 at 30, 5-8 at 50, 6-10 at 100; other ``d`` use the row of
    the next listed dimension at or above it (100's row beyond).
    """
    d = check_count(d, "d")
    for bound, counts in ((10, (2, 4)), (20, (3, 5)), (30, (4, 6)), (50, (5, 8))):
        if d <= bound:
            return counts
    return (6, 10)


def root_family_count_range(n_roots: int) -> tuple[int, int]:
    """Active root families for ``n_roots`` roots: 1; 1-2 up to 3; 2-4 up to 8; 3-6 beyond (A.1)."""
    r = check_count(n_roots, "n_roots")
    if r == 1:
        return (1, 1)
    if r <= 3:
        return (1, 2)
    if r <= 8:
        return (2, 4)
    return (3, 6)


def root_noise_name(family: str) -> str:
    """Registered noise family of a root distribution (``"gamma"`` -> ``"arena_root_gamma"``)."""
    return "arena_root_" + check_choice(family, ROOT_FAMILIES, "root family")
