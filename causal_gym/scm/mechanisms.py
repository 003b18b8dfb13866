"""Mechanism families: how a node combines the values of its parents with its own noise.

A mechanism family is a stateless class registered by name with :func:`register_mechanism`:

- ``sample_params(rng, n_parents, **config) -> dict`` draws JSON-serialisable parameters
  (nested dicts, lists and floats) for a node with ``n_parents`` parents;
- ``evaluate(params, parents, noise) -> ndarray (n,)`` maps the ``(n, k)`` parent values
  (columns in increasing node index) and the node's ``(n,)`` noise draw to its values. The
  mechanism combines the noise itself, so heteroscedastic mechanisms need nothing special.
  ``evaluate(params, parents, 0)`` is the noiseless part ``f(pa)``.

Two optional hooks:

- ``scale_params(params, factor) -> dict`` multiplies the mechanism's outer weights (the
  weights of its output layer or map) by ``factor``; a ``ParameterShift`` intervention needs it.
- ``calibrate(params, parents) -> dict`` fills data-dependent constants from a reference draw of
  the parents. ``SCM.random`` calls it with an observational sample of the parents drawn from the
  partially built SCM; the scalar maps use it to standardise their output (``standardize_map``).
  The constants are stored in ``params``, so re-sampling an SCM never recomputes them.

Built-in families (defaults follow the Heuresis generator, Appendix C; every range is a config):

==================  ========================================================================
``linear``          ``w^T pa + eps``, ``w ~ ±U[0.5, 2]``. With no parents it is just ``eps``:
                    this is how every root node is stored.
``mlp``             ``f(pa) + eps``, ``f`` a one-hidden-layer tanh MLP (init below).
``mlp_hetero``      ``f(pa) + (softplus(g(pa)) + 0.2) eps``, ``f`` and ``g`` independent MLPs.
``piecewise``       ``s1 min(z - c, 0) + s2 max(z - c, 0) + eps``: knot ``c``, signed slopes.
``sigmoid``         ``a tanh(b z) + eps``.
``fourier``         random Fourier features ``sum_m c_m cos(omega_m z + phi_m) + eps``.
``quadratic``       ``a (z - v)^2 + eps``.
``abs``             ``a |z - v| + eps``.
``sigmoid_hetero``  ``tanh(a z) + (softplus(b z) + 0.2) eps``.
==================  ========================================================================

The scalar maps act on ``z = w^T pa`` with ``w`` uniform on the unit sphere. With
``standardize_map=True`` (Heuresis' ``wild`` family) the map output is centred and scaled to
mean 0, variance 1 on the reference draw of the parents given to ``calibrate``, so the map has
unit variance on the SCM's own observational distribution and the node's noise scale is its
signal-to-noise ratio. The constants come from that draw (not from an analytic formula under an
assumed parent law) because deeper nodes' parents are far from standard normal.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from causal_gym._validation import check_count, check_data, check_range, check_real
from causal_gym.scm._registry import Registry

__all__ = [
    "Mechanism",
    "register_mechanism",
    "get_mechanism",
    "mechanism_names",
    "combine",
    "signed_uniform",
    "softplus",
    "unit_direction",
]


class Mechanism(Protocol):
    """What a registered mechanism family provides (``scale_params``/``calibrate`` are optional)."""

    def sample_params(self, rng: np.random.Generator, n_parents: int, **config: Any) -> dict[str, Any]: ...

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray: ...


_MECHANISMS: Registry[Mechanism] = Registry("mechanism", ("sample_params", "evaluate"))


def register_mechanism(name: str) -> Callable[[type], type]:
    """Class decorator adding a mechanism family under ``name`` (ValueError if the name is taken).

    Example (registration is global and permanent for the process)::

        @register_mechanism("cubic")
        class Cubic:
            def sample_params(self, rng, n_parents):
                return {"weights": rng.normal(size=n_parents).tolist()}

            def evaluate(self, params, parents, noise):
                return (parents @ np.asarray(params["weights"])) ** 3 + noise
    """
    return _MECHANISMS.register(name)


def get_mechanism(name: str) -> Mechanism:
    """Return the mechanism family registered as ``name``."""
    return _MECHANISMS.get(name)


def mechanism_names() -> tuple[str, ...]:
    """Names of the registered mechanism families, sorted."""
    return _MECHANISMS.names()


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------


def signed_uniform(rng: np.random.Generator, value_range: object, name: str, size: int) -> np.ndarray:
    """``±U[low, high]`` with a fair random sign per entry."""
    low, high = check_range(value_range, name, minimum=0.0)
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return sign * rng.uniform(low, high, size)


def _scaled(value: object, factor: float) -> Any:
    """``factor * value`` for a float or a (nested) list of floats, returned in the same JSON form."""
    return (factor * np.asarray(value, dtype=float)).tolist()


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))``, computed without overflow."""
    return np.logaddexp(0.0, x)


def _require_parents(n_parents: object) -> int:
    """Nonlinear families need a parent; a root's distribution is its noise (``linear``, no weights)."""
    return check_count(n_parents, "n_parents", minimum=1)


def unit_direction(rng: np.random.Generator, k: int) -> np.ndarray:
    """Uniform on the unit sphere in ``R^k`` (normalised Gaussian vector)."""
    v = rng.standard_normal(k)
    return v / np.sqrt((v * v).sum())  # not np.linalg.norm: BLAS would round it per CPU kernel


def _sample_mlp(
    rng: np.random.Generator,
    k: int,
    hidden_units: object,
    hidden_scale: object,
    bias_range: object,
    output_scale: object,
) -> dict[str, Any]:
    """Random one-hidden-layer MLP ``pa -> v^T tanh(W^T pa + b)``.

    Initialisation: ``W ~ N(0, hidden_scale^2)`` per parent and unit, ``b ~ U[-bias_range,
    bias_range]`` (shifts the units off the origin, so the MLP is not odd), output weights
    ``v ~ N(0, output_scale^2)``. No fan-in scaling: like a linear weight, each parent's influence
    does not shrink as the parent count grows (a ``1/sqrt(k)`` scaling made every edge into a hub
    weak, and PC-KCI then missed about 25% more true edges on Heuresis' MLP families than the
    paper reports). No output bias: constants play no role once columns are standardised.
    """
    h = check_count(hidden_units, "hidden_units")
    w_scale = check_real(hidden_scale, "hidden_scale", minimum=0.0)
    b_range = check_real(bias_range, "bias_range", minimum=0.0)
    v_scale = check_real(output_scale, "output_scale", minimum=0.0)
    return {
        "hidden_weights": rng.normal(0.0, w_scale, (k, h)).tolist(),
        "hidden_bias": rng.uniform(-b_range, b_range, h).tolist(),
        "output_weights": rng.normal(0.0, v_scale, h).tolist(),
    }


def combine(columns: np.ndarray, weights: Any) -> np.ndarray:
    """``columns @ weights`` computed without BLAS, so data are bit-identical on every CPU.

    A BLAS kernel (OpenBLAS picks one per CPU: Haswell, SkylakeX, ...) orders and fuses the
    multiply-adds its own way, and the generated data then differed in the last bit between
    machines, which changed cache keys and ``summarize``'s ``-0.0``. Here the products are summed
    one parent at a time in a fixed order with plain IEEE multiplications and additions.

    Parameters
    ----------
    columns : (n, k) array
    weights : (k,) or (k, h) array-like
    """
    weights = np.asarray(weights, dtype=float)
    columns = np.asarray(columns, dtype=float)
    out = np.zeros((columns.shape[0], *weights.shape[1:]))
    for j in range(weights.shape[0]):
        out += columns[:, j, None] * weights[j] if weights.ndim == 2 else columns[:, j] * weights[j]
    return out


def _mlp(params: Mapping[str, Any], parents: np.ndarray) -> np.ndarray:
    hidden = np.tanh(combine(parents, params["hidden_weights"]) + np.asarray(params["hidden_bias"], dtype=float))
    return combine(hidden, params["output_weights"])


def _direction(params: Mapping[str, Any]) -> np.ndarray:
    return np.asarray(params["direction"], dtype=float)


# ---------------------------------------------------------------------------------------------
# linear and MLP families
# ---------------------------------------------------------------------------------------------


@register_mechanism("linear")
class Linear:
    """``X = w^T pa + eps`` with ``w ~ ±U[weight_range]`` (default ``±U[0.5, 2]``).

    The only family that accepts zero parents: then ``X = eps``, the root distribution.
    """

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, weight_range: tuple[float, float] = (0.5, 2.0)
    ) -> dict[str, Any]:
        k = check_count(n_parents, "n_parents", minimum=0)
        return {"weights": signed_uniform(rng, weight_range, "weight_range", k).tolist()}

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        return combine(parents, params["weights"]) + noise

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply every edge weight."""
        return {**params, "weights": _scaled(params["weights"], factor)}


@register_mechanism("mlp")
class MLP:
    """``X = f(pa) + eps``, ``f`` a random one-hidden-layer MLP with ``hidden_units`` tanh units.

    See ``_sample_mlp`` in this module for the initialisation; outer weights = output layer.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        hidden_units: int = 10,
        hidden_scale: float = 1.0,
        bias_range: float = 1.0,
        output_scale: float = 1.0,
    ) -> dict[str, Any]:
        k = _require_parents(n_parents)
        return _sample_mlp(rng, k, hidden_units, hidden_scale, bias_range, output_scale)

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        return _mlp(params, parents) + noise

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply the output-layer weights."""
        return {**params, "output_weights": _scaled(params["output_weights"], factor)}


@register_mechanism("mlp_hetero")
class MLPHetero:
    """``X = f(pa) + (softplus(g(pa)) + noise_floor) eps``: input-dependent noise scale.

    ``f`` (``mean_net``) and ``g`` (``scale_net``) are independent random MLPs with the same
    initialisation as ``mlp``; the floor (default 0.2) keeps the noise away from zero.
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        hidden_units: int = 10,
        hidden_scale: float = 1.0,
        bias_range: float = 1.0,
        output_scale: float = 1.0,
        noise_floor: float = 0.2,
    ) -> dict[str, Any]:
        k = _require_parents(n_parents)
        floor = check_real(noise_floor, "noise_floor", minimum=0.0)
        return {
            "mean_net": _sample_mlp(rng, k, hidden_units, hidden_scale, bias_range, output_scale),
            "scale_net": _sample_mlp(rng, k, hidden_units, hidden_scale, bias_range, output_scale),
            "noise_floor": floor,
        }

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        noise_scale = softplus(_mlp(params["scale_net"], parents)) + params["noise_floor"]
        return _mlp(params["mean_net"], parents) + noise_scale * noise

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply the output weights of the mean network ``f`` (the noise network is kept)."""
        mean_net = dict(params["mean_net"])
        mean_net["output_weights"] = _scaled(mean_net["output_weights"], factor)
        return {**params, "mean_net": mean_net}


# ---------------------------------------------------------------------------------------------
# scalar maps of z = w^T pa
# ---------------------------------------------------------------------------------------------


class _ScalarMap(ABC):
    """``X = s(h(z)) + eps`` with ``z = w^T pa``, ``w`` a random unit vector.

    ``s`` is the identity, or with ``standardize_map=True`` the standardisation
    ``(h - center) / spread`` whose constants ``calibrate`` computes on a reference draw.
    ``outer`` names the parameters ``h`` is linear in; ``scale_params`` multiplies them (and the
    centre), which multiplies the standardised output by the same factor.
    """

    outer: tuple[str, ...]

    def sample_params(
        self, rng: np.random.Generator, n_parents: int, standardize_map: bool = False, **shape: Any
    ) -> dict[str, Any]:
        k = _require_parents(n_parents)
        if not isinstance(standardize_map, bool):
            raise ValueError(f"standardize_map must be a bool, got {standardize_map!r}")
        direction = unit_direction(rng, k).tolist()
        return {"direction": direction, **self._sample_shape(rng, **shape), "standardize": standardize_map}

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        h = self._map(params, combine(parents, _direction(params)))
        if params["standardize"]:
            if "center" not in params:
                raise ValueError(
                    "standardised map is not calibrated: call calibrate(params, reference_parents) first "
                    "(SCM.random does this)"
                )
            h = (h - params["center"]) / params["spread"]
        return h + noise

    def calibrate(self, params: Mapping[str, Any], parents: np.ndarray) -> dict[str, Any]:
        """Store the mean and standard deviation of ``h(z)`` on the reference parents.

        Returns the parameters unchanged when the map is not standardised.
        """
        if not params["standardize"]:
            return dict(params)
        reference = check_data(parents, "reference parents", min_rows=2)
        h = self._map(params, combine(reference, _direction(params)))
        spread = float(h.std())
        if not spread > 0.0:
            raise ValueError("the map is constant on the reference parents; cannot standardise it")
        return {**params, "center": float(h.mean()), "spread": spread}

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply the outer weights (and the stored centre of a standardised map)."""
        out = {**params, **{key: _scaled(params[key], factor) for key in self.outer}}
        if "center" in params:
            out["center"] = factor * params["center"]
        return out

    @abstractmethod
    def _sample_shape(self, rng: np.random.Generator, *args: Any, **config: Any) -> dict[str, Any]:
        """Draw the map's own parameters (each map names its own keyword arguments)."""

    @abstractmethod
    def _map(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        """Evaluate ``h(z)`` elementwise."""


@register_mechanism("piecewise")
class Piecewise(_ScalarMap):
    """``h(z) = s1 min(z - c, 0) + s2 max(z - c, 0)``: knot ``c ~ U[knot_range]``, slopes
    ``s1, s2 ~ ±U[slope_range]`` with independent signs (monotone or V-shaped)."""

    outer = ("slopes",)

    def _sample_shape(
        self,
        rng: np.random.Generator,
        knot_range: tuple[float, float] = (-1.0, 1.0),
        slope_range: tuple[float, float] = (0.5, 2.0),
    ) -> dict[str, Any]:
        low, high = check_range(knot_range, "knot_range")
        return {
            "knot": float(rng.uniform(low, high)),
            "slopes": signed_uniform(rng, slope_range, "slope_range", 2).tolist(),
        }

    def _map(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        left, right = params["slopes"]
        u = z - params["knot"]
        return left * np.minimum(u, 0.0) + right * np.maximum(u, 0.0)


@register_mechanism("sigmoid")
class Sigmoid(_ScalarMap):
    """``h(z) = a tanh(b z)``: amplitude ``a ~ ±U[amplitude_range]``, steepness
    ``b ~ U[steepness_range]``."""

    outer = ("amplitude",)

    def _sample_shape(
        self,
        rng: np.random.Generator,
        steepness_range: tuple[float, float] = (1.0, 3.0),
        amplitude_range: tuple[float, float] = (0.5, 2.0),
    ) -> dict[str, Any]:
        low, high = check_range(steepness_range, "steepness_range", minimum=0.0)
        steepness = float(rng.uniform(low, high))
        amplitude = float(signed_uniform(rng, amplitude_range, "amplitude_range", 1)[0])
        return {"steepness": steepness, "amplitude": amplitude}

    def _map(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        return params["amplitude"] * np.tanh(params["steepness"] * z)


@register_mechanism("fourier")
class Fourier(_ScalarMap):
    """Random Fourier features ``h(z) = sum_m c_m cos(omega_m z + phi_m)``.

    ``omega_m ~ N(0, 1 / lengthscale^2)``, ``phi_m ~ U[0, 2 pi)``, ``c_m ~ N(0, 2 / n_features)``:
    a draw from (approximately, Rahimi & Recht 2007) a Gaussian process with a unit-variance RBF
    kernel of that lengthscale, i.e. a smooth non-monotone function of ``z``.
    """

    outer = ("coefficients",)

    def _sample_shape(
        self, rng: np.random.Generator, n_features: int = 20, lengthscale: float = 1.0
    ) -> dict[str, Any]:
        m = check_count(n_features, "n_features")
        ell = check_real(lengthscale, "lengthscale", minimum=0.0, strict=True)
        return {
            "frequencies": rng.normal(0.0, 1.0 / ell, m).tolist(),
            "phases": rng.uniform(0.0, 2.0 * np.pi, m).tolist(),
            "coefficients": rng.normal(0.0, np.sqrt(2.0 / m), m).tolist(),
        }

    def _map(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        frequencies = np.asarray(params["frequencies"], dtype=float)
        phases = np.asarray(params["phases"], dtype=float)
        return combine(np.cos(z[:, None] * frequencies + phases), params["coefficients"])


class _VertexMap(_ScalarMap):
    """``a g(z - v)`` with vertex ``v ~ U[vertex_range]`` and coefficient ``a ~ ±U[coefficient_range]``."""

    outer = ("coefficient",)

    def _sample_shape(
        self,
        rng: np.random.Generator,
        vertex_range: tuple[float, float] = (-1.0, 1.0),
        coefficient_range: tuple[float, float] = (0.5, 2.0),
    ) -> dict[str, Any]:
        low, high = check_range(vertex_range, "vertex_range")
        vertex = float(rng.uniform(low, high))
        coefficient = float(signed_uniform(rng, coefficient_range, "coefficient_range", 1)[0])
        return {"vertex": vertex, "coefficient": coefficient}


@register_mechanism("quadratic")
class Quadratic(_VertexMap):
    """``h(z) = a (z - v)^2``; ``vertex_range=(0, 0)`` gives the symmetric parabola."""

    def _map(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        return params["coefficient"] * np.square(z - params["vertex"])


@register_mechanism("abs")
class Abs(_VertexMap):
    """``h(z) = a |z - v|``."""

    def _map(self, params: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
        return params["coefficient"] * np.abs(z - params["vertex"])


@register_mechanism("sigmoid_hetero")
class SigmoidHetero:
    """``X = amplitude tanh(a z) + (softplus(b z) + noise_floor) eps`` on ``z = w^T pa``.

    ``a ~ ±U[steepness_range]`` (default ``±U[1, 3]``), ``b ~ ±U[noise_slope_range]`` (default
    ``±U[0.5, 2]``), ``noise_floor`` 0.2, ``amplitude`` 1 (stored so that a parameter shift can
    scale the mean function).
    """

    def sample_params(
        self,
        rng: np.random.Generator,
        n_parents: int,
        steepness_range: tuple[float, float] = (1.0, 3.0),
        noise_slope_range: tuple[float, float] = (0.5, 2.0),
        noise_floor: float = 0.2,
    ) -> dict[str, Any]:
        k = _require_parents(n_parents)
        floor = check_real(noise_floor, "noise_floor", minimum=0.0)
        direction = unit_direction(rng, k).tolist()
        steepness = float(signed_uniform(rng, steepness_range, "steepness_range", 1)[0])
        noise_slope = float(signed_uniform(rng, noise_slope_range, "noise_slope_range", 1)[0])
        return {
            "direction": direction,
            "steepness": steepness,
            "noise_slope": noise_slope,
            "amplitude": 1.0,
            "noise_floor": floor,
        }

    def evaluate(self, params: Mapping[str, Any], parents: np.ndarray, noise: np.ndarray) -> np.ndarray:
        z = combine(parents, _direction(params))
        noise_scale = softplus(params["noise_slope"] * z) + params["noise_floor"]
        return params["amplitude"] * np.tanh(params["steepness"] * z) + noise_scale * noise

    def scale_params(self, params: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """Multiply the amplitude of the mean function ``tanh(a z)``."""
        return {**params, "amplitude": factor * params["amplitude"]}
