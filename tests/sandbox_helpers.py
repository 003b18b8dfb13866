"""Helpers of the sandbox tests: which backends to run, and finding sandbox processes from outside.

The namespace backends must be available in CI (``.ci/run`` installs bubblewrap and sets
``CAUSAL_GYM_REQUIRE_SANDBOXES=1``, so a missing backend fails there); on other machines a missing
backend skips its tests with the reason.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from causal_gym.harness import SandboxLimits, SandboxUnavailable, resolve_sandbox

BACKENDS = ("bwrap", "unshare", "process")
NAMESPACE_BACKENDS = ("bwrap", "unshare")


def require_backend(backend: str) -> None:
    """Skip (or, in CI, fail) when ``backend`` does not work on this machine."""
    try:
        resolve_sandbox(backend)
    except SandboxUnavailable as exc:
        if os.environ.get("CAUSAL_GYM_REQUIRE_SANDBOXES"):
            pytest.fail(f"sandbox backend {backend!r} is required here but unavailable: {exc}")
        pytest.skip(f"sandbox backend {backend!r} unavailable: {exc}")


def unique_limits(**overrides: float) -> tuple[SandboxLimits, str]:
    """Limits with a CPU budget unique to this call, and that budget as a marker string.

    The budget travels in the bootstrap's configuration on the command line of every process of
    the sandbox (bwrap or setpriv, the namespace's init, the interpreter), so the host can find
    them in ``/proc/<pid>/cmdline`` without trusting anything the sandbox says about itself.
    """
    cpu = 20 + (uuid.uuid4().int % 10**6) / 10**7
    marker = f'"cpu_seconds": {cpu!r}'
    return SandboxLimits(cpu_seconds=cpu, **overrides), marker


def sandbox_processes(marker: str) -> list[int]:
    """Pids of live processes (other than this one) whose command line contains ``marker``."""
    found = []
    needle = marker.encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if needle in cmdline.read_bytes() and int(cmdline.parent.name) != os.getpid():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found
