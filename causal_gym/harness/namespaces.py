"""The namespace sandbox's file system and command lines: bubblewrap, or unshare from util-linux.

Both backends start the code tool's interpreter in new user, pid, network, mount, ipc, uts and
cgroup namespaces, inside a root file system that holds only what a numpy/scipy program needs:

- the interpreter binary and its standard library (any ``site-packages`` or ``dist-packages``
  directory inside a bound tree is hidden under an empty read-only tmpfs);
- the directories of the shared libraries the interpreter and numpy/scipy's extension modules
  link against (found with ``ldd``), the dynamic loader's cache, and the symbolic links on the way
  to them (``/lib -> usr/lib`` on merged-/usr systems);
- the ``numpy`` and ``scipy`` packages and their bundled ``*.libs`` directories, at their real
  paths (nothing else of their ``site-packages``: not causal_gym, not other packages);
- a fresh ``/proc`` (this pid namespace's only, mounted read-only: no sysctl, ``sysrq-trigger``
  or per-process knob can be written), a minimal ``/dev`` (null, zero, full, random, urandom; no
  pseudo-terminals, no ``/dev/shm``), and ``/scratch``: an empty tmpfs of bounded size and number of
  files, the program's working directory and the only writable place. ``$HOME``, the cache, the
  project tree and the host's ``/proc`` are absent.

Everything is read-only but ``/scratch``. When the caller is root, ``setpriv`` first drops to
:data:`HOST_UID`, so the namespace's users map to an unprivileged host user and no agent code runs
as host uid 0. That user may be unable to reach the interpreter: pyenv and most containers keep it
under ``/root`` (mode 0700), which uid 65534 cannot traverse. Then the caller, still root, sets up
once per process a private mount namespace (:func:`reachable_view`) in which each directory that
user cannot traverse is covered by an empty tmpfs holding, at their own paths, bind mounts of only
the planned files and directories below it, keeps a descriptor of it, and starts each call in it
(``nsenter``); the host's mounts and modes are untouched, the sandbox's root is then built exactly
as for a reachable interpreter, and the bootstrap closes the descriptor before any agent code runs. The data and the program reach the interpreter as inherited
file descriptors, so neither is written to the host's disk, and nothing remains when the caller
is killed: bwrap's ``--die-with-parent`` and, for unshare, ``setpriv --pdeathsig KILL`` with
``unshare --kill-child`` take the whole namespace down with the caller, and killing the outermost
process (on a timeout) kills every process of the namespace.

bubblewrap sets the tree up from a list of arguments; with unshare a short ``sh`` script mounts it
on a directory such as ``/tmp`` of the new mount namespace (private, so the host sees nothing) and ``pivot_root`` s
into it; the bootstrap then detaches the old root (``umount2(MNT_DETACH)``) before anything else
runs. The shell then ``exec`` s the interpreter, whose supervisor is PID 1 (so the program, its
child, can neither signal it nor read the shell's descriptors). bwrap cannot bound a tmpfs's
files, so under bwrap the bootstrap mounts ``/scratch`` itself with :func:`scratch_options`
(bwrap grants it ``CAP_SYS_ADMIN`` in the namespace, which it drops before any agent code runs).
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["NAMESPACE_BACKENDS", "SCRATCH", "SCRATCH_FILES", "OLD_ROOT", "HOST_UID", "RootPlan", "root_plan",
           "command", "host_uid", "missing_tools", "reachable_view", "scratch_options"]

NAMESPACE_BACKENDS = ("bwrap", "unshare")
"""The namespace backends, in the order ``sandbox="auto"`` tries them."""

SCRATCH = "/scratch"
"""The program's working directory inside the namespace: an empty, size-limited tmpfs."""

SCRATCH_FILES = 4096
"""Files and directories the scratch directory can hold (the tmpfs's ``nr_inodes``)."""

OLD_ROOT = "/.oldroot"
"""Where the unshare backend's ``pivot_root`` leaves the host root until the bootstrap detaches it."""

_DEVICES = ("null", "zero", "full", "random", "urandom")
_PACKAGES = ("numpy", "scipy")
_SANDBOX_UID = 65534  # "nobody" inside bwrap's user namespace

HOST_UID = 65534
"""The host user (and group) the sandbox runs as when the caller is root: "nobody", never uid 0.

A caller that is not root runs the sandbox as itself. Either way the namespace's users map to one
unprivileged host user, so the kernel's checks on host objects (sysctls, files, devices) are those
of an unprivileged user, and ``RLIMIT_NPROC`` binds (it does not bind host root)."""


@dataclass(frozen=True)
class RootPlan:
    """What the sandbox's root file system holds (host paths, bound at the same path inside).

    Attributes
    ----------
    interpreter : str
        The base interpreter binary (a virtual environment's ``python`` resolved to it).
    binds : tuple of str
        Files and directories bound read-only: the interpreter, its standard library, the
        shared-library directories and the loader cache.
    masks : tuple of str
        Directories inside ``binds`` hidden under an empty read-only tmpfs (site-packages).
    packages : tuple of str
        numpy, scipy and their ``.libs`` directories, bound read-only after the masks.
    symlinks : tuple of (str, str)
        ``(link, target)`` pairs recreated so that library paths resolve as on the host.
    site_dirs : tuple of str
        ``sys.path`` entries that make the packages importable.
    """

    interpreter: str
    binds: tuple[str, ...]
    masks: tuple[str, ...]
    packages: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...]
    site_dirs: tuple[str, ...]

    def exposes(self, path: str) -> bool:
        """Whether the host path ``path`` is visible inside the sandbox."""
        real = os.path.realpath(path)
        if any(_within(real, p) for p in self.packages):
            return True
        return any(_within(real, p) for p in self.binds) and not any(_within(real, m) for m in self.masks)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _package_dirs() -> tuple[list[str], list[str]]:
    """numpy/scipy package directories (with their ``.libs``) and the directories that contain them."""
    dirs, parents = [], []
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{name} is not installed")
        package = os.path.realpath(list(spec.submodule_search_locations)[0])
        parent = os.path.dirname(package)
        dirs.append(package)
        libs = os.path.join(parent, f"{name}.libs")
        if os.path.isdir(libs):
            dirs.append(libs)
        if parent not in parents:
            parents.append(parent)
    return dirs, parents


def _linked_libraries(files: list[str]) -> list[str]:
    """Paths (as the loader names them) of the shared libraries ``files`` link against, via ``ldd``."""
    ldd = shutil.which("ldd")
    if ldd is None:
        raise RuntimeError("ldd is not installed (needed to find the interpreter's shared libraries)")
    completed = subprocess.run([ldd, *files], capture_output=True, text=True, check=False)
    found = []
    for line in completed.stdout.splitlines():
        line = line.strip()
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (")[0].strip()
        else:
            target = line.split(" (")[0].strip()  # the loader itself: "/lib64/ld-linux-x86-64.so.2 (0x...)"
        if target.startswith(os.sep) and os.path.exists(target):
            found.append(target)
    return found


def _symlink_chain(path: str, links: dict[str, str]) -> str:
    """Record every symbolic link on the way to ``path`` in ``links``; return its real path."""
    current = os.sep
    parts = [p for p in path.split(os.sep) if p]
    for index, part in enumerate(parts):
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            target = os.readlink(candidate)
            links[candidate] = target
            rest = os.path.join(os.path.dirname(candidate), target, *parts[index + 1 :])
            return _symlink_chain(os.path.normpath(rest), links)
        current = candidate
    return current


def _extension_modules(package_dirs: list[str], stdlib_dynload: str) -> list[str]:
    """A sample of compiled modules whose libraries the sandbox must provide."""
    files = glob.glob(os.path.join(stdlib_dynload, "*.so"))
    for package in package_dirs:
        files += glob.glob(os.path.join(package, "*", "*.so"))[:40]
    return files


def _add_bind(path: str, binds: list[str]) -> None:
    if not any(_within(path, b) for b in binds):
        binds[:] = [b for b in binds if not _within(b, path)] + [path]


@functools.lru_cache(maxsize=1)
def root_plan() -> RootPlan:
    """The sandbox's root for this interpreter (computed once per process; ``ldd`` runs once).

    Raises
    ------
    RuntimeError
        When numpy/scipy or ``ldd`` are missing, or a planned path would expose causal_gym.
    """
    interpreter = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    stdlib = os.path.realpath(sysconfig.get_path("stdlib", vars={"installed_base": sys.base_prefix}))
    dynload_spec = importlib.util.find_spec("_ctypes")
    dynload = os.path.dirname(os.path.realpath(dynload_spec.origin)) if dynload_spec and dynload_spec.origin else stdlib
    packages, site_dirs = _package_dirs()
    links: dict[str, str] = {}
    binds: list[str] = []
    for path in (interpreter, stdlib, dynload):
        _add_bind(_symlink_chain(path, links), binds)
    for library in _linked_libraries([interpreter, *_extension_modules(packages, dynload)]):
        real = _symlink_chain(library, links)
        if not any(_within(real, p) for p in packages):
            _add_bind(os.path.dirname(real), binds)
    if os.path.isfile("/etc/ld.so.cache"):
        _add_bind(_symlink_chain("/etc/ld.so.cache", links), binds)
    masks = sorted(
        {
            os.path.realpath(found)
            for bound in binds
            if os.path.isdir(bound)
            for pattern in ("site-packages", "dist-packages", "*/site-packages", "*/dist-packages", "python3*/*-packages")
            for found in glob.glob(os.path.join(bound, pattern))
            if os.path.isdir(found)
        }
    )
    symlinks = tuple(
        sorted((link, target) for link, target in links.items() if not any(_within(link, b) for b in binds))
    )
    plan = RootPlan(interpreter, tuple(sorted(binds)), tuple(masks), tuple(packages), symlinks, tuple(site_dirs))
    package_root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if plan.exposes(package_root):
        raise RuntimeError(f"the sandbox root would expose causal_gym ({package_root}); refusing to run")
    if any(_within(path, SCRATCH) for path in (*plan.binds, *plan.packages)):
        raise RuntimeError(f"the sandbox needs {SCRATCH} for its scratch directory, but the interpreter lives there")
    return plan


def _setup_mount_point(plan: RootPlan) -> str:
    """A host directory to mount the unshare backend's new root on, above none of the planned paths."""
    for candidate in ("/tmp", "/mnt", "/run", "/media", "/srv", "/opt"):
        if os.path.isdir(candidate) and not any(_within(p, candidate) for p in (*plan.binds, *plan.packages)):
            return candidate
    raise RuntimeError("no directory to build the sandbox root on: /tmp, /mnt, /run, ... all hold the interpreter")


def _bwrap_arguments(plan: RootPlan, scratch_bytes: int) -> list[str]:
    args = [
        "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
        "--uid", str(_SANDBOX_UID), "--gid", str(_SANDBOX_UID), "--hostname", "sandbox",
    ]
    # No --disable-userns (nor --dev): each nests a second user namespace, which does not own the
    # mount namespace, so the bootstrap could not mount /scratch; the syscall filter refuses new
    # namespaces instead.
    for path in plan.binds:
        args += ["--ro-bind", path, path]
    for path in plan.masks:
        args += ["--tmpfs", path]
    for path in plan.packages:
        args += ["--ro-bind", path, path]
    for path in plan.masks:
        args += ["--remount-ro", path]
    for link, target in plan.symlinks:
        args += ["--symlink", target, link]
    for device in _DEVICES:  # not --dev: its devpts would make bwrap nest a second user namespace
        args += ["--dev-bind", f"/dev/{device}", f"/dev/{device}"]
    args += [
        "--proc", "/proc", "--remount-ro", "/proc",
        "--size", str(scratch_bytes), "--tmpfs", SCRATCH, "--chdir", SCRATCH, "--remount-ro", "/",
        # bwrap cannot bound a tmpfs's inodes: the bootstrap mounts /scratch itself (with
        # scratch_options) and then drops this and every other capability.
        "--cap-add", "CAP_SYS_ADMIN",
    ]
    return args


def scratch_options(scratch_bytes: int) -> str:
    """Mount options of the scratch tmpfs: its size and its number of files.

    Without ``nr_inodes`` a tmpfs allows about one file per two pages of RAM, and each empty file
    holds kernel memory that no size limit counts (about a kilobyte; 100,000 files took 130 MB).
    """
    return f"mode=0755,size={scratch_bytes},nr_inodes={SCRATCH_FILES}"


def _unshare_script(plan: RootPlan, scratch_bytes: int) -> str:
    """The setup script run as PID 1 of the new namespaces; it ends by running ``"$@"``.

    It makes every mount point first (one ``mkdir -p`` and one ``touch``), then mounts; each
    external command costs a process start, which dominates the backend's overhead.
    """
    q = shlex.quote
    mount, pivot_root = q(_tool_path("mount")), q(_tool_path("pivot_root"))

    def inside(path: str) -> str:
        return f'"$R"{q(path)}'

    masked = {m: [p for p in plan.packages if _within(p, m)] for m in plan.masks}
    early = [p for p in (*plan.binds, *plan.packages) if not any(_within(p, m) for m in plan.masks)]
    directories = [p for p in early if os.path.isdir(p)] + [os.path.dirname(p) for p in early if not os.path.isdir(p)]
    directories += [os.path.dirname(link) for link, _ in plan.symlinks] + ["/dev", "/proc", SCRATCH, OLD_ROOT]
    files = [p for p in early if not os.path.isdir(p)] + [f"/dev/{device}" for device in _DEVICES]
    lines = [
        "set -eu",
        f"R={q(_setup_mount_point(plan))}",
        f'{mount} -t tmpfs -o mode=0755 sandbox-root "$R"',
        "mkdir -p " + " ".join(inside(d) for d in dict.fromkeys(directories)),
        "touch " + " ".join(inside(f) for f in files),
    ]
    lines += [f"{mount} --bind -o ro {q(path)} {inside(path)}" for path in plan.binds]
    for mask, packages in masked.items():
        if packages:
            lines.append(f"{mount} -t tmpfs -o mode=0755,size=64k mask {inside(mask)}")
            lines.append("mkdir -p " + " ".join(inside(p) for p in packages))
            lines.append(f"{mount} -o remount,bind,ro {inside(mask)}")
        else:
            lines.append(f"{mount} -t tmpfs -o ro,mode=0755,size=4k mask {inside(mask)}")
    lines += [f"{mount} --bind -o ro {q(path)} {inside(path)}" for path in plan.packages]
    lines += [f"ln -s {q(target)} {inside(link)}" for link, target in plan.symlinks]
    lines += [f'{mount} --bind /dev/{device} "$R/dev/{device}"' for device in _DEVICES]
    lines += [
        f'{mount} -t proc -o ro,nosuid,nodev,noexec proc "$R/proc"',
        f"{mount} -t tmpfs -o {scratch_options(scratch_bytes)} scratch {inside(SCRATCH)}",
        f'{mount} -o remount,bind,ro "$R"',
        'cd "$R"',
        f"{pivot_root} . .{OLD_ROOT}",
        f"cd {SCRATCH}",
        'exec "$@"',
    ]
    return "\n".join(lines)


_UNSHARE = ("unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child",
            "--net", "--ipc", "--uts", "--cgroup")


_SYSTEM_PATH = os.pathsep.join(("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"))


def _tool_path(name: str) -> str:
    """Absolute path of a system program (``PATH`` first, then the usual sbin/bin directories)."""
    found = shutil.which(name) or shutil.which(name, path=_SYSTEM_PATH)
    if found is None:
        raise RuntimeError(f"{name} not found")
    return found


def host_uid() -> int:
    """The host uid the sandbox's processes run as: :data:`HOST_UID` for a root caller, else the caller's."""
    return HOST_UID if _unprivileged() else os.getuid()


def _unprivileged() -> list[str]:
    """``setpriv`` options that drop a root caller to :data:`HOST_UID` (none for other callers)."""
    if 0 not in os.getresuid():
        return []
    return [f"--reuid={HOST_UID}", f"--regid={HOST_UID}", "--clear-groups"]


def missing_tools(backend: str) -> list[str]:
    """Programs ``backend`` needs that are found neither on ``PATH`` nor in the system directories."""
    needed = {"bwrap": ("bwrap", "setpriv"), "unshare": ("setpriv", "unshare", "sh", "mount", "pivot_root")}[backend]
    return [tool for tool in needed if shutil.which(tool) is None and shutil.which(tool, path=_SYSTEM_PATH) is None]


def command(backend: str, interpreter_args: list[str], scratch_bytes: int) -> tuple[list[str], tuple[int, ...]]:
    """The argument vector that runs ``interpreter_args`` (after the interpreter) in the sandbox,
    and the descriptors it names, which the caller must pass on (a root caller's held view).

    Parameters
    ----------
    backend : {"bwrap", "unshare"}
    interpreter_args : list of str
        Arguments of the interpreter, e.g. ``["-I", "-c", source, config]``.
    scratch_bytes : int
        Size of the ``/work`` tmpfs.
    """
    plan = root_plan()
    view, descriptors = _held_view() if _unprivileged() else ((), ())
    if backend == "bwrap":
        drop = [_tool_path("setpriv"), *_unprivileged(), "--"] if _unprivileged() else []
        argv = [*view, *drop, _tool_path("bwrap"), *_bwrap_arguments(plan, scratch_bytes), plan.interpreter,
                *interpreter_args]
    elif backend == "unshare":
        script = _unshare_script(plan, scratch_bytes)
        argv = [*view, _tool_path("setpriv"), *_unprivileged(), "--pdeathsig", "KILL", "--", _tool_path("unshare"),
                *_UNSHARE[1:], "--", _tool_path("sh"), "-c", script, "sh", plan.interpreter, *interpreter_args]
    else:
        raise ValueError(f"unknown namespace backend {backend!r}; expected one of {NAMESPACE_BACKENDS}")
    return argv, descriptors


def _searchable(directory: str) -> bool:
    """Whether :data:`HOST_UID` (group :data:`HOST_UID`, no other groups) may traverse ``directory``.

    Read from the permission bits; an ACL that says otherwise makes the sandbox fail safely
    ("sandbox unavailable"), never see more.
    """
    info = os.stat(directory)
    if info.st_uid == HOST_UID:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == HOST_UID:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _locked_homes(paths: Sequence[str]) -> dict[str, list[str]]:
    """For each directory :data:`HOST_UID` cannot traverse on the way to some of ``paths`` (the highest
    one on each way), the outermost of those paths (real paths) below it."""
    homes: dict[str, list[str]] = {}
    for path in map(os.path.realpath, paths):
        parts = [part for part in path.split(os.sep) if part]
        for depth in range(len(parts)):
            ancestor = os.sep + os.path.join(*parts[:depth]) if depth else os.sep
            if not _searchable(ancestor):
                homes.setdefault(ancestor, []).append(path)
                break
    return {
        home: sorted({p for p in below if not any(p != other and _within(p, other) for other in below)})
        for home, below in homes.items()
    }


def reachable_view(paths: Sequence[str]) -> list[str]:
    """The argument-vector prefix that runs a command of root's where :data:`HOST_UID` reaches ``paths``.

    Empty when that user can already traverse to each of them. Otherwise ``unshare --mount`` (a
    private mount namespace, so the host sees nothing) runs a short script: for each highest
    directory the user cannot traverse (``/root``), it enters that directory, covers it with an
    empty tmpfs (mode 0755) and bind-mounts, from underneath through the working directory, just
    ``paths`` at their own paths; everything else in it stays hidden. The script then returns to
    the caller's working directory (``/`` if the view hides it) and ``exec`` s the command (which
    drops privileges itself), in the same process, so the command's pid, parent and process group
    are those of the prefix's first program.

    Parameters
    ----------
    paths : sequence of str
        Files and directories the unprivileged user must reach; they must exist.
    """
    homes = _locked_homes(paths)
    if not homes:
        return []
    q = shlex.quote
    mount = q(_tool_path("mount"))
    lines = ["set -eu", "umask 022", 'W="$PWD"']
    for home, below in homes.items():
        files = [p for p in below if not os.path.isdir(p)]
        directories = [p for p in below if os.path.isdir(p)] + [os.path.dirname(p) for p in files]
        lines += [
            f"cd {q(home)}",
            f"{mount} -t tmpfs -o mode=0755,nosuid,nodev,size=1m,nr_inodes=4096 causal-gym-view {q(home)}",
            "mkdir -p " + " ".join(q(d) for d in dict.fromkeys(directories)),
        ]
        if files:
            lines.append("touch " + " ".join(q(f) for f in files))
        # "./relative": resolved from the working directory, the covered one; --no-canonicalize keeps
        # mount(8) from resolving it through the new tmpfs.
        lines += [f"{mount} --no-canonicalize --rbind {q('./' + os.path.relpath(p, home))} {q(p)}" for p in below]
    lines += ['cd -- "$W" 2>/dev/null || cd /', 'exec "$@"']
    return [_tool_path("unshare"), "--mount", "--propagation", "private", "--", _tool_path("sh"), "-c",
            "\n".join(lines), "sh"]


@functools.lru_cache(maxsize=1)
def _held_view() -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The ``nsenter`` prefix that starts a command in the view of the sandbox's planned paths, and
    the descriptor of that view's mount namespace; both empty when uid 65534 reaches them already.

    The view is set up once per process (its ``mount`` and ``mkdir`` processes would otherwise cost
    each call tens of milliseconds on a loaded machine): a short-lived holder runs in it until this
    process has opened the namespace, which then lives as long as the descriptor (this process's
    lifetime). A process forked from this one inherits the descriptor and the cached prefix.

    Raises
    ------
    RuntimeError
        When the view cannot be set up (the message says why).
    """
    plan = root_plan()
    prefix = reachable_view([*plan.binds, *plan.packages])
    if not prefix:
        return (), ()
    holder = subprocess.Popen([*prefix, _tool_path("sh"), "-c", "echo ready; read -r _"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = holder.stdout.readline() if holder.stdout else b""
        if ready == b"ready\n":
            # The holder is this process's unreaped child: its pid cannot have been reused.
            namespace = os.open(f"/proc/{holder.pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        _, errors = holder.communicate(input=b"\n", timeout=30)
    if ready != b"ready\n":
        raise RuntimeError("the private mount view for uid 65534 could not be set up: "
                           + errors.decode(errors="replace").strip()[-300:])
    return (_tool_path("nsenter"), f"--mount=/proc/self/fd/{namespace}", "--"), (namespace,)
