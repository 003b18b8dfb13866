"""The syscall filter of the namespace sandbox: a seccomp-BPF program that refuses whatever creates
processes, sockets, namespaces or memory outside the program's address space.

Namespaces hide the host (files, processes, network); they do not stop a program from forking,
holding memory that ``RLIMIT_AS`` does not count, or reaching the kernel through side doors. The
sandbox's bootstrap installs this filter (``prctl(PR_SET_SECCOMP)`` after ``PR_SET_NO_NEW_PRIVS``)
in the program's process just before the agent's program runs; a seccomp filter cannot be removed
or loosened afterwards.

Refused with ``EPERM`` (the program sees ``PermissionError: [Errno 1] Operation not permitted``):

- new processes: ``fork``, ``vfork``, ``execve``, ``execveat`` and ``clone`` without
  ``CLONE_THREAD`` or with any ``CLONE_NEW*`` flag (threads stay possible; ``clone3`` answers
  ``ENOSYS`` so that the C library falls back to ``clone``, whose flags a filter can read);
- sockets of any family but ``AF_UNIX`` (there is no network in the namespace anyway), and
  ``io_uring`` (its ``IORING_OP_SOCKET``, ``OPENAT`` ... run without passing this filter);
- memory outside the address space: ``memfd_create``, ``memfd_secret``, System V shared memory,
  message queues and semaphores (``shmget``, ``msgget``, ``semget``), POSIX message queues;
- changing the sandbox: ``mount`` and the new mount API, ``umount2``, ``pivot_root``, ``chroot``,
  ``unshare``, ``setns``, and filters of the program's own: ``seccomp`` and
  ``prctl(PR_SET_SECCOMP)`` (one with a listener could answer the refusals "continue", one that
  answers an error itself would keep them from the supervisor's report);
- reaching other processes: ``ptrace``, ``process_vm_readv/writev``, ``process_madvise``,
  ``kcmp``, the ``pidfd_*`` calls (``pidfd_getfd`` copies another process's descriptors) and
  ``prlimit64`` with any pid but 0 (another process's limits, the supervisor's included; the C
  library reaches the caller's own limits with pid 0, and the filter, fixed before any pid is
  known, refuses a program's own pid too -- ``setrlimit`` acts only on the caller and stays);
- the kernel and the machine: ``bpf``, ``perf_event_open``, ``userfaultfd``, ``fanotify_init``,
  ``open_by_handle_at``, the key-ring calls, module and ``kexec`` loading, ``acct``, swap,
  ``reboot``, host and clock settings, ``syslog``, quotas, ``mknod``.

Syscall numbers above those the tables were written against answer ``ENOSYS``: a syscall a later
kernel adds is refused until someone reviews it. Any other architecture than the one the filter
was built for (on x86-64: the i386 ``int 0x80`` and x32 entry points) kills the process.

Who answers the refusals: the program's filter (``notify=True``) hands each of them to the
sandbox's supervisor (``SECCOMP_RET_USER_NOTIF``), which answers ``EPERM`` and records the call, so
a refused call is reported as blocked even when the program has subverted its audit hook. The
supervisor holds the only listener; without it (the supervisor killed) the kernel answers
``ENOSYS``: a refused call never runs. The supervisor's own filter (``notify=False``) answers
``EPERM`` itself. The ``ENOSYS`` answers above (``clone3``'s fallback, numbers past the table) are
not refusals of something the program asked for and are not reported.

The filter is written by hand: a deny-list of whole syscalls plus four argument checks (``clone``'s
flags, ``socket``'s family, ``prlimit64``'s pid, ``prctl``'s option) is a few dozen BPF instructions that tests/test_seccomp.py executes
instruction by instruction. libseccomp would build the same program, but its Python binding
(``pyseccomp`` on PyPI) is a ctypes wrapper that needs the system's ``libseccomp.so.2`` at run time,
one more prerequisite of every machine that runs agents, for no rule this filter cannot express.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["SUPPORTED_MACHINES", "process_filter", "seccomp_syscall", "syscall_names"]

# struct sock_filter opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_USER_NOTIF = 0x7FC00000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data, little-endian
_CLONE_THREAD = 0x00010000
_CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_AF_UNIX = 1
_PR_SET_SECCOMP = 22
_X32_SYSCALL_BIT = 0x40000000

# Syscall numbers per machine (asm/unistd_64.h; asm-generic/unistd.h for aarch64, which has no
# fork or vfork). Names absent on a machine are simply left out of its table.
_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_NUMBERS = {
    "x86_64": {
        # processes and threads
        "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435,
        # sockets and asynchronous I/O that bypasses the per-syscall checks
        "socket": 41, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        # memory a process can hold outside its address space (RLIMIT_AS does not count it)
        "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "semget": 64, "mq_open": 240,
        # the sandbox itself: mounts, namespaces, root
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "open_tree_attr": 467, "seccomp": 317, "prctl": 157,
        # other processes
        "ptrace": 101, "prlimit64": 302, "process_vm_readv": 310, "process_vm_writev": 311, "process_madvise": 440,
        "process_mrelease": 448, "kcmp": 312, "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424,
        # the kernel and the machine
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "fanotify_init": 300, "open_by_handle_at": 304,
        "add_key": 248, "request_key": 249, "keyctl": 250, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "acct": 163, "swapon": 167,
        "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
        "syslog": 103, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
        "quotactl": 179, "quotactl_fd": 443, "mknod": 133, "mknodat": 259, "vhangup": 153,
    },
    "aarch64": {
        "execve": 221, "execveat": 281, "clone": 220, "clone3": 435,
        "socket": 198, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186, "semget": 190, "mq_open": 180,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "open_tree_attr": 467, "seccomp": 277, "prctl": 167,
        "ptrace": 117, "prlimit64": 261, "process_vm_readv": 270, "process_vm_writev": 271, "process_madvise": 440,
        "process_mrelease": 448, "kcmp": 272, "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "fanotify_init": 262, "open_by_handle_at": 265,
        "add_key": 217, "request_key": 218, "keyctl": 219, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "acct": 89, "swapon": 224,
        "swapoff": 225, "reboot": 142, "sethostname": 161, "setdomainname": 162,
        "syslog": 116, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
        "quotactl": 60, "quotactl_fd": 443, "mknodat": 33, "vhangup": 58,
    },
}
_LAST_KNOWN = 469
"""The highest syscall number the tables were written against (Linux 6.17: ``file_setattr``); every
number above it answers ``ENOSYS``, so a syscall added by a later kernel is refused until reviewed."""
SUPPORTED_MACHINES = tuple(_ARCH)
"""``platform.machine()`` values the filter can be built for."""

_SPECIAL = ("clone", "clone3", "socket", "prlimit64", "prctl")


def _instruction(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _machine(machine: str | None) -> str:
    machine = platform.machine() if machine is None else machine
    if machine not in _ARCH:
        raise ValueError(f"no syscall filter for machine {machine!r} (supported: {', '.join(SUPPORTED_MACHINES)})")
    return machine


def seccomp_syscall(machine: str | None = None) -> int:
    """The number of ``seccomp(2)`` on ``machine`` (the bootstrap installs the filter with it)."""
    return _NUMBERS[_machine(machine)]["seccomp"]


def syscall_names(machine: str | None = None) -> dict[int, str]:
    """Number to name of every syscall the filter refuses on ``machine`` (for the supervisor's report)."""
    return {number: name for name, number in _NUMBERS[_machine(machine)].items() if name != "clone3"}


def process_filter(machine: str | None = None, *, notify: bool = False) -> bytes:
    """The filter program (packed ``struct sock_filter`` array) for ``machine``.

    Parameters
    ----------
    machine : str, optional
        ``platform.machine()`` of the target; the current machine when None.
    notify : bool
        Hand refusals to the listener (``SECCOMP_RET_USER_NOTIF``; the program's filter, whose
        listener the supervisor holds) instead of answering ``EPERM`` (the supervisor's own filter).

    Returns
    -------
    bytes
        8 bytes per instruction, ready for ``struct sock_fprog``.

    Raises
    ------
    ValueError
        On a machine outside :data:`SUPPORTED_MACHINES` (the sandbox then refuses to run rather
        than run without the filter).
    """
    machine = _machine(machine)
    numbers = _NUMBERS[machine]
    deny = _RET_USER_NOTIF if notify else _RET_ERRNO | errno.EPERM
    program = [
        _instruction(_LD_W_ABS, _OFFSET_ARCH),
        _instruction(_JEQ_K, _ARCH[machine], jt=1),
        _instruction(_RET_K, _RET_KILL_PROCESS),
        _instruction(_LD_W_ABS, _OFFSET_NR),
    ]
    if machine == "x86_64":
        program += [_instruction(_JGE_K, _X32_SYSCALL_BIT, jf=1), _instruction(_RET_K, _RET_KILL_PROCESS)]
    program += [_instruction(_JGE_K, _LAST_KNOWN + 1, jf=1), _instruction(_RET_K, _RET_ERRNO | errno.ENOSYS)]
    for name, number in numbers.items():
        if name not in _SPECIAL:
            program += [_instruction(_JEQ_K, number, jf=1), _instruction(_RET_K, deny)]
    program += [
        # clone: allowed only for a thread in the same namespaces (the flags are the first argument
        # on both machines).
        _instruction(_JEQ_K, numbers["clone"], jf=5),
        _instruction(_LD_W_ABS, _OFFSET_ARG0),
        _instruction(_JSET_K, _CLONE_THREAD, jf=2),
        _instruction(_JSET_K, _CLONE_NAMESPACES, jt=1),
        _instruction(_RET_K, _RET_ALLOW),
        _instruction(_RET_K, deny),
        # clone3's flags sit behind a pointer a filter cannot follow: ENOSYS makes glibc use clone.
        _instruction(_JEQ_K, numbers["clone3"], jf=1),
        _instruction(_RET_K, _RET_ERRNO | errno.ENOSYS),
        # socket: only AF_UNIX.
        _instruction(_JEQ_K, numbers["socket"], jf=4),
        _instruction(_LD_W_ABS, _OFFSET_ARG0),
        _instruction(_JEQ_K, _AF_UNIX, jf=1),
        _instruction(_RET_K, _RET_ALLOW),
        _instruction(_RET_K, deny),
        # prlimit64: only the caller's own limits, named by pid 0 (a pid_t: the low 32 bits).
        _instruction(_JEQ_K, numbers["prlimit64"], jf=4),
        _instruction(_LD_W_ABS, _OFFSET_ARG0),
        _instruction(_JEQ_K, 0, jf=1),
        _instruction(_RET_K, _RET_ALLOW),
        _instruction(_RET_K, deny),
        # prctl: everything but PR_SET_SECCOMP (the option is the first argument).
        _instruction(_JEQ_K, numbers["prctl"], jf=3),
        _instruction(_LD_W_ABS, _OFFSET_ARG0),
        _instruction(_JEQ_K, _PR_SET_SECCOMP, jf=1),
        _instruction(_RET_K, deny),
        _instruction(_RET_K, _RET_ALLOW),
    ]
    return b"".join(program)
