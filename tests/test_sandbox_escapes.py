"""The code tool as an adversary sees it: the audit hook subverted, then every known escape tried.

The in-process audit hook can always be subverted from inside the interpreter. Two ways are used
here, as an outside battery did: replacing the policy's module globals in ``__main__`` and replacing
the hook's ``refuse`` closure cell (found through ``gc``). The first test shows that both really
disable the hook (under the ``"process"`` backend the program then reads the project's source and
the host's root). Under bwrap and unshare the same programs must still fail at everything: reading
the cache, the project, ``$HOME`` or another process's ``/proc``, importing causal_gym, reaching a
socket on 127.0.0.1 (TCP or abstract unix), creating processes (also through ctypes), signalling
the parent, writing outside the scratch directory, and outliving a timeout or the caller's death.
Every check is made from the outside (the host's /proc, the listening socket, the host's files).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import causal_gym
from causal_gym.harness import resolve_sandbox, run_code, sandbox
from sandbox_helpers import NAMESPACE_BACKENDS, require_backend, run_as_nobody, sandbox_processes, unique_limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="namespaces need Linux")

DISABLE_HOOK = {
    "globals": """
import sys
policy = sys.modules["__main__"]
class Everything:
    def __contains__(self, item):
        return True
policy.READABLE_DEVICES = Everything()
policy.NETWORK = policy.PROCESS = policy.SIGNALS = policy.TAMPERING = policy.METADATA = ()
policy.WRITE_FLAGS = 0
policy.WRITE_PATH_ARGS = {}
""",
    "closure": """
import gc
for candidate in gc.get_objects():
    if getattr(candidate, "__name__", "") == "guard" and getattr(candidate, "__closure__", None):
        for cell in candidate.__closure__:
            if getattr(cell.cell_contents, "__name__", "") == "refuse":
                cell.cell_contents = lambda reason: None
""",
}

# Each probe runs in one program, wrapped so that a failure does not stop the others; the program
# prints {name: "ok: <value>" | "<ExceptionType>: <message>"} as JSON.
RUNNER = """
import json, os
outcomes = {}
def attempt(name, action):
    try:
        outcomes[name] = "ok: " + repr(action())[:300]
    except BaseException as exc:
        outcomes[name] = type(exc).__name__ + ": " + str(exc)[:200]
"""


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(3).normal(size=(50, 3))


def _probe_program(disable: str, probes: dict[str, str]) -> str:
    lines = [DISABLE_HOOK[disable], RUNNER]
    for name, expression in probes.items():
        lines.append(f"attempt({name!r}, lambda: {expression})")
    lines.append("print(json.dumps(outcomes))")
    return "\n".join(lines)


def _run_probes(
    backend: str, disable: str, probes: dict[str, str], data: np.ndarray, error: str | None = None
) -> dict[str, str]:
    """The probes' outcomes; the call's error must be ``error``: with the hook subverted, only the
    supervisor's record of the kernel's refusals can report a call as blocked."""
    result = run_code(_probe_program(disable, probes), data, sandbox=backend)
    assert result.sandbox == backend
    assert result.error == error, result
    return json.loads(result.output.strip().splitlines()[-1])


def _still_works(backend: str, data: np.ndarray) -> None:
    result = run_code("print(float(X.sum()))", data, sandbox=backend)
    assert result.ok and float(result.output) == pytest.approx(float(data.sum()))


@pytest.mark.parametrize("disable", list(DISABLE_HOOK))
def test_the_hook_subversions_really_disable_the_hook(disable: str, data: np.ndarray) -> None:
    """Under the in-process backend the same programs read what the namespaces hide."""
    require_backend("process")
    probes = {
        "source": f"open({causal_gym.__file__!r}).read()[:40]",
        "root": "sorted(os.listdir('/'))",
        "connect": "__import__('socket').socket(__import__('socket').AF_INET).close()",
    }
    outcomes = _run_probes("process", disable, probes, data)
    assert outcomes["source"].startswith("ok: ") and "causal_gym" in outcomes["source"]
    assert outcomes["root"].startswith("ok: ") and "'proc'" in outcomes["root"]
    assert outcomes["connect"] == "ok: None"


@pytest.fixture(params=NAMESPACE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return request.param


@pytest.mark.parametrize("disable", list(DISABLE_HOOK))
def test_reading_host_secrets_fails_with_the_hook_disabled(
    backend: str, disable: str, data: np.ndarray, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "cg-secret-" + uuid.uuid4().hex
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "truth.json").write_text(secret)
    monkeypatch.setenv("CAUSAL_GYM_CACHE", str(cache))
    monkeypatch.setenv("CAUSAL_GYM_SEAL", secret)
    home_secret = Path.home() / f".cg-test-{uuid.uuid4().hex}"
    home_secret.write_text(secret)
    package = os.path.dirname(causal_gym.__file__)
    try:
        probes = {
            "cache": f"open({str(cache / 'truth.json')!r}).read()",
            "cache_listing": f"os.listdir({str(cache)!r})",
            "home": f"open({str(home_secret)!r}).read()",
            "source": f"open({causal_gym.__file__!r}).read()",
            "package_listing": f"os.listdir({package!r})",
            "import": "__import__('causal_gym')",
            "parent_environ": f"open('/proc/{os.getpid()}/environ', 'rb').read()",
            "parent_mem": f"open('/proc/{os.getpid()}/mem', 'rb').read(16)",
            "parent_root": f"os.listdir('/proc/{os.getpid()}/root')",
            "all_environ": "[open('/proc/' + p + '/environ', 'rb').read() for p in os.listdir('/proc') if p.isdigit()]",
            "processes": "sorted(int(p) for p in os.listdir('/proc') if p.isdigit())",
            "own_environ": "dict(os.environ)",
        }
        outcomes = _run_probes(backend, disable, probes, data)
    finally:
        home_secret.unlink()
    assert all(secret not in outcome for outcome in outcomes.values()), outcomes
    for name in ("cache", "cache_listing", "home", "source", "package_listing"):
        assert outcomes[name].startswith("FileNotFoundError"), (name, outcomes[name])
    assert outcomes["import"] == "ModuleNotFoundError: No module named 'causal_gym'"
    for name in ("parent_environ", "parent_mem", "parent_root"):
        assert outcomes[name].startswith(("FileNotFoundError", "PermissionError")), (name, outcomes[name])
    # a pid namespace of its own: only the namespace's init, the supervisor and the program itself
    assert len(json.loads(outcomes["processes"][4:].replace("'", '"'))) <= 3, outcomes["processes"]
    assert "CAUSAL_GYM" not in outcomes["own_environ"] and "CAUSAL_GYM" not in outcomes["all_environ"]
    _still_works(backend, data)


@pytest.mark.parametrize("disable", list(DISABLE_HOOK))
def test_network_fails_with_the_hook_disabled(backend: str, disable: str, data: np.ndarray) -> None:
    abstract = f"\0cg-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix_server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        unix_server.bind(abstract)
        unix_server.listen(1)
        port = server.getsockname()[1]
        probes = {
            "tcp": f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=2)",
            "udp": "__import__('socket').socket(__import__('socket').AF_INET, __import__('socket').SOCK_DGRAM)",
            "abstract_unix": (
                f"(lambda s: (s.connect({abstract!r}), s))(__import__('socket').socket(__import__('socket').AF_UNIX))"
            ),
        }
        outcomes = _run_probes(backend, disable, probes, data, error="blocked: system call refused (socket)")
        for listening in (server, unix_server):
            listening.settimeout(0.3)
            with pytest.raises(socket.timeout):
                listening.accept()
    assert outcomes["tcp"] == "PermissionError: [Errno 1] Operation not permitted"  # the kernel, not the hook
    assert outcomes["udp"] == "PermissionError: [Errno 1] Operation not permitted"
    assert outcomes["abstract_unix"].startswith("ConnectionRefusedError"), outcomes["abstract_unix"]
    _still_works(backend, data)


@pytest.mark.parametrize("disable", list(DISABLE_HOOK))
def test_processes_signals_and_writes_fail_with_the_hook_disabled(
    backend: str, disable: str, data: np.ndarray, tmp_path: Path
) -> None:
    outside = tmp_path / "escaped.txt"
    limits, marker = unique_limits()
    probes = {
        "fork": "os.fork()",
        "system": "os.system('echo escaped > /scratch/escaped')",
        "subprocess": "__import__('subprocess').run(['/bin/sh', '-c', 'true'])",
        "posix_spawn": f"os.posix_spawn({sys.executable!r}, ['python', '-c', 'pass'], {{}})",
        "system_left_nothing": "os.path.exists('/scratch/escaped')",
        "kill_parent": f"os.kill({os.getpid()}, {int(signal.SIGKILL)})",
        "write_host_tmp": f"open({str(outside)!r}, 'w').write('x')",
        "write_root": "open('/escaped', 'w').write('x')",
        "write_stdlib": f"open({os.path.join(os.path.dirname(os.__file__), 'escaped.py')!r}, 'w').write('x')",
        "write_dev": "open('/dev/escaped', 'w').write('x')",
        "chmod_root": "os.chmod('/', 0o777)",
    }
    result = run_code(_probe_program(disable, probes), data, limits, sandbox=backend)
    outcomes = json.loads(result.output.strip().splitlines()[-1])
    eperm = "PermissionError: [Errno 1] Operation not permitted"
    assert outcomes["fork"] == eperm
    assert outcomes["subprocess"].startswith(("PermissionError", "FileNotFoundError")), outcomes["subprocess"]
    assert outcomes["posix_spawn"].startswith(eperm)
    assert outcomes["system_left_nothing"] == "ok: False"
    assert outcomes["kill_parent"].startswith("ProcessLookupError"), outcomes["kill_parent"]
    assert outcomes["write_host_tmp"].startswith(("FileNotFoundError", "OSError")), outcomes["write_host_tmp"]
    for name in ("write_root", "write_stdlib", "write_dev", "chmod_root"):
        assert outcomes[name].startswith(("OSError: [Errno 30]", "PermissionError", "FileNotFoundError")), (
            name, outcomes[name])
    assert not outside.exists()
    assert sandbox_processes(marker) == []
    # kill(-1) in its own call: under bwrap it reaches the supervisor (same user, same namespace), bwrap's
    # init then ends the namespace and the kernel kills the worker, often before its last print: a race
    # that must not cost the other probes their outcomes. It reaches nothing outside the namespace.
    limits, marker = unique_limits()
    neighbour: dict[str, object] = {}  # another call's sandbox, alive while kill(-1) runs
    thread = threading.Thread(target=lambda: neighbour.update(
        result=run_code("import time\ntime.sleep(2)\nprint('alive')", data, sandbox=backend)))
    thread.start()
    time.sleep(0.5)
    run_code(_probe_program(disable, {"kill_everyone": f"os.kill(-1, {int(signal.SIGKILL)})"}), data, limits,
             sandbox=backend)
    thread.join()
    assert neighbour["result"].ok and neighbour["result"].output.strip() == "alive", neighbour["result"]
    assert sandbox_processes(marker) == []
    _still_works(backend, data)


def test_native_code_meets_the_syscall_filter(backend: str, data: np.ndarray) -> None:
    """ctypes (refused by the hook's literal check, so only the closure subversion frees it)."""
    probes = {
        "fork": (
            "(lambda c: (c.CDLL(None, use_errno=True).syscall(57 if __import__('platform').machine() == 'x86_64' "
            "else 220, 17, 0, 0, 0, 0), c.get_errno()))(__import__('ctypes'))"
        ),
        "mount": (
            "(lambda c: (c.CDLL(None, use_errno=True).mount(b'none', b'/scratch', b'tmpfs', 0, None), "
            "c.get_errno()))(__import__('ctypes'))"
        ),
        "unshare": "(lambda c: (c.CDLL(None, use_errno=True).unshare(0x10000000), c.get_errno()))(__import__('ctypes'))",
    }
    outcomes = _run_probes(backend, "closure", probes, data, error="blocked: system call refused (fork)")
    assert outcomes == {name: "ok: (-1, 1)" for name in probes}  # EPERM from the filter, not the hook
    _still_works(backend, data)


def test_a_timeout_kills_the_whole_sandbox(backend: str, data: np.ndarray) -> None:
    limits, marker = unique_limits(wall_seconds=2)
    program = DISABLE_HOOK["globals"] + "\nimport time\nprint('running', flush=True)\ntime.sleep(600)"
    result = run_code(program, data, limits, sandbox=backend)
    assert result.error == "timeout" and result.output == "running\n"
    assert sandbox_processes(marker) == []
    _still_works(backend, data)


_CALLER = """
import sys
import numpy as np
from causal_gym.harness import SandboxLimits, run_code
print("calling", flush=True)
run_code("import time\\nprint('inside', flush=True)\\ntime.sleep(600)", np.random.default_rng(0).normal(size=(5, 2)),
         SandboxLimits(cpu_seconds={cpu!r}, wall_seconds=900), sandbox={backend!r})
"""


def _wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_the_sandbox_dies_with_its_caller(backend: str, tmp_path: Path) -> None:
    """kill -9 of the process that called run_code leaves no sandbox process and no file behind."""
    limits, marker = unique_limits()
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    caller = subprocess.Popen(
        [sys.executable, "-c", _CALLER.format(cpu=limits.cpu_seconds, backend=backend)],
        cwd=os.path.dirname(os.path.dirname(causal_gym.__file__)),
        stdout=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(private_tmp)},
    )
    try:
        assert caller.stdout.readline() == b"calling\n"
        assert _wait_until(lambda: len(sandbox_processes(marker)) >= 2, 30), "the sandbox did not start"
        caller.send_signal(signal.SIGKILL)
        caller.wait()
        assert _wait_until(lambda: sandbox_processes(marker) == [], 10), sandbox_processes(marker)
    finally:
        caller.kill()
        caller.wait()
        caller.stdout.close()
    assert list(private_tmp.iterdir()) == []  # the data and the program never touched the disk


def test_auto_prefers_bwrap_and_never_falls_back_to_the_process_backend(
    data: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_backend("bwrap")
    assert resolve_sandbox("auto") == "bwrap"
    monkeypatch.setattr(sandbox.namespaces, "missing_tools", lambda backend: [backend])
    sandbox._backend_problem.cache_clear()
    try:
        result = run_code("print(1)", data)
        assert not result.ok and result.sandbox == "auto"
        assert result.error.startswith("sandbox unavailable: no namespace sandbox works on this machine")
        assert "sandbox='process'" in result.error and result.output == ""
        assert run_code("print(1)", data, sandbox="process").output == "1\n"  # only when asked for
    finally:
        monkeypatch.undo()
        sandbox._backend_problem.cache_clear()
    assert run_code("print(1)", data).sandbox == "bwrap"


_UNPRIVILEGED = """
import json, socket, sys
import numpy as np
from causal_gym.harness import run_code
code = DISABLE + '''
import os, json
out = {"uid": os.getuid()}
for name, action in [("fork", os.fork), ("connect", lambda: __import__("socket").create_connection(("127.0.0.1", PORT))),
                     ("source", lambda: open(SOURCE).read())]:
    try:
        action(); out[name] = "ok"
    except BaseException as exc:
        out[name] = type(exc).__name__
print(json.dumps(out))
'''.replace("PORT", sys.argv[1]).replace("SOURCE", repr(sys.argv[2]))
results = {}
for backend in ("bwrap", "unshare"):
    r = run_code(code, np.random.default_rng(0).normal(size=(5, 2)), sandbox=backend)
    results[backend] = {"sandbox": r.sandbox, "error": r.error, "out": r.output}
print(json.dumps(results))
"""


def test_an_unprivileged_user_gets_the_same_isolation(tmp_path: Path) -> None:
    """The namespace backends as "nobody" (unprivileged user namespaces), started from root."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        results = run_as_nobody(f"DISABLE = {DISABLE_HOOK['closure']!r}\n" + _UNPRIVILEGED,
                                [str(server.getsockname()[1]), causal_gym.__file__], tmp_path)
        server.settimeout(0.2)
        with pytest.raises(socket.timeout):
            server.accept()
    for backend in NAMESPACE_BACKENDS:
        assert results[backend]["sandbox"] == backend, results[backend]
        assert results[backend]["error"] == "blocked: system call refused (clone)", results[backend]  # glibc's fork
        inside = json.loads(results[backend]["out"])
        assert inside["uid"] == (65534 if backend == "bwrap" else 0)  # unshare maps its caller to root inside
        assert inside["fork"] == "PermissionError" and inside["connect"] == "PermissionError"
        assert inside["source"] == "FileNotFoundError"


def test_namespace_root_hides_site_packages() -> None:
    """The planned root exposes numpy and scipy but no other package, the cache or the project."""
    require_backend("bwrap")
    plan = sandbox.namespaces.root_plan()
    import numpy
    import scipy

    site_packages = os.path.dirname(os.path.dirname(numpy.__file__))
    assert plan.exposes(numpy.__file__) and plan.exposes(scipy.__file__)
    assert not plan.exposes(causal_gym.__file__)
    assert not plan.exposes(os.path.join(site_packages, "gymnasium"))
    assert not plan.exposes(str(Path.home() / ".cache"))
    assert plan.exposes(os.__file__)  # the standard library
    assert not any(p.endswith(("site-packages", "dist-packages")) for p in plan.binds + plan.packages)
