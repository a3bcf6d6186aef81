"""Estimators of MMD^2, the NAMMD and their variances, from paired samples, in one blocked pass.

With paired samples z_i = (x_i, y_i), i = 1..m, and a kernel with k(x, x) = K, define

    H_ij = k(x_i, x_j) + k(y_i, y_j) - k(x_i, y_j) - k(y_i, x_j)     (the MMD^2 U-statistic kernel)
    D_ij = 4K - k(x_i, x_j) - k(y_i, y_j)                            (the NAMMD denominator kernel)

    MMD^2_u = sum_{i!=j} H_ij / (m(m-1)),   Reg_u = sum_{i!=j} D_ij / (m(m-1)),   NAMMD = MMD^2_u / Reg_u.

Reg_u estimates 4K - |mu_P|^2 - |mu_Q|^2 > 0. Everything below needs only the off-diagonal row sums of H and D
and the sum of H_ij^2, so the Gram matrices are built ``block`` rows at a time: memory O(block * m), not O(m^2).

Variance of MMD^2_u (a degree-2 U-statistic; Hoeffding, 1948; Serfling, 1980, ch. 5):

    Var(U) = 4(m-2)/(m(m-1)) * zeta_1 + 2/(m(m-1)) * zeta_2,
    zeta_1 = E[h12 h13] - theta^2,   zeta_2 = E[h12^2] - theta^2.

- ``"unbiased"`` (default; our reading of the official closed form): each moment by its unbiased U-estimate,
  E[h12 h13] over distinct triples, E[h12^2] over pairs, theta^2 over distinct quadruples; needs m >= 4 and can
  come out <= 0 at small m, in which case the asymptotic estimate below is used instead;
- ``"asymptotic"``: 4 Var_i(hbar_i) / m, with hbar_i the row means of H (the leading term);
- ``"delta"``: the variance of the *ratio* NAMMD = U_H / U_D by the delta method, influence
  (hbar_i - NAMMD * dbar_i) / Reg: 4 Var_i(hbar_i - NAMMD dbar_i) / (m Reg^2); it accounts for the random
  denominator. Returned on the NAMMD scale (the others are on the MMD^2 scale).

Every variance is floored at ``VAR_FLOOR`` so that a degenerate sample never divides by zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from icml26.stats.nammd.kernels import GaussianKernel, Kernel, median_bandwidth

__all__ = [
    "VAR_FLOOR",
    "PairedStats",
    "Variance",
    "check_paired",
    "is_torch",
    "mmd2_u",
    "nammd",
    "paired_stats",
    "paired_stats_torch",
]

Variance = Literal["unbiased", "asymptotic", "delta"]
VAR_FLOOR = 1e-12


def check_paired(X: ArrayLike, Y: ArrayLike, min_m: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert paired samples: equal size m >= ``min_m``, same dimension, finite values."""
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if Y.ndim == 1:
        Y = Y[:, None]
    if X.ndim != 2 or Y.ndim != 2:
        raise ValueError(f"X and Y must be 1-d or 2-d (m samples x d features); got shapes {X.shape} and {Y.shape}")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(
            f"the NAMMD/MMD U-statistics pair x_i with y_i: X and Y need the same number of samples, "
            f"got {X.shape[0]} and {Y.shape[0]} (subsample the larger one)"
        )
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same number of features, got {X.shape[1]} and {Y.shape[1]}")
    if X.shape[0] < min_m:
        raise ValueError(f"need at least {min_m} paired samples, got {X.shape[0]}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise ValueError("X and Y must be finite (found NaN or inf)")
    return X, Y


def resolve_kernel(kernel: Kernel | None, X: np.ndarray, Y: np.ndarray) -> Kernel:
    """``None`` means a Gaussian kernel with the median heuristic on the pooled sample."""
    if kernel is None:
        return GaussianKernel(median_bandwidth(np.concatenate([X, Y])))
    if not callable(kernel) or not hasattr(kernel, "diag"):
        raise TypeError("kernel must be callable k(A, B) -> Gram matrix with a `diag` attribute (k(x, x))")
    return kernel


@dataclass(frozen=True)
class PairedStats:
    """Sufficient statistics of the paired U-statistics (all shaped like the batch dimensions)."""

    m: int
    K: float
    row_h: np.ndarray  # (..., m) off-diagonal row sums of H
    row_d: np.ndarray  # (..., m) off-diagonal row sums of D
    sum_h2: np.ndarray  # (...,) sum_{i != j} H_ij^2

    @property
    def mmd2(self) -> np.ndarray:
        return self.row_h.sum(-1) / (self.m * (self.m - 1))

    @property
    def reg(self) -> np.ndarray:
        return self.row_d.sum(-1) / (self.m * (self.m - 1))

    @property
    def nammd(self) -> np.ndarray:
        return self.mmd2 / self.reg

    def var_mmd2(self, method: Literal["unbiased", "asymptotic"] = "unbiased") -> np.ndarray:
        """Variance of MMD^2_u (see the module docstring), floored at VAR_FLOOR."""
        m = self.m
        hbar = self.row_h / (m - 1)
        asymptotic = 4.0 * hbar.var(axis=-1) / m
        if method == "asymptotic":
            return np.maximum(asymptotic, VAR_FLOOR)
        var = self.var_mmd2_unbiased_raw()
        return np.maximum(np.where(var > 0, var, asymptotic), VAR_FLOOR)

    def var_mmd2_unbiased_raw(self) -> np.ndarray:
        """The unbiased variance estimate of MMD^2_u as is (it can be <= 0 at small m); needs m >= 4."""
        m = self.m
        total = self.row_h.sum(-1)
        sum_r2 = (self.row_h**2).sum(-1)
        pairs = m * (m - 1)
        e_h2 = self.sum_h2 / pairs
        e_h12_h13 = (sum_r2 - self.sum_h2) / (pairs * (m - 2))
        theta2 = (total**2 - 4.0 * sum_r2 + 2.0 * self.sum_h2) / (pairs * (m - 2) * (m - 3))
        return np.asarray(4.0 * (m - 2) / pairs * (e_h12_h13 - theta2) + 2.0 / pairs * (e_h2 - theta2))

    def var_nammd_delta(self) -> np.ndarray:
        """Delta-method variance of the ratio NAMMD = U_H / U_D, floored at VAR_FLOOR."""
        m = self.m
        hbar, dbar = self.row_h / (m - 1), self.row_d / (m - 1)
        influence = hbar - self.nammd[..., None] * dbar
        return np.maximum(4.0 * influence.var(axis=-1) / (m * self.reg**2), VAR_FLOOR)


def paired_stats(X: np.ndarray, Y: np.ndarray, kernel: Kernel, block: int = 256) -> PairedStats:
    """One blocked pass over the Gram matrices; X, Y are (..., m, d) (leading dims batch independent tests)."""
    m = X.shape[-2]
    K = float(kernel.diag)
    batch = X.shape[:-2]
    row_h = np.empty((*batch, m))
    row_d = np.empty((*batch, m))
    sum_h2 = np.zeros(batch)
    for start in range(0, m, block):
        rows = slice(start, min(start + block, m))
        kxx = kernel(X[..., rows, :], X)
        kyy = kernel(Y[..., rows, :], Y)
        h = kxx + kyy
        d = 4.0 * K - h
        kxy = kernel(X[..., rows, :], Y)
        h -= kxy
        # One block covers everything: k(Y, X) is the transpose of k(X, Y), no need to evaluate it again.
        h -= np.swapaxes(kxy, -1, -2) if block >= m else kernel(Y[..., rows, :], X)
        idx = np.arange(rows.stop - rows.start)
        h[..., idx, idx + start] = 0.0  # drop the diagonal i == j
        d[..., idx, idx + start] = 0.0
        row_h[..., rows] = h.sum(-1)
        row_d[..., rows] = d.sum(-1)
        sum_h2 += (h * h).sum((-2, -1))
    return PairedStats(m=m, K=K, row_h=row_h, row_d=row_d, sum_h2=sum_h2)


def is_torch(x: object) -> bool:
    """True for a torch tensor (checked without importing torch)."""
    return type(x).__module__.split(".")[0] == "torch"


def paired_stats_torch(X, Y, kernel: GaussianKernel, block: int = 256) -> PairedStats:  # type: ignore[no-untyped-def]
    """:func:`paired_stats` for torch tensors (any device, e.g. CUDA), Gaussian kernel; same blocked pass.

    The O(m) sufficient statistics come back as numpy arrays; use float64 tensors for results that match the
    numpy path to round-off (float32 on a GPU is faster and agrees to ~1e-6 relative).
    """
    import torch

    if X.shape != Y.shape or X.ndim < 2:
        raise ValueError(
            f"X and Y must be paired (..., m, d) tensors of one shape, got {tuple(X.shape)}, {tuple(Y.shape)}"
        )
    if not (torch.isfinite(X).all() and torch.isfinite(Y).all()):
        raise ValueError("X and Y must be finite (found NaN or inf)")
    m = X.shape[-2]
    K = float(kernel.diag)
    scale = -1.0 / kernel.bandwidth**2

    def gram(A, B):  # type: ignore[no-untyped-def]
        d2 = (A * A).sum(-1)[..., :, None] + (B * B).sum(-1)[..., None, :] - 2.0 * (A @ B.transpose(-1, -2))
        return torch.exp(d2.clamp_min(0.0) * scale)

    row_h = torch.empty((*X.shape[:-2], m), dtype=X.dtype, device=X.device)
    row_d = torch.empty_like(row_h)
    sum_h2 = torch.zeros(X.shape[:-2], dtype=X.dtype, device=X.device)
    for start in range(0, m, block):
        stop = min(start + block, m)
        h = gram(X[..., start:stop, :], X) + gram(Y[..., start:stop, :], Y)
        d = 4.0 * K - h
        kxy = gram(X[..., start:stop, :], Y)
        h = h - kxy - (kxy.transpose(-1, -2) if block >= m else gram(Y[..., start:stop, :], X))
        idx = torch.arange(stop - start, device=X.device)
        h[..., idx, idx + start] = 0.0
        d[..., idx, idx + start] = 0.0
        row_h[..., start:stop] = h.sum(-1)
        row_d[..., start:stop] = d.sum(-1)
        sum_h2 += (h * h).sum((-2, -1))

    def host(t):  # type: ignore[no-untyped-def]
        return t.detach().to("cpu", torch.float64).numpy()

    return PairedStats(m=m, K=K, row_h=host(row_h), row_d=host(row_d), sum_h2=host(sum_h2))


def mmd2_u(X: ArrayLike, Y: ArrayLike, kernel: Kernel | None = None) -> float:
    """Unbiased MMD^2 of paired samples (i != j terms only; can be slightly negative)."""
    Xa, Ya = check_paired(X, Y, min_m=2)
    return float(paired_stats(Xa, Ya, resolve_kernel(kernel, Xa, Ya)).mmd2)


def nammd(X: ArrayLike, Y: ArrayLike, kernel: Kernel | None = None) -> float:
    """Norm-adaptive MMD estimate MMD^2_u / (4K - |mu_P|^2_u - |mu_Q|^2_u).

    The population value lies in [0, 1]; the estimate can fall slightly below 0 (unbiased numerator).
    ``kernel=None`` uses a Gaussian kernel with the median heuristic on the pooled sample.
    """
    Xa, Ya = check_paired(X, Y, min_m=2)
    return float(paired_stats(Xa, Ya, resolve_kernel(kernel, Xa, Ya)).nammd)
