"""How a hidden mechanism is drawn: the graph, then the equations."""


from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from causal_gym._validation import as_generator, check_choice, check_count
from causal_gym.envs.causalab.world.mechanism import (
    _POOL,
    AXIS_RANGE,
    BASE_RANGE,
    FREQ,
    KINDS,
    LINEAR_COEFFICIENTS,
    PROPERTIES,
    QUADRATIC_CURVATURES,
    QUADRATIC_FLOOR,
    Coefficient,
    LabSCM,
)


def _edge_bounds(n_nodes: int) -> tuple[int, int]:
    return n_nodes - 1, min(2 * n_nodes, n_nodes * (n_nodes - 1) // 2)


def sample_lab_graph(
    rng: np.random.Generator | int, n_nodes: int, freq_parent: bool = False
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Draw the node names and edges of a CausaLab graph.

    The generative story reproduces the statistics of the 950 released configs (see
    ``tests/test_causalab_world.py`` for the comparison): ``n - 1`` properties uniformly without
    replacement from the pool; an edge count ``E ~ U{n-1 .. min(2n, n(n-1)/2)}``; a uniformly
    random causal order of the properties with the frequency last (FreqParent: at a uniform
    position other than first); ``E`` of the forward pairs uniformly at random. Order and edges
    are redrawn, with ``E`` kept, until the frequency has a parent. Isolated and off-path
    nodes are allowed, as in the original.

    Returns
    -------
    properties : tuple of str
        Controllable names sorted alphabetically, then :data:`FREQ`.
    edges : tuple of (str, str)
    """
    rng = as_generator(rng)
    n = check_count(n_nodes, "n_nodes", minimum=2)
    if n > len(PROPERTIES) + 1:
        raise ValueError(f"n_nodes must be <= {len(PROPERTIES) + 1} (pool of {len(PROPERTIES)} properties), got {n}")
    # choosing indices draws exactly what choosing from the list of names would, without the string array
    names = [_POOL[k] for k in rng.choice(len(_POOL), size=n - 1, replace=False).tolist()]
    low, high = _edge_bounds(n)
    n_edges = int(rng.integers(low, high + 1))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    while True:
        order = [names[k] for k in rng.permutation(n - 1)]
        order.insert(int(rng.integers(1, n)) if freq_parent else n - 1, FREQ)
        chosen = [pairs[k] for k in rng.choice(len(pairs), size=n_edges, replace=False)]
        edges = tuple((order[i], order[j]) for i, j in chosen)
        if any(b == FREQ for _, b in edges):
            return (*sorted(names), FREQ), edges


def sample_equations(
    rng: np.random.Generator | int,
    properties: Sequence[str],
    edges: Sequence[tuple[str, str]],
    kind: str = "linear",
    freq_parent: bool = False,
) -> LabSCM:
    """Draw coefficients and intercepts for a fixed graph.

    Linear: coefficients uniform on :data:`LINEAR_COEFFICIENTS`, ``base_freq`` and hybrid bases
    integers in :data:`BASE_RANGE`. Quadratic (the paper's hard-quadratic family): per edge
    ``c2`` uniform on :data:`QUADRATIC_CURVATURES`, an axis ``a ~ U`` :data:`AXIS_RANGE` and
    ``c1 = -2 c2 a`` (6 decimals); a node's base is a floor from :data:`QUADRATIC_FLOOR` plus
    ``sum c2 a**2`` over its in-edges. Drawing the graph and the equations from separate streams
    lets the linear and quadratic suites share topologies, as the released ones do.
    """
    rng = as_generator(rng)
    kind = check_choice(kind, KINDS, "kind")
    edges = tuple((str(a), str(b)) for a, b in edges)
    hybrids = sorted({b for _, b in edges if b != FREQ})
    offset = dict.fromkeys((FREQ, *hybrids), 0.0)
    if kind == "linear":
        coefficients: tuple[Coefficient, ...] = tuple(float(c) for c in rng.choice(LINEAR_COEFFICIENTS, size=len(edges)))
        draws = rng.integers(BASE_RANGE[0], BASE_RANGE[1] + 1, size=len(hybrids) + 1).astype(float)
    else:
        c2 = rng.choice(QUADRATIC_CURVATURES, size=len(edges))
        axis = np.round(rng.uniform(*AXIS_RANGE, size=len(edges)), 6)
        coefficients = tuple((float(a), float(round(-2.0 * a * x, 6))) for a, x in zip(c2, axis))
        for (_, child), a, x in zip(edges, c2, axis):
            offset[child] += float(a * x * x)
        floors = np.array([QUADRATIC_FLOOR[FREQ]] + [QUADRATIC_FLOOR["hybrid"]] * len(hybrids))
        draws = rng.uniform(floors[:, 0], floors[:, 1])
    bases = {node: round(float(d) + offset[node], 6) for node, d in zip([FREQ, *hybrids], draws)}
    base_freq = bases.pop(FREQ)
    return LabSCM(tuple(properties), edges, kind, coefficients, base_freq, tuple(bases.items()), freq_parent)


def sample_lab_scm(
    rng: np.random.Generator | int, n_nodes: int, kind: str = "linear", freq_parent: bool = False
) -> LabSCM:
    """Draw a CausaLab SCM: :func:`sample_lab_graph` then :func:`sample_equations` on one stream.

    Reachability of the reactor target (<= :data:`MAX_TARGET`) depends on the reactor's draw, so
    it is enforced by :func:`make_episode`, which redraws the SCM and the reactor together.

    Examples
    --------
    >>> scm = sample_lab_scm(0, 4)
    >>> scm.n_nodes, scm.kind
    (4, 'linear')
    """
    rng = as_generator(rng)
    properties, edges = sample_lab_graph(rng, n_nodes, freq_parent)
    return sample_equations(rng, properties, edges, kind, freq_parent)
