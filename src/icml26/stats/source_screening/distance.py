"""The sin-theta distance between two k-dimensional subspaces of R^d."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["orthonormal_basis", "sin_theta_distance"]


def orthonormal_basis(B: Any, *, name: str = "B") -> np.ndarray:
    """An orthonormal basis (..., d, k) of the column span of ``B`` (QR); a clear error if B is rank-deficient."""
    B = np.asarray(B, dtype=np.float64)
    if B.ndim < 2:
        raise ValueError(f"{name} must be a (d, k) matrix (or a batch of them), got shape {B.shape}")
    d, k = B.shape[-2:]
    if k == 0 or k > d:
        raise ValueError(f"{name} must have 1 <= k <= d columns, got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")
    Q, R = np.linalg.qr(B)
    diag = np.abs(np.diagonal(R, axis1=-2, axis2=-1))
    scale = np.linalg.norm(B, axis=(-2, -1))
    if np.any(diag <= 1e-12 * np.maximum(scale, np.finfo(float).tiny)[..., None]):
        raise ValueError(f"{name} has rank < k = {k}: its columns do not span a k-dimensional subspace")
    return Q


def sin_theta_distance(B: Any, B_hat: Any) -> float | np.ndarray:
    """``||(I - P_hat) P||_2``: the sine of the largest principal angle between span(B) and span(B_hat).

    Both arguments are (d, k) matrices of full column rank (any basis: they are orthonormalised first, so the
    distance depends only on the spans), or batches (..., d, k) that broadcast. The value lies in [0, 1], is 0
    iff the spans are equal and is symmetric in its arguments. Computed as the largest singular value of
    Q - Q_hat (Q_hat^T Q), which is accurate for small angles (unlike sqrt(1 - cos^2)).
    """
    Q = orthonormal_basis(B, name="B")
    Q_hat = orthonormal_basis(B_hat, name="B_hat")
    if Q.shape[-2:] != Q_hat.shape[-2:]:
        raise ValueError(f"B and B_hat must both be (d, k) with the same d and k, got {Q.shape} and {Q_hat.shape}")
    residual = Q - Q_hat @ (np.swapaxes(Q_hat, -1, -2) @ Q)
    value = np.clip(np.linalg.svd(residual, compute_uv=False)[..., 0], 0.0, 1.0)
    return float(value) if value.ndim == 0 else value
