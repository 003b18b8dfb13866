"""A small on-disk cache for expensive references (PC-KCI runs, the algorithm menu per instance).

An entry is one JSON file named by the sha256 of a canonical JSON of its key parts (sorted keys,
no whitespace). Key parts should name everything the result depends on -- the instance's seed
and parameters, the options, and a code version string that is bumped whenever the computation
changes -- so a stale entry is never read: a changed input is simply a different file.

Writes go to a temporary file in the same directory and are moved into place with
``os.replace`` (:func:`causal_gym._files.write_at`), which is atomic on POSIX and Windows: a
crash or a concurrent writer leaves either no entry or a whole one, and a link planted under an
entry's name is replaced, not written through. An entry that cannot be read back (truncated, not JSON, or
stored under a different key after a hash collision) is recomputed and overwritten. The cache
only ever saves time, so the directory is safe to delete at any moment.

The directory is ``~/.cache/causal_gym`` unless the environment variable ``CAUSAL_GYM_CACHE``
names another one; it is read on every call, so tests and users can redirect it at run time.

Whoever can write an entry decides what a later run reads (a planted entry turned a reference
F1 of 0.857 into 0.0), so only the current user's own are trusted. The directory, held open by
descriptor, and each entry, opened without following a link, must belong to the current user
or to root and be writable by neither group nor others. An entry or directory that fails is not
read: a ``RuntimeWarning`` names it once per process, the result is recomputed, and it is stored
only in a trusted directory (replacing the untrusted entry). The directory is created ``0o700``
and entries ``0o644`` (less the umask), so a permissive umask does not make them untrusted.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from causal_gym._files import write_at
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


_OPEN = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = _OPEN | getattr(os, "O_DIRECTORY", 0)
_ENTRY = _OPEN | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_warned: set[str] = set()


def _distrust(path: Path, status: os.stat_result) -> bool:
    """Whether ``status`` (of ``path``) makes it untrusted; warns once per path when it does."""
    if status.st_uid not in (os.geteuid(), 0):
        why = f"it belongs to uid {status.st_uid}, not to this user (uid {os.geteuid()})" + (" or root" if os.geteuid() else "")
    elif status.st_mode & 0o022:
        why = f"its mode {stat.filemode(status.st_mode)} lets {'others' if status.st_mode & 0o002 else 'its group'} write it"
    else:
        return False
    if str(path) not in _warned:
        _warned.add(str(path))
        warnings.warn(f"the result cache does not trust {path}: {why}, so another user could have written what it "
                      f"holds. It is not read; results are recomputed (use a cache directory of your own, or "
                      f"'chmod go-w' it; {CACHE_ENV} chooses the directory)", RuntimeWarning, stacklevel=4)
    return True


def _directory(create: bool) -> int | None:
    """A descriptor of the cache directory when it is trusted; None when it is missing (and not ``create``d)
    or untrusted (warned)."""
    path = cache_dir()
    if create:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, _DIRECTORY)
    except FileNotFoundError:
        return None
    if _distrust(path, os.fstat(descriptor)):
        os.close(descriptor)
        return None
    return descriptor


def _read(directory: int, name: str, key_json: str) -> dict[str, Any] | None:
    """The payload stored as ``name``; None when it is missing, untrusted (warned), unreadable or for another
    key. A link is not followed (and is replaced on the next store)."""
    try:
        handle = os.open(name, _ENTRY, dir_fd=directory)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENXIO):
            raise
        return None
    with os.fdopen(handle, "rb") as stream:
        status = os.fstat(stream.fileno())
        if not stat.S_ISREG(status.st_mode) or _distrust(cache_dir() / name, status):
            return None
        try:
            entry = json.loads(stream.read().decode("utf-8"))
        except (OSError, ValueError):
            return None
    if not isinstance(entry, dict) or entry.get("key") != key_json or not isinstance(entry.get("payload"), dict):
        return None
    return entry["payload"]


def _lookup(key_json: str) -> dict[str, Any] | None:
    directory = _directory(create=False)
    if directory is None:
        return None
    try:
        return _read(directory, _name(key_json), key_json)
    finally:
        os.close(directory)


def _store(key_json: str, payload: dict[str, Any]) -> None:
    directory = _directory(create=True)
    if directory is None:  # untrusted: an entry there would not be read back
        return
    try:
        write_at(directory, _name(key_json), json.dumps({"key": key_json, "payload": payload}, allow_nan=False),
                 mode=0o644)
    finally:
        os.close(directory)


def is_cached(key_parts: Mapping[str, Any]) -> bool:
    """Whether :func:`cached` would find a readable, trusted payload under ``key_parts`` (a hit, no compute)."""
    return _lookup(_canonical(key_parts)) is not None


def _name(key_json: str) -> str:
    return f"{hashlib.sha256(key_json.encode()).hexdigest()}.json"


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
    payload = _lookup(key_json)
    if payload is not None:
        return payload
    result = call_with_time_limit(compute, time_limit)
    if not isinstance(result, Mapping):
        raise ValueError(f"compute() must return a mapping, got {type(result).__name__}")
    payload = to_jsonable(result)
    _store(key_json, payload)
    return payload
