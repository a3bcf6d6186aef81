"""Estimators of MMD^2, the NAMMD and their variances, from paired samples, in one blocked pass.

With paired samples z_i = (x_i, y_i), i = 1..m, and a kernel with k(x, x) = K, define

    H_ij = k(x_i, x_j) + k(y_i, y_j) - k(x_i, y_j) - k(y_i, x_j)     (the MMD^2 U-statistic kernel)
    D_ij = 4K - k(x_i, x_j) - k(y_i, y_j)                            (the NAMMD denominator kernel)

    MMD^2_u = sum_{i!=j} H_ij / (m(m-1)),   Reg_u = sum_{i!=j} D_ij / (m(m-1)),   NAMMD = MMD^2_u / Reg_u.

Reg_u estimates 4K - |mu_P|^2 - |mu_Q|^2 > 0. Everything below needs only O(m) sufficient statistics: the row
sums of H and of the Gram blocks Kxx, Kyy, Kxy (and Kxy's column sums) and the sums of their squares, so the Gram
matrices can be built ``block`` rows at a time: memory O(block * m), not O(m^2).

Variance of MMD^2_u (a degree-2 U-statistic; Hoeffding, 1948; Serfling, 1980, ch. 5):

    Var(U) = 4(m-2)/(m(m-1)) * zeta_1 + 2/(m(m-1)) * zeta_2,
    zeta_1 = E[h12 h13] - theta^2,   zeta_2 = E[h12^2] - theta^2.

- ``"unbiased"`` (default; *ours*, not the official code's formula): each moment of the paired kernel H by its
  exact unbiased U-estimate, E[h12 h13] over distinct triples, E[h12^2] over pairs, theta^2 over distinct
  quadruples (checked against explicit enumeration in the tests); needs m >= 4 and can come out <= 0 at small m,
  in which case the asymptotic estimate below is used instead;
- ``"official"``: the closed form of the official code (zhijianzhouml/NAMMD, ``_asymptotic_values``), re-derived
  here from its sums: the same Var(U) expression, but zeta_1 and zeta_2 assembled from moment estimates of the
  three Gram blocks Kxx, Kyy (diagonal dropped) and Kxy (diagonal *kept*), with its own coefficients (its
  quadruple term is S^2 - 4|Ke|^2 - 8|K|_F^2 where the unbiased one has + 2|K|_F^2, and zeta_2 reuses the blocks'
  zeta_1 terms). Unlike H, those block moments keep the kernel's constant level (add c to every kernel value:
  H and our estimate are unchanged, the closed form is not), so its error grows as the kernel widens and H
  shrinks: mean / Monte Carlo variance 0.98 at s0 = 1, 1.11 at s0 = 3 and 1.86 at s0 = 9 (ours 0.97-1.02; Gaussian
  pair at s = 0.5, m = 200), and per sample the ratio of the two estimates spreads over 0.7-1.5 at m = 50 and
  0.84-1.18 at m = 200, s0 = 1 (1%-99% quantiles). A non-positive value falls back to the asymptotic estimate, as
  for ``"unbiased"``. That is why ours is the default;
- ``"asymptotic"``: 4 Var_i(hbar_i) / m, with hbar_i the row means of H (the leading term);
- ``"delta"``: the variance of the *ratio* NAMMD = U_H / U_D by the delta method, influence
  (hbar_i - NAMMD * dbar_i) / Reg: 4 Var_i(hbar_i - NAMMD dbar_i) / (m Reg^2); it accounts for the random
  denominator. Returned on the NAMMD scale (the others are on the MMD^2 scale).

Every variance is floored at ``VAR_FLOOR`` so that a degenerate sample never divides by zero.

Block size: ``block=None`` (the default) picks it with :func:`auto_block` from measurements (numpy, one thread):
whole Gram matrices for small samples, where k(Y, X) = k(X, Y)^T saves one kernel evaluation, and row blocks of
about 1 MB per Gram array beyond that, which stay in cache: at m = 2000, 65-row blocks take 66 ms against 94 ms
for whole matrices and 78 ms for 256-row blocks; at m = 4000, 244 ms against 740 ms. Memory is then linear in m.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from icml26.stats.nammd.kernels import GaussianKernel, Kernel, median_bandwidth

__all__ = [
    "BATCH_ELEMENTS",
    "BLOCK_ELEMENTS",
    "VAR_FLOOR",
    "PairedStats",
    "Variance",
    "auto_block",
    "check_paired",
    "is_torch",
    "mmd2_u",
    "nammd",
    "paired_stats",
    "paired_stats_torch",
]

Variance = Literal["unbiased", "official", "asymptotic", "delta"]
VAR_FLOOR = 1e-12
BLOCK_ELEMENTS = 2**17  # float64 values per Gram block of one test: 1 MB, cache-sized
BATCH_ELEMENTS = 2**24  # cap on a batched Gram block: 128 MB


def auto_block(m: int, batch: int = 1) -> int:
    """Rows per Gram block for m paired samples (``batch`` tests at once).

    About ``BLOCK_ELEMENTS`` values per test's block; whole matrices once that covers half the rows (two blocks
    would lose the k(Y, X) = k(X, Y)^T shortcut and gain no locality); never more than ``BATCH_ELEMENTS`` values
    in a batched block. Measured (d = 10, one thread): best at m <= 300 with whole matrices, at m = 1000-4000 with
    64-128 rows.
    """
    rows = BLOCK_ELEMENTS // m
    if 2 * rows >= m:
        rows = m
    return int(max(1, min(rows, BATCH_ELEMENTS // max(1, batch * m))))


def check_paired(X: ArrayLike, Y: ArrayLike, min_m: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert paired samples: equal size m >= ``min_m``, same dimension, real and finite values."""
    for name, A in (("X", X), ("Y", Y)):
        if np.iscomplexobj(A):
            raise TypeError(f"{name} is complex: the kernels here act on real vectors (split real and imaginary parts)")
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
    """Sufficient statistics of the paired U-statistics (all shaped like the batch dimensions).

    Off-diagonal (i != j) sums for H, Kxx and Kyy; Kxy's sums keep its diagonal k(x_i, y_i), as the official
    closed-form variance reads them.
    """

    m: int
    K: float
    row_h: np.ndarray  # (..., m) off-diagonal row sums of H
    row_x: np.ndarray  # (..., m) off-diagonal row sums of Kxx
    row_y: np.ndarray  # (..., m) off-diagonal row sums of Kyy
    row_xy: np.ndarray  # (..., m) row sums of Kxy (diagonal included)
    col_xy: np.ndarray  # (..., m) column sums of Kxy (diagonal included)
    sum_h2: np.ndarray  # (...,) sum_{i != j} H_ij^2
    sum_x2: np.ndarray  # (...,) sum_{i != j} Kxx_ij^2
    sum_y2: np.ndarray  # (...,) sum_{i != j} Kyy_ij^2
    sum_xy2: np.ndarray  # (...,) sum_{i, j} Kxy_ij^2

    @property
    def row_d(self) -> np.ndarray:
        """Off-diagonal row sums of D = 4K - Kxx - Kyy."""
        return 4.0 * self.K * (self.m - 1) - self.row_x - self.row_y

    @property
    def mmd2(self) -> np.ndarray:
        return self.row_h.sum(-1) / (self.m * (self.m - 1))

    @property
    def reg(self) -> np.ndarray:
        return self.row_d.sum(-1) / (self.m * (self.m - 1))

    @property
    def nammd(self) -> np.ndarray:
        return self.mmd2 / self.reg

    def var_mmd2(self, method: Literal["unbiased", "official", "asymptotic"] = "unbiased") -> np.ndarray:
        """Variance of MMD^2_u (see the module docstring), floored at VAR_FLOOR."""
        m = self.m
        hbar = self.row_h / (m - 1)
        asymptotic = 4.0 * hbar.var(axis=-1) / m
        if method == "asymptotic":
            return np.maximum(asymptotic, VAR_FLOOR)
        if method == "unbiased":
            var = self.var_mmd2_unbiased_raw()
        elif method == "official":
            var = self.var_mmd2_official_raw()
        else:
            raise ValueError(f"method must be 'unbiased', 'official' or 'asymptotic', got {method!r}")
        return np.maximum(np.where(var > 0, var, asymptotic), VAR_FLOOR)

    def var_mmd2_unbiased_raw(self) -> np.ndarray:
        """Our unbiased variance estimate of MMD^2_u as is (it can be <= 0 at small m); needs m >= 4."""
        m = self.m
        total = self.row_h.sum(-1)
        sum_r2 = (self.row_h**2).sum(-1)
        pairs = m * (m - 1)
        e_h2 = self.sum_h2 / pairs
        e_h12_h13 = (sum_r2 - self.sum_h2) / (pairs * (m - 2))
        theta2 = (total**2 - 4.0 * sum_r2 + 2.0 * self.sum_h2) / (pairs * (m - 2) * (m - 3))
        return np.asarray(4.0 * (m - 2) / pairs * (e_h12_h13 - theta2) + 2.0 / pairs * (e_h2 - theta2))

    def var_mmd2_official_raw(self) -> np.ndarray:
        """The official code's closed-form variance of MMD^2_u as is (it can be <= 0 at small m); needs m >= 4.

        Written from its sums: with r = row sums, S = totals, F = sums of squares of the blocks,
        xi_B = (|r_B|^2 - F_B) / m^(3) - (S_B^2 - 4 |r_B|^2 - 8 F_B) / m^(4) for B = Kxx, Kyy (falling factorials
        m^(k)), t = (S_xy^2 - |r_xy|^2 - |c_xy|^2 + F_xy) / (m^2 (m-1)^2) and the cross products
        u_x = r_x . r_xy, u_y = r_y . c_xy, a = m^2 (m-1), b = a (m-2):

            zeta_1 = xi_x + xi_y + (|r_xy|^2 + |c_xy|^2 - 2 F_xy) / a - 2 t
                     - 2 (u_x + u_y) / a + 2 (S_x S_xy + S_y S_xy - 2 u_x - 2 u_y) / b,
            zeta_2 = xi_x + xi_y + 2 F_xy / m^2 - 2 t
                     - 4 (u_x + u_y) / a + 4 (S_x S_xy + S_y S_xy - 2 u_x - 2 u_y) / b,
            Var = 4 (m-2) / (m (m-1)) zeta_1 + 2 / (m (m-1)) zeta_2.
        """
        m = self.m
        m3 = m * (m - 1) * (m - 2)
        m4 = m3 * (m - 3)
        a = m * m * (m - 1)
        b = a * (m - 2)

        def dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
            return np.einsum("...i,...i->...", u, v)

        def xi(row: np.ndarray, sq: np.ndarray) -> np.ndarray:
            r2, total = dot(row, row), row.sum(-1)
            return (r2 - sq) / m3 - (total**2 - 4.0 * r2 - 8.0 * sq) / m4

        s_x, s_y, s_xy = self.row_x.sum(-1), self.row_y.sum(-1), self.row_xy.sum(-1)
        r2_xy, c2_xy, f_xy = dot(self.row_xy, self.row_xy), dot(self.col_xy, self.col_xy), self.sum_xy2
        t = (s_xy**2 - r2_xy - c2_xy + f_xy) / (m * m * (m - 1) ** 2)
        u = dot(self.row_x, self.row_xy) + dot(self.row_y, self.col_xy)
        cross = (s_x + s_y) * s_xy - 2.0 * u
        blocks = xi(self.row_x, self.sum_x2) + xi(self.row_y, self.sum_y2) - 2.0 * t
        zeta_1 = blocks + (r2_xy + c2_xy - 2.0 * f_xy) / a - 2.0 * u / a + 2.0 * cross / b
        zeta_2 = blocks + 2.0 * f_xy / (m * m) - 4.0 * u / a + 4.0 * cross / b
        return np.asarray(4.0 * (m - 2) / (m * (m - 1)) * zeta_1 + 2.0 / (m * (m - 1)) * zeta_2)

    def var_nammd_delta(self) -> np.ndarray:
        """Delta-method variance of the ratio NAMMD = U_H / U_D, floored at VAR_FLOOR."""
        m = self.m
        hbar, dbar = self.row_h / (m - 1), self.row_d / (m - 1)
        influence = hbar - self.nammd[..., None] * dbar
        return np.maximum(4.0 * influence.var(axis=-1) / (m * self.reg**2), VAR_FLOOR)


def _sum_sq(a: np.ndarray) -> np.ndarray:
    """Sum of squares over the last two axes (no temporary array)."""
    return np.einsum("...ij,...ij->...", a, a)


def paired_stats(X: np.ndarray, Y: np.ndarray, kernel: Kernel, block: int | None = None) -> PairedStats:
    """One blocked pass over the Gram matrices; X, Y are (..., m, d) (leading dims batch independent tests).

    ``block=None`` chooses the rows per block with :func:`auto_block`.
    """
    m = X.shape[-2]
    K = float(kernel.diag)
    batch = X.shape[:-2]
    block = auto_block(m, int(np.prod(batch))) if block is None else block
    rows_out = {name: np.empty((*batch, m)) for name in ("h", "x", "y", "xy")}
    col_xy = np.zeros((*batch, m))
    sums = {name: np.zeros(batch) for name in ("h", "x", "y", "xy")}
    for start in range(0, m, block):
        rows = slice(start, min(start + block, m))
        idx = np.arange(rows.stop - rows.start)
        kxx = kernel(X[..., rows, :], X)
        kyy = kernel(Y[..., rows, :], Y)
        kxy = kernel(X[..., rows, :], Y)
        kxx[..., idx, idx + start] = 0.0  # drop the diagonal i == j
        kyy[..., idx, idx + start] = 0.0
        rows_out["x"][..., rows] = kxx.sum(-1)
        rows_out["y"][..., rows] = kyy.sum(-1)
        rows_out["xy"][..., rows] = kxy.sum(-1)
        col_xy += kxy.sum(-2)
        sums["x"] += _sum_sq(kxx)
        sums["y"] += _sum_sq(kyy)
        sums["xy"] += _sum_sq(kxy)
        h = kxx + kyy
        h -= kxy
        # One block covers everything: k(Y, X) is the transpose of k(X, Y), no need to evaluate it again.
        h -= np.swapaxes(kxy, -1, -2) if block >= m else kernel(Y[..., rows, :], X)
        h[..., idx, idx + start] = 0.0
        rows_out["h"][..., rows] = h.sum(-1)
        sums["h"] += _sum_sq(h)
    return PairedStats(
        m=m,
        K=K,
        row_h=rows_out["h"],
        row_x=rows_out["x"],
        row_y=rows_out["y"],
        row_xy=rows_out["xy"],
        col_xy=col_xy,
        sum_h2=sums["h"],
        sum_x2=sums["x"],
        sum_y2=sums["y"],
        sum_xy2=sums["xy"],
    )


def is_torch(x: object) -> bool:
    """True for a torch tensor (checked without importing torch)."""
    return type(x).__module__.split(".")[0] == "torch"


def paired_stats_torch(X, Y, kernel: GaussianKernel, block: int | None = None) -> PairedStats:  # type: ignore[no-untyped-def]
    """:func:`paired_stats` for torch tensors (any device, e.g. CUDA), Gaussian kernel; same blocked pass.

    The O(m) sufficient statistics come back as numpy arrays; use float64 tensors for results that match the
    numpy path to round-off (float32 on a GPU is faster and agrees to ~1e-6 relative).
    """
    import torch

    if X.shape != Y.shape or X.ndim < 2:
        raise ValueError(
            f"X and Y must be paired (..., m, d) tensors of one shape, got {tuple(X.shape)}, {tuple(Y.shape)}"
        )
    if X.is_complex() or Y.is_complex():
        raise TypeError("X or Y is complex: the kernels here act on real vectors (split real and imaginary parts)")
    if not (torch.isfinite(X).all() and torch.isfinite(Y).all()):
        raise ValueError("X and Y must be finite (found NaN or inf)")
    m = X.shape[-2]
    K = float(kernel.diag)
    batch = X.shape[:-2]
    block = auto_block(m, int(np.prod(batch))) if block is None else block
    scale = -1.0 / kernel.bandwidth**2

    def gram(A, B):  # type: ignore[no-untyped-def]
        d2 = (A * A).sum(-1)[..., :, None] + (B * B).sum(-1)[..., None, :] - 2.0 * (A @ B.transpose(-1, -2))
        return torch.exp(d2.clamp_min(0.0) * scale)

    def sum_sq(a):  # type: ignore[no-untyped-def]
        return (a * a).sum((-2, -1))

    rows_out = {name: torch.empty((*batch, m), dtype=X.dtype, device=X.device) for name in ("h", "x", "y", "xy")}
    col_xy = torch.zeros((*batch, m), dtype=X.dtype, device=X.device)
    sums = {name: torch.zeros(batch, dtype=X.dtype, device=X.device) for name in ("h", "x", "y", "xy")}
    for start in range(0, m, block):
        stop = min(start + block, m)
        idx = torch.arange(stop - start, device=X.device)
        kxx, kyy = gram(X[..., start:stop, :], X), gram(Y[..., start:stop, :], Y)
        kxy = gram(X[..., start:stop, :], Y)
        kxx[..., idx, idx + start] = 0.0
        kyy[..., idx, idx + start] = 0.0
        rows_out["x"][..., start:stop] = kxx.sum(-1)
        rows_out["y"][..., start:stop] = kyy.sum(-1)
        rows_out["xy"][..., start:stop] = kxy.sum(-1)
        col_xy += kxy.sum(-2)
        sums["x"] += sum_sq(kxx)
        sums["y"] += sum_sq(kyy)
        sums["xy"] += sum_sq(kxy)
        h = kxx + kyy - kxy - (kxy.transpose(-1, -2) if block >= m else gram(Y[..., start:stop, :], X))
        h[..., idx, idx + start] = 0.0
        rows_out["h"][..., start:stop] = h.sum(-1)
        sums["h"] += sum_sq(h)

    def host(t):  # type: ignore[no-untyped-def]
        return t.detach().to("cpu", torch.float64).numpy()

    return PairedStats(
        m=m,
        K=K,
        row_h=host(rows_out["h"]),
        row_x=host(rows_out["x"]),
        row_y=host(rows_out["y"]),
        row_xy=host(rows_out["xy"]),
        col_xy=host(col_xy),
        sum_h2=host(sums["h"]),
        sum_x2=host(sums["x"]),
        sum_y2=host(sums["y"]),
        sum_xy2=host(sums["xy"]),
    )


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
