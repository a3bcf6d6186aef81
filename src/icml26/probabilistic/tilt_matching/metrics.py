"""Sample-quality metrics: exact W2 between equal-size samples, energy W1, mode fractions, Gaussian W2."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["energy_w1", "gaussian_w2", "mode_fractions", "w2_exact"]


def _array(x: torch.Tensor | np.ndarray, name: str) -> np.ndarray:
    a = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or len(a) == 0:
        raise ValueError(f"{name} must be a non-empty array of shape [n, d], got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has non-finite values")
    return a


def w2_exact(x: torch.Tensor | np.ndarray, y: torch.Tensor | np.ndarray) -> float:
    """The exact 2-Wasserstein distance between two equal-size empirical measures.

    With equal sizes and uniform weights the optimal plan is a permutation (Birkhoff), so the assignment problem
    solved by ``scipy.optimize.linear_sum_assignment`` is the exact optimal transport.
    """
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    a, b = _array(x, "x"), _array(y, "y")
    if a.shape != b.shape:
        raise ValueError(f"w2_exact needs samples of the same shape, got {a.shape} and {b.shape}")
    cost = cdist(a, b, "sqeuclidean")
    rows, cols = linear_sum_assignment(cost)
    return float(np.sqrt(cost[rows, cols].mean()))


def energy_w1(e_x: torch.Tensor | np.ndarray, e_y: torch.Tensor | np.ndarray) -> float:
    """W1 between the two samples' energy histograms (``scipy.stats.wasserstein_distance``)."""
    from scipy.stats import wasserstein_distance

    a = _array(np.reshape(np.asarray(e_x.detach() if isinstance(e_x, torch.Tensor) else e_x), (-1, 1)), "e_x")
    b = _array(np.reshape(np.asarray(e_y.detach() if isinstance(e_y, torch.Tensor) else e_y), (-1, 1)), "e_y")
    return float(wasserstein_distance(a[:, 0], b[:, 0]))


def mode_fractions(x: torch.Tensor | np.ndarray, means: torch.Tensor | np.ndarray) -> np.ndarray:
    """Fraction of the samples whose nearest mode is each mean (a mixture's modes: exact assignment)."""
    from scipy.spatial.distance import cdist

    a, m = _array(x, "x"), _array(means, "means")
    if a.shape[1] != m.shape[1]:
        raise ValueError(f"samples have dimension {a.shape[1]}, the modes {m.shape[1]}")
    nearest = cdist(a, m).argmin(axis=1)
    return np.bincount(nearest, minlength=len(m)) / len(a)


def gaussian_w2(mean1: np.ndarray, cov1: np.ndarray, mean2: np.ndarray, cov2: np.ndarray) -> float:
    """W2 between two Gaussians: ||m1 - m2||^2 + tr(C1 + C2 - 2 (C2^1/2 C1 C2^1/2)^1/2), then the square root."""
    from scipy.linalg import sqrtm

    m1, m2 = np.asarray(mean1, float), np.asarray(mean2, float)
    c1, c2 = np.atleast_2d(cov1).astype(float), np.atleast_2d(cov2).astype(float)
    s2 = np.real(sqrtm(c2))
    cross = np.real(sqrtm(s2 @ c1 @ s2))
    value = float(((m1 - m2) ** 2).sum() + np.trace(c1 + c2 - 2 * cross))
    return float(np.sqrt(max(value, 0.0)))
