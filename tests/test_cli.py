"""The ``causal-gym`` command: listing ids, one grammar of help and flags, reproducing the Heuresis difficulty table."""

import argparse
import importlib
import re

import gymnasium as gym
import numpy as np
import pytest

from causal_gym.cli import main
from causal_gym.envs.heuresis.instances import make_instance
from causal_gym.envs.registration import env_descriptions

ENV_DESCRIPTIONS = env_descriptions()
from causal_gym.graphs import skeleton


def test_list_prints_every_registered_id(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    registered = env_descriptions()  # now: a test may have registered the toy benchmark in this process
    assert [line.split()[0] for line in lines] == list(registered)
    assert set(ENV_DESCRIPTIONS) <= set(registered)
    for env_id in registered:
        assert env_id in gym.registry


def test_unknown_arguments_are_rejected():
    with pytest.raises(SystemExit):
        main(["list", "--bogus"])
    with pytest.raises(SystemExit):
        main(["reproduce", "nonexistent"])


def test_reproduce_heuresis_difficulty_counts_wrong_deletions(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAUSAL_GYM_CACHE", str(tmp_path))
    assert main(["reproduce", "heuresis", "--difficulty-only", "--instances", "1", "--families", "lg", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("lg "))
    # Independent count: PC-KCI deletions of pairs adjacent in the true DAG, via discovery directly.
    from causal_gym import discovery

    instance = make_instance("lg", "test", 0)
    result = discovery.run("pc", instance.data, test="kci")
    true_adjacent = skeleton(instance.hidden.dag).astype(bool)
    wrong = sum(bool(true_adjacent[r.x, r.y]) for r in result.deletion_log)
    assert float(row.split()[2]) == pytest.approx(wrong, abs=0.005)
    assert "| 2.4" in row  # the paper's number printed beside ours
    assert np.isfinite(float(row.split()[2]))


def test_heuresis_tour_example_runs_and_scores_on_the_truth(tmp_path, monkeypatch, capsys):
    import importlib.util
    from pathlib import Path

    from causal_gym.metrics import adjacency_scores

    monkeypatch.setenv("CAUSAL_GYM_CACHE", str(tmp_path))
    path = Path(__file__).resolve().parents[1] / "examples" / "heuresis_tour.py"
    spec = importlib.util.spec_from_file_location("heuresis_tour", path)
    tour = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tour)
    scores = tour.main(["--family", "lg", "--d", "5", "--n", "200"])
    out = capsys.readouterr().out
    assert "error" in out  # the malformed call came back as a message
    # The tour submits the complete graph with X0 -> X1: its adjacency F1 follows from the true edge count.
    instance = make_instance("lg", "test", 0, d=5, n=200)
    complete = np.ones((5, 5), dtype=np.int8) - np.eye(5, dtype=np.int8)
    assert scores["adjacency_f1"] == pytest.approx(adjacency_scores(instance.hidden.dag, complete).f1)


def test_run_prints_a_summary_and_resumes(tmp_path, monkeypatch, capsys):
    import json
    import zlib

    from causal_gym.agents import RandomAgent
    from causal_gym.eval import rollout

    monkeypatch.setenv("CAUSAL_GYM_CACHE", str(tmp_path / "cache"))
    kwargs = {"d": 4, "n": 100, "budgets": {"turns": 5}}
    argv = ["run", "--env", "Heuresis-lg-v0", "--agent", "random", "--episodes", "2", "--seed", "7",
            "--out", str(tmp_path / "run"), "--env-kwargs", json.dumps(kwargs), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    header = next(line.replace("adj F1", "adj_F1").split() for line in out.splitlines() if line.startswith("env "))
    row = dict(zip(header, next(line.split() for line in out.splitlines() if line.startswith("Heuresis-lg-v0"))))
    # Independent: the same episodes played directly, with the seeds derived as the runner documents.
    rewards, f1 = [], []
    for instance in (0, 1):
        words = np.random.SeedSequence(7, spawn_key=(zlib.crc32(b"Heuresis-lg-v0"), instance, 0)).generate_state(2)
        record = rollout(gym.make("Heuresis-lg-v0", **kwargs), RandomAgent(seed=int(words[1])), seed=int(words[0]),
                         options={"split": "test", "instance": instance})
        rewards.append(record.total_reward)
        f1.append(record.final_info["scores"]["adjacency_f1"])
    assert row["episodes"] == "2" and sum(int(row[s]) for s in ("finished", "truncated", "rescued")) == 2
    assert row["timeout"] == row["failed"] == "0"
    assert float(row["reward"]) == pytest.approx(np.mean(rewards), abs=5e-4)
    assert float(row["adj_F1"]) == pytest.approx(np.mean(f1), abs=5e-4)
    assert main(argv) == 0
    assert "0 played now, 2 already done" in capsys.readouterr().out


def test_run_rejects_bad_arguments_with_a_message(tmp_path, capsys):
    base = ["run", "--agent", "random", "--episodes", "1", "--out", str(tmp_path / "run")]
    for extra, message in [
        (["--env", "Nope-*"], "matches no causal_gym id"),
        (["--env", "Heuresis-lg-v0", "--agent-kwargs", "[1]"], "JSON object"),
        (["--env", "Heuresis-lg-v0", "--model", "m"], "does not accept"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(base + extra)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# -- one grammar: --help at every level, plain text, shared reproduce flags -----------------------

def _subcommand_paths() -> list[list[str]]:
    """Every level of the command: the top, each subcommand, each benchmark under ``reproduce``."""
    from causal_gym.cli import build_parser
    from causal_gym.envs.benchmark import benchmarks

    top = build_parser()
    (commands,) = [action for action in top._actions if isinstance(action, argparse._SubParsersAction)]
    paths = [[]] + [[name] for name in commands.choices]
    paths += [["reproduce", spec.name] for spec in benchmarks() if spec.reproduce]
    return paths


def test_every_level_answers_help_in_plain_text(capsys):
    paths = _subcommand_paths()
    assert ["reproduce"] in paths and ["list"] in paths and len(paths) >= 10
    for path in paths:
        with pytest.raises(SystemExit) as exit_info:
            main([*path, "--help"])
        out = capsys.readouterr().out
        assert exit_info.value.code == 0, path
        assert out.startswith("usage: causal-gym"), path
        assert not re.search(r":[a-z]+:`|``", out), (path, re.findall(r".*(?::[a-z]+:`|``).*", out)[:3])
        if path:  # every subcommand says what it does in a sentence, not just its usage line
            description = out.split("\n\n")[1]
            assert not description.startswith(("positional", "options")) and len(description) > 40, path


def test_reproduce_help_exits_zero_in_a_subprocess():
    """What a user types: ``causal-gym reproduce --help`` (it used to exit 2 for the missing benchmark)."""
    import os
    import subprocess
    import sys

    for argv in (["reproduce", "--help"], ["reproduce", "heuresis", "--help"], ["list", "--help"]):
        done = subprocess.run([sys.executable, "-m", "causal_gym.cli", *argv], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=120)
        assert done.returncode == 0, (argv, done.stderr)
    assert "heuresis" in done.stdout or "registered environment" in done.stdout


SHARED_FLAGS = ("--quick", "--full", "--instances", "--workers", "--quiet", "--out", "--json")


def _reproduce_parsers():
    from causal_gym.envs.benchmark import benchmarks, load

    for spec in benchmarks():
        if spec.reproduce:
            module = importlib.import_module(spec.reproduce.split(":")[0])
            assert load(spec.reproduce) is module.main
            yield spec.name, module.build_parser(f"causal-gym reproduce {spec.name}")


def test_reproduce_subcommands_share_flag_names_and_defaults():
    from causal_gym.envs.reproduce_args import default_workers

    seen = []
    for name, parser in _reproduce_parsers():
        flags = {option for action in parser._actions for option in action.option_strings}
        assert set(SHARED_FLAGS) <= flags, (name, set(SHARED_FLAGS) - flags)
        args = parser.parse_args([])
        assert args.quick is True and args.instances is None and args.workers == default_workers(), name
        assert args.quiet is False and args.json is None, name
        assert parser.parse_args(["--full"]).quick is False
        assert parser.parse_args(["--instances", "3"]).instances == 3
        with pytest.raises(SystemExit):
            parser.parse_args(["--quick", "--full"])
        with pytest.raises(SystemExit):
            parser.parse_args(["--instances", "0"])
        seen.append(name)
    assert sorted(seen) == ["arena", "causalab", "heuresis"]


def test_old_count_flags_still_work_and_say_what_replaces_them(capsys):
    parsers = dict(_reproduce_parsers())
    for name, old in (("heuresis", "--test"), ("arena", "--per-block")):
        assert parsers[name].parse_args([old, "5"]).instances == 5
        assert f"{old} is deprecated; use --instances" in capsys.readouterr().err


def test_reproduce_causalab_writes_its_files_under_out(tmp_path, capsys):
    import json

    import pandas as pd

    out = tmp_path / "out"
    argv = ["reproduce", "causalab", "--settings", "3node", "--instances", "2", "--workers", "1", "--quiet",
            "--out", str(out), "--json", str(tmp_path / "rows.json")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (out / "tables.txt").read_text() == printed  # what was printed, nothing else
    episodes = pd.read_csv(out / "episodes.csv")
    assert len(episodes) == 2 * 3 and set(episodes["setting"]) == {"3node"}
    assert len(json.loads((tmp_path / "rows.json").read_text())["episodes"]) == 6
    assert len(pd.read_csv(out / "table7.csv")) == 3  # one row per baseline


def test_reproduce_refuses_bad_values_with_a_message(capsys):
    for argv, message in ((["reproduce", "causalab", "--settings", "9node"], "unknown CausaLab setting"),
                          (["reproduce", "causalab", "--settings", "3node", "--instances", "51"], "instances must be")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err, argv
