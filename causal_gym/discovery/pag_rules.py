"""FCI's orientation rules for a PAG over causally sufficient variables that may be selected on.

CDIS (:mod:`causal_gym.discovery.cdis`) orients partial ancestral graphs under two assumptions: no
latent confounders, but possible selection bias. So a maximal ancestral graph has only ``i -> j``
and ``i -- j`` (both ends tails: ``i`` and ``j`` are ancestors of the selection) edges, and an edge
with arrowheads at both ends is impossible. The rules are Zhang's (2008) complete FCI rules:

- R0: unshielded colliders ``a *-> c <-* b`` where ``c`` is not in ``sepset(a, b)``;
- R1-R4 (arrowheads and the tails of R1 / R4's discriminating paths);
- R5-R7, the selection-bias rules (tails: uncovered circle paths become ``--``; ``a -- b o-* c``
  and ``a -o b o-* c`` with ``a, c`` non-adjacent give ``b -* c``);
- "no latents": every ``a o-> b`` is ``a -> b``. This makes R8-R10, which only turn ``o->`` into
  ``->``, redundant; they are not run.

Marks only ever go from circle to tail or arrowhead: a rule that would change a non-circle mark, or
put an arrowhead against another (``<->``), is skipped -- on finite samples the tests can
contradict one another, and the first orientation stands (as in the CDIS authors' code).

Encoding: ``marks[i, j]`` is the mark at ``j`` of the edge between ``i`` and ``j`` (0: no edge);
so ``i -> j`` is ``marks[i, j] = ARROW, marks[j, i] = TAIL``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from itertools import combinations

import numpy as np

__all__ = ["CIRCLE", "ARROW", "TAIL", "orient", "to_causallearn"]

CIRCLE, ARROW, TAIL = 1, 2, 3


class _PAG:
    def __init__(self, marks: np.ndarray, sepsets: dict[tuple[int, int], tuple[int, ...]]) -> None:
        self.m = marks
        self.sepsets = sepsets
        self.d = len(marks)

    def adjacent(self, a: int, b: int) -> bool:
        return bool(self.m[a, b])

    def neighbours(self, a: int) -> list[int]:
        return np.flatnonzero(self.m[a]).tolist()

    def set(self, a: int, b: int, mark: int) -> bool:
        """Put ``mark`` at ``b`` on the ``a``-``b`` edge if that end is a circle and no ``<->`` results."""
        if self.m[a, b] != CIRCLE or (mark == ARROW and self.m[b, a] == ARROW):
            return False
        self.m[a, b] = mark
        return True

    def directed(self, a: int, b: int) -> bool:
        return self.m[a, b] == ARROW and self.m[b, a] == TAIL

    def sepset(self, a: int, b: int) -> tuple[int, ...]:
        return self.sepsets.get((min(a, b), max(a, b)), ())

    # -- the rules ---------------------------------------------------------------------------
    def r0(self) -> None:
        for a, b in combinations(range(self.d), 2):
            if self.adjacent(a, b):
                continue
            for c in self.neighbours(a):
                if self.m[b, c] and c not in self.sepset(a, b):
                    self.set(a, c, ARROW)
                    self.set(b, c, ARROW)

    def r1_r2_r3(self) -> bool:
        changed = False
        d = self.d
        for b in range(d):
            for a in self.neighbours(b):
                if self.m[a, b] != ARROW:
                    continue
                for c in self.neighbours(b):  # R1: a *-> b o-* c, a and c non-adjacent => b -> c
                    if c != a and self.m[c, b] == CIRCLE and not self.adjacent(a, c):
                        changed |= self.set(c, b, TAIL)
                        changed |= self.set(b, c, ARROW)
        for a in range(d):  # R2: a -> b *-> c or a *-> b -> c, and a *-o c => a *-> c
            for c in self.neighbours(a):
                if self.m[a, c] != CIRCLE:
                    continue
                for b in self.neighbours(a):
                    if b != c and self.m[b, c]:
                        if (self.directed(a, b) and self.m[b, c] == ARROW) or (self.m[a, b] == ARROW and self.directed(b, c)):
                            changed |= self.set(a, c, ARROW)
                            break
        for b in range(d):  # R3: a *-> b <-* c, a *-o t o-* c, a, c non-adjacent, t *-o b => t *-> b
            into = [a for a in self.neighbours(b) if self.m[a, b] == ARROW]
            for a, c in combinations(into, 2):
                if self.adjacent(a, c):
                    continue
                for t in self.neighbours(b):
                    if t not in (a, c) and self.m[t, b] == CIRCLE and self.m[a, t] == CIRCLE and self.m[c, t] == CIRCLE:
                        changed |= self.set(t, b, ARROW)
        return changed

    def r4(self) -> bool:
        """Discriminating paths ``<t, ..., a, b, c>`` for ``b`` with ``b o-* c``."""
        changed = False
        for c in range(self.d):
            parents_c = {p for p in self.neighbours(c) if self.directed(p, c)}
            for b in self.neighbours(c):
                if self.m[c, b] != CIRCLE:
                    continue
                for a in parents_c:
                    if a == b or not self.adjacent(a, b) or self.m[b, a] != ARROW:
                        continue
                    end = self._discriminating_end(a, b, c, parents_c)
                    if end is None:
                        continue
                    if b in self.sepset(end, c):
                        changed |= self.set(c, b, TAIL)
                        changed |= self.set(b, c, ARROW)
                    else:
                        for x, y in ((a, b), (b, a), (b, c), (c, b)):
                            changed |= self.set(x, y, ARROW)
        return changed

    def _discriminating_end(self, a: int, b: int, c: int, parents_c: Collection[int]) -> int | None:
        """The far end ``t`` of a discriminating path reaching ``b`` through ``a``, by breadth-first search
        over colliders that are parents of ``c``."""
        queue = deque([(a, b)])  # (collider on the path, the vertex after it toward b)
        seen = {a, b, c}
        while queue:
            v, _ = queue.popleft()
            for w in self.neighbours(v):
                if w in seen or self.m[w, v] != ARROW:
                    continue
                if not self.adjacent(w, c):
                    return w
                if w in parents_c and self.m[v, w] == ARROW:
                    seen.add(w)
                    queue.append((w, v))
        return None

    def r5(self) -> bool:
        """Uncovered circle paths: ``a o-o b`` closing an uncovered circle cycle become ``--`` with the path."""
        changed = False
        circle = (self.m == CIRCLE) & (self.m.T == CIRCLE)
        for a, b in zip(*np.nonzero(np.triu(circle))):
            a, b = int(a), int(b)
            if not (self.m[a, b] == CIRCLE and self.m[b, a] == CIRCLE):
                continue
            path = self._uncovered_circle_path(a, b, circle)
            if path is not None:
                for x, y in zip([a, *path], [*path, a]):
                    changed |= self.set(x, y, TAIL)
                    changed |= self.set(y, x, TAIL)
        return changed

    def _uncovered_circle_path(self, a: int, b: int, circle: np.ndarray) -> list[int] | None:
        """A path ``<a, g, ..., t, b>`` of ``o-o`` edges, uncovered, with ``a, t`` and ``b, g`` non-adjacent;
        returned without ``a`` (depth-first, exhaustive over simple paths)."""
        for g in np.flatnonzero(circle[a]).tolist():
            if g == b or self.adjacent(g, b):
                continue
            stack = [[g]]
            while stack:
                path = stack.pop()
                last = path[-1]
                previous = path[-2] if len(path) > 1 else a
                for nxt in np.flatnonzero(circle[last]).tolist():
                    if nxt in path or nxt == a or self.adjacent(previous, nxt):
                        continue
                    if nxt == b:
                        if len(path) >= 2 and not self.adjacent(a, last):
                            return [*path, b]
                        continue
                    stack.append([*path, nxt])
        return None

    def r6_r7(self) -> bool:
        changed = False
        for b in range(self.d):
            for a in self.neighbours(b):
                tail_at_a = self.m[b, a] == TAIL
                if not tail_at_a or self.m[a, b] not in (TAIL, CIRCLE):
                    continue
                for c in self.neighbours(b):
                    if c == a or self.m[c, b] != CIRCLE:
                        continue
                    # R6: a -- b o-* c => b -* c;  R7: a -o b o-* c, a and c non-adjacent => b -* c
                    if self.m[a, b] == TAIL or not self.adjacent(a, c):
                        changed |= self.set(c, b, TAIL)
        return changed

    def no_latents(self) -> bool:
        changed = False
        for a, b in zip(*np.nonzero((self.m == ARROW) & (self.m.T == CIRCLE))):
            changed |= self.set(int(b), int(a), TAIL)
        return changed


def orient(skeleton: np.ndarray, sepsets: dict[tuple[int, int], tuple[int, ...]],
           background: np.ndarray | None = None) -> np.ndarray:
    """The PAG of a skeleton and its separating sets, under no latents and possible selection.

    Parameters
    ----------
    skeleton : (d, d) bool array
        Symmetric adjacencies.
    sepsets : dict
        ``(a, b)`` with ``a < b`` -> the separating set of each non-adjacent pair (missing: empty).
    background : (d, d) int array, optional
        Marks known beforehand (0 or CIRCLE where unknown), set before R0.

    Returns
    -------
    (d, d) int8 array of marks (module docstring's encoding).
    """
    marks = np.where(skeleton, CIRCLE, 0).astype(np.int8)
    pag = _PAG(marks, sepsets)
    if background is not None:
        for a, b in zip(*np.nonzero(background * (background != CIRCLE) * skeleton)):
            pag.set(int(a), int(b), int(background[a, b]))
    pag.r0()
    while True:
        changed = pag.r1_r2_r3()
        changed |= pag.r4()
        changed |= pag.r5()
        changed |= pag.r6_r7()
        changed |= pag.no_latents()
        if not changed:
            return pag.m


def to_causallearn(marks: np.ndarray) -> np.ndarray:
    """Our marks as causal-learn's endpoint matrix (``pag[i, j]`` the mark at ``i``: -1 tail, 1 arrow,
    2 circle), the convention of :func:`causal_gym.discovery.fci.pag_to_graph`."""
    code = np.array([0, 2, 1, -1], dtype=np.int8)  # none, circle, arrow, tail
    return code[marks.T]
