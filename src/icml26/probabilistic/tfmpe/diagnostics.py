"""Metrics of the benchmark: C2ST against a reference, TARP credibility values, SBC ranks and their KS distance.

``c2st`` is sbi's (random forest, fixed seed, z-scored on the reference). ``tarp_credibility`` and ``sbc_ranks``
are vectorised over test observations; ``uniform_ks`` is sqrt(n) times the Kolmogorov-Smirnov distance of values
in [0, 1] from Uniform(0, 1): under perfect calibration its mean is about 0.87 and its 95% quantile 1.36.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["c2st", "sbc_ranks", "tarp_coverage", "tarp_credibility", "uniform_ks"]

KS_CRITICAL_95 = 1.358  # asymptotic 95% quantile of sqrt(n) * D_n under H0
KS_MEAN_H0 = 0.8687  # sqrt(pi / 2) * ln 2


def c2st(samples: torch.Tensor, reference: torch.Tensor, seed: int = 0, n_folds: int = 3) -> float:
    """Cross-validated accuracy of sbi's random-forest classifier separating ``samples`` from ``reference``
    (0.5: indistinguishable, 1: disjoint); z-scored on the reference."""
    from sbi.utils.metrics import c2st as sbi_c2st

    if samples.ndim != 2 or samples.shape[1] != reference.shape[1]:
        raise ValueError(f"samples {tuple(samples.shape)} and reference {tuple(reference.shape)} must be [n, D]")
    if not (torch.isfinite(samples).all() and torch.isfinite(reference).all()):
        raise ValueError("c2st: samples contain NaN or inf")
    return float(sbi_c2st(reference.float(), samples.float(), seed=seed, n_folds=n_folds, classifier="rf"))


def tarp_credibility(
    posterior_samples: torch.Tensor, theta: torch.Tensor, references: torch.Tensor | None = None, seed: int = 0
) -> torch.Tensor:
    """TARP's f_i (Lemos et al. 2023): the fraction of posterior draws closer to a random reference point than
    the true theta_i is. ``posterior_samples [n, B, D]``, ``theta [B, D]``; references default to Uniform over the
    box of theta (sbi's rule); everything is min-max scaled on theta first. Calibrated: f ~ Uniform(0, 1)."""
    if posterior_samples.ndim != 3 or posterior_samples.shape[1:] != theta.shape:
        raise ValueError(f"posterior_samples must be [n, B, D] with theta [B, D]; got {tuple(posterior_samples.shape)}")
    lo, hi = theta.min(0).values, theta.max(0).values
    if references is None:
        g = torch.Generator().manual_seed(seed)
        references = lo + (hi - lo) * torch.rand(theta.shape, generator=g)
    scale = hi - lo + 1e-10
    p, t, r = (posterior_samples - lo) / scale, (theta - lo) / scale, (references - lo) / scale
    d_samples = (p - r).norm(dim=-1)  # [n, B]
    d_theta = (t - r).norm(dim=-1)  # [B]
    return (d_samples < d_theta).float().mean(0)


def tarp_coverage(credibility: torch.Tensor, alphas: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Expected coverage probability ECP(alpha) = mean_i 1[f_i < alpha] on a grid of alpha (diagonal if calibrated)."""
    alphas = torch.linspace(0, 1, 21) if alphas is None else alphas
    return (credibility[None, :] < alphas[:, None]).float().mean(1), alphas


def sbc_ranks(posterior_samples: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """SBC ranks ``[B, D]``: the number of posterior draws below theta_i, per dimension (Talts et al. 2018)."""
    if posterior_samples.ndim != 3 or posterior_samples.shape[1:] != theta.shape:
        raise ValueError(f"posterior_samples must be [n, B, D] with theta [B, D]; got {tuple(posterior_samples.shape)}")
    return (posterior_samples < theta[None]).sum(0)


def uniform_ks(u: torch.Tensor | np.ndarray) -> float:
    """sqrt(n) * sup |F_n - F| of values u in [0, 1] against Uniform(0, 1)."""
    from scipy import stats

    u = np.asarray(u, dtype=float).ravel()
    if u.size == 0:
        raise ValueError("uniform_ks: no values")
    return float(np.sqrt(u.size) * stats.kstest(u, "uniform").statistic)


def sbc_uniform_ks(ranks: torch.Tensor, n_samples: int) -> list[float]:
    """Per dimension: uniform_ks of the ranks mapped to cell midpoints (rank + 1/2) / (n_samples + 1)."""
    u = (ranks.double() + 0.5) / (n_samples + 1)
    return [uniform_ks(u[:, k]) for k in range(u.shape[1])]
