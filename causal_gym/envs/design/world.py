"""The hidden world of an intervention-design episode: a random linear SCM and its seeded streams.

What an instance is
-------------------
A linear structural causal model on ``d`` nodes, drawn as in CAASL's linear training
environment (Annadani et al. 2024, the ``LinGaussANMModel`` of their code):

- a DAG from :func:`~causal_gym.scm.erdos_renyi_dag` (``graph="er"``) or
  :func:`~causal_gym.scm.barabasi_albert_dag` (``"sf"``, scale-free, hubs as sinks) with
  ``expected_degree`` ``2 E / d`` (default 6: CAASL's "3 edges per node", 30 expected edges at d = 10);
- edge weights ``w_ij ~ N(0, 1 / |pa(j)|)``, so every node's parental signal has about unit variance
  whatever its in-degree;
- noise scales ``sigma_j = sqrt(1 / G_j)`` with ``G_j ~ Gamma(10, 1)`` (``sigma_j^2`` inverse-gamma
  with shape 10 and rate 1, mean 1/9), zero means;
- noise ``eps_j = sigma_j z_j`` with ``z_j`` a zero-mean unit-variance draw of the family
  ``noise`` (:mod:`causal_gym.scm.noise`: ``"gaussian"``; ``"gumbel"``, ``"laplace"``,
  ``"uniform"`` for non-Gaussian tests; ``"mixed"``: each instance's family drawn uniformly from
  those four, :attr:`Instances.noise_family`);
- with ``max_parents=K`` (required above :data:`~causal_gym.stats.graph_posterior.MAX_UNCAPPED_NODES`
  ``= 16`` nodes, at most :data:`~causal_gym.stats.graph_posterior.MAX_CAP`), a node drawn with more
  than ``K`` parents keeps the ``K`` that come first in the causal order, so the instances follow
  the capped prior that the env's posterior assumes (exact for it up to d = 20).

Rows follow ``x_j = sum_i w_ij x_i + eps_j``; under ``do(x_t = v)`` node ``t`` is set to ``v``
and its parents are cut (:func:`sample_rows`).

Streams and splits
------------------
Instance ``index`` of split ``split`` has SeedSequence entropy ``(MASTER_SEED, split_id, index,
d, graph_id, degree_code)`` (:func:`instance_entropy`), keyed by a seal when one is given
(:func:`causal_gym.seal.keyed_entropy`). It spawns three streams: the SCM (graph, weights,
scales), the observational batch and the step noise (one standardised noise row per possible
row of the episode, drawn at the start). :func:`draw_instances` draws a whole batch from one
triple of streams in vectorised numpy: the ``train`` stream of the batched env
(:mod:`causal_gym.envs.design.vector`) draws each reset's batch that way, from entropy
the entropy of the ``train`` index ``TRAIN_SIZE`` (one past the stream's end) plus a ``draw``
from the env's seeded generator (:func:`train_entropy`): ``split_id`` 0 is ``train``'s, so no
train batch holds a dev or test instance. So:

- the splits are disjoint by construction (distinct ``split_id``); ``"dev"`` and ``"test"`` hold
  :data:`SUITE_SIZE` instances each, ``"train"`` is a stream of ``2^31``;
- settings that differ only in the noise family, the observational batch size, the budget or
  the rows per step share graphs and weights instance by instance (paired comparisons);
- the step noise of row ``r`` does not depend on the actions: two designs played on the same
  instance see the same exogenous noise (common random numbers), so paired differences between
  agents measure the designs and not the luck of the draw.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.graphs import topological_order
from causal_gym.scm import barabasi_albert_dag
from causal_gym.scm.noise import get_noise
from causal_gym.seal import Seal, keyed_entropy
from causal_gym.stats.graph_posterior import MAX_CAP, MAX_NODES, MAX_UNCAPPED_NODES

__all__ = [
    "MASTER_SEED",
    "SPLITS",
    "SUITE_SIZE",
    "TRAIN_SIZE",
    "GRAPHS",
    "NOISES",
    "DesignSetting",
    "Instances",
    "instance_entropy",
    "train_entropy",
    "draw_instances",
    "make_instance",
    "make_batch",
    "sample_rows",
]

MASTER_SEED = 1_524_187_003
"""Master seed of the open streams: an arbitrary constant, fixed once and never tuned."""

SPLITS = ("train", "dev", "test")
"""``train``: the RL stream; ``dev``: for choices (hyperparameters, checkpoints); ``test``: held out."""

SUITE_SIZE = 1000
"""Instances in each of the ``dev`` and ``test`` suites (reports use the first 200 of ``test``)."""

TRAIN_SIZE = 2**31
"""Instances in the ``train`` stream (a draw of ``reset()`` without options picks one uniformly)."""

GRAPHS = ("er", "sf")
"""Graph priors: Erdős–Rényi and scale-free (Barabási–Albert)."""

NOISES = ("gaussian", "gumbel", "laplace", "uniform")
"""Noise families (unit-variance forms of :mod:`causal_gym.scm.noise`); ``noise="mixed"`` draws one per instance."""

_NOISE_SHAPE = 10.0  # sigma^2 ~ inverse-gamma(shape 10, rate 1), as CAASL's linear environment


@dataclass(frozen=True)
class DesignSetting:
    """What defines the instances of a design environment (not how it is played or scored).

    Attributes
    ----------
    d : int
        Number of nodes, 2..20 (the exact posterior's limit; fast up to about 12, about a second per
        posterior at 20). Above 16, ``max_parents`` is required.
    graph : {"er", "sf"}
    expected_degree : float
        ``2 E / d``, in ``[0, d - 1]``.
    noise : str
        One of :data:`NOISES`, or ``"mixed"`` (a family per instance).
    n_observational : int
        Observational rows given at the start (>= 0).
    budget : int
        Experiments per episode (>= 1).
    rows_per_step : int
        Rows each experiment yields (all under the same design).
    max_parents : int or None
        Cap on every node's parents, in the instances and in the posterior (module docstring); None:
        no cap (d <= 16).
    """

    d: int = 10
    graph: str = "er"
    expected_degree: float = 6.0
    noise: str = "gaussian"
    n_observational: int = 50
    budget: int = 10
    rows_per_step: int = 1
    max_parents: int | None = None

    def __post_init__(self) -> None:
        d = check_count(self.d, "d", 2)
        if d > MAX_NODES:
            raise ValueError(f"d must be at most {MAX_NODES} (the exact posterior's limit), got {d}")
        if self.max_parents is not None:
            check_count(self.max_parents, "max_parents", 1)
        if d > MAX_UNCAPPED_NODES and (self.max_parents is None or self.max_parents > MAX_CAP):
            raise ValueError(f"above d = {MAX_UNCAPPED_NODES} the exact posterior needs a parent cap: pass "
                             f"max_parents between 1 and {MAX_CAP} (got {self.max_parents})")
        check_choice(self.graph, GRAPHS, "graph")
        degree = check_real(self.expected_degree, "expected_degree", 0.0)
        if degree > d - 1:
            raise ValueError(f"expected_degree must be <= d - 1 = {d - 1}, got {degree}")
        check_choice(self.noise, (*NOISES, "mixed"), "noise")
        check_count(self.n_observational, "n_observational", 0)
        check_count(self.budget, "budget", 1)
        check_count(self.rows_per_step, "rows_per_step", 1)
        object.__setattr__(self, "expected_degree", degree)

    @property
    def max_rows(self) -> int:
        """Rows of a finished episode: the observational batch plus every experiment's rows."""
        return self.n_observational + self.budget * self.rows_per_step

    @property
    def name(self) -> str:
        """A label for reports, e.g. ``"er10-gaussian"`` (plus ``-deg``, ``-n``, ``-T``, ``-k`` when not the defaults)."""
        label = f"{self.graph}{self.d}-{self.noise}"
        defaults = DesignSetting()
        for tag, field, default in (("deg", "expected_degree", defaults.expected_degree),
                                    ("n", "n_observational", defaults.n_observational),
                                    ("T", "budget", defaults.budget), ("k", "rows_per_step", defaults.rows_per_step)):
            value = getattr(self, field)
            if value != default:
                label += f"-{tag}{value:g}"
        if self.max_parents is not None:
            label += f"-K{self.max_parents}"
        return label

    def to_dict(self) -> dict[str, Any]:
        return {"d": self.d, "graph": self.graph, "expected_degree": self.expected_degree, "noise": self.noise,
                "n_observational": self.n_observational, "budget": self.budget, "rows_per_step": self.rows_per_step,
                "max_parents": self.max_parents}


FIELDS = ("adjacency", "weights", "order", "scale", "observational", "step_noise", "noise_family")
"""The arrays of :class:`Instances`, in order."""


@dataclass(frozen=True)
class Instances:
    """A batch of ``B`` hidden SCMs with the noise of their whole episodes (arrays read-only).

    Attributes
    ----------
    adjacency : (B, d, d) int8
        ``adjacency[b, i, j] = 1`` for ``i -> j``.
    weights : (B, d, d) float
        ``weights[b, i, j]`` the coefficient of ``x_i`` in ``x_j``'s equation (0 off the graph).
    order : (B, d) int
        A causal order of each graph (every edge points forward in it).
    scale : (B, d) float
        Noise standard deviations.
    observational : (B, n_observational, d) float
        The observational batches.
    step_noise : (B, budget * rows_per_step, d) float
        Standardised noise of every row the experiments can produce, in order.
    noise_family : (B,) int
        Index in :data:`NOISES` of each instance's noise family.
    """

    adjacency: np.ndarray
    weights: np.ndarray
    order: np.ndarray
    scale: np.ndarray
    observational: np.ndarray
    step_noise: np.ndarray
    noise_family: np.ndarray

    def __post_init__(self) -> None:
        for name in FIELDS:
            getattr(self, name).flags.writeable = False

    def __len__(self) -> int:
        return int(self.adjacency.shape[0])

    def truth(self, b: int) -> dict[str, Any]:
        """The hidden SCM ``b`` as the final info reports it."""
        return {"adjacency": self.adjacency[b].copy(), "weights": self.weights[b].copy(),
                "noise_scale": self.scale[b].copy(), "noise": NOISES[int(self.noise_family[b])]}

    def rows(self, b: np.ndarray, step_rows: np.ndarray, targets: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The experiment rows of SCMs ``b`` ``(m,)``: noise rows ``step_rows`` ``(m, k)``, ``(m, k, d)``."""
        exogenous = self.step_noise[b[:, None], step_rows] * self.scale[b][:, None, :]
        return sample_rows(self.weights[b], self.order[b], exogenous, targets, values)


def _code(text: str) -> int:
    return zlib.crc32(text.encode())


def _public(setting: DesignSetting, split_id: int, index: int) -> tuple[int, ...]:
    return (MASTER_SEED, split_id, index, setting.d, _code(setting.graph), int(round(setting.expected_degree * 1000)))


def instance_entropy(setting: DesignSetting, split: str, index: int, seal: Seal | None = None) -> tuple[int, ...]:
    """SeedSequence entropy of instance ``index`` of ``split`` (see the module docstring).

    Raises
    ------
    ValueError
        For an unknown split or an index outside it.
    """
    split_id = SPLITS.index(check_choice(split, SPLITS, "split"))
    size = TRAIN_SIZE if split == "train" else SUITE_SIZE
    index = check_count(index, "instance", 0)
    if index >= size:
        raise ValueError(f"instance {index} is outside the {split} split (valid: 0..{size - 1})")
    return keyed_entropy(seal, "design", _public(setting, split_id, index))


def train_entropy(setting: DesignSetting, draw: int, seal: Seal | None = None) -> tuple[int, ...]:
    """Entropy of a batch of the ``train`` stream, ``draw`` from the env's seeded generator."""
    return keyed_entropy(seal, "design", (*_public(setting, 0, TRAIN_SIZE), int(draw)))


def _er_dags(d: int, expected_degree: float, size: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` Erdős–Rényi DAGs with their orders, in one draw.

    The law of :func:`causal_gym.scm.erdos_renyi_dag` (a uniform order, each forward pair an
    edge with probability ``expected_degree / (d - 1)``) batched: that function draws one graph
    per call, ~100 µs of Python each, which would dominate the batched env's resets.
    """
    order = np.argsort(gen.random((size, d)), axis=1)
    forward = np.triu(gen.random((size, d, d)) < expected_degree / max(d - 1, 1), 1).astype(np.int8)
    adjacency = np.zeros_like(forward)
    b = np.arange(size)[:, None, None]
    adjacency[b, order[:, :, None], order[:, None, :]] = forward
    return adjacency, order


def _cap_parents(adjacency: np.ndarray, order: np.ndarray, cap: int) -> np.ndarray:
    """``adjacency`` with each node's parents cut to the ``cap`` that come first in the causal ``order``."""
    size, d = order.shape
    position = np.empty_like(order)
    position[np.arange(size)[:, None], order] = np.arange(d)  # position[b, i]: where node i is in order b
    ranked = np.where(adjacency == 1, position[:, :, None], d)  # a parent's position, d for the non-parents
    kept = np.argsort(np.argsort(ranked, axis=1, kind="stable"), axis=1, kind="stable") < cap
    return (adjacency * kept).astype(np.int8)


def draw_instances(setting: DesignSetting, streams: tuple[np.random.Generator, ...], size: int) -> Instances:
    """``size`` instances from the generators of the SCMs, the observational batches and the step noise."""
    d = setting.d
    gen, observational_gen, step_gen = streams
    if setting.graph == "er":
        adjacency, order = _er_dags(d, setting.expected_degree, size, gen)
    else:
        adjacency = np.stack([barabasi_albert_dag(d, setting.expected_degree, rng=gen) for _ in range(size)])
        order = np.array([topological_order(a) for a in adjacency]).reshape(size, d)
    if setting.max_parents is not None:
        adjacency = _cap_parents(adjacency, order, setting.max_parents)
    spread = 1.0 / np.sqrt(np.maximum(adjacency.sum(axis=1), 1))
    weights = adjacency * gen.standard_normal((size, d, d)) * spread[:, None, :]
    scale = np.sqrt(1.0 / gen.gamma(_NOISE_SHAPE, 1.0, size=(size, d)))
    if setting.noise == "mixed":
        family = gen.integers(len(NOISES), size=size)
    else:
        family = np.full(size, NOISES.index(setting.noise))
    n0, steps = setting.n_observational, setting.budget * setting.rows_per_step
    observational_noise = _unit_noise(family, (n0, d), observational_gen)
    step_noise = _unit_noise(family, (steps, d), step_gen)
    observational = sample_rows(weights, order, observational_noise * scale[:, None, :],
                                np.full(size, -1), np.zeros(size))
    return Instances(adjacency, weights, order, scale, observational, step_noise, family)


def _unit_noise(family: np.ndarray, shape: tuple[int, int], gen: np.random.Generator) -> np.ndarray:
    """Standardised noise ``(B,) + shape``, instance ``b`` from family ``NOISES[family[b]]``.

    One draw per family present, in the order of :data:`NOISES` (a single family: the one draw of
    the whole batch, as before mixed families existed).
    """
    out = np.empty((family.size, *shape))
    unit = {"scale": 1.0}
    for k in np.unique(family):
        mine = family == k
        count = int(mine.sum())
        out[mine] = get_noise(NOISES[k]).sample(unit, count * shape[0] * shape[1], gen).reshape(count, *shape)
    return out


def _streams(entropy: tuple[int, ...]) -> tuple[np.random.Generator, ...]:
    return tuple(np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(3))


def make_instance(setting: DesignSetting, entropy: tuple[int, ...]) -> Instances:
    """The instance of ``entropy`` as a batch of one (a pure function of the setting and the entropy)."""
    return draw_instances(setting, _streams(entropy), 1)


def make_batch(setting: DesignSetting, entropy: tuple[int, ...], size: int) -> Instances:
    """A batch of ``size`` instances from one entropy (the ``train`` stream of the batched env)."""
    return draw_instances(setting, _streams(entropy), size)


def sample_rows(weights: np.ndarray, order: np.ndarray, exogenous: np.ndarray, targets: np.ndarray,
                values: np.ndarray) -> np.ndarray:
    """Rows of a batch of linear SCMs, each under its own design: ``(B, m, d)``.

    Nodes are filled in causal order, ``x_j = eps_j + sum_i w_ij x_i`` with the elementwise
    products summed by numpy (no BLAS, so rows are bit-identical whatever the BLAS kernel), and
    an SCM's rows do not depend on the other members of the batch.

    Parameters
    ----------
    weights : (B, d, d)
        Edge weights of each SCM.
    order : (B, d)
        A causal order of each SCM.
    exogenous : (B, m, d)
        The noise terms ``eps`` of each of the ``m`` rows (already scaled).
    targets : (B,) ints
        The node set by ``do`` in every row of SCM ``b``, or ``-1`` for observational rows.
    values : (B,) floats
        Its value.
    """
    b, m, d = exogenous.shape
    rows = np.arange(b)
    x = np.zeros((b, m, d))
    for k in range(d):
        node = order[:, k]
        column = weights[rows, :, node]  # (B, d): the parents' weights of each SCM's k-th node
        value = exogenous[rows, :, node] + (x * column[:, None, :]).sum(axis=-1)
        x[rows, :, node] = np.where((targets == node)[:, None], values[:, None], value)
    return x
