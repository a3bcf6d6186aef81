"""Bandwidth selection on a held-out reference split (never on the samples that are then tested).

Two rules, each a grid of Gaussian bandwidths around the median distance and a studentised criterion maximised
over it, one kernel per test (``criterion="nammd"`` for the NAMMD test, ``"mmd"`` for the MMD test):

- ``rule="official"`` (default; the official code's ``kernel_selection``): the grid is
  ``median * logspace(-1, 1, n_grid)``, with the median the lower median of the positive squared distances
  between the pooled reference points (self-pairs excluded), then its square root; the criterion is the
  statistic itself over its standard error, MMD^2_u / se or NAMMD_u / se, with se = sd(row influences) / sqrt(m)
  (row means of H for MMD, (hbar_i - NAMMD dbar_i) / Reg for NAMMD; sample sd, ddof = 1).
- ``rule="ours"``: the grid is ``median * geomspace(1/4, 4, n_grid)`` (the median heuristic of
  :func:`median_bandwidth`), and the criterion subtracts the closeness threshold, (statistic - epsilon) / se.

The squared distances are computed once; each grid point then costs three exponentials of m x m matrices.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from icml26.stats.nammd.estimators import check_paired
from icml26.stats.nammd.kernels import GaussianKernel, median_bandwidth, pairwise_sq_dists

__all__ = ["bandwidth_grid", "bandwidth_scores", "select_bandwidth"]

Rule = Literal["official", "ours"]
Criterion = Literal["nammd", "mmd"]
_SE_FLOOR = 1e-12  # the official code clamps the standard error here


def _check_rule(rule: str) -> None:
    if rule not in ("official", "ours"):
        raise ValueError(f"rule must be 'official' or 'ours', got {rule!r}")


def _official_median(Z: np.ndarray) -> float:
    """sqrt of the lower median of the positive squared distances among the pooled points Z (each pair once).

    Distances from exact differences (pdist), so that identical points give exactly 0 and drop out; the expanded
    |a|^2 + |b|^2 - 2 a.b leaves them a rounding-size positive value that would shift the median by one rank.
    """
    from scipy.spatial.distance import pdist

    d2 = pdist(Z, "sqeuclidean")
    d2 = d2[d2 > 0]
    if d2.size == 0:
        raise ValueError("median bandwidth is zero: the reference points are all identical")
    k = (d2.size - 1) // 2  # torch.median's lower median; pairs counted twice would give the same element
    return float(np.sqrt(np.partition(d2, k)[k]))


def bandwidth_grid(X: ArrayLike, Y: ArrayLike, n_grid: int = 25, rule: Rule = "official") -> np.ndarray:
    """The ``n_grid`` candidate bandwidths for reference samples X, Y (see the module docstring)."""
    _check_rule(rule)
    Xa, Ya = check_paired(X, Y, min_m=2)
    if rule == "ours":
        return median_bandwidth(np.concatenate([Xa, Ya])) * np.geomspace(0.25, 4.0, n_grid)
    return _official_median(np.concatenate([Xa, Ya])) * np.logspace(-1.0, 1.0, n_grid)


def _scores(
    d2: tuple[np.ndarray, np.ndarray, np.ndarray], grid: np.ndarray, criterion: Criterion, shift: float, ddof: int
) -> np.ndarray:
    """(statistic - shift) / se for each bandwidth of ``grid``, from the squared distances (dxx, dyy, dxy)."""
    dxx, dyy, dxy = d2
    m = len(dxx)
    off = ~np.eye(m, dtype=bool)
    scores = np.empty(len(grid))
    for g, bw in enumerate(grid):
        kxx, kyy, kxy = (np.exp(-d / bw**2) for d in (dxx, dyy, dxy))
        h = np.where(off, kxx + kyy - kxy - kxy.T, 0.0)
        dd = np.where(off, 4.0 - kxx - kyy, 0.0)
        hbar, dbar = h.sum(1) / (m - 1), dd.sum(1) / (m - 1)
        mmd2, reg = hbar.mean(), dbar.mean()
        if criterion == "mmd":
            stat, influence = mmd2, hbar
        else:
            stat = mmd2 / reg
            influence = (hbar - stat * dbar) / reg
        se = max(float(influence.std(ddof=ddof)) / np.sqrt(m), _SE_FLOOR)
        scores[g] = (stat - shift) / se
    return scores


def bandwidth_scores(
    X_ref: ArrayLike,
    Y_ref: ArrayLike,
    criterion: Criterion = "nammd",
    n_grid: int = 25,
    rule: Rule = "official",
    epsilon: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(grid, criterion at each grid point): what :func:`select_bandwidth` maximises, for inspection."""
    _check_rule(rule)
    if criterion not in ("nammd", "mmd"):
        raise ValueError(f"criterion must be 'nammd' or 'mmd', got {criterion!r}")
    if n_grid < 2:
        raise ValueError(f"n_grid must be >= 2, got {n_grid}")
    if rule == "official" and epsilon != 0.0:
        raise ValueError("the official rule maximises the statistic itself (no epsilon); use rule='ours' for that")
    X, Y = check_paired(X_ref, Y_ref, min_m=4)
    d2 = (pairwise_sq_dists(X, X), pairwise_sq_dists(Y, Y), pairwise_sq_dists(X, Y))
    if rule == "official":
        grid = _official_median(np.concatenate([X, Y])) * np.logspace(-1.0, 1.0, n_grid)
        return grid, _scores(d2, grid, criterion, 0.0, ddof=1)
    grid = median_bandwidth(np.concatenate([X, Y])) * np.geomspace(0.25, 4.0, n_grid)
    return grid, _scores(d2, grid, criterion, epsilon, ddof=0)


def select_bandwidth(
    X_ref: ArrayLike,
    Y_ref: ArrayLike,
    criterion: Criterion = "nammd",
    n_grid: int = 25,
    rule: Rule = "official",
    epsilon: float = 0.0,
) -> GaussianKernel:
    """The Gaussian kernel maximising the studentised statistic on the reference split (first maximum on ties).

    ``criterion="nammd"`` selects for the NAMMD test, ``"mmd"`` for the MMD test (one kernel per test, as in the
    official protocol). ``rule="official"`` (default) is the official grid and criterion; ``rule="ours"`` is our
    grid with ``epsilon`` subtracted (on the NAMMD scale, or the MMD^2 scale for ``criterion="mmd"``).
    Using the test samples here would inflate the type-I error: select on a split you then discard.
    """
    grid, scores = bandwidth_scores(X_ref, Y_ref, criterion, n_grid, rule, epsilon)
    finite = np.isfinite(scores)
    if not finite.any():
        raise ValueError("no bandwidth gave a finite criterion on the reference split")
    best = int(np.argmax(np.where(finite, scores, -np.inf)))
    return GaussianKernel(float(grid[best]))
