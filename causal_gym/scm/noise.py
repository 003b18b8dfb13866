"""Noise families: the exogenous term of every node, and the whole distribution of a root.

A noise family is a stateless class registered by name with :func:`register_noise`:

- ``sample_params(rng, scale_range=(lo, hi), **config) -> dict`` draws JSON-serialisable
  parameters (lists/floats); ``SCM.random`` passes each node's sigma range as ``scale_range``,
  so every family must accept that keyword;
- ``sample(params, n, rng) -> ndarray (n,)`` draws ``n`` independent values.

Every built-in family is a unit-variance standard distribution multiplied by ``scale``, so
``scale`` is the standard deviation of the noise whatever the family; ``sample_params`` draws it
uniformly from ``scale_range`` (the per-node noise scale sigma of the generators). A root node's
value is its noise (see :mod:`causal_gym.scm.model`), so the root distribution is chosen here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from causal_gym._validation import check_range, check_real
from causal_gym.scm._registry import Registry

__all__ = ["NoiseFamily", "register_noise", "get_noise", "noise_names"]


class NoiseFamily(Protocol):
    """What a registered noise family provides."""

    def sample_params(self, rng: np.random.Generator, **config: Any) -> dict[str, Any]: ...

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray: ...


_NOISE: Registry[NoiseFamily] = Registry("noise family", ("sample_params", "sample"))


def register_noise(name: str) -> Callable[[type], type]:
    """Class decorator adding a noise family under ``name`` (ValueError if the name is taken)."""
    return _NOISE.register(name)


def get_noise(name: str) -> NoiseFamily:
    """Return the noise family registered as ``name``."""
    return _NOISE.get(name)


def noise_names() -> tuple[str, ...]:
    """Names of the registered noise families, sorted."""
    return _NOISE.names()


class _UnitVarianceNoise(ABC):
    """``scale`` times a zero-mean, unit-variance standard draw."""

    def sample_params(self, rng: np.random.Generator, scale_range: tuple[float, float] = (1.0, 1.0)) -> dict[str, Any]:
        """Draw ``scale ~ U[scale_range]`` (a zero scale makes the node deterministic)."""
        low, high = check_range(scale_range, "scale_range", minimum=0.0)
        return {"scale": float(rng.uniform(low, high))}

    def sample(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return params["scale"] * self._standard(params, n, rng)

    @abstractmethod
    def _standard(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of the zero-mean, unit-variance standard form."""


@register_noise("gaussian")
class Gaussian(_UnitVarianceNoise):
    """``scale * N(0, 1)``."""

    def _standard(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal(n)


@register_noise("student_t")
class StudentT(_UnitVarianceNoise):
    """Student-t with ``df > 2`` degrees of freedom, rescaled to unit variance, times ``scale``.

    A t variable has variance ``df / (df - 2)``; dividing by its square root keeps ``scale`` the
    standard deviation, so heavy tails change the shape but not the noise level (Heuresis'
    linear-t3 nodes use ``df = 3``).
    """

    def sample_params(
        self, rng: np.random.Generator, scale_range: tuple[float, float] = (1.0, 1.0), df: float = 3.0
    ) -> dict[str, Any]:
        """Draw ``scale ~ U[scale_range]`` and store ``df`` (must be > 2 for a finite variance)."""
        df = check_real(df, "df", minimum=2.0, strict=True)
        return {**super().sample_params(rng, scale_range), "df": df}

    def _standard(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        df = params["df"]
        return rng.standard_t(df, n) / np.sqrt(df / (df - 2.0))


@register_noise("laplace")
class Laplace(_UnitVarianceNoise):
    """Laplace with unit variance (scale parameter ``1/sqrt(2)``) times ``scale``."""

    def _standard(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, np.sqrt(0.5), n)


@register_noise("uniform")
class Uniform(_UnitVarianceNoise):
    """Uniform on ``[-sqrt(3), sqrt(3)]`` (unit variance) times ``scale``."""

    def _standard(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), n)


@register_noise("gumbel")
class Gumbel(_UnitVarianceNoise):
    """Centred Gumbel (right-skewed, skewness 1.14) with unit variance, times ``scale``.

    A standard Gumbel draw has mean Euler's gamma and variance ``pi^2 / 6``; it is centred and
    divided by ``pi / sqrt(6)``. The skewed exogenous noise of CAASL's out-of-distribution tests.
    """

    def _standard(self, params: Mapping[str, Any], n: int, rng: np.random.Generator) -> np.ndarray:
        return (rng.gumbel(0.0, 1.0, n) - np.euler_gamma) * (np.sqrt(6.0) / np.pi)
