"""The syscall filter's decisions, read by a small classic-BPF interpreter written here.

The interpreter knows only the opcodes the filter may use and fails on any other, so a filter that
grew an instruction this test does not understand fails loudly. The numbers it is checked against
are the kernel's (asm/unistd_64.h, asm-generic/unistd.h), written out independently of the module.
"""

from __future__ import annotations

import errno
import struct

import pytest

from causal_gym.harness.seccomp import SUPPORTED_MACHINES, process_filter, seccomp_syscall, syscall_names

ALLOW, KILL, USER_NOTIF = 0x7FFF0000, 0x80000000, 0x7FC00000


def _eperm(value: int = errno.EPERM) -> int:
    return 0x00050000 | value


def run_filter(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Execute the packed sock_filter ``program`` on one seccomp_data record."""
    args = tuple(args) + (0,) * (6 - len(args))
    record = struct.pack("<iIQ6Q", nr, arch, 0, *args)
    instructions = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = instructions[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator = struct.unpack_from("<I", record, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET with a constant
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x} at {pc}")


X86_64, AARCH64, I386 = 0xC000003E, 0xC00000B7, 0x40000003


@pytest.fixture(scope="module")
def x86() -> bytes:
    return process_filter("x86_64")


@pytest.mark.parametrize(
    ("name", "nr"),
    [("fork", 57), ("vfork", 58), ("execve", 59), ("execveat", 322), ("ptrace", 101), ("mount", 165),
     ("unshare", 272), ("setns", 308), ("chroot", 161), ("pivot_root", 155), ("bpf", 321),
     ("process_vm_readv", 310), ("keyctl", 250), ("io_uring_setup", 425), ("io_uring_enter", 426),
     ("io_uring_register", 427), ("memfd_create", 319), ("memfd_secret", 447), ("shmget", 29), ("msgget", 68),
     ("semget", 64), ("mq_open", 240), ("pidfd_open", 434), ("pidfd_getfd", 438), ("pidfd_send_signal", 424),
     ("process_madvise", 440), ("kcmp", 312), ("fanotify_init", 300), ("open_by_handle_at", 304),
     ("fsopen", 430), ("open_tree", 428), ("move_mount", 429), ("perf_event_open", 298), ("userfaultfd", 323),
     ("add_key", 248), ("kexec_load", 246), ("init_module", 175), ("mknodat", 259), ("swapon", 167),
     ("seccomp", 317)],
)
def test_process_creation_and_sandbox_changes_get_eperm(x86: bytes, name: str, nr: int) -> None:
    assert run_filter(x86, nr, X86_64) == _eperm(), name


@pytest.mark.parametrize(("name", "nr"), [("read", 0), ("write", 1), ("openat", 257), ("mmap", 9), ("getpid", 39),
                                          ("exit_group", 231), ("kill", 62), ("futex", 202), ("socketpair", 53),
                                          ("setrlimit", 160), ("getrlimit", 97), ("prctl", 157)])
def test_ordinary_calls_are_allowed(x86: bytes, name: str, nr: int) -> None:
    assert run_filter(x86, nr, X86_64) == ALLOW, name


def test_clone_only_for_threads_and_clone3_falls_back(x86: bytes) -> None:
    clone_thread = 0x00010000 | 0x00000100 | 0x00000800  # CLONE_THREAD | CLONE_VM | CLONE_SIGHAND
    assert run_filter(x86, 56, X86_64, (clone_thread,)) == ALLOW
    for new_namespace in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
        assert run_filter(x86, 56, X86_64, (clone_thread | new_namespace,)) == _eperm(), hex(new_namespace)
    assert run_filter(x86, 56, X86_64, (17,)) == _eperm()  # fork(): SIGCHLD only
    assert run_filter(x86, 56, X86_64, (0x00004000 | 0x00000100 | 17,)) == _eperm()  # vfork-style spawn
    assert run_filter(x86, 435, X86_64) == _eperm(errno.ENOSYS)


def test_sockets_only_unix(x86: bytes) -> None:
    assert run_filter(x86, 41, X86_64, (1,)) == ALLOW  # AF_UNIX
    for family in (2, 10, 16, 17):  # AF_INET, AF_INET6, AF_NETLINK, AF_PACKET
        assert run_filter(x86, 41, X86_64, (family,)) == _eperm()


def test_prlimit64_only_on_the_callers_own_limits(x86: bytes) -> None:
    """pid 0 (what the C library passes for its own limits) passes; any pid is refused, its own too."""
    assert run_filter(x86, 302, X86_64, (0, 7, 0x1000, 0)) == ALLOW
    for pid in (1, 2, 12345, 0xFFFFFFFF):
        assert run_filter(x86, 302, X86_64, (pid, 7, 0x1000, 0)) == _eperm(), pid
    # pid is a pid_t: the kernel reads the low 32 bits, so high bits over 0 still name the caller
    assert run_filter(x86, 302, X86_64, (1 << 32, 7, 0x1000, 0)) == ALLOW
    assert run_filter(process_filter("aarch64"), 261, AARCH64, (0,)) == ALLOW
    assert run_filter(process_filter("aarch64"), 261, AARCH64, (1,)) == _eperm()


def test_no_filter_of_the_programs_own(x86: bytes) -> None:
    """prctl(PR_SET_SECCOMP) is refused (seccomp(2) is in the list); other prctl options pass."""
    assert run_filter(x86, 157, X86_64, (22, 2, 0x1000)) == _eperm()
    for option in (38, 4, 15, 16, 23):  # NO_NEW_PRIVS, SET_DUMPABLE, SET_NAME, GET_NAME, CAPBSET_READ
        assert run_filter(x86, 157, X86_64, (option,)) == ALLOW, option
    assert run_filter(process_filter("aarch64"), 167, AARCH64, (22,)) == _eperm()
    assert run_filter(process_filter("aarch64"), 167, AARCH64, (38,)) == ALLOW


def test_the_notifying_filter_hands_over_exactly_the_refusals() -> None:
    """notify=True: every EPERM answer becomes a hand-over to the listener; nothing else changes."""
    for machine, arch, numbers in (("x86_64", X86_64, range(0, 520)), ("aarch64", AARCH64, range(0, 520))):
        answering, notifying = process_filter(machine), process_filter(machine, notify=True)
        for nr in numbers:
            for args in ((0,), (1,), (17,), (22,), (0x00010000,), (0x00010000 | 0x40000000,), (2,)):
                plain = run_filter(answering, nr, arch, args)
                expected = USER_NOTIF if plain == _eperm() else plain
                assert run_filter(notifying, nr, arch, args) == expected, (machine, nr, args)
        assert run_filter(notifying, 2, I386) == KILL


def test_names_of_the_refused_calls() -> None:
    names = syscall_names("x86_64")
    assert {57: "fork", 56: "clone", 41: "socket", 302: "prlimit64", 317: "seccomp", 157: "prctl",
            425: "io_uring_setup"}.items() <= names.items()
    assert 435 not in names  # clone3 answers ENOSYS: the C library's fallback, not a refusal
    assert 0 not in names and 62 not in names  # read, kill: allowed
    assert syscall_names("aarch64")[261] == "prlimit64" and syscall_names("aarch64")[220] == "clone"
    assert (seccomp_syscall("x86_64"), seccomp_syscall("aarch64")) == (317, 277)


def test_syscalls_newer_than_the_table_are_refused(x86: bytes) -> None:
    """A syscall a later kernel adds (numbers past file_setattr, 469) gets ENOSYS until reviewed."""
    assert run_filter(x86, 469, X86_64) == ALLOW
    for nr in (470, 500, 1023):
        assert run_filter(x86, nr, X86_64) == _eperm(errno.ENOSYS)
    assert run_filter(process_filter("aarch64"), 470, AARCH64) == _eperm(errno.ENOSYS)


def test_other_entry_points_kill(x86: bytes) -> None:
    assert run_filter(x86, 2, I386) == KILL  # int 0x80 from a 64-bit process: other numbers
    assert run_filter(x86, 0x40000000 | 57, X86_64) == KILL  # x32 ABI
    assert run_filter(x86, 57, AARCH64) == KILL


def test_aarch64_table() -> None:
    program = process_filter("aarch64")
    assert run_filter(program, 221, AARCH64) == _eperm()  # execve
    assert run_filter(program, 220, AARCH64, (17,)) == _eperm()  # clone as fork
    assert run_filter(program, 220, AARCH64, (0x00010000,)) == ALLOW
    assert run_filter(program, 63, AARCH64) == ALLOW  # read
    for name, nr in (("io_uring_setup", 425), ("memfd_create", 279), ("shmget", 194), ("unshare", 97)):
        assert run_filter(program, nr, AARCH64) == _eperm(), name
    assert run_filter(program, 221, X86_64) == KILL


def test_unsupported_machine_is_refused() -> None:
    assert set(SUPPORTED_MACHINES) == {"x86_64", "aarch64"}
    with pytest.raises(ValueError, match="no syscall filter for machine 'riscv64'"):
        process_filter("riscv64")
