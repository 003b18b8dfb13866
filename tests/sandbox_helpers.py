"""Helpers of the sandbox tests: which backends to run, and finding sandbox processes from outside.

The namespace backends must be available in CI (``.ci/run`` installs bubblewrap and sets
``CAUSAL_GYM_REQUIRE_SANDBOXES=1``, so a missing backend fails there); on other machines a missing
backend skips its tests with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import causal_gym
from causal_gym.harness import SandboxLimits, SandboxUnavailable, resolve_sandbox
from causal_gym.harness.namespaces import reachable_view, root_plan

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


def run_as_nobody(script: str, args: list[str], home: Path) -> Any:
    """Run ``script`` (``python -c``) as the unprivileged user "nobody"; its last output line, parsed as JSON.

    Skips unless the tests run as root (needed to switch users); in CI, fails when "nobody" cannot
    reach the interpreter or the project. An interpreter in a home "nobody" cannot traverse (pyenv's
    under a 0700 ``/root``) is shown to it, at its own path, in a private mount namespace
    (:func:`~causal_gym.harness.namespaces.reachable_view`), as an unprivileged evaluator would
    install it where it can run it; the host's modes stay as they are.
    """
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to switch to an unprivileged user")
    project = os.path.dirname(os.path.dirname(causal_gym.__file__))
    view = reachable_view([sys.executable, sys.prefix, sys.base_prefix, project, str(home)])
    as_nobody = [*view, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    plan = root_plan()
    check = (f"import os, causal_gym; [os.stat(p) for p in {[plan.interpreter, *plan.binds, *plan.packages]!r}]; "
             f"assert causal_gym.__file__ == {causal_gym.__file__!r}, causal_gym.__file__")  # the code under test
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", os.defpath), "TMPDIR": str(home)}
    reachable = subprocess.run([*as_nobody, sys.executable, "-c", check], cwd=project, capture_output=True, env=env)
    if reachable.returncode != 0:
        message = f"the interpreter or the project is not readable by nobody: {reachable.stderr.decode()[-300:]}"
        if os.environ.get("CAUSAL_GYM_REQUIRE_SANDBOXES"):
            pytest.fail(message)
        pytest.skip(message)
    home.chmod(0o777)
    completed = subprocess.run([*as_nobody, sys.executable, "-c", script, *args], cwd=project, capture_output=True,
                               timeout=180, env=env)
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    return json.loads(completed.stdout.decode().strip().splitlines()[-1])
