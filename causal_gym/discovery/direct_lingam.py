"""DirectLiNGAM (lingam package) for linear non-Gaussian data."""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_choice
from causal_gym.discovery.result import MethodOutput

__all__ = ["direct_lingam"]


def direct_lingam(data: np.ndarray, *, measure: str = "pwling") -> MethodOutput:
    """Run ``lingam.DirectLiNGAM`` and keep the edges with a nonzero estimated weight.

    lingam's ``adjacency_matrix_`` is the structural matrix ``B`` of ``x = B x + e``, so
    ``B[j, i]`` is the effect of ``i`` on ``j``; the weights reported here are ``B.T`` so that
    ``weights[i, j]`` is the effect of ``i`` on ``j``, matching the graph encoding.

    Options
    -------
    measure : {"pwling", "kernel"}
        Independence measure for the causal ordering (lingam's ``measure``; "kernel" is much
        slower).

    Extras
    ------
    weights : (d, d) float array
        Estimated ``i -> j`` effects (adaptive-lasso pruned, so absent edges are exactly 0).
    causal_order : list of int
        The estimated causal order, causes first.
    """
    from lingam import DirectLiNGAM

    measure = check_choice(measure, ("pwling", "kernel"), "measure")
    model = DirectLiNGAM(measure=measure).fit(data)
    weights = np.asarray(model.adjacency_matrix_, dtype=float).T.copy()
    graph = (weights != 0).astype(np.int8)
    return MethodOutput(graph=graph, extras={"weights": weights, "causal_order": [int(k) for k in model.causal_order_]})
