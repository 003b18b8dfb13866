"""CausalArena as Gymnasium environments: a one-step graph submission, or the working-graph tool harness.

Two environment classes share one instance machinery (:class:`~.source.ArenaSource`: the task
catalogue of :mod:`.catalogue`, the view and the score of :mod:`.source`):

- :class:`CausalArenaEnv`, ids ``CausalArena-{synthetic,formula,semantic,real}-v0`` (entry point
  :func:`make_arena_env`): the observation is one exported split (data and intervention mask);
  the single action is a directed adjacency matrix; the reward is its directed-edge F1, scored as
  CausalArena scores a method (:mod:`.scoring`).
- :class:`~.tool_env.CausalArenaToolEnv`, ids ``CausalArena-{synthetic,formula,semantic,real}-tools-v0``
  (:mod:`.tool_env`): the same split behind the evidence tools shared with Heuresis
  (:mod:`causal_gym.harness.data_tools`) and a working graph
  (:class:`causal_gym.harness.WorkingGraphEnv`); the algorithm menu holds the arena's methods.

The ids are declared in :mod:`.spec`. ``gym.make("CausalArena-synthetic-v0", mode="tools")``, the
former way to the tool env, still works and warns (``DeprecationWarning``).
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_adjacency, check_choice
from causal_gym.envs.arena.scoring import METRICS
from causal_gym.envs.arena.source import (
    ARGUMENTS_DOC,
    ArenaSource,
    ArenaView,
    final_extras,
    reset_info,
    score_submission,
)
from causal_gym.graphs import directed_cycle
from causal_gym.harness.working_graph import render_ansi, render_rgb, variable_name
from causal_gym.seal import Seal

if TYPE_CHECKING:
    from causal_gym.envs.arena.tool_env import CausalArenaToolEnv

__all__ = ["MODES", "CausalArenaEnv", "make_arena_env"]

MODES = ("submit", "tools")
"""``mode`` of :func:`make_arena_env`: ``"submit"``, the one-step adjacency answer; ``"tools"``
(deprecated; use the ``-tools-v0`` ids), the working-graph harness."""


class CausalArenaEnv(gym.Env):
    """CausalArena, submit mode: read one exported split, answer with a directed graph in one step.

    ## Description

    Each episode is one instance of the arena (:mod:`causal_gym.envs.arena.catalogue` lists the
    instances per source): a split of an executable SCM -- synthetic factor-grid SCM, formula-
    grounded or semantic scenario, semi-synthetic network -- or the Sachs table, sampled under
    the paper's protocol (observational, or 800 observational + 200 interventional rows with an
    intervention mask). The agent returns the causal graph over the variables.

    ## Action Space

    ``MultiBinary((d, d))``: ``A[i, j] = 1, A[j, i] = 0`` is ``Xi -> Xj``; ``A[i, j] = A[j, i] = 1``
    is an undirected edge, oriented for scoring along a random node order drawn from the split's
    fixed per-file seed (so the same answer always gets the same score). The diagonal must be 0.
    An action that is not a 0/1 ``(d, d)`` matrix without self-loops, or whose directed edges form
    a cycle, is invalid: the episode ends with reward 0, ``info["status"] == "invalid"`` and
    ``info["error"]``. With ``accept_cycles=True`` a cyclic answer is scored as it is (SID is then
    missing), as the paper scores the graphs its methods return: PC's orientation phase, for one,
    returns cyclic graphs on most configurations at d >= 50.

    ## Observation Space

    | Key           | Space                               | Meaning |
    |---------------|-------------------------------------|---------|
    | ``data``      | ``Box(-inf, inf, (n, d), float64)`` | the rows (padding columns 0) |
    | ``mask``      | ``MultiBinary((n, d))``             | 1 where a row intervenes on a variable (all 0 for ``obs``) |
    | ``variables`` | ``MultiBinary(d)``                  | 1 for a real variable, 0 for a padding slot |

    Columns are in a fixed random order per instance; rows are as exported (shuffled).

    ## Rewards

    The directed-edge F1 of the (oriented) submission against the true DAG.

    ## Starting State

    ``reset(seed=, options=)``: ``{"instance": k}`` picks entry ``k`` of the instance list,
    otherwise ``self.np_random`` draws one; ``{"split": "train"}`` (synthetic) streams fresh SCMs.
    The info holds ``"instance"`` (source, index, unit, sizes), ``"interventional_audit"`` (for
    ``obs+int``: passed, failure counts per check) and, with ``describe_variables``,
    ``"variables"``.

    ## Episode End

    After the one step (``terminated=True``). The final info holds ``"scores"`` (every metric of
    :data:`causal_gym.envs.arena.scoring.METRICS`; all None for an invalid action),
    ``"status"`` (``"ok"`` or ``"invalid"``), ``"error"``, ``"submitted_graph"``,
    ``"oriented_graph"``, ``"cyclic"`` (the scored answer has a directed cycle; None for an invalid
    one), ``"orient_seed"``, ``"true_adjacency"``, ``"columns"`` (view slot ->
    SCM variable), ``"factors"``, ``"interventional_audit_details"`` and ``"view"``
    (``"semantic"`` with ``describe_variables``, else ``"numeric"``). Nothing derived from
    the truth appears before that.

    ## Arguments
    {arguments}
    ## Vectorized environment

    ``gym.make_vec("CausalArena-synthetic-v0", num_envs=4)``; every episode is one step.

    ## Version History

    * v0: initial release. ``mode="tools"`` on these ids (through :func:`make_arena_env`) is
      deprecated: the tool env has its own ids, ``CausalArena-{source}-tools-v0``.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

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
        accept_cycles: bool = False,
        cards: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(accept_cycles, bool):
            raise ValueError(f"accept_cycles must be True or False, got {accept_cycles!r}")
        self.accept_cycles = accept_cycles
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if not isinstance(describe_variables, bool):
            raise ValueError(f"describe_variables must be True or False, got {describe_variables!r}")
        self.arena = ArenaSource(source, d, split, factors, replicate, n_obs, n_int, seal, cards)
        self.describe_variables = describe_variables
        self.render_mode = render_mode
        width, n = self.arena.width, self.arena.n
        self.d = width
        self.observation_space = spaces.Dict({
            "data": spaces.Box(-np.inf, np.inf, (n, width), dtype=np.float64),
            "mask": spaces.MultiBinary((n, width)),
            "variables": spaces.MultiBinary(width),
        })
        self.action_space = spaces.MultiBinary((width, width))
        self.audit_failures: Counter[str] = Counter()
        self._view: ArenaView | None = None
        self._done = False
        self._submitted: np.ndarray | None = None

    def check_reset_options(self, options: Any) -> tuple[str, int | None]:
        """Validate ``reset`` options without building the instance (see :meth:`ArenaSource.check_options`)."""
        return self.arena.check_options(options)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode (see *Starting State*)."""
        super().reset(seed=seed)
        self._view, where = self.arena.draw(self.np_random, options)
        self._done, self._submitted = False, None
        info = reset_info(self.arena, self._view, where, self.describe_variables, self.audit_failures)
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Score the submitted graph; the episode ends.

        Raises
        ------
        RuntimeError
            If called before ``reset`` or after the episode ended (loop errors, not agent input).
        """
        if self._view is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode has ended; call reset() to start a new one")
        self._done = True
        try:
            graph = check_adjacency(np.asarray(action), "the action", d=self.d)
            cycle = directed_cycle(graph)
            if cycle is not None and not self.accept_cycles:
                raise ValueError("the action's directed edges form a cycle (" + " -> ".join(map(variable_name, cycle))
                                 + "); a causal graph answer must be acyclic")
        except (ValueError, TypeError) as err:
            info = {"status": "invalid", "error": str(err), "scores": dict.fromkeys(METRICS),
                    "submitted_graph": None, "cyclic": None,
                    **final_extras(self._view, None, self.arena.seal, self.describe_variables)}
            return self._observation(), 0.0, True, False, info
        self._submitted = graph
        scores = score_submission(self._view, graph)
        info = {"status": "ok", "error": None, "scores": scores, "submitted_graph": graph.copy(),
                "cyclic": cycle is not None, **final_extras(self._view, graph, self.arena.seal, self.describe_variables)}
        return self._observation(), float(scores["f1"]), True, False, info

    def task_description(self) -> str:
        """The task statement (for agents that read text)."""
        return (
            f"CausalArena ({self.arena.source} source, {self.arena.split} split): {self.arena.n} rows of up to "
            f"{self.d} variables; 'variables' flags the real ones and 'mask' the intervened cells. Answer with one "
            "(d, d) 0/1 adjacency matrix: A[i, j] = 1 and A[j, i] = 0 for Xi -> Xj, both 1 for an undirected edge "
            "(oriented at random with the dataset's fixed seed before scoring). The reward is the directed-edge F1."
        )

    def render(self) -> str | np.ndarray | None:
        """The instance and the submitted graph as text (``"ansi"``) or a drawing (``"rgb_array"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self._view is None:
            raise RuntimeError("call reset() before render()")
        graph = self._submitted if self._submitted is not None else np.zeros((self.d, self.d), dtype=np.int8)
        if self.render_mode == "rgb_array":
            return render_rgb(graph)
        state = "submitted" if self._submitted is not None else "nothing submitted yet"
        return (f"{self._view.task.instance.unit} ({self.arena.split}): {self.arena.n} rows x {self._view.size} "
                f"variables; {state}\n{render_ansi(graph)}\n")

    def _observation(self) -> dict[str, np.ndarray]:
        view = self._view
        if view is None:
            raise RuntimeError("call reset() first")
        return {"data": view.data.copy(), "mask": view.mask.copy(), "variables": view.variables.copy()}


CausalArenaEnv.__doc__ = (CausalArenaEnv.__doc__ or "").replace(  # None under python -OO
    "{arguments}", ARGUMENTS_DOC.rstrip("\n") + (
    "\n    | ``accept_cycles``    | False    | score an answer with a directed cycle as it is instead of "
    "rejecting it (the method reproduction sets it: the paper scores its methods' graphs as returned) |\n"))


def make_arena_env(mode: str = "submit", seal: Seal | str | None = None,
                   **kwargs: Any) -> CausalArenaEnv | CausalArenaToolEnv:
    """The submit env with ``kwargs``: the entry point of ``CausalArena-{source}-v0``.

    ``mode="tools"`` still builds :class:`~causal_gym.envs.arena.tool_env.CausalArenaToolEnv`, with a
    ``DeprecationWarning``: its ids are ``CausalArena-{source}-tools-v0``.

    Examples
    --------
    >>> env = make_arena_env(source="formula", n_obs=200)
    >>> obs, info = env.reset(seed=0, options={"instance": 0})
    >>> obs["data"].shape, info["instance"]["unit"]
    ((200, 25), 'formula/gas_cylinder')
    """
    mode = check_choice(mode, MODES, "mode")
    if mode == "submit":
        return CausalArenaEnv(seal=seal, **kwargs)
    warnings.warn(
        "mode='tools' of the CausalArena-{source}-v0 ids is deprecated; make CausalArena-{source}-tools-v0 "
        "(causal_gym.envs.arena.tool_env.CausalArenaToolEnv) instead",
        DeprecationWarning,
        stacklevel=2,
    )
    from causal_gym.envs.arena.tool_env import CausalArenaToolEnv

    return CausalArenaToolEnv(seal=seal, **kwargs)
