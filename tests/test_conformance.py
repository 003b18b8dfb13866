"""One conformance suite over every registered id, as scikit-learn's ``check_estimator`` runs over
every estimator: what DESIGN.md promises of every env (the rules CONTRIBUTING.md lists), checked on each id built with its spec's
``small_kwargs``, and every benchmark spec checked complete (:func:`causal_gym.envs.benchmark.check_spec`)
with the flags it declares (``takes_seal``, ``takes_seed``) true of the code they describe.

A new benchmark's ids join the suite through their spec alone. Its ids are those ``causal-gym list``
prints (a test compares the two).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence

import causal_gym  # noqa: F401 -- registers the ids
from causal_gym import _workers
from causal_gym.envs.benchmark import benchmarks, check_spec, load
from causal_gym.envs.registration import env_descriptions
from causal_gym.harness.contracts import ChecksResetOptions, ParsesToolCalls
from causal_gym.harness.toolbox import ToolCall, ToolError

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = {entry.id: entry for spec in benchmarks() for entry in spec.envs}
IDS = sorted(env_descriptions())
STEPS = 3
"""Steps each determinism and process check plays."""

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def make(env_id: str, **extra) -> gym.Env:
    """``env_id`` as its spec's small instance; an id whose optional packages are missing is skipped."""
    try:
        return gym.make(env_id, **{**ENTRIES[env_id].small_kwargs, **extra})
    except ImportError as exc:
        pytest.skip(f"{env_id} needs a package this installation lacks: {exc}")


def _children() -> set[int]:
    """The live child processes of this process (Linux /proc), less those shared by every env:
    multiprocessing's resource tracker (one per interpreter, started by the first process pool) and
    the worker of time-limited calls."""
    me, found = str(os.getpid()), set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z" and b"multiprocessing.resource_tracker" not in command:
            found.add(int(pid))
    return found - _workers.time_limited_worker_pids()


def _play(env: gym.Env, seed: int) -> list:
    """Reset with ``seed`` and play ``STEPS`` actions sampled from a space seeded alike; the
    observations, each checked against the observation space."""
    observation, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    seen = [observation]
    for _ in range(STEPS):
        assert env.observation_space.contains(observation), f"{observation!r} is outside the observation space"
        observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        seen.append(observation)
        if terminated or truncated:
            break
    assert env.observation_space.contains(observation)
    return seen


def test_the_suite_covers_every_id_that_causal_gym_list_prints():
    listing = subprocess.run([sys.executable, "-c", "from causal_gym.cli import main; main(['list'])"],
                             capture_output=True, text=True, check=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    listed = [line.split()[0] for line in listing.splitlines() if line.strip()]
    assert len(IDS) == len(listed) and set(IDS) == set(listed)
    assert len(IDS) >= 40


# -- the specs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", benchmarks(), ids=lambda spec: spec.name)
def test_every_spec_is_complete_and_its_flags_are_true(spec):
    check_spec(spec)

    def parameters(reference):
        return inspect.signature(load(reference)).parameters

    for entry in spec.envs:
        assert entry.takes_seal == ("seal" in parameters(entry.entry_point)), entry.id
    for name, agent in spec.agents.items():
        assert agent.takes_seed == ("seed" in parameters(agent.path)), name
    if spec.reproduce is not None:
        assert spec.reproduce_takes_runner == ("runner" in parameters(spec.reproduce))


# -- every id -------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_checker(env_id):
    env = make(env_id)
    with warnings.catch_warnings():
        # unbounded readings and data are deliberate (the checker warns about infinite Box bounds)
        warnings.filterwarnings("ignore", message=".*infinity.*")
        check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_checker(env_id):
    """SB3's checker on the env as SB3 plays it: through make_sb3_env (masked discrete actions, flat
    observations) where the env needs masks, else the env itself (actions SB3 takes as they are)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from causal_gym.envs.wrappers import make_sb3_env

    raw = make(env_id)
    wrapped = isinstance(raw.action_space, (gym.spaces.Dict, gym.spaces.Discrete, gym.spaces.MultiDiscrete))
    if wrapped:
        raw.close()
        env = make_sb3_env(env_id, **ENTRIES[env_id].small_kwargs)
        allowed = (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete, gym.spaces.Discrete)
        flat = getattr(env.observation_space, "spaces", {"": env.observation_space})  # a Dict, or one Box
        assert all(isinstance(s, allowed) and len(s.shape) <= 1 for s in flat.values())
    else:
        env = raw.unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning (an unsupported space, a bad bound) fails the check, but for
        warnings.filterwarnings("ignore", message=".*infinity.*")  # unbounded readings (deliberate)
        if not wrapped:  # and the data tables of raw envs (a custom policy's input)
            warnings.filterwarnings("ignore", message=".*unconventional shape.*")
        sb3_check_env(env, warn=True)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_same_seed_same_observations_inside_the_space(env_id):
    first, second = make(env_id), make(env_id)
    a, b = _play(first, seed=5), _play(second, seed=5)
    assert len(a) == len(b) and all(data_equivalence(x, y) for x, y in zip(a, b))
    first.close()
    second.close()


@pytest.mark.parametrize("env_id", IDS)
def test_bad_reset_options_are_refused_up_front(env_id):
    env = make(env_id)
    with pytest.raises(ValueError):
        env.reset(seed=0, options={"no_such_option": 1})
    with pytest.raises(ValueError):
        env.reset(seed=0, options={"instance": -1})
    if isinstance(env.unwrapped, ChecksResetOptions):
        with pytest.raises(ValueError):
            env.unwrapped.check_reset_options({"no_such_option": 1})
        env.unwrapped.check_reset_options({"instance": 0})
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_a_closed_env_leaves_no_child_process(env_id):
    before = _children()
    env = make(env_id)
    _play(env, seed=1)
    env.close()
    # a killed worker takes a moment to die: wait for it (up to a bound far above that moment)
    deadline = time.monotonic() + 30
    while not _children() <= before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() <= before


@pytest.mark.parametrize("env_id", IDS)
def test_typed_actions_round_trip_through_tool_calls(env_id):
    env = make(env_id)
    base = env.unwrapped
    if not isinstance(base, ParsesToolCalls):
        env.close()
        pytest.skip(f"{env_id} is not a tool env")
    env.reset(seed=2)
    toolbox = base.toolbox
    env.action_space.seed(2)
    played = set()
    for _ in range(60):
        call = toolbox.decode(env.action_space.sample())
        if not isinstance(call, ToolCall):
            continue
        played.add(call.tool)
        # as an LLM writes it: JSON text, variables by name
        parsed = base.parse_tool_call(call.tool, json.dumps(call.to_dict()["arguments"]))
        assert not isinstance(parsed, ToolError), (call, parsed)
        assert toolbox.decode(parsed) == call
        assert data_equivalence(parsed, toolbox.encode(call))
    assert played, "no sampled action was a valid call"
    # a malformed call is an error result, not an exception
    assert isinstance(base.parse_tool_call("no_such_tool", "{}"), ToolError)
    assert isinstance(base.parse_tool_call(call.tool, "{not json"), ToolError)
    observation, _, terminated, truncated, _ = env.step(base.parse_tool_call("no_such_tool", "{}"))
    assert str(observation["last_result"]).startswith("error") and not (terminated or truncated)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_renders_as_text_and_runs_under_make_vec(env_id):
    env = make(env_id, render_mode="ansi")
    assert "ansi" in env.metadata["render_modes"]
    env.reset(seed=0)
    assert isinstance(env.render(), str)
    env.close()
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **ENTRIES[env_id].small_kwargs)
    observations, _ = envs.reset(seed=0)
    assert observations in envs.observation_space
    envs.action_space.seed(0)
    observations, *_ = envs.step(envs.action_space.sample())
    assert observations in envs.observation_space
    envs.close()


BATCHED = sorted(i for i in IDS if ENTRIES[i].vector_entry_point)


@pytest.mark.parametrize("env_id", BATCHED)
def test_batched_env_is_a_deterministic_vector_env_over_the_same_spaces(env_id):
    """Ids with a ``vector_entry_point``: the batch's spaces are the single env's, batched; observations
    stay inside them through an autoreset; the same seed and actions give the same trajectory."""
    def play() -> list:
        envs = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", **ENTRIES[env_id].small_kwargs)
        single = make(env_id)
        assert envs.single_observation_space == single.observation_space
        assert envs.single_action_space == single.action_space
        single.close()
        observations, _ = envs.reset(seed=5)
        envs.action_space.seed(5)
        seen = [observations]
        for _ in range(12):  # longer than the small instances' episodes: autoresets included
            assert observations in envs.observation_space
            observations, reward, *_ = envs.step(envs.action_space.sample())
            seen += [observations, reward]
        envs.close()
        return seen

    first, second = play(), play()
    assert all(data_equivalence(a, b) for a, b in zip(first, second))
