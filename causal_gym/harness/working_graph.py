"""The working graph: one relation per unordered pair, edge-list text in and out, and renderings.

An agent edits the working graph one pair at a time and finally submits it, or an edge list. This
module holds the pure functions behind that: reading and setting the relation of a pair, the
tolerant parser of agents' final answers (:func:`parse_edge_list`) and its inverse
(:func:`format_edge_list`), and the text and RGB renderings used by ``env.render()``.

Graphs use the causal_gym encoding (see :mod:`causal_gym.graphs`). Variables are named
``X0 .. X{d-1}`` after their column index; :func:`variable_name` and :func:`variable_index`
convert between the two, and every tool argument naming a variable goes through them.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from causal_gym._validation import check_adjacency, check_choice, check_count, check_node

__all__ = [
    "RELATIONS",
    "variable_name",
    "variable_index",
    "relation_of",
    "set_relation",
    "parse_edge_list",
    "format_edge_list",
    "render_ansi",
    "render_rgb",
]

RELATIONS = ("none", "undirected", "forward", "backward")
"""Relations of a pair ``(x, y)``: no edge, ``x -- y``, ``x -> y``, ``y -> x``."""

_ARROWS = {
    "<-->": "undirected",
    "<->": "undirected",
    "↔": "undirected",
    "-->": "forward",
    "->": "forward",
    "→": "forward",
    "<--": "backward",
    "<-": "backward",
    "←": "backward",
    "--": "undirected",
    "—": "undirected",
    "–": "undirected",
    "-": "undirected",
}
# Dashes also join words in prose ("well-known", "the answer — as shown — is"); a dash between two
# tokens that are not both variables is read as prose, while an arrow there is an error.
_DASHES = frozenset({"--", "—", "–", "-"})
_ARROW_RE = "|".join(re.escape(a) for a in sorted(_ARROWS, key=len, reverse=True))
_NAME_RE = r"(?<![\w.])(?:[A-Za-z_]\w*|\d+)(?!\w)"
_CHAIN = re.compile(rf"{_NAME_RE}(?:[ \t]*(?:{_ARROW_RE})[ \t]*{_NAME_RE})+")
_TOKEN = re.compile(rf"{_NAME_RE}|{_ARROW_RE}")
_VARIABLE = re.compile(r"[Xx](\d+)|(\d+)")
_EMPTY_ANSWERS = frozenset({"", "none", "empty", "noedges", "emptygraph", "edges:", "edges:none", "[]", "{}"})


def variable_name(index: int) -> str:
    """Name of the variable in column ``index`` (``"X3"`` for 3)."""
    return f"X{index}"


def variable_index(token: object, d: int) -> int:
    """Column index of a variable given as ``"X3"``, ``"x3"``, ``"3"`` or the integer 3.

    Raises
    ------
    ValueError
        If ``token`` names no variable among ``X0 .. X{d-1}`` (the message lists the valid range).
    """
    if isinstance(token, str):
        match = _VARIABLE.fullmatch(token.strip())
        if match is None:
            raise ValueError(f"unknown variable {token!r} (variables are X0..X{d - 1})")
        index = int(match.group(1) or match.group(2))
    elif isinstance(token, (int, np.integer)) and not isinstance(token, (bool, np.bool_)):
        index = int(token)
    else:
        raise ValueError(f"a variable must be a name like 'X0' or an integer index, got {token!r}")
    if not 0 <= index < d:
        raise ValueError(f"unknown variable {token!r} (variables are X0..X{d - 1})")
    return index


def _pair(A: object, x: object, y: object) -> tuple[np.ndarray, int, int]:
    a = check_adjacency(A, "A")
    d = a.shape[0]
    i, j = check_node(x, d, "x"), check_node(y, d, "y")
    if i == j:
        raise ValueError(f"x and y must differ, got {i} twice")
    return a, i, j


def relation_of(A: np.ndarray, x: int, y: int) -> str:
    """The relation of the pair ``(x, y)`` in ``A``: one of :data:`RELATIONS`.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[0, 1], [0, 0]])  # X0 -> X1
    >>> relation_of(A, 0, 1), relation_of(A, 1, 0)
    ('forward', 'backward')
    """
    a, i, j = _pair(A, x, y)
    return _relation(a, i, j)


def _relation(a: np.ndarray, i: int, j: int) -> str:
    if a[i, j] and a[j, i]:
        return "undirected"
    if a[i, j]:
        return "forward"
    return "backward" if a[j, i] else "none"


def set_relation(A: np.ndarray, x: int, y: int, relation: str) -> np.ndarray:
    """Return a copy of ``A`` with the pair ``(x, y)`` set to ``relation`` (one of :data:`RELATIONS`).

    No acyclicity check: the working graph is a PDAG under edit, and a directed cycle is a legal
    intermediate (and final) state; scoring copes with it.

    Examples
    --------
    >>> import numpy as np
    >>> set_relation(np.zeros((3, 3), dtype=np.int8), 2, 0, "forward").tolist()
    [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    """
    a, i, j = _pair(A, x, y)
    rel = check_choice(relation, RELATIONS, "relation")
    a = a.copy()
    a[i, j] = rel in ("undirected", "forward")
    a[j, i] = rel in ("undirected", "backward")
    return a


# ---------------------------------------------------------------------------------------------
# edge lists: the tolerant parser of final answers and its inverse
# ---------------------------------------------------------------------------------------------

_FLIP = {"forward": "backward", "backward": "forward", "undirected": "undirected"}


def _add_edge(edges: dict[tuple[int, int], tuple[str, str]], i: int, j: int, relation: str, source: str) -> None:
    """Record ``relation`` of the pair ``(i, j)``; ``source`` is the answer text quoted in errors."""
    if i == j:
        raise ValueError(f"self-loop {source!r}: an edge joins two different variables")
    if i > j:
        i, j, relation = j, i, _FLIP[relation]
    previous = edges.setdefault((i, j), (relation, source))
    if previous[0] != relation:
        raise ValueError(f"contradictory entries for the pair X{i}, X{j}: {previous[1]!r} and {source!r}")


def _edges_from_text(text: str, d: int, edges: dict[tuple[int, int], tuple[str, str]]) -> int:
    """Add every ``a <arrow> b`` statement (chains included) in free text; return how many were read."""
    found = 0
    for chain in _CHAIN.finditer(text):
        tokens = _TOKEN.findall(chain.group())
        for k in range(0, len(tokens) - 2, 2):
            a, arrow, b = tokens[k : k + 3]
            link = f"{a} {arrow} {b}"
            words = [t for t in (a, b) if _VARIABLE.fullmatch(t) is None]
            if words and arrow in _DASHES:
                continue
            unknown = words or [t for t in (a, b) if int(t.lstrip("Xx")) >= d]
            if unknown:
                raise ValueError(f"unknown variable {unknown[0]!r} in {link!r} (variables are X0..X{d - 1})")
            _add_edge(edges, variable_index(a, d), variable_index(b, d), _ARROWS[arrow], link)
            found += 1
    return found


def _endpoint(token: object, d: int, where: str) -> int:
    try:
        return variable_index(token, d)
    except ValueError as error:
        raise ValueError(f"{error} in {where}") from None


def _edges_from_structure(value: Any, d: int, edges: dict[tuple[int, int], tuple[str, str]]) -> None:
    """Add the edges of a decoded JSON answer: a list of pairs/strings/objects, or ``{"edges": ...}``."""
    if isinstance(value, dict):
        key = next((k for k in value if isinstance(k, str) and k.strip().lower() == "edges"), None)
        if key is None:
            raise ValueError('a JSON object answer needs an "edges" entry, e.g. {"edges": [["X0", "X1"]]}')
        value = value[key]
    if isinstance(value, str):
        if not _edges_from_text(value, d, edges) and not _is_empty_answer(value):
            raise ValueError(f"no edge found in {value!r}; write edges like 'X0 -> X1'")
        return
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"the edges must be a list, got {type(value).__name__}")
    for k, item in enumerate(value, 1):
        where = f"edge #{k} {item!r}"
        if isinstance(item, str):
            if not _edges_from_text(item, d, edges):
                raise ValueError(f"{where} is not an edge like 'X0 -> X1'")
            continue
        if isinstance(item, dict):
            keys = {str(key).lower(): val for key, val in item.items()}
            ends = next(
                ((keys[s], keys[t]) for s, t in (("from", "to"), ("source", "target")) if s in keys and t in keys), None
            )
            if ends is None:
                raise ValueError(f"{where} needs 'from' and 'to' (or 'source' and 'target') entries")
            a, arrow, b = ends[0], "->", ends[1]
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            a, arrow, b = item[0], "->", item[1]
        elif (
            isinstance(item, (list, tuple))
            and len(item) == 3
            and isinstance(item[1], str)
            and item[1].strip() in _ARROWS
        ):
            a, arrow, b = item[0], item[1].strip(), item[2]
        else:
            raise ValueError(
                f"{where} is not an edge: use a pair [from, to], a string 'X0 -> X1' or {{'from': .., 'to': ..}}"
            )
        _add_edge(edges, _endpoint(a, d, where), _endpoint(b, d, where), _ARROWS[arrow], where)


def _structured(text: str) -> Any:
    """The JSON value (or Python literal) that ``text`` holds, if it is a list or an object; else None."""
    for load in (json.loads, ast.literal_eval):
        try:
            with warnings.catch_warnings():
                # Compiling agent text can warn (e.g. invalid escape sequences); the text is data here.
                warnings.simplefilter("ignore")
                value = load(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple, dict)):
            return value
    return None


def _bracketed(text: str) -> str:
    """The span from the first opening to the last closing bracket or brace ('' when there is none)."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    end = max(text.rfind("]"), text.rfind("}"))
    return text[min(starts) : end + 1] if starts and end > min(starts) else ""


def _is_empty_answer(text: str) -> bool:
    return re.sub(r"[\s.\"']", "", text.lower()) in _EMPTY_ANSWERS


def _matrix(edges: dict[tuple[int, int], tuple[str, str]], d: int) -> np.ndarray:
    a = np.zeros((d, d), dtype=np.int8)
    for (i, j), (relation, _) in edges.items():
        a[i, j] = relation in ("undirected", "forward")
        a[j, i] = relation in ("undirected", "backward")
    return a


def parse_edge_list(text: str, d: int) -> np.ndarray:
    """Read an agent's final answer as a graph over ``X0 .. X{d-1}``, tolerantly.

    Accepted, alone or mixed with prose and markdown (fences, bold, inline code):

    - statements ``a <arrow> b`` where ``a``, ``b`` are ``X3``/``x3`` or a bare index ``3``, and the
      arrow is ``->``, ``-->``, ``→`` (``a -> b``), ``<-``, ``<--``, ``←`` (``b -> a``) or ``--``,
      ``-``, ``—``, ``–``, ``<->``, ``↔`` (undirected); chains ``X0 -> X1 -> X2`` give two edges;
      statements are separated by commas, semicolons, newlines or spaces;
    - a JSON (or Python literal) list whose items are pairs ``[from, to]`` (directed),
      triples ``["X0", "--", "X1"]``, strings ``"X0 -> X1"`` or objects ``{"from": .., "to": ..}``
      (also ``source``/``target``), or an object ``{"edges": <such a list or a string>}``;
    - an explicitly empty answer: ``""``, ``"none"``, ``"empty"``, ``"no edges"``, ``[]``.

    A dash between two words that are not both variables is taken as prose ("well-known") and
    skipped; an arrow there is an error. Bare numbers count as variables, so prose such as
    "steps 1-2" reads as an edge. When a JSON value with edges sits inside prose, it wins over
    statements in the prose. Mentioning a pair twice with the same relation is fine.

    Parameters
    ----------
    text : str
        The answer.
    d : int
        Number of variables.

    Returns
    -------
    numpy.ndarray
        ``(d, d)`` int8 graph in the causal_gym encoding.

    Raises
    ------
    ValueError
        Naming the offending piece: an unknown variable (``'X12'`` when ``d = 10``, a name that is
        not ``X<k>``), a self-loop, contradictory entries for one pair, a malformed JSON item, or
        an answer with no edge that is not explicitly empty.

    Examples
    --------
    >>> parse_edge_list("Final answer: X0 -> X1, X2 -- X1", 3).tolist()
    [[0, 1, 0], [0, 0, 1], [0, 1, 0]]
    >>> parse_edge_list('{"edges": [[2, 0]]}', 3).tolist()
    [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    """
    if not isinstance(text, str):
        raise ValueError(f"the edge list must be a string, got {type(text).__name__}")
    d = check_count(d, "d", 1)
    # Emphasis and code marks never carry edges; removing them frees 'X0** -> **X1'-style answers.
    clean = re.sub(r"[`*]", "", text)
    edges: dict[tuple[int, int], tuple[str, str]] = {}
    whole = _structured(clean.strip())
    if whole is not None:
        _edges_from_structure(whole, d, edges)
        return _matrix(edges, d)
    # A JSON value inside prose wins when it holds edges; otherwise the prose is read, so that a
    # stray "[1]" or "[]" next to written-out edges does not hide them.
    part = _structured(_bracketed(clean))
    part_error: ValueError | None = None
    if part is not None:
        try:
            _edges_from_structure(part, d, edges)
        except ValueError as exc:
            part_error, edges = exc, {}
        if edges:
            return _matrix(edges, d)
    if _edges_from_text(clean, d, edges) or (part is not None and part_error is None):
        return _matrix(edges, d)
    if part_error is not None:
        raise part_error
    if _is_empty_answer(clean):
        return _matrix(edges, d)
    raise ValueError(
        "found no edge in the answer; write edges like 'X0 -> X1, X2 -- X3' or a JSON list of pairs "
        "[[0, 1], ...]; an empty graph is 'none'"
    )


def format_edge_list(A: np.ndarray) -> str:
    """Write ``A`` as the edge list :func:`parse_edge_list` reads back: ``"X0 -> X1, X1 -- X2"``.

    Pairs come in row-major order of ``(min, max)``; a directed edge is always written with ``->``.
    The empty graph is the empty string.
    """
    a = check_adjacency(A, "A")
    parts = []
    for i, j in np.argwhere(np.triu(a | a.T, 1)).tolist():
        relation = _relation(a, i, j)
        if relation == "undirected":
            parts.append(f"X{i} -- X{j}")
        elif relation == "forward":
            parts.append(f"X{i} -> X{j}")
        else:
            parts.append(f"X{j} -> X{i}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# renderings
# ---------------------------------------------------------------------------------------------


def render_ansi(A: np.ndarray, names: Sequence[str] | None = None) -> str:
    """A compact text picture of ``A``: a summary line, the relation matrix and the edge list.

    In the matrix, the cell in row ``i`` and column ``j`` is ``>`` for ``i -> j``, ``<`` for
    ``j -> i``, ``-`` for ``i -- j`` and ``.`` for no edge (``\\`` on the diagonal).

    Parameters
    ----------
    A : (d, d) array
        Graph in the causal_gym encoding.
    names : sequence of str, optional
        Row and column labels; ``X0 .. X{d-1}`` by default.
    """
    a = check_adjacency(A, "A").astype(bool)
    d = a.shape[0]
    labels = [variable_name(i) for i in range(d)] if names is None else [str(n) for n in names]
    if len(labels) != d:
        raise ValueError(f"names must have {d} entries, got {len(labels)}")
    undirected = a & a.T
    n_und = int(np.count_nonzero(np.triu(undirected, 1)))
    n_dir = int(np.count_nonzero(a & ~a.T))
    cells = np.full((d, d), ".", dtype="<U1")
    cells[a & ~a.T] = ">"
    cells[a.T & ~a] = "<"
    cells[undirected] = "-"
    np.fill_diagonal(cells, "\\")
    width = max(len(s) for s in labels)
    lines = [f"working graph: {n_dir + n_und} edges ({n_dir} directed, {n_und} undirected)"]
    lines.append(" " * width + " " + " ".join(s.rjust(width) for s in labels))
    for label, row in zip(labels, cells):
        lines.append(label.rjust(width) + " " + " ".join(c.rjust(width) for c in row))
    lines.append("edges: " + (format_edge_list(a.astype(np.int8)) or "none"))
    return "\n".join(lines)


_GLYPHS = {  # a 3x5 pixel font: enough for the labels X0, X1, ...
    "0": ("111", "101", "101", "101", "111"),
    "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"),
    "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"),
    "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"),
    "7": ("111", "001", "001", "001", "001"),
    "8": ("111", "101", "111", "101", "111"),
    "9": ("111", "101", "111", "001", "111"),
    "X": ("101", "101", "010", "101", "101"),
}
_FONT = {ch: np.array([[c == "1" for c in row] for row in rows], dtype=bool) for ch, rows in _GLYPHS.items()}
_BACKGROUND = (255, 255, 255)
_DIRECTED_COLOUR = (31, 78, 160)
_UNDIRECTED_COLOUR = (120, 120, 120)
_NODE_FILL = (255, 224, 140)
_INK = (30, 30, 30)


def _paint(img: np.ndarray, box: tuple[float, float, float, float], inside: Any, colour: tuple[int, int, int]) -> None:
    """Colour the pixels of ``box`` (x0, y0, x1, y1) whose centres satisfy ``inside(x, y)``."""
    h, w = img.shape[:2]
    x0, y0 = max(int(np.floor(box[0])), 0), max(int(np.floor(box[1])), 0)
    x1, y1 = min(int(np.ceil(box[2])) + 1, w), min(int(np.ceil(box[3])) + 1, h)
    if x0 >= x1 or y0 >= y1:
        return
    ys, xs = np.mgrid[y0:y1, x0:x1] + 0.5
    img[y0:y1, x0:x1][inside(xs, ys)] = colour


def _segment(img: np.ndarray, p: np.ndarray, q: np.ndarray, half_width: float, colour: tuple[int, int, int]) -> None:
    v = q - p
    length2 = max(float(v @ v), 1e-12)

    def inside(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        t = np.clip(((xs - p[0]) * v[0] + (ys - p[1]) * v[1]) / length2, 0.0, 1.0)
        return (xs - p[0] - t * v[0]) ** 2 + (ys - p[1] - t * v[1]) ** 2 <= half_width**2

    lo, hi = np.minimum(p, q) - half_width, np.maximum(p, q) + half_width
    _paint(img, (lo[0], lo[1], hi[0], hi[1]), inside, colour)


def _triangle(img: np.ndarray, corners: np.ndarray, colour: tuple[int, int, int]) -> None:
    a, b, c = corners

    def cross(p: np.ndarray, q: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        return (q[0] - p[0]) * (ys - p[1]) - (q[1] - p[1]) * (xs - p[0])

    def inside(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        s = np.stack([cross(a, b, xs, ys), cross(b, c, xs, ys), cross(c, a, xs, ys)])
        return np.asarray((s >= 0).all(axis=0) | (s <= 0).all(axis=0))

    lo, hi = corners.min(axis=0), corners.max(axis=0)
    _paint(img, (lo[0], lo[1], hi[0], hi[1]), inside, colour)


def _disk(img: np.ndarray, centre: np.ndarray, radius: float, colour: tuple[int, int, int]) -> None:
    def inside(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        return (xs - centre[0]) ** 2 + (ys - centre[1]) ** 2 <= radius**2

    _paint(img, (centre[0] - radius, centre[1] - radius, centre[0] + radius, centre[1] + radius), inside, colour)


def _label(img: np.ndarray, text: str, centre: np.ndarray, scale: int) -> None:
    """Write ``text`` (digits and X) centred on ``centre`` in a 3x5 pixel font magnified ``scale`` times."""
    columns: list[np.ndarray] = []
    for k, ch in enumerate(text):
        if k:
            columns.append(np.zeros((5, 1), dtype=bool))
        columns.append(_FONT[ch])
    bitmap = np.hstack(columns)
    big = np.kron(bitmap, np.ones((scale, scale), dtype=bool))
    h, w = big.shape
    y0, x0 = int(round(centre[1] - h / 2)), int(round(centre[0] - w / 2))
    ys, xs = np.nonzero(big)
    ys, xs = ys + y0, xs + x0
    keep = (ys >= 0) & (ys < img.shape[0]) & (xs >= 0) & (xs < img.shape[1])
    img[ys[keep], xs[keep]] = _INK


def render_rgb(A: np.ndarray, size: int = 400) -> np.ndarray:
    """Draw ``A`` as an RGB image: nodes on a circle, directed edges with arrowheads.

    Directed edges are blue with an arrowhead at the child; undirected edges are grey lines. Nodes
    are labelled ``X0 .. X{d-1}`` clockwise from the top. Plain numpy, no plotting library.

    Parameters
    ----------
    A : (d, d) array
        Graph in the causal_gym encoding.
    size : int, default 400
        Width and height in pixels (at least 64).

    Returns
    -------
    numpy.ndarray
        ``(size, size, 3)`` uint8 image.
    """
    a = check_adjacency(A, "A").astype(bool)
    size = check_count(size, "size", 64)
    d = a.shape[0]
    img = np.empty((size, size, 3), dtype=np.uint8)
    img[:] = _BACKGROUND
    ring = 0.38 * size if d > 1 else 0.0
    angles = -np.pi / 2 + 2 * np.pi * np.arange(d) / d
    pos = size / 2 + ring * np.column_stack([np.cos(angles), np.sin(angles)])
    node_r = max(6.0, min(0.07 * size, 0.8 * np.pi * ring / d)) if d > 1 else 0.07 * size
    half_width = max(0.75, size / 400)
    head = max(6.0, 0.6 * node_r)
    for i, j in np.argwhere(np.triu(a | a.T, 1)).tolist():
        if a[j, i] and not a[i, j]:
            i, j = j, i
        v = pos[j] - pos[i]
        u = v / np.linalg.norm(v)
        start, tip = pos[i] + u * node_r, pos[j] - u * node_r
        if a[i, j] and a[j, i]:
            _segment(img, start, tip, half_width, _UNDIRECTED_COLOUR)
            continue
        base = tip - u * head
        _segment(img, start, base, half_width, _DIRECTED_COLOUR)
        normal = np.array([-u[1], u[0]]) * head * 0.45
        _triangle(img, np.array([tip, base + normal, base - normal]), _DIRECTED_COLOUR)
    # One magnification for every label, the largest at which the longest one fits in its node.
    scale = max(1, min(3, int(1.6 * node_r // (4 * len(variable_name(d - 1))))))
    for k in range(d):
        _disk(img, pos[k], node_r, _INK)
        _disk(img, pos[k], node_r - max(1.5, half_width * 1.5), _NODE_FILL)
        _label(img, variable_name(k), pos[k], scale)
    return img
