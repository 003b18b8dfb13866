"""Real tables and published reference networks for CausalArena's external-validity check.

Two sources, both read from data files shipped inside other packages' wheels -- located with
:func:`importlib.util.find_spec` (which does not import the package: importing ``cdt`` pulls in
torch and probes GPUs, importing ``pgmpy`` takes seconds):

- **Sachs et al. (2005)** flow-cytometry measurements of 11 phosphoproteins and lipids in human T
  cells, as distributed with the Causal Discovery Toolbox (``cdt``): ``cyto_full_data.csv``, 7,466
  rows pooled over the stimulation conditions without condition labels (the table NOTEARS,
  DAG-GNN and many later papers evaluate on). The reference graph is the 17-edge consensus network
  of Sachs et al. as encoded in the bnlearn repository (:data:`SACHS_CONSENSUS_EDGES`); cdt's own
  ``cyto_full_target.csv`` lists 18 edges, including the cycle Plcg -> PIP2 -> PIP3 -> Plcg, and
  can be requested with ``reference="cdt"``. As the paper says, these are reference structures,
  not verified causal ground truth.
- **Bayesian networks of the bnlearn repository** shipped with ``pgmpy``
  (``pgmpy/utils/example_models/*.bif.gz``: asia, sachs, child, insurance, alarm, ...). Only the
  structure is used, read by a minimal BIF parser written here (:func:`parse_bif_structure`);
  :func:`semi_synthetic_scm` puts causal_gym's own mechanisms on that graph, with the variables
  anonymised and shuffled so that neither names nor the file's variable order leak the answer.

Both packages are optional (extra ``real``: ``pip install "causal-gym[real]"``, or
``pip install cdt`` / ``pip install pgmpy``); a missing one raises an ImportError saying so.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import re
from pathlib import Path

import numpy as np

from causal_gym._validation import check_choice
from causal_gym.graphs import is_dag
from causal_gym.scm import SCM, NodeRecipe

__all__ = [
    "SACHS_NAMES",
    "SACHS_CSV_COLUMNS",
    "SACHS_CONSENSUS_EDGES",
    "available_real_datasets",
    "load_sachs",
    "parse_bif_structure",
    "bn_structure",
    "semi_synthetic_scm",
]

SACHS_NAMES: tuple[str, ...] = ("Raf", "Mek", "Plcg", "PIP2", "PIP3", "Erk", "Akt", "PKA", "PKC", "P38", "Jnk")
"""Variable names of the Sachs data, in column order (the bnlearn spelling)."""

SACHS_CSV_COLUMNS: tuple[str, ...] = (
    "praf", "pmek", "plcg", "PIP2", "PIP3", "p44/42", "pakts473", "PKA", "PKC", "P38", "pjnk",
)
"""The measured species as headed in cdt's CSV, aligned with :data:`SACHS_NAMES` (p44/42 is Erk,
pakts473 is Akt phosphorylated at S473)."""

SACHS_CONSENSUS_EDGES: tuple[tuple[str, str], ...] = (
    ("Raf", "Mek"),
    ("Mek", "Erk"),
    ("Erk", "Akt"),
    ("Plcg", "PIP2"),
    ("Plcg", "PIP3"),
    ("PIP3", "PIP2"),
    ("PKA", "Raf"),
    ("PKA", "Mek"),
    ("PKA", "Erk"),
    ("PKA", "Akt"),
    ("PKA", "P38"),
    ("PKA", "Jnk"),
    ("PKC", "Raf"),
    ("PKC", "Mek"),
    ("PKC", "PKA"),
    ("PKC", "P38"),
    ("PKC", "Jnk"),
)
"""The 17 directed edges of the Sachs et al. (2005) consensus network (bnlearn's ``sachs``)."""

_EXTRA_HINT = 'install the optional extra with `pip install "causal-gym[real]"` (or just `pip install {package}`)'
_CDT_RESOURCES = ("data", "resources")
_PGMPY_MODELS = ("utils", "example_models")
_BIF_SUFFIX = ".bif.gz"


# ---------------------------------------------------------------------------------------------
# locating data files without importing their packages
# ---------------------------------------------------------------------------------------------


def _package_dirs(package: str) -> list[Path]:
    """Install directories of ``package`` (empty when it is not installed); nothing is imported."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def _resource(package: str, parts: tuple[str, ...], filename: str, what: str) -> Path:
    dirs = _package_dirs(package)
    if not dirs:
        raise ImportError(f"{what} is read from the '{package}' package, which is not installed; "
                          + _EXTRA_HINT.format(package=package))
    for directory in dirs:
        path = directory.joinpath(*parts, filename)
        if path.is_file():
            return path
    raise FileNotFoundError(f"{what}: '{package}' is installed but has no {'/'.join((*parts, filename))}")


def _bif_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for directory in _package_dirs("pgmpy"):
        for path in sorted(directory.joinpath(*_PGMPY_MODELS).glob(f"*{_BIF_SUFFIX}")):
            files.setdefault(path.name[: -len(_BIF_SUFFIX)], path)
    return files


def available_real_datasets() -> dict[str, tuple[str, ...]]:
    """What the installed optional packages provide.

    Returns
    -------
    dict
        ``"tables"``: real data tables with a reference graph (``("sachs",)`` when ``cdt`` is
        installed); ``"networks"``: Bayesian-network structures for :func:`bn_structure` and
        :func:`semi_synthetic_scm` (the BIF files shipped with ``pgmpy``). Empty tuples when a
        package is missing.
    """
    tables = ("sachs",) if any(d.joinpath(*_CDT_RESOURCES, "cyto_full_data.csv").is_file()
                               for d in _package_dirs("cdt")) else ()
    return {"tables": tables, "networks": tuple(sorted(_bif_files()))}


# ---------------------------------------------------------------------------------------------
# Sachs
# ---------------------------------------------------------------------------------------------


def _adjacency(names: tuple[str, ...], edges: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> np.ndarray:
    index = {name: i for i, name in enumerate(names)}
    adjacency = np.zeros((len(names), len(names)), dtype=np.int8)
    for source, target in edges:
        adjacency[index[source], index[target]] = 1
    return adjacency


def load_sachs(reference: str = "consensus") -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The Sachs et al. (2005) flow-cytometry table and a reference graph.

    Parameters
    ----------
    reference : {"consensus", "cdt"}
        ``"consensus"``: the 17-edge consensus DAG (:data:`SACHS_CONSENSUS_EDGES`). ``"cdt"``:
        the 18 edges of cdt's ``cyto_full_target.csv``, which contain a directed cycle (so it
        is a reference digraph, not a DAG).

    Returns
    -------
    data : ndarray, shape (7466, 11)
        Raw (unstandardised) measurements, columns in :data:`SACHS_NAMES` order.
    adjacency : ndarray of int8, shape (11, 11)
        ``adjacency[i, j] = 1`` for the edge ``i -> j``.
    names : tuple of str
        :data:`SACHS_NAMES`.

    Raises
    ------
    ImportError
        If ``cdt`` is not installed.
    ValueError
        If the CSV's header differs from :data:`SACHS_CSV_COLUMNS` (a changed cdt release).
    """
    check_choice(reference, ("consensus", "cdt"), "reference")
    path = _resource("cdt", _CDT_RESOURCES, "cyto_full_data.csv", "the Sachs data")
    with path.open(newline="") as handle:
        header = tuple(next(csv.reader(handle)))
    if header != SACHS_CSV_COLUMNS:
        raise ValueError(f"{path} has columns {header}, expected {SACHS_CSV_COLUMNS}")
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=float, ndmin=2)
    if reference == "consensus":
        return data, _adjacency(SACHS_NAMES, SACHS_CONSENSUS_EDGES), SACHS_NAMES
    target = _resource("cdt", _CDT_RESOURCES, "cyto_full_target.csv", "the Sachs reference graph")
    rename = dict(zip(SACHS_CSV_COLUMNS, SACHS_NAMES))
    with target.open(newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows or rows[0] != ["Cause", "Effect"] or any(len(r) != 2 or set(r) - set(rename) for r in rows[1:]):
        raise ValueError(f"{target} is not a Cause,Effect list over {SACHS_CSV_COLUMNS}")
    return data, _adjacency(SACHS_NAMES, [(rename[a], rename[b]) for a, b in rows[1:]]), SACHS_NAMES


# ---------------------------------------------------------------------------------------------
# BIF structure
# ---------------------------------------------------------------------------------------------

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_BLOCK = re.compile(r"\s*(network|variable|probability)\b([^{]*)\{")
_NAME = re.compile(r"[^\s,|(){};]+")


def _block_end(text: str, start: int) -> int:
    """Index just past the ``}`` closing the block whose ``{`` is at ``start - 1``."""
    depth = 1
    for match in re.finditer(r"[{}]", text[start:]):
        depth += 1 if match.group() == "{" else -1
        if depth == 0:
            return start + match.end()
    raise ValueError("BIF text has an unclosed '{'")


def parse_bif_structure(text: str) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """Variables and parent lists of a network in BIF (Bayesian Interchange Format) text.

    Only the structure is read: ``variable NAME { ... }`` declares a node and
    ``probability ( CHILD | PARENT, ... ) { ... }`` (or ``( CHILD PARENT ... )``) gives its
    parents; state lists, tables and properties are skipped. Comments (``//``, ``/* */``) are
    ignored.

    Returns
    -------
    names : tuple of str
        Variables in declaration order.
    parents : dict
        ``parents[child]`` in the order the file lists them.

    Raises
    ------
    ValueError
        On unparseable text, a variable declared twice, a probability block for an undeclared
        variable or with an undeclared parent, a variable with no or two probability blocks,
        a repeated parent, or a directed cycle.

    Examples
    --------
    >>> text = '''network demo { }
    ... variable rain { type discrete [ 2 ] { yes, no }; }
    ... variable wet { type discrete [ 2 ] { yes, no }; }
    ... probability ( rain ) { table 0.2, 0.8; }
    ... probability ( wet | rain ) { (yes) 0.9, 0.1; (no) 0.1, 0.9; }'''
    >>> parse_bif_structure(text)
    (('rain', 'wet'), {'rain': (), 'wet': ('rain',)})
    """
    if not isinstance(text, str):
        raise ValueError(f"BIF text must be a string, got {type(text).__name__}")
    text = _COMMENTS.sub(" ", text)
    names: list[str] = []
    headers: list[str] = []
    position = 0
    while text[position:].strip():
        match = _BLOCK.match(text, position)
        if match is None:
            snippet = text[position:].strip()[:40]
            raise ValueError(f"BIF text: expected a network, variable or probability block at {snippet!r}")
        keyword, header = match.group(1), match.group(2).strip()
        if keyword == "variable":
            if not _NAME.fullmatch(header):
                raise ValueError(f"BIF variable block has a malformed name {header!r}")
            names.append(header)
        elif keyword == "probability":
            headers.append(header)
        position = _block_end(text, match.end())
    if len(set(names)) != len(names):
        raise ValueError(f"BIF declares variables twice: {sorted({n for n in names if names.count(n) > 1})}")
    parents: dict[str, tuple[str, ...]] = {}
    for header in headers:
        if not (header.startswith("(") and header.endswith(")")):
            raise ValueError(f"BIF probability header must be '( child | parents )', got {header!r}")
        inner = header[1:-1]
        child_part, _, parent_part = inner.partition("|") if "|" in inner else (inner, "", "")
        tokens = _NAME.findall(child_part) + _NAME.findall(parent_part)
        if not tokens:
            raise ValueError(f"BIF probability header names no variable: {header!r}")
        child, listed = tokens[0], tuple(tokens[1:])
        unknown = sorted({child, *listed} - set(names))
        if unknown:
            raise ValueError(f"BIF probability block for {child!r} uses undeclared variables {unknown}")
        if child in parents:
            raise ValueError(f"BIF has two probability blocks for {child!r}")
        if len(set(listed)) != len(listed) or child in listed:
            raise ValueError(f"BIF probability block for {child!r} repeats a parent or lists the child: {listed}")
        parents[child] = listed
    missing = [name for name in names if name not in parents]
    if missing:
        raise ValueError(f"BIF variables without a probability block: {missing}")
    if not is_dag(_adjacency(tuple(names), [(p, c) for c, ps in parents.items() for p in ps])):
        raise ValueError("BIF network has a directed cycle")
    return tuple(names), {name: parents[name] for name in names}


def bn_structure(name: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """The DAG of a Bayesian network shipped with pgmpy (bnlearn repository), read from its BIF file.

    Parameters
    ----------
    name : str
        Network name, e.g. ``"asia"``, ``"sachs"``, ``"child"``, ``"insurance"``, ``"alarm"``
        (``available_real_datasets()["networks"]`` lists all).

    Returns
    -------
    adjacency : ndarray of int8, shape (d, d)
        ``adjacency[i, j] = 1`` for ``i -> j``.
    names : tuple of str
        Variables in the file's declaration order.

    Raises
    ------
    ImportError
        If pgmpy is not installed.
    ValueError
        For an unknown network name or a malformed file.
    """
    if not _package_dirs("pgmpy"):
        raise ImportError("Bayesian-network structures are read from the 'pgmpy' package, which is not installed; "
                          + _EXTRA_HINT.format(package="pgmpy"))
    files = _bif_files()
    path = files[check_choice(name, sorted(files), "network")]
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        names, parents = parse_bif_structure(handle.read())
    return _adjacency(names, [(p, c) for c, ps in parents.items() for p in ps]), names


# ---------------------------------------------------------------------------------------------
# semi-synthetic SCMs on real structures
# ---------------------------------------------------------------------------------------------

_SEMI_SYNTHETIC_KINDS: tuple[NodeRecipe, ...] = (
    NodeRecipe("linear", "gaussian", (0.5, 1.0)),
    NodeRecipe("mlp", "gaussian", (0.5, 1.0)),
    NodeRecipe("sigmoid", "gaussian", (0.3, 0.6), mechanism_config={"standardize_map": True}),
    NodeRecipe("quadratic", "gaussian", (0.3, 0.6), mechanism_config={"standardize_map": True}),
)
"""Node kinds of :func:`semi_synthetic_scm`, drawn uniformly per non-root node; the scalar maps
are standardised on the SCM's own distribution so deep networks neither explode nor saturate."""
_ROOT = NodeRecipe("linear", "gaussian", (1.0, 1.0))


def _semi_synthetic_recipe(node: int, n_parents: int, rng: np.random.Generator) -> NodeRecipe:
    if n_parents == 0:
        return _ROOT
    return _SEMI_SYNTHETIC_KINDS[int(rng.integers(len(_SEMI_SYNTHETIC_KINDS)))]


def semi_synthetic_scm(name: str, seed: int | np.random.SeedSequence) -> SCM:
    """An anonymised SCM on the structure of a published Bayesian network.

    The network's DAG (:func:`bn_structure`) gets causal_gym mechanisms: roots are N(0, 1);
    every other node draws one of linear, MLP, standardised sigmoid or standardised quadratic
    with Gaussian noise. Node order is a seeded random permutation of the file's order, and no
    names are kept, so an agent sees neither the variables' meaning nor an order that often
    follows the causal one.

    Parameters
    ----------
    name : str
        Network name (see :func:`bn_structure`).
    seed : int or SeedSequence
        Seeds both the permutation and the mechanisms (an int gives the same SCM on every call;
        a SeedSequence is spawned from, as numpy does).

    Returns
    -------
    SCM
        ``scm.graph`` is the permuted DAG.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        raise ValueError(f"seed must be a non-negative int or a SeedSequence, got {seed!r}")
    if not isinstance(seed, np.random.SeedSequence) and seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    adjacency, _ = bn_structure(name)
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(int(seed))
    permutation_seed, mechanism_seed = sequence.spawn(2)
    order = np.random.default_rng(permutation_seed).permutation(adjacency.shape[0])
    graph = adjacency[np.ix_(order, order)]
    return SCM.random(graph, _semi_synthetic_recipe, rng=np.random.default_rng(mechanism_seed))
