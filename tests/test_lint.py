"""The static checks CI runs with the tests: the type checker (mypy) over the whole package, every function
annotated, and the linter (ruff) over the whole tree, both configured in ``pyproject.toml``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    pytest.importorskip(name)
    return str(Path(sys.executable).with_name(name))


def test_the_type_checker_passes():
    # its cache lives in the checkout (.mypy_cache, ignored by git), shared with a plain `mypy` run there:
    # a first run checks the package in minutes on a busy two-core machine, a rerun takes seconds
    result = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=1200,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    modules = len(list((ROOT / "causal_gym").rglob("*.py")))  # every module, not a chosen few
    assert f"Success: no issues found in {modules} source files" in result.stdout, result.stdout


def test_the_linter_passes():
    # the whole tree: the package, tests, benchmarks, examples and the docs' extension and guide scripts
    result = subprocess.run([_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
