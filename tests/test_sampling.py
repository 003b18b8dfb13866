"""Sampling valid actions, the Gymnasium way: ``env.action_space.sample(mask=info["action_mask"])``
draws only calls the env accepts, on every tool env (issue 30, item 2).

"Accepted" means the env does not answer with an error (a result starting with ``"error: "``:
a malformed or invalid call, a refused budget, a rejected submission); a call that ends the
episode is fine, then the next episode starts. The masks read public state only: the swapped-truth
replays of ``test_integrity.py``, ``test_heuresis_env.py`` and ``test_causalab_env.py`` play
masked samples and compare every info, masks included.
"""

from __future__ import annotations

import importlib
import itertools
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence

import causal_gym  # noqa: F401  (registers the ids)
from causal_gym.envs.arena.tool_env import CausalArenaToolEnv
from causal_gym.envs.causalab.env import CausaLabEnv
from causal_gym.envs.heuresis.env import HeuresisEnv
from causal_gym.harness import ToolError
from causal_gym.harness.data_tools import CODE_EXAMPLES
from causal_gym.harness.tool_env import ERROR_PREFIX, LAST_TURN, OPEN, ToolEnv
from causal_gym.harness.toolbox import (
    ActionField,
    Tool,
    ToolActionSpace,
    Toolbox,
    ToolCall,
)

pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)

N_ACTIONS = 1000
TINY = {"d": 4, "n": 60}
CHEAP_MENU = ("pc", "ges", "gies", "random_regress", "ges_fast", "gies_fast", "xges")  # each ~1 s or less at d=19
CAUSALAB_IDS = sorted(i for i, s in gym.registry.items() if s.entry_point == "causal_gym.envs.causalab.env:CausaLabEnv")

# One id per code path of each tool env class: Heuresis unguided / guided (the twelve ids differ
# only in the data family), every CausaLab id (cheap), CausalArena without padding (synthetic,
# starting from the complete graph) and with padding slots (formula, starting empty). Heuresis and
# the arena play one instance each, so each menu entry runs once on the cold cache.
PLAYED = {
    "Heuresis-lg-v0": (TINY, {"instance": 0}),
    "Heuresis-wild-guided-v0": (TINY, {"instance": 1}),
    "CausalArena-synthetic-tools-v0": ({"n_obs": 80, "menu": CHEAP_MENU, "start": "complete"}, {"instance": 0}),
    "CausalArena-formula-tools-v0": ({"n_obs": 80, "menu": CHEAP_MENU}, {"instance": 0}),
    **{env_id: ({}, None) for env_id in CAUSALAB_IDS},
}
CYCLES_MET = {"Heuresis-lg-v0", "Heuresis-wild-guided-v0", "CausalArena-synthetic-tools-v0"}
"""Where patient episodes build working graphs with directed cycles (an empty start over 19
variables seldom gets one)."""


def _entry_class(entry_point: str) -> object:
    module, _, attribute = entry_point.partition(":")
    return getattr(importlib.import_module(module), attribute)


def test_every_registered_tool_env_class_is_played():
    """A new tool env class (or a registered id of one) fails here until the sampling test plays it."""
    classes = {}
    for env_id, spec in gym.registry.items():
        if not str(spec.entry_point).startswith("causal_gym."):
            continue
        target = _entry_class(spec.entry_point)
        if isinstance(target, type) and issubclass(target, ToolEnv):
            classes.setdefault(target, []).append(env_id)
    assert set(classes) == {HeuresisEnv, CausaLabEnv, CausalArenaToolEnv}
    assert len(classes[HeuresisEnv]) == 12 and len(classes[CausalArenaToolEnv]) == 4
    assert sorted(classes[CausaLabEnv]) == CAUSALAB_IDS and len(CAUSALAB_IDS) >= 10
    assert {cls for cls, ids in classes.items() if set(ids) & set(PLAYED)} == set(classes)


def play_masked(env: gym.Env, n_actions: int, seed: int, options: dict | None) -> tuple[list, Counter]:
    """Step ``n_actions`` masked samples, starting a new episode whenever one ends.

    Every third episode is *patient*: it only edits the working graph while the phase is open, so
    the graph gathers directed cycles and the episode runs out of turns (the last turn).
    ``run_code`` is masked out (each call starts a sandboxed interpreter; its example programs are
    checked by ``test_run_code_examples_are_accepted``). Returns the rejected calls and counts of
    the states met.
    """
    base = env.unwrapped
    skip = {"run_code"}
    env.action_space.seed(seed)
    _, info = env.reset(seed=seed, options=options)
    rejected, seen, episode = [], Counter(), 0
    for k in range(n_actions):
        mask = dict(info["action_mask"])
        patient = episode % 3 == 2 and info["phase"] == OPEN
        keep = [name not in skip and (not patient or name == "set_edge") for name in base.toolbox.names]
        if any(np.asarray(mask["tool"]) * keep):
            mask["tool"] = np.asarray(mask["tool"]) * np.array(keep, dtype=np.int8)
        seen.update(f"offered {t}" for t, allowed in zip(base.toolbox.names, mask["tool"]) if allowed)
        seen["cyclic"] += isinstance(mask.get("edges"), str)
        seen["last_turn"] += info["phase"] == LAST_TURN
        action = env.action_space.sample(mask=mask)
        assert env.action_space.contains(action)
        _, _, terminated, truncated, info = env.step(action)
        last = base.record()[-1]
        seen[last.tool] += 1
        if last.result_text.startswith(ERROR_PREFIX):
            rejected.append((k, last.tool, last.arguments, last.result_text[:200]))
        if terminated or truncated:
            episode += 1
            _, info = env.reset(seed=seed + episode, options=options)
    seen["episodes"] = episode
    return rejected, seen


@pytest.mark.parametrize("env_id", sorted(PLAYED))
def test_a_thousand_masked_samples_are_all_accepted(env_id):
    kwargs, options = PLAYED[env_id]
    env = gym.make(env_id, **kwargs)
    rejected, seen = play_masked(env, N_ACTIONS, seed=7, options=options)
    assert rejected == []
    offered = [t for t in env.unwrapped.toolbox.names if seen[f"offered {t}"] >= 50]
    assert len(offered) >= 4 and all(seen[t] >= 5 for t in offered), seen  # every tool offered was drawn
    assert seen["episodes"] >= 10
    if env_id.startswith(("Heuresis", "CausalArena")):
        # the states a per-field mask cannot handle alone were met: last turns, and cyclic working
        # graphs answered with the mask's acyclic edge list
        assert seen["last_turn"] >= 3 and (seen["cyclic"] >= 3 or env_id not in CYCLES_MET), seen


@pytest.mark.parametrize("env_id", ["Heuresis-lg-v0", "CausalArena-formula-tools-v0"])
def test_run_code_examples_are_accepted(env_id):
    """Masked sampling sends ``run_code`` one of these programs: each runs in the real sandbox."""
    kwargs, options = PLAYED[env_id]
    env = gym.make(env_id, **kwargs)
    _, info = env.reset(seed=0, options=options)
    mask = dict(info["action_mask"])
    mask["tool"] = (np.array(env.unwrapped.toolbox.names) == "run_code").astype(np.int8)
    env.action_space.seed(0)
    sent = set()
    while len(sent) < len(CODE_EXAMPLES):
        action = env.action_space.sample(mask=mask)
        sent.add(action["code"])
        *_, info = env.step(action)
        result = env.unwrapped.record()[-1]
        assert result.ok and not result.result_text.startswith(ERROR_PREFIX), result.result_text
    assert sent == set(CODE_EXAMPLES)


def test_plain_sampling_stays_gymnasium_and_masked_sampling_is_seeded():
    env = gym.make("Heuresis-lg-v0", **TINY)
    assert isinstance(env.action_space, ToolActionSpace) and isinstance(env.action_space, spaces.Dict)
    _, info = env.reset(seed=0, options={"instance": 0})
    draws = []
    for seed in (3, 3, 4):
        env.action_space.seed(seed)
        draws.append([env.action_space.sample(mask=info["action_mask"]) for _ in range(40)])
    assert data_equivalence(draws[0], draws[1], exact=True)
    assert not data_equivalence(draws[0], draws[2], exact=True)
    # without a mask, sample() is Gymnasium's Dict.sample: any element, so some are invalid
    env.action_space.seed(0)
    plain = [env.unwrapped.toolbox.decode(env.action_space.sample()) for _ in range(200)]
    assert any(isinstance(call, ToolError) for call in plain)


# ---------------------------------------------------------------------------------------------
# ToolActionSpace against brute force
# ---------------------------------------------------------------------------------------------

D = 4
FIELDS = (
    ActionField("x", "node", "x"),
    ActionField("y", "node", "y"),
    ActionField("cond", "node_set", "set"),
    ActionField("mode", "choice", "mode", ("a", "b", "c")),
    ActionField("note", "text", "note", examples=("first", "second")),
    ActionField("free", "text", "free"),
    ActionField("level", "number", "level", bounds=(-2.0, 3.0)),
)
TOOLS = (
    Tool("pair", "", ("x", "y", "cond", "mode"), ("x", "y", "mode")),
    Tool("one", "", ("x", "cond", "note"), ("x", "note")),
    Tool("speak", "", ("free",), ("free",)),  # a required text without examples: never drawn without a mask
    Tool("dial", "", ("level", "note"), ("level",)),
)


def _valid_calls(mask: dict) -> set:
    """Every call the masks allow that the toolbox accepts, enumerated (numbers left out)."""
    toolbox = Toolbox(TOOLS, FIELDS, d=D)
    allowed = set()
    subsets = [c for k in range(D + 1) for c in itertools.combinations(range(D), k)]
    for k, tool in enumerate(TOOLS):
        if mask["tool"] is not None and not mask["tool"][k]:
            continue
        options = []
        for name in tool.fields:
            f, m = toolbox.fields[name], mask[name]
            if f.kind == "node":
                options.append([v for v in range(D) if m is None or m[v]])
            elif f.kind == "node_set":
                options.append([s for s in subsets if m is None or all(m[v] == 2 or m[v] == (v in s) for v in range(D))])
            elif f.kind == "choice":
                options.append([c for j, c in enumerate(f.choices) if m is None or m[j]])
            elif f.kind == "number":
                options.append([0.5])  # any number in the bounds; compared without it
            elif isinstance(m, str):
                options.append([m])
            else:
                options.append(list(f.examples) if name in tool.required else [""])
        for values in itertools.product(*options):
            call = toolbox.parse_tool_call(tool.name, dict(zip(tool.fields, (
                list(v) if isinstance(v, tuple) else v for v in values))))
            if not isinstance(call, ToolError):
                allowed.add((tool.name, tuple(sorted((k, v) for k, v in call.arguments.items() if k != "level"))))
    return allowed


MASKS = {
    "none": {},
    "one node for y, x never X0": {"y": np.array([0, 1, 0, 0], np.int8), "x": np.array([0, 1, 1, 1], np.int8)},
    "X2 forced into cond, no choice 'b'": {"cond": np.array([2, 2, 1, 2], np.int8), "mode": np.array([1, 0, 1], np.int8)},
    "only pair, a fixed note": {"tool": np.array([1, 1, 0, 0], np.int8), "note": "fixed",
                                "x": np.array([1, 1, 0, 0], np.int8)},
    "x and y share one node: pair cannot be filled": {"x": np.array([0, 0, 1, 0], np.int8),
                                                      "y": np.array([0, 0, 1, 0], np.int8)},
}


@pytest.mark.parametrize("name", sorted(MASKS))
def test_masked_samples_are_exactly_the_valid_calls_the_masks_allow(name):
    """Drawn calls are all valid, respect every mask, and cover every such call (brute force)."""
    toolbox = Toolbox(TOOLS, FIELDS, d=D)
    space = toolbox.action_space()
    space.seed(11)
    mask = {key: None for key in space.spaces} | MASKS[name]
    expected = _valid_calls(mask)
    drawn = set()
    for _ in range(3000):
        action = space.sample(mask=mask)
        assert space.contains(action)
        call = toolbox.decode(action)
        assert isinstance(call, ToolCall), call
        if call.tool == "dial":
            assert -2.0 <= call.arguments["level"] <= 3.0
        drawn.add((call.tool, tuple(sorted((k, v) for k, v in call.arguments.items() if k != "level"))))
    assert drawn == expected and expected


def test_a_mask_that_leaves_no_fillable_tool_is_a_clear_error():
    space = Toolbox(TOOLS, FIELDS, d=D).action_space()
    mask = {key: None for key in space.spaces} | {"tool": np.array([0, 0, 1, 0], np.int8)}  # speak: no examples
    with pytest.raises(ValueError, match="no tool whose arguments can be filled"):
        space.sample(mask=mask)
    with pytest.raises(ValueError, match="keys"):
        space.sample(mask={"tool": None})
    with pytest.raises(ValueError, match="examples"):
        ActionField("n", "node", "n", examples=("X0",))
