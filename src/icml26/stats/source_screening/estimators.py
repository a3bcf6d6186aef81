"""Shared-subspace estimators, vectorised over sources: method of moments and alternating minimisation.

Model: source t has y = x^T B* w_t + eps with x ~ N(0, I_d), B* (d x k) orthonormal and shared, w_t its own head.

- Method of moments (MoM; Tripuraneni, Jin & Jordan 2021): for Gaussian x,
  E[y^2 x x^T] = (|B* w_t|^2 + sigma^2) I + 2 B* w_t w_t^T B*^T, so the top-k eigenvectors of
  M = (1/N) sum_t sum_i y_ti^2 x_ti x_ti^T span B*; the eigengap is 2 lambda_k(D) with D the pooled diversity matrix.
- Alternating minimisation (AltMin / FedRep, Collins et al. 2021): least squares over (B, w_1..w_T) by alternating
  (a) every head w_t = (B^T G_t B)^{-1} B^T c_t given B, one batched k x k solve, and
  (b) B given the heads from the normal equations sum_t G_t B w_t w_t^T = sum_t c_t w_t^T, a dk x dk system whose
  matrix sum_t (w_t w_t^T kron G_t) is one einsum, followed by a QR re-orthonormalisation of B,
  with G_t = X_t^T X_t and c_t = X_t^T y_t the per-source sufficient statistics (one einsum over all sources).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from icml26.stats.source_screening.distance import orthonormal_basis, sin_theta_distance
from icml26.stats.source_screening.sources import SourceArrays

__all__ = [
    "AltMinResult",
    "Whitening",
    "altmin_subspace",
    "check_identifiable",
    "fit_heads",
    "mom_matrix",
    "mom_subspace",
    "source_moments",
]


def check_identifiable(src: SourceArrays, k: int) -> None:
    """The named bad inputs of the model: k must be a positive integer <= d, every source needs >= k rows (its
    head is a k-vector fitted by least squares) and there must be >= k sources (D_S has rank <= |S|)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"n_components must be a positive integer, got {k!r}")
    d = src.n_features
    if k > d:
        raise ValueError(f"n_components={k} is larger than the number of features d={d}")
    few = np.flatnonzero(src.counts < k)
    if few.size:
        t = int(few[0])
        raise ValueError(
            f"source {t} has {int(src.counts[t])} samples, fewer than n_components={k}: its head cannot be "
            f"estimated ({few.size} source(s) affected)"
        )
    if src.n_sources < k:
        raise ValueError(
            f"{src.n_sources} source(s) cannot identify a {k}-dimensional subspace: the diversity matrix has rank "
            f"<= the number of sources; give at least n_components={k} sources"
        )
    if not np.any(src.y):
        raise ValueError("y is identically zero in every source: there is no signal to estimate a subspace from")


# ------------------------------------------------------------------------------------------- statistics
def mom_matrix(src: SourceArrays) -> np.ndarray:
    """M = (1/N) sum over all rows of y^2 x x^T (d x d)."""
    Xy = src.X * src.y[..., None]
    return np.einsum("tni,tnj->ij", Xy, Xy, optimize=True) / src.n_total


def source_moments(src: SourceArrays) -> tuple[np.ndarray, np.ndarray]:
    """Per-source sufficient statistics of least squares: G_t = X_t^T X_t (T, d, d) and c_t = X_t^T y_t (T, d)."""
    gram = np.einsum("tni,tnj->tij", src.X, src.X, optimize=True)
    cross = np.einsum("tni,tn->ti", src.X, src.y, optimize=True)
    return gram, cross


def _top_eigenvectors(M: np.ndarray, k: int) -> np.ndarray:
    _, vecs = np.linalg.eigh(M)
    return vecs[:, ::-1][:, :k].copy()


def mom_subspace(src: SourceArrays, k: int) -> np.ndarray:
    """The method-of-moments estimate: the top-k eigenvectors of ``mom_matrix(src)`` (d x k, orthonormal)."""
    return _top_eigenvectors(mom_matrix(src), k)


def fit_heads(gram: np.ndarray, cross: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Least-squares head of every source in the subspace B: w_t = (B^T G_t B)^{-1} B^T c_t, shape (T, k)."""
    H = np.einsum("di,tde,ej->tij", B, gram, B, optimize=True)
    r = cross @ B
    try:
        return np.linalg.solve(H, r[..., None])[..., 0]
    except np.linalg.LinAlgError:
        bad = int(np.argmin(np.linalg.svd(H, compute_uv=False)[:, -1]))
        raise ValueError(
            f"source {bad}'s design is rank-deficient inside the subspace: its head is not identifiable"
        ) from None


# ------------------------------------------------------------------------------------------- AltMin
@dataclass(frozen=True)
class AltMinResult:
    basis: np.ndarray  # (d, k) orthonormal
    heads: np.ndarray  # (T, k), in ``basis`` coordinates
    n_iter: int
    converged: bool
    objective: float  # mean squared residual at the end


def _solve_psd(L: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Solve the (positive semi-definite) B-update system; min-norm least squares when it is singular (the heads
    of the sources span fewer than k directions: the missing directions are not identified by these sources)."""
    try:
        return cho_solve(cho_factor(L, check_finite=False), r, check_finite=False)
    except LinAlgError:
        return np.linalg.lstsq(L, r, rcond=None)[0]


def altmin_subspace(
    src: SourceArrays,
    k: int,
    init: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-7,
    warn: bool = True,
    moments: tuple[np.ndarray, np.ndarray] | None = None,
) -> AltMinResult:
    """Alternating least squares over the heads and B from ``init`` (d x k), until the subspace moves by less
    than ``tol`` in sin-theta distance (a ``ConvergenceWarning`` when ``max_iter`` is reached first).
    ``moments``: ``source_moments(src)`` when already computed."""
    gram, cross = source_moments(src) if moments is None else moments
    d = src.n_features
    B = orthonormal_basis(init, name="init")
    converged, n_iter, change = False, 0, np.inf
    for n_iter in range(1, max_iter + 1):  # noqa: B007 - n_iter is the count reported after the loop
        W = fit_heads(gram, cross, B)
        L = np.einsum("ta,tb,tij->aibj", W, W, gram, optimize=True).reshape(k * d, k * d)
        r = (W.T @ cross).reshape(-1)  # r[a, i] = sum_t w_ta c_ti
        B_new = np.linalg.qr(_solve_psd(L, r).reshape(k, d).T)[0]
        change = sin_theta_distance(B, B_new)
        B = B_new
        if change < tol:
            converged = True
            break
    W = fit_heads(gram, cross, B)
    fitted = np.einsum("tni,ik,tk->tn", src.X, B, W, optimize=True)
    objective = float(((src.y - fitted) ** 2).sum() / src.n_total)
    if not converged and warn:
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(
            f"AltMin did not converge in max_iter={max_iter} iterations (last subspace change {change:.2e} > "
            f"tol={tol:g}); raise max_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    return AltMinResult(B, W, n_iter, converged, objective)


# ---------------------------------------------------------------------------------------- whitening
@dataclass(frozen=True)
class Whitening:
    """Our option for designs that are not centred and isotropic: centre x by its pooled mean and y within each
    source, and whiten x by the pooled covariance, x -> S^{-1/2}(x - mu). The subspace found in whitened
    coordinates maps back by B = orth(S^{-1/2} B_z)."""

    mean: np.ndarray  # (d,)
    matrix: np.ndarray  # (d, d) symmetric S^{-1/2}

    @classmethod
    def fit(cls, src: SourceArrays) -> Whitening:
        mask = np.arange(src.X.shape[1])[None, :] < src.counts[:, None]
        mean = src.X.sum(axis=(0, 1)) / src.n_total
        Xc = (src.X - mean) * mask[..., None]
        cov = np.einsum("tni,tnj->ij", Xc, Xc, optimize=True) / src.n_total
        vals, vecs = np.linalg.eigh(cov)
        if vals[0] <= 1e-10 * max(vals[-1], np.finfo(float).tiny):
            rank = int(np.sum(vals > 1e-10 * max(vals[-1], np.finfo(float).tiny)))
            raise ValueError(
                f"whitening needs a full-rank feature covariance; it has rank {rank} < d = {src.n_features} "
                "(constant or collinear features): drop them or use whiten=False"
            )
        return cls(mean, (vecs / np.sqrt(vals)) @ vecs.T)

    def centre(self, src: SourceArrays) -> SourceArrays:
        """x - mu and y - mean_t(y) on real rows (padding stays zero)."""
        mask = np.arange(src.X.shape[1])[None, :] < src.counts[:, None]
        y_mean = src.y.sum(axis=1) / src.counts
        return SourceArrays((src.X - self.mean) * mask[..., None], (src.y - y_mean[:, None]) * mask, src.counts)

    def transform(self, src: SourceArrays) -> SourceArrays:
        centred = self.centre(src)
        return SourceArrays(centred.X @ self.matrix, centred.y, centred.counts)

    def basis_back(self, B_z: np.ndarray) -> np.ndarray:
        return orthonormal_basis(self.matrix @ B_z, name="whitened basis")
