"""Files the package writes (run stores, caches, reports), opened so that a planted link cannot redirect a write.

Run stores and report folders often live in shared places (``/tmp``, a team's scratch disk). Whoever
can write there could plant ``episodes.jsonl`` or ``.lock`` as a symbolic link to a victim's file, and
an ordinary ``open(path, "w")`` or ``"a"`` would truncate or append to the victim's file. So:

- :func:`open_regular` opens with ``O_NOFOLLOW`` and refuses anything but a regular file (a FIFO
  would block, a device would be written), and for writing a file with other hard links too;
- :func:`write_atomic` writes a new file next to the target and renames it over the target, which
  replaces a link instead of following it (and leaves either the old or the new content on a crash).

Only the last component is protected: a directory given by the user may itself be a link.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["open_regular", "write_atomic"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; elsewhere the checks after the open still apply
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_regular(path: str | os.PathLike[str], flags: int, *, what: str = "file") -> int:
    """``os.open(path, flags)`` without following a link at ``path``; returns the descriptor.

    ``flags`` are the usual ``os.O_*`` flags (``O_CREAT`` creates with mode 0o644). A file opened for
    writing must have a single link, since a hard link would carry the write to another name.

    Raises
    ------
    ValueError
        ``path`` is a symbolic link, not a regular file, or (for writing) a file with other hard links.
    """
    path = Path(path)
    writing = flags & (os.O_WRONLY | os.O_RDWR)
    try:
        descriptor = os.open(path, flags | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | _NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise ValueError(f"{path} is a symbolic link; a {what} must be a regular file (through a link the "
                             "run would read or write another file): remove the link") from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, opened for writing
            raise ValueError(f"{path} is not a regular file; a {what} must be one") from None
        raise
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path} is not a regular file; a {what} must be one")
        if writing and status.st_nlink > 1:
            raise ValueError(f"{path} has {status.st_nlink} hard links; a {what} written here must have one (the write "
                             "would change the other names too): replace it by a copy")
        if _NONBLOCK:
            os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, racing other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same directory, then
    ``os.replace`` it over ``path``: a link at ``path`` is replaced, never followed, and a crash leaves
    the old content or the new one, never half of it."""
    path = Path(path)
    content = data.encode("utf-8") if isinstance(data, str) else data
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # as open() would create it (mkstemp makes it 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
