"""FCI (causal-learn) with its partial ancestral graph mapped to the causal_gym encoding."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from causal_gym._validation import check_choice, check_count, check_level
from causal_gym.discovery.result import MethodOutput

__all__ = ["fci", "pag_to_graph"]

# causal-learn's endpoint codes: G.graph[i, j] is the mark at i of the edge between i and j.
_TAIL, _ARROW = -1, 1


def pag_to_graph(pag: np.ndarray) -> np.ndarray:
    """Map a PAG (causal-learn endpoint matrix) to the causal_gym encoding.

    ``i -> j`` exactly when the edge has a tail at ``i`` and an arrowhead at ``j`` (a visible
    ancestral relation). Every other adjacency (``o-o``, ``o->``, ``<->``, ``--``) carries no
    orientation the encoding can express without claiming more than FCI found, so it becomes
    undirected ``i -- j``.
    """
    marks = np.asarray(pag)
    adjacent = (marks != 0) | (marks.T != 0)
    directed = (marks == _TAIL) & (marks.T == _ARROW)
    return (adjacent & ~directed.T).astype(np.int8)


def fci(data: np.ndarray, *, test: str = "fisherz", alpha: float = 0.05, depth: int = -1,
        max_path_length: int = -1) -> MethodOutput:
    """Run causal-learn's FCI.

    Options
    -------
    test : {"fisherz", "kci"}
        CI test used by causal-learn (its own implementation; the tests are not counted in
        ``n_tests``, which is 0).
    alpha : float
        Significance level.
    depth : int
        Maximum conditioning-set size of the adjacency search, -1 for unlimited.
    max_path_length : int
        Maximum discriminating-path length, -1 for unlimited.

    Extras
    ------
    pag : (d, d) int8 array
        causal-learn's endpoint matrix as returned: ``pag[i, j]`` is the mark at ``i`` of the
        ``i``-``j`` edge (0 none, -1 tail, 1 arrowhead, 2 circle). The graph is
        :func:`pag_to_graph` of it.
    """
    from causallearn.search.ConstraintBased.FCI import fci as causallearn_fci

    test = check_choice(test, ("fisherz", "kci"), "test")
    alpha = check_level(alpha, "alpha")
    depth = check_count(depth, "depth", -1)
    max_path_length = check_count(max_path_length, "max_path_length", -1)
    # causal-learn prints each orientation ("X1 --> X4") even with verbose=False; keep stdout clean.
    with contextlib.redirect_stdout(io.StringIO()):
        pag, _ = causallearn_fci(data, test, alpha, depth=depth, max_path_length=max_path_length,
                                 verbose=False, show_progress=False)
    marks = np.asarray(pag.graph, dtype=np.int8)
    return MethodOutput(graph=pag_to_graph(marks), extras={"pag": marks})
