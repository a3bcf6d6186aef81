"""``SharedSubspaceEstimator``: a scikit-learn style estimator of the subspace shared by several sources."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from icml26.stats.source_screening.distance import orthonormal_basis
from icml26.stats.source_screening.estimators import (
    Whitening,
    altmin_subspace,
    check_identifiable,
    fit_heads,
    mom_subspace,
    source_moments,
)
from icml26.stats.source_screening.sources import SourceArrays, as_source_arrays

__all__ = ["METHODS", "SharedSubspaceEstimator", "design_warning"]

METHODS = ("mom", "altmin")
INITS = ("mom", "random")


def design_warning(src: SourceArrays, method: str, gram: np.ndarray | None = None) -> str | None:
    """A message when the pooled design is far from the centred isotropic x ~ N(0, I) the method assumes
    (far beyond sampling error), else None. MoM needs isotropy; least squares (AltMin) needs only centring.
    ``gram``: the per-source X_t^T X_t (T, d, d) when already computed."""
    N, d = src.n_total, src.n_features
    mean = src.X.sum(axis=(0, 1)) / N
    if gram is None:
        gram = source_moments(src)[0]
    second = gram.sum(axis=0) / N
    vals = np.linalg.eigvalsh(second)
    spread = np.sqrt(max(float(np.trace(second)) / d, np.finfo(float).tiny))
    r = np.sqrt(d / N)
    off_centre = float(np.linalg.norm(mean)) > 0.5 * spread + 3.0 * r * spread
    anisotropic = vals[0] < 0.5 * (1 - min(r, 0.9)) ** 2 or vals[-1] > 2.0 * (1 + r) ** 2
    if off_centre or (method == "mom" and anisotropic):
        return (
            f"X does not look centred{' and isotropic' if method == 'mom' else ''} (pooled mean norm "
            f"{np.linalg.norm(mean):.3g}, second-moment eigenvalues in [{vals[0]:.3g}, {vals[-1]:.3g}]); the "
            f"{'method of moments assumes x ~ N(0, I)' if method == 'mom' else 'model has no intercept'}: "
            "pass whiten=True to centre and whiten the design (our option)"
        )
    return None


class SharedSubspaceEstimator(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """Estimate the k-dimensional subspace B* shared by T linear sources y_t = X_t B* w_t + eps.

    Parameters
    ----------
    n_components : int
        k, the dimension of the shared subspace (assumed known, as in the paper).
    method : {"mom", "altmin"}
        "mom": the method of moments, top-k eigenvectors of (1/N) sum y^2 x x^T (needs x ~ N(0, I));
        "altmin": alternating least squares over the heads and B (FedRep-style), QR after every B step.
    init : {"mom", "random"} or array (d, k)
        AltMin's starting subspace (default: the MoM estimate on the same data).
    max_iter, tol : AltMin stops when the subspace moves by less than ``tol`` (sin-theta) or after ``max_iter``
        iterations (then a ``ConvergenceWarning``).
    whiten : bool
        Our option (default off: the paper's estimators): centre x by its pooled mean and y within each source,
        whiten x by its pooled covariance, estimate, and map the subspace back. Use it for designs that are not
        centred isotropic; without it, such a design gets a warning.
    random_state : int, Generator or None
        Seeds ``init="random"``.

    Attributes
    ----------
    components_ : (k, d) orthonormal rows spanning the estimate (scikit-learn's PCA layout);
    basis_ : (d, k), the same basis as columns (``components_.T``), what ``sin_theta_distance`` takes;
    heads_ : (T, k) each source's least-squares head in ``basis_``;
    diversity_ : (k, k) the fitted heads' diversity matrix (1/T) sum_t w_t w_t^T;
    mean_ : (d,) subtracted by ``transform`` (zeros unless ``whiten``);
    n_sources_, n_features_in_, n_iter_ (1 for MoM), converged_, objective_ (AltMin's mean squared residual).
    """

    def __init__(
        self,
        n_components: int = 1,
        method: str = "mom",
        *,
        init: Any = "mom",
        max_iter: int = 100,
        tol: float = 1e-7,
        whiten: bool = False,
        random_state: Any = None,
    ) -> None:
        self.n_components = n_components
        self.method = method
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.whiten = whiten
        self.random_state = random_state

    def _check_params(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if isinstance(self.init, str) and self.init not in INITS:
            raise ValueError(f"init must be one of {INITS} or a (d, k) array, got {self.init!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, int | np.integer) or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if not (isinstance(self.tol, int | float) and self.tol >= 0):
            raise ValueError(f"tol must be a non-negative number, got {self.tol!r}")

    def _initial_basis(self, work: SourceArrays, whitening: Whitening | None) -> np.ndarray:
        k, d = int(self.n_components), work.n_features
        if isinstance(self.init, str) and self.init == "mom":
            return mom_subspace(work, k)
        if isinstance(self.init, str):  # "random"
            rng = np.random.default_rng(self.random_state)
            return np.linalg.qr(rng.standard_normal((d, k)))[0]
        B0 = np.asarray(self.init, dtype=np.float64)
        if B0.shape != (d, k):
            raise ValueError(f"init must have shape (d, k) = ({d}, {k}), got {B0.shape}")
        B0 = orthonormal_basis(B0, name="init")
        if whitening is not None:  # span(B_z) = S^{1/2} span(B) in whitened coordinates
            B0 = np.linalg.solve(whitening.matrix, B0)
        return B0

    def fit(self, X: Any, y: Any = None, groups: Any = None) -> SharedSubspaceEstimator:
        """Fit on ``X`` = a list of (X_t, y_t) pairs, or a stacked pair (X (T, n, d), y (T, n)); or on
        ``X`` (N, d), ``y`` (N,) and ``groups`` (N,) labelling each row's source. Returns self."""
        self._check_params()
        if y is None and not (hasattr(X, "shape") or hasattr(X, "toarray")):  # a list of sources
            if groups is not None:
                raise ValueError("groups needs X (N, d) and y (N,); a list of sources carries its own grouping")
            src = as_source_arrays(X)
            if hasattr(self, "feature_names_in_"):  # left over from an earlier fit on a DataFrame
                del self.feature_names_in_
        else:  # one design matrix: scikit-learn's validation (sparse, complex, NaN, empty, y required)
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, reset=True)
            src = as_source_arrays(X=X, y=y, groups=groups)
        k = int(self.n_components) if isinstance(self.n_components, int | np.integer) else self.n_components
        check_identifiable(src, k)
        whitening = Whitening.fit(src) if self.whiten else None
        work = whitening.transform(src) if whitening is not None else src
        moments = source_moments(work)  # computed once: the design check, AltMin and the heads share it
        if whitening is None and (message := design_warning(src, self.method, moments[0])):
            warnings.warn(message, UserWarning, stacklevel=2)
        if self.method == "mom":
            B, n_iter, converged, objective = mom_subspace(work, k), 1, True, None
        else:
            res = altmin_subspace(
                work,
                k,
                self._initial_basis(work, whitening),
                max_iter=int(self.max_iter),
                tol=float(self.tol),
                moments=moments,
            )
            B, n_iter, converged, objective = res.basis, res.n_iter, res.converged, res.objective
        if whitening is not None:  # heads in the original coordinates, on the centred data
            B = whitening.basis_back(B)
            moments = source_moments(whitening.centre(src))
        heads = fit_heads(*moments, B)
        self.basis_ = B
        self.components_ = B.T.copy()
        self.heads_ = heads
        self.diversity_ = heads.T @ heads / len(heads)
        self.mean_ = whitening.mean if whitening is not None else np.zeros(src.n_features)
        self.n_sources_ = src.n_sources
        self.n_features_in_ = src.n_features
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.objective_ = objective
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The k-dimensional representation (X - mean_) @ basis_ of rows X (N, d)."""
        check_is_fitted(self, "basis_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) @ self.basis_

    def fit_transform(self, X: Any, y: Any = None, groups: Any = None, **fit_params: Any) -> Any:
        """Fit, then transform the training rows: an array for ``X, y, groups`` input, a list of per-source
        representations for a list of sources."""
        self.fit(X, y, groups, **fit_params)
        if y is None:
            return [self.transform(X_t) for X_t, _ in as_source_arrays(X).to_list()]
        return self.transform(X)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # y carries the signal: there is no subspace without it
        return tags
