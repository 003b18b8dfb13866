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

What a spec's references must be is typed here: :class:`ReportModule` (the report module),
:class:`Reproduce` (the ``reproduce`` entry point) and, for the envs, the optional methods of
:mod:`causal_gym.harness.contracts`. :func:`check_spec` imports every reference of a spec and
checks it against these, naming what is missing; :func:`register_benchmark` calls it, so a
benchmark that lacks a required piece fails when it registers. (Folder and entry-point specs are
read without importing their code, to keep ``import causal_gym`` light; the conformance suite,
``tests/test_conformance.py``, runs :func:`check_spec` over every one of them.)

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
- ``write_figures(tables, out) -> list[Path]`` (optional): its figures of the report's
  ``tables`` (all of them; it picks its own by name), written with ``out.write(name, png_bytes)``
  into ``out``, a :class:`causal_gym._files.OutputFolder` (by name only, so nothing lands outside
  the folder; a name built from a store value goes through :func:`causal_gym._files.name_part`);
- ``POSITION`` (optional number): where its tables stand among the benchmarks' (smaller first;
  without one, after those that have one, in :func:`benchmarks` order).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import numbers
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

    from causal_gym._files import OutputFolder
    from causal_gym.tables import ReportTable

__all__ = [
    "EnvEntry",
    "AgentEntry",
    "InspectTask",
    "BenchmarkSpec",
    "ReportOptions",
    "ReportModule",
    "AGENT_OPTIONS",
    "report_position",
    "figure_writer",
    "Reproduce",
    "check_spec",
    "register_benchmark",
    "benchmarks",
    "benchmark_of",
    "takes_seal",
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
    takes_seal : bool
        Whether the entry point takes ``seal=`` (a :class:`causal_gym.seal.Seal`): the runner
        passes every episode its run's seal, and a sealed run refuses ids without one.
    small_kwargs : mapping
        Keyword arguments (on top of ``kwargs``) that make a small instance quick to play: what the
        conformance suite (``tests/test_conformance.py``) builds the id with.
    reproduces : tuple of str
        The tables and figures of the benchmark's paper (:attr:`BenchmarkSpec.paper`) that episodes
        of this id rebuild, through ``causal-gym reproduce`` or ``causal-gym report`` (e.g.
        ``("Table 7",)``); empty for an id of ours that no paper reports. The id's docs page says it.
    """

    id: str
    entry_point: str
    description: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    vector_entry_point: str | None = None
    takes_seal: bool = False
    small_kwargs: Mapping[str, Any] = field(default_factory=dict)
    reproduces: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentEntry:
    """A named agent: where its factory lives, what it is, and the extra that installs its needs.

    ``takes_seed``: the factory takes ``seed=``, so the runner gives every episode its own agent
    seed (unless the run's agent arguments fix one). ``extra``: the ``causal-gym[extra]`` that
    installs what the agent imports; a run stops before its first episode, with the ``pip install``
    line, when it is missing. ``method_arguments``: keyword arguments that name a discovery method
    (:func:`causal_gym.discovery.run`'s first argument); a run store records the digest of a method
    of the caller's own named there, so it is not resumed after the method changed.
    """

    path: str
    description: str
    extra: str | None = None
    takes_seed: bool = False
    method_arguments: tuple[str, ...] = ()


AGENT_OPTIONS = ("prompt_level", "stated_target")
"""The LLM-agent options an :class:`InspectTask` may expose (see
:func:`causal_gym.agents.llm.system_prompt`)."""


@dataclass(frozen=True)
class InspectTask:
    """One Inspect task of a benchmark, ``inspect eval causal_gym/<name>`` (built by
    :mod:`causal_gym.integrations.inspect`, which names no benchmark).

    Attributes
    ----------
    name : str
        The task's name (an identifier, unique over all benchmarks).
    description : str
        Its docstring (what ``inspect`` shows).
    parameters : mapping of str to value
        The task arguments that choose the env id, in order, with their defaults (the default's
        type is the argument's type).
    ids : mapping of tuple to str
        Argument values (in ``parameters`` order) -> the tool env id they play.
    agent_options : tuple of str
        Which of :data:`AGENT_OPTIONS` the task passes on to the agent's prompts.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    ids: Mapping[tuple[Any, ...], str]
    agent_options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"an Inspect task name must be an identifier, got {self.name!r}")
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))
        object.__setattr__(self, "ids", MappingProxyType({tuple(key): value for key, value in self.ids.items()}))
        object.__setattr__(self, "agent_options", tuple(self.agent_options))
        unknown = sorted(set(self.agent_options) - set(AGENT_OPTIONS))
        if unknown:
            raise ValueError(f"Inspect task {self.name!r}: unknown agent options {unknown}; known: {AGENT_OPTIONS}")
        width = len(self.parameters)
        if any(len(key) != width for key in self.ids):
            raise ValueError(f"Inspect task {self.name!r}: every key of ids needs one value per parameter "
                             f"{list(self.parameters)}")
        if tuple(self.parameters.values()) not in self.ids:
            raise ValueError(f"Inspect task {self.name!r}: the defaults {tuple(self.parameters.values())} "
                             "choose no id")

    def env_id(self, *values: Any) -> str:
        """The id that argument ``values`` (in ``parameters`` order) play.

        Raises
        ------
        ValueError
            For values that choose no id (the message lists those that do).
        """
        chosen = self.ids.get(tuple(values))
        if chosen is None:
            names = ", ".join(self.parameters)
            choices = "; ".join(f"{', '.join(map(repr, key))} ({env_id})" for key, env_id in self.ids.items())
            raise ValueError(f"task {self.name!r}: ({names}) = {tuple(values)!r} choose no env; choose one of: {choices}")
        return chosen


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
        ``"module:function"``, a :class:`Reproduce`, called as ``function(argv, prog=...)`` by
        ``causal-gym reproduce <name>``.
    reproduce_takes_runner : bool
        The ``reproduce`` function also takes ``runner=``, and gets
        :func:`causal_gym.eval.runner.run_plan` (the resumable runner, which a benchmark may not
        import: it plans runs in plain values and reads back their lines).
    report : str or None
        The report module, a :class:`ReportModule` (see the module docstring).
    inspect_tasks : tuple of InspectTask
        Its Inspect tasks (:mod:`causal_gym.integrations.inspect` builds them).
    paper : str
        The publication whose task and tables the benchmark re-implements (one line; empty for
        none), named on every env page of the docs beside each id's :attr:`EnvEntry.reproduces`.
    """

    name: str
    title: str
    envs: tuple[EnvEntry, ...]
    agents: Mapping[str, AgentEntry] = field(default_factory=dict)
    reproduce: str | None = None
    reproduce_takes_runner: bool = False
    report: str | None = None
    inspect_tasks: tuple[InspectTask, ...] = ()
    paper: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a benchmark name must be an identifier, got {self.name!r}")
        ids = [entry.id for entry in self.envs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"benchmark {self.name!r} lists an env id twice")
        if self.reproduce_takes_runner and self.reproduce is None:
            raise ValueError(f"benchmark {self.name!r}: reproduce_takes_runner without a reproduce entry point")
        object.__setattr__(self, "envs", tuple(self.envs))
        object.__setattr__(self, "agents", MappingProxyType(dict(self.agents)))
        object.__setattr__(self, "inspect_tasks", tuple(self.inspect_tasks))
        names = [declared.name for declared in self.inspect_tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"benchmark {self.name!r} names an Inspect task twice")
        for declared in self.inspect_tasks:
            strangers = sorted(set(declared.ids.values()) - set(ids))
            if strangers:
                raise ValueError(f"benchmark {self.name!r}: Inspect task {declared.name!r} plays ids it does not "
                                 f"declare: {strangers}")


@runtime_checkable
class ReportModule(Protocol):
    """What a benchmark's report module provides (the required part; see the module docstring for
    the optional ``write_figures`` and ``POSITION``)."""

    def episode_columns(self, params: dict[str, Any], line: Mapping[str, Any],
                        info: Mapping[str, Any]) -> dict[str, Any] | None:
        """The benchmark's columns of one episode row (None: an id it does not report); a ``"split"``
        column names the split the episode played where the line has none (a run without a split)."""

    def report_tables(self, frame: pd.DataFrame, options: ReportOptions) -> list[ReportTable]:
        """The benchmark's tables of its rows of the frame."""


FigureWriter = Callable[[Sequence["ReportTable"], "OutputFolder"], list[Path]]
"""A report module's optional ``write_figures(tables, out) -> written paths``."""


class Reproduce(Protocol):
    """A benchmark's ``reproduce`` entry point (with ``runner=`` when the spec's
    ``reproduce_takes_runner`` says so)."""

    def __call__(self, argv: Sequence[str] | None = None, prog: str | None = None) -> Any:
        """Parse ``argv``, run the published grid, print its tables."""


def report_position(module: Any) -> float:
    """Where a report module's tables stand (its ``POSITION``; without one, after all that have one)."""
    position = getattr(module, "POSITION", None)
    return float("inf") if position is None else float(position)


def figure_writer(module: Any) -> FigureWriter | None:
    """A report module's ``write_figures``, or None when it has none."""
    writer = getattr(module, "write_figures", None)
    return writer if callable(writer) else None


def _check_callable(where: str, reference: str, parameters: Sequence[str] = ()) -> list[str]:
    """Problems with the callable ``reference``: it does not import, is not callable, or lacks one
    of ``parameters``."""
    try:
        target = load(reference)
    except (ImportError, AttributeError) as exc:
        return [f"{where} {reference!r} does not load: {exc}"]
    if not callable(target):
        return [f"{where} {reference!r} is not callable"]
    try:
        accepted = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return []
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    return [f"{where} {reference!r} takes no {name!r}" for name in parameters if name not in accepted and not takes_any]


def check_spec(spec: BenchmarkSpec) -> None:
    """Import every code reference of ``spec`` and check it against its contract.

    The env entry points (and ``seal=`` where ``takes_seal`` says so), the agents (and ``seed=``
    where ``takes_seed`` says so), the ``reproduce`` function (and ``runner=``) and the report
    module (:class:`ReportModule`; an optional ``POSITION`` must be a number and an optional
    ``write_figures`` callable).

    Raises
    ------
    ValueError
        Naming every missing or wrong piece.
    """
    problems: list[str] = []
    for entry in spec.envs:
        problems += _check_callable(f"env {entry.id}: entry point", entry.entry_point,
                                    ("seal",) if entry.takes_seal else ())
        if entry.vector_entry_point is not None:
            problems += _check_callable(f"env {entry.id}: vector entry point", entry.vector_entry_point)
    for name, agent in spec.agents.items():
        problems += _check_callable(f"agent {name!r}:", agent.path, ("seed",) if agent.takes_seed else ())
    if spec.reproduce is not None:
        problems += _check_callable("reproduce", spec.reproduce,
                                    ("argv", "prog", "runner") if spec.reproduce_takes_runner else ("argv", "prog"))
    if spec.report is not None:
        try:
            module = load(spec.report)
        except ImportError as exc:
            problems.append(f"report module {spec.report!r} does not import: {exc}")
        else:
            missing = [name for name in ("episode_columns", "report_tables") if not callable(getattr(module, name, None))]
            problems += [f"report module {spec.report!r} has no function {name}()" for name in missing]
            position = getattr(module, "POSITION", None)
            if position is not None and not isinstance(position, numbers.Real):
                problems.append(f"report module {spec.report!r}: POSITION must be a number, got {position!r}")
            if hasattr(module, "write_figures") and figure_writer(module) is None:
                problems.append(f"report module {spec.report!r}: write_figures is not callable")
    if problems:
        raise ValueError(f"benchmark {spec.name!r} is incomplete:\n- " + "\n- ".join(problems))


_REGISTERED: dict[str, BenchmarkSpec] = {}


def register_benchmark(spec: BenchmarkSpec) -> None:
    """Add a benchmark defined outside causal_gym's folders (registers its envs too).

    Raises
    ------
    ValueError
        If another benchmark already has the name, one of the ids or Inspect task names, or a
        piece of the spec is missing or wrong (:func:`check_spec`).
    """
    if not isinstance(spec, BenchmarkSpec):
        raise ValueError(f"register_benchmark needs a BenchmarkSpec, got {type(spec).__name__}")
    known = {s.name: s for s in benchmarks()}
    if spec.name in known and known[spec.name] != spec:
        raise ValueError(f"a benchmark named {spec.name!r} exists already")
    others = [s for s in known.values() if s.name != spec.name]
    taken = {entry.id for s in others for entry in s.envs}
    clash = sorted(taken & {entry.id for entry in spec.envs})
    if clash:
        raise ValueError(f"env ids {clash} belong to another benchmark")
    tasks_taken = {declared.name for s in others for declared in s.inspect_tasks}
    clash = sorted(tasks_taken & {declared.name for declared in spec.inspect_tasks})
    if clash:
        raise ValueError(f"Inspect tasks {clash} belong to another benchmark")
    check_spec(spec)
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


def takes_seal(env_id: str) -> bool:
    """Whether ``env_id`` (or ``"package:EnvId-v0"``) takes ``seal=``: its benchmark's ``EnvEntry.takes_seal``
    (False for an id no benchmark declares, which a sealed run or server therefore refuses)."""
    name = env_id.rpartition(":")[2]
    benchmark = benchmark_of(name)
    return benchmark is not None and any(entry.takes_seal for entry in benchmark.envs if entry.id == name)


def load(reference: str) -> Any:
    """The object named by ``"module:attribute"`` (or a module, without a colon), imported now."""
    module_name, _, attribute = reference.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
