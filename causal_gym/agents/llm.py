"""An LLM agent that plays tool environments over the OpenAI-compatible chat-completions protocol.

:class:`LLMAgent` talks to any server that speaks chat completions — hosted APIs, vLLM, Ollama —
through the official ``openai`` client (imported lazily; ``pip install causal-gym[llm]``). It
implements :class:`~causal_gym.harness.agent.Agent`: ``reset(task)`` builds the system prompt from the
env's task statement, ``act(observation, info)`` sends the last tool result to the model and turns
the model's next tool call into the env's action.

How a tool call reaches the env
-------------------------------
The env converts a JSON tool call into its typed action (``env.unwrapped.parse_tool_call``, which
returns the action or a :class:`~causal_gym.harness.ToolError`; stepping with a ``ToolError``
plays it as an invalid action, so malformed calls come back to the model as error results). The
agent gets that converter through :meth:`LLMAgent.bind`, which whoever runs the episode calls once
with the env before the first ``act``::

    agent = LLMAgent("my-model", base_url="http://localhost:8000/v1")
    agent.bind(env)
    record = rollout(env, agent, seed=0, options={"split": "test", "instance": 0})

Conversation protocol
---------------------
- Native mode (``tool_mode="native"``): the env's tool schemas go in the request's ``tools``; each
  tool call is answered by a ``tool`` message holding the env's result text (the observation's
  ``"last_result"``). Several tool calls in one reply are played one per step, in order (each
  costs a turn). A reply without a tool call is sent to the env as an invalid action (it costs a
  turn, as any other invalid action), so a model that only talks cannot stall an episode.
- JSON mode (``tool_mode="json"``), for servers without tool calling: the system prompt lists the
  tools as compact signatures (:func:`~causal_gym.agents.signatures.describe_tools`) and asks for one object ``{"tool": ..., "arguments": {...}}`` per reply; it is found
  tolerantly (:func:`~causal_gym.agents.reply_parser.parse_json_tool_call`: code fences, prose
  before or after, in time linear in the reply) and results come back as user messages.
- Last turn: when the observation's phase says only ``submit`` is accepted (a budget ran out, or
  an edge list was rejected and one retry is left), the agent asks for the final edge list and
  offers only the ``submit`` tool. A plain-text reply is submitted as the edge list; the env
  reads it tolerantly and, if it rejects it, grants one retry, which the agent asks for in turn.
- Prompt variants: ``prompt_level`` k adds the benchmark's texts of levels 1..k and
  ``stated_target`` its target text, both from ``TaskSpec.prompts`` (the texts belong to the
  benchmark: Heuresis's are in :mod:`causal_gym.envs.heuresis.prompts`, levels 0..3 and targets
  none, CPDAG, DAG, paper §5.4). From level 1 on, each result is followed by the remaining
  budgets. A level or target the task does not offer is refused at ``reset``.

Tool modes
----------
``tool_mode="native"`` sends the env's tool schemas with ``tool_choice`` (default ``"auto"``:
several servers, llama.cpp's among them, drop the tools without it); ``"json"`` asks for one JSON
object per reply in plain text; ``"auto"`` (default) probes the server once per agent with a
one-tool request and plays native if a tool call comes back, JSON otherwise (a small model that
does not call tools natively is also better served by JSON). :meth:`LLMAgent.usage` reports the
mode played, the tool calls the model made, the calls the env rejected, and
``never_called_a_tool``; the runner warns about such episodes, which would otherwise look like
genuine low scores.

Context
-------
``context_window`` (tokens) bounds every request (:class:`~causal_gym.agents.context.ContextWindow`):
old turns are dropped, the system prompt, the start and the recent turns kept, and the env's
current state (``state_summary()``: working graph and budgets, or the lab's records) appended to
the latest result. Without the option the window is learnt from the first over-length error,
which then triggers a trim and a retry instead of a failed episode. ``max_result_chars`` cuts long
tool results for small contexts.

Failures of the API
-------------------
The client's own retries are switched off so the policy is this module's and tested: connection
errors, HTTP 429 and 5xx are retried up to ``max_retries`` times with exponential backoff and
jitter (a numeric ``Retry-After`` header lengthens the wait), a timeout once (the server may still
be generating the abandoned reply); a 5xx that repeats the same message or reports a request
validation error is deterministic and not retried, nor is any other error (400, 401, 404, ...).
The per-request timeout defaults to 30 s plus the time for ``max_tokens`` at 20 tokens/s. A request
that finally fails raises :class:`LLMRequestError`: the episode cannot go on without the model, and
submitting on its behalf would score an infrastructure failure as the agent's answer. The runner
records such an episode as failed, and a rerun plays it again.

Replies the agent cannot read
-----------------------------
What the model writes must never fail the episode: a failed episode is played again, so a model
that could make its reply raise would drop a losing episode and get another try. Whatever a reply
holds -- JSON nested past the interpreter's recursion limit, integers of 100,000 digits, NaN, lone
surrogates, bytes that are not UTF-8 -- it is read as far as it can be and anything left is an
invalid call: the env answers it with an error result, the turn is spent, the episode goes on.
Lone surrogates become U+FFFD (the server could not be sent them back), bytes that are not UTF-8
make the reply unreadable, and a reply whose reading raises for any other reason is unreadable too
(``{"event": "unreadable_reply"}`` in the transcript with the traceback, ``n_unreadable_replies``
in :meth:`LLMAgent.usage`, so a bug of ours on ordinary replies shows up rather than hides). ``episode_time_limit`` (seconds) makes the agent submit the
working graph once it is exceeded.

Record
------
Per episode: :meth:`LLMAgent.transcript` (every message sent and received, with the raw tool-call
arguments, per-reply token usage and finish reason, plus retry/error events) and
:meth:`LLMAgent.usage` (tokens summed from the replies' ``usage``, cost from an optional price table,
requests, retries, API errors, invalid calls). The API key is never stored in either and is
redacted in ``repr``.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym
import numpy as np

from causal_gym._turns import waiting
from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.agents.context import ContextOverflow, ContextWindow, is_overflow
from causal_gym.agents.reply_parser import parse_json_tool_call
from causal_gym.agents.retry import RetryPolicy
from causal_gym.agents.signatures import describe_tools
from causal_gym.harness.agent import TaskSpec
from causal_gym.harness.tool_env import LAST_TURN
from causal_gym.harness.toolbox import ToolError

__all__ = [
    "API_KEY_ENVS",
    "BASE_URL_ENV",
    "EMPTY_SUBMISSION_TEXT",
    "LAST_TURN_TEXT",
    "NOT_RUN_TEXT",
    "UNREADABLE_TEXT",
    "NO_TOOL_CALL_TEXT",
    "MODEL_ENV",
    "STATED_TARGETS",
    "TOOL_CHOICES",
    "TOOL_MODES",
    "LLMAgent",
    "LLMRequestError",
    "budget_status",
    "parse_json_tool_call",
    "system_prompt",
]

logger = logging.getLogger(__name__)

BASE_URL_ENV = "CAUSAL_GYM_LLM_BASE_URL"
"""Environment variable read when ``base_url`` is not given (unset: the client's default)."""
MODEL_ENV = "CAUSAL_GYM_LLM_MODEL"
"""Environment variable read when ``model`` is not given."""
API_KEY_ENVS = ("CAUSAL_GYM_LLM_API_KEY", "OPENAI_API_KEY")
"""Environment variables read, in order, when ``api_key`` is not given."""

TOOL_MODES = ("auto", "native", "json")
SUBMIT = "submit"
"""The tool that ends an episode; every env the agent plays has one (the last turn offers only it)."""
TOOL_CHOICES = ("auto", "required", "none")
STATED_TARGETS = ("none", "cpdag", "dag")

_JSON_MODE_TEXT = (
    "You call a tool by replying with one JSON object and nothing else: "
    '{{"tool": "<tool name>", "arguments": {{...}}}}. One call per reply; its result comes back in the next '
    "message. The tools and their arguments:\n{tools}"
)
# What the model is told, per tool mode, in the protocol's special turns; the framework adapters
# (causal_gym.integrations) send the same texts.
LAST_TURN_TEXT = {
    "native": "Only submit is accepted now. Call submit with your final edge list in 'edges' (for example "
    "'X0 -> X1, X2 -- X3'), or without arguments to submit the working graph.",
    "json": "Only submit is accepted now. Reply with "
    '{"tool": "submit", "arguments": {"edges": "X0 -> X1, X2 -- X3"}} holding your final edge list, or with '
    '{"tool": "submit", "arguments": {}} to submit the working graph.',
}
NO_TOOL_CALL_TEXT = {
    "native": "the reply called no tool; every turn must call exactly one of the tools",
    "json": 'no tool call found in the reply; reply with one JSON object {"tool": "<name>", "arguments": {...}}',
}
EMPTY_SUBMISSION_TEXT = "the reply was empty; submit an edge list, or submit without one to keep the working graph"
NOT_RUN_TEXT = "not run: only submit is accepted now"
UNREADABLE_TEXT = "the reply could not be read ({error}); reply again"
_RAW_CHARS = 1000


class LLMRequestError(RuntimeError):
    """A chat-completions request failed for good (not retryable, or out of retries).

    Attributes
    ----------
    status_code:
        The HTTP status, or None for connection errors and timeouts.
    attempts:
        Requests sent for this completion, the failed ones included.
    """

    def __init__(self, message: str, status_code: int | None, attempts: int) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


@dataclass(frozen=True)
class _Call:
    """One tool call of a reply, waiting to be played.

    ``problem`` is set when the reply held no usable call; ``arguments`` then summarises the reply
    for the env's record.
    """

    call_id: str | None
    name: str | None
    arguments: Any
    problem: str | None = None


def _field(value: Any, key: str) -> Any:
    """``value[key]`` of a reply's JSON object; None when ``value`` is not an object or has no ``key``."""
    return value.get(key) if isinstance(value, dict) else None


def _history_arguments(arguments: Any) -> str:
    """Tool-call arguments as sent back to the server: the model's text when it is a JSON object.

    Some servers re-parse the arguments of earlier tool calls when they render the conversation,
    so invalid JSON in the history would fail every later request; it is wrapped in a valid
    object instead (the transcript keeps the raw text).
    """
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        if isinstance(json.loads(text), dict):
            return text
    except (ValueError, RecursionError):
        pass
    return json.dumps({"invalid_arguments": text[:_RAW_CHARS]})


def _text(value: Any) -> Any:
    """A string of the reply as valid Unicode: lone surrogates, which a JSON body can carry but UTF-8
    cannot, become U+FFFD (sent back to the server as they were, they would fail every later
    request). Anything but a string is returned as it is."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def budget_status(info: Mapping[str, Any]) -> str:
    """The budgets left after a step, as the line that follows each result from prompt level 1 on.

    Examples
    --------
    >>> budget_status({"budgets_remaining": {"turns": 12.0, "tests": float("inf")}})
    '[remaining: turns 12, tests unlimited]'
    """
    remaining = info.get("budgets_remaining") or {}
    parts = [f"{name} {'unlimited' if np.isinf(value) else format(value, 'g')}" for name, value in remaining.items()]
    return f"[remaining: {', '.join(parts)}]" if parts else ""


def system_prompt(task: TaskSpec, prompt_level: int = 0, stated_target: str = "none",
                  tool_mode: str = "native") -> str:
    """The system message of an episode: task statement, prompt-level texts, target, JSON-mode rules.

    Prompt level ``k`` adds the task's texts ``"level_1".."level_k"`` and ``stated_target`` its
    ``"target_<name>"`` text (``TaskSpec.prompts``); JSON mode lists the tools as signatures.

    Raises
    ------
    ValueError
        If the task offers no text for the prompt level or the stated target.
    """
    wanted = [f"level_{k}" for k in range(1, prompt_level + 1)]
    if stated_target != "none":
        wanted.append(f"target_{stated_target}")
    missing = [key for key in wanted if key not in task.prompts]
    if missing:
        offered = ", ".join(sorted(task.prompts)) or "none"
        raise ValueError(f"prompt_level={prompt_level} / stated_target={stated_target!r} need the "
                         f"prompt texts {missing}, which task {task.env_id} does not offer (it offers: {offered})")
    parts = [task.description, *(task.prompts[key] for key in wanted)]
    if tool_mode == "json":
        parts.append(_JSON_MODE_TEXT.format(tools=describe_tools(task.tool_specs)))
    return "\n\n".join(p for p in parts if p)


_CLIENTS = threading.local()
_HTTP: list[Any] = []  # the HTTP library of the installed openai client and the one TLS context of this process's clients
_HTTP_LOCK = threading.Lock()


def _http() -> tuple[Any, Any]:
    """``(module, tls_context)``: the HTTP library the installed ``openai`` is built on (``httpx``
    before openai 3, ``httpx2`` since, and then ``httpx`` may not be installed at all) and one TLS
    context for every client of this process (loading the trust store costs about 70 ms)."""
    with _HTTP_LOCK:
        if not _HTTP:
            from openai import DefaultHttpxClient

            client = next(c for c in DefaultHttpxClient.__mro__[1:] if c.__name__ == "Client")
            module = importlib.import_module(client.__module__.partition(".")[0])
            _HTTP.extend((module, module.create_ssl_context()))
    return _HTTP[0], _HTTP[1]


def _shared_client(base_url: str | None, api_key: str, timeout: float) -> Any:
    """One ``openai.OpenAI`` client per server, key and timeout in each thread, shared by its agents.

    Per thread, not per process: httpx's connection pool takes one lock for every request and
    response and scans all its connections under it, so one client shared by hundreds of episode
    threads spends its time waiting on that lock (issue 32: 16.6% overhead at 64 in flight). All
    clients share one TLS context (:func:`_http`). ``max_retries=0``: retries are this module's policy.
    """
    try:
        from openai import DefaultHttpxClient, OpenAI
    except ImportError as exc:
        raise ImportError("LLMAgent needs the openai package: pip install 'causal-gym[llm]'") from exc
    clients = _CLIENTS.__dict__.setdefault("clients", {})
    key = (base_url, api_key, timeout)
    if key not in clients:
        clients[key] = OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout,
                              http_client=DefaultHttpxClient(verify=_http()[1]))
    return clients[key]


class LLMAgent:
    """An LLM that plays a tool env (Heuresis, CausalArena tool mode) through chat completions.

    See the module docstring for the protocol, the last turn, retries and the record.

    Parameters
    ----------
    model : str, optional
        Model name as the server knows it; default ``$CAUSAL_GYM_LLM_MODEL``. Required one way or
        the other.
    base_url : str, optional
        Server URL ending in ``/v1`` (vLLM, Ollama, a hosted API); default
        ``$CAUSAL_GYM_LLM_BASE_URL``, else the client's default (``$OPENAI_BASE_URL`` or OpenAI).
    api_key : str, optional
        Default ``$CAUSAL_GYM_LLM_API_KEY``, else ``$OPENAI_API_KEY``, else ``"EMPTY"`` (local
        servers ignore it). Sent only in the request's authorization header.
    tool_mode : {"auto", "native", "json"}
        Native tool calling, JSON objects in plain text, or a one-off probe that picks one (see
        *Tool modes* in the module docstring).
    tool_choice : {"auto", "required", "none"} or None, default "auto"
        Sent with the tools in native mode; None sends no ``tool_choice``.
    prompt_level : int
        Prompt level: 0 is the env's neutral task statement; ``k`` adds the task's texts of levels
        1..k (``TaskSpec.prompts``; Heuresis offers 1..3).
    stated_target : {"none", "cpdag", "dag"}
        What the prompt says the submitted graph should be (the task's ``"target_<name>"`` text).
    max_tokens : int or None, default 4096
        Output limit per reply (the paper's output budget per turn); None sends no limit.
    token_limit_param : {"max_tokens", "max_completion_tokens"}
        The request field carrying ``max_tokens`` (OpenAI's reasoning models take only the second).
    temperature : float, optional
        Sampling temperature; None leaves the server's default.
    seed : int, optional
        Passed with every request (servers that support it sample reproducibly) and seeds the
        retry jitter.
    timeout : float, optional
        Seconds per request before it times out; default 30 + ``max_tokens`` / 20 (300 without
        ``max_tokens``).
    max_retries : int, default 5
        Retries of a retryable failure per completion (a timeout is retried once).
    context_window : int, optional
        The model's context window in tokens; requests are trimmed to fit (see *Context*).
    max_result_chars : int, optional
        Longest tool result passed to the model; longer ones are cut with a marker.
    episode_time_limit : float, optional
        Wall seconds per episode; after it the agent submits the working graph.
    retry_base_delay, retry_max_delay : float, default 1 and 60
        Backoff before retry ``k`` (0-based): ``min(retry_max_delay, retry_base_delay * 2**k)``
        times a uniform factor in [0.5, 1); at least a numeric ``Retry-After`` (capped as well).
    prices : mapping, optional
        Model name -> ``(dollars per 1M prompt tokens, dollars per 1M completion tokens)``; the
        cost in :meth:`usage` is None for a model not in it.
    extra_body : mapping, optional
        Extra request fields for server-specific options (e.g. vLLM sampling or reasoning
        settings), passed as the client's ``extra_body``.

    Raises
    ------
    ValueError
        On an invalid setting or when no model is given.

    Examples
    --------
    >>> agent = LLMAgent("qwen3-8b", base_url="http://localhost:8000/v1", api_key="secret", prompt_level=2)
    >>> "secret" in repr(agent)
    False
    """

    # Episode state, set by _clear_episode() (declared here so its types hold before the first reset)
    _messages: list[dict[str, Any]]
    _transcript: list[dict[str, Any]]
    _queue: list[_Call]
    _played: _Call | None
    _prompt_tokens: int
    _completion_tokens: int
    _n_requests: int
    _n_retries: int
    _n_api_errors: int
    _n_invalid_calls: int
    _n_without_usage: int
    _n_rejected_calls: int
    _n_tool_calls: int
    _turns_dropped: int
    _n_unreadable: int
    _jitter: np.random.Generator
    _started: float

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        tool_mode: str = "auto",
        tool_choice: str | None = "auto",
        prompt_level: int = 0,
        stated_target: str = "none",
        max_tokens: int | None = 4096,
        token_limit_param: str = "max_tokens",
        temperature: float | None = None,
        seed: int | None = None,
        timeout: float | None = None,
        max_retries: int = 5,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 60.0,
        prices: Mapping[str, tuple[float, float]] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        context_window: int | None = None,
        max_result_chars: int | None = None,
        episode_time_limit: float | None = None,
    ) -> None:
        model = model if model is not None else os.environ.get(MODEL_ENV)
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty string: pass model= or set ${MODEL_ENV}")
        self.model = model
        self.base_url = base_url if base_url is not None else os.environ.get(BASE_URL_ENV) or None
        if self.base_url is not None and not isinstance(self.base_url, str):
            raise ValueError(f"base_url must be a string, got {type(self.base_url).__name__}")
        key = api_key if api_key is not None else next((os.environ[v] for v in API_KEY_ENVS if os.environ.get(v)), None)
        if key is not None and not isinstance(key, str):
            raise ValueError("api_key must be a string")
        self._api_key = key or "EMPTY"
        self.tool_mode = check_choice(tool_mode, TOOL_MODES, "tool_mode")
        self.tool_choice = None if tool_choice is None else check_choice(tool_choice, TOOL_CHOICES, "tool_choice")
        self.prompt_level = check_count(prompt_level, "prompt_level", 0)
        self.stated_target = check_choice(stated_target, STATED_TARGETS, "stated_target")
        self.max_tokens = check_count(max_tokens, "max_tokens", 1, allow_none=True)
        self.token_limit_param = check_choice(
            token_limit_param, ("max_tokens", "max_completion_tokens"), "token_limit_param"
        )
        self.temperature = None if temperature is None else check_real(temperature, "temperature", 0.0)
        self.seed = check_count(seed, "seed", 0, allow_none=True)
        if timeout is None:
            timeout = 300.0 if self.max_tokens is None else 30.0 + self.max_tokens / 20.0
        self.timeout = check_real(timeout, "timeout", 0.0, strict=True)
        self.context_window = check_count(context_window, "context_window", 256, allow_none=True)
        self.max_result_chars = check_count(max_result_chars, "max_result_chars", 100, allow_none=True)
        self.episode_time_limit = (
            None if episode_time_limit is None else check_real(episode_time_limit, "episode_time_limit", 0.0, strict=True)
        )
        self.max_retries = check_count(max_retries, "max_retries", 0)
        self.retry_base_delay = check_real(retry_base_delay, "retry_base_delay", 0.0)
        self.retry_max_delay = check_real(retry_max_delay, "retry_max_delay", 0.0)
        self.prices: dict[str, tuple[float, float]] = {}
        for name, pair in dict(prices or {}).items():
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"prices[{name!r}] must be (input, output) dollars per 1M tokens, got {pair!r}")
            self.prices[name] = (check_real(pair[0], f"prices[{name!r}][0]", 0.0),
                                 check_real(pair[1], f"prices[{name!r}][1]", 0.0))
        if extra_body is not None and not isinstance(extra_body, Mapping):
            raise ValueError(f"extra_body must be a mapping, got {type(extra_body).__name__}")
        self.extra_body = dict(extra_body or {})
        self._client: Any = None
        self._convert: Any = None
        self._state: Any = None
        self._task: TaskSpec | None = None
        self._mode: str | None = None if self.tool_mode == "auto" else self.tool_mode
        self._probe: dict[str, Any] | None = None
        self._context = ContextWindow(self.context_window, self.max_tokens)
        self._clear_episode()

    def __repr__(self) -> str:
        return (
            f"LLMAgent(model={self.model!r}, base_url={self.base_url!r}, api_key='***', tool_mode={self.tool_mode!r}, "
            f"prompt_level={self.prompt_level}, stated_target={self.stated_target!r})"
        )

    # -- configuration -------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The settings that shape the agent's behaviour, for run records (no API key)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "tool_mode": self.tool_mode,
            "tool_choice": self.tool_choice,
            "prompt_level": self.prompt_level,
            "stated_target": self.stated_target,
            "max_tokens": self.max_tokens,
            "token_limit_param": self.token_limit_param,
            "temperature": self.temperature,
            "seed": self.seed,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "prices": {k: list(v) for k, v in self.prices.items()},
            "extra_body": dict(self.extra_body),
            "context_window": self.context_window,
            "max_result_chars": self.max_result_chars,
            "episode_time_limit": self.episode_time_limit,
        }

    def bind(self, env: gym.Env) -> None:
        """Use ``env``'s converter from JSON tool calls to actions (call before the first ``act``).

        Raises
        ------
        TypeError
            If the env has no ``parse_tool_call`` (it is not a tool env).
        """
        convert = getattr(env.unwrapped, "parse_tool_call", None)
        if not callable(convert):
            raise TypeError(f"{type(env.unwrapped).__name__} has no parse_tool_call; LLMAgent plays tool envs only")
        self._convert = convert
        state = getattr(env.unwrapped, "state_summary", None)
        self._state = state if callable(state) else None

    def system_prompt(self, task: TaskSpec) -> str:
        """The system message for ``task`` (see :func:`system_prompt`) in the mode played.

        Raises
        ------
        ValueError
            If the task offers no text for the prompt level or the stated target.
        """
        return system_prompt(task, self.prompt_level, self.stated_target, self._mode or "native")

    # -- the Agent protocol --------------------------------------------------------------------

    def reset(self, task: TaskSpec) -> None:
        """Start an episode: clear the conversation and the usage counters, write the system prompt."""
        names = [spec["function"]["name"] for spec in task.tool_specs]
        if SUBMIT not in names:
            raise ValueError(f"LLMAgent needs a tool env with a '{SUBMIT}' tool; task {task.env_id} has {names}")
        self._task = task
        self._clear_episode()
        if self._mode is None:
            self._mode = self._probe_tool_mode()
            self._transcript.append(dict(self._probe or {}))
        system = {"role": "system", "content": self.system_prompt(task)}
        # the record says what the model is offered: the tools with each request (native), or their
        # schemas in the system prompt (json)
        offered = {"tool_mode": self._mode, "tools": [spec["function"]["name"] for spec in task.tool_specs],
                   "tool_choice": self.tool_choice if self._mode == "native" else None}
        self._say(system, {**system, **offered})

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> Any:
        """Report the last result to the model and return its next call as an env action.

        Returns the typed action of a valid call, or a :class:`~causal_gym.harness.ToolError`
        for a malformed one (the env answers it with an error result).

        Raises
        ------
        RuntimeError
            If called before :meth:`bind` or :meth:`reset`.
        LLMRequestError
            If the server fails for good (see the module docstring).
        """
        if self._convert is None:
            raise RuntimeError("LLMAgent.act() needs the env's tool-call converter: call agent.bind(env) first")
        if self._task is None:
            raise RuntimeError("LLMAgent.act() called before reset(task)")
        if self._played is not None and self._played.problem is None and not int(observation.get("last_ok", 1)):
            self._n_rejected_calls += 1
        result = str(observation["last_result"])
        if self.max_result_chars is not None and len(result) > self.max_result_chars:
            result = result[: self.max_result_chars] + f"\n[result cut to {self.max_result_chars} of {len(result)} characters]"
        status = budget_status(info) if self.prompt_level >= 1 else ""
        if status:
            result = f"{result}\n{status}"
        last_turn = int(observation["phase"]) == LAST_TURN
        if not last_turn and self._out_of_time():
            self._transcript.append({"event": "episode_time_limit", "seconds": self.episode_time_limit})
            self._played = _Call(None, SUBMIT, {})
            return self._action(self._played)
        if self._played is None:
            self._say({"role": "user", "content": result})
        else:
            self._answer(self._played, result)
        if last_turn:
            for call in self._queue:
                self._answer(call, NOT_RUN_TEXT)
            self._queue.clear()
            self._say({"role": "user", "content": LAST_TURN_TEXT[self._reset_mode]})
        if not self._queue:
            self._queue.extend(self._ask(last_turn))
        self._played = self._queue.pop(0)
        return self._action(self._played)

    # -- the record ----------------------------------------------------------------------------

    def transcript(self) -> list[dict[str, Any]]:
        """The episode's conversation: every message (assistant replies with raw tool-call arguments,
        ``usage`` and ``finish_reason``) and ``{"event": ...}`` entries for API errors and retries."""
        return json.loads(json.dumps(self._transcript))

    def usage(self) -> dict[str, Any]:
        """Token counts, cost (None without a price for the model), requests, retries and errors of the
        episode. ``n_requests`` counts every request sent, failed ones included; ``n_tool_calls``
        the calls the model made (native or JSON); ``n_invalid_calls`` the malformed ones sent to
        the env; ``n_rejected_calls`` well-formed calls the env refused; ``never_called_a_tool``
        flags an episode in which the model made no call at all; ``turns_dropped`` counts turns
        trimmed to fit the context; ``n_unreadable_replies`` the replies that could not be read
        (see *Replies the agent cannot read*); ``tool_mode`` is the mode played."""
        price = self.prices.get(self.model)
        cost = None if price is None else (self._prompt_tokens * price[0] + self._completion_tokens * price[1]) / 1e6
        return {
            "model": self.model,
            "prompt_tokens": self._prompt_tokens,
            "completion_tokens": self._completion_tokens,
            "total_tokens": self._prompt_tokens + self._completion_tokens,
            "cost": cost,
            "n_requests": self._n_requests,
            "n_retries": self._n_retries,
            "n_api_errors": self._n_api_errors,
            "n_invalid_calls": self._n_invalid_calls,
            "n_rejected_calls": self._n_rejected_calls,
            "n_tool_calls": self._n_tool_calls,
            "never_called_a_tool": self._n_requests > 0 and self._n_tool_calls == 0,
            "turns_dropped": self._turns_dropped,
            "n_replies_without_usage": self._n_without_usage,
            "n_unreadable_replies": self._n_unreadable,
            "tool_mode": self._mode,
        }

    # -- conversation --------------------------------------------------------------------------

    @property
    def _reset_mode(self) -> str:
        """The tool mode, which :meth:`reset` settles (``tool_mode="auto"`` probes the server)."""
        if self._mode is None:
            raise RuntimeError("the tool mode is settled by reset(task): call it first")
        return self._mode

    def _clear_episode(self) -> None:
        self._messages = []
        self._transcript = []
        self._queue = []
        self._played = None
        self._prompt_tokens = self._completion_tokens = 0
        self._n_requests = self._n_retries = self._n_api_errors = self._n_invalid_calls = self._n_without_usage = 0
        self._n_rejected_calls = self._n_tool_calls = self._turns_dropped = self._n_unreadable = 0
        self._jitter = np.random.default_rng(self.seed if self.seed is not None else 0)
        self._started = time.monotonic()

    def _out_of_time(self) -> bool:
        return self.episode_time_limit is not None and time.monotonic() - self._started > self.episode_time_limit

    def _say(self, message: dict[str, Any], record: dict[str, Any] | None = None) -> None:
        """Append ``message`` to the conversation; ``record`` replaces it in the transcript."""
        self._messages.append(message)
        self._transcript.append(record if record is not None else message)

    def _answer(self, call: _Call, text: str) -> None:
        """Send the result of ``call`` back: a tool message in native mode, else a user message."""
        if call.call_id is not None:
            self._say({"role": "tool", "tool_call_id": call.call_id, "content": text})
        else:
            self._say({"role": "user", "content": text})

    def _ask(self, last_turn: bool) -> list[_Call]:
        """Request the model's next reply and return the calls it makes (at least one).

        A reply that cannot be read is one invalid call (see *Replies the agent cannot read*): the
        conversation is put back as it was before the reply and gets an empty assistant turn."""
        assert self._task is not None
        tools = list(self._task.tool_specs)
        if last_turn:
            tools = [spec for spec in tools if spec["function"]["name"] == SUBMIT]
        try:
            response = self._complete(tools)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # the framing is the server's; model text broke it
            return [self._unreadable(exc, len(self._messages), len(self._transcript))]
        usage = _field(response, "usage")
        if usage is None:
            self._n_without_usage += 1
        else:
            self._prompt_tokens += int(_field(usage, "prompt_tokens") or 0)
            self._completion_tokens += int(_field(usage, "completion_tokens") or 0)
        messages, transcript = len(self._messages), len(self._transcript)
        try:
            return self._read(response, last_turn)
        except Exception as exc:  # noqa: BLE001 -- whatever a reply holds, it is the model's turn, never a failed episode
            return [self._unreadable(exc, messages, transcript)]

    def _unreadable(self, exc: Exception, messages: int, transcript: int) -> _Call:
        """The invalid call standing for a reply that could not be read; the conversation is cut back to
        ``messages`` (and the transcript to ``transcript`` entries) first, so no half-recorded reply stays."""
        del self._messages[messages:], self._transcript[transcript:]
        self._n_unreadable += 1
        error = type(exc).__name__
        self._say({"role": "assistant", "content": ""}, {"event": "unreadable_reply", "error": error,
                                                         "traceback": traceback.format_exc()[-_RAW_CHARS:]})
        return _Call(None, None, {"reply": f"<unreadable: {error}>"}, UNREADABLE_TEXT.format(error=error))

    def _read(self, response: Any, last_turn: bool) -> list[_Call]:
        """The calls of a reply (at least one), recorded in the conversation."""
        if not isinstance(response, dict):
            raise TypeError(f"the reply is a JSON {type(response).__name__}, not an object")
        usage = _field(response, "usage")
        choices = _field(response, "choices")
        choice = choices[0] if choices else None
        message = _field(choice, "message")
        content = _text(_field(message, "content") or "")
        meta = {
            "usage": None if usage is None else {"prompt_tokens": _field(usage, "prompt_tokens"),
                                                 "completion_tokens": _field(usage, "completion_tokens")},
            "finish_reason": _field(choice, "finish_reason"),
        }
        reasoning = _text(_field(message, "reasoning_content"))
        if reasoning:
            meta["reasoning_content"] = reasoning
        tool_calls = _field(message, "tool_calls") or []
        if self._mode == "native" and tool_calls:
            calls = [
                _Call(_field(tc, "id") or f"call_{len(self._messages)}_{k}", _text(_field(tc["function"], "name")),
                      _text(_field(tc["function"], "arguments")))
                for k, tc in enumerate(tool_calls)
            ]
            self._n_tool_calls += len(calls)
            # content "" rather than null: servers that validate messages strictly reject null.
            sent = {"role": "assistant", "content": content, "tool_calls": [
                {"id": c.call_id, "type": "function",
                 "function": {"name": c.name, "arguments": _history_arguments(c.arguments)}} for c in calls
            ]}
            raw = {**sent, "tool_calls": [
                {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls
            ]}
            self._say(sent, {**raw, **meta})
            return calls
        self._say({"role": "assistant", "content": content}, {"role": "assistant", "content": content, **meta})
        if self._mode == "json":
            found = parse_json_tool_call(content)
            if found is not None:
                self._n_tool_calls += 1
                return [_Call(None, *found)]
        if last_turn:
            # The last turn reads a plain reply as the edge list; the env parses it tolerantly.
            if content.strip():
                return [_Call(None, SUBMIT, {"edges": content})]
            return [_Call(None, SUBMIT, {"reply": ""}, EMPTY_SUBMISSION_TEXT)]
        return [_Call(None, None, {"reply": content[:_RAW_CHARS]}, NO_TOOL_CALL_TEXT[self._reset_mode])]

    def _action(self, call: _Call) -> Any:
        if call.problem is not None:
            action = ToolError(call.problem, call.name, call.arguments)
        else:
            try:
                action = self._convert(call.name, call.arguments)
            except Exception as exc:  # noqa: BLE001 -- the env's converter never raises on agent input; if it
                # does, the call is still the model's invalid one, not a failed episode
                action = ToolError(f"the call could not be read ({type(exc).__name__})", None,
                                   {"reply": f"<unreadable: {type(exc).__name__}>"})
        if isinstance(action, ToolError):
            self._n_invalid_calls += 1
        return action

    # -- the API -------------------------------------------------------------------------------

    def _openai(self) -> Any:
        if self._client is None:
            self._client = _shared_client(self.base_url, self._api_key, self.timeout)
        return self._client

    def _create(self, request: dict[str, Any]) -> Any:
        """POST the request as it is and return the reply's JSON as it came.

        The request is plain JSON already and the agent reads a few fields of the reply, so neither
        goes through the client's typed layer: its per-request transformation of the whole
        conversation cost more CPU than the rest of the harness, and its parse of the reply into
        models a sixth of what is left (issue 32). Status errors are still the client's
        ``openai.APIError`` subclasses; a body that is not UTF-8 raises ``UnicodeDecodeError`` and one
        that is not JSON ``json.JSONDecodeError``: unreadable replies for :meth:`_ask`."""
        body = dict(request)
        body.update(body.pop("extra_body", None) or {})
        client = self._openai()
        with waiting():  # the round trip: other episode threads of a threaded run compute meanwhile
            reply = client.post("/chat/completions", cast_to=_http()[0].Response, body=body)
        return json.loads(reply.content)

    def _request(self, messages: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            request["tools"] = [dict(t) for t in tools]
            if self.tool_choice is not None:
                request["tool_choice"] = self.tool_choice
        if self.max_tokens is not None:
            request[self.token_limit_param] = self.max_tokens
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.seed is not None:
            request["seed"] = self.seed
        if self.extra_body:
            request["extra_body"] = dict(self.extra_body)
        return request

    def _fitted(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The conversation as sent: trimmed to the context window, with the current state when trimmed."""
        try:
            messages, dropped = self._context.fit(self._messages, tools)
        except ContextOverflow as exc:
            raise LLMRequestError(str(exc), None, 0) from exc
        if dropped:
            self._turns_dropped = max(self._turns_dropped, dropped)
            if self._state is not None:
                last = dict(messages[-1])
                last["content"] = f"{last.get('content') or ''}\n[current state: {self._state()}]"
                messages[-1] = last
        return messages

    def _complete(self, tools: Sequence[Mapping[str, Any]]) -> Any:
        """One chat completion: fitted to the context (learnt from overflow errors, at most three
        times), with the retries :class:`~causal_gym.agents.retry.RetryPolicy` allows."""
        import openai

        tools = tools if self._mode == "native" else ()
        policy = RetryPolicy(self.max_retries, self.retry_base_delay, self.retry_max_delay, self._jitter)
        overflows = 0
        while True:
            messages = self._fitted(tools)
            self._n_requests += 1
            try:
                response = self._create(self._request(messages, tools))
            except openai.APIError as exc:
                self._n_api_errors += 1
                status = getattr(exc, "status_code", None)
                text = str(exc)
                if isinstance(exc, openai.BadRequestError) and is_overflow(text) and overflows < 3 \
                        and self._context.learn(text):
                    overflows += 1
                    self._transcript.append({"event": "context_overflow", "status_code": status,
                                             "message": text[:_RAW_CHARS], "window": self._context.window})
                    continue
                attempt = policy.attempt + 1
                decision = policy.decide(exc)
                self._transcript.append({
                    "event": "api_error", "status_code": status, "error": type(exc).__name__,
                    "message": text[:_RAW_CHARS], "attempt": attempt, "retry_in": decision.delay,
                })
                if not decision.retry:
                    raise LLMRequestError(
                        f"chat completion failed ({decision.kind}) after {attempt} request(s): {type(exc).__name__}: {exc}",
                        status,
                        attempt,
                    ) from exc
                logger.warning("chat completion failed (%s); retry %d in %.2f s", type(exc).__name__, attempt,
                               decision.delay)
                self._n_retries += 1
                with waiting():
                    time.sleep(cast(float, decision.delay))
                continue
            prompt_tokens = _field(_field(response, "usage"), "prompt_tokens")
            if prompt_tokens:
                self._context.observe(messages, tools, int(prompt_tokens))
            return response

    def _probe_tool_mode(self) -> str:
        """``"native"`` if the server returns a tool call for a one-tool request, else ``"json"`` (once per agent)."""
        import openai

        tool = {"type": "function", "function": {
            "name": "ping", "description": "Answer the ping.",
            "parameters": {"type": "object", "properties": {}, "required": []}}}
        request = self._request([{"role": "user", "content": "Call the function ping."}], [tool])
        request[self.token_limit_param] = 64
        if self.tool_choice is None:
            request["tool_choice"] = "auto"
        try:
            response = self._create(request)
            choices = _field(response, "choices")
            calls = _field(_field(choices[0], "message"), "tool_calls") if isinstance(choices, list) and choices else None
            mode = "native" if calls else "json"
            self._probe = {"event": "tool_mode_probe", "mode": mode, "tool_calls": len(calls or ())}
        except (openai.APIError, UnicodeDecodeError, json.JSONDecodeError) as exc:  # an unreadable reply: no ping
            mode = "json"
            self._probe = {"event": "tool_mode_probe", "mode": mode, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        logger.info("tool mode probe: %s", self._probe)
        return mode
