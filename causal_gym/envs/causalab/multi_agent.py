"""Cooperative multi-scientist CausaLab: ``k`` agents share one manipulator, one budget and one prediction.

A PettingZoo environment over :class:`~causal_gym.envs.causalab.env.CausaLabEnv`. The lab itself
(mechanism, crystals, budgets, scoring) is one ``CausaLabEnv`` played underneath: every accepted
agent action becomes one call of its tools, so the intervention budget, the step limit, the
submissions and the final scores are the single-agent env's, shared by the team.

PettingZoo has no global registry like Gymnasium's; its convention is a module that exposes
factory functions. This module is that module:

- :func:`parallel_env` -- the Parallel API env (:class:`MultiScientistCausaLab`);
- :func:`raw_env` -- the same env as an AEC env (``parallel_to_aec`` without wrappers);
- :func:`env` -- the AEC env with PettingZoo's order-enforcing wrapper
  (``pettingzoo.utils.conversions.parallel_to_aec``).

``from causal_gym.envs.causalab import multi_agent; multi_agent.parallel_env(setting="5node",
n_agents=3)``. PettingZoo and SuperSuit are the ``marl`` extra; they are imported when this module is.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec, parallel_to_aec_wrapper

from causal_gym._validation import check_count
from causal_gym.envs.causalab.env import BUDGET_NAMES, COLUMNS, CausaLabEnv
from causal_gym.envs.causalab.world import MAX_TARGET, PROPERTIES, Setting
from causal_gym.harness.toolbox import ToolCall

__all__ = ["VERBS", "DEFAULT_SETPOINTS", "FREQUENCY_DIGITS", "MultiScientistCausaLab", "parallel_env", "raw_env", "env"]

VERBS = ("wait", "intervene", "enter_reactor", "submit")
"""What an agent does in a cycle (component 0 of its action)."""

DEFAULT_SETPOINTS = tuple(float(v) for v in range(0, 101, 10))
"""Intervention values an agent can choose from (exogenous terms of the crystals lie in 0..100)."""

FREQUENCY_DIGITS = (101, 100)
"""A prediction is ``100 * hundreds + units`` Hz (1 Hz steps), capped at ``MAX_TARGET``."""

_LAB_OPTIONS = ("split", "instance")
_POOL = tuple(PROPERTIES)
_ERROR = "error: "


def _agent_names(k: int) -> list[str]:
    return [f"scientist_{i}" for i in range(k)]


class MultiScientistCausaLab(ParallelEnv):
    """CausaLab played by a team: each scientist controls its own properties of one shared manipulator.

    ## Description

    ``n_agents`` scientists (``scientist_0 .. scientist_{k-1}``) work on one CausaLab episode
    (:class:`~causal_gym.envs.causalab.env.CausaLabEnv`): one hidden mechanism, one manipulator
    crystal, one reactor, one intervention budget, one step limit and one shared prediction.
    Control of the manipulator is split: at ``reset`` the episode's properties are shuffled with
    the env's seeded generator and dealt round-robin, so each scientist controls a disjoint set
    (sizes differ by at most one; with more scientists than properties some control none). Every
    scientist sees every shared record and reading. The team is rewarded together.

    ## Action Space

    ``MultiDiscrete([4, 8, len(setpoints), 101, 100])``, the same for every scientist:

    | Index | Meaning |
    |-------|---------|
    | 0 | verb, :data:`VERBS`: wait, intervene, enter_reactor, submit |
    | 1 | property to set (pool order of :data:`~causal_gym.envs.causalab.world.PROPERTIES`), used by intervene |
    | 2 | index into ``setpoints``: the value set, used by intervene |
    | 3, 4 | prediction ``100 * hundreds + units`` Hz, capped at 10000, used by submit |

    ``infos[agent]["action_mask"]`` is a tuple of five 0/1 vectors, one per component (the
    ``MultiDiscrete.sample(mask=...)`` format): the verbs allowed now and the properties the
    scientist controls. An action the mask forbids (a property the scientist does not control,
    a verb of the wrong phase, intervene with no budget left) is *rejected*: nothing reaches the
    lab, nothing is charged, and the scientist's info says why (``"accepted": False``).

    ## Who may do what, and simultaneous actions

    Any scientist may enter the reactor and any may submit; only a property's controller may set
    it. A cycle (one ``step``) resolves the actions in a fixed order:

    1. interventions, in agent order (``scientist_0`` first); each costs one shared intervention
       and one lab step, and later ones see the earlier ones' effects. If the budget runs out in
       the cycle, the later interventions are refused by the lab (``accepted`` False);
    2. ``enter_reactor``: played once if any scientist asks (the others' requests are merged);
    3. ``submit``: only the lowest-index submitting scientist's prediction is played; the other
       submissions of the cycle are dropped (``"superseded"`` in their info) -- one prediction per
       cycle, one shared budget of submissions.

    Masks are computed at the start of a cycle, so intervene and enter_reactor are only allowed
    in the manipulator phase and submit only once the reactor was entered in an earlier cycle.
    ``wait`` (or leaving an agent out of ``actions``) does nothing and costs nothing.

    ## Observation Space

    ``Box(-inf, inf, (N,), float32)``, identical in shape for every scientist, so a shared policy
    (SuperSuit ``pettingzoo_env_to_vec_env_v1``) can act for all. The segments, in order
    (:attr:`observation_layout` gives their slices; ``R`` = the lab's ``max_records``):

    | Segment | Size | Meaning |
    |---------|------|---------|
    | ``records`` | ``R * 9`` | the lab's records (columns :data:`~.env.COLUMNS`), row-major |
    | ``record_mask``, ``record_source``, ``record_target`` | ``R`` each | as in the lab's observation |
    | ``in_graph`` | 9 | columns that are nodes of the episode |
    | ``manipulator``, ``reactor`` | 9 each | current readings (reactor 0 until entered) |
    | ``reactor_visible`` | 1 | 1 from enter_reactor on |
    | ``budgets_remaining`` | 3 | share left of interventions, steps, submissions |
    | ``lab_phase`` | 1 | 0 manipulator, 1 reactor, 2 done |
    | ``controlled`` | 8 | 1 at the pool properties this scientist controls |
    | ``agent`` | ``k`` | one-hot index of the scientist |
    | ``last_accepted`` | 1 | whether this scientist's last action was accepted |
    | ``cycles_remaining`` | 1 | share of ``max_cycles`` left |

    Only the last four segments differ between scientists.

    ``infos[agent]`` holds ``"action_mask"`` (for the coming cycle), ``"accepted"``, ``"result"``
    (the lab's result text for the agent's call, or why it was rejected, merged or superseded),
    ``"controlled"`` (its properties), ``"lab_phase"`` and ``"budgets_remaining"`` (absolute
    amounts of the shared budgets); after ``reset`` also ``"instance"`` (setting, split, index).

    ## Rewards

    A team reward: 0 until the episode ends, then every scientist gets the lab's final reward
    (``reward=`` of the lab: success by default).

    ## Starting State

    ``reset(seed=, options=)`` seeds the env's generator (or continues it), draws the lab's seed
    and the control assignment from it, and resets the lab with ``options`` ``"split"`` and
    ``"instance"`` (as :class:`CausaLabEnv`: no options = a train-stream episode). Other keys
    are ignored with a warning (PettingZoo's API test passes a dummy option).

    ## Episode End

    Every scientist ends together: when the lab episode ends (success, out of submissions, step
    limit -- then ``truncated``) or after ``max_cycles`` cycles (then the lab is closed with
    ``give_up`` so its final scores exist, and ``truncated`` is True). The final infos carry the
    lab's final info under ``"lab"`` (scores, metrics and the truth, as in the single-agent env).

    ## Arguments

    | Parameter | Default | Description |
    |-----------|---------|-------------|
    | ``setting`` | ``"4node"`` | CausaLab setting (name or :class:`Setting`) |
    | ``n_agents`` | 2 | scientists, 1..8 |
    | ``setpoints`` | :data:`DEFAULT_SETPOINTS` | intervention values to choose from |
    | ``max_cycles`` | None | cycles per episode; None: the lab's step limit |
    | ``render_mode`` | None | ``"ansi"`` |
    | ``**lab_kwargs`` | | passed to :class:`CausaLabEnv` (``intervention_budget``, ``reward``, ...) |

    ## Version History

    * v0: initial release.
    """

    metadata = {"name": "causalab_multi_scientist_v0", "render_modes": ["ansi"], "render_fps": 4,
                "is_parallelizable": True}

    def __init__(
        self,
        setting: str | Setting = "4node",
        n_agents: int = 2,
        *,
        setpoints: Sequence[float] = DEFAULT_SETPOINTS,
        max_cycles: int | None = None,
        render_mode: str | None = None,
        **lab_kwargs: Any,
    ) -> None:
        self.lab = CausaLabEnv(setting, render_mode=render_mode, **lab_kwargs)
        self.render_mode = render_mode
        k = check_count(n_agents, "n_agents", 1)
        if k > len(_POOL):
            raise ValueError(f"n_agents must be at most {len(_POOL)} (one property each at least), got {k}")
        values = np.asarray(setpoints, dtype=np.float64)
        if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
            raise ValueError(f"setpoints must be a non-empty sequence of finite numbers, got {setpoints!r}")
        self.setpoints = values
        self.max_cycles = self.lab.step_limit if max_cycles is None else check_count(max_cycles, "max_cycles", 1)
        self.possible_agents = _agent_names(k)
        self.agents: list[str] = []
        r, c = self.lab.max_records, len(COLUMNS)
        sizes = {
            "records": r * c, "record_mask": r, "record_source": r, "record_target": r, "in_graph": c,
            "manipulator": c, "reactor": c, "reactor_visible": 1, "budgets_remaining": len(BUDGET_NAMES),
            "lab_phase": 1, "controlled": len(_POOL), "agent": k, "last_accepted": 1, "cycles_remaining": 1,
        }
        bounds = np.cumsum([0, *sizes.values()])
        self.observation_layout: dict[str, slice] = {
            name: slice(int(a), int(b)) for name, a, b in zip(sizes, bounds[:-1], bounds[1:])
        }
        """Segment name -> slice of the flat observation."""
        nvec = [len(VERBS), len(_POOL), len(values), *FREQUENCY_DIGITS]
        self._observation_spaces = {
            a: spaces.Box(-np.inf, np.inf, (int(bounds[-1]),), dtype=np.float32) for a in self.possible_agents
        }
        self._action_spaces = {a: spaces.MultiDiscrete(nvec) for a in self.possible_agents}
        self._rng: np.random.Generator | None = None
        self._lab_obs: dict[str, Any] | None = None

    # -- PettingZoo interface ------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Box:
        """The (shared-shape) observation space of ``agent``; the same object on every call."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.MultiDiscrete:
        """The (shared-shape) action space of ``agent``; the same object on every call."""
        return self._action_spaces[agent]

    def controlled(self, agent: str) -> tuple[str, ...]:
        """The properties ``agent`` controls in the current episode, in pool order."""
        if self._lab_obs is None:
            raise RuntimeError("no episode yet: call reset() first")
        return self._control[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode (see *Starting State*)."""
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        options = dict(options or {})
        ignored = sorted(set(options) - set(_LAB_OPTIONS))
        if ignored:
            warnings.warn(f"reset options {ignored} are not used (valid: {list(_LAB_OPTIONS)})", stacklevel=2)
        lab_seed = int(self._rng.integers(2**63 - 1))
        self._lab_obs, lab_info = self.lab.reset(
            seed=lab_seed, options={key: options[key] for key in _LAB_OPTIONS if key in options}
        )
        self._last_lab_info = lab_info
        in_episode = [p for p, flag in zip(_POOL, self._lab_obs["in_graph"]) if flag]
        order = self._rng.permutation(len(in_episode))
        k = len(self.possible_agents)
        dealt = {agent: {in_episode[j] for j in order[i::k]} for i, agent in enumerate(self.possible_agents)}
        self._control = {agent: tuple(p for p in _POOL if p in owned) for agent, owned in dealt.items()}
        self.agents = list(self.possible_agents)
        self._cycles = 0
        self._accepted = dict.fromkeys(self.agents, True)
        infos = {a: self._agent_info(a, self._lab_obs["last_result"]) for a in self.agents}
        for info in infos.values():
            info["instance"] = dict(lab_info["instance"])
        return self._observations(), infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """Play one cycle: every scientist's action, resolved as in *Who may do what*.

        Raises
        ------
        RuntimeError
            If called before ``reset`` or after the episode ended.
        ValueError
            If ``actions`` names an agent that is not playing.
        """
        if self._lab_obs is None or not self.agents:
            raise RuntimeError("no running episode: call reset() first")
        unknown = sorted(set(actions) - set(self.agents))
        if unknown:
            raise ValueError(f"actions for agents that are not playing: {unknown}; agents: {self.agents}")
        self._cycles += 1
        masks = {a: self._masks(a) for a in self.agents}
        calls: dict[str, list[tuple[str, ToolCall]]] = {verb: [] for verb in VERBS[1:]}
        messages: dict[str, str] = {}
        for agent in self.agents:
            verb, call, problem = self._read(agent, actions.get(agent), masks[agent])
            self._accepted[agent] = problem is None
            if problem is not None:
                messages[agent] = _ERROR + problem
            elif call is None:  # the verb "wait"
                messages[agent] = "waited"
            else:
                calls[verb].append((agent, call))
        ending = self._play(calls, messages)
        if ending is None and self._cycles >= self.max_cycles:
            _, reward, _, _, final = self._lab_step(ToolCall("give_up", {}))
            ending = (reward, False, True, final)
            for agent in self.agents:
                messages[agent] += f"\nmax_cycles ({self.max_cycles}) reached: the lab was closed with give_up"
        observations = self._observations()
        infos = {a: self._agent_info(a, messages[a]) for a in self.agents}
        reward, terminated, truncated = (0.0, False, False) if ending is None else ending[:3]
        if ending is not None:
            for info in infos.values():
                info["lab"] = ending[3]
        rewards = dict.fromkeys(self.agents, float(reward))
        terminations = dict.fromkeys(self.agents, bool(terminated))
        truncations = dict.fromkeys(self.agents, bool(truncated))
        if ending is not None:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """The lab's text rendering and who controls what (``"ansi"``)."""
        text = self.lab.render()
        if text is None:
            return None
        control = "; ".join(f"{a}: {', '.join(self._control[a]) or 'nothing'}" for a in self.possible_agents)
        return f"{text}control: {control}\n"

    def close(self) -> None:
        """Close the underlying lab."""
        self.lab.close()

    # -- a cycle -------------------------------------------------------------------------------

    @property
    def _lab_now(self) -> dict[str, Any]:
        """The lab's latest observation (after ``reset``)."""
        if self._lab_obs is None:
            raise RuntimeError("no episode yet: call reset() first")
        return self._lab_obs

    def _masks(self, agent: str) -> tuple[np.ndarray, ...]:
        """Per-component 0/1 masks of ``agent``'s action for the coming cycle."""
        phase = int(self._lab_now["lab_phase"])
        left = self._last_lab_info["budgets_remaining"]
        interventions_left, submissions_left = left["interventions"] >= 1, left["submissions"] >= 1
        verbs = np.array(
            [True, phase == 0 and interventions_left and bool(self._control[agent]), phase == 0,
             phase == 1 and submissions_left],
            dtype=np.int8,
        )
        properties = np.array([p in self._control[agent] for p in _POOL], dtype=np.int8)
        return (
            verbs,
            properties,
            np.ones(len(self.setpoints), dtype=np.int8),
            np.ones(FREQUENCY_DIGITS[0], dtype=np.int8),
            np.ones(FREQUENCY_DIGITS[1], dtype=np.int8),
        )

    def _read(
        self, agent: str, action: Any, masks: tuple[np.ndarray, ...]
    ) -> tuple[str, ToolCall | None, str | None]:
        """The verb, the lab call and the reason for rejection (None when the mask allows it)."""
        if action is None:
            return "wait", None, None
        space = self.action_space(agent)
        values = np.asarray(action)
        if values.shape != space.shape or values.dtype.kind not in "iu" or not space.contains(values):
            return "wait", None, f"malformed action {action!r}: expected an element of {self.action_space(agent)}"
        verb_index, prop, setpoint, hundreds, units = (int(v) for v in values)
        verb = VERBS[verb_index]
        if not masks[0][verb_index]:
            return verb, None, f"{verb} is not allowed now (lab phase {int(self._lab_now['lab_phase'])})"
        if verb == "intervene":
            name = _POOL[prop]
            if not masks[1][prop]:
                mine = ", ".join(self._control[agent]) or "none"
                return verb, None, f"{agent} does not control {name} (its properties: {mine})"
            return verb, ToolCall("intervene", {"property": name, "value": float(self.setpoints[setpoint])}), None
        if verb == "enter_reactor":
            return verb, ToolCall("enter_reactor", {}), None
        if verb == "submit":
            frequency = min(100.0 * hundreds + units, MAX_TARGET)
            return verb, ToolCall("submit", {"frequency": frequency}), None
        return verb, None, None

    def _play(
        self, calls: dict[str, list[tuple[str, ToolCall]]], messages: dict[str, str]
    ) -> tuple[float, bool, bool, dict[str, Any]] | None:
        """Play the cycle's accepted calls in the documented order; the lab's ending if it ended.

        A call is accepted when the lab carried it out: a refused intervention (no budget left
        after an earlier one of the cycle) is not, a wrong prediction is.
        """
        ordered = [*calls["intervene"], *calls["enter_reactor"][:1], *calls["submit"][:1]]
        for agent, _ in calls["enter_reactor"][1:]:
            messages[agent] = f"merged: {calls['enter_reactor'][0][0]} entered the reactor in this cycle"
        for agent, _ in calls["submit"][1:]:
            messages[agent] = f"superseded: {calls['submit'][0][0]} submitted the team's prediction in this cycle"
        ending = None
        for agent, call in ordered:
            if ending is not None:
                self._accepted[agent] = False
                messages[agent] = _ERROR + "the episode ended earlier in this cycle"
                continue
            _, reward, terminated, truncated, info = self._lab_step(call)
            self._accepted[agent] = bool(self._lab_now["last_ok"]) or call.tool == "submit"
            messages[agent] = self._lab_now["last_result"]
            if terminated or truncated:
                ending = (reward, terminated, truncated, info)
        return ending

    def _lab_step(self, call: ToolCall) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """One call of the lab's tools; keeps its observation and info."""
        obs, reward, terminated, truncated, info = self.lab.step(self.lab.toolbox.encode(call))
        self._lab_obs, self._last_lab_info = obs, info
        return obs, float(reward), bool(terminated), bool(truncated), info

    # -- observations and infos ----------------------------------------------------------------

    def _observations(self) -> dict[str, np.ndarray]:
        lab = self._lab_now
        shared = np.concatenate(
            [np.ravel(lab[key]).astype(np.float64) for key in (
                "records", "record_mask", "record_source", "record_target", "in_graph", "manipulator",
                "reactor", "reactor_visible", "budgets_remaining", "lab_phase")]
        )
        remaining = max(0.0, 1.0 - self._cycles / self.max_cycles)
        out = {}
        for agent in self.agents:
            controlled = np.array([p in self._control[agent] for p in _POOL], dtype=np.float64)
            one_hot = np.eye(len(self.possible_agents))[self.possible_agents.index(agent)]
            out[agent] = np.concatenate(
                [shared, controlled, one_hot, [float(self._accepted[agent]), remaining]]
            ).astype(np.float32)
        return out

    def _agent_info(self, agent: str, message: str) -> dict[str, Any]:
        return {
            "action_mask": self._masks(agent),
            "accepted": self._accepted[agent],
            "result": message,
            "controlled": self._control[agent],
            "lab_phase": int(self._lab_now["lab_phase"]),
            "budgets_remaining": dict(self._last_lab_info["budgets_remaining"]),
        }


def parallel_env(**kwargs: Any) -> MultiScientistCausaLab:
    """The Parallel API env; keyword arguments as :class:`MultiScientistCausaLab`."""
    return MultiScientistCausaLab(**kwargs)


def raw_env(**kwargs: Any) -> AECEnv:
    """The AEC env without wrappers (PettingZoo convention): ``parallel_to_aec``'s inner wrapper."""
    return parallel_to_aec_wrapper(parallel_env(**kwargs))


def env(**kwargs: Any) -> AECEnv:
    """The AEC env as PettingZoo users expect it: :func:`raw_env` with the order-enforcing wrapper."""
    return parallel_to_aec(parallel_env(**kwargs))
