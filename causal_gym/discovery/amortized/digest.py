"""Content digests of checkpoint files: what cache keys hold instead of a path.

A key that holds the path would serve a stale graph once another checkpoint sits there, and would
carry the path into a cache an agent's tools read from; a digest avoids both. Hashing a large file
on every call would cost more than a small model's inference, so a digest is computed once per
(path, size, modification time).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

__all__ = ["files_digest"]


def files_digest(paths: Iterable[Path]) -> str:
    """SHA-256 over each file's name and bytes, in the order given."""
    stamps = tuple((str(path), path.stat().st_size, path.stat().st_mtime_ns) for path in map(Path, paths))
    return _digest(stamps)


@lru_cache(maxsize=16)
def _digest(stamps: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for path, _, _ in stamps:
        digest.update(Path(path).name.encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
