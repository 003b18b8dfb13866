"""The commands and code of a markdown page's section, read from the page, so a test runs what the docs say.

A section is everything under a heading up to the next heading of the same or a higher level.
``bash`` blocks are read as commands: a line ending in ``\\`` continues on the next, ``#`` comments
and blank lines are dropped. :func:`command` picks the one command that starts with a program, so a
test can run each documented route verbatim without retyping it (pointing it at the test's servers
is the caller's: an explicit ``replace`` of addresses, nothing else).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["code_blocks", "command", "commands", "section"]

_HEADING = re.compile(r"^(#{1,6}) +(.+?) *$")
_FENCE = re.compile(r"^```(\w*) *$")


def section(path: Path, heading: str) -> str:
    """The text under the heading whose title is ``heading`` (fenced code is not searched for headings)."""
    lines = Path(path).read_text().splitlines()
    start = level = None
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match is None:
            continue
        if start is None and match.group(2) == heading:
            start, level = index + 1, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:index])
    if start is None:
        raise ValueError(f"{path} has no heading {heading!r}")
    return "\n".join(lines[start:])


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of ``language`` in ``text``, in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    inside = False
    for line in text.splitlines():
        match = _FENCE.match(line.strip())
        if match and not inside:
            inside, current = True, [] if match.group(1) == language else None
        elif match:
            if current is not None:
                blocks.append("\n".join(current))
            inside, current = False, None
        elif current is not None:
            current.append(line)
    return blocks


def commands(path: Path, heading: str) -> list[str]:
    """Every shell command of the section's ``bash`` blocks, continuation lines joined, comments dropped."""
    out: list[str] = []
    for block in code_blocks(section(path, heading), "bash"):
        pending = ""
        for raw in block.splitlines():
            line = raw.strip()
            if not pending and (not line or line.startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            out.append((pending + line).strip())
            pending = ""
    return out


def command(path: Path, heading: str, program: str, replace: Mapping[str, str] | None = None) -> str:
    """The one command of the section that starts with ``program`` (a word or words), with the
    ``replace`` substitutions made (addresses of the test's servers).

    Raises
    ------
    ValueError
        If no command or more than one starts with ``program``, or a substitution finds nothing to replace.
    """
    found = [c for c in commands(path, heading) if c == program or c.startswith(program + " ")]
    if len(found) != 1:
        raise ValueError(f"{len(found)} commands of {path} § {heading!r} start with {program!r}: {found}")
    text = found[0]
    for old, new in (replace or {}).items():
        if old not in text:
            raise ValueError(f"{old!r} is not in the documented command {text!r}")
        text = text.replace(old, new)
    return text
