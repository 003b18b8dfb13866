"""The ``causal-gym`` command: list the environments and reproduce the papers' tables.

    causal-gym list
    causal-gym reproduce heuresis [--quick] [--test N] [--dev N] [--families lg,wild] ...

Subcommands import their machinery lazily so ``causal-gym list`` answers instantly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]

REPRODUCIBLE = ("heuresis",)


def _list() -> int:
    from causal_gym.envs.registration import ENV_DESCRIPTIONS

    width = max(len(env_id) for env_id in ENV_DESCRIPTIONS)
    for env_id, description in ENV_DESCRIPTIONS.items():
        print(f"{env_id:<{width}}  {description}")
    return 0


def _reproduce(benchmark: str, rest: Sequence[str]) -> int:
    if benchmark == "heuresis":
        from causal_gym.envs.heuresis.reproduce import main as reproduce_heuresis

        reproduce_heuresis(list(rest), prog="causal-gym reproduce heuresis")
        return 0
    raise AssertionError(benchmark)  # argparse restricts the choices


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``causal-gym`` console script; returns the exit status."""
    parser = argparse.ArgumentParser(prog="causal-gym", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="registered environment ids with one-line descriptions")
    reproduce = commands.add_parser(
        "reproduce",
        help="rebuild a paper's tables next to its numbers (options after the benchmark name; --help there)",
        add_help=False,
    )
    reproduce.add_argument("benchmark", choices=REPRODUCIBLE)
    args, rest = parser.parse_known_args(argv)
    if args.command == "list":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return _list()
    return _reproduce(args.benchmark, rest)


if __name__ == "__main__":
    sys.exit(main())
