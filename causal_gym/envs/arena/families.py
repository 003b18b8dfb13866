"""CausalArena's local families (Appendix A.1), registered in :mod:`causal_gym.scm`.

Importing this module registers (names new to causal_gym carry the ``arena_`` prefix, so the
global registries stay unambiguous; families that are the same thing as a built-in are reused):

- 16 **mechanism tags** realised by 17 generator forms (the two multiplicative forms share a
  tag, as in the paper's analyses). ``linear`` (:class:`~causal_gym.scm.mechanisms.Linear`) and
  ``mlp`` are the built-ins; the other 15 forms are ``arena_*`` mechanisms. Each form is an
  ordinary causal_gym mechanism, ``f(pa) + eps``, usable on its own with ``SCM.random``.
- 14 **root distributions** ``arena_root_*``: noise families (a root's value is its noise) that
  also expose ``quantile(params, u)``, so dependent root blocks can give every root its own
  marginal through a copula.
- 15 **noise tags**: ``gaussian``, ``uniform``, ``laplace`` and ``student_t`` reuse the
  built-in noise families (unit-variance draws times ``scale``, the standard deviation); beta,
  exponential, Gumbel, mixture-outlier and no-noise draws are ``arena_*`` noise families; the
  tags whose noise does not simply add (multiplicative lognormal, heteroskedastic, RFF
  heteroskedastic, quantized, censored; target-R^2 picks its scale from the signal) are
  *couplings* applied by the node wrapper.
- three wrappers: ``arena_node`` (a structural node: standardised inputs, a form, a
  standardised and gain-scaled signal, a noise coupling, optional hidden additive inputs),
  ``arena_root_copula`` (a root of a dependent root block) and ``arena_blend`` (a soft
  intervention, the stressor of A.1).

A structural node computes, with ``z`` its parents standardised on a reference draw (and
guarded to ``[-10, 10]``, :data:`INPUT_GUARD`),

    ``s = gain * amplitude * (f(z) - center) / spread``,   ``X = couple(s, eps) + sum(hidden)``

``center``/``spread`` make the form's output mean 0, variance 1 on the SCM's own observational
distribution, so every form lives on the scale the paper's noise ranges assume and deep graphs
cannot blow up (a degree-4 polynomial of a degree-4 polynomial ...). The paper's pure output
scales become ``amplitude`` (random-function product ``U[0.4, 1.6]``, RFF ``U[0.4, 2.5]``; 1
otherwise); weights scaled by ``0.8 / sqrt(k)`` and additive biases of forms that are affine in
them (linear) are absorbed by the standardisation. ``gain`` is 1, or 0.45 under the weak-signal
stressor, and is what ``ParameterShift`` scales.

Parameter ranges follow A.1 item by item and are the keyword defaults of each
``sample_params``; choices where the paper is silent are stated in each docstring.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_count, check_data, check_range, check_real
from causal_gym.scm import (
    combine,
    get_mechanism,
    get_noise,
    register_mechanism,
    register_noise,
    signed_uniform,
    softplus,
    unit_direction,
)

__all__ = [
    "MECHANISM_TAGS",
    "MECHANISM_FORMS",
    "FORM_AMPLITUDE",
    "ROOT_FAMILIES",
    "NOISE_TAGS",
    "COUPLINGS",
    "ACTIVATIONS",
    "INPUT_GUARD",
    "NoiseChoice",
    "ArenaNode",
    "mixing_count_range",
    "root_family_count_range",
    "root_noise_name",
    "form_config",
    "draw_noise",
    "calibrate_noise",
    "couple",
]

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


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------


def _array(value: object) -> np.ndarray:
    return np.asarray(value, dtype=float)


def _uniform(rng: np.random.Generator, value_range: tuple[float, float], name: str) -> float:
    low, high = check_range(value_range, name)
    return float(rng.uniform(low, high))


def _integer(rng: np.random.Generator, value_range: tuple[int, int], name: str) -> int:
    low, high = (check_count(v, name, minimum=0) for v in value_range)
    if low > high:
        raise ValueError(f"{name} must satisfy low <= high, got {value_range}")
    return int(rng.integers(low, high + 1))


def _n_parents(n_parents: object) -> int:
    return check_count(n_parents, "n_parents", minimum=1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _open_unit(u: np.ndarray) -> np.ndarray:
    """Keep probabilities strictly inside (0, 1) so unbounded quantiles stay finite."""
    return np.clip(u, 1e-15, 1.0 - 1e-15)


def _requires_calibration(params: Mapping[str, Any], key: str, form: str) -> None:
    if key not in params:
        raise ValueError(
            f"{form} parameters are not calibrated: call calibrate(params, reference_parents) first "
            "(SCM.random and the arena generator do this)"
        )


# ---------------------------------------------------------------------------------------------
# mechanism forms: X = f(pa) + eps (z below: the parent columns as given)
# ---------------------------------------------------------------------------------------------


class _Form(ABC):
    """A mechanism form ``f(pa) + eps``; subclasses define ``sample_params`` and ``_f``."""

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        return self._f(params, parents) + noise

    @abstractmethod
    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        """The noiseless map on the ``(n, k)`` parents."""


@register_mechanism("arena_polynomial")
class Polynomial(_Form):
    """Polynomial additive: ``f = sum_i sum_{p <= P} c_ip z_i^p`` with degree ``P ~ U{2, 3, 4}``.

    A.1: quadratic coefficients in [-0.5, 0.5], cubic in [-0.15, 0.15]. Silent, chosen: a linear
    term ``±U[0.5, 2] * 0.8 / sqrt(k)`` (the linear family's weights) and quartic coefficients
    in [-0.05, 0.05]; coefficients above the degree are 0.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        degree_range: tuple[int, int] = (2, 4),
        quadratic_range: tuple[float, float] = (-0.5, 0.5),
        cubic_range: tuple[float, float] = (-0.15, 0.15),
        quartic_range: tuple[float, float] = (-0.05, 0.05),
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        degree = _integer(rng, degree_range, "degree_range")
        if not 2 <= degree <= 4:
            raise ValueError(f"degree_range must lie within [2, 4], got {degree_range}")
        columns = [signed_uniform(rng, (0.5, 2.0), "linear", k) * 0.8 / math.sqrt(k)]
        for power, value_range in ((2, quadratic_range), (3, cubic_range), (4, quartic_range)):
            low, high = check_range(value_range, f"power {power} range")
            columns.append(rng.uniform(low, high, k) if power <= degree else np.zeros(k))
        return {"degree": degree, "coefficients": np.stack(columns, axis=1).tolist()}

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        c = _array(params["coefficients"])
        z2 = z * z
        return combine(z, c[:, 0]) + combine(z2, c[:, 1]) + combine(z2 * z, c[:, 2]) + combine(z2 * z2, c[:, 3])


@register_mechanism("arena_product")
class ParentProduct(_Form):
    """Multiplicative parent product ``f = prod_i (b_i + w_i z_i)``.

    A.1: weights scaled by ``0.8 / sqrt(k)`` (base ``±U[0.5, 2]``, chosen), biases in [-0.4, 0.4].
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, bias_range: tuple[float, float] = (-0.4, 0.4)
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        low, high = check_range(bias_range, "bias_range")
        return {
            "weights": (signed_uniform(rng, (0.5, 2.0), "weights", k) * 0.8 / math.sqrt(k)).tolist(),
            "biases": rng.uniform(low, high, k).tolist(),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        return np.prod(_array(params["biases"]) + z * _array(params["weights"]), axis=1)


_RESPONSES = ("tanh", "sin", "softsign")


def _response(name: str, x: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(x)
    if name == "sin":
        return np.sin(x)
    return x / (1.0 + np.abs(x))


@register_mechanism("arena_function_product")
class FunctionProduct(_Form):
    """Random-function product ``f = prod_i (o_i + h_i(a_i z_i + b_i))``.

    A.1 names transformed parent responses multiplied and rescaled (output scale, see
    :data:`FORM_AMPLITUDE`). Chosen: ``h_i`` uniform among tanh, sin and softsign, slope
    ``a_i ~ ±U[0.5, 2]``, shift ``b_i ~ U[-1, 1]``, offset ``o_i ~ ±U[0.25, 1]`` (so each parent
    also has a main effect, not only an interaction).
    """

    def sample_params(self, rng: np.random.Generator, n_parents: int) -> dict[str, Any]:
        k = _n_parents(n_parents)
        return {
            "responses": [str(_RESPONSES[i]) for i in rng.integers(len(_RESPONSES), size=k)],
            "slopes": signed_uniform(rng, (0.5, 2.0), "slopes", k).tolist(),
            "shifts": rng.uniform(-1.0, 1.0, k).tolist(),
            "offsets": signed_uniform(rng, (0.25, 1.0), "offsets", k).tolist(),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        x = z * _array(params["slopes"]) + _array(params["shifts"])
        out = np.ones(z.shape[0])
        for i, name in enumerate(params["responses"]):
            out = out * (params["offsets"][i] + _response(name, x[:, i]))
        return out


@register_mechanism("arena_interaction")
class Interaction(_Form):
    """Additive interaction: ``f = w^T z + sum_pairs u_ab z_a z_b``.

    A.1: up to three parent pairs, interaction weights scaled by ``0.5 / sqrt(#pairs)``. Chosen:
    ``#pairs ~ U{1 .. min(3, C(k, 2))}`` distinct pairs, base weights ``±U[0.5, 1.5]``; linear
    weights as the linear family; with one parent the single pair is ``(z, z)``.
    """

    def sample_params(self, rng: np.random.Generator, n_parents: int, max_pairs: int = 3) -> dict[str, Any]:
        k = _n_parents(n_parents)
        most = check_count(max_pairs, "max_pairs")
        if k == 1:
            pairs = [[0, 0]]
        else:
            all_pairs = [[a, b] for a in range(k) for b in range(a + 1, k)]
            count = int(rng.integers(1, min(most, len(all_pairs)) + 1))
            pairs = [all_pairs[i] for i in rng.choice(len(all_pairs), size=count, replace=False)]
        scale = 0.5 / math.sqrt(len(pairs))
        return {
            "weights": (signed_uniform(rng, (0.5, 2.0), "weights", k) * 0.8 / math.sqrt(k)).tolist(),
            "pairs": pairs,
            "pair_weights": (signed_uniform(rng, (0.5, 1.5), "pair_weights", len(pairs)) * scale).tolist(),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        pairs = np.asarray(params["pairs"], dtype=np.int64)
        return combine(z, _array(params["weights"])) + combine(z[:, pairs[:, 0]] * z[:, pairs[:, 1]],
                                                               _array(params["pair_weights"]))


@register_mechanism("arena_rational")
class Rational(_Form):
    """Rational/ratio ``f = clip(a u / (delta + |v|), -c, c)``, ``u, v`` two random unit projections.

    A.1: denominator-safe through bounded offsets and clipping. Chosen: offset
    ``delta ~ U[0.5, 1.5]`` (the denominator is at least 0.5), ``a ~ ±U[0.5, 2]``, clip ``c = 5``.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        offset_range: tuple[float, float] = (0.5, 1.5),
        clip: float = 5.0,
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        low, _ = check_range(offset_range, "offset_range", minimum=0.0)
        if low <= 0.0:
            raise ValueError(f"offset_range must be positive to keep denominators away from zero, got {offset_range}")
        return {
            "numerator": unit_direction(rng, k).tolist(),
            "denominator": unit_direction(rng, k).tolist(),
            "offset": _uniform(rng, offset_range, "offset_range"),
            "scale": float(signed_uniform(rng, (0.5, 2.0), "scale", 1)[0]),
            "clip": float(clip),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        denominator = params["offset"] + np.abs(combine(z, _array(params["denominator"])))
        ratio = params["scale"] * combine(z, _array(params["numerator"])) / denominator
        return np.clip(ratio, -params["clip"], params["clip"])


@register_mechanism("arena_explog")
class ExpLog(_Form):
    """Exponential/log on ``s = a u + b`` (``u`` a random unit projection).

    A.1: exponential inputs clipped to [-3, 3], paired with log / signed-log transforms. Chosen:
    two variants, ``exp(clip(s, -3, 3))`` and ``sign(s) log(1 + c |s|)`` with ``c ~ U[1, 5]``;
    ``a ~ U[0.5, 1.5]``, ``b ~ U[-0.5, 0.5]``.
    """

    def sample_params(self, rng: np.random.Generator, n_parents: int) -> dict[str, Any]:
        k = _n_parents(n_parents)
        return {
            "variant": ("exp", "signed_log")[int(rng.integers(2))],
            "direction": unit_direction(rng, k).tolist(),
            "slope": float(rng.uniform(0.5, 1.5)),
            "shift": float(rng.uniform(-0.5, 0.5)),
            "curvature": float(rng.uniform(1.0, 5.0)),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        s = params["slope"] * combine(z, _array(params["direction"])) + params["shift"]
        if params["variant"] == "exp":
            return np.exp(np.clip(s, -3.0, 3.0))
        return np.sign(s) * np.log1p(params["curvature"] * np.abs(s))


@register_mechanism("arena_periodic")
class Periodic(_Form):
    """Trigonometric/periodic ``f = sum_i a_i sin(omega_i z_i + phi_i)``.

    A.1: randomised frequency and phase. Chosen: ``omega_i ~ U[0.5, 3]``, ``phi_i ~ U[0, 2 pi)``,
    ``a_i ~ ±U[0.5, 1.5]``.
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, frequency_range: tuple[float, float] = (0.5, 3.0)
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        low, high = check_range(frequency_range, "frequency_range", minimum=0.0)
        return {
            "amplitudes": signed_uniform(rng, (0.5, 1.5), "amplitudes", k).tolist(),
            "frequencies": rng.uniform(low, high, k).tolist(),
            "phases": rng.uniform(0.0, 2.0 * np.pi, k).tolist(),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        waves = np.sin(z * _array(params["frequencies"]) + _array(params["phases"]))
        return combine(waves, _array(params["amplitudes"]))


@register_mechanism("arena_threshold")
class Threshold(_Form):
    """Piecewise/threshold on a random unit projection ``u``: slope ``s_low`` below the cutoff
    ``c``, slope ``s_high`` and a jump ``o`` above it.

    A.1: cutoffs in [-0.6, 0.6], low slopes [0.2, 1.0], high slopes [1.0, 2.5], offsets
    [-1.5, 1.5]. (The built-in ``piecewise`` has no jump, so this is a new form.)
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        cutoff_range: tuple[float, float] = (-0.6, 0.6),
        low_slope_range: tuple[float, float] = (0.2, 1.0),
        high_slope_range: tuple[float, float] = (1.0, 2.5),
        offset_range: tuple[float, float] = (-1.5, 1.5),
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        return {
            "direction": unit_direction(rng, k).tolist(),
            "cutoff": _uniform(rng, cutoff_range, "cutoff_range"),
            "low_slope": _uniform(rng, low_slope_range, "low_slope_range"),
            "high_slope": _uniform(rng, high_slope_range, "high_slope_range"),
            "offset": _uniform(rng, offset_range, "offset_range"),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        u = combine(z, _array(params["direction"])) - params["cutoff"]
        return np.where(u < 0.0, params["low_slope"] * u, params["high_slope"] * u + params["offset"])


@register_mechanism("arena_saturation")
class Saturation(_Form):
    """Saturation/clipping of ``r u`` (``u`` a random unit projection): ``tanh``, softsign
    ``x / (1 + |x|)`` or the hard clip to [-1, 1], chosen uniformly.

    A.1: response scales ``r`` in [0.8, 2.5].
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, response_range: tuple[float, float] = (0.8, 2.5)
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        return {
            "variant": ("tanh", "softsign", "clip")[int(rng.integers(3))],
            "direction": unit_direction(rng, k).tolist(),
            "response": _uniform(rng, response_range, "response_range"),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        x = params["response"] * combine(z, _array(params["direction"]))
        if params["variant"] == "tanh":
            return np.tanh(x)
        if params["variant"] == "softsign":
            return x / (1.0 + np.abs(x))
        return np.clip(x, -1.0, 1.0)


@register_mechanism("arena_regime")
class Regime(_Form):
    """Mixture/regime switching ``f = (1 - g) u_1 + g alt u_2``, gate ``g = sigmoid(s (u_g - c))``.

    ``u_g, u_1, u_2`` are independent random unit projections. A.1: gate scales ``s`` in [1, 4],
    cutoffs ``c`` in [-0.5, 0.5], alternate response scales ``alt`` in [0.5, 1.8].
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        gate_scale_range: tuple[float, float] = (1.0, 4.0),
        cutoff_range: tuple[float, float] = (-0.5, 0.5),
        alternate_range: tuple[float, float] = (0.5, 1.8),
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        return {
            "gate": unit_direction(rng, k).tolist(),
            "first": unit_direction(rng, k).tolist(),
            "second": unit_direction(rng, k).tolist(),
            "gate_scale": _uniform(rng, gate_scale_range, "gate_scale_range"),
            "cutoff": _uniform(rng, cutoff_range, "cutoff_range"),
            "alternate": _uniform(rng, alternate_range, "alternate_range"),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        g = _sigmoid(params["gate_scale"] * (combine(z, _array(params["gate"])) - params["cutoff"]))
        first, second = combine(z, _array(params["first"])), combine(z, _array(params["second"]))
        return (1.0 - g) * first + g * params["alternate"] * second


def _sample_rff(
    rng: np.random.Generator, k: int, features_range: tuple[int, int], lengthscale_range: tuple[float, float]
) -> dict[str, Any]:
    m = _integer(rng, features_range, "features_range")
    lengthscale = _uniform(rng, lengthscale_range, "lengthscale_range")
    if m < 1 or lengthscale <= 0.0:
        raise ValueError("random features need at least one feature and a positive length scale")
    return {
        "frequencies": rng.normal(0.0, 1.0 / lengthscale, (k, m)).tolist(),
        "phases": rng.uniform(0.0, 2.0 * np.pi, m).tolist(),
        "coefficients": rng.normal(0.0, 1.0, m).tolist(),
        "lengthscale": lengthscale,
    }


def _rff(params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
    phases = _array(params["phases"])
    features = np.cos(combine(z, _array(params["frequencies"])) + phases)
    return math.sqrt(2.0 / phases.size) * combine(features, _array(params["coefficients"]))


@register_mechanism("arena_rff")
class RandomFourier(_Form):
    """RFF/GP-style ``f = sqrt(2 / M) sum_m c_m cos(omega_m^T z + phi_m)`` on all parents jointly.

    ``omega_m ~ N(0, I / l^2)``, ``phi_m ~ U[0, 2 pi)``, ``c_m ~ N(0, 1)``: approximately a GP
    draw with an RBF kernel of length scale ``l``. A.1: 64-256 features, ``l`` in [0.25, 3.0]
    (output scale in [0.4, 2.5]: :data:`FORM_AMPLITUDE`). The built-in ``fourier`` acts on one
    projection of the parents, so this multivariate form is new.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        features_range: tuple[int, int] = (64, 256),
        lengthscale_range: tuple[float, float] = (0.25, 3.0),
    ) -> dict[str, Any]:
        return _sample_rff(rng, _n_parents(n_parents), features_range, lengthscale_range)

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        return _rff(params, z)


ACTIVATIONS: tuple[str, ...] = (
    "relu", "leaky_relu", "softplus", "sigmoid", "abs", "sign", "step", "hard_tanh",
    "relu6", "elu", "selu", "silu", "modulo", "round", "rank",
)
"""The 15 activations of the activation-additive family (A.1)."""

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805
_RANK_KNOTS = 65


def _activation(name: str, x: np.ndarray, params: Mapping[str, Any], i: int) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "leaky_relu":
        return np.where(x > 0.0, x, 0.1 * x)
    if name == "softplus":
        return softplus(x)
    if name == "sigmoid":
        return _sigmoid(x)
    if name == "abs":
        return np.abs(x)
    if name == "sign":
        return np.sign(x)
    if name == "step":
        return (x > 0.0).astype(float)
    if name == "hard_tanh":
        return np.clip(x, -1.0, 1.0)
    if name == "relu6":
        return np.clip(x, 0.0, 6.0)
    if name == "elu":
        return np.where(x > 0.0, x, np.expm1(np.minimum(x, 0.0)))
    if name == "selu":
        return _SELU_SCALE * np.where(x > 0.0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0.0)))
    if name == "silu":
        return x * _sigmoid(x)
    if name == "modulo":
        return np.mod(x, params["period"])
    if name == "round":
        return params["step"] * np.round(x / params["step"])
    knots = _array(params["rank_knots"][i])
    return np.searchsorted(knots, x, side="right") / knots.size


@register_mechanism("arena_activation")
class Activation(_Form):
    """Activation additive ``f = sum_i a_i act(w_i z_i + b_i)``, one activation per node.

    A.1: the 15 activations of :data:`ACTIVATIONS`; modulo periods in [0.75, 3.0], rounding
    steps in [0.2, 1.0]. Chosen: ``w_i ~ U[0.5, 2]``, ``b_i ~ U[-1, 1]``, ``a_i ~ ±U[0.5, 1.5]``,
    leaky-ReLU slope 0.1, ELU alpha 1. ``rank`` is the empirical CDF of ``w_i z_i + b_i`` on the
    reference draw (65 quantile knots stored by ``calibrate``), a per-row map rather than a
    batch statistic, so a row's value never depends on the other rows.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        activation: str | None = None,
        period_range: tuple[float, float] = (0.75, 3.0),
        step_range: tuple[float, float] = (0.2, 1.0),
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        if activation is None:
            name = ACTIVATIONS[int(rng.integers(len(ACTIVATIONS)))]
        else:
            name = check_choice(activation, ACTIVATIONS, "activation")
        params: dict[str, Any] = {
            "activation": name,
            "weights": rng.uniform(0.5, 2.0, k).tolist(),
            "biases": rng.uniform(-1.0, 1.0, k).tolist(),
            "amplitudes": signed_uniform(rng, (0.5, 1.5), "amplitudes", k).tolist(),
        }
        if name == "modulo":
            params["period"] = _uniform(rng, period_range, "period_range")
        if name == "round":
            params["step"] = _uniform(rng, step_range, "step_range")
        return params

    def calibrate(self, params: Mapping[str, Any], parents: np.ndarray) -> dict[str, Any]:
        """Store the rank knots (only for ``rank``; other activations need no constants)."""
        if params["activation"] != "rank":
            return dict(params)
        x = np.asarray(parents, dtype=float) * _array(params["weights"]) + _array(params["biases"])
        levels = np.linspace(0.0, 1.0, _RANK_KNOTS)
        return {**params, "rank_knots": np.quantile(x, levels, axis=0).T.tolist()}

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        name = params["activation"]
        if name == "rank":
            _requires_calibration(params, "rank_knots", "arena_activation (rank)")
        x = z * _array(params["weights"]) + _array(params["biases"])
        columns = np.stack([_activation(name, x[:, i], params, i) for i in range(x.shape[1])], axis=1)
        return combine(columns, _array(params["amplitudes"]))


@register_mechanism("arena_tree")
class Tree(_Form):
    """A shallow regression tree: complete binary tree of depth ``D``, leaf values ``N(0, 1)``.

    A.1: depth 2-4, thresholds in [-0.8, 0.8]. Chosen (``z_feature > threshold`` goes right):
    the tree splits on every parent, since an ignored parent would leave an edge of the graph
    without any effect (unfindable by any method; a failed ``descendants_regenerated`` audit).
    The first ``k`` internal nodes in breadth-first order split on a random permutation of the
    ``k`` parents, the others on parents drawn uniformly. A node's ancestors come before it in
    that order, so each of the first ``k`` nodes splits on a parent no ancestor split on: it is
    reached, and both of its sides are, so its parent moves the output (leaves differ almost
    surely). ``D`` is raised to the smallest depth with ``k`` internal nodes (``k.bit_length()``;
    above 4 only for more than 15 parents). A parent with few distinct values can still fall on
    one side of every threshold.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        depth_range: tuple[int, int] = (2, 4),
        threshold_range: tuple[float, float] = (-0.8, 0.8),
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        depth = _integer(rng, depth_range, "depth_range")
        if depth < 1:
            raise ValueError(f"tree depth must be >= 1, got {depth}")
        depth = max(depth, k.bit_length())
        low, high = check_range(threshold_range, "threshold_range")
        internal = 2**depth - 1
        return {
            "depth": depth,
            "features": [*rng.permutation(k).tolist(), *rng.integers(k, size=internal - k).tolist()],
            "thresholds": rng.uniform(low, high, internal).tolist(),
            "leaves": rng.normal(0.0, 1.0, 2**depth).tolist(),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        features = np.asarray(params["features"], dtype=np.int64)
        thresholds = _array(params["thresholds"])
        node = np.zeros(z.shape[0], dtype=np.int64)
        rows = np.arange(z.shape[0])
        for _ in range(params["depth"]):
            node = 2 * node + 1 + (z[rows, features[node]] > thresholds[node])
        return _array(params["leaves"])[node - (features.size)]


@register_mechanism("arena_discretize")
class Discretize(_Form):
    """Discretisation/assignment into ``B`` bins or clusters, each with a value ``N(0, 1)``.

    A.1: 3-7 bins or clusters. Chosen: ``bins`` cut a random unit projection at quantiles of the
    reference draw whose levels are cumulative ``Dirichlet(2, ..., 2)`` shares (so no bin is
    almost empty; the cuts are stored by ``calibrate``); ``clusters`` assign each row to the
    nearest of ``B`` centroids drawn ``N(0, I)``.
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, count_range: tuple[int, int] = (3, 7)
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        count = _integer(rng, count_range, "count_range")
        if count < 2:
            raise ValueError(f"discretisation needs at least 2 bins, got {count}")
        params: dict[str, Any] = {
            "variant": ("bins", "clusters")[int(rng.integers(2))],
            "values": rng.normal(0.0, 1.0, count).tolist(),
        }
        if params["variant"] == "bins":
            params["direction"] = unit_direction(rng, k).tolist()
            params["levels"] = np.cumsum(rng.dirichlet(np.full(count, 2.0)))[:-1].tolist()
        else:
            params["centroids"] = rng.normal(0.0, 1.0, (count, k)).tolist()
        return params

    def calibrate(self, params: Mapping[str, Any], parents: np.ndarray) -> dict[str, Any]:
        """Store the bin cuts as reference quantiles of the projection (``bins`` only)."""
        if params["variant"] != "bins":
            return dict(params)
        u = combine(np.asarray(parents, dtype=float), _array(params["direction"]))
        return {**params, "cuts": np.quantile(u, params["levels"]).tolist()}

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        values = _array(params["values"])
        if params["variant"] == "bins":
            _requires_calibration(params, "cuts", "arena_discretize (bins)")
            projected = combine(z, _array(params["direction"]))
            return values[np.searchsorted(_array(params["cuts"]), projected, side="right")]
        centroids = _array(params["centroids"])
        distance = (z * z).sum(axis=1)[:, None] - 2.0 * combine(z, centroids.T) + (centroids * centroids).sum(axis=1)
        return values[np.argmin(distance, axis=1)]


@register_mechanism("arena_aggregate")
class Aggregate(_Form):
    """Aggregation nonlinearity over ``x_i = w_i z_i + b_i``: ``max_i x_i`` or
    ``T log sum_i exp(x_i / T)``.

    A.1: temperatures ``T`` in [0.3, 1.5]. Chosen: ``w_i ~ ±U[0.5, 2]``, ``b_i ~ U[-0.5, 0.5]``.
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, temperature_range: tuple[float, float] = (0.3, 1.5)
    ) -> dict[str, Any]:
        k = _n_parents(n_parents)
        return {
            "variant": ("max", "logsumexp")[int(rng.integers(2))],
            "weights": signed_uniform(rng, (0.5, 2.0), "weights", k).tolist(),
            "biases": rng.uniform(-0.5, 0.5, k).tolist(),
            "temperature": _uniform(rng, temperature_range, "temperature_range"),
        }

    def _f(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        x = z * _array(params["weights"]) + _array(params["biases"])
        if params["variant"] == "max":
            return x.max(axis=1)
        t = params["temperature"]
        top = x.max(axis=1)
        return top + t * np.log(np.exp((x - top[:, None]) / t).sum(axis=1))


def form_config(form: str, rng: np.random.Generator, n_parents: int) -> dict[str, Any]:
    """Keyword config a node passes to a form's ``sample_params`` (A.1 ranges of the built-ins).

    ``mlp``: 3-8 hidden units (A.1 "Random neural"); ``linear``: weights ``±U[0.5, 2]`` scaled
    by ``0.8 / sqrt(k)`` (A.1 "Linear additive"); the arena forms carry their ranges as defaults.
    """
    k = _n_parents(n_parents)
    if form == "mlp":
        return {"hidden_units": int(rng.integers(3, 9))}
    if form == "linear":
        scale = 0.8 / math.sqrt(k)
        return {"weight_range": (0.5 * scale, 2.0 * scale)}
    return {}


# ---------------------------------------------------------------------------------------------
# root distributions: noise families with a quantile function
# ---------------------------------------------------------------------------------------------


class _Root(ABC):
    """A root distribution: ``sample`` draws ``quantile(params, U)`` for uniform ``U``.

    ``sample_params(rng)`` draws the A.1 parameters (root families take no noise scale, so they
    are built by the arena generator rather than through ``NodeRecipe``).
    """

    @abstractmethod
    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        """Draw the distribution's parameters."""

    @abstractmethod
    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        """Inverse CDF at probabilities ``u`` in (0, 1)."""

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return self.quantile(params, _open_unit(rng.random(n)))


def _discrete_quantile(probabilities: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Index ``k`` of the first cumulative probability >= ``u`` (values 0 .. len - 1)."""
    cumulative = np.cumsum(probabilities)
    return np.minimum(np.searchsorted(cumulative, u, side="left"), probabilities.size - 1)


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()


@register_noise("arena_root_uniform")
class RootUniform(_Root):
    """``U[low, high]``, low in [-2, 0], high in [0.5, 3] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"low": float(rng.uniform(-2.0, 0.0)), "high": float(rng.uniform(0.5, 3.0))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        return params["low"] + (params["high"] - params["low"]) * u


@register_noise("arena_root_gaussian")
class RootGaussian(_Root):
    """``N(mu, sd^2)``, ``mu ~ N(0, 1)``, ``sd ~ U[0.5, 2]`` (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"mean": float(rng.normal()), "sd": float(rng.uniform(0.5, 2.0))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import ndtri

        return params["mean"] + params["sd"] * ndtri(u)


@register_noise("arena_root_truncated_gaussian")
class RootTruncatedGaussian(_Root):
    """``N(mu, sd^2)`` clipped to ``mu ± 2.5 sd``; ``mu ~ N(0, 0.8^2)``, ``sd ~ U[0.4, 1.4]`` (A.1).

    The paper clips rather than truncates, so 1.2% of the mass sits on the two boundaries.
    """

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"mean": float(rng.normal(0.0, 0.8)), "sd": float(rng.uniform(0.4, 1.4))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import ndtri

        return params["mean"] + params["sd"] * np.clip(ndtri(u), -2.5, 2.5)


@register_noise("arena_root_lognormal")
class RootLognormal(_Root):
    """``exp(N(m, s^2))``, log mean ``m`` in [-0.3, 0.7], log sd ``s`` in [0.25, 0.9] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"log_mean": float(rng.uniform(-0.3, 0.7)), "log_sd": float(rng.uniform(0.25, 0.9))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import ndtri

        return np.exp(params["log_mean"] + params["log_sd"] * ndtri(u))


@register_noise("arena_root_gamma")
class RootGamma(_Root):
    """Gamma with concentration in [1, 5] and rate in [0.5, 2] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"concentration": float(rng.uniform(1.0, 5.0)), "rate": float(rng.uniform(0.5, 2.0))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import gammaincinv

        return gammaincinv(params["concentration"], u) / params["rate"]


@register_noise("arena_root_scaled_beta")
class RootScaledBeta(_Root):
    """``low + (high - low) Beta(a, b)``: shapes in [0.8, 5], low in [-1, 0], high in [0.8, 3] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {
            "a": float(rng.uniform(0.8, 5.0)),
            "b": float(rng.uniform(0.8, 5.0)),
            "low": float(rng.uniform(-1.0, 0.0)),
            "high": float(rng.uniform(0.8, 3.0)),
        }

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import betaincinv

        return params["low"] + (params["high"] - params["low"]) * betaincinv(params["a"], params["b"], u)


@register_noise("arena_root_exponential")
class RootExponential(_Root):
    """Exponential with rate in [0.4, 2.5] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"rate": float(rng.uniform(0.4, 2.5))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        return -np.log1p(-u) / params["rate"]


@register_noise("arena_root_gumbel")
class RootGumbel(_Root):
    """Gumbel (maximum) with location in [-1, 1] and scale in [0.3, 1.8] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"location": float(rng.uniform(-1.0, 1.0)), "scale": float(rng.uniform(0.3, 1.8))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        return params["location"] - params["scale"] * np.log(-np.log(u))


@register_noise("arena_root_bernoulli")
class RootBernoulli(_Root):
    """Bernoulli (values 0/1) with probability in [0.15, 0.85] (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"p": float(rng.uniform(0.15, 0.85))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        return (u > 1.0 - params["p"]).astype(float)


@register_noise("arena_root_poisson")
class RootPoisson(_Root):
    """Poisson with rate in [1, 12] (A.1); the quantile searches the CDF up to ``rate + 12 sqrt(rate) + 20``."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"rate": float(rng.uniform(1.0, 12.0))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import pdtr

        rate = params["rate"]
        support = np.arange(int(rate + 12.0 * math.sqrt(rate) + 20.0) + 1)
        cdf = pdtr(support, rate)
        return np.minimum(np.searchsorted(cdf, u, side="left"), support[-1]).astype(float)


@register_noise("arena_root_ordinal")
class RootOrdinal(_Root):
    """Ordinal levels ``0 .. k-1``, ``k ~ U{3 .. 6}``, probabilities softmax of ``N(0, 1)`` logits (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {"probabilities": _softmax(rng.normal(size=int(rng.integers(3, 7)))).tolist()}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        return _discrete_quantile(_array(params["probabilities"]), u).astype(float)


@register_noise("arena_root_mixture_gaussian")
class RootMixtureGaussian(_Root):
    """Two-component Gaussian mixture (A.1): weight in [0.2, 0.8], means in [-2, -0.2] and
    [0.2, 2], sds in [0.3, 1.0]. The quantile inverts the CDF by 60 bisection steps."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {
            "weight": float(rng.uniform(0.2, 0.8)),
            "means": [float(rng.uniform(-2.0, -0.2)), float(rng.uniform(0.2, 2.0))],
            "sds": rng.uniform(0.3, 1.0, 2).tolist(),
        }

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        from scipy.special import ndtr

        means, sds, w = _array(params["means"]), _array(params["sds"]), params["weight"]
        low = np.full(np.shape(u), (means - 12.0 * sds).min())
        high = np.full(np.shape(u), (means + 12.0 * sds).max())
        for _ in range(60):
            mid = 0.5 * (low + high)
            below = w * ndtr((mid - means[0]) / sds[0]) + (1.0 - w) * ndtr((mid - means[1]) / sds[1]) < u
            low = np.where(below, mid, low)
            high = np.where(below, high, mid)
        return 0.5 * (low + high)


@register_noise("arena_root_multinomial")
class RootMultinomial(_Root):
    """Unordered category index, standardised (A.1): ``k ~ U{2 .. 10}`` categories,
    probabilities softmax of logits in [-1.5, 1.5]; value ``(index - mean) / sd`` under them."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        p = _softmax(rng.uniform(-1.5, 1.5, int(rng.integers(2, 11))))
        index = np.arange(p.size)
        mean = float((p * index).sum())
        return {"probabilities": p.tolist(), "mean": mean, "sd": float(math.sqrt((p * (index - mean) ** 2).sum()))}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        index = _discrete_quantile(_array(params["probabilities"]), u)
        return (index - params["mean"]) / params["sd"]


@register_noise("arena_root_zipf")
class RootZipf(_Root):
    """Zipf/power law on ``1 .. K`` (``K ~ U{8 .. 20}``, ``p_v ∝ v^-alpha``, ``alpha`` in [2, 4]),
    capped at 10 and centred by its exact mean (A.1)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        support = np.arange(1, int(rng.integers(8, 21)) + 1)
        p = support ** -float(rng.uniform(2.0, 4.0))
        p /= p.sum()
        return {"probabilities": p.tolist(), "mean": float((p * np.minimum(support, 10)).sum())}

    def quantile(self, params: Mapping[str, Any], u: np.ndarray) -> np.ndarray:
        value = _discrete_quantile(_array(params["probabilities"]), u) + 1
        return np.minimum(value, 10) - params["mean"]


# ---------------------------------------------------------------------------------------------
# structural noise families new to causal_gym (all have mean 0)
# ---------------------------------------------------------------------------------------------


@register_noise("arena_beta")
class BetaNoise:
    """Centred beta, standardised to unit variance, times ``scale``: ``B ~ Beta(a, b)``, shapes in
    [1, 10], scale in [0.05, 0.45] (A.1). ``scale`` is the standard deviation, as for the built-in
    families (the shapes set the skew); the unstandardised reading, ``scale (B - E B)``, would
    give a standard deviation below ``0.29 scale``, so small that a monotone single-parent node
    always copies its parent (``|corr| > 0.99``)."""

    def sample_params(
        self,
        rng: np.random.Generator,
        scale_range: tuple[float, float] = (0.05, 0.45),
        shape_range: tuple[float, float] = (1.0, 10.0),
    ) -> dict[str, Any]:
        low, high = check_range(shape_range, "shape_range", minimum=0.0)
        return {
            "scale": _uniform(rng, scale_range, "scale_range"),
            "a": float(rng.uniform(low, high)),
            "b": float(rng.uniform(low, high)),
        }

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        a, b = params["a"], params["b"]
        sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
        return params["scale"] * (rng.beta(a, b, n) - a / (a + b)) / sd


@register_noise("arena_exponential")
class ExponentialNoise:
    """Centred one-sided disturbance ``scale (E - 1 / rate)``, ``E ~ Exp(rate)``: rate in
    [0.8, 4.0], scale in [0.03, 0.35] (A.1). Standard deviation ``scale / rate``."""

    def sample_params(
        self,
        rng: np.random.Generator,
        scale_range: tuple[float, float] = (0.03, 0.35),
        rate_range: tuple[float, float] = (0.8, 4.0),
    ) -> dict[str, Any]:
        return {"scale": _uniform(rng, scale_range, "scale_range"), "rate": _uniform(rng, rate_range, "rate_range")}

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        rate = params["rate"]
        return params["scale"] * (rng.exponential(1.0 / rate, n) - 1.0 / rate)


@register_noise("arena_gumbel")
class GumbelNoise:
    """Centred Gumbel ``G - scale * euler_gamma``, ``G ~ Gumbel(0, scale)``: scale in
    [0.03, 0.35] (A.1). Standard deviation ``scale pi / sqrt(6)``."""

    def sample_params(
        self, rng: np.random.Generator, scale_range: tuple[float, float] = (0.03, 0.35)
    ) -> dict[str, Any]:
        return {"scale": _uniform(rng, scale_range, "scale_range")}

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.gumbel(0.0, params["scale"], n) - params["scale"] * np.euler_gamma


@register_noise("arena_mixture_outlier")
class MixtureOutlierNoise:
    """``N(0, scale^2)`` mixed with rare ``N(0, outlier_scale^2)`` outliers of probability ``p``:
    scale in [0.02, 0.15], ``p`` in [0.01, 0.08], outlier scale in [0.8, 2.5] (A.1). Variance
    ``(1 - p) scale^2 + p outlier_scale^2``."""

    def sample_params(
        self,
        rng: np.random.Generator,
        scale_range: tuple[float, float] = (0.02, 0.15),
        outlier_probability_range: tuple[float, float] = (0.01, 0.08),
        outlier_scale_range: tuple[float, float] = (0.8, 2.5),
    ) -> dict[str, Any]:
        return {
            "scale": _uniform(rng, scale_range, "scale_range"),
            "outlier_probability": _uniform(rng, outlier_probability_range, "outlier_probability_range"),
            "outlier_scale": _uniform(rng, outlier_scale_range, "outlier_scale_range"),
        }

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        outlier = rng.random(n) < params["outlier_probability"]
        return rng.standard_normal(n) * np.where(outlier, params["outlier_scale"], params["scale"])


@register_noise("arena_none")
class NoNoise:
    """No noise: zeros (A.1's no-noise option, deterministic local equations)."""

    def sample_params(self, rng: np.random.Generator) -> dict[str, Any]:
        return {}

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(n)


# ---------------------------------------------------------------------------------------------
# noise tags: the draw (a registered noise family) and the coupling
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoiseChoice:
    """A node's structural noise: tag, registered noise family and its parameters, coupling."""

    tag: str
    noise: str
    noise_params: Mapping[str, Any]
    coupling: Mapping[str, Any]


_ADDITIVE = {
    "gaussian": ("gaussian", (0.05, 0.45)),
    "uniform": ("uniform", (0.05, 0.45)),
    "laplace": ("laplace", (0.03, 0.35)),
    "mixture_outlier": ("arena_mixture_outlier", (0.02, 0.15)),
    "beta": ("arena_beta", (0.05, 0.45)),
    "exponential": ("arena_exponential", (0.03, 0.35)),
    "gumbel": ("arena_gumbel", (0.03, 0.35)),
}


def draw_noise(tag: str, rng: np.random.Generator, n_parents: int) -> NoiseChoice:
    """Draw a structural node's noise for a tag, with the A.1 ranges.

    ==========================  ==========================================================
    tag                         draw and coupling (``s`` the signal, ``e`` the draw)
    ==========================  ==========================================================
    gaussian/uniform/laplace    built-in family, scale = sd in [0.05, 0.45] (laplace
                                [0.03, 0.35]); ``s + e``
    student_t                   built-in, df in [2.5, 8], scale in [0.03, 0.30]; ``s + e``
    beta/exponential/gumbel/    ``arena_*`` families (their docstrings); ``s + e``
    mixture_outlier
    none                        ``arena_none``; ``s``
    mult_lognormal              ``e ~ N(0, 1)``; ``s exp(sigma e - sigma^2 / 2)``, sigma in
                                [0.03, 0.25] (mean-preserving, chosen)
    heteroskedastic             ``e ~ N(0, 1)``; ``s + (base + slope sigmoid(|s|)) e``, base
                                in [0.02, 0.15], slope in [0.02, 0.20]
    rff_heteroskedastic         ``e ~ N(0, 1)``; ``s + softplus(g(z)) e``, ``g`` random
                                Fourier features of the standardised parents (64-256
                                features, length scale [0.25, 3], output scale [0.3, 1.8])
    target_r2_gaussian          ``e ~ N(0, sd^2)``; ``s + e``, sd set by
                                :func:`calibrate_noise` so ``var(s) / (var(s) + sd^2)``
                                is a target R^2 in [0.1, 0.9]
    quantized                   ``e ~ N(0, sd^2)``, sd in [0.05, 0.45] (chosen);
                                ``step round((s + e) / step)``, step in [0.05, 0.35]
    censored                    ``e ~ N(0, sd^2)``, sd in [0.05, 0.45] (chosen);
                                ``clip(s + e, q3, q97)`` at the reference 3rd and 97th
                                percentiles (:func:`calibrate_noise`)
    ==========================  ==========================================================
    """
    tag = check_choice(tag, NOISE_TAGS, "noise tag")
    k = check_count(n_parents, "n_parents", minimum=0)
    if tag in _ADDITIVE:
        name, scale_range = _ADDITIVE[tag]
        return NoiseChoice(tag, name, get_noise(name).sample_params(rng, scale_range=scale_range), {"kind": "additive"})
    if tag == "student_t":
        df = float(rng.uniform(2.5, 8.0))
        params = get_noise("student_t").sample_params(rng, scale_range=(0.03, 0.30), df=df)
        return NoiseChoice(tag, "student_t", params, {"kind": "additive"})
    if tag == "none":
        return NoiseChoice(tag, "arena_none", {}, {"kind": "additive"})
    unit = {"scale": 1.0}
    if tag == "mult_lognormal":
        return NoiseChoice(tag, "gaussian", unit, {"kind": "multiplicative", "sigma": float(rng.uniform(0.03, 0.25))})
    if tag == "heteroskedastic":
        base, slope = float(rng.uniform(0.02, 0.15)), float(rng.uniform(0.02, 0.20))
        return NoiseChoice(tag, "gaussian", unit, {"kind": "heteroskedastic", "base": base, "slope": slope})
    if tag == "rff_heteroskedastic":
        features = _sample_rff(rng, max(k, 1), (64, 256), (0.25, 3.0))
        coupling = {"kind": "rff_heteroskedastic", "features": features, "amplitude": float(rng.uniform(0.3, 1.8))}
        return NoiseChoice(tag, "gaussian", unit, coupling)
    if tag == "target_r2_gaussian":
        return NoiseChoice(tag, "gaussian", unit, {"kind": "additive", "target_r2": float(rng.uniform(0.1, 0.9))})
    noisy = get_noise("gaussian").sample_params(rng, scale_range=(0.05, 0.45))
    if tag == "quantized":
        return NoiseChoice(tag, "gaussian", noisy, {"kind": "quantized", "step": float(rng.uniform(0.05, 0.35))})
    return NoiseChoice(tag, "gaussian", noisy, {"kind": "censored"})


def calibrate_noise(choice: NoiseChoice, signal: np.ndarray, draw: np.ndarray) -> tuple[NoiseChoice, np.ndarray]:
    """Fill a choice's data-dependent constants from a reference signal and noise draw.

    target-R^2: the noise sd becomes ``std(signal) sqrt((1 - R^2) / R^2)`` (the draw is rescaled
    to match); censored: the clip bounds become the 3rd and 97th percentiles of
    ``signal + draw``. Other tags are returned unchanged.
    """
    if "target_r2" in choice.coupling:
        r2 = choice.coupling["target_r2"]
        sd = float(np.std(signal) * math.sqrt((1.0 - r2) / r2))
        rescaled = draw * sd / choice.noise_params["scale"]
        return NoiseChoice(choice.tag, choice.noise, {"scale": sd}, choice.coupling), rescaled
    if choice.coupling["kind"] == "censored":
        low, high = np.percentile(signal + draw, [3.0, 97.0])
        coupling = {"kind": "censored", "low": float(low), "high": float(high)}
        return NoiseChoice(choice.tag, choice.noise, choice.noise_params, coupling), draw
    return choice, draw


def couple(coupling: Mapping[str, Any], signal: np.ndarray, z: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """A node's value from its signal ``s``, standardised parents ``z`` and noise draw (:func:`draw_noise`)."""
    kind = coupling["kind"]
    if kind == "additive":
        return signal + noise
    if kind == "multiplicative":
        sigma = coupling["sigma"]
        return signal * np.exp(sigma * noise - 0.5 * sigma * sigma)
    if kind == "heteroskedastic":
        return signal + (coupling["base"] + coupling["slope"] * _sigmoid(np.abs(signal))) * noise
    if kind == "rff_heteroskedastic":
        return signal + softplus(coupling["amplitude"] * _rff(coupling["features"], z)) * noise
    if kind == "quantized":
        step = coupling["step"]
        return step * np.round((signal + noise) / step)
    if kind == "censored":
        return np.clip(signal + noise, coupling["low"], coupling["high"])
    raise ValueError(f"unknown coupling {kind!r}; choose one of {', '.join(map(repr, COUPLINGS))}")


# ---------------------------------------------------------------------------------------------
# node wrappers
# ---------------------------------------------------------------------------------------------


INPUT_GUARD = 10.0
"""Standardised parent values are clipped to ``[-10, 10]`` before a form sees them: a row ten
reference sds out (heavy-tailed noise, an outlier root) cannot then be raised to the 4th power
and compounded along a 100-node chain into an overflow. The body of every distribution is
untouched."""


@register_mechanism("arena_node")
class ArenaNode:
    """A structural node of an arena SCM (module docstring):
    ``X = couple(gain * amplitude * (f(z) - center) / spread, eps) + sum(hidden inputs)``.

    Parameters (built by the arena generator; ``sample_params`` wraps a form for direct use):
    ``form``/``form_params`` the registered form, ``input_mean``/``input_std`` the
    standardisation of the observed parents, ``center``/``spread`` that of the form's output,
    ``gain``, ``amplitude``, ``coupling`` and ``hidden_inputs``, the number of trailing parent
    columns (hidden, never standardised) added to the value after the coupling.
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, form: str = "linear", coupling: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """An uncalibrated node of ``form`` (additive coupling by default); ``calibrate`` completes it."""
        k = _n_parents(n_parents)
        family = get_mechanism(form)
        return {
            "form": form,
            "form_params": family.sample_params(rng, k, **form_config(form, rng, k)),
            "gain": 1.0,
            "amplitude": 1.0,
            "coupling": dict(coupling or {"kind": "additive"}),
            "hidden_inputs": 0,
        }

    def calibrate(self, params: Mapping[str, Any], parents: np.ndarray) -> dict[str, Any]:
        """Standardise inputs and the form's output on reference parents (observed columns only)."""
        columns = np.shape(parents)[1] - params["hidden_inputs"]
        observed = check_data(np.asarray(parents)[:, :columns], "reference parents", min_rows=2)
        mean, std = observed.mean(axis=0), observed.std(axis=0)
        z = np.clip((observed - mean) / std, -INPUT_GUARD, INPUT_GUARD)
        family = get_mechanism(params["form"])
        form_params = params["form_params"]
        if callable(getattr(family, "calibrate", None)):
            form_params = family.calibrate(form_params, z)
        raw = family.evaluate(form_params, z, 0.0)
        spread = float(raw.std())
        if not (np.isfinite(spread) and spread > 1e-12):
            raise ValueError(f"form {params['form']!r} is constant on the reference parents; cannot standardise it")
        return {
            **params,
            "form_params": form_params,
            "input_mean": mean.tolist(),
            "input_std": std.tolist(),
            "center": float(raw.mean()),
            "spread": spread,
        }

    @staticmethod
    def standardized_inputs(params: Mapping[str, Any], parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(z, hidden)``: the standardised observed parents (guarded to ``[-10, 10]``) and the
        hidden input columns."""
        split = parents.shape[1] - params["hidden_inputs"]
        z = (parents[:, :split] - _array(params["input_mean"])) / _array(params["input_std"])
        return np.clip(z, -INPUT_GUARD, INPUT_GUARD), parents[:, split:]

    @staticmethod
    def signal(params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        """``gain * amplitude * (f(z) - center) / spread``."""
        raw = get_mechanism(params["form"]).evaluate(params["form_params"], z, 0.0)
        return params["gain"] * params["amplitude"] * (raw - params["center"]) / params["spread"]

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        if "spread" not in params:
            raise ValueError(
                "arena_node parameters are not calibrated: call calibrate(params, reference_parents) first"
            )
        z, hidden = self.standardized_inputs(params, parents)
        return couple(params["coupling"], self.signal(params, z), z, noise) + hidden.sum(axis=1)

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply the signal (``gain``); noise and hidden inputs are kept."""
        return {**params, "gain": factor * params["gain"]}


@register_mechanism("arena_root_copula")
class RootCopula:
    """A root in a dependent root block: a latent coordinate mapped to the root's own marginal.

    ``latent = "gaussian"``: ``Z = loadings^T H + residual eps`` over hidden ``N(0, 1)`` parents
    ``H`` and the node's ``N(0, 1)`` draw (``|loadings|^2 + residual^2 = 1``, so ``Z ~ N(0, 1)``),
    value ``Q(Phi(Z))`` -- a Gaussian copula. ``latent = "ball"``: hidden parents ``G_1 .. G_r``
    (``N(0, 1)``) and ``U`` (``U[0, 1]``) give the point ``x = U^(1/r) G / |G|`` uniform in the
    unit ``r``-ball; coordinate ``x_i`` has CDF ``I_{(x_i + 1) / 2}((r + 1) / 2, (r + 1) / 2)``,
    which maps it to a uniform, value ``Q(that)``. ``Q`` is the root family's quantile, so the
    marginals are exactly the root families while the block carries the dependence.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        marginal: str = "gaussian",
        rho_range: tuple[float, float] = (0.25, 0.75),
    ) -> dict[str, Any]:
        """A Gaussian-copula root on ``n_parents`` hidden ``N(0, 1)`` parents: loadings
        ``sqrt(rho) w`` (``w`` a random unit vector, ``rho ~ U[rho_range]``), residual
        ``sqrt(1 - rho)``, marginal the root family ``marginal`` with drawn parameters. (The arena
        generator builds its blocks itself, A.1 "Root dependency".)"""
        k = _n_parents(n_parents)
        rho = _uniform(rng, rho_range, "rho_range")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"rho_range must lie within [0, 1], got {rho_range}")
        name = root_noise_name(marginal)
        return {
            "latent": "gaussian",
            "loadings": (math.sqrt(rho) * unit_direction(rng, k)).tolist(),
            "residual": math.sqrt(1.0 - rho),
            "marginal": name,
            "marginal_params": get_noise(name).sample_params(rng),
        }

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        from scipy.special import betainc, ndtr

        if params["latent"] == "gaussian":
            u = ndtr(combine(parents, _array(params["loadings"])) + params["residual"] * noise)
        else:
            r = params["dim"]
            g = parents[:, :r]
            radius = np.maximum(parents[:, r], 0.0) ** (1.0 / r)
            x = radius * g[:, params["index"]] / np.maximum(np.sqrt((g * g).sum(axis=1)), 1e-300)
            u = betainc(0.5 * (r + 1), 0.5 * (r + 1), np.clip(0.5 * (x + 1.0), 0.0, 1.0))
        marginal = get_noise(params["marginal"])
        return marginal.quantile(params["marginal_params"], _open_unit(u))  # type: ignore[attr-defined]


@register_mechanism("arena_blend")
class Blend:
    """Soft intervention: ``X = softness f(pa, eps) + (1 - softness) V``.

    ``f`` is the node's own mechanism (``mechanism``/``params``) on all parents but the last;
    the last parent is the intervention value ``V`` (a hidden root). Descendants see the blend.
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, mechanism: str = "linear", softness: float = 0.45
    ) -> dict[str, Any]:
        """Blend a drawn ``mechanism`` on the first ``n_parents - 1`` parents with the last one.
        (``ArenaSCM.sample`` builds its blends from the node's own mechanism.)"""
        k = check_count(n_parents, "n_parents", minimum=1)
        own = get_mechanism(mechanism).sample_params(rng, k - 1)
        return {"mechanism": mechanism, "params": own, "softness": check_real(softness, "softness", minimum=0.0)}

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        own = get_mechanism(params["mechanism"]).evaluate(params["params"], parents[:, :-1], noise)
        return params["softness"] * own + (1.0 - params["softness"]) * parents[:, -1]
