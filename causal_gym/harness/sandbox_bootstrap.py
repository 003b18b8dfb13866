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
   pidfd_getfd), receives the listener of the worker's syscall filter, installs its own filter,
   reads the worker's messages and answers each call the worker's filter refuses (``EPERM``,
   recorded) until the worker exits, and writes the verdict on the status descriptor. The child is
   the *worker*: it closes the status descriptor, then
4. installs the syscall filter of :mod:`causal_gym.harness.seccomp` (namespace backends) with a
   listener, hands the listener to the supervisor and closes it (the program never holds it), sets
   the resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``,
   ``RLIMIT_NPROC`` = ``max_tasks``, no core files) and an audit hook (:func:`sys.addaudithook`)
   that refuses, with a readable ``PermissionError("blocked: ...")``, network access, process
   creation, signals, ctypes, files outside the scratch directory and tampering, and sends each
   refusal to the supervisor before raising. The hook makes refusals legible to honest agents; in
   the namespace backends the boundary is the kernel (steps 1-4), so code that subverts the hook
   (which Python cannot prevent) gains nothing and still comes back blocked: the kernel's
   refusals are reported by the supervisor; in the ``"process"`` backend the hook is all there
   is;
5. runs the program with ``X``, ``n``, ``d``, ``np`` and ``scipy`` and sends ``{"error": ...}``.
"""

import builtins
import ctypes
import errno
import fcntl
import json
import math
import os
import resource
import select
import signal
import site
import socket
import struct
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

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
MNT_DETACH = 2
MS_NOSUID, MS_NODEV = 2, 4
PR_SET_DUMPABLE = 4
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 8
# linux/seccomp.h: _IOWR('!', 0, struct seccomp_notif) (80 bytes), _IOWR('!', 1, struct seccomp_notif_resp) (24)
NOTIF_RECV, NOTIF_SEND, NOTIF_SIZE = 0xC0502100, 0xC0182101, 80
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


def install_filter(libc, program, number, listener):
    """Load the seccomp-BPF ``program`` (packed sock_filter array) with ``seccomp(2)`` (syscall
    ``number``); it can never be removed. With ``listener``, return the descriptor on which the
    calls it hands over arrive (``SECCOMP_FILTER_FLAG_NEW_LISTENER``)."""

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    prog = Prog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc_call(libc, "prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    flags = SECCOMP_FILTER_FLAG_NEW_LISTENER if listener else 0
    found = libc.syscall(ctypes.c_long(number), ctypes.c_long(SECCOMP_SET_MODE_FILTER), ctypes.c_long(flags),
                         ctypes.byref(prog))
    if found < 0:
        raise SetupError("seccomp failed: " + os.strerror(ctypes.get_errno()))
    return found if listener else None


def harden(config, role=None):
    """Namespace backends: no capabilities (before the fork, ``role`` None), then the syscall filter
    of ``role``: ``"worker"`` (refusals handed to a listener, whose descriptor is returned) or
    ``"supervisor"`` (refusals answered ``EPERM`` by the kernel)."""
    if not (config["drop_capabilities"] or config["seccomp"]):
        return None
    if not sys.platform.startswith("linux"):
        raise SetupError("capabilities and seccomp need Linux")
    libc = ctypes.CDLL(None, use_errno=True)
    if role is None:
        if config["drop_capabilities"]:
            drop_capabilities(libc)
        return None
    filters = config["seccomp"]
    if not filters:
        return None
    return install_filter(libc, bytes.fromhex(filters[role]), filters["syscall"], listener=role == "worker")


def set_limits(config, which=None):
    """The worker's resource limits, or only those named in ``which`` (the supervisor's CPU time,
    which answering a flood of refused calls would otherwise spend beyond the call's budget)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(usage.ru_utime + usage.ru_stime + config["cpu_seconds"])
    wanted = [("RLIMIT_CPU", cpu, cpu + 1), ("RLIMIT_AS", config["memory_bytes"], None),
              ("RLIMIT_FSIZE", config["file_bytes"], None), ("RLIMIT_NOFILE", 64, None),
              ("RLIMIT_NPROC", config["max_tasks"], None), ("RLIMIT_CORE", 0, None)]
    for name, soft, hard in wanted:
        if (which is not None and name not in which) or not hasattr(resource, name):
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


def run_program(config, code, X, np, scipy, send, handoff):
    """The worker: the syscall filter (its listener handed to the supervisor over ``handoff``),
    limits and the hook, then the agent's program."""
    listener = harden(config, "worker")
    if handoff is not None:
        try:
            if listener is not None:
                socket.send_fds(handoff, [b"L"], [listener])
        except OSError as exc:
            raise SetupError("handing the filter's listener to the supervisor failed: " + str(exc)) from None
        finally:
            if listener is not None:
                os.close(listener)
            handoff.close()
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


def verdict(lines, overflow, wait_status, refused=None):
    """The call's error (None when it succeeded) from the worker's messages, its exit and ``refused``,
    the first syscall the worker's filter refused (the supervisor's own record).

    A refusal reported by the hook or the kernel fails the call whatever else the program wrote; a
    message that is not one the bootstrap sends means the program wrote to the pipe itself.
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
    if refused:
        return "blocked: system call refused (" + refused + ")"
    if os.WIFSIGNALED(wait_status):
        signum = os.WTERMSIG(wait_status)
        if signum == signal.SIGXCPU:
            return "cpu time limit"
        if signum == signal.SIGSYS:
            return "blocked: system call of another architecture (the filter kills it)"
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


def receive_listener(handoff):
    """The worker's filter listener, or None when the worker ended before handing it over."""
    try:
        _, descriptors, _, _ = socket.recv_fds(handoff, 1, 1)
    finally:
        handoff.close()
    return descriptors[0] if descriptors else None


def refuse_call(listener, names):
    """Answer one call the worker's filter handed over with ``EPERM``; return its name (None if gone)."""
    request = bytearray(NOTIF_SIZE)  # the kernel wants it zeroed
    try:
        fcntl.ioctl(listener, NOTIF_RECV, request, True)
    except OSError:  # the caller was killed or interrupted before the call was read; it did not run
        return None
    ident, number = struct.unpack_from("=Q", request)[0], struct.unpack_from("=i", request, 16)[0]
    try:
        fcntl.ioctl(listener, NOTIF_SEND, bytearray(struct.pack("=QqiI", ident, 0, -errno.EPERM, 0)), True)
    except OSError:  # interrupted meanwhile: the kernel restarts it, and it comes back here
        pass
    return names.get(str(number), "syscall " + str(number))


def supervise(config, worker, messages, handoff):
    """The supervisor: collect the worker's messages, answer its refused calls, wait for its exit,
    then report on the host's channel.

    It is not dumpable, so the worker (same user, no capabilities) can neither read nor write its
    memory or descriptors through /proc, ptrace or pidfd_getfd; it can only kill it, which the
    host reports as a crash (and without the listener the kernel answers every refused call
    ``ENOSYS``: it still does not run).
    """
    libc_call(ctypes.CDLL(None, use_errno=True), "prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    listener = receive_listener(handoff) if handoff is not None else None
    # Readable when the worker has exited; opened before this process's filter refuses pidfd_open.
    exit_watch = os.pidfd_open(worker) if listener is not None else None
    harden(config, "supervisor")
    set_limits(config, which=("RLIMIT_CPU",))
    names = config["seccomp"]["names"] if config["seccomp"] else {}
    received, overflow, refused = bytearray(), False, None
    poller = select.poll()
    for fd in (messages, listener, exit_watch):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    reading, running = True, exit_watch is not None
    # After the worker's messages end (its exit, or a program that closed its end of the pipe), a
    # refused call of a worker still running must still be answered.
    while reading or running:
        for fd, events in poller.poll():
            if fd == messages:
                chunk = os.read(messages, 65536)
                if not chunk:
                    poller.unregister(fd)
                    reading = False
                elif len(received) + len(chunk) > MAX_MESSAGES:
                    overflow = True
                else:
                    received += chunk
            elif fd == exit_watch:
                poller.unregister(fd)
                running = False
            elif events & select.POLLIN:
                name = refuse_call(listener, names)
                refused = refused or name
            else:  # POLLHUP: no task uses the filter any more
                poller.unregister(fd)
    for fd in (messages, listener, exit_watch):
        if fd is not None:
            os.close(fd)
    _, wait_status = os.waitpid(worker, 0)
    lines = bytes(received).decode("utf-8", errors="replace").splitlines()
    report(config["status_fd"], verdict(lines, overflow, wait_status, refused))


def close_inherited(keep):
    """Close every descriptor above 2 but ``keep``: what the set-up before this interpreter held
    open (a root caller's mount-namespace view, for one) never reaches the program."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (the "process" backend off Linux): nothing but the passed descriptors
        return
    for fd in found:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:  # the listing's own descriptor, already closed
                pass


def main():
    config = json.loads(sys.argv[1])
    status_fd = config["status_fd"]
    close_inherited({status_fd, config["data_fd"], config["code_fd"]})
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
    # numpy.f2py (reached by lazy scipy imports) imports subprocess, whose Popen is audited; its
    # private fork_exec is not, so a fresh import of _posixsubprocess must go through the hook.
    import subprocess  # noqa: F401

    import numpy as np
    import scipy
    sys.modules.pop("_posixsubprocess", None)
    X, source = read_inputs(config)
    try:
        code = compile(source, "program.py", "exec")
    except (SyntaxError, ValueError) as exc:
        report(status_fd, show(exc, skip_frames=1))
    try:
        harden(config)
    except SetupError as exc:
        report(status_fd, "sandbox setup failed: " + str(exc))
    messages, worker_end = os.pipe()
    supervisor_side, worker_side = socket.socketpair() if config["seccomp"] else (None, None)
    worker = os.fork()
    if worker == 0:
        os.close(status_fd)
        os.close(messages)
        if supervisor_side is not None:
            supervisor_side.close()
        send = make_sender(worker_end)
        try:
            run_program(config, code, X, np, scipy, send, worker_side)
        except SetupError as exc:
            send({"error": "sandbox setup failed: " + str(exc)})
        os._exit(0)
    os.close(worker_end)
    if worker_side is not None:
        worker_side.close()
    try:
        supervise(config, worker, messages, supervisor_side)
    except BaseException as exc:
        report(status_fd, "sandbox setup failed: " + type(exc).__name__ + ": " + str(exc))


if __name__ == "__main__":
    main()
