"""Package-level promises: importing causal_gym pulls no heavy dependency.

The import time itself is measured by benchmarks/import_time.py (no timing thresholds in tests).
"""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def test_import_is_light():
    # Heavy stacks must load lazily: importing causal_gym may not pull torch, causal-learn, lingam or sklearn.
    out = _run(
        "import sys, causal_gym, causal_gym.graphs, causal_gym.metrics, causal_gym.scm, causal_gym.stats, "
        "causal_gym.discovery, causal_gym.agents, causal_gym.eval\n"
        "print(sorted(m for m in ('torch','causallearn','lingam','sklearn','ray','openai') if m in sys.modules))"
    )
    assert out.strip() == "[]"


def test_a_missing_lazy_name_is_named_in_the_error():
    import importlib

    import pytest

    for package in ("causal_gym.envs.heuresis", "causal_gym.envs.causalab"):  # the two with lazy exports
        with pytest.raises(AttributeError, match=rf"module '{package}' has no attribute 'no_such_name'"):
            importlib.import_module(package).no_such_name  # noqa: B018 -- the attribute access is the test


def test_every_env_and_the_command_line_work_without_docstrings():
    # python -OO strips docstrings: code that edits or reads its own __doc__ must still import and run
    code = (
        "import importlib, gymnasium as gym, causal_gym\n"
        "from causal_gym.cli import main\n"
        "points = {s.entry_point.split(':')[0] for s in gym.registry.values()\n"
        "          if isinstance(s.entry_point, str) and s.entry_point.startswith('causal_gym')}\n"
        "for module in sorted(points):\n"
        "    importlib.import_module(module)\n"
        "for argv in (['--help'], ['list']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code == 0, (argv, exit.code)\n"
        "print(len(points))\n"
    )
    out = subprocess.run([sys.executable, "-OO", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.strip().splitlines()[-1]) >= 4  # the four benchmarks' env modules at least


def test_the_wheel_ships_the_type_information_and_the_package_data(tmp_path):
    # built from a copy, so the build's own folders (build/, *.egg-info) stay out of the checkout
    source = tmp_path / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("causal_gym", "causal_gym_verifiers"):
        shutil.copytree(ROOT / name, source / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("causal_gym-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # PEP 561: py.typed makes a plug-in's type checker read causal_gym's annotations
    assert "causal_gym/py.typed" in names
    assert {"causal_gym/discovery/amortized/alternet.pt", "causal_gym/discovery/amortized/alternet.card.json",
            "causal_gym/discovery/amortized/alternet.curve.csv"} <= names


def test_readme_shows_the_command_ci_runs():
    # .ci/run must execute the README's test command; keep the two from drifting apart.
    ci_line = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line][-1]
    assert ci_line.strip() in (ROOT / "README.md").read_text()
