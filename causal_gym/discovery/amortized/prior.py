"""The declared training prior of the amortized network: what every training dataset is drawn from.

One dataset per seed, from a :class:`Prior` (default :data:`PRIOR`), drawn in this order:

1. ``d``, ``n``: ``d`` uniform on ``[d_min, d_max]`` (the training loop may restrict it, and the
   card says how), ``n`` log-uniform on ``[n_min, n_max]``.
2. the graph: Erdos-Renyi (expected degree ``U[1, 5]``), scale-free (Barabasi-Albert, ``m`` in
   ``{1, 2, 3}``, hubs as children or as parents with probability 1/2 each) or small-world
   (Watts-Strogatz ring of ``k`` in ``{2, 4}`` neighbours, rewiring probability ``U[0.05, 0.3]``),
   each family with probability 1/3, oriented along a uniformly random causal order.
3. one mechanism family for the whole dataset (:attr:`Prior.mechanisms`, with their weights):
   ``linear`` ``x_j = sum_i w_ij x_i + e_j`` on the raw parents, ``|w| ~ s U[0.5, 2]`` with a
   dataset scale ``s`` log-uniform on ``[0.25, 1.5]``, signs positive with probability 1/2 (all positive
   in one dataset of five); the nonlinear ones act on the parents standardized over the
   observational rows (clipped to ``[-5, 5]``) and are rescaled to a unit-variance signal ``f`` times ``U[0.5, 2]``:
   ``mlp`` (one hidden layer of 16 tanh or ReLU units, Gaussian weights), ``gp`` (a Gaussian-process
   draw by 64 random Fourier features, length scale ``U[0.5, 2]``), ``sigmoid``
   (``sum_i a_i sigmoid(b_i (z_i - c_i))``, ``|a| ~ U[0.5, 2]``, ``b ~ U[1, 5]``, ``c ~ U[-1, 1]``),
   ``polynomial`` (per parent ``c1 z + c2 z^2 + c3 z^3``, Gaussian coefficients, plus one pairwise
   product with probability 1/2).
4. one noise law for the dataset (:attr:`Prior.noises`): ``gaussian``, ``laplace``, ``uniform``,
   ``student_t`` (3 to 8 degrees of freedom) or ``gumbel``, each standardized to unit variance and
   scaled per node by ``sigma ~ U[0.5, 2]`` (or ``sigma = 1`` for every node, probability 1/4);
   roots are the noise alone. With probability :attr:`Prior.heteroscedastic` a non-root's noise is
   multiplied by ``softplus(g . z + 0.5) / softplus(0.5)`` (``g`` Gaussian, ``z`` its standardized
   parents): heteroscedastic noise.
5. with probability :attr:`Prior.interventional`, a share ``U[0.1, 0.5]`` of the rows is
   interventional: a target pool of ``U{ceil(d/4), d}`` nodes, each such row intervening on one pool
   node (balanced), a hard do whose value is uniform between the target's observational 10th and 90th
   percentiles (probability 0.6) or its mean shifted by ``+-U[1, 3]`` standard deviations; the rows
   after it are recomputed. ``mask[r, j] = 1`` marks node ``j`` intervened on in row ``r``.

Seeds are not shared between training and evaluation: a draw is keyed by ``SeedSequence(seed,
spawn_key=(stream,))`` with a different stream per use (:data:`STREAMS`), so no evaluation seed
can reproduce a training draw, whatever the two seeds are. :meth:`Prior.arena_coverage` maps the
prior onto the CausalArena factor tags (the paper's Fig. 14), for the pretraining-exposure check.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from causal_gym.graphs import topological_order

__all__ = ["Prior", "PRIOR", "Draw", "STREAMS", "draw", "stream_sequence"]

STREAMS = {"train": 1, "dev": 2, "eval": 3}
"""The seed streams: training steps, the training loop's dev set, and everything else (benchmarks, tests)."""


@dataclass(frozen=True)
class Prior:
    """The declared distribution of training datasets; see the module docstring for each step."""

    name: str = "broad-v1"
    graphs: tuple[str, ...] = ("erdos_renyi", "scale_free", "small_world")
    mechanisms: dict[str, float] = field(default_factory=lambda: {
        "linear": 0.3, "mlp": 0.175, "gp": 0.175, "sigmoid": 0.175, "polynomial": 0.175})
    noises: dict[str, float] = field(default_factory=lambda: {
        "gaussian": 0.4, "laplace": 0.15, "uniform": 0.15, "student_t": 0.15, "gumbel": 0.15})
    heteroscedastic: float = 0.25
    interventional: float = 0.5
    d: tuple[int, int] = (5, 50)
    n: tuple[int, int] = (100, 5000)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, for the training card."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def arena_coverage(self) -> dict[str, list[str]]:
        """The CausalArena factor tags this prior covers, per exposure axis (the paper's Fig. 14 mapping).

        A mapping, not an identity: ``sigmoid`` (additive sigmoid units) is the arena's
        ``activation_additive`` family, ``gp`` (random Fourier features) its ``rff_gp``, ``mlp`` its
        ``neural_random``; heteroscedastic noise is ``heteroskedastic``. Roots are the noise laws, so
        the root families covered are the noise laws the arena also has as root distributions.
        """
        mechanism = {"linear": "linear_additive", "mlp": "neural_random", "gp": "rff_gp",
                     "sigmoid": "activation_additive", "polynomial": "polynomial_power"}
        noise = {"gaussian": "gaussian", "laplace": "laplace", "uniform": "uniform", "student_t": "student_t",
                 "gumbel": "gumbel"}
        roots = {"gaussian": "gaussian", "uniform": "uniform", "gumbel": "gumbel"}
        noises = sorted(noise[k] for k in self.noises) + (["heteroskedastic"] if self.heteroscedastic > 0 else [])
        return {"graph_family": sorted(self.graphs), "mechanism": sorted(mechanism[k] for k in self.mechanisms),
                "noise": noises, "root": sorted(roots[k] for k in self.noises if k in roots)}


PRIOR = Prior()
"""The prior the shipped checkpoint trained on (its card holds :meth:`Prior.to_dict`)."""


@dataclass(frozen=True, eq=False)
class Draw:
    """One dataset: ``data (n, d)``, ``mask (n, d)`` (1: intervened), the true DAG and what was drawn."""

    data: np.ndarray
    mask: np.ndarray
    graph: np.ndarray
    info: dict[str, Any]


def stream_sequence(seed: int, stream: str) -> np.random.SeedSequence:
    """The seed sequence of draw ``seed`` in ``stream``: distinct streams never share a sequence."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {sorted(STREAMS)}, got {stream!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed), spawn_key=(STREAMS[stream],))


def draw(seed: int, *, stream: str = "eval", prior: Prior = PRIOR, d: int | None = None, n: int | None = None,
         interventional: bool | None = None) -> Draw:
    """Dataset ``seed`` of ``stream`` under ``prior``; ``d``, ``n`` or ``interventional`` fix that factor.

    The default stream is ``"eval"``: only the training loop draws from ``"train"`` and ``"dev"``.
    """
    gen = np.random.default_rng(stream_sequence(seed, stream))
    d = int(gen.integers(prior.d[0], prior.d[1] + 1)) if d is None else int(d)
    n = int(np.exp(gen.uniform(np.log(prior.n[0]), np.log(prior.n[1] + 1)))) if n is None else int(n)
    if d < 2 or n < 10:
        raise ValueError(f"need d >= 2 and n >= 10, got d={d}, n={n}")
    family = str(gen.choice(prior.graphs))
    graph = _graph(family, d, gen)
    mechanism = str(gen.choice(list(prior.mechanisms), p=_weights(prior.mechanisms)))
    noise = str(gen.choice(list(prior.noises), p=_weights(prior.noises)))
    hetero = bool(gen.random() < prior.heteroscedastic)
    with_int = bool(gen.random() < prior.interventional) if interventional is None else bool(interventional)
    data, mask, extra = _sample(graph, mechanism, noise, hetero, with_int, n, gen)
    info = {"graph_family": family, "mechanism": mechanism, "noise": noise, "heteroscedastic": hetero,
            "interventional": with_int, "d": d, "n": n, **extra}
    return Draw(data, mask, graph, info)


def _weights(table: dict[str, float]) -> np.ndarray:
    w = np.asarray(list(table.values()), dtype=float)
    return w / w.sum()


# ---------------------------------------------------------------------------------------------
# graphs: an adjacency over causal positions, then placed along a random order
# ---------------------------------------------------------------------------------------------


def _graph(family: str, d: int, gen: np.random.Generator) -> np.ndarray:
    forward: np.ndarray = np.zeros((d, d), dtype=bool)  # forward[a, b]: position a -> position b
    if family == "erdos_renyi":
        p = min(1.0, gen.uniform(1.0, 5.0) / (d - 1))
        forward = np.triu(gen.random((d, d)) < p, k=1)
    elif family == "scale_free":
        m = int(gen.integers(1, 4))
        degree = np.zeros(d)
        for t in range(1, d):
            k = min(m, t)
            weights = degree[:t] + 1.0
            chosen = gen.choice(t, size=k, replace=False, p=weights / weights.sum())
            forward[chosen, t] = True
            degree[chosen] += 1
            degree[t] += k
        if gen.random() < 0.5:  # hubs as children: every edge from the newer node to the older
            forward = forward.T
    elif family == "small_world":
        k = 2 if d < 8 or gen.random() < 0.5 else 4
        rewire = gen.uniform(0.05, 0.3)
        undirected = np.zeros((d, d), dtype=bool)
        for i in range(d):
            for step in range(1, k // 2 + 1):
                j = (i + step) % d
                if gen.random() < rewire:
                    free = np.flatnonzero(~undirected[i] & (np.arange(d) != i))
                    if free.size:
                        j = int(gen.choice(free))
                undirected[i, j] = undirected[j, i] = True
        forward = np.triu(undirected, k=1)
    else:
        raise ValueError(f"unknown graph family {family!r}")
    order = gen.permutation(d)
    graph = np.zeros((d, d), dtype=np.int8)
    graph[np.ix_(order, order)] = forward
    return graph


# ---------------------------------------------------------------------------------------------
# mechanisms and noise
# ---------------------------------------------------------------------------------------------


def _noise(law: str, shape: tuple[int, ...], gen: np.random.Generator, df: float) -> np.ndarray:
    """Unit-variance, zero-mean draws of ``law``."""
    if law == "gaussian":
        return gen.standard_normal(shape)
    if law == "laplace":
        return gen.laplace(0.0, 1.0 / np.sqrt(2.0), shape)
    if law == "uniform":
        return gen.uniform(-np.sqrt(3.0), np.sqrt(3.0), shape)
    if law == "student_t":
        return gen.standard_t(df, shape) / np.sqrt(df / (df - 2.0))
    if law == "gumbel":
        return (gen.gumbel(0.0, 1.0, shape) - np.euler_gamma) / (np.pi / np.sqrt(6.0))
    raise ValueError(f"unknown noise law {law!r}")


CLIP = 5.0
"""Standardized parents are clipped to ``[-CLIP, CLIP]`` before a nonlinear mechanism (a cubic of a far
outlier would otherwise overflow a few nodes down)."""


def _standardize(values: np.ndarray, observational: np.ndarray) -> np.ndarray:
    """Columns z-scored by their observational rows' mean and standard deviation."""
    ref = values[observational]
    return np.clip((values - ref.mean(axis=0)) / (ref.std(axis=0) + 1e-8), -CLIP, CLIP)


def _nonlinear(kind: str, z: np.ndarray, gen: np.random.Generator, relu: bool) -> np.ndarray:
    """A random function of standardized parents ``z (n, k)`` from family ``kind``."""
    k = z.shape[1]
    if kind == "mlp":
        hidden = z @ gen.normal(0.0, 1.0, (k, 16)) + gen.normal(0.0, 1.0, 16)
        return (np.maximum(hidden, 0.0) if relu else np.tanh(hidden)) @ gen.normal(0.0, 1.0, 16)
    if kind == "gp":
        omega = gen.normal(0.0, 1.0, (k, 64)) / gen.uniform(0.5, 2.0)
        return np.cos(z @ omega + gen.uniform(0.0, 2 * np.pi, 64)) @ gen.normal(0.0, 1.0, 64)
    if kind == "sigmoid":
        a = gen.uniform(0.5, 2.0, k) * gen.choice([-1.0, 1.0], k)
        return (1.0 / (1.0 + np.exp(-gen.uniform(1.0, 5.0, k) * (z - gen.uniform(-1.0, 1.0, k))))) @ a
    if kind == "polynomial":
        c = gen.normal(0.0, 1.0, (3, k))
        out = (c[0] * z + c[1] * z**2 + c[2] * z**3).sum(axis=1)
        if k >= 2 and gen.random() < 0.5:
            i, j = gen.choice(k, size=2, replace=False)
            out = out + gen.normal() * z[:, i] * z[:, j]
        return out
    raise ValueError(f"unknown mechanism {kind!r}")


def _sample(graph: np.ndarray, mechanism: str, noise: str, hetero: bool, with_int: bool, n: int,
            gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    d = graph.shape[0]
    mask = np.zeros((n, d), dtype=np.int8)
    extra: dict[str, Any] = {}
    if with_int:
        share = gen.uniform(0.1, 0.5)
        pool = gen.choice(d, size=int(gen.integers(int(np.ceil(d / 4)), d + 1)), replace=False)
        rows = gen.choice(n, size=max(1, int(round(share * n))), replace=False)
        targets = pool[gen.permutation(np.arange(rows.size) % pool.size)]  # balanced over the pool
        mask[rows, targets] = 1
        extra.update(intervened_rows=int(rows.size), target_pool=sorted(int(t) for t in pool))
    observational = np.asarray(~mask.any(axis=1))
    df = gen.uniform(3.0, 8.0)
    sigma = np.ones(d) if gen.random() < 0.25 else gen.uniform(0.5, 2.0, d)
    scale = np.exp(gen.uniform(np.log(0.25), np.log(1.5)))
    all_positive = gen.random() < 0.2
    relu = bool(gen.random() < 0.5)
    data = np.zeros((n, d))
    for j in topological_order(graph):
        parents = np.flatnonzero(graph[:, j])
        e = sigma[j] * _noise(noise, (n,), gen, df)
        if parents.size == 0:
            x = e
        else:
            z = _standardize(data[:, parents], observational)
            if hetero:
                e = e * _softplus(z @ gen.normal(0.0, 1.0, parents.size) + 0.5) / _softplus(np.array(0.5))
            if mechanism == "linear":
                signs = 1.0 if all_positive else gen.choice([-1.0, 1.0], parents.size)
                x = data[:, parents] @ (scale * gen.uniform(0.5, 2.0, parents.size) * signs) + e
            else:
                f = _nonlinear(mechanism, z, gen, relu)
                f = (f - f[observational].mean()) / (f[observational].std() + 1e-8)
                x = gen.uniform(0.5, 2.0) * f + e
        hit = mask[:, j] == 1
        if hit.any():
            ref = x[observational]
            if gen.random() < 0.6:
                low, high = np.quantile(ref, [0.1, 0.9])
                x = np.where(hit, gen.uniform(low, high, n), x)
            else:
                shift = gen.uniform(1.0, 3.0) * gen.choice([-1.0, 1.0])
                x = np.where(hit, ref.mean() + shift * ref.std() + 0.5 * ref.std() * gen.standard_normal(n), x)
        data[:, j] = x
    return data, mask, extra


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)
