"""A verifiers v1 taskset and harness for causal_gym's tool envs.

Which verifiers API, and why
----------------------------
verifiers 0.4 is the v1 stack only (``import verifiers.v1 as vf``, also shipped by 0.3.1): a ``Taskset`` yields tasks, an
agent's ``Harness`` plays one task against the model behind the rollout's interception endpoint
(which records every model call on the trace), and rewards land on the trace. In v1 a task's tools
are MCP servers launched per rollout, whose schemas come from Python signatures; our episodes need
per-rollout state behind every tool (the working graph, the budgets) and the env's own JSON schemas
sent verbatim. So this module's harness is the tool loop itself, in process: it sends the env's
schemas with each request, plays the model's calls through the adapter core's
:meth:`~causal_gym.integrations.core.ToolSession.respond` under our LLM agent's protocol, and
records the env's total reward (``episode_reward``) and every final score (in ``trace.info``) on
the trace. verifiers finds both by the module path: ``eval causal-gym-verifiers
--env.taskset.gym-id CausaLab-3node-v0 ...`` (the v1 command: ``eval`` in verifiers 0.3.1, run as ``env eval``
past the shell's builtin, ``vf-eval`` from 0.4 on; verifiers imports a plugin by a top-level module name:
the package ``causal_gym_verifiers`` re-exports this module's one ``Taskset`` and one ``Harness``,
and a taskset's harness is its package's).

Budgets and timeouts
--------------------
The episode's turn budget is the env's: the harness asks the model until the episode ends (the
env's budgets and error limit always end it). Three timeouts stay apart: ``model_timeout`` bounds
one model call (agent; none by default, as verifiers' own client sets none), the harness config's
``tool_timeout`` one env step (tool), and ``scorer_timeout`` the closing of an episode the model left
open (scorer). A model or tool failure
ends the rollout as a harness error that verifiers records as such, never as reward 0. A step or
closing past its budget is abandoned on time (:mod:`causal_gym.integrations._threads`: its thread
runs on and closes the env when it returns).

The replayed conversation is written as our own agent writes it: an assistant message carries
``content`` (``""`` when the model wrote none) and ``tool_calls`` only when there are calls; strict
servers (llama.cpp's) reject ``"tool_calls": null``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import verifiers.v1 as vf
from openai import AsyncOpenAI
from pydantic import Field, field_validator

from causal_gym.integrations._threads import GuardedSession
from causal_gym.integrations.core import EpisodeRef, ToolSession, episode_refs

__all__ = ["CausalGymEnv", "CausalGymHarness", "CausalGymTaskset"]  # verifiers reads one class of each kind here

TASKSET_ID = "causal-gym-verifiers"
"""The id verifiers loads this taskset and harness by (the top-level package ``causal_gym_verifiers``)."""
INFO_KEY = "causal_gym"
"""Where a finished rollout's outcome is kept in ``trace.info`` (scores, total reward, ending)."""


class CausalGymData(vf.TaskData):
    """One episode: the system prompt and first message our LLM agent sends, and its reference."""

    episode: dict[str, Any]
    prompt_level: int = 0


class CausalGymTask(vf.Task[CausalGymData]):
    """A causal_gym episode (scored by the harness, which holds the episode)."""


class CausalGymTasksetConfig(vf.TasksetConfig):
    """Which episodes, as ``causal-gym run`` names them (``--env.taskset.*`` on the command line)."""

    gym_id: str = ""
    """A registered tool env id (required when tasks are loaded: there is no default benchmark; the
    field has a default only because verifiers' command line builds the config before reading flags)."""
    episodes: int = Field(10, ge=1)
    first_instance: int = Field(0, ge=0)
    split: str = "test"
    seed: int = Field(0, ge=0)
    repeats: int = Field(1, ge=1)
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    prompt_level: int = Field(0, ge=0)

    @field_validator("env_kwargs", mode="before")
    @classmethod
    def _json_kwargs(cls, value: Any) -> Any:
        return (json.loads(value) if value else {}) if isinstance(value, str) else value


class CausalGymTaskset(vf.Taskset[CausalGymTask, CausalGymTasksetConfig]):
    """The episodes of one tool env, one task each, in ``causal-gym run``'s order."""

    def load(self) -> Iterator[CausalGymTask]:
        config = self.config
        if not config.gym_id:
            raise ValueError("set the tool env to play: gym_id (command line: --env.taskset.gym-id <env id>)")
        refs = episode_refs(config.gym_id, config.episodes, first_instance=config.first_instance,
                            split=config.split or None, seed=config.seed, repeats=config.repeats,
                            env_kwargs=config.env_kwargs)
        for ref in refs:
            session = ToolSession(ref, prompt_level=config.prompt_level)
            try:
                data = CausalGymData(name=ref.name, system_prompt=session.system_prompt,
                                     prompt=session.first_message, episode=ref.to_row(),
                                     prompt_level=config.prompt_level)
            finally:
                session.close()
            yield CausalGymTask(data, config.task)


class CausalGymHarnessConfig(vf.HarnessConfig):
    """The harness's timeouts (``tool_timeout``, inherited, bounds one env step)."""

    id: str = TASKSET_ID
    model_timeout: float | None = Field(None, gt=0)
    """Seconds one model call may take (the agent timeout); None, the default, sets none, as verifiers' own
    client does (no read timeout, no retries): a call waits for its turn at a server that answers one
    request at a time (``-c`` bounds the rollouts in flight)."""
    scorer_timeout: float = Field(600.0, gt=0)
    """Seconds to end an episode the model left open and read its scores."""


class CausalGymHarness(vf.Harness[CausalGymHarnessConfig]):
    """Plays one episode with the env's tools sent natively (see the module docstring)."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime, endpoint: str,
                     secret: str, mcp_urls: dict[str, str], data: vf.TaskData,
                     tool_interception_url: str | None = None) -> vf.ProgramResult:
        if not isinstance(data, CausalGymData):
            raise TypeError(f"{type(self).__name__} plays CausalGymData tasks, got {type(data).__name__}")
        ref = EpisodeRef.from_row(data.episode)
        guarded = GuardedSession(await anyio.to_thread.run_sync(
            lambda: ToolSession(ref, prompt_level=data.prompt_level)))
        session = guarded.session
        # timeout None is no timeout in the openai client (its own default would be 600 s)
        client = AsyncOpenAI(base_url=endpoint, api_key=secret, timeout=self.config.model_timeout, max_retries=0)
        try:
            await self._play(guarded, client, ctx.model)
            await guarded.call(session.finish, self.config.scorer_timeout, "ending the episode (scorer_timeout)")
            trace.record_reward("episode_reward", session.total_reward)
            trace.info[INFO_KEY] = {"scores": session.scores, "total_reward": session.total_reward,
                                    "steps": session.steps, "truncated": session.truncated,
                                    "submission_source": session.final_info.get("submission_source")}
        finally:
            await client.close()
            guarded.close()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def _play(self, guarded: GuardedSession, client: AsyncOpenAI, model: str) -> None:
        session = guarded.session
        messages: list[dict[str, Any]] = [{"role": "system", "content": session.system_prompt},
                                          {"role": "user", "content": session.first_message}]
        while not session.done:
            response = await client.chat.completions.create(model=model, messages=messages,  # type: ignore[arg-type]
                                                            tools=session.tools_now())  # type: ignore[arg-type]
            message = response.choices[0].message
            calls = [call.model_dump() for call in message.tool_calls or []]
            played = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls if "function" in c]
            assistant: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            if played:  # no "tool_calls": null (strict servers refuse it)
                assistant["tool_calls"] = [{"id": call_id, "type": "function",
                                            "function": {"name": name, "arguments": arguments}}
                                           for call_id, name, arguments in played]
            messages.append(assistant)
            reply = await guarded.call(lambda: session.respond(played, message.content or ""),
                                       self.config.tool_timeout, "the env step (tool_timeout)")
            messages += [{"role": "tool", "tool_call_id": call_id, "content": text}
                         for call_id, text in reply.tool_results]
            messages += [{"role": "user", "content": text} for text in reply.user_texts]


class CausalGymEnvConfig(vf.EnvConfig):
    """One agent seat, run on this host by default: the harness is an in-process loop (no sandbox)."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class CausalGymEnv(vf.Env[CausalGymEnvConfig]):
    """The single-agent env of the taskset (verifiers' default seat would run in a remote sandbox)."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)


def evaluate(taskset: Mapping[str, Any], base_url: str, model: str, *, api_key_var: str = "OPENAI_API_KEY",
             sampling: Mapping[str, Any] | None = None, rollouts: int = 1,
             harness: Mapping[str, Any] | None = None) -> list[vf.Trace]:
    """The traces of ``rollouts`` rollouts of every task, as ``eval causal-gym-verifiers`` plays them
    (the env loaded by its taskset id; ``taskset`` holds the ``--env.taskset.*`` fields, ``gym_id`` first;
    ``harness`` the ``--env.agent.harness.*`` ones: ``model_timeout``, ``tool_timeout``, ``scorer_timeout``)."""
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    config: dict[str, Any] = {"taskset": {"id": TASKSET_ID, **taskset}}
    if harness is not None:
        config["agent"] = {"harness": {"id": TASKSET_ID, **harness}}
    env = load_environment(resolve_env_config(config))
    ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url=base_url, api_key_var=api_key_var), model=model,
                          sampling=vf.SamplingConfig(**(sampling or {})))

    async def ignore(episode: vf.Episode) -> None:
        return None

    async def run() -> list[vf.Episode]:
        async with env.serving():
            return list(await asyncio.gather(*(env.run_slot(slot, ctx, None, ignore)
                                               for task in env.taskset for slot in env.slots(task, rollouts))))

    return [trace for episode in asyncio.run(run()) for trace in episode.traces]


def outcome(trace: vf.Trace) -> Mapping[str, Any]:
    """A finished rollout's outcome (scores, total reward, steps, ending), as the harness kept it."""
    return trace.info[INFO_KEY]
