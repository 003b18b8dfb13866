"""Heuresis instances: anonymous standardised data of a hidden SCM, and the hidden record.

An instance (paper §4.1, Appendix C) is drawn in four steps, each from its own random stream:

1. graph -- Erdős–Rényi or Barabási–Albert with probability 1/2 each (the paper names both priors
   and no mixing weight), over a uniformly random causal order, expected degree 2 (about ``d``
   edges; :mod:`causal_gym.scm.graph_priors`);
2. SCM -- each variable draws its mechanism from the family (:mod:`.families`);
3. sample -- ``n`` observational rows, every column standardised to mean 0 and variance 1
   (removes varsortability);
4. permutation -- columns are put in random order, so neither names nor positions say anything:
   column ``k`` of ``data`` is SCM node ``permutation[k]``.

Seeds. Instance ``index`` of a family and split is generated from
``np.random.SeedSequence([master_seed, family_id, split_id, index])`` whose four children
(``spawn(4)``, in the order above) feed the four steps. ``family_id`` is the position in
:data:`FAMILIES`, ``split_id`` that in :data:`SPLITS`. Distinct entropy tuples give independent
streams, so dev, test and train are disjoint by construction, and the same arguments always give
bit-identical data. The paper seals and rotates its test seeds. Here ``master_seed`` is a keyword
(default :data:`MASTER_SEED`), so a rotated test set is one argument away, and ``seal=`` (a
:class:`causal_gym.seal.Seal`) replaces the entropy by ``seal.entropy("heuresis", *entropy)``:
the sealed splits have the same sizes and design, but no one without the secret can generate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from causal_gym._validation import check_choice, check_count, check_real
from causal_gym.envs.heuresis.families import FAMILIES, recipe_chooser
from causal_gym.graphs import dag_to_cpdag
from causal_gym.scm import SCM, barabasi_albert_dag, erdos_renyi_dag, standardize
from causal_gym.seal import Seal, keyed_entropy

__all__ = [
    "MASTER_SEED",
    "DEFAULT_D",
    "DEFAULT_N",
    "DEFAULT_EXPECTED_DEGREE",
    "SPLITS",
    "GRAPH_PRIORS",
    "HiddenRecord",
    "HeuresisInstance",
    "make_instance",
    "split_size",
    "instance_seed",
]

MASTER_SEED = 4_675_061_318
"""Master seed of the released instances: an arbitrary constant, fixed once and never tuned."""

DEFAULT_D = 10
DEFAULT_N = 600
DEFAULT_EXPECTED_DEGREE = 2.0
"""The paper's instance shape (§5): d variables, n rows, expected degree of the graph prior. Every
Heuresis entry point defaults to it (:func:`make_instance`, the env, the references), and reports
read it for runs that left it unset."""

SPLITS: Mapping[str, int | None] = MappingProxyType({"dev": 100, "test": 32, "train": None})
"""Instances per family and split (paper §5: 100 development, 32 test); train is an unbounded stream."""

GRAPH_PRIORS = ("erdos_renyi", "barabasi_albert")
"""Graph priors, each drawn with probability 1/2 per instance."""

_PRIOR_FUNCTIONS = {"erdos_renyi": erdos_renyi_dag, "barabasi_albert": barabasi_albert_dag}


def split_size(split: str) -> int | None:
    """Number of instances per family in ``split`` (None for the unbounded ``"train"`` stream)."""
    return SPLITS[check_choice(split, SPLITS, "split")]


def instance_seed(family: str, split: str, index: int, master_seed: int = MASTER_SEED) -> tuple[int, int, int, int]:
    """The SeedSequence entropy ``(master_seed, family_id, split_id, index)`` of an instance.

    Raises
    ------
    ValueError
        Unknown family or split, a negative index, or an index beyond the split's size.
    """
    family = check_choice(family, FAMILIES, "family")
    size = split_size(split)
    index = check_count(index, "index", minimum=0)
    if size is not None and index >= size:
        raise ValueError(f"index {index} is out of range for split {split!r} (valid: 0..{size - 1})")
    master = check_count(master_seed, "master_seed", minimum=0)
    return (master, FAMILIES.index(family), list(SPLITS).index(split), index)


@dataclass(frozen=True, eq=False)
class HiddenRecord:
    """The ground truth of an instance; nothing in it may reach an agent before it submits.

    Attributes
    ----------
    dag : ndarray of int8, shape (d, d)
        True DAG in the column order of the instance's data.
    cpdag : ndarray of int8, shape (d, d)
        CPDAG of ``dag``.
    scm : str
        The SCM as JSON (:meth:`causal_gym.scm.SCM.to_json`), in its own node order.
    permutation : ndarray of int64, shape (d,)
        Column ``k`` of the data is SCM node ``permutation[k]``, so ``dag == scm_graph[perm][:, perm]``.
    graph_prior : str
        ``"erdos_renyi"`` or ``"barabasi_albert"``.
    """

    dag: np.ndarray
    cpdag: np.ndarray
    scm: str
    permutation: np.ndarray
    graph_prior: str

    def __post_init__(self) -> None:
        for array in (self.dag, self.cpdag, self.permutation):
            array.flags.writeable = False


@dataclass(frozen=True, eq=False)
class HeuresisInstance:
    """One Heuresis instance: what the agent sees (``data``) and the hidden record.

    Attributes
    ----------
    family, split : str
        Mechanism family and split (``"dev"``, ``"test"`` or ``"train"``).
    index : int
        Position in the split.
    seed : tuple of int
        The public SeedSequence entropy ``(master_seed, family_id, split_id, index)``.
    seal : str or None
        Fingerprint of the seal the instance was generated under (None: open).
    d, n : int
        Variables and rows.
    expected_degree : float
        Density of the graph prior.
    data : ndarray of float64, shape (n, d)
        Standardised columns (mean 0, variance 1) in random order; read-only.
    hidden : HiddenRecord
        The ground truth.
    """

    family: str
    split: str
    index: int
    seed: tuple[int, int, int, int]
    seal: str | None
    d: int
    n: int
    expected_degree: float
    data: np.ndarray
    hidden: HiddenRecord

    def __post_init__(self) -> None:
        self.data.flags.writeable = False

    @property
    def key(self) -> dict[str, object]:
        """Everything the instance is a function of (used in cache keys; the seal by its fingerprint)."""
        key: dict[str, object] = {
            "family": self.family,
            "split": self.split,
            "index": self.index,
            "seed": list(self.seed),
            "d": self.d,
            "n": self.n,
            "expected_degree": self.expected_degree,
        }
        if self.seal is not None:
            key["seal"] = self.seal
        return key


def make_instance(
    family: str,
    split: str = "dev",
    index: int = 0,
    d: int = DEFAULT_D,
    n: int = DEFAULT_N,
    expected_degree: float = DEFAULT_EXPECTED_DEGREE,
    *,
    master_seed: int = MASTER_SEED,
    seal: Seal | None = None,
) -> HeuresisInstance:
    """Generate instance ``index`` of ``family`` in ``split`` (see the module docstring).

    Parameters
    ----------
    family : str
        One of :data:`~causal_gym.envs.heuresis.families.FAMILIES`.
    split : {"dev", "test", "train"}
        ``dev`` has 100 instances, ``test`` 32; ``train`` is unbounded.
    index : int
        Position in the split.
    d : int
        Number of variables (>= 2).
    n : int
        Number of rows (>= 3).
    expected_degree : float
        Expected degree of the graph prior (2 gives about ``d`` edges).
    master_seed : int
        Master seed; change it to rotate every split.
    seal : Seal, optional
        Key the instance stream with a secret (module docstring); None plays the open splits.

    Returns
    -------
    HeuresisInstance

    Raises
    ------
    ValueError
        Unknown family or split, an index out of the split's range, or bad sizes.

    Examples
    --------
    >>> inst = make_instance("wild", "test", 3, d=6, n=200)
    >>> inst.data.shape, inst.hidden.dag.shape
    ((200, 6), (6, 6))
    >>> bool(np.array_equal(inst.data, make_instance("wild", "test", 3, d=6, n=200).data))
    True
    """
    seed = instance_seed(family, split, index, master_seed)
    d = check_count(d, "d", minimum=2)
    n = check_count(n, "n", minimum=3)
    expected_degree = check_real(expected_degree, "expected_degree", minimum=0.0)
    if seal is not None and not isinstance(seal, Seal):
        raise ValueError(f"seal must be a causal_gym.seal.Seal or None, got {type(seal).__name__}")
    entropy = keyed_entropy(seal, "heuresis", seed)
    graph_ss, scm_ss, sample_ss, permutation_ss = np.random.SeedSequence(entropy).spawn(4)
    graph_rng = np.random.default_rng(graph_ss)
    prior = GRAPH_PRIORS[int(graph_rng.integers(len(GRAPH_PRIORS)))]
    graph = _PRIOR_FUNCTIONS[prior](d, expected_degree, rng=graph_rng)
    scm = SCM.random(graph, recipe_chooser(family), rng=scm_ss)
    data, _, _ = standardize(scm.sample(n, rng=sample_ss))
    permutation = np.random.default_rng(permutation_ss).permutation(d)
    dag = np.ascontiguousarray(graph[np.ix_(permutation, permutation)])
    hidden = HiddenRecord(
        dag=dag,
        cpdag=dag_to_cpdag(dag),
        scm=scm.to_json(),
        permutation=permutation,
        graph_prior=prior,
    )
    return HeuresisInstance(
        family=family,
        split=split,
        index=index,
        seed=seed,
        seal=None if seal is None else seal.fingerprint,
        d=d,
        n=n,
        expected_degree=expected_degree,
        data=np.ascontiguousarray(data[:, permutation]),
        hidden=hidden,
    )
