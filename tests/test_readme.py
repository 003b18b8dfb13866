"""The snippets of the README and of the docs pages run as written, and the counts they state are true.

Each page's Python blocks execute in order in one namespace (one per page); a line
``expression  # <literal>`` (or ``# <literal>: words``) must evaluate to that literal; inline
``gym.make(...)`` calls build; ``causal-gym`` command lines parse with the real command-line parser
(a ``reproduce`` line's options with its benchmark's own parser); the counts stated in words are
recomputed from the code. The README also keeps to a front door's length and names the machine and
load of every timing it states. (The guides' scripts run in ``tests/test_docs.py``.)
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

import causal_gym
from causal_gym import cli

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PAGES = {path.relative_to(ROOT).as_posix(): path.read_text()
         for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
         if not {"generated", "_build"} & set(path.relative_to(ROOT).parts)}
"""README.md and the docs' Markdown sources (not the pages the build generates)."""
TEXT = "\n".join(PAGES.values())
NUMBER_WORDS = {"Six": 6, "Eight": 8, "Nine": 9, "Ten": 10, "Eleven": 11, "Twelve": 12}


def _blocks(language: str, text: str = TEXT) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def _literal_comment(line: str) -> tuple[str, object] | None:
    """``("expr", value)`` for ``expr  # value`` or ``expr  # value: words`` where value is a literal."""
    code, sep, comment = line.partition("  #")
    if not sep or not code.strip() or "=" in code.split("(")[0]:
        return None
    head = comment.strip().split(": ")[0]
    try:
        return code.strip(), ast.literal_eval(head)
    except (ValueError, SyntaxError):
        return None


@contextlib.contextmanager
def _readme_server(block: str):
    """Run the README's own ``causal-gym serve`` line on a free port for a block that connects to it.

    Yields the block with the README's port swapped for the free one (or unchanged when it needs no
    server), so the snippet is checked against the real command, not a server the test builds itself.
    """
    match = re.search(r"127\.0\.0\.1:(\d+)\"", block)
    if "GenericEnvClient" not in block or match is None:
        yield block
        return
    (line,) = [line for line in _command_lines()
               if line.startswith("causal-gym serve ") and f"--port {match.group(1)}" in line]
    argv = shlex.split(line)[1:]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv[argv.index("--port") + 1] = str(port)
    server = subprocess.Popen([sys.executable, "-m", "causal_gym.cli", *argv],
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, f"{line!r} did not start"
            time.sleep(0.5)
        yield block.replace(f"127.0.0.1:{match.group(1)}", f"127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_python_blocks_run_in_order_and_their_stated_values_hold():
    checked, pages = 0, 0
    for name, text in PAGES.items():
        namespace: dict[str, object] = {}
        blocks = _blocks("python", text)
        pages += bool(blocks)
        for block in blocks:
            if "LOCAL_BASE_URL" in block:  # played by a model: tests/test_llm_routes.py runs it against one (slow)
                continue
            with _readme_server(block) as runnable:
                exec(compile(runnable, name, "exec"), namespace)  # noqa: S102 -- the pages are ours
            for line in block.splitlines():
                stated = _literal_comment(line)
                if stated is not None:
                    code, value = stated
                    assert eval(code, namespace) == value, (name, line)  # noqa: S307
                    checked += 1
    assert pages >= 4 and len(_blocks("python", README)) >= 3
    assert checked >= 6  # d-separation, MEC size, I-MEC size, discovery.methods(), the README's quick starts


def test_inline_gym_make_calls_build(tmp_path):
    calls = sorted(set(re.findall(r"`(gym\.make\([^`]*\))`", TEXT)))
    assert len(calls) >= 3
    seal_path = tmp_path / "leaderboard.seal"
    seal_path.write_text(causal_gym.seal.new_secret())
    for call in calls:
        env = eval(call, {"gym": gym, "causal_gym": causal_gym, "path": seal_path})  # noqa: S307
        env.close()


def _command_lines(text: str = TEXT) -> list[str]:
    lines = []
    for block in _blocks("bash", text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                part = part.strip().removesuffix(" &")  # a server started in the background
                if part.startswith("causal-gym ") and "..." not in part:
                    lines.append(part)
    return lines


def test_causal_gym_command_lines_parse():
    from causal_gym.envs.benchmark import benchmarks

    reproduce_parsers = {spec.name: importlib.import_module(spec.reproduce.split(":")[0]).build_parser()
                         for spec in benchmarks() if spec.reproduce}
    parser = cli.build_parser()
    lines = _command_lines()
    assert len(lines) >= 8
    assert [line for line in _command_lines(README) if line.startswith("causal-gym reproduce")]
    for line in lines:
        argv = shlex.split(line)[1:]
        args, rest = parser.parse_known_args(argv)
        assert not rest or getattr(args, "passes_rest", False), (line, rest)
        if args.command == "run":
            cli._env_ids(args.env)  # every pattern names registered ids
        if args.command == "reproduce":
            reproduce_parsers[args.benchmark].parse_args(rest)  # its own options, spelled as they are now


def test_counts_stated_in_words_match_the_code():
    from causal_gym.envs.causalab import SETTINGS

    ids = sorted(gym.registry)
    stated_ids = re.findall(r"\n(\w+) ids[.:,] `(\w+)-", TEXT)
    assert {benchmark for _, benchmark in stated_ids} == {"Heuresis", "CausaLab", "CausalArena"}
    for word, benchmark in stated_ids:
        prefix = f"{benchmark}-"
        mine = [i for i in ids if i.startswith(prefix) and "planner" not in i]
        assert NUMBER_WORDS[word] == len(mine), (benchmark, mine)
    stated = re.search(r"`causal_gym\.envs\.causalab\.SETTINGS` \((\d+),", TEXT)
    assert stated and int(stated.group(1)) == len(SETTINGS)


def _variable_claims(text: str) -> list[tuple[int, int, int | None]]:
    """``(low, high, padded)`` for every "L-H ... variables[, padded to P]" in ``text``."""
    pattern = r"(\d+)-(\d+) (?:[a-z]+ ){0,2}variables(?:, padded to (\d+))?"
    return [(int(lo), int(hi), int(pad) if pad else None) for lo, hi, pad in re.findall(pattern, text)]


def test_list_descriptions_and_readme_state_the_catalogues_variable_ranges():
    """``causal-gym list`` and the README say what the CausalArena catalogues hold (not a stale copy)."""
    from causal_gym.envs.arena.catalogue import REAL_NETWORKS, default_width, instance_list
    from causal_gym.envs.arena.spec import SPEC

    for source in ("formula", "semantic", "real"):
        instances = instance_list(source, None, "obs")
        sizes = [instance.size for instance in instances]
        truth = (min(sizes), max(sizes), default_width(source, "obs"))
        descriptions = [entry.description for entry in SPEC.envs if entry.kwargs.get("source") == source]
        assert len(descriptions) == 2
        for description in descriptions:
            assert _variable_claims(description) == [truth], (description, truth)
            count = re.search(r"(\d+) (?:formula|semantic|bnlearn)", description)
            expected = len(REAL_NETWORKS) if source == "real" else len(instances)
            assert count and int(count.group(1)) == expected, description
        if source != "real":
            stated = re.search(rf"{source}[\w-]* \((\d+)\s+scenarios, (\d+)-(\d+) variables", TEXT,
                               flags=re.I | re.S)
            assert stated, source
            assert tuple(int(x) for x in stated.groups()) == (len(instances), *truth[:2]), source


def test_the_readme_is_a_front_door_whose_counts_and_links_hold():
    from causal_gym.envs.benchmark import benchmarks
    from causal_gym.envs.registration import env_descriptions

    assert len(README.splitlines()) <= 250
    # The project's own ids: tests in the same worker register benchmarks of their own (the toy benchmark,
    # the conformance kit's fakes), and a user's plug-ins would too; the README counts ours.
    own = [spec for spec in benchmarks() if all(entry.entry_point.startswith("causal_gym.") for entry in spec.envs)]
    ids = [entry.id for spec in own for entry in spec.envs]
    assert set(ids) <= set(env_descriptions())
    assert f"all {len(ids)} ids" in README
    rows = re.findall(r"^\| \*\*(\w+)\*\* \| (\d+) ids: ", README, flags=re.M)
    prefixes = {"Heuresis": ("Heuresis-", "HeuresisRepair-"), "CausaLab": ("CausaLab-",),
                "CausalArena": ("CausalArena-",), "InterventionDesign": ("InterventionDesign-",)}
    assert [name for name, _ in rows] == list(prefixes)  # the four benchmarks, each with a row
    for name, count in rows:
        assert int(count) == sum(env_id.startswith(prefixes[name]) for env_id in ids), name
    assert sum(int(count) for _, count in rows) == len(ids)
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_every_timing_in_the_readme_names_its_machine():
    """A wall time in the README says on what machine and load it was measured."""
    for sentence in re.split(r"(?<=[.;])\s", README.replace("\n", " ")):
        if re.search(r"\b\d+(\.\d+)?\s*(s|min)\b.*(wall|cold cache)", sentence):
            assert re.search(r"cores?|CPU", sentence) and re.search(r"load|quiet|idle", sentence), sentence
