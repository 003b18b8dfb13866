"""Library-level release checks for scenario cards: near-duplicate scenarios and repeated templates.

:func:`~causal_gym.envs.arena.grounded.compile_scenario` validates one card. The paper's release
gate (Appendix A.3) also looks across the pool: its diversity control removes "redundant graphs,
near-duplicate scenarios, repeated templates", and its anti-template checks block "duplicate
support topologies" and "slot-filled mechanism text". :func:`audit_library` runs those checks on a
set of cards, with the result type of the synthetic audits (:class:`~.audits.AuditResult`):

========================  ===========================================================================
check (code)              rule
========================  ===========================================================================
``unique_name``           no two cards share a name (case-insensitive)
``duplicate_topology``    no two cards have isomorphic graphs (the same structure with other labels)
``shared_variables``      no two cards share more than :data:`SHARED_VARIABLES_LIMIT` of their
                          variable names (Jaccard index of the name sets): one scenario re-skinned
``repeated_text``         no description, variable definition or edge rationale appears word for
                          word (case and spacing aside) in two different cards
========================  ===========================================================================

Repeating a short rationale inside one card ("demand adds" on three load edges) is allowed: the
template check is about text reused from scenario to scenario.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

import networkx as nx

from causal_gym.envs.arena.audits import AuditFailure, AuditResult

__all__ = ["LIBRARY_CHECKS", "SHARED_VARIABLES_LIMIT", "audit_library"]

LIBRARY_CHECKS = ("unique_name", "duplicate_topology", "shared_variables", "repeated_text")
"""The library checks, in the order they run."""

SHARED_VARIABLES_LIMIT = 0.25
"""Largest Jaccard index of two cards' variable-name sets (the authored library stays below 0.1)."""


def _graph(card: Mapping) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(v["name"] for v in card["variables"])
    graph.add_edges_from((e["source"], e["target"]) for e in card["edges"])
    return graph


def _invariant(graph: nx.DiGraph) -> tuple:
    """Cheap isomorphism invariant: sizes and the sorted (in, out) degree pairs."""
    return (graph.number_of_nodes(), graph.number_of_edges(),
            tuple(sorted((graph.in_degree(n), graph.out_degree(n)) for n in graph)))


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _texts(card: Mapping) -> set[str]:
    texts = {_normal(card["description"])}
    texts |= {_normal(v["definition"]) for v in card["variables"]}
    texts |= {_normal(e["rationale"]) for e in card["edges"]}
    return texts


def audit_library(cards: Iterable[Mapping]) -> AuditResult:
    """Run the library checks (module docstring) on scenario cards.

    Parameters
    ----------
    cards : iterable of ScenarioSpec
        Cards that each compile (:func:`~causal_gym.envs.arena.grounded.compile_scenario`); the
        checks read their names, variables, edges and texts only.

    Returns
    -------
    AuditResult
        One failure per offending pair of cards (``items`` holds the two names) or, for
        ``repeated_text``, per repeated text (``items``: the cards that use it).

    Examples
    --------
    >>> a = {"name": "a", "description": "one row", "variables": [
    ...     {"name": "x", "definition": "cause"}, {"name": "y", "definition": "effect"}],
    ...     "edges": [{"source": "x", "target": "y", "rationale": "x drives y"}]}
    >>> b = {**a, "name": "b", "description": "another row",
    ...      "variables": [{"name": "u", "definition": "u"}, {"name": "v", "definition": "v"}],
    ...      "edges": [{"source": "u", "target": "v", "rationale": "u drives v"}]}
    >>> audit_library([a, b]).reasons
    ('duplicate_topology',)
    """
    cards = list(cards)
    failures: list[AuditFailure] = []
    seen: dict[str, str] = {}
    for card in cards:
        key = card["name"].lower()
        if key in seen:
            failures.append(AuditFailure("unique_name", f"two cards are named {card['name']!r}", (seen[key], card["name"])))
        seen[key] = card["name"]
    graphs = [_graph(card) for card in cards]
    invariants = [_invariant(graph) for graph in graphs]
    for i, k in itertools.combinations(range(len(cards)), 2):
        if invariants[i] == invariants[k] and nx.is_isomorphic(graphs[i], graphs[k]):
            pair = (cards[i]["name"], cards[k]["name"])
            failures.append(AuditFailure("duplicate_topology", f"{pair[0]} and {pair[1]} have isomorphic graphs", pair))
    names = [{v["name"] for v in card["variables"]} for card in cards]
    for i, k in itertools.combinations(range(len(cards)), 2):
        shared = len(names[i] & names[k]) / len(names[i] | names[k])
        if shared > SHARED_VARIABLES_LIMIT:
            pair = (cards[i]["name"], cards[k]["name"])
            failures.append(AuditFailure(
                "shared_variables", f"{pair[0]} and {pair[1]} share {shared:.0%} of their variable names", pair))
    users: dict[str, list[str]] = defaultdict(list)
    for card in cards:
        for text in _texts(card):
            users[text].append(card["name"])
    for text, owners in users.items():
        if len(owners) > 1:
            failures.append(AuditFailure("repeated_text", f"{text[:60]!r} appears in {len(owners)} cards", tuple(owners)))
    return AuditResult(LIBRARY_CHECKS, tuple(failures))
