"""Exact population values of MMD^2 and NAMMD: Gaussians (closed form) and weighted finite supports.

Gaussian kernel k(x, y) = exp(-|x - y|^2 / s0^2). For independent x ~ N(mu1, S1), y ~ N(mu2, S2), the
difference D = x - y ~ N(mu, S) with mu = mu1 - mu2, S = S1 + S2, and with tau^2 = s0^2 / 2

    E k(x, y) = E exp(-|D|^2 / (2 tau^2)) = det(I + S / tau^2)^(-1/2) exp(-1/2 mu^T (S + tau^2 I)^(-1) mu)

(the Gaussian integral of a Gaussian density against an unnormalised Gaussian). Then |mu_P|^2 = E k(x, x')
with x, x' ~ P independent, MMD^2 = |mu_P|^2 + |mu_Q|^2 - 2 <mu_P, mu_Q>, and
NAMMD = MMD^2 / (4K - |mu_P|^2 - |mu_Q|^2) with K = 1.

For distributions p, q over a finite support Z (rows), with Gram matrix G = k(Z, Z):
|mu_P|^2 = p^T G p, |mu_Q|^2 = q^T G q, <mu_P, mu_Q> = p^T G q (draws may coincide; the U-statistics with
i != j are unbiased for exactly these values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from icml26.stats.nammd.kernels import GaussianKernel

__all__ = [
    "PopulationValues",
    "gaussian_expected_kernel",
    "population_discrete",
    "population_gaussian",
]


@dataclass(frozen=True)
class PopulationValues:
    """Exact |mu_P|^2, |mu_Q|^2 and <mu_P, mu_Q>, and what follows from them."""

    norm_p: float
    norm_q: float
    cross: float
    K: float = 1.0

    @property
    def mmd2(self) -> float:
        return self.norm_p + self.norm_q - 2.0 * self.cross

    @property
    def reg(self) -> float:
        return 4.0 * self.K - self.norm_p - self.norm_q

    @property
    def nammd(self) -> float:
        return self.mmd2 / self.reg


def gaussian_expected_kernel(mean_diff: ArrayLike, cov_sum: ArrayLike, bandwidth: float) -> float:
    """E exp(-|D|^2 / bandwidth^2) for D ~ N(mean_diff, cov_sum)."""
    mu = np.atleast_1d(np.asarray(mean_diff, dtype=float))
    S = np.atleast_2d(np.asarray(cov_sum, dtype=float))
    d = mu.size
    if S.shape != (d, d):
        raise ValueError(f"covariance must be {d}x{d}, got {S.shape}")
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be positive and finite, got {bandwidth!r}")
    if not np.allclose(S, S.T) or np.linalg.eigvalsh((S + S.T) / 2).min() < -1e-12:
        raise ValueError("covariance must be symmetric positive semi-definite")
    tau2 = bandwidth**2 / 2.0
    _, logdet = np.linalg.slogdet(np.eye(d) + S / tau2)
    quad = mu @ np.linalg.solve(S + tau2 * np.eye(d), mu)
    return float(np.exp(-0.5 * logdet - 0.5 * quad))


def population_gaussian(
    mu1: ArrayLike, S1: ArrayLike, mu2: ArrayLike, S2: ArrayLike, bandwidth: float
) -> PopulationValues:
    """Exact values for P = N(mu1, S1), Q = N(mu2, S2) and the Gaussian kernel of ``bandwidth``."""
    mu1, mu2 = np.atleast_1d(np.asarray(mu1, float)), np.atleast_1d(np.asarray(mu2, float))
    S1, S2 = np.atleast_2d(np.asarray(S1, float)), np.atleast_2d(np.asarray(S2, float))
    zero = np.zeros_like(mu1)
    return PopulationValues(
        norm_p=gaussian_expected_kernel(zero, 2 * S1, bandwidth),
        norm_q=gaussian_expected_kernel(zero, 2 * S2, bandwidth),
        cross=gaussian_expected_kernel(mu1 - mu2, S1 + S2, bandwidth),
    )


def population_discrete(
    Z: ArrayLike, p: ArrayLike, q: ArrayLike, kernel: GaussianKernel | None = None, gram: np.ndarray | None = None
) -> PopulationValues:
    """Exact values for distributions p, q over the rows of Z (pass ``gram`` to reuse a Gram matrix)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    for name, w in (("p", p), ("q", q)):
        if w.ndim != 1 or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError(f"{name} must be a probability vector over the support")
    if gram is None:
        if kernel is None:
            raise ValueError("give a kernel or a precomputed gram matrix")
        Zf = np.asarray(Z, float)
        gram = kernel(Zf, Zf)
        K = kernel.diag
    else:
        K = float(gram[0, 0])
    if gram.shape != (p.size, p.size) or q.size != p.size:
        raise ValueError(f"support of size {gram.shape[0]} but p, q have sizes {p.size}, {q.size}")
    gp, gq = gram @ p, gram @ q
    return PopulationValues(norm_p=float(p @ gp), norm_q=float(q @ gq), cross=float(p @ gq), K=float(K))
