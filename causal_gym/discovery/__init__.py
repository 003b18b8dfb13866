"""The algorithm menu behind one call: ``run(name, data, **options) -> DiscoveryResult``.

================== =============================================================================
name               method
================== =============================================================================
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
                   once per process; uses an intervention ``mask`` when given; a DAG from its edge
                   probabilities (thresholded, then oriented acyclic), the probabilities in extras
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
================== =============================================================================

Interventional data: ``run(name, data, mask=mask)`` passes an ``(n, d)`` boolean intervention
mask (``mask[i, j]`` True when node ``j`` is a target in row ``i``) to the methods in
:data:`INTERVENTIONAL_METHODS`; giving a mask to any other method is a ``ValueError``, never a
silently ignored argument. Third-party packages (causal-learn, lingam, gies, dagma,
scikit-learn, xges, gcastle, sdcd) are imported inside the methods, so importing this module stays cheap.

Every method returns a graph in the causal_gym encoding (``A[i, j] = 1, A[j, i] = 0`` for
``i -> j``, both 1 for ``i -- j``). Options are keyword arguments with documented defaults (see
each method's docstring, e.g. ``help(causal_gym.discovery.pc.pc)``); an unknown option or an
invalid value raises ``ValueError`` -- nothing is accepted and ignored.

Methods of your own: a method is a function ``fn(data, *, mask=None, **options)`` returning a
``(d, d)`` graph in this encoding or a :class:`MethodOutput` (its ``extras`` default to empty).
:func:`run` -- and every menu, agent and command that takes a method name -- takes it by import
path ``"package.module:function"`` (what worker processes import), by name once registered
(:func:`register`, or an entry point of the group ``causal_gym.methods`` for an installed
package) or as the function itself (:mod:`.registry`). What it returns is checked
(:func:`~.result.check_output`: shape, values, diagonal) with an error naming it, and caches and
run stores key its results by a digest of its code, so an edited method is run again.
:func:`causal_gym.testing.check_method` is the battery to run on it in your own tests.

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
from typing import Any

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
from causal_gym.discovery.registry import KINDS, Method, find, register, registered, unregister
from causal_gym.discovery.result import DeletionRecord, DiscoveryResult, InvalidOutput, MethodOutput, check_output

__all__ = [
    "run",
    "methods",
    "resolve",
    "register",
    "unregister",
    "Method",
    "MethodOutput",
    "InvalidOutput",
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


def _builtin(name: str) -> Method:
    kind = "amortized" if name in AMORTIZED_METHODS else "batch"
    return Method(name, _METHODS[name], name in INTERVENTIONAL_METHODS, kind, builtin=True)


def resolve(method: str | Callable[..., Any] | Method) -> Method:
    """The :class:`Method` a reference stands for: a built-in name, a name given with :func:`register`
    or by an installed package's entry point (:data:`~.registry.ENTRY_POINT_GROUP`), an import path
    ``"package.module:function"``, a function, or a :class:`Method` (returned as it is).

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones and the import-path form), or an import
        path that does not lead to a function.
    """
    if isinstance(method, Method):
        return method
    if isinstance(method, str) and method in _METHODS:
        return _builtin(method)
    if not isinstance(method, str) and not callable(method):
        raise ValueError(f"a method is a name, an import path 'package.module:function' or a function, got {method!r}")
    found = find(method)
    if found is None:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(map(repr, methods()))}, or give a "
                         "function's import path 'package.module:function' (causal_gym.discovery.register names one)")
    return found


def methods(kind: str = "batch") -> tuple[str, ...]:
    """Names :func:`run` can run here without further options (``kind="batch"``), or the names of
    amortized methods (``"amortized"``: those :func:`.amortized.load` knows, then registered ones).

    Built-in names come first, then those given with :func:`register` and those installed packages
    declare (:data:`~.registry.ENTRY_POINT_GROUP`). ``cdfm`` is among the batch names only when
    ``$CAUSAL_GYM_CDFM_CHECKPOINT`` names a checkpoint and ``cdfm-base`` is installed, ``avici``
    likewise with ``$CAUSAL_GYM_AVICI_CHECKPOINT`` and ``avici``; :func:`run` and
    :func:`check_method` also take either with a ``checkpoint`` option.
    """
    if check_choice(kind, KINDS, "kind") == "amortized":
        return tuple(AMORTIZED_METHODS) + registered("amortized")
    configured = amortized.available_methods()
    builtin = tuple(name for name in _METHODS if name not in _NEEDS_CHECKPOINT or name in configured)
    return builtin + registered()


def check_method(method: str | Callable[..., Any] | Method, options: Mapping[str, object] | None = None) -> str:
    """The name of ``method`` (a reference, see :func:`resolve`) when :func:`run` can run it here with
    ``options`` (their values are checked by the run).

    Menus and agents call this when they are built, so a method that cannot run fails there, not
    in an episode. The full battery a method developer runs on their method is
    :func:`causal_gym.testing.check_method`.

    Raises
    ------
    ValueError
        An unknown method, or an import path that does not lead to a function.
    FileNotFoundError, ImportError
        ``cdfm`` or ``avici`` without a checkpoint (neither ``options["checkpoint"]`` nor the
        environment variable names one) or without its package; the message says how to get them.
    """
    resolved = resolve(method)
    if resolved.builtin and resolved.name in _NEEDS_CHECKPOINT:
        _NEEDS_CHECKPOINT[resolved.name]((options or {}).get("checkpoint"))  # type: ignore[arg-type]
    return resolved.name


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    """The options of a method's function: its named parameters after the data, less the mask."""
    return [p for p in list(inspect.signature(function).parameters.values())[1:]
            if p.name != "mask" and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def method_options(method: str | Callable[..., Any] | Method) -> dict[str, object]:
    """The named options of ``method`` with their defaults (``inspect.Parameter.empty`` for one without).

    PC additionally forwards any further keyword to :class:`causal_gym.stats.CITester`.
    """
    return {p.name: p.default for p in _parameters(resolve(method).function)}


def supports_interventions(method: str | Callable[..., Any] | Method) -> bool:
    """Whether ``method`` uses an intervention mask (the built-ins of :data:`INTERVENTIONAL_METHODS`,
    and methods registered with ``interventional=True``)."""
    return resolve(method).interventional


def _check_mask(mask: object, shape: tuple[int, int]) -> np.ndarray:
    """Validate an intervention mask: boolean (or 0/1 integer) of the data's shape."""
    m = np.asarray(mask)
    if m.shape != shape:
        raise ValueError(f"mask must have the data's shape {shape}, got {m.shape}")
    if m.dtype != bool and not (m.dtype.kind in "iu" and np.isin(m, (0, 1)).all()):
        raise ValueError(f"mask must be boolean (or 0/1 integers), got dtype {m.dtype}")
    return m.astype(bool)


def _forwards_extra_options(function: Callable[..., Any]) -> bool:
    params = inspect.signature(function).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def run(method: str | Callable[..., Any] | Method, data: np.ndarray, mask: np.ndarray | None = None,
        **options: object) -> DiscoveryResult:
    """Run discovery method ``method`` on ``data``.

    Parameters
    ----------
    method : str, callable or Method
        One of :func:`methods` (or ``cdfm`` / ``avici`` with a ``checkpoint`` option), a name given
        with :func:`register`, an import path ``"package.module:function"``, or the function itself
        (see :func:`resolve`).
    data : array of shape (n_samples, n_variables)
        Real-valued data without NaN/inf or constant columns.
    mask : array of shape (n_samples, n_variables), optional
        Intervention mask, for interventional methods only (:func:`supports_interventions`); a
        method of your own receives it as ``mask=``.
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
    InvalidOutput
        (a ``ValueError``) The method returned something that is not a graph of the data's
        variables in the causal_gym encoding (:func:`~.result.check_output`); the message names it.
    FileNotFoundError, ImportError
        ``cdfm`` or ``avici`` without a configured checkpoint or package (see :func:`check_method`).
    """
    resolved = resolve(method)
    defaults = {p.name: p.default for p in _parameters(resolved.function)}
    unknown = sorted(set(options) - set(defaults))
    if unknown and not _forwards_extra_options(resolved.function):
        raise ValueError(f"unknown option(s) {unknown} for method {resolved.name!r}; valid options: "
                         f"{', '.join(defaults) or 'none'}")
    x = check_data(data)
    if mask is not None and not resolved.interventional:
        raise ValueError(f"method {resolved.name!r} does not use intervention masks; methods that do: "
                         f"{', '.join(name for name in methods() if supports_interventions(name))}")
    checked_mask = None if mask is None else _check_mask(mask, x.shape)
    if resolved.builtin:
        arguments, keywords = ((x,) if checked_mask is None else (x, checked_mask)), {}
    else:  # a method of the plug-in contract takes the mask by keyword, and only when there is one
        arguments, keywords = (x,), ({} if checked_mask is None else {"mask": checked_mask})
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        raw = resolved.function(*arguments, **keywords, **options)
    runtime = time.perf_counter() - start
    out = check_output(resolved.name, raw, x.shape[1])
    numerical: dict[str, int] = {}
    for warning in caught:
        if issubclass(warning.category, RuntimeWarning):
            key = str(warning.message)
            numerical[key] = numerical.get(key, 0) + 1
        else:  # not a numerical one: pass it on as raised
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return DiscoveryResult(
        method=resolved.name,
        graph=out.graph,
        options={**{k: v for k, v in defaults.items() if v is not inspect.Parameter.empty}, **options},
        runtime=runtime,
        n_tests=out.n_tests,
        deletion_log=out.deletion_log,
        extras=dict(out.extras),
        warnings=numerical,
    )
