"""Classes for TRL's ``GRPOTrainer(environment_factory=...)``: one causal_gym episode per rollout.

TRL (>= 1.x, ``trl.trainer.grpo_trainer``) creates one environment instance per rollout from a
zero-argument factory, calls ``reset(**row)`` with the dataset row, exposes every public method
except ``reset`` and ``get_reward`` as a tool (its schema from the type hints and the Google-style
docstring, by ``transformers.utils.get_json_schema``), and, when the class defines ``get_reward``,
calls it once per finished rollout as a reward source. :func:`environment_class` builds such a
class for a tool env id from the env's own tool schemas, so the model sees the tools our LLM agent
sees: the same names, descriptions, argument names, types, choices and required arguments
(nested objects such as CausaLab's ``hypothesis`` become ``dict`` arguments whose structure the
docstring states; numeric bounds, which type hints cannot carry, are stated there too). Each call
goes through the adapter core (:class:`~causal_gym.integrations.core.ToolSession`): the env's
converter validates it and its result text is the tool's return value.

Choices that differ between episodes (CausaLab's property names) cannot be a fixed ``Literal``:
TRL renders the schema once per class. The class is built from two probe episodes of the split;
a choice that differs between them becomes a plain string the env validates, listed in each
episode's task text. :func:`dataset` gives the rows: the system prompt and first message of each
episode as the prompt (what our agent sends), plus the :class:`~causal_gym.integrations.core.
EpisodeRef` columns ``reset`` reads.

Reward: ``get_reward`` returns the env's total reward; an episode the model left open (it stopped
calling tools) is ended first as the env ends one whose agent stops (:meth:`ToolSession.finish`).
The final scores are on the instance's ``scores`` for logging.

Timeouts: ``tool_timeout`` bounds one tool call (env step; the call that ends the episode, scoring
included, is a step), ``scorer_timeout`` the ending and scoring of an episode the model left open in
``get_reward``; the model's own generation is TRL's. An expiry ends the episode unscored: the model
is told so, the instance's ``failure`` says which budget, and ``get_reward`` returns None, which
TRL reads as no reward for that rollout (NaN, left out of the group's statistics), never 0.

Example (needs a model with a tool-calling chat template)::

    from trl import GRPOConfig, GRPOTrainer
    from causal_gym.integrations.trl import dataset, environment_class

    rows = dataset("Heuresis-lg-v0", 64, split="train", env_kwargs={"d": 5})
    trainer = GRPOTrainer(model="Qwen/Qwen3-0.6B", train_dataset=rows, args=GRPOConfig(max_steps=10),
                          environment_factory=environment_class("Heuresis-lg-v0", split="train",
                                                                env_kwargs={"d": 5}))
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Mapping
from typing import Any, Literal

from causal_gym.agents.signatures import type_text
from causal_gym.integrations._threads import BudgetTimeout, GuardedSession, check_budget
from causal_gym.integrations.core import EpisodeRef, ToolSession, episode_refs

__all__ = ["dataset", "environment_class", "python_type"]

_SCALARS = {"string": str, "number": float, "integer": int, "boolean": bool}


def python_type(schema: Mapping[str, Any]) -> Any:
    """The type hint whose JSON schema (as transformers writes it) is ``schema``'s type and choices.

    Examples
    --------
    >>> python_type({"type": "string", "enum": ["a", "b"]})
    typing.Literal['a', 'b']
    >>> python_type({"type": "array", "items": {"type": "number"}})
    list[float]
    >>> python_type({"type": "object", "properties": {"k": {"type": "string"}}})
    <class 'dict'>
    """
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return list[python_type(items)] if items else list  # type: ignore[misc]
    if kind == "object":
        return dict
    if kind in _SCALARS:
        return _SCALARS[kind]
    raise ValueError(f"no type hint for the JSON schema {dict(schema)!r}")


def _common(a: Any, b: Any) -> Any:
    """Schema ``a`` without what differs from ``b`` at the same place: choices, and the keys of objects."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = {k: _common(v, b.get(k)) for k, v in a.items()}
        if "enum" in a and a.get("enum") != b.get("enum"):
            del out["enum"]
        if "properties" in a and set(a["properties"]) != set(b.get("properties") or {}):
            out.pop("properties")
            out.pop("required", None)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_common(x, y) for x, y in zip(a, b)]
    return a


def _argument_text(schema: Mapping[str, Any]) -> str:
    """The docstring line of an argument: its description, and what its type hint cannot say."""
    text = " ".join(str(schema.get("description", "")).split()) or "(no description)"
    extra = []
    if schema.get("type") == "object" and "properties" in schema:
        extra.append(f"structure: {type_text(schema)}")
    if "minimum" in schema or "maximum" in schema:
        extra.append(type_text({k: v for k, v in schema.items() if k in ("type", "minimum", "maximum")}))
    return text + (f" ({'; '.join(extra)})" if extra else "")


def _tool_method(spec: Mapping[str, Any]) -> Any:
    """A method calling the env tool ``spec`` through the session, typed and documented from the schema."""
    function = spec["function"]
    name = function["name"]
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required", ()))
    properties = parameters.get("properties") or {}
    bad = [arg for arg in properties if not arg.isidentifier() or keyword.iskeyword(arg)]
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or bad:
        raise ValueError(f"tool {name!r} (arguments {bad}) cannot be a Python method for TRL")
    signature_params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for arg, schema in sorted(properties.items(), key=lambda item: item[0] not in required):
        hint = python_type(schema)
        if arg in required:
            signature_params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=hint))
        else:
            hint = hint | None
            signature_params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=None,
                                                      annotation=hint))
        annotations[arg] = hint
        lines.append(f"    {arg}: {_argument_text(schema)}")
    annotations["return"] = str

    def method(self: Any, **arguments: Any) -> str:
        return self._call(name, {k: v for k, v in arguments.items() if v is not None})

    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(signature_params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    description = " ".join(str(function.get("description", "")).split())
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "") + \
        "\n\nReturns:\n    The env's result of the call."
    return method


def environment_class(
    env_id: str,
    *,
    split: str | None = "test",
    env_kwargs: Mapping[str, Any] | None = None,
    prompt_level: int = 0,
    tool_timeout: float | None = None,
    scorer_timeout: float | None = None,
) -> type:
    """A class to pass as ``environment_factory``: ``reset(**row)``, one method per env tool, ``get_reward()``.

    Parameters
    ----------
    env_id : str
        A registered tool env.
    split, env_kwargs :
        The split and ``gym.make`` arguments of the probe episodes the tool surface is read from
        (rows may name other instances of the same env).
    prompt_level : int
        As for :class:`~causal_gym.agents.llm.LLMAgent` (from 1 on, results carry the budgets left).
    tool_timeout, scorer_timeout : float, optional
        Seconds one tool call, and the ending of an episode left open, may take (None: no budget;
        see *Timeouts* in the module docstring).

    Raises
    ------
    ValueError
        If ``env_id`` is not a tool env, a tool or argument name cannot be a Python method, or a
        timeout is not a positive real.
    """
    tool_timeout = check_budget(tool_timeout, "tool_timeout")
    scorer_timeout = check_budget(scorer_timeout, "scorer_timeout")
    probes = [ToolSession(ref) for ref in episode_refs(env_id, 2, split=split, env_kwargs=env_kwargs)]
    try:
        specs = [_common(a, b) for a, b in zip(probes[0].tool_specs, probes[1].tool_specs)]
    finally:
        for probe in probes:
            probe.close()
    namespace: dict[str, Any] = {spec["function"]["name"]: _tool_method(spec) for spec in specs}
    clash = {"reset", "get_reward", "scores", "session", "guard", "failure"} & set(namespace)
    if clash:
        raise ValueError(f"{env_id} has tools named {sorted(clash)}, which TRL or this class reserve")

    def __init__(self: Any) -> None:
        self.guard = None  # a GuardedSession around the episode's ToolSession once reset
        self.failure = ""

    def reset(self: Any, **row: Any) -> None:
        """Start the row's episode (the row's prompt already holds its system prompt and first message)."""
        if self.guard is not None:
            self.guard.close()
        ref = EpisodeRef.from_row(row)
        if ref.env_id != env_id:
            raise ValueError(f"this environment class plays {env_id}; the row names {ref.env_id}")
        self.guard, self.failure = GuardedSession(ToolSession(ref, prompt_level=prompt_level)), ""
        return None

    def get_reward(self: Any) -> float | None:
        """The env's total reward of the episode (ended first if the model left it open); None if it failed."""
        session = self._require()
        if not self.failure:
            try:
                self.guard.call_sync(session.finish, scorer_timeout, "ending and scoring the episode (scorer_timeout)")
            except BudgetTimeout as exc:
                self.failure = f"{exc}; the episode ends unscored"
        return None if self.failure else session.total_reward

    def _require(self: Any) -> ToolSession:
        if self.guard is None:
            raise RuntimeError("reset() has not been called")
        return self.guard.session

    def _call(self: Any, name: str, arguments: dict[str, Any]) -> str:
        session = self._require()
        if self.failure:
            return self.failure
        was_last_turn = session.last_turn
        try:
            result = self.guard.call_sync(lambda: session.call(name, arguments), tool_timeout,
                                          "the env step (tool_timeout)")
        except BudgetTimeout as exc:
            self.failure = f"{exc}; the episode ends unscored"
            return self.failure
        return "\n\n".join((result, *session.last_turn_notice(was_last_turn)))

    def scores(self: Any) -> dict[str, float]:
        return self._require().scores

    def session(self: Any) -> ToolSession | None:
        return None if self.guard is None else self.guard.session

    namespace.update(__init__=__init__, reset=reset, get_reward=get_reward, _require=_require, _call=_call,
                     scores=property(scores, doc="The episode's final scores (empty until it ends)."),
                     session=property(session, doc="The episode's ToolSession (None before reset)."),
                     __doc__=f"One {env_id} episode per rollout, for TRL's environment_factory "
                             "(see causal_gym.integrations.trl).", __module__=__name__)
    class_name = "".join(part.capitalize() for part in env_id.replace("-", "_").split("_") if part) + "Environment"
    return type(class_name, (), namespace)


def dataset(
    env_id: str,
    episodes: int,
    *,
    first_instance: int = 0,
    split: str | None = "test",
    seed: int = 0,
    repeats: int = 1,
    env_kwargs: Mapping[str, Any] | None = None,
    prompt_level: int = 0,
) -> Any:
    """A ``datasets.Dataset`` of the episodes ``causal-gym run`` plays: a conversational ``prompt``
    (system prompt and first message) and the :class:`EpisodeRef` columns ``reset`` reads."""
    from datasets import Dataset

    rows = []
    for ref in episode_refs(env_id, episodes, first_instance=first_instance, split=split, seed=seed,
                            repeats=repeats, env_kwargs=env_kwargs):
        session = ToolSession(ref, prompt_level=prompt_level)
        try:
            prompt = [{"role": "system", "content": session.system_prompt},
                      {"role": "user", "content": session.first_message}]
        finally:
            session.close()
        rows.append({"prompt": prompt, **ref.to_row()})
    return Dataset.from_list(rows)
