"""Fitting one band, HSIC length-scale selection, and the data-driven symmetry-penalty test.

Both selections use a split of the band-learning data D_tr into a fitting part and a selection part (never the
calibration data, so the conformal guarantee is untouched):

- Length scale (as in the predecessor, arXiv 2505.21039): for each l on a grid, fit the *symmetric* band on the
  fitting part, score the selection part, S = |r| / sqrt(f), and keep the l that minimises HSIC(S, X): a score
  independent of X is what test-conditional coverage asks for.
- Symmetry penalty (our reading of "a data-driven method which automatically identifies the symmetric nature of
  the noise"): for mu on a grid and mu = inf, fit the bands on the fitting part; on the selection part compute the
  conformally calibrated mean width W(mu) = q(mu) * mean(sqrt f+ + sqrt f-), q(mu) the ceil((m+1)(1-alpha))-th
  smallest score. The statistic is the relative gain of the best asymmetric band, T = (W(inf) - min W(mu)) / W(inf).
  Under H0 "the residual is symmetric about 0 given x", flipping the signs of the selection residuals leaves their
  law unchanged (and the bands, fitted on other data, are fixed), so the sign-flip distribution of T gives an exact
  p-value. Reject (use the best mu) only if p <= ``test_level``; otherwise keep the symmetric band (mu = inf).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icml26.stats.ksos_conformal.dual import BandSolution, solve_dual
from icml26.stats.ksos_conformal.kernels import FeatureMap, sq_distances
from icml26.stats.ksos_conformal.problem import BandProblem, quad_forms

__all__ = [
    "F_FLOOR",
    "LengthScaleSelection",
    "SymmetryTest",
    "band_values",
    "conformal_rank",
    "fit_band",
    "hsic_score",
    "median_distance",
    "select_length_scale",
    "symmetry_test",
]

F_FLOOR = 1e-10  # floor on f (standardised units): a score r / sqrt(f) is never a division by zero


def conformal_rank(n: int, confidence_level: float) -> int:
    """k = ceil((n + 1) * level): the k-th smallest of n exchangeable scores gives coverage >= level."""
    return math.ceil((n + 1) * confidence_level - 1e-12)


def median_distance(X: np.ndarray, max_points: int = 1000) -> float:
    """Median of the pairwise Euclidean distances (on at most ``max_points`` rows), 1.0 if degenerate."""
    Xs = X[:max_points]
    d = np.sqrt(sq_distances(Xs, Xs)[np.triu_indices(len(Xs), 1)])
    med = float(np.median(d)) if d.size else 0.0
    return med if med > 0 else 1.0


def hsic_score(S: np.ndarray, X: np.ndarray) -> float:
    """Biased (V-statistic) HSIC between a score S and inputs X with Gaussian kernels of median-heuristic width:
    HSIC = tr(K H L H) / n^2, H the centring matrix. 0 when S and X are independent (in population)."""
    S = np.asarray(S, float).reshape(len(S), -1)
    X = np.asarray(X, float).reshape(len(X), -1)
    if len(S) != len(X):
        raise ValueError(f"S and X have different lengths: {len(S)} and {len(X)}")
    n = len(S)
    if n < 2:
        raise ValueError(f"HSIC needs at least 2 points, got n_samples = {n}")

    def centred_gram(A: np.ndarray) -> np.ndarray:
        d2 = sq_distances(A, A)
        K = np.exp(-d2 / (2.0 * median_distance(A) ** 2))
        return K - K.mean(0) - K.mean(1)[:, None] + K.mean()

    return float(np.sum(centred_gram(S) * centred_gram(X)) / n**2)


# ------------------------------------------------------------------------------------------- one band
def fit_band(
    features: FeatureMap,
    X: np.ndarray,
    residuals: np.ndarray,
    *,
    reg: float,
    symmetry_penalty: float,
    slack: float = math.inf,
    solver: str = "dual",
    tol: float = 1e-4,
    max_iter: int = 5000,
) -> BandSolution:
    """Solve the band problem on (X, residuals) in the features of ``features`` (residuals already standardised)."""
    problem = BandProblem(features.transform(X), residuals, reg, symmetry_penalty, slack)
    if solver == "cvxpy":
        from icml26.stats.ksos_conformal.primal import solve_primal

        return solve_primal(problem)
    return solve_dual(problem, tol=tol, max_iter=max_iter)


def band_values(features: FeatureMap, solution: BandSolution, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f+(X), f-(X)), floored at :data:`F_FLOOR`."""
    V = features.transform(X)
    return (
        np.maximum(quad_forms(V, solution.C_upper), F_FLOOR),
        np.maximum(quad_forms(V, solution.C_lower), F_FLOOR),
    )


def signed_scores(residuals: np.ndarray, f_upper: np.ndarray, f_lower: np.ndarray) -> np.ndarray:
    """S = r / sqrt(f+) if r >= 0 else -r / sqrt(f-) (broadcasts over leading axes)."""
    return np.where(residuals >= 0, residuals / np.sqrt(f_upper), -residuals / np.sqrt(f_lower))


# ------------------------------------------------------------------------------------- length scale
@dataclass(frozen=True)
class LengthScaleSelection:
    """HSIC of each candidate length scale (on the selection part) and the one kept."""

    length_scales: tuple[float, ...]
    hsic: tuple[float, ...]
    length_scale: float


def select_length_scale(
    X_fit: np.ndarray,
    r_fit: np.ndarray,
    X_sel: np.ndarray,
    r_sel: np.ndarray,
    length_scales: tuple[float, ...],
    *,
    n_components: int | None,
    seed: int,
    **band: object,
) -> tuple[LengthScaleSelection, dict[float, tuple[FeatureMap, BandSolution]]]:
    """Minimise HSIC(|r| / sqrt(f_sym), X) over ``length_scales``; also returns each symmetric fit (reused by the
    symmetry test)."""
    fits, hsic = {}, []
    for ell in length_scales:
        features = FeatureMap.fit(X_fit, ell, n_components, np.random.default_rng(seed))
        sol = fit_band(features, X_fit, r_fit, symmetry_penalty=math.inf, **band)  # type: ignore[arg-type]
        fits[ell] = (features, sol)
        f_up, _ = band_values(features, sol, X_sel)
        hsic.append(hsic_score(np.abs(r_sel) / np.sqrt(f_up), X_sel))
    best = length_scales[int(np.argmin(hsic))]
    return LengthScaleSelection(tuple(length_scales), tuple(hsic), best), fits


# ------------------------------------------------------------------------------------- symmetry test
@dataclass(frozen=True)
class SymmetryTest:
    """Result of the sign-flip symmetry test (scipy-like): ``reject`` means asymmetric bands are kept."""

    statistic: float
    pvalue: float
    reject: bool
    penalties: tuple[float, ...]
    widths: tuple[float, ...]
    symmetric_width: float
    selected: float
    null_statistics: np.ndarray = field(repr=False)


def _calibrated_widths(scores: np.ndarray, half_width_sum: np.ndarray, confidence_level: float) -> np.ndarray:
    """q * mean(sqrt f+ + sqrt f-) for score rows (..., m): q the conformal quantile of each row."""
    m = scores.shape[-1]
    k = min(m, conformal_rank(m, confidence_level))
    q = np.partition(scores, k - 1, axis=-1)[..., k - 1]
    return q * half_width_sum


def symmetry_test(
    residuals: np.ndarray,
    f_upper: np.ndarray,
    f_lower: np.ndarray,
    f_symmetric: np.ndarray,
    penalties: tuple[float, ...],
    *,
    confidence_level: float = 0.9,
    test_level: float = 0.05,
    n_flips: int = 199,
    rng: np.random.Generator | None = None,
) -> SymmetryTest:
    """Sign-flip test of H0 "residuals symmetric given x" with the statistic of the module docstring.

    ``f_upper``/``f_lower`` have shape (len(penalties), m): the asymmetric bands at the selection points;
    ``f_symmetric`` (m,) the symmetric one (mu = inf). All were fitted on data other than these m points.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    r = np.asarray(residuals, float)
    fu, fl = np.atleast_2d(f_upper), np.atleast_2d(f_lower)
    fs = np.asarray(f_symmetric, float)
    sum_asym = (np.sqrt(fu) + np.sqrt(fl)).mean(1)  # (k,)
    sum_sym = 2.0 * np.sqrt(fs).mean()
    signs = np.vstack([np.ones(len(r)), rng.choice((-1.0, 1.0), size=(n_flips, len(r)))])  # row 0: observed
    flipped = signs * r  # (B + 1, m)
    w_sym = _calibrated_widths(np.abs(flipped) / np.sqrt(fs), sum_sym, confidence_level)  # (B + 1,)
    w_asym = _calibrated_widths(signed_scores(flipped[:, None, :], fu[None], fl[None]), sum_asym, confidence_level)
    gain = w_sym - w_asym.min(axis=1)
    stats = np.divide(gain, w_sym, out=np.zeros_like(gain), where=w_sym > 0)  # w_sym = 0: all residuals are 0
    t, null = float(stats[0]), stats[1:]
    pvalue = float((1 + np.sum(null >= t - 1e-12)) / (n_flips + 1))
    reject = pvalue <= test_level
    selected = float(penalties[int(np.argmin(w_asym[0]))]) if reject else math.inf
    return SymmetryTest(
        t, pvalue, bool(reject), tuple(penalties), tuple(map(float, w_asym[0])), float(w_sym[0]), selected, null
    )
