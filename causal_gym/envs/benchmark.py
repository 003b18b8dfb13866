"""What a benchmark declares about itself, in one place: :class:`BenchmarkSpec`.

Each benchmark folder ``causal_gym/envs/<name>/`` has a ``spec.py`` holding ``SPEC``, a
:class:`BenchmarkSpec` with its environment ids (entry point, kwargs, a one-line description),
its agents and baselines, its ``reproduce`` entry point and its report module, every code
reference a lazy ``"module:attribute"`` string. Registration (:mod:`causal_gym.envs.registration`),
the agent registry (:mod:`causal_gym.agents.registry`), the reports (:mod:`causal_gym.eval.report`)
and the ``causal-gym`` command loop over :func:`benchmarks`; none of them names a benchmark.

Adding a benchmark is adding a folder with a ``spec.py``. Benchmarks outside causal_gym declare
a ``causal_gym.benchmarks`` entry point naming their ``SPEC`` (``[project.entry-points.
"causal_gym.benchmarks"] mybench = "mypackage.spec:SPEC"``), or call :func:`register_benchmark`
before use (as the toy benchmark of the tests does).

Spec modules hold literals only (no heavy imports), so discovering them keeps ``import
causal_gym`` cheap.

Report modules
--------------
``report`` names a module that :mod:`causal_gym.eval.report` calls; it may not import
:mod:`causal_gym.eval` (the layers point down) and builds its tables with :mod:`causal_gym.tables`:

- ``episode_columns(params, line, info) -> dict | None`` (required): the benchmark's columns of
  one episode row of :func:`causal_gym.eval.report.load_runs`, from the env kwargs ``params``
  (registered kwargs updated with the run's ``env_kwargs``), the store ``line`` and the final
  ``info`` (empty for failed episodes). Keys ``setting``, ``condition``, ``d``, ``n`` and
  ``expected_degree`` fill the frame's shared instance columns (they make up the ``unit`` that
  pairs episodes of one instance); ``scores`` replaces the line's scores as the ``score.*``
  columns; any other key becomes a column of its own (leave out None values). None: an id whose
  episodes the benchmark does not report (its rows get benchmark ``"other"``). It raises
  ``ValueError`` for a line holding a value its tables could not read (a wrong type, a missing
  score that an interval resamples; ``causal_gym.tables.check_fields`` and ``check_finite``
  help): ``load_runs`` then skips the line and names it, so a bad line never stops a report;
- ``report_tables(frame, options) -> list[causal_gym.tables.ReportTable]`` (required): the
  benchmark's tables, given the frame's rows of the benchmark (``options``:
  :class:`ReportOptions`); empty tables are left out of the report;
- ``write_figures(tables, out_dir) -> list[Path]`` (optional): its figures of the report's
  ``tables`` (all of them; it picks its own by name), written to ``out_dir``;
- ``POSITION`` (optional number): where its tables stand among the benchmarks' (smaller first;
  without one, after those that have one, in :func:`benchmarks` order).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "EnvEntry",
    "AgentEntry",
    "BenchmarkSpec",
    "ReportOptions",
    "register_benchmark",
    "benchmarks",
    "benchmark_of",
    "load",
]

ENTRY_POINT_GROUP = "causal_gym.benchmarks"
"""The packaging entry-point group external benchmarks declare their ``SPEC`` under."""


@dataclass(frozen=True)
class EnvEntry:
    """One registered environment id.

    Attributes
    ----------
    id : str
        The Gymnasium id (``"Name-variant-v0"``).
    entry_point : str
        ``"module:Class"`` (or a factory), imported by the first ``gym.make``.
    description : str
        One line for ``causal-gym list``.
    kwargs : mapping
        Default keyword arguments registered with the id.
    vector_entry_point : str or None
        ``"module:Class"`` of a batched env (a ``gymnasium.vector.VectorEnv``) that
        ``gym.make_vec(id, num_envs, vectorization_mode="vector_entry_point")`` builds.
    """

    id: str
    entry_point: str
    description: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    vector_entry_point: str | None = None


@dataclass(frozen=True)
class AgentEntry:
    """A named agent: where its factory lives, what it is, and the extra that installs its needs."""

    path: str
    description: str
    extra: str | None = None


@dataclass(frozen=True)
class ReportOptions:
    """Options a report module's ``report_tables`` may use (each benchmark reads what it needs).

    Attributes
    ----------
    dev : int or None
        Development instances per family for reference choices (Heuresis: the best chosen
        algorithms); None uses a benchmark's published choice where it has one.
    labels : tuple of str or None
        Algorithm-menu entries to choose from (None: the benchmark's default).
    full_menu : bool
        Choose from the benchmark's whole menu (Heuresis: with RESIT), when ``labels`` is None.
    workers : int
        Processes for references computed on the fly.
    progress : bool
        Show progress while they are computed.
    seal : object
        The :class:`causal_gym.seal.Seal` of sealed episodes (None: open only).
    """

    dev: int | None = None
    labels: tuple[str, ...] | None = None
    full_menu: bool = False
    workers: int = 1
    progress: bool = False
    seal: Any = None


@dataclass(frozen=True)
class BenchmarkSpec:
    """A benchmark's declaration (see the module docstring).

    Attributes
    ----------
    name : str
        Identifier (``"heuresis"``): the folder name, the ``benchmark`` column of reports, the
        argument of ``causal-gym reproduce``.
    title : str
        Display name.
    envs : tuple of EnvEntry
        Its registered ids, in listing order.
    agents : mapping of str to AgentEntry
        Its agents and baselines by registry name.
    reproduce : str or None
        ``"module:function"`` called as ``function(argv, prog=...)`` by ``causal-gym reproduce <name>``;
        a function with a ``runner`` parameter also gets ``runner=``
        :func:`causal_gym.eval.runner.run_plan` (the resumable runner, which a benchmark may not
        import: it plans runs in plain values and reads back their lines).
    report : str or None
        The report module (see the module docstring).
    """

    name: str
    title: str
    envs: tuple[EnvEntry, ...]
    agents: Mapping[str, AgentEntry] = field(default_factory=dict)
    reproduce: str | None = None
    report: str | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a benchmark name must be an identifier, got {self.name!r}")
        ids = [entry.id for entry in self.envs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"benchmark {self.name!r} lists an env id twice")
        object.__setattr__(self, "envs", tuple(self.envs))
        object.__setattr__(self, "agents", MappingProxyType(dict(self.agents)))


_REGISTERED: dict[str, BenchmarkSpec] = {}


def register_benchmark(spec: BenchmarkSpec) -> None:
    """Add a benchmark defined outside causal_gym's folders (registers its envs too).

    Raises
    ------
    ValueError
        If another benchmark already has the name or one of the ids.
    """
    if not isinstance(spec, BenchmarkSpec):
        raise ValueError(f"register_benchmark needs a BenchmarkSpec, got {type(spec).__name__}")
    known = {s.name: s for s in benchmarks()}
    if spec.name in known and known[spec.name] != spec:
        raise ValueError(f"a benchmark named {spec.name!r} exists already")
    taken = {entry.id for s in known.values() if s.name != spec.name for entry in s.envs}
    clash = sorted(taken & {entry.id for entry in spec.envs})
    if clash:
        raise ValueError(f"env ids {clash} belong to another benchmark")
    _REGISTERED[spec.name] = spec
    from causal_gym.envs.registration import register_spec

    register_spec(spec)


@functools.lru_cache(maxsize=1)
def _in_tree() -> tuple[BenchmarkSpec, ...]:
    import causal_gym.envs as package

    specs = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg:
            try:
                module = importlib.import_module(f"{package.__name__}.{info.name}.spec")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package.__name__}.{info.name}.spec":
                    raise
                continue
            specs.append(module.SPEC)
    return tuple(specs)


@functools.lru_cache(maxsize=1)
def _from_entry_points() -> tuple[BenchmarkSpec, ...]:
    from importlib.metadata import entry_points

    specs = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        spec = point.load()
        if not isinstance(spec, BenchmarkSpec):
            raise TypeError(f"entry point {point.name!r} of {ENTRY_POINT_GROUP} is not a BenchmarkSpec")
        specs.append(spec)
    return tuple(specs)


def benchmarks() -> tuple[BenchmarkSpec, ...]:
    """Every benchmark: causal_gym's folders (alphabetical), entry points, then registered ones."""
    found: dict[str, BenchmarkSpec] = {}
    for spec in (*_in_tree(), *_from_entry_points(), *_REGISTERED.values()):
        found.setdefault(spec.name, spec)
    return tuple(found.values())


def benchmark_of(env_id: str) -> BenchmarkSpec | None:
    """The benchmark that declares ``env_id`` (None for ids of other packages)."""
    for spec in benchmarks():
        if any(entry.id == env_id for entry in spec.envs):
            return spec
    return None


def load(reference: str) -> Any:
    """The object named by ``"module:attribute"`` (or a module, without a colon), imported now."""
    module_name, _, attribute = reference.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
