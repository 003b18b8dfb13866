"""Settings and episodes: everything one episode needs, a pure function of ``(seed, setting)``."""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from causal_gym._jsonable import to_jsonable
from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.envs.causalab.world.crystals import Crystal, Record, _row_dict, draw_exogenous, prior_records
from causal_gym.envs.causalab.world.golden import golden_records
from causal_gym.envs.causalab.world.hidden import HiddenConfig, hidden_config
from causal_gym.envs.causalab.world.manipulator import Manipulator
from causal_gym.envs.causalab.world.mechanism import (
    DECOY_READINGS,
    HIDDEN_VALUES,
    KINDS,
    MAX_TARGET,
    PROPERTIES,
    LabSCM,
    _exogenous_row,
)
from causal_gym.envs.causalab.world.sampler import sample_equations, sample_lab_graph


@dataclass(frozen=True)
class HiddenSpec:
    """How a setting draws its hidden disturbance (see :func:`hidden_config`)."""

    count: int
    values: tuple[float, ...] = HIDDEN_VALUES
    freqnode: bool = False
    edge_weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", check_count(self.count, "hidden count", minimum=1))
        object.__setattr__(self, "values", tuple(check_real(v, "hidden value") for v in self.values))
        object.__setattr__(self, "freqnode", bool(self.freqnode))
        object.__setattr__(self, "edge_weight", check_real(self.edge_weight, "edge_weight"))


@dataclass(frozen=True)
class Setting:
    """One CausaLab task configuration.

    Attributes
    ----------
    n_nodes : int
        Nodes including the frequency (3-7 in the paper).
    kind : {"linear", "quadratic"}
    hidden : HiddenSpec or None
    freq_parent : bool
        Frequency may have children.
    golden : bool
        Offline Golden chain instead of online interventions (budget defaults to 0).
    n_prior_records : int
        Observational records given up front (Golden: bootstrap records).
    intervention_budget : int or None
        None means ``4 (n - 1)``, or 0 with ``golden``.
    decoys : bool
        Show :data:`DECOY_READINGS` for pool properties outside the graph (on by default: part
        of the original task's difficulty).
    max_target : float
        Reactor targets above this are unreachable; such episodes are redrawn.
    golden_max_length : int
        Cap of the Golden chain.
    """

    n_nodes: int
    kind: str = "linear"
    hidden: HiddenSpec | None = None
    freq_parent: bool = False
    golden: bool = False
    n_prior_records: int = 2
    intervention_budget: int | None = None
    decoys: bool = True
    max_target: float = MAX_TARGET
    golden_max_length: int = 6

    def __post_init__(self) -> None:
        n = check_count(self.n_nodes, "n_nodes", minimum=2)
        if n > len(PROPERTIES) + 1:
            raise ValueError(f"n_nodes must be <= {len(PROPERTIES) + 1}, got {n}")
        check_choice(self.kind, KINDS, "kind")
        if self.hidden is not None and not isinstance(self.hidden, HiddenSpec):
            raise ValueError(f"hidden must be a HiddenSpec or None, got {self.hidden!r}")
        if self.hidden is not None and self.hidden.count > n - 1 + int(self.hidden.freqnode):
            raise ValueError(f"hidden count {self.hidden.count} exceeds the {n - 1} properties")
        budget = self.intervention_budget
        if budget is None:
            budget = 0 if self.golden else 4 * (n - 1)
        object.__setattr__(self, "intervention_budget", check_count(budget, "intervention_budget", minimum=0))
        object.__setattr__(self, "n_prior_records", check_count(self.n_prior_records, "n_prior_records", minimum=0))
        if self.golden and self.n_prior_records < 1:
            raise ValueError("the Golden chain starts from a bootstrap record: n_prior_records must be >= 1")
        object.__setattr__(self, "max_target", check_real(self.max_target, "max_target", minimum=0.0, strict=True))
        object.__setattr__(self, "golden_max_length", check_count(self.golden_max_length, "golden_max_length", minimum=0))


@dataclass(frozen=True, eq=False)
class Episode:
    """Everything an env needs for one episode. All of it except the visible parts is ground truth.

    Attributes
    ----------
    setting : Setting
    seed : tuple of int
        SeedSequence entropy the episode was derived from.
    scm : LabSCM
    prior_records : tuple of Record
        Observational records given up front (Golden: the bootstrap records).
    manipulator_start : mapping
        Exogenous terms of the manipulator crystal at the start.
    reactor : Crystal
        The reactor; ``reactor.visible`` is shown, ``reactor.frequency`` is the target.
    hidden : HiddenConfig or None
    golden_chain : tuple of Record
        Golden intervention records (empty unless ``setting.golden``).
    decoys : mapping
        Decoy readings shown with the reactor (empty when disabled).
    hidden_stream : SeedSequence
        Stream of the hidden ``h`` draws (each :meth:`manipulator` restarts it).
    redraws : int
        SCM/reactor pairs rejected because the target exceeded ``setting.max_target``.
    """

    setting: Setting
    seed: tuple[int, ...]
    scm: LabSCM
    prior_records: tuple[Record, ...]
    manipulator_start: Mapping[str, float]
    reactor: Crystal
    hidden: HiddenConfig | None
    golden_chain: tuple[Record, ...]
    decoys: Mapping[str, float]
    hidden_stream: np.random.SeedSequence = field(repr=False)
    redraws: int = 0

    @property
    def target(self) -> float:
        """The reactor's frequency (what the agent must predict)."""
        return self.reactor.frequency

    def manipulator(self, oracle_chains: bool = False) -> Manipulator:
        """A fresh manipulator at the start state; its ``h`` draws restart from the episode's stream."""
        rng = None if self.hidden is None else np.random.default_rng(self.hidden_stream)
        return Manipulator(self.scm, self.manipulator_start, self.hidden, rng, oracle_chains)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (truth included: for the final info and run stores only)."""
        return {
            "setting": to_jsonable(self.setting),
            "seed": list(self.seed),
            "scm": self.scm.to_dict(),
            "prior_records": [r.to_dict() for r in self.prior_records],
            "manipulator_start": dict(self.manipulator_start),
            "reactor": {"exogenous": dict(self.reactor.exogenous), "values": dict(self.reactor.values)},
            "hidden": to_jsonable(self.hidden),
            "golden_chain": [r.to_dict() for r in self.golden_chain],
            "decoys": dict(self.decoys),
            "redraws": self.redraws,
        }


_STREAMS = ("graph", "equations", "records", "manipulator", "reactor", "hidden_targets", "hidden_draws", "golden")
_MAX_REDRAWS = 1000


def _entropy(seed: int | Sequence[int] | np.random.SeedSequence) -> tuple[int, ...]:
    entropy: object = seed.entropy if isinstance(seed, np.random.SeedSequence) else seed
    if isinstance(entropy, (int, np.integer)) and not isinstance(entropy, (bool, np.bool_)):
        entropy = [entropy]
    if isinstance(entropy, (str, bytes)) or not isinstance(entropy, Sequence) or not entropy:
        raise ValueError(f"seed must be a non-negative int or a sequence of them, got {seed!r}")
    return tuple(check_count(s, "seed", minimum=0) for s in entropy)


class _Streams:
    """The children of ``SeedSequence(entropy).spawn(len(_STREAMS))``, by name, each built when asked for.

    A spawned child is ``SeedSequence(entropy, spawn_key=(k,))``; building only the ones an episode
    uses, from the entropy's 32-bit words (how numpy reads a sequence of ints) converted once,
    gives the same streams for a fraction of the cost (``tests/test_causalab_world.py`` compares).
    """

    def __init__(self, entropy: tuple[int, ...]) -> None:
        words: list[int] = []
        for s in entropy:  # numpy's little-endian 32-bit words of each int ([0] for a zero)
            words.append(s & 0xFFFFFFFF)
            s >>= 32
            while s:
                words.append(s & 0xFFFFFFFF)
                s >>= 32
        self._words = np.array(words, dtype=np.uint32)

    def __getitem__(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self._words, spawn_key=(_STREAMS.index(name),))


def make_episode(seed: int | Sequence[int] | np.random.SeedSequence, setting: Setting) -> Episode:
    """Generate one episode, fully determined by ``(seed, setting)``.

    ``SeedSequence(seed)`` spawns one child per component, in this order: graph, equations,
    prior records, manipulator, reactor, hidden targets, hidden draws, Golden chain. Settings
    that share ``n_nodes`` and ``freq_parent`` therefore share graphs under the same seed (the
    hidden, Golden and scaling variants of a suite use the base graphs; the quadratic one the
    same topologies), and the same records and crystals. If the reactor's frequency exceeds
    ``setting.max_target`` the SCM and the reactor are redrawn from their streams (the original
    kept such unreachable episodes, 2-11% at 5-7 nodes); ``Episode.redraws`` counts the rejections.

    Examples
    --------
    >>> ep = make_episode(7, Setting(n_nodes=4))
    >>> ep.setting.intervention_budget, len(ep.prior_records)
    (12, 2)
    """
    if not isinstance(setting, Setting):
        raise ValueError(f"setting must be a Setting, got {setting!r}")
    entropy = _entropy(seed)
    streams = _Streams(entropy)
    graph_rng = np.random.default_rng(streams["graph"])
    equation_rng = np.random.default_rng(streams["equations"])
    reactor_rng = np.random.default_rng(streams["reactor"])
    for redraws in range(_MAX_REDRAWS):
        properties, edges = sample_lab_graph(graph_rng, setting.n_nodes, setting.freq_parent)
        scm = sample_equations(equation_rng, properties, edges, setting.kind, setting.freq_parent)
        reactor = Crystal.from_exogenous(scm, _row_dict(scm, draw_exogenous(scm, reactor_rng)[0]))
        if reactor.frequency <= setting.max_target:
            break
    else:
        raise RuntimeError(f"no reachable episode in {_MAX_REDRAWS} draws; is max_target={setting.max_target} too low?")
    hidden = None
    if setting.hidden is not None:
        spec = setting.hidden
        hidden = hidden_config(scm, streams["hidden_targets"], spec.count, spec.values, spec.freqnode, spec.edge_weight)
    return _assemble(entropy, streams, setting, scm, reactor, hidden, redraws=redraws)


def episode_from_scm(
    seed: int | Sequence[int] | np.random.SeedSequence,
    setting: Setting,
    scm: LabSCM,
    *,
    hidden: HiddenConfig | None = None,
    prior: tuple[Record, ...] | None = None,
    golden_chain: tuple[Record, ...] | None = None,
    manipulator_exogenous: Mapping[str, float] | None = None,
    reactor_exogenous: Mapping[str, float] | None = None,
) -> Episode:
    """An episode on a given SCM (e.g. a released config), drawing whatever is not supplied.

    Draws use the same streams as :func:`make_episode`. Nothing is redrawn for reachability: a
    fixed SCM is played as given.

    Raises
    ------
    ValueError
        If ``setting`` disagrees with ``scm`` (node count, kind, freq_parent) or with the given
        hidden configuration.
    """
    if not isinstance(setting, Setting) or not isinstance(scm, LabSCM):
        raise ValueError("setting must be a Setting and scm a LabSCM")
    if (setting.n_nodes, setting.kind, setting.freq_parent) != (scm.n_nodes, scm.kind, scm.freq_parent):
        raise ValueError(
            f"setting (n_nodes={setting.n_nodes}, kind={setting.kind!r}, freq_parent={setting.freq_parent}) does not "
            f"match the SCM ({scm.n_nodes}, {scm.kind!r}, {scm.freq_parent})"
        )
    entropy = _entropy(seed)
    streams = _Streams(entropy)
    if reactor_exogenous is None:
        reactor_exogenous = _row_dict(scm, draw_exogenous(scm, streams["reactor"])[0])
    reactor = Crystal.from_exogenous(scm, reactor_exogenous)
    if hidden is None and setting.hidden is not None:
        spec = setting.hidden
        hidden = hidden_config(scm, streams["hidden_targets"], spec.count, spec.values, spec.freqnode, spec.edge_weight)
    return _assemble(
        entropy, streams, setting, scm, reactor, hidden, prior=prior, golden_chain=golden_chain,
        manipulator_exogenous=manipulator_exogenous,
    )


def _assemble(
    entropy: tuple[int, ...],
    streams: _Streams,
    setting: Setting,
    scm: LabSCM,
    reactor: Crystal,
    hidden: HiddenConfig | None,
    *,
    redraws: int = 0,
    prior: tuple[Record, ...] | None = None,
    golden_chain: tuple[Record, ...] | None = None,
    manipulator_exogenous: Mapping[str, float] | None = None,
) -> Episode:
    chain: tuple[Record, ...] = ()
    if setting.golden and (prior is None or golden_chain is None):
        prior, chain = golden_records(scm, streams["golden"], setting.n_prior_records, setting.golden_max_length)
    elif golden_chain is not None:
        chain = golden_chain
    if prior is None:
        prior = prior_records(scm, streams["records"], setting.n_prior_records)
    if manipulator_exogenous is None:
        manipulator_exogenous = _row_dict(scm, draw_exogenous(scm, streams["manipulator"])[0])
    manipulator_exogenous = _row_dict(scm, _exogenous_row(scm, manipulator_exogenous))
    decoys = {p: v for p, v in DECOY_READINGS.items() if p not in scm.properties} if setting.decoys else {}
    return Episode(
        setting=setting,
        seed=entropy,
        scm=scm,
        prior_records=tuple(prior),
        manipulator_start=MappingProxyType(manipulator_exogenous),
        reactor=reactor,
        hidden=hidden,
        golden_chain=tuple(chain),
        decoys=MappingProxyType(decoys),
        redraws=redraws,
        hidden_stream=streams["hidden_draws"],
    )
