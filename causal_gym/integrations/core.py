"""The adapter core shared by the Inspect, verifiers and TRL integrations.

Each framework drives the conversation with its own model client and message types; what they
share is here, once:

- :class:`EpisodeRef`: which episode a dataset row stands for (env id, split, instance, repeat,
  base seed, env kwargs), with the same seeds as ``causal-gym run`` gives the episode
  (:func:`~causal_gym.harness.rollout.episode_seeds`), so a framework's run of a row and a
  direct run of the same episode play identical instances;
- :class:`ToolSession`: one live episode as a tool-calling conversation: the system prompt and
  first message the LLM agent would send (:func:`~causal_gym.agents.llm.system_prompt`), the
  env's own tool schemas, a tool call turned into the env's typed action by the env's converter
  (``parse_tool_call``, so malformed calls come back as the env's error messages) and its result
  as text, the last turn, and the final scores.

:meth:`ToolSession.respond` plays one assistant reply under the protocol of
:class:`~causal_gym.agents.llm.LLMAgent` in native tool mode: the calls of a reply are played one
per step in order; a reply without a call costs a turn as an invalid action; once only ``submit``
is accepted the remaining calls are not run and the model is told so; a plain-text reply in the
last turn is submitted as the edge list. The adapters translate its :class:`Reply` into their
framework's messages. Nothing the session returns before the episode ends comes from anything but
the env's observations, so the adapters show the model no more than our own agent sees.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from causal_gym._validation import check_count
from causal_gym.agents.llm import (
    EMPTY_SUBMISSION_TEXT,
    LAST_TURN_TEXT,
    NO_TOOL_CALL_TEXT,
    NOT_RUN_TEXT,
    SUBMIT,
    budget_status,
    system_prompt,
)
from causal_gym.harness.agent import task_spec
from causal_gym.harness.contracts import ChecksResetOptions, ParsesToolCalls, Records
from causal_gym.harness.rollout import EpisodeRecord, episode_seeds
from causal_gym.harness.tool_env import LAST_TURN
from causal_gym.harness.toolbox import ToolError
from causal_gym.seal import Seal

__all__ = ["EpisodeRef", "Reply", "ToolSession", "check_rows", "episode_refs", "numeric_scores"]

ENDED_TEXT = "the episode has ended; no further calls are played"
"""The result of a call made after the episode ended (frameworks may keep calling tools)."""
_UNFINISHED = "the conversation ended without a submission"
_MAX_CLOSING_STEPS = 1000


@dataclass(frozen=True)
class EpisodeRef:
    """One episode, as a dataset row names it.

    Attributes
    ----------
    env_id : str
        A registered tool env (``"Heuresis-wild-v0"``, ``"CausaLab-4node-v0"``, ...).
    instance : int
        Instance index, passed as ``options={"instance": k}`` (with the split) to ``reset``.
    split : str or None
        The instances' split (``"test"`` as ``causal-gym run``'s default); None passes none.
    seed : int
        The base seed of the run; the episode's reset seed is derived from it as the runner does.
    repeat : int
        Repeat index of the episode on the instance.
    env_kwargs : mapping
        ``gym.make`` keyword arguments (e.g. a small ``d`` and ``n`` for Heuresis).
    """

    env_id: str
    instance: int = 0
    split: str | None = "test"
    seed: int = 0
    repeat: int = 0
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"env_id must be a non-empty string, got {self.env_id!r}")
        check_count(self.instance, "instance", 0)
        check_count(self.seed, "seed", 0)
        check_count(self.repeat, "repeat", 0)
        if self.split is not None and not (isinstance(self.split, str) and self.split):
            raise ValueError(f"split must be None or a non-empty string, got {self.split!r}")
        if not isinstance(self.env_kwargs, Mapping) or not all(isinstance(k, str) for k in self.env_kwargs):
            raise ValueError(f"env_kwargs must be a mapping with string keys, got {self.env_kwargs!r}")
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))

    @property
    def env_seed(self) -> int:
        """The seed of ``env.reset``: the same as ``causal-gym run --seed <seed>`` uses for this episode."""
        return episode_seeds(self.seed, self.env_id, self.instance, self.repeat)[0]

    @property
    def options(self) -> dict[str, Any]:
        """The ``reset`` options: the instance, and the split when there is one."""
        return {"instance": self.instance} if self.split is None else {"split": self.split, "instance": self.instance}

    @property
    def name(self) -> str:
        """A short unique label: ``env_id/split/instance/repeat``."""
        return f"{self.env_id}/{self.split}/{self.instance}/{self.repeat}"

    def to_row(self) -> dict[str, Any]:
        """The reference as a flat row of JSON scalars (dataset libraries want fixed columns);
        ``env_kwargs`` travels as a JSON string."""
        return {"env_id": self.env_id, "instance": self.instance, "split": self.split or "", "seed": self.seed,
                "repeat": self.repeat, "env_kwargs": json.dumps(self.env_kwargs, sort_keys=True)}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EpisodeRef:
        """The reference of a row written by :meth:`to_row` (extra keys of the row are ignored).

        Raises
        ------
        ValueError
            If the row lacks ``env_id`` or holds invalid values.
        """
        if "env_id" not in row:
            raise ValueError(f"an episode row needs an 'env_id'; got keys {sorted(row)}")
        kwargs = row.get("env_kwargs") or {}
        if isinstance(kwargs, str):
            try:
                kwargs = json.loads(kwargs)
            except ValueError as exc:
                raise ValueError(f"env_kwargs of the row is not valid JSON: {kwargs!r}") from exc
        return cls(env_id=row["env_id"], instance=int(row.get("instance", 0)), split=row.get("split") or None,
                   seed=int(row.get("seed", 0)), repeat=int(row.get("repeat", 0)), env_kwargs=kwargs)


def episode_refs(
    env_id: str,
    episodes: int,
    *,
    first_instance: int = 0,
    split: str | None = "test",
    seed: int = 0,
    repeats: int = 1,
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[EpisodeRef]:
    """The episodes ``causal-gym run --env <env_id> --episodes <episodes>`` plays, in its order.

    Examples
    --------
    >>> [ref.name for ref in episode_refs("Heuresis-wild-v0", 2)]
    ['Heuresis-wild-v0/test/0/0', 'Heuresis-wild-v0/test/1/0']
    """
    check_count(episodes, "episodes", 1)
    check_count(repeats, "repeats", 1)
    check_count(first_instance, "first_instance", 0)
    return [
        EpisodeRef(env_id, instance, split, seed, repeat, dict(env_kwargs or {}))
        for instance in range(first_instance, first_instance + episodes)
        for repeat in range(repeats)
    ]


def check_rows(rows: Sequence[Mapping[str, Any]]) -> list[EpisodeRef]:
    """The episode of each dataset row, every one checked before any rollout runs.

    A GRPO trainer repeats each row for the G generations of its group; ``reset(**row)`` plays the
    row's :class:`EpisodeRef` with the runner's seeds, so the whole group plays one instance and
    rows naming other instances or repeats play other episodes. Call this on the training rows
    before training: a bad row fails here, once, instead of in the middle of a rollout.

    Raises
    ------
    ValueError
        Naming the first bad row: missing or invalid fields, an env id that is not a registered tool
        env with a ``submit`` tool, ``gym.make`` refusing its kwargs, or an instance its split lacks.
    """
    refs = []
    for index, row in enumerate(rows):
        try:
            refs.append(EpisodeRef.from_row(row))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"row {index}: {exc}") from exc
    groups: dict[str, list[tuple[int, EpisodeRef]]] = {}
    for index, ref in enumerate(refs):
        groups.setdefault(json.dumps([ref.env_id, ref.env_kwargs], sort_keys=True, default=str), []).append((index, ref))
    for members in groups.values():
        index, ref = members[0]
        try:  # the id is a tool env with a submit tool and takes the kwargs (one episode of the first row)
            ToolSession(ref).close()
        except Exception as exc:
            raise ValueError(f"row {index} ({ref.name}, env kwargs {ref.env_kwargs}): {exc}") from exc
        env = gym.make(ref.env_id, **ref.env_kwargs)
        try:
            base = env.unwrapped
            for index, ref in members[1:]:
                try:
                    if isinstance(base, ChecksResetOptions):
                        base.check_reset_options(ref.options)
                    else:
                        env.reset(seed=ref.env_seed, options=ref.options)
                except Exception as exc:
                    raise ValueError(f"row {index} ({ref.name}): {exc}") from exc
        finally:
            env.close()
    return refs


def numeric_scores(scores: Mapping[str, Any]) -> dict[str, float]:
    """The numeric entries of a final ``scores`` dict as floats (booleans as 0/1; None and texts left out).

    Examples
    --------
    >>> numeric_scores({"success": True, "abs_error": 2, "hypothesis": None})
    {'success': 1.0, 'abs_error': 2.0}
    """
    out = {}
    for key, value in scores.items():
        if isinstance(value, (bool, int, float)) and not (isinstance(value, float) and math.isnan(value)):
            out[str(key)] = float(value)
    return out


@dataclass(frozen=True)
class Reply:
    """What goes back to the model after one assistant reply.

    Attributes
    ----------
    tool_results : tuple of (call id, text)
        One result per tool call of the reply, in order (ids as the framework gave them).
    user_texts : tuple of str
        User messages to send after them: the result of a reply without a tool call, and the
        last-turn instruction when the last turn has just begun.
    """

    tool_results: tuple[tuple[Any, str], ...] = ()
    user_texts: tuple[str, ...] = ()


class ToolSession:
    """One episode of a tool env, played as a conversation by an outside framework.

    Parameters
    ----------
    ref : EpisodeRef
        The episode (its env is made and reset here).
    prompt_level, stated_target :
        As for :class:`~causal_gym.agents.llm.LLMAgent` (level >= 1 also follows each result
        with the budgets left).
    seal : Seal or str, optional
        Passed to ``gym.make`` as ``seal=`` when given (a :class:`~causal_gym.seal.Seal`, or
        :data:`~causal_gym.seal.OPEN`); None passes none, so the env reads ``CAUSAL_GYM_SEAL``.

    Raises
    ------
    ValueError
        If the env is not a tool env with a ``submit`` tool, or the prompt options do not fit it.

    Examples
    --------
    >>> session = ToolSession(EpisodeRef("Heuresis-lg-v0", env_kwargs={"d": 3, "n": 60}))
    >>> [spec["function"]["name"] for spec in session.tool_specs][:2]
    ['set_edge', 'submit']
    >>> session.call("submit", {}).startswith("error")
    False
    >>> session.done, sorted(session.scores)[:2]
    (True, ['adjacency_f1', 'adjacency_precision'])
    """

    def __init__(self, ref: EpisodeRef, *, prompt_level: int = 0, stated_target: str = "none",
                 seal: Seal | str | None = None) -> None:
        self.ref = ref
        self.prompt_level = check_count(prompt_level, "prompt_level", 0)
        self._started = time.perf_counter()
        kwargs: dict[str, Any] = dict(ref.env_kwargs) if seal is None else {**ref.env_kwargs, "seal": seal}
        self.env = gym.make(ref.env_id, **kwargs)
        base = self.env.unwrapped
        if not isinstance(base, ParsesToolCalls):
            self.env.close()
            raise ValueError(f"{ref.env_id} is not a tool env (no parse_tool_call); use a tool-mode id")
        self._parser: ParsesToolCalls = base
        observation, self._info = self.env.reset(seed=ref.env_seed, options=ref.options)
        self.task = task_spec(self.env)
        names = [spec["function"]["name"] for spec in self.task.tool_specs]
        if SUBMIT not in names:
            self.env.close()
            raise ValueError(f"{ref.env_id} has no '{SUBMIT}' tool (tools: {names})")
        self.system_prompt = system_prompt(self.task, self.prompt_level, stated_target, "native")
        self.first_message = self._result_text(observation, self._info)
        self._observation = observation
        self.done = False
        self.total_reward = self.last_reward = 0.0
        self.rewards: list[float] = []
        self.steps = 0
        self.final_info: dict[str, Any] = {}
        self.terminated = self.truncated = False

    # -- what the model is offered -------------------------------------------------------------

    @property
    def tool_specs(self) -> list[dict[str, Any]]:
        """Every tool of the env as an OpenAI function schema (the schemas our LLM agent sends)."""
        return [dict(spec) for spec in self.task.tool_specs]

    @property
    def observation(self) -> Mapping[str, Any]:
        """The env's latest observation (what the model's results are made from; nothing of the truth)."""
        return self._observation

    @property
    def last_turn(self) -> bool:
        """Whether only ``submit`` is accepted now (a budget ran out, or a rejected edge list's retry)."""
        return not self.done and int(self._observation["phase"]) == LAST_TURN

    def tools_now(self) -> list[dict[str, Any]]:
        """The schemas to offer with the next request: all tools, only ``submit`` in the last turn."""
        if self.last_turn:
            return [spec for spec in self.tool_specs if spec["function"]["name"] == SUBMIT]
        return self.tool_specs

    # -- playing -------------------------------------------------------------------------------

    def call(self, name: Any, arguments: Any) -> str:
        """Play one tool call (arguments as a JSON object or its text) and return the result text.

        A malformed call is played as the env's invalid action and its error message returned; a
        call after the episode ended is not played.
        """
        if self.done:
            return ENDED_TEXT
        return self._play(self._parser.parse_tool_call(name, arguments))

    def respond(self, calls: Sequence[tuple[Any, Any, Any]], content: str | None = None) -> Reply:
        """Play one assistant reply: its ``(call id, name, arguments)`` tool calls, or its text.

        See the module docstring for the protocol. Returns the :class:`Reply` to send back.
        """
        if self.done:
            return Reply(tuple((call_id, ENDED_TEXT) for call_id, _, _ in calls))
        last_turn = self.last_turn
        if not calls:
            text = content or ""
            if last_turn and text.strip():
                result = self.call(SUBMIT, {"edges": text})
            else:
                message = EMPTY_SUBMISSION_TEXT if last_turn else NO_TOOL_CALL_TEXT["native"]
                result = self._play(ToolError(message, SUBMIT if last_turn else None, {"reply": text[:1000]}))
            return Reply((), (result, *self.last_turn_notice(last_turn)))
        results = []
        for call_id, name, arguments in calls:
            if self.done:
                results.append((call_id, ENDED_TEXT))
            elif self.last_turn and not last_turn:
                results.append((call_id, NOT_RUN_TEXT))
            else:
                results.append((call_id, self.call(name, arguments)))
        return Reply(tuple(results), self.last_turn_notice(last_turn))

    def last_turn_notice(self, was_last_turn: bool) -> tuple[str, ...]:
        """The last-turn instruction (once, as a 1-tuple) if the last turn began since ``was_last_turn``
        was read; adapters whose framework sends no user message add it to the result."""
        return (LAST_TURN_TEXT["native"],) if self.last_turn and not was_last_turn else ()

    def finish(self) -> None:
        """End an episode the conversation left open, as the env ends one whose agent stops: invalid
        actions until its error limit submits the working graph (or it ends otherwise)."""
        for _ in range(_MAX_CLOSING_STEPS):
            if self.done:
                return
            self._play(ToolError(_UNFINISHED, SUBMIT if self.last_turn else None, {}))
        raise RuntimeError(f"{self.ref.env_id} did not end after {_MAX_CLOSING_STEPS} invalid actions")

    @property
    def scores(self) -> dict[str, float]:
        """The final numeric scores (the run store's ``scores``); empty while the episode runs."""
        return numeric_scores(self.final_info.get("scores", {})) if self.done else {}

    def record(self) -> EpisodeRecord:
        """The episode as :func:`~causal_gym.harness.rollout.rollout` records it (its ``status`` is the
        run store's), for a server that keeps its own run store; the wall time counts from the reset."""
        base = self.env.unwrapped
        return EpisodeRecord(
            env_id=self.ref.env_id, seed=self.ref.env_seed, options=self.ref.options, steps=self.steps,
            total_reward=self.total_reward, terminated=self.terminated, truncated=self.truncated,
            wall_time=time.perf_counter() - self._started, rewards=list(self.rewards), final_info=dict(self.final_info),
            env_record=base.record() if isinstance(base, Records) else None,
        )

    def close(self) -> None:
        """Close the env."""
        self.env.close()

    # -- internals -----------------------------------------------------------------------------


    def _play(self, action: Any) -> str:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.last_reward = float(reward)
        self.rewards.append(self.last_reward)
        self.total_reward += self.last_reward
        self._observation = observation
        if terminated or truncated:
            self.done, self.terminated, self.truncated = True, bool(terminated), bool(truncated)
            self.final_info = dict(info)
            # the final result is not shown: our agent never sees it either (the episode is over)
            return ENDED_TEXT
        return self._result_text(observation, info)

    def _result_text(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        result = str(observation["last_result"])
        status = budget_status(info) if self.prompt_level >= 1 else ""
        return f"{result}\n{status}" if status else result
