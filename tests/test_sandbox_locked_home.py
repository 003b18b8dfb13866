"""The code tool for a root evaluator whose interpreter lives in a home "nobody" cannot traverse.

The sandbox drops root to uid 65534 before it builds its namespaces, and pyenv, most containers and
many evaluators keep the interpreter and the virtual environment under ``/root`` (mode 0700). Here
a fresh virtual environment is built inside a 0700 directory, with numpy and scipy of its own (so
every path the sandbox needs lies behind it) and a secret beside it; ``run_code`` is called through
that environment's interpreter as root, in a subprocess started from a directory outside the
project, under both namespace backends. Judged from the host: the calls run as uid 65534, import
the locked numpy, see nothing else of the locked directory (with the audit hook subverted), and the
host's mounts and modes are unchanged afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

import numpy
import pytest

import causal_gym
from causal_gym.harness.namespaces import reachable_view
from sandbox_helpers import NAMESPACE_BACKENDS, require_backend
from test_sandbox_escapes import DISABLE_HOOK

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="namespaces need Linux"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a root caller is what drops to nobody"),
]

_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
_PACKAGES = ("numpy", "numpy.libs", "scipy", "scipy.libs")


def _views_mounted() -> bool:
    """Whether the host's mount table holds a view's tmpfs (it never should: the view is private)."""
    return "causal-gym-view" in Path("/proc/self/mountinfo").read_text()


def _locked_dir(parent: Path) -> Path:
    home = parent / "home"
    home.mkdir()
    home.chmod(0o700)
    return home


def test_the_view_shows_nobody_only_the_planned_paths(tmp_path: Path) -> None:
    """:func:`reachable_view` itself: nobody reads the planned file and nothing else of the home."""
    home = _locked_dir(tmp_path)
    (home / "wanted").mkdir()
    (home / "wanted" / "file").write_text("planned\n")
    (home / "secret").write_text("hidden")
    denied = subprocess.run([*_NOBODY, "cat", str(home / "wanted" / "file")], capture_output=True, text=True)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr  # the problem being solved
    view = reachable_view([str(home / "wanted")])
    assert view and view[:4] == [shutil.which("unshare") or view[0], "--mount", "--propagation", "private"]
    shown = subprocess.run(
        [*view, *_NOBODY, "sh", "-c", f"cat {home}/wanted/file; ls -a {home}; cat {home}/secret; touch {home}/x"],
        capture_output=True, text=True,
    )
    assert shown.stdout.split() == ["planned", ".", "..", "wanted"], shown
    assert "secret: No such file" in shown.stderr and "Permission denied" in shown.stderr, shown.stderr
    assert not _views_mounted() and (home.stat().st_mode & 0o777) == 0o700
    assert sorted(p.name for p in home.iterdir()) == ["secret", "wanted"]
    assert reachable_view([os.path.dirname(shutil.which("sh") or "/bin/sh")]) == []  # reachable: no view


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


_CALLER = """
import json, sys
sys.path.insert(0, PROJECT)
import numpy as np
from causal_gym.harness import run_code
from causal_gym.harness.namespaces import root_plan
data = np.random.default_rng(0).normal(size=(30, 3))
out = {"numpy": np.__file__, "packages": list(root_plan().packages), "interpreter": root_plan().interpreter,
       "sum": float(data.sum())}
for backend in ("bwrap", "unshare"):
    for name, program in PROGRAMS.items():
        r = run_code(program, data, sandbox=backend)
        out[backend + " " + name] = {"ok": r.ok, "error": r.error, "output": r.output, "sandbox": r.sandbox,
                                     "bounds": r.bounds}
print(json.dumps(out))
"""


def test_root_runs_code_through_a_venv_in_a_locked_home(tmp_path: Path) -> None:
    for backend in NAMESPACE_BACKENDS:
        require_backend(backend)
    home = _locked_dir(tmp_path)
    secret = "cg-secret-" + uuid.uuid4().hex
    (home / "secret.txt").write_text(secret)
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    host_site = Path(numpy.__file__).parent.parent
    for name in _PACKAGES:
        if (host_site / name).is_dir():
            shutil.copytree(host_site / name, site / name, symlinks=True, copy_function=_link_or_copy)
    # causal_gym's other dependencies, after the venv's own numpy and scipy on sys.path
    (site / "host_packages.pth").write_text(f"{sysconfig.get_path('purelib')}\n")
    probe = DISABLE_HOOK["closure"] + f"""
import os, json
home = {str(home)!r}
def attempt(action):
    try:
        return "ok: " + repr(action())
    except BaseException as exc:
        return type(exc).__name__
def descriptors():
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink("/proc/self/fd/" + name))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return sorted(found)
print(json.dumps({{"home": attempt(lambda: sorted(os.listdir(home))), "secret": attempt(lambda: open(home + "/secret.txt").read()),
                  "site": attempt(lambda: sorted(os.listdir({str(site)!r}))), "uid": os.getuid(),
                  "descriptors": descriptors()}}))
"""
    programs = {"honest": "print(np.__file__, float(X.sum()))", "probe": probe}
    root_mode = os.stat("/root").st_mode if os.path.isdir("/root") else None
    script = _CALLER.replace("PROJECT", repr(os.path.dirname(os.path.dirname(causal_gym.__file__)))).replace(
        "PROGRAMS", repr(programs))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    completed = subprocess.run([python, "-c", script], cwd=outside, capture_output=True, text=True, timeout=300,
                               env={"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)})
    assert completed.returncode == 0, completed.stderr[-2000:]
    out = json.loads(completed.stdout.strip().splitlines()[-1])
    assert out["numpy"].startswith(str(home) + os.sep), out["numpy"]  # the locked copy, not the host's
    assert out["packages"] and all(p.startswith(str(site)) for p in out["packages"]), out["packages"]
    for backend in NAMESPACE_BACKENDS:
        honest, probed = out[backend + " honest"], out[backend + " probe"]
        assert honest["ok"] and honest["sandbox"] == backend, honest
        assert honest["bounds"].startswith("host uid 65534;"), honest["bounds"]
        path, total = honest["output"].split()
        assert path.startswith(str(site) + os.sep) and float(total) == pytest.approx(out["sum"])
        assert probed["ok"], probed
        inside = json.loads(probed["output"].strip().splitlines()[-1])
        assert inside["home"] == "ok: ['venv']", inside  # the secret beside the venv is not there at all
        assert inside["secret"] == "FileNotFoundError", inside
        assert inside["site"] == f"ok: {sorted(p for p in _PACKAGES if (host_site / p).is_dir())!r}", inside
        assert inside["uid"] == (65534 if backend == "bwrap" else 0)
        # the caller's descriptor of its view (a mount namespace) was closed before the program ran
        assert not any(target.startswith("mnt:") for target in inside["descriptors"]), inside["descriptors"]
        assert secret not in probed["output"]
    assert not _views_mounted()  # the view lived in a private mount namespace
    assert (home.stat().st_mode & 0o777) == 0o700
    assert (os.stat("/root").st_mode if os.path.isdir("/root") else None) == root_mode
