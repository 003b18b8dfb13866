"""The working-graph episode: :class:`WorkingGraphEnv`.

Heuresis and CausalArena's tool mode share one episode -- an agent edits a working graph with
tools drawing on budgets, then submits it -- and differ only in their data and data-specific
tools. :class:`WorkingGraphEnv` adds that episode to the generic tool protocol of
:class:`~causal_gym.harness.tool_env.ToolEnv`: the ``set_edge`` and ``submit`` tools, the edge-list
answer with one retry, the last turn after a budget runs out, the rescue of the working graph, Meek
completion and the score; a subclass supplies the instance, its tools and the score.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_adjacency, check_count
from causal_gym.graphs import consistent_extension, directed_cycle, meek, orient_along_arrows
from causal_gym.harness.budgets import WALL_TIME, Budgets
from causal_gym.harness.tool_env import ERROR_PREFIX, LAST_TURN, Outcome, ToolEnv, ToolResult
from causal_gym.harness.toolbox import TEXT_CHARSET, ActionField, Tool, Toolbox, ToolCall, ToolError, display_text
from causal_gym.harness.working_graph import (
    RELATIONS,
    format_edge_list,
    parse_edge_list,
    relation_of,
    render_ansi,
    render_rgb,
    set_relation,
    variable_name,
)

__all__ = [
    "TURNS",
    "SUBMISSION_SOURCES",
    "BASE_FIELDS",
    "SET_EDGE",
    "SUBMIT",
    "Submission",
    "WorkingGraphEnv",
]

TURNS = "turns"
"""Name of the turn budget: every step in the open phase costs one turn."""

SUBMISSION_SOURCES = ("agent", "agent_edge_list", "rescued_working_graph")
"""Where a submitted graph came from: the working graph on the agent's submit, the agent's edge
list, or the working graph submitted by the environment because the agent did not submit validly."""

BASE_FIELDS = (
    ActionField("x", "node", "First variable of the pair."),
    ActionField("y", "node", "Second variable of the pair."),
    ActionField(
        "relation",
        "choice",
        "New relation of the pair: 'none' = no edge, 'undirected' = x -- y, 'forward' = x -> y, "
        "'backward' = y -> x.",
        RELATIONS,
    ),
    ActionField(
        "edges",
        "text",
        "Optional final edge list, e.g. 'X0 -> X1, X2 -- X3' (-> directed, -- undirected; 'none' for "
        "no edges). Leave it out to submit the working graph.",
    ),
)
"""Fields of the generic tools; subclass tools may use ``x`` and ``y`` too."""

SET_EDGE = Tool(
    "set_edge",
    "Set the relation of one pair of variables in the working graph (the only way to edit it).",
    ("x", "y", "relation"),
    ("x", "y", "relation"),
)
SUBMIT = Tool(
    "submit",
    "Submit the final graph and end the episode: the edge list in 'edges' if given, else the working "
    "graph. The submitted graph is completed with Meek's orientation rules before it is scored.",
    ("edges",),
)

class Submission(NamedTuple):
    """How an episode ends (``Outcome.end``): the submitted graph, where it came from (one of
    :data:`SUBMISSION_SOURCES`) and the limit that was involved, if any."""

    graph: np.ndarray
    source: str
    reason: str | None


def _pair_text(x: int, y: int, relation: str) -> str:
    a, b = variable_name(x), variable_name(y)
    return {
        "none": f"{a} and {b} not adjacent",
        "undirected": f"{a} -- {b}",
        "forward": f"{a} -> {b}",
        "backward": f"{b} -> {a}",
    }[relation]


def _unsubmittable(graph: np.ndarray) -> str | None:
    """Why ``graph`` cannot be an answer (completed by Meek's rules and scored), or None when it can."""
    cycle = directed_cycle(graph)
    if cycle is not None:
        path = " -> ".join(variable_name(v) for v in cycle)
        return f"has a directed cycle ({path}); the answer must be acyclic -- remove or undirect one of these edges"
    if consistent_extension(graph) is not None:
        return None
    forced = directed_cycle(meek(graph))
    if forced is not None:
        path = " -> ".join(variable_name(v) for v in forced)
        return (f"has no acyclic completion: Meek's rules orient its undirected edges into the directed cycle {path} "
                "(an arrow into an undirected edge whose far end is not adjacent forces its direction, so no DAG has "
                "these arrows without a new collider); the answer must be acyclic after completion -- reverse, remove "
                "or undirect an arrow that leads into the cycle")
    return ("has no consistent DAG extension: every way to orient its undirected edges closes a directed cycle or "
            "adds a collider (two arrows into a node from non-adjacent parents) that the answer does not have, as on "
            "an undirected cycle of four or more nodes without a chord -- orient some of its undirected edges")


class WorkingGraphEnv(ToolEnv):
    """Base class of working-graph episodes: edit a graph with tools under budgets, then submit it.

    ## Description

    The agent sees ``d`` anonymous variables ``X0 .. X{d-1}`` and a *working graph* over them, one
    relation per unordered pair: none, ``x -- y``, ``x -> y`` or ``y -> x``. Each step calls one tool:
    a data-specific tool of the subclass (CI tests, algorithm runs, fits, ...), ``set_edge`` (the
    only way to edit the graph) or ``submit``. The episode returns a graph in every case.

    ## Action Space

    A ``Dict``: ``"tool"`` is ``Discrete(n_tools)`` (``set_edge`` = 0, ``submit`` = 1, then the
    subclass's tools in order), followed by one entry per argument field — node ``Discrete(d)``,
    node set ``MultiBinary(d)``, choice ``Discrete(k)``, text ``Text`` — shared by all tools; a
    tool ignores the fields it does not use (see :mod:`causal_gym.harness.toolbox`; the step protocol
    is :class:`~causal_gym.harness.tool_env.ToolEnv`'s). LLM agents use
    :meth:`tool_specs` and :meth:`parse_tool_call`, which returns the typed action or a
    :class:`~causal_gym.harness.toolbox.ToolError`; stepping with a ``ToolError`` plays it as an
    invalid action, so malformed calls come back to the agent as error messages.

    ## Observation Space

    | Key                   | Space                               | Meaning                                   |
    |-----------------------|-------------------------------------|-------------------------------------------|
    | ``working_graph``     | ``MultiBinary((d, d))``             | the graph, causal_gym encoding            |
    | ``budgets_remaining`` | ``Box(0, 1, (n_budgets,), float32)`` | share left of each budget (1: unlimited) |
    | ``last_result``       | ``Text(text_max_length)``           | result text of the last call, cut         |
    | ``last_ok``           | ``Discrete(2)``                     | 0 after an error, refusal or rejection    |
    | ``phase``             | ``Discrete(3)``                     | 0 open, 1 last turn (only submit), 2 done |

    plus the subclass's extra entries. ``budgets_remaining`` is ordered ``("turns", *budget_names,
    "wall_time")``. Characters of a result outside the text charset are shown as ``?``; the record
    keeps the full text. ``info`` carries ``"budgets_remaining"`` (absolute amounts,
    ``inf`` when unlimited), ``"phase"``, ``"action_mask"`` (per-key masks for
    ``env.action_space.sample(mask=...)``, which then draws only calls the env accepts: the tools
    the budgets cover, in the last turn only ``submit``; an acyclic answer) and, after a tool call,
    ``"result"`` (the structured result).

    ## Rewards

    0 on every step but the last, whose reward is :meth:`_reward` of the scores (by default the
    adjacency F1 of the submitted graph).

    ## Starting State

    ``reset`` draws an instance with :meth:`_new_episode` from ``self.np_random``; the working graph
    starts as the graph it returns (e.g. complete undirected, or an algorithm's output).

    ## Episode End

    - The agent submits: ``terminated=True``. ``submit`` with an ``edges`` text submits the parsed
      list (read tolerantly, :func:`~causal_gym.harness.working_graph.parse_edge_list`), without
      it the working graph.
    - A rejected submission (unparsable edge list or invalid ``submit`` arguments) returns an error
      and the next step is a *last turn* with exactly one retry; a second rejection submits the
      working graph.
    - When a budget is exhausted (turns, the subclass's budgets, wall time) the agent gets one last
      turn (phase 1) in which only ``submit`` is accepted; any other action submits the working
      graph.
    - ``max_consecutive_errors`` errors in a row submit the working graph.

    ``truncated=True`` whenever a limit was involved (a budget ran out, errors in a row) or the
    environment had to submit for the agent (``"rescued_working_graph"``); an agent that submits in
    the last turn after a budget ran out gets both ``terminated`` and ``truncated``. The final info
    holds ``"scores"`` (from :meth:`_score` on the Meek-completed submitted graph),
    ``"submission_source"`` (one of :data:`SUBMISSION_SOURCES`), ``"truncated_reason"`` (None,
    ``"budget_exhausted:<names>"``, ``"consecutive_errors"``, ``"edge_list_rejected"`` or
    ``"last_turn_not_submit"``), ``"record"`` (a timing-free summary of the call record),
    ``"submitted_graph"`` and ``"completed_graph"``. Steps: at most ``max_turns`` open turns plus
    the last turn plus one retry.

    Edits may create directed cycles (the working graph is a PDAG under construction), but an
    answer may not: a submission is rejected like an unparsable edge list (one retry) when no DAG
    extends it (:func:`~causal_gym.graphs.consistent_extension`: its directed edges form a cycle,
    Meek's completion would orient its undirected edges into one, or every orientation adds a
    collider it does not have, as on a chordless undirected cycle); the error names the cycle when
    there is one. So what is completed and scored always stands for a DAG. When the env submits the
    working graph for the agent, edges on directed cycles are made undirected first, and if no DAG
    extends the result, its undirected edges are oriented along a topological order of its directed
    edges (ties by index, :func:`~causal_gym.graphs.orient_along_arrows`): adjacencies and arrows
    are kept.

    ## The truth rule

    Ground truth is used only by :meth:`_score`, called once, after submission. Observations,
    non-final infos, tool results and the record never contain truth-derived values; only the final
    info does (and the reward of the final step).

    ## Determinism

    Same seed and same actions give identical observations, infos, rewards and records, except the
    record's ``wall_time`` fields (see :meth:`EpisodeLog.deterministic_view
    <causal_gym.harness.record.EpisodeLog.deterministic_view>`) — and except when the wall-time
    budget is on, the one non-deterministic limit.

    ## Arguments

    | Parameter                  | Default | Description |
    |----------------------------|---------|-------------|
    | ``d``                      |         | number of variables (>= 2), fixed for the env |
    | ``budget_names``           | ``()``  | the subclass's budgets (limits: :meth:`_budget_limits`) |
    | ``max_turns``              | 50      | turn budget |
    | ``wall_time_limit``        | None    | seconds from ``reset``; None = off |
    | ``max_consecutive_errors`` | 5       | errors in a row that end the episode |
    | ``text_max_length``        | 4000    | longest text argument and result shown |
    | ``extra_observation_spaces`` | None  | the subclass's extra observation entries |
    | ``render_mode``            | None    | ``"ansi"`` (text) or ``"rgb_array"`` (a 400x400 drawing) |

    ## Subclass contract

    - ``_tools()`` -> the data-specific :class:`~causal_gym.harness.toolbox.Tool` s, and
      ``_fields()`` -> the :class:`~causal_gym.harness.toolbox.ActionField` s they use beyond
      :data:`BASE_FIELDS` (both called once, in ``__init__``);
    - ``_tool_<name>(**arguments) -> ToolResult`` for each of those tools, receiving every field of
      the tool (optional ones at their empty default); exceptions are programmer errors and
      propagate;
    - ``_new_episode(rng, options) -> (initial_graph, extra_observation)``;
    - ``_budget_limits() -> {name: limit or None}`` for ``budget_names``, called after
      ``_new_episode``;
    - ``_score(completed_graph) -> dict`` — the only place truth may be used;
    - optionally ``_task_intro()``, ``_reward(scores)`` and ``_final_info()``.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        d: int,
        *,
        budget_names: Sequence[str] = (),
        max_turns: int = 50,
        wall_time_limit: float | None = None,
        max_consecutive_errors: int = 5,
        text_max_length: int = 4000,
        extra_observation_spaces: Mapping[str, spaces.Space] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.d = check_count(d, "d", 2)
        self.max_turns = check_count(max_turns, "max_turns", 1)
        if wall_time_limit is not None and not (isinstance(wall_time_limit, (int, float)) and wall_time_limit > 0):
            raise ValueError(f"wall_time_limit must be None or a positive number of seconds, got {wall_time_limit!r}")
        names = tuple(budget_names)
        if len(set(names)) != len(names) or {TURNS, WALL_TIME} & set(names):
            raise ValueError(f"budget_names must be distinct and not {TURNS!r} or {WALL_TIME!r}, got {names}")
        self.budget_names = names
        self.wall_time_limit = wall_time_limit
        toolbox = Toolbox((SET_EDGE, SUBMIT, *self._tools()), (*BASE_FIELDS, *self._fields()), self.d, text_max_length)
        super().__init__(
            toolbox,
            budget_names=(TURNS, *names),
            step_budget=TURNS,
            max_consecutive_errors=check_count(max_consecutive_errors, "max_consecutive_errors", 1),
            render_mode=render_mode,
        )
        extras = dict(extra_observation_spaces or {})
        core = {
            "working_graph": spaces.MultiBinary((self.d, self.d)),
            "budgets_remaining": spaces.Box(0.0, 1.0, (len(names) + 2,), dtype=np.float32),
            "last_result": spaces.Text(self.toolbox.text_max_length, min_length=0, charset=TEXT_CHARSET),
            "last_ok": spaces.Discrete(2),
            "phase": spaces.Discrete(3),
        }
        if core.keys() & extras.keys():
            raise ValueError(f"extra observation entries may not reuse {sorted(core.keys() & extras.keys())}")
        self.observation_space = spaces.Dict({**core, **extras}, sort_keys=False)
        self._extra_keys = tuple(extras)
        self._graph: np.ndarray | None = None
        self._verdict: tuple[bytes, str | None] | None = None  # (graph bytes, _unsubmittable of that graph)

    # -- subclass hooks ------------------------------------------------------------------------

    def _tools(self) -> Sequence[Tool]:
        """The subclass's data-specific tools (``set_edge`` and ``submit`` are added by the base)."""
        return ()

    def _fields(self) -> Sequence[ActionField]:
        """Argument fields of the subclass's tools beyond :data:`BASE_FIELDS`."""
        return ()

    def _new_episode(self, rng: np.random.Generator, options: Any) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw an instance; return the initial working graph and the extra observation entries.

        ``options`` is ``reset``'s argument as given ({} for None): validate it with
        :func:`causal_gym._validation.check_reset_options`, which also refuses a non-dict clearly."""
        raise NotImplementedError

    def _budget_limits(self) -> dict[str, float | None]:
        """Limits of the subclass's budgets for the current instance (``None`` = unlimited)."""
        return {}

    def _score(self, completed_graph: np.ndarray) -> dict[str, Any]:
        """Scores of the Meek-completed submitted graph against the truth; called once per episode."""
        raise NotImplementedError

    def _reward(self, scores: Mapping[str, Any]) -> float:
        """Final-step reward; the adjacency F1 (``scores["adjacency_f1"]``) unless overridden."""
        if "adjacency_f1" not in scores:
            raise KeyError(
                f"{type(self).__name__}._score must return 'adjacency_f1' or the class must override _reward"
            )
        return float(scores["adjacency_f1"])

    def _final_info(self) -> dict[str, Any]:
        """Extra entries of the final info (not truth-derived), e.g. the sandbox backend."""
        return {}

    def _task_intro(self) -> str:
        """What the data is; the first paragraph of the class docstring unless overridden."""
        return (type(self).__doc__ or type(self).__name__).strip().split("\n\n")[0]

    # -- the public interface ------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode: draw an instance, reset budgets, the record and the working graph."""
        super().reset(seed=seed)
        graph, extras = self._new_episode(self.np_random, {} if options is None else options)
        self._graph = check_adjacency(graph, "the initial working graph", d=self.d).copy()
        if set(extras) != set(self._extra_keys):
            raise ValueError(
                f"_new_episode returned extra observation keys {sorted(extras)}, expected {sorted(self._extra_keys)}"
            )
        self._extras = dict(extras)
        limits = self._budget_limits()
        if set(limits) != set(self.budget_names):
            raise ValueError(f"_budget_limits returned {sorted(limits)}, expected {sorted(self.budget_names)}")
        self._start_episode(
            Budgets(
                {TURNS: self.max_turns, **{name: limits[name] for name in self.budget_names}},
                wall_time=self.wall_time_limit,
            )
        )
        self._rejections = 0
        self._limit_reason: str | None = None
        return self._observation(), self._info()

    def task_description(self) -> str:
        """The task statement for LLM agents: the data, the tools, the budgets and the rules."""
        if self._phase is None:
            budgets = ", ".join((TURNS, *self.budget_names, WALL_TIME)) + " (limits are set per episode)"
        else:
            budgets = ", ".join(
                f"{name} {'unlimited' if limit is None else format(limit, 'g')}"
                for name, limit in self.budgets().items()
            )
        tools = "\n".join(f"- {t.name}: {t.description}" for t in self.toolbox.tools)
        return (
            f"{self._task_intro()}\n\n"
            f"Variables: X0..X{self.d - 1}. You keep a working graph with one relation per pair of variables: "
            "none, undirected (x -- y), forward (x -> y) or backward (y -> x). Each action calls one tool and costs "
            "one turn; set_edge is the only way to change the working graph.\n\n"
            f"Tools:\n{tools}\n\n"
            f"Budgets: {budgets}. Calls that would overdraw a budget are refused. When a budget runs out you get "
            "one last turn in which only submit is accepted; anything else submits the working graph. A rejected "
            "edge list gets exactly one retry, after which the working graph is submitted. "
            f"{self.max_consecutive_errors} errors in a row end the episode with the working graph submitted.\n\n"
            "Submit with an edge list such as 'X0 -> X1, X2 -- X3' ('none' for no edges), or without one to submit "
            "the working graph. The submitted graph is completed with Meek's orientation rules before scoring; an answer "
            "whose directed edges form a cycle, or whose completion would, is rejected."
        )

    # -- the working-graph episode ------------------------------------------------------------

    def _open_step(self, call: ToolCall | ToolError) -> Outcome:
        """An open-phase step; an invalid ``submit`` is a rejected submission (one retry)."""
        if isinstance(call, ToolError) and call.tool == SUBMIT.name:
            return Outcome.of(self._reject_submission(call.message))
        return super()._open_step(call)

    def _last_turn(self, call: ToolCall | ToolError) -> Outcome:
        """A last-turn step: only a submission is accepted; anything else submits the working graph."""
        if isinstance(call, ToolCall) and call.tool == SUBMIT.name:
            return self._run_tool(SUBMIT.name, call.arguments)
        if isinstance(call, ToolError) and call.tool == SUBMIT.name:
            return Outcome.of(self._reject_submission(call.message))
        return Outcome(
            False,
            f"{ERROR_PREFIX}only submit is accepted in the last turn; the working graph was submitted",
            end=self._rescue(self._limit_reason or "last_turn_not_submit"),
        )

    def _tool_set_edge(self, x: int, y: int, relation: str) -> ToolResult:
        before = relation_of(self._working, x, y)
        self._graph = set_relation(self._working, x, y, relation)
        data = {"x": variable_name(x), "y": variable_name(y), "relation": relation, "previous": before}
        return ToolResult(f"set {_pair_text(x, y, relation)} (was: {_pair_text(x, y, before)})", data)

    def _tool_submit(self, edges: str) -> ToolResult:
        if not edges.strip():
            graph, source = self._working.copy(), SUBMISSION_SOURCES[0]
        else:
            try:
                graph, source = parse_edge_list(edges, self.d), SUBMISSION_SOURCES[1]
            except ValueError as exc:
                return self._reject_submission(str(exc))
        problem = _unsubmittable(graph)
        if problem is not None:
            what = "the working graph" if source == SUBMISSION_SOURCES[0] else "the edge list"
            return self._reject_submission(f"{what} {problem}")
        n_edges = int(np.count_nonzero(np.triu(graph | graph.T, 1)))
        listing = format_edge_list(graph) or "none"
        return ToolResult(f"submitted {n_edges} edges ({source}): {listing}", end=Submission(graph, source, None))

    def _rescued(self) -> np.ndarray:
        """The working graph as the env submits it for the agent: edges on directed cycles made undirected,
        and, if no DAG extends the result, its undirected edges oriented along a topological order of its
        directed edges (ties by index).

        A rescued submission cannot be rejected, and the working graph may hold directed cycles (edits
        are free), so the orientations that make it cyclic are dropped rather than scored; the last step
        keeps every remaining arrow and leaves a DAG.
        """
        graph = self._working.copy()
        while (cycle := directed_cycle(graph)) is not None:
            for a, b in zip(cycle, cycle[1:]):
                graph[b, a] = 1
        if consistent_extension(graph) is None:
            graph = orient_along_arrows(graph)
        return graph

    def _rescue(self, reason: str) -> Submission:
        """The env submits the (rescued) working graph for the agent because of ``reason``."""
        return Submission(self._rescued(), SUBMISSION_SOURCES[2], reason)

    def _reject_submission(self, message: str) -> ToolResult:
        self._rejections += 1
        if self._rejections > 1:
            return ToolResult(
                f"{ERROR_PREFIX}submission rejected again ({message}); the working graph was submitted instead",
                ok=False,
                end=self._rescue(self._limit_reason or "edge_list_rejected"),
            )
        self._phase = LAST_TURN
        return ToolResult(
            f"{ERROR_PREFIX}submission rejected: {message}. You have one retry: the next action must be submit "
            "(fix the edge list, or leave it out to submit the working graph); anything else submits the working "
            "graph.",
            ok=False,
        )

    def _on_error_limit(self, outcome: Outcome) -> None:
        outcome.text += f"\n{self._consecutive_errors} errors in a row: the working graph was submitted"
        outcome.end = self._rescue("consecutive_errors")

    def _on_exhausted(self, outcome: Outcome, exhausted: list[str]) -> None:
        """A budget ran out: one last turn, in which only submit is accepted."""
        self._phase = LAST_TURN
        self._limit_reason = "budget_exhausted:" + ",".join(exhausted)
        outcome.text += (
            f"\n[last turn: budget {', '.join(exhausted)} exhausted; only submit is accepted now, "
            "anything else submits the working graph]"
        )

    def _finish(self, outcome: Outcome) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        graph, source, reason = outcome.end
        reason = reason or self._limit_reason
        completed = meek(graph)
        scores = to_jsonable(self._score(completed.copy()))
        info = self._info(outcome.data)
        info.update(self._final_info())
        info.update(
            scores=scores,
            submission_source=source,
            truncated_reason=reason,
            record=self._log.summary(),
            submitted_graph=graph.copy(),
            completed_graph=completed,
        )
        rescued = source == SUBMISSION_SOURCES[2]
        return self._observation(), self._reward(scores), not rescued, rescued or reason is not None, info

    # -- observation, info and rendering ---------------------------------------------------------

    @property
    def _working(self) -> np.ndarray:
        """The working graph of the episode in play (:meth:`reset` sets it)."""
        if self._graph is None:
            raise RuntimeError("no episode yet: call reset() first")
        return self._graph

    def _observation(self) -> dict[str, Any]:
        return {
            "working_graph": self._working.copy(),
            "budgets_remaining": self._budgets.fractions(),
            "last_result": display_text(self._last_text, self.toolbox.text_max_length),
            "last_ok": np.int64(self._last_ok),
            "phase": np.int64(self._open_phase),
            **copy.deepcopy(self._extras),
        }

    def _action_masks(self) -> dict[str, Any]:
        """The affordable tools in the open phase; in the last turn (and once done) only ``submit``.

        ``submit``'s edge list is left out (the working graph is submitted) unless no DAG extends the
        working graph (a directed cycle, say), which an answer may not: then the mask of ``edges`` is
        the text of what a rescue would submit (:meth:`_rescued`), or ``"none"`` where that text would
        be longer than a text argument may be."""
        masks = super()._action_masks()
        masks["tool"][self.toolbox.index(SUBMIT.name)] = 1
        if self._graph is not None and self._working_problem(self._graph) is not None:
            edges = format_edge_list(self._rescued())
            masks["edges"] = edges if len(edges) <= self.toolbox.text_max_length else "none"
        return masks

    def _working_problem(self, graph: np.ndarray) -> str | None:
        """:func:`_unsubmittable` of the working ``graph``, worked out once per graph: the masks ask
        at every step, and most steps do not edit the graph."""
        key = graph.tobytes()
        if self._verdict is None or self._verdict[0] != key:
            self._verdict = (key, _unsubmittable(graph))
        return self._verdict[1]

    def _render(self) -> str | np.ndarray:
        """The working graph as text (``"ansi"``) or a 400x400 RGB drawing (``"rgb_array"``)."""
        if self.render_mode == "ansi":
            return f"{render_ansi(self._working)}\nphase {self._phase}; {self._remaining_text()}\n"
        return render_rgb(self._working)

    def state_summary(self) -> str:
        """The working graph's edge list and the budgets left (see :meth:`ToolEnv.state_summary`)."""
        self._require_episode()
        edges = format_edge_list(self._working) or "none"
        return f"working graph edges: {edges}; {self._remaining_text()}"
