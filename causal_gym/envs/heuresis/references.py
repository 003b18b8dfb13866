"""Heuresis references: the algorithm menu, the ideal oracle, headroom, trivial floors and the router.

Everything here uses the hidden record and is computed before any agent is scored (paper §4.3,
§5.1, Appendix E, Table 11). Truth-based outputs (per-deletion labels, scores) never leave this
module's return values; an environment hands an agent at most PC-KCI's graph and deletion log.

Scoring (:func:`score_graph`): a graph is first completed with Meek's rules R1-R4, then scored by
adjacency precision / recall / F1 (primary) and nSHD against the true DAG (secondary).

References, per instance:

- the menu (:data:`MENU`): PC with Fisher-z and with KCI (alpha 0.05), FCI, GES, DirectLiNGAM,
  an additive-noise method (RESIT) and linear NOTEARS, each run once with its defaults; GES is
  our incremental search (``ges_fast``), which returns causal-learn's CPDAG (``ges``) many times
  faster -- checked on sampled menu instances in ``tests/test_heuresis_references.py``;
- PC-KCI's deletion log with truth labels: a deletion is *wrong* iff the deleted pair is adjacent
  in the true DAG (:func:`pc_kci_reference`);
- the ideal oracle: PC-KCI's output with every wrongly deleted pair restored as an undirected
  edge, the rest unchanged (:func:`oracle_graph`);
- trivial floors (Table 11): the empty graph, the complete graph (every deletion of PC-KCI
  restored), PC-KCI, a random restoration of as many deleted pairs as the oracle restores (mean
  over 20 draws) and the oracle;
- the router of Appendix E (:func:`router_graph`).

Across instances (:func:`reference_table`): BCA_g, the menu algorithm with the best mean
adjacency F1 over all families on development instances, and BCA_phi, the best on the family;
both are then reported on test instances with the selection headroom
``H^s = F1(BCA_phi) - F1(BCA_g)`` and the repair headroom ``H^r = F1(oracle) - F1(BCA_phi)``,
with 95% paired bootstrap intervals over instances.

Expensive runs are cached on disk (:mod:`causal_gym._cache`) under the instance's seed and
parameters, a hash of its data and DAG, the method options and :data:`CODE_VERSION`.
:func:`collect_rows` runs the instance loop in a process pool with a progress display.

Random streams (all derived from the instance seed): the random-restoration floor uses
``SeedSequence(instance.seed, spawn_key=(10,))``, the router's subsample ``spawn_key=(11,)``
(the instance generator itself uses spawn keys 0-3).
"""

from __future__ import annotations

import functools
import hashlib
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from causal_gym._cache import cached, is_cached
from causal_gym._validation import check_data
from causal_gym._workers import process_pool
from causal_gym.discovery import DeletionRecord, Method, run
from causal_gym.discovery.amortized import cache_options
from causal_gym.envs.heuresis.families import FAMILIES
from causal_gym.envs.heuresis.instances import (
    DEFAULT_D,
    DEFAULT_EXPECTED_DEGREE,
    DEFAULT_N,
    HeuresisInstance,
    make_instance,
    split_size,
)
from causal_gym.graphs import meek
from causal_gym.harness.menu import Menu, MenuEntry
from causal_gym.metrics import adjacency_scores, nshd
from causal_gym.seal import Seal
from causal_gym.tables import interval, paired_interval

__all__ = [
    "CODE_VERSION",
    "MENU",
    "FOUNDATION_BASELINES",
    "foundation_baselines",
    "baseline_entry",
    "run_menu_entry",
    "menu_entry_is_cached",
    "ALPHA",
    "RANDOM_RESTORE_DRAWS",
    "ROUTER_SUBSAMPLE",
    "ROUTER_GAP",
    "ROUTER_TAU",
    "PCReference",
    "RouterResult",
    "score_graph",
    "pc_kci_reference",
    "menu_outputs",
    "oracle_graph",
    "restore_pairs",
    "trivial_floors",
    "distance_correlation",
    "router_screen",
    "router_graph",
    "instance_row",
    "collect_rows",
    "best_chosen_algorithms",
    "reference_table",
    "difficulty_table",
]

CODE_VERSION = "heuresis-references-1"
"""Part of every cache key; bump it whenever a cached computation changes."""

ALPHA = 0.05
"""Significance level of both PC variants (paper §3, Appendix E)."""

MENU = Menu((
    MenuEntry("pc_fisherz", "pc", {"test": "fisherz", "alpha": ALPHA}),
    MenuEntry("pc_kci", "pc", {"test": "kci", "alpha": ALPHA}),
    MenuEntry("fci", "fci"),
    MenuEntry("ges", "ges_fast"),
    MenuEntry("direct_lingam", "direct_lingam"),
    MenuEntry("anm", "anm"),
    MenuEntry("notears", "notears"),
))
"""The algorithm menu: entry name (the label of reports and records) -> ``discovery.run`` method and
options (defaults elsewhere); the env hides it behind the labels A..G."""

FOUNDATION_BASELINES = Menu((
    MenuEntry("alternet", "alternet"),
))
"""Pretrained (amortized) baselines of Table 3's foundation-model rows, run as released: their shipped
checkpoint and default threshold, no family label, on the instance's data in one forward pass.
Reported on test instances next to the best chosen algorithm, like the router; never in the menu.
:func:`foundation_baselines` adds those whose checkpoint is configured on this machine."""


def baseline_entry(name: str) -> MenuEntry:
    """The menu entry of baseline ``name``: one of :func:`foundation_baselines`, or any method as it
    is (a method of your own: an import path ``"package.module:function"``, a registered name).

    Raises
    ------
    ValueError
        Neither a foundation baseline nor a method (the message lists the foundation baselines).
    """
    known = foundation_baselines()
    if name in known:
        return known[name]
    try:
        return MenuEntry(name, name)
    except ValueError as err:
        raise ValueError(f"unknown baseline {name!r}: neither a pretrained baseline ({', '.join(known)}; cdfm needs "
                         f"CAUSAL_GYM_CDFM_CHECKPOINT) nor a method ({err})") from None


def foundation_baselines() -> Menu:
    """:data:`FOUNDATION_BASELINES`, plus CDFM (its calibrated threshold) when ``$CAUSAL_GYM_CDFM_CHECKPOINT``
    names a checkpoint: the released checkpoint, as the paper runs it; absent otherwise."""
    from causal_gym.discovery import methods

    extra = (MenuEntry("cdfm", "cdfm"),) if "cdfm" in methods() else ()
    return Menu(FOUNDATION_BASELINES.entries + extra)

RANDOM_RESTORE_DRAWS = 20
"""Draws of the random-restoration floor per instance (Table 11)."""

ROUTER_SUBSAMPLE = 300
"""Rows of the router's fixed random subsample for the distance-correlation screen."""

ROUTER_GAP = 0.15
"""A deleted pair is flagged when distance correlation minus ``|Pearson|`` is at least this gap."""

ROUTER_TAU = 0.2
"""The router switches to PC-KCI when at least this share of the deleted pairs is flagged."""

_RESTORE_STREAM = 10
_ROUTER_STREAM = 11


# ---------------------------------------------------------------------------------------------
# scoring and graph edits
# ---------------------------------------------------------------------------------------------


def score_graph(true_dag: np.ndarray, graph: np.ndarray) -> dict[str, float]:
    """Meek-complete ``graph``, then score it against the true DAG.

    Returns
    -------
    dict
        ``precision``, ``recall``, ``f1`` (adjacency) and ``nshd`` (SHD / (d (d - 1)) against
        the DAG; undirected edges count as orientation errors).
    """
    completed = meek(graph)
    prf = adjacency_scores(true_dag, completed)
    return {"precision": prf.precision, "recall": prf.recall, "f1": prf.f1, "nshd": nshd(true_dag, completed)}


def restore_pairs(graph: np.ndarray, pairs: Iterable[tuple[int, int]]) -> np.ndarray:
    """Copy of ``graph`` with every pair in ``pairs`` made an undirected edge (others unchanged)."""
    out = np.array(graph, dtype=np.int8, copy=True)
    for x, y in pairs:
        out[x, y] = out[y, x] = 1
    return out


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _instance_key(instance: HeuresisInstance) -> dict[str, object]:
    return {
        **instance.key,
        "data_sha256": _digest(instance.data),
        "dag_sha256": _digest(instance.hidden.dag),
        "version": CODE_VERSION,
    }


# ---------------------------------------------------------------------------------------------
# PC-KCI with truth labels, the menu, the oracle and the floors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PCReference:
    """PC-KCI on one instance with the truth label of each deletion.

    Attributes
    ----------
    graph : ndarray of int8
        PC-KCI's output graph (column order of the instance data).
    deletion_log : tuple of DeletionRecord
        PC-KCI's deletion log (what a guided agent may see).
    wrong : ndarray of bool
        ``wrong[k]`` is True iff ``deletion_log[k]`` deleted a pair adjacent in the true DAG.
        Hidden: never shown to an agent.
    n_tests : int
        CI tests PC-KCI requested (the unit of the test budget).
    runtime : float
        Wall time of the PC-KCI run that filled the cache, in seconds.
    """

    graph: np.ndarray
    deletion_log: tuple[DeletionRecord, ...]
    wrong: np.ndarray
    n_tests: int
    runtime: float

    def __post_init__(self) -> None:
        self.graph.flags.writeable = False
        self.wrong.flags.writeable = False

    @property
    def wrong_pairs(self) -> list[tuple[int, int]]:
        """The wrongly deleted pairs ``(x, y)``, ``x < y``."""
        return [(r.x, r.y) for r, w in zip(self.deletion_log, self.wrong) if w]

    @property
    def deleted_pairs(self) -> list[tuple[int, int]]:
        """Every deleted pair ``(x, y)``, ``x < y``, in deletion order."""
        return [(r.x, r.y) for r in self.deletion_log]


def _menu_run(method: Method, data: np.ndarray, options: Mapping[str, Any]) -> dict[str, Any]:
    """One menu run (module level, so a time-limited call can send it to a worker process, with the
    resolved method: a method of the caller's own reaches the worker without a registration there)."""
    result = run(method, data, **options)
    return {
        "graph": result.graph,
        "deletion_log": [record.to_dict() for record in result.deletion_log],
        "n_tests": result.n_tests,
        "runtime": result.runtime,
        "warnings": result.warnings,
    }


def run_menu_entry(
    instance: HeuresisInstance, label: str | MenuEntry, time_limit: float | None = None
) -> dict[str, Any]:
    """Cached ``discovery.run`` of menu entry ``label`` (a name in :data:`MENU`, or an entry of
    another menu, e.g. an env's ``menu=``) on the instance's data only.

    Returns the graph, PC's deletion log (empty for other methods), n_tests and runtime — nothing
    truth-derived, so the env's ``run_algorithm`` tool and the reference tables share one cache.
    A miss computes for at most ``time_limit`` seconds (the env's per-call limit; references use
    none), raising :class:`causal_gym._workers.TimeLimitExceeded`.
    """
    entry = MENU[label] if isinstance(label, str) else label
    compute = functools.partial(_menu_run, entry.resolved, instance.data, dict(entry.options))
    return cached(_menu_key(instance, entry), compute, time_limit)


def menu_entry_is_cached(instance: HeuresisInstance, label: str) -> bool:
    """Whether :func:`run_menu_entry` would return at once (its disk entry exists)."""
    return is_cached(_menu_key(instance, MENU[label]))


def _menu_key(instance: HeuresisInstance, entry: MenuEntry) -> dict[str, Any]:
    # name, method and options: the key of a default entry is the one it always had; a checkpoint
    # read from a path or an environment variable is keyed by its content (cache_options), a method of
    # the caller's own by its code's digest (MenuEntry.cache_parts)
    return {"kind": "menu", "label": entry.name, **entry.cache_parts(),
            "options": cache_options(entry.resolved.name, entry.options), **_instance_key(instance)}


def _record(entry: Mapping[str, Any]) -> DeletionRecord:
    return DeletionRecord(**{**entry, "cond": tuple(entry["cond"])})


def pc_kci_reference(instance: HeuresisInstance) -> PCReference:
    """PC-KCI (alpha 0.05) on the instance with per-deletion truth labels (cached on disk).

    Examples
    --------
    >>> from causal_gym.envs.heuresis.instances import make_instance
    >>> ref = pc_kci_reference(make_instance("lg", "dev", 0, d=5, n=200))
    >>> len(ref.wrong) == len(ref.deletion_log)
    True
    """
    raw = run_menu_entry(instance, "pc_kci")
    log = tuple(_record(entry) for entry in raw["deletion_log"])
    dag = instance.hidden.dag
    wrong = np.array([bool(dag[r.x, r.y] or dag[r.y, r.x]) for r in log], dtype=bool)
    return PCReference(
        graph=np.asarray(raw["graph"], dtype=np.int8),
        deletion_log=log,
        wrong=wrong,
        n_tests=int(raw["n_tests"]),
        runtime=float(raw["runtime"]),
    )


def _check_labels(labels: Iterable[str]) -> None:
    unknown = sorted(set(labels) - set(MENU))
    if unknown:
        raise ValueError(f"unknown menu algorithm(s) {unknown}; choose from {list(MENU)}")


def menu_outputs(instance: HeuresisInstance, labels: Sequence[str] = tuple(MENU)) -> dict[str, dict[str, Any]]:
    """Run each menu algorithm once on the instance (cached) and score it.

    Returns
    -------
    dict
        ``{label: {"graph", "precision", "recall", "f1", "nshd", "runtime", "n_tests"}}``.
    """
    _check_labels(labels)
    return {label: _scored_run(instance, label) for label in labels}


def _scored_run(instance: HeuresisInstance, label: str | MenuEntry) -> dict[str, Any]:
    """One cached menu-entry run scored against the truth: graph, precision, recall, f1, nshd, runtime, n_tests."""
    raw = run_menu_entry(instance, label)
    graph = np.asarray(raw["graph"], dtype=np.int8)
    return {"graph": graph, **score_graph(instance.hidden.dag, graph), "runtime": float(raw["runtime"]),
            "n_tests": int(raw["n_tests"])}


def oracle_graph(instance: HeuresisInstance, reference: PCReference | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """The ideal oracle: PC-KCI's output with every wrongly deleted true edge restored.

    Restored pairs become undirected edges; every other pair keeps PC-KCI's relation.

    Returns
    -------
    (ndarray, dict)
        The oracle graph and its :func:`score_graph` scores.
    """
    reference = pc_kci_reference(instance) if reference is None else reference
    graph = restore_pairs(reference.graph, reference.wrong_pairs)
    return graph, score_graph(instance.hidden.dag, graph)


def trivial_floors(
    instance: HeuresisInstance, reference: PCReference | None = None, draws: int = RANDOM_RESTORE_DRAWS
) -> dict[str, float]:
    """Adjacency F1 of the trivial floors of Table 11 on one instance.

    ``random_restoration`` restores as many deleted pairs as the oracle restores, drawn uniformly
    without replacement from PC-KCI's deleted pairs, and averages F1 over ``draws`` draws
    (stream ``SeedSequence(instance.seed, spawn_key=(10,))``).

    Returns
    -------
    dict
        ``empty``, ``complete``, ``pc_kci``, ``random_restoration``, ``oracle``.
    """
    reference = pc_kci_reference(instance) if reference is None else reference
    dag = instance.hidden.dag
    deleted = reference.deleted_pairs
    k = int(reference.wrong.sum())
    rng = np.random.default_rng(np.random.SeedSequence(instance.seed, spawn_key=(_RESTORE_STREAM,)))
    random_f1 = [
        score_graph(dag, restore_pairs(reference.graph, [deleted[i] for i in rng.choice(len(deleted), k, replace=False)]))["f1"]
        for _ in range(draws)
    ]
    return {
        "empty": score_graph(dag, np.zeros_like(dag))["f1"],
        "complete": score_graph(dag, restore_pairs(reference.graph, deleted))["f1"],
        "pc_kci": score_graph(dag, reference.graph)["f1"],
        "random_restoration": float(np.mean(random_f1)),
        "oracle": oracle_graph(instance, reference)[1]["f1"],
    }


# ---------------------------------------------------------------------------------------------
# the router (Appendix E)
# ---------------------------------------------------------------------------------------------


def _double_centred_distances(columns: np.ndarray) -> np.ndarray:
    """``(c, m, m)``: for each of the ``c`` columns of ``columns``, its double-centred distance matrix."""
    distances = np.abs(columns.T[:, :, None] - columns.T[:, None, :])
    return (distances - distances.mean(axis=1, keepdims=True) - distances.mean(axis=2, keepdims=True)
            + distances.mean(axis=(1, 2), keepdims=True))


def _dcor(a: np.ndarray, b: np.ndarray) -> float:
    """Distance correlation from two double-centred distance matrices (0 if either is constant)."""
    dvar = np.vdot(a, a) * np.vdot(b, b)
    return float(np.sqrt(max(np.vdot(a, b), 0.0) / np.sqrt(dvar))) if dvar > 0.0 else 0.0


def distance_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Sample distance correlation of two 1-D samples (Székely, Rizzo & Bakirov 2007).

    The V-statistic form: with ``A``, ``B`` the double-centred distance matrices of ``x`` and
    ``y``, ``dCov^2 = mean(A B)`` and ``dCor = sqrt(dCov^2(x, y) / sqrt(dVar^2(x) dVar^2(y)))``,
    0 when either variable is constant. It is 0 in the population iff ``x`` and ``y`` are
    independent, which is why the router compares it with ``|Pearson|``. ``O(m^2)`` memory.

    Examples
    --------
    >>> z = np.linspace(-1, 1, 101)
    >>> round(distance_correlation(z, 3 * z + 1), 6)
    1.0
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError(f"x and y must be 1-D samples of the same size >= 2, got shapes {x.shape} and {y.shape}")
    return _dcor(*_double_centred_distances(np.column_stack([x, y])))


class RouterResult(NamedTuple):
    """What the router decided and why.

    Attributes
    ----------
    graph : ndarray of int8
        The submitted graph: PC-KCI's on the KCI branch, PC-Fisher-z's otherwise.
    branch : str
        ``"pc_kci"`` or ``"pc_fisherz"``.
    flagged_share : float
        Share of PC-Fisher-z's deleted pairs flagged by the screen (0 when nothing was deleted).
    flagged : tuple of (int, int)
        The flagged pairs.
    """

    graph: np.ndarray
    branch: str
    flagged_share: float
    flagged: tuple[tuple[int, int], ...]


def router_screen(data: np.ndarray, deleted_pairs: Sequence[tuple[int, int]],
                  seed: int | np.random.SeedSequence | np.random.Generator) -> tuple[str, float, tuple[tuple[int, int], ...]]:
    """Screen and route steps of the router (Appendix E), given PC-Fisher-z's deleted pairs.

    On one fixed random subsample of ``min(n, 300)`` rows (drawn from ``seed``) every deleted
    pair gets the gap ``dCor - |Pearson|``; a gap ``>= 0.15`` flags the pair. If the flagged
    share is ``>= tau = 0.2`` the branch is ``"pc_kci"``, else ``"pc_fisherz"``.

    Returns
    -------
    (branch, flagged_share, flagged_pairs)
    """
    x = check_data(data)
    rng = np.random.default_rng(seed)
    rows = rng.choice(x.shape[0], size=min(x.shape[0], ROUTER_SUBSAMPLE), replace=False)
    sub = x[np.sort(rows)]
    pairs = [tuple(map(int, p)) for p in deleted_pairs]
    if not pairs:
        return "pc_fisherz", 0.0, ()
    centred = _double_centred_distances(sub)
    pearson = np.corrcoef(sub, rowvar=False)
    flagged = [
        (i, j) for i, j in pairs
        if _dcor(centred[i], centred[j]) - abs(pearson[i, j]) >= ROUTER_GAP
    ]
    share = len(flagged) / len(pairs)
    return ("pc_kci" if share >= ROUTER_TAU else "pc_fisherz"), share, tuple(flagged)


def router_graph(data: np.ndarray, seed: int | np.random.SeedSequence | np.random.Generator) -> RouterResult:
    """The router baseline of Appendix E as a pure function of the data and a seed.

    1. Screen: PC with Fisher-z at alpha 0.05; :func:`router_screen` flags its deleted pairs.
    2. Route: flagged share ``>= 0.2`` -> PC with KCI, else PC-Fisher-z's output.
    3. Re-test (KCI branch): the paper restores a pair only if KCI rejects independence at the
       conditioning set that deleted it (Holm-corrected across the deleted pairs) and no
       alternative conditioning set implied by the PC graph returns independence. On the full
       sample the re-test at the deleting set *is* the test that deleted the pair -- same data,
       same set, same p-value ``> alpha`` -- so it never rejects, and a larger Holm threshold
       cannot change that. The step therefore restores nothing and is not run: the KCI branch
       returns PC-KCI's graph, as the paper reports.

    Parameters
    ----------
    data : ndarray, shape (n, d)
    seed : int, SeedSequence or Generator
        Draws the screen's subsample.

    Returns
    -------
    RouterResult
    """
    x = check_data(data)
    fisherz = run("pc", x, test="fisherz", alpha=ALPHA)
    branch, share, flagged = router_screen(x, [(r.x, r.y) for r in fisherz.deletion_log], seed)
    graph = run("pc", x, test="kci", alpha=ALPHA).graph if branch == "pc_kci" else fisherz.graph
    return RouterResult(np.array(graph, dtype=np.int8), branch, share, flagged)


# ---------------------------------------------------------------------------------------------
# one instance, many instances
# ---------------------------------------------------------------------------------------------


def _scores_only(entry: Mapping[str, Any]) -> dict[str, float]:
    return {key: entry[key] for key in ("precision", "recall", "f1", "nshd", "runtime", "n_tests")}


def instance_row(
    family: str,
    split: str,
    index: int,
    d: int = DEFAULT_D,
    n: int = DEFAULT_N,
    expected_degree: float = DEFAULT_EXPECTED_DEGREE,
    labels: Sequence[str] = tuple(MENU),
    seal: Seal | None = None,
    baselines: Sequence[str] = (),
) -> dict[str, Any]:
    """Every reference number of one instance as a plain-JSON row (menu, oracle, floors, router).

    ``labels`` chooses the menu algorithms (PC-Fisher-z and PC-KCI always run: the oracle, the
    floors and the router need them); ``seal`` picks the sealed instance (cached under its
    fingerprint and content hash); ``baselines`` names entries of :func:`foundation_baselines` or
    methods (:func:`baseline_entry`) to score too (row key ``"baselines"``, cached like menu runs).
    """
    instance = make_instance(family, split, index, d=d, n=n, expected_degree=expected_degree, seal=seal)
    labels = tuple(dict.fromkeys(("pc_fisherz", "pc_kci", *labels)))
    menu = menu_outputs(instance, labels)
    reference = pc_kci_reference(instance)
    _, oracle = oracle_graph(instance, reference)
    fisherz_log = run_menu_entry(instance, "pc_fisherz")["deletion_log"]
    router_seed = np.random.SeedSequence(instance.seed, spawn_key=(_ROUTER_STREAM,))
    branch, share, _ = router_screen(instance.data, [(e["x"], e["y"]) for e in fisherz_log], router_seed)
    return {
        "family": family,
        "split": split,
        "index": index,
        "n_edges": int(instance.hidden.dag.sum()),
        "graph_prior": instance.hidden.graph_prior,
        "n_deleted": len(reference.deletion_log),
        "n_wrong": int(reference.wrong.sum()),
        "menu": {label: _scores_only(entry) for label, entry in menu.items()},
        "oracle": {key: oracle[key] for key in ("precision", "recall", "f1", "nshd")},
        "floors": trivial_floors(instance, reference),
        "router": {"branch": branch, "flagged_share": share, **{
            key: menu[branch][key] for key in ("precision", "recall", "f1", "nshd")}},
        "baselines": {name: _scores_only(_scored_run(instance, baseline_entry(name))) for name in baselines},
    }


_RowTask = tuple[str, str, int, int, int, float, tuple[str, ...], Seal | None, tuple[str, ...]]


def _row_task(task: _RowTask) -> dict[str, Any]:
    return instance_row(*task)


def _menu_task(task: _RowTask, label: str) -> None:
    """Compute (and cache) one menu run of a row's instance, so progress moves per algorithm."""
    family, split, index, d, n, expected_degree, _, seal, _ = task
    run_menu_entry(make_instance(family, split, index, d=d, n=n, expected_degree=expected_degree, seal=seal), label)


def _progress(total: int, description: str) -> Callable[[], None]:
    """A ``tick()`` that advances tqdm when it is installed, else prints a line per step."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=total, desc=description, file=sys.stderr)

        def tick() -> None:
            bar.update(1)
            if bar.n == total:
                bar.close()

        return tick
    start, done = time.perf_counter(), [0]

    def print_tick() -> None:
        done[0] += 1
        print(f"{description}: {done[0]}/{total} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)

    return print_tick


def collect_rows(
    families: Sequence[str] = FAMILIES,
    split: str = "test",
    indices: Iterable[int] | None = None,
    d: int = DEFAULT_D,
    n: int = DEFAULT_N,
    expected_degree: float = DEFAULT_EXPECTED_DEGREE,
    labels: Sequence[str] = tuple(MENU),
    workers: int = 2,
    progress: bool = True,
    seal: Seal | None = None,
    baselines: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """:func:`instance_row` for every (family, index), in a process pool of ``workers``.

    Every menu run is computed first, as a task of its own, so the progress display (one step per
    algorithm run, then one per row) moves within seconds even when one instance takes a minute.
    Rows come back in (family, index) order whatever the completion order. With ``workers=1``
    everything runs in this process (handy under a debugger). Finished runs are cached, so an
    interrupted run resumes where it stopped.
    """
    size = split_size(split)
    if indices is None:
        if size is None:
            raise ValueError("the train split is unbounded: pass indices explicitly")
        indices = range(size)
    _check_labels(labels)
    for name in baselines:
        baseline_entry(name)  # an unknown one fails here, before any instance is computed
    tasks: list[_RowTask] = [(family, split, int(i), d, n, float(expected_degree), tuple(labels), seal,
                              tuple(baselines)) for family in families for i in indices]
    runs = [(task, label) for task in tasks for label in dict.fromkeys(("pc_fisherz", "pc_kci", *labels))]
    if progress:
        print(f"references {split}: {len(tasks)} instances x {len(runs) // max(len(tasks), 1)} algorithms, "
              f"{max(workers, 1)} worker(s); cached runs count at once", file=sys.stderr, flush=True)
    tick = _progress(len(runs) + len(tasks), f"references {split}") if progress else (lambda: None)
    if workers <= 1:
        for task, label in runs:
            _menu_task(task, label)
            tick()
        rows = []
        for task in tasks:
            rows.append(_row_task(task))
            tick()
        return rows
    with process_pool(workers) as pool:
        for menu_run in as_completed([pool.submit(_menu_task, task, label) for task, label in runs]):
            menu_run.result()
            tick()
        futures = [pool.submit(_row_task, task) for task in tasks]
        for future in as_completed(futures):
            future.result()
            tick()
    return [future.result() for future in futures]


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def _by_family(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["family"], []).append(row)
    return grouped


PUBLISHED_CHOICE: Mapping[str, Any] = MappingProxyType({
    "shape": {"d": 10, "n": 600, "expected_degree": 2.0},
    "labels": ("pc_fisherz", "pc_kci", "fci", "ges", "direct_lingam", "notears"),
    "bca_g": "pc_kci",
    "bca_phi": MappingProxyType({"lg": "ges", "anm": "pc_kci", "hetero": "pc_kci", "wild": "pc_kci",
                                 "mixed": "pc_kci", "gauntlet": "pc_kci"}),
})
"""The best chosen algorithms on the 100 open dev instances per family at the default shape, from
``causal-gym reproduce heuresis --quick --dev 100`` (the menu without RESIT, which is never best):
reports use them instead of recomputing 600 menu rows for every report (a slow test recomputes
them). Any other shape, menu or a seal needs the dev instances computed."""


def best_chosen_algorithms(dev_rows: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, str]]:
    """BCA_g and BCA_phi chosen on development rows by mean adjacency F1.

    BCA_g maximises the mean over all families, each family weighted equally (the mean of the
    family means); BCA_phi maximises the mean on the family. Ties go to the earlier menu entry.

    Returns
    -------
    (str, dict)
        BCA_g's label and ``{family: BCA_phi label}``.
    """
    grouped = _by_family(dev_rows)
    if not grouped:
        raise ValueError("dev_rows is empty")
    labels = [label for label in MENU if all(label in row["menu"] for row in dev_rows)]
    means = {
        family: {label: float(np.mean([row["menu"][label]["f1"] for row in rows])) for label in labels}
        for family, rows in grouped.items()
    }
    overall = {label: float(np.mean([means[family][label] for family in means])) for label in labels}
    bca_g = max(labels, key=lambda label: overall[label])
    return bca_g, {family: max(labels, key=lambda label: m[label]) for family, m in means.items()}


def reference_table(dev_rows: Sequence[Mapping[str, Any]], test_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Table-3-style references and Table-11 floors: chosen on dev rows, reported on test rows.

    Every value is ``[estimate, low, high]`` (95% bootstrap over test instances; paired for the
    headrooms and the router's residual gain; NaN bounds for a family with one test instance).

    Returns
    -------
    dict
        ``{"bca_g": label, "families": {family: {"bca_phi", "f1_bca_g", "f1_bca_phi",
        "f1_oracle", "selection_headroom", "repair_headroom", "router_residual_gain",
        "floors": {...}, "baselines": {name: {"f1", "residual_gain"}}}}}`` (baselines: those the
        test rows carry; residual gain = baseline F1 - BCA_phi F1, paired).
    """
    bca_g, bca_phi = best_chosen_algorithms(dev_rows)
    out: dict[str, Any] = {"bca_g": bca_g, "families": {}}
    for family, rows in _by_family(test_rows).items():
        phi = bca_phi.get(family, bca_g)
        f1_g = [row["menu"][bca_g]["f1"] for row in rows]
        f1_phi = [row["menu"][phi]["f1"] for row in rows]
        f1_oracle = [row["oracle"]["f1"] for row in rows]
        f1_router = [row["router"]["f1"] for row in rows]
        out["families"][family] = {
            "bca_phi": phi,
            "n": len(rows),
            "f1_bca_g": list(interval(f1_g, 0)),
            "f1_bca_phi": list(interval(f1_phi, 1)),
            "f1_oracle": list(interval(f1_oracle, 2)),
            "selection_headroom": list(paired_interval(f1_phi, f1_g, 3)),
            "repair_headroom": list(paired_interval(f1_oracle, f1_phi, 4)),
            "router_residual_gain": list(paired_interval(f1_router, f1_phi, 5)),
            "router_kci_share": float(np.mean([row["router"]["branch"] == "pc_kci" for row in rows])),
            "baselines": {name: {"f1": list(interval([row["baselines"][name]["f1"] for row in rows], 20 + 2 * k)),
                                 "residual_gain": list(paired_interval(
                                     [row["baselines"][name]["f1"] for row in rows], f1_phi, 21 + 2 * k))}
                          for k, name in enumerate(rows[0].get("baselines", {}))},
            "floors": {
                floor: list(interval([row["floors"][floor] for row in rows], 6 + k))
                for k, floor in enumerate(rows[0]["floors"])
            },
        }
    return out


def difficulty_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Table-2-style difficulty per family: PC-KCI's mean wrong deletions, share of instances with
    none, the oracle's mean F1 gain over PC-KCI, and both F1s.

    Returns
    -------
    dict
        ``{family: {"n", "wrong", "zero_share", "headroom", "f1_pc_kci", "f1_oracle",
        "n_edges", "n_tests", "pc_kci_runtime"}}``.
    """
    table = {}
    for family, group in _by_family(rows).items():
        wrong = np.array([row["n_wrong"] for row in group], dtype=float)
        pc = np.array([row["menu"]["pc_kci"]["f1"] for row in group])
        oracle = np.array([row["oracle"]["f1"] for row in group])
        table[family] = {
            "n": len(group),
            "wrong": float(wrong.mean()),
            "zero_share": float(np.mean(wrong == 0)),
            "headroom": float(np.mean(oracle - pc)),
            "f1_pc_kci": float(pc.mean()),
            "f1_oracle": float(oracle.mean()),
            "n_edges": float(np.mean([row["n_edges"] for row in group])),
            "n_tests": float(np.mean([row["menu"]["pc_kci"]["n_tests"] for row in group])),
            "pc_kci_runtime": float(np.mean([row["menu"]["pc_kci"]["runtime"] for row in group])),
        }
    return table
