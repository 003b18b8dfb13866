"""An OpenEnv server for any tool env: ``causal-gym serve --env ID``.

OpenEnv (``openenv-core``) serves an ``Environment`` (``reset`` / ``step`` / ``state``) over HTTP and a
WebSocket per session; its ``EnvClient`` (and ``GenericEnvClient``) plays it. :func:`make_app` builds that
app with OpenEnv's own server (``HTTPEnvServer``) around :class:`ToolSessionEnvironment`: one
:class:`~causal_gym.integrations.core.ToolSession` per WebSocket session, so concurrent sessions are
independent episodes, each with its own env.

Episodes
--------
- ``reset(**row)`` takes an :class:`~causal_gym.integrations.core.EpisodeRef` row (``seed``,
  ``instance``, ``split``, ``repeat``; a TRL dataset row works as it is): the same seeds as
  ``causal-gym run --seed`` gives that episode, so every member of a GRPO group that resets with one
  row plays one instance. A row naming another env id or other env kwargs is refused. These are the
  open (published) splits; a sealed server chooses the episodes itself (*Seals* below).
- Actions are OpenEnv's MCP-style ``CallToolAction`` (``tool_name``, ``arguments``): one tool call
  per step, validated by the env's converter (a malformed call is the env's invalid action and its
  error text comes back; the episode goes on).
- Observations carry the result text, the tools offered now (only ``submit`` in the last turn), the
  step's reward and ``done``; the system prompt and first message at reset; the final numeric
  ``scores`` once the episode has ended, and nothing else of the env's info (the truth stays hidden).
- A step that raises (the env's scorer, a sandbox, the machine) ends the episode as a ``failure``:
  ``done`` with reward None, never a reward of 0 a trainer would learn from; the exception goes to
  the server's log, only its type to the client (its text may quote the instance).
- ``tool_timeout`` bounds one step (the env's work; the step that ends the episode includes its
  scoring, so there is no separate scorer budget here; the model's time is the client's). A step
  past it ends the episode as a ``failure`` naming the budget, on time: its thread is abandoned
  and closes the env when it returns.

Sessions and capacity
---------------------
- A WebSocket session (OpenEnv's ``/ws``, and its MCP socket ``/mcp``) lives while its socket is open;
  at most ``max_sessions`` at once. A client that vanishes without closing its socket is found by the
  WebSocket keepalive: ``causal-gym serve`` pings every ``session_timeout / 2`` seconds and drops a peer
  that does not answer within as long, so its session is closed within ``session_timeout`` (default 60 s).
  An open socket that is merely quiet is a client thinking (a model call can take minutes); it keeps
  its session, since its WebSocket library answers the pings (OpenEnv's clients do, the sync one from
  a thread of its own), unless the client blocks its event loop for longer than the timeout.
- Sessions made over HTTP (OpenEnv's ``openenv/session/create`` on ``POST /mcp``) have no socket to
  watch: each is closed once idle (no request naming it) for ``session_timeout`` seconds, and they have
  an allowance of their own (also ``max_sessions``), so they never take a WebSocket client's place.
  They can do little here anyway: a tool env serves no MCP tools.
- A client past capacity gets OpenEnv's refusal, the error message with code ``CAPACITY_REACHED``
  (``active_sessions``, ``max_sessions``), which OpenEnv's client raises as a ``RuntimeError`` from
  its first call. The socket stays open for that call (at most :data:`REFUSAL_GRACE` seconds) and is
  then closed with code 1013 (try again later) and the reason, never a bare 1000 (OK) close that a
  client's first call would meet before reading the refusal.
- A socket the client closes (normally or not) leaves nothing in the server's log.
- At most ``env_threads`` env resets, steps and final scorings run at once; the others wait their
  turn, outside any budget (a step abandoned at its timeout gives its turn back). The interpreter lock runs them one at a time anyway, and hundreds of
  runnable threads starve the event loop that answers new connections, whose clients then fail
  their opening handshake (``benchmarks/openenv_capacity.py``).

Seals
-----
Under a seal (``seal=``, else the environment variable ``CAUSAL_GYM_SEAL``; :mod:`causal_gym.seal`) the
server plays one sealed evaluation: the episodes ``causal-gym run --seal-file F --episodes N
--repeats R --split S --seed B`` plays (the same instances and env seeds), each once, into a run store.

- The server, not the client, chooses the episode: ``reset()`` takes no row and no seed (one naming a
  split, instance, repeat, seed or env is refused) and starts the next episode of the plan that the
  run store does not hold yet. Once every episode has been handed out, ``reset`` is refused.
- An episode handed out is final: a client that leaves, is dropped or resets before submitting has
  its episode ended as the env ends one whose agent stops (its working graph is submitted), and
  scored. A line with status ``interrupted`` is written when the episode is handed out and replaced
  by its final line (the run store keeps the last line per episode), so an episode cut off by a
  crash of the server itself stays ``interrupted`` and is never handed out again from this store.
  One store per seal: a new store under the same seal would hand the instances out again.
- The client sees no reward (None at every step) and no ``scores``, during the evaluation or after;
  each episode's line (the runner's layout: status, reward, scores, record) is in the run store,
  which ``causal-gym report DIR`` reads.
- OpenEnv's stateless HTTP ``/reset``, ``/step`` and ``/state`` (each makes an env of its own) are not
  served; the ``seal`` never travels in ``env_kwargs`` (which the run store records).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import FastAPI
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.env_server.types import ConcurrencyConfig, Observation, ServerMode, State
from pydantic import Field
from starlette.websockets import WebSocketDisconnect

import causal_gym
from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_count, check_real
from causal_gym.envs.benchmark import takes_seal
from causal_gym.harness.rollout import episode_key
from causal_gym.integrations._threads import BudgetTimeout, GuardedSession, check_budget
from causal_gym.integrations.core import EpisodeRef, ToolSession
from causal_gym.seal import OPEN, Seal, resolve_seal

__all__ = ["REFUSAL_GRACE", "SESSION_TIMEOUT", "EpisodeLog", "SealedEvaluation", "ToolObservation",
           "ToolSessionEnvironment", "default_env_threads", "make_app"]

_LOG = logging.getLogger(__name__)

SESSION_TIMEOUT = 60.0
"""Seconds after which a session whose client has gone is closed (module docstring)."""

REFUSAL_GRACE = 10.0
"""Seconds a refused WebSocket stays open for the client's first call to read the refusal."""

AGENT = "openenv"
"""The ``agent`` of a sealed server's run store: whatever played through OpenEnv's protocol."""


def default_env_threads() -> int:
    """Env resets and steps run at once by default: the CPU count, at most 4."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cores))


class ToolObservation(Observation):
    """What the agent sees after a reset or a tool call."""

    text: str = Field(default="", description="The tool's result (at reset: the episode's first message)")
    system_prompt: str = Field(default="", description="The system prompt our LLM agent sends (at reset only)")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas offered now")
    last_turn: bool = Field(default=False, description="Only 'submit' is accepted now")
    scores: dict[str, float] = Field(default_factory=dict,
                                     description="Final numeric scores (once done; never under a seal)")
    failure: str = Field(default="", description="Why the episode ended unscored (a failed step), if it did")


class EpisodeLog(Protocol):
    """Where a sealed server keeps its episodes: a run store (:class:`causal_gym.eval.store.RunStore`)."""

    def initialize(self, config: Mapping[str, Any], version: str) -> None: ...

    def append(self, line: Mapping[str, Any]) -> None: ...

    def episodes(self) -> list[dict[str, Any]]: ...


class SealedEvaluation:
    """The episodes of a sealed server, each handed out once, and their lines in its run store.

    Parameters
    ----------
    env_id, env_kwargs :
        The served env (it must take ``seal=``).
    seal : Seal
    store : EpisodeLog
        Initialised here with the runner's ``run.json`` (agent ``"openenv"``); a store holding another
        configuration is refused, one holding this one is resumed (its episodes are not handed out again).
    episodes, repeats, split, seed :
        The plan, as ``causal-gym run``'s flags: instances ``0 .. episodes-1`` of ``split``, ``repeats``
        episodes each, env seeds from the base ``seed``.
    tool_timeout : float or None
        Recorded in ``run.json`` like the runner's.

    Raises
    ------
    ValueError
        For a bad plan, or a store holding another run.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any], seal: Seal, store: EpisodeLog, *, episodes: int,
                 repeats: int = 1, split: str = "test", seed: int = 0, tool_timeout: float | None = None) -> None:
        check_count(episodes, "episodes", 1)
        check_count(repeats, "repeats", 1)
        check_count(seed, "seed", 0)
        if not isinstance(split, str) or not split:
            raise ValueError(f"split must be a split name, got {split!r}")
        self.env_id, self.env_kwargs, self.seal, self.store = env_id, dict(env_kwargs), seal, store
        timeouts = {} if tool_timeout is None else {"tool_timeout": tool_timeout}
        self.config = to_jsonable({
            "env_ids": [env_id], "split": split, "instances": list(range(episodes)), "repeats": repeats,
            "seed": seed, "agent": AGENT, "agent_kwargs": {}, "env_kwargs": self.env_kwargs, "max_steps": 100_000,
            "seal": seal.fingerprint, **timeouts,
        })
        store.initialize(self.config, causal_gym.__version__)
        taken = {line["key"] for line in store.episodes()}
        plan = (EpisodeRef(env_id, instance, split, seed, repeat, self.env_kwargs)
                for instance in range(episodes) for repeat in range(repeats))
        self._left = deque(ref for ref in plan if self.key(ref) not in taken)
        self._lock = threading.Lock()

    @staticmethod
    def key(ref: EpisodeRef) -> str:
        """The run store's key of ``ref``."""
        return episode_key(ref.env_id, ref.split, ref.instance, ref.repeat)

    @property
    def left(self) -> int:
        """Episodes not handed out yet."""
        return len(self._left)

    def hand_out(self) -> EpisodeRef:
        """The next episode of the plan, marked in the store as handed out.

        Raises
        ------
        ValueError
            When every episode has been handed out.
        """
        with self._lock:
            if not self._left:
                raise ValueError("this sealed evaluation has handed out all its episodes; their scores are on the "
                                 "server")
            ref = self._left.popleft()
            self.store.append(self._line(ref, status="interrupted", reward=None, steps=None, scores={}, record=None,
                                         error="the server stopped before the episode ended", wall_time=None))
        return ref

    def record(self, session: ToolSession) -> None:
        """The final line of an episode that has ended."""
        record = session.record()
        self._append(self._line(session.ref, status=record.status, error=None, reward=record.total_reward,
                                steps=record.steps, scores=record.final_info.get("scores", {}),
                                record=record.to_dict(), wall_time=record.wall_time))

    def record_failure(self, ref: EpisodeRef, error: BaseException, started: float) -> None:
        """The final line of an episode a failed reset, step or scoring ended (a timeout for :class:`BudgetTimeout`)."""
        fields: dict[str, Any] = {"status": "failed", "traceback": "".join(traceback.format_exception(error))}
        if isinstance(error, BudgetTimeout):
            fields = {"status": "timeout", "timeout": "tool", "traceback": None}
        self._append(self._line(ref, **fields, error=f"{type(error).__name__}: {error}", reward=None, steps=None,
                                scores={}, record=None, wall_time=time.perf_counter() - started))

    def _line(self, ref: EpisodeRef, **fields: Any) -> dict[str, Any]:
        return to_jsonable({
            "key": self.key(ref), "env_id": ref.env_id, "split": ref.split, "instance": ref.instance,
            "repeat": ref.repeat, "env_seed": ref.env_seed, "agent_seed": None, "agent": AGENT, "agent_kwargs": {},
            "seal": self.seal.fingerprint, "trace": None, "usage": None, "transcript": None, **fields,
            "causal_gym_version": causal_gym.__version__,
        })

    def _append(self, line: Mapping[str, Any]) -> None:
        with self._lock:  # one writer at a time: the store cuts a torn last line before appending
            self.store.append(line)


class ToolSessionEnvironment(Environment):
    """One tool env episode per session, played one tool call per step (see the module docstring).

    ``evaluation`` makes it a session of a sealed server (the episodes are handed out, recorded and
    never scored to the client); without it, it plays the open splits. ``work_slots`` is the server's
    semaphore of env threads (None: no bound).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, prompt_level: int = 0,
                 tool_timeout: float | None = None, *, evaluation: SealedEvaluation | None = None,
                 work_slots: threading.Semaphore | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.prompt_level = prompt_level
        self.tool_timeout = check_budget(tool_timeout, "tool_timeout")
        self.evaluation = evaluation
        self.work_slots = work_slots
        self._open_seal = OPEN if takes_seal(env_id) else None  # the open splits, whatever CAUSAL_GYM_SEAL says
        self.guard: GuardedSession | None = None
        self.failure = ""
        self._recorded = False
        self._started = 0.0
        self._state = State(episode_id=None, step_count=0)

    @contextlib.contextmanager
    def _slot(self) -> Iterator[None]:
        """Hold one of the server's env threads (waiting for it is charged to no budget)."""
        if self.work_slots is None:
            yield
            return
        with self.work_slots:
            yield

    def reset(self, seed: int | None = None, episode_id: str | None = None, **row: Any) -> ToolObservation:
        """Start the episode of ``row`` (its base ``seed``, ``instance``, ``split``, ``repeat``); under a
        seal, the next episode of the evaluation (no row, no seed)."""
        if self.evaluation is not None:
            if seed is not None or row:
                named = sorted(row) + (["seed"] if seed is not None else [])
                raise ValueError(f"under a seal the server chooses each episode; call reset() without a row or a "
                                 f"seed (got {', '.join(named)})")
        else:
            fields = {"env_id": self.env_id, "env_kwargs": self.env_kwargs, **row, "seed": 0 if seed is None else seed}
            ref = EpisodeRef.from_row(fields)
            if ref.env_id != self.env_id or dict(ref.env_kwargs) != self.env_kwargs:
                raise ValueError(f"this server plays {self.env_id} with env kwargs {self.env_kwargs}; "
                                 f"the row names {ref.env_id} with {dict(ref.env_kwargs)}")
        self.close()
        self.failure = ""
        with self._slot():
            self._started = time.perf_counter()
            if self.evaluation is None:
                session = ToolSession(ref, prompt_level=self.prompt_level, seal=self._open_seal)
            else:
                ref = self.evaluation.hand_out()
                try:
                    session = ToolSession(ref, prompt_level=self.prompt_level, seal=self.evaluation.seal)
                except Exception as exc:
                    self.evaluation.record_failure(ref, exc, self._started)
                    raise
        self.guard = GuardedSession(session)
        self._recorded = False
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation(session.first_message, 0.0, system_prompt=session.system_prompt)

    @property
    def session(self) -> ToolSession | None:
        """The episode's :class:`~causal_gym.integrations.core.ToolSession` (None before reset)."""
        return None if self.guard is None else self.guard.session

    def step(self, action: CallToolAction, **kwargs: Any) -> ToolObservation:
        """Play one tool call."""
        guard = self.guard
        if guard is None:
            raise RuntimeError("reset() has not been called")
        if self.failure:
            return ToolObservation(text=self.failure, failure=self.failure, done=True, reward=None)
        session = guard.session
        was_last_turn = session.last_turn
        steps = session.steps
        try:
            with self._slot():
                text = guard.call_sync(lambda: session.call(action.tool_name, action.arguments), self.tool_timeout,
                                       "the env step (tool_timeout)")
        except BudgetTimeout as exc:
            self.failure = f"{exc}; the episode ends unscored"
            self._record_failure(session, exc)
            return ToolObservation(text=self.failure, failure=self.failure, done=True, reward=None)
        except Exception as exc:  # noqa: BLE001 -- a failed step voids the episode, it does not score 0
            _LOG.exception("%s: a step failed; the episode ends unscored", self.env_id)
            self.failure = f"the env failed ({type(exc).__name__}); the episode ends unscored"
            self._record_failure(session, exc)
            return ToolObservation(text=self.failure, failure=self.failure, done=True, reward=None)
        self._state.step_count += 1
        if session.done and self.evaluation is not None and not self._recorded:
            self._recorded = True
            self.evaluation.record(session)
        text = "\n\n".join((text, *session.last_turn_notice(was_last_turn)))
        return self._observation(text, session.last_reward if session.steps > steps else 0.0)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        """Close the episode's env (under a seal, an episode left unfinished is ended, scored and recorded first)."""
        guard = self.guard
        if guard is None:
            return
        self.guard = None
        if self.evaluation is not None and not self._recorded:
            self._recorded = True
            session = guard.session
            try:
                with self._slot():
                    session.finish()
                self.evaluation.record(session)
            except Exception as exc:  # noqa: BLE001 -- recorded as the episode's failure; the session closes anyway
                _LOG.exception("%s: ending a sealed episode the client left failed", self.env_id)
                self.evaluation.record_failure(session.ref, exc, self._started)
        guard.close()  # now, or when a step abandoned at its timeout returns

    def _record_failure(self, session: ToolSession, error: BaseException) -> None:
        if self.evaluation is not None and not self._recorded:
            self._recorded = True
            self.evaluation.record_failure(session.ref, error, self._started)

    def _observation(self, text: str, reward: float, system_prompt: str = "") -> ToolObservation:
        session = self.session
        assert session is not None
        sealed = self.evaluation is not None
        return ToolObservation(text=text, system_prompt=system_prompt, tools=session.tools_now(),
                               last_turn=session.last_turn, scores={} if sealed else session.scores,
                               reward=None if sealed else reward, done=session.done)


# -- sessions: who may hold one, for how long, and how a refusal reads ---------------------------------


@dataclass
class _Connection:
    """One WebSocket connection, as the session server sees it (set by :class:`_ConnectionGuard`)."""

    refused: SessionCapacityError | None = None


_CONNECTION: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar("causal_gym_openenv_connection",
                                                                                 default=None)
"""The WebSocket connection whose handler is running (None: an HTTP request)."""


class _SessionServer(HTTPEnvServer):
    """OpenEnv's server with WebSocket and HTTP sessions counted apart and idle HTTP sessions closed.

    OpenEnv counts every session against one limit and, given a timeout, closes every idle session,
    WebSocket ones included (whose client may be waiting on a model). Here each kind has ``max_sessions``
    of its own, and only HTTP-made sessions expire, ``session_timeout`` after their last request; a
    WebSocket session ends with its socket. (Overrides two private methods of openenv-core 0.3, which
    pyproject pins.)
    """

    def __init__(self, factory: Any, max_sessions: int, session_timeout: float) -> None:
        # OpenEnv's own limit (both kinds together) never binds; _create_session applies ours
        config = ConcurrencyConfig(max_concurrent_envs=2 * max_sessions, session_timeout=session_timeout)
        super().__init__(factory, CallToolAction, ToolObservation, concurrency_config=config)
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self._kinds: dict[str, bool] = {}  # session id -> made for a WebSocket
        self._opening = {True: 0, False: 0}  # sessions being made, by kind

    def sessions(self, websocket: bool) -> int:
        """Sessions of one kind, those being made included."""
        made = sum(1 for sid in self._sessions if self._kinds.get(sid) is websocket)
        return made + self._opening[websocket]

    async def _create_session(self) -> tuple[str, Environment]:
        connection = _CONNECTION.get()
        websocket = connection is not None
        active = self.sessions(websocket)
        if active >= self.max_sessions:
            refusal = SessionCapacityError(active, self.max_sessions)
            if connection is not None:
                connection.refused = refusal
            raise refusal
        self._opening[websocket] += 1  # no await since the count: the check and the claim are one step
        try:
            session_id, env = await super()._create_session()
        finally:
            self._opening[websocket] -= 1
        self._kinds[session_id] = websocket
        return session_id, env

    async def _reap_idle_sessions(self) -> None:
        """Close each HTTP-made session ``session_timeout`` seconds after its last request."""
        timeout = self.session_timeout
        while True:
            try:
                now = time.time()
                deadlines = {sid: info.last_activity_at + timeout for sid, info in list(self._session_info.items())
                             if self._kinds.get(sid) is False}
                for sid, deadline in deadlines.items():
                    info = self._session_info.get(sid)
                    if deadline <= now and info is not None and info.last_activity_at + timeout <= time.time():
                        await self._destroy_session(sid)
                self._kinds = {sid: kind for sid, kind in self._kinds.items() if sid in self._sessions}
                wake = min((d for d in deadlines.values() if d > now), default=now + timeout)
                await asyncio.sleep(min(max(wake - time.time(), 0.05), timeout))
            except asyncio.CancelledError:
                break
            except Exception:  # noqa: BLE001 -- the reaper must outlive one bad pass
                _LOG.exception("closing idle HTTP sessions failed; retrying")
                await asyncio.sleep(1.0)


class _ConnectionGuard:
    """ASGI middleware around the app's WebSockets: marks each connection for :class:`_SessionServer`,
    lets a refused client read its refusal before the socket closes (1013, not 1000), and keeps a
    client's leaving out of the log (OpenEnv closes a socket the client already closed, which raises)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        connection = _Connection()
        token = _CONNECTION.set(connection)

        async def send_or_refuse(message: Any) -> None:
            refusal = connection.refused
            if message["type"] == "websocket.close" and refusal is not None:
                # the refusal is sent; closing now would fail the client's first call with a bare close
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(receive(), REFUSAL_GRACE)
                message = {"type": "websocket.close", "code": 1013, "reason": str(refusal)[:120]}
            await send(message)

        try:
            await self.app(scope, receive, send_or_refuse)
        except WebSocketDisconnect:
            _LOG.debug("a client left %s", scope.get("path"))
        finally:
            _CONNECTION.reset(token)


def make_app(env_id: str, env_kwargs: Mapping[str, Any] | None = None, *, prompt_level: int = 0,
             max_sessions: int = 256, tool_timeout: float | None = None, session_timeout: float = SESSION_TIMEOUT,
             env_threads: int | None = None, seal: Seal | str | None = None, store: EpisodeLog | None = None,
             episodes: int | None = None, repeats: int = 1, split: str = "test", seed: int = 0) -> FastAPI:
    """OpenEnv's FastAPI app serving ``env_id`` (see the module docstring).

    Parameters
    ----------
    env_id, env_kwargs :
        A registered tool env with a ``submit`` tool, and its ``gym.make`` arguments.
    prompt_level : int
        As for the LLM agent.
    max_sessions : int
        WebSocket sessions at once (and, apart, HTTP-made sessions).
    tool_timeout : float or None
        Seconds one step may take (None: no budget).
    session_timeout : float
        Seconds after which an idle HTTP-made session is closed (default :data:`SESSION_TIMEOUT`); serve
        the app with a WebSocket keepalive of ``session_timeout / 2`` (ping interval and timeout), as
        ``causal-gym serve`` does, to drop vanished WebSocket clients as fast.
    env_threads : int or None
        Env resets and steps run at once (default :func:`default_env_threads`).
    seal : Seal, str or None
        A seal (or its secret, or :data:`~causal_gym.seal.OPEN`); None reads ``CAUSAL_GYM_SEAL``. Under a
        seal, ``store`` and ``episodes`` are required and the app plays a :class:`SealedEvaluation`.
    store, episodes, repeats, split, seed :
        The sealed evaluation's run store and plan (:class:`SealedEvaluation`).

    Raises
    ------
    ValueError
        If ``env_id`` is not a tool env with a ``submit`` tool or ``env_kwargs`` do not fit it
        (checked here, by one probe episode, before anything is served), the seal is in ``env_kwargs``,
        a sealed server lacks its store or plan (or the env takes no seal), an open one is given them,
        or a number is out of range.
    """
    tool_timeout = check_budget(tool_timeout, "tool_timeout")
    session_timeout = check_real(session_timeout, "session_timeout", 0.0, strict=True)
    check_count(max_sessions, "max_sessions", 1)
    env_threads = check_count(default_env_threads() if env_threads is None else env_threads, "env_threads", 1)
    env_kwargs = dict(env_kwargs or {})
    if "seal" in env_kwargs:
        raise ValueError("pass the seal as seal= (causal-gym serve --seal-file), not in env_kwargs, which the run "
                         "store records")
    resolved = resolve_seal(seal)
    sealable = takes_seal(env_id)
    if resolved is not None and not sealable:
        raise ValueError(f"{env_id} has no seal argument, so a sealed server cannot play it")
    if resolved is not None and (store is None or episodes is None):
        raise ValueError("a sealed server chooses and records its episodes: give it a run store and a number of "
                         "episodes (causal-gym serve --out DIR --episodes N), or serve the open splits "
                         "(--open, seal=OPEN)")
    if resolved is None and (store is not None or episodes is not None or (repeats, split, seed) != (1, "test", 0)):
        raise ValueError("a run store and an episode plan are for a sealed server (--seal-file or CAUSAL_GYM_SEAL); "
                         "an open server plays the episodes its clients name")
    ToolSession(EpisodeRef(env_id, env_kwargs=env_kwargs), seal=OPEN if sealable else None).close()
    evaluation = None
    if resolved is not None:
        assert store is not None and episodes is not None
        evaluation = SealedEvaluation(env_id, env_kwargs, resolved, store, episodes=episodes, repeats=repeats,
                                      split=split, seed=seed, tool_timeout=tool_timeout)
    factory = functools.partial(ToolSessionEnvironment, env_id, env_kwargs, prompt_level, tool_timeout,
                                evaluation=evaluation, work_slots=threading.BoundedSemaphore(env_threads))
    server = _SessionServer(factory, max_sessions, session_timeout)
    app = FastAPI(title=f"causal_gym OpenEnv server: {env_id}")
    server.register_routes(app, ServerMode.PRODUCTION if evaluation is not None else ServerMode.SIMULATION)
    app.add_middleware(_ConnectionGuard)
    return app
