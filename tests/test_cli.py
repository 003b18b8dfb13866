"""The ``causal-gym`` command: listing ids and reproducing the Heuresis difficulty table."""

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
    assert main(["reproduce", "heuresis", "--difficulty-only", "--test", "1", "--families", "lg", "--workers", "1"]) == 0
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
