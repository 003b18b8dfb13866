"""XGES, the Extremely Greedy Equivalence Search (Nazaret & Blei, ICML 2024), through the ``xges`` package.

XGES searches the same space as GES (Markov equivalence classes, Chickering's Insert, Delete and
Reverse operators) but interleaves the phases: a deletion or reversal is applied as soon as it
improves the score instead of after every insertion, and an extended search then blocks each edge
of the result in turn, searches again, and keeps the change when the score improves. Its result is
a CPDAG whose BIC is at least that of GES's in the authors' experiments.

The score. The package's default scorer is a Gaussian BIC compiled with numba; this method hands
the search our :class:`~causal_gym.discovery.bic_score.GaussianBIC` instead (the package's
documented ``scorer`` hook) -- the same function, ``-n/2 (1 + log sigma2) - lambda (|pa| + 1)``
with the package's ``alpha`` equal to ``2 * penalty``. Why: (i) the numba kernels are compiled
eagerly on the first fit of every process, without numba's on-disk cache (their decorators do not
ask for it: with ``NUMBA_CACHE_DIR`` set no cache is written and a second process compiles
again), measured at 13-20 s per process on this machine against 0.2 s for the search at d=20,
n=1000, and the arena's time-limited calls run in fresh processes; with our score the search
ran as fast as with the compiled one (0.17 s against 0.20 s at d=20, 2.7 s against 2.0-2.6 s at
d=50); (ii) our score takes ``ridge`` and refuses collinear data with a clear error, where the
numba one has no floor (an exactly determined column leaves a residual variance at rounding level
and the log of it as a score); (iii) a test comparing XGES with ``ges_fast``
then compares two searches over one score. ``scorer="numba"`` runs the package's own scorer.
The returned graph is the CPDAG of a member DAG of XGES's class (:func:`causal_gym.graphs.dag_to_cpdag`),
so it is completed in our encoding whatever the package's internal PDAG holds.

Installation. ``xges`` 0.1.6 (the current release) declares ``numpy<2`` and ``numba<0.60``
(Poetry caret bounds), which pip's resolver would satisfy by downgrading numpy; the code runs
unchanged on numpy 2.2 and numba 0.68. So it is not an extra: install it without its declared
dependencies, ``pip install --no-deps xges==0.1.6`` (its one other dependency, ``sortedcontainers``,
comes with the ``arena`` extra). CI does exactly that (``.ci/run``).

Reference
---------
Nazaret, A. & Blei, D. (2024). Extremely Greedy Equivalence Search. ICML, PMLR 235.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from causal_gym._validation import check_choice, check_real
from causal_gym.discovery.bic_score import GaussianBIC
from causal_gym.discovery.result import MethodOutput

__all__ = ["xges", "INSTALL_HINT"]

INSTALL_HINT = "pip install --no-deps xges==0.1.6 sortedcontainers"
"""How to install the package (see the module docstring for why ``--no-deps``)."""


def _import_xges() -> type:
    try:
        from xges import XGES
    except ImportError as error:
        raise ImportError(
            f"method 'xges' needs the xges package: {INSTALL_HINT} (--no-deps: its metadata pins numpy<2, "
            "which pip would otherwise downgrade; the code runs on numpy 2)"
        ) from error
    return XGES


def _scorer(score: GaussianBIC) -> object:
    """Our BIC behind the package's ``ScorerInterface`` (``local_score(target, parents)``)."""
    from xges.scorer import ScorerInterface

    class _Adapter(ScorerInterface):
        def __init__(self) -> None:
            super().__init__()
            self.n_variables = score.d

        def local_score(self, target: int, parents: Iterable[int]) -> float:
            return score.local(int(target), (int(p) for p in parents))

    return _Adapter()


def xges(data: np.ndarray, *, penalty: float = 0.5, extended_search: bool = True, scorer: str = "causal_gym",
         ridge: float = 0.0) -> MethodOutput:
    """XGES with the Gaussian BIC (see the module docstring); the estimated CPDAG.

    Parameters
    ----------
    data : (n, d) array
        Real-valued data, no constant or collinear columns (unless ``ridge > 0``).

    Options
    -------
    penalty : float
        BIC penalty per free parameter in units of ``log(n)``, as for ``ges_fast`` (0.5 is the
        standard BIC; the package's default ``alpha=2`` is ``penalty=1``).
    extended_search : bool
        True: XGES; False: XGES-0, the interleaved greedy search without the edge-blocking restarts.
    scorer : {"causal_gym", "numba"}
        ``"causal_gym"``: our :class:`~causal_gym.discovery.bic_score.GaussianBIC` (no compilation);
        ``"numba"``: the package's own compiled BIC (13-20 s of compilation per process, measured).
    ridge : float
        Relative variance floor of our score (:mod:`~causal_gym.discovery.bic_score`); only with
        ``scorer="causal_gym"``.

    Extras
    ------
    score : float
        Total BIC of the returned class by our score (higher is better).

    Raises
    ------
    ImportError
        If ``xges`` is not installed (the message gives the install command).
    ValueError
        On a bad option, or collinear data with ``ridge=0``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=500); c = rng.normal(size=500)
    >>> data = np.column_stack([a, a + c + rng.normal(size=500), c])
    >>> xges(data).graph.tolist()
    [[0, 1, 0], [0, 0, 0], [0, 1, 0]]
    """
    from causal_gym.graphs import dag_to_cpdag

    penalty = check_real(penalty, "penalty", 0.0, strict=True)
    if not isinstance(extended_search, bool):
        raise ValueError(f"extended_search must be True or False, got {extended_search!r}")
    scorer = check_choice(scorer, ("causal_gym", "numba"), "scorer")
    ridge = check_real(ridge, "ridge", 0.0)
    if ridge and scorer == "numba":
        raise ValueError("ridge applies to scorer='causal_gym' only; the package's numba scorer has no variance floor")
    XGES = _import_xges()
    score = GaussianBIC.from_data(data, penalty, ridge)
    model = XGES(alpha=2.0 * penalty)
    if scorer == "causal_gym":
        model.fit(data, extended_search=extended_search, scorer=_scorer(score), verbose=0)
    else:
        model.fit(np.ascontiguousarray(data, dtype=np.float64), extended_search=extended_search, verbose=0)
    dag = np.asarray(model.get_a_dag().to_adjacency_matrix(), dtype=np.int8)
    return MethodOutput(graph=dag_to_cpdag(dag), extras={"score": score.total(dag)})
