"""Heuresis analyses of finished episodes: behaviour statistics and trace attribution (§4.3, §5.3).

Pure functions over what an episode leaves behind: its call record (``env.unwrapped.record()``,
or the list of call dicts a run store keeps), its final info (``"completed_graph"`` and
``"scores"``, which hold the ``algorithm_slots`` label -> menu algorithm map and the instance's
family) and, where truth is needed, the hidden DAG passed in explicitly. They run after the
episode, never inside it, so nothing here can leak truth to an agent.

Behaviour statistics (§4.3):

- :func:`shortcut` / :func:`shortcut_rate`: the final graph is within SHD 1 of the output of the
  first call to a PC variant (``pc_fisherz`` or ``pc_kci``);
- :func:`distinct_algorithms`: how many menu algorithms the agent ran;
- :func:`tool_choice_mutual_information`: dependence between the family and the tools called.

Trace attribution (§5.3, Table 4):

- :func:`k_vote_merge`, :func:`merge_star`, :func:`best_k_merge`: the k-vote merge of the
  outputs an agent called, with ``k`` chosen per family in hindsight. Table 4's caption adds the
  voted edges to PC-KCI's output; pass that output as ``base`` (and leave it out of the voters)
  for that variant. Without ``base`` a pair is an edge iff at least ``k`` outputs have it.
- :func:`unsupported_restorations`: true edges an agent restored that no called algorithm proposed.

A record's algorithm outputs are read back from the ``run_algorithm`` calls that returned a graph
(:func:`algorithm_outputs`); refused or failed calls ran nothing and are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from causal_gym._validation import check_adjacency, check_count
from causal_gym.graphs import meek
from causal_gym.harness.record import CallRecord
from causal_gym.harness.working_graph import parse_edge_list
from causal_gym.metrics import adjacency_scores, shd

__all__ = [
    "PC_VARIANTS",
    "MergeEpisode",
    "algorithm_outputs",
    "shortcut",
    "shortcut_rate",
    "distinct_algorithms",
    "mutual_information_bits",
    "tool_choice_mutual_information",
    "k_vote_merge",
    "merge_star",
    "best_k_merge",
    "unsupported_restorations",
]

PC_VARIANTS = ("pc_fisherz", "pc_kci")
"""Menu algorithms that count as "a PC variant" for the shortcut statistic."""

Record = Iterable[CallRecord | Mapping[str, Any]]
"""A call record: an ``EpisodeLog``, a list of ``CallRecord`` or their ``to_dict()`` forms."""

Episode = tuple[Record, Mapping[str, Any]]
"""One finished episode: its call record and its final info."""


class MergeEpisode(NamedTuple):
    """Inputs of the merge for one episode.

    Attributes
    ----------
    outputs : sequence of (d, d) arrays
        Graphs of the algorithms the agent called (the voters).
    true_dag : (d, d) array
        The hidden DAG.
    base : (d, d) array or None
        Graph whose edges the merge keeps whatever the votes (PC-KCI's output in Table 4).
    """

    outputs: Sequence[np.ndarray]
    true_dag: np.ndarray
    base: np.ndarray | None = None


# ---------------------------------------------------------------------------------------------
# reading records
# ---------------------------------------------------------------------------------------------


def _call(call: CallRecord | Mapping[str, Any]) -> tuple[str | None, bool, Mapping[str, Any]]:
    """``(tool, ok, data)`` of a call given as a ``CallRecord`` or its ``to_dict()``."""
    if isinstance(call, CallRecord):
        return call.tool, call.ok, call.data
    if isinstance(call, Mapping) and {"tool", "ok"} <= set(call):
        return call["tool"], bool(call["ok"]), call.get("data") or {}
    raise ValueError(f"a record entry must be a CallRecord or its to_dict() form, got {call!r:.80}")


def _slots(final_info: Mapping[str, Any]) -> Mapping[str, str]:
    try:
        return final_info["scores"]["algorithm_slots"]
    except (KeyError, TypeError):
        raise ValueError("final_info must be a finished episode's info with scores['algorithm_slots']") from None


def _completed_graph(final_info: Mapping[str, Any]) -> np.ndarray:
    if "completed_graph" not in final_info:
        raise ValueError("final_info must be a finished episode's info with a 'completed_graph'")
    return check_adjacency(final_info["completed_graph"], "final_info['completed_graph']")


def _family(final_info: Mapping[str, Any]) -> str:
    try:
        return str(final_info["scores"]["instance"]["family"])
    except (KeyError, TypeError):
        raise ValueError("final_info must be a finished episode's info with scores['instance']['family']") from None


def _called_labels(record: Record) -> Iterable[tuple[str, str]]:
    """``(label, edge list)`` of every ``run_algorithm`` call that returned a graph, in call order."""
    for call in record:
        tool, ok, data = _call(call)
        if tool == "run_algorithm" and ok and "edges" in data:
            yield str(data["algorithm"]), str(data["edges"])


def algorithm_outputs(record: Record, final_info: Mapping[str, Any]) -> list[tuple[str, np.ndarray]]:
    """The menu algorithms the agent ran, as ``(algorithm, graph)`` in order of first call.

    Labels are mapped to menu algorithms through the final info's ``algorithm_slots``; a repeated
    call of one label returns the same cached output and is listed once.

    Examples
    --------
    >>> record = [{"tool": "run_algorithm", "ok": True, "data": {"algorithm": "B", "edges": "X0 -> X1"}}]
    >>> info = {"completed_graph": [[0, 1], [0, 0]], "scores": {"algorithm_slots": {"B": "ges"}}}
    >>> [(name, g.tolist()) for name, g in algorithm_outputs(record, info)]
    [('ges', [[0, 1], [0, 0]])]
    """
    slots = _slots(final_info)
    d = _completed_graph(final_info).shape[0]
    outputs: dict[str, np.ndarray] = {}
    for label, edges in _called_labels(record):
        if label not in slots:
            raise ValueError(f"algorithm label {label!r} is not in final_info's algorithm_slots {sorted(slots)}")
        outputs.setdefault(slots[label], parse_edge_list(edges, d))
    return list(outputs.items())


# ---------------------------------------------------------------------------------------------
# behaviour statistics (§4.3)
# ---------------------------------------------------------------------------------------------


def shortcut(record: Record, final_info: Mapping[str, Any]) -> bool:
    """Whether the final graph is within SHD 1 of the output of the first call to a PC variant.

    The final graph is the Meek-completed submission (``final_info["completed_graph"]``); the PC
    output is Meek-completed too, so that submitting it verbatim is always distance 0.

    Returns
    -------
    bool
        False when the agent called no PC variant (:data:`PC_VARIANTS`).
    """
    final = _completed_graph(final_info)
    first_pc = next((g for name, g in algorithm_outputs(record, final_info) if name in PC_VARIANTS), None)
    return first_pc is not None and shd(meek(first_pc), final) <= 1


def shortcut_rate(episodes: Iterable[Episode]) -> float:
    """Share of episodes ``(record, final_info)`` that take the :func:`shortcut`."""
    flags = [shortcut(record, info) for record, info in episodes]
    if not flags:
        raise ValueError("shortcut_rate needs at least one episode")
    return float(np.mean(flags))


def distinct_algorithms(record: Record) -> int:
    """Number of distinct algorithm labels the agent ran (refused calls ran nothing).

    Labels are a permutation of the menu within an episode, so this is the number of distinct
    menu algorithms and needs no final info.
    """
    return len({label for label, _ in _called_labels(record)})


def mutual_information_bits(xs: Sequence[Any], ys: Sequence[Any]) -> float:
    """Plug-in mutual information, in bits, of the empirical joint distribution of paired labels.

    ``I = sum_{x,y} p(x, y) log2(p(x, y) / (p(x) p(y)))`` with every ``p`` a relative frequency
    of the pairs ``(xs[k], ys[k])``. The plug-in estimate is biased upwards on small samples
    (roughly ``(|X| - 1)(|Y| - 1) / (2 N ln 2)`` bits); it is what the paper's statistic reports.
    """
    if len(xs) != len(ys):
        raise ValueError(f"xs and ys must pair up, got {len(xs)} and {len(ys)} labels")
    if not len(xs):
        raise ValueError("mutual information needs at least one pair")
    _, x = np.unique(np.asarray(xs, dtype=object).astype(str), return_inverse=True)
    _, y = np.unique(np.asarray(ys, dtype=object).astype(str), return_inverse=True)
    joint = np.zeros((x.max() + 1, y.max() + 1))
    np.add.at(joint, (x, y), 1.0)
    joint /= joint.sum()
    independent = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
    seen = joint > 0
    return max(0.0, float(np.sum(joint[seen] * np.log2(joint[seen] / independent[seen]))))


def tool_choice_mutual_information(episodes: Iterable[Episode]) -> float:
    """Tool-choice dependence: mutual information (bits) between the family and the tool called.

    The sample is one ``(family, tool)`` pair per recorded call over all episodes
    ``(record, final_info)``, every tool included (``submit``, ``set_edge`` and failed calls too;
    a rejected call that named no tool is left out), and the estimate is the plug-in one of
    :func:`mutual_information_bits`. Episodes with many calls therefore weigh more. 0 means
    the agents pick tools the same way on every family; the maximum, ``H(family)``, means the tool
    called tells the family.
    """
    families: list[str] = []
    tools: list[str] = []
    for record, info in episodes:
        family = _family(info)
        for call in record:
            tool = _call(call)[0]
            if tool is not None:
                families.append(family)
                tools.append(tool)
    return mutual_information_bits(families, tools)


# ---------------------------------------------------------------------------------------------
# trace attribution (§5.3)
# ---------------------------------------------------------------------------------------------


def _skeletons(graphs: Sequence[np.ndarray], d: int | None, name: str) -> np.ndarray:
    """``(m, d, d)`` boolean stack of the graphs' adjacencies (``d`` is required when ``graphs`` is empty)."""
    checked = []
    for k, graph in enumerate(graphs):
        checked.append(check_adjacency(graph, f"{name}[{k}]", d=d))
        d = checked[-1].shape[0]
    if not checked:
        return np.zeros((0, d, d), dtype=bool)
    stack = np.stack(checked).astype(bool)
    return stack | stack.transpose(0, 2, 1)


def k_vote_merge(graphs: Sequence[np.ndarray], k: int, base: np.ndarray | None = None) -> np.ndarray:
    """The k-vote merge: a pair is an undirected edge iff at least ``k`` of ``graphs`` have it adjacent.

    With ``base``, the result is ``base`` (orientations kept) with every pair it lacks that at
    least ``k`` graphs vote for added as an undirected edge, the merge of Table 4.

    Parameters
    ----------
    graphs : sequence of (d, d) arrays
        The voters (marks ignored); may be empty when ``base`` gives the size.
    k : int
        Votes needed, ``>= 1``; larger than ``len(graphs)`` adds nothing.
    base : (d, d) array, optional

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2
    >>> b = np.array([[0, 1, 1], [1, 0, 0], [0, 0, 0]])  # 0 -- 1, 0 -> 2
    >>> k_vote_merge([a, b], 2).tolist()
    [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    """
    k = check_count(k, "k", 1)
    base_graph = None if base is None else check_adjacency(base, "base")
    d = None if base_graph is None else base_graph.shape[0]
    if not len(graphs) and d is None:
        raise ValueError("k_vote_merge needs at least one graph or a base")
    votes = _skeletons(graphs, d, "graphs").sum(axis=0) >= k
    if base_graph is None:
        return votes.astype(np.int8)
    kept = base_graph.astype(bool)
    return (kept | (votes & ~(kept | kept.T))).astype(np.int8)


def merge_star(
    outputs: Sequence[np.ndarray],
    true_dag: np.ndarray,
    k_values: Iterable[int] | None = None,
    base: np.ndarray | None = None,
) -> dict[int, float]:
    """Adjacency F1 of the k-vote merge of one episode's called outputs, for each ``k``.

    The per-episode curve behind merge*: :func:`best_k_merge` averages it over a family's episodes
    and keeps the best ``k``. ``k_values`` defaults to ``1 .. len(outputs)`` (or ``(1,)`` with
    no output).

    Returns
    -------
    dict
        ``k`` -> adjacency F1 of ``k_vote_merge(outputs, k, base)`` against ``true_dag``.
    """
    truth = check_adjacency(true_dag, "true_dag")
    if base is not None:
        base = check_adjacency(base, "base", d=truth.shape[0])
    ks = range(1, max(len(outputs), 1) + 1) if k_values is None else [check_count(k, "k", 1) for k in k_values]
    if not ks:
        raise ValueError("k_values must hold at least one k")
    votes = _skeletons(outputs, truth.shape[0], "outputs").sum(axis=0)
    kept = np.zeros_like(truth, dtype=bool) if base is None else base.astype(bool)
    return {k: adjacency_scores(truth, (kept | (votes >= k)).astype(np.int8)).f1 for k in ks}


def best_k_merge(episodes_of_family: Sequence[MergeEpisode | tuple[Any, ...]]) -> tuple[int, float]:
    """merge* of one family: the ``k`` with the best mean adjacency F1 of the k-vote merge, in hindsight.

    Every episode is scored at ``k = 1 .. m``, ``m`` the most outputs any episode called (an
    episode with fewer voters gets no vote-added edge at a larger ``k``). Ties go to the smaller ``k``.

    Parameters
    ----------
    episodes_of_family : sequence of MergeEpisode
        ``(outputs, true_dag[, base])`` per episode of the family.

    Returns
    -------
    (k, mean adjacency F1)
    """
    cases = [MergeEpisode(*episode) for episode in episodes_of_family]
    if not cases:
        raise ValueError("best_k_merge needs at least one episode")
    ks = range(1, max(max(len(c.outputs) for c in cases), 1) + 1)
    curves = np.array([list(merge_star(c.outputs, c.true_dag, ks, c.base).values()) for c in cases])
    means = curves.mean(axis=0)
    best = int(np.argmax(means))
    return ks[best], float(means[best])


def unsupported_restorations(
    submitted: np.ndarray, pc_kci_graph: np.ndarray, called_outputs: Sequence[np.ndarray], true_dag: np.ndarray
) -> int:
    """True edges of the submitted graph that PC-KCI deleted and no called algorithm proposed.

    Counts unordered pairs adjacent in ``submitted`` and in ``true_dag``, not adjacent in
    ``pc_kci_graph`` and adjacent in none of ``called_outputs`` (edge marks ignored). Table 4
    reports this count over all true edges restored (``submitted & truth & ~pc_kci``).
    """
    truth = check_adjacency(true_dag, "true_dag")
    d = truth.shape[0]
    sub = check_adjacency(submitted, "submitted", d=d).astype(bool)
    pc = check_adjacency(pc_kci_graph, "pc_kci_graph", d=d).astype(bool)
    proposed = _skeletons(called_outputs, d, "called_outputs").any(axis=0)
    t = truth.astype(bool)
    unsupported = (sub | sub.T) & (t | t.T) & ~(pc | pc.T) & ~proposed
    return int(np.count_nonzero(np.triu(unsupported, 1)))
