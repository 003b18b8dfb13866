"""Conformance checks for what plugs into causal_gym: environments, benchmarks and discovery methods.

The battery that keeps every id of causal_gym honest is public, as scikit-learn's
``check_estimator`` / ``parametrize_with_checks`` and Gymnasium's ``check_env`` are, so a package
that adds a benchmark (an entry point of ``causal_gym.benchmarks``) or a method (``causal_gym.methods``,
or an import path) runs the same checks in its own CI:

- :func:`check_env` (an id or an env): Gymnasium's and Stable-Baselines3's checkers, the same seed
  giving the same observations inside the observation space, bad reset options refused up front,
  no child process left after ``close()``, typed actions that round-trip through JSON tool calls
  (tool envs) with a malformed call answered by an error result, an ``"ansi"`` render mode,
  ``gym.make_vec``, and a deterministic batched env where the id declares one;
- :func:`check_benchmark` (a :class:`~causal_gym.envs.benchmark.BenchmarkSpec`): the spec registered
  and complete (:func:`~causal_gym.envs.benchmark.check_spec`), the flags it declares (``takes_seal``,
  ``takes_seed``, ``reproduce_takes_runner``) true of the code, then :func:`check_env` on each id
  with its ``small_kwargs``;
- :func:`check_method` (a method reference: name, import path or function): a graph of the data's
  variables in the causal_gym encoding whatever the number of variables, the same graph for the
  same data, the caller's data left unchanged, an intervention mask read when the method declares
  one, and the same graph from a worker process that resolves it by reference, as the runner's
  pool, the time-limited menu worker and Ray do (a function without an import path -- a script's or
  a notebook's -- is sent by value, as menus send it, with a warning that the runner needs the path).

Each ``check_*`` runs its checks in order and raises ``AssertionError`` naming the first that fails;
it returns each check's outcome (``"passed"`` or ``"skipped: why"``; a check that does not apply,
such as the tool-call round trip of an env without tools, or SB3's checker without SB3, is skipped).
:func:`parametrize_with_checks` makes one pytest test per check instead::

    from causal_gym.testing import parametrize_with_checks

    @parametrize_with_checks(benchmarks=[SPEC], methods=["mypkg.methods:pcorr"])
    def test_causal_gym_conformance(target, check):
        check(target)

Examples
--------
>>> from causal_gym.testing import check_method
>>> check_method("pc")["same_graph_in_a_worker_process"]
'passed'
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import time
import unittest
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import data_equivalence

from causal_gym import _workers
from causal_gym._code import import_path
from causal_gym.envs.benchmark import BenchmarkSpec, EnvEntry, benchmark_of, benchmarks, check_spec, load
from causal_gym.harness.contracts import ChecksResetOptions, ParsesToolCalls
from causal_gym.harness.toolbox import ToolCall, ToolError

if TYPE_CHECKING:
    import pytest

__all__ = ["Check", "env_checks", "benchmark_checks", "method_checks", "check_env", "check_benchmark", "check_method",
           "parametrize_with_checks"]

Check = Callable[[Any], None]
"""One check: called with its target (an env id or env, a spec, a method), raises ``AssertionError``
when the target fails it and ``unittest.SkipTest`` when it does not apply."""

STEPS = 3
"""Steps each determinism and process check plays."""

CHILD_GRACE_SECONDS = 30.0
"""How long the process check waits for the children of a closed env to die (a killed worker takes a
moment): far above that moment, so only a process that stays is reported."""


def _require(condition: object, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _named(name: str) -> Callable[[Callable[[Any], None]], Check]:
    """Give a check the name its outcome and its pytest id carry."""
    def decorate(function: Callable[[Any], None]) -> Check:
        function.__name__ = name
        return function
    return decorate


# ---------------------------------------------------------------------------------------------
# environments
# ---------------------------------------------------------------------------------------------


def _entry(env_id: str) -> EnvEntry | None:
    name = env_id.rpartition(":")[2]
    benchmark = benchmark_of(name)
    return None if benchmark is None else next(entry for entry in benchmark.envs if entry.id == name)


def _small_kwargs(env_id: str) -> dict[str, Any]:
    entry = _entry(env_id)
    return {} if entry is None else dict(entry.small_kwargs)


def _make(target: str | gym.Env, **extra: Any) -> gym.Env:
    """A fresh env of ``target`` (an id: its spec's small instance; an env: from its ``spec``)."""
    if isinstance(target, str):
        try:
            return gym.make(target, **{**_small_kwargs(target), **extra})
        except ImportError as exc:
            raise unittest.SkipTest(f"{target} needs a package this installation lacks: {exc}") from None
    if target.spec is None:
        raise unittest.SkipTest("this check builds fresh envs: pass an env id, or an env made by gym.make")
    return gym.make(target.spec, **extra)


def _label(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, gym.Env):
        return target.spec.id if target.spec is not None else type(target.unwrapped).__name__
    if isinstance(target, BenchmarkSpec):
        return target.name
    return getattr(target, "__qualname__", None) or repr(target)


def _play(env: gym.Env, seed: int) -> list[Any]:
    """Reset with ``seed`` and play :data:`STEPS` actions sampled from a space seeded alike; the
    observations, each checked against the observation space."""
    observation, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    seen = [observation]
    for _ in range(STEPS):
        _require(env.observation_space.contains(observation), f"{observation!r} is outside the observation space")
        observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
        seen.append(observation)
        if terminated or truncated:
            break
    _require(env.observation_space.contains(observation), f"{observation!r} is outside the observation space")
    return seen


@_named("gymnasium_checker")
def _gymnasium_checker(target: str | gym.Env) -> None:
    """Gymnasium's own checker (``gymnasium.utils.env_checker.check_env``) on the unwrapped env."""
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    env = _make(target) if isinstance(target, str) else target.unwrapped  # the env itself, not wrappers' state
    with warnings.catch_warnings():
        # unbounded readings and data are deliberate (the checker warns about infinite Box bounds)
        warnings.filterwarnings("ignore", message=".*infinity.*")
        gymnasium_check_env(env.unwrapped, skip_render_check=True)
    if isinstance(target, str):
        env.close()


@_named("sb3_checker")
def _sb3_checker(target: str | gym.Env) -> None:
    """SB3's checker on the env as SB3 plays it: through ``make_sb3_env`` (masked discrete actions,
    flat observations) where the env needs masks, else the env itself."""
    try:
        from stable_baselines3.common.env_checker import check_env as sb3_check_env
    except ImportError:
        raise unittest.SkipTest("stable_baselines3 is not installed (pip install 'causal-gym[rl]')") from None
    from causal_gym.envs.wrappers import make_sb3_env

    raw = _make(target)
    wrapped = isinstance(raw.action_space, (gym.spaces.Dict, gym.spaces.Discrete, gym.spaces.MultiDiscrete))
    if wrapped:
        raw.close()
        if not isinstance(target, str):
            raise unittest.SkipTest("SB3's wrapper builds the env from its id: pass the id")
        env = make_sb3_env(target, **_small_kwargs(target))
        allowed = (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete, gym.spaces.Discrete)
        flat = getattr(env.observation_space, "spaces", {"": env.observation_space})  # a Dict, or one Box
        _require(all(isinstance(s, allowed) and len(s.shape or ()) <= 1 for s in flat.values()),
                 f"make_sb3_env leaves observation spaces SB3 cannot take: {flat}")
    else:
        env = raw.unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning (an unsupported space, a bad bound) fails the check, but for
        warnings.filterwarnings("ignore", message=".*infinity.*")  # unbounded readings (deliberate)
        if not wrapped:  # and the data tables of raw envs (a custom policy's input)
            warnings.filterwarnings("ignore", message=".*unconventional shape.*")
        sb3_check_env(env, warn=True)
    env.close()


@_named("same_seed_same_observations")
def _determinism(target: str | gym.Env) -> None:
    """Two envs reset with one seed and fed the same sampled actions see the same observations,
    each inside the observation space."""
    first, second = _make(target), _make(target)
    a, b = _play(first, seed=5), _play(second, seed=5)
    _require(len(a) == len(b) and all(data_equivalence(x, y) for x, y in zip(a, b)),
             "the same seed and actions gave different observations")
    first.close()
    second.close()


@_named("bad_reset_options_refused")
def _reset_options(target: str | gym.Env) -> None:
    """An unknown reset option and a negative instance are a ``ValueError``, also from the env's
    up-front check (``check_reset_options``) when it has one."""
    env = _make(target) if isinstance(target, str) else target.unwrapped  # the env itself, not wrappers' state
    for options in ({"no_such_option": 1}, {"instance": -1}):
        try:
            env.reset(seed=0, options=options)
        except ValueError:
            continue
        raise AssertionError(f"reset(options={options}) was accepted; an option the env does not know must be a "
                             "ValueError (causal_gym._validation.check_reset_options)")
    base = env.unwrapped
    if isinstance(base, ChecksResetOptions):
        try:
            base.check_reset_options({"no_such_option": 1})
        except ValueError:
            pass
        else:
            raise AssertionError("check_reset_options accepted an unknown option")
        base.check_reset_options({"instance": 0})
    if isinstance(target, str):
        env.close()


def _children() -> set[int]:
    """The live child processes of this process (Linux /proc), less those shared by every env: the
    resource trackers (multiprocessing's and loky's, one each per interpreter, started by the first
    process pool) and the worker of time-limited calls."""
    me, found = str(os.getpid()), set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z" and b"resource_tracker import main" not in command:
            found.add(int(pid))
    return found - _workers.time_limited_worker_pids()


@_named("no_child_process_after_close")
def _no_children(target: str | gym.Env) -> None:
    """An env played and closed leaves no child process behind (a sandbox, a server, a pool)."""
    if not os.path.isdir("/proc/self"):
        raise unittest.SkipTest("counts child processes through /proc (Linux)")
    before = _children()
    env = _make(target)
    _play(env, seed=1)
    env.close()
    deadline = time.monotonic() + CHILD_GRACE_SECONDS
    while not _children() <= before and time.monotonic() < deadline:
        time.sleep(0.1)
    _require(_children() <= before, f"child processes left after close(): {sorted(_children() - before)}")


@_named("tool_calls_round_trip")
def _tool_calls(target: str | gym.Env) -> None:
    """Typed actions survive the JSON tool-call form an LLM writes (``parse_tool_call``), and a
    malformed call is an error result that costs a turn, never an exception."""
    env = _make(target) if isinstance(target, str) else target.unwrapped  # the env itself, not wrappers' state
    base = env.unwrapped
    if not isinstance(base, ParsesToolCalls):
        raise unittest.SkipTest(f"{_label(target)} is not a tool env")
    env.reset(seed=2)
    toolbox = cast(Any, base).toolbox  # a ToolEnv's; the protocol names only parse_tool_call
    env.action_space.seed(2)
    played: set[str] = set()
    call: ToolCall | None = None
    for _ in range(60):
        decoded = toolbox.decode(env.action_space.sample())
        if not isinstance(decoded, ToolCall):
            continue
        call = decoded
        played.add(call.tool)
        parsed = base.parse_tool_call(call.tool, json.dumps(call.to_dict()["arguments"]))
        _require(not isinstance(parsed, ToolError), f"{call} came back from its JSON form as an error: {parsed}")
        _require(toolbox.decode(parsed) == call, f"{call} did not round-trip through its JSON form")
        _require(data_equivalence(parsed, toolbox.encode(call)), f"{call} encodes differently after the round trip")
    _require(call is not None, "no sampled action was a valid call")
    assert call is not None
    _require(isinstance(base.parse_tool_call("no_such_tool", "{}"), ToolError), "an unknown tool was not an error")
    _require(isinstance(base.parse_tool_call(call.tool, "{not json"), ToolError), "malformed JSON was not an error")
    observation, _, terminated, truncated, _ = env.step(base.parse_tool_call("no_such_tool", "{}"))
    _require(str(observation["last_result"]).startswith("error") and not (terminated or truncated),
             "a malformed call must be answered with an error result and the episode go on")
    if isinstance(target, str):
        env.close()


@_named("ansi_render_and_make_vec")
def _render_and_vector(target: str | gym.Env) -> None:
    """An ``"ansi"`` render mode that renders text, and ``gym.make_vec`` over the id."""
    env = _make(target, render_mode="ansi")
    _require("ansi" in env.metadata["render_modes"], "no 'ansi' render mode in metadata['render_modes']")
    env.reset(seed=0)
    _require(isinstance(env.render(), str), "render() in 'ansi' mode must return a str")
    env.close()
    if not isinstance(target, str):
        raise unittest.SkipTest("gym.make_vec needs the env id")
    envs = gym.make_vec(target, num_envs=2, vectorization_mode="sync", **_small_kwargs(target))
    observations, _ = envs.reset(seed=0)
    _require(observations in envs.observation_space, "make_vec's reset observations are outside its space")
    envs.action_space.seed(0)
    observations, *_ = envs.step(envs.action_space.sample())
    _require(observations in envs.observation_space, "make_vec's step observations are outside its space")
    envs.close()


@_named("batched_env_deterministic")
def _batched(target: str | gym.Env) -> None:
    """An id with a ``vector_entry_point``: the batch's spaces are the single env's, batched;
    observations stay inside them through an autoreset; the same seed and actions give the same
    trajectory."""
    if not isinstance(target, str):
        raise unittest.SkipTest("a batched env is built from its id")

    def play() -> list[Any]:
        envs = gym.make_vec(target, num_envs=3, vectorization_mode="vector_entry_point", **_small_kwargs(target))
        single = _make(target)
        _require(envs.single_observation_space == single.observation_space, "batched observation space differs")
        _require(envs.single_action_space == single.action_space, "batched action space differs")
        single.close()
        observations, _ = envs.reset(seed=5)
        envs.action_space.seed(5)
        seen = [observations]
        for _ in range(12):  # longer than the small instances' episodes: autoresets included
            _require(observations in envs.observation_space, "batched observations are outside the space")
            observations, reward, *_ = envs.step(envs.action_space.sample())
            seen += [observations, reward]
        envs.close()
        return seen

    first, second = play(), play()
    _require(all(data_equivalence(a, b) for a, b in zip(first, second)), "the same seed gave different batches")


def env_checks(env_or_id: str | gym.Env) -> list[Check]:
    """The checks :func:`check_env` runs on ``env_or_id`` (the batched-env check only for an id that
    declares a ``vector_entry_point``)."""
    checks = [_gymnasium_checker, _sb3_checker, _determinism, _reset_options, _no_children, _tool_calls,
              _render_and_vector]
    entry = _entry(env_or_id) if isinstance(env_or_id, str) else None
    return checks + ([_batched] if entry is not None and entry.vector_entry_point else [])


def _run_checks(target: Any, checks: Iterable[Check]) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for check in checks:
        try:
            check(target)
        except unittest.SkipTest as skip:
            outcomes[check.__name__] = f"skipped: {skip}"
        except AssertionError as failure:
            raise AssertionError(f"{_label(target)} fails {check.__name__}: {failure}") from failure
        else:
            outcomes[check.__name__] = "passed"
    return outcomes


def check_env(env_or_id: str | gym.Env) -> dict[str, str]:
    """Run every environment check on ``env_or_id`` (see the module docstring).

    Parameters
    ----------
    env_or_id : str or gymnasium.Env
        A registered id (built with its benchmark's ``small_kwargs``; ``"package:EnvId-v0"`` imports
        the package first), or an env: checks that need fresh envs build them from its ``spec`` (an
        env made by ``gym.make``) and are skipped without one.

    Returns
    -------
    dict
        Check name -> ``"passed"`` or ``"skipped: why"``.

    Raises
    ------
    AssertionError
        Naming the first check the env fails and why.
    """
    return _run_checks(env_or_id, env_checks(env_or_id))


# ---------------------------------------------------------------------------------------------
# benchmarks
# ---------------------------------------------------------------------------------------------


@_named("spec_registered_and_complete")
def _spec(spec: BenchmarkSpec) -> None:
    """The spec is registered (its ids listed by ``causal-gym list`` and made by ``gym.make``), every
    code reference loads and keeps its contract (:func:`~causal_gym.envs.benchmark.check_spec`), and
    the flags it declares are true of that code."""
    _require(isinstance(spec, BenchmarkSpec), f"not a BenchmarkSpec: {spec!r}")
    _require(any(known is spec or known == spec for known in benchmarks()),
             f"benchmark {spec.name!r} is not registered: declare a 'causal_gym.benchmarks' entry point naming its "
             "SPEC, or call causal_gym.envs.benchmark.register_benchmark(SPEC) when its module is imported")
    for entry in spec.envs:
        _require(entry.id in gym.registry, f"{entry.id} is not registered with Gymnasium")
    try:
        check_spec(spec)
    except ValueError as exc:
        raise AssertionError(str(exc)) from None

    def parameters(reference: str) -> Mapping[str, inspect.Parameter]:
        return inspect.signature(load(reference)).parameters

    for entry in spec.envs:
        _require(entry.takes_seal == ("seal" in parameters(entry.entry_point)),
                 f"{entry.id}: takes_seal={entry.takes_seal} but its entry point "
                 f"{'takes' if not entry.takes_seal else 'does not take'} seal=")
    for name, agent in spec.agents.items():
        _require(agent.takes_seed == ("seed" in parameters(agent.path)),
                 f"agent {name!r}: takes_seed={agent.takes_seed} but its factory "
                 f"{'takes' if not agent.takes_seed else 'does not take'} seed=")
    if spec.reproduce is not None:
        _require(spec.reproduce_takes_runner == ("runner" in parameters(spec.reproduce)),
                 f"reproduce_takes_runner={spec.reproduce_takes_runner} disagrees with {spec.reproduce}'s signature")


def benchmark_checks(spec: BenchmarkSpec) -> list[tuple[Any, Check]]:
    """``(target, check)`` pairs of :func:`check_benchmark`: the spec's check, then each id's
    :func:`env_checks` (the target being the id)."""
    return [(spec, _spec)] + [(entry.id, check) for entry in spec.envs for check in env_checks(entry.id)]


def check_benchmark(spec: BenchmarkSpec) -> dict[str, str]:
    """Run the spec's check and every environment check on each of its ids (see the module docstring).

    Returns
    -------
    dict
        ``"<name or id>/<check>"`` -> ``"passed"`` or ``"skipped: why"``.

    Raises
    ------
    AssertionError
        Naming the first check that fails and why.
    """
    outcomes: dict[str, str] = {}
    for target, check in benchmark_checks(spec):
        outcomes.update({f"{_label(target)}/{name}": outcome for name, outcome in _run_checks(target, [check]).items()})
    return outcomes


# ---------------------------------------------------------------------------------------------
# discovery methods
# ---------------------------------------------------------------------------------------------


def _chain(d: int, n: int = 300, seed: int = 0) -> np.ndarray:
    """``n`` rows of a linear Gaussian chain ``X0 -> X1 -> ... -> X{d-1}``, seeded."""
    rng = np.random.default_rng([seed, d])
    data = rng.normal(size=(n, d))
    for k in range(1, d):
        data[:, k] += 0.8 * data[:, k - 1]
    return data


def _mask(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chain's data with its last third shifted on ``X0`` (an intervention), and that mask."""
    data, mask = data.copy(), np.zeros(data.shape, dtype=bool)
    rows = slice(2 * len(data) // 3, None)
    data[rows, 0] += 2.0
    for k in range(1, data.shape[1]):
        data[rows, k] += 0.8 * 2.0 * 0.8 ** (k - 1)
    mask[rows, 0] = True
    return data, mask


def _reference(method: Any) -> Any:
    """What a worker receives of ``method``: a string as given (the worker resolves it), a function by
    its import path, or, without one, the resolved method itself (sent by value, as menus send it),
    with a warning that the runner's workers and ``--methods`` need the path."""
    if isinstance(method, str):
        return method
    from causal_gym.discovery import resolve

    resolved = resolve(method)
    path = import_path(resolved.function)
    if path is None:
        warnings.warn(f"{_label(method)} has no import path ('package.module:function' leading back to it): menus "
                      "send it to their workers by value, but the runner's workers, Ray and `causal-gym reproduce "
                      "--methods` take methods by import path or installed name -- define it in an importable module "
                      "for those", UserWarning, stacklevel=4)
        return resolved
    return path


@_named("graph_of_the_data")
def _graph_of_the_data(method: Any) -> None:
    """A graph of the data's variables in the causal_gym encoding, for 2, 4 and 6 variables."""
    from causal_gym.discovery import InvalidOutput, run

    for d in (2, 4, 6):
        try:
            graph = run(method, _chain(d)).graph
        except InvalidOutput as exc:
            raise AssertionError(str(exc)) from None
        _require(graph.shape == (d, d), f"a graph of shape {graph.shape} for {d} variables")


@_named("same_graph_for_the_same_data")
def _deterministic(method: Any) -> None:
    """Two runs on the same data give the same graph (seed any randomness, from an option)."""
    from causal_gym.discovery import run

    data = _chain(4)
    first, second = run(method, data).graph, run(method, data.copy()).graph
    _require(np.array_equal(first, second), f"two runs on the same data gave different graphs:\n{first}\n{second}")


@_named("data_left_unchanged")
def _leaves_data(method: Any) -> None:
    """The method does not write into the array it is given (the caller's data)."""
    from causal_gym.discovery import resolve

    resolved = resolve(method)
    data = _chain(4)
    given = data.copy()
    resolved.function(given)
    _require(np.array_equal(given, data), "the method changed the data array it was given; work on a copy")


@_named("reads_the_intervention_mask")
def _interventional(method: Any) -> None:
    """A method declared interventional takes a mask (``mask=``) and still answers a graph."""
    from causal_gym.discovery import InvalidOutput, resolve, run

    if not resolve(method).interventional:
        raise unittest.SkipTest("an observational method (register it with interventional=True to read masks)")
    data, mask = _mask(_chain(4))
    try:
        graph = run(method, data, mask).graph
    except InvalidOutput as exc:
        raise AssertionError(str(exc)) from None
    _require(graph.shape == (4, 4), f"a graph of shape {graph.shape} for 4 variables")


def _run_graph(method: Any, data: np.ndarray) -> np.ndarray:
    from causal_gym.discovery import run

    return run(method, data).graph


@_named("same_graph_in_a_worker_process")
def _in_a_worker(method: Any) -> None:
    """A worker process that never ran this one's code (the runner's pool, the time-limited menu
    worker and Ray start such processes) resolves the method by its reference -- a function by its
    import path -- and gets the same graph."""
    reference = _reference(method)
    data = _chain(4)
    here = _run_graph(reference, data)
    try:
        there = _workers.call_with_time_limit(functools.partial(_run_graph, reference, data), 600.0, in_worker=True)
    except ValueError as exc:
        raise AssertionError(f"a worker process cannot resolve {reference!r}: {exc}. A name registered with "
                             "causal_gym.discovery.register in a script or notebook exists only there: give the "
                             "import path, or register it when its module is imported") from None
    _require(np.array_equal(here, there), f"a worker process gave another graph:\n{there}\nthan this one:\n{here}")


def method_checks(method: Any) -> list[Check]:
    """The checks :func:`check_method` runs."""
    return [_graph_of_the_data, _deterministic, _leaves_data, _interventional, _in_a_worker]


def check_method(method: Any) -> dict[str, str]:
    """Run every method check on ``method`` (see the module docstring).

    Parameters
    ----------
    method : str or callable
        A name (built-in, registered, or an installed package's entry point), an import path
        ``"package.module:function"`` or the function (:func:`causal_gym.discovery.resolve`).

    Returns
    -------
    dict
        Check name -> ``"passed"`` or ``"skipped: why"``.

    Raises
    ------
    AssertionError
        Naming the first check the method fails and why.
    ValueError
        ``method`` is not a method at all (an unknown name, an import path that leads nowhere).
    """
    from causal_gym.discovery import resolve

    resolve(method)  # a reference that leads nowhere is the caller's error, not a failed check
    return _run_checks(method, method_checks(method))


# ---------------------------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------------------------


def parametrize_with_checks(*, envs: Sequence[str | gym.Env] = (), benchmarks: Sequence[BenchmarkSpec] = (),
                            methods: Sequence[Any] = ()) -> pytest.MarkDecorator:
    """A ``pytest.mark.parametrize`` over every check of every target: one test per (target, check),
    with ids ``"<target>-<check>"``, so a failure names both and a skip says why.

    The decorated test takes ``target`` and ``check`` and calls ``check(target)``::

        @parametrize_with_checks(envs=["MyEnv-v0"], benchmarks=[SPEC], methods=["mypkg.methods:pcorr"])
        def test_causal_gym_conformance(target, check):
            check(target)

    Parameters
    ----------
    envs : sequence of str or gymnasium.Env
        As :func:`check_env` takes them.
    benchmarks : sequence of BenchmarkSpec
        As :func:`check_benchmark` takes them (its spec check and every check of each of its ids).
    methods : sequence of str or callable
        As :func:`check_method` takes them.
    """
    import pytest

    pairs: list[tuple[Any, Check]] = [(env, check) for env in envs for check in env_checks(env)]
    pairs += [pair for spec in benchmarks for pair in benchmark_checks(spec)]
    pairs += [(method, check) for method in methods for check in method_checks(method)]
    return pytest.mark.parametrize(("target", "check"), [
        pytest.param(target, check, id=f"{_label(target)}-{check.__name__}") for target, check in pairs])
