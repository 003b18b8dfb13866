"""AlterNet: AVICI's alternating attention over samples and variables, plus the statistics of :mod:`.features`.

Each cell ``(row, variable)`` is embedded from its value and its intervention mask (AVICI's second
channel); blocks of self-attention alternate between the variables of a row and the rows of a
variable; a max over rows pools each variable's embedding (AVICI's pooling). The pair statistics
are embedded and refined by axial attention over the ``d x d`` grid of pairs (a pair sees the
triangles it is part of); the node statistics join the pooled embedding, and two attention layers
over variables read the pair embeddings as per-head attention biases (as graph transformers do with
edge features), so a node's embedding can take in whom it is (partially) correlated with. The edge head scores ``i -> j`` from the two
nodes' embeddings and both directions' pair statistics; no acyclicity term (AVICI's is a training
regulariser); a threshold and :func:`orient` make the graph, a DAG by a greedy acyclic orientation.

No positional encoding anywhere: permuting the variables permutes the logits and permuting the
rows leaves them unchanged; any ``d`` and ``n`` fit the same weights. The attention stack reads at
most ``max_rows`` rows (:func:`pick_rows`, a subsample that does not depend on the row order);
the statistics read all of them.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from causal_gym.discovery.amortized.features import NODE_FEATURES, PAIR_FEATURES, summary_features
from causal_gym.graphs import greedy_dag

__all__ = ["AlterNet", "Inputs", "inputs", "pick_rows", "orient", "direction_weights"]


class _AxisBlock(nn.Module):
    """Pre-norm self-attention along one axis of a ``(batch, n, d, width)`` tensor, then a feed-forward layer."""

    def __init__(self, width: int, heads: int, axis: int) -> None:
        super().__init__()
        self.axis = axis  # 1: attend across rows, 2: attend across variables
        self.norm1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        seq = z.transpose(1, 2) if self.axis == 1 else z  # (b, other, along, w)
        flat = seq.reshape(-1, seq.shape[2], seq.shape[3])
        h = self.norm1(flat)
        flat = flat + self.attn(h, h, h, need_weights=False)[0]
        flat = flat + self.ff(self.norm2(flat))
        seq = flat.reshape(seq.shape)
        return seq.transpose(1, 2) if self.axis == 1 else seq


class _PairAxialBlock(nn.Module):
    """Axial attention over the pair embeddings ``(b, d, d, p)``: each ``(i, j)`` attends to the pairs
    sharing its row ``(i, k)``, then to those sharing its column ``(k, j)``; so a pair's embedding can
    take in the triangles it is part of (v-structures, shielded or not)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.rows = _AxisBlock(width, heads, axis=2)
        self.columns = _AxisBlock(width, heads, axis=1)

    def forward(self, pair: torch.Tensor) -> torch.Tensor:
        return self.columns(self.rows(pair))


class _RelationalBlock(nn.Module):
    """Self-attention over variables whose logits get a per-head bias from the pair embedding ``(b, d, d, p)``."""

    def __init__(self, width: int, heads: int, pair_width: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.bias = nn.Linear(2 * pair_width, heads)
        self.out = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, v: torch.Tensor, pair: torch.Tensor) -> torch.Tensor:
        b, d, w = v.shape
        q, k, val = self.qkv(self.norm1(v)).reshape(b, d, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        bias = self.bias(torch.cat([pair, pair.transpose(1, 2)], dim=-1)).permute(0, 3, 1, 2)
        attn = torch.softmax(q @ k.transpose(-1, -2) / (w // self.heads) ** 0.5 + bias, dim=-1)
        v = v + self.out((attn @ val).transpose(1, 2).reshape(b, d, w))
        return v + self.ff(self.norm2(v))


class AlterNet(nn.Module):
    """:class:`Inputs` -> edge logits ``(batch, d, d)``, ``[i, j]`` for ``i -> j``, diagonal masked."""

    def __init__(self, width: int = 64, heads: int = 4, layers: int = 2, relational: int = 2,
                 pair_width: int = 32, pair_layers: int = 2) -> None:
        super().__init__()
        self.hyper = {"width": width, "heads": heads, "layers": layers, "relational": relational,
                      "pair_width": pair_width, "pair_layers": pair_layers}
        self.embed = nn.Linear(2, width)
        self.blocks = nn.ModuleList(_AxisBlock(width, heads, axis) for _ in range(layers) for axis in (2, 1))
        self.pool_norm = nn.LayerNorm(width)
        self.node_in = nn.Linear(width + NODE_FEATURES, width)
        self.pair_in = nn.Sequential(nn.Linear(PAIR_FEATURES, pair_width), nn.GELU(),
                                     nn.Linear(pair_width, pair_width))
        self.pair_blocks = nn.ModuleList(_PairAxialBlock(pair_width, 2) for _ in range(pair_layers))
        self.relational = nn.ModuleList(_RelationalBlock(width, heads, pair_width) for _ in range(relational))
        self.out_norm = nn.LayerNorm(width)
        self.source = nn.Linear(width, width)
        self.target = nn.Linear(width, width, bias=False)
        self.pair_out = nn.Linear(2 * pair_width, width, bias=False)
        self.score = nn.Sequential(nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, batch: Inputs) -> torch.Tensor:
        z = self.embed(torch.stack([batch.rows, batch.mask], dim=-1))
        for block in self.blocks:
            z = block(z)
        v = self.pool_norm(z.max(dim=1).values)  # (b, d, w)
        v = self.node_in(torch.cat([v, batch.node], dim=-1))
        pair = self.pair_in(batch.pair)
        for pair_block in self.pair_blocks:
            pair = pair_block(pair)
        for block in self.relational:
            v = block(v, pair)
        v = self.out_norm(v)
        both = torch.cat([pair, pair.transpose(1, 2)], dim=-1)
        hidden = self.source(v)[:, :, None, :] + self.target(v)[:, None, :, :] + self.pair_out(both)
        logits = self.score(hidden).squeeze(-1)
        eye = torch.eye(logits.shape[1], dtype=torch.bool, device=logits.device)
        return logits.masked_fill(eye, -1e4)


class Inputs:
    """What :class:`AlterNet` reads: ``rows``/``mask`` ``(b, rows, d)`` for attention, ``node``, ``pair`` statistics."""

    def __init__(self, rows: torch.Tensor, mask: torch.Tensor, node: torch.Tensor, pair: torch.Tensor) -> None:
        self.rows, self.mask, self.node, self.pair = rows, mask, node, pair

    def to(self, device: torch.device | str) -> Inputs:
        return Inputs(self.rows.to(device), self.mask.to(device), self.node.to(device), self.pair.to(device))

    @classmethod
    def stack(cls, items: list[Inputs]) -> Inputs:
        """Datasets of one ``d`` and one row count as a batch."""
        return cls(*(torch.cat([getattr(i, k) for i in items]) for k in ("rows", "mask", "node", "pair")))


def pick_rows(data: np.ndarray, k: int) -> np.ndarray:
    """Indices of ``k`` of the rows of ``data``, chosen by a pseudo-random key of each row's values.

    The same rows whatever order the rows or the columns come in (a prefix would change with the
    row order), spread over the data like a random subsample: the key is the fractional part of the
    sum over the row of each value's scaled fractional part, a hash that no column order changes.
    """
    n = data.shape[0]
    if n <= k:
        return np.arange(n)
    scaled = data * 9973.0
    key = (scaled - np.floor(scaled)).sum(axis=1)
    key -= np.floor(key)
    return np.sort(np.argsort(key, kind="stable")[:k])


def inputs(data: np.ndarray, mask: np.ndarray | None, max_rows: int | None) -> Inputs:
    """One dataset's :class:`Inputs` (batch of 1): columns z-scored over all rows, statistics from all rows."""
    x = np.asarray(data, dtype=np.float64)
    x = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-12)
    m = np.zeros_like(x) if mask is None else np.asarray(mask, dtype=np.float64)
    node, pair = summary_features(torch.from_numpy(x)[None], torch.from_numpy(m)[None])
    picked = pick_rows(x, max_rows) if max_rows is not None else np.arange(x.shape[0])
    return Inputs(torch.from_numpy(x[picked]).float()[None], torch.from_numpy(m[picked]).float()[None],
                  node.float(), pair.float())


def direction_weights(probabilities: np.ndarray, threshold: float, evidence: np.ndarray | None = None) -> np.ndarray:
    """The weights :func:`orient` orients by: the probabilities, or with ``evidence`` (nats for
    ``i -> j`` over ``j -> i``, antisymmetric, ``nan`` where there is none; e.g.
    :func:`.invariance.direction_evidence`) the adjacent pairs it covers decided by its sum with the
    network's log-odds ``log(p_ij / p_ji)`` (the network's direction as the prior, the evidence as
    the likelihood): the winning direction gets ``1 + p``, above every undecided one, the other 0.
    """
    p = np.asarray(probabilities, dtype=float)
    if evidence is None:
        return p
    e = np.asarray(evidence, dtype=float)
    if e.shape != p.shape:
        raise ValueError(f"evidence must have the probabilities' shape {p.shape}, got {e.shape}")
    decided = ((p + p.T) > threshold) & ~np.isnan(e)
    odds = np.log(np.clip(p, 1e-6, None)) - np.log(np.clip(p.T, 1e-6, None))
    score = np.where(decided, np.nan_to_num(e) + odds, 0.0)
    return np.where(decided & (score > 0), 1.0 + p, np.where(decided & (score < 0), 0.0, p))


def orient(probabilities: np.ndarray, threshold: float, acyclic: bool = True,
           evidence: np.ndarray | None = None) -> np.ndarray:
    """A directed graph from edge probabilities: ``i`` and ``j`` adjacent when ``p_ij + p_ji`` exceeds
    ``threshold`` (in a DAG the two directions exclude each other), pointing the likelier way.

    With ``acyclic`` (the default) the pairs are then oriented by :func:`causal_gym.graphs.greedy_dag`
    over both directions of each adjacent pair: directions in decreasing probability, each kept unless
    it closes a directed cycle, so a pair whose likelier way would close one points the other way.
    The result is a DAG with the same adjacencies, equal to the thresholded graph whenever that is
    acyclic (a greedy maximum-weight acyclic orientation of the thresholded skeleton). With
    ``evidence`` the pairs it covers point as :func:`direction_weights` decides, and are taken
    first; the adjacencies never change, and without evidence on any adjacent pair neither does the graph.
    """
    p = np.asarray(probabilities, dtype=float)
    adjacent = (p + p.T) > threshold
    w = direction_weights(p, threshold, evidence)
    graph = (adjacent & (w > w.T)).astype(np.int8)
    np.fill_diagonal(graph, 0)
    return greedy_dag(w, graph | graph.T) if acyclic else graph
