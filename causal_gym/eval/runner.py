"""The resumable evaluation runner: every (env id x instance x repeat) episode of one agent, into a run store.

A run is described by a :class:`RunConfig`; :func:`run` plays the episodes not yet in the store
(:mod:`causal_gym.eval.store`) and appends one line per episode as it arrives, so an interrupted
run resumes where it stopped when :func:`run` is called again with the same configuration.

Backends
--------
``"local"`` (default)
    ``workers=1`` plays the episodes in this process, one after the other (easy to debug).
    ``workers>1`` plays them in a :func:`causal_gym._workers.worker_pool`: fresh
    interpreters, no inherited threads or locks (forking a process that runs BLAS threads, Ray or
    an HTTP client can deadlock), and none re-runs the caller's ``__main__``, so a script without
    a main guard can call :func:`run`. Each worker runs BLAS on one thread, so the pool does not
    oversubscribe the cores.
    Workers die with the run (``PR_SET_PDEATHSIG``), so a ``kill -9`` of the run leaves none behind.
    ``concurrency>1`` (with ``workers=1``) plays that many episodes at once in threads of this
    process: for LLM agents, whose episodes wait on HTTP rather than on the CPU.
``"ray"``
    The same episodes as Ray tasks (one CPU each, no automatic retries), at most ``workers`` in
    flight. ``ray.init(address=ray_address)`` when an address is given, else a local Ray with
    ``workers`` CPUs; a Ray session that is already initialised is used as it is.

Workers rebuild the env with ``gym.make(env_id, **env_kwargs)`` and the agent with
:func:`causal_gym.agents.registry.make_agent`, so ids must be registered when their package is
imported (or written ``"package:EnvId-v0"``) and agents must be registry names or importable
``"package.module:Factory"`` paths. An agent factory (``"__main__:Factory"``) or an env entry
point of the caller's own script travels to the workers by value, since they never run that
script. A fresh agent is built for every episode: its behaviour then depends on its seed only,
not on which episodes a worker played before.

The agent may also be an object: a factory (a class, or a function returning an agent; one
defined in a notebook cell too), called with ``agent_kwargs`` for every episode like a named one,
or an agent instance, which plays every episode as it is (in this process one object plays them
all, ``reset`` starting each; a worker process plays a copy). An object reaches worker processes
(``workers > 1``, Ray, a time limit) by cloudpickle; one that cannot be sent is refused before any
episode, naming the import-path form that always works.

Code
----
A run store records what the code of the run's plug-ins was: ``run.json``'s ``code`` maps each
reference -- an agent given by import path or as an object, and each discovery method of the
caller's own that an agent runs (the keyword arguments its registry entry names in
``AgentEntry.method_arguments``, e.g. the arena's ``method``) -- to the digest of its code
(:func:`causal_gym._code.code_digest`). Resuming a store after that code changed is refused, naming
what changed, unless no episode of it has finished yet: the old code's results never mix with the
new code's.

Seeds
-----
Episode ``(env_id, instance, repeat)`` of a run with base ``seed`` uses the two 32-bit words of
``np.random.SeedSequence(seed, spawn_key=(zlib.crc32(env_id.encode()), instance, repeat))
.generate_state(2)`` (:func:`causal_gym.harness.rollout.episode_seeds`): the first seeds ``env.reset``, the second is passed as ``seed=`` to the
agent when its registry entry says it takes one (``AgentEntry.takes_seed``; an agent named by import
path gets none) and ``agent_kwargs`` does not fix one. Seeds do
not depend on the order of the grid, the backend or the number of workers, so the scores do not
either.

Variants
--------
``RunConfig(variants=...)`` plays every episode of the grid once per *variant*: a name and
overrides of ``env_kwargs`` and ``agent_kwargs`` (a benchmark's dimension, split and replicate;
the method an agent runs). The episode key then ends in ``"|name"`` and the line has a
``variant`` field; the seeds do not depend on the variant, so variants of one episode are paired.
A benchmark's full grid (CausalArena: configuration x split x replicate x method) is one run.

Time limit
----------
With ``RunConfig(time_limit=seconds)`` each episode plays in the helper process of
:func:`causal_gym._workers.call_with_time_limit` (started once per worker and kept, so imports are
paid once, and before the clock starts); when the limit expires that process is killed and the episode gets a ``"timeout"``
line (no scores, ``timeout="episode"``, the limit in ``error``). A timeout is a final status: it is recorded, never
dropped, and a rerun does not play it again (a paper's protocol counts it as a result). The helper
dies with its worker; a stop request kills it and records the episode as interrupted.

Per-call budgets
----------------
Three more limits, each optional and separate from the others and from ``time_limit``:
``agent_timeout`` bounds one ``agent.act`` (for the LLM agent, its model call with its retries;
its own ``timeout`` keyword still bounds each HTTP request), ``tool_timeout`` one ``env.step``,
and ``scorer_timeout`` the scoring at the episode's end (a tool env's ``_finish``, rescues of the
working graph included, whose time is not charged to the step's budget; an env that is not a
:class:`~causal_gym.harness.tool_env.ToolEnv` scores inside its last step, under
``tool_timeout``). Resets are bounded by ``time_limit`` only. An episode with a budget plays in
the same helper process, where :mod:`causal_gym._deadlines` enforces the budgets with ``SIGALRM``
in the process's main thread: the call is interrupted where it is, and the episode gets a
``"timeout"`` line whose ``timeout`` field names the budget (``"agent"``, ``"tool"`` or
``"scorer"``), with no scores and the call record up to the interrupted call in ``trace``; the
helper process is then replaced. Why a signal and not a thread or a kill, and what it cannot
interrupt (a C routine that does not return to Python: ``time_limit`` is the backstop), is in
:mod:`causal_gym._deadlines`. A budget's timeout is final, like ``time_limit``'s: never a
finished episode with reward 0, never averaged (run summaries and reports average rewards and
scores over the episodes that have them).

Agent hooks
-----------
After each episode, failed ones included, the runner calls the agent's ``usage()`` (a mapping of
token counts, cost, ...) and ``transcript()`` (the prompts and completions, JSON-serialisable)
when it has them, and stores the results as the line's ``usage`` and ``transcript``. The agent is
built for the episode, so both describe that episode alone. A hook that raises is recorded as
``{"error": ...}`` and does not fail the episode.

Failures: which are played again, which are final
--------------------------------------------------
A rerun plays an episode again only when what stopped it was not the agent's doing, so that an
agent cannot drop an episode it is losing and get another try:

- *played again* (``"failed"``, ``"interrupted"``): infrastructure and our own faults -- the model's
  server unreachable or refusing for good (:class:`~causal_gym.agents.llm.LLMRequestError`), an
  exception in the env's or an agent's code, a worker process lost (killed, out of memory), a stop
  request (SIGTERM, Ctrl-C, a kill of the run). The line keeps the error, the traceback and the
  call record up to the failure; the run goes on.
- *final* (``"finished"``, ``"truncated"``, ``"rescued"``, ``"timeout"``): everything derived
  from what the agent sent. A malformed or hostile call (for the LLM agent: anything in a reply,
  however deeply nested, huge or badly encoded; see *Replies the agent cannot read* in
  :mod:`causal_gym.agents.llm`) is an invalid call inside the episode, answered with an error
  result; it never raises, so it never produces a failed line. An episode that runs past the
  run's ``time_limit``, or a call past a per-call budget, is a timeout (a scorer timeout too:
  replaying the episode would only score the same submission again, and an agent must not be able
  to buy a replay with a submission that is slow to score).

The runner warns about an LLM episode with unreadable replies (``n_unreadable_replies`` in its
usage): they are counted as the model's invalid calls, and a reply that raises on every turn
would be a bug of ours. Invalid configurations (unknown env id, bad env or agent arguments, an
agent that cannot play the env, such as the LLM agent on an env without tools) raise before any
episode is played.

Interruptions
-------------
SIGTERM or SIGINT (Ctrl-C) stops the run: the episodes in flight stop at their next step and are
written as ``"interrupted"`` lines with what they had done (trace, usage, transcript; workers get
SIGTERM too), then :class:`~causal_gym.harness.rollout.RolloutInterrupted` propagates. The next run
plays them again. An episode stuck in one long call is given :data:`DRAIN_SECONDS` to stop.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

import causal_gym
from causal_gym._code import code_digest, describe
from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.agents.registry import agent_factory, agents
from causal_gym.envs.benchmark import takes_seal
from causal_gym.eval.executors import DRAIN_SECONDS, play_local, play_ray, play_threaded
from causal_gym.eval.store import STATUSES, UNFINISHED, RunStore, episode_key, redact
from causal_gym.eval.worker import STOP, EpisodeTask, stop_request
from causal_gym.harness.agent import Agent
from causal_gym.harness.contracts import BindsEnv, ChecksResetOptions
from causal_gym.harness.rollout import RolloutInterrupted, episode_seeds
from causal_gym.seal import Seal, resolve_seal

__all__ = ["BACKENDS", "DRAIN_SECONDS", "EpisodeTask", "RunConfig", "RunSummary", "run", "run_plan"]

BACKENDS = ("local", "ray")

logger = logging.getLogger(__name__)


def _check_kwargs(value: object, name: str) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{name} must be a mapping with string keys, got {value!r}")
    try:
        to_jsonable(value)
    except TypeError as exc:
        raise ValueError(f"{name} must be JSON-serialisable (it is written to run.json): {exc}") from None
    return dict(value)


@dataclass(frozen=True)
class RunConfig:
    """What a run plays: every env id x instance x repeat, with one agent.

    Only the episode-defining fields (not ``backend``, ``workers``, ``ray_address``, ``concurrency``) are stored in
    ``run.json`` and must match when a run is resumed; the seal by its fingerprint.

    Parameters
    ----------
    env_ids : sequence of str
        Registered Gymnasium ids (e.g. ``("Heuresis-lg-v0", "Heuresis-wild-v0")``).
    agent : str, agent or factory
        A name of :func:`causal_gym.agents.registry.agents`, ``"package.module:Factory"``, a factory (a
        class or function building an agent from ``agent_kwargs``) or an agent instance (see the
        module docstring).
    agent_kwargs : mapping
        Keyword arguments of the agent (JSON-serialisable; credential-like names are redacted in
        the store but passed to the agent).
    instances : sequence of int
        Instance indices, passed as ``options={"instance": k}`` (with ``"split"``) to ``reset``.
    split : str or None
        The split of the instances (``"test"``, ``"dev"``, ...); None passes no split.
    repeats : int
        Episodes per (env id, instance), each with its own seeds.
    seed : int
        Base seed of the run (see *Seeds* in the module docstring).
    env_kwargs : mapping
        Keyword arguments of ``gym.make`` for every env id (``d``, ``n``, ``budgets``, ...).
    max_steps : int
        Safety stop per episode, for envs without a limit of their own.
    backend : {"local", "ray"}
    workers : int
        Episodes played at once (local: processes; 1 plays in this process; Ray: tasks in flight).
    concurrency : int
        Episodes played at once in threads of this process (local backend, ``workers=1``): for
        agents that wait on a server, such as the LLM agent.
    ray_address : str or None
        Address of a Ray cluster (backend ``"ray"`` only); None starts a local Ray.
    seal : Seal, str or None
        Seal of the instance streams (:mod:`causal_gym.seal`): a :class:`~causal_gym.seal.Seal`, its
        secret, :data:`~causal_gym.seal.OPEN`, or None for the environment variable
        ``CAUSAL_GYM_SEAL`` (unset: open). Every env then gets ``seal=`` (an id whose ``EnvEntry`` does
        not declare ``takes_seal`` cannot be sealed and is refused). ``run.json`` and every line keep only the fingerprint.
    variants : sequence of mapping
        Each ``{"name": str, "env_kwargs": {...}, "agent_kwargs": {...}}`` (both overrides optional,
        merged over the run's): every episode is played once per variant (see *Variants*). Empty
        (the default): one plain grid.
    time_limit : float or None
        Seconds per episode, enforced by playing it in a child process (see *Time limit*); None: no limit.
    agent_timeout, tool_timeout, scorer_timeout : float or None
        Seconds one ``agent.act`` call (for the LLM agent: its model call, retries included), one
        ``env.step`` and the final scoring of a tool env may take (see *Per-call budgets*); None:
        no budget. An expiry is a ``"timeout"`` line whose ``timeout`` field names the budget.
    """

    env_ids: Sequence[str]
    agent: Any
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    instances: Sequence[int] = (0,)
    split: str | None = "test"
    repeats: int = 1
    seed: int = 0
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int = 100_000
    backend: str = "local"
    workers: int = 1
    ray_address: str | None = None
    seal: Seal | str | None = field(default=None, repr=False)
    concurrency: int = 1
    variants: Sequence[Mapping[str, Any]] = ()
    time_limit: float | None = None
    agent_timeout: float | None = None
    tool_timeout: float | None = None
    scorer_timeout: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.env_ids, str) or not isinstance(self.env_ids, Iterable):
            raise ValueError(f"env_ids must be a sequence of env ids (not a single string), got {self.env_ids!r}")
        env_ids = tuple(self.env_ids)
        if not env_ids or not all(isinstance(e, str) and e for e in env_ids) or len(set(env_ids)) != len(env_ids):
            raise ValueError(f"env_ids must be distinct non-empty strings, at least one, got {env_ids!r}")
        if not (bool(self.agent) if isinstance(self.agent, str) else callable(self.agent) or isinstance(self.agent, Agent)):
            raise ValueError(f"agent must be an agent name, 'package.module:Factory', an agent (with reset and act) or "
                             f"a factory of one, got {self.agent!r}")
        if isinstance(self.instances, (str, bytes)) or not isinstance(self.instances, Iterable):
            raise ValueError(f"instances must be a sequence of instance indices, got {self.instances!r}")
        instances = tuple(check_count(k, "instances[...]", 0) for k in self.instances)
        if not instances or len(set(instances)) != len(instances):
            raise ValueError(f"instances must be distinct indices, at least one, got {instances!r}")
        if self.split is not None and not (isinstance(self.split, str) and self.split):
            raise ValueError(f"split must be a split name or None, got {self.split!r}")
        check_count(self.repeats, "repeats", 1)
        check_count(self.seed, "seed", 0)
        check_count(self.max_steps, "max_steps", 1)
        check_choice(self.backend, BACKENDS, "backend")
        check_count(self.workers, "workers", 1)
        check_count(self.concurrency, "concurrency", 1)
        if self.concurrency > 1 and (self.workers > 1 or self.backend != "local"):
            raise ValueError("concurrency > 1 plays threads in this process: use it with the local backend and "
                             "workers=1 (workers play processes, for CPU-bound agents)")
        if self.ray_address is not None and (self.backend != "ray" or not isinstance(self.ray_address, str)):
            raise ValueError(f"ray_address is a string used by backend='ray' only, got {self.ray_address!r} "
                             f"with backend={self.backend!r}")
        object.__setattr__(self, "env_ids", env_ids)
        object.__setattr__(self, "instances", instances)
        object.__setattr__(self, "agent_kwargs", _check_kwargs(self.agent_kwargs, "agent_kwargs"))
        object.__setattr__(self, "env_kwargs", _check_kwargs(self.env_kwargs, "env_kwargs"))
        if "seal" in self.env_kwargs:
            raise ValueError("pass the seal as RunConfig(seal=...) (or --seal-file), not in env_kwargs, which are "
                             "written to run.json")
        object.__setattr__(self, "seal", resolve_seal(self.seal))
        object.__setattr__(self, "variants", _check_variants(self.variants))
        if _is_instance(self.agent):
            if self.agent_kwargs or any(v["agent_kwargs"] for v in self.variants):
                raise ValueError(f"agent {describe(self.agent)} is an instance, which takes no agent_kwargs: pass its "
                                 "class (or a factory) to have them applied")
            if self.concurrency > 1:
                raise ValueError("concurrency > 1 plays episodes at once in threads: it needs a fresh agent per "
                                 "episode, so give a factory or a name, not one agent instance")
        for name in _LIMITS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_real(value, name, 0.0, strict=True))
                if self.concurrency > 1:
                    raise ValueError(f"{name} plays each episode in a child process; use it with workers, not concurrency")
        if not isinstance(self.agent, str) and self.crosses_processes:
            _check_sendable(self.agent)

    @property
    def crosses_processes(self) -> bool:
        """Whether the episodes play in other processes (a pool, Ray, or the helper of a time limit or
        a per-call budget), which receive the agent by reference or by value."""
        return (self.workers > 1 or self.backend == "ray"
                or any(getattr(self, name) is not None for name in _LIMITS))

    @property
    def agent_label(self) -> str:
        """The agent as ``run.json`` and every line record it: its name or import path, or for an
        object its ``"module:qualname"`` (an instance's class, followed by ``()``)."""
        return self.agent if isinstance(self.agent, str) else describe(self.agent)

    def code_digests(self) -> dict[str, str | None]:
        """Reference -> digest of the plug-in code the run plays (see *Code* in the module docstring):
        the agent unless causal_gym's own, and the methods of the caller's own that the agent's
        ``method_arguments`` name."""
        from causal_gym.discovery import resolve

        out: dict[str, str | None] = {}
        entry = agents().get(self.agent) if isinstance(self.agent, str) else None
        agent = agent_factory(self.agent) if isinstance(self.agent, str) else self.agent
        if not _module_of(agent).startswith("causal_gym."):
            out[self.agent_label] = code_digest(agent)
        for name in entry.method_arguments if entry is not None else ():
            for kwargs in (self.agent_kwargs, *(v["agent_kwargs"] for v in self.variants)):
                if isinstance(kwargs.get(name), str):
                    method = resolve(kwargs[name])
                    if not method.builtin:
                        out[method.name] = method.digest
        return out

    @property
    def resolved_seal(self) -> Seal | None:
        """:attr:`seal` as ``__post_init__`` left it: a :class:`~causal_gym.seal.Seal` or None, never a secret."""
        return cast("Seal | None", self.seal)

    def to_dict(self) -> dict[str, Any]:
        """The episode-defining fields, as written to ``run.json`` (credentials redacted); ``variants``,
        ``time_limit``, the per-call budgets and ``code`` (the plug-ins' code digests) only when set, so
        stores of runs without them stay resumable."""
        extra: dict[str, Any] = {}
        if self.variants:
            extra["variants"] = [{**v, "agent_kwargs": redact(v["agent_kwargs"])} for v in self.variants]
        extra.update({name: getattr(self, name) for name in _LIMITS if getattr(self, name) is not None})
        code = self.code_digests()
        if code:
            extra["code"] = code
        return to_jsonable({
            "env_ids": self.env_ids,
            "split": self.split,
            "instances": self.instances,
            "repeats": self.repeats,
            "seed": self.seed,
            "agent": self.agent_label,
            "agent_kwargs": redact(self.agent_kwargs),
            "env_kwargs": self.env_kwargs,
            "max_steps": self.max_steps,
            "seal": None if self.resolved_seal is None else self.resolved_seal.fingerprint,
            **extra,
        })


_LIMITS = ("time_limit", "agent_timeout", "tool_timeout", "scorer_timeout")
"""The time limits of a run: the whole episode, then the per-call budgets."""


def _is_instance(agent: object) -> bool:
    """An agent object itself (to be played as it is), rather than a name or a factory building one."""
    return not isinstance(agent, (str, type)) and isinstance(agent, Agent)


def _module_of(obj: object) -> str:
    return str(getattr(obj if hasattr(obj, "__qualname__") else type(obj), "__module__", "") or "")


def _check_sendable(agent: object) -> None:
    """Refuse an agent object that worker processes could not receive: pickled as the pool sends it
    (loky's pickler, cloudpickle; Ray's is cloudpickle too)."""
    from joblib.externals.loky.backend.reduction import dumps

    try:
        dumps(agent)
    except Exception as exc:  # noqa: BLE001 -- any failure to pickle is the same answer
        raise ValueError(
            f"agent {describe(agent)} cannot be sent to worker processes (workers > 1, Ray or a time limit): "
            f"{type(exc).__name__}: {exc}. Give the agent as an import path 'package.module:Factory' of a module the "
            "workers can import (with agent_kwargs for its arguments), or play with workers=1 and no time limit"
        ) from None


def _check_variants(variants: object) -> tuple[dict[str, Any], ...]:
    if isinstance(variants, (str, bytes, Mapping)) or not isinstance(variants, Iterable):
        raise ValueError(f"variants must be a sequence of mappings, got {variants!r}")
    checked = []
    for variant in variants:
        if not isinstance(variant, Mapping) or set(variant) - {"name", "env_kwargs", "agent_kwargs"}:
            raise ValueError(f"a variant is a mapping with keys 'name', 'env_kwargs', 'agent_kwargs', got {variant!r}")
        name = variant.get("name")
        if not isinstance(name, str) or not name or "|" in name:
            raise ValueError(f"a variant needs a non-empty 'name' without '|', got {name!r}")
        checked.append({"name": name,
                        "env_kwargs": _check_kwargs(variant.get("env_kwargs", {}), f"variant {name!r} env_kwargs"),
                        "agent_kwargs": _check_kwargs(variant.get("agent_kwargs", {}), f"variant {name!r} agent_kwargs")})
        if "seal" in checked[-1]["env_kwargs"]:
            raise ValueError("pass the seal as RunConfig(seal=...), not in a variant's env_kwargs")
    names = [v["name"] for v in checked]
    if len(set(names)) != len(names):
        raise ValueError(f"variant names must be distinct, got {names}")
    return tuple(checked)




def _entry(env_id: str) -> tuple[EnvSpec, Callable[..., Any]]:
    """The spec of ``env_id`` and its entry point, imported (``"package:EnvId-v0"`` imports the
    package first)."""
    module, _, name = env_id.rpartition(":")
    try:
        if module:
            importlib.import_module(module)
        spec = gym.spec(name)
    except ImportError as exc:
        raise ValueError(f"env id {env_id!r}: cannot import {module!r} ({exc})") from None
    except gym.error.Error as exc:
        raise ValueError(f"unknown env id {env_id!r}: {exc}") from None
    creator: Any = spec.entry_point
    if isinstance(creator, str):
        creator = gym.envs.registration.load_env_creator(creator)
    return spec, creator


def _spec_in_main(spec: EnvSpec, creator: Callable[..., Any]) -> EnvSpec | None:
    """``spec`` with its entry point resolved when that entry point lives in the caller's ``__main__``
    (an env the script registered itself, which no worker runs), else None."""
    if getattr(creator, "__module__", None) != "__main__":
        return None
    return dataclasses.replace(spec, entry_point=creator)


def _tasks(config: RunConfig) -> list[EpisodeTask]:
    """The run's episodes in grid order (variant, env id, instance, repeat)."""
    named = isinstance(config.agent, str)
    played_as_is = None if named or not _is_instance(config.agent) else config.agent
    # an unknown agent (or one whose extra is missing) fails here, before any env is built
    factory = agent_factory(config.agent) if named else None if played_as_is is not None else config.agent
    entry = agents().get(config.agent) if named else None
    takes_seed = entry is not None and entry.takes_seed
    # carried by value: a factory of the caller's __main__ (which no worker runs) or given as an object
    carried = factory if not named or config.agent.partition(":")[0] == "__main__" else None
    variants = config.variants or ({"name": None, "env_kwargs": {}, "agent_kwargs": {}},)
    entries = {env_id: _entry(env_id) for env_id in config.env_ids}
    pass_seal = {env_id: takes_seal(env_id) for env_id in entries}
    unsealable = [env_id for env_id, takes in pass_seal.items() if not takes]
    if config.seal is not None and unsealable:
        raise ValueError(f"{unsealable[0]} has no seal argument, so a sealed run cannot play it")
    tasks = []
    for variant in variants:
        agent_kwargs = {**config.agent_kwargs, **variant["agent_kwargs"]}
        env_kwargs = {**config.env_kwargs, **variant["env_kwargs"]}
        seeded = takes_seed and "seed" not in agent_kwargs
        for env_id in config.env_ids:
            for instance in config.instances:
                for repeat in range(config.repeats):
                    env_seed, agent_seed = episode_seeds(config.seed, env_id, instance, repeat)
                    tasks.append(EpisodeTask(
                        key=episode_key(env_id, config.split, instance, repeat, variant["name"]),
                        env_id=env_id,
                        split=config.split,
                        instance=instance,
                        repeat=repeat,
                        env_seed=env_seed,
                        agent_seed=agent_seed if seeded else None,
                        agent=config.agent_label,
                        agent_kwargs={**agent_kwargs, **({"seed": agent_seed} if seeded else {})},
                        env_kwargs=env_kwargs,
                        max_steps=config.max_steps,
                        seal=config.resolved_seal,
                        pass_seal=pass_seal[env_id],
                        variant=variant["name"],
                        time_limit=config.time_limit,
                        agent_timeout=config.agent_timeout,
                        tool_timeout=config.tool_timeout,
                        scorer_timeout=config.scorer_timeout,
                        factory=carried,
                        agent_instance=played_as_is,
                        env_spec=_spec_in_main(*entries[env_id]),
                    ))
    return tasks


# -- progress and summary -----------------------------------------------------------------------


class _Progress:
    """tqdm when installed (failures written above the bar; the bar shows the ETA and the count of
    each status), else one line per episode on stderr with the ETA and the timeout / failed counts."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.start = total, 0, time.perf_counter()
        self.counts: Counter[str] = Counter()
        self.bar = None
        if enabled and total:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc="episodes", unit="ep", file=sys.stderr, dynamic_ncols=True)
        self.enabled = enabled

    def update(self, line: Mapping[str, Any]) -> None:
        self.done += 1
        self.counts[line["status"]] += 1
        usage = line.get("usage")
        if isinstance(usage, Mapping):
            # such an episode's low score measures the setup (tools not sent or not understood), not the model
            if usage.get("never_called_a_tool"):
                self._warn(f"{line['key']}: the model never called a tool (tool mode {usage.get('tool_mode')})")
            if usage.get("n_unreadable_replies"):
                self._warn(f"{line['key']}: {usage['n_unreadable_replies']} repl(ies) could not be read and counted as "
                           "the model's invalid calls (the transcript's unreadable_reply events say why)")
        if not self.enabled:
            return
        failure = f"{line['key']} failed: {line['error']}" if line["status"] == "failed" else None
        if self.bar is not None:
            if failure:
                self.bar.write(failure, file=sys.stderr)
            self.bar.set_postfix({status: self.counts[status] for status in STATUSES if self.counts[status]})
            self.bar.update(1)
            return
        reward = "" if line["reward"] is None else f" reward {line['reward']:.3f}"
        detail = failure or f"{line['key']}: {line['status']}{reward}"
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        problems = "".join(f", {status} {self.counts[status]}" for status in ("timeout", "failed") if self.counts[status])
        print(f"[{self.done}/{self.total}, {elapsed:.0f} s, ETA {eta:.0f} s{problems}] {detail}", file=sys.stderr,
              flush=True)

    def _warn(self, message: str) -> None:
        if self.bar is not None:
            self.bar.write("warning: " + message, file=sys.stderr)
        else:
            logger.warning(message)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class RunSummary:
    """What a call to :func:`run` did, and the state of the run's episodes afterwards.

    Attributes
    ----------
    out_dir : Path
        The run store's directory.
    total, skipped, played : int
        Episodes in the run; already done before this call (not played again); played now.
    counts : dict
        Status -> episodes of the run with that status (the last line per episode).
    rows : tuple of dict
        Per env id: ``env_id``, ``episodes``, one count per status, ``mean_reward`` and
        ``mean_adjacency_f1`` over the episodes that did not fail (None when there are none or
        the env reports no adjacency F1).
    """

    out_dir: Path
    total: int
    skipped: int
    played: int
    counts: Mapping[str, int]
    rows: tuple[Mapping[str, Any], ...]

    @property
    def complete(self) -> bool:
        """True when every episode of the run has a non-failed line."""
        return sum(self.counts.get(s, 0) for s in STATUSES if s not in UNFINISHED) == self.total

    def table(self) -> str:
        """The per-env rows as a plain-text table."""
        width = max(len("env"), *(len(r["env_id"]) for r in self.rows))
        # interrupted and no-tool-call columns only when they say something
        columns = [s for s in STATUSES if s != "interrupted" or any(r[s] for r in self.rows)]
        columns += ["never_called_a_tool"] if any(r["never_called_a_tool"] for r in self.rows) else []
        names = {"never_called_a_tool": "no tool call"}
        head = f"{'env':<{width}} {'episodes':>8} " + " ".join(f"{names.get(s, s):>9}" for s in columns)
        lines = [head + f" {'reward':>8} {'adj F1':>8}"]
        for r in self.rows:
            cells = [f"{r[s]:>9}" for s in columns]
            means = [f"{'-' if v is None else format(v, '.3f'):>8}" for v in (r["mean_reward"], r["mean_adjacency_f1"])]
            lines.append(f"{r['env_id']:<{width}} {r['episodes']:>8} " + " ".join(cells) + " " + " ".join(means))
        return "\n".join(lines)


def _summarize(
    directory: Path, latest: Mapping[str, Mapping[str, Any]], tasks: list[EpisodeTask], skipped: int, played: int
) -> RunSummary:
    """The summary of a run whose store holds ``latest`` (key -> last line, as :meth:`RunStore.latest`)."""
    lines = {task.key: latest[task.key] for task in tasks if task.key in latest}
    counts = Counter(line["status"] for line in lines.values())
    rows = []
    for env_id in dict.fromkeys(task.env_id for task in tasks):
        mine = [lines[t.key] for t in tasks if t.env_id == env_id and t.key in lines]
        played_ok = [line for line in mine if line["status"] not in UNFINISHED]
        f1 = [(line.get("scores") or {})["adjacency_f1"] for line in played_ok
              if (line.get("scores") or {}).get("adjacency_f1") is not None]
        rows.append({
            "env_id": env_id,
            "episodes": sum(t.env_id == env_id for t in tasks),
            **{status: sum(line["status"] == status for line in mine) for status in STATUSES},
            "never_called_a_tool": sum(bool((line.get("usage") or {}).get("never_called_a_tool")) for line in mine
                                       if isinstance(line.get("usage"), Mapping)),
            "mean_reward": _mean([line["reward"] for line in played_ok if line.get("reward") is not None]),
            "mean_adjacency_f1": _mean(f1),
        })
    return RunSummary(directory, len(tasks), skipped, played, dict(counts), tuple(rows))


# -- the runner ---------------------------------------------------------------------------------


def _install(signum: int, handler: Any) -> Any:
    """Set a signal handler when this is the main thread (elsewhere signals cannot be handled); return the old one."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signum, handler)


def _check_config(config: RunConfig, tasks: Sequence[EpisodeTask]) -> None:
    """Build every env and agent once per variant, so a bad id or argument fails before any episode."""
    first: dict[tuple[str, str | None], EpisodeTask] = {}
    for task in tasks:
        first.setdefault((task.env_id, task.variant), task)
    for (env_id, variant), task in first.items():
        where = env_id if variant is None else f"{env_id} (variant {variant!r})"
        try:
            env = task.make_env()
        except gym.error.Error as exc:
            raise ValueError(f"cannot make env {where}: {exc}") from exc
        base = env.unwrapped
        if isinstance(base, ChecksResetOptions):  # an index beyond the split fails here, not once per episode
            last = max(config.instances)
            try:
                base.check_reset_options({"instance": last} if config.split is None else {"split": config.split, "instance": last})
            except ValueError as exc:
                env.close()
                raise ValueError(f"{where} cannot play instance {last} of split {config.split!r}: {exc}") from None
        kwargs = {k: v for k, v in task.agent_kwargs.items() if not (k == "seed" and task.agent_seed is not None)}
        agent = task.make_agent(**kwargs)
        try:
            if isinstance(agent, BindsEnv):
                agent.bind(env)
        except TypeError as exc:
            raise ValueError(f"agent {config.agent_label!r} cannot play {where}: {exc}") from None
        finally:
            env.close()


def run(config: RunConfig, out_dir: str | Path, progress: bool = True) -> RunSummary:
    """Play the episodes of ``config`` that ``out_dir`` does not hold yet, appending one line each.

    Parameters
    ----------
    config : RunConfig
    out_dir : str or Path
        The run store (created if missing). Resuming needs the same episode-defining config.
    progress : bool
        A tqdm bar (or, without tqdm, a line per episode) on stderr.

    Returns
    -------
    RunSummary
        Counts and per-env means over the whole run, including episodes of earlier calls.

    Raises
    ------
    ValueError
        Invalid configuration, or ``out_dir`` holds a run with another configuration.
    RuntimeError
        A local worker process died (the episodes finished before are saved).

    Examples
    --------
    >>> import tempfile
    >>> config = RunConfig(("CartPole-v1",), "random", instances=(0, 1), split=None, max_steps=5)
    >>> summary = run(config, tempfile.mkdtemp(), progress=False)
    >>> summary.played, summary.counts
    (2, {'truncated': 2})
    """
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be a RunConfig, got {type(config).__name__}")
    tasks = _tasks(config)
    _check_config(config, tasks)
    store = RunStore(out_dir)
    with store.lock():
        store.initialize(config.to_dict(), causal_gym.__version__)
        keys = {task.key for task in tasks}
        latest = store.latest()  # read once: the store is ours while the lock is held
        foreign = next((key for key in latest if key not in keys), None)
        if foreign is not None:
            raise ValueError(f"{store.episodes_path} holds a line for {foreign!r}, which is not an episode of this run "
                             "(the store was edited or mixed with another): use a new output directory")
        done = store.finished_keys()
        todo = [task for task in tasks if task.key not in done]
        bar = _Progress(len(todo), progress)

        def sink(line: dict[str, Any]) -> None:
            store.append(line)
            latest[line["key"]] = line
            bar.update(line)

        STOP.clear()
        previous = _install(signal.SIGTERM, stop_request)
        try:
            if todo and config.backend == "ray":
                play_ray(todo, config.workers, config.ray_address, sink)
            elif todo and config.concurrency > 1:
                play_threaded(todo, config.concurrency, sink)
            elif todo:
                play_local(todo, config.workers, sink)
        except (RolloutInterrupted, KeyboardInterrupt):
            STOP.set()
            raise
        finally:
            _install(signal.SIGTERM, previous)
            bar.close()
        return _summarize(store.directory, latest, tasks, len(tasks) - len(todo), bar.done)


def run_plan(config: RunConfig | Mapping[str, Any], out_dir: str | Path, progress: bool = True) -> list[dict[str, Any]]:
    """:func:`run` a configuration (a :class:`RunConfig` or its keyword arguments) and return the last
    line of each of its episodes that has one, in grid order.

    This is the runner as a benchmark's reproduce entry point receives it (``runner=`` from
    ``causal-gym reproduce``; benchmarks may not import this layer): it plans in plain values,
    gets plain lines back and builds its tables from them.

    Examples
    --------
    >>> import tempfile
    >>> lines = run_plan({"env_ids": ("CartPole-v1",), "agent": "random", "instances": (0, 1), "split": None,
    ...                   "max_steps": 5}, tempfile.mkdtemp(), progress=False)
    >>> [(line["instance"], line["status"]) for line in lines]
    [(0, 'truncated'), (1, 'truncated')]
    """
    if not isinstance(config, RunConfig):
        if not isinstance(config, Mapping):
            raise ValueError(f"config must be a RunConfig or a mapping of its arguments, got {type(config).__name__}")
        config = RunConfig(**config)
    run(config, out_dir, progress)
    latest = RunStore(out_dir).latest()
    return [latest[task.key] for task in _tasks(config) if task.key in latest]
