"""GES (causal-learn) returning the CPDAG in the causal_gym encoding."""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.discovery.result import MethodOutput

__all__ = ["ges"]

# The data here are continuous, so only the linear-Gaussian BIC applies; causal-learn's kernel
# scores (CV / marginal likelihood in an RKHS) take minutes per graph at n=600.
_SCORES = {"bic": "local_score_BIC"}


def ges(data: np.ndarray, *, score: str = "bic", penalty: float = 0.5,
        max_parents: int | None = None) -> MethodOutput:
    """Run causal-learn's greedy equivalence search.

    Options
    -------
    score : {"bic"}
        Local score (linear-Gaussian BIC).
    penalty : float
        BIC penalty per free parameter in units of ``log(n)`` (causal-learn's ``lambda_value``;
        0.5 is the standard BIC).
    max_parents : int or None
        causal-learn's ``maxP``: an insertion is considered only while the child has at most
        this many parents (None: no cap).

    Extras
    ------
    score : float
        Total score of the returned equivalence class (higher is better).
    """
    from causallearn.search.ScoreBased.GES import ges as causallearn_ges

    from causal_gym.graphs import from_causallearn

    score = check_choice(score, tuple(_SCORES), "score")
    penalty = check_real(penalty, "penalty", 0.0, strict=True)
    max_parents = check_count(max_parents, "max_parents", 0, allow_none=True)
    record = causallearn_ges(data, score_func=_SCORES[score], maxP=max_parents, lambda_value=penalty)
    return MethodOutput(graph=from_causallearn(record["G"]), extras={"score": float(np.squeeze(record["score"]))})
