"""Kernel conditional-independence test (KCI) reproducing causal-learn's default KCI, with shared work.

What is computed -- the default of causal-learn's ``CIT(data, "kci")`` (Zhang et al., UAI 2011,
after the original Matlab code). Every column is z-scored (``ddof=1``); the pair is ordered
``x < y``; all kernels are Gaussian, ``exp(-precision / 2 * |p_i - p_j|^2)``.

* ``S`` empty (HSIC): kernels on ``x`` and on ``y`` with precision ``1 / w^2``,
  ``w = 0.8, 0.5, 0.3`` for ``n < 200, < 1200, >= 1200``; both centred (``H K H``); statistic
  ``sum(Kx * Ky)``; p-value from the gamma law with mean ``tr(Kx) tr(Ky) / n`` and variance
  ``2 |Kx|_F^2 |Ky|_F^2 / n^2``.
* ``S`` not empty: precision ``1 / (w^2 |S|)`` with ``w = 1.2, 0.7, 0.4`` for the same sample-size
  bands, shared by three kernels -- ``Kx`` on ``[x, S / 2]`` (the conditioning set joins ``x``
  only, at half scale), ``Ky`` on ``y`` alone, ``Kz`` on ``S`` -- all centred. The residual maker
  is ``R = eps (Kz + eps I)^-1`` with ``eps = 1e-3``, ``KxR = R Kx R``, ``KyR = R Ky R``, and the
  statistic ``sum(KxR * KyR)``. The null weights come from the eigenpairs of ``KxR`` and ``KyR``
  whose eigenvalue exceeds ``1e-5`` times the largest: with ``Vx = eigvecs * sqrt(eigvals)`` over
  the kept pairs, causal-learn forms ``uu[:, i * ry + j] = Vx[:, i] * Vy[:, j]`` and fits the gamma
  law to mean ``tr(uu' uu)`` and variance ``2 tr((uu' uu)^2)``.

How the same numbers are obtained faster, sharing work across the tests run on one dataset:

* Kernel matrices are factored by pivoted Cholesky (LAPACK ``dpstrf``) down to a residual
  diagonal of ``1e-13`` (kernel entries are at most 1): ``K ~ B B'`` with ``B`` of ``n x m`` and
  ``m`` the numerical rank -- about 30 for one variable, 200 for ``[x, S / 2]`` with ``|S| = 1``,
  ``n`` for ``|S| >= 3`` at n=600. Centring a kernel is centring the columns of its factor.
* ``R`` is built once per conditioning set, not once per test: by Woodbury from the factor of
  ``Kz`` (``R = I - B (B'B + eps I)^-1 B'``) while its rank is below ``n / 2``, otherwise densely
  by a Cholesky inverse (causal-learn runs an ``n x n`` pseudo-inverse for every test).
* For each ``(x, S)`` and ``(y, S)`` the kept eigenpairs of ``KvR = A A'`` (``A = R B``) come from
  the smaller Gram matrix ``A' A = Q diag(lam) Q'``: the non-zero eigenvalues are the same and
  ``A Q`` is exactly causal-learn's ``vx * sqrt(wx)``. For ``x`` only the leading pivots of its
  factor above ``1e-10`` enter this eigenproblem: the dropped part of ``Kx`` is below ``1e-10``
  while eigenvalues are kept down to ``1e-5`` of the largest, and the eigenproblem shrinks by a
  quarter for ``|S| <= 2``.
* The statistic is ``sum(KxR * KyR) = tr(Ax' Ay Ay' Ax) = |Bx' W|_F^2`` with ``W = R R By``: both
  residual makers go to the cheap ``y`` side.
* The gamma moments need no ``uu`` (``n x rx ry``): ``tr(uu' uu) = sum_t |Vx[t]|^2 |Vy[t]|^2``
  and, since ``(uu uu')[t, s] = Px[t, s] Py[t, s]`` with ``P = V V'``,
  ``tr((uu' uu)^2) = |uu uu'|_F^2 = sum_{t, s} (Px[t, s] Py[t, s])^2``.

Measured agreement with causal-learn: relative p-value differences below 1e-8 (at most 6e-9 over
about 1500 PC tests at n=600, 1e-9 typical), as much from the rounding of the two eigen-solvers as
from the truncations above. The pieces live in a least-recently-used cache bounded in megabytes;
eviction only costs recomputation, never changes a p-value.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from causal_gym.stats._cache import ByteBoundedLRU

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

__all__ = ["KCIEngine", "hsic_width", "kci_width", "gaussian_kernel", "pivoted_cholesky", "single_threaded_blas"]

_RIDGE = 1e-3  # eps in R = eps (Kz + eps I)^-1 (causal-learn, original Matlab code)
_EIG_KEEP = 1e-5  # eigenvalues of KxR, KyR kept for the null weights, relative to the largest
_FACTOR_TOL = 1e-13  # residual diagonal of a kernel factor: rounding level for entries <= 1
_EIG_FACTOR_TOL = 1e-10  # pivots of the [x, S/2] factor that enter its eigenproblem


@cache
def _blas_controller() -> ThreadpoolController:
    # load every BLAS the computations use before threadpoolctl takes its inventory
    import scipy.linalg  # noqa: F401
    import scipy.spatial.distance  # noqa: F401
    import scipy.special  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def single_threaded_blas() -> AbstractContextManager:
    """Context in which numpy's and scipy's BLAS/LAPACK run on one thread.

    KCI works on matrices of a few hundred rows, where a second BLAS thread gains little and,
    when several processes share the cores (parallel environments, test workers), threads that
    wait on each other slow a test down by orders of magnitude (measured: eigh of a 300 x 300
    matrix, 17 ms on one thread, 4.8 s on two threads of an oversubscribed machine). One thread
    also makes every p-value independent of the machine's BLAS thread count.
    """
    return _blas_controller().limit(limits=1, user_api="blas")


def hsic_width(n: int) -> float:
    """Kernel width of the unconditional test, by sample size (causal-learn's empirical HSIC rule)."""
    return 0.8 if n < 200 else 0.5 if n < 1200 else 0.3


def kci_width(n: int) -> float:
    """Kernel width of the conditional test before division by ``|S|`` (causal-learn's empirical KCI rule)."""
    return 1.2 if n < 200 else 0.7 if n < 1200 else 0.4


def gaussian_kernel(points: np.ndarray, precision: float) -> np.ndarray:
    """Dense Gaussian kernel ``exp(-precision / 2 * |p_i - p_j|^2)`` on the rows of an ``(n, c)`` array."""
    from scipy.spatial.distance import pdist, squareform

    kernel = squareform(pdist(points, "sqeuclidean"))
    kernel *= -0.5 * precision
    return np.exp(kernel, out=kernel)


def pivoted_cholesky(kernel: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Low-rank factor of a positive semi-definite matrix by pivoted Cholesky (LAPACK ``dpstrf``).

    The pivot with the largest unexplained diagonal entry is eliminated first, until none exceeds
    ``tol``: the rank adapts to the spectrum, the cost is ``O(n^2 m)`` for rank ``m``, and
    ``kernel - L L'`` is positive semi-definite with diagonal at most ``tol``. The pivots are
    non-increasing, so the first ``k`` columns are the factor for a looser tolerance.

    Returns
    -------
    factor : ndarray of shape (n, m)
        ``L``, columns in pivot order.
    pivots : ndarray of shape (m,)
        The unexplained diagonal entry at each pivot (``L[p_j, j]^2``).
    """
    from scipy.linalg import lapack

    chol, piv, rank, info = lapack.dpstrf(kernel, tol=tol, lower=1)
    if info < 0:
        raise RuntimeError(f"LAPACK dpstrf rejected argument {-info}")
    factor = np.empty((kernel.shape[0], rank))
    factor[piv - 1] = np.tril(chol[:, :rank])
    return factor, np.diagonal(chol)[:rank] ** 2


def _centred_factor(kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # (H L)(H L)' = H K H with H = I - 11'/n
    factor, pivots = pivoted_cholesky(kernel, _FACTOR_TOL)
    return factor - factor.mean(axis=0), pivots


def _kept_directions(factor: np.ndarray) -> np.ndarray:
    """Eigenvectors of ``A A'`` times the root of their eigenvalue, for eigenvalues above the keep threshold."""
    from scipy.linalg import eigh

    eigvals, eigvecs = eigh(factor.T @ factor, driver="evd", overwrite_a=True, check_finite=False)
    keep = eigvals > eigvals.max() * _EIG_KEEP
    return factor @ eigvecs[:, keep]


def _gamma_pvalue(statistic: float, mean: float, var: float) -> float:
    """``1 - cdf`` at ``statistic`` of the gamma law with the given mean and variance (as causal-learn)."""
    from scipy.special import gammainc

    if statistic <= 0:
        return 1.0
    return float(1 - gammainc(mean**2 / var, statistic / (var / mean)))


@dataclass(frozen=True)
class _Marginal:
    """One variable's centred kernel for the unconditional test, as a factor and two traces."""

    factor: np.ndarray  # B with B B' = K
    trace: float  # tr(K) = |B|_F^2
    frob2: float  # |K|_F^2 = |B' B|_F^2

    @property
    def nbytes(self) -> int:
        return self.factor.nbytes


@dataclass(frozen=True)
class _ResidualMaker:
    """``R = eps (Kz + eps I)^-1`` for one conditioning set: Woodbury pieces or the dense matrix."""

    dense: np.ndarray | None  # R, when Kz has rank above n / 2
    factor: np.ndarray | None  # B with B B' = Kz (low-rank case)
    solved: np.ndarray | None  # B (B'B + eps I)^-1, so that R = I - solved B'

    @classmethod
    def from_kernel(cls, kernel: np.ndarray) -> _ResidualMaker:
        """Build ``R`` from the uncentred kernel on the conditioning set."""
        factor, _ = _centred_factor(kernel)
        n, m = factor.shape
        if 2 * m <= n:
            # applying I - C B' to k columns costs 4 n m k, less than the 2 n^2 k of a dense R
            gram = factor.T @ factor
            gram[np.diag_indices_from(gram)] += _RIDGE
            return cls(None, factor, np.linalg.solve(gram, factor.T).T)
        from scipy.linalg import lapack

        sums = kernel.sum(axis=0)
        regularised = kernel - (sums[None, :] + sums[:, None]) / n + sums.sum() / n**2
        regularised[np.diag_indices_from(regularised)] += _RIDGE
        chol, info = lapack.dpotrf(regularised, lower=1, overwrite_a=1)
        if info == 0:
            inverse, info = lapack.dpotri(chol, lower=1, overwrite_c=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"centred Kz + eps I is not positive definite (LAPACK info {info})")
        dense = np.tril(inverse) + np.tril(inverse, -1).T
        dense *= _RIDGE
        return cls(dense, None, None)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.dense, self.factor, self.solved) if a is not None)

    def apply(self, matrix: np.ndarray) -> np.ndarray:
        """``R @ matrix``."""
        if self.dense is not None:
            return self.dense @ matrix
        assert self.factor is not None and self.solved is not None  # the low-rank form holds both
        return matrix - self.solved @ (self.factor.T @ matrix)


@dataclass(frozen=True)
class _SideX:
    """The ``x`` side of a conditional test: kernel on ``[x, S / 2]``."""

    factor: np.ndarray  # Bx with Bx Bx' = Kx (centred)
    kept: np.ndarray  # Vx: kept eigenvectors of R Kx R times sqrt(eigenvalue)

    @property
    def nbytes(self) -> int:
        return self.factor.nbytes + self.kept.nbytes


@dataclass(frozen=True)
class _SideY:
    """The ``y`` side of a conditional test: kernel on ``y``."""

    twice_residualised: np.ndarray  # W = R R By with By By' = Ky (centred)
    kept: np.ndarray  # Vy: kept eigenvectors of R Ky R times sqrt(eigenvalue)

    @property
    def nbytes(self) -> int:
        return self.twice_residualised.nbytes + self.kept.nbytes


class KCIEngine:
    """Default-KCI p-values on one dataset, reusing factors and residual makers across tests.

    Parameters
    ----------
    data : ndarray of shape (n, d)
        Validated data (finite, no constant column).
    max_cache_mb : float
        Upper bound on the memory held by cached pieces, in megabytes; the least recently used
        are dropped first and recomputed when needed again. The largest pieces are ``n x m``
        factors with ``m <= n`` (at most 2.9 MB at n=600). A d=10, n=600 PC run would keep
        60-700 MB without a bound; capped at 256 MB it ran at most 10% slower, at 64 MB 20%.
    """

    def __init__(self, data: np.ndarray, max_cache_mb: float = 512.0) -> None:
        self.n = data.shape[0]
        self._z = (data - data.mean(axis=0)) / data.std(axis=0, ddof=1)
        self._cache = ByteBoundedLRU(int(max_cache_mb * 2**20))

    @property
    def cache_nbytes(self) -> int:
        """Bytes currently held by the cache."""
        return self._cache.nbytes

    def pvalue(self, x: int, y: int, cond: tuple[int, ...]) -> float:
        """p-value of ``x _||_ y | cond`` for validated ``x < y`` and a sorted ``cond`` without them."""
        with single_threaded_blas():
            if not cond:
                return self._unconditional(x, y)
            return self._conditional(x, y, cond)

    def _unconditional(self, x: int, y: int) -> float:
        mx, my = self._marginal(x), self._marginal(y)
        statistic = float(np.sum((mx.factor.T @ my.factor) ** 2))
        mean = mx.trace * my.trace / self.n
        var = 2 * mx.frob2 * my.frob2 / self.n / self.n
        return _gamma_pvalue(statistic, mean, var)

    def _conditional(self, x: int, y: int, cond: tuple[int, ...]) -> float:
        sx, sy = self._side_x(x, cond), self._side_y(y, cond)
        statistic = float(np.sum((sx.factor.T @ sy.twice_residualised) ** 2))
        mean = float(np.sum(sx.kept**2, axis=1) @ np.sum(sy.kept**2, axis=1))
        prod = sx.kept @ sx.kept.T
        prod *= sy.kept @ sy.kept.T
        var = 2 * float(np.vdot(prod, prod))
        return _gamma_pvalue(statistic, mean, var)

    def _precision(self, cond: tuple[int, ...]) -> float:
        return 1.0 / kci_width(self.n) ** 2 / len(cond)

    def _marginal(self, v: int) -> _Marginal:
        def compute() -> _Marginal:
            factor, _ = _centred_factor(gaussian_kernel(self._z[:, [v]], 1.0 / hsic_width(self.n) ** 2))
            return _Marginal(factor, float(np.sum(factor**2)), float(np.sum((factor.T @ factor) ** 2)))

        return self._cache.get_or_compute(("marginal", v), compute)

    def _residual_maker(self, cond: tuple[int, ...]) -> _ResidualMaker:
        def compute() -> _ResidualMaker:
            return _ResidualMaker.from_kernel(gaussian_kernel(self._z[:, list(cond)], self._precision(cond)))

        return self._cache.get_or_compute(("residual_maker", cond), compute)

    def _side_x(self, x: int, cond: tuple[int, ...]) -> _SideX:
        def compute() -> _SideX:
            points = np.concatenate([self._z[:, [x]], 0.5 * self._z[:, list(cond)]], axis=1)
            factor, pivots = _centred_factor(gaussian_kernel(points, self._precision(cond)))
            leading = factor[:, : int(np.count_nonzero(pivots > _EIG_FACTOR_TOL))]
            return _SideX(factor, _kept_directions(self._residual_maker(cond).apply(leading)))

        return self._cache.get_or_compute(("x", x, cond), compute)

    def _side_y(self, y: int, cond: tuple[int, ...]) -> _SideY:
        def compute() -> _SideY:
            factor, _ = _centred_factor(gaussian_kernel(self._z[:, [y]], self._precision(cond)))
            maker = self._residual_maker(cond)
            residualised = maker.apply(factor)
            return _SideY(maker.apply(residualised), _kept_directions(residualised))

        return self._cache.get_or_compute(("y", y, cond), compute)
