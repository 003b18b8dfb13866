"""The code tool's bootstrap: the first and only trusted code of the sandboxed interpreter.

:mod:`causal_gym.harness.sandbox` passes this file's *source* to ``python -I -B -X utf8 -c``; the
child never imports causal_gym (in the namespace backends it cannot even see it). Order matters:

1. (unshare backend) detach the host root left behind by ``pivot_root``; (bwrap) mount the
   scratch tmpfs with its file limit; read the data matrix and the program from inherited file
   descriptors (nothing of either is ever written to the host's disk), import numpy and scipy,
   compile the program;
2. namespace backends: drop every capability (``capset`` to zero, empty bounding and ambient sets);
3. fork. The parent is the *supervisor*: it makes itself not dumpable (so the worker, the same
   user without capabilities, cannot open its memory or descriptors through /proc, ptrace or
   pidfd_getfd), installs the syscall filter, reads the worker's messages until the worker exits,
   and writes the verdict on the status descriptor. The child is the *worker*: it closes the
   status descriptor, then
4. installs the syscall filter of :mod:`causal_gym.harness.seccomp` (namespace backends), sets the
   resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``,
   ``RLIMIT_NPROC`` = ``max_tasks``, no core files) and an audit hook (:func:`sys.addaudithook`)
   that refuses, with a readable ``PermissionError("blocked: ...")``, network access, process
   creation, signals, ctypes, files outside the scratch directory and tampering, and sends each
   refusal to the supervisor before raising. The hook makes refusals legible to honest agents; in
   the namespace backends the boundary is the kernel (steps 1-4), so code that subverts the hook
   (which Python cannot prevent) gains nothing; in the ``"process"`` backend the hook is all there
   is;
5. runs the program with ``X``, ``n``, ``d``, ``np`` and ``scipy`` and sends ``{"error": ...}``.
"""

import builtins
import ctypes
import json
import math
import os
import resource
import signal
import site
import sys
import traceback

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
READABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
NETWORK = ("socket.", "urllib.", "http.client.", "ftplib.", "smtplib.", "imaplib.", "nntplib.",
           "poplib.", "telnetlib.", "webbrowser.")
PROCESS = ("os.fork", "os.exec", "os.spawn", "os.posix_spawn", "os.system", "os.startfile",
           "subprocess.", "pty.")
SIGNALS = ("os.kill", "os.killpg", "signal.pthread_kill")
TAMPERING = ("sys.settrace", "sys.setprofile", "resource.setrlimit", "resource.prlimit",
             "cpython.PyInterpreterState_New")
METADATA = ("os.chdir", "os.chmod", "os.chown", "os.chflags", "os.link", "os.symlink",
            "os.setxattr", "os.removexattr")
WRITE_PATH_ARGS = {"os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
                   "os.truncate": (0,), "os.utime": (0,), "shutil.rmtree": (0,)}

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
MNT_DETACH = 2
MS_NOSUID, MS_NODEV = 2, 4
PR_SET_DUMPABLE = 4
TAMPERED = 86  # the worker's exit code when its report pipe was closed or replaced
MAX_MESSAGES = 65536


class SetupError(Exception):
    """The sandbox could not be set up; the program is not run."""


def within(path, roots):
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def make_guard(workdir, read_roots, denied, send):
    # Bind helpers now, so that a program rebinding os.path.realpath & co. does not change the guard.
    inside, realpath, fsdecode, fspath, isdir = within, os.path.realpath, os.fsdecode, os.fspath, os.path.isdir
    sandbox = (workdir,)

    def refuse(reason):
        send({"blocked": reason})  # sent before the program can catch anything; it cannot be taken back
        raise PermissionError("blocked: " + reason)

    def resolve(path):
        return realpath(fsdecode(fspath("." if path is None else path)))

    def check_read(path, listing):
        if isinstance(path, int):
            return
        real = resolve(path)
        if inside(real, sandbox) or real in READABLE_DEVICES:
            return
        installed = inside(real, read_roots) and not inside(real, denied)
        # Directories outside the sandbox may be listed but not opened: an open directory could
        # serve as the dir_fd of a relative open, which the "open" event does not report.
        if not (installed and (listing or not isdir(real))):
            refuse("file access outside the sandbox (" + real + ")")

    def check_write(path):
        if isinstance(path, int):
            return
        real = resolve(path)
        if not (inside(real, sandbox) or real == "/dev/null"):
            refuse("file access outside the sandbox (" + real + ")")

    def guard(event, args):
        if event == "open":
            path, _, flags = args
            if flags & WRITE_FLAGS:
                check_write(path)
            else:
                check_read(path, listing=False)
        elif event in ("os.listdir", "os.scandir"):
            check_read(args[0], listing=True)
        elif event in WRITE_PATH_ARGS:
            for index in WRITE_PATH_ARGS[event]:
                check_write(args[index])
        elif event == "import" and args[0] == "_posixsubprocess":
            refuse("process creation")
        elif event == "object.__setattr__" and any(args[0] is f for f in protected):
            refuse("tampering with the sandbox (changing the audit hook)")
        elif event.startswith(NETWORK):
            refuse("network access")
        elif event.startswith(PROCESS):
            refuse("process creation")
        elif event.startswith(SIGNALS):
            refuse("sending signals")
        elif event.startswith("ctypes."):
            refuse("native code (ctypes)")
        elif event in TAMPERING:
            refuse("tampering with the sandbox (" + event + ")")
        elif event in METADATA:
            refuse("changing directories, permissions or links (" + event + ")")

    protected = (guard, refuse, resolve, check_read, check_write, inside, send)
    return guard


def readable_dirs(*modules):
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates.update(site.getsitepackages())
    candidates.update(os.path.dirname(os.path.dirname(m.__file__)) for m in modules)
    return tuple(sorted({os.path.realpath(p) for p in candidates} - {os.sep}))


def libc_call(libc, name, *args):
    if getattr(libc, name)(*args) != 0:
        raise SetupError(name + " failed: " + os.strerror(ctypes.get_errno()))


def mount_scratch(options):
    """(bwrap) Mount the scratch tmpfs with a bounded number of files over bwrap's, and enter it."""
    libc_call(ctypes.CDLL(None, use_errno=True), "mount", b"scratch", b"/scratch", b"tmpfs",
              ctypes.c_ulong(MS_NOSUID | MS_NODEV), options.encode())
    os.chdir("/scratch")


def detach(old_root):
    """Unmount the host's root, which the unshare backend's ``pivot_root`` left at ``old_root``."""
    libc_call(ctypes.CDLL(None, use_errno=True), "umount2", old_root.encode(), MNT_DETACH)


def drop_capabilities(libc):
    """Empty the bounding, ambient, effective, permitted and inheritable capability sets."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last cap is harmless
    libc_call(libc, "prctl", PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    sets = (ctypes.c_uint32 * 6)()
    libc_call(libc, "capset", header, sets)


def install_filter(libc, program):
    """Load the seccomp-BPF ``program`` (packed sock_filter array); it can never be removed."""

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    prog = Prog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc_call(libc, "prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc_call(libc, "prctl", PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0)


def harden(config, install_seccomp):
    """Namespace backends: no capabilities (before the fork), the syscall filter (after it)."""
    if not (config["drop_capabilities"] or config["seccomp"]):
        return
    if not sys.platform.startswith("linux"):
        raise SetupError("capabilities and seccomp need Linux")
    libc = ctypes.CDLL(None, use_errno=True)
    if config["drop_capabilities"] and not install_seccomp:
        drop_capabilities(libc)
    if config["seccomp"] and install_seccomp:
        install_filter(libc, bytes.fromhex(config["seccomp"]))


def set_limits(config):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(usage.ru_utime + usage.ru_stime + config["cpu_seconds"])
    wanted = [("RLIMIT_CPU", cpu, cpu + 1), ("RLIMIT_AS", config["memory_bytes"], None),
              ("RLIMIT_FSIZE", config["file_bytes"], None), ("RLIMIT_NOFILE", 64, None),
              ("RLIMIT_NPROC", config["max_tasks"], None), ("RLIMIT_CORE", 0, None)]
    for name, soft, hard in wanted:
        if not hasattr(resource, name):
            continue
        limit = getattr(resource, name)
        current = resource.getrlimit(limit)[1]
        hard = soft if hard is None else hard
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        try:
            resource.setrlimit(limit, (soft, hard))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def show(exc, skip_frames):
    tb = exc.__traceback__
    for _ in range(skip_frames):
        tb = tb.tb_next if tb is not None else None
    try:
        traceback.print_exception(type(exc), exc, tb, file=sys.__stdout__)
        return traceback.format_exception_only(type(exc), exc)[-1].strip()
    except BaseException:
        return type(exc).__name__


def flush_output():
    for stream in (sys.stdout, sys.__stdout__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            pass


def report(status_fd, error):
    """Write the call's verdict on the host's status descriptor and end this process."""
    flush_output()
    try:
        os.write(status_fd, json.dumps({"error": error}).encode())
    finally:
        os._exit(0)


def make_sender(fd):
    """A function that appends one JSON line to the supervisor's pipe ``fd``, or ends the process.

    The program can write to ``fd`` too, but only add lines, never take one back; if it closed or
    replaced the descriptor (checked by the pipe's inode before every write) nothing it could have
    forged counts: the process exits at once with :data:`TAMPERED`, which the supervisor reports.
    """
    fstat, write, dumps, exit_now = os.fstat, os.write, json.dumps, os._exit
    identity = (fstat(fd).st_dev, fstat(fd).st_ino)

    def send(message):
        try:
            same = (fstat(fd).st_dev, fstat(fd).st_ino) == identity
            if same:
                write(fd, (dumps(message) + "\n").encode())
        except BaseException:
            same = False
        if not same:
            exit_now(TAMPERED)

    return send


def read_inputs(config):
    """The data matrix and the program text from their descriptors, which are then closed."""
    import numpy as np

    with os.fdopen(config["data_fd"], "rb") as handle:
        X = np.load(handle, allow_pickle=False)
    with os.fdopen(config["code_fd"], "rb") as handle:
        source = handle.read().decode("utf-8")
    return X, source


def run_program(config, code, X, np, scipy, send):
    """The worker: no capabilities, the syscall filter, limits and the hook, then the agent's program."""
    harden(config, install_seccomp=True)
    workdir = os.path.realpath(os.getcwd())
    read_roots = readable_dirs(np, scipy)
    sys.path[:] = [p for p in sys.path if within(os.path.realpath(p), read_roots)]
    set_limits(config)
    sys.addaudithook(make_guard(workdir, read_roots, tuple(config["deny"]), send))
    namespace = {"__name__": "__main__", "__builtins__": builtins, "X": X, "n": X.shape[0],
                 "d": X.shape[1], "np": np, "scipy": scipy}
    error = None
    try:
        exec(code, namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = "SystemExit: " + str(exc.code)
    except MemoryError as exc:
        show(exc, skip_frames=1)
        error = "memory limit"
    except BaseException as exc:
        error = show(exc, skip_frames=1)
    flush_output()
    send({"error": error[:500] if error else None})
    os._exit(0)


def verdict(lines, overflow, wait_status):
    """The call's error (None when it succeeded) from the worker's messages and its exit.

    A refusal reported by the hook fails the call whatever else the program wrote; a message that
    is not one the bootstrap sends means the program wrote to the pipe itself.
    """
    final, blocked = None, None
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and set(message) == {"blocked"} and isinstance(message["blocked"], str):
            blocked = blocked or message["blocked"]
        elif isinstance(message, dict) and set(message) == {"error"} and isinstance(message["error"], (str, type(None))):
            final = message
        else:
            return "blocked: writing to the sandbox's report channel"
    if overflow:
        return "blocked: writing to the sandbox's report channel"
    if blocked:
        return "blocked: " + blocked[:400]
    if os.WIFSIGNALED(wait_status):
        signum = os.WTERMSIG(wait_status)
        if signum == signal.SIGXCPU:
            return "cpu time limit"
        try:
            return "crashed (" + signal.Signals(signum).name + ")"
        except ValueError:
            return "crashed (signal " + str(signum) + ")"
    code = os.WEXITSTATUS(wait_status)
    if code == TAMPERED:
        return "blocked: tampering with the sandbox's report channel"
    if code != 0 or final is None:
        return "exited early with code " + str(code)
    return final["error"]


def supervise(config, worker, messages):
    """The supervisor: collect the worker's messages and exit, then report on the host's channel.

    It is not dumpable, so the worker (same user, no capabilities) can neither read nor write its
    memory or descriptors through /proc, ptrace or pidfd_getfd; it can only kill it, which the
    host reports as a crash.
    """
    libc_call(ctypes.CDLL(None, use_errno=True), "prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    harden(config, install_seccomp=True)
    received, overflow = bytearray(), False
    while True:
        chunk = os.read(messages, 65536)
        if not chunk:
            break
        if len(received) + len(chunk) > MAX_MESSAGES:
            overflow = True
        else:
            received += chunk
    os.close(messages)
    _, wait_status = os.waitpid(worker, 0)
    lines = bytes(received).decode("utf-8", errors="replace").splitlines()
    report(config["status_fd"], verdict(lines, overflow, wait_status))


def main():
    config = json.loads(sys.argv[1])
    status_fd = config["status_fd"]
    sys.dont_write_bytecode = True
    sys.stderr = sys.stdout
    sys.path[:0] = config["site_dirs"]
    try:
        if config["old_root"]:
            detach(config["old_root"])
        if config["scratch_mount"]:
            mount_scratch(config["scratch_mount"])
    except SetupError as exc:
        report(status_fd, "sandbox setup failed: " + str(exc))
    import numpy as np
    import scipy
    # numpy.f2py (reached by lazy scipy imports) imports subprocess, whose Popen is audited; its
    # private fork_exec is not, so a fresh import of _posixsubprocess must go through the hook.
    import subprocess  # noqa: F401
    sys.modules.pop("_posixsubprocess", None)
    X, source = read_inputs(config)
    try:
        code = compile(source, "program.py", "exec")
    except (SyntaxError, ValueError) as exc:
        report(status_fd, show(exc, skip_frames=1))
    try:
        harden(config, install_seccomp=False)
    except SetupError as exc:
        report(status_fd, "sandbox setup failed: " + str(exc))
    messages, worker_end = os.pipe()
    worker = os.fork()
    if worker == 0:
        os.close(status_fd)
        os.close(messages)
        send = make_sender(worker_end)
        try:
            run_program(config, code, X, np, scipy, send)
        except SetupError as exc:
            send({"error": "sandbox setup failed: " + str(exc)})
        os._exit(0)
    os.close(worker_end)
    try:
        supervise(config, worker, messages)
    except BaseException as exc:
        report(status_fd, "sandbox setup failed: " + type(exc).__name__ + ": " + str(exc))


if __name__ == "__main__":
    main()
