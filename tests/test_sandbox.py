"""Tests of the code tool (causal_gym.harness.sandbox) under every backend.

Each test runs under bwrap, unshare and the in-process "process" backend: the results a program
sees, the audit hook's refusals (which make blocked operations legible in every backend) and the
resource limits. Every attack is run for real and checked from the outside (the secret is not in
the output, no connection reached the listening socket, no file appeared, no process is left), and
every failure is followed by a normal call to show that the tool carries on. What holds when the
audit hook has been subverted is in test_sandbox_escapes.py.
"""

from __future__ import annotations

import functools
import json
import os
import select
import socket
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from causal_gym.harness import CodeResult, SandboxLimits, run_code
from sandbox_helpers import BACKENDS, require_backend, sandbox_processes, unique_limits

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


@pytest.fixture(params=BACKENDS, autouse=True)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs under each backend: ``run_code`` here is the tool with that backend."""
    require_backend(request.param)
    monkeypatch.setattr(sys.modules[__name__], "run_code", functools.partial(run_code, sandbox=request.param))
    return request.param

# A sentinel living in this (the parent's) process: the child must not be able to find it.
_PARENT_STATE = {"sentinel": "cg-sentinel-" + uuid.uuid4().hex}


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(200, 4)) @ np.array(
        [[1.0, 0.5, 0.0, 0.2], [0.0, 1.0, 0.7, 0.0], [0.0, 0.0, 1.0, 0.4], [0.0, 0.0, 0.0, 1.0]]
    )


def _still_works(data: np.ndarray) -> None:
    result = run_code("print(n * d, float(X.sum()))", data)
    assert result.ok, result
    n, d = data.shape
    assert result.output.split()[0] == str(n * d)
    assert float(result.output.split()[1]) == pytest.approx(float(data.sum()), rel=1e-12)


# --- normal use ---------------------------------------------------------------------------------


def test_correlation_matrix_matches_numpy_in_parent(data: np.ndarray) -> None:
    code = "import json\nprint(n, d)\nprint(json.dumps(np.corrcoef(X, rowvar=False).tolist()))"
    result = run_code(code, data)
    assert result.ok and result.error is None and not result.output_truncated
    first, second = result.output.splitlines()
    assert first == f"{data.shape[0]} {data.shape[1]}"
    np.testing.assert_allclose(json.loads(second), np.corrcoef(data, rowvar=False), rtol=1e-12, atol=1e-14)
    assert result.wall_time > 0
    assert json.loads(json.dumps(result.to_dict())) == result.to_dict()


def test_scipy_submodules_work(data: np.ndarray) -> None:
    code = (
        "import json, scipy.stats, scipy.linalg\n"
        "rho = scipy.stats.spearmanr(X).statistic\n"
        "coef = scipy.linalg.lstsq(X[:, 1:], X[:, 0])[0]\n"
        "print(json.dumps({'rho': rho.tolist(), 'coef': coef.tolist()}))"
    )
    result = run_code(code, data)
    assert result.ok, result
    got = json.loads(result.output)
    np.testing.assert_allclose(got["rho"], scipy.stats.spearmanr(data).statistic, rtol=1e-12)
    np.testing.assert_allclose(got["coef"], scipy.linalg.lstsq(data[:, 1:], data[:, 0])[0], rtol=1e-10)


def test_files_inside_the_scratch_directory_are_allowed_and_gone_afterwards(data: np.ndarray, backend: str) -> None:
    code = (
        "import os, tempfile\n"
        "print(os.getcwd())\n"
        "print(sorted(os.listdir('.')))\n"
        "np.save('copy.npy', X)\n"
        "os.mkdir('sub')\n"
        "print(np.array_equal(np.load('copy.npy'), X), os.path.dirname(tempfile.mkdtemp()) == os.getcwd())"
    )
    result = run_code(code, data)
    assert result.ok, result
    assert result.sandbox == backend
    workdir, listing, checks = result.output.splitlines()
    assert listing == "[]"  # the data and the program come through descriptors, not files
    assert checks == "True True"
    if backend == "process":
        assert Path(workdir).name.startswith("causal_gym_sandbox_")
        assert not Path(workdir).exists()
    else:
        assert workdir == "/scratch"
        assert not Path("/scratch").exists()  # a tmpfs of the sandbox's own mount namespace


def test_stdout_and_stderr_are_merged_in_order(data: np.ndarray) -> None:
    result = run_code("import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')", data)
    assert result.ok
    assert result.output == "a\nb\nc\n"


# --- the program's own errors ---------------------------------------------------------------------


def test_syntax_error(data: np.ndarray) -> None:
    result = run_code("x = (1,\nprint(x)", data)
    assert not result.ok
    assert result.error.startswith("SyntaxError")
    assert "program.py" in result.output
    _still_works(data)


def test_exception_gives_last_traceback_line_and_the_traceback(data: np.ndarray) -> None:
    result = run_code("def f():\n    return 1 / 0\nprint('before')\nf()", data)
    assert not result.ok
    assert result.error == "ZeroDivisionError: division by zero"
    assert result.output.startswith("before\nTraceback (most recent call last):")
    assert 'File "program.py", line 2, in f' in result.output
    assert "<string>" not in result.output  # the sandbox's own frames are not shown
    _still_works(data)


def test_sys_exit(data: np.ndarray) -> None:
    assert run_code("import sys\nsys.exit(0)", data).ok
    result = run_code("import sys\nsys.exit(3)", data)
    assert not result.ok and result.error == "SystemExit: 3"
    result = run_code("import os\nos._exit(4)", data)
    assert not result.ok and result.error == "exited early with code 4"


# --- what the child can see -----------------------------------------------------------------------


def test_environment_holds_no_parent_secret(data: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "secret-" + uuid.uuid4().hex
    monkeypatch.setenv("CAUSAL_GYM_SECRET", secret)
    monkeypatch.setenv("PYTHONPATH", "/nonexistent-injected-path")
    result = run_code("import os, sys\nprint(dict(os.environ))\nprint(sys.path)", data)
    assert result.ok, result
    assert secret not in result.output and "CAUSAL_GYM_SECRET" not in result.output
    assert "nonexistent-injected-path" not in result.output
    result = run_code("import os\nprint(os.environ['CAUSAL_GYM_SECRET'])", data)
    assert not result.ok and result.error == "KeyError: 'CAUSAL_GYM_SECRET'"
    _still_works(data)


@pytest.mark.parametrize("target", ["cmdline", "environ"])
def test_reading_the_parent_process_is_blocked(
    data: np.ndarray, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    secret = "secret-" + uuid.uuid4().hex
    monkeypatch.setenv("CAUSAL_GYM_SECRET", secret)
    code = f"import os\nprint(open('/proc/{os.getpid()}/{target}', 'rb').read())"
    result = run_code(code, data)
    assert not result.ok
    assert result.error == f"blocked: file access outside the sandbox (/proc/{os.getpid()}/{target})"
    assert secret not in result.output
    _still_works(data)


def test_reading_proc_self_is_blocked(data: np.ndarray) -> None:
    result = run_code("print(open('/proc/self/status').read())", data)
    assert not result.ok and result.error.startswith("blocked: file access outside the sandbox (/proc/")
    _still_works(data)


def test_cache_directory_is_refused(data: np.ndarray, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    secret = "cached-truth-" + uuid.uuid4().hex
    (cache / "truth.json").write_text(secret)
    monkeypatch.setenv("CAUSAL_GYM_CACHE", str(cache))
    for code in (f"print(open({str(cache / 'truth.json')!r}).read())", f"import os\nprint(os.listdir({str(cache)!r}))"):
        result = run_code(code, data)
        assert not result.ok
        assert result.error.startswith("blocked: file access outside the sandbox")
        assert secret not in result.output and "['truth.json']" not in result.output
        _still_works(data)


def test_project_tree_and_writes_outside_are_refused(data: np.ndarray, tmp_path: Path, backend: str) -> None:
    import causal_gym

    result = run_code(f"print(open({causal_gym.__file__!r}).read())", data)
    assert not result.ok and result.error.startswith("blocked: file access outside the sandbox")
    result = run_code("import causal_gym", data)
    if backend == "process":  # the package is on the interpreter's path; the hook refuses to read it
        assert not result.ok and result.error.startswith("blocked: file access outside the sandbox")
    else:  # the package is not in the sandbox at all
        assert not result.ok and result.error == "ModuleNotFoundError: No module named 'causal_gym'"
    target = tmp_path / "written.txt"
    result = run_code(f"open({str(target)!r}, 'w').write('x')", data)
    assert not result.ok and result.error == f"blocked: file access outside the sandbox ({target})"
    assert not target.exists()
    _still_works(data)


def test_gc_finds_nothing_of_the_parent(data: np.ndarray) -> None:
    prefix = "cg-sentinel-"
    assert _PARENT_STATE["sentinel"].startswith(prefix)
    code = (
        "import gc\n"
        "own = ['cg-sentinel-' + 'child']  # a list: gc always tracks it (a constant's tuple may be untracked)\n"
        "found = set()\n"
        "for obj in gc.get_objects():\n"
        "    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()\n"
        "    found.update(v for v in items if isinstance(v, str) and v.startswith('cg-sentinel-'))\n"
        "print(sorted(found))"
    )
    result = run_code(code, data)
    assert result.ok, result
    assert "cg-sentinel-child" in result.output  # the search itself works
    assert _PARENT_STATE["sentinel"] not in result.output


# --- blocked operations ---------------------------------------------------------------------------


def test_network_connection_is_blocked(data: np.ndarray) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'hi')"
        result = run_code(code, data)
        assert not result.ok and result.error == "blocked: network access"
        readable, _, _ = select.select([server], [], [], 0.2)
        assert not readable  # no connection is waiting to be accepted
    _still_works(data)


def test_a_caught_refusal_still_fails_the_call(data: np.ndarray) -> None:
    code = "import socket\ntry:\n    socket.socket()\nexcept PermissionError as e:\n    print('caught', e)"
    result = run_code(code, data)
    assert result.output == "caught blocked: network access\n"
    assert not result.ok and result.error == "blocked: network access"


@pytest.mark.parametrize(
    "code",
    [
        "import os\nprint(os.getpid(), flush=True)\nwhile True:\n    os.fork()",
        "import os\nprint(os.getpid(), flush=True)\nimport subprocess\nsubprocess.run(['ls'])",
        "import os\nprint(os.getpid(), flush=True)\nos.system('ls')",
        "import os\nprint(os.getpid(), flush=True)\nos.posix_spawn('/bin/ls', ['ls'], {})",
        "import os\nprint(os.getpid(), flush=True)\nimport multiprocessing\nmultiprocessing.Process(target=print).start()",
    ],
    ids=["fork-bomb", "subprocess", "system", "posix_spawn", "multiprocessing"],
)
def test_process_creation_is_blocked_and_nothing_is_left_running(data: np.ndarray, code: str) -> None:
    limits, marker = unique_limits()
    result = run_code(code, data, limits)
    assert not result.ok and result.error == "blocked: process creation", result
    assert sandbox_processes(marker) == []
    _still_works(data)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("import os\nos.kill(os.getppid(), 0)", "blocked: sending signals"),
        ("import ctypes\nctypes.CDLL(None)", "blocked: native code (ctypes)"),
        ("import sys\nsys.settrace(lambda *a: None)", "blocked: tampering with the sandbox (sys.settrace)"),
        (
            "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (100, 100))",
            "blocked: tampering with the sandbox (resource.setrlimit)",
        ),
        (
            "import gc\nfor f in gc.get_objects():\n"
            "    if getattr(f, '__name__', '') == 'guard':\n        f.__code__ = (lambda e, a: None).__code__",
            "blocked: tampering with the sandbox (changing the audit hook)",
        ),
        ("import os\nos.chdir('/')", "blocked: changing directories, permissions or links (os.chdir)"),
        ("import os\nos.symlink('/etc/passwd', 'p')", "blocked: changing directories, permissions or links (os.symlink)"),
    ],
    ids=["kill", "ctypes", "settrace", "setrlimit", "replace-hook-code", "chdir", "symlink"],
)
def test_other_blocked_operations(data: np.ndarray, code: str, error: str) -> None:
    result = run_code(code, data)
    assert not result.ok and result.error == error, result
    _still_works(data)


# --- limits ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["x = np.ones(10**10 // 8 * 10)", "x = np.ones(200_000_000)"], ids=["100GB", "1.6GB"])
def test_memory_limit(data: np.ndarray, code: str) -> None:
    # 1.6 GB would fit on the test machine: only the 512 MB address-space cap stops it.
    result = run_code(code, data, SandboxLimits(memory_mb=512))
    assert not result.ok and result.error == "memory limit", result
    assert "MemoryError" in result.output
    _still_works(data)


def test_cpu_limit_stops_a_busy_loop(data: np.ndarray) -> None:
    result = run_code("while True:\n    pass", data, SandboxLimits(cpu_seconds=1, wall_seconds=60))
    assert not result.ok and result.error == "cpu time limit", result
    _still_works(data)


def test_wall_clock_limit_kills_every_process_of_the_sandbox(data: np.ndarray) -> None:
    limits, marker = unique_limits(wall_seconds=1.5)
    code = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)"
    result = run_code(code, data, limits)
    assert not result.ok and result.error == "timeout"
    assert result.output == "started\n"
    assert 1.5 <= result.wall_time
    assert sandbox_processes(marker) == []
    _still_works(data)



def test_no_process_outlives_a_timeout_even_for_a_moment(data: np.ndarray) -> None:
    """The tool returns only once the worker is dead: checked right after each of several short timeouts.

    Killing the process group alone returned while the process backend's orphaned worker could
    still be running (7 of 40 calls left it visible on two loaded cores).
    """
    code = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)"
    for _ in range(6):
        limits, marker = unique_limits(wall_seconds=0.3)
        result = run_code(code, data, limits)
        assert result.error == "timeout"
        assert sandbox_processes(marker) == []

@pytest.mark.parametrize(
    "code", ["print('x' * 10_000_000)", "for i in range(300_000):\n    print(i)"], ids=["one-line", "loop"]
)
def test_large_output_is_truncated(data: np.ndarray, code: str) -> None:
    limits = SandboxLimits(max_output_chars=1000)
    result = run_code(code, data, limits)
    assert result.ok and result.output_truncated
    head, marker = result.output[:1000], result.output[1000:]
    expected = "x" * 1000 if "'x'" in code else "\n".join(map(str, range(400)))[:1000]
    assert head == expected
    assert marker.startswith("\n[output truncated") and len(marker) < 200


def test_file_size_limit(data: np.ndarray) -> None:
    code = "try:\n    open('big.bin', 'wb').write(b'0' * 3 * 2**20)\nexcept OSError as e:\n    print('refused', e.errno)"
    result = run_code(code, data, SandboxLimits(file_mb=1))
    assert result.ok and result.output.startswith("refused")
    assert run_code(code, data, SandboxLimits(file_mb=4)).output == ""


# --- programmer errors -----------------------------------------------------------------------------


def test_programmer_errors_raise_value_error(data: np.ndarray) -> None:
    with pytest.raises(ValueError, match="code must be a str"):
        run_code(b"print(1)", data)  # type: ignore[arg-type]
    bad = data.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        run_code("print(1)", bad)
    with pytest.raises(ValueError, match="limits"):
        run_code("print(1)", data, limits={"cpu_seconds": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cpu_seconds"):
        SandboxLimits(cpu_seconds=0)
    with pytest.raises(ValueError, match="max_output_chars"):
        SandboxLimits(max_output_chars=10.5)  # type: ignore[arg-type]


def test_too_long_or_invalid_code_is_refused_without_running(data: np.ndarray, backend: str) -> None:
    result = run_code("print(1)\n" * 10, data, SandboxLimits(max_code_chars=50))
    assert result == CodeResult(
        ok=False, output="", error="code too long: 90 characters (limit 50)", wall_time=0.0, output_truncated=False,
        sandbox=backend,
    )
    result = run_code("print('\ud800')", data)
    assert not result.ok and result.error.startswith("code is not valid text")
