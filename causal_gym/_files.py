"""Files the package writes (run stores, caches, reports), opened so that a planted link cannot redirect a write.

Run stores and report folders often live in shared places (``/tmp``, a team's scratch disk). Whoever
can write there could plant ``episodes.jsonl`` or ``.lock`` as a symbolic link to a victim's file, and
an ordinary ``open(path, "w")`` or ``"a"`` would truncate or append to the victim's file. So:

- :func:`open_regular` opens with ``O_NOFOLLOW`` and refuses anything but a regular file (a FIFO
  would block, a device would be written), and for writing a file with other hard links too;
- :func:`write_atomic` writes a new file next to the target and renames it over the target, which
  replaces a link instead of following it (and leaves either the old or the new content on a crash);
  :func:`write_at` does the same by name inside a directory held open by descriptor;
- :class:`OutputFolder` holds an output directory open by descriptor and writes only by name inside
  it. Where the folder lies inside a directory someone else controls (a received run directory), it
  is opened one component at a time from that directory, never through a link, and a file name
  with a separator is refused: nothing outside the folder is created or replaced, even if the
  directory changes meanwhile.

Elsewhere only the last component is protected: a directory given by the user may itself be a link.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

__all__ = ["open_regular", "write_atomic", "write_at", "open_directory", "OutputFolder", "name_part"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; elsewhere the checks after the open still apply
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC


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


def _check_name(name: str) -> str:
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"{name!r} is not a file name (one path component) and cannot be written into a folder")
    return name


def write_at(directory: int, name: str, data: str | bytes, *, mode: int = 0o666) -> None:
    """Write ``data`` (text as UTF-8) as the file ``name`` of the directory open as ``directory``, atomically.

    The content goes to a new temporary file in that directory, then ``os.replace`` moves it over
    ``name``: a link at ``name`` is replaced, never followed, and a crash leaves the old content or
    the new one. The file gets ``mode`` less the umask, as with ``open()``.

    Raises
    ------
    ValueError
        ``name`` is not a single path component.
    OSError
        The write failed (a directory named ``name`` is in the way, the disk is full, ...).
    """
    _check_name(name)
    content = data.encode("utf-8") if isinstance(data, str) else data
    temporary = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode,
                     dir_fd=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=directory)
        except OSError:
            pass
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same directory, then
    ``os.replace`` it over ``path``: a link at ``path`` is replaced, never followed, and a crash leaves
    the old content or the new one, never half of it (:func:`write_at` in ``path``'s directory)."""
    path = Path(path)
    directory = os.open(path.parent, _DIRECTORY)
    try:
        write_at(directory, path.name, data)
    finally:
        os.close(directory)


def _open_child(directory: int, name: str, where: Path, create: bool) -> int:
    """The subdirectory ``name`` of ``directory`` (created when missing and ``create``), never through a link."""
    if create:
        try:
            os.mkdir(name, 0o777, dir_fd=directory)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=directory)
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        try:
            link = stat.S_ISLNK(os.lstat(name, dir_fd=directory).st_mode)
        except OSError:
            link = False
        what = "a symbolic link" if link else "not a directory"
        raise ValueError(f"{where} is {what}; an output folder inside a directory someone else controls is opened "
                         "without following links (a planted link would send the files elsewhere): remove it, or "
                         "choose another folder") from None


def open_directory(path: str | os.PathLike[str], *, create: bool = False, within: Iterable[str | os.PathLike[str]] = ()
                   ) -> int:
    """A descriptor of the directory ``path``, created with its missing parents when ``create``.

    Below a directory of ``within`` (directories whose content someone else controls, compared
    after ``os.path.abspath``), the components of ``path`` are opened one at a time from that
    directory with ``O_NOFOLLOW``; the path up to it, and a path outside them, is the caller's and
    followed as usual.

    Raises
    ------
    ValueError
        A component below a ``within`` directory is a link or not a directory.
    OSError
        ``path`` cannot be opened (missing without ``create``, not a directory, no permission).
    """
    target = Path(os.path.abspath(path))
    roots = [Path(os.path.abspath(root)) for root in within]
    root = max((r for r in roots if target.is_relative_to(r)), key=lambda r: len(r.parts), default=target)
    if create and root == target:
        target.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(root, _DIRECTORY)
    where = root
    for part in target.relative_to(root).parts:
        where = where / part
        try:
            child = _open_child(descriptor, part, where, create)
        finally:
            os.close(descriptor)
        descriptor = child
    return descriptor


class OutputFolder:
    """An output directory held open by descriptor: :meth:`write` puts files into it by name only.

    Parameters
    ----------
    path : path-like
        The folder; created when missing (with its parents; below a ``within`` directory a
        component at a time).
    within : iterable of path-like
        Directories whose content someone else controls (:func:`open_directory`): no component of
        ``path`` below them is followed through a link.

    A folder is a context manager (it closes its descriptor) and a path-like (its path), so code
    that only knows paths still reads where it is; writing through that path would follow links
    again, so write with :meth:`write`.
    """

    def __init__(self, path: str | os.PathLike[str], *, within: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.path = Path(path)
        self._descriptor = open_directory(self.path, create=True, within=within)

    def write(self, name: str, data: str | bytes) -> Path:
        """Write ``data`` as the file ``name`` of the folder (:func:`write_at`); returns its path.

        Raises ``ValueError`` when ``name`` is not a single path component (a separator, ``..``)."""
        write_at(self._descriptor, name, data)
        return self.path / name

    def close(self) -> None:
        """Release the descriptor (writes after this fail)."""
        if self._descriptor >= 0:
            os.close(self._descriptor)
            self._descriptor = -1

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __repr__(self) -> str:
        return f"OutputFolder({str(self.path)!r})"

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        if hasattr(self, "_descriptor"):
            self.close()


_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def name_part(value: object) -> str:
    """``value`` as a piece of a file name: letters, digits, ``.``, ``_`` and ``-`` kept, anything else
    (separators included) replaced by ``_``, no leading dot, at most 80 characters. A value that had to
    change gets 8 hex digits of its hash, so two values never share a name.

    Examples
    --------
    >>> name_part("4node-quad")
    '4node-quad'
    >>> name_part("x/../../tmp/pwned")
    'x_.._.._tmp_pwned-8ce233fd'
    """
    text = str(value)
    cleaned = "".join(c if c in _NAME_CHARACTERS else "_" for c in text[:80]).lstrip(".")
    if cleaned == text and cleaned:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
