"""The run store: a directory holding a run's configuration and one JSON line per played episode.

Layout
------
``run.json``
    ``{"schema": 1, "causal_gym_version": ..., "created": ..., "config": {...}}`` -- the episode-
    defining part of the :class:`~causal_gym.eval.runner.RunConfig` (env ids, split, instances,
    repeats, base seed, agent name and keyword arguments, env keyword arguments, max_steps).
    Agent keyword arguments that look like credentials (``api_key``, ``token``, ``secret``,
    ``password``, ...) are written as ``"<redacted>"``.
``episodes.jsonl``
    One JSON object per line, appended as each episode ends, flushed and ``fsync``-ed, so a crash
    loses at most the episodes in flight. Keys of a line:

    - ``key`` (``"env_id|split|instance|repeat"``, plus ``"|variant"`` in a run with variants),
      ``env_id``, ``split``, ``instance``, ``repeat``, ``variant`` (the variant's name, or None),
      ``env_seed``, ``agent_seed`` (None when the agent takes no seed), ``agent``,
      ``agent_kwargs`` (as used, credentials redacted);
    - ``status``: ``"finished"`` (the agent submitted within its limits), ``"truncated"`` (a limit
      was involved but the agent submitted), ``"rescued"`` (the env submitted the working graph for
      the agent), ``"timeout"`` (a time limit expired: ``timeout`` says which -- ``"episode"``, the
      run's ``time_limit``, whose process was killed; ``"agent"``, ``"tool"`` or ``"scorer"``, a
      per-call budget, with the call record up to the interrupted call in ``trace``; a line
      without the field, written before the budgets existed, is ``"episode"``; ``error`` says
      which limit, there are no scores and no reward; a final status, recorded and not played
      again), ``"failed"`` (an exception: ``error`` and ``traceback`` hold it, ``trace`` the
      call record up to the failure; ``trace`` is None for the played statuses) or ``"interrupted"``
      (stopped by SIGTERM/SIGINT while playing: ``trace``, ``usage`` and ``transcript`` hold what
      it had done);
    - ``reward``, ``steps``, ``scores`` (a copy of ``record["final_info"]["scores"]``, empty when
      the env reports none), ``usage`` (the agent's ``usage()`` -- tokens, cost -- or None),
      ``transcript`` (the agent's ``transcript()`` or None), ``wall_time`` (seconds, including
      building the env and the agent; None when the worker itself was lost), ``causal_gym_version`` (of the worker that played it),
      ``recorded_at`` (UTC, added by :meth:`RunStore.append`); ``timeout`` on timeout lines (above);
    - ``record``: :meth:`EpisodeRecord.to_dict() <causal_gym.harness.rollout.EpisodeRecord.to_dict>`
      -- the final info (scores, ``submitted_graph``, ``completed_graph``, ``submission_source``)
      and ``env_record`` (the full call trace); None for failed episodes.

Resuming. An episode is *done* once a line with its key and a status other than failed or
interrupted is on disk; :meth:`RunStore.finished_keys` lists those keys and the runner skips them.
Failed and interrupted episodes are kept in the file (their traceback and partial trace are
evidence) but are played again on the next run, which appends a new line for the same key:
:meth:`RunStore.latest` keeps the last line per key. Only infrastructure and our own faults
produce those two statuses; whatever the agent sends is final (an invalid call inside the
episode), so no agent can have a losing episode replayed (see *Failures* in
:mod:`causal_gym.eval.runner`).

Links. The store's files (``run.json``, ``episodes.jsonl``, ``.lock``) must be regular files:
one that is a symbolic link (or, for writing, has other hard links) is refused before anything is
written, and every open uses ``O_NOFOLLOW`` (:mod:`causal_gym._files`), so a link planted in a
shared run directory cannot make a run truncate or append to another file. The directory itself
may be a link.

Crash tolerance. A line counts once its newline is on disk. A torn last line (an interrupted
write) is ignored with a warning when reading and cut off before the next append; a malformed
line anywhere else is an error, since no crash produces one.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from causal_gym._files import open_regular, write_atomic
from causal_gym._jsonable import to_jsonable
from causal_gym.harness.rollout import episode_key

__all__ = ["EPISODES_FILE", "LOCK_FILE", "RUN_FILE", "STATUSES", "UNFINISHED", "RunStore", "episode_key", "line_problem",
           "redact"]

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
LOCK_FILE = ".lock"
STATUSES = ("finished", "truncated", "rescued", "timeout", "failed", "interrupted")
"""Episode statuses, from best to worst (see the module docstring)."""

UNFINISHED = ("failed", "interrupted")
"""Statuses a rerun plays again."""

_SCHEMA = 1
_REDACTED = "<redacted>"
_SECRET = re.compile(r"(^|_)(api_key|key|secret|password|token|authorization)$", re.IGNORECASE)


def redact(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with values of credential-like names (``api_key``, ``*_token``, ...) replaced.

    Run stores are shared and published; a key passed as an agent argument must not end up in them.
    """
    return {name: _REDACTED if _SECRET.search(name) else value for name, value in kwargs.items()}


_LINE_TYPES: dict[str, tuple[type, ...]] = {
    "key": (str,), "env_id": (str,), "instance": (int,), "repeat": (int,), "agent": (str,),
    "agent_kwargs": (dict,), "scores": (dict,), "reward": (int, float, type(None)), "steps": (int, type(None)),
    "usage": (dict, type(None)), "transcript": (list, dict, type(None)), "record": (dict, type(None)),
    "error": (str, type(None)), "wall_time": (int, float, type(None)), "variant": (str, type(None)),
    "timeout": (str, type(None)),
}


def line_problem(line: Any) -> str | None:
    """Why ``line`` is not a valid episode line (None when it is): a schema check made on load, so a
    hand-edited or corrupted store is refused naming the line instead of crashing a summary later."""
    if not isinstance(line, dict):
        return f"not a JSON object but {type(line).__name__}"
    if not isinstance(line.get("key"), str) or line.get("status") not in STATUSES:
        return f"not an episode line (needs a string 'key' and a 'status' among {STATUSES})"
    for name, types in _LINE_TYPES.items():
        if name in line and not isinstance(line[name], types) or (name in line and isinstance(line[name], bool)
                                                                    and bool not in types):
            return f"field {name!r} is a {type(line[name]).__name__}, expected {' or '.join(t.__name__ for t in types)}"
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), allow_nan=False, separators=(",", ":"))


class RunStore:
    """A run directory: ``run.json`` and the append-only ``episodes.jsonl`` (see the module docstring).

    Parameters
    ----------
    directory : str or path
        Created on :meth:`initialize` if missing.

    Examples
    --------
    >>> import tempfile
    >>> store = RunStore(tempfile.mkdtemp())
    >>> store.initialize({"env_ids": ["CartPole-v1"]}, version="0.1.0")
    >>> store.append({"key": "CartPole-v1|-|0|0", "status": "finished", "reward": 12.0})
    >>> sorted(store.finished_keys())
    ['CartPole-v1|-|0|0']
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.run_path = self.directory / RUN_FILE
        self.episodes_path = self.directory / EPISODES_FILE
        self.lock_path = self.directory / LOCK_FILE

    def _open(self, path: Path, flags: int) -> int:
        """A descriptor of the store's file ``path``, refused when it is a link (see *Links*)."""
        return open_regular(path, flags, what="run store file")

    # -- run.json ------------------------------------------------------------------------------

    def read_config(self) -> dict[str, Any] | None:
        """The content of ``run.json`` (None when the directory holds no run yet)."""
        if not self.run_path.exists() and not self.run_path.is_symlink():
            return None
        with os.fdopen(self._open(self.run_path, os.O_RDONLY), "rb") as stream:
            text = stream.read()
        try:
            content = json.loads(text.decode("utf-8"))
        except ValueError as exc:
            raise ValueError(f"{self.run_path} is not valid JSON ({exc}); it is not a causal_gym run store") from exc
        if not isinstance(content, dict) or "config" not in content:
            raise ValueError(f"{self.run_path} has no 'config' entry; it is not a causal_gym run store")
        return content

    def initialize(self, config: Mapping[str, Any], version: str) -> None:
        """Create the run (``run.json``) or check that an existing one has the same ``config``.

        Raises
        ------
        ValueError
            When the directory holds a run with another configuration: mixing the episodes of two
            configurations in one store would make its tables meaningless. Use a new directory. A
            configuration that differs only in its plug-ins' ``code`` digests says which code
            changed; it is refused only once an episode of the old code has finished.
        """
        wanted = to_jsonable(config)
        existing = self.read_config()
        if existing is None and self.episodes_path.exists() and self.episodes_path.stat().st_size:
            raise ValueError(
                f"{self.directory} holds {EPISODES_FILE} but no {RUN_FILE}: the configuration its episodes were "
                "played with is unknown, so they cannot be resumed or mixed with this run; restore run.json or use "
                "a new output directory"
            )
        if existing is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            payload = {"schema": _SCHEMA, "causal_gym_version": version, "created": _now(), "config": wanted}
            write_atomic(self.run_path, json.dumps(payload, indent=2, allow_nan=False) + "\n")
            return
        if existing["config"] != wanted:
            old = existing["config"]
            fields = sorted(k for k in set(old) | set(wanted) if old.get(k) != wanted.get(k))
            if fields == ["code"]:
                self._changed_code(existing, wanted)
                return
            raise ValueError(
                f"{self.directory} holds a run with another configuration (differs in {', '.join(fields)}); "
                "rerun with the same configuration to resume it, or choose a new output directory"
            )
        if existing.get("causal_gym_version") != version:
            warnings.warn(
                f"{self.directory} was created by causal_gym {existing.get('causal_gym_version')}; resuming it "
                f"with {version} (each episode line records the version that played it)",
                RuntimeWarning,
                stacklevel=2,
            )

    def _changed_code(self, existing: dict[str, Any], wanted: dict[str, Any]) -> None:
        """The run's plug-in code changed since the store was written (its ``code`` digests differ):
        refused when an episode of the old code finished (the two versions' results must not mix),
        else the store is taken over by the new code (only failed or interrupted lines, which a
        rerun plays again anyway)."""
        old, new = existing["config"].get("code") or {}, wanted.get("code") or {}
        changed = sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))
        if self.finished_keys():
            raise ValueError(
                f"{self.directory} holds episodes played by other code: {', '.join(changed)} changed since they "
                "were played (its code digest differs), and resuming would mix the results of the two versions. "
                f"Start afresh with a new output directory, or delete {self.directory} to replace the old results"
            )
        write_atomic(self.run_path, json.dumps({**existing, "config": wanted}, indent=2, allow_nan=False) + "\n")

    # -- episodes.jsonl ------------------------------------------------------------------------

    def append(self, line: Mapping[str, Any]) -> None:
        """Append one episode line, flushed and fsync-ed before returning.

        ``line`` needs a ``key`` and a ``status`` among :data:`STATUSES`; values are converted
        with :func:`~causal_gym._jsonable.to_jsonable`. A torn last line left by an interrupted
        run is cut off first, so the new line starts on a line of its own.
        """
        if not isinstance(line, Mapping) or not isinstance(line.get("key"), str) or line.get("status") not in STATUSES:
            raise ValueError(f"an episode line needs a string 'key' and a 'status' among {STATUSES}")
        text = _dumps({**line, "recorded_at": _now()}) + "\n"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cut_torn_tail()
        with os.fdopen(self._open(self.episodes_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "wb") as stream:
            stream.write(text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())

    def _cut_torn_tail(self) -> None:
        if not self.episodes_path.exists() and not self.episodes_path.is_symlink():
            return
        with os.fdopen(self._open(self.episodes_path, os.O_RDWR), "rb+") as stream:
            size = stream.seek(0, os.SEEK_END)
            if size == 0:
                return
            stream.seek(size - 1)
            if stream.read(1) == b"\n":
                return
            # Read backwards in blocks to the last newline: lines can be megabytes long (traces).
            end, block = size, 1 << 16
            while end > 0:
                start = max(0, end - block)
                stream.seek(start)
                chunk = stream.read(end - start)
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    end = start + cut + 1
                    break
                end = start
            warnings.warn(
                f"{self.episodes_path}: removed a torn last line ({size - end} bytes) left by an interrupted run",
                RuntimeWarning,
                stacklevel=3,
            )
            stream.truncate(end)
            stream.flush()
            os.fsync(stream.fileno())

    def episodes(self, on_bad_line: Callable[[int, str], None] | None = None) -> list[dict[str, Any]]:
        """Every complete episode line in file order (a torn last line is skipped with a warning).

        A line that is not valid JSON or fails :func:`line_problem` raises ``ValueError`` naming it;
        with ``on_bad_line`` it is skipped and ``on_bad_line(line_number, problem)`` is called instead
        (a report reads what it can; a run refuses to resume a store it cannot read).
        """
        if not self.episodes_path.exists() and not self.episodes_path.is_symlink():
            return []
        out = []
        with os.fdopen(self._open(self.episodes_path, os.O_RDONLY), "rb") as stream:
            for number, text in enumerate(stream, start=1):
                if not text.endswith(b"\n"):  # only the last line can lack its newline
                    warnings.warn(
                        f"{self.episodes_path}: ignoring a torn last line ({len(text)} bytes) left by an "
                        "interrupted run; its episode will be played again",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                    break
                if not text.strip():
                    continue
                try:
                    line = json.loads(text)
                    problem = line_problem(line)
                except (ValueError, RecursionError) as exc:  # RecursionError: nested past the decoder's limit
                    line, problem = None, f"not valid JSON ({type(exc).__name__}: {str(exc)[:200]})"
                if problem is None:
                    out.append(line)
                elif on_bad_line is None:
                    raise ValueError(f"{self.episodes_path}, line {number}: {problem}")
                else:
                    on_bad_line(number, problem)
        return out

    def latest(self, on_bad_line: Callable[[int, str], None] | None = None) -> dict[str, dict[str, Any]]:
        """Key -> the last line written for it (a retried failure is replaced by its retry); ``on_bad_line``
        as in :meth:`episodes`."""
        return {line["key"]: line for line in self.episodes(on_bad_line)}

    def finished_keys(self) -> set[str]:
        """Keys with a done line: the episodes a rerun skips (failed and interrupted ones are played again)."""
        return {line["key"] for line in self.episodes() if line["status"] not in UNFINISHED}

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock on the store, so two runs never append to one file at once.

        Uses ``fcntl.flock`` on a ``.lock`` file (POSIX); elsewhere it does nothing. A store whose
        files are links is refused first, before anything is written (see *Links*).

        Raises
        ------
        ValueError
            A file of the store is a symbolic link, not a regular file, or has other hard links.
        RuntimeError
            Another run holds the lock.
        """
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks here
            yield
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        # run.json is replaced, never written in place; episodes.jsonl is appended to
        for path, flags in ((self.run_path, os.O_RDONLY), (self.episodes_path, os.O_RDWR)):
            if path.exists() or path.is_symlink():
                os.close(self._open(path, flags))
        with os.fdopen(self._open(self.lock_path, os.O_RDWR | os.O_CREAT), "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RuntimeError(f"another run is writing to {self.directory}; wait for it or use another directory") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
