"""The executable structural causal model: a DAG plus one mechanism and one noise per node.

Node ``j`` takes the value ``X_j = f_j(X_pa(j), eps_j)`` where ``pa(j)`` are its parents in
increasing index order, ``f_j`` a registered mechanism (:mod:`causal_gym.scm.mechanisms`) and
``eps_j`` a draw of a registered noise family (:mod:`causal_gym.scm.noise`). A root node stores
the ``linear`` mechanism with no weights, so its value is its noise: the root distribution is the
noise family at its scale.

Sampling is vectorised over rows and loops over nodes in topological order. All noise columns are
drawn first, in node-index order, and only then the random parts of interventions, so with the
same seed an intervened sample shares every noise value with the observational one: columns of
non-descendants of the targets are bit-identical, and differences at descendants are the causal
effects row by row.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import as_generator, check_adjacency, check_count, check_node, check_range
from causal_gym.graphs import is_dag, topological_order
from causal_gym.scm.interventions import Intervention, NodeInterventions, group_by_target
from causal_gym.scm.mechanisms import Mechanism, get_mechanism
from causal_gym.scm.noise import NoiseFamily, get_noise

__all__ = ["NodeSpec", "NodeRecipe", "RecipeChooser", "SCM", "FORMAT", "FORMAT_VERSION"]

FORMAT = "causal_gym.scm"
"""Value of the ``"format"`` key of a serialised SCM."""

FORMAT_VERSION = 1
"""Version of the serialised form; :meth:`SCM.from_dict` rejects any other."""


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


def _json_params(params: object, name: str) -> dict[str, Any]:
    """Plain-JSON copy of a parameter mapping; non-finite numbers and None are errors."""
    if not isinstance(params, Mapping):
        raise ValueError(f"{name} must be a mapping, got {type(params).__name__}")
    try:
        out = to_jsonable(params)
    except TypeError as err:
        raise ValueError(f"{name} must be JSON-serialisable: {err}") from err
    if _has_null(out):
        raise ValueError(f"{name} contain NaN, infinity or None")
    return out


def _check_name(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class NodeSpec:
    """One node of an SCM: mechanism and noise family names with their parameters.

    Parameters are stored as plain JSON values (nested dicts, lists, floats); numpy arrays and
    scalars are converted on construction. Treat them as read-only.
    """

    mechanism: str
    mechanism_params: Mapping[str, Any]
    noise: str
    noise_params: Mapping[str, Any]

    def __post_init__(self) -> None:
        _check_name(self.mechanism, "mechanism")
        _check_name(self.noise, "noise")
        object.__setattr__(self, "mechanism_params", _json_params(self.mechanism_params, "mechanism_params"))
        object.__setattr__(self, "noise_params", _json_params(self.noise_params, "noise_params"))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, read back by :meth:`from_dict`."""
        return {
            "mechanism": self.mechanism,
            "mechanism_params": self.mechanism_params,
            "noise": self.noise,
            "noise_params": self.noise_params,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeSpec:
        """Rebuild a node from :meth:`to_dict` output (ValueError on missing or unknown keys)."""
        keys = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, Mapping) or set(data) != keys:
            found = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise ValueError(f"a node record needs exactly the keys {sorted(keys)}, got {found}")
        return cls(**data)


@dataclass(frozen=True)
class NodeRecipe:
    """How :meth:`SCM.random` draws one node: families, their configs and the noise-scale range.

    ``mechanism_config`` goes to the mechanism's ``sample_params``; ``noise_config`` and
    ``scale_range=sigma_range`` to the noise family's. For a root only the noise part is used.
    Heuresis' linear-t3 node, for example, is
    ``NodeRecipe("linear", noise="student_t", sigma_range=(0.5, 1.5), noise_config={"df": 3})``.
    """

    mechanism: str = "linear"
    noise: str = "gaussian"
    sigma_range: tuple[float, float] = (0.5, 2.0)
    mechanism_config: Mapping[str, Any] = field(default_factory=dict)
    noise_config: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_name(self.mechanism, "mechanism")
        _check_name(self.noise, "noise")
        object.__setattr__(self, "sigma_range", check_range(self.sigma_range, "sigma_range", minimum=0.0))
        for name in ("mechanism_config", "noise_config"):
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"{name} must be a mapping of keyword arguments, got {getattr(self, name)!r}")
        if "scale_range" in self.noise_config:
            raise ValueError("set the noise scale range through sigma_range, not noise_config['scale_range']")


RecipeChooser = Callable[[int, int, np.random.Generator], NodeRecipe]
"""``choose(node, n_parents, rng) -> NodeRecipe``, called once per node in topological order."""


def _config_call(
    function: Callable[..., dict[str, Any]], what: str, *args: Any, config: Mapping[str, Any]
) -> dict[str, Any]:
    """Call ``sample_params`` with a user config, turning a bad keyword into a ValueError."""
    try:
        return function(*args, **config)
    except TypeError as err:
        raise ValueError(f"{what} rejected its config {dict(config)!r}: {err}") from err


def _dag_order(graph: object) -> tuple[np.ndarray, tuple[int, ...]]:
    adjacency = check_adjacency(graph, "graph")
    if adjacency.shape[0] == 0:
        raise ValueError("graph must have at least one node")
    if not is_dag(adjacency):
        problem = "undirected edges" if np.any(adjacency & adjacency.T) else "a directed cycle"
        raise ValueError(f"graph must be a DAG (only directed edges, no directed cycle) but has {problem}")
    return adjacency, tuple(topological_order(adjacency))


def _recipe_chooser(
    mechanism: str | RecipeChooser,
    noise: str | None,
    sigma_range: tuple[float, float] | None,
    root_sigma_range: tuple[float, float] | None,
    mechanism_config: Mapping[str, Any] | None,
    noise_config: Mapping[str, Any] | None,
) -> RecipeChooser:
    options = {
        "noise": noise,
        "sigma_range": sigma_range,
        "root_sigma_range": root_sigma_range,
        "mechanism_config": mechanism_config,
        "noise_config": noise_config,
    }
    if callable(mechanism):
        given = sorted(name for name, value in options.items() if value is not None)
        if given:
            raise ValueError(f"with a callable mechanism chooser, set {given} in the NodeRecipe it returns")

        def choose(node: int, n_parents: int, gen: np.random.Generator) -> NodeRecipe:
            recipe = mechanism(node, n_parents, gen)
            if not isinstance(recipe, NodeRecipe):
                raise ValueError(f"the mechanism chooser must return a NodeRecipe, got {recipe!r} for node {node}")
            return recipe

        return choose
    if not isinstance(mechanism, str):
        raise ValueError(f"mechanism must be a family name or a callable returning NodeRecipe, got {mechanism!r}")
    inner = NodeRecipe(
        mechanism,
        noise if noise is not None else "gaussian",
        sigma_range if sigma_range is not None else (0.5, 2.0),
        mechanism_config if mechanism_config is not None else {},
        noise_config if noise_config is not None else {},
    )
    root = inner if root_sigma_range is None else dataclasses.replace(inner, sigma_range=root_sigma_range)
    return lambda node, n_parents, gen: root if n_parents == 0 else inner


class SCM:
    """An executable structural causal model.

    Parameters
    ----------
    graph : array_like, shape (d, d)
        DAG adjacency (``graph[i, j] = 1`` for ``i -> j``).
    nodes : sequence of NodeSpec, length d
        ``nodes[j]`` defines node ``j``; mechanism parameters refer to ``j``'s parents in
        increasing index order.

    Raises
    ------
    ValueError
        If the graph is not a DAG, the node list has the wrong length, a family is not registered,
        or a node's parameters do not evaluate on its number of parents (checked by a dry run).

    Examples
    --------
    >>> import numpy as np
    >>> from causal_gym.scm import SCM, HardDo, erdos_renyi_dag
    >>> scm = SCM.random(erdos_renyi_dag(5, rng=0), "mlp", rng=1)
    >>> X = scm.sample(600, rng=2)
    >>> X.shape
    (600, 5)
    >>> bool(np.all(scm.sample(600, rng=2, interventions=[HardDo(3, value=1.0)])[:, 3] == 1.0))
    True
    """

    def __init__(self, graph: object, nodes: Sequence[NodeSpec]) -> None:
        adjacency, order = _dag_order(graph)
        d = adjacency.shape[0]
        if isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Iterable):
            raise ValueError(f"nodes must be a sequence of NodeSpec, got {type(nodes).__name__}")
        nodes = tuple(nodes)
        if len(nodes) != d:
            raise ValueError(f"nodes must have one NodeSpec per graph node ({d}), got {len(nodes)}")
        adjacency.setflags(write=False)
        self._graph = adjacency
        self._order = order
        self._parents = tuple(np.flatnonzero(adjacency[:, j]) for j in range(d))
        self._nodes: tuple[NodeSpec, ...] = nodes
        mechanisms: list[Mechanism] = []
        noises: list[NoiseFamily] = []
        for j, spec in enumerate(nodes):
            if not isinstance(spec, NodeSpec):
                raise ValueError(f"nodes[{j}] must be a NodeSpec, got {type(spec).__name__}")
            try:
                mechanisms.append(get_mechanism(spec.mechanism))
                noises.append(get_noise(spec.noise))
            except ValueError as err:
                raise ValueError(f"node {j}: {err}") from err
            self._dry_run(j, mechanisms[j], noises[j])
        self._mechanisms = tuple(mechanisms)
        self._noises = tuple(noises)

    def _dry_run(self, j: int, mechanism: Mechanism, noise: NoiseFamily) -> None:
        """Evaluate node ``j`` on three rows to catch parameters that do not fit its parents."""
        spec, k, rows = self._nodes[j], self._parents[j].size, 3
        try:
            values = mechanism.evaluate(spec.mechanism_params, np.zeros((rows, k)), np.zeros(rows))
            draws = noise.sample(spec.noise_params, rows, np.random.default_rng(0))
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise ValueError(
                f"node {j}: parameters do not fit mechanism {spec.mechanism!r} with {k} parent(s) "
                f"and noise {spec.noise!r}: {err!r}"
            ) from err
        for what, out in (("mechanism", values), ("noise", draws)):
            if np.shape(out) != (rows,):
                raise ValueError(f"node {j}: {what} returned shape {np.shape(out)} for {rows} rows, expected ({rows},)")

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def random(
        cls,
        graph: object,
        mechanism: str | RecipeChooser = "linear",
        *,
        rng: object,
        noise: str | None = None,
        sigma_range: tuple[float, float] | None = None,
        root_sigma_range: tuple[float, float] | None = None,
        mechanism_config: Mapping[str, Any] | None = None,
        noise_config: Mapping[str, Any] | None = None,
        reference_size: int = 2000,
    ) -> SCM:
        """Draw an SCM on ``graph``, node by node in topological order.

        Parameters
        ----------
        graph : array_like, shape (d, d)
            DAG adjacency.
        mechanism : str or callable
            A family name used for every non-root node, or ``choose(node, n_parents, rng) ->
            NodeRecipe`` deciding each node (roots included: their recipe's noise and
            ``sigma_range`` define the root distribution). With a callable, leave the options
            below unset; they belong in the recipes.
        rng : int, SeedSequence or Generator
            Explicit source of randomness.
        noise : str, optional
            Noise family of every node (default ``"gaussian"``).
        sigma_range : (float, float), optional
            Range of the per-node noise scale ``sigma ~ U[sigma_range]`` (default ``(0.5, 2.0)``).
        root_sigma_range : (float, float), optional
            Range for root nodes (default: ``sigma_range``); ``(1, 1)`` gives N(0, 1) roots.
        mechanism_config, noise_config : mapping, optional
            Keyword arguments of the families' ``sample_params``.
        reference_size : int
            Rows of the observational reference draw kept while building, from which mechanisms
            with a ``calibrate`` hook (standardised maps) compute their constants.

        Returns
        -------
        SCM
        """
        adjacency, order = _dag_order(graph)
        gen = as_generator(rng)
        rows = check_count(reference_size, "reference_size", minimum=2)
        choose = _recipe_chooser(mechanism, noise, sigma_range, root_sigma_range, mechanism_config, noise_config)
        reference_rng = np.random.default_rng(gen.integers(2**63))
        reference = np.empty((rows, adjacency.shape[0]))
        nodes: dict[int, NodeSpec] = {}
        for j in order:
            parents = np.flatnonzero(adjacency[:, j])
            recipe = choose(j, parents.size, gen)
            spec = _draw_node(recipe, gen, reference[:, parents])
            noise_draw = get_noise(spec.noise).sample(spec.noise_params, rows, reference_rng)
            reference[:, j] = get_mechanism(spec.mechanism).evaluate(
                spec.mechanism_params, reference[:, parents], noise_draw
            )
            nodes[j] = spec
        return cls(adjacency, [nodes[j] for j in range(adjacency.shape[0])])

    # -- accessors ---------------------------------------------------------------------------

    @property
    def d(self) -> int:
        """Number of nodes."""
        return self._graph.shape[0]

    @property
    def graph(self) -> np.ndarray:
        """The DAG adjacency (a copy, int8)."""
        return self._graph.copy()

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        """Node specifications, indexed by node."""
        return self._nodes

    @property
    def order(self) -> tuple[int, ...]:
        """The topological order used for sampling (smallest index first among ties)."""
        return self._order

    def parents(self, node: int) -> tuple[int, ...]:
        """Parents of ``node`` in increasing index order (the column order of its mechanism)."""
        return tuple(self._parents[check_node(node, self.d, "node")].tolist())

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for spec in self._nodes:
            counts[spec.mechanism] = counts.get(spec.mechanism, 0) + 1
        families = ", ".join(f"{name}: {count}" for name, count in sorted(counts.items()))
        return f"SCM(d={self.d}, edges={int(self._graph.sum())}, mechanisms={{{families}}})"

    # -- sampling ----------------------------------------------------------------------------

    def sample(self, n: int, rng: object, interventions: Iterable[Intervention] = ()) -> np.ndarray:
        """Draw ``n`` rows, optionally under interventions (see :mod:`causal_gym.scm.interventions`).

        Parameters
        ----------
        n : int
            Number of rows (>= 1).
        rng : int, SeedSequence or Generator
            Explicit source of randomness; the same seed gives bit-identical output.
        interventions : iterable of intervention objects
            Applied together to every row. To mix regimes (e.g. one target per row group), sample
            each group with its own interventions and stack the results.

        Returns
        -------
        ndarray, shape (n, d)

        Raises
        ------
        ValueError
            On a bad ``n`` or seed, an invalid intervention set (see ``group_by_target``), a Soft
            or ParameterShift on a root, or a ParameterShift on a family without ``scale_params``.
        """
        n = check_count(n, "n")
        gen = as_generator(rng)
        plan = group_by_target(interventions, self.d)
        self._check_plan(plan)
        noise = [self._noises[j].sample(self._nodes[j].noise_params, n, gen) for j in range(self.d)]
        draws = self._intervention_draws(plan, n, gen)
        data = np.empty((n, self.d))
        for j in self._order:
            data[:, j] = self._node_values(j, data[:, self._parents[j]], noise[j], plan.get(j), draws.get(j))
        return data

    def _check_plan(self, plan: Mapping[int, NodeInterventions]) -> None:
        for j, node in plan.items():
            if (node.soft or node.parameter_shift) and self._parents[j].size == 0:
                raise ValueError(
                    f"node {j} is a root: Soft and ParameterShift change the dependence on parents; "
                    "use Shift, HardDo or HiddenDisturbance"
                )
            if node.parameter_shift and not callable(getattr(self._mechanisms[j], "scale_params", None)):
                raise ValueError(
                    f"node {j}: mechanism {self._nodes[j].mechanism!r} defines no scale_params hook, "
                    "so ParameterShift is not supported for it"
                )

    @staticmethod
    def _intervention_draws(
        plan: Mapping[int, NodeInterventions], n: int, gen: np.random.Generator
    ) -> dict[int, np.ndarray]:
        """Random parts of interventions, drawn after all noise in increasing target order."""
        draws: dict[int, np.ndarray] = {}
        for j, node in plan.items():
            hard_do = node.hard_do
            if hard_do is not None and hard_do.low is not None and hard_do.high is not None:  # resampled
                draws[j] = gen.uniform(hard_do.low, hard_do.high, n)
            elif node.hidden_disturbance is not None and node.hidden_disturbance.scale is not None:
                draws[j] = gen.normal(0.0, node.hidden_disturbance.scale, n)
        return draws

    def _node_values(
        self, j: int, parents: np.ndarray, noise: np.ndarray, node: NodeInterventions | None, draw: np.ndarray | None
    ) -> np.ndarray:
        mechanism, params = self._mechanisms[j], self._nodes[j].mechanism_params
        if node is None:
            return mechanism.evaluate(params, parents, noise)
        if node.hard_do is not None:
            if node.hard_do.resampled:
                assert draw is not None  # _intervention_draws drew it
                return draw
            return np.full(noise.shape[0], node.hard_do.value)
        if node.parameter_shift is not None:
            params = mechanism.scale_params(params, node.parameter_shift.factor)  # type: ignore[attr-defined]
        values = mechanism.evaluate(params, parents, noise)
        if node.soft is not None:
            # s f(pa) + (1 - s) f(0): exactly f(pa) at s = 1 and exactly f(0) at s = 0.
            strength = node.soft.strength
            values = strength * values + (1.0 - strength) * mechanism.evaluate(params, np.zeros_like(parents), noise)
        if node.shift is not None:
            values = values + node.shift.delta
        if node.hidden_disturbance is not None:
            disturbance = node.hidden_disturbance
            values = values + (draw if disturbance.scale is not None else disturbance.value)
        return values

    # -- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form with a format tag and version; :meth:`from_dict` reads it back."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "graph": self._graph.tolist(),
            "nodes": [spec.to_dict() for spec in self._nodes],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SCM:
        """Rebuild an SCM; the result samples bit-identical data for the same seed."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"not a serialised SCM (expected 'format': {FORMAT!r})")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(
                f"unsupported SCM format version {data.get('version')!r}; this code reads {FORMAT_VERSION}"
            )
        missing = sorted({"graph", "nodes"} - set(data))
        if missing:
            raise ValueError(f"serialised SCM lacks {missing}")
        nodes = data["nodes"]
        if not isinstance(nodes, list):
            raise ValueError("serialised SCM 'nodes' must be a list of node records")
        return cls(np.asarray(data["graph"]), [NodeSpec.from_dict(node) for node in nodes])

    def to_json(self, indent: int | None = None) -> str:
        """JSON text of :meth:`to_dict` (floats written with full round-trip precision)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> SCM:
        """Rebuild an SCM from :meth:`to_json` output."""
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"invalid SCM JSON: {err}") from err
        return cls.from_dict(data)


def _draw_node(recipe: NodeRecipe, gen: np.random.Generator, reference_parents: np.ndarray) -> NodeSpec:
    """Draw one node's parameters; the reference parents calibrate data-dependent constants."""
    k = reference_parents.shape[1]
    name = recipe.mechanism if k else "linear"
    mechanism = get_mechanism(name)
    config = recipe.mechanism_config if k else {}
    params = _config_call(mechanism.sample_params, f"mechanism {name!r}", gen, k, config=config)
    calibrate = getattr(mechanism, "calibrate", None)
    if k and callable(calibrate):
        params = calibrate(params, reference_parents)
    noise = get_noise(recipe.noise)
    noise_params = _config_call(
        noise.sample_params,
        f"noise {recipe.noise!r}",
        gen,
        config={"scale_range": recipe.sigma_range, **recipe.noise_config},
    )
    return NodeSpec(name, params, recipe.noise, noise_params)

