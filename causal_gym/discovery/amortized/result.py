"""One dataset's inference by an amortized method (its own module so that each method's module can build it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AmortizedResult"]


@dataclass(frozen=True, eq=False)
class AmortizedResult:
    """One dataset's inference: edge probabilities, the thresholded graph and the timing split."""

    method: str
    probabilities: np.ndarray
    graph: np.ndarray
    threshold: float
    load_seconds: float
    infer_seconds: float
    extras: dict[str, Any] = field(default_factory=dict)
