"""The router baseline of Heuresis (Appendix E) as an agent that plays through the public tools.

What the router does: run PC with Fisher-z (alpha 0.05); for each pair it deleted, compute
distance correlation minus ``|Pearson|`` on a fixed random subsample of at most 300 rows; a gap of at
least 0.15 flags the pair; if at least tau = 0.2 of the deleted pairs are flagged, answer with
PC-KCI's graph, else with PC-Fisher-z's. (The paper's KCI-branch re-test restores nothing on the
full sample; see :func:`causal_gym.envs.heuresis.references.router_graph`.)

Design (why an agent, and why guided only). The reference numbers of the router come from
:func:`~causal_gym.envs.heuresis.references.router_graph`, a pure function of the data. This
agent reproduces that function *honestly*, through the environment's tool interface alone, which
shows the baseline fits the harness and cross-checks it (the tests compare the two graphs):

1. ``run_code`` -- a short numpy/scipy program (:data:`ROUTER_PROGRAM`) computes the stable-PC
   Fisher-z skeleton search, PC's pattern on it (colliders from the separating sets, then Meek's
   rules R1-R3) and the distance-correlation screen, and prints them as JSON. The agent sees no
   data otherwise.
2. Fisher-z branch -- the menu is masked, so the agent runs every menu entry (7 algorithm calls
   on the default menu; the labels come from the task's ``run_algorithm`` schema)
   and takes, among the entries whose skeleton equals the program's, the one with the most pairs
   related as in the program's pattern (ties to the earlier label). Several entries often share
   the skeleton (FCI shares PC's adjacency search; on sparse graphs GES and LiNGAM may find it
   too), and the pattern tells PC's output from a fully directed DAG or a differently oriented
   CPDAG; the program's pattern itself is only a near copy of PC's (causal-learn's orientation
   replay on conflicting colliders is not reproduced), which is why the agent submits the menu
   entry's graph rather than the program's. If no entry matches, it submits the program's pattern.
3. KCI branch -- it submits the working graph, which in the *guided* condition is PC-KCI's
   output. In the unguided condition PC-KCI's graph is not reachable without knowing which
   masked entry is PC-KCI (the masking exists to prevent exactly that), so :meth:`reset` refuses
   unguided tasks.

The subsample seed is the agent's ``seed`` (the instance seed is hidden from agents), so the
reference to compare with is ``router_graph(data, seed)`` with the same seed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from causal_gym.envs.heuresis.baselines import guided_heuresis, menu_labels
from causal_gym.envs.heuresis.references import ALPHA, ROUTER_GAP, ROUTER_SUBSAMPLE, ROUTER_TAU
from causal_gym.harness import format_edge_list, parse_edge_list
from causal_gym.harness.agent import TaskSpec, typed_action

__all__ = ["ROUTER_PROGRAM", "RouterAgent"]

ROUTER_PROGRAM = """\
import json
from itertools import combinations, permutations
from scipy.special import ndtr

ALPHA, GAP, TAU, SUBSAMPLE, SEED = {alpha!r}, {gap!r}, {tau!r}, {subsample!r}, {seed!r}
corr = np.corrcoef(X.T)
clip = 1.0 - np.finfo(float).eps

def pvalue(x, y, cond):
    index = [x, y, *cond]
    precision = np.linalg.inv(corr[np.ix_(index, index)])
    r = -precision[0, 1] / np.sqrt(abs(precision[0, 0] * precision[1, 1]))
    r = float(np.clip(r, -clip, clip))
    z = 0.5 * np.log((1 + r) / (1 - r))
    return 2 * (1 - ndtr(np.sqrt(n - len(cond) - 3) * abs(z)))

# stable PC skeleton: the graph is frozen within a level, every set of the level is tested
adj = ~np.eye(d, dtype=bool)
sepsets = {{}}
depth = 0
while adj.sum(axis=1).max() > depth:
    removed = set()
    for x in range(d):
        neighbours = np.flatnonzero(adj[x]).tolist()
        for y in neighbours:
            pair = (min(x, y), max(x, y))
            for cond in combinations([v for v in neighbours if v != y], depth):
                if pvalue(*pair, tuple(sorted(cond))) > ALPHA:
                    removed.add(pair)
                    sepsets.setdefault(pair, []).append(set(cond))
    for a, b in removed:
        adj[a, b] = adj[b, a] = False
    depth += 1

# PC's pattern: colliders from the separating sets (an earlier collider is never overwritten),
# then Meek's rules R1-R3 until nothing changes
g = adj.astype(int)
directed = lambda i, j: bool(g[i, j] and not g[j, i])
undirected = lambda i, j: bool(g[i, j] and g[j, i])
for y in range(d):
    for x in np.flatnonzero(adj[y]):
        for z in np.flatnonzero(adj[y]):
            if x < z and not adj[x, z] and all(y not in s for s in sepsets[(x, z)]):
                if not directed(y, x) and not directed(y, z):
                    g[y, x] = g[y, z] = 0
changed = True
while changed:
    changed = False
    for i, j, k in permutations(range(d), 3):
        if directed(i, j) and undirected(j, k) and not adj[i, k]:
            g[k, j], changed = 0, True
        if directed(i, j) and directed(j, k) and undirected(i, k):
            g[k, i], changed = 0, True
    for i, l in permutations(range(d), 2):
        for j, k in combinations(range(d), 2):
            if (len({{i, j, k, l}}) == 4 and undirected(i, j) and undirected(i, k) and directed(j, l)
                    and directed(k, l) and not adj[j, k] and undirected(i, l)):
                g[l, i], changed = 0, True

rng = np.random.default_rng(SEED)
rows = rng.choice(n, size=min(n, SUBSAMPLE), replace=False)
sub = X[np.sort(rows)]
dist = np.abs(sub.T[:, :, None] - sub.T[:, None, :])
cent = (dist - dist.mean(axis=1, keepdims=True) - dist.mean(axis=2, keepdims=True)
        + dist.mean(axis=(1, 2), keepdims=True))
pearson = np.corrcoef(sub, rowvar=False)

def dcor(i, j):
    dvar = np.vdot(cent[i], cent[i]) * np.vdot(cent[j], cent[j])
    return float(np.sqrt(max(np.vdot(cent[i], cent[j]), 0.0) / np.sqrt(dvar))) if dvar > 0 else 0.0

deleted = [(a, b) for a in range(d) for b in range(a + 1, d) if not adj[a, b]]
flagged = [p for p in deleted if dcor(*p) - abs(pearson[p]) >= GAP]
share = len(flagged) / len(deleted) if deleted else 0.0
print(json.dumps({{
    "branch": "pc_kci" if deleted and share >= TAU else "pc_fisherz",
    "flagged_share": share,
    "skeleton": [[a, b] for a in range(d) for b in range(a + 1, d) if adj[a, b]],
    "pattern": g.tolist(),
}}))
"""
"""The router's screen as a sandbox program; format it with alpha, gap, tau, subsample and seed."""


def _skeleton(graph: np.ndarray) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in np.argwhere(np.triu(graph | graph.T, 1))}


def _agreement(graph: np.ndarray, pattern: np.ndarray) -> int:
    """Number of pairs ``i < j`` with the same relation in both graphs."""
    same = (graph == pattern) & (graph.T == pattern.T)
    return int(np.count_nonzero(np.triu(same, 1)))


class RouterAgent:
    """The Appendix-E router, played through the public tools of a guided Heuresis environment.

    Parameters
    ----------
    seed : int
        Seed of the screen's row subsample (the reference is ``router_graph(data, seed)``).

    Attributes
    ----------
    decision : dict
        After an episode: the branch, the flagged share, the chosen menu label (Fisher-z branch)
        and how the submitted graph was obtained.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        self._task: TaskSpec | None = None

    def reset(self, task: TaskSpec) -> None:
        """Start an episode; refuses tasks that are not the guided Heuresis condition (see the module docstring)."""
        space = task.observation_space
        graph = space.spaces.get("working_graph") if isinstance(space, spaces.Dict) else None
        if not guided_heuresis(task) or not isinstance(graph, spaces.MultiBinary):
            raise ValueError(
                "RouterAgent plays the guided Heuresis condition only: its KCI branch answers with PC-KCI's graph, "
                "which only the guided start reveals (the algorithm menu is masked). Use "
                "causal_gym.envs.heuresis.references.router_graph for the router's reference numbers."
            )
        self._task = task
        self._labels = menu_labels(task)
        self._d = int(graph.shape[0])
        self._stage = "start"
        self._screen: dict[str, Any] = {}
        self._outputs: dict[str, np.ndarray] = {}
        self._tried: list[str] = []
        self.decision: dict[str, Any] = {}

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        """The next action: the screen program, then (Fisher-z branch) the menu entries, then submit."""
        if self._task is None:
            raise RuntimeError("RouterAgent.act() called before reset(task)")
        if self._stage == "start":
            self._stage = "screen"
            program = ROUTER_PROGRAM.format(
                alpha=ALPHA, gap=ROUTER_GAP, tau=ROUTER_TAU, subsample=ROUTER_SUBSAMPLE, seed=self.seed
            )
            return typed_action(self._task, "run_code", code=program)
        if self._stage == "submitted":  # a rejected submission: fall back to the working graph
            return self._submit(None, "working graph after a rejected submission")
        if self._stage == "screen":
            try:
                self._screen = json.loads(str(observation["last_result"]).strip().splitlines()[-1])
            except (ValueError, IndexError):
                return self._submit(None, "working graph (the screen program failed)")
            self.decision.update(branch=self._screen["branch"], flagged_share=self._screen["flagged_share"])
            if self._screen["branch"] == "pc_kci":
                return self._submit(None, "working graph (PC-KCI's output in the guided condition)")
            self._stage = "menu"
        else:
            edges = (info.get("result") or {}).get("edges")
            if edges is not None:
                self._outputs[self._tried[-1]] = parse_edge_list(edges or "none", self._d)
        # Every entry is run once: several may share PC-Fisher-z's skeleton, and the choice needs them all.
        label = next((s for s in self._labels if s not in self._tried), None)
        if label is not None and observation["phase"] == 0 and info["budgets_remaining"]["algorithm_calls"] >= 1:
            self._tried.append(label)
            return typed_action(self._task, "run_algorithm", algorithm=label)
        return self._choose()

    def _choose(self) -> dict[str, Any]:
        target = {tuple(p) for p in self._screen["skeleton"]}
        matches = [s for s in self._labels if s in self._outputs and _skeleton(self._outputs[s]) == target]
        if not matches:
            return self._submit(np.array(self._screen["pattern"], dtype=np.int8), "program pattern (no entry matched)")
        best = max(
            matches,
            key=lambda s: (
                _agreement(self._outputs[s], np.array(self._screen["pattern"])),
                -self._labels.index(s),
            ),
        )
        self.decision["label"] = best
        return self._submit(self._outputs[best], f"menu entry {best}")

    def _submit(self, graph: np.ndarray | None, source: str) -> dict[str, Any]:
        assert self._task is not None  # act() checked it
        self._stage = "submitted"
        self.decision["submitted"] = source
        edges = "" if graph is None else (format_edge_list(graph) or "none")
        return typed_action(self._task, "submit", edges=edges)
