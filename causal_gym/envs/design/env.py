"""The intervention-design environment: choose experiments on a hidden linear SCM, scored by an exact graph posterior."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from causal_gym._validation import (
    check_choice,
    check_instance_option,
    check_real,
    check_reset_options,
)
from causal_gym.envs.design.batch import DesignBatch, DesignInterface, check_node_costs, check_reward
from causal_gym.envs.design.world import (
    SPLITS,
    SUITE_SIZE,
    TRAIN_SIZE,
    DesignSetting,
    Instances,
    instance_entropy,
    make_instance,
)
from causal_gym.seal import Seal, opaque_id, resolve_seal

__all__ = ["VALUE_BOUND", "InterventionDesignEnv", "resolve_split", "task_text"]

VALUE_BOUND = 5.0
"""Default largest ``|value|`` of an intervention: about five standard deviations of a variable."""


def resolve_split(options: Any, suite: str = "the test suite") -> tuple[str, int | None]:
    """``(split, index)`` of reset options; the split defaults to ``test`` with an instance, else ``train``.

    Raises
    ------
    ValueError
        Options that are not a dict, unknown keys, an unknown split, or an index outside the split.
    """
    options = check_reset_options(options, ("split", "instance"))
    split = check_choice(options.get("split", "test" if "instance" in options else "train"), SPLITS, "split")
    if "instance" not in options:
        return split, None
    size = TRAIN_SIZE if split == "train" else SUITE_SIZE
    return split, check_instance_option(options["instance"], size, f"the {split} split")


_PAYS = {
    "confidence": "the gain in the exact BGe posterior's expected number of correctly predicted entries of the "
                  "directed adjacency matrix (its confidence in its own prediction)",
    "truth": "the gain in the exact BGe posterior's expected number of entries of the directed adjacency matrix "
             "that agree with the hidden graph (CAASL's reward; a training signal computed by the environment)",
    "information_gain": "the reduction of the entropy of the exact BGe posterior over (order, DAG) pairs, in nats",
    "none": "nothing (no reward)",
}


def task_text(setting: DesignSetting, value_bound: float, reward: str = "confidence", sparse: bool = False,
              targets_per_step: int = 1, node_costs: np.ndarray | None = None) -> str:
    """The task statement (it names the setting's prior, the design space and the reward, never an instance)."""
    graph = {"er": "Erdős–Rényi", "sf": "scale-free (Barabási–Albert)"}[setting.graph]
    if targets_per_step == 1:
        step = (f"each a hard intervention do(x_target = value) with |value| <= {value_bound:g} (or one more "
                f"observational row) yielding {setting.rows_per_step} row(s)")
    else:
        step = (f"each a batch of {targets_per_step} designs (a hard intervention do(x_target = value) with "
                f"|value| <= {value_bound:g}, or an observational row) sharing its {setting.rows_per_step} rows evenly")
    costs = ("" if node_costs is None else
             " Intervening on node i costs " + ", ".join(f"x{i}: {c:g}" for i, c in enumerate(node_costs))
             + " (observing is free), taken from the reward.")
    cap = "" if setting.max_parents is None else f" No node has more than {setting.max_parents} parents."
    return (
        f"A hidden linear SCM on {setting.d} variables ({graph} DAG, expected degree {setting.expected_degree:g}, "
        f"{setting.noise} noise).{cap} You see {setting.n_observational} observational rows; then you have "
        f"{setting.budget} experiments, {step}. Choose them so that the exact BGe posterior over DAGs learns the "
        f"graph: {'the last step' if sparse else 'each step'} pays {_PAYS[reward]}"
        f"{' over the whole episode' if sparse else ''}.{costs}"
    )


class InterventionDesignEnv(gym.Env):
    """Design ``budget`` interventions on a hidden linear SCM; an exact posterior over DAGs scores what they teach.

    ## Description
    A hidden linear SCM on ``d`` nodes is drawn as in CAASL's training environment (Annadani et
    al., NeurIPS 2024; :mod:`causal_gym.envs.design.world`): ER or scale-free DAG, weights
    ``N(0, 1/|pa(j)|)``, noise variances inverse-gamma(10, 1). The agent first sees
    ``n_observational`` observational rows, then plays ``budget`` experiments, each a hard
    intervention ``do(x_target = value)`` yielding ``rows_per_step`` rows (or an observational row).
    After every experiment the exact posterior edge marginals ``P(i -> j | data)`` are recomputed
    (BGe scores, interventional rows left out of their target's score, Koivisto's DP over subsets:
    :mod:`causal_gym.stats.graph_posterior`, about 0.2 ms at d = 10, a second at d = 20). Learning matters: which node
    to set, and how hard, depends on what the data so far leave uncertain.

    ## Action Space
    ``action="box"`` (default): ``Box(-1, 1, (2,), float32)``: ``a[0]`` picks the target among
    ``d + 1`` equal bins (the last is "observe, no intervention"), ``value = a[1] * value_bound``.
    :func:`~causal_gym.envs.design.batch.encode_action` builds the action of a design. Finite
    actions outside the box are clipped; a non-finite action costs its step and adds no row
    (``info["error"]`` says so). ``action="discrete"``: ``Discrete(1 + d * G)``, "observe" or a node
    at one of the ``G`` values of ``value_grid`` (fractions of ``value_bound``, default ``(-1, 1)``);
    ``action="multidiscrete"``: ``MultiDiscrete([d + 1, G])``, ``[target or d to observe, value
    index]`` (:class:`~causal_gym.envs.design.batch.DesignInterface`; an index outside the space
    costs its step and adds no row).

    ## Observation Space
    A Dict, padded to the ``R = n_observational + budget * rows_per_step`` rows of a finished episode:

    | key                 | shape    | meaning                                              |
    |---------------------|----------|------------------------------------------------------|
    | ``data``            | (R, d)   | the rows so far in order (observational first), 0 below |
    | ``intervention_mask`` | (R, d) | 1 where the cell was set by an intervention         |
    | ``filled``          | (R,)     | 1 for rows that hold data                            |
    | ``budget_left``     | (1,)     | experiments left                                     |
    | ``edge_probs``      | (d, d)   | only with ``observe_posterior=True``: posterior ``P(i -> j)`` given the rows |

    ``edge_probs`` is a function of the rows shown (the posterior the reward is computed from), so
    it tells the agent nothing the data do not; it saves a policy recomputing the posterior.

    ``observation="summary"`` replaces the Dict by one normalised ``Box(0, 1)`` vector of length
    ``d (d - 1) + d + 1``: those edge marginals off the diagonal (row-major), each node's share of
    the experiment rows that intervened on it, and the share of the budget left (for an MLP policy;
    needs a posterior, so not with ``reward="none"``).

    ## Rewards
    ``reward=`` picks the quantity of the exact posterior whose change each step pays
    (:mod:`causal_gym.envs.design.batch` gives the formulas):

    | ``reward``              | each step pays                                                            |
    |-------------------------|---------------------------------------------------------------------------|
    | ``"confidence"`` (default; ``"dense"``) | gain of ``sum_{i != j} max(p_ij, 1 - p_ij)``: the posterior's expected number of correct entries of its own prediction |
    | ``"truth"``             | gain of ``sum_{i != j} P(A_ij = A*_ij)`` against the true graph ``A*`` (CAASL's reward) |
    | ``"information_gain"``  | reduction of the entropy (nats) of the posterior over (order, DAG) pairs  |
    | ``"none"``              | 0 (no posterior is computed)                                              |

    ``"truth"`` is a training reward computed by the env from the hidden SCM (as CAASL's simulator
    computes it): the observations never contain the truth, but the rewards depend on it, so an
    agent being evaluated must not read them. ``sparse=True`` pays the whole return at the last step.

    ## Starting State
    ``reset()`` draws a fresh instance of the ``train`` stream; ``options={"instance": k}`` plays
    instance ``k`` of the held-out ``test`` suite, ``{"split": "dev", "instance": k}`` of ``dev``
    (1000 instances each; streams disjoint by construction; sealed with ``seal=``).

    ## Episode End
    Terminated after ``budget`` steps. Every step's info holds ``metrics`` of the posterior after
    it (``confidence``, ``entropy``, ``expected_shd``: functions of the rows shown) when the
    posterior was computed. The final info holds ``scores`` (each reward's final value and gain:
    ``expected_correct``/``gain``, ``truth``/``truth_gain``, ``entropy``/``information_gain``;
    expected SHD, the posterior's edge AUPRC, F1/SHD of the Bayes-optimal adjacency and F1/SHD of
    the highest-scoring DAG), ``trajectory`` (every metric, the truth-based ``truth``, ``map_f1``
    and ``map_shd`` too, after 0, 1, ..., ``budget`` experiments) and ``truth`` (the SCM). Nothing
    before holds anything derived from the truth.

    ## Arguments
    ``d`` (10; 2 to 20), ``graph`` ("er" | "sf"), ``expected_degree`` (6.0), ``noise`` ("gaussian" |
    "gumbel" | "laplace" | "uniform" | "mixed": a family per instance), ``n_observational`` (50),
    ``budget`` (10), ``rows_per_step`` (1), ``max_parents`` (None: no cap; required above d = 16, at
    most 4: the instances' parents and the posterior's are capped alike), ``value_bound`` (5.0), ``reward`` ("confidence"), ``sparse`` (False), ``observe_posterior`` (False), ``action`` ("box" |
    "discrete" | "multidiscrete"), ``value_grid`` ((-1.0, 1.0): the discrete actions' values), ``targets_per_step`` (1: ``k`` designs
    per step share its rows, :class:`~causal_gym.envs.design.batch.DesignInterface`), ``node_costs`` (None:
    ``d`` costs, each paid from the reward of a step that intervenes on its node),
    ``observation`` ("rows" | "summary"), ``seal`` (None: open splits unless ``CAUSAL_GYM_SEAL`` is
    set), ``render_mode`` (None | "ansi").

    ## Vectorized environment
    ``gym.make_vec(id, num_envs=B, vectorization_mode="vector_entry_point")`` builds
    :class:`~causal_gym.envs.design.vector.InterventionDesignVectorEnv`, which steps ``B`` episodes
    in one numpy batch (posterior included).

    ## Version History
    - v0: first version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        d: int = 10,
        graph: str = "er",
        expected_degree: float = 6.0,
        noise: str = "gaussian",
        n_observational: int = 50,
        budget: int = 10,
        rows_per_step: int = 1,
        max_parents: int | None = None,
        value_bound: float = VALUE_BOUND,
        reward: str = "confidence",
        sparse: bool = False,
        observe_posterior: bool = False,
        action: str = "box",
        value_grid: Sequence[float] = (-1.0, 1.0),
        targets_per_step: int = 1,
        node_costs: Sequence[float] | None = None,
        observation: str = "rows",
        seal: Seal | str | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.setting = DesignSetting(d, graph, expected_degree, noise, n_observational, budget, rows_per_step,
                                     max_parents)
        self.value_bound = check_real(value_bound, "value_bound", 0.0)
        if self.value_bound == 0.0:
            raise ValueError("value_bound must be positive")
        self.reward_mode, self.sparse = check_reward(reward, sparse)
        self.seal = resolve_seal(seal)
        if render_mode is not None:
            check_choice(render_mode, self.metadata["render_modes"], "render_mode")
        self.render_mode = render_mode
        self.interface = DesignInterface(action, value_grid, observation, observe_posterior, targets_per_step)
        self.node_costs = check_node_costs(node_costs, self.setting.d)
        self.observation_space = self.interface.observation_space(self.setting)
        self.action_space = self.interface.action_space(self.setting.d)
        self._batch = DesignBatch(self.setting, self.value_bound, self.reward_mode, self.interface, self.sparse,
                                  self.node_costs)
        self._where: dict[str, Any] = {}
        self._last: dict[str, Any] = {}

    # -- the public interface ------------------------------------------------------------------

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray | dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode (see *Starting State*).

        Raises
        ------
        ValueError
            On an unknown option or split, or an instance outside its split.
        """
        super().reset(seed=seed)
        split, index = resolve_split(options)
        if index is None:
            index = int(self.np_random.integers(TRAIN_SIZE if split == "train" else SUITE_SIZE))
        instance: Instances = make_instance(self.setting, instance_entropy(self.setting, split, index, self.seal))
        self._batch.start(instance)
        self._where = {"setting": self.setting.name, "split": split, "index": index}
        if self.seal is not None:  # an opaque id: a hash of what the agent is shown anyway
            del self._where["index"]
            self._where["id"] = opaque_id(instance.observational)
        self._last = {}
        return self._batch.observation(0), {"instance": dict(self._where)}

    def step(self, action: Any) -> tuple[np.ndarray | dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Play one experiment (see the class docstring).

        Raises
        ------
        ValueError
            If ``action`` is not of the action space's shape and kind (a real array of shape (2,) for the box).
        RuntimeError
            Before ``reset`` or after the episode ended.
        """
        a = np.asarray(action)
        if a.shape != self.interface.action_shape():
            raise ValueError(f"action must be an element of {self.action_space} of shape "
                             f"{self.interface.action_shape()}, got shape {a.shape}")
        rewards, design = self._batch.play(a[None])
        info = self._batch.design(0, design)
        self._last = info
        if self._batch.computed:
            info["metrics"] = {name: float(values[0]) for name, values in self._batch.metrics().items()}
        terminated = self._batch.done
        if terminated:
            info["scores"] = {name: float(values[0]) for name, values in self._batch.final_scores().items()}
            if self._batch.stats is not None:
                info["trajectory"] = {name: values[0].tolist() for name, values in self._batch.trajectory().items()}
            info["truth"] = self._batch.started.truth(0)
            info["instance"] = dict(self._where)
        return self._batch.observation(0), float(rewards[0]), terminated, False, info

    def render(self) -> str | None:
        """``"ansi"``: the last design and the budget left."""
        if self.render_mode != "ansi":
            return None
        if self._batch.instances is None:
            return "(no episode: call reset())"
        left = self.setting.budget - self._batch.used
        last = self._last
        if not last:
            text = f"{self.setting.n_observational} observational rows"
        elif last.get("error"):
            text = last["error"]
        else:
            targets = last["target"] if isinstance(last["target"], list) else [last["target"]]
            values = last["value"] if isinstance(last["value"], list) else [last["value"]]
            text = "last: " + ", ".join("observe" if t is None else f"do(x{t} = {v:.3g})" for t, v in zip(targets, values))
        return f"{text}; {int(self._batch.rows[0])} rows; {left} experiment(s) left"

    # -- what an agent is told -----------------------------------------------------------------

    def task_description(self) -> str:
        """The task statement (no instance-specific content)."""
        return task_text(self.setting, self.value_bound, self.reward_mode, self.sparse, self.interface.targets,
                         self.node_costs)

    def budgets(self) -> dict[str, float]:
        return {"experiments": float(self.setting.budget)}

    def task_condition(self) -> dict[str, Any]:
        return {"benchmark": "design", **self.setting.to_dict(), "value_bound": self.value_bound,
                "reward": self.reward_mode, "sparse": self.sparse, "targets_per_step": self.interface.targets,
                "node_costs": None if self.node_costs is None else self.node_costs.tolist()}
