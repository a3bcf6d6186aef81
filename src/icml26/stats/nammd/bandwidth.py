"""Bandwidth selection on a held-out reference split (never on the samples that are then tested)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from icml26.stats.nammd.estimators import check_paired, paired_stats
from icml26.stats.nammd.kernels import GaussianKernel, median_bandwidth

__all__ = ["bandwidth_grid", "select_bandwidth"]


def bandwidth_grid(X: np.ndarray, Y: np.ndarray, n_grid: int = 25, span: float = 4.0) -> np.ndarray:
    """``n_grid`` bandwidths log-spaced over [median / span, median * span] around the median distance."""
    med = median_bandwidth(np.concatenate([X, Y]))
    return med * np.geomspace(1.0 / span, span, n_grid)


def select_bandwidth(
    X_ref: ArrayLike,
    Y_ref: ArrayLike,
    criterion: Literal["nammd", "mmd"] = "nammd",
    n_grid: int = 25,
    epsilon: float = 0.0,
) -> GaussianKernel:
    """The Gaussian kernel maximising the studentised statistic on the reference split.

    ``criterion="nammd"``: (NAMMD_u - epsilon) / se (the DCT statistic, delta-method se);
    ``criterion="mmd"``: (MMD^2_u - epsilon) / se, epsilon then on the MMD^2 scale. One blocked pass per grid
    point, vectorised within the pass.
    Using the test samples here would inflate the type-I error: select on a split you then discard.
    """
    X, Y = check_paired(X_ref, Y_ref, min_m=4)
    if criterion not in ("nammd", "mmd"):
        raise ValueError(f"criterion must be 'nammd' or 'mmd', got {criterion!r}")
    if n_grid < 2:
        raise ValueError(f"n_grid must be >= 2, got {n_grid}")
    best, best_score = None, -np.inf
    for bw in bandwidth_grid(X, Y, n_grid):
        stats = paired_stats(X, Y, GaussianKernel(float(bw)))
        if criterion == "nammd":
            score = (stats.nammd - epsilon) / np.sqrt(stats.var_nammd_delta())
        else:
            score = (stats.mmd2 - epsilon) / np.sqrt(stats.var_mmd2())
        if score > best_score:
            best, best_score = float(bw), float(score)
    if best is None:
        raise ValueError("no bandwidth gave a finite criterion on the reference split")
    return GaussianKernel(best)
