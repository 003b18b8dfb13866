"""Structural noise: the new ``arena_*`` noise families and the noise tags' draws and couplings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_count, check_range
from causal_gym.envs.arena.families._common import _rff, _sample_rff, _sigmoid, _uniform
from causal_gym.envs.arena.families.tags import COUPLINGS, NOISE_TAGS
from causal_gym.scm import (
    get_noise,
    register_noise,
    softplus,
)


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
