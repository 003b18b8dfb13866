"""Node wrappers: ``arena_node`` (a structural node), ``arena_root_copula`` and ``arena_blend``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from causal_gym._validation import check_count, check_data, check_real
from causal_gym.envs.arena.families._common import _array, _n_parents, _open_unit, _uniform
from causal_gym.envs.arena.families.forms import form_config
from causal_gym.envs.arena.families.noises import couple
from causal_gym.envs.arena.families.tags import root_noise_name
from causal_gym.scm import (
    combine,
    get_mechanism,
    get_noise,
    register_mechanism,
    unit_direction,
)

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
        calibrate = getattr(family, "calibrate", None)  # an optional hook of the Mechanism protocol
        if callable(calibrate):
            form_params = calibrate(form_params, z)
        raw = family.evaluate(form_params, z, np.zeros(len(z)))
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
        raw = get_mechanism(params["form"]).evaluate(params["form_params"], z, np.zeros(len(z)))
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
