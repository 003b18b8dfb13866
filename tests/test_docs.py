"""The documentation site builds without a warning, has a page for every registered id, and its guides run.

The build is the real one (``python -m sphinx -W --keep-going``, in a subprocess, into a temporary
directory): every docstring autodoc renders, every generated env page and every cross-reference
must pass. Each guide's code is a script under ``docs/guides/scripts/`` that its page includes
with the output beside it (``NAME.txt``); the scripts run here as a user runs them, in a fresh
process from a directory that is not the repository, and must print what the page shows, up to
the numbers (timings, a model's token counts and a trained policy's scores move from run to run).
"""

from __future__ import annotations

import html as html_text
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from causal_gym.envs.benchmark import benchmarks

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SCRIPTS = DOCS / "guides" / "scripts"

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")


def _environment(cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]), "CAUSAL_GYM_CACHE": str(cache)}


@pytest.fixture
def site(tmp_path) -> Path:
    """The HTML site."""
    out = tmp_path
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-d", str(out / "doctrees"),
         str(DOCS), str(out / "html")],
        capture_output=True, text=True, timeout=1800, env=_environment(out / "cache"), cwd=out,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    return out / "html"


def _registered() -> list[tuple[object, object]]:
    return [(spec, entry) for spec in benchmarks() if not spec.name.startswith("toy") for entry in spec.envs]


def test_the_site_builds_without_warnings_every_id_has_its_page_and_results_show_figures(site):
    registered = _registered()
    assert len(registered) >= 49
    for spec, entry in registered:
        page = site / "generated" / "envs" / "ids" / f"{entry.id}.html"
        assert page.exists(), f"{entry.id} is registered but has no page"
        html = page.read_text()
        env = gym.make(entry.id, **entry.small_kwargs)
        cls = type(env.unwrapped)
        env.close()
        # Its own facts, from the spec and the class: the description, the class, every section of the
        # class docstring, every keyword of the signature, and the tables it reproduces.
        assert html_text.escape(entry.description, quote=False) in html, entry.id
        assert cls.__qualname__ in html
        for section in re.findall(r"^\s*## (.+)$", cls.__doc__ or "", flags=re.M):
            assert section.strip().replace("&", "&amp;") in html, (entry.id, section)
        for name in list(inspect.signature(cls.__init__).parameters)[1:]:
            if name not in ("args", "kwargs"):
                assert f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{name}</span>" in html, \
                    (entry.id, name)
        for table in entry.reproduces:
            assert table in html, (entry.id, table)
        if "rgb_array" in cls.metadata.get("render_modes", []):
            assert re.search(rf'<img[^>]+src="[^"]*{re.escape(entry.id)}\.png"', html), entry.id
    assert (site / "generated" / "cli.html").exists() and (site / "api" / "index.html").exists()
    # The results pages show the learning curves and step plots as images (one build: this test, not
    # a second one that pytest-xdist could send to another worker to build the site again).
    images = {path.name for path in (site / "_images").iterdir()}
    for page, count in (("results/grpo.html", 5), ("results/design.html", 9)):
        shown = re.findall(r'<img[^>]+src="[^"]*_images/([^"]+)"', (site / page).read_text())
        assert len(shown) == count and set(shown) <= images, (page, shown)


def _shape(text: str) -> list[list[str]]:
    """Lines as words with every number replaced, so a transcript and a new run compare up to numbers."""
    lines = [re.sub(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?", "#", line).split() for line in text.splitlines()]
    return [line for line in lines if line]


SLOW_SCRIPTS = {"llm_local_server"}
"""Scripts that start a model server (minutes on a loaded 2-core machine): marked slow.
tests/test_llm_real.py plays the same path (llama.cpp, the runner, --agent llm) in the default run."""


@pytest.mark.parametrize("name", [
    pytest.param(path.stem, marks=[pytest.mark.slow] if path.stem in SLOW_SCRIPTS else [])
    for path in sorted(SCRIPTS.glob("*.py")) if path.stem != "refresh"
])
def test_a_guide_script_prints_what_its_page_shows(name, tmp_path):
    transcript = SCRIPTS / f"{name}.txt"
    assert transcript.exists(), f"{name}.py has no transcript: python docs/guides/scripts/refresh.py {name}"
    pages = [page for page in DOCS.rglob("*.md") if f"scripts/{name}.py" in page.read_text()]
    assert pages, f"no page includes {name}.py"
    done = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py")], capture_output=True, text=True,
                          timeout=1500, env=_environment(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert _shape(done.stdout) == _shape(transcript.read_text()), done.stdout
