"""Small helpers the form, root and noise modules share: ranged draws, guards."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from causal_gym._validation import check_count, check_range
from causal_gym.scm import (
    combine,
)


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
