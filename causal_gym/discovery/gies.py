"""GIES (Hauser & Bühlmann, JMLR 2012) through the ``gies`` package, with interventional data.

How interventional rows reach the score
---------------------------------------
``gies.fit`` takes a list of environments (row blocks) and the intervention targets of each.
Rows are grouped by their intervention-mask pattern: all-zero rows form the observational
environment (listed first), every other distinct pattern one interventional environment whose
targets are the pattern's nonzero columns. Each row's regime is thus read from the mask alone;
two regimes with the same targets but different interventions (say two setpoints of one node)
share an environment, which is what the score assumes anyway (it models a hard intervention as
cutting the node from its parents, whatever its new distribution).

What the package computes (read from gies 0.0.3, ``scores/gauss_int_l0_pen.py``)
---------------------------------------------------------------------------------
The l0-penalised Gaussian likelihood of Hauser & Bühlmann: node ``k``'s local score uses only the
rows of environments that do not target ``k``, pooling their covariance matrices weighted by row
count; the penalty is ``lambda (|pa(k)| + 1)`` with ``lambda = 0.5 log N`` (BIC, ``N`` all rows).
Two details differ from pcalg's textbook score and are worth knowing:

- each environment is centred on its own mean before pooling, so every environment gets its own
  intercept for every variable: mean shifts between regimes carry no evidence (only covariance
  changes do), and an environment of a few rows loses a degree of freedom per variable;
- the family of targets must be conservative (every node un-intervened somewhere), which an
  observational environment guarantees.

The greedy search (forward, backward and turning phases, iterated) and the conversion to the
interventional essential graph follow the paper; the package checks itself against pcalg in its
own tests. Insert validity enumerates all semi-directed paths, so dense graphs with many nodes can
be slow; put a timeout on large runs.
"""

from __future__ import annotations

import numpy as np

from causal_gym._validation import check_real
from causal_gym.discovery.result import MethodOutput

__all__ = ["gies", "environments"]

_PHASES = ("forward", "backward", "turning")


def environments(data: np.ndarray, mask: np.ndarray | None) -> tuple[list[np.ndarray], list[list[int]]]:
    """Split rows into environments by intervention-mask pattern, observational first.

    Parameters
    ----------
    data : (n, d) array
    mask : (n, d) bool array or None
        None means every row is observational.

    Returns
    -------
    (list of arrays, list of target lists)
        Row blocks and their targets, in ``gies.fit`` form; interventional patterns in
        lexicographic order of their target lists.
    """
    if mask is None:
        return [data], [[]]
    patterns, inverse = np.unique(mask, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    targets = [np.flatnonzero(p).tolist() for p in patterns]
    order = sorted(range(len(patterns)), key=lambda k: (len(targets[k]) > 0, targets[k]))
    return [data[inverse == k] for k in order], [targets[k] for k in order]


def gies(data: np.ndarray, mask: np.ndarray | None = None, *, penalty: float = 0.5,
         phases: tuple[str, ...] = _PHASES, iterate: bool = True) -> MethodOutput:
    """Run GIES with the package's interventional Gaussian BIC score.

    Parameters
    ----------
    data : (n, d) array
    mask : (n, d) bool array, optional
        Intervention mask (passed by :func:`causal_gym.discovery.run`); without it every row is
        observational and GIES reduces to GES with the same score.

    Options
    -------
    penalty : float
        Penalty per free parameter in units of ``log N`` (0.5 is BIC, the package default).
    phases : tuple of {"forward", "backward", "turning"}
        Phases run in order.
    iterate : bool
        Repeat the phases until the score stops improving.

    Returns
    -------
    MethodOutput
        ``graph`` is the estimated interventional essential graph (a CPDAG when there are no
        interventions): directed edges where the class agrees, undirected ones elsewhere.

    Extras
    ------
    score : float
        Total penalised log-likelihood of the estimate.
    environments : list of dict
        ``{"targets": [...], "n_rows": k}`` per environment, in the order given to the score.

    Raises
    ------
    ValueError
        If some node is intervened on in every row (the family is not conservative), or on a
        bad option.
    """
    from gies import fit
    from gies.scores.gauss_int_l0_pen import GaussIntL0Pen

    penalty = check_real(penalty, "penalty", 0.0, strict=True)
    if isinstance(phases, (str, bytes)) or not phases or any(p not in _PHASES for p in phases):
        raise ValueError(f"phases must be a non-empty sequence drawn from {_PHASES}, got {phases!r}")
    if not isinstance(iterate, bool):
        raise ValueError(f"iterate must be a bool, got {iterate!r}")
    if mask is not None and mask.all(axis=0).any():
        always = np.flatnonzero(mask.all(axis=0)).tolist()
        raise ValueError(f"node(s) {always} are intervened on in every row; GIES needs rows where each node is not")
    blocks, targets = environments(data, mask)
    score = GaussIntL0Pen(blocks, targets, lmbda=penalty * np.log(data.shape[0]))
    estimate, total = fit(score, phases=list(phases), iterate=iterate)
    graph = (np.asarray(estimate) != 0).astype(np.int8)
    extras = {
        "score": float(total),
        "environments": [{"targets": t, "n_rows": int(b.shape[0])} for b, t in zip(blocks, targets)],
    }
    return MethodOutput(graph=graph, extras=extras)
