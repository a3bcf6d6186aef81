"""Closeness tests (is the pair at least epsilon-far?) with NAMMD and with MMD, and a plain two-sample test.

Closeness test (DCT), H0: NAMMD(P, Q) <= epsilon against H1: NAMMD(P, Q) > epsilon. By the asymptotic normality
of the U-statistic, reject at level alpha when

    z = (NAMMD_u - epsilon) / (sigma_u / Reg_u) > z_{1-alpha},

with sigma_u^2 the variance of MMD^2_u (``variance="unbiased"``, ours and the default: the exact unbiased
U-estimate; ``"official"``: the official code's closed form; ``"asymptotic"``: the leading term), or with the
delta-method standard error of the ratio in the denominator (``variance="delta"``). The ``"unbiased"`` and
``"official"`` tests decide differently on 0.3-3% of the claims' samples at their fixed kernel (fewer as m
grows), and on 4% at m = 200 (up to a quarter in one cell) at the wide kernels the official bandwidth rule picks,
where the official closed form overestimates the variance (every card records the rate per test).
The p-value is 1 - Phi(z), so the test is exact only asymptotically: at small m (below about 50) the type-I
error can exceed alpha.

The MMD baseline is the same construction on MMD^2_u with its own threshold epsilon_mmd on the MMD^2 scale:
z = (MMD^2_u - epsilon_mmd) / sigma_u. For the two tests to ask the same question, epsilon_mmd must be the MMD^2
of the same boundary pair whose NAMMD is epsilon (``reproduce.py`` builds such pairs exactly).

Why no permutation null here: permuting X and Y simulates P = Q, i.e. NAMMD = 0, not the boundary
NAMMD = epsilon of the closeness null; a permutation test would calibrate the wrong hypothesis and reject
far too often. :class:`NAMMDTwoSampleTest` is the place for a permutation null: there H0 is P = Q.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from icml26.stats.nammd.estimators import (
    PairedStats,
    Variance,
    check_paired,
    is_torch,
    paired_stats,
    paired_stats_torch,
    resolve_kernel,
)
from icml26.stats.nammd.kernels import GaussianKernel, Kernel, median_bandwidth

__all__ = [
    "ClosenessTestResult",
    "DataDependentKernelWarning",
    "MMDClosenessTest",
    "NAMMDClosenessTest",
    "NAMMDTwoSampleTest",
    "TwoSampleResult",
]


def torch_to_numpy(X, Y) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The pooled sample (X then Y) on the host, for the median heuristic (at most 1000 rows are used)."""
    import torch

    return torch.cat([X, Y]).detach().to("cpu", torch.float64).numpy()


def _norm_sf(z: np.ndarray) -> np.ndarray:
    """Standard normal survival function (erfc keeps precision in the upper tail)."""
    from scipy.special import ndtr

    return np.asarray(ndtr(-z))


def _norm_ppf(p: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(p))


@dataclass(frozen=True)
class ClosenessTestResult:
    """scipy-like result of a closeness test; arrays when the test was run on a batch of samples."""

    statistic: float  # the studentised z
    pvalue: float
    reject: bool
    estimate: float  # NAMMD_u (or MMD^2_u for the MMD test)
    se: float  # standard error of ``estimate``
    epsilon: float
    alpha: float


def _check_level(alpha: float) -> None:
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")


class DataDependentKernelWarning(UserWarning):
    """The closeness test's kernel is fitted on the very sample it tests (``kernel=None``)."""


class _ClosenessTest:
    variances: tuple[str, ...] = ("unbiased", "official", "asymptotic")

    def __init__(
        self, epsilon: float, alpha: float, kernel: Kernel | None, variance: Variance, block: int | None
    ) -> None:
        _check_level(alpha)
        if variance not in self.variances:
            raise ValueError(f"variance must be one of {self.variances}, got {variance!r}")
        if block is not None and block < 1:
            raise ValueError(f"block must be >= 1 (or None: chosen from m), got {block}")
        if kernel is None:
            warnings.warn(
                "kernel=None fits a median-heuristic bandwidth on each tested sample, so epsilon refers to a "
                "different kernel for every pair: fix the kernel on reference data (GaussianKernel.median(Z_ref) "
                "or select_bandwidth(X_ref, Y_ref))",
                DataDependentKernelWarning,
                stacklevel=3,
            )
        self.epsilon, self.alpha, self.kernel, self.variance, self.block = epsilon, alpha, kernel, variance, block

    def _stats(self, X: ArrayLike, Y: ArrayLike) -> PairedStats:
        """Validate the samples and compute the sufficient statistics (on the tensors' device for torch input)."""
        if is_torch(X) and is_torch(Y) and (self.kernel is None or isinstance(self.kernel, GaussianKernel)):
            Xt, Yt = (t[:, None] if t.ndim == 1 else t for t in (X, Y))  # type: ignore[union-attr]
            if Xt.is_complex() or Yt.is_complex():
                raise TypeError("X or Y is complex: the kernels here act on real vectors (split real/imaginary parts)")
            if Xt.ndim != 2 or Yt.ndim != 2:
                raise ValueError("test() takes one pair of samples: (m, d) tensors; use paired_stats_torch for batches")
            if Xt.shape[0] < 4:
                raise ValueError(f"need at least 4 paired samples, got {Xt.shape[0]}")
            Yt = Yt.to(dtype=Xt.dtype, device=Xt.device)
            if self.kernel is None:  # the numpy path's rule: median heuristic on the pooled sample
                pooled = torch_to_numpy(Xt, Yt)
                kernel = GaussianKernel(median_bandwidth(pooled))
            else:
                kernel = self.kernel
            return paired_stats_torch(Xt, Yt, kernel, self.block)
        Xa, Ya = check_paired(X, Y, min_m=4)
        return paired_stats(Xa, Ya, resolve_kernel(self.kernel, Xa, Ya), self.block)

    def _result(self, z: np.ndarray, estimate: np.ndarray, se: np.ndarray) -> ClosenessTestResult:
        pvalue = _norm_sf(z)
        return ClosenessTestResult(
            statistic=float(z),
            pvalue=float(pvalue),
            reject=bool(pvalue < self.alpha),
            estimate=float(estimate),
            se=float(se),
            epsilon=self.epsilon,
            alpha=self.alpha,
        )

    def critical_value(self) -> float:
        """Reject when the statistic exceeds z_{1-alpha}."""
        return _norm_ppf(1.0 - self.alpha)


class NAMMDClosenessTest(_ClosenessTest):
    """NAMMD distribution closeness test: H0 NAMMD(P, Q) <= epsilon vs H1 NAMMD(P, Q) > epsilon.

    Parameters
    ----------
    epsilon : closeness threshold on the NAMMD scale, in [0, 1).
    alpha : level of the test.
    kernel : a bounded kernel (``GaussianKernel(bandwidth)``, e.g. from :func:`select_bandwidth` on a held-out
        reference split); ``None`` uses the median heuristic on the pooled tested sample, which makes epsilon's
        meaning depend on the data (a ``DataDependentKernelWarning`` says so).
    variance : ``"unbiased"`` (default; ours: the exact unbiased U-estimate of Var(MMD^2_u)), ``"official"`` (the
        official code's closed form), ``"asymptotic"`` or ``"delta"`` (see ``estimators``).
    block : Gram rows per block; ``None`` (default) picks it from m (``estimators.auto_block``).

    References: Zhou et al., "NAMMD: norm-adaptive MMD for distribution closeness testing", ICML 2026;
    Gretton et al., "A kernel two-sample test", JMLR 2012.
    """

    variances = ("unbiased", "official", "asymptotic", "delta")

    def __init__(
        self,
        epsilon: float,
        alpha: float = 0.05,
        kernel: Kernel | None = None,
        variance: Variance = "unbiased",
        block: int | None = None,
    ) -> None:
        if not (0.0 <= epsilon < 1.0):
            raise ValueError(f"epsilon is a NAMMD value and must lie in [0, 1), got {epsilon!r}")
        super().__init__(epsilon, alpha, kernel, variance, block)

    def statistic(self, stats: PairedStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z, NAMMD estimate, its standard error) from ``PairedStats``; vectorised over a batch."""
        est = stats.nammd
        if self.variance == "delta":
            se = np.sqrt(stats.var_nammd_delta())
        else:
            se = np.sqrt(stats.var_mmd2(self.variance)) / stats.reg
        return (est - self.epsilon) / se, est, se

    def test(self, X: ArrayLike, Y: ArrayLike) -> ClosenessTestResult:
        """Run the test on paired samples X ~ P, Y ~ Q of equal size m >= 4 (arrays, or torch tensors on any
        device: the Gram blocks are then computed by torch there)."""
        return self._result(*self.statistic(self._stats(X, Y)))


class MMDClosenessTest(_ClosenessTest):
    """MMD closeness test (the baseline): H0 MMD^2(P, Q) <= epsilon_mmd vs H1 MMD^2(P, Q) > epsilon_mmd.

    ``epsilon_mmd`` is on the MMD^2 scale (>= 0). Same kernel, samples and variance estimate as the NAMMD test.
    """

    def __init__(
        self,
        epsilon_mmd: float,
        alpha: float = 0.05,
        kernel: Kernel | None = None,
        variance: Variance = "unbiased",
        block: int | None = None,
    ) -> None:
        if not (math.isfinite(epsilon_mmd) and epsilon_mmd >= 0.0):
            raise ValueError(f"epsilon_mmd is an MMD^2 value and must be >= 0, got {epsilon_mmd!r}")
        super().__init__(epsilon_mmd, alpha, kernel, variance, block)

    def statistic(self, stats: PairedStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z, MMD^2 estimate, its standard error) from ``PairedStats``; vectorised over a batch."""
        se = np.sqrt(stats.var_mmd2(self.variance))
        return (stats.mmd2 - self.epsilon) / se, stats.mmd2, se

    def test(self, X: ArrayLike, Y: ArrayLike) -> ClosenessTestResult:
        return self._result(*self.statistic(self._stats(X, Y)))


def _split_nammd(G: np.ndarray, splits: np.ndarray, m: int, K: float) -> np.ndarray:
    """NAMMD_u of each split of the pool (rows: first m indices are X, the rest Y), from a zero-diagonal Gram."""
    a, b = splits[:, :m], splits[:, m:]
    s_xx = G[a[:, :, None], a[:, None, :]].sum((1, 2))
    s_yy = G[b[:, :, None], b[:, None, :]].sum((1, 2))
    kxy = G[a[:, :, None], b[:, None, :]]
    s_xy = kxy.sum((1, 2)) - np.einsum("kii->k", kxy)  # cross pairs i != j only
    pairs = m * (m - 1)
    return np.asarray((s_xx + s_yy - 2.0 * s_xy) / (4.0 * K * pairs - s_xx - s_yy))


@dataclass(frozen=True)
class TwoSampleResult:
    statistic: float  # NAMMD_u
    pvalue: float
    reject: bool
    n_permutations: int


class NAMMDTwoSampleTest:
    """Permutation two-sample test of H0: P = Q with the NAMMD statistic (here a permutation null is right).

    The pooled Gram matrix is computed once (O(m^2) memory); each permutation re-splits the pool into new
    pairs and re-evaluates NAMMD from sub-block sums. p-value = (1 + #{perm >= observed}) / (1 + n_permutations).
    """

    def __init__(
        self, alpha: float = 0.05, kernel: Kernel | None = None, n_permutations: int = 500, seed: int | None = 0
    ) -> None:
        _check_level(alpha)
        if n_permutations < 1:
            raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
        self.alpha, self.kernel, self.n_permutations, self.seed = alpha, kernel, n_permutations, seed

    def test(self, X: ArrayLike, Y: ArrayLike) -> TwoSampleResult:
        Xa, Ya = check_paired(X, Y, min_m=4)
        kernel = resolve_kernel(self.kernel, Xa, Ya)
        m = len(Xa)
        pool = np.concatenate([Xa, Ya])
        G = kernel(pool, pool)
        np.fill_diagonal(G, 0.0)
        rng = np.random.default_rng(self.seed)
        splits = np.vstack([np.arange(2 * m), *(rng.permutation(2 * m) for _ in range(self.n_permutations))])
        chunk = max(1, 2_000_000 // (m * m))  # bounds the gathered (chunk, m, m) blocks to ~16 MB each
        values = np.concatenate(
            [_split_nammd(G, s, m, kernel.diag) for s in np.array_split(splits, range(chunk, len(splits), chunk))]
        )
        observed = values[0]
        pvalue = (1.0 + np.sum(values[1:] >= observed)) / (1.0 + self.n_permutations)
        return TwoSampleResult(float(observed), float(pvalue), bool(pvalue < self.alpha), self.n_permutations)
