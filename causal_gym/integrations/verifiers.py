"""A verifiers environment for causal_gym's tool envs: ``load_environment(gym_id=..., episodes=...)``.

Which verifiers API, and why
----------------------------
verifiers 0.3.1 (installed; ``import verifiers as vf``) ships two stacks: the classic one
(``vf.Environment`` / ``vf.MultiTurnEnv`` / ``vf.ToolEnv``, in ``verifiers.legacy``, still what
``import verifiers as vf`` and the ``vf-eval`` command load) and the v1 stack (``verifiers.v1``:
``Taskset`` + ``Harness`` + ``Env``). In v1 a task's tools are MCP servers (``vf.Toolset``) that
a harness launches per rollout in a runtime, and an env that plays the user (the TextArena
taskset) talks to the model in plain-text turns. Our episodes need per-rollout state behind every
tool (the working graph, the budgets), the env's own JSON schemas sent as native tools, and the
reward computed from that state: in v1 that means an MCP server per rollout holding the env and
handing its scores back across a process boundary. The classic :class:`vf.MultiTurnEnv` does
exactly what is needed in-process: a row's ``info["tool_defs"]`` carries our schemas verbatim, ``setup_state``
opens the episode, ``env_response`` plays the model's calls, a ``Rubric`` reads the reward, and
``evaluate`` (or ``vf-eval``) runs it against any OpenAI-compatible server. verifiers 0.4.0
removed the classic stack (and pins ``openai<3``), so the ``verifiers`` extra stays below 0.4
until this adapter is ported to a v1 ``Toolset``.

What it does
------------
Each dataset row is one episode (:class:`~causal_gym.integrations.core.EpisodeRef` in ``info``;
the prompt is the system prompt and first message our LLM agent sends). A rollout plays the
episode through the adapter core's :meth:`~causal_gym.integrations.core.ToolSession.respond`
under our agent's protocol; the rollout stops when the episode ends. The reward is the env's total
reward; the state column ``causal_gym`` (``evaluate(..., state_columns=["causal_gym"])``, ``vf-eval
--state-columns causal_gym``) holds every final score, the total reward and the ending. The scores
are not rubric metrics: a verifiers metric adds ``value * 0`` to the reward, so a score that is NaN
by design (CausaLab's ``abs_error`` without a prediction) would turn the reward into NaN. An episode the model leaves open (no more
calls, a turn limit) is ended as the env ends one whose agent stops before it is scored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import verifiers as vf
from datasets import Dataset

from causal_gym.integrations.core import EpisodeRef, ToolSession, episode_refs

__all__ = ["CausalGymEnv", "load_environment"]

STATE_KEY = "causal_gym"
"""Where a finished rollout's outcome is kept in its state (scores, total reward, ending)."""


def _tool(spec: Mapping[str, Any]) -> vf.Tool:
    function = spec["function"]
    return vf.Tool(name=function["name"], description=function.get("description", ""),
                   parameters=dict(function.get("parameters") or {}))


class CausalGymEnv(vf.MultiTurnEnv):
    """One causal_gym episode per rollout, its tools sent natively (see the module docstring).

    Parameters
    ----------
    refs : sequence of EpisodeRef
        The episodes (one row each); all of one env id.
    prompt_level : int
        As for :class:`~causal_gym.agents.llm.LLMAgent`.
    max_turns : int
        verifiers' model-turn limit (-1: the env's own budgets end the episode).
    """

    def __init__(self, refs: list[EpisodeRef], *, prompt_level: int = 0, max_turns: int = -1, **kwargs: Any) -> None:
        if not refs or len({ref.env_id for ref in refs}) != 1:
            raise ValueError("CausalGymEnv needs episodes of one env id")
        self.prompt_level = prompt_level
        rows = []
        for ref in refs:
            session = ToolSession(ref, prompt_level=prompt_level)
            try:
                # each row carries its episode's tools: they can differ between episodes (CausaLab's properties)
                tools = [_tool(spec).model_dump(exclude_none=True) for spec in session.tool_specs]
                rows.append({"prompt": [{"role": "system", "content": session.system_prompt},
                                        {"role": "user", "content": session.first_message}],
                             "info": json.dumps({**ref.to_row(), "tool_defs": tools})})
            finally:
                session.close()
        rubric = vf.Rubric(funcs=[self.episode_reward], weights=[1.0])
        super().__init__(dataset=Dataset.from_list(rows), eval_dataset=Dataset.from_list(rows), rubric=rubric, max_turns=max_turns, env_id=refs[0].env_id, **kwargs)

    async def setup_state(self, state: vf.State) -> vf.State:
        info = state["info"]
        ref = EpisodeRef.from_row(json.loads(info) if isinstance(info, str) else info)
        state["session"] = await anyio.to_thread.run_sync(lambda: ToolSession(ref, prompt_level=self.prompt_level))
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        session: ToolSession = state["session"]
        last = messages[-1]
        calls = [(call.id, call.name, call.arguments) for call in (getattr(last, "tool_calls", None) or [])]
        reply = await anyio.to_thread.run_sync(lambda: session.respond(calls, getattr(last, "content", None) or ""))
        response: list[Any] = [vf.ToolMessage(role="tool", content=text, tool_call_id=call_id)
                               for call_id, text in reply.tool_results]
        response += [vf.UserMessage(role="user", content=text) for text in reply.user_texts]
        if session.done:
            state["final_env_response"] = response
        return response

    @vf.cleanup
    async def end_episode(self, state: vf.State) -> None:
        """Keep the outcome in the state and close the env (an open episode is ended first)."""
        session: ToolSession | None = state.pop("session", None)
        if session is None:
            return
        try:
            await anyio.to_thread.run_sync(session.finish)
            state[STATE_KEY] = {"scores": session.scores, "total_reward": session.total_reward,
                                "steps": session.steps, "truncated": session.truncated,
                                "submission_source": session.final_info.get("submission_source")}
        finally:
            session.close()

    @staticmethod
    async def episode_reward(state: vf.State) -> float:
        """The env's total reward of the episode."""
        return float(state[STATE_KEY]["total_reward"])


def load_environment(
    gym_id: str = "Heuresis-wild-v0",
    episodes: int = 10,
    first_instance: int = 0,
    split: str = "test",
    seed: int = 0,
    repeats: int = 1,
    env_kwargs: Mapping[str, Any] | str | None = None,
    prompt_level: int = 0,
    max_turns: int = -1,
) -> CausalGymEnv:
    """The verifiers environment of ``episodes`` episodes of the tool env ``gym_id``, as ``causal-gym run``
    plays them (``env_id`` is taken: verifiers' own ``load_environment`` names the module by it).

    ``env_kwargs`` may be a JSON string (command lines pass ``--env-args`` as JSON already).
    """
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs) if env_kwargs else {}
    refs = episode_refs(gym_id, episodes, first_instance=first_instance, split=split or None, seed=seed,
                        repeats=repeats, env_kwargs=env_kwargs)
    return CausalGymEnv(refs, prompt_level=prompt_level, max_turns=max_turns)
