"""Group-seeded resets for GRPO (issue 32): every generation of a group plays the row's one episode,
other rows play other episodes, and bad rows fail before any rollout.

GRPO repeats each dataset row for the G generations of its group (TRL's ``RepeatSampler``); here
each row is reset G times, and the same scripted calls are played on every copy: the reference for
"one instance" is that every result text and the final scores agree, and for "other episodes" that
rows of different instances get other results (repeats of one instance get their own episode seed).
"""

from __future__ import annotations

import json

import pytest

from causal_gym.integrations.core import EpisodeRef, ToolSession, check_rows, episode_refs

HEURESIS = ("Heuresis-lg-v0", {"d": 4, "n": 200})
SCRIPT = [("ci_test", {"x": "X0", "y": "X1", "cond": [], "test": "fisherz"}),
          ("ci_test", {"x": "X2", "y": "X3", "cond": ["X0"], "test": "fisherz"}),
          ("set_edge", {"x": "X0", "y": "X1", "relation": "none"}), ("submit", {})]
GENERATIONS = 4


def play(row):
    """The result texts and final scores of the script on a fresh reset of ``row``."""
    session = ToolSession(EpisodeRef.from_row(row))
    try:
        texts = [session.first_message] + [session.call(name, args) for name, args in SCRIPT]
        return texts, session.scores
    finally:
        session.close()


def test_every_generation_of_a_group_plays_the_rows_episode_and_groups_differ():
    env_id, kwargs = HEURESIS
    # two instances, and two repeats of one instance (same data, other episode seed)
    rows = [ref.to_row() for ref in episode_refs(env_id, 2, seed=3, repeats=2, env_kwargs=kwargs)]
    rows = [json.loads(json.dumps(row)) for row in rows]  # as a dataset stores them
    groups = [[play(row) for _ in range(GENERATIONS)] for row in rows]
    for group in groups:
        assert all(generation == group[0] for generation in group)
    firsts = [group[0][0] for group in groups]
    assert firsts[0][1:3] != firsts[2][1:3]  # another instance: other data, other test results
    # a repeat of the instance is another episode seed (the instance's data are fixed, so this script's
    # results may agree; what the env draws from the seed differs)
    assert len({EpisodeRef.from_row(row).env_seed for row in rows}) == len(rows)


def test_an_openenv_session_resets_with_a_trl_style_row():
    pytest.importorskip("openenv.core")
    from causal_gym.integrations.openenv import ToolSessionEnvironment

    env_id, kwargs = HEURESIS
    row = {"prompt": [{"role": "user", "content": "..."}], **EpisodeRef(env_id, 1, seed=2, env_kwargs=kwargs).to_row()}
    environment = ToolSessionEnvironment(env_id, kwargs)
    try:
        assert environment.reset(**row).text == play(row)[0][0]
        with pytest.raises(ValueError, match="this server plays"):
            environment.reset(**{**row, "env_kwargs": json.dumps({"d": 5, "n": 200})})
    finally:
        environment.close()


def test_check_rows_names_the_first_bad_row_before_any_rollout():
    env_id, kwargs = HEURESIS
    good = [ref.to_row() for ref in episode_refs(env_id, 3, env_kwargs=kwargs)]
    assert [ref.instance for ref in check_rows(good)] == [0, 1, 2]
    with pytest.raises(ValueError, match=r"row 1: .*env_id"):
        check_rows([good[0], {"instance": 0}])
    with pytest.raises(ValueError, match=r"row 1 \(Heuresis-lg-v0/test/999/0\).*out of range"):
        check_rows([good[0], {**good[0], "instance": 999}])
    with pytest.raises(ValueError, match=r"row 0 \(No-such-v0"):
        check_rows([{**good[0], "env_id": "No-such-v0"}])
    with pytest.raises(ValueError, match=r"row 0 .*not a tool env"):
        check_rows([{**good[0], "env_id": "CausalArena-synthetic-v0", "env_kwargs": "{}"}])
    with pytest.raises(ValueError, match=r"row 1 .*env kwargs \{'d': -2"):
        check_rows([good[0], {**good[0], "env_kwargs": json.dumps({"d": -2})}])
