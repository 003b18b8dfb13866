"""Recognising a public card in a private pack by its content, whatever it is called.

A seal cannot hide a public card (:mod:`.card_pack`): an agent that matches the data it is shown
to data drawn from the open library finds the card and reads its graph. Comparing names misses a
copy that renames its variables, lists them in another order or edits a coefficient, so a pack
card is compared with every public card by what it computes:

- **Mechanisms.** Each computed variable (one with an equation) gets a canonical form of its
  equation, two generations deep: the equation with every parent replaced by the parent's own
  canonical form, whose parents are replaced in turn, down to roots, which are all alike. The
  forms ignore names, the order of variables and edges, and every constant: numbers and named
  constants are one symbol, a constant term of a sum or factor of a product is dropped, a sign
  or a constant exponent is not told apart (``a - b`` is ``a + b``, ``a / b`` is ``a * b ** -1``
  and ``a * sqrt(b)``), sums, products, ``min`` and ``max`` are sorted. Noise, roles, ranges and
  root distributions are left out: they are constants too. A card *copies* a public card when
  at least half of the computed variables of the smaller of the two have a form of the other's
  (compared as multisets), three of them at least of the second generation (an input of theirs
  is itself computed; first-generation forms such as "a ratio of two roots" are too common to
  count alone). Between two different public cards at most 40% match, one of them at most of the
  second generation.
- **Graph.** A card also copies a public card when the graph among its computed variables is
  the public card's, up to names and order: rewriting every equation, adding inputs with a
  negligible effect or promoting a constant to a root leaves it unchanged. No two public cards
  share it.

So renamed, reordered, lightly edited cards (a coefficient, a range, an extra or unused
variable, a dropped or added readout, an algebraic rewrite) are refused, and a card of one's own
is not; a card that changes both the graph and many equations of a public card is new to this
test, as it is to an agent matching data.
"""

from __future__ import annotations

import ast
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["CardShape", "card_shape", "public_shapes", "copied_public_card", "MECHANISM_SHARE", "MIN_SPECIFIC"]

MECHANISM_SHARE = 0.5
"""A card copies a public card when this share of the smaller card's computed variables have a mechanism of the other."""

MIN_SPECIFIC = 3
"""... of which at least this many are of the second generation (an input of theirs is computed)."""

_DEPTH = 2
_CONSTANT = "c"
_ROOT = "root"


@dataclass(frozen=True)
class CardShape:
    """What a card computes, with names, order and constants left out.

    Attributes
    ----------
    name : str
        The card's name (to name a public card in a message).
    mechanisms : Counter
        Canonical form of each computed variable's equation, two generations deep.
    specific : Counter
        The same for the computed variables with a computed input.
    computed : int
        Number of computed variables.
    edges : tuple of (int, int)
        The graph among the computed variables (indices into them).
    """

    name: str
    mechanisms: Counter[str] = field(repr=False)
    specific: Counter[str] = field(repr=False)
    computed: int
    edges: tuple[tuple[int, int], ...] = field(repr=False)


def _terms(node: ast.AST, operators: tuple[type, ...]) -> list[ast.AST]:
    """The operands of a chain of ``operators`` (signs dropped)."""
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, operators):
        return _terms(node.left, operators) + _terms(node.right, operators)
    return [node]


def _factors(node: ast.AST, inverse: bool = False) -> list[tuple[ast.AST, bool]]:
    """The factors of a product and quotient chain, each with whether it divides."""
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left, inverse) + _factors(node.right, inverse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _factors(node.left, inverse) + _factors(node.right, not inverse)
    return [(node, inverse)]


def _joined(operator: str, parts: list[str]) -> str:
    parts = [part for part in parts if part != _CONSTANT]
    if not parts:
        return _CONSTANT
    return parts[0] if len(parts) == 1 else f"{operator}({','.join(sorted(parts))})"


def _power(base: str, exponent: str) -> str:
    if exponent == _CONSTANT:
        return _CONSTANT if base == _CONSTANT else f"^({base})"
    return f"pow({base},{exponent})"


def canonical(node: ast.AST, leaves: Mapping[str, str]) -> str:
    """The canonical form of a whitelisted expression (:mod:`.expressions`); a name in ``leaves`` stands
    for its form there, any other name (a constant) for the constant symbol.

    Examples
    --------
    >>> form = lambda text: canonical(ast.parse(text, mode="eval").body, {"a": "A", "b": "B"})
    >>> form("a / b - 3") == form("-(b ** -1.5) * 2 * a + 1") == "*(A,^(B))"
    True
    >>> form("a * b"), form("max(b, a * R)"), form("log(b / 1000)")
    ('*(A,B)', 'max(A,B)', 'log(B)')
    """
    if isinstance(node, ast.Constant):
        return _CONSTANT
    if isinstance(node, ast.Name):
        return leaves.get(node.id, _CONSTANT)
    if isinstance(node, ast.UnaryOp):
        return canonical(node.operand, leaves)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _joined("+", [canonical(term, leaves) for term in _terms(node, (ast.Add, ast.Sub))])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        return _joined("*", [_power(form, _CONSTANT) if inverse else form
                             for form, inverse in ((canonical(factor, leaves), inverse)
                                                   for factor, inverse in _factors(node))])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(canonical(node.left, leaves), canonical(node.right, leaves))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        arguments = [canonical(argument, leaves) for argument in node.args]
        if all(argument == _CONSTANT for argument in arguments):
            return _CONSTANT
        if node.func.id == "sqrt":
            return _power(arguments[0], _CONSTANT)
        if node.func.id == "pow":
            return _power(*arguments)
        if node.func.id in ("min", "max"):
            arguments.sort()
        return f"{node.func.id}({','.join(arguments)})"
    raise ValueError(f"not a whitelisted expression node: {ast.dump(node)}")  # compile_scenario refused it before


def _digest(form: str) -> str:
    return form if len(form) <= 32 else hashlib.sha256(form.encode()).hexdigest()[:20]


def card_shape(card: Mapping[str, Any]) -> CardShape:
    """The :class:`CardShape` of a card that :func:`~.grounded.compile_scenario` accepts."""
    variables: Sequence[Mapping[str, Any]] = card["variables"]
    names = [variable["name"] for variable in variables]
    parents: dict[str, set[str]] = {name: set() for name in names}
    for edge in card["edges"]:
        parents[edge["target"]].add(edge["source"])
    equations = {variable["name"]: ast.parse(variable["equation"].strip(), mode="eval").body
                 for variable in variables if "equation" in variable}
    forms = {name: _ROOT for name in names}
    for depth in range(_DEPTH + 1):
        leaves = {name: (_ROOT if name not in equations else "p" if depth == 0 else forms[name]) for name in names}
        forms = {name: _digest(canonical(equations[name], leaves)) if name in equations else _ROOT for name in names}
    computed = [name for name in names if name in equations]
    index = {name: i for i, name in enumerate(computed)}
    specific = [name for name in computed if parents[name] & equations.keys()]
    edges = tuple(sorted((index[source], index[target]) for target in computed for source in parents[target]
                         if source in index))
    return CardShape(str(card["name"]), Counter(forms[name] for name in computed),
                     Counter(forms[name] for name in specific), len(computed), edges)


@lru_cache(maxsize=1)
def public_shapes() -> tuple[tuple[str, CardShape], ...]:
    """(source, shape) of every public card, formula and semantic (computed once per process)."""
    from causal_gym.envs.arena.card_pack import public_cards

    return tuple((source, card_shape(card)) for source in ("formula", "semantic")
                 for card in public_cards(source).values())


def _same_graph(a: CardShape, b: CardShape) -> bool:
    if a.computed != b.computed or len(a.edges) != len(b.edges):
        return False
    import networkx as nx

    graphs = []
    for shape in (a, b):
        graph = nx.DiGraph()
        graph.add_nodes_from(range(shape.computed))
        graph.add_edges_from(shape.edges)
        graphs.append(graph)
    return bool(nx.faster_could_be_isomorphic(*graphs) and nx.is_isomorphic(*graphs))


def copied_public_card(card: Mapping[str, Any],
                       library: Iterable[tuple[str, CardShape]] | None = None) -> str | None:
    """Why ``card`` (valid, see :func:`card_shape`) is a copy of a public card, naming it; None when it is not.

    ``library`` is the (source, shape) of the cards to compare with, by default :func:`public_shapes`.
    """
    shape = card_shape(card)
    for source, public in public_shapes() if library is None else library:
        shared = sum((shape.mechanisms & public.mechanisms).values())
        specific = sum((shape.specific & public.specific).values())
        smaller = min(shape.computed, public.computed)
        if smaller and shared >= MECHANISM_SHARE * smaller and specific >= MIN_SPECIFIC:
            return (f"{shared} of its {shape.computed} computed variables compute what variables of the public "
                    f"{source} card {public.name!r} compute (the same equations two generations deep, up to names, "
                    "order and constants)")
        if _same_graph(shape, public):
            return (f"the graph among its computed variables is that of the public {source} card {public.name!r} "
                    "(up to names and order)")
    return None
