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
``gies``           the ``gies`` package's GIES; uses an intervention ``mask`` when given; returns
                   the interventional essential graph (a CPDAG without interventions)
``dagma``          linear DAGMA (``dagma`` package); thresholded weights are edges
``random_regress`` RandomRegress: random order, adaptive-Lasso regression on predecessors
``ges_fast``       our GES (Chickering 2002) with the same BIC: causal-learn's CPDAG, rescoring
                   only the operators a move touched (:mod:`~causal_gym.discovery.greedy`)
``gies_fast``      our GIES (Hauser & Bühlmann 2012) with the ``gies`` package's score: its
                   interventional essential graph, by the same incremental search
``xges``           XGES (``xges`` package, installed with ``--no-deps``) searching our Gaussian
                   BIC; the CPDAG (:mod:`~causal_gym.discovery.xges_search`)
``notears_mlp``    NOTEARS-MLP (gcastle's ``NotearsNonlinear``, torch) with a time limit; a DAG
``das``            DAS (our implementation): SCORE's Stein-Hessian leaf order, candidate edges from
                   the Hessian's off-diagonal, CAM spline pruning; a DAG (:mod:`~causal_gym.discovery.das`)
``sdcd``           SDCD (``sdcd`` package, ``--no-deps``, torch): two-stage MLP fit with the spectral
                   acyclicity penalty and a time limit; uses an intervention ``mask`` when given; a DAG
``alternet``       our amortized AlterNet (:mod:`~causal_gym.discovery.amortized`, torch), loaded
                   once per process; uses an intervention ``mask`` when given; a directed graph
                   from its edge probabilities, the probabilities in extras
``cdfm``           the released CDFM network (:mod:`~causal_gym.discovery.amortized`, ``cdfm-base``),
                   from the checkpoint folder ``checkpoint=`` or ``$CAUSAL_GYM_CDFM_CHECKPOINT``
                   names; :func:`methods` lists it only when the variable names one
``avici``          AVICI (Lorch et al. 2022) through the ``avici`` package (JAX), from ``checkpoint=``
                   or ``$CAUSAL_GYM_AVICI_CHECKPOINT``; uses an intervention ``mask`` when given;
                   listed by :func:`methods` only when the variable names a checkpoint
``igsp``           our IGSP (Wang et al. 2017): greedy search over permutations, Fisher-z CI tests
                   on the observational rows, invariance tests against each setting's rows; GSP
                   without a mask; a DAG (:mod:`~causal_gym.discovery.igsp`)
``cdis``           our CDIS (Dai et al. 2025): soft interventions, unknown targets, possible
                   selection bias; per-setting PAGs of the pooled data with an indicator refine the
                   observational PAG; ``->`` directed, other adjacencies undirected, the PAG in
                   extras (:mod:`~causal_gym.discovery.cdis`)
=================  ==============================================================================

Interventional data: ``run(name, data, mask=mask)`` passes an ``(n, d)`` boolean intervention
mask (``mask[i, j]`` True when node ``j`` is a target in row ``i``) to the methods in
:data:`INTERVENTIONAL_METHODS`; giving a mask to any other method is a ``ValueError``, never a
silently ignored argument. Third-party packages (causal-learn, lingam, gies, dagma,
scikit-learn, xges, gcastle, sdcd) are imported inside the methods, so importing this module stays cheap.

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
import warnings
from collections.abc import Callable, Mapping

import numpy as np

from causal_gym._validation import check_choice, check_data
from causal_gym.discovery import (
    amortized,
    anm,
    cdis,
    dagma,
    das,
    direct_lingam,
    fci,
    ges,
    gies,
    greedy,
    igsp,
    notears,
    notears_mlp,
    pc,
    random_regress,
    sdcd,
    xges_search,
)
from causal_gym.discovery.amortized import AMORTIZED_METHODS
from causal_gym.discovery.result import DeletionRecord, DiscoveryResult, MethodOutput

__all__ = [
    "run",
    "methods",
    "check_method",
    "method_options",
    "supports_interventions",
    "INTERVENTIONAL_METHODS",
    "DiscoveryResult",
    "DeletionRecord",
]

_METHODS: dict[str, Callable[..., MethodOutput]] = {
    "pc": pc.pc,
    "fci": fci.fci,
    "ges": ges.ges,
    "direct_lingam": direct_lingam.direct_lingam,
    "anm": anm.anm,
    "notears": notears.notears,
    "gies": gies.gies,
    "dagma": dagma.dagma,
    "random_regress": random_regress.random_regress,
    "ges_fast": greedy.ges_fast,
    "gies_fast": greedy.gies_fast,
    "xges": xges_search.xges,
    "notears_mlp": notears_mlp.notears_mlp,
    "das": das.das,
    "sdcd": sdcd.sdcd,
    "igsp": igsp.igsp,
    "cdis": cdis.cdis,
    "alternet": amortized.alternet,
    "cdfm": amortized.cdfm,
    "avici": amortized.avici,
}

_NEEDS_CHECKPOINT = {"cdfm": amortized.cdfm_checkpoint.require, "avici": amortized.avici_checkpoint.require}
"""Methods whose weights are not shipped: runnable with a ``checkpoint`` option, listed by
:func:`methods` only when configured on this machine (:func:`.amortized.available_methods`)."""

INTERVENTIONAL_METHODS = ("gies", "gies_fast", "sdcd", "igsp", "cdis", "avici", "alternet")
"""Methods that take an intervention mask (their second positional parameter)."""


def methods(kind: str = "batch") -> tuple[str, ...]:
    """Names :func:`run` can run here without further options (``kind="batch"``), or the names
    :func:`.amortized.load` knows (``"amortized"``).

    ``cdfm`` is among the batch names only when ``$CAUSAL_GYM_CDFM_CHECKPOINT`` names a checkpoint
    and ``cdfm-base`` is installed, ``avici`` likewise with ``$CAUSAL_GYM_AVICI_CHECKPOINT`` and
    ``avici``; :func:`run` and :func:`check_method` also take either with a ``checkpoint`` option.
    """
    if check_choice(kind, ("batch", "amortized"), "kind") == "amortized":
        return tuple(AMORTIZED_METHODS)
    configured = amortized.available_methods()
    return tuple(name for name in _METHODS if name not in _NEEDS_CHECKPOINT or name in configured)


def check_method(name: str, options: Mapping[str, object] | None = None) -> str:
    """``name`` when :func:`run` can run it here with ``options`` (their values are checked by the run).

    Menus and agents call this when they are built, so a method that cannot run fails there, not
    in an episode.

    Raises
    ------
    ValueError
        An unknown method.
    FileNotFoundError, ImportError
        ``cdfm`` or ``avici`` without a checkpoint (neither ``options["checkpoint"]`` nor the
        environment variable names one) or without its package; the message says how to get them.
    """
    name = check_choice(name, tuple(_METHODS), "method")
    if name in _NEEDS_CHECKPOINT:
        _NEEDS_CHECKPOINT[name]((options or {}).get("checkpoint"))  # type: ignore[arg-type]
    return name


def method_options(name: str) -> dict[str, object]:
    """The named options of method ``name`` with their defaults.

    PC additionally forwards any further keyword to :class:`causal_gym.stats.CITester`.
    """
    name = check_choice(name, tuple(_METHODS), "method")
    params = inspect.signature(_METHODS[name]).parameters.values()
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def supports_interventions(name: str) -> bool:
    """Whether method ``name`` uses an intervention mask (see :data:`INTERVENTIONAL_METHODS`)."""
    return check_choice(name, tuple(_METHODS), "method") in INTERVENTIONAL_METHODS


def _check_mask(mask: object, shape: tuple[int, int]) -> np.ndarray:
    """Validate an intervention mask: boolean (or 0/1 integer) of the data's shape."""
    m = np.asarray(mask)
    if m.shape != shape:
        raise ValueError(f"mask must have the data's shape {shape}, got {m.shape}")
    if m.dtype != bool and not (m.dtype.kind in "iu" and np.isin(m, (0, 1)).all()):
        raise ValueError(f"mask must be boolean (or 0/1 integers), got dtype {m.dtype}")
    return m.astype(bool)


def _forwards_extra_options(name: str) -> bool:
    params = inspect.signature(_METHODS[name]).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def run(name: str, data: np.ndarray, mask: np.ndarray | None = None, **options: object) -> DiscoveryResult:
    """Run discovery method ``name`` on ``data``.

    Parameters
    ----------
    name : str
        One of :func:`methods`, or ``cdfm`` / ``avici`` with a ``checkpoint`` option.
    data : array of shape (n_samples, n_variables)
        Real-valued data without NaN/inf or constant columns.
    mask : array of shape (n_samples, n_variables), optional
        Intervention mask, for the methods in :data:`INTERVENTIONAL_METHODS` only.
    **options
        Method options (:func:`method_options` lists them with their defaults).

    Returns
    -------
    DiscoveryResult
        Graph, resolved options, runtime, number of CI tests, PC's deletion log, extras and the
        numerical RuntimeWarnings the method raised (counted, not printed).

    Raises
    ------
    ValueError
        Unknown method, unknown option or invalid option value (the message names the valid
        ones), invalid data, or a mask for a method that does not use one.
    FileNotFoundError, ImportError
        ``cdfm`` or ``avici`` without a configured checkpoint or package (see :func:`check_method`).
    """
    name = check_choice(name, tuple(_METHODS), "method")
    defaults = method_options(name)
    unknown = sorted(set(options) - set(defaults))
    if unknown and not _forwards_extra_options(name):
        raise ValueError(
            f"unknown option(s) {unknown} for method {name!r}; valid options: {', '.join(defaults) or 'none'}"
        )
    x = check_data(data)
    if mask is not None and name not in INTERVENTIONAL_METHODS:
        raise ValueError(
            f"method {name!r} does not use intervention masks; methods that do: {', '.join(INTERVENTIONAL_METHODS)}"
        )
    arguments = (x,) if mask is None else (x, _check_mask(mask, x.shape))
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _METHODS[name](*arguments, **options)
    runtime = time.perf_counter() - start
    numerical: dict[str, int] = {}
    for warning in caught:
        if issubclass(warning.category, RuntimeWarning):
            key = str(warning.message)
            numerical[key] = numerical.get(key, 0) + 1
        else:  # not a numerical one: pass it on as raised
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return DiscoveryResult(
        method=name,
        graph=np.ascontiguousarray(out.graph, dtype=np.int8),
        options={**defaults, **options},
        runtime=runtime,
        n_tests=out.n_tests,
        deletion_log=out.deletion_log,
        extras=out.extras,
        warnings=numerical,
    )
