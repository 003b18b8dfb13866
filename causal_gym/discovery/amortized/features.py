"""Dataset statistics the amortized network reads next to the rows: per node and per ordered pair.

The attention stack reads a subsample of rows (attention over samples is quadratic in them); these
statistics read every row, at the cost of a few ``(d, n) x (n, d)`` products, so the evidence a
constraint- or score-based method would use at the full ``n`` is not lost. They are the ones such
methods are built on: correlation, partial correlation given all the others and the smallest
order-0/1 partial correlation (PC's first two depths), with their Fisher-z statistics (which carry
``n``); the explaining-away signature of a collider (conditioning on ``j`` makes two of its causes
dependent), which orients edges as PC's v-structures do; moment asymmetries that orient
non-Gaussian and nonlinear pairs (a residual of ``j`` on ``i`` that still depends on ``x_i``); and, where the mask marks interventions on ``i``, what they do to
``x_j`` (its correlation with ``x_i`` across those rows, its mean shift and variance ratio).

Every statistic is a mean over rows, so permuting rows changes nothing, and every pair statistic
permutes with the variables. Unbounded ones go through ``asinh``.
"""

from __future__ import annotations

import torch

__all__ = ["NODE_FEATURES", "PAIR_FEATURES", "summary_features"]

NODE_FEATURES = 6
"""R^2 given all others, skewness, excess kurtosis, share of rows intervened, log n, log d."""

PAIR_FEATURES = 18
"""Per ordered pair ``(i, j)``; see :func:`summary_features`."""

RIDGE = 1e-3
"""Added to the correlation matrix's diagonal before inverting it (near-collinear columns)."""


def _fisher(r: torch.Tensor, dof: torch.Tensor) -> torch.Tensor:
    """``asinh`` of the Fisher-z statistic of a (partial) correlation with ``dof`` effective rows."""
    return torch.asinh(dof.clamp_min(1.0).sqrt() * torch.atanh(r.abs().clamp(max=1 - 1e-6)))


def summary_features(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Node ``(b, d, NODE_FEATURES)`` and pair ``(b, d, d, PAIR_FEATURES)`` statistics of ``x (b, n, d)``.

    ``mask`` (same shape, 1 where the node is intervened on in that row) may be all zeros. Pair
    features of ``(i, j)``: correlation, partial correlation given the rest, the order-0/1 partial
    correlation of least magnitude, the three Fisher-z statistics, ``corr(x_i^2, x_j)``,
    ``corr(x_i, x_j^2)``, the residual of ``x_j`` on ``x_i`` against ``x_i^2`` (mean and variance),
    the fourth cross-moment ``E[x_i^3 x_j] - 3 rho``, and under interventions on ``i`` (zero where
    there are fewer than 3 such rows): ``corr(x_i, x_j)`` over those rows, the standardized mean shift
    and the log variance ratio of ``x_j`` against observational rows, whether ``i`` has them, and
    ``corr * corr_int``; last the collider score ``max_k (|rho_ik.j| - |rho_ik|)`` (how much
    conditioning on ``j`` makes ``i`` dependent on some ``k``: ``j`` a collider, ``i -> j``) and its
    ``sqrt(n)`` multiple.
    """
    b, n, d = x.shape
    x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True, correction=0) + 1e-6)
    x2 = x * x
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    corr = (torch.einsum("bni,bnj->bij", x, x) / n).clamp(-1.0, 1.0) * (1 - eye) + eye
    precision = torch.linalg.inv(corr + RIDGE * eye)
    diag = torch.diagonal(precision, dim1=1, dim2=2).clamp_min(1e-6)
    partial = -precision / torch.sqrt(diag[:, :, None] * diag[:, None, :])
    r2 = (1.0 - 1.0 / diag).clamp(0.0, 1.0)
    # order-1 partial correlations rho_ij.k for every k, then the least |.| over k and the empty set
    ri, rj = corr[:, :, None, :], corr[:, None, :, :]  # [b, i, 1, k], [b, 1, j, k]
    denom = torch.sqrt(((1 - ri**2) * (1 - rj**2)).clamp_min(1e-6))
    first = (corr[:, :, :, None] - ri * rj) / denom  # [b, i, j, k]
    exclude = (eye[None, :, None, :] + eye[None, None, :, :]).bool()  # k == i or k == j
    first = first.abs()
    # explaining away: conditioning on k makes i and j dependent when both cause k, so the largest rise
    # |rho_ij.k| - |rho_ij| over j scores k as a collider on i's side, evidence for i -> k
    rise = (first - corr.abs()[:, :, :, None]).masked_fill(exclude | eye.bool()[None, :, :, None], -1.0)
    collider = rise.max(dim=2).values.clamp_min(0.0) if d > 2 else torch.zeros_like(corr)  # [b, i, k]
    first = first.masked_fill(exclude, float("inf"))
    smallest = torch.minimum(corr.abs(), first.min(dim=-1).values) if d > 2 else corr.abs()
    rows = torch.full_like(corr, float(n))
    fisher = [_fisher(corr, rows - 3), _fisher(partial, rows - d - 1), _fisher(smallest, rows - 4)]
    skew = (x2 * x).mean(dim=1)
    kurt = (x2 * x2).mean(dim=1)
    m21 = torch.einsum("bni,bnj->bij", x2, x) / n  # E[x_i^2 x_j]
    m31 = torch.einsum("bni,bnj->bij", x2 * x, x) / n  # E[x_i^3 x_j]
    m22 = torch.einsum("bni,bnj->bij", x2, x2) / n  # E[x_i^2 x_j^2]
    sd2 = torch.sqrt((kurt - 1.0).clamp_min(1e-6))  # sd of x_i^2
    c21 = m21 / sd2[:, :, None]  # corr(x_i^2, x_j)
    # residual r = x_j - rho x_i: corr(r, x_i^2) and cov(r^2, x_i^2) / var(r), an ANM-style asymmetry
    res_var = (1 - corr**2).clamp_min(1e-3)
    res_mean = (m21 - corr * skew[:, :, None]) / (res_var.sqrt() * sd2[:, :, None])
    res_scale = (m22 - 2 * corr * m31 + corr**2 * kurt[:, :, None] - res_var) / res_var
    cumulant = m31 - 3 * corr
    # interventions on i: rows r with mask[r, i] = 1
    m = mask.to(x.dtype)
    count = m.sum(dim=1)  # [b, i]
    obs = (m.sum(dim=2) == 0).to(x.dtype)  # [b, n]
    n_obs = obs.sum(dim=1).clamp_min(1.0)
    mean_obs = torch.einsum("bn,bnj->bj", obs, x) / n_obs[:, None]
    var_obs = (torch.einsum("bn,bnj->bj", obs, x2) / n_obs[:, None] - mean_obs**2).clamp_min(1e-6)
    c = count.clamp_min(1.0)[:, :, None]
    s1 = torch.einsum("bni,bnj->bij", m, x) / c  # mean of x_j over rows intervening on i
    s2 = torch.einsum("bni,bnj->bij", m, x2) / c
    sxy = torch.einsum("bni,bnj->bij", m * x, x) / c
    var_int = (s2 - s1**2).clamp_min(1e-6)
    mean_i = torch.diagonal(s1, dim1=1, dim2=2)[:, :, None]
    var_i = torch.diagonal(var_int, dim1=1, dim2=2)[:, :, None]
    has = (count >= 3).to(x.dtype)[:, :, None].expand(b, d, d)
    corr_int = ((sxy - mean_i * s1) / torch.sqrt(var_i * var_int)).clamp(-1.0, 1.0) * has
    shift = torch.asinh((s1 - mean_obs[:, None, :]) / var_obs[:, None, :].sqrt() * c.sqrt()) * has
    ratio = torch.log(var_int / var_obs[:, None, :]) * has
    pair = torch.stack([corr, partial, smallest, *fisher, c21, c21.transpose(1, 2), torch.asinh(res_mean),
                        torch.asinh(res_scale), torch.asinh(cumulant), corr_int, shift, ratio, has,
                        corr * corr_int, collider, torch.asinh(collider * float(n) ** 0.5)], dim=-1)
    pair = pair * (1 - eye)[None, :, :, None]
    log_n = torch.full_like(r2, float(torch.log(torch.tensor(float(n)))) / 8.0)
    log_d = torch.full_like(r2, float(torch.log(torch.tensor(float(d)))) / 4.0)
    node = torch.stack([r2, torch.asinh(skew), torch.asinh(kurt - 3.0), count / n, log_n, log_d], dim=-1)
    return node, pair
