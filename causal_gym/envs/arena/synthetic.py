"""CausalArena synthetic SCMs: a factor configuration and a seed -> an executable :class:`ArenaSCM`.

A configuration (:class:`ArenaConfig`) names the factors of Appendix A.1: graph family, ``d``,
the active mechanism / noise / root families (drawn by the family-mixing rules when left
unset), the root-dependency block and the difficulty stressors. :func:`generate` turns it into
an :class:`ArenaSCM` in five seeded steps (``SeedSequence(seed).spawn(5)``, in this order):

1. graph -- :func:`~.graph_families.sample_graph` (density, in-degree cap, validity filters);
2. factors -- active families and their assignment to nodes: each active family is used at
   least once when there are enough nodes, the rest are assigned uniformly; no-noise covers at
   most ``floor(0.1 d)`` nodes (A.1), extra no-noise nodes move to another active family;
3. nodes -- parameters of every node in topological order (:mod:`.families`);
4. reference -- a 2,000-row observational draw built along with the nodes: it standardises each
   node's inputs and output and calibrates target-R^2 and censored noise;
5. stressors -- the parameters of the active stressors.

Node-level redraws (our addition; the paper resamples whole configurations): a structural node
whose reference column fails a dataset audit -- non-finite, constant, a category or value on
> 99% of rows, > 10% of rows at an extreme, or ``|corr| > 0.985`` with an earlier variable (a
margin under the audit's 0.99) -- is redrawn with its tags kept, up to 8 times. Without this, any
graph with many single-parent nodes (chain, tree, d = 100) almost never passes the 0.99 rule:
a monotone single-parent node with noise sd below 0.14 on a unit signal already exceeds it.
The redraw counts by reason are kept in ``build["node_redraws"]``.

Root dependency (A.1): ``independent`` roots draw from their own families. A dependent block
spans all roots (it needs at least two; otherwise the SCM records ``independent``) and is
realised by hidden columns -- latent parents of the roots, dropped from the data -- with every
root keeping its own marginal through a copula (``arena_root_copula``):

- ``common_factor``: one hidden ``N(0, 1)`` factor, latent correlation ``rho s_i s_j`` with
  ``rho ~ U[0.25, 0.75]`` and random signs ``s``;
- ``random_covariance``: ``q ~ U{1 .. r}`` hidden factors, latent covariance ``L L^T + 0.15 I``
  with ``L ~ N(0, 1)`` (redrawn while a latent correlation exceeds 0.985);
- ``uniform_ball``: ``r`` hidden ``N(0, 1)`` columns and a hidden ``U[0, 1]`` give a point
  uniform in the unit ``r``-ball (random direction, radius ``U^(1/r)``). The paper's scale
  ``[0.75, 2]`` and centre ``[-0.5, 0.5]`` are not drawn: its column standardisation removes
  them, and so does the copula.

The block's parameters are in ``tags["root_block"]``. The other tags (``ArenaSCM.tags``) are
what the analyses slice by: graph family, ``d``, density, in-degree cap, depth, the active
families, per variable its mechanism tag and form, noise tag and root family (None where it
does not apply; an edge takes its child's tags), root dependency, stressors and difficulty.

Stressors (A.1 "Difficulty variants"); the parameters are in ``ArenaSCM.stressors``:

======================  =====================================================================
``weak_signal``         every structural node's signal gain is 0.45 (parameter choice); nodes
                        whose noise is defined relative to the signal (target-R^2,
                        multiplicative) keep their signal-to-noise ratio
``high_noise``          every structural node gets a hidden ``N(0, 0.35^2)`` parent added after
                        its own noise (hidden columns)
``feature_warping``     each column with probability 0.55 (at least one): ``z -> g(z)`` with
                        ``g`` signed-log, tanh or signed square root of the column standardised
                        on the reference, mapped back to the column's reference mean and sd
                        (so intervention bounds read off the data stay in the structural
                        units)
``outliers``            each entry with probability 0.025 jumps by ``4 sd t_2`` (column sd of
                        the sample, Student-t with 2 df)
``missingness``         each entry with probability 0.05 is replaced by its column's mean over
                        the observed entries plus ``N(0, (0.05 sd)^2)`` jitter
``feature_corruption``  each entry with probability 0.03 is selected; selected entries of a
                        column are permuted among themselves
``distribution_shift``  on interventional rows (a ``sample`` call with interventions), each
                        column in a fixed subset (probability 0.3 each, at least one) becomes
                        ``mu + kappa (x - mu) + delta sd``, ``kappa ~ U[0.6, 1.5]``,
                        ``delta ~ ±U[0.25, 1]``, ``mu``/``sd`` reference moments
``soft_interventions``  a ``HardDo`` becomes ``X = 0.45 f(pa, eps) + 0.55 V``, ``V`` the hard
                        value (uniform draw or setpoint); descendants see the blend
======================  =====================================================================

The observation stressors (warping, outliers, missingness, corruption, in that order) and the
shift are data-level post-processing of ``sample`` (``postprocess=False`` skips them). Their
random draws come from a stream split off the sample generator *before* the SCM draws its noise,
and never depend on the data, so a sample and its observational counterpart (same seed, no
interventions) share noise and post-processing draws (:func:`~.audits.audit_interventional`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import as_generator, check_choice, check_count
from causal_gym.envs.arena.audits import audit_new_column, graph_depth
from causal_gym.envs.arena.families import (
    FORM_AMPLITUDE,
    MECHANISM_FORMS,
    MECHANISM_TAGS,
    NOISE_TAGS,
    ROOT_FAMILIES,
    ArenaNode,
    calibrate_noise,
    couple,
    draw_noise,
    form_config,
    mixing_count_range,
    root_family_count_range,
    root_noise_name,
)
from causal_gym.envs.arena.graph_families import GRAPH_FAMILIES, GenerationError, sample_graph
from causal_gym.graphs import topological_order
from causal_gym.scm import SCM, HardDo, NodeSpec, combine, get_mechanism, get_noise
from causal_gym.scm.interventions import Intervention, group_by_target

__all__ = [
    "STRESSORS",
    "ROOT_DEPENDENCIES",
    "WEAK_SIGNAL_GAIN",
    "HIGH_NOISE_SCALE",
    "SOFTNESS",
    "ArenaConfig",
    "ArenaSCM",
    "GenerationError",
    "generate",
]

STRESSORS: tuple[str, ...] = (
    "weak_signal",
    "high_noise",
    "feature_warping",
    "outliers",
    "missingness",
    "feature_corruption",
    "distribution_shift",
    "soft_interventions",
)
"""The eight stressors; with the clean baseline they are the paper's nine difficulty settings."""

ROOT_DEPENDENCIES: tuple[str, ...] = ("independent", "common_factor", "random_covariance", "uniform_ball")
"""Root-dependency families (A.1, Table 10)."""

WEAK_SIGNAL_GAIN = 0.45
HIGH_NOISE_SCALE = 0.35
SOFTNESS = 0.45
WARP_SHARE = 0.55
OUTLIER_SHARE = 0.025
OUTLIER_JUMP = 4.0
OUTLIER_DF = 2.0
MISSING_SHARE = 0.05
MISSING_JITTER = 0.05
CORRUPTION_SHARE = 0.03
SHIFT_SHARE = 0.3
WARPS = ("signed_log", "tanh", "signed_sqrt")
REFERENCE_ROWS = 2000
NODE_REDRAWS = 8
NODE_MAX_ABS_CORR = 0.985

FORMAT = "causal_gym.arena.synthetic"
FORMAT_VERSION = 1


def _tags(value: object, vocabulary: tuple[str, ...], name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a sequence of names, got {value!r}")
    items = tuple(check_choice(v, vocabulary, name) for v in value)
    if not items or len(set(items)) != len(items):
        raise ValueError(f"{name} must list distinct names, at least one, got {list(items)}")
    return items


@dataclass(frozen=True)
class ArenaConfig:
    """The factors of one synthetic SCM (Appendix A.1) and its seed.

    Parameters
    ----------
    graph_family : str
        One of :data:`~.graph_families.GRAPH_FAMILIES`.
    d : int
        Number of observed variables (>= 3).
    seed : int or tuple of int
        Entropy of the ``SeedSequence`` every draw derives from.
    mechanisms, noises, roots : tuple of str, optional
        Active mechanism tags, noise tags and root families; None draws them with the
        family-mixing counts of A.1.
    root_dependency : str
        One of :data:`ROOT_DEPENDENCIES`.
    stressors : tuple of str
        Active stressors (:data:`STRESSORS`); stored in the canonical order.
    """

    graph_family: str
    d: int
    seed: tuple[int, ...]
    mechanisms: tuple[str, ...] | None = None
    noises: tuple[str, ...] | None = None
    roots: tuple[str, ...] | None = None
    root_dependency: str = "independent"
    stressors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_choice(self.graph_family, GRAPH_FAMILIES, "graph family")
        object.__setattr__(self, "d", check_count(self.d, "d", minimum=3))
        seed = (self.seed,) if isinstance(self.seed, (int, np.integer)) else self.seed
        if isinstance(seed, str) or not isinstance(seed, Iterable):
            raise ValueError(f"seed must be a non-negative int or a sequence of them, got {self.seed!r}")
        seed = tuple(check_count(s, "seed entry", minimum=0) for s in seed)
        if not seed:
            raise ValueError("seed must hold at least one integer")
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "mechanisms", _tags(self.mechanisms, MECHANISM_TAGS, "mechanism tag"))
        object.__setattr__(self, "noises", _tags(self.noises, NOISE_TAGS, "noise tag"))
        object.__setattr__(self, "roots", _tags(self.roots, ROOT_FAMILIES, "root family"))
        check_choice(self.root_dependency, ROOT_DEPENDENCIES, "root dependency")
        stressors = _tags(self.stressors, STRESSORS, "stressor") if self.stressors else ()
        object.__setattr__(self, "stressors", tuple(s for s in STRESSORS if s in set(stressors or ())))
        if self.noises == ("none",):
            raise ValueError("no-noise may cover at most 10% of the nodes (A.1); add another noise tag")

    @property
    def difficulty(self) -> str:
        """``"clean"``, ``"single"``, ``"paired"`` or ``"multiple"`` (number of stressors)."""
        return ("clean", "single", "paired")[len(self.stressors)] if len(self.stressors) < 3 else "multiple"

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "graph_family": self.graph_family,
            "d": self.d,
            "seed": list(self.seed),
            "mechanisms": None if self.mechanisms is None else list(self.mechanisms),
            "noises": None if self.noises is None else list(self.noises),
            "roots": None if self.roots is None else list(self.roots),
            "root_dependency": self.root_dependency,
            "stressors": list(self.stressors),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArenaConfig:
        """Rebuild from :meth:`to_dict` output."""
        keys = {"graph_family", "d", "seed", "mechanisms", "noises", "roots", "root_dependency", "stressors"}
        if not isinstance(data, Mapping) or set(data) != keys:
            raise ValueError(f"an arena config needs exactly the keys {sorted(keys)}")
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**values)


# ---------------------------------------------------------------------------------------------
# the SCM with hidden columns and stressors
# ---------------------------------------------------------------------------------------------


def _warp(kind: str, z: np.ndarray) -> np.ndarray:
    if kind == "signed_log":
        return np.sign(z) * np.log1p(np.abs(z))
    if kind == "tanh":
        return np.tanh(z)
    return np.sign(z) * np.sqrt(np.abs(z))


class ArenaSCM:
    """A synthetic CausalArena SCM: a causal_gym :class:`~causal_gym.scm.SCM` over the observed
    variables ``0 .. d-1`` and hidden columns ``d ..`` (latent root factors, high-noise inputs),
    its factor tags and its stressors.

    Build one with :func:`generate`; the constructor re-assembles a stored one.

    Parameters
    ----------
    config : ArenaConfig
    scm : SCM
        The SCM over observed and hidden columns; hidden columns are roots whose children are
        observed.
    tags : mapping
        Factor tags (JSON): graph family, density, per-node mechanism / noise / root family, ...
    stressors : mapping
        Parameters of the active stressors, keyed by stressor name.
    build : mapping
        Record of the construction (graph draw, node redraws).

    Examples
    --------
    >>> arena = generate(ArenaConfig("layered", 10, seed=0))
    >>> arena.sample(5, rng=1).shape
    (5, 10)
    """

    def __init__(
        self,
        config: ArenaConfig,
        scm: SCM,
        tags: Mapping[str, Any],
        stressors: Mapping[str, Any],
        build: Mapping[str, Any],
    ) -> None:
        if not isinstance(config, ArenaConfig) or not isinstance(scm, SCM):
            raise ValueError("ArenaSCM needs an ArenaConfig and an SCM")
        d = config.d
        graph = scm.graph.astype(bool)
        if scm.d < d or graph[:, d:].any() or graph[d:, d:].any():
            raise ValueError("hidden columns (index >= config.d) must be roots whose children are observed")
        unknown = sorted(set(stressors) - set(config.stressors))
        if unknown:
            raise ValueError(f"stressor parameters {unknown} are not active in the config")
        self._config = config
        self._scm = scm
        self._tags = to_jsonable(dict(tags))
        self._stressors = to_jsonable(dict(stressors))
        self._build = to_jsonable(dict(build))

    @property
    def config(self) -> ArenaConfig:
        """The factor configuration."""
        return self._config

    @property
    def scm(self) -> SCM:
        """The SCM over observed and hidden columns."""
        return self._scm

    @property
    def d(self) -> int:
        """Number of observed variables."""
        return self._config.d

    @property
    def n_hidden(self) -> int:
        """Number of hidden columns."""
        return self._scm.d - self.d

    @property
    def graph(self) -> np.ndarray:
        """The ground-truth DAG over the observed variables (int8 copy)."""
        return np.ascontiguousarray(self._scm.graph[: self.d, : self.d])

    @property
    def tags(self) -> dict[str, Any]:
        """Factor tags (a copy): per-graph factors and per-node mechanism/noise/root tags."""
        return json.loads(json.dumps(self._tags))

    @property
    def stressors(self) -> dict[str, Any]:
        """Parameters of the active stressors (a copy)."""
        return json.loads(json.dumps(self._stressors))

    @property
    def build(self) -> dict[str, Any]:
        """Construction record (a copy)."""
        return json.loads(json.dumps(self._build))

    @property
    def shifted_columns(self) -> tuple[int, ...]:
        """Columns the distribution-shift stressor changes on interventional rows (empty without it)."""
        return tuple(self._stressors.get("distribution_shift", {}).get("columns", ()))

    def __repr__(self) -> str:
        return (
            f"ArenaSCM({self._config.graph_family}, d={self.d}, edges={int(self.graph.sum())}, hidden={self.n_hidden}, "
            f"root_dependency={self._tags['root_dependency']!r}, stressors={list(self._config.stressors)})"
        )

    # -- sampling ----------------------------------------------------------------------------

    def sample(
        self, n: int, rng: object, interventions: Iterable[Intervention] = (), *, postprocess: bool = True
    ) -> np.ndarray:
        """Draw ``n`` rows of the observed variables, optionally under interventions.

        Parameters
        ----------
        n : int
            Number of rows.
        rng : int, SeedSequence or Generator
            Explicit source of randomness; the same seed gives bit-identical output.
        interventions : iterable of intervention objects
            As :meth:`causal_gym.scm.SCM.sample`, on observed variables; values are in the
            structural units. With ``soft_interventions`` every ``HardDo`` is blended.
        postprocess : bool
            Apply the data-level stressors (observation stressors; distribution shift when
            there are interventions). False gives the structural values.

        Returns
        -------
        ndarray, shape (n, d)
        """
        n = check_count(n, "n")
        if not isinstance(postprocess, bool):
            raise ValueError(f"postprocess must be a bool, got {postprocess!r}")
        if isinstance(interventions, (str, bytes, Mapping)) or not isinstance(interventions, Iterable):
            raise ValueError(f"interventions must be a sequence of interventions, got {interventions!r}")
        items = tuple(interventions)
        group_by_target(items, self.d)  # the SCM's own checks, on the observed variables only
        gen = as_generator(rng)
        post = np.random.default_rng(gen.integers(2**63))
        scm, structural = self._soft(items) if "soft_interventions" in self._stressors else (self._scm, items)
        X = scm.sample(n, gen, structural)[:, : self.d]
        if postprocess:
            if items and "distribution_shift" in self._stressors:
                X = self._shift(X)
            X = self._observe(X, post)
        return X

    def _soft(self, items: tuple[Intervention, ...]) -> tuple[SCM, tuple[Intervention, ...]]:
        """The SCM with each HardDo target blended with a hidden intervention-value column."""
        hard = [i for i in items if isinstance(i, HardDo)]
        if not hard:
            return self._scm, items
        softness = self._stressors["soft_interventions"]["softness"]
        total = self._scm.d
        graph = np.zeros((total + len(hard), total + len(hard)), dtype=np.int8)
        graph[:total, :total] = self._scm.graph
        nodes = list(self._scm.nodes)
        for offset, item in enumerate(hard):
            value = total + offset
            graph[value, item.target] = 1
            low, high = (item.value, item.value) if item.value is not None else (item.low, item.high)
            spec = nodes[item.target]
            blend = {"mechanism": spec.mechanism, "params": spec.mechanism_params, "softness": softness}
            nodes[item.target] = NodeSpec("arena_blend", blend, spec.noise, spec.noise_params)
            nodes.append(NodeSpec("linear", {"weights": []}, "arena_root_uniform", {"low": low, "high": high}))
        return SCM(graph, nodes), tuple(i for i in items if not isinstance(i, HardDo))

    def _shift(self, X: np.ndarray) -> np.ndarray:
        shift = self._stressors["distribution_shift"]
        cols = np.asarray(shift["columns"], dtype=np.int64)
        mean, sd = np.asarray(shift["mean"]), np.asarray(shift["sd"])
        X = X.copy()
        X[:, cols] = mean + np.asarray(shift["scale"]) * (X[:, cols] - mean) + np.asarray(shift["delta"]) * sd
        return X

    def _observe(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Observation stressors, in the paper's order (random draws never depend on the data)."""
        X = X.copy()
        n, d = X.shape
        stress = self._stressors
        if "feature_warping" in stress:
            warp = stress["feature_warping"]
            for i, c in enumerate(warp["columns"]):
                mean, sd = warp["mean"][i], warp["sd"][i]
                warped = _warp(warp["kinds"][i], (X[:, c] - mean) / sd)
                X[:, c] = mean + sd * (warped - warp["center"][i]) / warp["spread"][i]
        if "outliers" in stress:
            hit = rng.random((n, d)) < stress["outliers"]["share"]
            jumps = rng.standard_t(stress["outliers"]["df"], (n, d))
            X += hit * stress["outliers"]["jump"] * X.std(axis=0) * jumps
        if "missingness" in stress:
            missing = rng.random((n, d)) < stress["missingness"]["share"]
            jitter = rng.standard_normal((n, d))
            seen = (~missing).sum(axis=0)
            missing &= seen > 0
            mean = np.where(missing, 0.0, X).sum(axis=0) / np.maximum(seen, 1)
            sd = np.sqrt(np.where(missing, 0.0, (X - mean) ** 2).sum(axis=0) / np.maximum(seen, 1))
            X = np.where(missing, mean + stress["missingness"]["jitter"] * sd * jitter, X)
        if "feature_corruption" in stress:
            chosen = rng.random((n, d)) < stress["feature_corruption"]["share"]
            keys = rng.random((n, d))
            for c in range(d):
                rows = np.flatnonzero(chosen[:, c])
                X[rows, c] = X[rows[np.argsort(keys[rows, c])], c]
        return X

    # -- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; :meth:`from_dict` re-assembles an SCM that samples bit-identically."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "config": self._config.to_dict(),
            "scm": self._scm.to_dict(),
            "tags": self.tags,
            "stressors": self.stressors,
            "build": self.build,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArenaSCM:
        """Re-assemble an :class:`ArenaSCM` from :meth:`to_dict` output."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"not a serialised arena SCM (expected 'format': {FORMAT!r})")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unsupported arena SCM version {data.get('version')!r}; this code reads {FORMAT_VERSION}")
        missing = sorted({"config", "scm", "tags", "stressors", "build"} - set(data))
        if missing:
            raise ValueError(f"serialised arena SCM lacks {missing}")
        config, scm = ArenaConfig.from_dict(data["config"]), SCM.from_dict(data["scm"])
        return cls(config, scm, data["tags"], data["stressors"], data["build"])

    def to_json(self, indent: int | None = None) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> ArenaSCM:
        """Re-assemble from :meth:`to_json` output."""
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"invalid arena SCM JSON: {err}") from err
        return cls.from_dict(data)


# ---------------------------------------------------------------------------------------------
# generation
# ---------------------------------------------------------------------------------------------


def _draw_active(vocabulary: tuple[str, ...], counts: tuple[int, int], gen: np.random.Generator) -> tuple[str, ...]:
    count = int(gen.integers(counts[0], min(counts[1], len(vocabulary)) + 1))
    return tuple(vocabulary[i] for i in np.sort(gen.choice(len(vocabulary), size=count, replace=False)))


def _assign(nodes: np.ndarray, active: Sequence[str], gen: np.random.Generator) -> dict[int, str]:
    """Every active family once (when there are enough nodes), the rest uniformly."""
    order = gen.permutation(nodes)
    first = gen.permutation(len(active))[: order.size]
    labels = list(first) + list(gen.integers(len(active), size=max(order.size - len(active), 0)))
    return {int(v): active[int(i)] for v, i in zip(order, labels)}


def _limit_no_noise(
    assigned: dict[int, str], active: Sequence[str], limit: int, gen: np.random.Generator
) -> dict[int, str]:
    """Move no-noise nodes beyond ``limit`` to other active noise families (A.1's 10% rule)."""
    quiet = [v for v in sorted(assigned) if assigned[v] == "none"]
    others = [a for a in active if a != "none"]
    for v in gen.permutation(quiet)[limit:] if len(quiet) > limit else ():
        assigned[int(v)] = others[int(gen.integers(len(others)))]
    return assigned


@dataclass
class _Builder:
    """Mutable state of one generation: node specs and the reference draw (all columns)."""

    reference: np.ndarray
    nodes: dict[int, NodeSpec]

    def add_hidden(self, index: int, noise: str, params: Mapping[str, Any], gen: np.random.Generator) -> None:
        self.nodes[index] = NodeSpec("linear", {"weights": []}, noise, params)
        self.reference[:, index] = get_noise(noise).sample(params, self.reference.shape[0], gen)


def _root_block(
    kind: str, roots: np.ndarray, gen: np.random.Generator
) -> tuple[list[tuple[str, dict[str, Any]]], dict[int, dict[str, Any]], dict[str, Any]]:
    """Hidden columns of a dependent root block, each root's copula parameters (without its
    marginal) and a record of the block."""
    r = roots.size
    unit = ("gaussian", {"scale": 1.0})
    if kind == "common_factor":
        rho = float(gen.uniform(0.25, 0.75))
        signs = _signs(gen, r)
        copulas = {
            int(v): {"latent": "gaussian", "loadings": [float(s * math.sqrt(rho))], "residual": math.sqrt(1.0 - rho)}
            for v, s in zip(roots, signs)
        }
        return [unit], copulas, {"kind": kind, "rho": rho, "signs": signs.tolist()}
    if kind == "random_covariance":
        q = int(gen.integers(1, r + 1))
        for _ in range(20):
            L = gen.standard_normal((r, q))
            norm = np.sqrt((L * L).sum(axis=1) + 0.15)
            corr = combine(L, L.T) / np.outer(norm, norm)
            np.fill_diagonal(corr, 0.0)
            if np.abs(corr).max() <= NODE_MAX_ABS_CORR:
                break
        residuals = np.sqrt(0.15) / norm
        copulas = {
            int(v): {"latent": "gaussian", "loadings": (L[i] / norm[i]).tolist(), "residual": float(residuals[i])}
            for i, v in enumerate(roots)
        }
        return [unit] * q, copulas, {"kind": kind, "latent_dim": q}
    hidden = [unit] * r + [("arena_root_uniform", {"low": 0.0, "high": 1.0})]
    copulas = {int(v): {"latent": "ball", "dim": r, "index": i} for i, v in enumerate(roots)}
    return hidden, copulas, {"kind": kind, "dim": r}


def generate(config: ArenaConfig) -> ArenaSCM:
    """Build the :class:`ArenaSCM` of a configuration (module docstring for the steps).

    Parameters
    ----------
    config : ArenaConfig

    Returns
    -------
    ArenaSCM

    Raises
    ------
    GenerationError
        When no valid graph is found (:func:`~.graph_families.sample_graph`) or a node's form is
        constant on its reference parents in every draw.

    Examples
    --------
    >>> arena = generate(ArenaConfig("chain", 10, seed=4, stressors=("weak_signal",)))
    >>> arena.tags["graph_family"], len(arena.tags["mechanism"])
    ('chain', 10)
    """
    if not isinstance(config, ArenaConfig):
        raise ValueError(f"config must be an ArenaConfig, got {type(config).__name__}")
    d = config.d
    s_graph, s_factors, s_nodes, s_reference, s_stress = np.random.SeedSequence(list(config.seed)).spawn(5)
    draw = sample_graph(config.graph_family, d, np.random.default_rng(s_graph))
    A = draw.adjacency.astype(bool)
    roots = np.flatnonzero(~A.any(axis=0))
    structural = np.flatnonzero(A.any(axis=0))

    gen = np.random.default_rng(s_factors)
    mechanisms = config.mechanisms or _draw_active(MECHANISM_TAGS, mixing_count_range(d), gen)
    noises = config.noises or _draw_active(NOISE_TAGS, mixing_count_range(d), gen)
    root_families = config.roots or _draw_active(ROOT_FAMILIES, root_family_count_range(roots.size), gen)
    mechanism_of = _assign(structural, mechanisms, gen)
    noise_of = _limit_no_noise(_assign(structural, noises, gen), noises, d // 10, gen)
    root_of = _assign(roots, root_families, gen)
    dependency = config.root_dependency if roots.size >= 2 else "independent"
    stressed = set(config.stressors)

    gen = np.random.default_rng(s_nodes)
    ref_gen = np.random.default_rng(s_reference)
    block_hidden: list[tuple[str, dict[str, Any]]] = []
    copulas: dict[int, dict[str, Any]] = {}
    block: dict[str, Any] = {"kind": "independent"}
    if dependency != "independent":
        block_hidden, copulas, block = _root_block(dependency, roots, gen)
    extra_of = {int(j): d + len(block_hidden) + i for i, j in enumerate(structural)} if "high_noise" in stressed else {}
    total = d + len(block_hidden) + len(extra_of)
    graph = np.zeros((total, total), dtype=np.int8)
    graph[:d, :d] = A
    for offset in range(len(block_hidden)):
        graph[d + offset, roots] = 1
    for j, h in extra_of.items():
        graph[h, j] = 1
    builder = _Builder(np.empty((REFERENCE_ROWS, total)), {})
    for offset, (noise, params) in enumerate(block_hidden):
        builder.add_hidden(d + offset, noise, params, ref_gen)
    for h in extra_of.values():
        builder.add_hidden(h, "gaussian", {"scale": HIGH_NOISE_SCALE}, ref_gen)

    forms: dict[int, str] = {}
    redraws: Counter[str] = Counter()
    accepted: list[int] = []
    gain = WEAK_SIGNAL_GAIN if "weak_signal" in stressed else 1.0
    for j in topological_order(A.astype(np.int8)):
        parents = np.flatnonzero(graph[:, j])
        if j in root_of:
            _build_root(builder, j, parents, root_of[j], copulas.get(j), gen, ref_gen)
        else:
            node_tags = (mechanism_of[j], noise_of[j])
            hidden_inputs = int(j in extra_of)
            forms[j] = _build_structural(
                builder, j, parents, node_tags, gain, hidden_inputs, accepted, gen, ref_gen, redraws
            )
        accepted.append(j)
    scm = SCM(graph, [builder.nodes[i] for i in range(total)])

    tags = {
        "graph_family": config.graph_family,
        "d": d,
        "n_edges": int(A.sum()),
        "density": draw.density,
        "density_parameter": draw.density_parameter,
        "in_degree_cap": draw.in_degree_cap,
        "depth": graph_depth(draw.adjacency),
        "n_roots": int(roots.size),
        "mechanism": [mechanism_of.get(j) for j in range(d)],
        "form": [forms.get(j) for j in range(d)],
        "noise": [noise_of.get(j) for j in range(d)],
        "root_family": [root_of.get(j) for j in range(d)],
        "active_mechanisms": list(mechanisms),
        "active_noises": list(noises),
        "active_roots": list(root_families),
        "root_dependency": dependency,
        "root_dependency_requested": config.root_dependency,
        "root_block": block,
        "stressors": list(config.stressors),
        "difficulty": config.difficulty,
        "hidden": ["root_factor"] * len(block_hidden) + ["high_noise"] * len(extra_of),
    }
    stressors = _stressor_params(config.stressors, builder.reference[:, :d], extra_of, np.random.default_rng(s_stress))
    build = {"graph": draw.to_dict(), "node_redraws": dict(sorted(redraws.items())), "reference_rows": REFERENCE_ROWS}
    return ArenaSCM(config, scm, tags, stressors, build)


def _build_root(
    builder: _Builder,
    j: int,
    parents: np.ndarray,
    family: str,
    copula: Mapping[str, Any] | None,
    gen: np.random.Generator,
    ref_gen: np.random.Generator,
) -> None:
    marginal = root_noise_name(family)
    marginal_params = get_noise(marginal).sample_params(gen)
    rows = builder.reference.shape[0]
    if copula is None:
        builder.nodes[j] = NodeSpec("linear", {"weights": []}, marginal, marginal_params)
        builder.reference[:, j] = get_noise(marginal).sample(marginal_params, rows, ref_gen)
        return
    params = {**copula, "marginal": marginal, "marginal_params": marginal_params}
    noise, noise_params = ("gaussian", {"scale": 1.0}) if copula["latent"] == "gaussian" else ("arena_none", {})
    builder.nodes[j] = NodeSpec("arena_root_copula", params, noise, noise_params)
    draw = get_noise(noise).sample(noise_params, rows, ref_gen)
    builder.reference[:, j] = get_mechanism("arena_root_copula").evaluate(params, builder.reference[:, parents], draw)


def _build_structural(
    builder: _Builder,
    j: int,
    parents: np.ndarray,
    tags: tuple[str, str],
    gain: float,
    hidden_inputs: int,
    accepted: list[int],
    gen: np.random.Generator,
    ref_gen: np.random.Generator,
    redraws: Counter[str],
) -> str:
    """Draw node ``j`` until its reference column passes the single-node audits (at most 8 draws;
    the last calibrated draw is kept otherwise, for the configuration audit to judge)."""
    tag, noise_tag = tags
    node = ArenaNode()
    inputs = builder.reference[:, parents]
    k = parents.size - hidden_inputs
    previous = builder.reference[:, accepted]
    kept = None
    for _ in range(NODE_REDRAWS):
        options = MECHANISM_FORMS[tag]
        form = options[int(gen.integers(len(options)))]
        amplitude = float(gen.uniform(*FORM_AMPLITUDE[form])) if form in FORM_AMPLITUDE else 1.0
        choice = draw_noise(noise_tag, gen, k)
        params: dict[str, Any] = {
            "form": form,
            "form_params": get_mechanism(form).sample_params(gen, k, **form_config(form, gen, k)),
            "gain": gain,
            "amplitude": amplitude,
            "coupling": dict(choice.coupling),
            "hidden_inputs": hidden_inputs,
        }
        draw = get_noise(choice.noise).sample(choice.noise_params, inputs.shape[0], ref_gen)
        try:
            params = node.calibrate(params, inputs)
        except ValueError:
            redraws["constant_column"] += 1
            continue
        z, hidden = node.standardized_inputs(params, inputs)
        signal = node.signal(params, z)
        choice, draw = calibrate_noise(choice, signal, draw)
        params["coupling"] = dict(choice.coupling)
        value = couple(params["coupling"], signal, z, draw) + hidden.sum(axis=1)
        kept = (form, params, choice, value)
        result = audit_new_column(value, previous, max_abs_corr=NODE_MAX_ABS_CORR)
        if result.passed:
            break
        redraws.update(result.reasons)
    if kept is None:
        raise GenerationError(f"node {j}: every {tag!r} draw was constant on the reference parents")
    form, params, choice, value = kept
    builder.nodes[j] = NodeSpec("arena_node", params, choice.noise, choice.noise_params)
    builder.reference[:, j] = value
    return form


def _stressor_params(
    stressors: tuple[str, ...], reference: np.ndarray, extra_of: Mapping[int, int], gen: np.random.Generator
) -> dict[str, Any]:
    d = reference.shape[1]
    mean, sd = reference.mean(axis=0), reference.std(axis=0)
    out: dict[str, Any] = {}
    for name in stressors:
        if name == "weak_signal":
            out[name] = {"gain": WEAK_SIGNAL_GAIN}
        elif name == "high_noise":
            out[name] = {"scale": HIGH_NOISE_SCALE, "hidden": {str(j): h for j, h in extra_of.items()}}
        elif name == "feature_warping":
            cols = _some_columns(d, WARP_SHARE, gen)
            kinds = [WARPS[int(i)] for i in gen.integers(len(WARPS), size=cols.size)]
            warped = np.stack([_warp(k, (reference[:, c] - mean[c]) / sd[c]) for c, k in zip(cols, kinds)], axis=1)
            out[name] = {
                "columns": cols.tolist(),
                "kinds": kinds,
                "mean": mean[cols].tolist(),
                "sd": sd[cols].tolist(),
                "center": warped.mean(axis=0).tolist(),
                "spread": warped.std(axis=0).tolist(),
            }
        elif name == "outliers":
            out[name] = {"share": OUTLIER_SHARE, "jump": OUTLIER_JUMP, "df": OUTLIER_DF}
        elif name == "missingness":
            out[name] = {"share": MISSING_SHARE, "jitter": MISSING_JITTER}
        elif name == "feature_corruption":
            out[name] = {"share": CORRUPTION_SHARE}
        elif name == "distribution_shift":
            cols = _some_columns(d, SHIFT_SHARE, gen)
            out[name] = {
                "columns": cols.tolist(),
                "mean": mean[cols].tolist(),
                "sd": sd[cols].tolist(),
                "scale": gen.uniform(0.6, 1.5, cols.size).tolist(),
                "delta": (_signs(gen, cols.size) * gen.uniform(0.25, 1.0, cols.size)).tolist(),
            }
        else:
            out[name] = {"softness": SOFTNESS}
    return out


def _signs(gen: np.random.Generator, size: int) -> np.ndarray:
    return np.where(gen.random(size) < 0.5, -1.0, 1.0)


def _some_columns(d: int, share: float, gen: np.random.Generator) -> np.ndarray:
    """Each column with probability ``share``; one uniformly chosen column if none was."""
    cols = np.flatnonzero(gen.random(d) < share)
    return cols if cols.size else np.array([int(gen.integers(d))])
