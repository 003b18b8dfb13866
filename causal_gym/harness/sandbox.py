"""The code tool: short numpy/scipy programs run on the data matrix in an OS-level sandbox.

Heuresis gives agents a mechanism-level tool that runs a short program on the data matrix "in an
isolated process that sees the data only". :func:`run_code` is that tool, and agents are treated as
adversaries: whatever the program does, it must not read the ground truth, the instance generator,
the cache or anything else of the host, reach the network, start processes, signal other processes,
or outlive the call.

Backends (``sandbox=``)
-----------------------
``"bwrap"``
    bubblewrap (Debian package ``bubblewrap``; the PyPI package of that name is unrelated).
``"unshare"``
    ``unshare`` and ``setpriv`` from util-linux, with a short mount script.
``"auto"`` (default)
    ``"bwrap"`` when it is on ``PATH`` and works, else ``"unshare"`` when it works. When neither
    works the call returns an error result (``"sandbox unavailable: ..."``) -- never a silently
    weaker sandbox. Both need Linux 5.3 or later (seccomp's user notification, pidfd).
``"process"``
    A fresh interpreter with a cleaned environment, resource limits and an audit hook, in the
    caller's namespaces. Isolation for honest agents only, **not a security boundary** (audit hooks
    can be subverted from inside the interpreter); used only when asked for by name.

Both namespace backends run the program in new user, pid, network, mount, ipc, uts and cgroup
namespaces over a read-only minimal root (the interpreter, its standard library, numpy and scipy;
see :mod:`causal_gym.harness.namespaces`) with its own read-only ``/proc``, with a private scratch
tmpfs (``file_mb``, at most 4096 files) as the only writable place, no capabilities and a syscall
filter that refuses process creation, sockets, io_uring, memfds, shared memory and namespace
changes (:mod:`causal_gym.harness.seccomp`). Agent code never runs as host root: a root caller
drops to ``nobody`` (:data:`~causal_gym.harness.namespaces.HOST_UID`) before the namespaces are
created (an interpreter in a home ``nobody`` cannot traverse, such as pyenv's under a 0700
``/root``, is shown to it in a private mount namespace first:
:func:`~causal_gym.harness.namespaces.reachable_view`); an unprivileged caller runs the sandbox as itself. Per call, the program's tasks are
bounded by ``RLIMIT_NPROC`` (``max_tasks``; the kernel counts it per user namespace, and it binds
because the host user is not root) and its memory by ``RLIMIT_AS`` plus the scratch size (nothing
else can hold memory outside the address space). :attr:`CodeResult.bounds` and
:func:`sandbox_bounds` say which bounds applied. The sandbox dies with its caller and is killed as
a whole on a timeout.

Each call
---------
1. puts the data (``.npy``) and the program into two anonymous temporary files that are never
   linked into the file system, and passes them as inherited descriptors;
2. starts a *fresh* interpreter (``python -I -B -X utf8 -c <bootstrap>``; never a fork of the
   calling process, so no SCM, ground truth or harness state exists in its memory) with a minimal
   environment (``PATH``, ``HOME`` and ``TMPDIR`` = the scratch directory, a UTF-8 locale, BLAS and
   OpenMP thread counts of 1);
3. the bootstrap (:mod:`causal_gym.harness.sandbox_bootstrap`) loads the data, drops capabilities
   and forks: a *supervisor*, not dumpable, keeps the descriptor on which the call's outcome is
   reported, and answers the calls the worker's syscall filter refuses; the *worker*, which never
   holds that descriptor, installs the syscall filter (namespace backends) and hands its listener
   to the supervisor, sets resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``,
   ``RLIMIT_NOFILE``, ``RLIMIT_NPROC``, no core files) and an audit hook, then runs the program
   with ``X`` (the ``n x d`` float64 array), ``n``, ``d``, ``np`` and ``scipy``. Whatever the
   program prints is the tool's output; the supervisor reports from the worker's messages, the
   filter's refusals and the worker's exit;
4. the parent reads the output incrementally (keeping at most ``max_output_chars``), enforces the
   wall-clock limit and finally kills the sandbox: its process group and its first child (the
   worker, or a namespace's init), waiting until that child has exited (for an init, until the
   kernel has reaped every process of the namespace).

The audit hook refuses, with ``PermissionError("blocked: ...")`` inside the program: network access,
process creation and signals, ``ctypes``, files outside the scratch directory (reading the Python
installation is allowed), ``/proc``, and tampering (``sys.settrace``, ``resource.setrlimit``,
replacing the hook's code). A blocked attempt fails the call (``ok=False``, ``error="blocked:
<what>"``) even when the program catches the exception: the hook tells the supervisor before the
program sees the exception, and the program can add messages to that pipe but not take one back
(closing or replacing it ends the call as ``"blocked: tampering with the sandbox's report
channel"``). Under the namespace backends the hook only
makes refusals legible; a program that subverts it meets the kernel's refusals instead
(``PermissionError: [Errno 1] Operation not permitted``, ``FileNotFoundError``, ...), and each
call the syscall filter refuses is handed to the supervisor, which answers ``EPERM`` and reports
the call as ``"blocked: system call refused (<name>)"`` whatever the program does next. Under
``"process"`` the hook also denies the causal_gym package and the on-disk cache.

Output: stdout and stderr are merged into one stream, in the order written; an uncaught exception's
traceback (without the sandbox's own frames) is part of it. ``error`` is a short reason:
``"timeout"``, ``"cpu time limit"``, ``"memory limit"``, ``"blocked: network access"``,
``"blocked: system call refused (socket)"``, the last
line of the traceback (``"ZeroDivisionError: division by zero"``), ``"sandbox unavailable: ..."``.
:attr:`CodeResult.sandbox` names the backend that ran the call.

Examples
--------
>>> import numpy as np
>>> X = np.random.default_rng(0).normal(size=(100, 3))
>>> result = run_code("print(n, d, round(float(np.corrcoef(X.T)[0, 0]), 3))", X)
>>> result.ok, result.output
(True, '100 3 1.0\\n')
"""

from __future__ import annotations

import functools
import json
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from causal_gym._cache import cache_dir
from causal_gym._validation import check_data
from causal_gym.harness import namespaces, seccomp

__all__ = [
    "SANDBOXES",
    "CodeResult",
    "SandboxLimits",
    "SandboxUnavailable",
    "check_sandbox_options",
    "resolve_sandbox",
    "run_code",
    "sandbox_bounds",
    "sandbox_in_use",
]

SANDBOXES = ("auto", "bwrap", "unshare", "process")
"""Values of ``sandbox=``: ``"auto"`` picks the first namespace backend that works here."""

_THREAD_VARS = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
_READ_CHUNK = 65536
_MAX_STATUS_BYTES = 65536
_MAX_ERROR_CHARS = 500
_CHILD_EXIT_SECONDS = 5.0


class SandboxUnavailable(RuntimeError):
    """No namespace backend works on this machine (or the one asked for does not)."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one :func:`run_code` call.

    Parameters
    ----------
    cpu_seconds : float
        CPU time the program may use (``RLIMIT_CPU``, counted from after the child's imports and
        rounded up to whole seconds). Default 10.
    wall_seconds : float
        Wall-clock time of the whole call, interpreter start-up included; then the process group is
        killed. Default 30.
    memory_mb : int
        Address-space cap of the child process (``RLIMIT_AS``), interpreter and numpy/scipy
        included (they take roughly 150-400 MB of address space). Default 2048.
    max_output_chars : int
        Characters of output kept; the rest is discarded and a truncation marker appended.
        Default 4000.
    max_code_chars : int
        Longest program accepted; a longer one is refused without starting a process.
        Default 20000.
    file_mb : int
        Largest file the program may write in its scratch directory (``RLIMIT_FSIZE``; writing
        beyond it fails with ``OSError``); under the namespace backends also the size of the
        scratch directory. Not named in the paper; default 64.
    max_tasks : int
        Namespace backends: processes and threads of the call's sandbox user, its init and
        supervisor included (``RLIMIT_NPROC``, which the kernel counts per user namespace, so one
        call's threads never count against another's). Default 64.
    """

    cpu_seconds: float = 10
    wall_seconds: float = 30
    memory_mb: int = 2048
    max_output_chars: int = 4000
    max_code_chars: int = 20_000
    file_mb: int = 64
    max_tasks: int = 64

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"SandboxLimits.{name} must be a positive number, got {value!r}")
        for name in ("memory_mb", "max_output_chars", "max_code_chars", "file_mb", "max_tasks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class CodeResult:
    """What one program run produced.

    Attributes
    ----------
    ok : bool
        True when the program ran to the end (or called ``sys.exit(0)``) and nothing was blocked.
    output : str
        Merged stdout and stderr, at most ``max_output_chars`` characters plus a truncation marker.
    error : str or None
        Short reason when ``ok`` is False (see the module docstring), else None.
    wall_time : float
        Seconds from starting the interpreter to its end.
    output_truncated : bool
        True when output beyond ``max_output_chars`` was discarded.
    sandbox : str
        The backend that ran the program (``"bwrap"``, ``"unshare"`` or ``"process"``); the
        requested name when the call was refused before running.
    bounds : str
        What bounded the call (:func:`sandbox_bounds`); empty when it was refused before running.
    """

    ok: bool
    output: str
    error: str | None
    wall_time: float
    output_truncated: bool
    sandbox: str
    bounds: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a JSON-serialisable dict (for the call record)."""
        return asdict(self)


def resolve_sandbox(sandbox: str = "auto") -> str:
    """The backend :func:`run_code` uses for ``sandbox`` on this machine.

    A namespace backend is tried once per process with a tiny program (about 0.2 s); the verdict
    is kept.

    Raises
    ------
    ValueError
        If ``sandbox`` is not one of :data:`SANDBOXES`.
    SandboxUnavailable
        If the backend asked for (or, for ``"auto"``, every namespace backend) does not work here;
        the message says why and what to install.
    """
    if sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
    if sandbox == "process":
        return sandbox
    candidates = namespaces.NAMESPACE_BACKENDS if sandbox == "auto" else (sandbox,)
    reasons = []
    for backend in candidates:
        problem = _backend_problem(backend)
        if problem is None:
            return backend
        reasons.append(f"{backend}: {problem}")
    raise SandboxUnavailable(
        "no namespace sandbox works on this machine (" + "; ".join(reasons) + "). Install bubblewrap "
        "(apt-get install bubblewrap) or allow unprivileged user namespaces"
        + (f"; as root the sandbox runs as uid {namespaces.HOST_UID}, which must be able to read the interpreter "
           "and numpy/scipy (directories it cannot traverse, such as a 0700 /root, are shown to it in a private "
           "mount namespace, set up with unshare, mount and nsenter from util-linux)" if namespaces.host_uid() != os.getuid() else "")
        + "; sandbox='process' runs agent code without OS isolation (not a security boundary)."
    )


def check_sandbox_options(limits: object, sandbox: object) -> tuple[SandboxLimits | None, str]:
    """Validate an env's ``sandbox_limits`` and ``sandbox`` arguments (for the envs that offer ``run_code``).

    Raises
    ------
    ValueError
        If ``limits`` is not a :class:`SandboxLimits` or None, or ``sandbox`` not one of :data:`SANDBOXES`.
    """
    if limits is not None and not isinstance(limits, SandboxLimits):
        raise ValueError(f"sandbox_limits must be a SandboxLimits or None, got {type(limits).__name__}")
    if not isinstance(sandbox, str) or sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
    return limits, sandbox


def sandbox_bounds(sandbox: str, limits: SandboxLimits | None = None) -> str:
    """In words: the host user, task bound and memory bound of a call under ``sandbox`` here.

    Envs put it in their final info next to :func:`sandbox_in_use`, so a record says which bound
    applied (for instance that the ``"process"`` backend's task bound does not bind a root caller).
    """
    return _bounds(sandbox_in_use(sandbox), SandboxLimits() if limits is None else limits)


def _bounds(backend: str, limits: SandboxLimits) -> str:
    """:func:`sandbox_bounds` for a resolved backend (or ``"unavailable"``)."""
    memory = f"{limits.memory_mb} MB address space (RLIMIT_AS)"
    if backend == "unavailable":
        return "none: no sandbox ran"
    if backend == "process":
        uid = os.getuid()
        tasks = "no new process or thread (RLIMIT_NPROC 0" + (", which does not bind root)" if uid == 0 else ")")
        return f"host uid {uid}; tasks: {tasks}; memory: {memory}; not a security boundary"
    # Linux counts RLIMIT_NPROC per user namespace since 5.14; before, per host uid.
    counted = "in the call's user namespace" if _kernel_at_least(5, 14) else "shared by every process of this host uid"
    return (
        f"host uid {namespaces.host_uid()}; tasks: at most {limits.max_tasks} (RLIMIT_NPROC {counted}); "
        f"memory: {memory} + {limits.file_mb} MB scratch tmpfs, memfd, System V and POSIX IPC and io_uring refused"
    )


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        found = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return found >= (major, minor)


def sandbox_in_use(sandbox: str) -> str:
    """The backend ``run_code(..., sandbox=sandbox)`` would run under here, or ``"unavailable"``.

    Envs put it in their final info and the run store keeps it, so reports can mark episodes whose
    agent code ran without OS isolation (``"process"``).
    """
    try:
        return resolve_sandbox(sandbox)
    except SandboxUnavailable:
        return "unavailable"


@functools.cache
def _backend_problem(backend: str) -> str | None:
    """None when ``backend`` runs a trivial program correctly here, else the reason it does not."""
    missing = namespaces.missing_tools(backend)
    if missing:
        return f"{', '.join(missing)} not found on PATH"
    try:
        result = _execute(backend, b"print(6 * 7)", np.zeros((2, 1)), SandboxLimits())
    except (OSError, RuntimeError, ValueError) as exc:
        return str(exc)
    if result.ok and result.output == "42\n":
        return None
    return (result.error or "unexpected output") + (f" ({result.output.strip()[:300]})" if result.output else "")


def run_code(
    code: str, data: np.ndarray, limits: SandboxLimits | None = None, *, sandbox: str = "auto"
) -> CodeResult:
    """Run ``code`` in a fresh, isolated interpreter that sees only ``data`` (as ``X``).

    Nothing the program does makes this function raise: errors, blocked operations, limits, a
    missing sandbox and crashes all come back as ``CodeResult(ok=False, error=...)``.

    Parameters
    ----------
    code : str
        Python source. It sees ``X`` (``data`` as a float64 array), ``n, d = X.shape``, ``np`` and
        ``scipy``; other numpy/scipy submodules and the standard library can be imported.
    data : np.ndarray
        The ``(n, d)`` data matrix (validated with :func:`causal_gym._validation.check_data`).
    limits : SandboxLimits, optional
        Resource limits; the defaults of :class:`SandboxLimits` when None.
    sandbox : {"auto", "bwrap", "unshare", "process"}
        The backend (see the module docstring); ``"process"`` is not a security boundary.

    Returns
    -------
    CodeResult

    Raises
    ------
    ValueError
        If ``code`` is not a str, ``data`` is not a valid data matrix, ``limits`` is not a
        :class:`SandboxLimits` or ``sandbox`` is not one of :data:`SANDBOXES`.
    """
    if not isinstance(code, str):
        raise ValueError(f"code must be a str, got {type(code).__name__}")
    matrix = check_data(data, "data")
    if limits is None:
        limits = SandboxLimits()
    elif not isinstance(limits, SandboxLimits):
        raise ValueError(f"limits must be a SandboxLimits or None, got {type(limits).__name__}")
    if sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {SANDBOXES}, got {sandbox!r}")
    if len(code) > limits.max_code_chars:
        return _refused(f"code too long: {len(code)} characters (limit {limits.max_code_chars})", sandbox)
    try:
        source = code.encode("utf-8")
    except UnicodeEncodeError as exc:
        return _refused(f"code is not valid text: {exc.reason} at position {exc.start}", sandbox)
    try:
        backend = resolve_sandbox(sandbox)
    except SandboxUnavailable as exc:
        return _refused(f"sandbox unavailable: {exc}", sandbox)
    return _execute(backend, source, matrix, limits)


@functools.lru_cache(maxsize=1)
def _bootstrap_source() -> str:
    return Path(__file__).with_name("sandbox_bootstrap.py").read_text(encoding="utf-8")


def _refused(reason: str, sandbox: str) -> CodeResult:
    return CodeResult(ok=False, output="", error=reason, wall_time=0.0, output_truncated=False, sandbox=sandbox)


def _anonymous_file(content: bytes | np.ndarray) -> IO[bytes]:
    """A temporary file with no name in the file system, rewound, holding ``content``."""
    handle = tempfile.TemporaryFile()
    if isinstance(content, np.ndarray):
        np.save(handle, content, allow_pickle=False)
    else:
        handle.write(content)
    handle.flush()
    handle.seek(0)
    return handle


def _execute(backend: str, source: bytes, matrix: np.ndarray, limits: SandboxLimits) -> CodeResult:
    """Run the program under ``backend``, collect its output and status, and kill what is left."""
    interpreter_args = ["-I", "-B", "-X", "utf8", "-c", _bootstrap_source()]
    passed: tuple[int, ...]
    if backend == "process":
        workdir = os.path.realpath(tempfile.mkdtemp(prefix="causal_gym_sandbox_"))
        argv, scratch, passed = [sys.executable, *interpreter_args], workdir, ()
    else:
        workdir = None
        argv, passed = namespaces.command(backend, interpreter_args, limits.file_mb * 2**20)
        scratch = namespaces.SCRATCH
    status_read, status_write = os.pipe()
    write_open = True
    try:
        with _anonymous_file(matrix) as data_file, _anonymous_file(source) as code_file:
            config = {
                "status_fd": status_write,
                "data_fd": data_file.fileno(),
                "code_fd": code_file.fileno(),
                "cpu_seconds": limits.cpu_seconds,
                "max_tasks": 0 if workdir else limits.max_tasks,
                "memory_bytes": limits.memory_mb * 2**20,
                "file_bytes": limits.file_mb * 2**20,
                "deny": _denied_dirs() if workdir else [],
                "site_dirs": [] if workdir else list(namespaces.root_plan().site_dirs),
                "old_root": namespaces.OLD_ROOT if backend == "unshare" else None,
                "scratch_mount": namespaces.scratch_options(limits.file_mb * 2**20) if backend == "bwrap" else None,
                "drop_capabilities": not workdir,
                "seccomp": None if workdir else _filters(),
            }
            start = time.monotonic()
            deadline = start + limits.wall_seconds
            proc = subprocess.Popen(
                [*argv, json.dumps(config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=_child_environment(scratch),
                start_new_session=True,
                pass_fds=(status_write, data_file.fileno(), code_file.fileno(), *passed),
            )
        os.close(status_write)
        write_open = False
        try:
            kept, total_bytes, status = _collect(proc, status_read, deadline, 4 * limits.max_output_chars)
            timed_out = not _wait_for_exit(proc.pid, deadline)
        finally:
            _kill_sandbox(proc.pid)
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    finally:
        if write_open:
            os.close(status_write)
        os.close(status_read)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    wall_time = time.monotonic() - start

    output = kept.decode("utf-8", errors="replace")
    truncated = total_bytes > len(kept) or len(output) > limits.max_output_chars
    if truncated:
        output = (
            output[: limits.max_output_chars]
            + f"\n[output truncated to {limits.max_output_chars} characters; "
            f"{total_bytes} bytes were printed]\n"
        )
    # A namespace's init reports a signal death of the program as the exit code 128 + signal.
    returncode = proc.returncode
    if backend != "process" and returncode > 128:
        returncode = 128 - returncode
    ok, error = _outcome(status, returncode, timed_out)
    return CodeResult(ok, output, error, wall_time, truncated, backend, _bounds(backend, limits))


def _collect(
    proc: subprocess.Popen, status_fd: int, deadline: float, max_bytes: int
) -> tuple[bytes, int, bytes]:
    """Read output and status pipes until both close or the deadline passes.

    Keeps the first ``max_bytes`` of output and counts the rest without storing it, so a print
    loop cannot fill the parent's memory. Returns (kept output, total output bytes, status bytes).
    """
    kept = bytearray()
    status = bytearray()
    total = 0
    if proc.stdout is None:
        raise RuntimeError("the sandbox process was started without a stdout pipe")
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout.fileno(), selectors.EVENT_READ, "output")
        selector.register(status_fd, selectors.EVENT_READ, "status")
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                elif key.data == "output":
                    total += len(chunk)
                    kept += chunk[: max(0, max_bytes - len(kept))]
                elif len(status) < _MAX_STATUS_BYTES:
                    status += chunk
    return bytes(kept), total, bytes(status)


def _wait_for_exit(pid: int, deadline: float) -> bool:
    """Wait until ``pid`` has exited or the deadline passes, without reaping it.

    Leaving the zombie in place keeps its pid (= the sandbox's process-group id) from being
    reused before :func:`_kill_sandbox` runs.
    """
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def _kill_sandbox(pid: int) -> None:
    """Kill the sandbox started as ``pid`` (still unreaped) and wait until its processes are gone.

    ``pid``'s children (a namespace backend's init under bwrap or unshare; the bootstrap's worker
    under the supervisor of the process backend) are opened as process descriptors, killed, and
    waited for, and the child's process group is killed. Without the wait, a worker orphaned by
    the supervisor's death could still be running for a moment after this returned, and a
    namespace's remaining processes would die only with the outer process's death signal; an
    init's exit completes only when its namespace is empty, so waiting for it waits for all of
    them.
    """
    children = _children(pid)
    for handle in children:
        try:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for handle in children:
        try:
            select.select([handle], [], [], _CHILD_EXIT_SECONDS)
        finally:
            os.close(handle)


def _children(pid: int) -> list[int]:
    """Process descriptors of the children of ``pid`` (a namespace's init, or the worker), opened race-free.

    A child is checked to still be a child of ``pid`` after its descriptor is opened, so a reused
    pid is never signalled. Empty when the kernel cannot say (no pidfd, no ``children`` file).
    """
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    handles = []
    for child in map(int, listed):
        try:
            handle = os.pidfd_open(child)
        except (OSError, AttributeError):
            continue
        try:
            parent = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            parent = -1
        if parent == pid:
            handles.append(handle)
        else:
            os.close(handle)
    return handles


def _outcome(status: bytes, returncode: int, timed_out: bool) -> tuple[bool, str | None]:
    """Turn the child's status message and exit into (ok, error)."""
    if timed_out:
        return False, "timeout"
    try:
        reported = json.loads(status.decode("utf-8"))
        error = reported["error"]
    except (ValueError, TypeError, KeyError):
        pass
    else:
        if error is None:
            return True, None
        if isinstance(error, str):
            return False, error[:_MAX_ERROR_CHARS]
    if returncode < 0:
        signum = -returncode
        if signum == signal.SIGXCPU:
            return False, "cpu time limit"
        try:
            return False, f"crashed ({signal.Signals(signum).name})"
        except ValueError:
            return False, f"crashed (signal {signum})"
    return False, f"exited early with code {returncode}"


@functools.lru_cache(maxsize=1)
def _filters() -> dict[str, Any]:
    """The bootstrap's syscall filters: the worker's (refusals to the supervisor) and the supervisor's."""
    return {
        "worker": seccomp.process_filter(notify=True).hex(),
        "supervisor": seccomp.process_filter().hex(),
        "syscall": seccomp.seccomp_syscall(),
        "names": {str(number): name for number, name in seccomp.syscall_names().items()},
    }


def _child_environment(workdir: str) -> dict[str, str]:
    env = {"PATH": os.defpath, "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env.update(dict.fromkeys(_THREAD_VARS, "1"))
    return env


def _denied_dirs() -> list[str]:
    """Directories refused to the child even if they lie inside the Python installation."""
    package = Path(__file__).resolve().parents[1]
    return sorted({os.path.realpath(cache_dir()), str(package)})


