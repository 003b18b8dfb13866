"""Which processes are alive, read from /proc: for the tests that check what a run leaves behind
(through /proc, not multiprocessing, whose ``is_alive`` can race a pool's own reaping thread)."""

from __future__ import annotations

from pathlib import Path

_FIELDS = {"ppid": 1, "pgrp": 2, "session": 3}  # positions in /proc/<pid>/stat after the command name


def live_processes(**where: int) -> list[int]:
    """Pids of the live (not zombie) processes whose ``ppid``, ``pgrp`` or ``session`` are the given
    ones, e.g. ``live_processes(pgrp=1234)``."""
    unknown = set(where) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown /proc/<pid>/stat fields {sorted(unknown)}; choose from {list(_FIELDS)}")
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and all(int(fields[_FIELDS[name]]) == value for name, value in where.items()):
            found.append(int(stat.parent.name))
    return found
