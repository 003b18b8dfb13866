"""The code tool when the evaluator runs as root: host settings, per-call bounds, the report channel.

An attacker's programs, run for real under both namespace backends, as root and as an unprivileged
caller ("nobody" via setpriv), and judged from the host:

- the host's sysctls are read before and after; writing them (``vm.swappiness``,
  ``kernel.core_pattern``) and other ``/proc`` knobs fails, and the sandbox's processes run as an
  unprivileged host uid (read from the host's ``/proc/<pid>/status``);
- a thread bomb holds at most ``max_tasks`` tasks (counted in the host's ``/proc``) while an honest
  call next to it succeeds;
- memory held outside the address space (memfd, System V shared memory, ``/dev/shm``, the scratch
  tmpfs) stays within the cap plus the scratch size, measured as the host's ``Shmem`` growth plus the
  sandbox processes' anonymous memory;
- ``io_uring`` and the other resource-creating syscalls get ``EPERM``;
- a program that forges the status report still comes back blocked, and so does one that subverts
  the audit hook and meets the kernel's refusal (caught, then forged over, the report pipe closed,
  or a syscall filter of its own with a listener attempted);
- ``prlimit64`` on another process of the sandbox (the supervisor, init, its own pid) is refused,
  read from the host's ``/proc/<pid>/limits``, while the program's own limits (pid 0) still change.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from causal_gym.harness import SandboxLimits, run_code, sandbox_bounds
from sandbox_helpers import NAMESPACE_BACKENDS, require_backend, run_as_nobody, sandbox_processes, unique_limits
from test_sandbox_escapes import DISABLE_HOOK, RUNNER

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="namespaces need Linux")

SYSCTLS = ("vm/swappiness", "kernel/core_pattern", "kernel/hostname", "vm/overcommit_memory")

# The attacker's program (audit hook subverted): every write to a host knob it can think of, then
# the syscalls that create resources the kernel does not count against the address space.
KNOBS_PROGRAM = DISABLE_HOOK["closure"] + RUNNER + """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def raw(number, *args):
    return (libc.syscall(number, *args), ctypes.get_errno())
x86 = __import__("platform").machine() == "x86_64"
attempt("swappiness", lambda: open("/proc/sys/vm/swappiness", "w").write(str(WANTED)))
attempt("core_pattern", lambda: open("/proc/sys/kernel/core_pattern", "w"))
attempt("hostname_sysctl", lambda: open("/proc/sys/kernel/hostname", "w").write("escaped"))
attempt("sysrq", lambda: open("/proc/sysrq-trigger", "w"))
attempt("oom_score_adj", lambda: open("/proc/self/oom_score_adj", "w").write("-1000"))
attempt("io_uring_setup", lambda: raw(425, 8, ctypes.create_string_buffer(120)))
attempt("memfd_create", lambda: os.memfd_create("held"))
attempt("shmget", lambda: (libc.shmget(0, 1 << 20, 0o1600), ctypes.get_errno()))
attempt("msgget", lambda: (libc.msgget(0, 0o1600), ctypes.get_errno()))
attempt("pidfd_open", lambda: raw(434, 1, 0))
attempt("clone_newnet_thread", lambda: raw(56 if x86 else 220, 0x40000000 | 0x00010F00, 0, 0, 0, 0))
attempt("future_syscall", lambda: raw(500))
attempt("devices", lambda: sorted(os.listdir("/dev")))
attempt("sys", lambda: os.listdir("/sys"))
print(json.dumps(outcomes))
"""


# The knobs fail in the file system (read-only, absent); io_uring_setup is the first call the
# syscall filter refuses, which the supervisor reports although the hook is subverted.
_FIRST_REFUSAL = "blocked: system call refused (io_uring_setup)"


def _sysctls() -> dict[str, str]:
    return {name: Path("/proc/sys", name).read_text() for name in SYSCTLS}


def _knobs_program() -> str:
    return KNOBS_PROGRAM.replace("WANTED", str(int(Path("/proc/sys/vm/swappiness").read_text()) % 100 + 1))


def _check_knob_outcomes(outcomes: dict[str, str]) -> None:
    refused = ("OSError: [Errno 30]", "PermissionError", "FileNotFoundError")
    for name in ("swappiness", "core_pattern", "hostname_sysctl", "sysrq", "oom_score_adj"):
        assert outcomes[name].startswith(refused), (name, outcomes[name])
    for name in ("io_uring_setup", "shmget", "msgget", "pidfd_open", "clone_newnet_thread"):
        assert outcomes[name] == "ok: (-1, 1)", (name, outcomes[name])  # EPERM from the filter
    assert outcomes["memfd_create"] == "PermissionError: [Errno 1] Operation not permitted"
    assert outcomes["future_syscall"] == "ok: (-1, 38)"  # ENOSYS: not reviewed, not allowed
    # no pseudo-terminals, no /dev/shm, no /sys
    assert outcomes["devices"] == "ok: ['full', 'null', 'random', 'urandom', 'zero']", outcomes["devices"]
    assert outcomes["sys"].startswith("FileNotFoundError"), outcomes["sys"]


@pytest.fixture(params=NAMESPACE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(5).normal(size=(40, 3))


def test_host_settings_stay_unwritable_for_the_caller_as_is(backend: str, data: np.ndarray) -> None:
    """As the test runs (root in CI): sysctls unchanged, no knob writable, resources refused."""
    before = _sysctls()
    try:
        result = run_code(_knobs_program(), data, sandbox=backend)
        after = _sysctls()
    finally:
        if os.geteuid() == 0:  # put back whatever a broken sandbox changed
            for name, value in before.items():
                if Path("/proc/sys", name).read_text() != value:
                    Path("/proc/sys", name).write_text(value)
    assert after == before
    assert result.error == _FIRST_REFUSAL, result
    _check_knob_outcomes(json.loads(result.output.strip().splitlines()[-1]))


_NOBODY_KNOBS = """
import json, sys
import numpy as np
from causal_gym.harness import run_code
results = {}
for backend in ("bwrap", "unshare"):
    r = run_code(sys.argv[1], np.random.default_rng(0).normal(size=(5, 2)), sandbox=backend)
    results[backend] = {"sandbox": r.sandbox, "error": r.error, "out": r.output}
print(json.dumps(results))
"""


def test_host_settings_stay_unwritable_for_an_unprivileged_caller(tmp_path: Path) -> None:
    before = _sysctls()
    results = run_as_nobody(_NOBODY_KNOBS, [_knobs_program()], tmp_path)
    assert _sysctls() == before
    for backend in NAMESPACE_BACKENDS:
        assert results[backend]["sandbox"] == backend and results[backend]["error"] == _FIRST_REFUSAL, results[backend]
        _check_knob_outcomes(json.loads(results[backend]["out"].strip().splitlines()[-1]))


# --- tasks ----------------------------------------------------------------------------------------

BOMB = """
import threading, time
threading.stack_size(65536)
release = threading.Event()
started = 0
try:
    while started < 2000:
        threading.Thread(target=release.wait, args=(8,), daemon=True).start()
        started += 1
except RuntimeError as exc:
    print("refused after", started, exc, flush=True)
print("started", started, flush=True)
time.sleep(3)
release.set()
"""


_SETUP = {os.path.realpath(shutil.which(tool) or tool) for tool in ("setpriv", "nsenter", "unshare", "sh", "mount", "mkdir",
                                                                    "touch")}
_HOST_USERNS = os.readlink("/proc/self/ns/user")


def _tasks(pids: list[int]) -> tuple[int, set[int]]:
    """Threads of ``pids`` and the real uids they run as, from the host's /proc.

    The set-up that runs as root before it drops privileges -- ``setpriv`` and, when the
    interpreter is in a home "nobody" cannot traverse, ``nsenter`` into the private view (and the
    view's one-off ``unshare``, ``sh``, ``mount``, ``mkdir`` and ``touch``) -- is left out of the
    uids while still in the host's user namespace; every process in the sandbox's namespaces counts.
    """
    count, uids = 0, set()
    for pid in pids:
        try:
            count += len(os.listdir(f"/proc/{pid}/task"))
            status = Path(f"/proc/{pid}/status").read_text()
            setup = os.path.realpath(f"/proc/{pid}/exe") in _SETUP and os.readlink(f"/proc/{pid}/ns/user") == _HOST_USERNS
        except OSError:
            continue
        if not setup:
            uids.add(int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1]))
    return count, uids


def test_a_thread_bomb_is_bounded_and_an_honest_call_next_to_it_succeeds(backend: str, data: np.ndarray) -> None:
    limits, marker = unique_limits()
    outcome: dict[str, object] = {}
    bomb = threading.Thread(target=lambda: outcome.update(result=run_code(BOMB, data, limits, sandbox=backend)))
    bomb.start()
    most, uids = 0, set()
    honest = None
    deadline = time.monotonic() + 60
    while bomb.is_alive() and time.monotonic() < deadline:
        count, seen = _tasks(sandbox_processes(marker))
        most, uids = max(most, count), uids | seen
        if honest is None and count >= 40:  # the bomb holds its threads now
            honest = run_code("print(float(X.sum()))", data, sandbox=backend)
        time.sleep(0.02)
    bomb.join()
    result = outcome["result"]
    assert result.ok, result
    started = int(result.output.split("started ")[1].split()[0])
    assert "refused after" in result.output and started < 64, result.output  # the default max_tasks
    # the host's count: the program's threads plus the sandbox's own processes (bwrap or unshare
    # outside, the namespace's init or the supervisor inside)
    assert 40 <= most <= 64 + 3, most
    assert uids and 0 not in uids, uids  # an unprivileged host user, also when the caller is root
    assert "at most 64" in result.bounds and "RLIMIT_NPROC" in result.bounds
    assert honest is not None and honest.ok and float(honest.output) == pytest.approx(float(data.sum()))


# --- memory ---------------------------------------------------------------------------------------

HOARD = DISABLE_HOOK["closure"] + RUNNER + """
import ctypes, mmap, time
libc = ctypes.CDLL(None, use_errno=True)
held = []
CHUNK = 64 << 20
def memfds():
    size = 15 << 20  # each under RLIMIT_FSIZE (16 MB here), which also bounds a memfd
    for _ in range(40):
        fd = os.memfd_create("held")
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as view:
            view[:] = b"x" * size
        held.append(fd)
    return len(held)
def sysv():
    libc.shmat.restype = ctypes.c_void_p
    for _ in range(8):
        segment = libc.shmget(0, CHUNK, 0o1600)
        if segment < 0:
            return ("shmget", ctypes.get_errno())
        address = libc.shmat(segment, None, 0)
        ctypes.memset(address, 1, CHUNK)
        libc.shmdt(ctypes.c_void_p(address))
    return "held"
def file_in(directory):
    with open(directory + "/held", "wb") as handle:
        for _ in range(16):
            handle.write(b"x" * CHUNK)
attempt("memfd", memfds)
attempt("sysv", sysv)
attempt("dev_shm", lambda: file_in("/dev/shm"))
attempt("scratch", lambda: file_in("/scratch"))
print(json.dumps(outcomes), flush=True)
time.sleep(3)
"""


def _shmem_kb() -> int:
    line = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("Shmem:"))
    return int(line.split()[1])


def _anonymous_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in status.splitlines() if line.startswith("RssAnon:"))
    return total


def _scratch_kb(pids: list[int]) -> int:
    """The most any of ``pids`` sees used on its own ``/scratch``, read from the host through ``/proc/<pid>/root``.

    Per sandbox, unlike the machine-wide ``Shmem:``, which other tests running beside this one move both ways.
    """
    used = 0
    for pid in pids:
        try:
            stats = os.statvfs(f"/proc/{pid}/root/scratch")
        except OSError:
            continue
        used = max(used, (stats.f_blocks - stats.f_bfree) * stats.f_frsize // 1024)
    return used


def test_memory_held_outside_the_address_space_stays_within_the_cap(backend: str, data: np.ndarray) -> None:
    limits, marker = unique_limits(memory_mb=512, file_mb=16, wall_seconds=60)
    before = _shmem_kb()
    outcome: dict[str, object] = {}
    call = threading.Thread(target=lambda: outcome.update(result=run_code(HOARD, data, limits, sandbox=backend)))
    call.start()
    most = most_scratch = 0
    while call.is_alive():
        pids = sandbox_processes(marker)
        scratch = _scratch_kb(pids)
        held = max(_shmem_kb() - before, scratch)  # anything shared the host saw, or at least the scratch file
        most, most_scratch = max(most, held + _anonymous_kb(pids)), max(most_scratch, scratch)
        time.sleep(0.02)
    call.join()
    result = outcome["result"]
    outcomes = json.loads(result.output.strip().splitlines()[0])
    margin_mb = 64
    assert most <= (limits.memory_mb + limits.file_mb + margin_mb) * 1024, (most / 1024, outcomes)
    assert most_scratch >= limits.file_mb * 1024 * 3 // 4, most_scratch / 1024  # the monitor sees the scratch file
    assert outcomes["memfd"] == "PermissionError: [Errno 1] Operation not permitted", outcomes
    assert outcomes["sysv"] == "ok: ('shmget', 1)", outcomes
    assert outcomes["dev_shm"].startswith(("OSError: [Errno 30]", "FileNotFoundError", "PermissionError")), outcomes
    assert outcomes["scratch"].startswith(("OSError: [Errno 27]", "OSError: [Errno 28]")), outcomes  # full


# --- the report channel ---------------------------------------------------------------------------

FORGERIES = {
    # write a clean report on every descriptor, get blocked, catch it, leave before the bootstrap reports
    "every_descriptor": """
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"error": null}\\n')
    except OSError:
        pass
try:
    open("/etc/hostname")
except PermissionError:
    pass
os._exit(0)
""",
    # put a pipe of its own where the report goes, then get blocked
    "replaced_descriptor": """
import os
def is_open(fd):
    try:
        return os.fstat(fd) is not None
    except OSError:
        return False
for fd in [fd for fd in range(3, 64) if is_open(fd)]:
    read_end, write_end = os.pipe()
    os.dup2(write_end, fd)
try:
    open("/etc/hostname")
except PermissionError:
    pass
""",
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
@pytest.mark.parametrize("any_backend", [*NAMESPACE_BACKENDS, "process"])
def test_a_forged_report_still_comes_back_blocked(any_backend: str, forgery: str, data: np.ndarray) -> None:
    require_backend(any_backend)
    result = run_code(FORGERIES[forgery], data, sandbox=any_backend)
    assert not result.ok
    expected = {"every_descriptor": "blocked: file access outside the sandbox (/etc/hostname)",
                "replaced_descriptor": "blocked: tampering with the sandbox's report channel"}[forgery]
    assert result.error == expected, result
    assert run_code("print(n)", data, sandbox=any_backend).output == f"{data.shape[0]}\n"


def test_the_status_descriptor_is_out_of_the_programs_reach(backend: str, data: np.ndarray) -> None:
    """With the hook subverted: no descriptor of the program, its parent or PID 1 reaches the host."""
    program = DISABLE_HOOK["closure"] + RUNNER + """
config = json.loads(open("/proc/self/cmdline").read().split(chr(0))[-2])
status = config["status_fd"]
attempt("own", lambda: os.write(status, b'{"error": null}'))
for pid in sorted({1, os.getppid()}):
    attempt("proc_%d" % pid, lambda: os.write(os.open("/proc/%d/fd/%d" % (pid, status), os.O_WRONLY), b'{"error": null}'))
    attempt("mem_%d" % pid, lambda: open("/proc/%d/mem" % pid, "r+b"))
attempt("pidfd_getfd", lambda: (lambda c: (c.CDLL(None, use_errno=True).syscall(438, 0, status, 0), c.get_errno()))(
    __import__("ctypes")))
print(json.dumps(outcomes), flush=True)
os.write(status, b'{"error": null}')
"""
    result = run_code(program, data, sandbox=backend)
    outcomes = json.loads(next(line for line in result.output.splitlines() if line.startswith("{")))
    assert outcomes["own"].startswith("OSError: [Errno 9]"), outcomes  # closed before the program ran
    for name, outcome in outcomes.items():
        if name.startswith(("proc_", "mem_")):
            assert outcome.startswith(("PermissionError", "FileNotFoundError", "OSError: [Errno 30]")), (name, outcome)
    assert outcomes["pidfd_getfd"] == "ok: (-1, 1)"
    assert result.output.rstrip().endswith("OSError: [Errno 9] Bad file descriptor"), result  # the last forgery
    assert result.error == "blocked: system call refused (pidfd_getfd)", result


# The hook subverted, then a call the kernel refuses, then whatever could hide it: the supervisor's
# record of the refusal (from the filter's listener, which the program never holds) decides.
KERNEL_REFUSALS = {
    "caught": DISABLE_HOOK["closure"] + """
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
except PermissionError as exc:
    print("caught", exc)
""",
    "forged": DISABLE_HOOK["closure"] + """
import os
try:
    os.fork()
except PermissionError as exc:
    print("caught", exc, flush=True)
for fd in range(3, 64):
    try:
        os.write(fd, b'{"error": null}\\n')
    except OSError:
        pass
os._exit(0)
""",
    # close every pipe but stdout (the report pipe too), then get refused: the supervisor keeps
    # answering the filter's hand-overs until the worker has exited
    "closed_channel": DISABLE_HOOK["closure"] + """
import os, stat, time
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.close(fd)
    except OSError:
        pass
time.sleep(0.2)
try:
    os.memfd_create("held")
except PermissionError as exc:
    print("caught", exc, flush=True)
""",
    # a filter of its own with a listener would let the program answer its refusals "continue"
    "own_listener": DISABLE_HOOK["closure"] + """
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
allow_all = ctypes.create_string_buffer(struct.pack("<HBBI", 0x06, 0, 0, 0x7FFF0000), 8)
prog = Prog(1, ctypes.cast(allow_all, ctypes.c_void_p))
number = 317 if __import__("platform").machine() == "x86_64" else 277
found = libc.syscall(ctypes.c_long(number), ctypes.c_long(1), ctypes.c_long(8), ctypes.byref(prog))
print("caught", found, ctypes.get_errno())
""",
    # or one that answers the program's socket calls itself, out of the supervisor's sight
    "own_filter": DISABLE_HOOK["closure"] + """
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
number = 41 if __import__("platform").machine() == "x86_64" else 198
code = b"".join(struct.pack("<HBBI", *op) for op in [(0x20, 0, 0, 0), (0x15, 0, 1, number), (0x06, 0, 0, 0x00050001),
                                                     (0x06, 0, 0, 0x7FFF0000)])
buffer = ctypes.create_string_buffer(code, len(code))
prog = Prog(4, ctypes.cast(buffer, ctypes.c_void_p))
found = libc.prctl(22, 2, ctypes.byref(prog), 0, 0)
print("caught", found, ctypes.get_errno())
try:
    socket.socket(socket.AF_INET)  # with the filter above in place, refused without the supervisor knowing
except OSError:
    pass
""",
}
_REFUSED = {"caught": "socket", "forged": "clone", "closed_channel": "memfd_create", "own_listener": "seccomp",
            "own_filter": "prctl"}
_CAUGHT = {"own_listener": "caught -1 1\n", "own_filter": "caught -1 1\n"}


@pytest.mark.parametrize("attack", list(KERNEL_REFUSALS))
def test_a_call_the_kernel_refused_is_reported_blocked_with_the_hook_subverted(
    backend: str, attack: str, data: np.ndarray
) -> None:
    limits, marker = unique_limits()
    result = run_code(KERNEL_REFUSALS[attack], data, limits, sandbox=backend)
    assert result.error == f"blocked: system call refused ({_REFUSED[attack]})", result
    assert result.output == _CAUGHT.get(attack, "caught [Errno 1] Operation not permitted\n"), result
    assert sandbox_processes(marker) == []
    assert run_code("print(n)", data, sandbox=backend).output == f"{data.shape[0]}\n"


# prlimit64 on another process of the sandbox (its supervisor, its init, itself by pid): RLIMIT_NOFILE
# (7 on every Linux machine) to 17, a value no process has; its own by pid 0 (what the C library
# does) to 13, which the host must see, so that a missing 17 means something.
PRLIMIT = DISABLE_HOOK["closure"] + RUNNER + """
import ctypes, resource, time
libc = ctypes.CDLL(None, use_errno=True)
def prlimit(pid, value):
    limits = (ctypes.c_ulong * 2)(value, value)
    return (libc.prlimit64(pid, 7, ctypes.byref(limits), None), ctypes.get_errno())
attempt("own", lambda: prlimit(0, 13)[0])
attempt("supervisor", lambda: prlimit(os.getppid(), 17))
attempt("init", lambda: prlimit(1, 17))
attempt("own_pid", lambda: prlimit(os.getpid(), 17))
attempt("python", lambda: resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (17, 17)))
print(json.dumps(outcomes), flush=True)
time.sleep(HOLD)
"""


def _check_prlimit(error: str | None, output: str) -> None:
    assert error == "blocked: system call refused (prlimit64)", (error, output)
    outcomes = json.loads(output.strip().splitlines()[-1])
    assert outcomes["own"] == "ok: 0", outcomes
    for name in ("supervisor", "init", "own_pid"):
        assert outcomes[name] == "ok: (-1, 1)", (name, outcomes)
    assert outcomes["python"] == "PermissionError: [Errno 1] Operation not permitted", outcomes


def _open_files_limits(pids: list[int]) -> set[int]:
    found = set()
    for pid in pids:
        try:
            line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
                        if line.startswith("Max open files"))
        except (OSError, StopIteration):
            continue
        found.add(int(line.split()[3]))
    return found


def test_no_program_sets_the_limits_of_another_process(backend: str, data: np.ndarray) -> None:
    """Judged from the host's /proc: the program's own limit changes, no other process's does."""
    limits, marker = unique_limits()
    outcome: dict[str, object] = {}
    call = threading.Thread(target=lambda: outcome.update(
        result=run_code(PRLIMIT.replace("HOLD", "2"), data, limits, sandbox=backend)))
    call.start()
    seen: set[int] = set()
    while call.is_alive():
        seen |= _open_files_limits(sandbox_processes(marker))
        time.sleep(0.02)
    call.join()
    result = outcome["result"]
    _check_prlimit(result.error, result.output)
    assert 13 in seen and 17 not in seen, seen


_NOBODY_PROGRAMS = """
import json, sys
import numpy as np
from causal_gym.harness import run_code
programs = json.loads(sys.argv[1])
results = {}
for backend in ("bwrap", "unshare"):
    for name, program in programs.items():
        r = run_code(program, np.random.default_rng(0).normal(size=(5, 2)), sandbox=backend)
        results[backend + " " + name] = {"sandbox": r.sandbox, "error": r.error, "out": r.output}
print(json.dumps(results))
"""


def test_task_bound_and_report_hold_for_an_unprivileged_caller(tmp_path: Path) -> None:
    """The thread bomb, both forgeries, the kernel's refusals and prlimit, started by "nobody" (the
    host counts are above)."""
    programs = {"bomb": BOMB, **FORGERIES, **KERNEL_REFUSALS, "prlimit": PRLIMIT.replace("HOLD", "0")}
    results = run_as_nobody(_NOBODY_PROGRAMS, [json.dumps(programs)], tmp_path)
    for backend in NAMESPACE_BACKENDS:
        bomb = results[backend + " bomb"]
        assert bomb["sandbox"] == backend and bomb["error"] is None, bomb
        assert "refused after" in bomb["out"] and int(bomb["out"].split("started ")[1].split()[0]) < 64, bomb
        assert results[backend + " every_descriptor"]["error"] == (
            "blocked: file access outside the sandbox (/etc/hostname)")
        assert results[backend + " replaced_descriptor"]["error"] == (
            "blocked: tampering with the sandbox's report channel")
        for attack, refused in _REFUSED.items():
            assert results[backend + " " + attack]["error"] == f"blocked: system call refused ({refused})", attack
        _check_prlimit(results[backend + " prlimit"]["error"], results[backend + " prlimit"]["out"])


def test_the_bounds_are_named_for_each_backend(backend: str) -> None:
    """What the final info says: the host uid (never 0 for a namespace backend), tasks, memory."""
    limits = SandboxLimits(max_tasks=17, memory_mb=300, file_mb=5)
    text = sandbox_bounds(backend, limits)
    host_uid = 65534 if os.geteuid() == 0 else os.getuid()
    assert text.startswith(f"host uid {host_uid}; tasks: at most 17 (RLIMIT_NPROC"), text
    assert "300 MB address space" in text and "5 MB scratch" in text and "io_uring refused" in text
    if os.geteuid() == 0:
        assert "which does not bind root" in sandbox_bounds("process", limits)
    with pytest.raises(ValueError, match="max_tasks must be a positive integer"):
        SandboxLimits(max_tasks=0)
