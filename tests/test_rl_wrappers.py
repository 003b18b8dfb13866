"""SB3 wrappers, the CausaLab intervention planner and the SB3 agent.

The wrapped envs pass SB3's env checker without a warning; action masks are checked against what
the env actually accepts on sampled actions (masked-valid never gives an error result,
masked-invalid always does); the catalogue size against a hand count; the planner's reward against
the all-edge F1 recomputed from its estimate and the truth; the estimator against an independent
linear SEM with shift semantics and against the lab's test suites under the systematic design;
SB3Agent against the model's own predictions on the wrapped env; a short MaskablePPO training.
"""

from __future__ import annotations

import itertools
import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402

import causal_gym  # noqa: E402, F401  (registers the ids)
from causal_gym.agents.rl import SB3Agent  # noqa: E402
from causal_gym.envs.causalab.env import DEFAULT_NUMBER_GRIDS  # noqa: E402
from causal_gym.envs.causalab.planner import (  # noqa: E402
    VALUE_GRID,
    CausaLabPlannerEnv,
    RandomPlanner,
    RoundRobinPlanner,
    _acyclic_support,
    estimate_shift_mechanism,
)
from causal_gym.envs.causalab.scoring import prf  # noqa: E402
from causal_gym.envs.causalab.spec import PLANNER_SETTINGS_BY_ID as CAUSALAB_PLANNER_SETTINGS  # noqa: E402
from causal_gym.envs.causalab.spec import SETTINGS_BY_ID as CAUSALAB_SETTINGS  # noqa: E402
from causal_gym.envs.registration import env_descriptions  # noqa: E402

ENV_DESCRIPTIONS = env_descriptions()
from causal_gym.envs.wrappers import (  # noqa: E402
    DropText,
    FlatDictObservation,
    FlattenDictActions,
    make_sb3_env,
)
from causal_gym.eval import rollout  # noqa: E402
from causal_gym.graphs import is_dag  # noqa: E402

TINY = {"d": 4, "n": 60}
FREQ = "resonanceFreq"
PLANNER_IDS = sorted(CAUSALAB_PLANNER_SETTINGS)


pytestmark = pytest.mark.usefixtures("isolated_cache")  # one fresh cache for the module (tests/conftest.py)


def sb3_check(env: gym.Env) -> None:
    """SB3's checker, with any warning (an unsupported space, a bad bound) turned into a failure."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, warn=True)


# ---------------------------------------------------------------------------------------------
# wrappers: spaces, SB3 checker, catalogue
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [  # the default wrapping of every id is in tests/test_conformance.py
        ("CausaLab-4node-quad-v0", {"flatten": True}),
        ("Heuresis-wild-guided-v0", {**TINY, "flatten": True}),
        ("CausaLab-planner-4node-v0", {"flatten": True}),
    ],
)
def test_flattened_envs_pass_the_sb3_checker(env_id, kwargs):
    env = make_sb3_env(env_id, **kwargs)
    assert isinstance(env.action_space, gym.spaces.Discrete)
    assert isinstance(env.observation_space, gym.spaces.Box)
    sb3_check(env)


def test_drop_text_and_flat_dict_keep_every_value():
    raw = gym.make("Heuresis-lg-guided-v0", **TINY)
    wrapped = FlatDictObservation(DropText(gym.make("Heuresis-lg-guided-v0", **TINY)))
    a, _ = raw.reset(seed=3)
    b, _ = wrapped.reset(seed=3)
    texts = {k for k, s in raw.observation_space.spaces.items() if isinstance(s, gym.spaces.Text)}
    assert texts == {"last_result"} and set(b) == set(a) - texts
    for key, value in b.items():
        assert np.array_equal(np.asarray(value), np.asarray(a[key]).reshape(np.shape(value)))
        assert wrapped.observation_space[key].contains(value)
    assert wrapped.observation_space["deletion_depth"].nvec.shape == (16,)
    with pytest.raises(ValueError, match="DropText"):
        FlatDictObservation(gym.make("Heuresis-lg-v0", **TINY))


def test_catalogue_matches_a_hand_count():
    d = TINY["d"]
    ordered_pairs = d * (d - 1)
    env = make_sb3_env("Heuresis-lg-v0", **TINY)
    expected = {
        "set_edge": ordered_pairs * 4,
        "submit": 1,
        "run_algorithm": 7,
        "ci_test": ordered_pairs * (1 + (d - 2)) * 2,  # cond: empty or one of the other two, two tests
        "stability": ordered_pairs * (1 + (d - 2)) * 2,
        "summarize": 1,
        "fit_parents": d * (1 + (d - 1)),
        "probe_direction": ordered_pairs,
    }
    catalogue = env.get_wrapper_attr("catalogue")
    counts = {t: sum(c.tool == t for c in catalogue) for t in expected}
    assert counts == expected and env.action_space.n == sum(expected.values()) == 229
    assert set(env.get_wrapper_attr("omitted")) == {"run_code"}
    two = make_sb3_env("Heuresis-lg-v0", **TINY, max_set_size=2, tools=["ci_test"])
    assert two.action_space.n == ordered_pairs * (1 + 2 + 1) * 2
    lab = make_sb3_env("CausaLab-4node-v0", number_grids={"value": [0, 50], "frequency": [10.0]})
    assert lab.action_space.n == 8 * 2 + 1 + 1 + 1  # intervene, enter_reactor, submit, give_up
    assert tuple(DEFAULT_NUMBER_GRIDS["value"]) == VALUE_GRID


def test_bad_wrapper_arguments_are_rejected():
    with pytest.raises(ValueError, match="cannot be enumerated"):
        make_sb3_env("Heuresis-lg-v0", **TINY, tools=["run_code"])
    with pytest.raises(ValueError, match="unknown tools"):
        make_sb3_env("Heuresis-lg-v0", **TINY, tools=["teleport"])
    with pytest.raises(ValueError, match="outside the field's bounds"):
        make_sb3_env("CausaLab-4node-v0", number_grids={"frequency": [2e4]})
    with pytest.raises(ValueError, match="not a number field"):
        make_sb3_env("CausaLab-4node-v0", number_grids={"property": [1.0]})
    with pytest.raises(ValueError, match="apply only"):
        make_sb3_env("CausaLab-planner-4node-v0", tools=["intervene"])
    with pytest.raises(ValueError, match="toolbox"):
        FlattenDictActions(gym.make("CartPole-v1"))
    env = make_sb3_env("CausaLab-4node-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(env.action_space.n)


# ---------------------------------------------------------------------------------------------
# action masks against the env
# ---------------------------------------------------------------------------------------------


def _mask_agreement(env: gym.Env, n_actions: int, options: dict, seed: int) -> tuple[int, int]:
    """Step sampled actions, half masked-valid and half masked-invalid; each must (not) give an error."""
    rng = np.random.default_rng(seed)
    base = env.unwrapped
    env.reset(seed=seed, options=options)
    counts = [0, 0]
    for k in range(n_actions):
        mask = env.get_wrapper_attr("action_masks")()
        want_valid = bool(rng.random() < 0.5) if 0 < mask.sum() < mask.size else bool(mask.any())
        action = int(rng.choice(np.flatnonzero(mask == want_valid)))
        _, _, terminated, truncated, _ = env.step(action)
        error = base.record()[-1].result_text.startswith("error:")
        assert error != want_valid, (k, env.get_wrapper_attr("catalogue")[action], base.record()[-1].result_text)
        counts[want_valid] += 1
        if terminated or truncated:
            env.reset(seed=seed + k + 1, options=options)
    return counts[0], counts[1]


def test_causalab_masks_agree_with_what_the_env_accepts():
    env = make_sb3_env("CausaLab-4node-v0", number_grids={"value": [0, 50, 100], "frequency": [0.0, 100.0]},
                       intervention_budget=2)
    invalid, valid = _mask_agreement(env, 500, {"split": "train"}, seed=1)
    assert invalid > 150 and valid > 150


def test_heuresis_masks_agree_with_what_the_env_accepts():
    env = make_sb3_env("Heuresis-lg-v0", **TINY, budgets={"turns": 15, "tests": 3, "algorithm_calls": 1})
    invalid, valid = _mask_agreement(env, 500, {"instance": 0}, seed=2)
    assert invalid > 150 and valid > 150


# ---------------------------------------------------------------------------------------------
# the planner
# ---------------------------------------------------------------------------------------------


def test_planner_ids_are_registered_lazily_beside_the_lab_ids():
    assert PLANNER_IDS == [f"CausaLab-planner-{n}node-v0" for n in (3, 4, 5)]
    assert set(PLANNER_IDS) <= set(ENV_DESCRIPTIONS) and not set(PLANNER_IDS) & set(CAUSALAB_SETTINGS)
    for env_id in PLANNER_IDS:
        spec = gym.spec(env_id)
        assert spec.entry_point == "causal_gym.envs.causalab.planner:CausaLabPlannerEnv"
        n = int(env_id.split("-")[2][0])
        env = gym.make(env_id)
        assert env.unwrapped.budget == n - 1 and env.action_space.n == (n - 1) * len(VALUE_GRID)


def test_planner_replays_a_seed_exactly():
    env = gym.make("CausaLab-planner-4node-v0")
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=11)
        trace = [obs["readings"].copy()]
        for a in (3, 7, 12):
            obs, reward, terminated, _, info = env.step(a)
            trace.append(obs["readings"].copy())
        runs.append((np.array(trace), reward, terminated, info["estimate"]))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1:] == runs[1][1:] and runs[0][2]
    with pytest.raises(ValueError):
        env.reset(seed=0)
        env.step(15)


def test_planner_reward_is_the_edge_f1_of_its_estimate():
    for reward_mode in ("edge_f1", "success+edge_f1"):
        env = gym.make("CausaLab-planner-4node-v0", reward=reward_mode, intervention_budget=4)
        agent = RandomPlanner(seed=5)
        for k in range(25):
            record = rollout(env, agent, seed=k, options={"split": "train", "instance": k})
            info = record.final_info
            truth = {tuple(e) for e in info["truth"]["scm"]["edges"]}
            estimate = {tuple(e) for e in info["estimate"]["edges"]}
            f1 = prf(estimate, truth).f1
            reactor = info["truth"]["reactor"]["values"]
            coefficients = info["estimate"]["freq_coefficients"]
            predicted = info["estimate"]["base"] + sum(c * reactor[p] for p, c in coefficients.items())
            assert info["prediction"] == pytest.approx(float(np.clip(predicted, 0, 1e4)), abs=1e-9)
            success = abs(info["prediction"] - reactor[FREQ]) < 5.0
            assert record.total_reward == pytest.approx(f1 + (success if "+" in reward_mode else 0.0), abs=1e-12)
            assert record.rewards[:-1] == [0.0] * (len(record.rewards) - 1) and record.steps == 4


def test_planner_step_infos_hold_no_truth():
    env = gym.make("CausaLab-planner-4node-v0")
    _, info = env.reset(seed=0)
    assert set(info) == {"instance", "slots"}
    _, _, terminated, _, info = env.step(0)
    assert not terminated and set(info) == {"slot", "property", "value", "moved"}


def test_coverage_shaping_pays_each_first_shift_once():
    env = gym.make("CausaLab-planner-4node-v0", shaping=0.3, intervention_budget=4)
    env.reset(seed=0, options={"instance": 0})
    grid, seen = len(VALUE_GRID), set()
    for action in (0 * grid + 0, 0 * grid + 4, 1 * grid + 4, 1 * grid + 4):
        _, reward, _, _, info = env.step(action)
        first = info["moved"] != 0 and info["slot"] not in seen
        seen |= {info["slot"]} if info["moved"] != 0 else set()
        final = info.get("metrics", {}).get("edge_f1", 0.0)
        assert reward == pytest.approx(0.1 * first + final, abs=1e-12)
    assert seen == {0, 1}


def _shifted_linear_sem(rng: np.random.Generator, m: int):
    """An independent linear SEM under shift semantics: readings after shifting each property once."""
    order = rng.permutation(m)
    weights = np.zeros((m + 1, m + 1))
    for a, b in itertools.combinations(range(m), 2):
        if rng.random() < 0.5:
            weights[order[a], order[b]] = rng.choice([-1, 1]) * rng.uniform(0.6, 3.0)
    parents_of_f = rng.random(m) < 0.6
    parents_of_f[rng.integers(m)] = True
    weights[:m, m] = np.where(parents_of_f, rng.uniform(0.6, 3.0, m), 0.0)
    base = rng.uniform(10, 30)
    total = np.linalg.inv(np.eye(m + 1) - weights)  # x = (u + base e_f) (I - W)^-1

    def state(u):
        return (np.append(u, base)) @ total

    u = rng.uniform(0, 100, m)
    readings, targets = [state(u)], []
    for k in rng.permutation(m):
        current = readings[-1]
        value = current[k] + rng.choice([-1, 1]) * rng.uniform(5, 50)
        u[k] += value - current[k]  # shift: only k's exogenous term moves, so k shows the value
        readings.append(state(u))
        targets.append(int(k))
    records = np.array([state(rng.uniform(0, 100, m)) for _ in range(2)])
    return np.array(readings), np.array(targets), records, weights, base


def test_estimator_recovers_an_independent_linear_sem_exactly():
    rng = np.random.default_rng(0)
    for _ in range(40):
        m = int(rng.integers(2, 7))
        readings, targets, records, weights, base = _shifted_linear_sem(rng, m)
        estimate, intercept = estimate_shift_mechanism(readings, targets, records, threshold=0.3)
        assert np.allclose(estimate, weights, atol=1e-8) and intercept == pytest.approx(base, abs=1e-8)


def test_estimator_output_is_always_a_dag_and_rejects_bad_input():
    rng = np.random.default_rng(1)
    for _ in range(30):
        m = int(rng.integers(2, 6))
        k = int(rng.integers(1, 8))
        weights, _ = estimate_shift_mechanism(rng.normal(size=(k + 1, m + 1)) * 50, rng.integers(0, m, k), threshold=0.1)
        assert is_dag((weights != 0).astype(np.int8)) and not weights[m].any()
    with pytest.raises(ValueError):
        estimate_shift_mechanism(np.zeros((3, 3)), [0])
    with pytest.raises(ValueError):
        estimate_shift_mechanism(np.zeros((3, 3)), [0, 2])
    with pytest.raises(ValueError):
        estimate_shift_mechanism(np.full((2, 3), np.nan), [0])


def test_acyclic_support_keeps_the_strongest_edges_that_close_no_cycle():
    # reference: strongest first (ties in row-major order), an edge kept when the kept graph stays a DAG
    rng = np.random.default_rng(4)
    for _ in range(300):
        k = int(rng.integers(2, 7))
        weights = np.round(rng.normal(size=(k, k)) * 2, int(rng.integers(0, 2)))  # rounding makes ties
        np.fill_diagonal(weights, 0.0)
        threshold = float(rng.choice([0.0, 0.5, 1.5]))
        expected = np.zeros_like(weights)
        for i, j in sorted(zip(*np.nonzero(np.abs(weights) > threshold)), key=lambda e: -abs(weights[e])):
            trial = (expected != 0).astype(np.int8)
            trial[i, j] = 1
            if is_dag(trial):
                expected[i, j] = weights[i, j]
        assert np.array_equal(_acyclic_support(weights, threshold), expected)


@pytest.mark.parametrize("env_id", PLANNER_IDS)
def test_estimator_is_exact_on_the_test_suite_under_the_systematic_design(env_id):
    env = gym.make(env_id)
    agent = RoundRobinPlanner()
    for k in range(50):
        info = rollout(env, agent, seed=k, options={"instance": k}).final_info
        truth = info["truth"]["scm"]
        true_edges = {tuple(e) for e in truth["edges"]}
        assert {tuple(e) for e in info["estimate"]["edges"]} == true_edges, k
        true_freq = {a: c for (a, b), c in zip(map(tuple, truth["edges"]), truth["coefficients"]) if b == FREQ}
        estimated = info["estimate"]["freq_coefficients"]
        assert estimated.keys() == true_freq.keys()
        assert all(abs(estimated[p] - c) < 0.01 for p, c in true_freq.items())
        assert info["metrics"]["edge_f1"] == 1.0 and info["success"]


def test_planner_options_and_validation():
    default = gym.make("CausaLab-planner-4node-v0")
    full = gym.make("CausaLab-planner-4node-v0", intervention_budget=12)
    a, _ = default.reset(seed=0, options={"instance": 4})
    b, _ = full.reset(seed=0, options={"instance": 4})
    assert np.array_equal(a["readings"], b["readings"]) and full.unwrapped.budget == 12
    with pytest.raises(ValueError, match="Golden"):
        CausaLabPlannerEnv("4node-golden")
    with pytest.raises(ValueError, match="linear"):
        CausaLabPlannerEnv("4node-quad")
    for grid in ((0.0, 0.0), (0.0, 2e4), ()):
        with pytest.raises(ValueError, match="value_grid"):
            CausaLabPlannerEnv(value_grid=grid)
    with pytest.raises(ValueError):
        CausaLabPlannerEnv(reward="success")


# ---------------------------------------------------------------------------------------------
# SB3Agent and training
# ---------------------------------------------------------------------------------------------


def test_sb3_agent_acts_as_the_model_does_on_the_wrapped_env():
    env_id = "CausaLab-planner-4node-v0"
    wrapper = make_sb3_env(env_id, flatten=True)
    model = PPO("MlpPolicy", wrapper, seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
    agent = SB3Agent(model, wrapper)
    raw, twin = gym.make(env_id), make_sb3_env(env_id, flatten=True)
    for k in range(5):
        obs, info = raw.reset(seed=k, options={"instance": k})
        wrapped_obs, _ = twin.reset(seed=k, options={"instance": k})
        done = False
        while not done:
            action = agent.act(obs, info)
            assert action == int(model.predict(wrapped_obs, deterministic=True)[0])
            obs, _, terminated, truncated, info = raw.step(action)
            wrapped_obs, *_ = twin.step(action)
            done = terminated or truncated
    record = rollout(raw, agent, seed=0, options={"instance": 0})
    assert record.steps == 3 and 0.0 <= record.final_info["metrics"]["edge_f1"] <= 1.0


def test_maskable_ppo_trains_and_plays_only_masked_valid_actions():
    wrapper = make_sb3_env("CausaLab-4node-v0")
    model = MaskablePPO("MultiInputPolicy", wrapper, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu",
                        policy_kwargs={"net_arch": [32]})
    model.learn(512)
    assert model.num_timesteps >= 512
    agent = SB3Agent(model, wrapper, deterministic=False)
    env = gym.make("CausaLab-4node-v0")
    for k in range(3):
        record = rollout(env, agent, seed=k, options={"instance": k})
        calls = record.env_record.to_list()
        assert record.steps > 0 and not any(c["result_text"].startswith("error:") for c in calls)
    with pytest.raises(ValueError, match="observation space"):
        SB3Agent(model, make_sb3_env("CausaLab-4node-v0", flatten=True))


def test_action_masks_are_callable_on_the_outer_wrapper_of_every_sb3_env():
    """Gymnasium 1.x wrappers do not forward attributes: ``env.action_masks()`` itself must work, and
    MaskablePPO's own mask lookup must find it (all True where the env declares no constraint)."""
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import DummyVecEnv

    lab = causal_gym.envs.wrappers.make_sb3_env("CausaLab-4node-v0")
    lab.reset(seed=0)
    flat = lab
    while not isinstance(flat, causal_gym.envs.wrappers.FlattenDictActions):
        flat = flat.env
    assert np.array_equal(lab.action_masks(), flat.action_masks())
    assert 0 < lab.action_masks().sum() < lab.action_space.n  # reactor-only tools are masked at the start
    planner = causal_gym.envs.wrappers.make_sb3_env("CausaLab-planner-4node-v0", flatten=True)
    planner.reset(seed=0)
    assert planner.action_masks().tolist() == [True] * planner.action_space.n
    repair = causal_gym.envs.wrappers.make_sb3_env("HeuresisRepair-lg-v0", d=5, n=200, train_instances=2)
    repair.reset(seed=0)
    inner = repair.unwrapped.action_masks()
    assert np.array_equal(repair.action_masks(), inner) and not inner.all()
    vec = DummyVecEnv([lambda: causal_gym.envs.wrappers.make_sb3_env("CausaLab-planner-3node-v0", flatten=True)])
    vec.reset()
    assert is_masking_supported(vec) and get_action_masks(vec).shape == (1, vec.action_space.n)
