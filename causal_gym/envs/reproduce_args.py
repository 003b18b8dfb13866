"""The one command-line grammar of ``causal-gym reproduce <benchmark>``.

Every benchmark's ``reproduce`` entry point builds its parser with :func:`reproduce_parser` and
:func:`add_common_reproduce_args`, so the flags that mean the same thing are spelled the same and
default the same everywhere:

- ``--quick`` (the default) or ``--full``: a smoke-test scale that finishes in minutes, or the
  paper's grid;
- ``--instances N``: how many instances of each group (family, setting, block) to play; each
  benchmark says what its group is;
- ``--workers W``: processes at once (default: every core of the machine);
- ``--quiet``: no progress output;
- ``--out DIR``: where the run's files go (the printed tables as ``tables.txt``; benchmarks that
  keep run stores keep them there too);
- ``--json FILE``: the rows and tables, machine-readable.

A benchmark adds its own options beside these (``--families``, ``--methods``, ...). Old spellings
stay accepted as deprecated aliases (:func:`add_deprecated_alias`) that say what replaces them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from causal_gym._docstrings import plain_text
from causal_gym._files import write_atomic

__all__ = ["TABLES_FILE", "add_common_reproduce_args", "add_deprecated_alias", "default_workers", "reproduce_parser",
           "tables_to"]

TABLES_FILE = "tables.txt"
"""The name under ``--out`` of the printed tables."""


def default_workers() -> int:
    """``--workers``' default: the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def reproduce_parser(prog: str | None, doc: str | None, epilog: str | None = None) -> argparse.ArgumentParser:
    """A parser for one benchmark's ``reproduce``: its module docstring as the plain-text description."""
    return argparse.ArgumentParser(prog=prog, description=plain_text(doc or ""),
                                   epilog=None if epilog is None else plain_text(epilog),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_common_reproduce_args(parser: argparse.ArgumentParser, *, quick: str, full: str, instances: str,
                              out: str = "", out_default: str | None = None) -> None:
    """Add the shared flags (see the module docstring) to ``parser``.

    After parsing, ``args.quick`` is True unless ``--full`` was given.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The benchmark's parser.
    quick, full : str
        What ``--quick`` and ``--full`` run for this benchmark.
    instances : str
        What ``--instances`` counts for this benchmark, with its quick and full defaults.
    out : str
        What the benchmark writes under ``--out`` beside the tables (empty: the tables only).
    out_default : str or None
        ``--out``'s default (None: write no files unless asked).
    """
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--quick", dest="quick", action="store_true", help=f"{quick} (the default)")
    scale.add_argument("--full", dest="quick", action="store_false", help=full)
    parser.set_defaults(quick=True)
    parser.add_argument("--instances", type=_count, metavar="N", help=instances)
    workers = default_workers()
    parser.add_argument("--workers", type=_count, default=workers, metavar="W",
                        help=f"processes at once (default: every core, {workers} here); the results do not depend on it")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    where = f"the printed tables as {TABLES_FILE}" + (f"; {out}" if out else "")
    parser.add_argument("--out", metavar="DIR", default=out_default,
                        help=f"write the run's files to DIR: {where}"
                        + (f" (default {out_default})" if out_default else " (default: none)"))
    parser.add_argument("--json", metavar="FILE", help="write the rows and tables to FILE as JSON")


class _DeprecatedAlias(argparse.Action):
    """Stores like the new flag and says, once per use, which flag replaces the old one."""

    def __init__(self, option_strings: list[str], dest: str, replacement: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog}: {option_string} is deprecated; use {self.replacement}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept ``old`` as a deprecated spelling of the count flag ``new`` (same destination, a note on stderr)."""
    parser.add_argument(old, dest=new.lstrip("-").replace("-", "_"), type=_count, metavar="N", action=_DeprecatedAlias,
                        replacement=new, help=f"deprecated spelling of {new}")


class _Tee:
    """A text stream that writes to two."""

    def __init__(self, first: IO[str], second: IO[str]) -> None:
        self.first, self.second = first, second

    def write(self, text: str) -> int:
        self.second.write(text)
        return self.first.write(text)

    def flush(self) -> None:
        self.first.flush()
        self.second.flush()


@contextlib.contextmanager
def tables_to(out: str | os.PathLike[str] | None) -> Iterator[None]:
    """While open, everything printed also goes to ``out/tables.txt``, written when it closes (nothing when
    ``out`` is None)."""
    if out is None:
        yield
        return
    copy = io.StringIO()
    try:
        with contextlib.redirect_stdout(_Tee(sys.stdout, copy)):
            yield
    finally:  # an interrupted run keeps the tables it printed
        Path(out).mkdir(parents=True, exist_ok=True)
        write_atomic(Path(out) / TABLES_FILE, copy.getvalue())  # replaces a link at that name, never follows it
