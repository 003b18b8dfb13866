"""AVICI-style edge predictor: alternating attention over variables and over samples, plus pair statistics.

No positional encoding anywhere, so permuting the variables (columns) permutes the logits and
permuting the samples (rows) leaves them unchanged; any ``d`` and ``n`` fit the same weights.
``logits[i, j]`` scores the edge ``i -> j`` (the project's encoding); the diagonal is masked.

The logit of a pair is the attention embeddings' score (``source(v_i) . target(v_j)``, which can be
asymmetric: orientation) plus a small network of the pair's correlation and partial correlation
(given all other variables), which is symmetric. The pair term is ours, not AVICI's: on a CPU
budget of a few thousand steps the attention stack alone stays near chance, while dependence given
the rest is the statistic constraint-based methods build skeletons from, so the network starts there.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["EdgeNet", "pair_statistics"]


class _Block(nn.Module):
    """Self-attention along one axis of a ``(batch, n, d, width)`` tensor, then a feed-forward layer."""

    def __init__(self, width: int, heads: int, axis: int) -> None:
        super().__init__()
        self.axis = axis  # 1: attend across samples, 2: attend across variables
        self.norm1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        b, n, d, w = z.shape
        seq = z.transpose(1, 2) if self.axis == 1 else z  # (b, other, along, w)
        flat = seq.reshape(-1, seq.shape[2], w)
        h = self.norm1(flat)
        flat = flat + self.attn(h, h, h, need_weights=False)[0]
        flat = flat + self.ff(self.norm2(flat))
        seq = flat.reshape(seq.shape)
        return seq.transpose(1, 2) if self.axis == 1 else seq


RIDGE = 1e-2
"""Added to the correlation matrix's diagonal before inverting it (few rows, near-collinear columns)."""


def pair_statistics(x: torch.Tensor) -> torch.Tensor:
    """``(batch, d, d, 4)``: correlation, partial correlation given the rest, and their squares.

    Both are symmetric in the pair and permute with the variables; with standardized columns the
    correlation is the mean of products over samples, so any ``n`` gives the same statistic's estimate.
    """
    z = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-6)
    corr = torch.einsum("bni,bnj->bij", z, z) / x.shape[1]
    eye = torch.eye(x.shape[2], dtype=x.dtype, device=x.device)
    precision = torch.linalg.inv(corr + RIDGE * eye)
    scale = torch.diagonal(precision, dim1=1, dim2=2).clamp_min(1e-6).sqrt()
    partial = -precision / (scale[:, :, None] * scale[:, None, :])
    return torch.stack([corr, partial, corr**2, partial**2], dim=-1)


class EdgeNet(nn.Module):
    """Data ``(batch, n, d)`` -> edge logits ``(batch, d, d)``."""

    def __init__(self, width: int = 64, heads: int = 4, layers: int = 4) -> None:
        super().__init__()
        self.hyper = {"width": width, "heads": heads, "layers": layers}
        self.embed = nn.Linear(1, width)
        self.blocks = nn.ModuleList(_Block(width, heads, axis) for _ in range(layers) for axis in (2, 1))
        self.norm = nn.LayerNorm(width)
        self.source = nn.Linear(width, width)
        self.target = nn.Linear(width, width)
        self.pair = nn.Sequential(nn.Linear(4, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.embed(x.unsqueeze(-1))
        for block in self.blocks:
            z = block(z)
        v = self.norm(z.mean(dim=1))  # pool over samples (a mean: steady as n grows): (batch, d, width)
        logits = torch.einsum("bik,bjk->bij", self.source(v), self.target(v)) / v.shape[-1] ** 0.5
        logits = logits + self.pair(pair_statistics(x)).squeeze(-1)
        eye = torch.eye(x.shape[2], dtype=torch.bool, device=x.device)
        return logits.masked_fill(eye, -1e4)
