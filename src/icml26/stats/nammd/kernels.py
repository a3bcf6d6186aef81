"""Bounded kernels for NAMMD, evaluated in row blocks so memory stays linear in the sample size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["GaussianKernel", "Kernel", "PrecomputedKernel", "median_bandwidth", "pairwise_sq_dists"]


class Kernel(Protocol):
    """A bounded, translation-free kernel: ``k(A, B)`` is the Gram matrix, ``diag`` the constant k(x, x) = K."""

    diag: float

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray: ...


def pairwise_sq_dists(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of A (..., n, d) and B (..., p, d), clipped at 0.

    Uses |a|^2 + |b|^2 - 2 a.b (one matrix product); the clip removes tiny negatives from cancellation.
    """
    aa = np.einsum("...nd,...nd->...n", A, A)
    bb = np.einsum("...pd,...pd->...p", B, B)
    d2 = aa[..., :, None] + bb[..., None, :] - 2.0 * (A @ np.swapaxes(B, -1, -2))
    return np.maximum(d2, 0.0, out=d2)


def median_bandwidth(Z: ArrayLike, max_points: int = 1000, seed: int = 0) -> float:
    """The median heuristic: median pairwise Euclidean distance among (at most ``max_points``) rows of Z."""
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    if len(Z) > max_points:
        Z = Z[np.random.default_rng(seed).choice(len(Z), max_points, replace=False)]
    d2 = pairwise_sq_dists(Z, Z)[np.triu_indices(len(Z), k=1)]
    med = float(np.sqrt(np.median(d2))) if d2.size else 0.0
    if not med > 0:
        raise ValueError("median bandwidth is zero: the reference points are (almost) all identical")
    return med


@dataclass(frozen=True)
class GaussianKernel:
    """k(x, y) = exp(-|x - y|^2 / bandwidth^2), so K = k(x, x) = 1.

    This is the convention of the official NAMMD code: no factor 2 in the denominator (``bandwidth`` is
    sigma_0, and exp(-d^2 / sigma_0^2) equals a "standard" RBF with sigma = sigma_0 / sqrt(2)).
    """

    bandwidth: float
    diag: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.bandwidth, str):
            # A kernel is a fixed function: a bandwidth fitted to whatever sample it meets would make the closeness
            # threshold epsilon mean something different for every tested pair.
            raise ValueError(
                f"GaussianKernel takes a number, not {self.bandwidth!r}: fit the bandwidth on reference data that you "
                "do not test, GaussianKernel.median(Z_ref) or select_bandwidth(X_ref, Y_ref)"
            )
        if isinstance(self.bandwidth, bool) or not isinstance(self.bandwidth, int | float | np.integer | np.floating):
            raise TypeError(f"bandwidth must be a real number, got {type(self.bandwidth).__name__}")
        if not (np.isfinite(self.bandwidth) and self.bandwidth > 0):
            raise ValueError(f"bandwidth must be positive and finite, got {self.bandwidth!r}")

    @classmethod
    def median(cls, Z: ArrayLike) -> GaussianKernel:
        """Bandwidth from the median heuristic on reference data Z (never on the data you then test)."""
        return cls(median_bandwidth(Z))

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d2 = pairwise_sq_dists(A, B)
        d2 *= -1.0 / self.bandwidth**2
        return np.exp(d2, out=d2)


class PrecomputedKernel:
    """A kernel on a finite support given by its Gram matrix; samples are integer indices into the support.

    Pass samples as index arrays of shape (m,) or (m, 1). This is how weighted distributions over a fixed
    pool (e.g. images) are tested without recomputing kernel values: ``k(A, B) = gram[A, B]``.
    """

    def __init__(self, gram: ArrayLike) -> None:
        G = np.asarray(gram, dtype=float)
        if G.ndim != 2 or G.shape[0] != G.shape[1]:
            raise ValueError(f"gram must be a square matrix, got shape {G.shape}")
        d = np.diag(G)
        if not np.allclose(d, d[0]):
            raise ValueError("NAMMD needs a constant k(x, x): the Gram matrix's diagonal is not constant")
        self.gram = G
        self.diag = float(d[0])

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        ia, ib = self._indices(A), self._indices(B)
        return self.gram[ia[..., :, None], ib[..., None, :]]

    def _indices(self, A: np.ndarray) -> np.ndarray:
        idx = A[..., 0]
        if np.any(idx != np.round(idx)) or np.any(idx < 0) or np.any(idx >= len(self.gram)):
            raise ValueError(f"samples must be integer indices into the support 0..{len(self.gram) - 1}")
        return idx.astype(np.intp)
