"""Code given by reference: ``"package.module:attribute"`` import paths, and digests of what code is.

A plug-in (a discovery method, an agent) reaches the library's worker processes by its import path:
a worker imports the module instead of receiving the object, and a cache or a run store records
what the code *was* by a digest of its module's source and of the distribution that installed it,
so an edited method is run again instead of answering from a stale entry.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import re
import sys
from types import ModuleType
from typing import Any

__all__ = ["load_reference", "import_path", "describe", "code_digest", "missing_extra"]


def load_reference(reference: str) -> Any:
    """The object named by ``"module:attribute"`` (the attribute may be dotted, ``"mod:Class.method"``),
    or the module itself without a colon, imported now.

    Raises
    ------
    ModuleNotFoundError, ImportError
        From importing the module.
    AttributeError
        When the module has no such attribute.
    """
    module_name, _, attribute = reference.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        target = getattr(target, part)
    return target


def import_path(obj: object) -> str | None:
    """``"module:qualname"`` when importing that path gives back ``obj`` itself, else None (an object of
    the caller's ``__main__`` or a notebook, a lambda, a closure, an instance): the form a worker
    process can load ``obj`` by."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "__main__" or "<" in qualname:
        return None
    path = f"{module}:{qualname}"
    try:
        found = load_reference(path)
    except Exception:  # noqa: BLE001 -- any failure means the path does not lead back to obj
        return None
    return path if found is obj else None


def describe(obj: object) -> str:
    """A stable label of ``obj`` for records: its import path, else ``"module:qualname"`` of it (or of
    its class, followed by ``()``, for an instance)."""
    path = import_path(obj)
    if path is not None:
        return path
    if not hasattr(obj, "__qualname__"):
        return describe(type(obj)) + "()"
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}"


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    from importlib.metadata import packages_distributions

    return dict(packages_distributions())


def _distribution(module: str) -> str | None:
    """``"name==version"`` of the installed distribution that provides ``module``'s top-level package."""
    from importlib.metadata import PackageNotFoundError, version

    names = _distributions().get(module.partition(".")[0], [])
    for name in names:
        try:
            return f"{name}=={version(name)}"
        except PackageNotFoundError:
            continue
    return None


def _source(target: object) -> bytes | None:
    """The source of the module that defines ``target`` (a function or class), else of ``target``
    itself (a notebook cell's, which has no module file), else None."""
    module: ModuleType | None = sys.modules.get(getattr(target, "__module__", None) or "")
    try:
        path = inspect.getsourcefile(module) if module is not None else None
    except TypeError:  # a module without a file: __main__ of a notebook or of python -c
        path = None
    if path is not None:
        try:
            with open(path, "rb") as stream:
                return stream.read()
        except OSError:
            pass
    try:
        return inspect.getsource(target).encode()  # type: ignore[arg-type]
    except (OSError, TypeError):
        return None


def code_digest(obj: object) -> str | None:
    """A digest of the code ``obj`` is (a function, a class, or an instance's class): sha256 over its
    module's source and the name and version of the distribution that installed the module.

    An edit of the module, or a new release of its distribution, changes the digest; an edit of another
    module it imports does not (of an editable install's helpers, say). None when neither the source
    nor a distribution can be found (code compiled in memory): nothing to compare it by.
    """
    target = obj if hasattr(obj, "__qualname__") else type(obj)
    source = _source(target)
    module = getattr(target, "__module__", "") or ""
    distribution = _distribution(module) if module and module != "__main__" else None
    if source is None and distribution is None:
        return None
    digest = hashlib.sha256()
    digest.update(source or b"")
    digest.update(b"\0" + (distribution or "").encode())
    return digest.hexdigest()


_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;\s*extra\s*==\s*[\"']([^\"']+)[\"']\s*$")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def missing_extra(extra: str, distribution: str = "causal-gym") -> str | None:
    """The first package of ``distribution[extra]`` that is not installed or does not import here, or None.

    None too when ``distribution``'s own metadata is not installed (a source tree on ``PYTHONPATH``):
    there is nothing to check against, and the import fails later with its own message.
    """
    from importlib.metadata import PackageNotFoundError, requires

    try:
        requirements = requires(distribution) or []
    except PackageNotFoundError:
        return None
    modules: dict[str, list[str]] = {}
    for module, names in _distributions().items():
        for name in names:
            modules.setdefault(_normalized(name), []).append(module)
    for text in requirements:
        match = _REQUIREMENT.match(text)
        if match is None or match.group(2) != extra or _normalized(match.group(1)) == _normalized(distribution):
            continue
        name = match.group(1)
        found = modules.get(_normalized(name))
        if not found:
            return name
        for module in found:
            try:
                importlib.import_module(module)
            except ImportError:
                return name
    return None
