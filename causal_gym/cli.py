"""The ``causal-gym`` command: list the environments, run an agent on them, report runs, reproduce the papers' tables.

Usage::

    causal-gym list
    causal-gym run --env ID[,ID...] --agent NAME --episodes N --out DIR [--split test] [--repeats R]
                   [--backend local|ray] [--workers W] [--model M --base-url URL] [--agent-kwargs JSON]
                   [--seal-file F | --open]
    causal-gym report DIR [DIR...] [--out OUTDIR] [--dev N] [--full-menu] [--workers W] [--seal-file F]
    causal-gym seal new FILE | causal-gym seal fingerprint FILE
    causal-gym reproduce BENCHMARK [--quick | --full] [--instances N] [--workers W] [--quiet] [--out DIR]
                                   [--json FILE] [options of the benchmark]
    causal-gym serve --env ID [--env-kwargs JSON] [--host H] [--port P] [--max-sessions N] [--session-timeout S]
                     [--env-threads N] [--tool-timeout S] [--seal-file F --out DIR --episodes N | --open]

Each subcommand has an ``_add_<name>`` function that declares its arguments and a handler that
runs it; handlers import their machinery lazily so ``causal-gym list`` answers instantly. Every
level answers ``--help`` (exit status 0) in plain text; the ``reproduce`` subcommands share one
grammar (:mod:`causal_gym.envs.reproduce_args`).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from causal_gym._docstrings import plain_text

__all__ = ["main"]

def _list(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from causal_gym.envs.registration import env_descriptions

    descriptions = env_descriptions()
    width = max(len(env_id) for env_id in descriptions)
    for env_id, description in descriptions.items():
        print(f"{env_id:<{width}}  {description}")
    return 0


def _reproducible() -> dict[str, str]:
    """Benchmark name -> its reproduce entry point, for the benchmarks that have one."""
    from causal_gym.envs.benchmark import benchmarks

    return {spec.name: spec.reproduce for spec in benchmarks() if spec.reproduce}


def _reproduce(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from causal_gym.envs.benchmark import Reproduce, benchmarks, load
    from causal_gym.eval.runner import run_plan

    spec = next(spec for spec in benchmarks() if spec.name == args.benchmark)
    entry: Reproduce = load(_reproducible()[args.benchmark])
    extra: dict[str, Any] = {"runner": run_plan} if spec.reproduce_takes_runner else {}
    entry(list(rest), prog=f"causal-gym reproduce {args.benchmark}", **extra)
    return 0


def _env_ids(text: str) -> tuple[str, ...]:
    """Comma-separated ids; an item with ``*``, ``?`` or ``[`` is a pattern over causal_gym's ids."""
    from causal_gym.envs.registration import env_descriptions

    ids: list[str] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        if any(c in item for c in "*?["):
            matched = fnmatch.filter(env_descriptions(), item)
            if not matched:
                raise ValueError(f"--env pattern {item!r} matches no causal_gym id (see `causal-gym list`)")
            ids.extend(matched)
        else:
            ids.append(item)
    if not ids:
        raise ValueError("--env needs at least one env id")
    return tuple(dict.fromkeys(ids))


def _json_object(text: str, flag: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{flag} must be a JSON object, e.g. '{{\"temperature\": 0}}': {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object, got {text!r}")
    return value


def _seal(args: argparse.Namespace) -> Any:
    """The seal of ``--seal-file`` / ``--open``, or None (the environment variable decides)."""
    from causal_gym.seal import OPEN, Seal

    if getattr(args, "open", False):
        if args.seal_file:
            raise ValueError("--seal-file and --open exclude each other")
        return OPEN
    return Seal.from_file(args.seal_file) if args.seal_file else None


_LLM_FLAGS = ("model", "base_url", "tool_mode", "tool_choice", "max_tokens", "prompt_level", "stated_target",
              "temperature", "context_window", "max_result_chars", "episode_time_limit")
"""``causal-gym run`` flags that are keyword arguments of the LLM agent (``--agent llm``)."""


def _run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from causal_gym.eval.runner import RunConfig, run

    agent_kwargs = _json_object(args.agent_kwargs, "--agent-kwargs")
    for name in _LLM_FLAGS:
        value = getattr(args, name)
        if value is not None:
            if name in agent_kwargs:
                raise ValueError(f"{name} is given both as --{name.replace('_', '-')} and in --agent-kwargs")
            agent_kwargs[name] = value
    config = RunConfig(
        env_ids=_env_ids(args.env),
        agent=args.agent,
        agent_kwargs=agent_kwargs,
        instances=tuple(range(args.first_instance, args.first_instance + args.episodes)),
        split=args.split,
        repeats=args.repeats,
        seed=args.seed,
        env_kwargs=_json_object(args.env_kwargs, "--env-kwargs"),
        max_steps=args.max_steps,
        backend=args.backend,
        workers=args.workers,
        ray_address=args.ray_address,
        seal=_seal(args),
        concurrency=args.concurrency,
        time_limit=args.time_limit,
        agent_timeout=args.agent_timeout,
        tool_timeout=args.tool_timeout,
        scorer_timeout=args.scorer_timeout,
    )
    summary = run(config, args.out, progress=not args.quiet)
    print(f"run store: {summary.out_dir} ({summary.played} played now, {summary.skipped} already done)")
    print(summary.table())
    if not summary.complete:
        failed = summary.counts.get("failed", 0)
        print(f"{failed} episode(s) failed (see their 'error' and 'traceback' in episodes.jsonl); "
              "run the same command again to retry them", file=sys.stderr)
        return 1
    return 0


def _report(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from pathlib import Path

    from causal_gym._files import OutputFolder
    from causal_gym.eval.report import load_runs, report_tables, write_tables
    from causal_gym.seal import resolve_seal
    from causal_gym.tables import format_table

    frame = load_runs(*args.dirs)
    # opened before the tables are built, so a refused folder costs no work; never through a link in a run directory
    with OutputFolder(Path(args.out) if args.out is not None else Path(args.dirs[0]) / "report",
                      within=args.dirs) as out:
        tables = report_tables(frame, dev=args.dev, full_menu=args.full_menu, workers=args.workers,
                               progress=not args.quiet, seal=resolve_seal(_seal(args)))
        if not tables:
            print("no played episodes in " + ", ".join(args.dirs))
        for table in tables:
            print(f"\n{table.title}\n{format_table(table.frame)}")
            print("".join(f"  {line}\n" for line in table.legend_lines()), end="")
        written = write_tables(tables, out, frame)
    print(f"\nwrote {len(written)} files to {out.path} (report.md, CSV tables, PNG figures)")
    return 0


def _add_list(commands: argparse._SubParsersAction) -> None:
    commands.add_parser(
        "list", help="registered environment ids with one-line descriptions",
        description="Print every registered environment id (one per line, benchmark by benchmark) with a one-line "
        "description. gym.make(ID) builds any of them once causal_gym is imported.",
    ).set_defaults(handler=_list)


class _RunHelp(argparse.HelpFormatter):
    """Lists the registered agents under ``--agent``, importing the registry only when help is shown."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if "--agent" not in action.option_strings:
            return super()._get_help_string(action)
        from causal_gym.agents.registry import agents

        return f"{action.help}: " + "; ".join(f"{name} = {entry.description}" for name, entry in agents().items())


def _add_run(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run",
        help="play an agent on environments into a resumable run store (rerun the same command to resume)",
        description="Play every (env, instance, repeat) episode not yet in --out and print a summary table. "
        "Each episode becomes one line of OUT/episodes.jsonl; failed episodes are retried by the next run.",
        formatter_class=_RunHelp,
    )
    parser.add_argument("--env", required=True, help="env ids, comma-separated; patterns like 'Heuresis-*-guided-v0'")
    parser.add_argument("--agent", required=True, help="a registered agent or 'package.module:Factory'")
    parser.add_argument("--episodes", type=int, required=True, help="instances per env: 0 .. N-1 (from --first-instance)")
    parser.add_argument("--first-instance", type=int, default=0, help="index of the first instance (default 0)")
    parser.add_argument("--out", required=True, help="run store directory (created; resumed if it holds this run)")
    parser.add_argument("--split", default="test", help="split of the instances (default test)")
    parser.add_argument("--repeats", type=int, default=1, help="episodes per instance (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of the run (default 0)")
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--workers", type=int, default=1, help="episodes at once (default 1: in this process)")
    parser.add_argument("--ray-address", help="address of a Ray cluster (--backend ray); default: a local Ray")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="episodes at once in threads of this process, for agents that wait on a server (LLM); "
                        "with --workers 1")
    llm = parser.add_argument_group("LLM agent (--agent llm; each flag is the agent keyword of the same name)")
    llm.add_argument("--model", help="model name as the server knows it")
    llm.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    llm.add_argument("--tool-mode", choices=("auto", "native", "json"),
                     help="native tool calls, JSON in text, or auto: probe the server once (default auto)")
    llm.add_argument("--tool-choice", choices=("auto", "required", "none"), help="sent with the tools (default auto)")
    llm.add_argument("--max-tokens", type=int, help="output tokens per reply (default 4096)")
    llm.add_argument("--prompt-level", type=int, help="the benchmark's prompt level (Heuresis 0..3; default 0)")
    llm.add_argument("--stated-target", choices=("none", "cpdag", "dag"), help="target stated in the prompt")
    llm.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    llm.add_argument("--context-window", type=int,
                     help="the model's context in tokens; old turns are trimmed to fit (default: learnt from errors)")
    llm.add_argument("--max-result-chars", type=int, help="cut longer tool results (for small contexts)")
    llm.add_argument("--episode-time-limit", type=float, help="wall seconds per episode, then submit")
    parser.add_argument("--agent-kwargs", default="{}", help="JSON object of agent keyword arguments")
    parser.add_argument("--env-kwargs", default="{}", help='JSON object of gym.make arguments, e.g. \'{"d": 5}\'')
    parser.add_argument("--max-steps", type=int, default=100_000, help="safety stop per episode")
    limits = parser.add_argument_group(
        "time limits (seconds; each expiry is a final 'timeout' line naming the limit, never reward 0)")
    limits.add_argument("--time-limit", type=float, help="whole episode (its process is killed)")
    limits.add_argument("--agent-timeout", type=float, help="one agent call (the LLM agent: one model call)")
    limits.add_argument("--tool-timeout", type=float, help="one env step")
    limits.add_argument("--scorer-timeout", type=float, help="the scoring at the episode's end")
    _add_seal_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=_run)


def _add_seal_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seal-file", help="play sealed splits keyed by the secret in this file (causal-gym seal "
                        "new FILE makes one); default: $CAUSAL_GYM_SEAL if set, else the open splits")
    parser.add_argument("--open", action="store_true", help="the open (published) splits even if $CAUSAL_GYM_SEAL "
                        "is set")


def _add_report(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report",
        help="rebuild the papers' tables and figures from run stores (prints them; writes CSV, Markdown, PNG)",
        description="Read the run stores, print every table their episodes support (Heuresis Tables 3, 4, 6, 8, "
        "11, 13; CausaLab Table 7 and trajectories; tool calls) and write them with the figures to --out. Heuresis "
        "references (best chosen algorithms on --dev development instances per family, oracle, floors) are "
        "computed once and cached on disk.",
    )
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="run store directories (causal-gym run --out)")
    parser.add_argument("--out", help="output directory (default: DIR/report of the first DIR)")
    parser.add_argument("--dev", type=int, default=None,
                        help="Heuresis dev instances per family for choosing BCA_g and BCA_phi (default: the published "
                        "choice on 100 dev instances, for open runs at d=10, n=600; other shapes need --dev)")
    parser.add_argument("--full-menu", action="store_true", help="choose the BCA from the full menu (with RESIT)")
    parser.add_argument("--workers", type=int, default=1, help="processes for the Heuresis references (default 1)")
    _add_seal_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=_report)


def _serve(args: argparse.Namespace, rest: Sequence[str]) -> int:
    import contextlib

    import uvicorn

    from causal_gym.eval.store import RunStore
    from causal_gym.integrations.openenv import make_app

    store = None if args.out is None else RunStore(args.out)
    with contextlib.nullcontext() if store is None else store.lock():
        app = make_app(args.env, _json_object(args.env_kwargs, "--env-kwargs"), prompt_level=args.prompt_level,
                       max_sessions=args.max_sessions, tool_timeout=args.tool_timeout,
                       session_timeout=args.session_timeout, env_threads=args.env_threads, seal=_seal(args),
                       store=store, episodes=args.episodes, repeats=args.repeats, split=args.split, seed=args.seed)
        sealed = f"; a sealed evaluation of {args.episodes} x {args.repeats} episodes into {args.out}" if store else ""
        print(f"causal-gym serve: {args.env} on ws://{args.host}:{args.port}/ws, up to {args.max_sessions} "
              f"sessions{sealed}", file=sys.stderr, flush=True)
        # the keepalive drops a client that stops answering pings within session_timeout (module docstring)
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                    ws_ping_interval=args.session_timeout / 2, ws_ping_timeout=args.session_timeout / 2)
    return 0


def _add_serve(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "serve", help="serve a tool env over OpenEnv's HTTP/WebSocket protocol (needs the openenv extra)",
        description="One episode per WebSocket session (reset with the episode row: seed, instance, split, "
        "repeat; under a seal the server chooses), one tool call per step as OpenEnv's CallToolAction; see "
        "causal_gym.integrations.openenv.",
    )
    parser.add_argument("--env", required=True, help="a registered tool env id")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object of gym.make arguments")
    parser.add_argument("--prompt-level", type=int, default=0, help="as for the LLM agent (default 0)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--max-sessions", type=int, default=256,
                        help="concurrent WebSocket sessions; a client past them is refused with OpenEnv's "
                        "CAPACITY_REACHED (default 256)")
    parser.add_argument("--session-timeout", type=float, default=60.0,
                        help="seconds after which a session whose client has gone is closed: a WebSocket that stops "
                        "answering pings, an HTTP-made session without requests (default 60)")
    parser.add_argument("--env-threads", type=int,
                        help="env resets and steps run at once, the others wait their turn, so the server keeps "
                        "answering new clients under load (default: the CPU count, at most 4)")
    parser.add_argument("--tool-timeout", type=float,
                        help="seconds one step may take; past it the episode ends unscored (default: no budget)")
    _add_seal_options(parser)
    sealed = parser.add_argument_group(
        "sealed evaluation (under a seal the server chooses each episode, plays it once, records its scores in "
        "--out and returns none to the client)")
    sealed.add_argument("--out", help="run store directory of the sealed evaluation (causal-gym report reads it)")
    sealed.add_argument("--episodes", type=int, help="instances 0 .. N-1 of --split")
    sealed.add_argument("--repeats", type=int, default=1, help="episodes per instance (default 1)")
    sealed.add_argument("--split", default="test", help="split of the instances (default test)")
    sealed.add_argument("--seed", type=int, default=0, help="base seed, as causal-gym run --seed (default 0)")
    parser.set_defaults(handler=_serve)


def _seal_command(args: argparse.Namespace, rest: Sequence[str]) -> int:
    import os

    from causal_gym.seal import Seal, new_secret

    if args.action == "new":
        try:
            descriptor = os.open(args.file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise ValueError(f"{args.file} exists; a seal file is never overwritten (its runs need it)") from None
        with os.fdopen(descriptor, "w") as handle:
            handle.write(new_secret() + "\n")
    print(Seal.from_file(args.file).fingerprint)
    return 0


def _add_seal(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "seal", help="make a seal file (a fresh 256-bit secret, mode 600) or print a seal file's fingerprint",
        description="new FILE writes a fresh secret to FILE (refusing to overwrite) and prints its fingerprint; "
        "fingerprint FILE prints the fingerprint run stores record for runs sealed with FILE.",
    )
    parser.add_argument("action", choices=("new", "fingerprint"))
    parser.add_argument("file", metavar="FILE")
    parser.set_defaults(handler=_seal_command)


def _add_reproduce(commands: argparse._SubParsersAction) -> None:
    from causal_gym.envs.benchmark import benchmarks

    parser = commands.add_parser(
        "reproduce", help="rebuild a paper's tables next to its numbers",
        description="Rebuild a benchmark's published tables and print ours next to the paper's. Every benchmark "
        "takes --quick (the default: minutes) or --full (the paper's grid), --instances N, --workers W, --quiet, "
        "--out DIR and --json FILE; `causal-gym reproduce BENCHMARK --help` lists its own options.",
    )
    names = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for spec in benchmarks():
        if spec.reproduce:
            # The benchmark's own parser reads the rest (its --help included), so this level adds no help.
            names.add_parser(spec.name, help=f"the {spec.title} tables (options: causal-gym reproduce {spec.name} --help)",
                             add_help=False).set_defaults(handler=_reproduce, passes_rest=True)


SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_list, _add_run, _add_report, _add_reproduce, _add_seal, _add_serve
)
"""Each adds one subcommand and sets its ``handler(args, rest) -> exit status``."""


def build_parser() -> argparse.ArgumentParser:
    """The ``causal-gym`` argument parser with every subcommand (parsing runs nothing)."""
    parser = argparse.ArgumentParser(prog="causal-gym", description=plain_text((__doc__ or "").split("\n\n")[0]))
    commands = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``causal-gym`` console script; returns the exit status."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "passes_rest", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from causal_gym.harness.rollout import RolloutInterrupted

    try:
        return args.handler(args, rest)
    except (RolloutInterrupted, KeyboardInterrupt):
        print(f"causal-gym {args.command}: interrupted; the episodes in flight were saved as interrupted -- run the "
              "same command again to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `causal-gym list | head`
        return 0
    except ConnectionError as exc:  # e.g. a Ray cluster that cannot be reached: the message says what to do
        parser.exit(2, f"causal-gym {args.command}: error: {exc}\n")
    except (ValueError, ModuleNotFoundError) as exc:
        if args.command not in ("run", "report", "reproduce", "seal", "serve"):
            raise
        parser.exit(2, f"causal-gym {args.command}: error: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
