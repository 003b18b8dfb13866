"""The Heuresis environment: repair a causal graph over anonymous variables with evidence tools."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from gymnasium import spaces

from causal_gym._validation import check_choice, check_count, check_instance_option, check_real, check_reset_options
from causal_gym.envs.heuresis.families import FAMILIES
from causal_gym.envs.heuresis.instances import (
    DEFAULT_D,
    DEFAULT_EXPECTED_DEGREE,
    DEFAULT_N,
    SPLITS,
    HeuresisInstance,
    make_instance,
    split_size,
)
from causal_gym.envs.heuresis.prefetch import InstanceKey, ReferencePrefetcher
from causal_gym.envs.heuresis.prompts import agent_prompts
from causal_gym.envs.heuresis.references import (
    MENU,
    PCReference,
    menu_entry_is_cached,
    pc_kci_reference,
    run_menu_entry,
    score_graph,
)
from causal_gym.envs.heuresis.tools import deletion_log_text
from causal_gym.harness import SandboxLimits, WorkingGraphEnv
from causal_gym.harness.data_tools import ALPHA, DataTools, graph_text
from causal_gym.harness.menu import Menu, MenuEntry
from causal_gym.metrics import adjacency_scores, nshd
from causal_gym.seal import Seal, opaque_id, resolve_seal

__all__ = ["DEFAULT_BUDGETS", "REWARDS", "GUIDED_START", "HeuresisEnv", "load_instance"]

DEFAULT_BUDGETS: Mapping[str, Any] = {"turns": 60, "tests": "pc_kci", "algorithm_calls": 10, "wall_time": None}
"""Budgets of an episode (Appendix H gives no values; these are ours). ``"tests": "pc_kci"`` is
the number of CI tests PC-KCI ran on the instance; ``None`` means unlimited."""

REWARDS = ("adjacency_f1", "nshd", "f1_gain_over_pc")
"""Final-step rewards: adjacency F1, minus nSHD, or adjacency F1 minus PC-KCI's."""

GUIDED_START = "The working graph starts from the output of the PC algorithm with the KCI test"
"""The sentence of the task statement that tells an agent it plays the guided condition."""

_TRAIN_DRAWS = 2**31 - 1  # instance indices drawn for the unbounded train split

logger = logging.getLogger(__name__)


@lru_cache(maxsize=128)
def load_instance(
    family: str, split: str, index: int, d: int, n: int, expected_degree: float, seal: Seal | None = None
) -> tuple[HeuresisInstance, PCReference]:
    """An instance and its PC-KCI reference (disk-cached), kept in memory so a repeated ``reset`` is fast.

    A reference not on disk yet is computed here (seconds to a minute), announced on the
    ``causal_gym`` logger; Ctrl-C interrupts it and stores nothing.
    """
    instance = make_instance(family, split, index, d=d, n=n, expected_degree=expected_degree, seal=seal)
    if menu_entry_is_cached(instance, "pc_kci"):
        return instance, pc_kci_reference(instance)
    which = "a sealed instance" if seal is not None else f"instance {index}"
    logger.info("Heuresis %s/%s %s (d=%d, n=%d): running PC-KCI once for its reference (cached afterwards)...",
                family, split, which, d, n)
    start = time.perf_counter()
    reference = pc_kci_reference(instance)
    logger.info("Heuresis %s/%s %s: PC-KCI done in %.1f s", family, split, which, time.perf_counter() - start)
    return instance, reference


def _episode_draws(rng: np.random.Generator, size: int | None, n_entries: int) -> tuple[np.ndarray, int, int]:
    """What a reset draws, in order: the label permutation of the ``n_entries`` menu entries, an
    instance index, the resampling seed."""
    permutation = rng.permutation(n_entries)
    drawn = int(rng.integers(_TRAIN_DRAWS if size is None else size))
    return permutation, drawn, int(rng.integers(2**63 - 1))


def _check_menu(menu: Menu | Sequence[str]) -> Menu:
    """The env's menu: a :class:`~causal_gym.harness.menu.Menu`, or names of :data:`MENU` entries and
    of other methods (a built-in or registered name, an import path ``"package.module:function"``),
    what a JSON ``--env-kwargs`` can say."""
    if isinstance(menu, Menu):
        return menu
    if isinstance(menu, str) or not isinstance(menu, Sequence):
        raise ValueError(f"menu must be a Menu or a sequence of names of the Heuresis menu, got {menu!r}")
    entries = []
    for name in menu:
        if isinstance(name, str) and name in MENU:
            entries.append(MENU[name])
            continue
        try:
            entries.append(MenuEntry(name, name))
        except ValueError as err:
            raise ValueError(f"menu: {name!r} is neither an entry of the Heuresis menu ({', '.join(MENU)}) nor a "
                             f"method ({err})") from None
    return Menu(tuple(entries))


def _check_budgets(budgets: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge ``budgets`` into :data:`DEFAULT_BUDGETS`, validating each value."""
    budgets = {} if budgets is None else budgets
    if not isinstance(budgets, Mapping) or set(budgets) - set(DEFAULT_BUDGETS):
        raise ValueError(f"budgets must be a dict with keys among {list(DEFAULT_BUDGETS)}, got {budgets!r}")
    merged = {**DEFAULT_BUDGETS, **budgets}
    merged["turns"] = check_count(merged["turns"], "budgets['turns']", 1)
    for name in ("tests", "algorithm_calls", "wall_time"):
        value = merged[name]
        if value is None or (name == "tests" and isinstance(value, str) and value == "pc_kci"):
            continue
        merged[name] = check_real(value, f"budgets[{name!r}]", 0.0, strict=name == "wall_time")
    return merged


def _symmetric(d: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Boolean ``(d, d)`` matrix, True at both ``(x, y)`` and ``(y, x)`` for every pair."""
    out = np.zeros((d, d), dtype=bool)
    for x, y in pairs:
        out[x, y] = out[y, x] = True
    return out


def _count_pairs(mask: np.ndarray) -> int:
    """Unordered pairs set in a symmetric boolean matrix."""
    return int(np.count_nonzero(np.triu(mask, 1)))


class HeuresisEnv(DataTools, WorkingGraphEnv):
    """Heuresis: repair a causal graph over anonymous variables with evidence at three granularities.

    ## Description

    The re-implementation of the Heuresis harness (paper §4.2). An instance is ``n`` observational
    rows of ``d`` anonymous, standardised variables ``X0 .. X{d-1}`` (columns in random order)
    drawn from a hidden structural causal model of one mechanism family
    (:mod:`causal_gym.envs.heuresis.families`: ``lg``, ``anm``, ``hetero``, ``wild``, ``mixed``,
    ``gauntlet``). The agent edits a *working graph* — one relation per pair: none, ``x -- y``,
    ``x -> y``, ``y -> x`` — turn by turn, reading evidence from the data, and submits it.

    - **Unguided** (``guided=False``): the working graph starts complete and undirected
      (``start="empty"``: with no edges, a setting for training, where every edit the agent
      makes moves the reward; not one of the paper's conditions).
    - **Guided** (``guided=True``): it starts from the output of PC with the KCI test (alpha 0.05)
      and the first observation lists PC-KCI's *deletion log*: for each pair it deleted, the
      conditioning set, the test and the strength grade of the independence evidence — never the
      p-value and never whether the deletion was right.

    Tools (the one-line descriptions the agent reads are in :meth:`tool_specs`):

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

    Every call also costs one turn. The menu (``menu``, default
    :data:`causal_gym.envs.heuresis.references.MENU`) holds PC with Fisher-z, PC with KCI, FCI, GES,
    DirectLiNGAM, an additive-noise method (RESIT) and linear NOTEARS behind the labels ``A .. G``
    (one label per entry: a menu of k entries has the first k of ``A, B, ..., Z, AA, ...``); the
    label -> algorithm map is a permutation drawn from the episode's seed, fixed within the episode
    and revealed only in the final info.
    Menu runs are cached on disk, so repeated calls are instant. ``ci_test`` keeps one
    :class:`causal_gym.stats.CITester` per test and episode, so repeated tests reuse kernels.
    ``stability`` draws its subsamples from a stream seeded at ``reset``. See
    :mod:`causal_gym.harness.data_tools` for the exact diagnostics and their grades.

    ## Action Space

    A ``Dict`` (see :class:`~causal_gym.harness.WorkingGraphEnv`): ``"tool"`` ``Discrete(9)`` in the
    order ``set_edge, submit, run_algorithm, ci_test, stability, summarize, fit_parents,
    probe_direction, run_code``, then the argument fields ``x`` ``Discrete(d)``, ``y``
    ``Discrete(d)``, ``relation`` ``Discrete(4)`` (none, undirected, forward, backward),
    ``edges`` ``Text``, ``cond`` ``MultiBinary(d)`` (conditioning set; the parent set of
    ``fit_parents``), ``algorithm`` ``Discrete(k)`` (the k menu labels; A..G), ``test`` ``Discrete(2)`` (fisherz,
    kci), ``code`` ``Text``. A tool ignores the fields it does not use. LLM agents call the same
    tools as JSON through :meth:`tool_specs` / :meth:`parse_tool_call`.

    ## Observation Space

    | Key                   | Space                        | Meaning |
    |-----------------------|------------------------------|---------|
    | ``working_graph``     | ``MultiBinary((d, d))``      | the working graph (causal_gym encoding) |
    | ``budgets_remaining`` | ``Box(0, 1, (4,), float32)`` | share left of turns, tests, algorithm_calls, wall_time |
    | ``last_result``       | ``Text(8000)``               | last result; after ``reset`` the start message |
    | ``last_ok``           | ``Discrete(2)``              | 0 after an error, refusal or rejected submission |
    | ``phase``             | ``Discrete(3)``              | 0 open, 1 last turn (only submit), 2 done |
    | ``deletion_log``      | ``MultiBinary((d, d))``      | guided: 1 at the pairs PC-KCI deleted; unguided: 0 |
    | ``deletion_depth``    | ``MultiDiscrete((d, d), d)`` | guided: size of the deleting conditioning set |

    A budget share is 1 when the budget is unlimited. The start message is the starting graph;
    guided, followed by the deletion log. ``deletion_log`` is symmetric; ``deletion_depth`` is 0
    where no pair was deleted (and everywhere when unguided).

    ``info`` holds ``"budgets_remaining"`` (absolute amounts; the test budget depends on the
    instance), ``"phase"``, ``"action_mask"`` and, after a call, ``"result"`` (the structured
    result). The info of ``reset`` adds ``"instance"`` (family, split, index; under a seal an opaque
    ``"id"`` instead of the index).

    ## Rewards

    0 on every step but the last, where it is (``reward=``) the adjacency F1 of the submitted
    graph (default), minus its nSHD (``"nshd"``), or its adjacency F1 minus PC-KCI's
    (``"f1_gain_over_pc"``).

    ## Starting State

    ``reset(seed=, options=)`` draws from ``self.np_random`` the algorithm-label permutation, an
    instance index (uniform over the split; for ``"train"`` over ``0 .. 2^31 - 2``, fresh
    instances from disjoint seeds) and the seed of the resampling stream. ``options``:
    ``{"split": "dev" | "test" | "train", "instance": k}`` overrides the split and picks
    instance ``k``. The working graph is complete and undirected (unguided) or PC-KCI's output
    (guided). The first ``reset`` of an instance runs PC-KCI on it (for the test budget, the
    guided start and the drill-down); the run is cached on disk and in memory and announced on
    the ``causal_gym`` logger. On the train stream a background worker computes the next
    ``prefetch`` instances' runs while the episode is played (:mod:`.prefetch`), so a training
    loop's resets do not wait for PC-KCI.

    ## Episode End

    As in :class:`~causal_gym.harness.WorkingGraphEnv`: ``submit`` terminates; when a budget runs out
    the agent has one last turn in which only ``submit`` is accepted; a rejected edge list gets
    one retry; five errors in a row submit the working graph. There is no ``TimeLimit`` wrapper:
    at most ``turns + 2`` steps. The final info holds ``"scores"`` computed on the Meek
    completion of the submitted graph:

    - ``adjacency_precision``, ``adjacency_recall``, ``adjacency_f1`` and ``nshd`` against the
      true DAG; ``pc_kci_f1`` and ``f1_gain_over_pc``;
    - the drill-down against PC-KCI's deletion log: ``n_deleted``, ``n_wrong_deletions`` (deleted
      pairs adjacent in the truth), ``recovered`` (wrongly deleted pairs that are edges again),
      ``harmful`` (rightly deleted pairs that are edges again), ``pc_edges_dropped`` (PC-KCI's
      edges missing), ``reoriented`` (pairs adjacent in both with another relation), and
      ``restoration_precision`` / ``restoration_recall`` of the deleted pairs made edges against
      the wrongly deleted ones (the repair measures of the guided condition; 0/0 is read as in
      :mod:`causal_gym.metrics`);
    - ``algorithm_slots`` (label -> menu algorithm) and ``instance``.

    Nothing derived from the truth appears before that: observations, non-final infos, tool
    results and the record are the same whatever the hidden graph.

    ## Budgets

    ``budgets`` overrides :data:`DEFAULT_BUDGETS` key by key: ``turns`` 60, ``tests`` =
    ``"pc_kci"`` (the CI tests PC-KCI ran on the instance, so the agent can afford one
    PC-KCI-equivalent of testing; or a number, or None for unlimited), ``algorithm_calls`` 10,
    ``wall_time`` None (seconds; the only non-deterministic limit). Diagnostics and analysis
    (``summarize``, ``fit_parents``, ``probe_direction``, ``run_code``) cost only the turn, as in
    the paper; ``run_code`` is bounded by ``sandbox_limits``.

    ## Arguments

    | Parameter         | Default          | Description |
    |-------------------|------------------|-------------|
    | ``family``        | ``"wild"``       | mechanism family |
    | ``guided``        | ``False``        | start from PC-KCI and show its deletion log |
    | ``d``             | 10               | variables |
    | ``n``             | 600              | rows (>= 30) |
    | ``expected_degree`` | 2.0            | density of the graph prior |
    | ``split``         | ``"test"``       | default split: ``"dev"`` (100), ``"test"`` (32), ``"train"`` (unbounded) |
    | ``budgets``       | None             | overrides of :data:`DEFAULT_BUDGETS` |
    | ``reward``        | ``"adjacency_f1"`` | one of :data:`REWARDS` |
    | ``render_mode``   | None             | ``"ansi"`` or ``"rgb_array"`` |
    | ``n_resamples``   | 10               | subsamples of ``stability`` (each costs a test) |
    | ``subsample``     | 0.8              | share of rows in each ``stability`` subsample (without replacement) |
    | ``sandbox_limits`` | None            | :class:`~causal_gym.harness.SandboxLimits` of ``run_code`` |
    | ``seal``          | None             | a :class:`~causal_gym.seal.Seal` (or its secret) keying the instance streams; None reads ``CAUSAL_GYM_SEAL`` (unset: open splits); :data:`causal_gym.seal.OPEN` forces open |
    | ``sandbox``       | ``"auto"``       | ``run_code``'s backend: ``"auto"``, ``"bwrap"``, ``"unshare"`` (OS namespaces) or ``"process"`` (no OS isolation; :mod:`causal_gym.harness.sandbox`) |
    | ``algorithm_time_limit`` | 300.0     | seconds an uncached ``run_algorithm`` may compute before it is stopped (charged, no graph, not cached); None: no limit |
    | ``prefetch``      | 2                | on the train stream, upcoming instances whose PC-KCI reference a background worker computes during the episode (0: off) |
    | ``menu``          | ``MENU``         | the algorithm menu: a :class:`~causal_gym.harness.menu.Menu` of any length, or names of ``MENU`` entries and of methods (``"package.module:function"``) |
    | ``start``         | None             | ``"empty"``: an unguided working graph starts with no edges instead of complete (a training setting, not one of the paper's conditions) |

    ```python
    >>> import gymnasium as gym, causal_gym
    >>> env = gym.make("Heuresis-lg-guided-v0", d=5, n=200)
    >>> obs, info = env.reset(seed=0, options={"instance": 3})
    >>> obs["last_result"].startswith("The working graph is the output of PC")
    True

    ```

    ## Vectorized environment

    ``gym.make_vec("Heuresis-wild-v0", num_envs=4)`` (synchronous; ``vectorization_mode="async"``
    runs the instances in worker processes). Episodes have different lengths and autoreset.

    ## Version History

    * v0: initial release.
    """

    def __init__(
        self,
        family: str = "wild",
        guided: bool = False,
        d: int = DEFAULT_D,
        n: int = DEFAULT_N,
        expected_degree: float = DEFAULT_EXPECTED_DEGREE,
        split: str = "test",
        budgets: Mapping[str, Any] | None = None,
        reward: str = "adjacency_f1",
        render_mode: str | None = None,
        *,
        n_resamples: int = 10,
        subsample: float = 0.8,
        sandbox_limits: SandboxLimits | None = None,
        sandbox: str = "auto",
        algorithm_time_limit: float | None = 300.0,
        prefetch: int = 2,
        seal: Seal | str | None = None,
        menu: Menu | Sequence[str] = MENU,
        start: str | None = None,
    ) -> None:
        self.family = check_choice(family, FAMILIES, "family")
        self.seal = resolve_seal(seal)
        if not isinstance(guided, (bool, np.bool_)):
            raise ValueError(f"guided must be True or False, got {guided!r}")
        self.guided = bool(guided)
        if start not in (None, "empty"):
            raise ValueError(f"start must be None (the condition's start) or 'empty', got {start!r}")
        if start == "empty" and self.guided:
            raise ValueError("start='empty' replaces the complete starting graph of the unguided condition; "
                             "the guided one starts from PC-KCI's output: use guided=False")
        self.start = start
        self.n = check_count(n, "n", 30)
        self.expected_degree = check_real(expected_degree, "expected_degree", 0.0)
        self.split = check_choice(split, SPLITS, "split")
        self.reward = check_choice(reward, REWARDS, "reward")
        self.budget_settings = _check_budgets(budgets)
        depth = int(check_count(prefetch, "prefetch", 0))
        self._prefetcher = ReferencePrefetcher(depth) if depth else None
        self._configure_data_tools(n_resamples, subsample, sandbox_limits, sandbox, algorithm_time_limit,
                                   _check_menu(menu))
        d = check_count(d, "d", 2)
        super().__init__(
            d,
            budget_names=("tests", "algorithm_calls"),
            max_turns=self.budget_settings["turns"],
            wall_time_limit=self.budget_settings["wall_time"],
            text_max_length=8000,
            extra_observation_spaces={
                "deletion_log": spaces.MultiBinary((d, d)),
                "deletion_depth": spaces.MultiDiscrete(np.full((d, d), d)),
            },
            render_mode=render_mode,
        )

    # -- WorkingGraphEnv hooks -------------------------------------------------------------------------

    def check_reset_options(self, options: Mapping[str, Any] | None) -> tuple[str, int | None]:
        """Validate ``reset`` options without building anything: the split, and the instance index
        within it (``dev`` has 100, ``test`` 32; ``train`` is unbounded).

        Returns
        -------
        (split, index)
            The index is None when the options name none (``reset`` then draws one).

        Raises
        ------
        ValueError
            Options that are not a dict, unknown keys, an unknown split, or an index outside the split.
        """
        options = check_reset_options(options, ("split", "instance"))
        split = check_choice(options.get("split", self.split), SPLITS, "split")
        if "instance" not in options:
            return split, None
        return split, check_instance_option(options["instance"], split_size(split), f"the {split} split")

    def _new_episode(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        split, chosen = self.check_reset_options(options)
        size = split_size(split)
        # Every draw happens whatever the options, so the streams do not depend on them.
        permutation, drawn, resample_seed = _episode_draws(rng, size, len(self.menu))
        key = self._instance_key(split, drawn if chosen is None else chosen)
        if self._prefetcher is not None:
            self._prefetcher.wait(key)
        self._instance, self._reference = load_instance(*key)
        if self._prefetcher is not None and split == "train" and chosen is None:
            upcoming = copy.deepcopy(rng)  # replays the next resets' draws without touching the stream
            self._prefetcher.schedule(
                [self._instance_key(split, _episode_draws(upcoming, size, len(self.menu))[1]) for _ in range(self._prefetcher.depth)]
            )
        self._data = self._instance.data
        self._slots = self.menu.slots(permutation)
        self._resample_rng = np.random.default_rng(resample_seed)
        self._testers: dict[str, Any] = {}
        self._summary: tuple[str, dict[str, Any]] | None = None
        log = self._reference.deletion_log
        deleted = np.zeros((self.d, self.d), dtype=np.int8)
        depth = np.zeros((self.d, self.d), dtype=np.int64)
        if self.guided:
            start = self._reference.graph.copy()
            for record in log:
                deleted[record.x, record.y] = deleted[record.y, record.x] = 1
                depth[record.x, record.y] = depth[record.y, record.x] = record.depth
            self._start_text = (
                f"The working graph is the output of PC with the KCI test (alpha {ALPHA}): {graph_text(start)}\n"
                + deletion_log_text(log)
            )
        elif self.start == "empty":
            start = np.zeros((self.d, self.d), dtype=np.int8)
            self._start_text = f"The working graph is empty: no edges over X0..X{self.d - 1}."
        else:
            start = np.ones((self.d, self.d), dtype=np.int8) - np.eye(self.d, dtype=np.int8)
            self._start_text = f"The working graph is the complete undirected graph over X0..X{self.d - 1}."
        return start, {"deletion_log": deleted, "deletion_depth": depth}

    def _instance_key(self, split: str, index: int) -> InstanceKey:
        return (self.family, split, index, self.d, self.n, self.expected_degree, self.seal)

    def close(self) -> None:
        """Stop the train-stream prefetcher, if one runs."""
        if self._prefetcher is not None:
            self._prefetcher.close()
        super().close()

    def _budget_limits(self) -> dict[str, float | None]:
        tests = self.budget_settings["tests"]
        return {
            "tests": self._reference.n_tests if tests == "pc_kci" else tests,
            "algorithm_calls": self.budget_settings["algorithm_calls"],
        }

    def _task_intro(self) -> str:
        start = (
            f"{GUIDED_START}; the pairs it deleted, with the conditioning set, the test and the strength of the "
            "evidence, are listed in the first observation."
            if self.guided
            else "The working graph starts empty." if self.start == "empty"
            else "The working graph starts as the complete undirected graph."
        )
        return (
            f"Observational data: {self.n} rows of {self.d} anonymous variables, each standardised to mean 0 and "
            f"variance 1, in random column order. Find the causal graph among them. {start}"
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a new instance (see *Starting State* in the class docstring)."""
        super().reset(seed=seed, options=options)
        self._last_text = self._start_text
        info = self._info()
        info["instance"] = self._where()
        return self._observation(), info

    def task_condition(self) -> dict[str, Any]:
        """The condition as data (``TaskSpec.condition``): benchmark, family, guided or not, split (and
        ``start`` when it is not the condition's)."""
        condition = {"benchmark": "heuresis", "family": self.family, "guided": self.guided, "split": self.split}
        if self.start is not None:
            condition["start"] = self.start
        return condition

    def agent_prompts(self) -> dict[str, str]:
        """The paper's prompt-level and stated-target texts (:mod:`causal_gym.envs.heuresis.prompts`)."""
        return agent_prompts()

    def _where(self) -> dict[str, Any]:
        """The instance as agents may see it: its index, or under a seal an opaque hash of its data."""
        where: dict[str, Any] = {"family": self.family, "split": self._instance.split}
        if self.seal is None:
            where["index"] = self._instance.index
        else:
            where["id"] = opaque_id(self._instance.data)
        return where

    def _final_info(self) -> dict[str, Any]:
        return {**super()._final_info(), "seal": None if self.seal is None else self.seal.fingerprint}

    # -- tools ---------------------------------------------------------------------------------

    def _menu_graph(self, entry: MenuEntry) -> np.ndarray:
        # references' cached menu run: the same disk entry the reference tables use; it reads the data only.
        run = run_menu_entry(self._instance, entry, time_limit=self.algorithm_time_limit)
        return np.asarray(run["graph"], dtype=np.int8)

    # -- scoring -------------------------------------------------------------------------------

    def _score(self, completed_graph: np.ndarray) -> dict[str, Any]:
        dag, reference = self._instance.hidden.dag, self._reference
        adjacency = adjacency_scores(dag, completed_graph)
        pc_f1 = score_graph(dag, reference.graph)["f1"]
        adjacent = (completed_graph | completed_graph.T).astype(bool)
        pc_adjacent = (reference.graph | reference.graph.T).astype(bool)
        deleted = _symmetric(self.d, reference.deleted_pairs)
        wrong = _symmetric(self.d, reference.wrong_pairs)
        same_relation = (completed_graph == reference.graph) & (completed_graph.T == reference.graph.T)
        restoration = adjacency_scores(wrong.astype(np.int8), (adjacent & deleted).astype(np.int8))
        return {
            "adjacency_precision": adjacency.precision,
            "adjacency_recall": adjacency.recall,
            "adjacency_f1": adjacency.f1,
            "nshd": nshd(dag, completed_graph),
            "pc_kci_f1": pc_f1,
            "f1_gain_over_pc": adjacency.f1 - pc_f1,
            "n_deleted": _count_pairs(deleted),
            "n_wrong_deletions": _count_pairs(wrong),
            "recovered": _count_pairs(adjacent & wrong),
            "harmful": _count_pairs(adjacent & deleted & ~wrong),
            "pc_edges_dropped": _count_pairs(pc_adjacent & ~adjacent),
            "reoriented": _count_pairs(pc_adjacent & adjacent & ~same_relation),
            "restoration_precision": restoration.precision,
            "restoration_recall": restoration.recall,
            "algorithm_slots": dict(self._slots),
            "instance": self._where(),
        }

    def _reward(self, scores: Mapping[str, Any]) -> float:
        if self.reward == "nshd":
            return -float(scores["nshd"])
        return float(scores[self.reward])
