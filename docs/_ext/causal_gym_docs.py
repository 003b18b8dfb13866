"""causal_gym's Sphinx extension: the pages that are generated from the code, and its two docstring dialects.

At ``builder-inited`` it writes, under ``docs/generated/`` (never committed):

- ``envs/<benchmark>.md`` and ``envs/ids/<id>.md``: one page per registered id, from the benchmark
  specs (:mod:`causal_gym.envs.benchmark`: description, registered keyword arguments, the paper and
  the tables the id reproduces, seal support, vector entry point) and the class docstring of the env
  the id builds (Gymnasium's sections: spaces, rewards, starting state, episode end, arguments,
  version history), with the keyword arguments and their defaults read from the signature, and a
  picture of an episode (``render_mode="rgb_array"``; the ``"ansi"`` text where that is the only mode);
- ``api/<package>.rst``: ``automodule`` for every public module, found by walking the package;
- ``cli.md``: every level of ``causal-gym --help``, as the command prints it.

Docstrings come in two dialects. Env classes follow Gymnasium (Markdown headings and pipe tables,
with Sphinx roles inside); the rest are numpydoc reStructuredText, some with free-form section
titles. For autodoc, :func:`markdown_to_rst` turns the first into reStructuredText and
:func:`process_docstring` makes section titles that napoleon does not know into sections of its own (docutils allows no section inside a
docstring; napoleon renders them as rubrics). For the env pages (MyST), :func:`roles_to_myst` rewrites the
roles in MyST's syntax.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import pkgutil
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
GENERATED = DOCS / "generated"

PICTURE_STEPS = 6
"""Random valid actions played before an env page's picture is drawn."""

# Napoleon's numpydoc sections (it rewrites these itself); any other underlined title becomes a rubric.
NAPOLEON_SECTIONS = {
    "args", "arguments", "attention", "attributes", "caution", "danger", "error", "example", "examples", "hint",
    "important", "keyword args", "keyword arguments", "methods", "note", "notes", "other parameters", "parameters",
    "receive", "receives", "return", "returns", "raise", "raises", "references", "see also", "tip", "todo",
    "warning", "warnings", "warn", "warns", "yield", "yields",
}

_ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")


# -- docstring dialects ------------------------------------------------------------------------------

def roles_to_myst(text: str) -> str:
    """``:func:`x``` -> MyST's ``{func}`x```."""
    return _ROLE.sub(r"{\g<role>}`\g<body>`", text)


def _split_row(line: str) -> list[str]:
    """The cells of a pipe-table row; a ``|`` inside a ````literal```` does not split."""
    cells, cell, literal = [], "", False
    body = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    index = 0
    while index < len(body):
        if body.startswith("``", index):
            literal = not literal
            cell += "``"
            index += 2
            continue
        char = body[index]
        if char == "|" and not literal:
            cells.append(cell.strip())
            cell = ""
        elif char == "\\" and body.startswith("\\|", index):
            cell += "|"
            index += 1
        else:
            cell += char
        index += 1
    cells.append(cell.strip())
    return cells


def _table_to_rst(rows: Sequence[str]) -> list[str]:
    parsed = [_split_row(row) for row in rows if not re.fullmatch(r"\s*\|[\s:|-]+\|?\s*", row)]
    out = [".. list-table::", "   :header-rows: 1", ""]
    for cells in parsed:
        for position, cell in enumerate(cells):
            out.append(f"   {'* -' if position == 0 else '  -'} {cell or '..'}")
    return out + [""]


def markdown_to_rst(lines: Sequence[str]) -> list[str]:
    """A Gymnasium-style docstring (``## Title``, pipe tables, fenced code) as reStructuredText."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        heading = re.match(r"^#{2,4} (.+)$", line)
        if heading:
            out += [f".. rubric:: {heading.group(1).strip()}", ""]
        elif line.startswith("```"):
            language = line[3:].strip() or "text"
            out += [f".. code-block:: {language}", ""]
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                out.append(f"   {lines[index]}" if lines[index].strip() else "")
                index += 1
            out.append("")
        elif line.startswith("|"):
            table = []
            while index < len(lines) and lines[index].startswith("|"):
                table.append(lines[index])
                index += 1
            if out and out[-1].strip():
                out.append("")
            out += _table_to_rst(table)
            continue
        else:
            out.append(line)
        index += 1
    return out


def free_titles(lines: Sequence[str]) -> list[str]:
    """The underlined section titles of a docstring that are not numpydoc's sections."""
    titles = []
    for line, following in zip(lines, list(lines[1:]) + [""]):
        title = line.strip()
        if (title and not line.startswith(" ") and re.fullmatch(r"([-=~^\"'])\1+", following.strip() or "x")
                and len(following.strip()) >= len(title) and title.lower() not in NAPOLEON_SECTIONS):
            titles.append(title)
    return titles


def literal_after_titles(lines: Sequence[str], titles: Sequence[str]) -> list[str]:
    """An indented block right under a free title (a usage block) becomes a literal block."""
    out = list(lines)
    for index in range(len(out) - 3, -1, -1):
        if out[index].strip() not in titles:
            continue
        if out[index + 2] == "" and out[index + 3].startswith(" "):
            out[index + 2:index + 3] = ["", "::", ""]
        elif out[index + 2].startswith(" "):
            out[index + 2:index + 2] = ["::", ""]
    return out


def process_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Before napoleon: Gymnasium-style docstrings to reStructuredText; free-form section titles become
    napoleon sections of their own (a rubric and their text), so a field list above them ends there."""
    if any(re.match(r"^## \S", line) for line in lines):
        lines[:] = markdown_to_rst(lines)
    known = list(app.config.napoleon_custom_sections or [])
    named = {(entry if isinstance(entry, str) else entry[0]).lower() for entry in known}
    titles = [title for title in free_titles(lines) if title.lower() not in named]
    if titles:
        app.config.napoleon_custom_sections = known + list(dict.fromkeys(titles))
        lines[:] = literal_after_titles(lines, titles)


# -- env pages ---------------------------------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    """Write only when the text changed, so Sphinx re-reads only what changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _literal(value: Any) -> str:
    return f"`{value!r}`"


def _arguments(cls: type, registered: dict[str, Any], factory: Any) -> list[str]:
    """Keyword arguments of ``gym.make(id, ...)``: from the signature, with this id's registered values."""
    signature = inspect.signature(cls.__init__)
    rows = ["| argument | default | this id |", "|---|---|---|"]
    for parameter in list(signature.parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = "required" if parameter.default is parameter.empty else _literal(parameter.default)
        mine = _literal(registered[parameter.name]) if parameter.name in registered else ""
        rows.append(f"| `{parameter.name}` | {default.replace('|', chr(92) + '|')} | {mine} |")
    unknown = sorted(set(registered) - set(signature.parameters))
    if unknown and factory is cls:
        raise ValueError(f"{cls.__name__} has no parameter(s) {unknown} that its id registers")
    return rows


def _episode(env_id: str, kwargs: dict[str, Any], mode: str) -> Any:
    """The last frame of a short seeded episode of random actions (masked to valid calls where the env masks)."""
    import gymnasium as gym

    env = gym.make(env_id, **kwargs, render_mode=mode)
    try:
        observation, info = env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(PICTURE_STEPS):
            try:  # the per-field masks of a tool env's Dict action
                action = env.action_space.sample(mask=info.get("action_mask"))
            except (TypeError, ValueError, AssertionError):  # a flat space with masks of another kind, or none
                action = env.action_space.sample()
            observation, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        return env.render()
    finally:
        env.close()


def _picture(entry: Any) -> tuple[list[str], type]:
    """The page's picture (or text render) of a small episode, and the class the id builds."""
    import gymnasium as gym

    kwargs = {**entry.small_kwargs}
    with contextlib.redirect_stdout(io.StringIO()):
        probe = gym.make(entry.id, **kwargs)
        cls, render_modes = type(probe.unwrapped), list(probe.unwrapped.metadata.get("render_modes", []))
        probe.close()
    shown = ", ".join(f"{key}={value!r}" for key, value in kwargs.items()) or "its registered arguments"
    caption = (f"`{entry.id}` with {shown} after {PICTURE_STEPS} random actions (seed 0; valid calls where the env "
               f"masks its actions): what `env.render()` returns.")
    if "rgb_array" in render_modes:
        import matplotlib.image

        frame = _episode(entry.id, kwargs, "rgb_array")
        name = f"{entry.id}.png"
        (GENERATED / "envs" / "ids").mkdir(parents=True, exist_ok=True)
        matplotlib.image.imsave(GENERATED / "envs" / "ids" / name, frame)
        return [f"```{{figure}} {name}", f":alt: an episode of {entry.id}", "", caption, "```"], cls
    if "ansi" in render_modes:
        text = _episode(entry.id, kwargs, "ansi")
        return [caption.replace("what", "the text that"), "", "```text", str(text).rstrip(), "```"], cls
    return ["(No render mode.)"], cls


def _docstring_sections(cls: type) -> tuple[str, str]:
    """The docstring's summary line and its body, with the roles in MyST's syntax."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    summary, _, body = doc.partition("\n")
    return roles_to_myst(summary.strip()), roles_to_myst(body.strip())


def _id_page(spec: Any, entry: Any) -> str:
    from causal_gym.envs.benchmark import load

    picture, cls = _picture(entry)
    factory = load(entry.entry_point)
    summary, body = _docstring_sections(cls)
    before, _, history = body.partition("## Version History")  # Gymnasium's order: the history comes last
    reproduces = ", ".join(entry.reproduces) if entry.reproduces else "none (a task of ours)"
    how = ""
    if entry.reproduces:
        how = (f" of {spec.paper}: `causal-gym reproduce {spec.name}` rebuilds them"
               + (" and `causal-gym report` from run stores" if spec.report else "")
               + f" (see [the results](../../../results/{spec.name}.md))")
    registered = ", ".join(f"`{key}={value!r}`" for key, value in entry.kwargs.items()) or "none"
    vector = (f"`gym.make_vec({entry.id!r}, num_envs, vectorization_mode=\"vector_entry_point\")` builds "
              f"{{class}}`{entry.vector_entry_point.replace(':', '.')}`" if entry.vector_entry_point
              else "`gym.make_vec(id, num_envs)` (Gymnasium's sync or async vector env)")
    seal = ("yes: `seal=` (or `CAUSAL_GYM_SEAL`) keys every instance stream; see [Integrity](../../../guides/"
            "integrity.md)" if entry.takes_seal else "no")
    lines = [
        f"# {entry.id}", "",
        f"```{{py:currentmodule}} {cls.__module__}", "```", "",
        entry.description, "",
        "| | |", "|---|---|",
        f'| Make | `gym.make("{entry.id}")` |',
        f"| Benchmark | [{spec.title}](../{spec.name}.md) |",
        f"| Environment | {{class}}`{cls.__module__}.{cls.__qualname__}` |",
        f"| Registered arguments | {registered} |",
        f"| Reproduces | {reproduces}{how} |",
        f"| Sealed splits | {seal} |",
        f"| Vectorized | {vector} |",
        f"| Render modes | {', '.join(cls.metadata.get('render_modes', [])) or 'none'} |",
        "",
        *picture, "",
        f"*{summary}*", "",
        before.strip(), "",
        "## Seeds and splits", "",
        "`env.reset(seed=s)` makes an episode a function of `s` alone (every draw comes from generators "
        "seeded by it); `env.reset(options={\"split\": ..., \"instance\": k})` plays instance `k` of a fixed "
        "split (the *Starting State* section above lists the splits, their sizes and the unbounded training "
        "stream). `causal-gym run` derives each episode's seeds from `--seed`, the id, the instance and the "
        "repeat, so a run is replayed exactly.", "",
        "## Keyword arguments and their defaults", "",
        f"Read from the signature of {{class}}`{cls.__module__}.{cls.__qualname__}`; the last column is what "
        f"`{entry.id}` registers.", "",
        *_arguments(cls, dict(entry.kwargs), factory), "",
        *(["## Version History", "", history.strip(), ""] if history else []),
    ]
    return "\n".join(lines)


def _benchmark_page(spec: Any) -> str:
    rows = ["| id | what | reproduces |", "|---|---|---|"]
    for entry in spec.envs:
        rows.append(f"| [{entry.id}](ids/{entry.id}.md) | {entry.description.replace('|', '/')} | "
                    f"{', '.join(entry.reproduces) or '-'} |")
    toctree = ["```{toctree}", ":hidden:", "", *(f"ids/{entry.id}" for entry in spec.envs), "```"]
    return "\n".join([
        f"# {spec.title}: every id", "",
        f"From {spec.paper}. " if spec.paper else "",
        f"Overview: [{spec.title}](../../benchmarks/{spec.name}.md).", "",
        *rows, "", *toctree, "",
    ])


def generate_env_pages() -> list[str]:
    """Write the benchmark and id pages; returns the ids written."""
    from causal_gym.envs.benchmark import benchmarks

    written = []
    target = GENERATED / "envs"
    for spec in benchmarks():
        _write(target / f"{spec.name}.md", _benchmark_page(spec))
        for entry in spec.envs:
            _write(target / "ids" / f"{entry.id}.md", _id_page(spec, entry))
            written.append(entry.id)
    for stale in (target / "ids").glob("*.md"):  # an id no longer registered loses its page
        if stale.stem not in written:
            stale.unlink()
    return written


# -- API and CLI pages -------------------------------------------------------------------------------

def public_modules() -> Iterator[str]:
    """Every module of causal_gym whose name has no part starting with ``_``."""
    import causal_gym

    yield "causal_gym"
    for module in pkgutil.walk_packages(causal_gym.__path__, "causal_gym."):
        if not any(part.startswith("_") for part in module.name.split(".")):
            yield module.name


def _api_group(name: str, benchmark_packages: set[str]) -> str:
    """The API page a module goes on: its top-level package, or its benchmark's folder."""
    parts = name.split(".")
    if len(parts) >= 3 and parts[1] == "envs" and parts[2] in benchmark_packages:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def generate_api_pages() -> None:
    import causal_gym.envs

    benchmark_packages = {module.name for module in pkgutil.iter_modules(causal_gym.envs.__path__) if module.ispkg}
    groups: dict[str, list[str]] = {}
    for name in public_modules():
        groups.setdefault(_api_group(name, benchmark_packages), []).append(name)
    for group, names in groups.items():
        lines = [group, "=" * len(group), ""]
        for name in names:
            lines += [f".. automodule:: {name}", ""] if name == group else [
                name, "-" * len(name), "", f".. automodule:: {name}", ""]
        _write(GENERATED / "api" / f"{group}.rst", "\n".join(lines))


def _help_text(argv: Sequence[str]) -> str:
    from causal_gym import cli

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
        cli.main([*argv, "--help"])
    return buffer.getvalue()


def generate_cli_page() -> None:
    import argparse

    from causal_gym.cli import build_parser
    from causal_gym.envs.benchmark import benchmarks

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    paths = [[]] + [[name] for name in commands.choices]
    paths += [["reproduce", spec.name] for spec in benchmarks() if spec.reproduce]
    lines = ["# The `causal-gym` command", "",
             "Every level answers `--help`; this page is what each prints (generated when the docs are built).", ""]
    for path in paths:
        title = " ".join(["causal-gym", *path])
        lines += [f"## `{title}`", "", "```text", _help_text(path).rstrip(), "```", ""]
    _write(GENERATED / "cli.md", "\n".join(lines))


def generate(app: Any) -> None:
    """``builder-inited``: write every generated page before Sphinx reads the sources."""
    os.environ.setdefault("COLUMNS", "100")  # argparse wraps --help to the terminal's width
    logging.getLogger("causal_gym").setLevel(logging.WARNING)  # no per-instance progress lines in the build log
    generate_env_pages()
    generate_api_pages()
    generate_cli_page()


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    app.connect("autodoc-process-docstring", process_docstring, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
