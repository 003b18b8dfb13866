"""Inspect (``inspect-ai``) tasks for causal_gym's tool envs: ``inspect eval causal_gym/heuresis``.

:func:`causal_gym_task` plays any tool env id; each benchmark declares its own tasks in its spec
(``BenchmarkSpec.inspect_tasks``: Heuresis's ``heuresis`` by ``family`` and ``guided``, CausaLab's
``causalab`` by ``setting``, CausalArena's ``causal_arena`` by ``source``), which
:func:`register_tasks` turns into module-level task functions on import, so this module names no
benchmark. A task's dataset is its episodes (one sample per :class:`~causal_gym.integrations.
core.EpisodeRef`: the instances and seeds ``causal-gym run`` plays), its solver
(:func:`play_episode`) plays the episode with Inspect's model under our LLM agent's protocol
(the env's tool schemas sent natively, results as tool messages, the last turn), and its scorer
(:func:`episode_scores`) reports every final score of the env as a metric (mean and standard
error over samples); the sample's score metadata keep the total reward and the ending.

Why a solver of our own rather than Inspect's ``react`` agent: an episode ends when the env says so
(``submit``, an exhausted budget, repeated errors), the last turn offers only ``submit``, and a
reply without a tool call costs a turn; ``react`` has its own submit tool and stopping rule, so
its episodes would not be the ones ``causal-gym run`` plays.

With the package installed (``pip install 'causal-gym[inspect]'``) the tasks are registered under
the ``causal_gym/`` prefix, so for example::

    inspect eval causal_gym/heuresis -T family=wild -T episodes=5 --model openai/gpt-4o-mini
    inspect eval causal_gym/causalab -T setting=4node --model openai-api/vllm/Qwen3-8B

Task arguments are plain values so that ``-T`` can set them (``env_kwargs`` as a JSON object).

Timeouts
--------
Three task arguments, each optional and separate, as the runner's (:mod:`causal_gym.eval.runner`):
``agent_timeout`` bounds one model call (Inspect's ``GenerateConfig(timeout=...)``, which stops
its retries, and a cancel scope that stops the call in flight), ``tool_timeout`` one env step, and
``scorer_timeout`` the scorer's own work: ending an episode the solver left open (stopped by one
of Inspect's limits, ``--message-limit`` and the like) as the env ends one whose agent stops, and
reading its scores. An expiry, and any failure of the scorer, is raised as an error of the sample,
which Inspect records as such with no score (so no metric averages it as 0; ``--fail-on-error``
decides whether the eval goes on). Env steps run in worker threads, which cannot be killed: a step
past its budget is abandoned on time (:mod:`causal_gym.integrations._threads`; its thread closes
the env when it ends) rather than stopped. The scoring an env does inside the step that ends the
episode (a ``submit``) is part of that step, under ``tool_timeout``; the runner, which enforces its
budgets with a signal in a process of its own, charges it to ``scorer_timeout`` instead.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import gymnasium as gym
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageTool, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParams
from inspect_ai.util import LimitExceededError

from causal_gym.envs.benchmark import AGENT_OPTIONS, InspectTask, benchmarks
from causal_gym.integrations._threads import BudgetTimeout, GuardedSession, check_budget
from causal_gym.integrations.core import EpisodeRef, ToolSession, episode_refs

__all__ = ["BudgetTimeout", "causal_gym_task", "episode_scores", "play_episode", "register_tasks", "tool_info"]

STORE_KEY = "causal_gym"
"""Where the solver leaves the episode's outcome in the sample's store (read by the scorer)."""

_LEFT_OPEN: dict[str, GuardedSession] = {}
"""Episodes a solver left open (stopped by one of Inspect's limits), by sample uuid: the scorer ends them."""


def _outcome(session: ToolSession) -> dict[str, Any]:
    return {"scores": session.scores, "total_reward": session.total_reward, "steps": session.steps,
            "terminated": session.terminated, "truncated": session.truncated,
            "submission_source": session.final_info.get("submission_source")}


def _finish(session: ToolSession) -> dict[str, Any]:
    session.finish()
    return _outcome(session)


def tool_info(spec: Mapping[str, Any]) -> ToolInfo:
    """An OpenAI function schema of an env tool as Inspect's :class:`~inspect_ai.tool.ToolInfo`."""
    function = spec["function"]
    return ToolInfo(name=function["name"], description=function.get("description", ""),
                    parameters=ToolParams.model_validate(function.get("parameters") or {}))


def _env_kwargs(value: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"env_kwargs must be a JSON object, got {value!r}") from exc
    if not isinstance(value, Mapping):
        raise ValueError(f"env_kwargs must be a JSON object, got {value!r}")
    return dict(value)


def _check_id(env_id: str) -> str:
    if env_id not in gym.registry:
        raise ValueError(f"no registered env {env_id!r}")
    return env_id


@solver
def play_episode(prompt_level: int = 0, stated_target: str = "none", agent_timeout: float | None = None,
                 tool_timeout: float | None = None) -> Solver:
    """Play the sample's episode with the task's model (see the module docstring).

    The env is made, reset and stepped in a worker thread (a reset may compute references, a step
    run a discovery algorithm), so samples run concurrently without blocking Inspect's loop. A model
    call past ``agent_timeout`` or a step past ``tool_timeout`` (seconds; None: no budget) is an
    error of the sample (see *Timeouts*).
    """
    agent_timeout = check_budget(agent_timeout, "agent_timeout")
    tool_timeout = check_budget(tool_timeout, "tool_timeout")
    config = GenerateConfig() if agent_timeout is None else GenerateConfig(timeout=math.ceil(agent_timeout))

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        ref = EpisodeRef.from_row(state.metadata)
        session = GuardedSession(await anyio.to_thread.run_sync(
            lambda: ToolSession(ref, prompt_level=prompt_level, stated_target=stated_target)))
        episode = session.session
        left_open = False
        try:
            model = get_model()
            state.messages = [ChatMessageSystem(content=episode.system_prompt),
                              ChatMessageUser(content=episode.first_message)]
            while not episode.done:
                tools = [tool_info(spec) for spec in episode.tools_now()]
                try:
                    with anyio.fail_after(agent_timeout):
                        output = await model.generate(state.messages, tools=tools, tool_choice="auto", config=config)
                except TimeoutError:
                    raise BudgetTimeout(f"the model call exceeded agent_timeout of {agent_timeout:g} s") from None
                state.output = output
                message = output.message
                state.messages.append(message)
                calls = message.tool_calls or []
                played = [(c.id, c.function, c.arguments if c.parse_error is None else f"<{c.parse_error}>")
                          for c in calls]
                reply = await session.call(lambda: episode.respond(played, message.text), tool_timeout,
                                           "the env step (tool_timeout)")
                names = {c.id: c.function for c in calls}
                state.messages.extend(ChatMessageTool(content=text, tool_call_id=call_id, function=names[call_id])
                                      for call_id, text in reply.tool_results)
                state.messages.extend(ChatMessageUser(content=text) for text in reply.user_texts)
            state.store.set(STORE_KEY, _outcome(episode))
        except LimitExceededError:  # one of Inspect's limits stopped the episode: the scorer ends it
            _LEFT_OPEN[state.uuid] = session
            left_open = True
            raise
        finally:
            if not left_open:
                session.close()
        return state

    return solve


@scorer(metrics={"*": [mean(), stderr()]})
def episode_scores(scorer_timeout: float | None = None) -> Scorer:
    """The env's final scores of the episode, one metric per score (its mean and standard error).

    An episode the solver left open (stopped by one of Inspect's limits) is ended here, as the env
    ends one whose agent stops, within ``scorer_timeout`` seconds (None: no budget). Its expiry or
    any failure raises: the sample is an error with no score, never a score of 0.
    """
    scorer_timeout = check_budget(scorer_timeout, "scorer_timeout")

    async def score(state: TaskState, target: Target) -> Score:
        outcome = state.store.get(STORE_KEY)
        if not outcome:
            session = _LEFT_OPEN.pop(state.uuid, None)
            if session is None:
                raise RuntimeError("the sample's episode did not end; was it played by play_episode()?")
            try:
                outcome = await session.call(functools.partial(_finish, session.session), scorer_timeout,
                                             "ending and scoring the episode (scorer_timeout)")
            finally:
                session.close()
            state.store.set(STORE_KEY, outcome)
        ending = "truncated" if outcome["truncated"] else "terminated"
        return Score(value=dict(outcome["scores"]), explanation=f"episode {ending} after {outcome['steps']} steps",
                     metadata={key: outcome[key] for key in ("total_reward", "steps", "truncated",
                                                             "submission_source")})

    return score


def _episodes_task(env_id: str, episodes: int, first_instance: int, split: str, seed: int, repeats: int,
                   env_kwargs: str | Mapping[str, Any] | None, prompt_level: int, stated_target: str,
                   agent_timeout: float | None = None, tool_timeout: float | None = None,
                   scorer_timeout: float | None = None) -> Task:
    solver = play_episode(prompt_level, stated_target, agent_timeout, tool_timeout)  # budgets checked first
    score = episode_scores(scorer_timeout)
    refs = episode_refs(env_id, episodes, first_instance=first_instance, split=split or None, seed=seed,
                        repeats=repeats, env_kwargs=_env_kwargs(env_kwargs))
    dataset = MemoryDataset([Sample(input=ref.name, id=ref.name, metadata=ref.to_row()) for ref in refs],
                            name=env_id)
    return Task(dataset=dataset, solver=solver, scorer=score, name=env_id, metadata={"env_id": env_id})


@task
def causal_gym_task(env_id: str, episodes: int = 10, first_instance: int = 0, split: str = "test", seed: int = 0,
                    repeats: int = 1, env_kwargs: str | dict | None = None, prompt_level: int = 0,
                    stated_target: str = "none", agent_timeout: float | None = None,
                    tool_timeout: float | None = None, scorer_timeout: float | None = None) -> Task:
    """Any causal_gym tool env: ``episodes`` instances from ``first_instance`` of ``split``, as
    ``causal-gym run --env <env_id> --episodes <episodes>`` plays them (same seeds); the three
    timeouts in seconds (see *Timeouts* in the module docstring)."""
    return _episodes_task(_check_id(env_id), episodes, first_instance, split, seed, repeats, env_kwargs,
                          prompt_level, stated_target, agent_timeout, tool_timeout, scorer_timeout)


def _spec_task(declared: InspectTask) -> Callable[..., Task]:
    """The Inspect task function of a benchmark's :class:`~causal_gym.envs.benchmark.InspectTask`:
    its choosing parameters, then the episode arguments of :func:`causal_gym_task`, then the agent
    options it declares, as one signature (Inspect reads ``-T`` arguments from it)."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature([
        *(inspect.Parameter(name, keyword, default=default, annotation=type(default))
          for name, default in declared.parameters.items()),
        *(parameter for name, parameter in _EPISODE_PARAMETERS.items()
          if name not in AGENT_OPTIONS or name in declared.agent_options),
    ])

    def make(*args: Any, **kwargs: Any) -> Task:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        env_id = _check_id(declared.env_id(*(values[name] for name in declared.parameters)))
        return _episodes_task(env_id, values["episodes"], values["first_instance"], values["split"], values["seed"],
                              values["repeats"], values["env_kwargs"], values.get("prompt_level", 0),
                              values.get("stated_target", "none"), values["agent_timeout"], values["tool_timeout"],
                              values["scorer_timeout"])

    make.__name__ = make.__qualname__ = declared.name
    make.__doc__ = declared.description
    make.__module__ = __name__
    make.__signature__ = signature  # type: ignore[attr-defined]
    return task(make)


_EPISODE_PARAMETERS = {
    name: parameter for name, parameter in inspect.signature(causal_gym_task).parameters.items() if name != "env_id"
}
"""The episode arguments (and agent options) every benchmark task shares with :func:`causal_gym_task`."""

_SPEC_TASKS: dict[str, Callable[..., Task]] = {}


def register_tasks() -> tuple[str, ...]:
    """Make the Inspect tasks of every benchmark's spec module-level functions (so Inspect, which
    imports this module through the package's ``inspect_ai`` entry point, finds them); done on
    import, and again for benchmarks registered later. Returns the names of all benchmark tasks.

    Raises
    ------
    ValueError
        For a task name this module uses already.
    """
    for spec in benchmarks():
        for declared in spec.inspect_tasks:
            if declared.name in _SPEC_TASKS:
                continue
            if declared.name in globals():
                raise ValueError(f"benchmark {spec.name!r}: Inspect task name {declared.name!r} is taken")
            _SPEC_TASKS[declared.name] = globals()[declared.name] = _spec_task(declared)
    return tuple(_SPEC_TASKS)


register_tasks()
