"""Verdicts and coarse strength grades for CI-test p-values.

``verdict`` is the rule causal-learn's PC uses to delete an edge: independent when
``p > alpha``. ``strength_grade`` refines it into five levels an agent can read without
interpreting p-values, and never contradicts the verdict (a "dependence" grade always goes with
a "dependent" verdict at the same ``alpha``):

=====================  ===================================
grade                  p-value
=====================  ===================================
"strong dependence"    ``p < 0.001`` (and ``p <= alpha``)
"dependence"           ``0.001 <= p < 0.01`` (and ``p <= alpha``)
"weak dependence"      ``0.01 <= p <= alpha``
"weak independence"    ``alpha < p < 0.2``
"independence"         ``p >= 0.2``
=====================  ===================================

For the usual ``alpha`` in ``[0.01, 0.2)`` this is simply: below 0.001, below 0.01, up to
``alpha``, below 0.2, the rest. With a smaller ``alpha`` a p-value between ``alpha`` and 0.01 is
graded "weak independence", as its verdict is "independent".
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

__all__ = ["GRADES", "strength_grade", "verdict", "check_pvalue", "check_alpha"]

GRADES: tuple[str, ...] = (
    "strong dependence",
    "dependence",
    "weak dependence",
    "weak independence",
    "independence",
)
"""The five grades, from strongest dependence to independence."""

_STRONG, _DEPENDENCE, _INDEPENDENCE = 0.001, 0.01, 0.2


def check_pvalue(pvalue: object) -> float:
    """Validate a p-value (a real number in ``[0, 1]``) and return it as a float."""
    if isinstance(pvalue, (bool, np.bool_)) or not isinstance(pvalue, Real):
        raise ValueError(f"pvalue must be a real number, got {pvalue!r}")
    p = float(pvalue)
    if math.isnan(p) or not 0.0 <= p <= 1.0:
        raise ValueError(f"pvalue must lie in [0, 1], got {pvalue!r}")
    return p


def check_alpha(alpha: object, upper: float = 1.0) -> float:
    """Validate a significance level in ``(0, upper)`` and return it as a float."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, Real):
        raise ValueError(f"alpha must be a real number, got {alpha!r}")
    a = float(alpha)
    if not 0.0 < a < upper:
        raise ValueError(f"alpha must lie in (0, {upper:g}), got {alpha!r}")
    return a


def verdict(pvalue: float, alpha: float = 0.05) -> str:
    """"independent" if ``pvalue > alpha`` else "dependent" (causal-learn's PC deletion rule).

    Raises
    ------
    ValueError
        If ``pvalue`` is not in ``[0, 1]`` or ``alpha`` not in ``(0, 1)``.

    Examples
    --------
    >>> verdict(0.3), verdict(0.05), verdict(0.0501)
    ('independent', 'dependent', 'independent')
    """
    p = check_pvalue(pvalue)
    a = check_alpha(alpha)
    return "independent" if p > a else "dependent"


def strength_grade(pvalue: float, alpha: float = 0.05) -> str:
    """Five-level grade of a p-value (see the module docstring for the bands).

    Raises
    ------
    ValueError
        If ``pvalue`` is not in ``[0, 1]`` or ``alpha`` not in ``(0, 0.2)`` (the bands need
        ``alpha`` below the 0.2 boundary between the two independence grades).

    Examples
    --------
    >>> [strength_grade(p) for p in (0.0005, 0.005, 0.03, 0.1, 0.5)]
    ['strong dependence', 'dependence', 'weak dependence', 'weak independence', 'independence']
    """
    p = check_pvalue(pvalue)
    a = check_alpha(alpha, _INDEPENDENCE)
    if p > a:
        return GRADES[3] if p < _INDEPENDENCE else GRADES[4]
    if p < _STRONG:
        return GRADES[0]
    return GRADES[1] if p < _DEPENDENCE else GRADES[2]
