"""The algorithm menu behind one call: ``run(name, data, **options) -> DiscoveryResult``.

=================  ==============================================================================
name               method
=================  ==============================================================================
``pc``             stable PC, our skeleton search over :class:`causal_gym.stats.CITester`
                   (``test="fisherz"`` or ``"kci"``), graph-identical to causal-learn's
                   ``pc(stable=True, uc_rule=0, uc_priority=2)``; returns the deletion log
``fci``            causal-learn's FCI; PAG mapped to the encoding (tail-arrow edges directed,
                   all other adjacencies undirected), raw endpoint marks in ``extras["pag"]``
``ges``            causal-learn's GES with the BIC score; the CPDAG
``direct_lingam``  lingam's DirectLiNGAM; nonzero weights are edges
``anm``            RESIT with kernel ridge residuals (nonlinear additive noise); a DAG
``notears``        linear NOTEARS (our implementation); thresholded weights are edges
=================  ==============================================================================

Every method returns a graph in the causal_gym encoding (``A[i, j] = 1, A[j, i] = 0`` for
``i -> j``, both 1 for ``i -- j``). Options are keyword arguments with documented defaults (see
each method's docstring, e.g. ``help(causal_gym.discovery.pc.pc)``); an unknown option or an
invalid value raises ``ValueError`` -- nothing is accepted and ignored.

Examples
--------
>>> import numpy as np
>>> from causal_gym.discovery import run
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=500)
>>> data = np.column_stack([x, x + rng.normal(size=500), rng.normal(size=500)])
>>> result = run("pc", data, test="fisherz", alpha=0.05)
>>> result.graph.tolist()
[[0, 1, 0], [1, 0, 0], [0, 0, 0]]
>>> [(r.x, r.y, r.cond) for r in result.deletion_log]
[(0, 2, ()), (1, 2, ())]
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable

import numpy as np

from causal_gym._validation import check_choice, check_data
from causal_gym.discovery import anm, direct_lingam, fci, ges, notears, pc
from causal_gym.discovery.result import DeletionRecord, DiscoveryResult, MethodOutput

__all__ = ["run", "methods", "method_options", "DiscoveryResult", "DeletionRecord"]

_METHODS: dict[str, Callable[..., MethodOutput]] = {
    "pc": pc.pc,
    "fci": fci.fci,
    "ges": ges.ges,
    "direct_lingam": direct_lingam.direct_lingam,
    "anm": anm.anm,
    "notears": notears.notears,
}


def methods() -> tuple[str, ...]:
    """Names accepted by :func:`run`."""
    return tuple(_METHODS)


def method_options(name: str) -> dict[str, object]:
    """The named options of method ``name`` with their defaults.

    PC additionally forwards any further keyword to :class:`causal_gym.stats.CITester`.
    """
    name = check_choice(name, methods(), "method")
    params = inspect.signature(_METHODS[name]).parameters.values()
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _forwards_extra_options(name: str) -> bool:
    params = inspect.signature(_METHODS[name]).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def run(name: str, data: np.ndarray, **options: object) -> DiscoveryResult:
    """Run discovery method ``name`` on ``data``.

    Parameters
    ----------
    name : str
        One of :func:`methods`.
    data : array of shape (n_samples, n_variables)
        Real-valued data without NaN/inf or constant columns.
    **options
        Method options (:func:`method_options` lists them with their defaults).

    Returns
    -------
    DiscoveryResult
        Graph, resolved options, runtime, number of CI tests, PC's deletion log, extras.

    Raises
    ------
    ValueError
        Unknown method, unknown option or invalid option value (the message names the valid
        ones), or invalid data.
    """
    name = check_choice(name, methods(), "method")
    defaults = method_options(name)
    unknown = sorted(set(options) - set(defaults))
    if unknown and not _forwards_extra_options(name):
        raise ValueError(
            f"unknown option(s) {unknown} for method {name!r}; valid options: {', '.join(defaults) or 'none'}"
        )
    x = check_data(data)
    start = time.perf_counter()
    out = _METHODS[name](x, **options)
    runtime = time.perf_counter() - start
    return DiscoveryResult(
        method=name,
        graph=np.ascontiguousarray(out.graph, dtype=np.int8),
        options={**defaults, **options},
        runtime=runtime,
        n_tests=out.n_tests,
        deletion_log=out.deletion_log,
        extras=out.extras,
    )
