"""A small on-disk cache for expensive references (PC-KCI runs, the algorithm menu per instance).

An entry is one JSON file named by the sha256 of a canonical JSON of its key parts (sorted keys,
no whitespace). Key parts should name everything the result depends on -- the instance's seed
and parameters, the options, and a code version string that is bumped whenever the computation
changes -- so a stale entry is never read: a changed input is simply a different file.

Writes go to a temporary file in the same directory and are moved into place with
``os.replace`` (:func:`causal_gym._files.write_atomic`), which is atomic on POSIX and Windows: a
crash or a concurrent writer leaves either no entry or a whole one, and a link planted under an
entry's name is replaced, not written through. An entry that cannot be read back (truncated, not JSON, or
stored under a different key after a hash collision) is recomputed and overwritten. The cache
only ever saves time, so the directory is safe to delete at any moment.

The directory is ``~/.cache/causal_gym`` unless the environment variable ``CAUSAL_GYM_CACHE``
names another one; it is read on every call, so tests and users can redirect it at run time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from causal_gym._files import write_atomic
from causal_gym._jsonable import to_jsonable
from causal_gym._workers import call_with_time_limit

__all__ = ["CACHE_ENV", "cache_dir", "cache_key", "cached", "is_cached"]

CACHE_ENV = "CAUSAL_GYM_CACHE"
"""Environment variable that overrides the cache directory."""


def cache_dir() -> Path:
    """The cache directory: ``$CAUSAL_GYM_CACHE`` if set and non-empty, else ``~/.cache/causal_gym``.

    The directory is not created here; :func:`cached` creates it on its first write.
    """
    override = os.environ.get(CACHE_ENV, "")
    return Path(override).expanduser() if override else Path.home() / ".cache" / "causal_gym"


def _canonical(value: Any) -> str:
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def cache_key(key_parts: Mapping[str, Any]) -> str:
    """Hex sha256 of the canonical JSON of ``key_parts`` (numpy values become plain JSON first)."""
    if not isinstance(key_parts, Mapping):
        raise ValueError(f"key_parts must be a mapping, got {type(key_parts).__name__}")
    return hashlib.sha256(_canonical(key_parts).encode()).hexdigest()


def _read(path: Path, key_json: str) -> dict[str, Any] | None:
    """The stored payload, or None when the entry is missing, unreadable or for another key."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key_json or not isinstance(entry.get("payload"), dict):
        return None
    return entry["payload"]


def _write(path: Path, entry: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(entry, allow_nan=False))


def is_cached(key_parts: Mapping[str, Any]) -> bool:
    """Whether :func:`cached` would find a readable payload under ``key_parts`` (a hit, no compute)."""
    key_json = _canonical(key_parts)
    return _read(_path(key_json), key_json) is not None


def _path(key_json: str) -> Path:
    return cache_dir() / f"{hashlib.sha256(key_json.encode()).hexdigest()}.json"


def cached(
    key_parts: Mapping[str, Any], compute: Callable[[], Mapping[str, Any]], time_limit: float | None = None
) -> dict[str, Any]:
    """Return the payload stored under ``key_parts``, computing and storing it on a miss.

    Parameters
    ----------
    key_parts : mapping
        Everything the payload depends on, JSON-serialisable after :func:`to_jsonable` (numpy
        arrays and scalars allowed), including a code version string.
    compute : callable
        ``compute() -> mapping``; called only on a miss or a corrupt entry. Its result is
        converted to plain JSON (arrays become lists, non-finite floats None) before storing.
    time_limit : float, optional
        Seconds a miss may compute: ``compute`` then runs in a worker process that is killed when
        the time is up (it must be picklable; see :func:`causal_gym._workers.call_with_time_limit`),
        and nothing is stored. None: computed here, no limit.

    Returns
    -------
    dict
        The plain-JSON payload, identical on a hit and on the miss that stored it.

    Raises
    ------
    causal_gym._workers.TimeLimitExceeded
        A miss that did not finish within ``time_limit``.

    Examples
    --------
    >>> import os, tempfile
    >>> os.environ[CACHE_ENV] = tempfile.mkdtemp()
    >>> cached({"what": "square", "x": 3, "version": 1}, lambda: {"y": 9})
    {'y': 9}
    """
    key_json = _canonical(key_parts)
    path = _path(key_json)
    payload = _read(path, key_json)
    if payload is not None:
        return payload
    result = call_with_time_limit(compute, time_limit)
    if not isinstance(result, Mapping):
        raise ValueError(f"compute() must return a mapping, got {type(result).__name__}")
    payload = to_jsonable(result)
    _write(path, {"key": key_json, "payload": payload})
    return payload
