"""Root distributions: noise families ``arena_root_*`` with a quantile function, for copulas."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from causal_gym.envs.arena.families._common import _array, _open_unit
from causal_gym.scm import (
    register_noise,
)


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
