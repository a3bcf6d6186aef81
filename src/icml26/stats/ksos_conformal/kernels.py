"""Gaussian kernel and the finite feature maps that make the representer form an r x r problem.

With K = k(Z, Z) on the *anchor* points Z (all training points, or m Nystrom landmarks) and its eigendecomposition
K = U diag(s) U^T (eigenvalues below ``rel_tol * s_max`` dropped), the features of x are

    v(x) = diag(s)^(-1/2) U^T k(Z, x)                                  (r = rank kept)

so that v(x_i)^T v(x_j) = K_ij on the anchors (exactly for the full map, the Nystrom approximation otherwise) and
the coordinates are those of an orthonormal basis of span{phi(z_j)}. A PSD operator A on that span is a PSD r x r
matrix C in these coordinates: phi(x)^T A phi(x) = v(x)^T C v(x), |A|_F = |C|_F, and A = sum_jl B_jl phi(z_j) phi(z_l)^T
with the representer coefficients B = P C P^T, P = U diag(s)^(-1/2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FeatureMap", "rbf_kernel", "sq_distances"]


def sq_distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Pairwise squared Euclidean distances, clipped at 0 (the expansion can go slightly negative)."""
    d2 = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - 2.0 * X @ Y.T
    return np.maximum(d2, 0.0)


def rbf_kernel(X: np.ndarray, Y: np.ndarray, length_scale: float) -> np.ndarray:
    """k(x, y) = exp(-|x - y|^2 / (2 l^2))."""
    return np.exp(-sq_distances(X, Y) / (2.0 * length_scale**2))


@dataclass(frozen=True)
class FeatureMap:
    """v(x) = diag(s)^(-1/2) U^T k(Z, x) for anchors Z (see the module docstring)."""

    anchors: np.ndarray
    length_scale: float
    projection: np.ndarray  # P = U diag(s)^(-1/2), shape (m, r)

    @classmethod
    def fit(
        cls,
        X: np.ndarray,
        length_scale: float,
        n_components: int | None = None,
        rng: np.random.Generator | None = None,
        rel_tol: float = 1e-10,
    ) -> FeatureMap:
        """Exact map on all rows of X (``n_components`` None or >= n), else Nystrom on a uniform subset."""
        n = len(X)
        if n_components is None or n_components >= n:
            anchors = X
        else:
            rng = np.random.default_rng(0) if rng is None else rng
            anchors = X[np.sort(rng.choice(n, size=n_components, replace=False))]
        K = rbf_kernel(anchors, anchors, length_scale)
        s, U = np.linalg.eigh(K)
        keep = s > rel_tol * s[-1]
        return cls(anchors, float(length_scale), U[:, keep] / np.sqrt(s[keep]))

    @property
    def rank(self) -> int:
        return self.projection.shape[1]

    def kernel_to_anchors(self, X: np.ndarray) -> np.ndarray:
        return rbf_kernel(X, self.anchors, self.length_scale)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Features v(x) as rows, shape (len(X), r)."""
        return self.kernel_to_anchors(X) @ self.projection

    def representer(self, C: np.ndarray) -> np.ndarray:
        """Coefficients B with f(x) = k(Z, x)^T B k(Z, x), from the feature-space matrix C."""
        return self.projection @ C @ self.projection.T
