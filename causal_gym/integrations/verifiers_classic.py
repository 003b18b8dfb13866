"""A classic verifiers environment (``vf-eval``, ``verifiers.legacy``) for causal_gym's tool envs.

Why a second verifiers adapter
------------------------------
verifiers 0.3.1 installs two command lines: ``vf-eval``, the classic one, which imports a module by
name and calls its ``load_environment(**env_args)`` for a ``verifiers.legacy`` ``Environment``, and
``eval``, the v1 one (:mod:`causal_gym.integrations.verifiers`). ``causal_gym_verifiers`` serves
both: its ``load_environment`` is :func:`load_environment` here, so

    vf-eval causal_gym_verifiers -a '{"gym_id": "CausaLab-3node-v0", "episodes": 2}' -r 3 ...

plays the episodes ``causal-gym run --env CausaLab-3node-v0 --episodes 2`` plays, three rollouts each.

How an episode is played
------------------------
:class:`CausalGymClassicEnv` is a ``MultiTurnEnv``: one dataset row per episode (its system prompt
and first message, the env's tool schemas as the row's ``tool_defs``, the
:class:`~causal_gym.integrations.core.EpisodeRef` in ``info``), one live
:class:`~causal_gym.integrations.core.ToolSession` per rollout, and each model reply played through
:meth:`~causal_gym.integrations.core.ToolSession.respond` under our LLM agent's protocol (calls in
order, a reply without a call costs a turn, the last turn offers only ``submit``). The rollout ends
when the env ends the episode (its budgets and error limit always do), not on verifiers' turn cap.
The rubric's reward is the env's total reward; ``steps`` and ``truncated`` are metrics, and every
final score is in the rollout's state under ``causal_gym`` (``vf-eval ... -C causal_gym`` saves it).

Timeouts and aborted rollouts
-----------------------------
The model calls are verifiers' own (its client: 3600 s per request, 10 retries, ``-c`` requests at
once). ``tool_timeout`` bounds one env step and ``scorer_timeout`` the ending of an episode the
rollout left open (``-a '{"tool_timeout": 600}'``); both default to None, no limit, as verifiers'
own timeouts do. A rollout that verifiers aborts (a model error, ``--timeout``, a budget above) is
not scored: its reward and metrics are NaN, never 0, its ``causal_gym`` entry says ``aborted`` and
why, and vf-eval counts it under ``errors``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import anyio
import verifiers.legacy as vf
from datasets import Dataset
from verifiers.legacy.clients.openai_chat_completions_client import OpenAIChatCompletionsClient
from verifiers.legacy.types import ToolMessage, UserMessage

from causal_gym.integrations._threads import BudgetTimeout, GuardedSession, check_budget
from causal_gym.integrations.core import EpisodeRef, ToolSession, episode_refs

__all__ = ["CausalGymClassicEnv", "load_environment"]

STATE_KEY = "causal_gym"
"""Where a rollout's outcome is kept in its state: scores, total reward, steps, ending (or ``aborted``)."""
_SESSION = "causal_gym_session"
"""The rollout's live episode in its state (removed when the rollout ends: a state is serialised)."""


def _tool_def(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI function schema as a verifiers tool definition (name, description, parameters)."""
    function = spec["function"]
    return {"name": function["name"], "description": function.get("description", ""),
            "parameters": function.get("parameters") or {"type": "object", "properties": {}}}


def _rows(refs: list[EpisodeRef], prompt_level: int) -> list[dict[str, Any]]:
    rows = []
    for ref in refs:
        session = ToolSession(ref, prompt_level=prompt_level)
        try:
            rows.append({"prompt": [{"role": "system", "content": session.system_prompt},
                                    {"role": "user", "content": session.first_message}],
                         "answer": "",
                         "info": json.dumps({"episode": ref.to_row(),
                                             "tool_defs": [_tool_def(spec) for spec in session.tool_specs]})})
        finally:
            session.close()
    return rows


class _NoNullFieldsClient(OpenAIChatCompletionsClient):
    """verifiers' classic chat client, replaying an assistant message as our own agent writes it: no
    ``"tool_calls": null`` or ``"reasoning_content": null`` (it writes both for a reply without calls,
    and strict servers, llama-cpp-python's, refuse the whole request with HTTP 500 from then on) and
    ``content`` ``""`` rather than null."""

    async def to_native_prompt(self, messages: vf.Messages) -> tuple[Any, dict]:
        native, extra = await super().to_native_prompt(messages)
        replayed = []
        for message in native:
            message = {k: v for k, v in message.items() if v is not None or k == "content"}
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""
            replayed.append(message)
        return replayed, extra


class CausalGymClassicEnv(vf.MultiTurnEnv):
    """The episodes of one tool env as a classic verifiers environment (see the module docstring).

    Parameters
    ----------
    rows : list of dict
        The dataset (one row per episode; :func:`load_environment` builds them).
    prompt_level : int
        As for :class:`~causal_gym.agents.llm.LLMAgent`.
    tool_timeout, scorer_timeout : float, optional
        Seconds one env step, and the ending of an episode left open, may take (None: no limit).
    """

    def __init__(self, rows: list[dict[str, Any]], *, prompt_level: int = 0, tool_timeout: float | None = None,
                 scorer_timeout: float | None = None, **kwargs: Any) -> None:
        self.prompt_level = prompt_level
        self.tool_timeout = check_budget(tool_timeout, "tool_timeout")
        self.scorer_timeout = check_budget(scorer_timeout, "scorer_timeout")
        rubric = vf.Rubric(funcs=[self.episode_reward], weights=[1.0])
        rubric.add_metric(self.steps)
        rubric.add_metric(self.truncated)
        super().__init__(eval_dataset=Dataset.from_list(rows), rubric=rubric, max_turns=-1, **kwargs)

    # -- the rollout ---------------------------------------------------------------------------

    async def get_model_response(self, state: vf.State, prompt: vf.Messages, client: Any = None,
                                 **kwargs: Any) -> Any:
        client = client if client is not None else state["client"]
        if type(client) is OpenAIChatCompletionsClient:  # the classic default; others are left as they are
            strict = _NoNullFieldsClient(client.client)
            strict._config = client.config
            client = strict
        return await super().get_model_response(state, prompt, client=client, **kwargs)

    async def setup_state(self, state: vf.State) -> vf.State:
        info = state["info"] if isinstance(state["info"], Mapping) else json.loads(state["info"])
        ref = EpisodeRef.from_row(info["episode"])
        state[_SESSION] = GuardedSession(await anyio.to_thread.run_sync(
            lambda: ToolSession(ref, prompt_level=self.prompt_level)))
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        guarded: GuardedSession = state[_SESSION]
        session = guarded.session
        last = messages[-1]
        calls = [(call.id, call.name, call.arguments) for call in (getattr(last, "tool_calls", None) or [])]
        content = getattr(last, "content", None)
        reply = await guarded.call(lambda: session.respond(calls, content if isinstance(content, str) else ""),
                                   self.tool_timeout, "the env step (tool_timeout)")
        out: list[Any] = [ToolMessage(tool_call_id=call_id, content=text) for call_id, text in reply.tool_results]
        out += [UserMessage(content=text) for text in reply.user_texts]
        if session.done:
            state["final_env_response"] = out
        elif session.last_turn:
            state["tool_defs"] = self._normalize_tool_defs([_tool_def(spec) for spec in session.tools_now()])
        return out

    @vf.stop
    async def episode_over(self, state: vf.State) -> bool:
        """The env ended the episode (verifiers' own stops, errors first, are checked too)."""
        guarded = state.get(_SESSION)
        return guarded is not None and guarded.session.done

    @vf.cleanup
    async def close_episode(self, state: vf.State) -> None:
        """Record the outcome (ending an episode the model left open, as the env ends one whose agent
        stops) and close the env; an aborted rollout is recorded as such, unscored."""
        guarded: GuardedSession | None = state.pop(_SESSION, None)
        if guarded is None:  # setup failed: verifiers reports the error
            state[STATE_KEY] = {"aborted": repr(state.get("error"))}
            return
        session = guarded.session
        try:
            if state.get("error") is not None or state.get("timed_out"):
                state[STATE_KEY] = {"aborted": "verifiers' rollout timeout" if state.get("timed_out")
                                    else repr(state["error"]), "steps": session.steps}
                return
            try:
                await guarded.call(session.finish, self.scorer_timeout, "ending the episode (scorer_timeout)")
            except BudgetTimeout as exc:
                state[STATE_KEY] = {"aborted": str(exc), "steps": session.steps}
                return
            state[STATE_KEY] = {"scores": session.scores, "total_reward": session.total_reward,
                                "steps": session.steps, "truncated": session.truncated,
                                "submission_source": session.final_info.get("submission_source")}
        finally:
            guarded.close()

    # -- the rubric ----------------------------------------------------------------------------

    @staticmethod
    def _outcome(state: vf.State, key: str) -> float:
        outcome = state.get(STATE_KEY) or {}
        return math.nan if "aborted" in outcome else float(outcome[key])

    async def episode_reward(self, state: vf.State) -> float:
        """The env's total reward of the episode (NaN for an aborted rollout)."""
        return self._outcome(state, "total_reward")

    async def steps(self, state: vf.State) -> float:
        """Env steps the episode took (NaN for an aborted rollout)."""
        return self._outcome(state, "steps")

    async def truncated(self, state: vf.State) -> float:
        """1 if the episode ended truncated (a budget or the error limit), 0 if the agent submitted."""
        return self._outcome(state, "truncated")


def load_environment(
    gym_id: str = "",
    episodes: int = 10,
    first_instance: int = 0,
    split: str = "test",
    seed: int = 0,
    repeats: int = 1,
    env_kwargs: Mapping[str, Any] | str | None = None,
    prompt_level: int = 0,
    tool_timeout: float | None = None,
    scorer_timeout: float | None = None,
) -> CausalGymClassicEnv:
    """The classic verifiers environment of ``episodes`` episodes of ``gym_id``, as ``causal-gym run`` plays them
    (``vf-eval causal_gym_verifiers -a '{"gym_id": ..., ...}'``; ``env_kwargs`` as a dict or its JSON text).

    Raises
    ------
    ValueError
        If ``gym_id`` is missing or not a tool env with a ``submit`` tool, or an argument is invalid.
    """
    if not gym_id:
        raise ValueError('set the tool env to play: gym_id (vf-eval: -a \'{"gym_id": "<env id>"}\')')
    kwargs = json.loads(env_kwargs) if isinstance(env_kwargs, str) else dict(env_kwargs or {})
    refs = episode_refs(gym_id, episodes, first_instance=first_instance, split=split or None, seed=seed,
                        repeats=repeats, env_kwargs=kwargs)
    return CausalGymClassicEnv(_rows(refs, prompt_level), prompt_level=prompt_level, tool_timeout=tool_timeout,
                               scorer_timeout=scorer_timeout)
