"""RandomRegress: CausalArena's random-order regression control (Appendix B.4).

The paper defines it as "a fixed-seed random-order regression baseline [that] outputs a directed
graph from nonzero regression support" and gives no further detail. We follow the baseline of
the same name in Reisach, Seiler & Weichwald ("Beware of the Simulated DAG!", NeurIPS 2021; the
varsortability paper CausalArena cites), which fits that description:

1. draw a uniformly random order of the variables from the seed;
2. regress each variable on all variables before it in the order, with an adaptive Lasso: an
   ordinary least-squares fit gives weights ``|b_ols|``, the predecessors are rescaled by them,
   a Lasso path is fitted by LARS and its penalty chosen by BIC (scikit-learn's ``LassoLarsIC``),
   and the coefficients are mapped back (multiplied by ``|b_ols|``);
3. every nonzero coefficient is an edge from the predecessor to the variable.

The graph is a DAG consistent with the random order, so it is right about directions only by
chance; its edge scores ``|coefficient|`` give AUROC/AP near chance level, as in the paper's
tables (AUROC 0.50).
"""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_count
from causal_gym.discovery.result import MethodOutput

__all__ = ["random_regress"]


def _adaptive_lasso(predictors: np.ndarray, response: np.ndarray) -> np.ndarray:
    """Adaptive-Lasso coefficients (OLS-weighted LARS path, BIC-selected penalty)."""
    from sklearn.linear_model import LassoLarsIC, LinearRegression

    scale = np.abs(LinearRegression().fit(predictors, response).coef_)
    lasso = LassoLarsIC(criterion="bic").fit(predictors * scale, response)
    return lasso.coef_ * scale


def random_regress(data: np.ndarray, *, seed: int = 0) -> MethodOutput:
    """Regress each variable on its predecessors in a random order; nonzero coefficients are edges.

    Options
    -------
    seed : int
        Seeds the random order (``numpy.random.default_rng(seed).permutation(d)``).

    Extras
    ------
    order : list of int
        The random order, first variable first.
    weights : (d, d) float array
        ``weights[i, j]`` is the coefficient of ``i`` in the regression of ``j``.
    edge_scores : (d, d) float array
        ``|weights|`` (for AUROC / AP).
    """
    seed = check_count(seed, "seed", minimum=0)
    d = data.shape[1]
    order = np.random.default_rng(seed).permutation(d)
    weights = np.zeros((d, d))
    for k in range(1, d):
        before, target = order[:k], order[k]
        weights[before, target] = _adaptive_lasso(data[:, before], data[:, target])
    graph = (weights != 0).astype(np.int8)
    extras = {"order": order.tolist(), "weights": weights, "edge_scores": np.abs(weights)}
    return MethodOutput(graph=graph, extras=extras)
