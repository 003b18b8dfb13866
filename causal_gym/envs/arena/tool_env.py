"""CausalArena's tool mode: the working-graph harness with the evidence tools, over one exported split.

:class:`CausalArenaToolEnv` plays the instances and views of :mod:`.source` (the same as the submit
env, :mod:`.env`) as a :class:`~causal_gym.harness.WorkingGraphEnv` whose data tools are those of
Heuresis (:mod:`causal_gym.harness.data_tools`); the algorithm menu behind ``run_algorithm`` holds
the arena's methods (:data:`ARENA_MENU`, a :class:`~causal_gym.harness.menu.Menu`), run through
:func:`menu_graph` and cached on disk. Its
ids are ``CausalArena-{synthetic,formula,semantic,real}-tools-v0`` (:mod:`.spec`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from causal_gym import _cache
from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.envs.arena.baselines import WRAPPER_OPTIONS
from causal_gym.envs.arena.protocol import ArenaDataset
from causal_gym.envs.arena.source import ARGUMENTS_DOC, ArenaSource, final_extras, reset_info, score_submission
from causal_gym.harness import SandboxLimits, ToolResult, WorkingGraphEnv
from causal_gym.harness.data_tools import DataTools
from causal_gym.harness.menu import Menu, MenuEntry
from causal_gym.harness.working_graph import variable_name
from causal_gym.seal import Seal

if TYPE_CHECKING:
    from causal_gym.discovery import Method

__all__ = ["ARENA_MENU", "DEFAULT_TOOL_BUDGETS", "menu_graph", "CausalArenaToolEnv"]

ARENA_MENU = Menu.of_methods(
    ("pc", "ges_fast", "gies_fast", "direct_lingam", "notears", "dagma", "random_regress"), WRAPPER_OPTIONS
)
"""The tool mode's algorithm menu (behind the labels A..G): the arena's methods in
:mod:`causal_gym.discovery` with the arena's wrapper defaults (:data:`~.baselines.WRAPPER_OPTIONS`),
GES and GIES by our incremental search (the same graphs as causal-learn's GES and the ``gies``
package, :mod:`causal_gym.discovery.greedy`). GIES receives the intervention mask on ``obs+int``
splits; the others see the pooled rows. The extra methods ``xges`` and ``notears_mlp``
(NOTEARS-MLP; torch and gcastle, extra ``arena``) are not in the paper's seven: add them through
``menu=`` (a menu of any length)."""

DEFAULT_TOOL_BUDGETS: Mapping[str, Any] = MappingProxyType(
    {"turns": 60, "tests": 500, "algorithm_calls": 10, "wall_time": None}
)
"""Tool-mode budgets (ours; the paper evaluates methods, not agents). None means unlimited."""

_MENU_VERSION = 1


def _check_budgets(budgets: Mapping[str, Any] | None) -> dict[str, Any]:
    budgets = {} if budgets is None else budgets
    if not isinstance(budgets, Mapping) or set(budgets) - set(DEFAULT_TOOL_BUDGETS):
        raise ValueError(f"budgets must be a dict with keys among {list(DEFAULT_TOOL_BUDGETS)}, got {budgets!r}")
    merged = {**DEFAULT_TOOL_BUDGETS, **budgets}
    merged["turns"] = check_count(merged["turns"], "budgets['turns']", 1)
    for name in ("tests", "algorithm_calls", "wall_time"):
        if merged[name] is not None:
            merged[name] = check_real(merged[name], f"budgets[{name!r}]", 0.0, strict=name == "wall_time")
    return merged


def _check_menu(menu: Menu | Sequence[str]) -> Menu:
    """The env's menu: a :class:`~causal_gym.harness.menu.Menu`, or distinct method names (each with
    the arena's wrapper defaults; what a JSON ``--env-kwargs`` can say)."""
    return menu if isinstance(menu, Menu) else Menu.of_methods(menu, WRAPPER_OPTIONS)


def _menu_run(method: Method, data: np.ndarray, mask: np.ndarray | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """One menu run (module level, so a time-limited call can send it to a worker process, with the
    resolved method: a method of the caller's own reaches the worker without a registration there)."""
    from causal_gym.discovery import run
    from causal_gym.stats.kci import single_threaded_blas

    with single_threaded_blas():
        return {"graph": run(method, data, mask, **options).graph}


def menu_graph(dataset: ArenaDataset, entry: MenuEntry, time_limit: float | None = None) -> np.ndarray:
    """Menu entry ``entry``'s graph on ``dataset`` (its method with its options; the mask passed to
    interventional methods), cached on disk by content; a miss computes for at most ``time_limit``
    seconds (see :func:`causal_gym._cache.cached`)."""
    from causal_gym.discovery.amortized import cache_options

    method, options = entry.resolved, dict(entry.options)
    mask = dataset.mask if dataset.n_interventional and method.interventional else None
    digest = hashlib.sha256(dataset.data.tobytes() + np.packbits(dataset.mask).tobytes()).hexdigest()
    key = {"what": "arena_menu", "version": _MENU_VERSION, **entry.cache_parts(),
           "options": cache_options(method.name, options), "data": digest, "shape": list(dataset.data.shape),
           "mask": mask is not None}
    compute = functools.partial(_menu_run, method, dataset.data, mask, options)
    return np.asarray(_cache.cached(key, compute, time_limit)["graph"], dtype=np.int8)


class CausalArenaToolEnv(DataTools, WorkingGraphEnv):
    """CausalArena, tools mode: find the graph of one exported split with the evidence tools of Heuresis.

    ## Description

    The instance and its view are those of :class:`~.env.CausalArenaEnv` (same instance lists, column
    order, padding and scoring). The agent edits a working graph over ``X0 .. X{d-1}`` with the
    tools of :mod:`causal_gym.harness.data_tools`, whose computations are shared with Heuresis:

    | Tool                | Arguments               | Returns                                     | Cost |
    |---------------------|-------------------------|---------------------------------------------|------|
    | ``run_algorithm``   | ``algorithm`` (A..G)    | output graph of a masked menu entry         | 1 algorithm call |
    | ``ci_test``         | ``x, y, cond, test``    | verdict + strength grade                    | 1 test |
    | ``stability``       | ``x, y, cond, test``    | share of "independent" verdicts, subsamples | n_resamples tests |
    | ``summarize``       | --                      | marginal statistics, most correlated pairs  | -- |
    | ``fit_parents``     | ``x``, ``cond`` parents | out-of-fold R^2, graded residual diagnostics | -- |
    | ``probe_direction`` | ``x, y``                | graded additive-noise direction preference  | -- |
    | ``run_code``        | ``code``                | output of a numpy/scipy program (sandbox)   | -- |
    | ``set_edge``        | ``x, y, relation``      | edits the working graph                     | -- |
    | ``submit``          | ``edges`` (optional)    | ends the episode                            | -- |

    The menu (``menu``, default :data:`ARENA_MENU`: PC, GES, GIES, DirectLiNGAM, NOTEARS, DAGMA,
    RandomRegress) hides behind the labels A..G (a menu of k entries: the first k of A, B, ..., Z,
    AA, ...) in an order drawn per episode and revealed in the final info; GIES gets the
    intervention mask on ``obs+int`` splits. Menu runs are cached on disk by data content. The data tools work on the real variables only (a padding slot in
    their arguments is an error) and see the rows sorted by regime: observational rows first,
    then each intervention regime as one block, as the first observation lists;
    ``run_code``'s ``X`` holds these rows and the real variables.

    ## Action Space

    As Heuresis (the same toolbox): a ``Dict`` with ``"tool"``
    ``Discrete(9)`` (``set_edge, submit, run_algorithm, ci_test, stability, summarize,
    fit_parents, probe_direction, run_code``) and the argument fields ``x``, ``y``, ``relation``,
    ``edges``, ``cond``, ``algorithm``, ``test``, ``code``; LLM agents use :meth:`tool_specs` and
    :meth:`parse_tool_call`.

    ## Observation Space

    The :class:`~causal_gym.harness.WorkingGraphEnv` entries (``working_graph``, ``budgets_remaining``
    over turns, tests, algorithm_calls, wall_time, ``last_result`` ``Text(8000)``, ``last_ok``,
    ``phase``) plus ``intervention_mask`` ``MultiBinary((n, d))`` (rows sorted by regime, as the
    data tools see them) and ``variables`` ``MultiBinary(d)`` (0 for padding).

    ## Rewards

    0 on every step but the last, whose reward is the directed-edge F1 of the Meek-completed
    submitted graph after the seeded orientation of its undirected edges.

    ## Starting State

    As :class:`~.env.CausalArenaEnv`; the working graph starts empty (``start="empty"``) or complete
    and undirected over the real variables (``"complete"``). The label permutation and the
    resampling stream of ``stability`` are drawn from ``self.np_random``.

    ## Episode End

    As :class:`~causal_gym.harness.WorkingGraphEnv` (submit; budgets, then one last turn; five errors in a
    row). The final info holds ``"scores"`` (every metric of
    :data:`causal_gym.envs.arena.scoring.METRICS`), the truth-based entries of
    :class:`~.env.CausalArenaEnv`'s final info (``true_adjacency``, ``oriented_graph``, ``orient_seed``,
    ``columns``, ``factors``, ``interventional_audit_details``, ``view``) and ``"algorithm_slots"``
    (label -> method).

    ## Semantic view

    By default the agent sees numbers only (``view="numeric"`` in the final info), the paper's
    protocol. ``describe_variables=True`` (``view="semantic"``) adds each real variable's name,
    unit and definition from the scenario card to the start message (and the reset info), so a
    researcher can measure what semantic priors add; the card's edges, rationales, equations and
    roles are never shown.

    ## Arguments
    {arguments}    | ``budgets``          | None     | overrides of :data:`DEFAULT_TOOL_BUDGETS` (turns, tests, algorithm_calls, wall_time) |
    | ``menu``             | ``ARENA_MENU`` | a :class:`~causal_gym.harness.menu.Menu` of any length, or distinct method names of :func:`causal_gym.discovery.methods` or import paths ``"package.module:function"`` |
    | ``start``            | ``"empty"`` | ``"empty"`` or ``"complete"`` starting graph |
    | ``n_resamples``      | 10       | subsamples of ``stability`` |
    | ``subsample``        | 0.8      | share of rows per ``stability`` subsample |
    | ``sandbox_limits``   | None     | :class:`~causal_gym.harness.SandboxLimits` of ``run_code`` |
    | ``sandbox``          | ``"auto"`` | ``run_code``'s backend: ``"auto"``, ``"bwrap"``, ``"unshare"`` or ``"process"`` (no OS isolation) |
    | ``algorithm_time_limit`` | 300.0 | seconds an uncached ``run_algorithm`` may compute before it is stopped (charged, no graph, not cached); None: no limit |

    ## Registered ids

    ``CausalArena-{synthetic,formula,semantic,real}-tools-v0`` (``source`` preset), e.g.
    ``gym.make("CausalArena-formula-tools-v0", n_obs=200)``.

    ## Version History

    * v0: initial release. Until these ids existed the env was made with ``mode="tools"`` on
      ``CausalArena-{source}-v0``, which still works with a ``DeprecationWarning``.
    """

    def __init__(
        self,
        source: str = "synthetic",
        d: int | None = None,
        split: str = "obs",
        factors: Mapping[str, Any] | None = None,
        replicate: int = 0,
        n_obs: int | None = None,
        n_int: int | None = None,
        describe_variables: bool = False,
        render_mode: str | None = None,
        seal: Seal | str | None = None,
        *,
        budgets: Mapping[str, Any] | None = None,
        menu: Menu | Sequence[str] = ARENA_MENU,
        start: str = "empty",
        n_resamples: int = 10,
        subsample: float = 0.8,
        sandbox_limits: SandboxLimits | None = None,
        sandbox: str = "auto",
        algorithm_time_limit: float | None = 300.0,
        cards: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(describe_variables, bool):
            raise ValueError(f"describe_variables must be True or False, got {describe_variables!r}")
        self.arena = ArenaSource(source, d, split, factors, replicate, n_obs, n_int, seal, cards)
        self.describe_variables = describe_variables
        self.budget_settings = _check_budgets(budgets)
        self.start = check_choice(start, ("empty", "complete"), "start")
        self._configure_data_tools(n_resamples, subsample, sandbox_limits, sandbox, algorithm_time_limit,
                                   _check_menu(menu))
        self.audit_failures: Counter[str] = Counter()
        width = self.arena.width
        super().__init__(
            width,
            budget_names=("tests", "algorithm_calls"),
            max_turns=self.budget_settings["turns"],
            wall_time_limit=self.budget_settings["wall_time"],
            text_max_length=8000,
            extra_observation_spaces={
                "intervention_mask": spaces.MultiBinary((self.arena.n, width)),
                "variables": spaces.MultiBinary(width),
            },
            render_mode=render_mode,
        )

    # -- WorkingGraphEnv hooks -------------------------------------------------------------------------

    def _new_episode(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        permutation = rng.permutation(len(self.menu))
        resample_seed = int(rng.integers(2**63 - 1))
        self._view, self._where = self.arena.draw(rng, options)
        self._slots = self.menu.slots(permutation)
        self._resample_rng = np.random.default_rng(resample_seed)
        self._testers: dict[str, Any] = {}
        self._summary: tuple[str, dict[str, Any]] | None = None
        k = self._view.size
        rows = np.argsort(self._view.task.dataset.regime, kind="stable")
        self._data = np.ascontiguousarray(self._view.data[rows, :k])
        graph = np.zeros((self.d, self.d), dtype=np.int8)
        if self.start == "complete":
            graph[:k, :k] = 1 - np.eye(k, dtype=np.int8)
        self._start_text = self._layout_text(rows)
        return graph, {"intervention_mask": self._view.mask[rows].copy(), "variables": self._view.variables.copy()}

    def _budget_limits(self) -> dict[str, float | None]:
        return {"tests": self.budget_settings["tests"], "algorithm_calls": self.budget_settings["algorithm_calls"]}

    def _task_intro(self) -> str:
        arena = self.arena
        data = (
            f"{arena.n_obs} observational rows and {arena.n_int} rows under interventions (each row intervenes on one "
            "variable, resampling it uniformly over its observed 10-90% range; its descendants follow)"
            if arena.split == "obs+int" else f"{arena.n_obs} observational rows"
        )
        return (
            f"CausalArena ({arena.source} source): {data} of the variables X0..X{self.d - 1}, in random column "
            "order. The first observation says which variables are real (the rest are padding slots, isolated "
            "in the truth) and which rows are interventional. Find the causal DAG among the real variables. The "
            "score is the directed-edge F1 of the submitted graph after Meek completion, with remaining "
            "undirected edges oriented at random (a fixed seed per dataset)."
        )

    def check_reset_options(self, options: Any) -> tuple[str, int | None]:
        """Validate ``reset`` options without building the instance (see :meth:`ArenaSource.check_options`)."""
        return self.arena.check_options(options)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on an instance (see *Starting State* in the class docstring)."""
        super().reset(seed=seed, options=options)
        self._last_text = self._start_text
        info = self._info()
        info.update(reset_info(self.arena, self._view, self._where, self.describe_variables, self.audit_failures))
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play one tool call (as :meth:`WorkingGraphEnv.step`); the final info adds the truth-based entries."""
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            info.update(final_extras(self._view, np.asarray(info["completed_graph"], dtype=np.int8), self.arena.seal,
                                     self.describe_variables))
            info["algorithm_slots"] = dict(self._slots)
        return observation, reward, terminated, truncated, info

    def _score(self, completed_graph: np.ndarray) -> dict[str, Any]:
        return score_submission(self._view, completed_graph)

    def _reward(self, scores: Mapping[str, Any]) -> float:
        return float(scores["f1"])

    # -- texts ---------------------------------------------------------------------------------

    def _layout_text(self, rows: np.ndarray) -> str:
        """The start message: the real variables and the row blocks of each regime."""
        view, k = self._view, self._view.size
        dataset = view.task.dataset
        position = np.argsort(view.columns)
        lines = [f"The data has {dataset.n} rows of {k} variables X0..X{k - 1}."]
        if k < self.d:
            lines[0] += f" X{k}..X{self.d - 1} are padding slots (no data; isolated in the truth)."
        regimes = dataset.regime[rows]
        for g, record in enumerate(dataset.meta["regimes"]):
            where = np.flatnonzero(regimes == g)
            if not where.size:
                continue
            span = f"rows {where[0]}-{where[-1]}"
            if g == 0:
                lines.append(f"- {span}: observational")
            else:
                kind = record["name"].split("(")[0]
                targets = ", ".join(variable_name(int(position[t])) for t in record["targets"])
                lines.append(f"- {span}: intervention on {targets} ({kind})")
        if self.describe_variables:
            lines.append("Variables:")
            lines += [f"- {v['slot']}: {v['name']} [{v['unit']}] {v['definition']}".rstrip()
                      for v in self.arena.describe(view)[:k]]
        start = "complete and undirected" if self.start == "complete" else "empty"
        lines.append(f"The working graph starts {start}.")
        return "\n".join(lines)

    # -- tools ---------------------------------------------------------------------------------

    def _action_masks(self) -> dict[str, Any]:
        """The working-graph masks, and the real variables only in the node fields: the data tools
        refuse padding slots (``set_edge`` accepts them, but they are isolated in every truth)."""
        masks = super()._action_masks()
        real = self._view.variables.astype(np.int8)
        masks.update(x=real.copy(), y=real.copy(), cond=np.where(real == 1, 2, 0).astype(np.int8))
        return masks

    def _refusal(self, *nodes: int) -> ToolResult | None:
        """An error result when a node is a padding slot, else None."""
        bad = [variable_name(v) for v in nodes if v >= self._view.size]
        if not bad:
            return None
        return ToolResult(f"error: {', '.join(bad)} {'is a padding slot' if len(bad) == 1 else 'are padding slots'}; "
                          f"the variables are X0..X{self._view.size - 1}", {"padding": bad}, ok=False)

    def _menu_graph(self, entry: MenuEntry) -> np.ndarray:
        view = self._view
        found = menu_graph(view.task.dataset, entry, self.algorithm_time_limit)
        graph = np.zeros((self.d, self.d), dtype=np.int8)
        graph[: view.size, : view.size] = found[np.ix_(view.columns, view.columns)]
        return graph


CausalArenaToolEnv.__doc__ = (CausalArenaToolEnv.__doc__ or "").replace(  # None under python -OO
    "{arguments}", ARGUMENTS_DOC.rstrip("\n") + "\n")
