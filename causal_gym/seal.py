"""Sealed evaluation splits: a secret that keys every instance stream, so no agent can regenerate one.

The open splits are a function of published constants (a master seed, a family, a split, an
index): anyone who reads the generator can rebuild an instance, its hidden graph included, from
the data it is shown. A :class:`Seal` replaces the published master seed of every evaluation
stream by ``HMAC-SHA256(secret, benchmark, public entropy)``: the same code, the same sizes and
designs, but instances that only a holder of the secret can generate. Open splits stay the default
(they reproduce the papers' tables); use a seal for leaderboards and for RL on LLM policies, which
would otherwise learn to regenerate the truth inside the code tool.

Where a seal comes from: an env's ``seal=`` argument (a :class:`Seal`, or the secret as a str),
else the environment variable :data:`SEAL_ENV`, else none (open). ``seal=OPEN`` forces the open
splits. ``causal-gym seal new FILE`` writes a fresh 256-bit secret; ``causal-gym run --seal-file
FILE`` seals a whole run.

What is kept where: the secret lives only in the :class:`Seal` object and its pickled form (which
the runner sends to its workers); its ``repr`` shows the fingerprint. Observations, infos, tool results, records, run stores
and caches carry at most its :attr:`~Seal.fingerprint` (an HMAC of the secret, so the secret cannot
be read back from it; a secret from :func:`new_secret` cannot be guessed either), and under a seal
the instance id an agent sees is an opaque hash of the data it is shown (:func:`opaque_id`).

Examples
--------
>>> seal = Seal("an example secret, use new_secret() for a real one")
>>> len(seal.entropy("heuresis", 4675061318, 0, 1, 3))
8
>>> seal.entropy("heuresis", 1, 2) == Seal("another secret of sufficient length").entropy("heuresis", 1, 2)
False
>>> "example" in repr(seal)
False
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

import numpy as np

__all__ = ["SEAL_ENV", "OPEN", "MIN_SECRET_LENGTH", "Seal", "new_secret", "resolve_seal", "keyed_entropy", "opaque_id"]

SEAL_ENV = "CAUSAL_GYM_SEAL"
"""Environment variable holding the secret of a sealed evaluation (read when an env gets no ``seal=``)."""

OPEN = "open"
"""``seal=OPEN`` plays the open (published) splits even when :data:`SEAL_ENV` is set."""

MIN_SECRET_LENGTH = 16
"""Shortest secret accepted (characters or bytes); :func:`new_secret` makes 64 hex characters."""

_WORDS = 8  # 256 bits of SeedSequence entropy


def new_secret() -> str:
    """A fresh 256-bit secret as 64 hex characters (``secrets.token_hex``)."""
    return secrets.token_hex(32)


class Seal:
    """A secret that keys the evaluation instance streams.

    Parameters
    ----------
    secret : str or bytes
        At least :data:`MIN_SECRET_LENGTH` characters (surrounding whitespace is stripped, so a
        file written by ``echo`` works).

    Raises
    ------
    ValueError
        For a missing, too short or non-text secret.
    """

    __slots__ = ("_key", "_fingerprint")

    def __init__(self, secret: str | bytes) -> None:
        if isinstance(secret, str):
            key = secret.strip().encode("utf-8")
        elif isinstance(secret, bytes):
            key = secret.strip()
        else:
            raise ValueError(f"a seal's secret must be a str or bytes, got {type(secret).__name__}")
        if len(key) < MIN_SECRET_LENGTH:
            raise ValueError(
                f"a seal's secret needs at least {MIN_SECRET_LENGTH} characters, got {len(key)}; "
                "make one with `causal-gym seal new FILE` (or causal_gym.seal.new_secret())"
            )
        self._key = key
        self._fingerprint = hmac.new(key, b"causal_gym/fingerprint", hashlib.sha256).hexdigest()[:16]

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Seal:
        """The seal whose secret is the content of ``path``."""
        try:
            return cls(Path(path).read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot read the seal file {str(path)!r}: {exc.strerror}") from None

    @classmethod
    def from_environment(cls) -> Seal | None:
        """The seal of :data:`SEAL_ENV`, or None when it is unset or empty."""
        secret = os.environ.get(SEAL_ENV, "")
        return cls(secret) if secret.strip() else None

    @property
    def fingerprint(self) -> str:
        """16 hex characters identifying the seal in run stores and caches; reveals nothing of the secret."""
        return self._fingerprint

    def entropy(self, benchmark: str, *public: int) -> tuple[int, ...]:
        """SeedSequence entropy (8 words of 32 bits) replacing the public entropy ``public`` of ``benchmark``."""
        message = json.dumps([benchmark, [int(v) for v in public]], separators=(",", ":")).encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return tuple(int.from_bytes(digest[4 * i : 4 * i + 4], "little") for i in range(_WORDS))

    def __repr__(self) -> str:
        return f"Seal(fingerprint={self._fingerprint!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Seal) and hmac.compare_digest(self._key, other._key)

    def __hash__(self) -> int:
        return hash(self._fingerprint)

    def __getstate__(self) -> tuple[bytes, str]:
        return self._key, self._fingerprint

    def __setstate__(self, state: tuple[bytes, str]) -> None:
        self._key, self._fingerprint = state


def resolve_seal(seal: Seal | str | None) -> Seal | None:
    """The seal an env plays under: ``seal`` itself, a secret string, :data:`OPEN`, or the environment.

    Raises
    ------
    ValueError
        For a secret that is too short or of the wrong type.
    """
    if seal is None:
        return Seal.from_environment()
    if isinstance(seal, Seal):
        return seal
    if isinstance(seal, str) and seal == OPEN:
        return None
    if isinstance(seal, (str, bytes)):
        return Seal(seal)
    raise ValueError(f"seal must be a Seal, a secret string, causal_gym.seal.OPEN or None, got {type(seal).__name__}")


def keyed_entropy(seal: Seal | None, benchmark: str, public: tuple[int, ...]) -> tuple[int, ...]:
    """``public`` for open streams, the seal's entropy for it otherwise."""
    return tuple(public) if seal is None else seal.entropy(benchmark, *public)


def opaque_id(*arrays: np.ndarray) -> str:
    """An id an agent may see under a seal: a hash of data it is shown anyway (16 hex characters)."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]
