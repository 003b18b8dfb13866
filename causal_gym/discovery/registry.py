"""Discovery methods beyond causal_gym's own: registered by name, declared by installed packages, or
given by import path.

A method is a function ``fn(data, *, mask=None, **options)`` returning the graph -- a ``(d, d)``
array in the causal_gym encoding -- or a :class:`~causal_gym.discovery.result.MethodOutput` with
extras. It is reached by a *reference*, a string that every process can resolve:

- an import path ``"package.module:function"``, which is what worker processes (the runner's pool,
  the worker of a time-limited menu run, Ray) import, so a method works wherever the built-in ones
  do as long as its module is importable there;
- a name given with :func:`register` in this process (a worker sees it only if importing the
  function's module registers it too; the import path always works);
- a name declared by an installed package under the entry-point group :data:`ENTRY_POINT_GROUP`
  (``[project.entry-points."causal_gym.methods"] pcorr = "mypkg.methods:pcorr"``), which every
  process of that environment sees. The entry point names the function, or a :class:`Method` built
  with ``Method(name, fn, interventional=True)`` for one that reads intervention masks.

:func:`causal_gym.discovery.run` resolves a reference to a :class:`Method`: the function, whether it
reads an intervention mask, and its kind. A :class:`Method` pickles its function by reference (or,
from a script's ``__main__`` or a notebook, by value through cloudpickle), so handing the resolved
record to a worker carries what was registered here.

Examples
--------
>>> import numpy as np
>>> from causal_gym import discovery
>>> def empty(data, *, mask=None):
...     return np.zeros((data.shape[1], data.shape[1]), dtype=np.int8)
>>> method = discovery.register("empty_graph", empty)
>>> int(discovery.run("empty_graph", np.random.default_rng(0).normal(size=(50, 3))).graph.sum())
0
>>> discovery.unregister("empty_graph")
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from causal_gym._code import code_digest, describe, load_reference

__all__ = ["ENTRY_POINT_GROUP", "KINDS", "Method", "register", "unregister", "registered", "find"]

ENTRY_POINT_GROUP = "causal_gym.methods"
"""The packaging entry-point group under which installed packages declare methods by name."""

KINDS = ("batch", "amortized")
"""What a method's cost is: ``"batch"`` pays it all per dataset; ``"amortized"`` loads a model once
per process, then infers each dataset (:mod:`causal_gym.discovery.amortized`)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True, eq=False)
class Method:
    """A resolved discovery method.

    Attributes
    ----------
    name : str
        What results, records and tables call it: a built-in or registered name, or the import path.
    function : callable
        ``function(data, *, mask=None, **options)`` -> graph or MethodOutput (built-ins take the mask
        positionally; :func:`~causal_gym.discovery.run` calls each as it expects).
    interventional : bool
        Whether it reads an intervention mask (``run`` passes one only then; a mask for any other
        method is an error, never silently dropped).
    kind : str
        One of :data:`KINDS`.
    builtin : bool
        One of causal_gym's own methods (their cache keys are versioned by the library's code).
    """

    name: str
    function: Callable[..., Any]
    interventional: bool = False
    kind: str = "batch"
    builtin: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a method needs a non-empty string name, got {self.name!r}")
        if not callable(self.function):
            raise ValueError(f"method {self.name!r}: {self.function!r} is not callable")
        if not isinstance(self.interventional, bool):
            raise ValueError(f"method {self.name!r}: interventional must be True or False, got {self.interventional!r}")
        if self.kind not in KINDS:
            raise ValueError(f"method {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")

    @functools.cached_property
    def digest(self) -> str | None:
        """What the method's code is, for cache keys and run stores (:func:`causal_gym._code.code_digest`:
        its module's source and installing distribution); None for a built-in, whose cached results
        are keyed by causal_gym's own code versions."""
        return None if self.builtin else code_digest(self.function)

    def renamed(self, name: str) -> Method:
        """The same method under another name."""
        return Method(name, self.function, self.interventional, self.kind, self.builtin)

    def __repr__(self) -> str:
        flags = ", interventional" if self.interventional else ""
        return f"Method({self.name!r}, {describe(self.function)}{flags}, kind={self.kind!r})"


_REGISTERED: dict[str, Method] = {}


def _builtin_names() -> tuple[str, ...]:
    from causal_gym.discovery import _METHODS  # the package's own table (imported once it is loaded)

    return tuple(_METHODS)


def register(name: str, function: Callable[..., Any], *, interventional: bool = False,
             kind: str = "batch") -> Method:
    """Make ``function`` a discovery method called ``name`` in this process.

    Every menu, agent and command that takes a method name then takes ``name``; registering a name
    again replaces it (a notebook re-running its cell). A worker process knows the name when
    importing ``function``'s module registers it (a plug-in does so at import, or declares an entry
    point of :data:`ENTRY_POINT_GROUP`); otherwise give the worker-proof import path
    ``"package.module:function"``.

    Parameters
    ----------
    name : str
        Letters, digits, ``_ . -`` (no ``:``, which marks an import path); not a built-in name.
    function : callable
        ``function(data, *, mask=None, **options)`` returning a ``(d, d)`` graph in the causal_gym
        encoding or a :class:`~causal_gym.discovery.result.MethodOutput`.
    interventional : bool
        It reads an ``(n, d)`` boolean intervention mask, passed as ``mask=`` when the data has one.
    kind : {"batch", "amortized"}
        See :data:`KINDS`.

    Returns
    -------
    Method
        The registered record.

    Raises
    ------
    ValueError
        A name that is malformed or built in, or a function that is not callable.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"a method name is letters, digits, '_', '.', '-' (no ':', which marks an import path), "
                         f"got {name!r}")
    if name in _builtin_names():
        raise ValueError(f"{name!r} is one of causal_gym's own methods; register yours under another name")
    method = Method(name, function, interventional, kind)
    _REGISTERED[name] = method
    return method


def unregister(name: str) -> None:
    """Forget a name :func:`register` gave (a no-op for an unknown one)."""
    _REGISTERED.pop(name, None)


@functools.lru_cache(maxsize=1)
def _entry_points() -> Mapping[str, Any]:
    from importlib.metadata import entry_points

    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def _from_entry_point(name: str) -> Method:
    point = _entry_points()[name]
    target = point.load()
    if isinstance(target, Method):
        return target.renamed(name)
    if not callable(target):
        raise ValueError(f"entry point {name!r} of {ENTRY_POINT_GROUP} ({point.value}) is neither a function nor a "
                         "causal_gym.discovery.registry.Method")
    return Method(name, target)


def registered(kind: str | None = None) -> tuple[str, ...]:
    """The names :func:`register` gave in this process, then those of installed packages' entry
    points; with ``kind``, those of that kind only (which loads the entry points: one that fails to
    load is left out here, and resolving its name raises its error)."""
    names = [name for name, method in _REGISTERED.items() if kind is None or method.kind == kind]
    builtin = _builtin_names()
    for name in _entry_points():
        if name in _REGISTERED or name in builtin:  # a built-in name always means the built-in method
            continue
        if kind is not None:
            try:
                if _from_entry_point(name).kind != kind:
                    continue
            except Exception:  # noqa: BLE001 -- a broken plug-in must not break every listing
                continue
        names.append(name)
    return tuple(names)


def _by_function(function: object) -> Method | None:
    """The registration of ``function`` itself, if any (so its import path keeps its flags)."""
    return next((m for m in _REGISTERED.values() if m.function is function), None)


def find(reference: str | Callable[..., Any]) -> Method | None:
    """The method a registered name, an entry-point name, an import path or a function stands for;
    None for a name nobody registered (built-in names are the package's business).

    Raises
    ------
    ValueError
        An import path whose module or attribute does not exist, or that names no callable.
    ImportError
        Raised by the module of an import path itself (a dependency of the method missing).
    """
    if callable(reference):
        found = _by_function(reference)
        return Method(describe(reference), reference, *(() if found is None else (found.interventional, found.kind)))
    if reference in _REGISTERED:
        return _REGISTERED[reference]
    if reference in _entry_points():
        return _from_entry_point(reference)
    if ":" not in reference:
        return None
    module, _, attribute = reference.partition(":")
    if not module or not attribute:
        raise ValueError(f"method {reference!r}: an import path is 'package.module:function'")
    try:
        function = load_reference(reference)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise ValueError(f"method {reference!r}: no module {module!r} here (is it on sys.path / PYTHONPATH, or "
                             "installed?)") from None
        raise
    except AttributeError:
        raise ValueError(f"method {reference!r}: module {module!r} has no attribute {attribute!r}") from None
    if not callable(function):
        raise ValueError(f"method {reference!r} is not callable")
    found = _by_function(function)
    return Method(reference, function, *(() if found is None else (found.interventional, found.kind)))
