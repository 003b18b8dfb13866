"""The Heuresis repair-policy task: which of PC-KCI's deletions to re-test and restore, as a compact RL env.

:class:`HeuresisRepairEnv` plays the guided Heuresis env (:class:`~.env.HeuresisEnv`,
``guided=True``) underneath: the working graph starts from PC-KCI's output, every action is
one call of its tools (``ci_test``, ``set_edge`` or ``submit``) and draws on its budgets, and
the reward is its adjacency-F1 gain over PC-KCI. What this module adds is the RL interface:
flat SB3 spaces over the *candidate pairs* -- the pairs in PC-KCI's deletion log -- and
``action_masks()`` for sb3-contrib's MaskablePPO. :class:`EmptySetKCIRule` is the scripted
rule it is compared with.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_count
from causal_gym.envs.heuresis.env import HeuresisEnv, load_instance
from causal_gym.harness.data_tools import CI_TESTS
from causal_gym.harness.tool_env import LAST_TURN
from causal_gym.harness.toolbox import ToolCall, ToolError
from causal_gym.seal import Seal

__all__ = [
    "DECISIONS",
    "CONDITIONING",
    "PAIR_FEATURES",
    "GLOBAL_FEATURES",
    "GRADE_SCORES",
    "HeuresisRepairEnv",
    "EmptySetKCIRule",
]

DECISIONS = ("test", "restore", "keep", "submit")
"""Component 0 of an action: re-test the pair, make it an edge, make it a non-edge, or submit."""

CONDITIONING = ("logged", "empty", "neighbours")
"""Conditioning sets of a re-test: the separating set in PC-KCI's log, the empty set, or the pair's
current neighbours (every variable adjacent to either member in the working graph)."""

GRADE_SCORES: Mapping[str, float] = {
    "strong dependence": 1.0,
    "dependence": 0.75,
    "weak dependence": 0.5,
    "weak independence": -0.5,
    "independence": -1.0,
}
"""A test's strength grade as a signed score: positive = dependent (the deletion looks wrong)."""

_RESULT_SLOTS = tuple(f"{test}_{cond}" for test in CI_TESTS for cond in CONDITIONING)

PAIR_FEATURES = (
    "valid",
    "logged_independence",
    "logged_depth",
    "deletion_order",
    "restored",
    "abs_correlation",
    "common_neighbours",
    *(f"{slot}_{part}" for slot in _RESULT_SLOTS for part in ("tested", "score")),
)
"""Features of each candidate pair, in observation order (see :class:`HeuresisRepairEnv`)."""

GLOBAL_FEATURES = ("tests_left", "turns_left", "deleted_share", "restored_share")
"""Features of the episode, after the pair table."""

_POOLED_TESTERS = 128  # CI testers kept across episodes (a pool of 64 instances, both tests)
_POOLED_KCI_CACHE_MB = 32.0  # kernel-factor cache of each pooled KCI tester


@lru_cache(maxsize=_POOLED_TESTERS)
def _pooled_tester(
    family: str, split: str, index: int, d: int, n: int, expected_degree: float, seal: Seal | None, test: str
) -> Any:
    """One CI tester per instance and test, shared by every episode on that instance in this process."""
    from causal_gym.stats import CITester

    options = {"max_cache_mb": _POOLED_KCI_CACHE_MB} if test == "kci" else {}
    data = load_instance(family, split, index, d, n, expected_degree, seal)[0].data
    return CITester(data, test=test, **options)


class _PooledHeuresisEnv(HeuresisEnv):
    """The guided Heuresis env whose ``ci_test`` testers outlive the episode.

    A tester memoises p-values and kernels of one dataset, and its p-values do not depend on what
    was tested before, so sharing it across the many episodes an RL run plays on each instance of
    its pool changes nothing but the speed.
    """

    def _tester(self, test: str) -> Any:
        inst = self._instance
        return _pooled_tester(inst.family, inst.split, inst.index, inst.d, inst.n, inst.expected_degree, self.seal,
                              test)


class HeuresisRepairEnv(gym.Env):
    """Heuresis repair policy: re-test PC-KCI's deletions and restore the wrong ones, under a test budget.

    ## Description

    The guided Heuresis condition reduced to its decision unit, the deleted pair. An episode is
    one instance of a mechanism family (:mod:`causal_gym.envs.heuresis.instances`); the working
    graph starts as PC-KCI's output and the *candidate pairs* are the pairs PC-KCI deleted, in
    the order of its deletion log (at most ``d (d - 1) / 2``; slots beyond the log are padding).
    Each step the policy picks a decision, a candidate pair, a CI test and a conditioning set:

    - ``test``: run ``ci_test`` on the pair (costs 1 test of the Heuresis test budget);
    - ``restore`` / ``keep``: set the pair to an undirected edge / to no edge (``set_edge``);
    - ``submit``: submit the working graph.

    Every step is one Heuresis call and costs one turn. The test and conditioning components are
    read only by ``test``. Conditioning sets (:data:`CONDITIONING`): ``logged`` -- the set that
    separated the pair in PC-KCI's run; ``empty``; ``neighbours`` -- every variable adjacent to
    either member in the current working graph (so it changes as pairs are restored).

    ## Action Space

    ``MultiDiscrete([4, P, 2, 3])`` with ``P = d (d - 1) / 2``: decision (:data:`DECISIONS`),
    candidate slot, test (``fisherz``, ``kci``), conditioning set (:data:`CONDITIONING`).
    :meth:`action_masks` returns the concatenated per-component masks (MaskablePPO's format):
    ``test``/``restore``/``keep`` need a candidate, ``submit`` is always allowed; the slots are the
    filled ones (when PC-KCI deleted nothing, slot 0 stays allowed so the mask is never empty,
    and only ``submit`` is). An action outside the mask is played as an invalid Heuresis action:
    an error result that costs a turn (five in a row submit the working graph).

    ## Observation Space

    ``Box(-1, 1, (P * 19 + 4,), float32)``: a ``(P, 19)`` table, one row per slot
    (:data:`PAIR_FEATURES`), flattened row by row, then :data:`GLOBAL_FEATURES`.
    :meth:`pair_table` reshapes an observation back into the table.

    | Feature | Meaning |
    |---------|---------|
    | ``valid`` | 1 for a filled slot |
    | ``logged_independence`` | 1 if the logged grade is "independence" (p >= 0.2), 0 for "weak independence" |
    | ``logged_depth`` | size of the logged separating set / (d - 2) |
    | ``deletion_order`` | position in the deletion log / (number of deletions - 1) |
    | ``restored`` | 1 if the pair is an edge of the working graph now |
    | ``abs_correlation`` | absolute Pearson correlation of the pair in the data |
    | ``common_neighbours`` | common neighbours in PC-KCI's output / (d - 2) |
    | ``{test}_{cond}_tested``, ``_score`` | 6 result slots: 1 once run; latest grade, :data:`GRADE_SCORES` |
    | ``tests_left``, ``turns_left`` | share left of the test and turn budgets |
    | ``deleted_share``, ``restored_share`` | deletions / P, candidate pairs that are edges now / P |

    Everything is computed from what the guided agent sees: the data, PC-KCI's graph and log
    (without p-values) and its own test results. The truth labels of the deletions are never read.

    ## Rewards

    0 on every step but the last, where it is the adjacency-F1 gain of the submitted graph over
    PC-KCI (Heuresis's ``f1_gain_over_pc``): restoring exactly the wrongly deleted pairs earns the
    ideal oracle's gain, submitting PC-KCI's graph unchanged earns 0.

    ## Starting State

    ``reset(seed=, options=)``: ``options`` ``"split"`` (``"train"``, ``"dev"``, ``"test"``) and
    ``"instance"`` as in :class:`HeuresisEnv`. Without ``"instance"`` on the train split, the
    instance is drawn from ``self.np_random``: uniformly from the first ``train_instances``
    instances if that is set (a fixed pool, so PC-KCI runs once per instance), else from the
    unbounded stream (every episode a fresh instance, and a PC-KCI run). ``info`` holds the
    Heuresis reset info and ``"pairs"``: the candidate pairs ``(x, y)`` in slot order.

    ## Episode End

    ``submit`` terminates. Restored pairs are undirected edges next to PC-KCI's arrows, which Meek's
    completion can orient into a directed cycle; Heuresis rejects such a submission, so the env
    submits again in the same step and Heuresis submits the working graph with its undirected edges
    oriented along its arrows: the same adjacencies, so the same reward
    (``info["submission_rejected"]``). When a Heuresis budget runs out (turns or tests), the working
    graph is submitted in the same step and the episode terminates (``info["budget_exhausted"]``):
    the remaining budgets are part of the observation, so the end is part of the task, not a time
    limit. ``truncated`` only when Heuresis itself submitted for the policy (five invalid actions
    in a row). The final info holds Heuresis's ``"scores"`` (adjacency F1, gain, and the
    drill-down: recovered, harmful, restoration precision/recall).

    ## Budgets

    ``budgets`` as in :class:`HeuresisEnv`; here the default turn budget is ``2 P + 1`` (enough to
    test every candidate once and restore every one), the test budget is Heuresis's default (the
    tests PC-KCI ran on the instance).

    ## Arguments

    | Parameter | Default | Description |
    |-----------|---------|-------------|
    | ``family`` | ``"wild"`` | mechanism family |
    | ``d``, ``n``, ``expected_degree`` | 10, 600, 2.0 | instance size (as :class:`HeuresisEnv`; d >= 3) |
    | ``split`` | ``"train"`` | default split |
    | ``train_instances`` | None | size of the train pool; None = the unbounded stream |
    | ``budgets`` | None | Heuresis budget overrides |
    | ``render_mode`` | None | ``"ansi"`` or ``"rgb_array"`` (Heuresis's rendering) |
    | ``seal`` | None | seals the instance streams (as :class:`HeuresisEnv`) |

    ## Vectorized environment

    Any SB3 or Gymnasium vector env. CI testers are shared across episodes on the same instance
    within a process (an LRU of 128), which makes repeated episodes on a train pool fast.

    ## Version History

    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        family: str = "wild",
        d: int = 10,
        n: int = 600,
        expected_degree: float = 2.0,
        split: str = "train",
        train_instances: int | None = None,
        budgets: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
        seal: Seal | str | None = None,
    ) -> None:
        d = check_count(d, "d", 3)
        self.max_pairs = d * (d - 1) // 2
        if budgets is not None and not isinstance(budgets, Mapping):
            raise ValueError(f"budgets must be a dict of Heuresis budget overrides or None, got {budgets!r}")
        self.heuresis = _PooledHeuresisEnv(
            family, guided=True, d=d, n=n, expected_degree=expected_degree, split=split,
            budgets={"turns": 2 * self.max_pairs + 1, **(budgets or {})}, reward="f1_gain_over_pc",
            render_mode=render_mode, seal=seal,
        )
        self.d = d
        self.train_instances = None if train_instances is None else check_count(train_instances, "train_instances", 1)
        self.render_mode = render_mode
        self.action_space = spaces.MultiDiscrete([len(DECISIONS), self.max_pairs, len(CI_TESTS), len(CONDITIONING)])
        size = self.max_pairs * len(PAIR_FEATURES) + len(GLOBAL_FEATURES)
        self.observation_space = spaces.Box(-1.0, 1.0, (size,), dtype=np.float32)
        self._pairs: list[tuple[int, int]] | None = None

    # -- the public interface ------------------------------------------------------------------

    @property
    def candidate_pairs(self) -> list[tuple[int, int]]:
        """The candidate pairs ``(x, y)``, ``x < y``, in slot order (PC-KCI's deletion order)."""
        if self._pairs is None:
            raise RuntimeError("no episode yet: call reset() first")
        return list(self._pairs)

    def pair_table(self, observation: np.ndarray) -> np.ndarray:
        """The ``(P, len(PAIR_FEATURES))`` pair table of an observation."""
        return np.asarray(observation)[: self.max_pairs * len(PAIR_FEATURES)].reshape(self.max_pairs, -1)

    def check_reset_options(self, options: Any) -> tuple[str, int | None]:
        """Validate ``reset`` options without building the instance (as the Heuresis env's)."""
        return self.heuresis.check_reset_options(options)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode (see *Starting State*)."""
        super().reset(seed=seed)
        split, index = self.check_reset_options(options)
        drawn = None if self.train_instances is None else int(self.np_random.integers(self.train_instances))
        inner_seed = int(self.np_random.integers(2**63 - 1))
        if index is None and split == "train" and drawn is not None:
            index = drawn
        inner = {"split": split} if index is None else {"split": split, "instance": index}
        obs, info = self.heuresis.reset(seed=inner_seed, options=inner)
        instance, reference = self.heuresis._instance, self.heuresis._reference
        log = reference.deletion_log  # pairs, sets and grades only: the truth labels stay unread
        self._pairs = [(r.x, r.y) for r in log]
        self._conds = [tuple(r.cond) for r in log]
        self._static = self._static_features(instance.data, reference.graph, log)
        self._results = np.zeros((self.max_pairs, len(_RESULT_SLOTS), 2), dtype=np.float32)
        self._heuresis_obs = obs
        info = {**info, "pairs": self.candidate_pairs, "accepted": True}
        return self._observation(), info

    def action_masks(self) -> np.ndarray:
        """Concatenated per-component masks of the action (sb3-contrib's MaskablePPO format)."""
        if self._pairs is None:
            raise RuntimeError("no episode yet: call reset() first")
        filled = len(self._pairs)
        slots = np.zeros(self.max_pairs, dtype=bool)
        slots[: max(filled, 1)] = True
        decisions = np.array([filled > 0, filled > 0, filled > 0, True])
        return np.concatenate([decisions, slots, np.ones(len(CI_TESTS), bool), np.ones(len(CONDITIONING), bool)])

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one action (see *Description*); an action outside the mask costs a turn as an error.

        Raises
        ------
        RuntimeError
            If called before ``reset`` or after the episode ended.
        """
        if self._pairs is None:
            raise RuntimeError("call reset() before step()")
        call, slot, slot_of_result = self._call(action)
        typed = call if isinstance(call, ToolError) else self.heuresis.toolbox.encode(call)
        obs, reward, terminated, truncated, info = self.heuresis.step(typed)
        rejected = isinstance(call, ToolCall) and call.tool == "submit" and not (terminated or truncated)
        accepted = bool(obs["last_ok"]) or terminated or rejected
        if slot_of_result is not None and accepted:
            self._results[slot, slot_of_result] = (1.0, GRADE_SCORES[info["result"]["grade"]])
        exhausted = not (terminated or truncated or rejected) and int(obs["phase"]) == LAST_TURN
        if exhausted or rejected:
            submit = self.heuresis.toolbox.encode(ToolCall("submit", {}))
            for _ in range(2):  # a rejected submission gets one retry; the second one is rescued
                obs, reward, terminated, truncated, info = self.heuresis.step(submit)
                if terminated or truncated:
                    break
            terminated, truncated = True, False
        self._heuresis_obs = obs
        info = {**info, "accepted": accepted, "budget_exhausted": exhausted, "submission_rejected": rejected}
        return self._observation(), float(reward), bool(terminated), bool(truncated), info

    def render(self) -> str | np.ndarray | None:
        """Heuresis's rendering of the working graph."""
        return self.heuresis.render()

    def close(self) -> None:
        """Close the underlying Heuresis env."""
        self.heuresis.close()

    # -- internals -----------------------------------------------------------------------------

    def _call(self, action: Any) -> tuple[ToolCall | ToolError, int, int | None]:
        """The Heuresis call of an action, its slot and the result slot a test fills."""
        values = np.asarray(action)
        if values.shape != self.action_space.shape or values.dtype.kind not in "iu" or not self.action_space.contains(
            values
        ):
            return ToolError(f"malformed action {action!r}: expected an element of {self.action_space}"), 0, None
        decision, slot, test, cond = (int(v) for v in values)
        if DECISIONS[decision] == "submit":
            return ToolCall("submit", {}), slot, None
        pairs = self.candidate_pairs
        if slot >= len(pairs):
            return ToolError(f"candidate slot {slot} is empty: PC-KCI deleted {len(pairs)} pairs"), slot, None
        x, y = pairs[slot]
        if DECISIONS[decision] == "restore":
            return ToolCall("set_edge", {"x": x, "y": y, "relation": "undirected"}), slot, None
        if DECISIONS[decision] == "keep":
            return ToolCall("set_edge", {"x": x, "y": y, "relation": "none"}), slot, None
        arguments = {"x": x, "y": y, "cond": self._conditioning(slot, CONDITIONING[cond]), "test": CI_TESTS[test]}
        return ToolCall("ci_test", arguments), slot, test * len(CONDITIONING) + cond

    def _conditioning(self, slot: int, kind: str) -> tuple[int, ...]:
        if kind == "logged":
            return self._conds[slot]
        if kind == "empty":
            return ()
        x, y = self.candidate_pairs[slot]
        graph = self._heuresis_obs["working_graph"]
        adjacent = (graph | graph.T).astype(bool)
        neighbours = adjacent[x] | adjacent[y]
        neighbours[[x, y]] = False
        return tuple(int(v) for v in np.flatnonzero(neighbours))

    def _static_features(self, data: np.ndarray, pc_graph: np.ndarray, log: Any) -> np.ndarray:
        """Columns ``valid`` .. ``common_neighbours`` except ``restored``, which changes."""
        table = np.zeros((self.max_pairs, 7), dtype=np.float32)
        if not log:
            return table
        xs = np.array([r.x for r in log])
        ys = np.array([r.y for r in log])
        adjacent = (pc_graph | pc_graph.T).astype(bool)
        filled = len(log)
        table[:filled, 0] = 1.0
        table[:filled, 1] = [r.grade == "independence" for r in log]
        table[:filled, 2] = np.array([r.depth for r in log]) / (self.d - 2)
        table[:filled, 3] = np.arange(filled) / max(filled - 1, 1)
        table[:filled, 5] = np.abs(np.corrcoef(data, rowvar=False)[xs, ys])
        table[:filled, 6] = (adjacent[xs] & adjacent[ys]).sum(axis=1) / (self.d - 2)
        return table

    def _observation(self) -> np.ndarray:
        table = np.concatenate([self._static, self._results.reshape(self.max_pairs, -1)], axis=1)
        pairs = self.candidate_pairs
        filled = len(pairs)
        if filled:
            graph = self._heuresis_obs["working_graph"]
            xs, ys = np.array(pairs).T
            table[:filled, 4] = (graph[xs, ys] | graph[ys, xs]).astype(np.float32)
        shares = self._heuresis_obs["budgets_remaining"]
        glob = np.array(
            [shares[1], shares[0], filled / self.max_pairs, table[:, 4].sum() / self.max_pairs], dtype=np.float32
        )
        return np.clip(np.concatenate([table.ravel(), glob]), -1.0, 1.0).astype(np.float32)


class EmptySetKCIRule:
    """Scripted repair: re-test every deleted pair with KCI given the empty set, restore the dependent ones.

    Reads only the :class:`HeuresisRepairEnv` observation: while a filled slot lacks its
    ``kci_empty`` result it tests the first such slot; then it restores, one per step, every slot
    whose result is a dependence grade and is not an edge yet; then it submits. An
    :class:`~causal_gym.harness.agent.Agent` (``reset`` / ``act``).
    """

    def __init__(self, env: HeuresisRepairEnv) -> None:
        self.env = env
        column = PAIR_FEATURES.index("kci_empty_tested")
        self._tested, self._score = column, column + 1
        self._valid, self._restored = PAIR_FEATURES.index("valid"), PAIR_FEATURES.index("restored")

    def reset(self, task: Any = None) -> None:
        """Nothing to prepare: the rule reads everything from the observation."""

    def act(self, observation: np.ndarray, info: Mapping[str, Any] | None = None) -> np.ndarray:
        """The next action of the rule for ``observation``."""
        table = self.env.pair_table(observation)
        valid = table[:, self._valid] > 0
        untested = np.flatnonzero(valid & (table[:, self._tested] == 0))
        if untested.size:
            return np.array([DECISIONS.index("test"), untested[0], CI_TESTS.index("kci"), CONDITIONING.index("empty")])
        to_restore = np.flatnonzero(valid & (table[:, self._score] > 0) & (table[:, self._restored] == 0))
        if to_restore.size:
            return np.array([DECISIONS.index("restore"), to_restore[0], 0, 0])
        return np.array([DECISIONS.index("submit"), 0, 0, 0])
