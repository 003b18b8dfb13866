"""Wrappers that make the typed causal_gym tool envs trainable with Stable-Baselines3.

The tool envs (Heuresis, CausaLab, CausalArena tool mode) observe and act through typed ``Dict``
spaces with ``Text`` fields, which SB3 does not support. Each wrapper here does one thing; they
compose, and :func:`make_sb3_env` composes them for a registered id:

- :class:`FlattenDictActions` -- the typed ``Dict`` action becomes one ``Discrete(N)`` index into
  an enumerated catalogue of concrete tool calls, with exact action masks (``action_masks()``,
  the method :class:`sb3_contrib.MaskablePPO` looks for);
- :class:`DropText` -- removes the ``Text`` entries of a ``Dict`` observation;
- :class:`FlatDictObservation` -- every remaining entry becomes a 1-D space SB3 supports
  (``Box`` as ``float32``, ``MultiBinary``, ``MultiDiscrete``, ``Discrete``);
- optionally Gymnasium's ``FlattenObservation`` on top: one ``Box`` for an ``MlpPolicy``;
- :class:`ActionMasks` -- outermost: ``env.action_masks()`` works on the wrapped env (Gymnasium
  1.x wrappers no longer forward attributes) and exists for every discrete action space (all
  True where the env declares no masks, e.g. the CausaLab planner).

Why one flat ``Discrete`` and not ``MultiDiscrete``
---------------------------------------------------
SB3's ``MultiDiscrete`` masks are per dimension, so they cannot express the rules that tie
fields together (the two variables of a pair differ; a conditioning set holds neither; a number
field only matters for some tools). A flat catalogue lists only calls that obey those rules, and
its mask is exact: an index is masked valid exactly when the environment will accept the call
(``tests/test_rl_wrappers.py`` checks this on sampled actions).

How each field kind is enumerated
---------------------------------
==============  ======================================================================
field kind      values in the catalogue
==============  ======================================================================
``node``        every variable (the fields of one call name distinct variables)
``node_set``    every subset of at most ``max_set_size`` variables not named by the call
``choice``      every choice
``number``      the field's grid (``ActionField.grid``, declared by the env) or, when given,
                ``number_grids[field]`` (fixed setpoints); a tool with a number field that
                has no grid is left out of the catalogue
``text``        the empty string when the field is optional (e.g. CausaLab's hypothesis,
                Heuresis's edge list: submit then submits the working graph); a tool with a
                required text field (``run_code``, ``verify``, ``hypothesize``) is left out
==============  ======================================================================

The left-out tools and the reason are in :attr:`FlattenDictActions.omitted`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_count, check_real
from causal_gym.harness.toolbox import Toolbox, ToolCall

__all__ = ["ActionMasks", "DropText", "FlatDictObservation", "FlattenDictActions", "make_sb3_env"]


class DropText(gym.ObservationWrapper):
    """Remove the ``Text`` entries of a ``Dict`` observation (SB3 has no text space).

    The text stays available to code that needs it through the wrapped env (e.g. the call record).

    Raises
    ------
    ValueError
        If the observation space is not a ``Dict`` or holds nothing but text.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise ValueError(f"DropText needs a Dict observation space, got {type(space).__name__}")
        self._keys = tuple(k for k, s in space.spaces.items() if not isinstance(s, spaces.Text))
        if not self._keys:
            raise ValueError("every entry of the observation is text; nothing would be left")
        self.observation_space = spaces.Dict({k: space[k] for k in self._keys}, sort_keys=False)

    def observation(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """The observation without its text entries."""
        return {k: observation[k] for k in self._keys}


def _flat_space(key: str, space: spaces.Space) -> spaces.Space:
    if isinstance(space, spaces.Box):
        return spaces.Box(space.low.reshape(-1).astype(np.float32), space.high.reshape(-1).astype(np.float32),
                          dtype=np.float32)
    if isinstance(space, spaces.MultiBinary):
        return spaces.MultiBinary(int(np.prod(space.shape)))
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.MultiDiscrete(space.nvec.reshape(-1), dtype=np.int64, start=space.start.reshape(-1))
    if isinstance(space, spaces.Discrete):
        return spaces.Discrete(int(space.n), start=int(space.start))
    hint = " (wrap with DropText first)" if isinstance(space, spaces.Text) else ""
    raise ValueError(f"observation entry {key!r} is a {type(space).__name__}, which SB3 cannot take{hint}")


class FlatDictObservation(gym.ObservationWrapper):
    """Every entry of a ``Dict`` observation as a 1-D space SB3 supports.

    ``Box`` entries become flat ``float32`` boxes, ``MultiBinary`` and ``MultiDiscrete`` entries
    flat vectors (SB3 rejects multi-dimensional ``MultiDiscrete``), ``Discrete`` entries stay.
    Keys and their order are kept.

    Raises
    ------
    ValueError
        If the space is not a ``Dict`` or an entry is of another kind (text: use :class:`DropText`;
        nested dicts are not flattened).
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise ValueError(f"FlatDictObservation needs a Dict observation space, got {type(space).__name__}")
        self._flat = {k: _flat_space(k, s) for k, s in space.spaces.items()}
        self.observation_space = spaces.Dict(self._flat, sort_keys=False)

    def observation(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """Each entry reshaped (and cast) to its flat space."""
        out: dict[str, Any] = {}
        for key, space in self._flat.items():
            value = observation[key]
            if isinstance(space, spaces.Discrete):
                out[key] = np.int64(value)
            else:
                out[key] = np.asarray(value).reshape(-1).astype(space.dtype)
        return out


def _subsets(d: int, size: int) -> list[tuple[int, ...]]:
    return [c for k in range(size + 1) for c in itertools.combinations(range(d), k)]


class FlattenDictActions(gym.ActionWrapper):
    """The typed ``Dict`` action of a causal_gym tool env as one ``Discrete`` index, with exact masks.

    Index ``i`` plays ``catalogue[i]``, a concrete :class:`~causal_gym.harness.toolbox.ToolCall`
    (see the module docstring for how each field kind is enumerated). :meth:`action_masks` says
    which indices the env accepts now, from the latest ``info``:

    - the env's ``info["action_mask"]``: the ``"tool"`` entry (tools valid in this phase: the
      working-graph last turn, CausaLab's manipulator/reactor phases and used-up ``enter_reactor``) and
      the entries of ``Discrete`` fields (e.g. CausaLab's properties of this episode, CausalArena's
      real variables: its masks leave padding slots out of ``set_edge`` too, which accepts them) and
      ``MultiBinary`` fields (Gymnasium's sample-mask convention: 0 forces 0, 1 forces 1, 2 free);
    - budgets: a tool that draws on a budget (``Tool.cost_kind``) is valid only while
      ``info["budgets_remaining"][cost_kind]`` covers its cost (``Tool.cost``, unless
      ``tool_costs`` overrides it).

    Parameters
    ----------
    env : gym.Env
        An env whose unwrapped instance has a ``toolbox`` (:class:`~causal_gym.harness.Toolbox`)
        and whose action space is that toolbox's typed space.
    number_grids : mapping of str to sequence of float, optional
        Setpoints of each number field, replacing the grids the fields declare
        (``ActionField.grid``; the default). A tool using a number field without a grid is omitted.
    tools : sequence of str, optional
        Restrict the catalogue to these tools (default: every tool that can be enumerated).
    max_set_size : int, default 1
        Largest node set enumerated (the catalogue grows as ``d ** max_set_size``).
    tool_costs : mapping of str to float, optional
        Budget units one call of a tool draws, overriding what the tool declares (``Tool.cost``;
        e.g. Heuresis's ``stability`` declares ``n_resamples`` tests).

    Raises
    ------
    ValueError
        Without a toolbox, with an unknown tool or field name, a named tool that cannot be
        enumerated, grid values outside a field's bounds, or an empty catalogue.

    Examples
    --------
    >>> import gymnasium as gym, causal_gym
    >>> env = FlattenDictActions(gym.make("CausaLab-4node-v0"), number_grids={"value": [0, 50, 100]})
    >>> env.action_space, env.catalogue[0].tool, sorted(env.omitted)
    (Discrete(26), 'intervene', ['hypothesize', 'submit', 'verify'])
    """

    def __init__(
        self,
        env: gym.Env,
        number_grids: Mapping[str, Sequence[float]] | None = None,
        tools: Sequence[str] | None = None,
        max_set_size: int = 1,
        tool_costs: Mapping[str, float] | None = None,
    ) -> None:
        super().__init__(env)
        toolbox = getattr(env.unwrapped, "toolbox", None)
        if not isinstance(toolbox, Toolbox):
            raise ValueError(f"{type(env.unwrapped).__name__} has no toolbox; FlattenDictActions wraps causal_gym tool envs")
        if not isinstance(env.action_space, spaces.Dict) or "tool" not in env.action_space.spaces:
            raise ValueError("the wrapped env's action space must be its toolbox's typed Dict (is it already flattened?)")
        self.toolbox = toolbox
        self.max_set_size = check_count(max_set_size, "max_set_size", 0)
        if number_grids is None:
            number_grids = {name: f.grid for name, f in toolbox.fields.items() if f.grid}
        grids = self._check_grids(number_grids)
        costs = {t.name: t.cost for t in toolbox.tools} | self._check_costs(tool_costs or {})
        wanted = self._check_tools(tools)
        self.omitted: dict[str, str] = {}
        calls: list[ToolCall] = []
        for tool in toolbox.tools:
            if tool.name not in wanted:
                continue
            reason = self._omission(tool, grids)
            if reason is not None:
                if tools is not None:
                    raise ValueError(f"tool {tool.name!r} cannot be enumerated: {reason}")
                self.omitted[tool.name] = reason
                continue
            calls += self._calls(tool, grids)
        if not calls:
            raise ValueError("the catalogue is empty: no tool can be enumerated with these arguments")
        self.catalogue: tuple[ToolCall, ...] = tuple(calls)
        self.action_space = spaces.Discrete(len(calls))
        self._encoded = tuple(toolbox.encode(c) for c in calls)
        self._tool_index = np.array([toolbox.index(c.tool) for c in calls], dtype=np.intp)
        self._cost = np.array([costs[c.tool] for c in calls])
        self._cost_kind = tuple(toolbox.tool(c.tool).cost_kind for c in calls)
        self._info: Mapping[str, Any] = {}

    # -- construction ----------------------------------------------------------------------------

    def _check_grids(self, grids: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, ...]]:
        out = {}
        for name, grid in grids.items():
            field = self.toolbox.fields.get(name)
            if field is None or field.kind != "number":
                numbers = [f for f, spec in self.toolbox.fields.items() if spec.kind == "number"]
                raise ValueError(f"number_grids names {name!r}, which is not a number field; number fields: {numbers}")
            if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
                raise ValueError(f"number_grids[{name!r}] must be a non-empty sequence of numbers, got {grid!r}")
            low, high = field.bounds
            values = tuple(check_real(v, f"number_grids[{name!r}] member") for v in grid)
            outside = [v for v in values if not low <= v <= high]
            if outside:
                raise ValueError(f"number_grids[{name!r}] has values {outside} outside the field's bounds [{low:g}, {high:g}]")
            if len(set(values)) != len(values):
                raise ValueError(f"number_grids[{name!r}] repeats a value: {values}")
            out[name] = values
        return out

    def _check_costs(self, costs: Mapping[str, float]) -> dict[str, float]:
        unknown = sorted(set(costs) - set(self.toolbox.names))
        if unknown:
            raise ValueError(f"tool_costs names unknown tools {unknown}; tools: {list(self.toolbox.names)}")
        return {name: check_real(v, f"tool_costs[{name!r}]", 0.0) for name, v in costs.items()}

    def _check_tools(self, tools: Sequence[str] | None) -> set[str]:
        if tools is None:
            return set(self.toolbox.names)
        if isinstance(tools, str) or not isinstance(tools, Sequence) or not tools:
            raise ValueError(f"tools must be a non-empty sequence of tool names, got {tools!r}")
        unknown = sorted(set(tools) - set(self.toolbox.names))
        if unknown:
            raise ValueError(f"unknown tools {unknown}; tools: {list(self.toolbox.names)}")
        return set(tools)

    def _omission(self, tool: Any, grids: Mapping[str, Sequence[float]]) -> str | None:
        for name in tool.fields:
            kind = self.toolbox.fields[name].kind
            if kind == "text" and name in tool.required:
                return f"its required text field {name!r} cannot be enumerated"
            if kind == "number" and name not in grids:
                return f"its number field {name!r} has no grid (pass number_grids={{{name!r}: [...]}})"
        return None

    def _calls(self, tool: Any, grids: Mapping[str, Sequence[float]]) -> list[ToolCall]:
        d = self.toolbox.d
        kinds = [self.toolbox.fields[name].kind for name in tool.fields]
        options: list[Sequence[Any]] = []
        for name, kind in zip(tool.fields, kinds):
            if kind == "node":
                options.append(range(d))
            elif kind == "node_set":
                options.append(_subsets(d, self.max_set_size))
            elif kind == "choice":
                options.append(self.toolbox.fields[name].choices)
            elif kind == "number":
                options.append(grids[name])
            else:
                options.append(("",))
        calls = []
        for values in itertools.product(*options):
            nodes = [v for v, k in zip(values, kinds) if k == "node"]
            named = set(nodes)
            if len(named) != len(nodes) or any(named & set(v) for v, k in zip(values, kinds) if k == "node_set"):
                continue
            calls.append(ToolCall(tool.name, dict(zip(tool.fields, values))))
        return calls

    # -- the wrapper -------------------------------------------------------------------------------

    def action(self, action: Any) -> dict[str, Any]:
        """The typed action of catalogue index ``action``.

        Raises
        ------
        ValueError
            If ``action`` is not an integer index of the catalogue.
        """
        index = np.asarray(action)
        if index.size != 1 or index.dtype.kind not in "iu" or not 0 <= int(index.reshape(())) < len(self.catalogue):
            raise ValueError(f"action must be an integer in 0..{len(self.catalogue) - 1}, got {action!r}")
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._encoded[int(index.reshape(()))].items()}

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._info = info
        return observation, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(self.action(action))
        self._info = info
        return observation, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Which catalogue indices the env accepts now (``bool`` vector), from the latest info."""
        return self.masks_from_info(self._info)

    def masks_from_info(self, info: Mapping[str, Any]) -> np.ndarray:
        """The action mask implied by an env ``info`` (see the class docstring); pure.

        Used by :meth:`action_masks` and by agents that play the unwrapped env
        (:class:`causal_gym.agents.rl.SB3Agent`).
        """
        ok = np.ones(len(self.catalogue), dtype=bool)
        masks = info.get("action_mask") or {}
        tool_mask = masks.get("tool")
        if tool_mask is not None:
            ok &= np.asarray(tool_mask, dtype=bool)[self._tool_index]
        for name, mask in masks.items():
            if name == "tool" or mask is None or name not in self.toolbox.fields:
                continue
            kind = self.toolbox.fields[name].kind
            if kind not in ("node", "choice", "node_set"):
                continue
            mask = np.asarray(mask)
            for k, call in enumerate(self.catalogue):
                if ok[k] and name in call.arguments:
                    ok[k] = self._allowed(kind, name, call.arguments[name], mask)
        remaining = info.get("budgets_remaining") or {}
        for k, cost_kind in enumerate(self._cost_kind):
            if cost_kind is not None and cost_kind in remaining:
                ok[k] &= float(remaining[cost_kind]) >= self._cost[k]
        return ok

    def _allowed(self, kind: str, name: str, value: Any, mask: np.ndarray) -> bool:
        if kind == "node_set":
            members = np.zeros(self.toolbox.d, dtype=np.int8)
            members[list(value)] = 1
            return bool(np.all((mask == 2) | (mask == members)))
        index = value if kind == "node" else self.toolbox.fields[name].choices.index(value)
        return bool(mask[index])


class ActionMasks(gym.Wrapper):
    """Expose ``action_masks()`` (what :class:`sb3_contrib.MaskablePPO` calls) on the outermost wrapper.

    Delegates to the innermost ``action_masks`` (a :class:`FlattenDictActions` or an env that
    defines one); for a ``Discrete`` or ``MultiDiscrete`` action space without one every action is
    valid (for ``MultiDiscrete`` the per-dimension masks are concatenated, sb3-contrib's layout).
    """

    def __init__(self, env: gym.Env) -> None:
        if not isinstance(env.action_space, (spaces.Discrete, spaces.MultiDiscrete)):
            raise ValueError(f"action masks need a Discrete or MultiDiscrete action space, got {env.action_space}")
        super().__init__(env)

    def action_masks(self) -> np.ndarray:
        """Which actions the env accepts now (``bool`` vector)."""
        try:
            inner = self.env.get_wrapper_attr("action_masks")
        except AttributeError:
            return np.ones(spaces.flatdim(self.action_space), dtype=bool)  # Discrete: n; MultiDiscrete: sum(nvec)
        return np.asarray(inner(), dtype=bool)


def make_sb3_env(
    env_id: str,
    *,
    number_grids: Mapping[str, Sequence[float]] | None = None,
    tools: Sequence[str] | None = None,
    max_set_size: int = 1,
    flatten: bool = False,
    **env_kwargs: Any,
) -> gym.Env:
    """``gym.make(env_id, **env_kwargs)`` wrapped for SB3: discrete masked actions, flat observations.

    Applies, as needed by the env's spaces: :class:`FlattenDictActions` (a typed ``Dict`` action;
    ``number_grids`` default: the grids the env's number fields declare, budget costs as its tools
    declare them), :class:`DropText`, :class:`FlatDictObservation` and, with ``flatten=True``,
    Gymnasium's ``FlattenObservation`` (one ``Box``, for ``MlpPolicy``), then, for a discrete action
    space, :class:`ActionMasks` so ``env.action_masks()`` works for ``MaskablePPO``. Envs whose
    spaces are already SB3-ready (the CausaLab planner, the design envs) only get the observation
    wrappers and, when their actions are discrete, the masks; a ``Box`` action passes unchanged
    (SB3's continuous-action agents take it; there is nothing to mask).

    Examples
    --------
    >>> env = make_sb3_env("CausaLab-4node-v0")
    >>> type(env.action_space).__name__, sorted(env.observation_space.spaces)[:3]
    ('Discrete', ['budgets_remaining', 'in_graph', 'lab_phase'])
    >>> _ = env.reset(seed=0)
    >>> env.action_masks().shape == (env.action_space.n,)
    True
    """
    if not isinstance(flatten, (bool, np.bool_)):
        raise ValueError(f"flatten must be True or False, got {flatten!r}")
    env = gym.make(env_id, **env_kwargs)
    if isinstance(env.action_space, spaces.Dict):
        env = FlattenDictActions(env, number_grids, tools, max_set_size)
    elif number_grids is not None or tools is not None or max_set_size != 1:
        raise ValueError(
            f"{env_id} has a {type(env.action_space).__name__} action space: number_grids, tools and max_set_size "
            "apply only to typed Dict actions"
        )
    if isinstance(env.observation_space, spaces.Dict):
        if any(isinstance(s, spaces.Text) for s in env.observation_space.spaces.values()):
            env = DropText(env)
        env = FlatDictObservation(env)
    if flatten:
        env = gym.wrappers.FlattenObservation(env)
    return ActionMasks(env) if isinstance(env.action_space, (spaces.Discrete, spaces.MultiDiscrete)) else env
