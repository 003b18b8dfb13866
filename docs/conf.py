"""Sphinx configuration of the causal_gym documentation.

Build: ``python -m sphinx -b html -W --keep-going docs docs/_build/html`` (tests/test_docs.py does,
warnings as errors). Serve: ``python -m http.server -d docs/_build/html``.

Why Sphinx: the docstrings are written for it (numpydoc sections, ``:func:`` and ``:class:`` roles),
Gymnasium's site, the model for the env pages, is Sphinx-built, and autodoc imports the code, so
the API reference and the env pages cannot drift from it. Napoleon reads the numpydoc sections;
myst-parser reads the Markdown pages and the env classes' Gymnasium-style docstrings.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))

project = "causal_gym"
author = "the causal_gym developers"
copyright = "the causal_gym developers"  # noqa: A001 -- Sphinx's name

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "causal_gym_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
smartquotes = False  # "--", quotes and flags stay as typed (they are code more often than prose here)
exclude_patterns = ["_build", "**/scripts/*.txt"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
# Optional stacks that a module imports at the top; the API pages of those modules still render.
# verifiers: its pydantic models fail to build under autodoc's import (they import fine in a plain process).
autodoc_mock_imports = ["pettingzoo", "supersuit", "verifiers"]

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
# "Options" lists keyword options like parameters; the extension adds the other free-form titles it meets.
napoleon_custom_sections: list[str | tuple[str, str]] = [("Options", "params_style")]

# A type written in prose ("array (n, d)") makes each word a reference; a word such as "d" names
# attributes of several classes. Those ambiguous guesses are not broken links.
suppress_warnings = ["ref.python"]

html_theme = "furo"
html_title = "causal_gym"
html_static_path: list[str] = []
