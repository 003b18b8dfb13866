"""Mechanism forms ``X = f(pa) + eps`` (A.1), registered as ``arena_*`` mechanisms."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_count, check_range
from causal_gym.envs.arena.families._common import (
    _array,
    _integer,
    _n_parents,
    _requires_calibration,
    _rff,
    _sample_rff,
    _sigmoid,
    _uniform,
)
from causal_gym.scm import (
    combine,
    register_mechanism,
    signed_uniform,
    softplus,
    unit_direction,
)


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
