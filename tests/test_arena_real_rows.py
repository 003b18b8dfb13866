"""``reproduce arena --real``: the real tables (Sachs, the bnlearn networks) as rows of the reproduction.

The reference for each printed cell is the episode played directly, outside the runner: the
submit-mode env of the real source, reset on the unit, answered by :class:`MethodAgent`, its reward
(directed F1, scored by the env as tested in ``test_arena_env.py``) and SHD.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("cdt")  # the Sachs table ships in cdt's wheel, the networks in pgmpy's
pytest.importorskip("pgmpy")

from causal_gym.agents import task_spec  # noqa: E402
from causal_gym.envs.arena.baselines import MethodAgent  # noqa: E402
from causal_gym.envs.arena.catalogue import instance_list  # noqa: E402
from causal_gym.envs.arena.reproduce import main, plan_runs  # noqa: E402

pytestmark = pytest.mark.usefixtures("isolated_cache")


def test_the_real_plan_has_every_real_unit_and_only_obs_cells():
    plans = plan_runs(methods=("pc", "gies_fast"), dims=(), replicates=2, grounded=("real",),
                      grounded_splits=("obs", "obs+int"))
    assert list(plans) == ["real"]
    config = plans["real"]
    assert config["env_ids"] == ("CausalArena-real-v0",)
    assert config["instances"] == tuple(range(len(instance_list("real", None, "obs")))) == tuple(range(6))
    assert [v["name"] for v in config["variants"]] == ["obs/r0/pc", "obs/r0/gies_fast", "obs/r1/pc", "obs/r1/gies_fast"]


def test_reproduce_real_prints_each_unit_as_its_episode_scores_it(tmp_path, capsys):
    from causal_gym.eval.runner import run_plan

    output = main(["--quick", "--real", "--methods", "pc", "--n-obs", "300", "--out", str(tmp_path), "--quiet"],
                  runner=run_plan)
    printed = capsys.readouterr().out
    assert "Real tables, obs: directed F1 / SHD" in printed
    cells = output["real"]["pc"]
    units = instance_list("real", None, "obs")
    assert [u for u in cells if u != "mean"] == [u.unit for u in units]
    assert cells["mean"]["n_scored"] == cells["mean"]["n_units"] == 6 and not output["by_d"]
    env = gym.make("CausalArena-real-v0", split="obs", replicate=0, n_obs=300, accept_cycles=True)
    f1s = []
    for k, unit in enumerate(units):
        obs, info = env.reset(seed=0, options={"instance": k})
        agent = MethodAgent("pc")
        agent.reset(task_spec(env))
        answer = agent.act(obs, info)
        _, reward, _, _, final = env.step(answer)
        assert final["status"] == "ok" and answer[np.asarray(obs["variables"]) == 0].sum() == 0
        assert cells[unit.unit]["f1"] == pytest.approx(reward)
        assert cells[unit.unit]["shd"] == pytest.approx(final["scores"]["shd"])
        f1s.append(reward)
    assert cells["mean"]["f1"] == pytest.approx(np.mean(f1s)) and 0 < np.mean(f1s) < 1
